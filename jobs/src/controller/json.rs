//! The JSON form of [`RawController`] (feature `json`): the serde schema of the `Raw*` types,
//! field names as in Rust, enums in snake case (docs/controller.md shows a full file).

use super::{ControllerError, RawController};
use serde_json::Value;

impl RawController {
    /// Parses a JSON description. Unknown fields are refused, so that a misspelt key is an
    /// error rather than a default, and so is any number that does not fit an `f32`: it
    /// would read as an infinite `f32` (or an `f64` no controller value can use).
    ///
    /// # Errors
    /// [`ControllerError::Json`] with serde_json's message (what was expected, line and
    /// column), or naming the path of a number out of range (`layers[0].weight`).
    pub fn from_json(text: &str) -> Result<Self, ControllerError> {
        let json = |e: serde_json::Error| ControllerError::Json {
            message: e.to_string(),
        };
        // Parsed first as a tree only to find numbers out of range; the typed parse below
        // gives every other error with its line and column.
        let tree: Value = serde_json::from_str(text).map_err(json)?;
        if let Some((path, n)) = number_out_of_range(&tree, &mut String::new()) {
            return Err(ControllerError::Json {
                message: format!("{path}: the number {n:e} does not fit an f32 (±3.4e38)"),
            });
        }
        serde_json::from_str(text).map_err(json)
    }

    /// Writes the description as pretty-printed JSON.
    ///
    /// # Errors
    /// [`ControllerError::Json`] when a value cannot be written: serde_json writes a NaN or
    /// infinite number as `null`, so the text is read back and must give this description.
    pub fn to_json(&self) -> Result<String, ControllerError> {
        let text = serde_json::to_string_pretty(self).map_err(|e| ControllerError::Json {
            message: e.to_string(),
        })?;
        let unwritable = |why: String| ControllerError::Json {
            message: format!(
                "the description has a NaN or infinite number, which JSON cannot hold: {why}"
            ),
        };
        match Self::from_json(&text) {
            Ok(back) if back == *self => Ok(text),
            Ok(_) => Err(unwritable(
                "the text reads back as another description".into(),
            )),
            Err(e) => Err(unwritable(e.to_string())),
        }
    }
}

/// The path and value of the first number in `v` that rounds to an infinite `f32`.
fn number_out_of_range(v: &Value, path: &mut String) -> Option<(String, f64)> {
    match v {
        Value::Number(n) => n.as_f64().filter(|&x| !(x as f32).is_finite()).map(|x| {
            (
                if path.is_empty() {
                    "the file".into()
                } else {
                    path.clone()
                },
                x,
            )
        }),
        Value::Array(items) => items.iter().enumerate().find_map(|(i, item)| {
            let len = path.len();
            path.push_str(&format!("[{i}]"));
            let found = number_out_of_range(item, path);
            path.truncate(len);
            found
        }),
        Value::Object(fields) => fields.iter().find_map(|(key, item)| {
            let len = path.len();
            if !path.is_empty() {
                path.push('.');
            }
            path.push_str(key);
            let found = number_out_of_range(item, path);
            path.truncate(len);
            found
        }),
        Value::Null | Value::Bool(_) | Value::String(_) => None,
    }
}
