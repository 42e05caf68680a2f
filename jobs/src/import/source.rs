//! The container layer: GLB chunk splitting and buffer loading, written here (not taken from
//! the `gltf` crate) so that truncated headers, chunk lengths past the end and undecodable
//! URIs become errors instead of arithmetic overflows or panics.

use super::ImportError;
use std::borrow::Cow;
use std::path::Path;

const GLB_MAGIC: &[u8; 4] = b"glTF";
const CHUNK_JSON: u32 = 0x4E4F_534A;
const CHUNK_BIN: u32 = 0x004E_4942;

/// The JSON text and, for GLB, the binary chunk.
pub(super) struct Container<'a> {
    pub json: &'a [u8],
    pub bin: Option<&'a [u8]>,
}

fn le_u32(bytes: &[u8], at: usize) -> Option<u32> {
    let b = bytes.get(at..at.checked_add(4)?)?;
    <[u8; 4]>::try_from(b).ok().map(u32::from_le_bytes)
}

/// Splits a GLB file into its JSON and BIN chunks, or takes the bytes as glTF JSON.
pub(super) fn split<'a>(bytes: &'a [u8], file: &str) -> Result<Container<'a>, ImportError> {
    if !bytes.starts_with(GLB_MAGIC) {
        return Ok(Container {
            json: bytes,
            bin: None,
        });
    }
    let err = |reason: String| ImportError::Parse {
        file: file.to_string(),
        reason,
    };
    let (Some(version), Some(length)) = (le_u32(bytes, 4), le_u32(bytes, 8)) else {
        return Err(err(format!(
            "GLB header truncated ({} bytes, 12 needed)",
            bytes.len()
        )));
    };
    if version != 2 {
        return Err(err(format!("GLB version {version} (only 2 is supported)")));
    }
    let length = length as usize;
    if length < 12 || length > bytes.len() {
        return Err(err(format!(
            "GLB header says {length} bytes, the file has {}",
            bytes.len()
        )));
    }
    let glb = bytes.get(..length).unwrap_or(bytes);
    let mut at = 12usize;
    let mut json = None;
    let mut bin = None;
    let mut chunk = 0usize;
    while at < glb.len() {
        let (Some(len), Some(kind)) = (le_u32(glb, at), le_u32(glb, at + 4)) else {
            return Err(err(format!(
                "GLB chunk {chunk} header at byte {at} is truncated"
            )));
        };
        let start = at + 8;
        let data = start
            .checked_add(len as usize)
            .and_then(|end| glb.get(start..end))
            .ok_or_else(|| {
                err(format!(
                    "GLB chunk {chunk} ({len} bytes at byte {start}) runs past the end ({} bytes)",
                    glb.len()
                ))
            })?;
        match (chunk, kind) {
            (0, CHUNK_JSON) => json = Some(data),
            (0, _) => {
                return Err(err(format!(
                    "the first GLB chunk has type {kind:#010x}, expected JSON"
                )));
            }
            (1, CHUNK_BIN) => bin = Some(data),
            (_, CHUNK_JSON) => {
                return Err(err(format!("GLB chunk {chunk} is a second JSON chunk")));
            }
            (_, CHUNK_BIN) => {
                return Err(err(format!(
                    "GLB chunk {chunk} is a BIN chunk that is not the second chunk"
                )));
            }
            _ => {} // unknown chunk types are skipped, as the spec requires
        }
        // Chunks are 4-byte aligned; a final chunk may end exactly at the end.
        at = start + data.len();
        chunk += 1;
    }
    let json = json.ok_or_else(|| err("GLB file has no JSON chunk".into()))?;
    Ok(Container { json, bin })
}

/// Decodes `%XX` escapes of a relative URI; `None` when the result is not UTF-8.
fn percent_decode(uri: &str) -> Option<String> {
    let b = uri.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        let hex = |k: usize| b.get(k).and_then(|&h| (h as char).to_digit(16));
        match (c, hex(i + 1), hex(i + 2)) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// Loads the data of every buffer of `doc`, in index order, each at least as long as the
/// buffer's declared `byteLength`.
pub(super) fn load_buffers<'a>(
    doc: &::gltf::Document,
    bin: Option<&'a [u8]>,
    base_dir: Option<&Path>,
    file: &str,
) -> Result<Vec<Cow<'a, [u8]>>, ImportError> {
    let mut out = Vec::new();
    let mut bin = bin;
    for buffer in doc.buffers() {
        let index = buffer.index();
        let err = |reason: String| ImportError::Buffer {
            file: file.to_string(),
            buffer: index,
            reason,
        };
        let data: Cow<'a, [u8]> = match buffer.source() {
            // A meshopt fallback buffer has no data: every view into it is decoded instead.
            #[cfg(feature = "meshopt")]
            ::gltf::buffer::Source::Bin if super::meshopt::is_fallback(&buffer) => {
                out.push(Cow::Borrowed(&[][..]));
                continue;
            }
            ::gltf::buffer::Source::Bin => match bin.take() {
                Some(b) => Cow::Borrowed(b),
                None => return Err(err("refers to the GLB binary chunk, but there is none (or it is used by another buffer)".into())),
            },
            ::gltf::buffer::Source::Uri(uri) if uri.starts_with("data:") => {
                // The gltf crate only base64-decodes here (no path handling, no panics).
                let data = ::gltf::buffer::Data::from_source(::gltf::buffer::Source::Uri(uri), None)
                    .map_err(|e| err(format!("cannot decode data URI: {e}")))?;
                Cow::Owned(data.0)
            }
            ::gltf::buffer::Source::Uri(uri) => {
                if uri.contains(':') {
                    return Err(err(format!("unsupported URI scheme in '{}'", truncate(uri))));
                }
                let Some(dir) = base_dir else {
                    return Err(err(format!("refers to external file '{}' but no base directory was given", truncate(uri))));
                };
                let rel = percent_decode(uri).ok_or_else(|| err(format!("URI '{}' is not valid UTF-8 once decoded", truncate(uri))))?;
                let path = dir.join(rel);
                let data = std::fs::read(&path).map_err(|source| ImportError::Io { path, source })?;
                Cow::Owned(data)
            }
        };
        if data.len() < buffer.length() {
            return Err(err(format!(
                "declares {} bytes but only {} are present",
                buffer.length(),
                data.len()
            )));
        }
        out.push(data);
    }
    Ok(out)
}

fn truncate(s: &str) -> String {
    s.chars().take(80).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn glb(json: &[u8], bin: Option<&[u8]>) -> Vec<u8> {
        let mut out = b"glTF".to_vec();
        out.extend_from_slice(&2u32.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&(json.len() as u32).to_le_bytes());
        out.extend_from_slice(&CHUNK_JSON.to_le_bytes());
        out.extend_from_slice(json);
        if let Some(bin) = bin {
            out.extend_from_slice(&(bin.len() as u32).to_le_bytes());
            out.extend_from_slice(&CHUNK_BIN.to_le_bytes());
            out.extend_from_slice(bin);
        }
        let len = out.len() as u32;
        out[8..12].copy_from_slice(&len.to_le_bytes());
        out
    }

    #[test]
    fn splits_glb_chunks_and_passes_json_through() {
        let bytes = glb(b"{}  ", Some(&[1, 2, 3, 4]));
        let c = split(&bytes, "f").unwrap();
        assert_eq!(c.json, b"{}  ");
        assert_eq!(c.bin, Some(&[1u8, 2, 3, 4][..]));
        let c = split(b"{\"asset\":{}}", "f").unwrap();
        assert_eq!(c.json, b"{\"asset\":{}}");
        assert!(c.bin.is_none());
    }

    #[test]
    fn rejects_bad_glb_headers_and_chunks() {
        let good = glb(b"{}  ", Some(&[1, 2, 3, 4]));
        // Every truncation of the header or a chunk is an error.
        for cut in [5, 11, 12, 15, 19, good.len() - 1] {
            let mut b = good[..cut].to_vec();
            if b.len() >= 12 {
                let l = b.len() as u32;
                b[8..12].copy_from_slice(&l.to_le_bytes());
            }
            assert!(split(&b, "f").is_err(), "cut at {cut}");
        }
        let mut v = good.clone();
        v[4] = 1;
        assert!(matches!(split(&v, "f"), Err(ImportError::Parse { .. })));
        let mut v = good.clone();
        v[8..12].copy_from_slice(&4u32.to_le_bytes()); // shorter than the header
        assert!(split(&v, "f").is_err());
        let mut v = good.clone();
        v[12..16].copy_from_slice(&u32::MAX.to_le_bytes()); // JSON chunk length overflows
        assert!(split(&v, "f").is_err());
        let mut v = good;
        v[16..20].copy_from_slice(&CHUNK_BIN.to_le_bytes()); // first chunk not JSON
        assert!(split(&v, "f").is_err());
    }

    #[test]
    fn percent_decoding() {
        assert_eq!(percent_decode("a%20b.bin").as_deref(), Some("a b.bin"));
        assert_eq!(percent_decode("100%").as_deref(), Some("100%"));
        assert_eq!(percent_decode("%zz").as_deref(), Some("%zz"));
        assert_eq!(percent_decode("%FF"), None);
    }
}
