#!/bin/bash
# bench_mkfs.sh --- time mkfs.extref against stock mke2fs -t ext4.
#
# Usage: bash bench/bench_mkfs.sh [REPS]   (default 5; env REPS, SIZES too)
#
# For each size (default "1G 1T") and each repetition, both tools format a
# fresh sparse file (truncate -s SIZE, in the benchmark's own temporary
# directory) one right after the other, the order alternating between
# repetitions so neither side always runs on a warmer machine:
#
#   mke2fs       mke2fs -q -F -t ext4 FILE SIZE
#   mkfs.extref  mkfs.extref -q -F FILE SIZE
#
# mkfs.extref runs the same mke2fs itself (with a mke2fs.conf of its own,
# Debian's, which we also hand to the mke2fs side through MKE2FS_CONFIG so
# both lay out the same geometry; checked below on the first repetition),
# then opens the new image and adds shared_blocks and the empty tree.
# Both sides write through the page cache and fsync at close (libext2fs's
# unix I/O manager flushes on close).
#
# Times are seconds.  With bench/cpu_time built (make), each command runs
# under it: the wall clock from just before its spawn to the end of its
# wait (process start included, bash's own fork not), and its processor
# time, user plus system, mke2fs included for mkfs.extref (getrusage of
# the children).  The processor time is what the load of a shared
# machine (other jobs' I/O: fsync waits) changes least.  Without it, the
# wall clock from bash's EPOCHREALTIME around the command, and no
# processor time.  Printed: min and median of each side and the ratio of
# the medians (mkfs.extref / mke2fs), for the wall clock and for the
# processor time; every raw time is printed too.
#
# The binary is $EXTREF_BUILD_DIR/mkfs/mkfs.extref, default the repository
# root (the directory above this script), as in the tests.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
build_dir=${EXTREF_BUILD_DIR:-$(dirname "$here")}
mkfs_extref=$build_dir/mkfs/mkfs.extref
cpu_time=$build_dir/bench/cpu_time
reps=${1:-${REPS:-5}}
sizes=${SIZES:-"1G 1T"}

if [ ! -x "$mkfs_extref" ]; then
	echo "bench_mkfs.sh: $mkfs_extref not found: run make first" >&2
	exit 1
fi
command -v mke2fs >/dev/null 2>&1 || {
	echo "bench_mkfs.sh: mke2fs not found" >&2; exit 1; }
case $reps in
''|*[!0-9]*|0|1|2) echo "bench_mkfs.sh: REPS must be an integer >= 3" >&2
	exit 1;;
esac

tmp=$(mktemp -d "${TMPDIR:-/var/tmp}/bench_mkfs.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

# The configuration mkfs.extref hands its mke2fs, taken from the source.
sed -n '/^static const char mke2fs_conf\[\] =/,/;$/p' \
	"$(dirname "$here")/mkfs/mke2fs_run.c" |
	sed -n 's/^[[:space:]]*"\(.*\)"[;]*$/\1/p' | tr -d '\n' |
	{ IFS= read -r c || true; printf '%b' "$c"; } >"$tmp/mke2fs.conf"
grep -q '^\[defaults\]' "$tmp/mke2fs.conf" || {
	echo "bench_mkfs.sh: cannot read mke2fs_conf from mkfs/mke2fs_run.c" >&2
	exit 1; }

cpu=()
[ -x "$cpu_time" ] && cpu=("$cpu_time" "$tmp/cpu")
run_mke2fs() { MKE2FS_CONFIG=$tmp/mke2fs.conf "${cpu[@]}" mke2fs -q -F -t ext4 "$@"; }
run_extref() { "${cpu[@]}" "$mkfs_extref" -q -F "$@"; }

# time_one SIDE IMG SIZE CMD...: format a fresh sparse IMG; append the
# seconds to $tmp/SIDE.SIZE (wall) and $tmp/SIDE.cpu.SIZE (processor).
time_one() {
	local side=$1 img=$2 size=$3 t0 t1 wall c; shift 3
	rm -f "$img" "$tmp/cpu"
	truncate -s "$size" "$img"
	sync
	t0=$EPOCHREALTIME
	if ! "$@" "$img" "$size" >"$tmp/out" 2>&1; then
		echo "bench_mkfs.sh: failed: $* $img $size" >&2
		cat "$tmp/out" >&2
		exit 1
	fi
	t1=$EPOCHREALTIME
	if [ -s "$tmp/cpu" ]; then
		read -r wall c <"$tmp/cpu"
		printf '%.4f\n' "$c" >>"$tmp/$side.cpu.$size"
	else
		wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')
	fi
	printf '%.4f\n' "$wall" >>"$tmp/$side.$size"
}

# geometry IMG: the superblock fields that must agree between the sides.
geometry() {
	dumpe2fs -h "$1" 2>/dev/null |
		grep -E '^(Block count|Inode count|Block size|Inode size|Blocks per group|Inodes per group|Reserved GDT blocks|Journal size):'
}

# stats FILE: "min median" of the numbers in FILE.
stats() {
	sort -g "$1" | awk '{ v[NR] = $1 }
		END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		      printf "%.4f %.4f\n", v[1], m }'
}

echo "mkfs.extref: $mkfs_extref"
echo "$("$mkfs_extref" -V 2>&1 | head -n 1)"
echo "mke2fs:      $(mke2fs -V 2>&1 | head -n 1)"
echo "repetitions: $reps, interleaved (seconds; fresh sparse file each run)"
if [ ${#cpu[@]} = 0 ]; then
	echo "(bench/cpu_time not built: wall clock from bash, no processor time)"
fi
echo

for size in $sizes; do
	: >"$tmp/a.$size"
	: >"$tmp/b.$size"
	: >"$tmp/a.cpu.$size"
	: >"$tmp/b.cpu.$size"
	i=0
	while [ "$i" -lt "$reps" ]; do
		if [ $((i % 2)) = 0 ]; then
			time_one a "$tmp/a.img" "$size" run_mke2fs
			time_one b "$tmp/b.img" "$size" run_extref
		else
			time_one b "$tmp/b.img" "$size" run_extref
			time_one a "$tmp/a.img" "$size" run_mke2fs
		fi
		if [ "$i" = 0 ] && ! cmp -s <(geometry "$tmp/a.img") \
					   <(geometry "$tmp/b.img"); then
			echo "bench_mkfs.sh: $size: the two sides made different geometries:" >&2
			diff <(geometry "$tmp/a.img") <(geometry "$tmp/b.img") >&2 || true
			exit 1
		fi
		rm -f "$tmp/a.img" "$tmp/b.img"
		i=$((i + 1))
	done
	echo "$size mke2fs:      $(tr '\n' ' ' <"$tmp/a.$size")"
	echo "$size mkfs.extref: $(tr '\n' ' ' <"$tmp/b.$size")"
	if [ -s "$tmp/a.cpu.$size" ]; then
		echo "$size mke2fs cpu:      $(tr '\n' ' ' <"$tmp/a.cpu.$size")"
		echo "$size mkfs.extref cpu: $(tr '\n' ' ' <"$tmp/b.cpu.$size")"
	fi
done

# table SUFFIX TITLE: min, median and the ratio of the medians per size.
table() {
	local sfx=$1 amin amed bmin bmed r
	echo
	echo "$2"
	printf '%-5s %10s %10s %14s %14s %15s\n' size mke2fs_min mke2fs_med \
		extref_min extref_med ratio_of_medians
	for size in $sizes; do
		[ -s "$tmp/a$sfx.$size" ] || continue
		read -r amin amed < <(stats "$tmp/a$sfx.$size")
		read -r bmin bmed < <(stats "$tmp/b$sfx.$size")
		r=$(awk -v a="$amed" -v b="$bmed" \
			'BEGIN { if (a > 0) printf "%.2f", b / a; else print "n/a" }')
		printf '%-5s %10s %10s %14s %14s %15s\n' "$size" "$amin" \
			"$amed" "$bmin" "$bmed" "$r"
	done
}
table "" "wall clock:"
[ ${#cpu[@]} = 0 ] || table ".cpu" "processor time (user + system, mke2fs included):"
