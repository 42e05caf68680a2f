//! `EXT_meshopt_compression`: buffer views stored compressed by meshoptimizer's codecs, decoded
//! by the `meshopt` crate (bindings to meshoptimizer's decoders, which are written to be safe
//! on untrusted input) into the bytes the accessor reader then checks as usual.
//!
//! Every parameter the C decoders `assert` on (stride, index size, triangle count, filter
//! stride) is checked here first, and the decoded size is capped, so that no input reaches an
//! assertion or asks for more memory than [`MAX_DECODED_BYTES`]. The codecs' byte order is
//! little-endian, as the hosts sinew runs on.

use super::ImportError;
use hashbrown::HashMap;
use serde_json::Value;
use std::borrow::Cow;

/// The most bytes one file may decode to in all (a small compressed file could otherwise ask
/// for gigabytes).
const MAX_DECODED_BYTES: usize = 1 << 28;

/// The extension's name, as in `extensionsRequired` and in buffer and view extensions.
pub(super) const NAME: &str = "EXT_meshopt_compression";

/// Whether `buffer` is a fallback buffer (`"fallback": true`): it may have no data, since
/// every view into it is compressed elsewhere.
pub(super) fn is_fallback(buffer: &::gltf::Buffer<'_>) -> bool {
    buffer
        .extensions()
        .and_then(|e| e.get(NAME))
        .and_then(|e| e.get("fallback"))
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// One element of `W` 32-bit words: the decoder's stride is its size.
#[derive(Clone, Copy)]
struct Element<const W: usize>([u32; W]);

impl<const W: usize> Default for Element<W> {
    fn default() -> Self {
        Self([0; W])
    }
}

/// Calls `$f::<W>(args)` for `W` = `$w` in 1..=64 (strides 4 to 256 bytes, the extension's).
macro_rules! with_words {
    ($w:expr, $f:ident, $($a:expr),*) => {
        with_words!(@arms $w, $f, ($($a),*);
            1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32
            33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61
            62 63 64)
    };
    (@arms $w:expr, $f:ident, $args:tt; $($k:literal)*) => {
        match $w {
            $($k => with_words!(@call $f, $k, $args),)*
            w => Err(format!("byte stride {} is not a multiple of 4 from 4 to 256", 4 * w)),
        }
    };
    (@call $f:ident, $k:literal, ($($a:expr),*)) => { $f::<$k>($($a),*) };
}

/// Memory image of words (the decoders write native, here little-endian, words).
fn word_bytes(words: impl Iterator<Item = u32>) -> Vec<u8> {
    words.flat_map(u32::to_ne_bytes).collect()
}

fn decode_attributes<const W: usize>(src: &[u8], count: usize) -> Result<Vec<u8>, String> {
    let v: Vec<Element<W>> =
        meshopt::decode_vertex_buffer(src, count).map_err(|e| format!("cannot decode: {e}"))?;
    Ok(word_bytes(v.into_iter().flat_map(|e| e.0)))
}

fn exp_filter<const W: usize>(bytes: &mut Vec<u8>) -> Result<(), String> {
    let mut v: Vec<[u32; W]> = bytes
        .chunks_exact(4 * W)
        .map(|e| {
            let mut w = [0u32; W];
            for (slot, b) in w.iter_mut().zip(e.chunks_exact(4)) {
                *slot = u32::from_ne_bytes([b[0], b[1], b[2], b[3]]);
            }
            w
        })
        .collect();
    meshopt::decode_filter_exp(&mut v);
    *bytes = word_bytes(v.into_iter().flatten());
    Ok(())
}

/// Elements of four `C` components, as the octahedral and quaternion filters take them.
fn quads<C: Copy + Default>(bytes: &[u8], read: impl Fn(&[u8]) -> C) -> Vec<[C; 4]> {
    let c = std::mem::size_of::<C>();
    bytes
        .chunks_exact(4 * c)
        .map(|e| {
            let mut q = [C::default(); 4];
            for (slot, b) in q.iter_mut().zip(e.chunks_exact(c)) {
                *slot = read(b);
            }
            q
        })
        .collect()
}

fn i16_quads(bytes: &[u8]) -> Vec<[i16; 4]> {
    quads(bytes, |b| i16::from_ne_bytes([b[0], b[1]]))
}

fn from_i16_quads(q: Vec<[i16; 4]>) -> Vec<u8> {
    q.into_iter().flatten().flat_map(i16::to_ne_bytes).collect()
}

/// The view's `EXT_meshopt_compression` object, parsed and checked.
struct Compressed {
    buffer: usize,
    offset: usize,
    length: usize,
    stride: usize,
    count: usize,
    mode: String,
    filter: String,
}

fn parse(ext: &Value) -> Result<Compressed, String> {
    let int = |key: &str, default: Option<usize>| -> Result<usize, String> {
        match ext.get(key) {
            None => default.ok_or_else(|| format!("has no {key}")),
            Some(v) => v
                .as_u64()
                .and_then(|x| usize::try_from(x).ok())
                .ok_or_else(|| format!("{key} {v} is not a non-negative integer")),
        }
    };
    let text = |key: &str, default: Option<&str>| -> Result<String, String> {
        match ext.get(key) {
            None => default
                .map(str::to_string)
                .ok_or_else(|| format!("has no {key}")),
            Some(v) => v
                .as_str()
                .map(|s| s.chars().take(40).collect())
                .ok_or_else(|| format!("{key} {v} is not a string")),
        }
    };
    Ok(Compressed {
        buffer: int("buffer", None)?,
        offset: int("byteOffset", Some(0))?,
        length: int("byteLength", None)?,
        stride: int("byteStride", None)?,
        count: int("count", None)?,
        mode: text("mode", None)?,
        filter: text("filter", Some("NONE"))?,
    })
}

/// Decodes one compressed view: `count * byteStride` bytes, which must be the view's length.
fn decode_view(
    c: &Compressed,
    buffers: &[Cow<'_, [u8]>],
    view_length: usize,
) -> Result<Vec<u8>, String> {
    let data = buffers
        .get(c.buffer)
        .ok_or_else(|| format!("names missing buffer {}", c.buffer))?;
    let src = c
        .offset
        .checked_add(c.length)
        .and_then(|end| data.get(c.offset..end))
        .ok_or_else(|| {
            format!(
                "compressed range (offset {}, length {}) runs past the end of buffer {} ({} bytes)",
                c.offset,
                c.length,
                c.buffer,
                data.len()
            )
        })?;
    let size = c
        .count
        .checked_mul(c.stride)
        .filter(|&n| n == view_length)
        .ok_or_else(|| {
            format!(
                "count {} × byteStride {} is not the view's byteLength {view_length}",
                c.count, c.stride
            )
        })?;
    if size > MAX_DECODED_BYTES {
        return Err(format!(
            "decodes to {size} bytes, more than {MAX_DECODED_BYTES}"
        ));
    }
    let mut bytes = match (c.mode.as_str(), c.stride) {
        ("ATTRIBUTES", s) if s.is_multiple_of(4) => {
            with_words!(s / 4, decode_attributes, src, c.count)?
        }
        ("ATTRIBUTES", s) => {
            return Err(format!("ATTRIBUTES byte stride {s} is not a multiple of 4"));
        }
        ("TRIANGLES", _) if !c.count.is_multiple_of(3) => {
            return Err(format!(
                "TRIANGLES count {} is not a multiple of 3",
                c.count
            ));
        }
        ("TRIANGLES", 2) => meshopt::decode_index_buffer::<u16>(src, c.count)
            .map(|v| v.into_iter().flat_map(u16::to_ne_bytes).collect())
            .map_err(|e| format!("cannot decode: {e}"))?,
        ("TRIANGLES", 4) => meshopt::decode_index_buffer::<u32>(src, c.count)
            .map(|v| v.into_iter().flat_map(u32::to_ne_bytes).collect())
            .map_err(|e| format!("cannot decode: {e}"))?,
        ("INDICES", 2) => meshopt::decode_index_sequence::<u16>(src, c.count)
            .map(|v| v.into_iter().flat_map(u16::to_ne_bytes).collect())
            .map_err(|e| format!("cannot decode: {e}"))?,
        ("INDICES", 4) => meshopt::decode_index_sequence::<u32>(src, c.count)
            .map(|v| v.into_iter().flat_map(u32::to_ne_bytes).collect())
            .map_err(|e| format!("cannot decode: {e}"))?,
        (m @ ("TRIANGLES" | "INDICES"), s) => {
            return Err(format!("{m} byte stride {s} (expected 2 or 4)"));
        }
        (m, _) => return Err(format!("unknown mode '{m}'")),
    };
    match (c.filter.as_str(), c.mode.as_str(), c.stride) {
        ("NONE", _, _) => {}
        (_, m, _) if m != "ATTRIBUTES" => {
            return Err(format!(
                "filter {} on mode {m} (filters apply to ATTRIBUTES)",
                c.filter
            ));
        }
        ("OCTAHEDRAL", _, 4) => {
            let mut q = quads(&bytes, |b| i8::from_ne_bytes([b[0]]));
            meshopt::decode_filter_oct(&mut q);
            bytes = q.into_iter().flatten().flat_map(i8::to_ne_bytes).collect();
        }
        ("OCTAHEDRAL", _, 8) => {
            let mut q = i16_quads(&bytes);
            meshopt::decode_filter_oct(&mut q);
            bytes = from_i16_quads(q);
        }
        ("QUATERNION", _, 8) => {
            let mut q = i16_quads(&bytes);
            meshopt::decode_filter_quat(&mut q);
            bytes = from_i16_quads(q);
        }
        ("EXPONENTIAL", _, s) => with_words!(s / 4, exp_filter, &mut bytes)?,
        (f @ ("OCTAHEDRAL" | "QUATERNION"), _, s) => {
            return Err(format!("filter {f} with byte stride {s}"));
        }
        (f, _, _) => return Err(format!("unknown filter '{f}'")),
    }
    Ok(bytes)
}

/// Decodes every compressed view of `doc`: view index → its bytes.
///
/// # Errors
/// [`ImportError::BufferView`] naming the view, for a malformed extension object, a
/// compressed range outside its buffer, a size that is not the view's, a mode, stride or
/// filter the extension does not define, or data the decoder rejects.
pub(super) fn decode_views(
    doc: &::gltf::Document,
    buffers: &[Cow<'_, [u8]>],
    file: &str,
) -> Result<HashMap<usize, Vec<u8>>, ImportError> {
    let mut out = HashMap::new();
    let mut total = 0usize;
    for view in doc.views() {
        let Some(ext) = view.extensions().and_then(|e| e.get(NAME)) else {
            continue;
        };
        let err = |reason: String| ImportError::BufferView {
            file: file.to_string(),
            view: view.index(),
            reason: format!("{NAME}: {reason}"),
        };
        let c = parse(ext).map_err(err)?;
        let bytes = decode_view(&c, buffers, view.length()).map_err(err)?;
        total = total.saturating_add(bytes.len());
        if total > MAX_DECODED_BYTES {
            return Err(err(format!(
                "the file decodes to more than {MAX_DECODED_BYTES} bytes"
            )));
        }
        out.insert(view.index(), bytes);
    }
    Ok(out)
}
