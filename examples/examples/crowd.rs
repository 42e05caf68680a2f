//! The main job: a crowd of animated characters (filled in by the crowd issue).
fn main() {}
