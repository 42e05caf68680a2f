//! Job 3, per-bone info: flattens every bone of every entity into the bone table
//! (flat bone → entity and rig bone).

use crate::error::{JobError, check_len};
use crate::frame::{BoneSlot, EntityCounts};
use rayon::prelude::*;

/// Bones per parallel group of the table (at least; a group ends after the entity that reaches it).
const PIECE: usize = 4096;

/// Fills `table[offsets[e].bones + b] = (e, b)` for every entity `e` and bone `b < counts[e].bones`.
#[derive(Debug)]
pub struct PerBoneInfoJob<'a> {
    /// Per-entity counts (job 1).
    pub counts: &'a [EntityCounts],
    /// Per-entity offsets (job 2).
    pub offsets: &'a [EntityCounts],
    /// Output: one slot per flat bone; length = total bones.
    pub table: &'a mut [BoneSlot],
}

impl PerBoneInfoJob<'_> {
    /// Checks lengths and that the offsets are the exclusive scan of the counts.
    ///
    /// # Errors
    /// [`JobError::LengthMismatch`] when counts and offsets differ in length, the table's
    /// length is not the bone total, or an offset does not follow from the counts.
    pub fn validate(&self) -> Result<(), JobError> {
        check_len(
            "per-bone info",
            "offsets",
            self.counts.len(),
            self.offsets.len(),
        )?;
        let mut acc = 0usize;
        for (i, (c, o)) in self.counts.iter().zip(self.offsets).enumerate() {
            if o.bones as usize != acc {
                return Err(JobError::LengthMismatch {
                    job: "per-bone info",
                    buffer: "offsets",
                    expected: acc,
                    actual: i,
                });
            }
            acc += c.bones as usize;
        }
        check_len("per-bone info", "table", acc, self.table.len())
    }

    /// Fills the table, in parallel over groups of consecutive entities holding about
    /// 4096 bones each.
    pub fn run(&mut self) {
        let (counts, offsets) = (self.counts, self.offsets);
        // Group boundaries: entity indices where a new group starts.
        let mut groups: Vec<(usize, usize)> = Vec::with_capacity(self.table.len() / PIECE + 1);
        let mut start = 0usize;
        let mut bones = 0usize;
        for (e, c) in counts.iter().enumerate() {
            bones += c.bones as usize;
            if bones >= PIECE {
                groups.push((start, e + 1));
                start = e + 1;
                bones = 0;
            }
        }
        if start < counts.len() {
            groups.push((start, counts.len()));
        }
        let ranges: Vec<(usize, usize)> = groups
            .iter()
            .map(|&(a, b)| {
                let begin = offsets.get(a).map_or(0, |o| o.bones as usize);
                let end = offsets
                    .get(b - 1)
                    .zip(counts.get(b - 1))
                    .map_or(begin, |(o, c)| (o.bones + c.bones) as usize);
                (begin, end)
            })
            .collect();
        let Some(pieces) = crate::frame::split_ranges(self.table, &ranges) else {
            return;
        };
        pieces
            .into_par_iter()
            .zip(groups)
            .for_each(|(out, (a, b))| {
                let mut rest = out;
                for e in a..b {
                    let n = counts.get(e).map_or(0, |c| c.bones as usize);
                    let (mine, tail) = rest.split_at_mut(n.min(rest.len()));
                    for (bone, slot) in (0u32..).zip(mine) {
                        *slot = BoneSlot {
                            entity: e as u32,
                            bone,
                        };
                    }
                    rest = tail;
                }
            });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::j2_prefix_sum::scan_sequential;

    #[test]
    fn hand_computed_table_with_an_empty_entity() {
        // entities: 0 has 2 bones, 1 has none, 2 has 3 bones
        let counts = [2, 0, 3].map(|b| EntityCounts {
            bones: b,
            palette: 0,
            spans: 0,
        });
        let mut offsets = [EntityCounts::default(); 3];
        scan_sequential(&counts, &mut offsets, EntityCounts::default());
        let mut table = [BoneSlot::default(); 5];
        let mut job = PerBoneInfoJob {
            counts: &counts,
            offsets: &offsets,
            table: &mut table,
        };
        job.validate().unwrap();
        job.run();
        let got: Vec<(u32, u32)> = table.iter().map(|s| (s.entity, s.bone)).collect();
        assert_eq!(got, [(0, 0), (0, 1), (2, 0), (2, 1), (2, 2)]);
    }

    #[test]
    fn many_entities_across_pieces() {
        let counts: Vec<EntityCounts> = (0..3000u32)
            .map(|i| EntityCounts {
                bones: i % 5,
                palette: 0,
                spans: 0,
            })
            .collect();
        let mut offsets = vec![EntityCounts::default(); counts.len()];
        let total = scan_sequential(&counts, &mut offsets, EntityCounts::default());
        let mut table = vec![BoneSlot::default(); total.bones as usize];
        let mut job = PerBoneInfoJob {
            counts: &counts,
            offsets: &offsets,
            table: &mut table,
        };
        job.validate().unwrap();
        job.run();
        let mut k = 0;
        for (e, c) in counts.iter().enumerate() {
            for b in 0..c.bones {
                assert_eq!(
                    table[k],
                    BoneSlot {
                        entity: e as u32,
                        bone: b
                    }
                );
                k += 1;
            }
        }
    }

    #[test]
    fn empty_crowd_and_bad_bindings() {
        let mut job = PerBoneInfoJob {
            counts: &[],
            offsets: &[],
            table: &mut [],
        };
        job.validate().unwrap();
        job.run();
        let counts = [EntityCounts {
            bones: 2,
            palette: 0,
            spans: 0,
        }];
        let offsets = [EntityCounts::default()];
        let mut short = [BoneSlot::default(); 1];
        assert!(
            PerBoneInfoJob {
                counts: &counts,
                offsets: &offsets,
                table: &mut short
            }
            .validate()
            .is_err()
        );
        let wrong = [EntityCounts {
            bones: 1,
            palette: 0,
            spans: 0,
        }];
        let mut t2 = [BoneSlot::default(); 2];
        assert!(
            PerBoneInfoJob {
                counts: &counts,
                offsets: &wrong,
                table: &mut t2
            }
            .validate()
            .is_err()
        );
        assert!(
            PerBoneInfoJob {
                counts: &counts,
                offsets: &[],
                table: &mut t2
            }
            .validate()
            .is_err()
        );
    }
}
