//! Mesh level of detail: quadric edge-collapse simplification of a [`SkinnedMesh`].
//!
//! Hand-written (no C++ dependency): vertices are only ever collapsed onto a neighbouring
//! vertex (no new positions), so every output vertex is an input vertex with its own normal and
//! skin weights, and one simplified mesh shares the input's bones (a chain of levels plays the
//! same palettes or baked textures).
//!
//! 1. Identical vertices (position, normal, joints, weights) are merged; vertices at the same
//!    position with different attributes form one *position class* (a seam).
//! 2. Each class gets the area-weighted plane quadrics of its triangles (Garland–Heckbert),
//!    plus a perpendicular plane per open boundary edge so borders keep their shape.
//! 3. Edge collapses `u → v` (class `u` moves onto class `v`'s position) are taken cheapest
//!    first. A collapse is refused when it flips a remaining triangle's normal, or when a seam
//!    cannot be followed: each attribute vertex of `u` must share an edge with exactly one
//!    attribute vertex of `v`, and no two with the same one (so seams slide along themselves
//!    and never merge across).
//! 4. The reported [`MeshLod::error`] is measured after simplification, both ways: from sample
//!    points of every input triangle (corners, edge midpoints, centroid) to the simplified
//!    triangles around the classes its corners ended in, and from the same samples of every
//!    output triangle to the input triangles whose corners collapsed into its corners. Each
//!    distance is to a subset of the other surface, so it bounds the true distance from that
//!    sample from above; points between samples can be slightly farther (the tests sample
//!    densely and allow 25 %).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use glam::DVec3;

use super::{BakeError, RawSkinnedMesh, RawVertexInfluences, SkinnedMesh};

/// One simplified level.
#[derive(Debug)]
pub struct MeshLod {
    /// The simplified mesh (same bones as the input).
    pub mesh: SkinnedMesh,
    /// Geometric error in model units: the largest sampled distance between the simplified
    /// and the input surface (see the module notes).
    pub error: f32,
    /// For each output vertex, the input vertex it is (same position, normal and weights).
    pub source_vertices: Vec<u32>,
}

/// Symmetric 4×4 quadric: a², ab, ac, ad, b², bc, bd, c², cd, d².
type Quadric = [f64; 10];

/// A candidate collapse: cost bits (non-negative f64 orders like its bits), from, to, and the
/// two classes' versions when it was queued.
type Candidate = Reverse<(u64, u32, u32, u32, u32)>;

fn plane_quadric(n: DVec3, p: DVec3, weight: f64) -> Quadric {
    let d = -n.dot(p);
    let (a, b, c) = (n.x, n.y, n.z);
    [
        a * a,
        a * b,
        a * c,
        a * d,
        b * b,
        b * c,
        b * d,
        c * c,
        c * d,
        d * d,
    ]
    .map(|x| x * weight)
}

fn add(q: &mut Quadric, o: &Quadric) {
    for (a, b) in q.iter_mut().zip(o) {
        *a += b;
    }
}

fn eval(q: &Quadric, p: DVec3) -> f64 {
    let (x, y, z) = (p.x, p.y, p.z);
    let v = q[0] * x * x
        + 2.0 * q[1] * x * y
        + 2.0 * q[2] * x * z
        + 2.0 * q[3] * x
        + q[4] * y * y
        + 2.0 * q[5] * y * z
        + 2.0 * q[6] * y
        + q[7] * z * z
        + 2.0 * q[8] * z
        + q[9];
    v.max(0.0)
}

/// Distance from `p` to the triangle `a b c` (closest point by Voronoi regions).
pub fn point_triangle_distance(p: DVec3, a: DVec3, b: DVec3, c: DVec3) -> f64 {
    let ab = b - a;
    let ac = c - a;
    let ap = p - a;
    let d1 = ab.dot(ap);
    let d2 = ac.dot(ap);
    if d1 <= 0.0 && d2 <= 0.0 {
        return p.distance(a);
    }
    let bp = p - b;
    let d3 = ab.dot(bp);
    let d4 = ac.dot(bp);
    if d3 >= 0.0 && d4 <= d3 {
        return p.distance(b);
    }
    let vc = d1 * d4 - d3 * d2;
    if vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0 {
        let t = d1 / (d1 - d3);
        return p.distance(a + ab * t);
    }
    let cp = p - c;
    let d5 = ab.dot(cp);
    let d6 = ac.dot(cp);
    if d6 >= 0.0 && d5 <= d6 {
        return p.distance(c);
    }
    let vb = d5 * d2 - d1 * d6;
    if vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0 {
        let t = d2 / (d2 - d6);
        return p.distance(a + ac * t);
    }
    let va = d3 * d6 - d5 * d4;
    if va <= 0.0 && (d4 - d3) >= 0.0 && (d5 - d6) >= 0.0 {
        let t = (d4 - d3) / ((d4 - d3) + (d5 - d6));
        return p.distance(b + (c - b) * t);
    }
    let denom = va + vb + vc;
    if denom.abs() < f64::MIN_POSITIVE {
        // Degenerate triangle: nearest of its edges' ends.
        return p.distance(a).min(p.distance(b)).min(p.distance(c));
    }
    let v = vb / denom;
    let w = vc / denom;
    p.distance(a + ab * v + ac * w)
}

/// Corners, edge midpoints and centroid of a triangle.
fn samples(a: DVec3, b: DVec3, c: DVec3) -> [DVec3; 7] {
    [
        a,
        b,
        c,
        (a + b) * 0.5,
        (b + c) * 0.5,
        (c + a) * 0.5,
        (a + b + c) / 3.0,
    ]
}

/// Simplifies `mesh` to at most `target_triangles` triangles where the collapse rules allow
/// (the result can have more when no legal collapse is left).
///
/// # Errors
/// [`BakeError::Invalid`] for a target of zero triangles or a mesh without triangles, and the
/// error of baking the result (not expected for a mesh that baked).
pub fn simplify_mesh(mesh: &SkinnedMesh, target_triangles: usize) -> Result<MeshLod, BakeError> {
    let asset = format!("mesh '{}'", mesh.name());
    let invalid = |reason: String| BakeError::Invalid {
        asset: asset.clone(),
        reason,
    };
    if target_triangles == 0 {
        return Err(invalid("simplification target of 0 triangles".into()));
    }
    if mesh.indices().len() < 3 {
        return Err(invalid("no triangles to simplify".into()));
    }
    let positions = mesh.positions();
    let n = positions.len();
    // 1. Canonical vertex per identical attribute set, then position classes.
    let key = |v: usize| {
        let mut k: Vec<u32> = Vec::with_capacity(32);
        k.extend(positions[v].to_array().map(f32::to_bits));
        if let Some(nrm) = mesh.normals().get(v) {
            k.extend(nrm.to_array().map(f32::to_bits));
        }
        for set in [mesh.joints().get(v), mesh.joints_extra().get(v)]
            .into_iter()
            .flatten()
        {
            k.extend_from_slice(set);
        }
        for set in [mesh.weights().get(v), mesh.weights_extra().get(v)]
            .into_iter()
            .flatten()
        {
            k.extend(set.map(f32::to_bits));
        }
        k
    };
    let mut canonical_of: HashMap<Vec<u32>, u32> = HashMap::new();
    let mut canonical = Vec::with_capacity(n);
    for v in 0..n {
        canonical.push(*canonical_of.entry(key(v)).or_insert(v as u32));
    }
    let mut class_index: HashMap<[u32; 3], u32> = HashMap::new();
    let mut class_of = vec![u32::MAX; n];
    let mut class_pos: Vec<DVec3> = Vec::new();
    let mut members: Vec<Vec<u32>> = Vec::new();
    for v in 0..n {
        if canonical[v] as usize != v {
            continue;
        }
        let c = *class_index
            .entry(positions[v].to_array().map(f32::to_bits))
            .or_insert_with(|| {
                class_pos.push(positions[v].as_dvec3());
                members.push(Vec::new());
                (class_pos.len() - 1) as u32
            });
        class_of[v] = c;
        members[c as usize].push(v as u32);
    }
    let classes = class_pos.len();
    let mut tris: Vec<[u32; 3]> = Vec::with_capacity(mesh.indices().len() / 3);
    for t in mesh.indices().chunks_exact(3) {
        let mut corners = [0u32; 3];
        for (k, i) in t.iter().enumerate() {
            corners[k] = *canonical
                .get(*i as usize)
                .ok_or_else(|| invalid(format!("triangle index {i} past {n} vertices")))?;
        }
        tris.push(corners);
    }
    let original_tris = tris.clone();
    let cls = |v: u32| class_of[v as usize] as usize;
    // 2. Quadrics and triangles around each class.
    let mut quadrics: Vec<Quadric> = vec![[0.0; 10]; classes];
    let mut class_tris: Vec<Vec<u32>> = vec![Vec::new(); classes];
    let mut alive = vec![true; tris.len()];
    let mut live = 0usize;
    let mut edge_uses: HashMap<(usize, usize), (u32, u32)> = HashMap::new();
    for (t, c) in tris.iter().enumerate() {
        let k = c.map(cls);
        if k[0] == k[1] || k[1] == k[2] || k[0] == k[2] {
            alive[t] = false;
            continue;
        }
        live += 1;
        let p = k.map(|k| class_pos[k]);
        let cross = (p[1] - p[0]).cross(p[2] - p[0]);
        let area2 = cross.length();
        if area2 > 0.0 {
            let q = plane_quadric(cross / area2, p[0], area2 * 0.5);
            for kk in k {
                add(&mut quadrics[kk], &q);
            }
        }
        for kk in k {
            class_tris[kk].push(t as u32);
        }
        for e in 0..3 {
            let (a, b) = (k[e], k[(e + 1) % 3]);
            let entry = edge_uses
                .entry((a.min(b), a.max(b)))
                .or_insert((0, t as u32));
            entry.0 += 1;
            entry.1 = t as u32;
        }
    }
    // Boundary edges: a plane through the edge, perpendicular to its triangle, weighted
    // strongly so that open borders do not shrink.
    for ((a, b), (uses, t)) in &edge_uses {
        if *uses != 1 {
            continue;
        }
        let k = tris[*t as usize].map(cls);
        let p = k.map(|k| class_pos[k]);
        let face = (p[1] - p[0]).cross(p[2] - p[0]);
        let edge = class_pos[*b] - class_pos[*a];
        let n = edge.cross(face);
        let l = n.length();
        if l > 0.0 {
            let q = plane_quadric(n / l, class_pos[*a], 10.0 * edge.length_squared());
            add(&mut quadrics[*a], &q);
            add(&mut quadrics[*b], &q);
        }
    }
    // 3. Collapses, cheapest first (lazy heap: entries carry both classes' versions).
    let mut version = vec![0u32; classes];
    let mut merged_into: Vec<u32> = (0..classes as u32).collect();
    let mut heap: BinaryHeap<Candidate> = BinaryHeap::new();
    let neighbours = |class_tris: &[Vec<u32>], alive: &[bool], tris: &[[u32; 3]], c: usize| {
        let mut out: Vec<usize> = Vec::new();
        for t in &class_tris[c] {
            if !alive[*t as usize] {
                continue;
            }
            for v in tris[*t as usize] {
                let k = class_of[v as usize] as usize;
                if k != c && !out.contains(&k) {
                    out.push(k);
                }
            }
        }
        out
    };
    let push =
        |heap: &mut BinaryHeap<_>, quadrics: &[Quadric], version: &[u32], u: usize, v: usize| {
            let mut q = quadrics[u];
            add(&mut q, &quadrics[v]);
            let cost = eval(&q, class_pos[v]);
            heap.push(Reverse((
                cost.to_bits(),
                u as u32,
                v as u32,
                version[u],
                version[v],
            )));
        };
    for c in 0..classes {
        for k in neighbours(&class_tris, &alive, &tris, c) {
            push(&mut heap, &quadrics, &version, c, k);
        }
    }
    let mut dead = vec![false; classes];
    while live > target_triangles {
        let Some(Reverse((_, u, v, vu, vv))) = heap.pop() else {
            break;
        };
        let (u, v) = (u as usize, v as usize);
        if dead[u] || dead[v] || version[u] != vu || version[v] != vv {
            continue;
        }
        // Seam rule: each attribute vertex of u that is used maps to exactly one of v's.
        let mut map: Vec<(u32, u32)> = Vec::new();
        let mut legal = true;
        for a in &members[u] {
            let mut target: Option<u32> = None;
            let mut used = false;
            for t in &class_tris[u] {
                let c = tris[*t as usize];
                if !alive[*t as usize] || !c.contains(a) {
                    continue;
                }
                used = true;
                for b in c {
                    if cls(b) == v {
                        match target {
                            None => target = Some(b),
                            Some(x) if x == b => {}
                            Some(_) => legal = false,
                        }
                    }
                }
            }
            if !used {
                continue;
            }
            match target {
                Some(b) if !map.iter().any(|(_, x)| *x == b) => map.push((*a, b)),
                _ => legal = false,
            }
        }
        if !legal {
            continue;
        }
        // Flip rule: no remaining triangle around u turns over.
        let flips = class_tris[u].iter().any(|t| {
            let c = tris[*t as usize];
            if !alive[*t as usize] || c.iter().any(|x| cls(*x) == v) {
                return false;
            }
            let before = c.map(|x| class_pos[cls(x)]);
            let after = c.map(|x| {
                if cls(x) == u {
                    class_pos[v]
                } else {
                    class_pos[cls(x)]
                }
            });
            let n0 = (before[1] - before[0]).cross(before[2] - before[0]);
            let n1 = (after[1] - after[0]).cross(after[2] - after[0]);
            n0.dot(n1) <= 0.0
        });
        if flips {
            continue;
        }
        let around = std::mem::take(&mut class_tris[u]);
        for t in around {
            let ti = t as usize;
            if !alive[ti] {
                continue;
            }
            for x in tris[ti].iter_mut() {
                if cls(*x) == u
                    && let Some((_, b)) = map.iter().find(|(a, _)| a == x)
                {
                    *x = *b;
                }
            }
            let k = tris[ti].map(cls);
            if k[0] == k[1] || k[1] == k[2] || k[0] == k[2] || k.contains(&u) {
                alive[ti] = false;
                live -= 1;
            } else if !class_tris[v].contains(&t) {
                class_tris[v].push(t);
            }
        }
        class_tris[v].retain(|t| alive[*t as usize]);
        let qu = quadrics[u];
        add(&mut quadrics[v], &qu);
        dead[u] = true;
        merged_into[u] = v as u32;
        version[v] += 1;
        for k in neighbours(&class_tris, &alive, &tris, v) {
            version[k] += 1;
        }
        for k in neighbours(&class_tris, &alive, &tris, v) {
            push(&mut heap, &quadrics, &version, v, k);
            push(&mut heap, &quadrics, &version, k, v);
            for m in neighbours(&class_tris, &alive, &tris, k) {
                if m != v {
                    push(&mut heap, &quadrics, &version, k, m);
                }
            }
        }
    }
    // 4. Error, both ways, against the triangles around where each corner ended.
    let final_class = |mut c: usize| {
        while merged_into[c] as usize != c {
            c = merged_into[c] as usize;
        }
        c
    };
    let pos = |v: u32| positions[v as usize].as_dvec3();
    let mut error = 0.0f64;
    let mut original_by_final: Vec<Vec<u32>> = vec![Vec::new(); classes];
    for (t, c) in original_tris.iter().enumerate() {
        let mut finals: Vec<usize> = c.iter().map(|x| final_class(cls(*x))).collect();
        finals.dedup();
        for f in &finals {
            if !original_by_final[*f].contains(&(t as u32)) {
                original_by_final[*f].push(t as u32);
            }
        }
        let candidates: Vec<u32> = finals
            .iter()
            .flat_map(|f| class_tris[*f].iter().copied())
            .filter(|t| alive[*t as usize])
            .collect();
        for s in samples(pos(c[0]), pos(c[1]), pos(c[2])) {
            let d = candidates
                .iter()
                .map(|t| {
                    let k = tris[*t as usize];
                    point_triangle_distance(s, pos(k[0]), pos(k[1]), pos(k[2]))
                })
                .fold(f64::INFINITY, f64::min);
            // No simplified triangle around: the piece vanished (a small closed part).
            if d.is_finite() {
                error = error.max(d);
            }
        }
    }
    for (t, c) in tris.iter().enumerate() {
        if !alive[t] {
            continue;
        }
        let candidates: Vec<u32> = c
            .iter()
            .flat_map(|x| original_by_final[cls(*x)].iter().copied())
            .collect();
        for s in samples(pos(c[0]), pos(c[1]), pos(c[2])) {
            let d = candidates
                .iter()
                .map(|o| {
                    let k = original_tris[*o as usize];
                    point_triangle_distance(s, pos(k[0]), pos(k[1]), pos(k[2]))
                })
                .fold(f64::INFINITY, f64::min);
            if d.is_finite() {
                error = error.max(d);
            }
        }
    }
    // Output: the used input vertices, in input order.
    let mut new_index = vec![u32::MAX; n];
    let mut source_vertices = Vec::new();
    let mut indices = Vec::with_capacity(live * 3);
    let mut used = vec![false; n];
    for (t, c) in tris.iter().enumerate() {
        if alive[t] {
            for x in c {
                used[*x as usize] = true;
            }
        }
    }
    for (v, u) in used.iter().enumerate() {
        if *u {
            new_index[v] = source_vertices.len() as u32;
            source_vertices.push(v as u32);
        }
    }
    for (t, c) in tris.iter().enumerate() {
        if alive[t] {
            indices.extend(c.iter().map(|x| new_index[*x as usize]));
        }
    }
    let influences = source_vertices
        .iter()
        .map(|v| {
            let v = *v as usize;
            let mut list = Vec::new();
            for (j, w) in [
                (mesh.joints().get(v), mesh.weights().get(v)),
                (mesh.joints_extra().get(v), mesh.weights_extra().get(v)),
            ] {
                if let (Some(j), Some(w)) = (j, w) {
                    for (jj, ww) in j.iter().zip(w) {
                        if *ww > 0.0 {
                            list.push((*jj as u16, *ww));
                        }
                    }
                }
            }
            RawVertexInfluences(list)
        })
        .collect();
    let raw = RawSkinnedMesh {
        name: format!("{} (lod, {live} triangles)", mesh.name()),
        bones: mesh
            .bones()
            .iter()
            .map(|b| (b.name.clone(), b.inverse_bind))
            .collect(),
        positions: source_vertices
            .iter()
            .map(|v| positions[*v as usize])
            .collect(),
        normals: if mesh.normals().len() == n {
            source_vertices
                .iter()
                .map(|v| mesh.normals()[*v as usize])
                .collect()
        } else {
            Vec::new()
        },
        influences,
        indices,
    };
    Ok(MeshLod {
        mesh: raw.bake()?,
        error: error as f32,
        source_vertices,
    })
}

/// A chain of levels from `mesh`: one [`simplify_mesh`] per ratio of its triangle count
/// (each from the input, so errors do not accumulate), in the given order.
///
/// # Errors
/// [`BakeError::Invalid`] for a ratio outside (0, 1], and [`simplify_mesh`]'s errors.
pub fn lod_chain(mesh: &SkinnedMesh, ratios: &[f32]) -> Result<Vec<MeshLod>, BakeError> {
    let triangles = mesh.indices().len() / 3;
    ratios
        .iter()
        .map(|r| {
            if !(*r > 0.0 && *r <= 1.0) {
                return Err(BakeError::Invalid {
                    asset: format!("mesh '{}'", mesh.name()),
                    reason: format!("LOD ratio {r} outside (0, 1]"),
                });
            }
            let target = ((triangles as f64 * f64::from(*r)).round() as usize).max(1);
            simplify_mesh(mesh, target)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::{Mat4, Vec3};

    /// A lat-long sphere of radius 1 with a duplicated seam column (different normals on the
    /// two sides, so it is an attribute seam) and two bones blended by height.
    fn sphere(cols: usize, rows: usize) -> SkinnedMesh {
        let mut positions = Vec::new();
        let mut normals = Vec::new();
        let mut influences = Vec::new();
        for r in 0..=rows {
            let theta = std::f32::consts::PI * r as f32 / rows as f32;
            for c in 0..=cols {
                let phi = std::f32::consts::TAU * (c % cols) as f32 / cols as f32;
                let p = Vec3::new(
                    theta.sin() * phi.cos(),
                    theta.cos(),
                    theta.sin() * phi.sin(),
                );
                positions.push(p);
                // The seam column (c == cols) gets a tilted normal: same position, other
                // attributes.
                normals.push(if c == cols {
                    (p + Vec3::new(0.0, 0.3, 0.3)).normalize()
                } else {
                    p
                });
                let w = (p.y * 0.5 + 0.5).clamp(0.0, 1.0);
                influences.push(RawVertexInfluences(if w > 0.0 && w < 1.0 {
                    vec![(0, w), (1, 1.0 - w)]
                } else if w >= 1.0 {
                    vec![(0, 1.0)]
                } else {
                    vec![(1, 1.0)]
                }));
            }
        }
        let mut indices = Vec::new();
        let at = |r: usize, c: usize| (r * (cols + 1) + c) as u32;
        for r in 0..rows {
            for c in 0..cols {
                let (a, b, cc, d) = (at(r, c), at(r, c + 1), at(r + 1, c), at(r + 1, c + 1));
                if r > 0 {
                    indices.extend_from_slice(&[a, b, cc]);
                }
                if r + 1 < rows {
                    indices.extend_from_slice(&[b, d, cc]);
                }
            }
        }
        RawSkinnedMesh {
            name: "sphere".into(),
            bones: vec![("a".into(), Mat4::IDENTITY), ("b".into(), Mat4::IDENTITY)],
            positions,
            normals,
            influences,
            indices,
        }
        .bake()
        .expect("test sphere bakes")
    }

    /// An open, bumpy height field (boundary edges on all four sides).
    fn terrain(n: usize) -> SkinnedMesh {
        let mut positions = Vec::new();
        let mut influences = Vec::new();
        for z in 0..=n {
            for x in 0..=n {
                let (fx, fz) = (x as f32 / n as f32, z as f32 / n as f32);
                let y = 0.05 * (fx * 6.0).sin() * (fz * 4.0).cos();
                positions.push(Vec3::new(fx, y, fz));
                influences.push(RawVertexInfluences(vec![(0, 1.0)]));
            }
        }
        let at = |z: usize, x: usize| (z * (n + 1) + x) as u32;
        let mut indices = Vec::new();
        for z in 0..n {
            for x in 0..n {
                indices.extend_from_slice(&[at(z, x), at(z + 1, x), at(z, x + 1)]);
                indices.extend_from_slice(&[at(z, x + 1), at(z + 1, x), at(z + 1, x + 1)]);
            }
        }
        RawSkinnedMesh {
            name: "terrain".into(),
            bones: vec![("root".into(), Mat4::IDENTITY)],
            positions,
            normals: vec![],
            influences,
            indices,
        }
        .bake()
        .expect("test terrain bakes")
    }

    fn influences(m: &SkinnedMesh, v: usize) -> Vec<(u32, u32)> {
        let mut out: Vec<(u32, u32)> = m.joints()[v]
            .iter()
            .zip(&m.weights()[v])
            .filter(|(_, w)| **w > 0.0)
            .map(|(j, w)| (*j, w.to_bits()))
            .collect();
        out.sort_unstable();
        out
    }

    /// Deterministic points spread over a triangle (a 5×5 barycentric lattice).
    fn lattice(a: DVec3, b: DVec3, c: DVec3) -> Vec<DVec3> {
        let mut out = Vec::new();
        for i in 0..=4 {
            for j in 0..=(4 - i) {
                let (u, v) = (i as f64 / 4.0, j as f64 / 4.0);
                out.push(a + (b - a) * u + (c - a) * v);
            }
        }
        out
    }

    /// Largest distance from lattice points of `from`'s triangles to `to`'s surface.
    fn one_way(from: &SkinnedMesh, to: &SkinnedMesh) -> f64 {
        let p = |m: &SkinnedMesh, i: u32| m.positions()[i as usize].as_dvec3();
        let mut worst = 0.0f64;
        for t in from.indices().chunks_exact(3) {
            for s in lattice(p(from, t[0]), p(from, t[1]), p(from, t[2])) {
                let d = to
                    .indices()
                    .chunks_exact(3)
                    .map(|u| point_triangle_distance(s, p(to, u[0]), p(to, u[1]), p(to, u[2])))
                    .fold(f64::INFINITY, f64::min);
                worst = worst.max(d);
            }
        }
        worst
    }

    fn check(input: &SkinnedMesh, target: usize) -> MeshLod {
        let lod = simplify_mesh(input, target).expect("simplifies");
        let out = &lod.mesh;
        assert!(
            out.indices().len() / 3 <= target,
            "{} triangles > target {target}",
            out.indices().len() / 3
        );
        assert!(out.indices().len() >= 3);
        assert_eq!(out.bones().len(), input.bones().len());
        assert_eq!(lod.source_vertices.len(), out.positions().len());
        for (v, s) in lod.source_vertices.iter().enumerate() {
            let s = *s as usize;
            assert_eq!(out.positions()[v], input.positions()[s]);
            if !input.normals().is_empty() {
                assert_eq!(out.normals()[v], input.normals()[s]);
            }
            assert_eq!(influences(out, v), influences(input, s), "vertex {v}");
        }
        // Hausdorff-style, both ways, dense lattice sampling.
        let there = one_way(input, out);
        let back = one_way(out, input);
        let bound = f64::from(lod.error) * 1.25 + 1e-6;
        assert!(there <= bound, "input → lod {there} > 1.25 × {}", lod.error);
        assert!(back <= bound, "lod → input {back} > 1.25 × {}", lod.error);
        lod
    }

    #[test]
    fn sphere_reduces_within_the_reported_error() {
        let s = sphere(32, 16);
        let n = s.indices().len() / 3;
        let lod = check(&s, n / 4);
        // A quarter of the triangles of a unit sphere: a few percent of the radius.
        assert!(lod.error > 0.0 && lod.error < 0.15, "error {}", lod.error);
        let coarse = check(&s, n / 10);
        assert!(coarse.error >= lod.error);
    }

    #[test]
    fn seam_attributes_do_not_cross_the_seam() {
        // The seam at φ = 0 (z = 0, x > 0): the plain-normal copy belongs to the triangles at
        // z ≥ 0, the tilted copy to those at z ≤ 0. After simplification each output triangle
        // touching the seam still uses the copy of its own side.
        let s = sphere(32, 16);
        let lod = simplify_mesh(&s, s.indices().len() / 8).expect("simplifies");
        let m = &lod.mesh;
        let mut seen = [0usize; 2];
        for t in m.indices().chunks_exact(3) {
            for k in 0..3 {
                let v = t[k] as usize;
                let p = m.positions()[v];
                if !(p.z.abs() < 1e-6 && p.x > 1e-3) {
                    continue;
                }
                let tilted = m.normals()[v].distance(p) > 1e-3;
                seen[usize::from(tilted)] += 1;
                for other in t {
                    let z = m.positions()[*other as usize].z;
                    if tilted {
                        assert!(
                            z <= 1e-6,
                            "tilted seam copy in a z > 0 triangle {:?}",
                            t.iter()
                                .map(|i| (m.positions()[*i as usize], m.normals()[*i as usize]))
                                .collect::<Vec<_>>()
                        );
                    } else {
                        assert!(
                            z >= -1e-6,
                            "plain seam copy in a z < 0 triangle {:?}",
                            t.iter()
                                .map(|i| (m.positions()[*i as usize], m.normals()[*i as usize]))
                                .collect::<Vec<_>>()
                        );
                    }
                }
            }
        }
        assert!(seen[0] > 0 && seen[1] > 0, "{seen:?}");
    }

    #[test]
    fn open_terrain_keeps_its_border() {
        let t = terrain(24);
        let n = t.indices().len() / 3;
        let lod = check(&t, n / 5);
        // Bumps of ±0.05 over a unit square, a fifth of the triangles.
        assert!(lod.error < 0.1, "error {}", lod.error);
        // The four corners survive (border quadrics).
        for corner in [Vec3::new(0.0, 0.0, 0.0), Vec3::new(1.0, 0.0, 0.0)] {
            assert!(
                lod.mesh
                    .positions()
                    .iter()
                    .any(|p| (p.x - corner.x).abs() < 1e-6 && (p.z - corner.z).abs() < 1e-6),
                "corner {corner}"
            );
        }
    }

    #[test]
    fn bad_input_is_an_error() {
        let s = sphere(8, 4);
        assert!(matches!(
            simplify_mesh(&s, 0),
            Err(BakeError::Invalid { .. })
        ));
        assert!(lod_chain(&s, &[1.5]).is_err());
        assert!(lod_chain(&s, &[f32::NAN]).is_err());
        assert!(lod_chain(&s, &[0.0]).is_err());
        let empty = RawSkinnedMesh {
            name: "empty".into(),
            bones: vec![("a".into(), Mat4::IDENTITY)],
            positions: vec![Vec3::ZERO],
            normals: vec![],
            influences: vec![RawVertexInfluences(vec![(0, 1.0)])],
            indices: vec![],
        }
        .bake()
        .expect("a mesh without triangles bakes");
        assert!(simplify_mesh(&empty, 4).is_err());
    }
}
