//! Shared helpers for the sinew examples.
