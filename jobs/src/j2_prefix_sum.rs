//! Job 2, prefix sum: exclusive offsets of every entity's data in the flat frame buffers.

use crate::error::{JobError, check_len};
use crate::frame::EntityCounts;
use rayon::prelude::*;

/// Inputs shorter than this are scanned sequentially (the parallel scan's two passes cost
/// more than they save on small crowds).
pub const PARALLEL_SCAN_THRESHOLD: usize = 16 * 1024;

/// Exclusive prefix sum of per-entity counts.
///
/// `offsets[i] = Σ_{j < i} counts[j]` component-wise, `total = Σ counts`. Large inputs use a
/// two-pass parallel scan (block sums, a sequential scan of the block sums, then each block
/// rescanned from its base) whose result equals the sequential one exactly (integer sums).
#[derive(Debug)]
pub struct PrefixSumJob<'a> {
    /// Input counts.
    pub counts: &'a [EntityCounts],
    /// Output offsets, same length.
    pub offsets: &'a mut [EntityCounts],
    /// Output total.
    pub total: &'a mut EntityCounts,
    /// Force the sequential path (for tests and tiny inputs).
    pub sequential: bool,
}

impl PrefixSumJob<'_> {
    /// Checks that input and output have the same length and that the totals fit in `u32`.
    ///
    /// # Errors
    /// [`JobError::LengthMismatch`]; also when the sums overflow `u32` (reported as a length
    /// mismatch of the 'total' buffer against `u32::MAX`).
    pub fn validate(&self) -> Result<(), JobError> {
        check_len(
            "prefix sum",
            "offsets",
            self.counts.len(),
            self.offsets.len(),
        )?;
        let (mut b, mut p, mut s) = (0u64, 0u64, 0u64);
        for c in self.counts {
            b += u64::from(c.bones);
            p += u64::from(c.palette);
            s += u64::from(c.spans);
        }
        let max = b.max(p).max(s);
        if max > u64::from(u32::MAX) {
            return Err(JobError::LengthMismatch {
                job: "prefix sum",
                buffer: "total",
                expected: u32::MAX as usize,
                actual: max as usize,
            });
        }
        Ok(())
    }

    /// Runs the scan.
    pub fn run(&mut self) {
        let n = self.counts.len();
        if self.sequential || n < PARALLEL_SCAN_THRESHOLD {
            *self.total = scan_sequential(self.counts, self.offsets, EntityCounts::default());
            return;
        }
        let block = n
            .div_ceil(rayon::current_num_threads().max(1) * 4)
            .max(1024);
        let sums: Vec<EntityCounts> = self
            .counts
            .par_chunks(block)
            .map(|c| {
                c.iter()
                    .fold(EntityCounts::default(), |a, &x| a.saturating_add(x))
            })
            .collect();
        let mut bases = Vec::with_capacity(sums.len());
        let mut acc = EntityCounts::default();
        for s in &sums {
            bases.push(acc);
            acc = acc.saturating_add(*s);
        }
        self.offsets
            .par_chunks_mut(block)
            .zip(self.counts.par_chunks(block))
            .zip(bases.par_iter())
            .for_each(|((out, counts), &base)| {
                scan_sequential(counts, out, base);
            });
        *self.total = acc;
    }
}

/// Sequential exclusive scan starting at `base`; returns the running sum after the last entry.
pub fn scan_sequential(
    counts: &[EntityCounts],
    offsets: &mut [EntityCounts],
    base: EntityCounts,
) -> EntityCounts {
    let mut acc = base;
    for (o, &c) in offsets.iter_mut().zip(counts) {
        *o = acc;
        acc = acc.saturating_add(c);
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(bones: u32) -> EntityCounts {
        EntityCounts {
            bones,
            palette: bones * 2,
            spans: 1,
        }
    }

    #[test]
    fn hand_computed_scan() {
        let counts = [c(3), c(0), c(5), c(2)];
        let mut offsets = [EntityCounts::default(); 4];
        let mut total = EntityCounts::default();
        let mut job = PrefixSumJob {
            counts: &counts,
            offsets: &mut offsets,
            total: &mut total,
            sequential: false,
        };
        job.validate().unwrap();
        job.run();
        assert_eq!(offsets.map(|o| o.bones), [0, 3, 3, 8]);
        assert_eq!(offsets.map(|o| o.palette), [0, 6, 6, 16]);
        assert_eq!(
            total,
            EntityCounts {
                bones: 10,
                palette: 20,
                spans: 4
            }
        );
    }

    #[test]
    fn empty_crowd_and_bad_binding() {
        let mut total = EntityCounts {
            bones: 7,
            palette: 7,
            spans: 7,
        };
        let mut job = PrefixSumJob {
            counts: &[],
            offsets: &mut [],
            total: &mut total,
            sequential: false,
        };
        job.validate().unwrap();
        job.run();
        assert_eq!(total, EntityCounts::default());
        let mut out = [EntityCounts::default(); 1];
        let bad = PrefixSumJob {
            counts: &[c(1), c(2)],
            offsets: &mut out,
            total: &mut total,
            sequential: false,
        };
        assert!(matches!(
            bad.validate(),
            Err(JobError::LengthMismatch { .. })
        ));
        let huge = [
            EntityCounts {
                bones: u32::MAX,
                palette: 0,
                spans: 0,
            },
            c(1),
        ];
        let mut out2 = [EntityCounts::default(); 2];
        let overflow = PrefixSumJob {
            counts: &huge,
            offsets: &mut out2,
            total: &mut total,
            sequential: false,
        };
        assert!(overflow.validate().is_err());
    }

    #[test]
    fn parallel_equals_sequential_on_a_large_input() {
        let counts: Vec<EntityCounts> = (0..100_000u32).map(|i| c(i % 67)).collect();
        let mut a = vec![EntityCounts::default(); counts.len()];
        let mut b = a.clone();
        let (mut ta, mut tb) = (EntityCounts::default(), EntityCounts::default());
        PrefixSumJob {
            counts: &counts,
            offsets: &mut a,
            total: &mut ta,
            sequential: false,
        }
        .run();
        PrefixSumJob {
            counts: &counts,
            offsets: &mut b,
            total: &mut tb,
            sequential: true,
        }
        .run();
        assert_eq!(a, b);
        assert_eq!(ta, tb);
    }
}
