#!/bin/bash
# bench/bench_reflink.sh --- reflink and copy-on-write cost: extref (offline,
# libextref) against the kernel's FICLONE on XFS (loop-mounted image).
#
# Cases, each with a 1 GiB file:
#   1. one reflink of a file of as few extents as the filesystem allows,
#      and of a file of ~10,000 extents;
#   2. 1,000 successive reflinks of one file: time per reflink of the first
#      100 and of the last 100, and their ratio (growth with the count);
#   3. a 4 KiB write into a file shared after a reflink (copy-on-write).
# Single operations are repeated REPS times (different destinations or
# offsets) and the median is printed.
#
# Needs root (loop mount), mkfs.xfs, xfs_io.  Run from the source tree:
#     bash bench/bench_reflink.sh          # REPS=5 N=1000 by default
set -euo pipefail
cd "$(dirname "$0")/.."
make -s
B=bench/reflink_bench
REPS=${REPS:-5}
N=${N:-1000}
[ "$N" -ge 100 ] || { echo "N must be at least 100" >&2; exit 2; }

tmp=$(mktemp -d)
mnt=$tmp/mnt
loop=
shm=
cleanup() {
	if mountpoint -q "$mnt" 2>/dev/null; then umount "$mnt" || true; fi
	if [ -n "$loop" ]; then losetup -d "$loop" 2>/dev/null || true; fi
	rm -rf "$tmp"
	if [ -n "$shm" ]; then rm -rf "$shm"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir "$mnt"
log=$tmp/log		# every raw line, printed at the end

# field KEY LINE: the value of KEY=value in LINE
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<" $2"; }
# median of the numbers on stdin
median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
# run a command, log its line, print it
run() { local l; l=$("$@"); echo "$l" >>"$log"; echo "$l"; }
# seconds taken by a command (process start included), via EPOCHREALTIME
wall() {
	local t0=$EPOCHREALTIME
	"$@" >/dev/null
	awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.6f\n", b - a}'
}
# first100 last100 ratio of the per-operation times in a file
series() {
	awk 'NR <= 100 {f += $1} {v[NR] = $1}
	     END {for (i = NR - 99; i <= NR; i++) l += v[i];
		  printf "%.6f %.6f %.3f\n", f / 100, l / 100, l / f}' "$1"
}

rows=$tmp/rows		# case|extref|xfs
row() { echo "$1|$2|$3" >>"$rows"; }

echo "# building source images" >&2
# ----- extref images -----
mkfs/mkfs.extref -q -b 4096 "$tmp/base1.img" 4G
mkfs/mkfs.extref -q -b 4096 "$tmp/base2.img" 4G
l=$(run $B "$tmp/base1.img" make f 1G 1)
x_ext1=$(field extents "$l")
l=$(run $B "$tmp/base2.img" make g 1G 10000)
x_ext2=$(field extents "$l")
# leaf extents as stock debugfs lists them (level == depth)
dbg_ext() {
	debugfs -R "ex $2" "$1" 2>/dev/null |
		awk 'NR > 1 {split($1, a, "/"); if (a[1] == $2) n++} END {print n + 0}'
}
echo "extref: stock debugfs 'ex' leaf extents: /f $(dbg_ext "$tmp/base1.img" /f), /g $(dbg_ext "$tmp/base2.img" /g)" >>"$log"
cp --sparse=always "$tmp/base1.img" "$tmp/x1.img"
cp --sparse=always "$tmp/base2.img" "$tmp/x2.img"

# ----- XFS image -----
truncate -s 4G "$tmp/xfs.img"
mkfs.xfs -q -m reflink=1 "$tmp/xfs.img"
loop=$(losetup --find --show "$tmp/xfs.img")
mount "$loop" "$mnt"
l=$(run $B --posix make "$mnt/f" 1G 1)
k_ext1=$(field extents "$l")
l=$(run $B --posix make "$mnt/g" 1G 10000)
k_ext2=$(field extents "$l")
echo "xfs: xfs_io fiemap lines (incl. header): f $(xfs_io -c fiemap "$mnt/f" | wc -l) g $(xfs_io -c fiemap "$mnt/g" | wc -l)" >>"$log"
sync

# ----- case 1: one reflink -----
echo "# case 1: one reflink" >&2
for c in 1 2; do
	if [ $c = 1 ]; then src=f; img=$tmp/x1.img; xe=$x_ext1; ke=$k_ext1
	else src=g; img=$tmp/x2.img; xe=$x_ext2; ke=$k_ext2; fi
	: >"$tmp/a"; : >"$tmp/b"; : >"$tmp/c"; : >"$tmp/d"; : >"$tmp/e"; : >"$tmp/f"
	for r in $(seq "$REPS"); do
		sync
		l=$(run $B "$img" reflink $src $src.c1.$r)
		field op "$l" >>"$tmp/a"
		sync
		wall $B "$img" reflink $src $src.w1.$r >>"$tmp/b"
		sync
		l=$(run $B --posix reflink "$mnt/$src" "$mnt/$src.c1.$r")
		field op "$l" >>"$tmp/c"
		field op_fsync "$l" >>"$tmp/d"
		sync
		wall cp --reflink=always "$mnt/$src" "$mnt/$src.w1.$r" >>"$tmp/e"
		sync
		wall xfs_io -f -c "reflink $mnt/$src" "$mnt/$src.x1.$r" >>"$tmp/f"
	done
	xop=$(median <"$tmp/a"); xw=$(median <"$tmp/b")
	row "1. reflink 1G, $xe/$ke ext: call / FICLONE+fsync" "$xop" "$(median <"$tmp/d")"
	row "1. reflink 1G, $xe/$ke ext: call / FICLONE (no fsync)" "$xop" "$(median <"$tmp/c")"
	row "1. reflink 1G, $xe/$ke ext: process / cp --reflink" "$xw" "$(median <"$tmp/e")"
	row "1. reflink 1G, $xe/$ke ext: process / xfs_io reflink" "$xw" "$(median <"$tmp/f")"
done

# ----- case 2: N successive reflinks -----
echo "# case 2: $N successive reflinks" >&2
cp --sparse=always "$tmp/base1.img" "$tmp/x3.img"
sync
lx=$(run $B "$tmp/x3.img" reflinks f "$N" r)
lk=$(run $B --posix reflinks "$mnt/f" "$N" "$mnt/r")
row "2. $N reflinks, 1 process: mean s, first 100" "$(field first100 "$lx")" "$(field first100 "$lk")"
row "2. $N reflinks, 1 process: mean s, last 100" "$(field last100 "$lx")" "$(field last100 "$lk")"
row "2. $N reflinks, 1 process: last/first (growth)" "$(field ratio "$lx")" "$(field ratio "$lk")"
row "2. $N reflinks, 1 process: total" "$(field total "$lx")" "$(field total "$lk")"
cp --sparse=always "$tmp/base1.img" "$tmp/x4.img"
sync
: >"$tmp/a"; : >"$tmp/b"
for i in $(seq 0 $((N - 1))); do
	wall $B "$tmp/x4.img" reflink f p.$i >>"$tmp/a"
done
for i in $(seq 0 $((N - 1))); do
	wall cp --reflink=always "$mnt/f" "$mnt/p.$i" >>"$tmp/b"
done
read -r xf xl xr < <(series "$tmp/a")
read -r kf kl kr < <(series "$tmp/b")
echo "process-per-reflink: extref first100=$xf last100=$xl ratio=$xr total=$(awk '{s+=$1} END {print s}' "$tmp/a"); cp first100=$kf last100=$kl ratio=$kr total=$(awk '{s+=$1} END {print s}' "$tmp/b")" >>"$log"
row "2. $N reflinks, process each / cp: first 100" "$xf" "$kf"
row "2. $N reflinks, process each / cp: last 100" "$xl" "$kl"
row "2. $N reflinks, process each / cp: last/first" "$xr" "$kr"

# The same in one process with the image on tmpfs, where fsync costs
# nothing: the CPU cost of the library alone, for N and 5N reflinks.
if [ -d /dev/shm ] && shm=$(mktemp -d -p /dev/shm 2>/dev/null); then
	for n in "$N" $((5 * N)); do
		cp --sparse=always "$tmp/base1.img" "$shm/x.img"
		l=$(run $B "$shm/x.img" reflinks f "$n" r)
		row "2. $n reflinks, 1 process, tmpfs image: first 100" "$(field first100 "$l")" -
		row "2. $n reflinks, 1 process, tmpfs image: last 100" "$(field last100 "$l")" -
		row "2. $n reflinks, 1 process, tmpfs image: last/first" "$(field ratio "$l")" -
		rm -f "$shm/x.img"
	done
fi

# ----- case 3: a 4 KiB copy-on-write write into a shared file -----
echo "# case 3: 4 KiB copy-on-write" >&2
for c in 1 2; do
	if [ $c = 1 ]; then src=f; img=$tmp/x1.img; xe=$x_ext1; ke=$k_ext1
	else src=g; img=$tmp/x2.img; xe=$x_ext2; ke=$k_ext2; fi
	# the reflinks of case 1 made $src shared; write into the first copy
	: >"$tmp/a"; : >"$tmp/b"; : >"$tmp/c"; : >"$tmp/d"; : >"$tmp/e"
	for r in $(seq "$REPS"); do
		off=$(( (512 + 8 * r) * 1048576 ))
		sync
		l=$(run $B "$img" cow $src.c1.1 $off 4096)
		field op "$l" >>"$tmp/a"
		sync
		wall $B "$img" cow $src.c1.2 $off 4096 >>"$tmp/b"
		sync
		l=$(run $B --posix cow "$mnt/$src.c1.1" $off 4096)
		field op "$l" >>"$tmp/c"
		field op_fsync "$l" >>"$tmp/d"
		sync
		wall xfs_io -c "pwrite -q $off 4096" -c fsync "$mnt/$src.c1.2" >>"$tmp/e"
	done
	xop=$(median <"$tmp/a")
	row "3. 4K CoW in shared 1G, $xe/$ke ext: call / pwrite+fsync" "$xop" "$(median <"$tmp/d")"
	row "3. 4K CoW in shared 1G, $xe/$ke ext: call / pwrite (no fsync)" "$xop" "$(median <"$tmp/c")"
	row "3. 4K CoW in shared 1G, $xe/$ke ext: process / xfs_io pwrite+fsync" "$(median <"$tmp/b")" "$(median <"$tmp/e")"
done

echo "# integrity: e2fsck -fn on the extref images" >&2
for i in x1 x2 x3 x4; do
	e2fsck -fn "$tmp/$i.img" >/dev/null 2>&1 || echo "WARNING: e2fsck -fn $i.img failed" | tee -a "$log"
done

cat <<EOF
# Reflink benchmark: extref (libextref on an unmounted image file) vs XFS
# (kernel FICLONE, loop-mounted 4 GiB image, mkfs.xfs -m reflink=1), both
# images on the same host filesystem.  Seconds; medians of $REPS runs for
# single operations.  "N/M ext": extents of the source on extref / on XFS.
#  call:    extref = the library call alone (extref_reflink, extref_pwrite),
#           which commits the tree with its fsyncs of the image before it
#           returns (open = extref_fs_open + bitmaps, and close, excluded);
#           xfs = the syscalls alone in one C process: open(O_CREAT) +
#           ioctl(FICLONE) + close, with or without fsync(dst); pwrite with
#           or without fsync.
#  process: one whole command, process start included: extref =
#           reflink_bench IMAGE reflink|cow (open, call, close: durable on
#           exit); xfs = cp --reflink=always / xfs_io (no fsync unless said).
#  1 process: extref_reflink called N times in one process (open/close
#           excluded); xfs = create + FICLONE N times in one process.
#  tmpfs image: the extref image copied to /dev/shm, where fsync is free:
#           the library's CPU cost alone.
#  All reflinks of case 2 go into one directory (the root).
EOF
printf '%-62s %12s %12s %9s\n' case extref xfs extref/xfs
while IFS='|' read -r c a b; do
	printf '%-62s %12s %12s %9s\n' "$c" "$a" "$b" \
		"$(awk -v a="$a" -v b="$b" 'BEGIN {if (b > 0) printf "%.1f", a / b; else print "-"}')"
done <"$rows"
echo
echo "# raw figures"
cat "$log"
