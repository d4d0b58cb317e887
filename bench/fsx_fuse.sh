#!/bin/bash
# fsx_fuse.sh --- fstests' ltp/fsx on a file of an extref-fuse mount (issue 31),
# with clone range, dedupe range and copy range on (reflink and dedupe
# through the LD_PRELOAD shim, copy_file_range through FUSE itself), then
# fsck.extref -n and stock e2fsck -fn on the image.
#
# Usage: bash bench/fsx_fuse.sh [-N OPS] [-S SEED] [-o DIR] [-- FSX-OPTIONS]
#   -N OPS   operations (default 100000)
#   -S SEED  fsx's seed (default 1)
#   -o DIR   fsx's logs and the verdict (default WORKDIR/results-DATE)
#   -h, --help  this text
#   FSX-OPTIONS are passed on to fsx (e.g. -l 1048576 -o 131072)
# Environment: XFSTESTS_DIR (a built fstests tree, default
# /work/xfstests-src), EXTREF_BUILD_DIR (default: the repository's top; else
# the installed tools), WORKDIR (default /tmp/extref-fsx), SIZE (the image,
# default 1G), FUSE_OPTS (extref-fuse's -o options, e.g. commit=0).
#
# The sequence that found the stale block cache (docs/FSTESTS.md), replayed:
#   zcat bench/data/fsx-batch-loss.ops.gz > /tmp/loss.ops
#   bash bench/fsx_fuse.sh -S 4 -- -l 1048576 -o 131072 \
#       --replay-ops /tmp/loss.ops
# failed ("READ BAD DATA" at 0x446a9) before f2058e6.
#
# Fails when fsx fails, when fsx disabled clone, dedupe or copy range as
# unsupported, or when either checker finds anything wrong.  Needs /dev/fuse
# and fusermount3.
set -eu

usage() { sed -n '2,/^set -eu/{/^set -eu/d;s/^# \{0,1\}//;p}' "$0"; }

ops=100000 seed=1 out=
while [ $# -gt 0 ]; do
	case $1 in
	-h|--help) usage; exit 0 ;;
	-N) ops=$2; shift 2 ;;
	-S) seed=$2; shift 2 ;;
	-o) out=$2; shift 2 ;;
	--) shift; break ;;
	*) echo "fsx_fuse.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done

here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
xfst=${XFSTESTS_DIR:-/work/xfstests-src}
build=${EXTREF_BUILD_DIR:-$top}
work=${WORKDIR:-/tmp/extref-fsx}
size=${SIZE:-1G}

. "$here/lib.sh"
tool() { bench_tool "$@"; }
mkfs=$(tool mkfs.extref mkfs)
fsck=$(tool fsck.extref fsck)
server=$(tool extref-fuse fuse)
shim=$build/fuse/libextref-preload.so
[ -f "$shim" ] || shim=$(for d in /usr/local/lib /usr/lib /usr/lib/*-linux-gnu; do
	[ -f "$d/libextref-preload.so" ] && echo "$d/libextref-preload.so"; done | head -n1)
[ -n "$shim" ] || { echo "fsx_fuse.sh: libextref-preload.so not found" >&2; exit 1; }
fsx=$xfst/ltp/fsx
[ -x "$fsx" ] || { echo "fsx_fuse.sh: $fsx not found: build fstests (XFSTESTS_DIR)" >&2; exit 1; }

out=${out:-$work/results-$(date -u +%Y%m%dT%H%M%S)}
mkdir -p "$out" "$work/mnt"
out=$(cd "$out" && pwd)
img=$work/fsx.img mnt=$work/mnt

unmount() {
	if mountpoint -q "$mnt"; then fusermount3 -u "$mnt" 2>/dev/null || umount "$mnt"; fi
	for _ in $(seq 300); do flock -n -x "$img" true 2>/dev/null && break; sleep 0.1; done
}
trap unmount EXIT

unmount
rm -f "$img"
"$mkfs" -q "$img" "$size" >/dev/null
"$server" "$img" "$mnt" ${FUSE_OPTS:+-o "$FUSE_OPTS"}

verdict=0 start=$(date +%s)
echo "fsx: $ops operations, seed $seed, on $mnt/fsxfile ($img)" | tee "$out/verdict.txt"
LD_PRELOAD=$shim "$fsx" -N "$ops" -S "$seed" -P "$out" "$@" "$mnt/fsxfile" \
	>"$out/fsx.out" 2>&1 || verdict=$?
tail -n 5 "$out/fsx.out"
echo "fsx exit $verdict after $(( $(date +%s) - start ))s" | tee -a "$out/verdict.txt"
if grep -E "does not support (clone|dedupe|copy) range" "$out/fsx.out"; then
	echo "fsx_fuse.sh: an operation the run is for was disabled" | tee -a "$out/verdict.txt"
	verdict=1
fi
grep "disabling" "$out/fsx.out" | tee -a "$out/verdict.txt" || true
unmount

rc=0
"$fsck" -n "$img" >"$out/fsck.txt" 2>&1 || rc=$?
echo "fsck.extref -n exit $rc" | tee -a "$out/verdict.txt"
[ $rc = 0 ] || { verdict=1; cat "$out/fsck.txt"; }
rc=0
e2fsck -fn "$img" >"$out/e2fsck.txt" 2>&1 || rc=$?
echo "e2fsck -fn exit $rc" | tee -a "$out/verdict.txt"
[ $rc = 0 ] || { verdict=1; cat "$out/e2fsck.txt"; }
[ $verdict = 0 ] || cp --sparse=always "$img" "$out/fsx.img"
echo "verdict: $([ $verdict = 0 ] && echo pass || echo FAIL)" | tee -a "$out/verdict.txt"
exit $verdict
