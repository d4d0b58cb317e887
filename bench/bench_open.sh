#!/bin/bash
# bench/bench_open.sh --- what the verification of a read-write open costs.
#
# A read-write extref_fs_open verifies the tree against every extent
# mapping (the fsck core's read-only passes; FORMAT.md, "What a writer
# trusts").  For images of 10^4, 10^5 and 10^6 shared single-block
# mappings (bench/fsck_bench build, kind spread: NFILES files x 10 clones
# of pseudo-random blocks of a source of up to 10^5 blocks, 8 GiB image), prints the
# open time with the verification, without it (EXTREF_OPEN_TRUSTED, what
# mkfs and fsck use), read-only, the checker's own time on the image
# (fsck_bench check: extref_fsck -n in process) and the verification's
# cost per 10^6 mappings.  Wall-clock seconds, minimum of REPS (default 3), image in the
# page cache.
#
# Usage: bash bench/bench_open.sh   (env: SIZES="1000 10000 100000" files,
#        REPS)
set -euo pipefail
cd "$(dirname "$0")/.."
make -s bench/fsck_bench bench/open_bench mkfs/mkfs.extref

SIZES=${SIZES:-"1000 10000 100000"}
REPS=${REPS:-3}
PER=10

tmp=$(mktemp -d "${TMPDIR:-/var/tmp}/bench_open.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

kv() { sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p" <<<"$2"; }

printf "%10s %12s %12s %12s %10s %14s\n" mappings verified_s trusted_s \
	readonly_s fsck_n_s "s_per_1e6_map"
for files in $SIZES; do
	img=$tmp/o.img
	src=$(( files * PER < 100000 ? files * PER : 100000 ))
	mkfs/mkfs.extref -q -b 4096 -N $((files + 10000)) "$img" 8G
	bench/fsck_bench build "$img" spread "$files" $PER "$src" >/dev/null
	chk=$(bench/fsck_bench check "$img")
	m=$(kv mappings "$chk")
	r=$(bench/open_bench "$img" "$REPS")
	v=$(kv verified_s "$r"); t=$(kv trusted_s "$r"); ro=$(kv readonly_s "$r")
	printf "%10s %12s %12s %12s %10s %14s\n" "$m" "$v" "$t" "$ro" \
		"$(kv seconds "$chk")" \
		"$(awk -v v="$v" -v t="$t" -v m="$m" \
			'BEGIN { printf "%.3f", (v - t) * 1e6 / m }')"
	rm -f "$img"
done
