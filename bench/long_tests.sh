#!/bin/bash
# long_tests.sh --- the test runs left out of make check (which stays
# within 15 minutes on 2 cores): the files marked long (-m long), then
# the fuzzers run longer than make check runs them, and the crash sweeps
# at every write point (EXTREF_CRASH_FULL=1).
#
# Usage: bash bench/long_tests.sh [PYTEST-ARGS...]
#   EXTREF_BUILD_DIR   the build to test (default: build-test, as
#                      scripts/test makes it)
#   EXTREF_FUZZ_SEEDS  seeds of tests/test_fuzz.py (default here 2000)
#   EXTREF_LIBFUZZER_SECONDS  seconds per libFuzzer target (default here 60)
set -euo pipefail
cd "$(dirname "$0")/.."
export EXTREF_BUILD_DIR=${EXTREF_BUILD_DIR:-$PWD/build-test}
[ -x "$EXTREF_BUILD_DIR/debug/debugfs.extref" ] || {
	echo "long_tests.sh: no build in $EXTREF_BUILD_DIR: run scripts/test first" >&2
	exit 1
}
/usr/bin/python3 -m pytest -q --durations=10 -m long "$@" tests
EXTREF_FUZZ_SEEDS=${EXTREF_FUZZ_SEEDS:-2000} \
EXTREF_LIBFUZZER_SECONDS=${EXTREF_LIBFUZZER_SECONDS:-60} \
	/usr/bin/python3 -m pytest -q --durations=10 "$@" \
	tests/test_fuzz.py tests/test_libfuzzer.py
EXTREF_CRASH_FULL=1 /usr/bin/python3 -m pytest -q --durations=10 "$@" \
	tests/test_crash.py tests/test_crash_txn.py tests/test_split_txn.py
