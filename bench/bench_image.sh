#!/bin/bash
# bench/bench_image.sh --- building images from real trees, measured
# honestly: the same copy of the tree for every tool, every build repeated
# (minimum and median time, and the median CPU time, user plus system, which
# a loaded machine disturbs less), every tool's output made durable before the
# clock stops (mkfs.extref and mke2fs fsync the image as they close it;
# mkfs.erofs and mksquashfs do not, so a sync of the image is timed with
# them), and sizes counted as what the image file takes on the host
# (st_blocks * 512: the unused part of an ext4 image is a hole), next to
# the file's length.
#
# For each tree it prints the floor of block deduplication, computed here:
# the distinct non-zero 4 KiB blocks of its regular files (each inode once,
# a partial last block padded with zeros), and the data blocks the
# mkfs.extref images use for file data (their summary's "stored data").
#
# Compared: mke2fs -t ext4 -d (size: twice the tree plus 64 MiB, as stock
# mke2fs needs a size), mkfs.extref -d with each --dedup mode (4 KiB
# blocks, the image sized by mkfs.extref itself) and --dedup=block with
# 1 KiB blocks, mkfs.erofs (plain and --chunksize=4096), mksquashfs
# (uncompressed).  Targets of issue 12, checked at the end of each tree:
#   --dedup=block stored blocks == the floor;
#   allocated bytes, 4 KiB blocks, <= 1.10 x mkfs.erofs --chunksize=4096;
#   allocated bytes, 1 KiB blocks, < mkfs.erofs --chunksize=4096;
#   time --dedup=none <= 1.0 x mke2fs -d, --dedup=block <= 1.3 x (medians);
#   peak RSS of --dedup=block <= 64 bytes per distinct block (reported:
#   in all, and above the peak RSS of the same build of an empty
#   directory, the fixed cost of the process and its libraries; the
#   verdict is on the second);
#   --update of a second version with 5% of its files changed adds at
#   most the changed blocks plus metadata (the blocks added and the
#   changed blocks, computed here, are printed).
#
# mkfs.erofs --chunksize before erofs-utils 1.8.3 (Debian 12 has 1.5)
# fails with EIO ("Could not format the device") on any tree whose distinct
# chunks pass 2 GiB - 4 KiB (524,287 chunks of 4 KiB; /usr/lib is one):
# erofs_blob_remap() appends the temporary file of chunks to the image with
# ONE copy_file_range(2) call and calls any short count an I/O error, and
# the kernel copies at most 0x7ffff000 bytes a call.  Upstream fixed it in
# a4b10b2 ("mkfs: fix unexpected errors for chunk-based images", v1.8.3)
# by calling again until all is copied.  So the --chunksize build runs with
# a preloaded copy_file_range() that does the same (compiled here; it
# changes nothing when one call copies everything, and the bytes it writes
# are those the single call was asked to write), and a copy it had to
# complete is printed under the row.  Both sides still build the same tree.
#
# With --oci: container image layers (issue 24).  An OCI image layout
# of a few layers is built locally with umoci from /usr trees (layer 1:
# DIR1 at /l1; layer 2: DIR2 at /l2; layer 3: every twentieth file of
# DIR1 again, every other one changed at its end; then twenty layers of
# one whiteout each), then made into an image by: mkfs.extref -d oci:DIR
# (its --dedup=block default, and --dedup=none); umoci unpack + mke2fs
# -t ext4 -d; umoci unpack + mkfs.erofs (the unpack timed with them: it
# is part of their build); mkfs.erofs --tar where this erofs-utils has
# it (1.7 and later; Debian 12 has 1.5: the output says so).  Bytes on
# the host and time, as above.  Measured once (-r 1, a 2-core machine
# shared with other jobs: wall times are noisy, CPU times less so) on
# /usr/share/doc and /usr/share/man, 23 layers, 104.9 MiB of blobs:
#   mkfs.extref -d oci: (block)      63.4 s wall, 22.2 s CPU, 195.6 MiB
#   mkfs.extref -d oci: --dedup=none 123.2 s wall, 22.6 s CPU, 227.1 MiB
#   umoci unpack + mke2fs -d         311.2 s wall, 60.3 s CPU, 242.4 MiB
#   umoci unpack + mkfs.erofs        85.4 s wall, 20.0 s CPU, 149.4 MiB
# (MiB allocated on the host; erofs packs small files' tails, ext4 gives
# each a block.)
#
# usage: bash bench/bench_image.sh [-r RUNS] [DIR...]
#        bash bench/bench_image.sh [-r RUNS] --oci [DIR1 DIR2]
#        (default: 3 runs of /usr/share/doc; --oci: /usr/share/doc and
#        /usr/share/man)
# Everything is written below a temporary directory of its own (TMPDIR
# too), removed at the end.  Installs erofs-utils and squashfs-tools with
# apt-get when they are missing (the benchmark's needs, not CI's).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=3
if [ "${1:-}" = "-r" ]; then runs=$2; shift 2; fi
[ "$runs" -ge 1 ] || { echo "RUNS must be at least 1" >&2; exit 1; }
oci=0
if [ "${1:-}" = "--oci" ]; then oci=1; shift; fi
make -s mkfs/mkfs.extref
for p in erofs-utils squashfs-tools $([ $oci = 0 ] || echo umoci); do
	dpkg-query -W -f='${Status}' $p 2>/dev/null | grep -q "ok installed" ||
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $p \
			>/dev/null
done
[ -x /usr/bin/time ] || DEBIAN_FRONTEND=noninteractive apt-get install \
	-y -qq time >/dev/null

work=$(mktemp -d /var/tmp/extref-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir "$work/tmp"
export TMPDIR=$work/tmp
dirs=("$@")
[ ${#dirs[@]} -gt 0 ] || dirs=(/usr/share/doc)
mkfs_extref=$PWD/mkfs/mkfs.extref
export E2FSPROGS_FAKE_TIME=1700000000 SOURCE_DATE_EPOCH=1700000000

# The preloaded copy_file_range() of the header: after a short count it
# calls the real one again until the length asked for is copied (or the
# source ends, or an error), like erofs-utils a4b10b2, and when it took
# more than one call appends "LENGTH COPIED CALLS" to $EXTREF_CFR_LOG.
cfr_fix=$work/cfr_fix.so
"${CC:-cc}" -O2 -Wall -Werror -shared -fPIC -o "$cfr_fix" -x c - -ldl <<'CEOF'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef ssize_t (*cfr_fn)(int, off64_t *, int, off64_t *, size_t,
			  unsigned int);

ssize_t copy_file_range(int fd_in, off64_t *off_in, int fd_out,
			off64_t *off_out, size_t len, unsigned int flags)
{
	static cfr_fn real;
	const char *log = getenv("EXTREF_CFR_LOG");
	size_t done = 0;
	unsigned int calls = 0;
	ssize_t n = 0;
	FILE *f;

	if (!real)
		real = (cfr_fn)dlsym(RTLD_NEXT, "copy_file_range");
	while (done < len) {
		n = real(fd_in, off_in, fd_out, off_out, len - done, flags);
		calls++;
		if (n <= 0)
			break;
		done += n;
	}
	if (calls > 1 && log && (f = fopen(log, "a"))) {
		fprintf(f, "%zu %zu %u\n", len, done, calls);
		fclose(f);
	}
	return done || n == 0 ? (ssize_t)done : n;
}
CEOF

# The floor: distinct non-zero 4 KiB blocks; prints "distinct nonzero".
floor() {
	python3 - "$1" <<'EOF'
import hashlib, os, stat, sys
seen, inodes, nonzero = set(), set(), 0
zero = bytes(4096)
for d, _, files in os.walk(sys.argv[1]):
    for f in files:
        st = os.lstat(os.path.join(d, f))
        if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) in inodes:
            continue
        inodes.add((st.st_dev, st.st_ino))
        with open(os.path.join(d, f), "rb") as fh:
            while True:
                b = fh.read(4096)
                if not b:
                    break
                b = b.ljust(4096, b"\0")
                if b != zero:
                    nonzero += 1
                    seen.add(hashlib.sha256(b).digest()[:16])
print(len(seen), nonzero)
EOF
}

median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
mib() { awk -v b="$1" 'BEGIN {printf "%.1f", b / 1048576}'; }

# measure NAME SYNC CMD...: RUNS builds of $work/i; SYNC=1 syncs the image
# inside the timed region.  Sets t_min, t_med, alloc, length, rss_kib and
# leaves the last run's output in $work/out.
measure() {
	local name=$1 sync=$2 i t0 t1
	shift 2
	: >"$work/times"
	: >"$work/cpus"
	for ((i = 0; i < runs; i++)); do
		rm -f "$work/i"
		sync
		t0=$(date +%s.%N)
		if ! /usr/bin/time -f "%M %U %S" -o "$work/rss" "$@" \
			>"$work/out" 2>&1
		then
			echo "$name: failed: $(tail -1 "$work/out")" >&2
			return 1
		fi
		[ "$sync" = 0 ] || sync "$work/i"
		t1=$(date +%s.%N)
		echo "$t1 - $t0" | bc >>"$work/times"
		tail -1 "$work/rss" | awk '{print $2 + $3}' >>"$work/cpus"
	done
	cpu_med=$(median <"$work/cpus")
	t_min=$(sort -g "$work/times" | head -1)
	t_med=$(median <"$work/times")
	alloc=$(( $(stat -c %b "$work/i") * 512 ))
	length=$(stat -c %s "$work/i")
	rss_kib=$(tail -1 "$work/rss" | cut -d' ' -f1)
}

# A second version of the tree with 5% of its regular files changed
# (every 20th in sorted order: in turn appended, rewritten in the middle,
# deleted, renamed; as many new files added); prints the blocks of v2's
# data that no whole block of v1 equals ("changed blocks": a file equal
# to a v1 file costs none, zeros none) and the files that differ from
# every v1 file.
make_v2() {
	python3 - "$1" "$2" <<'EOF'
import hashlib, os, random, stat, sys
v1, v2 = sys.argv[1], sys.argv[2]
rnd = random.Random(12)
def regular(root):
    out = []
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            if stat.S_ISREG(os.lstat(p).st_mode):
                out.append(os.path.relpath(p, root))
    return sorted(out)
old = regular(v1)
for i, rel in enumerate(old[::20]):
    p = os.path.join(v2, rel)
    kind = i % 4
    if kind == 0:
        with open(p, "ab") as f:
            f.write(rnd.randbytes(3000))
    elif kind == 1:
        n = os.path.getsize(p)
        with open(p, "r+b") as f:
            f.seek(n // 2)
            f.write(rnd.randbytes(100))
    elif kind == 2:
        os.unlink(p)
    else:
        os.rename(p, p + ".renamed")
    with open(os.path.join(v2, rel + ".new"), "wb") as f:
        f.write(rnd.randbytes(rnd.randrange(1, 16384)))
def blocks(path, whole_only):
    data = open(path, "rb").read()
    n = len(data) // 4096 if whole_only else -(-len(data) // 4096)
    return [data[i * 4096:(i + 1) * 4096] for i in range(n)], data
def digest(b):
    return hashlib.sha256(b).digest()
zero = bytes(4096)
seen, files = set(), set()  # digests: a tree's bytes may not fit in memory
for rel in old:
    b, data = blocks(os.path.join(v1, rel), True)
    seen.update(map(digest, b))
    files.add(digest(data))
changed = entries = 0
for rel in regular(v2):
    b, data = blocks(os.path.join(v2, rel), False)
    if digest(data) in files:
        continue
    entries += 1
    for i, blk in enumerate(b):
        full = (i + 1) * 4096 <= len(data)
        if blk.ljust(4096, b"\0") != zero and not (full and
                                                   digest(blk) in seen):
            changed += 1
print(changed, entries)
EOF
}

# The --update row: v1 built with --dedup=block, then updated with v2 (one
# run, timed); blocks added (data and metadata, less what the replaced
# files alone used) against the changed blocks, with the allowance for
# metadata tests/test_mkfs_update.py makes: 2 blocks per changed file.
update_row() {
	local src=$1 v2=$work/v2 changed entries t0 t1 before after bound
	rm -rf "$v2"
	cp -a "$src" "$v2"
	read -r changed entries < <(make_v2 "$src" "$v2")
	rm -f "$work/i"
	"$mkfs_extref" -q --dedup=block -d "$src" "$work/i"
	sync
	t0=$(date +%s.%N)
	if ! /usr/bin/time -f %M -o "$work/rss" "$mkfs_extref" --update \
		-d "$v2" "$work/i" >"$work/out" 2>"$work/err"; then
		printf '  MISS --update failed: %s\n' "$(grep -v '^Command exited' "$work/err" | tail -1)"
		return 0
	fi
	t1=$(date +%s.%N)
	read -r before after < <(sed -n \
		's/^  blocks in use *\([0-9]*\) before, \([0-9]*\) after.*/\1 \2/p' \
		"$work/out")
	bound=$((changed + 2 * entries + 4))
	printf '%-30s %8.2f  blocks added %d; changed blocks %d in %d files; peak RSS %s MiB\n' \
		"mkfs.extref --update (5%)" "$(echo "$t1 - $t0" | bc)" \
		$((after - before)) "$changed" "$entries" \
		"$(mib $(($(tail -1 "$work/rss") * 1024)))"
	printf '  %-4s --update adds %d blocks: at most the changed blocks plus metadata (%d)\n' \
		"$([ $((after - before)) -le "$bound" ] && echo ok || echo MISS)" \
		$((after - before)) "$bound"
	e2fsck -fn "$work/i" >/dev/null 2>&1 ||
		echo "  MISS e2fsck -fn is not clean after --update"
}

# --oci: the layout, then one row a way of making an image of it.
oci_bench() {
	local l1=$1 l2=$2 lay=$work/oci cnt rs=$work/bundle/rootfs
	printf '\n# OCI layout: layers from %s, %s, a rewrite of 5%% of the first, whiteouts; %d runs each\n' \
		"$l1" "$l2" "$runs"
	umoci init --layout "$lay"
	umoci new --image "$lay:t"
	umoci insert --no-history --image "$lay:t" "$l1" /l1
	umoci insert --no-history --image "$lay:t" "$l2" /l2
	mkdir -p "$work/l3"
	python3 - "$l1" "$work/l3" <<'PYEOF'
import os, stat, sys
src, dst = sys.argv[1], sys.argv[2]
files = []
for d, _, fs in os.walk(src):
    for f in fs:
        p = os.path.join(d, f)
        if stat.S_ISREG(os.lstat(p).st_mode):
            files.append(os.path.relpath(p, src))
for i, rel in enumerate(sorted(files)[::20]):
    with open(os.path.join(src, rel), "rb") as f:
        data = f.read()
    out = os.path.join(dst, rel)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "wb") as f:   # every other one changed at its end
        f.write(data + (b"changed\n" if i % 2 else b""))
PYEOF
	umoci insert --no-history --image "$lay:t" "$work/l3" /l1
	cnt=0
	while read -r rel; do
		umoci insert --no-history --image "$lay:t" --whiteout "/l1/$rel"
		cnt=$((cnt + 1))
		[ $cnt -lt 20 ] || break
	done < <(cd "$l1" && find . -type f | sort | sed -n '11~20p' | cut -c3-)
	printf '# layout: %s MiB of blobs (the layers gzip-compressed), %d layers\n' \
		"$(mib "$(du -sb "$lay/blobs" | cut -f1)")" $((3 + cnt))
	printf '%-34s %8s %8s %8s %11s %11s\n' tool min_s median_s cpu_s \
		alloc_MiB length_MiB
	orow() {
		printf '%-34s %8.2f %8.2f %8.2f %11s %11s\n' "$1" "$t_min" \
			"$t_med" "$cpu_med" "$(mib "$alloc")" "$(mib "$length")"
	}
	measure x 0 "$mkfs_extref" -d "oci:$lay:t" "$work/i" &&
		orow "mkfs.extref -d oci: (block)"
	e2fsck -fn "$work/i" >/dev/null 2>&1 ||
		echo "  MISS e2fsck -fn is not clean after -d oci:"
	measure x 0 "$mkfs_extref" --dedup=none -d "oci:$lay:t" "$work/i" &&
		orow "mkfs.extref -d oci: --dedup=none"
	# the tools that need a tree: the unpack is part of their build
	measure x 0 bash -c '
		rm -rf "$0/bundle" &&
		umoci unpack --image "$1:t" "$0/bundle" >/dev/null &&
		mke2fs -q -F -t ext4 -b 4096 -d "$0/bundle/rootfs" "$0/i" \
			"$(( $(du -sb "$0/bundle/rootfs" | cut -f1) * 2 / 1024 + 65536 ))K"' \
		"$work" "$lay" && orow "umoci unpack + mke2fs -d"
	measure x 1 bash -c '
		rm -rf "$0/bundle" &&
		umoci unpack --image "$1:t" "$0/bundle" >/dev/null &&
		mkfs.erofs "$0/i" "$0/bundle/rootfs" >/dev/null' \
		"$work" "$lay" && orow "umoci unpack + mkfs.erofs"
	if mkfs.erofs --help 2>&1 | grep -q -- '--tar'; then
		# --tar makes one image a layer; merging layers needs
		# --aufs/--ovlfs (erofs-utils 1.8): noted, not faked
		echo "  (mkfs.erofs --tar is here; the merge of layers is not measured)"
	else
		echo "  (mkfs.erofs --tar: not in this erofs-utils ($(dpkg-query -W -f='${Version}' erofs-utils 2>/dev/null)): no row)"
	fi
	rm -rf "$work/bundle" "$rs"
}

if [ $oci = 1 ]; then
	oci_bench "${1:-/usr/share/doc}" "${2:-/usr/share/man}"
	exit 0
fi

for d in "${dirs[@]}"; do
	src=$work/src
	rm -rf "$src"
	mkdir -p "$src"
	cp -a "$d/." "$src/"
	size=$(du -sb "$src" | cut -f1)
	read -r distinct nonzero < <(floor "$src")
	img_size=$(( size * 2 / 1024 + 65536 ))K
	printf '\n# %s: %s bytes in %s entries, %d runs each\n' "$d" "$size" \
		"$(find "$src" | wc -l)" "$runs"
	printf '# floor of block dedupe: %d distinct non-zero 4 KiB blocks (%s MiB) of %d non-zero\n' \
		"$distinct" "$(mib $((distinct * 4096)))" "$nonzero"
	printf '%-30s %8s %8s %8s %11s %11s %9s %12s\n' tool min_s median_s \
		cpu_s alloc_MiB length_MiB rss_MiB data_blocks
	declare -A T A R B C
	row() {	# name [data_blocks]
		T[$1]=$t_med; A[$1]=$alloc; R[$1]=$rss_kib; B[$1]=${2:--}
		C[$1]=$cpu_med
		printf '%-30s %8.2f %8.2f %8.2f %11s %11s %9s %12s\n' "$1" \
			"$t_min" "$t_med" "$cpu_med" "$(mib "$alloc")" \
			"$(mib "$length")" "$(mib $((rss_kib * 1024)))" "${2:--}"
	}
	stored() { sed -n 's/^  stored data: .*(\([0-9]*\) blocks)$/\1/p' "$work/out"; }

	measure "mke2fs -d" 0 mke2fs -q -F -t ext4 -b 4096 -d "$src" \
		"$work/i" "$img_size" && row "mke2fs -d"
	for mode in none file block; do
		measure x 0 "$mkfs_extref" --dedup=$mode -d "$src" "$work/i" &&
			row "mkfs.extref --dedup=$mode" "$(stored)"
	done
	measure x 0 "$mkfs_extref" -b 1024 --dedup=block -d "$src" "$work/i" &&
		row "mkfs.extref -b 1024 block" "$(stored)"
	measure x 1 mkfs.erofs "$work/i" "$src" && row "mkfs.erofs"
	rm -f "$work/cfr.log"
	measure x 1 env LD_PRELOAD="$cfr_fix" EXTREF_CFR_LOG="$work/cfr.log" \
		mkfs.erofs --chunksize=4096 "$work/i" "$src" &&
		row "mkfs.erofs --chunksize=4096"
	if [ -s "$work/cfr.log" ]; then
		read -r cfr_len cfr_done cfr_calls < <(tail -1 "$work/cfr.log")
		printf '  (mkfs.erofs %s copies its %s bytes of chunks with one copy_file_range and fails with EIO on a short count: completed in %s calls, see the header)\n' \
			"$(sed -n 's/^mkfs.erofs \([0-9][0-9.]*\)$/\1/p' "$work/out" | head -1)" \
			"$cfr_len" "$cfr_calls"
		[ "$cfr_done" = "$cfr_len" ] ||
			echo "  MISS the chunk copy stopped at $cfr_done of $cfr_len bytes"
	fi
	measure x 1 mksquashfs "$src" "$work/i" -quiet -no-progress -noI -noD \
		-noF -noX && row "mksquashfs (uncompressed)"

	verdict() {	# what ok: a line
		printf '  %-4s %s\n' "$([ "$2" = 1 ] && echo ok || echo MISS)" "$1"
	}
	cmp_ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.4f", a / b}'; }
	le() { awk -v a="$1" -v b="$2" 'BEGIN {print (a <= b) ? 1 : 0}'; }
	blk=${B[mkfs.extref --dedup=block]:-0}
	erofs=${A[mkfs.erofs --chunksize=4096]:-0}
	echo "targets:"
	verdict "--dedup=block stores $blk blocks of file data; the floor is $distinct" \
		"$([ "$blk" = "$distinct" ] && echo 1 || echo 0)"
	if [ "$erofs" -gt 0 ]; then
		r=$(cmp_ratio "${A[mkfs.extref --dedup=block]}" "$erofs")
		verdict "allocated, 4 KiB blocks: $r x mkfs.erofs --chunksize=4096 (at most 1.10)" \
			"$(le "$r" 1.10)"
		a=${A[mkfs.extref -b 1024 block]}
		r=$(cmp_ratio "$a" "$erofs")
		verdict "allocated, 1 KiB blocks: $r x mkfs.erofs --chunksize=4096, a difference of $(( (a - erofs) / 1024 )) KiB (below 1)" \
			"$([ "$a" -lt "$erofs" ] && echo 1 || echo 0)"
	fi
	r=$(cmp_ratio "${T[mkfs.extref --dedup=none]}" "${T[mke2fs -d]}")
	c=$(cmp_ratio "${C[mkfs.extref --dedup=none]}" "${C[mke2fs -d]}")
	verdict "time --dedup=none: $r x mke2fs -d (at most 1.0); CPU (user+sys) $c x" "$(le "$r" 1.0)"
	r=$(cmp_ratio "${T[mkfs.extref --dedup=block]}" "${T[mke2fs -d]}")
	c=$(cmp_ratio "${C[mkfs.extref --dedup=block]}" "${C[mke2fs -d]}")
	verdict "time --dedup=block: $r x mke2fs -d (at most 1.3); CPU (user+sys) $c x" "$(le "$r" 1.3)"
	mkdir -p "$work/empty"
	measure x 0 "$mkfs_extref" --dedup=block -d "$work/empty" "$work/i"
	fixed=$rss_kib
	r=$(awk -v k="${R[mkfs.extref --dedup=block]}" -v n="$distinct" \
		'BEGIN {printf "%.0f", k * 1024 / n}')
	m=$(awk -v k="${R[mkfs.extref --dedup=block]}" -v f="$fixed" \
		-v n="$distinct" 'BEGIN {printf "%.0f", (k - f) * 1024 / n}')
	verdict "peak RSS of --dedup=block: $(mib $((${R[mkfs.extref --dedup=block]} * 1024))) MiB, $r bytes per distinct block in all; $m above the $(mib $((fixed * 1024))) MiB of an empty build (at most 64)" \
		"$(le "$m" 64)"
	update_row "$src"
	unset T A R B C
done
