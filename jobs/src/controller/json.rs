//! The JSON form of [`RawController`] (feature `json`): the serde schema of the `Raw*` types,
//! field names as in Rust, enums in snake case (docs/controller.md shows a full file).

use super::{ControllerError, RawController};

impl RawController {
    /// Parses a JSON description. Unknown fields are refused, so that a misspelt key is an
    /// error rather than a default.
    ///
    /// # Errors
    /// [`ControllerError::Json`] with serde_json's message (what was expected, line and
    /// column).
    pub fn from_json(text: &str) -> Result<Self, ControllerError> {
        serde_json::from_str(text).map_err(|e| ControllerError::Json {
            message: e.to_string(),
        })
    }

    /// Writes the description as pretty-printed JSON.
    ///
    /// # Errors
    /// [`ControllerError::Json`] when a value cannot be written (a NaN or infinite number).
    pub fn to_json(&self) -> Result<String, ControllerError> {
        serde_json::to_string_pretty(self).map_err(|e| ControllerError::Json {
            message: e.to_string(),
        })
    }
}
