#!/usr/bin/env bash
# Runs sinew-runtime's unit tests (default: the store's) under valgrind memcheck.
#
# Miri cannot run here (stable toolchain only). Where a nightly toolchain with Miri exists, run
#   cargo +nightly miri test -p sinew-runtime
# (add MIRIFLAGS=-Zmiri-many-seeds for more schedules; the rayon tests are slow under Miri:
#  `cargo +nightly miri test -p sinew-runtime store::` covers the unsafe code).
#
# Usage: runtime/scripts/memcheck.sh [TEST_FILTER]   (default filter: "store::")
set -euo pipefail
cd "$(dirname "$0")/../.."
filter="${1:-store::}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}"
bin=$(cargo test -p sinew-runtime --lib --no-run --message-format=json 2>/dev/null \
  | python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "sinew_runtime":
        print(m["executable"])' | tail -n1)
if [[ -z "$bin" ]]; then
  echo "memcheck.sh: could not find the sinew-runtime unit test binary" >&2
  exit 2
fi
echo "memcheck.sh: valgrind on $bin (filter: $filter)"
# Definite leaks and every memory error fail the run; rayon's global pool threads are still
# alive at exit ("possibly lost"/"still reachable"), which is expected and not an error.
exec valgrind --tool=memcheck --error-exitcode=1 --leak-check=full \
  --errors-for-leak-kinds=definite --show-leak-kinds=definite \
  "$bin" --test-threads=1 "$filter"
