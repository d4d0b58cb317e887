#!/bin/bash
# bench_txn.sh --- the journal's transactions at the scale of a cp -r.
#
# Usage: bash bench/bench_txn.sh [REPS]   (default 3; env REPS, TREE, NFILES)
#
# Run as root (loop mounts).  Everything is written under the benchmark's
# own temporary directory.
#
# 1. reflink -r of a copy of TREE (default /usr/share/doc) inside an image
#    made with mkfs.extref -d (4 KiB blocks), against cp -a --reflink=always
#    of the same tree on a loop-mounted XFS (mkfs.xfs -m reflink=1) made
#    the same way, followed by sync (the kernel's writes are durable only
#    then; debugfs.extref's are at exit).  Interleaved, REPS repetitions on
#    fresh copies of both images, min and median, ratio of the medians.
#    fsyncs (fsync + fdatasync + sync_file_range + syncfs) of the
#    debugfs.extref run are counted with strace -f -c, once.
# 2. The same for a tree of NFILES (default 100000) small files, once each
#    (the XFS side is given the same tree).
# 3. mkfs.extref --convert --dedup=block of an image made with
#    mke2fs -t ext4 -d TREE, against mkfs.extref -d TREE --dedup=block of the
#    same tree: times (min, median, ratio) and fsyncs of --convert.
#
# Targets (issue 11): 1. at most 1.0x and at most 10 fsyncs; 3. at most
# 1.2x and at most 10 fsyncs.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
build=${EXTREF_BUILD_DIR:-$(dirname "$here")}
mkfs=$build/mkfs/mkfs.extref
dbg=$build/debug/debugfs.extref
reps=${1:-${REPS:-3}}
tree=${TREE:-/usr/share/doc}
nfiles=${NFILES:-100000}

for b in "$mkfs" "$dbg"; do
	[ -x "$b" ] || { echo "bench_txn.sh: $b not found: run make" >&2; exit 1; }
done
for t in mkfs.xfs strace mke2fs; do
	command -v $t >/dev/null || { echo "bench_txn.sh: needs $t" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "bench_txn.sh: run as root (loop mounts)" >&2; exit 1; }

tmp=$(mktemp -d /var/tmp/bench_txn.XXXXXX)
mnt=$tmp/mnt
mkdir -p "$mnt"
cleanup() {
	mountpoint -q "$mnt" && umount "$mnt"
	rm -rf "$tmp"
}
trap cleanup EXIT

now() { echo "${EPOCHREALTIME/./}"; }		# microseconds
stats() {	# name, then times in microseconds: min and median in seconds
	local name=$1; shift
	sort -n <<<"$(printf '%s\n' "$@")" | awk -v n="$name" '
		{ v[NR] = $1 } END {
		  m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		  printf "%-34s min %8.3f s  median %8.3f s\n", n, v[1] / 1e6, m / 1e6
		  print m > "/dev/stderr" }' 2>"$tmp/median.$name"
}
median() { cat "$tmp/median.$1"; }
fsyncs() {	# count the sync calls of a command
	strace -f -c -e trace=fsync,fdatasync,sync_file_range,syncfs \
		-o "$tmp/strace.out" "$@" >/dev/null 2>&1 || true
	awk '$NF ~ /^(fsync|fdatasync|sync_file_range|syncfs)$/ { n += $4 }
	     END { print n + 0 }' "$tmp/strace.out"
}

# the XFS image and the extref image, each holding the tree src as /t
# (src is the only entry of its parent directory)
make_sides() {	# src, size
	local src=$1 size=$2
	rm -f "$tmp/x.img" "$tmp/e.img"
	truncate -s "$size" "$tmp/x.img"
	mkfs.xfs -q -m reflink=1 "$tmp/x.img"
	mount -o loop "$tmp/x.img" "$mnt"
	cp -a "$src" "$mnt/t"
	umount "$mnt"
	# inodes for the tree and its copy
	local n; n=$(find "$src" | wc -l)
	"$mkfs" -q --dedup=none -b 4096 -N $(( 2 * n + 1024 )) -d "$(dirname "$src")" \
		"$tmp/e.img" "$size"
}

run_xfs() {
	mount -o loop "$tmp/xr.img" "$mnt"
	local t0; t0=$(now)
	cp -a --reflink=always "$mnt/t" "$mnt/t2"
	sync
	echo $(( $(now) - t0 ))
	umount "$mnt"
}

run_extref() {
	local t0; t0=$(now)
	"$dbg" -w -R "reflink -r /t /t2" "$tmp/er.img" >/dev/null
	echo $(( $(now) - t0 ))
}

compare_reflink() {	# label, src tree, image size
	local label=$1 src=$2 size=$3 xs=() es=() i
	make_sides "$src" "$size"
	for i in $(seq 1 "$reps"); do
		cp --sparse=always "$tmp/x.img" "$tmp/xr.img"
		cp --sparse=always "$tmp/e.img" "$tmp/er.img"
		if (( i % 2 )); then
			xs+=("$(run_xfs)"); es+=("$(run_extref)")
		else
			es+=("$(run_extref)"); xs+=("$(run_xfs)")
		fi
		e2fsck -fn "$tmp/er.img" >/dev/null
	done
	echo "== $label"
	stats "xfs-$label" "${xs[@]}"
	stats "extref-$label" "${es[@]}"
	awk -v a="$(median "extref-$label")" -v b="$(median "xfs-$label")" \
		'BEGIN { printf "ratio extref/xfs (medians)          %.2fx\n", a / b }'
	cp --sparse=always "$tmp/e.img" "$tmp/er.img"
	echo "fsyncs of debugfs.extref reflink -r: $(fsyncs "$dbg" -w -R "reflink -r /t /t2" "$tmp/er.img")"
}

# 1. the tree, as /t in both images
mkdir -p "$tmp/src"
cp -a "$tree" "$tmp/src/t"
compare_reflink "tree" "$tmp/src/t" 1G

# 2. many small files
mkdir -p "$tmp/many/t"
for d in $(seq 0 99); do
	mkdir "$tmp/many/t/d$d"
	for f in $(seq 0 $(( nfiles / 100 - 1 ))); do
		echo "$d/$f" > "$tmp/many/t/d$d/f$f"
	done
done
compare_reflink "${nfiles}files" "$tmp/many/t" 2G

# 3. --convert against -d, both --dedup=block
cs=() ds=()
for i in $(seq 1 "$reps"); do
	rm -f "$tmp/c.img" "$tmp/d.img"
	mke2fs -q -t ext4 -b 4096 -d "$tmp/src" "$tmp/c.img" 1G
	t0=$(now); "$mkfs" -q --convert --dedup=block "$tmp/c.img"; cs+=($(( $(now) - t0 )))
	t0=$(now); "$mkfs" -q -b 4096 -d "$tmp/src" --dedup=block "$tmp/d.img" 1G; ds+=($(( $(now) - t0 )))
done
echo "== convert"
stats "convert-dedup-block" "${cs[@]}"
stats "d-dedup-block" "${ds[@]}"
awk -v a="$(median convert-dedup-block)" -v b="$(median d-dedup-block)" \
	'BEGIN { printf "ratio convert/-d (medians)          %.2fx\n", a / b }'
rm -f "$tmp/c.img"
mke2fs -q -t ext4 -b 4096 -d "$tmp/src" "$tmp/c.img" 1G
echo "fsyncs of --convert --dedup=block: $(fsyncs "$mkfs" -q --convert --dedup=block "$tmp/c.img")"
