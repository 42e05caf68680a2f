//! Code shared by the integration tests.

pub(crate) mod glb;
