//! A uniform hash grid over points, for the neighbour queries of compactly supported kernels.

use hashbrown::HashMap;

/// Points bucketed into cubic cells of side `cell`; a query for radius `≤ cell` visits 27 cells.
pub(crate) struct Grid {
    cell: f64,
    buckets: HashMap<[i64; 3], Vec<u32>>,
}

impl Grid {
    /// Buckets `points` (indices must fit in `u32`, checked by the caller).
    pub(crate) fn new(points: &[[f64; 3]], cell: f64) -> Self {
        let mut buckets: HashMap<[i64; 3], Vec<u32>> = HashMap::new();
        for (i, p) in points.iter().enumerate() {
            buckets
                .entry(Self::key_of(p, cell))
                .or_default()
                .push(i as u32);
        }
        Self { cell, buckets }
    }

    fn key_of(p: &[f64; 3], cell: f64) -> [i64; 3] {
        // Saturating float → int casts: far-away points land in the edge cells, still correct.
        [
            (p[0] / cell).floor() as i64,
            (p[1] / cell).floor() as i64,
            (p[2] / cell).floor() as i64,
        ]
    }

    /// Calls `f(index, squared distance)` for every point within `radius` (`≤ cell`) of `q`.
    pub(crate) fn for_each_within(
        &self,
        q: &[f64; 3],
        points: &[[f64; 3]],
        radius: f64,
        mut f: impl FnMut(u32, f64),
    ) {
        let k = Self::key_of(q, self.cell);
        let r2 = radius * radius;
        for dx in -1i64..=1 {
            for dy in -1i64..=1 {
                for dz in -1i64..=1 {
                    let key = [
                        k[0].saturating_add(dx),
                        k[1].saturating_add(dy),
                        k[2].saturating_add(dz),
                    ];
                    let Some(list) = self.buckets.get(&key) else {
                        continue;
                    };
                    for &j in list {
                        let p = points[j as usize];
                        let d2 = dist2(q, &p);
                        if d2 < r2 {
                            f(j, d2);
                        }
                    }
                }
            }
        }
    }
}

/// Squared Euclidean distance.
#[inline]
pub(crate) fn dist2(a: &[f64; 3], b: &[f64; 3]) -> f64 {
    let dx = a[0] - b[0];
    let dy = a[1] - b[1];
    let dz = a[2] - b[2];
    dx * dx + dy * dy + dz * dz
}
