#!/bin/bash
# bench/bench_fsck.sh --- fsck.extref against e2fsck -fn and xfs_repair -n.
#
# Builds four extref images with bench/fsck_bench (the C API, one
# process) and times, on each, the reference-count passes
# (fsck.extref -n -f -E no_e2fsck) against the stock e2fsck -fn, with the
# peak RSS and CPU time of each (bench/fsck_bench run: wait4) and the
# checker's bytes of memory per extent mapping (fsck_bench check: the
# checker run in-process, (peak RSS - RSS after opening) / mappings).
# The same files and clones are then made on XFS (reflink=1, loop mount,
# FICLONERANGE) and xfs_repair -n is timed side by side.
#
#   spread    NFILES files x PER single-block clones of pseudo-random
#             blocks of a SPREAD_SRC-block source (default 100,000 x 10 of
#             100,000 blocks: 1,000,000 shared mappings), 8 GiB image
#   big1t     BIG_FILES x PER clones the same way on a 1 TiB sparse image
#   hot       HOT_FILES x HOT_PER clones of one block (shared 10^6 ways)
#   distinct  HOT_FILES x HOT_PER clones of distinct blocks (10^6 shared
#             blocks, each mapped twice)
#   spread10m M10_FILES x M10_PER clones the same way as spread (default
#             10,000 x 1,000 of 100,000 blocks: 10^7 mappings), 16 GiB
#             image; not in the default CASES (its build takes 15-25
#             minutes)
#
# Usage: bash bench/bench_fsck.sh    (env: NFILES PER SPREAD_SRC BIG_FILES
#        HOT_FILES HOT_PER M10_FILES M10_PER REPS NO_XFS=1
#        CASES="spread big1t hot distinct", or with spread10m too;
#        IMGDIR=DIR keeps the extref images in DIR as NAME.img and uses
#        those there already, so that a second run skips the builds:
#        they are made with the sizes of the first run)
# Needs root for the XFS part (loop devices); without it, or without
# mkfs.xfs, that column says "-".  Times are wall-clock seconds over REPS
# (default 3, at least 3) runs; min and median are printed, and the ratio
# is of the medians.  fsck.extref and e2fsck run interleaved (one run of
# each in turn, so that drift in the machine's load hits both sides).
# What each side reads: fsck.extref and e2fsck read the ext4 image
# through the page cache, which the first (untimed) check warms;
# xfs_repair -f opens its image with O_DIRECT and so reads the disk on
# every run (its figures include that I/O; they are not interleaved).
set -euo pipefail
cd "$(dirname "$0")/.."
make -s bench/fsck_bench fsck/fsck.extref mkfs/mkfs.extref

NFILES=${NFILES:-100000}
PER=${PER:-10}
SPREAD_SRC=${SPREAD_SRC:-100000}
BIG_FILES=${BIG_FILES:-10000}
HOT_FILES=${HOT_FILES:-1000}
HOT_PER=${HOT_PER:-1000}
M10_FILES=${M10_FILES:-10000}
M10_PER=${M10_PER:-1000}
IMGDIR=${IMGDIR:-}
REPS=${REPS:-3}
[ "$REPS" -ge 3 ] || { echo "REPS must be at least 3" >&2; exit 2; }
CASES=${CASES:-"spread big1t hot distinct"}

tmp=$(mktemp -d "${TMPDIR:-/var/tmp}/bench_fsck.XXXXXX")
mnt=$tmp/mnt
loopdev=
cleanup() {
	set +e
	if mountpoint -q "$mnt" 2>/dev/null; then umount "$mnt"; fi
	if [ -n "$loopdev" ]; then losetup -d "$loopdev"; fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$mnt"

# measure OUT CMD...: run CMD, write "seconds peak_kib rc cpu_seconds" to
# OUT (bench/fsck_bench run: wall clock and CPU time from wait4, to the
# microsecond; the peak RSS from the same rusage).
measure() {
	local out=$1; shift
	bench/fsck_bench run "$out" "$@" >"$tmp/cmd.out" 2>&1 || true
}

# stats FILE: "min median maxpeak rc cpu_min cpu_median" of the
# "seconds peak_kib rc cpu_seconds" lines
stats() {
	awk '{ print $4 }' "$1" | sort -n >"$tmp/cpu"
	sort -n -k1,1 "$1" | awk -v cf="$tmp/cpu" '{ s[NR] = $1; if ($2 > m) m = $2;
		if ($3 != 0) rc = $3 }
		END { while ((getline x < cf) > 0) c[++nc] = x
		      med = (NR % 2) ? s[(NR + 1) / 2] : (s[NR / 2] + s[NR / 2 + 1]) / 2
		      cmed = (nc % 2) ? c[(nc + 1) / 2] : (c[nc / 2] + c[nc / 2 + 1]) / 2
		      printf "%.3f %.3f %d %d %.4f %.4f\n", s[1], med, m, rc + 0, c[1], cmed }'
}

# best CMD...: REPS runs of CMD -> "min median maxpeak rc"
best() {
	local i
	: >"$tmp/runs"
	for ((i = 0; i < REPS; i++)); do
		measure "$tmp/m" "$@"
		cat "$tmp/m" >>"$tmp/runs"
	done
	stats "$tmp/runs"
}

# pair OUT_A OUT_B -- CMD_A... -- CMD_B...: REPS interleaved runs of the
# two commands (A, B, A, B, ...); "min median maxpeak rc" of each to
# OUT_A and OUT_B.  One untimed run of each first warms the page cache.
pair() {
	local oa=$1 ob=$2 i; shift 3
	local -a a=() b=()
	while [ "$1" != -- ]; do a+=("$1"); shift; done
	shift
	b=("$@")
	"${a[@]}" >/dev/null 2>&1 || true
	"${b[@]}" >/dev/null 2>&1 || true
	: >"$tmp/runs_a"; : >"$tmp/runs_b"
	for ((i = 0; i < REPS; i++)); do
		measure "$tmp/m" "${a[@]}"; cat "$tmp/m" >>"$tmp/runs_a"
		[ "$(awk '{ print $3 }' "$tmp/m")" = 0 ] || cp "$tmp/cmd.out" "$tmp/fail_a"
		measure "$tmp/m" "${b[@]}"; cat "$tmp/m" >>"$tmp/runs_b"
		[ "$(awk '{ print $3 }' "$tmp/m")" = 0 ] || cp "$tmp/cmd.out" "$tmp/fail_b"
	done
	stats "$tmp/runs_a" >"$oa"
	stats "$tmp/runs_b" >"$ob"
}

kv() { # kv KEY LINE: value of KEY=... in LINE
	sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p" <<<"$2"
}

rows=()
notes=()

run_case() {
	local name=$1 size=$2 kind=$3 files=$4 per=$5 src=$6
	local img=$tmp/$name.img build chk ref e2 xr="- - 0 0 0 0" mappings
	echo "== $name: $files files x $per clones ($kind), source $src blocks, $size image" >&2
	[ -z "$IMGDIR" ] || img=$IMGDIR/$name.img
	if [ -n "$IMGDIR" ] && [ -s "$img" ]; then
		echo "   reusing $img" >&2
	else
		if [ "$size" = 1T ]; then	# mke2fs's default inode count
			mkfs/mkfs.extref -q -b 4096 "$img" "$size"
		else
			mkfs/mkfs.extref -q -b 4096 -N $((files + 100000)) "$img" "$size"
		fi
		build=$(bench/fsck_bench build "$img" "$kind" "$files" "$per" "$src")
		echo "   $build" >&2
		notes+=("$name build: $(kv total_s "$build") s for $(kv clone_mappings "$build") clones ($(kv clones_per_s "$build") clones/s, source write $(kv src_s "$build") s)")
	fi
	chk=$(bench/fsck_bench check "$img") || {
		echo "fsck_bench check found problems on $name: $chk" >&2; exit 1; }
	echo "   $chk" >&2
	mappings=$(kv mappings "$chk")
	pair "$tmp/ref" "$tmp/e2" -- fsck/fsck.extref -n -f -E no_e2fsck "$img" \
		-- e2fsck -fn "$img"
	ref=$(cat "$tmp/ref"); e2=$(cat "$tmp/e2")
	[ "$(awk '{ print $4 }' <<<"$ref")" = 0 ] || { echo "fsck.extref -n failed on $name:" >&2; cat "$tmp/fail_a" >&2; exit 1; }
	[ "$(awk '{ print $4 }' <<<"$e2")" = 0 ] || { echo "e2fsck -fn failed on $name:" >&2; cat "$tmp/fail_b" >&2; exit 1; }
	[ -n "$IMGDIR" ] || rm -f "$img"
	if [ -z "${NO_XFS:-}" ] && [ "$(id -u)" = 0 ] && command -v mkfs.xfs >/dev/null &&
	   command -v xfs_repair >/dev/null; then
		local ximg=$tmp/$name.xfs cl
		truncate -s "$size" "$ximg"
		mkfs.xfs -q -f -m reflink=1 -b size=4096 "$ximg"
		loopdev=$(losetup --find --show "$ximg")
		mount "$loopdev" "$mnt"
		cl=$(bench/fsck_bench clone-mnt "$mnt" "$kind" "$files" "$per" "$src")
		umount "$mnt"
		losetup -d "$loopdev"
		loopdev=
		echo "   xfs $cl" >&2
		notes+=("$name on XFS: $(kv clone_mappings "$cl") FICLONERANGE clones in $(kv total_s "$cl") s")
		xr=$(best xfs_repair -n -f "$ximg")
		[ "$(awk '{ print $4 }' <<<"$xr")" = 0 ] || { echo "xfs_repair -n failed on $name:" >&2; cat "$tmp/cmd.out" >&2; exit 1; }
		rm -f "$ximg"
	fi
	local rs rmed rm_ rcmed es emed em ecmed xs xmed xm
	read -r rs rmed rm_ _ _ rcmed <<<"$ref"
	read -r es emed em _ _ ecmed <<<"$e2"
	read -r xs xmed xm _ <<<"$xr"
	rows+=("$(awk -v n="$name" -v mp="$mappings" -v rs="$rs" -v rmed="$rmed" \
		-v es="$es" -v emed="$emed" -v rc="$rcmed" -v ec="$ecmed" \
		-v rm="$rm_" -v em="$em" -v bpm="$(kv bytes_per_mapping "$chk")" \
		-v ips="$(kv seconds "$chk")" -v xs="$xs" -v xmed="$xmed" -v xm="$xm" 'BEGIN {
		printf "%-9s %9d %7.3f %7.3f %7.3f %7.3f %6.2f %7.3f %7.3f %6.2f %8.3f %7.1f %7.1f %6.1f %7s %6s %7s %8s",
			n, mp, rs, rmed, es, emed, (emed > 0 ? rmed / emed : 0),
			rc, ec, (ec > 0 ? rc / ec : 0), ips,
			rm / 1024, em / 1024, (mp > 0 ? rm * 1024 / mp : 0), bpm,
			xs, xmed, (xs == "-" ? "-" : sprintf("%.1f", xm / 1024)) }')")
}

for c in $CASES; do
	case $c in
	spread)   run_case spread 8G spread "$NFILES" "$PER" "$SPREAD_SRC" ;;
	big1t)    run_case big1t 1T spread "$BIG_FILES" "$PER" "$SPREAD_SRC" ;;
	hot)      run_case hot 8G hot "$HOT_FILES" "$HOT_PER" 1 ;;
	distinct) run_case distinct 8G distinct "$HOT_FILES" "$HOT_PER" \
			$((HOT_FILES * HOT_PER)) ;;
	spread10m) run_case spread10m 16G spread "$M10_FILES" "$M10_PER" \
			"$SPREAD_SRC" ;;
	*) echo "unknown case $c" >&2; exit 2 ;;
	esac
done

echo "# fsck.extref -n -f -E no_e2fsck (refcount passes) vs e2fsck -fn vs xfs_repair -n -f"
echo "# seconds: wall clock over $REPS runs, min and median; fsck.extref and e2fsck"
echo "# interleaved, page cache warm; xfs_repair -f reads with O_DIRECT (from disk)."
echo "# ratio = median refcount / median e2fsck (target <= 0.5); ref_cpu, e2_cpu: median"
echo "# CPU seconds (user + system) of the same runs, cpu_r their ratio (what the load"
echo "# of a shared machine disturbs least); inproc_s: extref_fsck() in-process;"
echo "# MiB: peak RSS; RSS_B/map: fsck.extref's whole peak RSS / mappings;"
echo "# B/map: the checker's (peak RSS - RSS after open) / mappings, in-process (target <= 32)"
printf '%-9s %9s %7s %7s %7s %7s %6s %7s %7s %6s %8s %7s %7s %6s %7s %6s %7s %8s\n' image mappings \
	ref_min ref_med e2_min e2_med ratio ref_cpu e2_cpu cpu_r inproc_s ref_MiB e2_MiB \
	RSS_B/map B/map xfsr_min xfsr_med xfsr_MiB
for r in "${rows[@]}"; do echo "$r"; done
echo
for n in "${notes[@]}"; do echo "# $n"; done
