//! Job 9, skinning: `entityToRootBone × model × inverseBind` for every mesh bone, written as
//! float3x4 (column-major, 12 floats) straight into the caller's palette slice.

use crate::asset::{Rig, SkinnedMesh};
use crate::component::{FrameSlot, RigRef, SkinRef};
use crate::error::{JobError, check_len};
use crate::j8_remap_cache::{RemapCache, RemapTable};
use crate::math::soa::{LaneAffine, mul_lanes_by};
use crate::math::{mul_affine, palette_3x4};
use glam::Affine3A;
use sinew_runtime::store::Entity;
use std::sync::Arc;
use wide::f32x8;

/// Palettes over one run of entities. `palette` is the run's piece of the palette slice,
/// starting at entry `palette_base`; `model` is the whole flat model buffer.
#[derive(Debug)]
pub struct SkinningJob<'a> {
    /// Entity handles (for errors).
    pub entities: &'a [Entity],
    /// Rigs.
    pub rigs: &'a [RigRef],
    /// Skinned meshes.
    pub skins: &'a [SkinRef],
    /// Frame slots (job 3).
    pub slots: &'a [FrameSlot],
    /// Model matrices, flat (job 7).
    pub model: &'a [Affine3A],
    /// The remap cache (job 8).
    pub remap: &'a RemapCache,
    /// Output palette piece.
    pub palette: &'a mut [[f32; 12]],
    /// Palette index of `palette[0]`.
    pub palette_base: u32,
}

impl SkinningJob<'_> {
    /// Checks lengths, ranges and that every pair has a remap table.
    ///
    /// # Errors
    /// [`JobError::LengthMismatch`] for buffers of different lengths or ranges outside the
    /// pieces; [`JobError::MissingRemap`] when job 8 did not build a pair's table.
    pub fn validate(&self) -> Result<(), JobError> {
        let n = self.entities.len();
        check_len("skinning", "rigs", n, self.rigs.len())?;
        check_len("skinning", "skins", n, self.skins.len())?;
        check_len("skinning", "slots", n, self.slots.len())?;
        let mut tables = TableLookup::new(self.remap);
        for i in 0..n {
            let s = &self.slots[i];
            let (start, count) = (s.bone_offset, s.bone_count);
            check_range("skinning", "model", start, count, 0, self.model.len())?;
            let (base, len) = (self.palette_base, self.palette.len());
            check_range(
                "skinning",
                "palette",
                s.palette_offset,
                s.palette_count,
                base,
                len,
            )?;
            check_skin(
                "skinning",
                self.entities[i],
                &self.rigs[i],
                &self.skins[i],
                s,
                &mut tables,
            )?;
        }
        Ok(())
    }

    /// Writes the palettes.
    pub fn run(&mut self) {
        let mut tables = TableLookup::new(self.remap);
        for i in 0..self.entities.len() {
            let (skin, s) = (&self.skins[i], self.slots[i]);
            let Some(table) = tables.get(&self.rigs[i].0, &skin.mesh) else {
                continue;
            };
            let b0 = s.bone_offset as usize;
            let Some(model) = self.model.get(b0..b0 + s.bone_count as usize) else {
                continue;
            };
            let p0 = (s.palette_offset - self.palette_base) as usize;
            let Some(out) = self.palette.get_mut(p0..p0 + s.palette_count as usize) else {
                continue;
            };
            skin_entity(model, skin, table, out);
        }
    }
}

/// Checks that flat range `start .. start + count` lies inside a piece of `len` entries that
/// starts at flat index `base`.
///
/// # Errors
/// [`JobError::LengthMismatch`] naming `job` and `buffer`.
pub(crate) fn check_range(
    job: &'static str,
    buffer: &'static str,
    start: u32,
    count: u32,
    base: u32,
    len: usize,
) -> Result<(), JobError> {
    let end = start as usize + count as usize;
    if start < base || end - base as usize > len {
        return Err(JobError::LengthMismatch {
            job,
            buffer,
            expected: end,
            actual: base as usize + len,
        });
    }
    Ok(())
}

/// What job 9 needs of one skinned entity: a slot with the mesh's palette count, a remap
/// table for its (rig, mesh) pair, a skin root bone inside the rig.
///
/// # Errors
/// [`JobError::LengthMismatch`], [`JobError::MissingRemap`] or [`JobError::BoneOutOfRange`],
/// naming `job` and the entity.
pub(crate) fn check_skin(
    job: &'static str,
    entity: Entity,
    rig: &RigRef,
    skin: &SkinRef,
    slot: &FrameSlot,
    tables: &mut TableLookup<'_>,
) -> Result<(), JobError> {
    let mesh = &skin.mesh;
    check_len(
        job,
        "slot palette count",
        mesh.bone_count(),
        slot.palette_count as usize,
    )?;
    if tables.get(&rig.0, mesh).is_none() {
        return Err(JobError::MissingRemap {
            entity,
            mesh: mesh.name().to_string(),
        });
    }
    if let Some(rb) = skin.root_bone
        && rb.get() >= slot.bone_count as usize
    {
        return Err(JobError::BoneOutOfRange {
            job,
            entity: Some(entity),
            bone: rb.get(),
            bone_count: slot.bone_count as usize,
        });
    }
    Ok(())
}

/// The remap tables of consecutive entities, looked up in the cache once per change of
/// (rig, mesh) pair (consecutive entities usually share it).
#[derive(Debug)]
pub struct TableLookup<'a> {
    cache: &'a RemapCache,
    last: Option<(*const Rig, *const SkinnedMesh, &'a RemapTable)>,
}

impl<'a> TableLookup<'a> {
    /// Looks up in `cache`.
    pub fn new(cache: &'a RemapCache) -> Self {
        Self { cache, last: None }
    }

    /// The table of the pair, `None` when job 8 has not built it.
    #[inline]
    pub fn get(&mut self, rig: &Arc<Rig>, mesh: &Arc<SkinnedMesh>) -> Option<&'a RemapTable> {
        let key = (Arc::as_ptr(rig), Arc::as_ptr(mesh));
        match self.last {
            Some((r, m, t)) if (r, m) == key => Some(t),
            _ => {
                let t = self.cache.get(rig, mesh)?;
                self.last = Some((key.0, key.1, t));
                Some(t)
            }
        }
    }
}

/// One entity's palette from its model matrices (`model`, rig order): `entityToRoot` from the
/// skin's root bone when it has one, then [`skin_one`].
#[inline]
pub fn skin_entity(model: &[Affine3A], skin: &SkinRef, table: &RemapTable, out: &mut [[f32; 12]]) {
    let entity_to_root = skin
        .root_bone
        .and_then(|b| model.get(b.get()))
        .map(|m| m.inverse());
    skin_one(model, skin.mesh.inverse_binds(), table, entity_to_root, out);
}

/// One entity: `out[j] = entityToRoot · model[remap[j]] · inverseBind[j]`, identity for mesh
/// bones without a rig bone ([`NO_RIG_BONE`](crate::j8_remap_cache::NO_RIG_BONE)).
#[inline]
pub fn skin_one(
    model: &[Affine3A],
    inverse_binds: &[Affine3A],
    table: &RemapTable,
    entity_to_root: Option<Affine3A>,
    out: &mut [[f32; 12]],
) {
    let bones = out.iter_mut().zip(&table.mesh_to_rig).zip(inverse_binds);
    for ((o, &r), ib) in bones {
        let m = match (model.get(r as usize), entity_to_root) {
            (Some(bone), None) => mul_affine(bone, ib),
            (Some(bone), Some(e)) => mul_affine(&e, &mul_affine(bone, ib)),
            // NO_RIG_BONE (or a table from another rig, which validate() refuses).
            (None, _) => Affine3A::IDENTITY,
        };
        palette_3x4(&m, o);
    }
}

/// [`skin_one`] without `entityToRoot` for up to `LANES` entities of one rig and mesh,
/// entity `e` in lane `e` of `model` (as [`propagate_lanes`](crate::j7_propagate::propagate_lanes)
/// leaves it) writing `out[e]`: each mesh bone's product is one [`mul_lanes_by`] for the group,
/// its lanes then turned into each entity's 12 floats (an 8 × 8 transpose and a 4 × 8 one).
/// Each entity's entries are bit for bit [`skin_one`]'s: the same operations on the same
/// values, and the 12 floats in [`palette_3x4`]'s order.
#[inline]
pub(crate) fn skin_lanes(
    model: &[LaneAffine],
    inverse_binds: &[Affine3A],
    table: &RemapTable,
    out: &mut [&mut [[f32; 12]]],
) {
    let mut identity = [0.0; 12];
    palette_3x4(&Affine3A::IDENTITY, &mut identity);
    let bones = table.mesh_to_rig.iter().zip(inverse_binds).enumerate();
    for (j, (&r, ib)) in bones {
        let Some(bone) = model.get(r as usize) else {
            // NO_RIG_BONE (or a table from another rig, which validate() refuses).
            for o in out.iter_mut() {
                if let Some(entry) = o.get_mut(j) {
                    *entry = identity;
                }
            }
            continue;
        };
        let elements = ib.to_cols_array();
        let m = mul_lanes_by(bone, |k| f32x8::splat(elements[k]));
        let z = f32x8::ZERO;
        let first = f32x8::transpose([m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7]]);
        let last = f32x8::transpose([m[8], m[9], m[10], m[11], z, z, z, z]);
        for ((o, first), last) in out.iter_mut().zip(first).zip(last) {
            if let Some(entry) = o.get_mut(j) {
                let (head, tail) = entry.split_at_mut(8);
                head.copy_from_slice(&first.to_array());
                tail.copy_from_slice(&last.to_array()[..4]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::j8_remap_cache::NO_RIG_BONE;
    use glam::{Quat, Vec3};

    #[test]
    fn lane_groups_give_each_entity_its_own_palette_bit_for_bit() {
        use crate::math::soa::LANES;
        // 13 rig bones, 11 mesh bones reordered, two without a rig bone; a different model per
        // lane (entity).
        let mesh_to_rig = vec![12, 0, NO_RIG_BONE, 5, 7, 1, 2, 3, NO_RIG_BONE, 11, 9];
        let table = RemapTable {
            mesh_to_rig,
            missing: 2,
        };
        let binds: Vec<Affine3A> = (0..11).map(|i| affine(20 + i).inverse()).collect();
        let model = |e: usize| -> Vec<Affine3A> { (0..13).map(|i| affine(3 * i + e)).collect() };
        for count in 1..=LANES {
            let lanes: Vec<LaneAffine> = (0..13)
                .map(|i| {
                    std::array::from_fn(|k| {
                        f32x8::from(std::array::from_fn::<f32, 8, _>(|e| {
                            model(e)[i].to_cols_array()[k]
                        }))
                    })
                })
                .collect();
            let mut got = vec![vec![[f32::NAN; 12]; 11]; count];
            let mut outs: Vec<&mut [[f32; 12]]> = got.iter_mut().map(Vec::as_mut_slice).collect();
            skin_lanes(&lanes, &binds, &table, &mut outs);
            for (e, got) in got.iter().enumerate() {
                let mut want = vec![[0.0; 12]; 11];
                skin_one(&model(e), &binds, &table, None, &mut want);
                let bits = |p: &[[f32; 12]]| -> Vec<u32> {
                    p.iter().flatten().map(|x| x.to_bits()).collect()
                };
                assert_eq!(bits(got), bits(&want), "entity {e} of {count}");
            }
        }
    }

    fn affine(i: usize) -> Affine3A {
        let f = i as f32;
        Affine3A::from_scale_rotation_translation(
            Vec3::new(1.0 + 0.1 * f, 0.9, 1.1),
            Quat::from_euler(glam::EulerRot::XYZ, 0.3 * f, -0.2 * f, 0.7),
            Vec3::new(f, -2.0 * f, 0.5),
        )
    }

    #[test]
    fn palettes_are_model_times_inverse_bind_with_missing_and_reordered_bones() {
        // 11 mesh bones over a 13-bone rig, reordered, two of them without a rig bone.
        let model: Vec<Affine3A> = (0..13).map(affine).collect();
        let mesh_to_rig = vec![12, 0, NO_RIG_BONE, 5, 7, 1, 2, 3, NO_RIG_BONE, 11, 9];
        let binds: Vec<Affine3A> = (0..11).map(|i| affine(20 + i).inverse()).collect();
        let table = RemapTable {
            mesh_to_rig: mesh_to_rig.clone(),
            missing: 2,
        };
        let mut got = vec![[f32::NAN; 12]; 11];
        skin_one(&model, &binds, &table, None, &mut got);
        for (j, &r) in mesh_to_rig.iter().enumerate() {
            let mut want = [0.0; 12];
            if r == NO_RIG_BONE {
                palette_3x4(&Affine3A::IDENTITY, &mut want);
            } else {
                palette_3x4(&mul_affine(&model[r as usize], &binds[j]), &mut want);
            }
            assert_eq!(
                got[j].map(f32::to_bits),
                want.map(f32::to_bits),
                "mesh bone {j}"
            );
            // And glam's product, to rounding.
            let glam = if r == NO_RIG_BONE {
                Affine3A::IDENTITY
            } else {
                model[r as usize] * binds[j]
            };
            let mut want = [0.0; 12];
            palette_3x4(&glam, &mut want);
            for (x, y) in got[j].iter().zip(want) {
                assert!((x - y).abs() <= 1e-5 * (1.0 + y.abs()), "mesh bone {j}");
            }
        }
        // An entity-to-root matrix multiplies every entry but the missing bones'.
        let shift = Affine3A::from_translation(Vec3::new(0.0, -3.0, 0.0));
        let mut rooted = vec![[f32::NAN; 12]; 11];
        skin_one(&model, &binds, &table, Some(shift), &mut rooted);
        for (j, &r) in mesh_to_rig.iter().enumerate() {
            let mut want = [0.0; 12];
            if r == NO_RIG_BONE {
                palette_3x4(&Affine3A::IDENTITY, &mut want);
            } else {
                palette_3x4(
                    &mul_affine(&shift, &mul_affine(&model[r as usize], &binds[j])),
                    &mut want,
                );
            }
            assert_eq!(rooted[j], want, "mesh bone {j}");
        }
    }
}
