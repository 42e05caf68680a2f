//! Which accessor types and component types each use of float data allows, in core glTF 2.0
//! and with `KHR_mesh_quantization`, and how integer components become floats.
//!
//! The extension widens the component types of mesh attributes (positions, normals, tangents,
//! texture coordinates and their morph target deltas) to 8- and 16-bit integers, normalized or
//! not. It adds no dequantization data: integer positions are scaled into place by ordinary
//! transforms (a node for unskinned meshes, the skin's inverse bind matrices for skinned ones,
//! whose node transform glTF ignores), so decoding is the plain value of a non-normalized
//! component and the spec's formula for a normalized one. Weights and animation keys keep the
//! core spec's types.

use ::gltf::accessor::{DataType, Dimensions};

/// A component type with its `normalized` flag: one storage an accessor may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Storage {
    pub ty: DataType,
    pub normalized: bool,
}

const fn s(ty: DataType, normalized: bool) -> Storage {
    Storage { ty, normalized }
}

const FLOAT: Storage = s(DataType::F32, false);
const I8: Storage = s(DataType::I8, false);
const I8N: Storage = s(DataType::I8, true);
const U8: Storage = s(DataType::U8, false);
const U8N: Storage = s(DataType::U8, true);
const I16: Storage = s(DataType::I16, false);
const I16N: Storage = s(DataType::I16, true);
const U16: Storage = s(DataType::U16, false);
const U16N: Storage = s(DataType::U16, true);

/// What float data an accessor is read as; decides the accessor type and the storages allowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FloatUse {
    /// A primitive's `POSITION`.
    Position,
    /// A primitive's `NORMAL`.
    Normal,
    /// A primitive's `TANGENT` (xyz and the handedness sign).
    Tangent,
    /// A primitive's `TEXCOORD_n`.
    TexCoord,
    /// A primitive's `WEIGHTS_n`.
    Weights,
    /// A morph target's `POSITION` deltas.
    MorphPosition,
    /// A morph target's `NORMAL` deltas.
    MorphNormal,
    /// A morph target's `TANGENT` deltas (xyz only).
    MorphTangent,
    /// An animation sampler's rotation keys.
    RotationKeys,
    /// An animation sampler's morph weight keys.
    MorphWeightKeys,
}

impl FloatUse {
    /// The accessor type the use requires.
    pub(crate) fn dimensions(self) -> Dimensions {
        match self {
            Self::Position | Self::Normal => Dimensions::Vec3,
            Self::MorphPosition | Self::MorphNormal | Self::MorphTangent => Dimensions::Vec3,
            Self::Tangent | Self::Weights | Self::RotationKeys => Dimensions::Vec4,
            Self::TexCoord => Dimensions::Vec2,
            Self::MorphWeightKeys => Dimensions::Scalar,
        }
    }

    /// The storages core glTF 2.0 allows (glTF 2.0 §3.7.2.1 for attributes, §3.11 for
    /// animation samplers).
    pub(crate) fn core(self) -> &'static [Storage] {
        match self {
            Self::Position | Self::Normal | Self::Tangent => &[FLOAT],
            Self::MorphPosition | Self::MorphNormal | Self::MorphTangent => &[FLOAT],
            Self::TexCoord | Self::Weights => &[FLOAT, U8N, U16N],
            Self::RotationKeys | Self::MorphWeightKeys => &[FLOAT, I8N, U8N, I16N, U16N],
        }
    }

    /// The storages allowed with `KHR_mesh_quantization` (the extension's two tables).
    pub(crate) fn quantized(self) -> &'static [Storage] {
        match self {
            Self::Position | Self::TexCoord => &[FLOAT, I8, I8N, U8, U8N, I16, I16N, U16, U16N],
            Self::Normal | Self::Tangent => &[FLOAT, I8N, I16N],
            Self::MorphPosition => &[FLOAT, I8, I8N, I16, I16N],
            Self::MorphNormal | Self::MorphTangent => &[FLOAT, I8N, I16N],
            Self::Weights | Self::RotationKeys | Self::MorphWeightKeys => self.core(),
        }
    }

    /// The storages allowed in a file that does (`true`) or does not declare
    /// `KHR_mesh_quantization`.
    pub(crate) fn allowed(self, mesh_quantization: bool) -> &'static [Storage] {
        if mesh_quantization {
            self.quantized()
        } else {
            self.core()
        }
    }
}

/// The spec's normalisation of integer components to `[0, 1]` or `[-1, 1]` (glTF 2.0 §3.11,
/// the same table as `KHR_mesh_quantization`'s "Decoding Quantized Data").
pub(crate) fn normalize(t: DataType, c: f64) -> f64 {
    match t {
        DataType::I8 => (c / 127.0).max(-1.0),
        DataType::U8 => c / 255.0,
        DataType::I16 => (c / 32767.0).max(-1.0),
        DataType::U16 => c / 65535.0,
        DataType::U32 | DataType::F32 => c,
    }
}

/// One component as a float: normalized integers by the spec's formula, anything else as
/// its value (exact: 8- and 16-bit integers fit an f32's mantissa). The division is done in
/// f64 and rounded once to f32, which equals the f32 division (the double rounding of one
/// division from 53 to 24 bits is innocuous).
pub(crate) fn dequantize(storage: Storage, c: f64) -> f32 {
    if storage.normalized {
        normalize(storage.ty, c) as f32
    } else {
        c as f32
    }
}

/// The spec's name of a storage, e.g. `normalized UNSIGNED_SHORT`.
pub(crate) fn storage_name(storage: Storage) -> String {
    let n = match storage.ty {
        DataType::I8 => "BYTE",
        DataType::U8 => "UNSIGNED_BYTE",
        DataType::I16 => "SHORT",
        DataType::U16 => "UNSIGNED_SHORT",
        DataType::U32 => "UNSIGNED_INT",
        DataType::F32 => "FLOAT",
    };
    if storage.normalized {
        format!("normalized {n}")
    } else {
        n.to_string()
    }
}

/// Why `storage` is refused for `u`: the storages allowed, and what the extension would add.
pub(crate) fn refusal(u: FloatUse, storage: Storage, mesh_quantization: bool) -> String {
    let list = |l: &[Storage]| -> String {
        l.iter()
            .map(|&x| storage_name(x))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let found = storage_name(storage);
    if mesh_quantization {
        format!(
            "component type {found} is not allowed here, even with KHR_mesh_quantization (allowed: {})",
            list(u.quantized())
        )
    } else if u.quantized().contains(&storage) {
        format!(
            "component type {found} needs KHR_mesh_quantization, which the file does not declare in extensionsRequired (allowed: {})",
            list(u.core())
        )
    } else {
        format!(
            "component type {found} is not allowed here (allowed: {}; with KHR_mesh_quantization: {})",
            list(u.core()),
            list(u.quantized())
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalisation_follows_the_spec() {
        assert_eq!(normalize(DataType::I8, -128.0), -1.0);
        assert_eq!(normalize(DataType::I8, 127.0), 1.0);
        assert_eq!(normalize(DataType::U8, 255.0), 1.0);
        assert_eq!(normalize(DataType::I16, -32768.0), -1.0);
        assert_eq!(normalize(DataType::U16, 65535.0), 1.0);
        assert!((normalize(DataType::U16, 32768.0) - 32768.0 / 65535.0).abs() < 1e-12);
    }

    /// Every 8- and 16-bit component, normalized, equals the spec's formula computed in f32.
    #[test]
    fn dequantize_equals_the_f32_formula_for_every_value() {
        for c in i16::MIN..=i16::MAX {
            let f = f32::from(c);
            assert_eq!(
                dequantize(I16N, f64::from(c)),
                (f / 32767.0).max(-1.0),
                "{c}"
            );
            assert_eq!(dequantize(I16, f64::from(c)), f);
        }
        for c in 0..=u16::MAX {
            let f = f32::from(c);
            assert_eq!(dequantize(U16N, f64::from(c)), f / 65535.0, "{c}");
        }
        for c in i8::MIN..=i8::MAX {
            let f = f32::from(c);
            assert_eq!(dequantize(I8N, f64::from(c)), (f / 127.0).max(-1.0));
        }
        for c in 0..=u8::MAX {
            assert_eq!(dequantize(U8N, f64::from(c)), f32::from(c) / 255.0);
            assert_eq!(dequantize(U8, f64::from(c)), f32::from(c));
        }
    }

    /// The tables as the extension lists them; core glTF is a subset of each.
    #[test]
    fn tables_match_the_extension() {
        assert_eq!(FloatUse::Position.quantized().len(), 9);
        assert_eq!(FloatUse::TexCoord.quantized().len(), 9);
        assert_eq!(FloatUse::Normal.quantized(), [FLOAT, I8N, I16N]);
        assert_eq!(
            FloatUse::MorphPosition.quantized(),
            [FLOAT, I8, I8N, I16, I16N]
        );
        assert!(!FloatUse::MorphPosition.quantized().contains(&U16));
        assert_eq!(FloatUse::Weights.quantized(), [FLOAT, U8N, U16N]);
        for u in [
            FloatUse::Position,
            FloatUse::Normal,
            FloatUse::Tangent,
            FloatUse::TexCoord,
            FloatUse::Weights,
            FloatUse::MorphPosition,
            FloatUse::MorphNormal,
            FloatUse::MorphTangent,
            FloatUse::RotationKeys,
            FloatUse::MorphWeightKeys,
        ] {
            assert!(u.core().iter().all(|c| u.quantized().contains(c)), "{u:?}");
            assert!(!u.quantized().contains(&s(DataType::F32, true)), "{u:?}");
            assert!(!u.quantized().iter().any(|c| c.ty == DataType::U32));
        }
        assert_eq!(FloatUse::Tangent.dimensions(), Dimensions::Vec4);
        assert_eq!(FloatUse::MorphTangent.dimensions(), Dimensions::Vec3);
    }

    #[test]
    fn refusals_say_what_the_extension_would_allow() {
        let r = refusal(FloatUse::Position, I16, false);
        assert!(r.contains("SHORT needs KHR_mesh_quantization"), "{r}");
        let r = refusal(FloatUse::Normal, I16, true);
        assert!(
            r.contains("not allowed here, even with KHR_mesh_quantization"),
            "{r}"
        );
        assert!(r.contains("normalized BYTE"), "{r}");
        let r = refusal(FloatUse::Weights, I8N, false);
        assert!(
            r.contains("allowed: FLOAT, normalized UNSIGNED_BYTE"),
            "{r}"
        );
    }
}
