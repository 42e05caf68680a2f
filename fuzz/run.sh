#!/usr/bin/env bash
# Seeds fuzz/corpus/gltf_import from the sample files in fixtures/assets/gltf, then fuzzes the glTF importer for
# $1 seconds (default 300): with libFuzzer when `cargo fuzz` works here (nightly, or stable
# with RUSTC_BOOTSTRAP=1), otherwise with the plain mutation harness on stable.
set -euo pipefail
cd "$(dirname "$0")"
secs="${1:-300}"
mkdir -p corpus/gltf_import
cp ../fixtures/assets/gltf/*.glb corpus/gltf_import/
if command -v cargo-fuzz >/dev/null && RUSTC_BOOTSTRAP=1 cargo fuzz build gltf_import >/dev/null 2>&1; then
    RUSTC_BOOTSTRAP=1 cargo fuzz run gltf_import corpus/gltf_import -- -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10
else
    cargo run --release --no-default-features --bin gltf_import -- --seconds "$secs"
fi
