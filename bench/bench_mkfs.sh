#!/bin/sh
# bench_mkfs.sh --- time mkfs.extref against stock mke2fs -t ext4.
#
# Usage: bench/bench_mkfs.sh [REPS]      (default 3; env REPS, SIZES too)
#
# Each run formats a fresh sparse file (truncate -s SIZE) in a temporary
# directory with "mke2fs -q -F -t ext4 FILE SIZE" and with
# "mkfs.extref -q -F FILE SIZE" (same size, mke2fs's default ext4 features
# plus shared_blocks and the empty tree), and prints the mean wall-clock
# seconds of each and their ratio.
#
# The binary is $EXTREF_BUILD_DIR/mkfs/mkfs.extref, default the repository
# root (the directory above this script), as in the tests.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
build_dir=${EXTREF_BUILD_DIR:-$(dirname "$here")}
mkfs_extref=$build_dir/mkfs/mkfs.extref
reps=${1:-${REPS:-3}}
sizes=${SIZES:-"1G 1T"}

if [ ! -x "$mkfs_extref" ]; then
	echo "bench_mkfs.sh: $mkfs_extref not found: run make first" >&2
	exit 1
fi
command -v mke2fs >/dev/null 2>&1 || {
	echo "bench_mkfs.sh: mke2fs not found" >&2; exit 1; }
case $reps in
''|*[!0-9]*|0) echo "bench_mkfs.sh: REPS must be a positive integer" >&2; exit 1;;
esac

tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench_mkfs.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

now() { date +%s.%N; }

# time_one SIZE CMD...: format a fresh sparse file, print elapsed seconds.
time_one() {
	size=$1; shift
	img=$tmp/img
	rm -f "$img"
	truncate -s "$size" "$img"
	sync
	t0=$(now)
	if ! "$@" "$img" "$size" >"$tmp/out" 2>&1; then
		echo "bench_mkfs.sh: failed: $* $img $size" >&2
		cat "$tmp/out" >&2
		exit 1
	fi
	t1=$(now)
	rm -f "$img"
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f\n", b - a }'
}

# mean_of SIZE CMD...: mean over $reps runs.
mean_of() {
	size=$1; shift
	total=0
	i=0
	while [ "$i" -lt "$reps" ]; do
		t=$(time_one "$size" "$@")
		total=$(awk -v a="$total" -v b="$t" 'BEGIN { printf "%.4f", a + b }')
		i=$((i + 1))
	done
	awk -v a="$total" -v n="$reps" 'BEGIN { printf "%.4f", a / n }'
}

echo "mkfs.extref: $mkfs_extref"
echo "$("$mkfs_extref" -V 2>&1 | head -n 1)"
echo "mke2fs:      $(mke2fs -V 2>&1 | head -n 1)"
echo "repetitions: $reps (mean wall-clock seconds; fresh sparse file each run)"
echo
printf '%-6s %12s %14s %8s\n' size mke2fs_s mkfs.extref_s ratio
for size in $sizes; do
	a=$(mean_of "$size" mke2fs -q -F -t ext4)
	b=$(mean_of "$size" "$mkfs_extref" -q -F)
	r=$(awk -v a="$a" -v b="$b" 'BEGIN { if (a > 0) printf "%.2f", b / a; else print "n/a" }')
	printf '%-6s %12s %14s %8s\n' "$size" "$a" "$b" "$r"
done
