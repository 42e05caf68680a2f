//! The OBJ reader of the `rbf` example: positions from the `v` lines in file order, the file
//! validated by `tobj` (`single_index: false`, no merging or reordering).
//!
//! tobj's multi-index mode renumbers positions in order of first reference by a face and drops
//! unreferenced ones, so positions are taken from the `v` lines themselves and every position
//! tobj returns is checked to be one of them. This module uses only `std`, `glam` and `tobj`
//! (the fuzz target `obj_read` includes it by path).

use std::collections::HashSet;
use std::io::Cursor;

use glam::Vec3;

/// An OBJ file's text and its vertex positions (the `v` lines, in file order).
pub struct Obj {
    /// The whole file, for writing the deformed mesh with the other lines unchanged.
    pub text: String,
    /// One position per `v` line.
    pub positions: Vec<Vec3>,
}

/// Checks that every index of a face line refers to an element already read: tobj 4.0
/// multiplies an out-of-range relative index before its bounds check (an arithmetic overflow
/// with overflow checks on, see `fuzz/README.md`).
fn check_face<'a>(
    items: impl Iterator<Item = &'a str>,
    counts: &[usize; 3],
    name: &str,
    line: usize,
) -> Result<(), String> {
    for item in items {
        for (k, part) in item.split('/').enumerate() {
            if part.is_empty() && k > 0 {
                continue;
            }
            let n = counts.get(k).copied().unwrap_or(0);
            let ok = match part.parse::<i64>() {
                Ok(i) if i > 0 => usize::try_from(i).is_ok_and(|i| i <= n),
                Ok(i) if i < 0 => usize::try_from(i.unsigned_abs()).is_ok_and(|i| i <= n),
                _ => false,
            };
            if !ok {
                return Err(format!(
                    "{name}:{line}: face index '{item}' refers to no element ({n} read so far)"
                ));
            }
        }
    }
    Ok(())
}

/// Reads OBJ `text`; `name` (a path, usually) prefixes every error message.
///
/// Material libraries are not loaded (an `mtllib` line is not an error).
///
/// # Errors
/// A one-line message naming `name` (and the line for a bad `v` line): a `v` line without three
/// numbers, a face index that refers to no element read before it, an OBJ that tobj refuses, a position from tobj that is not a `v` line, no vertices.
pub fn parse_obj(text: String, name: &str) -> Result<Obj, String> {
    let mut positions = Vec::new();
    // Elements seen so far: v, vt, vn (face indices are resolved against them).
    let mut counts = [0usize; 3];
    for (ln, line) in text.lines().enumerate() {
        let mut it = line.split_whitespace();
        match it.next() {
            Some("v") => {}
            Some("vt") => {
                counts[1] += 1;
                continue;
            }
            Some("vn") => {
                counts[2] += 1;
                continue;
            }
            Some("f") => {
                check_face(it, &counts, name, ln + 1)?;
                continue;
            }
            _ => continue,
        }
        counts[0] += 1;
        let mut c = [0.0f32; 3];
        for x in &mut c {
            *x = it
                .next()
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| format!("{name}:{}: bad vertex line '{line}'", ln + 1))?;
        }
        positions.push(Vec3::from(c));
    }
    let opts = tobj::LoadOptions {
        single_index: false,
        triangulate: false,
        ignore_points: true,
        ignore_lines: true,
    };
    let (models, _) = tobj::load_obj_buf(&mut Cursor::new(text.as_bytes()), &opts, |_| {
        Err(tobj::LoadError::OpenFileFailed)
    })
    .map_err(|e| format!("{name}: tobj: {e}"))?;
    let known: HashSet<[u32; 3]> = positions
        .iter()
        .map(|p| p.to_array().map(f32::to_bits))
        .collect();
    for m in &models {
        for p in m.mesh.positions.chunks_exact(3) {
            if !known.contains(&[p[0].to_bits(), p[1].to_bits(), p[2].to_bits()]) {
                return Err(format!(
                    "{name}: tobj returned a position that is not a 'v' line of the file"
                ));
            }
        }
    }
    if positions.is_empty() {
        return Err(format!("{name}: no vertices"));
    }
    Ok(Obj { text, positions })
}
