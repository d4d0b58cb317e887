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
# seconds, the blocks in use after, the journal's growth (blocks), the host
# bytes the image file holds (du: early writes of new blocks land there),
# and the peak blocks in use (used before + the new data its summary says it
# wrote + the journal's growth: the replaced files' old blocks stay in use
# until the one commit; for the build that committed in parts an upper
# bound) and what the peak holds past the blocks in use before and the
# changed data, as a share of the changed data (target: at most 5%); then the ratio of the medians (target: at most
# 1.2) and of the peaks.  An update refused as too big for the journal
# (EXTREF_ERR_TXN_TOO_BIG) is reported as such.
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

bench_case() {	# journal MB
	local jmb=$1 size before jbefore grow
	declare -A times=() peak=() after=() host=() status=() grown=() data=() blocks=()
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

	run() {	# label tool
		local img=$work/run.img t0 t1 out rc=0 bs written
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
		bs=$(dumpe2fs -h "$img" 2>/dev/null | awk -F: '/^Block size/ {print $2+0}')
		written=$(echo "$out" | awk '/new data written/ {print $4}')
		data[$1]=$(echo "$written * 1048576 / $bs" | bc | cut -d. -f1)
		# the peak of one commit: what was in use, the new data (the
		# old blocks of replaced files are freed only at the commit)
		# and the journal's growth; for a run in parts an upper bound
		peak[$1]=$(( before + data[$1] + grown[$1] ))
		peak[$1]=$(( ${peak[$1]} > ${after[$1]} ? ${peak[$1]} : ${after[$1]} ))
	}

	# both sides read a warm source (the first run would read it cold)
	tar -cf - -C "$work" v2 >/dev/null
	for ((i = 0; i < reps; i++)); do
		run new "$new"
		[ -z "$old" ] || run old "$old"
	done

	local k mn md med_new= med_old=
	for k in new ${old:+old}; do
		if [ -n "${status[$k]:-}" ]; then
			echo "  $k: refused: ${status[$k]}"
			continue
		fi
		read -r mn md <<<"$(stats "${times[$k]}")"
		echo "  $k: min ${mn}s median ${md}s; blocks in use $before before, ${after[$k]} after, journal grew ${grown[$k]}, peak ~${peak[$k]} (before + changed data ${data[$k]} + $(( peak[$k] - before - data[$k] )): $(echo "scale=1; 100 * (${peak[$k]} - $before - ${data[$k]}) / ${data[$k]}" | bc)% of the changed data); host bytes ${host[$k]}; block count after ${blocks[$k]}"
		eval "med_$k=$md"
	done
	if [ -n "$old" ] && [ -z "${status[new]:-}" ] && [ -z "${status[old]:-}" ]; then
		echo "  ratio new/old: time $(echo "scale=3; $med_new / $med_old" | bc), peak $(echo "scale=3; ${peak[new]} / ${peak[old]}" | bc), host bytes $(echo "scale=3; ${host[new]} / ${host[old]}" | bc)"
	fi
}

stats() {	# "t1 t2 ..." -> "min median"
	echo "$1" | tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {printf "%.2f %.2f", a[1], a[int((NR+1)/2)]}'
}

for jmb in ${JOURNAL:-${JOURNALS:-default auto}}; do
	bench_case "$jmb"
done
