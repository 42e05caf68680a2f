//! Importers that turn files into `Raw*` assets (glTF 2.0).
