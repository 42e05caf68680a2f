//! The glTF extensions a file requires, checked before the `gltf` crate sees the file (it
//! refuses every required extension it does not implement itself, `KHR_mesh_quantization`
//! included).

use super::ImportError;

/// Implemented by the accessor reader: integer mesh attributes.
pub(super) const MESH_QUANTIZATION: &str = "KHR_mesh_quantization";
/// Changes texture lookups only; materials and texture coordinates are not imported, so a
/// file that requires it imports the same with or without it.
const TEXTURE_TRANSFORM: &str = "KHR_texture_transform";
/// Decoded with the `meshopt` feature (`meshopt.rs`), refused without it.
const MESHOPT: &str = "EXT_meshopt_compression";
const DRACO: &str = "KHR_draco_mesh_compression";

/// What the importer does for a file's extensions.
pub(super) struct Extensions {
    /// `KHR_mesh_quantization` is used or required: attributes may use its integer types.
    pub mesh_quantization: bool,
}

/// Checks `extensionsRequired` and removes the extensions handled here from it, so that the
/// `gltf` crate's validation accepts them.
///
/// # Errors
/// [`ImportError::UnsupportedExtension`] for a required extension the importer does not
/// implement, with how to write the file without it.
pub(super) fn accept(root: &mut ::gltf::json::Root, file: &str) -> Result<Extensions, ImportError> {
    let declared = |name: &str| {
        root.extensions_used.iter().any(|e| e == name)
            || root.extensions_required.iter().any(|e| e == name)
    };
    let mesh_quantization = declared(MESH_QUANTIZATION);
    for extension in &root.extensions_required {
        let reason = match extension.as_str() {
            MESH_QUANTIZATION | TEXTURE_TRANSFORM => continue,
            #[cfg(feature = "meshopt")]
            MESHOPT => continue,
            #[cfg(not(feature = "meshopt"))]
            MESHOPT => {
                "its buffer views are meshoptimizer-compressed, which sinew-jobs decodes only \
                 with its `meshopt` feature (not in this build); `gltf-transform copy IN OUT` \
                 writes the file decoded, and gltfpack without -c/-cc or gltf-transform \
                 without its meshopt command write files without it"
            }
            DRACO => {
                "its geometry is Draco-compressed, which sinew does not decode; \
                 `gltf-transform copy IN OUT` writes the file decoded"
            }
            _ => "sinew does not implement it",
        };
        return Err(ImportError::UnsupportedExtension {
            file: file.to_string(),
            extension: extension.chars().take(80).collect(),
            reason: reason.to_string(),
        });
    }
    root.extensions_required.clear();
    Ok(Extensions { mesh_quantization })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root(json: &str) -> ::gltf::json::Root {
        ::gltf::json::deserialize::from_str(json).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn quantization_is_accepted_and_meshopt_named() {
        let mut r = root(
            r#"{"asset":{"version":"2.0"},"extensionsUsed":["KHR_mesh_quantization","KHR_texture_transform"],
                "extensionsRequired":["KHR_mesh_quantization","KHR_texture_transform"]}"#,
        );
        let e = accept(&mut r, "f").map_err(|e| e.to_string());
        assert!(matches!(
            e,
            Ok(Extensions {
                mesh_quantization: true
            })
        ));
        assert!(r.extensions_required.is_empty());
        let mut r =
            root(r#"{"asset":{"version":"2.0"},"extensionsUsed":["KHR_texture_transform"]}"#);
        assert!(matches!(
            accept(&mut r, "f"),
            Ok(Extensions {
                mesh_quantization: false
            })
        ));
        let mut r = root(
            r#"{"asset":{"version":"2.0"},"extensionsRequired":["KHR_mesh_quantization","EXT_meshopt_compression"]}"#,
        );
        if cfg!(feature = "meshopt") {
            assert!(accept(&mut r, "f.glb").is_ok());
            return;
        }
        let Err(e) = accept(&mut r, "f.glb") else {
            panic!("meshopt accepted")
        };
        assert!(
            matches!(&e, ImportError::UnsupportedExtension { extension, .. } if extension == MESHOPT),
            "{e}"
        );
        let text = e.to_string();
        assert!(
            text.contains("f.glb: requires extension EXT_meshopt_compression"),
            "{text}"
        );
        assert!(text.contains("gltfpack without -c"), "{text}");
        let mut r = root(r#"{"asset":{"version":"2.0"},"extensionsRequired":["EXT_unknown"]}"#);
        assert!(accept(&mut r, "f").is_err());
    }
}
