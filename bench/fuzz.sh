#!/bin/bash
# bench/fuzz.sh --- long runs of the libFuzzer targets of fuzz/.
#
# Usage: bash bench/fuzz.sh [SECONDS] [TARGET...]
#
# Runs each target (default: all, fuzz/fuzz_*.c) for SECONDS (default
# 600) under ASan+UBSan, one after the other (JOBS=N runs N targets at
# once), from its seeds (fuzz/seeds) and its own corpus, kept between
# runs in fuzz/corpus/TARGET (CORPUS=DIR elsewhere) so that each run
# starts where the last stopped.  Inputs that crash, leak, hang (over
# TIMEOUT s, default 20) or pass 2 GiB go to fuzz/crashes/TARGET/; each
# such input, minimised with
#
#   fuzz/bin/fuzz_TARGET -minimize_crash=1 -runs=10000 INPUT
#
# then goes into fuzz/regress/TARGET/, which tests/test_libfuzzer.py
# replays in make check.  Needs a build configured with fuzzing
# (./configure --enable-fuzzing: clang).  FUZZ_FLAGS adds libFuzzer
# options (e.g. FUZZ_FLAGS=-use_value_profile=1).  Prints one line per
# target: executions, coverage, corpus size, and the crash files.
# Exits 1 when some target crashed.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

SECONDS_PER=${1:-600}
shift || true
TIMEOUT=${TIMEOUT:-20}
JOBS=${JOBS:-1}
CORPUS=${CORPUS:-$ROOT/fuzz/corpus}
CRASHES=$ROOT/fuzz/crashes

if ! grep -q '^ENABLE_FUZZING = yes$' Makefile 2>/dev/null; then
	echo "bench/fuzz.sh: configure with --enable-fuzzing (needs clang)" >&2
	exit 2
fi
make -s -j2 fuzz || exit 2

if [ $# -gt 0 ]; then
	targets="$*"
else
	targets=$(ls fuzz/fuzz_*.c | sed 's|fuzz/fuzz_||; s|\.c$||')
fi

seeds_of() {
	case $1 in
	shell) echo "$ROOT/fuzz/seeds/shell 512" ;;
	archive) echo "$ROOT/fuzz/seeds/archive 16384" ;;
	archive_acl) echo "$ROOT/fuzz/seeds/archive_acl 16384" ;;
	quota) echo "$ROOT/fuzz/seeds/quota 65536" ;;
	*) echo "$ROOT/fuzz/seeds/image 65536" ;;
	esac
}

run_one() {
	local t=$1 seeds max_len log rc
	read -r seeds max_len <<<"$(seeds_of "$t")"
	mkdir -p "$CORPUS/$t" "$CRASHES/$t"
	log=$CRASHES/$t.log
	ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	"fuzz/bin/fuzz_$t" -max_total_time="$SECONDS_PER" \
		-timeout="$TIMEOUT" -rss_limit_mb=2048 -max_len="$max_len" \
		-close_fd_mask=3 -print_final_stats=1 ${FUZZ_FLAGS:-} \
		-artifact_prefix="$CRASHES/$t/" \
		"$CORPUS/$t" "$seeds" >"$log" 2>&1
	rc=$?
	printf '%-8s exit %-3s %s  corpus %s  crashes: %s\n' "$t" "$rc" \
		"$(grep -E '^#[0-9]+' "$log" | tail -1 |
		   awk '{print $1, $3, $4, $5, $6}')" \
		"$(ls "$CORPUS/$t" | wc -l)" \
		"$(ls "$CRASHES/$t" | tr '\n' ' ')"
	return $rc
}

status=0
running=0
for t in $targets; do
	if [ ! -x "fuzz/bin/fuzz_$t" ]; then
		echo "bench/fuzz.sh: no target fuzz_$t" >&2
		status=1
		continue
	fi
	run_one "$t" &
	running=$((running + 1))
	if [ "$running" -ge "$JOBS" ]; then
		wait -n || status=1
		running=$((running - 1))
	fi
done
while [ "$running" -gt 0 ]; do
	wait -n || status=1
	running=$((running - 1))
done
exit $status
