//! RBF bake and deformation against values derived independently (by hand or by a different
//! computation), plus the bad-input paths.
#![allow(clippy::unwrap_used, clippy::panic)] // test helpers outside #[test] functions

use std::sync::Arc;

use glam::{Affine3A, Mat3, Mat4, Quat, Vec3};
use sinew_jobs::asset::{RawSkinnedMesh, RawVertexInfluences};
use sinew_jobs::deform::{
    BakeOptions, DeformError, FixedWeights, Kernel, LANES, RbfBinding, RbfChain, RbfDeformer,
    RbfMode, RbfWeights, Representation, SimdMode, VertexTriangles, WeightLayout, bake,
    recompute_normals,
};

const INTERP_KERNELS: [Kernel; 6] = Kernel::ALL;

/// Deterministic pseudo-random points in [-1, 1]³ (xorshift), so tests need no rand crate.
fn cloud(n: usize, seed: u64) -> Vec<Vec3> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        ((s >> 11) as f64 / (1u64 << 53) as f64) as f32 * 2.0 - 1.0
    };
    (0..n).map(|_| Vec3::new(next(), next(), next())).collect()
}

fn deform(binding: RbfBinding, low_now: &[Vec3]) -> Vec<Vec3> {
    let mut d = RbfDeformer::new(Arc::new(binding));
    let mut out = vec![Vec3::ZERO; d.n_high()];
    d.deform(low_now, &mut out).unwrap();
    out
}

fn max_dist(a: &[Vec3], b: &[Vec3]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(p, q)| (*p - *q).length())
        .fold(0.0, f32::max)
}

/// Epsilon per kernel that keeps the 40-control cloud well conditioned.
fn eps_for(k: Kernel) -> f64 {
    match k {
        Kernel::Wendland => 0.4, // support radius 2.5: every pair of the cloud in [-1,1]³ overlaps partly
        _ => 1.5,
    }
}

#[test]
fn normalized_weight_of_two_controls_matches_hand_formula() {
    // x=0 ----- v=0.25 ------------------ x=1
    let low = [Vec3::ZERO, Vec3::X];
    let high = [Vec3::new(0.25, 0.0, 0.0)];
    let b = bake(&low, &high, &BakeOptions::normalized(2.0)).unwrap();
    let w: Vec<(usize, f32)> = b.weights().unwrap().row(0).collect();
    // phi(eps r) = exp(-(eps r)^2): exp(-0.25) and exp(-2.25)
    let (p0, p1) = ((-0.25f64).exp(), (-2.25f64).exp());
    assert_eq!(w.len(), 2);
    assert!((f64::from(w[0].1) - p0 / (p0 + p1)).abs() < 1e-7);
    assert!((f64::from(w[1].1) - p1 / (p0 + p1)).abs() < 1e-7);
}

#[test]
fn normalized_weights_are_positive_and_sum_to_one() {
    let low = cloud(30, 1);
    let high = cloud(500, 2);
    for kernel in [
        Kernel::Gaussian,
        Kernel::InverseMultiquadric,
        Kernel::Wendland,
    ] {
        let opts = BakeOptions::normalized(if kernel == Kernel::Wendland { 0.5 } else { 3.0 })
            .with_kernel(kernel);
        let b = bake(&low, &high, &opts).unwrap();
        let w = b.weights().unwrap();
        for i in 0..w.n_rows() {
            let s: f32 = w.row(i).map(|(_, x)| x).sum();
            assert!((s - 1.0).abs() < 1e-5, "{kernel}: row {i} sums to {s}");
            assert!(w.row(i).all(|(_, x)| x > 0.0));
        }
        // a translation of the cage translates the mesh exactly
        let t = Vec3::new(0.3, -2.0, 1.0);
        let moved: Vec<Vec3> = low.iter().map(|p| *p + t).collect();
        let out = deform(b, &moved);
        let want: Vec<Vec3> = high.iter().map(|p| *p + t).collect();
        assert!(max_dist(&out, &want) < 1e-5, "{kernel}");
    }
}

#[test]
fn normalized_gaussian_far_from_the_cage_does_not_underflow() {
    // exp(-(eps r)^2) underflows to 0 for every control here; the stabilised sum must not.
    let low = [Vec3::ZERO, Vec3::X];
    let high = [Vec3::new(100.0, 0.0, 0.0)];
    let b = bake(&low, &high, &BakeOptions::normalized(10.0)).unwrap();
    let w: Vec<(usize, f32)> = b.weights().unwrap().row(0).collect();
    assert_eq!(w, vec![(1, 1.0)]);
}

#[test]
fn four_controls_interpolate_to_barycentric_coordinates() {
    // With 4 controls and a degree-1 polynomial, P^T c = 0 forces c = 0: the interpolant is the
    // affine map through the tetrahedron, so W's row is the barycentric coordinates, whatever the
    // kernel. Tetrahedron 0, X, Y, Z: bary(a, b, c) = (1 - a - b - c, a, b, c).
    let low = [Vec3::ZERO, Vec3::X, Vec3::Y, Vec3::Z];
    let high = [
        Vec3::new(0.1, 0.2, 0.3),
        Vec3::new(2.0, -1.0, 0.5),
        Vec3::ZERO,
    ];
    for kernel in INTERP_KERNELS {
        let b = bake(&low, &high, &BakeOptions::interpolate(kernel, 1.3)).unwrap();
        let w = b.weights().unwrap();
        for (i, p) in high.iter().enumerate() {
            let mut row = [0.0f32; 4];
            for (j, x) in w.row(i) {
                row[j] = x;
            }
            let want = [1.0 - p.x - p.y - p.z, p.x, p.y, p.z];
            for j in 0..4 {
                assert!(
                    (row[j] - want[j]).abs() < 1e-5,
                    "{kernel}: vertex {i} control {j}: {} vs {}",
                    row[j],
                    want[j]
                );
            }
        }
    }
}

#[test]
fn interpolation_reproduces_control_displacements_exactly() {
    let low = cloud(40, 3);
    // high vertices: the controls themselves (rows 0..40) plus others
    let mut high = low.clone();
    high.extend(cloud(200, 4));
    let posed: Vec<Vec3> = low
        .iter()
        .zip(cloud(40, 5))
        .map(|(p, n)| *p + 0.2 * n)
        .collect();
    for kernel in INTERP_KERNELS {
        let b = bake(
            &low,
            &high,
            &BakeOptions::interpolate(kernel, eps_for(kernel)),
        )
        .unwrap();
        assert_eq!(b.report().representation, Representation::Weights);
        let out = deform(b, &posed);
        let err = max_dist(&out[..40], &posed);
        assert!(err < 2e-4, "{kernel}: control reproduction error {err}");
    }
}

#[test]
fn degree_one_interpolation_reproduces_affine_fields() {
    let low = cloud(40, 6);
    let high = cloud(300, 7);
    let m = Mat3::from_cols(
        Vec3::new(0.9, 0.1, 0.0),
        Vec3::new(-0.2, 1.1, 0.3),
        Vec3::new(0.0, 0.2, 0.8),
    );
    let t = Vec3::new(0.5, -0.25, 2.0);
    let f = |p: Vec3| m * p + t;
    let posed: Vec<Vec3> = low.iter().map(|p| f(*p)).collect();
    let want: Vec<Vec3> = high.iter().map(|p| f(*p)).collect();
    for kernel in INTERP_KERNELS {
        let b = bake(
            &low,
            &high,
            &BakeOptions::interpolate(kernel, eps_for(kernel)),
        )
        .unwrap();
        let err = max_dist(&deform(b, &posed), &want);
        assert!(err < 5e-4, "{kernel}: affine reproduction error {err}");
    }
}

#[test]
fn wendland_system_is_sparse_and_solved_by_sparse_lu() {
    let low = cloud(200, 8);
    let high = cloud(100, 9);
    let b = bake(
        &low,
        &high,
        &BakeOptions::interpolate(Kernel::Wendland, 3.0),
    )
    .unwrap();
    let r = b.report();
    assert_eq!(r.solver, "sparse LU");
    assert_eq!(r.system_size, 204);
    assert!(
        r.system_nnz < r.system_size * r.system_size / 4,
        "nnz {} of {}",
        r.system_nnz,
        r.system_size * r.system_size
    );
}

#[test]
fn coefficient_path_matches_weight_path() {
    let low = cloud(40, 10);
    let high = cloud(300, 11);
    let posed: Vec<Vec3> = low
        .iter()
        .zip(cloud(40, 12))
        .map(|(p, n)| *p + 0.1 * n)
        .collect();
    for kernel in [Kernel::ThinPlateSpline, Kernel::Wendland] {
        let opts = BakeOptions::interpolate(kernel, eps_for(kernel));
        let weights = bake(&low, &high, &opts).unwrap();
        let coef = bake(
            &low,
            &high,
            &BakeOptions {
                dense_budget_bytes: 0,
                ..opts
            },
        )
        .unwrap();
        assert_eq!(coef.report().representation, Representation::Coefficients);
        assert!(coef.weights().is_none() && coef.coefficients().is_some());
        let err = max_dist(&deform(weights, &posed), &deform(coef, &posed));
        assert!(err < 1e-5, "{kernel}: {err}");
    }
}

#[test]
fn top_k_keeps_k_weights_and_reports_dropped_mass() {
    let low = cloud(50, 13);
    let high = cloud(400, 14);
    let full = bake(&low, &high, &BakeOptions::normalized(2.0)).unwrap();
    let pruned = bake(&low, &high, &BakeOptions::normalized(2.0).with_top_k(8)).unwrap();
    let (wf, wp) = (full.weights().unwrap(), pruned.weights().unwrap());
    assert_eq!(wf.nnz(), 50 * 400);
    assert_eq!(wp.nnz(), 8 * 400);
    // the dropped mass is what the 42 smallest weights of each row summed to
    let mut expected = 0.0f64;
    for i in 0..400 {
        let mut row: Vec<f32> = wf.row(i).map(|(_, x)| x).collect();
        row.sort_by(|a, b| b.total_cmp(a));
        expected += row[8..].iter().map(|&x| f64::from(x)).sum::<f64>();
        let s: f32 = wp.row(i).map(|(_, x)| x).sum();
        assert!((s - 1.0).abs() < 1e-5, "renormalised row {i} sums to {s}");
    }
    assert!(
        (pruned.report().dropped_mass - expected).abs() < 1e-3 * expected,
        "{} vs {expected}",
        pruned.report().dropped_mass
    );
    assert!(
        pruned.report().max_row_dropped_fraction > 0.0
            && pruned.report().max_row_dropped_fraction < 1.0
    );
    // threshold pruning drops exactly the small weights
    let thr = bake(
        &low,
        &high,
        &BakeOptions::normalized(2.0).with_threshold(0.05),
    )
    .unwrap();
    let kept = wf.vals().iter().filter(|&&x| x >= 0.05).count();
    assert_eq!(thr.weights().unwrap().nnz(), kept);
}

#[test]
fn scalar_and_simd_accumulation_agree() {
    let low = cloud(60, 15);
    let high = cloud(3000, 16);
    let posed: Vec<Vec3> = low
        .iter()
        .zip(cloud(60, 17))
        .map(|(p, n)| *p + 0.3 * n)
        .collect();
    let b = Arc::new(bake(&low, &high, &BakeOptions::interpolate(Kernel::Cubic, 1.0)).unwrap());
    let mut outs = Vec::new();
    for mode in [SimdMode::Scalar, SimdMode::F32x4] {
        let mut d = RbfDeformer::new(b.clone());
        d.set_layout(WeightLayout::Csr);
        d.set_simd(mode);
        let mut out = vec![Vec3::ZERO; high.len()];
        d.deform(&posed, &mut out).unwrap();
        outs.push(out);
    }
    assert!(max_dist(&outs[0], &outs[1]) < 1e-5);
}

/// Largest `|a - b| / max(|b|, 1)` over every vertex: the fixed-layout tolerance is relative
/// to the coordinate magnitude (floored at 1, the size of these clouds).
fn max_rel(a: &[Vec3], b: &[Vec3]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(p, q)| (*p - *q).length() / q.length().max(1.0))
        .fold(0.0, f32::max)
}

/// Deforms `posed` with the fixed-width table and with the CSR reference.
fn fixed_and_csr(b: &Arc<RbfBinding>, posed: &[Vec3]) -> (Vec<Vec3>, Vec<Vec3>) {
    let mut fixed = RbfDeformer::new(b.clone());
    assert!(fixed.uses_fixed_layout());
    let mut csr = RbfDeformer::new(b.clone());
    csr.set_layout(WeightLayout::Csr);
    assert!(!csr.uses_fixed_layout());
    let mut out_f = vec![Vec3::ZERO; b.high_rest().len()];
    let mut out_c = vec![Vec3::ZERO; b.high_rest().len()];
    fixed.deform(posed, &mut out_f).unwrap();
    csr.deform(posed, &mut out_c).unwrap();
    (out_f, out_c)
}

#[test]
fn fixed_layout_matches_the_csr_reference() {
    // Tolerance: 1e-6 relative to max(|p|, 1). Both paths sum the same products in the same
    // (row) order with the same multiply-add, so today they agree bit for bit; the tolerance
    // leaves room for a kernel that reorders the sum (a different order changes the f32
    // rounding by a few ulps of the largest partial sum, ~1e-7 here).
    let low = cloud(300, 40);
    // 5003 rows: not a multiple of the block width, so the last block is padded
    let high = cloud(5003, 41);
    let posed: Vec<Vec3> = low
        .iter()
        .zip(cloud(300, 42))
        .map(|(p, n)| *p + 0.3 * n)
        .collect();
    for (name, opts) in [
        ("normalized wendland top-16", {
            BakeOptions::normalized(1.5)
                .with_kernel(Kernel::Wendland)
                .with_top_k(16)
        }),
        (
            "normalized gaussian top-8",
            BakeOptions::normalized(3.0).with_top_k(8),
        ),
        // signed weights, every row the same 64 controls + the polynomial folded in
        (
            "interpolate cubic, 64 controls",
            BakeOptions::interpolate(Kernel::Cubic, 1.0),
        ),
    ] {
        let n_ctrl = if name.contains("64") { 64 } else { low.len() };
        let b = Arc::new(bake(&low[..n_ctrl], &high, &opts).unwrap());
        let f = b.fixed_weights().unwrap();
        let w = b.weights().unwrap();
        let longest = (0..w.n_rows()).map(|i| w.row(i).count()).max().unwrap();
        assert_eq!(f.k(), longest, "{name}");
        assert_eq!(f.n_blocks(), 5003usize.div_ceil(LANES));
        assert_eq!(f.size_bytes(), f.n_blocks() * f.k() * LANES * 6);
        let (out_f, out_c) = fixed_and_csr(&b, &posed[..n_ctrl]);
        let err = max_rel(&out_f, &out_c);
        assert!(err <= 1e-6, "{name}: fixed vs CSR relative error {err}");
        // the vertices really moved
        assert!(
            out_c
                .iter()
                .zip(&high)
                .any(|(o, r)| (*o - *r).length() > 1e-2)
        );
    }
}

#[test]
fn fixed_layout_blocks_hold_each_row_padded_with_zero_weights() {
    // rows of 2, 0, 3 and 1 weights: K = 3; a block of 8 with lanes 4..8 past the end
    let w = RbfWeights::from_csr(
        5,
        vec![0, 2, 2, 5, 6],
        vec![4, 1, 0, 2, 3, 4],
        vec![0.5, 0.25, 1.0, -2.0, 3.0, 0.125],
        0.0,
        0.0,
    )
    .unwrap();
    let f = FixedWeights::from_csr(&w, 16).unwrap();
    assert_eq!((f.n_rows(), f.n_cols(), f.k(), f.n_blocks()), (4, 5, 3, 1));
    let (idx, wt) = (f.block_indices(0), f.block_weights(0));
    assert_eq!(idx.len(), 3);
    // slot-major: idx[slot][lane]
    assert_eq!([idx[0][0], idx[1][0], idx[2][0]], [4, 1, 0]);
    assert_eq!([wt[0][0], wt[1][0], wt[2][0]], [0.5, 0.25, 0.0]);
    assert_eq!([wt[0][1], wt[1][1], wt[2][1]], [0.0, 0.0, 0.0]);
    assert_eq!([idx[0][2], idx[1][2], idx[2][2]], [0, 2, 3]);
    assert_eq!([wt[0][2], wt[1][2], wt[2][2]], [1.0, -2.0, 3.0]);
    assert_eq!(idx[0][3], 4);
    assert_eq!([wt[0][3], wt[1][3], wt[2][3]], [0.125, 0.0, 0.0]);
    assert!(wt.iter().all(|s| s[4..].iter().all(|&x| x == 0.0)));
    assert!(f.block_indices(1).is_empty() && f.block_weights(1).is_empty());
    // a row longer than max_k, or more than 65536 controls: no fixed table
    assert!(matches!(
        FixedWeights::from_csr(&w, 2),
        Err(DeformError::InvalidOption { .. })
    ));
    let wide = RbfWeights::from_csr(70_000, vec![0, 1], vec![69_999], vec![1.0], 0.0, 0.0).unwrap();
    assert!(matches!(
        FixedWeights::from_csr(&wide, 16),
        Err(DeformError::InvalidOption { .. })
    ));
}

#[test]
fn fixed_layout_is_skipped_when_it_does_not_fit() {
    // 100 controls, every row full: K = 100 > MAX_FIXED_K, so the deformer uses the CSR table
    let low = cloud(100, 43);
    let high = cloud(50, 44);
    let b = Arc::new(bake(&low, &high, &BakeOptions::normalized(1.0)).unwrap());
    assert!(b.fixed_weights().is_none());
    let d = RbfDeformer::new(b);
    assert!(!d.uses_fixed_layout());
    // coefficients: no weight table at all
    let coef = bake(
        &low,
        &high,
        &BakeOptions {
            dense_budget_bytes: 0,
            ..BakeOptions::interpolate(Kernel::Cubic, 1.0)
        },
    )
    .unwrap();
    assert!(coef.fixed_weights().is_none());
}

#[test]
fn fixed_layout_amortised_slices_and_repeated_frames_match_csr() {
    let low = cloud(80, 45);
    let high = cloud(1003, 46);
    let b = Arc::new(bake(&low, &high, &BakeOptions::normalized(2.5).with_top_k(16)).unwrap());
    let mut fixed = RbfDeformer::new(b.clone());
    let mut csr = RbfDeformer::new(b.clone());
    csr.set_layout(WeightLayout::Csr);
    let mut out_f = vec![Vec3::splat(7.0); 1003];
    let mut out_c = vec![Vec3::splat(7.0); 1003];
    for frame in 0..7u64 {
        let posed: Vec<Vec3> = low
            .iter()
            .zip(cloud(80, 50 + frame))
            .map(|(p, n)| *p + 0.2 * n)
            .collect();
        // 3 slices of 335 vertices: boundaries inside blocks of 8
        let rf = fixed.deform_amortized(&posed, &mut out_f, 3).unwrap();
        let rc = csr.deform_amortized(&posed, &mut out_c, 3).unwrap();
        assert_eq!(rf, rc);
        assert!(max_rel(&out_f, &out_c) <= 1e-6, "frame {frame}");
        // persistent buffers: the output is written in place, the scratch keeps its size
        assert_eq!(fixed.displacements().len(), 80);
    }
    // untouched entries stay as they were before the first full pass
    let mut fresh = vec![Vec3::splat(7.0); 1003];
    let mut d = RbfDeformer::new(b);
    let posed: Vec<Vec3> = low.iter().map(|p| *p + Vec3::X).collect();
    let r = d.deform_amortized(&posed, &mut fresh, 4).unwrap();
    assert_eq!(r, 0..251);
    assert!(fresh[251..].iter().all(|p| *p == Vec3::splat(7.0)));
    assert!(fresh[..251].iter().all(|p| *p != Vec3::splat(7.0)));
}

#[test]
fn amortised_mode_refreshes_one_slice_per_call_round_robin() {
    let low = cloud(20, 18);
    let high = cloud(1000, 19);
    let posed: Vec<Vec3> = low.iter().map(|p| *p + Vec3::Y).collect();
    let b = Arc::new(bake(&low, &high, &BakeOptions::normalized(2.0)).unwrap());
    let mut full = vec![Vec3::ZERO; 1000];
    RbfDeformer::new(b.clone())
        .deform(&posed, &mut full)
        .unwrap();
    let mut d = RbfDeformer::new(b);
    let mut out = high.clone();
    let r0 = d.deform_amortized(&posed, &mut out, 3).unwrap();
    assert_eq!(r0, 0..334);
    assert!(max_dist(&out[..334], &full[..334]) < 1e-6);
    assert_eq!(
        &out[334..],
        &high[334..],
        "vertices outside the slice keep their values"
    );
    assert_eq!(d.deform_amortized(&posed, &mut out, 3).unwrap(), 334..668);
    assert_eq!(d.deform_amortized(&posed, &mut out, 3).unwrap(), 668..1000);
    assert!(max_dist(&out, &full) < 1e-6);
    assert_eq!(
        d.deform_amortized(&posed, &mut out, 3).unwrap(),
        0..334,
        "wraps around"
    );
    assert!(matches!(
        d.deform_amortized(&posed, &mut out, 0),
        Err(DeformError::InvalidOption { .. })
    ));
}

/// Reference normals by scattering face normals (a different algorithm from the library's
/// per-vertex gather).
fn scatter_normals(p: &[Vec3], idx: &[u32]) -> Vec<Vec3> {
    let mut n = vec![Vec3::ZERO; p.len()];
    for t in idx.chunks_exact(3) {
        let (a, b, c) = (t[0] as usize, t[1] as usize, t[2] as usize);
        let f = (p[b] - p[a]).cross(p[c] - p[a]);
        n[a] += f;
        n[b] += f;
        n[c] += f;
    }
    n.iter().map(|v| v.normalize_or_zero()).collect()
}

#[test]
fn normals_are_recomputed_area_weighted() {
    // 3x3 grid of vertices in the z=0 plane, 8 triangles:
    //  6---7---8
    //  | / | / |
    //  3---4---5
    //  | / | / |
    //  0---1---2
    let grid: Vec<Vec3> = (0..9)
        .map(|i| Vec3::new((i % 3) as f32, (i / 3) as f32, 0.0))
        .collect();
    let mut idx = Vec::new();
    for r in 0..2u32 {
        for c in 0..2u32 {
            let v = r * 3 + c;
            idx.extend([v, v + 1, v + 4, v, v + 4, v + 3]);
        }
    }
    let low = [
        Vec3::new(-1.0, -1.0, 0.0),
        Vec3::new(3.0, -1.0, 0.0),
        Vec3::new(1.0, 3.0, 0.0),
        Vec3::new(1.0, 1.0, 2.0),
    ];
    let b = Arc::new(
        bake(
            &low,
            &grid,
            &BakeOptions::interpolate(Kernel::ThinPlateSpline, 1.0),
        )
        .unwrap(),
    );
    let mut d = RbfDeformer::new(b).with_normals(&idx).unwrap();
    let mut out = vec![Vec3::ZERO; 9];
    // lift the apex: the flat grid stays flat only if the map is affine — it is (4 controls)
    let posed = [low[0], low[1], low[2], low[3] + Vec3::new(0.0, 0.0, 1.0)];
    d.deform(&posed, &mut out).unwrap();
    let want = scatter_normals(&out, &idx);
    for (n, w) in d.normals().unwrap().iter().zip(&want) {
        assert!((*n - *w).length() < 1e-5);
    }
    // bend it with a non-affine cage (more controls): still agrees with the scatter reference
    let low8: Vec<Vec3> = cloud(12, 20)
        .iter()
        .map(|p| *p * 3.0 + Vec3::new(1.0, 1.0, 0.0))
        .collect();
    let posed8: Vec<Vec3> = low8
        .iter()
        .map(|p| *p + Vec3::new(0.0, 0.0, 0.3 * p.x * p.x))
        .collect();
    let b = Arc::new(
        bake(
            &low8,
            &grid,
            &BakeOptions::interpolate(Kernel::ThinPlateSpline, 1.0),
        )
        .unwrap(),
    );
    let mut d = RbfDeformer::new(b).with_normals(&idx).unwrap();
    d.deform(&posed8, &mut out).unwrap();
    let want = scatter_normals(&out, &idx);
    let got = d.normals().unwrap();
    assert!(
        got.iter()
            .zip(&want)
            .all(|(n, w)| (*n - *w).length() < 1e-5)
    );
    assert!(
        got.iter().any(|n| (*n - Vec3::Z).length() > 1e-2),
        "the bent grid's normals must tilt"
    );
    // and the free function rejects bad sizes
    let adj = VertexTriangles::new(&idx, 9).unwrap();
    let mut small = vec![Vec3::ZERO; 8];
    assert!(matches!(
        recompute_normals(&adj, &out, &mut small),
        Err(DeformError::LengthMismatch { .. })
    ));
    assert!(matches!(
        VertexTriangles::new(&[0, 1, 9], 9),
        Err(DeformError::IndexOutOfRange { index: 9, .. })
    ));
    assert!(matches!(
        VertexTriangles::new(&[0, 1], 9),
        Err(DeformError::InvalidOption { .. })
    ));
}

#[test]
fn chain_low_mid_high_equals_running_the_stages_by_hand() {
    let low = cloud(12, 21);
    let mid = cloud(80, 22);
    let high = cloud(600, 23);
    let posed: Vec<Vec3> = low
        .iter()
        .zip(cloud(12, 24))
        .map(|(p, n)| *p + 0.2 * n)
        .collect();
    let b1 = Arc::new(
        bake(
            &low,
            &mid,
            &BakeOptions::interpolate(Kernel::ThinPlateSpline, 1.0),
        )
        .unwrap(),
    );
    let b2 = Arc::new(bake(&mid, &high, &BakeOptions::normalized(4.0).with_top_k(16)).unwrap());
    let mut chain = RbfChain::new(vec![
        RbfDeformer::new(b1.clone()),
        RbfDeformer::new(b2.clone()),
    ])
    .unwrap();
    let mut out = vec![Vec3::ZERO; 600];
    chain.deform(&posed, &mut out).unwrap();
    let mut mid_now = vec![Vec3::ZERO; 80];
    RbfDeformer::new(b1.clone())
        .deform(&posed, &mut mid_now)
        .unwrap();
    let mut want = vec![Vec3::ZERO; 600];
    RbfDeformer::new(b2).deform(&mid_now, &mut want).unwrap();
    assert_eq!(out, want);
    // stages that do not fit: the second stage's controls are not the first stage's high mesh
    let b3 = Arc::new(bake(&cloud(80, 99), &high, &BakeOptions::normalized(4.0)).unwrap());
    assert!(matches!(
        RbfChain::new(vec![RbfDeformer::new(b1.clone()), RbfDeformer::new(b3)]),
        Err(DeformError::InvalidOption { .. })
    ));
    let b4 = Arc::new(bake(&high, &mid, &BakeOptions::normalized(4.0).with_top_k(4)).unwrap());
    assert!(matches!(
        RbfChain::new(vec![RbfDeformer::new(b1), RbfDeformer::new(b4)]),
        Err(DeformError::LengthMismatch { .. })
    ));
    assert!(matches!(
        RbfChain::new(vec![]),
        Err(DeformError::Empty { .. })
    ));
}

#[test]
fn skinned_low_poly_driver_moves_the_high_mesh() {
    // A bar driven by two bones, skinned on the CPU, drives a denser bar by RBF.
    //
    //   bone 0 (root)          bone 1 (tip, bind at x=2)
    //   x=0 ... x=2  |  x=2 ... x=4      low: 5 stations × 4 corners, high: 41 stations × 4 corners
    let section = [
        Vec3::new(0.0, -0.5, -0.5),
        Vec3::new(0.0, 0.5, -0.5),
        Vec3::new(0.0, 0.5, 0.5),
        Vec3::new(0.0, -0.5, 0.5),
    ];
    let bar = |stations: usize| -> Vec<Vec3> {
        (0..stations)
            .flat_map(|s| {
                let x = 4.0 * s as f32 / (stations - 1) as f32;
                section.iter().map(move |c| *c + Vec3::new(x, 0.0, 0.0))
            })
            .collect()
    };
    let low = bar(5);
    let high = bar(41);
    let raw = RawSkinnedMesh {
        name: "bar".into(),
        bones: vec![
            ("root".into(), Mat4::IDENTITY),
            (
                "tip".into(),
                Mat4::from_translation(Vec3::new(-2.0, 0.0, 0.0)),
            ),
        ],
        positions: low.clone(),
        normals: vec![],
        influences: low
            .iter()
            .map(|p| {
                let t = (p.x / 4.0).clamp(0.0, 1.0);
                RawVertexInfluences(vec![(0, 1.0 - t), (1, t)])
            })
            .collect(),
        indices: vec![],
        ..Default::default()
    };
    let mesh = raw.bake().unwrap();
    let binding = Arc::new(
        bake(
            &low,
            &high,
            &BakeOptions::interpolate(Kernel::ThinPlateSpline, 1.0),
        )
        .unwrap(),
    );
    let mut d = RbfDeformer::new(binding);
    let mut out = vec![Vec3::ZERO; high.len()];

    // Frame 1: the whole rig moved rigidly (both palette entries the same rigid transform):
    // the high mesh must follow the same transform exactly (affine reproduction).
    let rigid =
        Affine3A::from_rotation_translation(Quat::from_rotation_z(0.4), Vec3::new(1.0, 2.0, 3.0));
    let palette = [rigid.to_cols_array(), rigid.to_cols_array()];
    let (skinned, _) = mesh.skin_cpu(&palette);
    d.deform(&skinned, &mut out).unwrap();
    let want: Vec<Vec3> = high.iter().map(|p| rigid.transform_point3(*p)).collect();
    assert!(max_dist(&out, &want) < 1e-4, "{}", max_dist(&out, &want));

    // Frame 2: the tip bends 60° about z at x=2. Every 10th high station coincides with a low
    // station, so those high vertices must land exactly on the skinned low vertices.
    let bend = Affine3A::from_translation(Vec3::new(2.0, 0.0, 0.0))
        * Affine3A::from_rotation_z(1.047)
        * Affine3A::from_translation(Vec3::new(-2.0, 0.0, 0.0));
    let tip = bend * Affine3A::from_translation(Vec3::new(2.0, 0.0, 0.0));
    let palette = [
        Affine3A::IDENTITY.to_cols_array(),
        (tip * Affine3A::from_translation(Vec3::new(-2.0, 0.0, 0.0))).to_cols_array(),
    ];
    let (skinned, _) = mesh.skin_cpu(&palette);
    d.deform(&skinned, &mut out).unwrap();
    for s in 0..5 {
        for c in 0..4 {
            let (hi, lo) = ((s * 10) * 4 + c, s * 4 + c);
            assert!(
                (out[hi] - skinned[lo]).length() < 1e-4,
                "station {s} corner {c}"
            );
        }
    }
    // and the bent tip really moved (not a no-op)
    assert!((out[high.len() - 1] - high[high.len() - 1]).length() > 1.0);
}

#[test]
fn bad_inputs_give_errors_not_panics() {
    let low = cloud(10, 30);
    let high = cloud(20, 31);
    let ok = BakeOptions::interpolate(Kernel::Gaussian, 1.0);
    assert!(matches!(
        bake(&[], &high, &ok),
        Err(DeformError::Empty { .. })
    ));
    assert!(matches!(
        bake(&low, &[], &ok),
        Err(DeformError::Empty { .. })
    ));
    for eps in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert!(
            matches!(
                bake(
                    &low,
                    &high,
                    &BakeOptions {
                        epsilon: eps,
                        ..ok.clone()
                    }
                ),
                Err(DeformError::InvalidEpsilon { .. })
            ),
            "{eps}"
        );
    }
    let mut nan = low.clone();
    nan[3].y = f32::NAN;
    assert_eq!(
        bake(&nan, &high, &ok).unwrap_err(),
        DeformError::NotFinite {
            what: "low-poly rest positions (controls)",
            index: 3
        }
    );
    let mut inf = high.clone();
    inf[7].z = f32::INFINITY;
    assert!(matches!(
        bake(&low, &inf, &ok),
        Err(DeformError::NotFinite { index: 7, .. })
    ));
    let mut dup = low.clone();
    dup[6] = dup[2];
    assert_eq!(
        bake(&dup, &high, &ok).unwrap_err(),
        DeformError::DuplicateControls {
            first: 2,
            second: 6
        }
    );
    // -0.0 and +0.0 are the same position
    let zeros = [
        Vec3::ZERO,
        Vec3::new(-0.0, 0.0, 0.0),
        Vec3::X,
        Vec3::Y,
        Vec3::Z,
    ];
    assert!(matches!(
        bake(&zeros, &high, &ok),
        Err(DeformError::DuplicateControls {
            first: 0,
            second: 1
        })
    ));
    // coplanar controls: the polynomial block is rank deficient
    let flat: Vec<Vec3> = low.iter().map(|p| Vec3::new(p.x, p.y, 0.0)).collect();
    assert!(matches!(
        bake(&flat, &high, &ok),
        Err(DeformError::Singular { .. })
    ));
    assert!(matches!(
        bake(&low[..3], &high, &ok),
        Err(DeformError::Singular { .. })
    ));
    // nearly coincident controls with a very flat Gaussian: numerically singular
    let mut close = low.clone();
    close[6] = close[2] + Vec3::splat(1e-7);
    assert!(matches!(
        bake(
            &close,
            &high,
            &BakeOptions::interpolate(Kernel::Gaussian, 1e-3)
        ),
        Err(DeformError::Singular { .. })
    ));
    // normalized mode with a kernel that changes sign
    assert!(matches!(
        bake(
            &low,
            &high,
            &BakeOptions::normalized(1.0).with_kernel(Kernel::ThinPlateSpline)
        ),
        Err(DeformError::InvalidOption { .. })
    ));
    assert!(matches!(
        bake(&low, &high, &BakeOptions::normalized(1.0).with_top_k(0)),
        Err(DeformError::InvalidOption { .. })
    ));
    assert!(matches!(
        bake(
            &low,
            &high,
            &BakeOptions::normalized(1.0).with_threshold(-1.0)
        ),
        Err(DeformError::InvalidOption { .. })
    ));
    // Wendland normalized with a vertex outside every support
    let far = [Vec3::new(50.0, 0.0, 0.0)];
    assert_eq!(
        bake(
            &low,
            &far,
            &BakeOptions::normalized(1.0).with_kernel(Kernel::Wendland)
        )
        .unwrap_err(),
        DeformError::Unreached { vertex: 0 }
    );
    // normalized global kernel over the dense budget without pruning
    let tiny = BakeOptions {
        dense_budget_bytes: 16,
        ..BakeOptions::normalized(1.0)
    };
    assert!(matches!(
        bake(&low, &high, &tiny),
        Err(DeformError::TooLarge { .. })
    ));
    assert!(bake(&low, &high, &tiny.with_top_k(4)).is_ok());

    // runtime: wrong counts, NaN
    let mut d = RbfDeformer::new(Arc::new(bake(&low, &high, &ok).unwrap()));
    let mut out = vec![Vec3::ZERO; 20];
    assert_eq!(
        d.deform(&low[..9], &mut out).unwrap_err(),
        DeformError::LengthMismatch {
            what: "current low-poly positions",
            expected: 10,
            actual: 9
        }
    );
    assert!(matches!(
        d.deform(&low, &mut out[..19]),
        Err(DeformError::LengthMismatch {
            expected: 20,
            actual: 19,
            ..
        })
    ));
    assert!(matches!(
        d.deform(&nan, &mut out),
        Err(DeformError::NotFinite { index: 3, .. })
    ));
    assert!(d.deform(&low, &mut out).is_ok());
    // messages say what and where
    let msg = DeformError::DuplicateControls {
        first: 2,
        second: 6,
    }
    .to_string();
    assert!(msg.contains("controls 2 and 6"), "{msg}");
    assert!(
        "nope"
            .parse::<Kernel>()
            .unwrap_err()
            .to_string()
            .contains("unknown kernel 'nope'")
    );
    assert_eq!(
        "thin_plate_spline".parse::<Kernel>().unwrap(),
        Kernel::ThinPlateSpline
    );
    assert_eq!(
        BakeOptions::interpolate(Kernel::Cubic, 1.0).mode,
        RbfMode::Interpolate
    );
}

/// scipy's kernels, written out again here from scipy's documentation (not from the library).
fn phi_reference(kernel: Kernel, r: f64) -> f64 {
    match kernel {
        Kernel::Gaussian => (-(r * r)).exp(),
        Kernel::ThinPlateSpline if r == 0.0 => 0.0,
        Kernel::ThinPlateSpline => r * r * r.ln(),
        Kernel::Multiquadric => -(1.0 + r * r).sqrt(),
        Kernel::InverseMultiquadric => 1.0 / (1.0 + r * r).sqrt(),
        Kernel::Cubic => r.powi(3),
        Kernel::Wendland if r < 1.0 => (1.0 - r).powi(4) * (4.0 * r + 1.0),
        Kernel::Wendland => 0.0,
    }
}

#[allow(clippy::needless_range_loop)] // index form mirrors the textbook algorithm
/// Gauss-Jordan elimination with partial pivoting, f64, solving `a x = b` in place.
fn gauss_jordan(mut a: Vec<Vec<f64>>, mut b: Vec<[f64; 3]>) -> Vec<[f64; 3]> {
    let n = a.len();
    for col in 0..n {
        let piv = (col..n)
            .max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))
            .unwrap();
        a.swap(col, piv);
        b.swap(col, piv);
        for row in 0..n {
            if row != col {
                let f = a[row][col] / a[col][col];
                for k in col..n {
                    a[row][k] -= f * a[col][k];
                }
                for d in 0..3 {
                    b[row][d] -= f * b[col][d];
                }
            }
        }
    }
    (0..n)
        .map(|i| [b[i][0] / a[i][i], b[i][1] / a[i][i], b[i][2] / a[i][i]])
        .collect()
}

#[test]
fn interpolant_matches_an_independent_dense_solve_for_every_kernel() {
    // 7 controls (a tetrahedron plus three more points), an unscaled [1, x, y, z] polynomial,
    // solved by Gauss-Jordan: the interpolant does not depend on scipy's shift/scale, so the
    // library (scaled polynomial, faer LU) must agree.
    let low = [
        Vec3::ZERO,
        Vec3::X,
        Vec3::Y,
        Vec3::Z,
        Vec3::new(0.7, 0.6, 0.2),
        Vec3::new(-0.4, 0.3, 0.9),
        Vec3::new(0.2, -0.5, 0.4),
    ];
    let posed: Vec<Vec3> = low
        .iter()
        .enumerate()
        .map(|(i, p)| {
            *p + Vec3::new(
                (i as f32 * 0.37).sin(),
                (i as f32 * 0.11).cos() * 0.3,
                0.05 * i as f32,
            )
        })
        .collect();
    let high = cloud(50, 40);
    for kernel in INTERP_KERNELS {
        let eps = if kernel == Kernel::Wendland { 0.6 } else { 1.7 };
        let n = low.len();
        let pt = |p: Vec3| [1.0, f64::from(p.x), f64::from(p.y), f64::from(p.z)];
        let mut a = vec![vec![0.0f64; n + 4]; n + 4];
        let mut b = vec![[0.0f64; 3]; n + 4];
        for i in 0..n {
            for j in 0..n {
                a[i][j] = phi_reference(kernel, eps * f64::from(low[i].distance(low[j])));
            }
            for (m, v) in pt(low[i]).iter().enumerate() {
                a[i][n + m] = *v;
                a[n + m][i] = *v;
            }
            let d = posed[i] - low[i];
            b[i] = [f64::from(d.x), f64::from(d.y), f64::from(d.z)];
        }
        let c = gauss_jordan(a, b);
        let want: Vec<Vec3> = high
            .iter()
            .map(|x| {
                let mut s = [0.0f64; 3];
                for j in 0..n {
                    let f = phi_reference(kernel, eps * f64::from(x.distance(low[j])));
                    (0..3).for_each(|d| s[d] += f * c[j][d]);
                }
                for (m, v) in pt(*x).iter().enumerate() {
                    (0..3).for_each(|d| s[d] += v * c[n + m][d]);
                }
                *x + Vec3::new(s[0] as f32, s[1] as f32, s[2] as f32)
            })
            .collect();
        let got = deform(
            bake(&low, &high, &BakeOptions::interpolate(kernel, eps)).unwrap(),
            &posed,
        );
        let err = max_dist(&got, &want);
        assert!(err < 1e-5, "{kernel}: {err}");
    }
}

/// The eight corners of the box `[-hx, hx] × [-hy, hy] × [-hz, hz]`.
fn box_corners(h: Vec3) -> Vec<Vec3> {
    (0..8)
        .map(|i| {
            let s = |b: usize| if i & b != 0 { 1.0 } else { -1.0 };
            Vec3::new(s(1) * h.x, s(2) * h.y, s(4) * h.z)
        })
        .collect()
}

#[test]
fn controls_flat_along_one_axis_are_refused_whatever_the_axis_scaling() {
    // The first fuzz finding (fuzz/regressions/rbf_bake/crash-2b6e…): the controls span 1e-45
    // along y and 1 along x and z. Scaled per axis, as the solve does, the y span looks as wide
    // as the others; the polynomial then multiplies the vertex's y offset of -0.25 by ~1e45.
    let low = [Vec3::new(0.0, 1e-45, 0.0), Vec3::Z, Vec3::NEG_X, Vec3::ZERO];
    let high = [Vec3::new(1.0, -0.25, 1.25), Vec3::new(-0.12, -0.96, -0.34)];
    for budget in [0, sinew_jobs::deform::DEFAULT_DENSE_BUDGET_BYTES] {
        let opts = BakeOptions {
            dense_budget_bytes: budget,
            ..BakeOptions::interpolate(Kernel::Cubic, 1.0)
        };
        let msg = match bake(&low, &high, &opts) {
            Err(DeformError::Singular { reason }) => reason,
            other => panic!("budget {budget}: {other:?}"),
        };
        assert!(
            msg.contains("coplanar") && msg.contains("[-1.0, 0.0, 0.0] to [0.0, 1e-45, 1.0]"),
            "{msg}"
        );
    }
    // A thin slab is not flat: 2 × 2 × 0.002 still bakes, and degree-1 interpolation reproduces
    // an affine motion of the cage at the vertices inside it exactly (up to f32 rounding).
    let slab = box_corners(Vec3::new(1.0, 1.0, 1e-3));
    let inside: Vec<Vec3> = cloud(32, 7)
        .into_iter()
        .map(|p| p * Vec3::new(0.9, 0.9, 9e-4))
        .collect();
    let affine = Affine3A::from_mat3_translation(
        Mat3::from_cols(
            Vec3::new(1.1, 0.2, 0.0),
            Vec3::new(-0.1, 0.9, 0.3),
            Vec3::new(0.0, 0.1, 1.2),
        ),
        Vec3::new(0.5, -2.0, 3.0),
    );
    let moved: Vec<Vec3> = slab.iter().map(|p| affine.transform_point3(*p)).collect();
    let expected: Vec<Vec3> = inside.iter().map(|p| affine.transform_point3(*p)).collect();
    for kernel in [Kernel::Cubic, Kernel::ThinPlateSpline, Kernel::Gaussian] {
        let binding = bake(&slab, &inside, &BakeOptions::interpolate(kernel, 1.0)).unwrap();
        let err = max_dist(&deform(binding, &moved), &expected);
        assert!(err < 1e-4, "{kernel}: {err}");
    }
}

#[test]
fn cage_and_mesh_in_different_units_are_refused_naming_both_boxes() {
    // A cage in metres (a 0.6 × 1.8 × 0.4 box of 27 controls standing on the origin) and the
    // mesh it surrounds, given in centimetres.
    let metres: Vec<Vec3> = (0..27)
        .map(|i| {
            let t = |k: usize| ((i / k) % 3) as f32 * 0.5;
            Vec3::new(0.6 * t(1) - 0.3, 1.8 * t(3), 0.4 * t(9) - 0.2)
        })
        .collect();
    let mesh_m: Vec<Vec3> = cloud(64, 3)
        .into_iter()
        .map(|p| Vec3::new(0.25 * p.x, 0.9 + 0.85 * p.y, 0.15 * p.z))
        .collect();
    let mesh_cm: Vec<Vec3> = mesh_m.iter().map(|p| *p * 100.0).collect();
    // The boxes, found by hand from the constructions above and from the cloud's extremes.
    let (lo, hi) = mesh_cm.iter().fold(
        (Vec3::splat(f32::INFINITY), Vec3::splat(f32::NEG_INFINITY)),
        |(lo, hi), p| (lo.min(*p), hi.max(*p)),
    );
    for opts in [
        BakeOptions::interpolate(Kernel::Cubic, 1.0),
        BakeOptions::normalized(1.0),
    ] {
        let err = bake(&metres, &mesh_cm, &opts).unwrap_err();
        let DeformError::ScaleMismatch {
            cage_min,
            cage_max,
            mesh_min,
            mesh_max,
            ratio,
            limit,
        } = err.clone()
        else {
            panic!("{err:?}");
        };
        assert_eq!(cage_min, [-0.3, 0.0, -0.2]);
        assert_eq!(cage_max, [0.3, 1.8, 0.2]);
        assert_eq!((mesh_min, mesh_max), (lo.to_array(), hi.to_array()));
        // The largest extents: 1.8 m of cage along y, the mesh's y extent in centimetres.
        assert!((ratio - (hi.y - lo.y) / 1.8).abs() < 1e-3, "{ratio}");
        assert!(ratio > 50.0, "{ratio}");
        assert_eq!(limit, sinew_jobs::deform::DEFAULT_MAX_SIZE_RATIO);
        let msg = err.to_string();
        assert!(
            msg.contains("[-0.3, 0.0, -0.2] to [0.3, 1.8, 0.2]")
                && msg.contains(&format!("{mesh_min:?} to {mesh_max:?}"))
                && msg.contains("units"),
            "{msg}"
        );
    }
    // The other way round: a cage in centimetres and the mesh in metres.
    let centimetres: Vec<Vec3> = metres.iter().map(|p| *p * 100.0).collect();
    let opts = BakeOptions::interpolate(Kernel::Cubic, 0.01);
    assert!(matches!(
        bake(&centimetres, &mesh_m, &opts),
        Err(DeformError::ScaleMismatch { .. })
    ));
    // Same units bake and deform; a cage moved rigidly moves the mesh the same way.
    let binding = bake(&centimetres, &mesh_cm, &opts).unwrap();
    let lift = Vec3::new(0.0, 10.0, 0.0);
    let moved: Vec<Vec3> = centimetres.iter().map(|p| *p + lift).collect();
    let expected: Vec<Vec3> = mesh_cm.iter().map(|p| *p + lift).collect();
    assert!(max_dist(&deform(binding, &moved), &expected) < 1e-3);
    // The check can be turned off, and a limit below 1 is refused.
    let unchecked = BakeOptions {
        max_size_ratio: f32::INFINITY,
        ..BakeOptions::interpolate(Kernel::Cubic, 1.0)
    };
    assert!(bake(&metres, &mesh_cm, &unchecked).is_ok());
    for bad in [0.5, f32::NAN] {
        let o = BakeOptions {
            max_size_ratio: bad,
            ..BakeOptions::normalized(1.0)
        };
        assert!(matches!(
            bake(&metres, &mesh_m, &o),
            Err(DeformError::InvalidOption { .. })
        ));
    }
}

#[test]
fn results_beyond_f32_are_errors_not_infinities() {
    let low = box_corners(Vec3::ONE);
    // Vertex 0 lies outside the cage, at twice a corner's x.
    let mut high = cloud(16, 11);
    high[0] = Vec3::new(2.0, 0.0, 0.0);
    // The cage scaled by 3e38: degree-1 interpolation reproduces the linear map exactly, so
    // vertex 0 goes to 6e38, beyond f32 (the others stay within 3e38).
    let huge: Vec<Vec3> = low.iter().map(|p| *p * 3e38).collect();
    let weights =
        Arc::new(bake(&low, &high, &BakeOptions::interpolate(Kernel::Cubic, 1.0)).unwrap());
    let gain = weights.report().max_gain;
    let by_hand = (0..high.len())
        .map(|i| {
            weights
                .weights()
                .unwrap()
                .row(i)
                .map(|(_, w)| f64::from(w.abs()))
                .sum::<f64>()
        })
        .fold(0.0, f64::max);
    assert_eq!(gain, by_hand);
    assert!(gain >= 1.0, "{gain}"); // every row sums to 1
    // The table's bound refuses it before anything is written.
    let mut d = RbfDeformer::new(weights.clone());
    let mut out = vec![Vec3::splat(7.0); high.len()];
    let err = d.deform(&huge, &mut out).unwrap_err();
    assert!(matches!(err, DeformError::Overflow { .. }), "{err:?}");
    assert!(err.to_string().contains("overflows f32"), "{err}");
    assert!(out.iter().all(|p| *p == Vec3::splat(7.0)));
    // Far but representable: a translation by 1e30 is reproduced.
    let shift = Vec3::new(1e30, 0.0, 0.0);
    let moved: Vec<Vec3> = low.iter().map(|p| *p + shift).collect();
    d.deform(&moved, &mut out).unwrap();
    assert!(
        out.iter()
            .all(|o| ((o.x - 1e30) / 1e30).abs() < 1e-5 && o.is_finite())
    );
    // The coefficient path finds the overflow as it writes, and names the vertex.
    let coef = bake(
        &low,
        &high,
        &BakeOptions {
            dense_budget_bytes: 0,
            ..BakeOptions::interpolate(Kernel::Cubic, 1.0)
        },
    )
    .unwrap();
    assert!(coef.report().max_gain.is_nan());
    let mut d = RbfDeformer::new(Arc::new(coef));
    let err = d.deform(&huge, &mut out).unwrap_err();
    assert!(
        matches!(&err, DeformError::Overflow { reason } if reason.contains("high vertex 0 ")),
        "{err:?}"
    );
    d.deform(&moved, &mut out).unwrap();
    assert!(
        out.iter()
            .all(|o| ((o.x - 1e30) / 1e30).abs() < 1e-5 && o.is_finite())
    );
    // The bound is tight enough for positions near f32's limit: a vertex at 3e38 driven by
    // normalized weights (rows of |w| summing to 1) deforms at rest and with the cage moved by
    // 1e37, and only a move to beyond f32::MAX (3.4e38) is refused.
    let mut edge = high.clone();
    edge[3] = Vec3::new(3e38, 0.0, 0.0);
    let normalized = BakeOptions {
        max_size_ratio: f32::INFINITY,
        ..BakeOptions::normalized(1.0)
    };
    let mut d = RbfDeformer::new(Arc::new(bake(&low, &edge, &normalized).unwrap()));
    d.deform(&low, &mut out).unwrap();
    assert_eq!(out, edge);
    let nudge: Vec<Vec3> = low.iter().map(|p| *p + Vec3::new(1e37, 0.0, 0.0)).collect();
    d.deform(&nudge, &mut out).unwrap();
    assert!((out[3].x - 3.1e38).abs() < 1e33, "{}", out[3]);
    let push: Vec<Vec3> = low.iter().map(|p| *p + Vec3::new(1e38, 0.0, 0.0)).collect();
    assert!(matches!(
        d.deform(&push, &mut out),
        Err(DeformError::Overflow { .. })
    ));
    // A vertex 3e38 from a unit cage (the unit check off) has weights beyond f32.
    let mut remote = high.clone();
    remote[9] = Vec3::new(3e38, 0.0, 0.0);
    let unchecked = BakeOptions {
        max_size_ratio: f32::INFINITY,
        ..BakeOptions::interpolate(Kernel::Cubic, 1.0)
    };
    let err = bake(&low, &remote, &unchecked).unwrap_err();
    assert!(
        matches!(err, DeformError::IllConditioned { vertex: 9, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("high vertex 9"), "{err}");
}
