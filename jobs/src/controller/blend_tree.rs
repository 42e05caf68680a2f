//! Blend-tree weights: 1D thresholds, 2D simple directional, 2D freeform directional (polar
//! gradient bands), 2D freeform cartesian (gradient bands) and direct.
//!
//! Each layout function takes the children's thresholds or positions in the order given and
//! writes one weight per child into `out` (`out.len()` children). Layouts are checked once
//! (at bake, or by [`check_layout`]); the weight functions assume a checked layout and finite
//! queries, and always return non-negative weights that sum to 1.
//!
//! Gradient band interpolation is Johansen's ("Automated semi-procedural animation for
//! character locomotion", 2009, section 6.3). For sample `i` at `pᵢ` and query `p`:
//! `hᵢ(p) = max(0, min_{j≠i} (1 − (p − pᵢ)·(pⱼ − pᵢ) / |pⱼ − pᵢ|²))`, weights `hᵢ / Σ hᵢ`. The
//! polar variant replaces the two vectors by (relative magnitude, scaled angle) pairs:
//! `vᵢⱼ = ((|pⱼ| − |pᵢ|) / m, α·∠(pᵢ, pⱼ))`, `vᵢₚ = ((|p| − |pᵢ|) / m, α·∠(pᵢ, p))` with
//! `m = (|pᵢ| + |pⱼ|) / 2` and `α` = [`DIRECTIONAL_ANGLE_SCALE`]; the angle to or from a point at
//! the origin is 0.

use glam::Vec2;
use std::fmt;

/// `α` of the polar gradient bands: how much one radian of direction weighs against one unit of
/// relative magnitude. Johansen leaves it to the implementer and Unity does not document its
/// value; sinew takes 2, so that a quarter turn (π/2) weighs as a relative magnitude change of
/// π, and a sample's band reaches about half way to a neighbour 90° away.
pub const DIRECTIONAL_ANGLE_SCALE: f32 = 2.0;

/// The most children one blend tree holds (weights are computed in stack buffers).
pub const MAX_CHILDREN: usize = 64;

/// How a blend tree places its children.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "json", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "json", serde(rename_all = "snake_case"))]
pub enum BlendTreeKind {
    /// One float parameter against each child's threshold; linear between neighbours.
    OneD,
    /// Two parameters; one child per direction (and optionally one at the origin).
    SimpleDirectional,
    /// Two parameters; gradient band interpolation in polar space (direction and speed).
    FreeformDirectional,
    /// Two parameters; gradient band interpolation in cartesian space.
    FreeformCartesian,
    /// Each child's weight is its own parameter.
    Direct,
}

/// Why a blend-tree layout is refused.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum BlendLayoutError {
    /// The tree has no child.
    NoChildren,
    /// Too many children (more than [`MAX_CHILDREN`]).
    TooManyChildren {
        /// How many.
        count: usize,
    },
    /// A threshold or coordinate is NaN or infinite.
    NotFinite {
        /// The child.
        child: usize,
    },
    /// Two children of a 1D tree share a threshold.
    DuplicateThreshold {
        /// The first child.
        first: usize,
        /// The second child.
        second: usize,
        /// The shared threshold.
        threshold: f32,
    },
    /// Two children of a 2D tree share a position.
    DuplicatePosition {
        /// The first child.
        first: usize,
        /// The second child.
        second: usize,
    },
    /// Two children of a simple directional tree point the same way.
    DuplicateDirection {
        /// The first child.
        first: usize,
        /// The second child.
        second: usize,
    },
    /// A simple directional tree's directions leave a gap of 180° or more (its triangles
    /// would not cover every direction).
    DirectionGap {
        /// The child before the gap (counter-clockwise order).
        from: usize,
        /// The child after it.
        to: usize,
        /// The gap in degrees.
        degrees: f32,
    },
}

impl fmt::Display for BlendLayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoChildren => write!(f, "the blend tree has no children"),
            Self::TooManyChildren { count } => {
                write!(f, "{count} children, at most {MAX_CHILDREN}")
            }
            Self::NotFinite { child } => {
                write!(f, "child {child}'s threshold or position is not finite")
            }
            Self::DuplicateThreshold {
                first,
                second,
                threshold,
            } => write!(
                f,
                "children {first} and {second} share the threshold {threshold}"
            ),
            Self::DuplicatePosition { first, second } => {
                write!(f, "children {first} and {second} share a position")
            }
            Self::DuplicateDirection { first, second } => write!(
                f,
                "children {first} and {second} point the same way (simple directional needs one child per direction)"
            ),
            Self::DirectionGap { from, to, degrees } => write!(
                f,
                "the directions of children {from} and {to} are {degrees:.1}° apart; simple directional needs gaps under 180° all around"
            ),
        }
    }
}

impl std::error::Error for BlendLayoutError {}

/// Checks a layout: thresholds (1D, `points` ignored) or positions (2D); direct trees only
/// need a child.
///
/// # Errors
/// [`BlendLayoutError`] naming the children at fault.
pub fn check_layout(
    kind: BlendTreeKind,
    thresholds: &[f32],
    points: &[Vec2],
) -> Result<(), BlendLayoutError> {
    let n = match kind {
        BlendTreeKind::OneD => thresholds.len(),
        BlendTreeKind::Direct => thresholds.len().max(points.len()),
        _ => points.len(),
    };
    if n == 0 {
        return Err(BlendLayoutError::NoChildren);
    }
    if n > MAX_CHILDREN {
        return Err(BlendLayoutError::TooManyChildren { count: n });
    }
    match kind {
        BlendTreeKind::Direct => Ok(()),
        BlendTreeKind::OneD => {
            for (i, t) in thresholds.iter().enumerate() {
                if !t.is_finite() {
                    return Err(BlendLayoutError::NotFinite { child: i });
                }
                if let Some(j) = thresholds[..i].iter().position(|u| u == t) {
                    return Err(BlendLayoutError::DuplicateThreshold {
                        first: j,
                        second: i,
                        threshold: *t,
                    });
                }
            }
            Ok(())
        }
        _ => {
            for (i, p) in points.iter().enumerate() {
                if !p.is_finite() {
                    return Err(BlendLayoutError::NotFinite { child: i });
                }
                if let Some(j) = points[..i].iter().position(|q| q == p) {
                    return Err(BlendLayoutError::DuplicatePosition {
                        first: j,
                        second: i,
                    });
                }
            }
            if kind == BlendTreeKind::SimpleDirectional {
                check_simple_directional(points)?;
            }
            Ok(())
        }
    }
}

fn check_simple_directional(points: &[Vec2]) -> Result<(), BlendLayoutError> {
    let dirs = sorted_directions(points);
    for (k, &(i, a)) in dirs.iter().enumerate() {
        if let Some(&(j, b)) = dirs[..k].iter().find(|(_, b)| *b == a) {
            let _ = b;
            return Err(BlendLayoutError::DuplicateDirection {
                first: j.min(i),
                second: j.max(i),
            });
        }
    }
    if dirs.len() < 2 {
        // One direction (with or without a centre) covers a half-plane at most.
        if let Some(&(i, _)) = dirs.first() {
            return Err(BlendLayoutError::DirectionGap {
                from: i,
                to: i,
                degrees: 360.0,
            });
        }
        return Ok(()); // only a centre child: weight 1 everywhere
    }
    for k in 0..dirs.len() {
        let (i, a) = dirs[k];
        let (j, b) = dirs[(k + 1) % dirs.len()];
        let mut gap = b - a;
        if gap <= 0.0 {
            gap += std::f32::consts::TAU;
        }
        if gap >= std::f32::consts::PI - 1e-6 {
            return Err(BlendLayoutError::DirectionGap {
                from: i,
                to: j,
                degrees: gap.to_degrees(),
            });
        }
    }
    Ok(())
}

/// The non-centre children with their angles in `(−π, π]`, sorted by angle.
pub(crate) fn sorted_directions(points: &[Vec2]) -> Vec<(usize, f32)> {
    let mut v: Vec<(usize, f32)> = points
        .iter()
        .enumerate()
        .filter(|(_, p)| **p != Vec2::ZERO)
        .map(|(i, p)| (i, p.y.atan2(p.x)))
        .collect();
    v.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
    v
}

/// 1D: weight 1 on the child at or below `x` when `x` is outside the thresholds' range (the
/// nearest end), else linear between the two thresholds around `x`.
pub fn weights_1d(thresholds: &[f32], x: f32, out: &mut [f32]) {
    out.fill(0.0);
    // The greatest threshold ≤ x and the smallest one > x.
    let (mut lo, mut hi): (Option<usize>, Option<usize>) = (None, None);
    let (mut min_i, mut min_t) = (0usize, f32::INFINITY);
    for (i, &t) in thresholds.iter().enumerate() {
        if t < min_t {
            (min_i, min_t) = (i, t);
        }
        if t <= x {
            if lo.is_none_or(|l| thresholds[l] < t) {
                lo = Some(i);
            }
        } else if hi.is_none_or(|h| thresholds[h] > t) {
            hi = Some(i);
        }
    }
    match (lo, hi) {
        (Some(a), Some(b)) => {
            let (ta, tb) = (thresholds[a], thresholds[b]);
            let t = (x - ta) / (tb - ta);
            set(out, a, 1.0 - t);
            set(out, b, t);
        }
        (Some(a), None) => set(out, a, 1.0),
        _ => set(out, min_i, 1.0),
    }
}

fn set(out: &mut [f32], i: usize, w: f32) {
    if let Some(o) = out.get_mut(i) {
        *o = w;
    }
}

/// 2D freeform cartesian: gradient band interpolation (see the module docs).
pub fn weights_cartesian(points: &[Vec2], p: Vec2, out: &mut [f32]) {
    gradient_bands(points, out, |i, j| {
        let (pi, pj) = (points[i], points[j]);
        (p - pi, pj - pi)
    });
    finish_bands(points, p, out);
}

/// 2D freeform directional: gradient band interpolation in polar space (see the module docs,
/// [`DIRECTIONAL_ANGLE_SCALE`]).
pub fn weights_directional(points: &[Vec2], p: Vec2, out: &mut [f32]) {
    let pl = p.length();
    gradient_bands(points, out, |i, j| {
        let (pi, pj) = (points[i], points[j]);
        let (li, lj) = (pi.length(), pj.length());
        let m = 0.5 * (li + lj);
        let vij = Vec2::new(
            (lj - li) / m,
            DIRECTIONAL_ANGLE_SCALE * signed_angle(pi, pj),
        );
        let vip = Vec2::new((pl - li) / m, DIRECTIONAL_ANGLE_SCALE * signed_angle(pi, p));
        (vip, vij)
    });
    finish_bands(points, p, out);
}

/// The signed angle from `a` to `b` in `(−π, π]` (opposite directions give `+π`, whatever
/// the sign of the zero cross product); 0 when either is the origin.
pub fn signed_angle(a: Vec2, b: Vec2) -> f32 {
    if a == Vec2::ZERO || b == Vec2::ZERO {
        return 0.0;
    }
    let angle = a.perp_dot(b).atan2(a.dot(b));
    if angle <= -std::f32::consts::PI {
        std::f32::consts::PI
    } else {
        angle
    }
}

/// `hᵢ = max(0, min_j (1 − u·v / v·v))` with `(u, v) = vectors(i, j)`, unnormalised.
fn gradient_bands(
    points: &[Vec2],
    out: &mut [f32],
    vectors: impl Fn(usize, usize) -> (Vec2, Vec2),
) {
    let n = points.len().min(out.len());
    for (i, o) in out.iter_mut().enumerate().take(n) {
        let mut h = f32::INFINITY;
        for j in 0..n {
            if j == i {
                continue;
            }
            let (u, v) = vectors(i, j);
            let vv = v.dot(v);
            if vv > 0.0 {
                h = h.min(1.0 - u.dot(v) / vv);
            }
        }
        *o = if h.is_finite() { h.max(0.0) } else { 1.0 };
    }
}

/// Normalises the bands; where every band is 0 (possible only far outside the samples), the
/// nearest child takes the whole weight.
fn finish_bands(points: &[Vec2], p: Vec2, out: &mut [f32]) {
    let n = points.len().min(out.len());
    let sum: f32 = out[..n].iter().sum();
    if sum > 0.0 && sum.is_finite() {
        for w in &mut out[..n] {
            *w /= sum;
        }
        return;
    }
    out.fill(0.0);
    let nearest = (0..n)
        .min_by(|&a, &b| {
            (points[a] - p)
                .length_squared()
                .total_cmp(&(points[b] - p).length_squared())
        })
        .unwrap_or(0);
    set(out, nearest, 1.0);
}

/// 2D simple directional: the two children whose directions enclose `p`'s direction and the
/// centre child (at the origin, when there is one) share the weight by `p`'s barycentric
/// coordinates in their triangle. Beyond the two children's segment (or without a centre
/// child) the two directions share the weight in proportion. At the origin without a centre
/// child, the two children around direction +x share it equally.
pub fn weights_simple_directional(points: &[Vec2], p: Vec2, out: &mut [f32]) {
    let dirs = sorted_directions(points);
    simple_directional_sorted(points, &dirs, p, out);
}

/// [`weights_simple_directional`] with the directions sorted once (by `sorted_directions`).
pub(crate) fn simple_directional_sorted(
    points: &[Vec2],
    dirs: &[(usize, f32)],
    p: Vec2,
    out: &mut [f32],
) {
    out.fill(0.0);
    let centre = points.iter().position(|q| *q == Vec2::ZERO);
    if dirs.len() < 2 {
        if let Some(c) = centre.or(dirs.first().map(|d| d.0)) {
            set(out, c, 1.0);
        }
        return;
    }
    let angle = p.y.atan2(p.x);
    // The sector [a, b) that holds `angle`, cyclically.
    let k = dirs.partition_point(|d| d.1 <= angle);
    let (ia, ib) = if k == 0 || k == dirs.len() {
        (dirs[dirs.len() - 1].0, dirs[0].0)
    } else {
        (dirs[k - 1].0, dirs[k].0)
    };
    let (a, b) = (points[ia], points[ib]);
    // p = α·a + β·b.
    let det = a.perp_dot(b);
    let (mut alpha, mut beta) = if det.abs() > 0.0 {
        (p.perp_dot(b) / det, a.perp_dot(p) / det)
    } else {
        (0.0, 0.0)
    };
    alpha = alpha.max(0.0);
    beta = beta.max(0.0);
    let s = alpha + beta;
    match centre {
        Some(c) if s <= 1.0 => {
            set(out, ia, alpha);
            set(out, ib, beta);
            set(out, c, 1.0 - s);
        }
        _ if s > 0.0 => {
            set(out, ia, alpha / s);
            set(out, ib, beta / s);
        }
        _ => {
            set(out, ia, 0.5);
            set(out, ib, 0.5);
        }
    }
}

/// Direct: each child's weight is its parameter's value (negative values count as 0); with
/// `normalize`, divided by their sum when it is positive.
pub fn weights_direct(values: &[f32], normalize: bool, out: &mut [f32]) {
    for (o, v) in out.iter_mut().zip(values) {
        *o = v.max(0.0);
    }
    if normalize {
        let sum: f32 = out.iter().sum();
        if sum > 0.0 {
            for o in out.iter_mut() {
                *o /= sum;
            }
        }
    }
}

/// The weights of a checked 2D layout of `kind` at `p` (1D and direct trees take their own
/// functions).
pub fn weights_2d(kind: BlendTreeKind, points: &[Vec2], p: Vec2, out: &mut [f32]) {
    match kind {
        BlendTreeKind::SimpleDirectional => weights_simple_directional(points, p, out),
        BlendTreeKind::FreeformDirectional => weights_directional(points, p, out),
        BlendTreeKind::FreeformCartesian => weights_cartesian(points, p, out),
        BlendTreeKind::OneD | BlendTreeKind::Direct => {
            let xs: Vec<f32> = points.iter().map(|q| q.x).collect();
            weights_1d(&xs, p.x, out);
        }
    }
}
