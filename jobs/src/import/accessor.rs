//! Accessor reading with every byte range checked before it is touched.
//!
//! The `gltf` crate's readers index slices and subtract one from the count without checks,
//! and `debug_assert!` the element size; on malformed files they can panic. This reader
//! checks the accessor's type and component type against what the caller accepts, then
//! `offset + (count - 1) * stride + element size <= view length` and
//! `view offset + view length <= buffer length` with checked arithmetic, applies sparse
//! substitutions (indices strictly increasing and in range), and rejects NaN and infinite
//! floats.

use super::ImportError;
use super::quantization::{FloatUse, Storage, dequantize, normalize, refusal};
use ::gltf::accessor::{Accessor, DataType, Dimensions};
use std::borrow::Cow;

/// Accessors without a buffer view (sparse-only, implicitly zero) may not claim more
/// components than this, so that a tiny file cannot ask for gigabytes of zeros.
const MAX_IMPLICIT_COMPONENTS: usize = 1 << 24;

/// What the reader needs besides the accessor: the file name for errors and the buffers.
pub(super) struct Reader<'a> {
    pub file: &'a str,
    pub buffers: &'a [Cow<'a, [u8]>],
    /// The file declares `KHR_mesh_quantization`: mesh attributes may use its integer types.
    pub mesh_quantization: bool,
    /// The bytes of compressed buffer views (`EXT_meshopt_compression`), by view index.
    pub decoded_views: hashbrown::HashMap<usize, Vec<u8>>,
}

/// Decoded accessor data: `count * dims` components, row by row.
pub(super) struct Components<T> {
    pub dims: usize,
    pub values: Vec<T>,
}

impl<T: Copy> Components<T> {
    /// Number of elements.
    pub(crate) fn count(&self) -> usize {
        self.values.len().checked_div(self.dims).unwrap_or(0)
    }
    /// Element `i` as an array (`None` when out of range or `N != dims`).
    pub(crate) fn get<const N: usize>(&self, i: usize) -> Option<[T; N]> {
        if N != self.dims {
            return None;
        }
        let s = self
            .values
            .get(i.checked_mul(N)?..i.checked_mul(N)?.checked_add(N)?)?;
        <[T; N]>::try_from(s).ok()
    }
}

fn comp_size(t: DataType) -> usize {
    match t {
        DataType::I8 | DataType::U8 => 1,
        DataType::I16 | DataType::U16 => 2,
        DataType::U32 | DataType::F32 => 4,
    }
}

fn type_name(d: Dimensions) -> &'static str {
    match d {
        Dimensions::Scalar => "SCALAR",
        Dimensions::Vec2 => "VEC2",
        Dimensions::Vec3 => "VEC3",
        Dimensions::Vec4 => "VEC4",
        Dimensions::Mat2 => "MAT2",
        Dimensions::Mat3 => "MAT3",
        Dimensions::Mat4 => "MAT4",
    }
}

fn comp_name(t: DataType, normalized: bool) -> String {
    let n = match t {
        DataType::I8 => "BYTE",
        DataType::U8 => "UNSIGNED_BYTE",
        DataType::I16 => "SHORT",
        DataType::U16 => "UNSIGNED_SHORT",
        DataType::U32 => "UNSIGNED_INT",
        DataType::F32 => "FLOAT",
    };
    if normalized {
        format!("normalized {n}")
    } else {
        n.to_string()
    }
}

/// One component at the start of `b`, as f64 (exact for every glTF component type).
fn decode(t: DataType, b: &[u8]) -> Option<f64> {
    Some(match t {
        DataType::I8 => f64::from(i8::from_le_bytes(<[u8; 1]>::try_from(b.get(..1)?).ok()?)),
        DataType::U8 => f64::from(*b.first()?),
        DataType::I16 => f64::from(i16::from_le_bytes(<[u8; 2]>::try_from(b.get(..2)?).ok()?)),
        DataType::U16 => f64::from(u16::from_le_bytes(<[u8; 2]>::try_from(b.get(..2)?).ok()?)),
        DataType::U32 => f64::from(u32::from_le_bytes(<[u8; 4]>::try_from(b.get(..4)?).ok()?)),
        DataType::F32 => f64::from(f32::from_le_bytes(<[u8; 4]>::try_from(b.get(..4)?).ok()?)),
    })
}

impl Reader<'_> {
    fn err(&self, acc: &Accessor<'_>, used_as: &str, reason: String) -> ImportError {
        ImportError::Accessor {
            file: self.file.to_string(),
            accessor: acc.index(),
            used_as: used_as.to_string(),
            reason,
        }
    }

    /// The bytes of a buffer view, checked against its buffer.
    fn view_bytes(&self, view: &::gltf::buffer::View<'_>) -> Result<&[u8], String> {
        if let Some(bytes) = self.decoded_views.get(&view.index()) {
            return Ok(bytes);
        }
        let buffer = view.buffer().index();
        let data = self
            .buffers
            .get(buffer)
            .ok_or_else(|| format!("buffer view {} names missing buffer {buffer}", view.index()))?;
        view.offset()
            .checked_add(view.length())
            .and_then(|end| data.get(view.offset()..end))
            .ok_or_else(|| {
                format!(
                    "buffer view {} (offset {}, length {}) runs past the end of buffer {buffer} ({} bytes)",
                    view.index(),
                    view.offset(),
                    view.length(),
                    data.len()
                )
            })
    }

    /// Reads `count` elements of `elem` bytes at `offset` with `stride` from `bytes`.
    fn strided(
        bytes: &[u8],
        offset: usize,
        count: usize,
        stride: usize,
        elem: usize,
        t: DataType,
        out: &mut Vec<f64>,
    ) -> Result<(), String> {
        if count == 0 {
            return Ok(());
        }
        let end = (count - 1)
            .checked_mul(stride)
            .and_then(|x| x.checked_add(offset))
            .and_then(|x| x.checked_add(elem))
            .ok_or_else(|| "byte range overflows".to_string())?;
        if end > bytes.len() {
            return Err(format!(
                "{count} elements of {elem} bytes at offset {offset} with stride {stride} need {end} bytes, the buffer view has {}",
                bytes.len()
            ));
        }
        let cs = comp_size(t);
        out.reserve(count * (elem / cs));
        for i in 0..count {
            let start = i * stride + offset;
            let e = bytes
                .get(start..start + elem)
                .ok_or_else(|| "element out of range".to_string())?;
            for c in e.chunks_exact(cs) {
                out.push(decode(t, c).ok_or_else(|| "component out of range".to_string())?);
            }
        }
        Ok(())
    }

    /// Reads the raw components (before normalisation) with every range checked.
    fn raw(&self, acc: &Accessor<'_>, dims: usize) -> Result<Vec<f64>, String> {
        let t = acc.data_type();
        let elem = comp_size(t) * dims;
        let count = acc.count();
        let mut values = Vec::new();
        match acc.view() {
            Some(view) => {
                let bytes = self.view_bytes(&view)?;
                let stride = view.stride().unwrap_or(elem);
                if stride < elem {
                    return Err(format!(
                        "byte stride {stride} is smaller than the element size {elem}"
                    ));
                }
                Self::strided(bytes, acc.offset(), count, stride, elem, t, &mut values)?;
            }
            None => {
                let n = count
                    .checked_mul(dims)
                    .filter(|&n| n <= MAX_IMPLICIT_COMPONENTS);
                let n =
                    n.ok_or_else(|| format!("{count} elements without a buffer view is too many"))?;
                values = vec![0.0; n];
            }
        }
        if let Some(sparse) = acc.sparse() {
            let n = sparse.count();
            if n > count {
                return Err(format!("{n} sparse substitutions for {count} elements"));
            }
            let ind = sparse.indices();
            let it = match ind.index_type() {
                ::gltf::accessor::sparse::IndexType::U8 => DataType::U8,
                ::gltf::accessor::sparse::IndexType::U16 => DataType::U16,
                ::gltf::accessor::sparse::IndexType::U32 => DataType::U32,
            };
            let mut indices = Vec::new();
            let ibytes = self.view_bytes(&ind.view())?;
            Self::strided(
                ibytes,
                ind.offset(),
                n,
                comp_size(it),
                comp_size(it),
                it,
                &mut indices,
            )
            .map_err(|e| format!("sparse indices: {e}"))?;
            let val = sparse.values();
            let mut subst = Vec::new();
            let vbytes = self.view_bytes(&val.view())?;
            Self::strided(vbytes, val.offset(), n, elem, elem, t, &mut subst)
                .map_err(|e| format!("sparse values: {e}"))?;
            let mut prev: Option<f64> = None;
            for (k, &i) in indices.iter().enumerate() {
                if prev.is_some_and(|p| i <= p) || i >= count as f64 {
                    return Err(format!(
                        "sparse index {k} ({i}) is out of range or not increasing"
                    ));
                }
                prev = Some(i);
                let at = i as usize * dims;
                let (Some(dst), Some(src)) = (
                    values.get_mut(at..at + dims),
                    subst.get(k * dims..(k + 1) * dims),
                ) else {
                    return Err(format!("sparse index {k} out of range"));
                };
                dst.copy_from_slice(src);
            }
        }
        Ok(values)
    }

    fn check_dims(
        &self,
        acc: &Accessor<'_>,
        used_as: &str,
        allowed: &[Dimensions],
    ) -> Result<usize, ImportError> {
        let d = acc.dimensions();
        if !allowed.contains(&d) {
            let want: Vec<&str> = allowed.iter().map(|&a| type_name(a)).collect();
            return Err(self.err(
                acc,
                used_as,
                format!("type {} (expected {})", type_name(d), want.join(" or ")),
            ));
        }
        Ok(d.multiplicity())
    }

    /// Reads float data: `FLOAT` components, or when `normalized_ok`, normalised integer
    /// components converted to `[0, 1]` / `[-1, 1]`. NaN and infinite values are errors.
    pub(crate) fn floats(
        &self,
        acc: &Accessor<'_>,
        used_as: &str,
        allowed: &[Dimensions],
        normalized_ok: bool,
    ) -> Result<Components<f32>, ImportError> {
        let dims = self.check_dims(acc, used_as, allowed)?;
        let t = acc.data_type();
        let ok = (t == DataType::F32 && !acc.normalized())
            || (normalized_ok && acc.normalized() && !matches!(t, DataType::U32 | DataType::F32));
        if !ok {
            let want = if normalized_ok {
                "FLOAT or a normalized integer type"
            } else {
                "FLOAT"
            };
            return Err(self.err(
                acc,
                used_as,
                format!(
                    "component type {} (expected {want})",
                    comp_name(t, acc.normalized())
                ),
            ));
        }
        let raw = self.raw(acc, dims).map_err(|e| self.err(acc, used_as, e))?;
        let mut values = Vec::with_capacity(raw.len());
        for (i, c) in raw.into_iter().enumerate() {
            let v = normalize(t, c) as f32;
            if !v.is_finite() {
                return Err(self.err(
                    acc,
                    used_as,
                    format!("element {} holds NaN or an infinite value", i / dims),
                ));
            }
            values.push(v);
        }
        Ok(Components { dims, values })
    }

    /// Reads float data used as `u`: its accessor type, and a storage the use allows (core
    /// glTF, or `KHR_mesh_quantization` when the file declares it), dequantized by
    /// [`dequantize`]. NaN and infinite values are errors.
    pub(crate) fn float_attribute(
        &self,
        acc: &Accessor<'_>,
        used_as: &str,
        u: FloatUse,
    ) -> Result<Components<f32>, ImportError> {
        let dims = self.check_dims(acc, used_as, &[u.dimensions()])?;
        let storage = Storage {
            ty: acc.data_type(),
            normalized: acc.normalized(),
        };
        if !u.allowed(self.mesh_quantization).contains(&storage) {
            return Err(self.err(acc, used_as, refusal(u, storage, self.mesh_quantization)));
        }
        let raw = self.raw(acc, dims).map_err(|e| self.err(acc, used_as, e))?;
        let mut values = Vec::with_capacity(raw.len());
        for (i, c) in raw.into_iter().enumerate() {
            let v = dequantize(storage, c);
            if !v.is_finite() {
                return Err(self.err(
                    acc,
                    used_as,
                    format!("element {} holds NaN or an infinite value", i / dims),
                ));
            }
            values.push(v);
        }
        Ok(Components { dims, values })
    }

    /// Reads unsigned integer data of one of the `allowed_types` (not normalized).
    pub(crate) fn uints(
        &self,
        acc: &Accessor<'_>,
        used_as: &str,
        allowed: &[Dimensions],
        allowed_types: &[DataType],
    ) -> Result<Components<u32>, ImportError> {
        let dims = self.check_dims(acc, used_as, allowed)?;
        let t = acc.data_type();
        if !allowed_types.contains(&t) || acc.normalized() {
            let want: Vec<String> = allowed_types.iter().map(|&a| comp_name(a, false)).collect();
            return Err(self.err(
                acc,
                used_as,
                format!(
                    "component type {} (expected {})",
                    comp_name(t, acc.normalized()),
                    want.join(" or ")
                ),
            ));
        }
        let raw = self.raw(acc, dims).map_err(|e| self.err(acc, used_as, e))?;
        // Unsigned integer components of at most 32 bits are exact in f64.
        Ok(Components {
            dims,
            values: raw.into_iter().map(|c| c as u32).collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_reads_little_endian_and_refuses_short_input() {
        assert_eq!(decode(DataType::I16, &[0xfe, 0xff]), Some(-2.0));
        assert_eq!(decode(DataType::U32, &[1, 0, 0, 1]), Some(16_777_217.0));
        assert_eq!(decode(DataType::F32, &1.5f32.to_le_bytes()), Some(1.5));
        assert_eq!(decode(DataType::U16, &[1]), None);
    }

    #[test]
    fn strided_checks_the_range_before_reading() {
        let bytes = [1u8, 2, 3, 4, 5, 6];
        let mut out = Vec::new();
        Reader::strided(&bytes, 1, 2, 3, 2, DataType::U8, &mut out).unwrap();
        assert_eq!(out, [2.0, 3.0, 5.0, 6.0]);
        // The last element would need bytes 4..7.
        assert!(Reader::strided(&bytes, 2, 2, 3, 2, DataType::U8, &mut Vec::new()).is_err());
        assert!(
            Reader::strided(&bytes, usize::MAX, 2, 3, 2, DataType::U8, &mut Vec::new()).is_err()
        );
        assert!(
            Reader::strided(
                &bytes,
                0,
                usize::MAX,
                usize::MAX,
                2,
                DataType::U8,
                &mut Vec::new()
            )
            .is_err()
        );
    }

    #[test]
    fn components_get_checks_arity_and_range() {
        let c = Components {
            dims: 2,
            values: vec![1, 2, 3, 4],
        };
        assert_eq!(c.count(), 2);
        assert_eq!(c.get::<2>(1), Some([3, 4]));
        assert_eq!(c.get::<2>(2), None);
        assert_eq!(c.get::<3>(0), None);
    }
}

/// The reader on the derived test files of `fixtures/assets/gltf/`.
#[cfg(test)]
mod file_tests {
    use super::super::{extensions, source};
    use super::*;
    use crate::import::quantization::FloatUse;
    use ::gltf::Semantic::{Positions, TexCoords};

    /// Reads the first primitive's attribute `semantic` (or with `target`, that morph
    /// target's POSITION) of fixture `name` as `u`.
    fn read(
        name: &str,
        semantic: ::gltf::Semantic,
        target: Option<usize>,
        u: FloatUse,
    ) -> Vec<f32> {
        read_with_node(name, semantic, target, u).0
    }

    /// A node's translation, rotation and scale.
    type Trs = ([f32; 3], [f32; 4], [f32; 3]);

    /// As [`read`], with the TRS of the file's node 0.
    fn read_with_node(
        name: &str,
        semantic: ::gltf::Semantic,
        target: Option<usize>,
        u: FloatUse,
    ) -> (Vec<f32>, Trs) {
        let path = sinew_fixtures::asset_path(format!("gltf/{name}")).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let c = source::split(&bytes, name).unwrap();
        let mut root: ::gltf::json::Root = ::gltf::json::deserialize::from_slice(c.json).unwrap();
        let ext = extensions::accept(&mut root, name).unwrap();
        let doc = ::gltf::Document::from_json(root).unwrap();
        let buffers = source::load_buffers(&doc, c.bin, path.parent(), name).unwrap();
        let reader = Reader {
            file: name,
            buffers: &buffers,
            mesh_quantization: ext.mesh_quantization,
            decoded_views: Default::default(),
        };
        let prim = doc.meshes().next().unwrap().primitives().next().unwrap();
        let acc = match target {
            None => prim.get(&semantic).unwrap(),
            Some(k) => prim.morph_targets().nth(k).unwrap().positions().unwrap(),
        };
        let node = doc.nodes().next().unwrap().transform().decomposed();
        (
            reader.float_attribute(&acc, "test", u).unwrap().values,
            node,
        )
    }

    /// gltfpack's quantized copy of RiggedSimple.sparse.gltf stores positions as
    /// UNSIGNED_SHORT and the morph deltas as SHORT on the same grid (the extension's rule:
    /// deltas use the positions' transform), with the grid's scale and offset on the mesh
    /// node. Dequantized by that transform, each vertex and its delta are the original's
    /// within a grid step.
    #[test]
    fn quantized_morph_deltas_share_the_positions_grid() {
        let original = read(
            "RiggedSimple.sparse.gltf",
            Positions,
            None,
            FloatUse::Position,
        );
        let deltas = read(
            "RiggedSimple.sparse.gltf",
            Positions,
            Some(0),
            FloatUse::MorphPosition,
        );
        let (q, (t, _, scale)) = read_with_node(
            "RiggedSimple.morph.gltfpack.glb",
            Positions,
            None,
            FloatUse::Position,
        );
        let dq = read(
            "RiggedSimple.morph.gltfpack.glb",
            Positions,
            Some(0),
            FloatUse::MorphPosition,
        );
        let s = scale[0];
        assert!(scale.iter().all(|&x| x == s), "uniform grid");
        let step = s * 3f32.sqrt();
        let mut moved = 0;
        for (p, d) in q.chunks_exact(3).zip(dq.chunks_exact(3)) {
            let x: Vec<f32> = (0..3).map(|k| s * p[k] + t[k]).collect();
            let nearest = (0..original.len() / 3)
                .min_by(|&a, &b| {
                    let da: f32 = (0..3).map(|k| (original[3 * a + k] - x[k]).powi(2)).sum();
                    let db: f32 = (0..3).map(|k| (original[3 * b + k] - x[k]).powi(2)).sum();
                    da.total_cmp(&db)
                })
                .unwrap();
            let e: f32 = (0..3)
                .map(|k| (original[3 * nearest + k] - x[k]).powi(2))
                .sum::<f32>()
                .sqrt();
            assert!(e <= step, "position {e} > {step}");
            let e: f32 = (0..3)
                .map(|k| (deltas[3 * nearest + k] - s * d[k]).powi(2))
                .sum::<f32>()
                .sqrt();
            assert!(e <= step, "delta {e} > {step}");
            moved += usize::from(d.iter().any(|&c| c != 0.0));
        }
        assert!(moved >= 64, "{moved}");
    }

    /// The sparse morph target of RiggedSimple.sparse.gltf (64 of 160 vertices substituted
    /// into implicit zeros) is the rule that made it, applied to the original file's
    /// positions: `(x/4, y/4, 1/2)` for vertices above z = 3.5, zero elsewhere (exact: a
    /// quarter of an f32 is an f32).
    #[test]
    fn a_sparse_morph_target_reads_as_the_rule_that_made_it() {
        let positions = read("RiggedSimple.glb", Positions, None, FloatUse::Position);
        let deltas = read(
            "RiggedSimple.sparse.gltf",
            Positions,
            Some(0),
            FloatUse::MorphPosition,
        );
        assert_eq!(deltas.len(), positions.len());
        let mut moved = 0;
        for (p, d) in positions.chunks_exact(3).zip(deltas.chunks_exact(3)) {
            if p[2] > 3.5 {
                assert_eq!(d, [0.25 * p[0], 0.25 * p[1], 0.5]);
                moved += 1;
            } else {
                assert_eq!(d, [0.0; 3]);
            }
        }
        assert_eq!(moved, 64);
    }

    /// gltf-transform's 12-bit texture coordinates (normalized UNSIGNED_SHORT) are the
    /// original floats within a 12-bit step (it rounds to 12 bits and shifts into 16, so
    /// values decode as `16·k / 65535`: half a step plus up to 16/65535 − 1/4095 of drift).
    #[test]
    fn quantized_texture_coordinates_are_the_original_within_a_step() {
        let original = read("CesiumMan.glb", TexCoords(0), None, FloatUse::TexCoord);
        let quantized = read(
            "CesiumMan.quantized.glb",
            TexCoords(0),
            None,
            FloatUse::TexCoord,
        );
        assert_eq!(original.len(), quantized.len());
        let step = 1.0 / 4095.0;
        let worst = original
            .iter()
            .zip(&quantized)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        assert!(worst <= step, "{worst}");
        assert!(worst > 0.0);
    }
}
