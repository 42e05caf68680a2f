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

use super::{BakeError, RawMorphTarget, RawSkinnedMesh, RawVertexInfluences, SkinnedMesh};

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
    let invalid = |reason: String| BakeError::Invalid {
        asset: format!("mesh '{}'", mesh.name()),
        reason,
    };
    if target_triangles == 0 {
        return Err(invalid("simplification target of 0 triangles".into()));
    }
    if mesh.indices().len() < 3 {
        return Err(invalid("no triangles to simplify".into()));
    }
    let classes = PositionClasses::of(mesh);
    let triangles = classes.triangles(mesh).map_err(invalid)?;
    let mut collapser = Collapser::new(&classes, triangles.clone());
    collapser.collapse_to(target_triangles);
    let error = collapser.surface_error(mesh, &triangles);
    simplified_mesh(mesh, &collapser, error)
}

/// Step 1: vertices with identical attributes merged, and position classes (seams).
struct PositionClasses {
    /// Per input vertex, the first vertex with the same attributes.
    canonical: Vec<u32>,
    /// Per canonical vertex, its position class (`u32::MAX` for merged vertices).
    class_of: Vec<u32>,
    /// Per class, its position.
    position: Vec<DVec3>,
    /// Per class, its canonical (attribute) vertices.
    members: Vec<Vec<u32>>,
}

impl PositionClasses {
    fn of(mesh: &SkinnedMesh) -> Self {
        let positions = mesh.positions();
        let n = positions.len();
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
        let canonical: Vec<u32> = (0..n)
            .map(|v| *canonical_of.entry(key(v)).or_insert(v as u32))
            .collect();
        let mut class_index: HashMap<[u32; 3], u32> = HashMap::new();
        let mut classes = Self {
            canonical,
            class_of: vec![u32::MAX; n],
            position: Vec::new(),
            members: Vec::new(),
        };
        for (v, p) in positions.iter().enumerate() {
            if classes.canonical[v] as usize != v {
                continue;
            }
            let c = *class_index
                .entry(p.to_array().map(f32::to_bits))
                .or_insert_with(|| {
                    classes.position.push(p.as_dvec3());
                    classes.members.push(Vec::new());
                    (classes.position.len() - 1) as u32
                });
            classes.class_of[v] = c;
            classes.members[c as usize].push(v as u32);
        }
        classes
    }

    /// The mesh's triangles over canonical vertices.
    fn triangles(&self, mesh: &SkinnedMesh) -> Result<Vec<[u32; 3]>, String> {
        let n = self.canonical.len();
        mesh.indices()
            .chunks_exact(3)
            .map(|t| {
                let mut corners = [0u32; 3];
                for (corner, i) in corners.iter_mut().zip(t) {
                    *corner = *self
                        .canonical
                        .get(*i as usize)
                        .ok_or_else(|| format!("triangle index {i} past {n} vertices"))?;
                }
                Ok(corners)
            })
            .collect()
    }

    /// The class of canonical vertex `v`.
    fn of_vertex(&self, v: u32) -> usize {
        self.class_of[v as usize] as usize
    }
}

/// Steps 2 and 3: quadrics, the triangles around each class, and the collapses.
struct Collapser<'c> {
    classes: &'c PositionClasses,
    /// Triangles over canonical vertices, rewritten as classes collapse.
    triangles: Vec<[u32; 3]>,
    alive: Vec<bool>,
    /// Triangles alive.
    live: usize,
    quadrics: Vec<Quadric>,
    /// Per class, the triangles around it (some may have died since).
    around: Vec<Vec<u32>>,
    /// Per class, bumped when its neighbourhood changes: older heap entries are stale.
    version: Vec<u32>,
    merged_into: Vec<u32>,
    dead: Vec<bool>,
    heap: BinaryHeap<Candidate>,
}

impl<'c> Collapser<'c> {
    fn new(classes: &'c PositionClasses, triangles: Vec<[u32; 3]>) -> Self {
        let count = classes.position.len();
        let mut c = Self {
            classes,
            alive: vec![true; triangles.len()],
            triangles,
            live: 0,
            quadrics: vec![[0.0; 10]; count],
            around: vec![Vec::new(); count],
            version: vec![0; count],
            merged_into: (0..count as u32).collect(),
            dead: vec![false; count],
            heap: BinaryHeap::new(),
        };
        c.add_face_quadrics();
        for class in 0..count {
            for k in c.neighbours(class) {
                c.push(class, k);
            }
        }
        c
    }

    /// Area-weighted plane quadrics of the faces, and a perpendicular plane per open border
    /// edge, weighted strongly so that open borders do not shrink.
    fn add_face_quadrics(&mut self) {
        let position = &self.classes.position;
        let mut edge_uses: HashMap<(usize, usize), (u32, u32)> = HashMap::new();
        for (t, corners) in self.triangles.iter().enumerate() {
            let k = corners.map(|v| self.classes.of_vertex(v));
            if k[0] == k[1] || k[1] == k[2] || k[0] == k[2] {
                self.alive[t] = false;
                continue;
            }
            self.live += 1;
            let p = k.map(|k| position[k]);
            let cross = (p[1] - p[0]).cross(p[2] - p[0]);
            let area2 = cross.length();
            if area2 > 0.0 {
                let q = plane_quadric(cross / area2, p[0], area2 * 0.5);
                for kk in k {
                    add(&mut self.quadrics[kk], &q);
                }
            }
            for kk in k {
                self.around[kk].push(t as u32);
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
        for ((a, b), (uses, t)) in &edge_uses {
            if *uses != 1 {
                continue;
            }
            let p = self.triangles[*t as usize].map(|v| position[self.classes.of_vertex(v)]);
            let face = (p[1] - p[0]).cross(p[2] - p[0]);
            let edge = position[*b] - position[*a];
            let n = edge.cross(face);
            let l = n.length();
            if l > 0.0 {
                let q = plane_quadric(n / l, position[*a], 10.0 * edge.length_squared());
                add(&mut self.quadrics[*a], &q);
                add(&mut self.quadrics[*b], &q);
            }
        }
    }

    /// Classes sharing a live triangle with class `c`.
    fn neighbours(&self, c: usize) -> Vec<usize> {
        let mut out: Vec<usize> = Vec::new();
        for t in &self.around[c] {
            if !self.alive[*t as usize] {
                continue;
            }
            for v in self.triangles[*t as usize] {
                let k = self.classes.of_vertex(v);
                if k != c && !out.contains(&k) {
                    out.push(k);
                }
            }
        }
        out
    }

    /// Queues the collapse `u → v` at its quadric cost.
    fn push(&mut self, u: usize, v: usize) {
        let mut q = self.quadrics[u];
        add(&mut q, &self.quadrics[v]);
        let cost = eval(&q, self.classes.position[v]);
        self.heap.push(Reverse((
            cost.to_bits(),
            u as u32,
            v as u32,
            self.version[u],
            self.version[v],
        )));
    }

    /// Collapses, cheapest first, until `target` triangles are left or no legal collapse is.
    fn collapse_to(&mut self, target: usize) {
        while self.live > target {
            let Some(Reverse((_, u, v, vu, vv))) = self.heap.pop() else {
                break;
            };
            let (u, v) = (u as usize, v as usize);
            if self.dead[u] || self.dead[v] || self.version[u] != vu || self.version[v] != vv {
                continue;
            }
            let Some(seam_map) = self.seam_map(u, v) else {
                continue;
            };
            if self.flips(u, v) {
                continue;
            }
            self.collapse(u, v, &seam_map);
        }
    }

    /// The seam rule: each attribute vertex of `u` that is used shares an edge with exactly one
    /// attribute vertex of `v`, and no two with the same one. The pairs, or `None` if illegal.
    fn seam_map(&self, u: usize, v: usize) -> Option<Vec<(u32, u32)>> {
        let mut map: Vec<(u32, u32)> = Vec::new();
        for a in &self.classes.members[u] {
            let mut target: Option<u32> = None;
            let mut used = false;
            for t in &self.around[u] {
                let c = self.triangles[*t as usize];
                if !self.alive[*t as usize] || !c.contains(a) {
                    continue;
                }
                used = true;
                for b in c {
                    if self.classes.of_vertex(b) == v {
                        match target {
                            None => target = Some(b),
                            Some(x) if x == b => {}
                            Some(_) => return None,
                        }
                    }
                }
            }
            if !used {
                continue;
            }
            match target {
                Some(b) if !map.iter().any(|(_, x)| *x == b) => map.push((*a, b)),
                _ => return None,
            }
        }
        Some(map)
    }

    /// The flip rule: whether moving `u` onto `v` turns over a remaining triangle around `u`.
    fn flips(&self, u: usize, v: usize) -> bool {
        let position = &self.classes.position;
        let class = |x: u32| self.classes.of_vertex(x);
        self.around[u].iter().any(|t| {
            let c = self.triangles[*t as usize];
            if !self.alive[*t as usize] || c.iter().any(|x| class(*x) == v) {
                return false;
            }
            let before = c.map(|x| position[class(x)]);
            let after = c.map(|x| {
                if class(x) == u {
                    position[v]
                } else {
                    position[class(x)]
                }
            });
            let n0 = (before[1] - before[0]).cross(before[2] - before[0]);
            let n1 = (after[1] - after[0]).cross(after[2] - after[0]);
            n0.dot(n1) <= 0.0
        })
    }

    /// Moves class `u` onto `v`: corners follow `seam_map`, degenerate triangles die, and the
    /// collapses around `v` are queued again at their new costs.
    fn collapse(&mut self, u: usize, v: usize, seam_map: &[(u32, u32)]) {
        let classes = self.classes;
        for t in std::mem::take(&mut self.around[u]) {
            let ti = t as usize;
            if !self.alive[ti] {
                continue;
            }
            for x in self.triangles[ti].iter_mut() {
                if classes.of_vertex(*x) == u
                    && let Some((_, b)) = seam_map.iter().find(|(a, _)| a == x)
                {
                    *x = *b;
                }
            }
            let k = self.triangles[ti].map(|x| classes.of_vertex(x));
            if k[0] == k[1] || k[1] == k[2] || k[0] == k[2] || k.contains(&u) {
                self.alive[ti] = false;
                self.live -= 1;
            } else if !self.around[v].contains(&t) {
                self.around[v].push(t);
            }
        }
        let alive = &self.alive;
        self.around[v].retain(|t| alive[*t as usize]);
        let qu = self.quadrics[u];
        add(&mut self.quadrics[v], &qu);
        self.dead[u] = true;
        self.merged_into[u] = v as u32;
        self.version[v] += 1;
        let around_v = self.neighbours(v);
        for &k in &around_v {
            self.version[k] += 1;
        }
        for &k in &around_v {
            self.push(v, k);
            self.push(k, v);
            for m in self.neighbours(k) {
                if m != v {
                    self.push(k, m);
                }
            }
        }
    }

    /// The class `c` ended in.
    fn final_class(&self, mut c: usize) -> usize {
        while self.merged_into[c] as usize != c {
            c = self.merged_into[c] as usize;
        }
        c
    }

    /// Step 4: the largest sampled distance, both ways, between the input triangles `original`
    /// and the simplified ones around where each corner ended.
    fn surface_error(&self, mesh: &SkinnedMesh, original: &[[u32; 3]]) -> f64 {
        let positions = mesh.positions();
        let pos = |v: u32| positions[v as usize].as_dvec3();
        let class = |x: u32| self.classes.of_vertex(x);
        let largest_distance = |samples_of: [u32; 3], candidates: &[[u32; 3]], error: &mut f64| {
            for s in samples(pos(samples_of[0]), pos(samples_of[1]), pos(samples_of[2])) {
                let d = candidates
                    .iter()
                    .map(|k| point_triangle_distance(s, pos(k[0]), pos(k[1]), pos(k[2])))
                    .fold(f64::INFINITY, f64::min);
                // No triangle around: the piece vanished (a small closed part).
                if d.is_finite() {
                    *error = error.max(d);
                }
            }
        };
        let mut error = 0.0f64;
        let mut original_by_final: Vec<Vec<u32>> = vec![Vec::new(); self.classes.position.len()];
        for (t, c) in original.iter().enumerate() {
            let mut finals: Vec<usize> = c.iter().map(|x| self.final_class(class(*x))).collect();
            finals.dedup();
            for f in &finals {
                if !original_by_final[*f].contains(&(t as u32)) {
                    original_by_final[*f].push(t as u32);
                }
            }
            let candidates: Vec<[u32; 3]> = finals
                .iter()
                .flat_map(|f| self.around[*f].iter())
                .filter(|t| self.alive[**t as usize])
                .map(|t| self.triangles[*t as usize])
                .collect();
            largest_distance(*c, &candidates, &mut error);
        }
        for (t, c) in self.triangles.iter().enumerate() {
            if !self.alive[t] {
                continue;
            }
            let candidates: Vec<[u32; 3]> = c
                .iter()
                .flat_map(|x| original_by_final[class(*x)].iter())
                .map(|o| original[*o as usize])
                .collect();
            largest_distance(*c, &candidates, &mut error);
        }
        error
    }
}

/// The output mesh: the input vertices the live triangles use, in input order.
fn simplified_mesh(
    mesh: &SkinnedMesh,
    collapser: &Collapser<'_>,
    error: f64,
) -> Result<MeshLod, BakeError> {
    let n = mesh.positions().len();
    let live_triangles = || {
        collapser
            .triangles
            .iter()
            .zip(&collapser.alive)
            .filter(|(_, alive)| **alive)
            .map(|(c, _)| c)
    };
    let mut used = vec![false; n];
    for c in live_triangles() {
        for x in c {
            used[*x as usize] = true;
        }
    }
    let mut new_index = vec![u32::MAX; n];
    let mut source_vertices = Vec::new();
    for (v, u) in used.iter().enumerate() {
        if *u {
            new_index[v] = source_vertices.len() as u32;
            source_vertices.push(v as u32);
        }
    }
    let indices = live_triangles()
        .flat_map(|c| c.iter().map(|x| new_index[*x as usize]))
        .collect();
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
        name: format!("{} (lod, {} triangles)", mesh.name(), collapser.live),
        bones: mesh
            .bones()
            .iter()
            .map(|b| (b.name.clone(), b.inverse_bind))
            .collect(),
        positions: source_vertices
            .iter()
            .map(|v| mesh.positions()[*v as usize])
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
        morph_targets: lod_morph_targets(mesh, &source_vertices),
        morph_weights: mesh.morph_targets().default_weights().to_vec(),
        skinning: mesh.skinning(),
    };
    Ok(MeshLod {
        mesh: raw.bake()?,
        error: error as f32,
        source_vertices,
    })
}

/// The mesh's morph targets restricted to the vertices a level keeps (output vertex `i` is
/// input vertex `source_vertices[i]`, so its deltas are that vertex's).
fn lod_morph_targets(mesh: &SkinnedMesh, source_vertices: &[u32]) -> Vec<RawMorphTarget> {
    let morph = mesh.morph_targets();
    (0..morph.len())
        .map(|k| {
            let pick = |deltas: &[glam::Vec3]| -> Vec<glam::Vec3> {
                source_vertices
                    .iter()
                    .filter_map(|v| deltas.get(*v as usize).copied())
                    .collect()
            };
            RawMorphTarget {
                name: morph.names().get(k).cloned().unwrap_or_default(),
                positions: pick(morph.target_positions(k)),
                normals: pick(morph.target_normals(k)),
            }
        })
        .collect()
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
            ..Default::default()
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
            ..Default::default()
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
            ..Default::default()
        }
        .bake()
        .expect("a mesh without triangles bakes");
        assert!(simplify_mesh(&empty, 4).is_err());
    }
}
