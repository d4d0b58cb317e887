#!/bin/bash
# bench/bench_small_change.sh --- one small new file written into a big
# image: debugfs.extref -w against stock debugfs -w, on copies of the same
# image (FORMAT.md section 11, "The stamp": debugfs.extref -w uses it
# by default; --verify forces the full proof).
#
# The image holds one file of 10^5 single-block extents (fsck_bench build
# distinct: 1 file x 10^5 clones of /src) and N reflinks of it, so
# (N + 1) x 10^5 extent mappings, N = 9 and 99: 10^6 and 10^7.  Each
# round writes a 3000-byte file under a new name, once with each tool
# (interleaved, each on its own copy), REPS rounds (default 5); printed:
# the medians, their ratio (target <= 1.5), and the same for an open that
# has to prove the counts in full (debugfs.extref --verify), for
# reference.  Wall-clock seconds, images in the page cache.
#
# Usage: bash bench/bench_small_change.sh   (env: REFLINKS="9 99", REPS,
#        EXTREF_BUILD_DIR: the build, default build/ or the source tree)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
. "$here/lib.sh"
build=$(bench_build "$root")
make -s -C "$build" bench/fsck_bench mkfs/mkfs.extref debug/debugfs.extref
mkfs=$build/mkfs/mkfs.extref
dbg=$build/debug/debugfs.extref

REFLINKS=${REFLINKS:-"9 99"}
REPS=${REPS:-5}
tmp=$(mktemp -d "${TMPDIR:-/var/tmp}/bench_small.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
head -c 3000 /dev/urandom > "$tmp/small"

# $(secs CMD...): the wall-clock seconds of CMD (its output discarded).
secs() {
	local t0=$EPOCHREALTIME
	"$@" >/dev/null 2>&1 || { echo "failed: $*" >&2; exit 1; }
	awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.4f", b - a }'
}
median() { tr ' ' '\n' | sort -g | awk '{ v[NR] = $1 }
	END { printf "%.4f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

printf "%10s %10s %10s %8s %12s %8s\n" mappings extref_s stock_s ratio \
	verify_s ratio
for n in $REFLINKS; do
	img=$tmp/base.img
	"$mkfs" -q -b 4096 "$img" 16G
	"$build/bench/fsck_bench" build "$img" distinct 1 100000 100000 >/dev/null
	for i in $(seq 1 "$n"); do echo "reflink /d0000/f0000 /r$i"; done |
		"$dbg" -w -f - "$img" >/dev/null
	maps=$(( (n + 1) * 100000 ))
	cp --sparse=always "$img" "$tmp/x.img"
	cp --sparse=always "$img" "$tmp/s.img"
	cp --sparse=always "$img" "$tmp/v.img"
	# one unmeasured round each: the page cache, and the stamp of a
	# session that proved the counts
	"$dbg" -w -R "write $tmp/small /w0" "$tmp/x.img" >/dev/null
	debugfs -w -R "write $tmp/small /w0" "$tmp/s.img" >/dev/null 2>&1
	"$dbg" -w -R "write $tmp/small /w0" "$tmp/v.img" >/dev/null
	x=() s=() v=()
	for r in $(seq 1 "$REPS"); do
		x+=("$(secs "$dbg" -w -R "write $tmp/small /w$r" "$tmp/x.img")")
		s+=("$(secs debugfs -w -R "write $tmp/small /w$r" "$tmp/s.img")")
		v+=("$(secs "$dbg" --verify -w -R "write $tmp/small /w$r" "$tmp/v.img")")
	done
	mx=$(echo "${x[*]}" | median)
	ms=$(echo "${s[*]}" | median)
	mv=$(echo "${v[*]}" | median)
	printf "%10s %10s %10s %8s %12s %8s\n" "$maps" "$mx" "$ms" \
		"$(awk -v a="$mx" -v b="$ms" 'BEGIN { printf "%.2f", a / b }')" \
		"$mv" "$(awk -v a="$mv" -v b="$ms" 'BEGIN { printf "%.2f", a / b }')"
	for f in x s v; do e2fsck -fn "$tmp/$f.img" >/dev/null 2>&1 ||
		{ echo "e2fsck -fn failed on the $f image" >&2; exit 1; }; done
	rm -f "$img" "$tmp"/[xsv].img
done
