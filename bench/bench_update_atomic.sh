#!/bin/bash
# bench_update_atomic.sh --- mkfs.extref --update as one commit (issue 30,
# section 1) against the build it replaced, which committed in parts.
#
# Usage: bash bench/bench_update_atomic.sh [REPS]   (default 3)
#   OLD=DIR    a build of the parent commit (DIR/mkfs/mkfs.extref); without
#              it only this build is measured
#   TREE=DIR   the source (default /usr/share), copied twice: v1, and v2 with
#              CHANGE percent (default 20) of its regular files rewritten
#              (a byte changed in each) and as many new small files
#   JOURNALS="CASE ..." one case each (default "default auto"):
#              "default" passes no -J, so the image has the journal
#              mkfs.extref gives an image of SIZE, what a user gets;
#              "auto" passes no size either: the image is sized from v1
#              (5% headroom, and a journal that holds a rewrite of v1's
#              metadata: plan_size.c), and the update runs with --grow;
#              a number MB passes -J size=MB (4: a journal forced small,
#              which the update grows to hold its commit); JOURNAL=CASE
#              one case
#   SIZE=SIZE  the image's size (default: twice the source and 256 MiB)
#
# Each case: an image made with mkfs.extref [-J size=MB] -d v1; each run a
# fresh copy of it, then mkfs.extref --update -d v2 on it, timed; the two
# builds interleaved, REPS times each.  Printed per build: min and median
# seconds (the median of two runs is the lower), the blocks in use before
# and after, the host bytes the image file holds (du: early writes of new
# blocks land there), and the peak blocks in use, measured: the union of
# the blocks in use before and after, read from the block bitmaps (stock
# dumpe2fs's free block ranges of each group, before and after).  What it
# holds past the blocks in use before (the blocks in use after and not
# before) is counted by owner (stock debugfs icheck and stat): file data,
# directories, extent blocks, the extref tree, the journal (and its
# growth), the metadata of groups --grow added, any other; then set
# against the data written (those file data blocks: the summary's "new
# data written" is printed beside it) and against the changed data (the
# distinct non-zero blocks of v2's files that no block of v1's files
# holds, hashed here from the two trees: what any update must write, the
# same count for both builds), each as a share of it (target: at most
# 5%), and again without the grown groups' metadata; then the ratios of
# the medians (target: at most 1.2) and of the peaks.  An update refused
# as too big for the journal (EXTREF_ERR_TXN_TOO_BIG) is reported as such.
#
# Why the union is the peak: the update is one transaction; every block
# it frees (a replaced or deleted file's, an old extent or directory
# block) stays marked in use until the commit (libfs/txn/txn.c,
# defer_free), and every block it allocates is in use from then on, so
# at the commit the blocks in use are those in use before and those it
# allocated, which after the commit are in use still: the union, plus
# any block it allocated and freed again inside the transaction (kept in
# use until the commit too, and in neither bitmap).  There are none in
# these runs: a build counting, in defer_free, the frees of blocks
# allocated since the transaction began (txn_split.c's fresh map) found
# 0 on /usr/share/man (the default journal, an image sized from v1, a
# 4 MiB journal) and /usr/share (the first two), and the blocks it had
# in use at the commit (those the free count left and the frees held
# back) were the union exactly (docs/TRANSACTIONS.md, *Peak space*); the
# tree's copy-on-write nodes are not freed to the filesystem (their old
# blocks become free nodes of the tree's own file, libfs/tree/commit.c,
# in use before and after), and inode table blocks are in use in the
# bitmap from mkfs on (an inode newly used costs no block).  Not seen
# either: a run rolled back because its commit outgrew the journal (after
# a short estimate, docs/TRANSACTIONS.md) peaks at its own allocations
# before the rerun; only a case whose journal grew can have had one.  For
# a build that committed in parts the union is an upper bound: whatever
# is in use at any time is in use before or after (a block freed by one
# part and taken by the next is counted once).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
build=${EXTREF_BUILD_DIR:-$(dirname "$here")}
new=$build/mkfs/mkfs.extref
old=${OLD:+$OLD/mkfs/mkfs.extref}
reps=${1:-${REPS:-3}}
tree=${TREE:-/usr/share}
change=${CHANGE:-20}

[ -x "$new" ] || { echo "bench_update_atomic.sh: $new not found: run make" >&2; exit 1; }
[ -z "$old" ] || [ -x "$old" ] || { echo "bench_update_atomic.sh: $old not found" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/var/tmp}/bench-update-atomic.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "source: $tree, $change% of its files changed"
cp -a "$tree" "$work/v1" 2>/dev/null || true
cp -a "$work/v1" "$work/v2"
python3 - "$work/v2" "$change" <<'EOF'
import os, sys
top, pct = sys.argv[1], int(sys.argv[2])
files = []
for root, _, names in os.walk(top):
    for n in names:
        p = os.path.join(root, n)
        if os.path.isfile(p) and not os.path.islink(p):
            files.append(p)
files.sort()
step = max(1, 100 // max(pct, 1))
n = 0
for i, p in enumerate(files):
    if i % step:
        continue
    try:
        with open(p, "r+b") as f:
            b = f.read(1)
            f.seek(0)
            f.write(bytes([(b[0] ^ 0xff) if b else 0x41]))
        with open(p + ".new", "wb") as f:
            f.write(b"%d\n" % i)
        n += 1
    except OSError:
        pass
print(f"  {len(files)} files, {n} rewritten, {n} added")
EOF

used() { dumpe2fs -h "$1" 2>/dev/null | awk -F: '/^Block count/ {b=$2} /^Free blocks/ {f=$2} END {print b - f}'; }
jlen() { dumpe2fs -h "$1" 2>/dev/null | awk -F: '/^Total journal blocks/ {print $2+0}'; }

# peak BEFORE AFTER IMG (BEFORE, AFTER: stock dumpe2fs's output for the
# image before and IMG after the update: the block bitmaps as on disk, in
# each group's free block ranges): "union before after data dir extent
# tree journal grown other", the blocks in use in either, in BEFORE, in
# AFTER (a block past an image's end is not in use in it: --grow); then
# the blocks in use after and not before (union - before), by owner
# (stock debugfs icheck on IMG, stat for the extent tree blocks): the data
# of regular files, of directories, extent tree blocks, the extref tree's
# file (inode 5), the journal (8), the own metadata of the groups AFTER
# has past BEFORE's (bitmaps, inode tables, backups of the superblock and
# descriptors: what --grow adds) and any other (another inode, a symlink,
# an attribute block, or no owner: none expected)
peak() {
	python3 - "$1" "$2" "$3" <<'EOF'
import collections, re, subprocess, sys
def load(path):
    n, groups, ranges, meta = 0, 0, [], []
    for line in open(path):
        if line.startswith("Block count:"):
            n = int(line.split(":")[1])
        elif line.startswith("Group "):
            groups += 1
        elif line.startswith("  Free blocks: "):
            for r in line.split(": ", 1)[1].strip().split(", "):
                if r:
                    a, _, b = r.partition("-")
                    ranges.append((int(a), int(b or a)))
        elif re.match(r"  (Primary|Backup) superblock at|  Reserved GDT"
                      r"|  (Block|Inode) bitmap at|  Inode table at", line):
            for a, b in re.findall(r" at (\d+)(?:-(\d+))?", line):
                meta.append((groups - 1, int(a), int(b or a)))
    return n, groups, ranges, meta
def debugfs(img, cmds):
    return subprocess.run(["debugfs", "-f", "-", img], input="\n".join(cmds),
                          capture_output=True, text=True).stdout
(nb, gb, fb, _), (na, _, fa, ma) = load(sys.argv[1]), load(sys.argv[2])
n = max(nb, na)
free_before = bytearray(n)		# 1: free (or absent) before
free_before[nb:] = b"\1" * (n - nb)
for a, b in fb:
    free_before[a:b + 1] = b"\1" * (b + 1 - a)
used_after = bytearray(b"\1") * na	# 1: in use after
for a, b in fa:
    used_after[a:b + 1] = bytes(b + 1 - a)
new = [i for i in range(na) if used_after[i] and free_before[i]]
used_before = nb - sum(b + 1 - a for a, b in fb)
grown = set(k for g, a, b in ma if g >= gb for k in range(a, b + 1))
owner = {}
out = debugfs(sys.argv[3], ["icheck " + " ".join(map(str, new[i:i + 1000]))
                            for i in range(0, len(new), 1000)])
for line in out.splitlines():
    m = re.match(r"(\d+)\t(\d+)$", line)
    if m:
        owner[int(m.group(1))] = int(m.group(2))
kind, etb = {}, set()
out = debugfs(sys.argv[3], ["stat <%d>" % i for i in sorted(set(owner.values()))])
for line in out.splitlines():
    m = re.match(r"Inode: (\d+)\s+Type: (\S+)", line)
    if m:
        kind[int(m.group(1))] = m.group(2)
    etb.update(int(x) for x in re.findall(r"\(ETB\d+\):(\d+)", line))
c = collections.Counter()
for blk in new:
    i = owner.get(blk)
    if blk in grown:
        c["grown"] += 1
    elif i is None:
        c["other"] += 1
    elif blk in etb:
        c["extent"] += 1
    elif i == 5:
        c["tree"] += 1
    elif i == 8:
        c["journal"] += 1
    elif kind.get(i) == "regular":
        c["data"] += 1
    elif kind.get(i) == "directory":
        c["dir"] += 1
    else:
        c["other"] += 1
print(used_before + len(new), used_before, na - sum(b + 1 - a for a, b in fa),
      *(c[k] for k in "data dir extent tree journal grown other".split()))
EOF
}

# changed_blocks BS: the distinct non-zero BS-byte blocks (a file's last
# one padded with zeros) of v2's regular files that no block of v1's
# files holds: the data any update must write
changed_blocks() {
	python3 - "$1" "$work/v1" "$work/v2" <<'EOF'
import hashlib, os, stat, sys
bs, v1, v2 = int(sys.argv[1]), sys.argv[2], sys.argv[3]
zero = bytes(bs)
def blocks(top):
    seen = set()
    for root, _, names in os.walk(top):
        for n in names:
            p = os.path.join(root, n)
            try:
                st = os.lstat(p)
                if not stat.S_ISREG(st.st_mode) or \
                   (st.st_dev, st.st_ino) in seen:
                    continue
                seen.add((st.st_dev, st.st_ino))
                with open(p, "rb") as f:
                    while True:
                        b = f.read(bs)
                        if not b:
                            break
                        if len(b) < bs:
                            b += bytes(bs - len(b))
                        if b != zero:
                            yield hashlib.blake2b(b, digest_size=16).digest()
            except OSError:
                pass
old = set(blocks(v1))
print(len(set(h for h in blocks(v2) if h not in old)))
EOF
}

bench_case() {	# journal MB
	local jmb=$1 size before jbefore grow bs
	declare -A times=() peak=() owners=() after=() host=() status=() grown=() written=() blocks=()
	# room for v2 beside v1: twice the source, and 256 MiB
	size=${SIZE:-$(( $(du -sm "$work/v1" | cut -f1) * 2 + 256 ))M}
	rm -f "$work/base.img"
	grow=
	if [ "$jmb" = auto ]; then
		"$new" -q -d "$work/v1" "$work/base.img"
		grow=--grow
		echo "case: an image mkfs.extref sizes from v1 (its journal too), updated with --grow"
	elif [ "$jmb" = default ]; then
		"$new" -q -d "$work/v1" "$work/base.img" "$size"
		echo "case: the journal mkfs.extref picks for a $size image"
	else
		"$new" -q -J "size=$jmb" -d "$work/v1" "$work/base.img" "$size"
		echo "case: a ${jmb} MiB journal"
	fi
	dumpe2fs -h "$work/base.img" 2>/dev/null | grep -E "^(Block count|Block size|Total journal size|Inode size)" | sed 's/^/  /'
	before=$(used "$work/base.img")
	jbefore=$(jlen "$work/base.img")
	bs=$(dumpe2fs -h "$work/base.img" 2>/dev/null | awk -F: '/^Block size/ {print $2+0}')
	dumpe2fs "$work/base.img" >"$work/dump.before" 2>/dev/null
	# the changed data, once for each block size
	[ -n "${changed[$bs]:-}" ] || changed[$bs]=$(changed_blocks "$bs")
	local data=${changed[$bs]}

	run() {	# label tool
		local img=$work/run.img t0 t1 out rc=0 u ub ua
		cp --sparse=always "$work/base.img" "$img"
		t0=$(date +%s.%N)
		out=$("$2" --update $grow -d "$work/v2" "$img" 2>&1) || rc=$?
		t1=$(date +%s.%N)
		if [ $rc -ne 0 ]; then
			status[$1]=$(echo "$out" | tail -1 | cut -c1-160)
			return
		fi
		times[$1]+="$(echo "$t1 - $t0" | bc) "
		after[$1]=$(used "$img")
		host[$1]=$(du -B1 "$img" | cut -f1)
		blocks[$1]=$(dumpe2fs -h "$img" 2>/dev/null | awk -F: '/^Block count/ {print $2+0}')
		grown[$1]=$(( $(jlen "$img") - jbefore ))
		written[$1]=$(echo "$out" | awk '/new data written/ {print $4}')
		# the peak of one commit: the blocks in use before or after
		dumpe2fs "$img" >"$work/dump.after" 2>/dev/null
		read -r u ub ua owners[$1] <<<"$(peak "$work/dump.before" "$work/dump.after" "$img")"
		# the bitmaps agree with the superblocks' free counts
		if [ "$ub" != "$before" ] || [ "$ua" != "${after[$1]}" ]; then
			echo "  $1: bitmaps say $ub and $ua blocks in use, the superblocks $before and ${after[$1]}" >&2
		fi
		peak[$1]=$u
	}

	# both sides read a warm source (the first run would read it cold)
	tar -cf - -C "$work" v2 >/dev/null
	for ((i = 0; i < reps; i++)); do
		run new "$new"
		[ -z "$old" ] || run old "$old"
	done

	local k mn md med_new= med_old= nd nm ne nt nj ng no
	echo "  changed data: $data blocks ($(echo "scale=1; $data * $bs / 1048576" | bc) MiB: v2's blocks that v1 lacks)"
	for k in new ${old:+old}; do
		if [ -n "${status[$k]:-}" ]; then
			echo "  $k: refused: ${status[$k]}"
			continue
		fi
		read -r mn md <<<"$(stats "${times[$k]}")"
		read -r nd nm ne nt nj ng no <<<"${owners[$k]}"
		echo "  $k: min ${mn}s median ${md}s; blocks in use $before before, ${after[$k]} after; host bytes ${host[$k]}; block count after ${blocks[$k]}"
		echo "  $k: peak ${peak[$k]} (in use before or after): before + $(( peak[$k] - before )) new: file data $nd (summary: new data written ${written[$k]} MiB), directories $nm, extent blocks $ne, tree $nt, journal $nj (grew ${grown[$k]}), grown groups' metadata $ng, other $no"
		echo "  $k: past the data written: $(( peak[$k] - before - nd )), $(pct $(( peak[$k] - before - nd )) "$nd") of it$( [ "$ng" = 0 ] || echo "; $(( peak[$k] - before - nd - ng )), $(pct $(( peak[$k] - before - nd - ng )) "$nd"), but the grown groups'"); past the changed data: $(printf %+d $(( peak[$k] - before - data ))), $(pct $(( peak[$k] - before - data )) "$data") of it$( [ "$ng" = 0 ] || echo "; $(printf %+d $(( peak[$k] - before - data - ng ))), $(pct $(( peak[$k] - before - data - ng )) "$data"), but the grown groups'")"
		eval "med_$k=$md"
	done
	if [ -n "$old" ] && [ -z "${status[new]:-}" ] && [ -z "${status[old]:-}" ]; then
		echo "  ratio new/old: time $(echo "scale=3; $med_new / $med_old" | bc), peak $(echo "scale=3; ${peak[new]} / ${peak[old]}" | bc), peak past before $(echo "scale=3; (${peak[new]} - $before) / (${peak[old]} - $before)" | bc), host bytes $(echo "scale=3; ${host[new]} / ${host[old]}" | bc)"
	fi
}

pct() {	# PART WHOLE -> "P%" (one decimal)
	if [ "$2" -gt 0 ]; then echo "$(echo "scale=1; 100 * $1 / $2" | bc)%"; else echo "(no changed data)"; fi
}

stats() {	# "t1 t2 ..." -> "min median"
	echo "$1" | tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {printf "%.2f %.2f", a[1], a[int((NR+1)/2)]}'
}

declare -A changed=()
for jmb in ${JOURNAL:-${JOURNALS:-default auto}}; do
	bench_case "$jmb"
done
