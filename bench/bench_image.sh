#!/bin/bash
# bench/bench_image.sh --- building images from real trees, in one run:
# mke2fs -d, mkfs.extref -d with each dedup mode, mkfs.erofs (plain and
# with --chunksize deduplication) and mksquashfs.  Prints build time and
# bytes used, with ratios to mke2fs -d.
#
# Targets (issue): mkfs.extref -d --dedup=none at most 1.2 x the time of
# mke2fs -d; block dedup saving at least as much as mkfs.erofs
# --chunksize=4096.
#
# usage: bash bench/bench_image.sh [DIR...]   (default /usr/share)
# The trees are copied to a fixed place first so every run sees the same
# data.  Needs erofs-utils and squashfs-tools (installed if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
make -s mkfs/mkfs.extref
for p in erofs-utils squashfs-tools; do
	dpkg-query -W -f='${Status}' $p 2>/dev/null | grep -q "ok installed" ||
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $p >/dev/null
done

work=$(mktemp -d /var/tmp/extref-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
dirs=("$@")
[ ${#dirs[@]} -gt 0 ] || dirs=(/usr/share)

now() { date +%s.%N; }
used_ext4() {	# bytes in use in an ext4 image
	dumpe2fs -h "$1" 2>/dev/null | awk -F: '
		/^Block count/ {c=$2} /^Free blocks/ {f=$2} /^Block size/ {b=$2}
		END {printf "%.0f", (c - f) * b}'
}

for d in "${dirs[@]}"; do
	src=$work/src
	rm -rf "$src"
	mkdir -p "$src"
	cp -a "$d/." "$src/"
	size=$(du -sb "$src" | cut -f1)
	img_size=$(( size * 2 / 1024 + 65536 ))K
	printf '\n# %s: %s bytes (copied to %s)\n' "$d" "$size" "$src"
	printf '%-26s %10s %14s %10s %10s\n' tool seconds bytes_used t_ratio b_ratio
	base_t=""; base_b=""
	declare -A bytes
	row() {	# name seconds bytes
		if [ -z "$base_t" ]; then base_t=$2; base_b=$3; fi
		bytes[$1]=$3
		awk -v n="$1" -v t="$2" -v b="$3" -v bt="$base_t" -v bb="$base_b" \
			'BEGIN {printf "%-26s %10.2f %14.0f %10.2f %10.3f\n", n, t, b, t/bt, b/bb}'
	}
	export E2FSPROGS_FAKE_TIME=1700000000 SOURCE_DATE_EPOCH=1700000000

	rm -f "$work/i"; t0=$(now)
	mke2fs -q -F -t ext4 -b 4096 -d "$src" "$work/i" "$img_size" >/dev/null 2>&1
	t1=$(now); row "mke2fs -d" "$(echo "$t1 - $t0" | bc)" "$(used_ext4 "$work/i")"

	for mode in none file block; do
		rm -f "$work/i"; t0=$(now)
		mkfs/mkfs.extref -q -b 4096 --dedup=$mode -d "$src" "$work/i" "$img_size"
		t1=$(now)
		row "mkfs.extref --dedup=$mode" "$(echo "$t1 - $t0" | bc)" "$(used_ext4 "$work/i")"
	done

	other() {	# name command...: a row, or "failed" (keeps going)
		local name=$1; shift
		rm -f "$work/i"; t0=$(now)
		if "$@" >"$work/log" 2>&1; then
			t1=$(now)
			row "$name" "$(echo "$t1 - $t0" | bc)" "$(stat -c %s "$work/i")"
		else
			printf '%-26s failed: %s\n' "$name" "$(tail -1 "$work/log")"
			bytes[$name]=0
		fi
	}
	other "mkfs.erofs" mkfs.erofs "$work/i" "$src"
	other "mkfs.erofs --chunksize=4096" mkfs.erofs --chunksize=4096 "$work/i" "$src"
	other "mksquashfs" mksquashfs "$src" "$work/i" -quiet -no-progress
	other "mksquashfs (uncompressed)" mksquashfs "$src" "$work/i" -quiet \
		-no-progress -noI -noD -noF -noX
	# a tool that failed has 0 bytes: no saving to show for it
	saved() {
		if [ "${bytes[$1]}" -gt 0 ] && [ "${bytes[$2]}" -gt 0 ]; then
			echo "$(( ${bytes[$1]} - ${bytes[$2]} )) bytes"
		else
			echo "- (a run failed)"
		fi
	}
	echo "saved by deduplication: mkfs.extref block $(saved "mkfs.extref --dedup=none" "mkfs.extref --dedup=block") (vs --dedup=none), mkfs.erofs chunks $(saved "mkfs.erofs" "mkfs.erofs --chunksize=4096") (vs plain erofs)"
	unset bytes
done
