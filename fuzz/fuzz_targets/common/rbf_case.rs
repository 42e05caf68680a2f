//! The `rbf_bake` fuzz target's input decoder and contract check, shared by the fuzz binary
//! (`fuzz_targets/rbf_bake.rs`) and the regression test that replays
//! `fuzz/regressions/rbf_bake/` in the workspace's test run (`jobs/tests/rbf_fuzz_regressions.rs`
//! includes this file by path). It depends on `glam` and `sinew_jobs` only.
//!
//! Input layout (bytes read in order, missing bytes read as 0): mode, kernel, flags, epsilon
//! selector, threshold selector, top-k, budget selector, control count, high count, layout
//! (plain / coplanar / collinear / duplicates), then for each coordinate a selector byte (an
//! interesting value, a copy of an earlier point, or the next 4 bytes as raw `f32` bits).

use std::sync::Arc;

use glam::Vec3;
use sinew_jobs::deform::{BakeOptions, Kernel, RbfDeformer, RbfMode, Representation, bake};

/// Largest control and high counts built from one input (keeps the dense solve cheap).
const MAX_CTRL: usize = 48;
const MAX_HIGH: usize = 96;

struct Bytes<'a>(&'a [u8]);
impl Bytes<'_> {
    fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((b, rest)) => {
                self.0 = rest;
                *b
            }
            None => 0,
        }
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }
}

const VALUES: [f32; 16] = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    2.0,
    1e-38,
    1e-45,
    1e-7,
    1e7,
    1e19,
    3.4e38,
    f32::NAN,
    f32::INFINITY,
    f32::NEG_INFINITY,
    f32::MIN_POSITIVE,
];

fn coord(b: &mut Bytes, earlier: &[Vec3], axis: usize) -> f32 {
    let s = b.u8();
    match s {
        0..=15 => VALUES[s as usize],
        16..=47 if !earlier.is_empty() => earlier[s as usize % earlier.len()][axis],
        48..=127 => f32::from_bits(b.u32()),
        // A small integer grid: many exact coincidences and planes.
        _ => f32::from(s % 8) - 4.0 + f32::from(b.u8() % 4) * 0.25,
    }
}

pub struct Case {
    pub low: Vec<Vec3>,
    pub high: Vec<Vec3>,
    pub opts: BakeOptions,
    pub disp: Vec<Vec3>,
}

pub fn case(data: &[u8]) -> Case {
    let mut b = Bytes(data);
    let mode = if b.u8() % 2 == 0 {
        RbfMode::Interpolate
    } else {
        RbfMode::Normalized
    };
    let kernel = Kernel::ALL[b.u8() as usize % Kernel::ALL.len()];
    let flags = b.u8();
    let epsilon = match b.u8() % 12 {
        0 => 1.0,
        1 => 0.1,
        2 => 10.0,
        3 => 1e-300,
        4 => 1e300,
        5 => 0.0,
        6 => -1.0,
        7 => f64::NAN,
        8 => f64::INFINITY,
        9 => f64::MIN_POSITIVE,
        10 => 3.58,
        _ => f64::from(f32::from_bits(b.u32())),
    };
    let threshold = match b.u8() % 8 {
        0..=2 => 0.0,
        3 => 1e-3,
        4 => 0.5,
        5 => 2.0,
        6 => f32::NAN,
        _ => f32::from_bits(b.u32()),
    };
    let top_k = match b.u8() {
        0..=127 => None,
        k => Some(usize::from(k % 40)),
    };
    let dense_budget_bytes = match b.u8() % 4 {
        0 => 0,
        1 => 64,
        _ => sinew_jobs::deform::DEFAULT_DENSE_BUDGET_BYTES,
    };
    let opts = BakeOptions {
        mode,
        kernel,
        epsilon,
        threshold,
        top_k,
        renormalize: flags & 1 != 0,
        dense_budget_bytes,
        // Mostly unchecked, so that cages and meshes of unrelated sizes still reach the solve.
        max_size_ratio: if flags & 4 != 0 {
            sinew_jobs::deform::DEFAULT_MAX_SIZE_RATIO
        } else {
            f32::INFINITY
        },
    };
    let n_ctrl = usize::from(b.u8()) % (MAX_CTRL + 1);
    let n_high = usize::from(b.u8()) % (MAX_HIGH + 1);
    let layout = b.u8() % 4;
    let mut low: Vec<Vec3> = Vec::with_capacity(n_ctrl);
    for _ in 0..n_ctrl {
        let mut p = Vec3::new(
            coord(&mut b, &low, 0),
            coord(&mut b, &low, 1),
            coord(&mut b, &low, 2),
        );
        match layout {
            1 => p.z = 0.0,
            2 => {
                p.y = p.x;
                p.z = p.x;
            }
            3 if !low.is_empty() && b.u8() % 4 == 0 => p = low[low.len() / 2],
            _ => {}
        }
        low.push(p);
    }
    let mut high: Vec<Vec3> = Vec::with_capacity(n_high);
    for _ in 0..n_high {
        let p = if flags & 2 != 0 && !low.is_empty() && b.u8() % 2 == 0 {
            // A vertex on a control.
            low[usize::from(b.u8()) % low.len()]
        } else {
            let mut both = low.clone();
            both.extend_from_slice(&high);
            Vec3::new(
                coord(&mut b, &both, 0),
                coord(&mut b, &both, 1),
                coord(&mut b, &both, 2),
            )
        };
        high.push(p);
    }
    let disp = (0..n_ctrl)
        .map(|_| {
            let mut d = || f32::from(b.u8() as i8) / 16.0;
            Vec3::new(d(), d(), d())
        })
        .collect();
    Case {
        low,
        high,
        opts,
        disp,
    }
}

pub fn check(data: &[u8]) -> Result<(), String> {
    let c = case(data);
    let binding = match bake(&c.low, &c.high, &c.opts) {
        Ok(b) => b,
        Err(e) => {
            return if e.to_string().trim().is_empty() {
                Err(format!("empty error message for {e:?}"))
            } else {
                Ok(())
            };
        }
    };
    let report = binding.report().clone();
    if report.n_ctrl != c.low.len() || report.n_high != c.high.len() {
        return Err(format!("report counts {report:?}"));
    }
    if let Some(w) = binding.weights() {
        if let Some(i) = w.vals().iter().position(|v| !v.is_finite()) {
            return Err(format!(
                "non-finite weight {} at {i}: {report:?}",
                w.vals()[i]
            ));
        }
    } else if report.representation == Representation::Weights {
        return Err("Weights representation without weights".into());
    }
    let extent = c
        .low
        .iter()
        .chain(&c.high)
        .fold(0.0f32, |m, p| m.max(p.abs().max_element()));
    let mut deformer = RbfDeformer::new(Arc::new(binding));
    let mut out = vec![Vec3::ZERO; c.high.len()];
    deformer
        .deform(&c.low, &mut out)
        .map_err(|e| format!("deform at rest: {e}"))?;
    if let Some(i) = out.iter().position(|p| !p.is_finite()) {
        return Err(format!(
            "deform at rest: vertex {i} is {}: {report:?}",
            out[i]
        ));
    }
    // Only moderate inputs: the kernels grow like r³ and the polynomial term linearly, so far
    // out a bounded displacement can overflow f32 legitimately.
    if extent > 1e4 {
        return Ok(());
    }
    let posed: Vec<Vec3> = c.low.iter().zip(&c.disp).map(|(p, d)| *p + *d).collect();
    deformer
        .deform(&posed, &mut out)
        .map_err(|e| format!("deform posed: {e}"))?;
    if let Some(i) = out.iter().position(|p| !p.is_finite()) {
        return Err(format!(
            "deform posed: vertex {i} is {}: {report:?}",
            out[i]
        ));
    }
    Ok(())
}
