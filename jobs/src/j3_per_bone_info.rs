//! Job 3, per-bone info: flattens every bone of every entity into the bone table
//! (flat bone → entity and rig bone).

use crate::error::{JobError, check_len};
use crate::frame::{BoneSlot, EntityCounts};
use rayon::prelude::*;

/// Bones per parallel piece of the table.
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
        check_len("per-bone info", "offsets", self.counts.len(), self.offsets.len())?;
        let mut acc = 0usize;
        for (i, (c, o)) in self.counts.iter().zip(self.offsets).enumerate() {
            if o.bones as usize != acc {
                return Err(JobError::LengthMismatch { job: "per-bone info", buffer: "offsets", expected: acc, actual: i });
            }
            acc += c.bones as usize;
        }
        check_len("per-bone info", "table", acc, self.table.len())
    }

    /// Fills the table, in parallel over pieces of 4096 bones.
    pub fn run(&mut self) {
        let offsets = self.offsets;
        let counts = self.counts;
        self.table.par_chunks_mut(PIECE).enumerate().for_each(|(piece, out)| {
            let start = piece * PIECE;
            // The entity owning flat bone `start`: last entity whose offset <= start and has bones.
            let mut e = offsets.partition_point(|o| (o.bones as usize) <= start).saturating_sub(1);
            let mut flat = start;
            for slot in out.iter_mut() {
                while e + 1 < offsets.len() && (offsets[e + 1].bones as usize) <= flat {
                    e += 1;
                }
                let bone = flat - offsets[e].bones as usize;
                debug_assert!(bone < counts[e].bones as usize);
                *slot = BoneSlot { entity: e as u32, bone: bone as u32 };
                flat += 1;
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
        let counts = [2, 0, 3].map(|b| EntityCounts { bones: b, palette: 0, spans: 0 });
        let mut offsets = [EntityCounts::default(); 3];
        scan_sequential(&counts, &mut offsets, EntityCounts::default());
        let mut table = [BoneSlot::default(); 5];
        let mut job = PerBoneInfoJob { counts: &counts, offsets: &offsets, table: &mut table };
        job.validate().unwrap();
        job.run();
        let got: Vec<(u32, u32)> = table.iter().map(|s| (s.entity, s.bone)).collect();
        assert_eq!(got, [(0, 0), (0, 1), (2, 0), (2, 1), (2, 2)]);
    }

    #[test]
    fn many_entities_across_pieces() {
        let counts: Vec<EntityCounts> = (0..3000u32).map(|i| EntityCounts { bones: i % 5, palette: 0, spans: 0 }).collect();
        let mut offsets = vec![EntityCounts::default(); counts.len()];
        let total = scan_sequential(&counts, &mut offsets, EntityCounts::default());
        let mut table = vec![BoneSlot::default(); total.bones as usize];
        let mut job = PerBoneInfoJob { counts: &counts, offsets: &offsets, table: &mut table };
        job.validate().unwrap();
        job.run();
        let mut k = 0;
        for (e, c) in counts.iter().enumerate() {
            for b in 0..c.bones {
                assert_eq!(table[k], BoneSlot { entity: e as u32, bone: b });
                k += 1;
            }
        }
    }

    #[test]
    fn empty_crowd_and_bad_bindings() {
        let mut job = PerBoneInfoJob { counts: &[], offsets: &[], table: &mut [] };
        job.validate().unwrap();
        job.run();
        let counts = [EntityCounts { bones: 2, palette: 0, spans: 0 }];
        let offsets = [EntityCounts::default()];
        let mut short = [BoneSlot::default(); 1];
        assert!(PerBoneInfoJob { counts: &counts, offsets: &offsets, table: &mut short }.validate().is_err());
        let wrong = [EntityCounts { bones: 1, palette: 0, spans: 0 }];
        let mut t2 = [BoneSlot::default(); 2];
        assert!(PerBoneInfoJob { counts: &counts, offsets: &wrong, table: &mut t2 }.validate().is_err());
        assert!(PerBoneInfoJob { counts: &counts, offsets: &[], table: &mut t2 }.validate().is_err());
    }
}
