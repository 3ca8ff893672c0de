#!/usr/bin/env bash
# The C reader under AddressSanitizer and UBSan (gcc): build pitwatch/events/_native.c
# (with the store's part it includes, pitwatch/store/native.c) instrumented into a
# directory of its own (the tree's build is not touched), then run
# the C reader's unit tests and the differential fuzz (tests/fuzz/differential.py)
# against it, for SECONDS (default 120). Any sanitizer report, or a divergence from
# fastavro, fails the run.
#   tests/fuzz/sanitize.sh [SECONDS] [SEED]
set -euo pipefail
cd "$(dirname "$0")/../.."
SECONDS_BUDGET=${1:-120}
SEED=${2:-$(date +%s)}
PY=.venv/bin/python
CC=${CC:-gcc}

OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
SUFFIX=$($PY -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
INCLUDE=$($PY -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
SO="$OUT/_native$SUFFIX"
$CC -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
    -fno-sanitize-recover=undefined -Wall -Wextra -Wno-unused-parameter \
    -Wno-missing-field-initializers -shared -fPIC -I "$INCLUDE" \
    pitwatch/events/_native.c -o "$SO"

# Python is not instrumented: ASan's runtime must be loaded first. Leaks are Python's.
export LD_PRELOAD="$($CC -print-file-name=libasan.so) $($CC -print-file-name=libubsan.so)"
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:halt_on_error=1:quarantine_size_mb=64
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export PITWATCH_NATIVE="$SO"
export PYTHONMALLOC=malloc  # ASan sees every object's memory, not pymalloc's arenas

echo "sanitized build: $SO"
$PY tests/fuzz/run_tests.py -q -x -p no:cacheprovider tests/unit/test_native.py
$PY tests/fuzz/differential.py --seconds "$SECONDS_BUDGET" --seed "$SEED"
