#!/bin/bash
# bench/bench_reflink.sh --- reflink cost: extref (offline image, libextref
# and debugfs.extref) against the kernel's FICLONE on XFS (loop-mounted
# image, mkfs.xfs -m reflink=1), as issue 14's targets put it.
#
# Cases, each on a 1 GiB file of E extents, E in EXTENTS (default 1000
# 10000 100000), made the same way on both sides (reflink_bench make: E
# pieces, each followed by a one-block write to a scratch file removed
# afterwards, so that no two pieces are physically contiguous):
#   1. one reflink to a new file, REPS times (at least 3), the four ways
#      measured in turn within each repetition (interleaved):
#        call:  extref_reflink alone (it commits, with its fsyncs, before
#               it returns)  /  open(O_CREAT) + FICLONE + fsync + close in
#               one C process;
#        shell: debugfs.extref -w -R "reflink SRC DST" IMAGE, the whole
#               process (open, reflink, close)  /  xfs_io -f -c "reflink
#               SRC" -c fsync DST, the whole process;
#      min and median of each, the ratios extref/xfs of both, and the
#      cost per extent (median / E).  Growth: cost per extent at the
#      largest E over that at 10,000 (target: within 10%).
#   2. N (default 1000) successive reflinks of the 10,000-extent file in
#      one process each side (library call / create + FICLONE): mean and
#      median of the first 100 and of the last 100, and last/first
#      (target: within 10%); then extref's again with the image on
#      /dev/shm, where an fsync costs nothing (the library's CPU alone).
#   3. a 4 KiB copy-on-write write into the 10,000-extent file's first
#      copy: extref_pwrite alone / pwrite + fsync, REPS times interleaved.
#
# The extref images are made on /dev/shm (where make's many small
# commits cost no fsync) and copied next to the XFS image; every timed
# operation runs on files on the same host filesystem, after a sync.
#
# Needs root (loop mount), mkfs.xfs, xfs_io.  Run from the source tree:
#     bash bench/bench_reflink.sh
#     REPS=5 N=1000 EXTENTS="1000 10000 100000" bash bench/bench_reflink.sh
#     BUILD=/other/build bash bench/bench_reflink.sh   # another build's tools
# (its bench/reflink_bench built from this reflink_bench.c, for the
# medians of case 2: copy the file there and make bench/reflink_bench)
#     CACHE=/some/dir bash bench/bench_reflink.sh  # keep the source images
#     CASES=3 EXTENTS=10000 REPS=9 bash bench/bench_reflink.sh  # case 3 only
# (making the 100,000-extent file takes extref ~5 minutes: CACHE keeps
# the images as made, before any reflink, for the next run.)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-.}
[ "$BUILD" != . ] || make -s
B=$BUILD/bench/reflink_bench
SH=$BUILD/debug/debugfs.extref
MKFS=$BUILD/mkfs/mkfs.extref
REPS=${REPS:-3}
N=${N:-1000}
EXTENTS=${EXTENTS:-"1000 10000 100000"}
CACHE=${CACHE:-}
CASES=${CASES:-"1 2 3"}		# which of the cases below to run
want() { [[ " $CASES " == *" $1 "* ]]; }
[ "$N" -ge 200 ] || { echo "N must be at least 200" >&2; exit 2; }
[ "$REPS" -ge 3 ] || { echo "REPS must be at least 3" >&2; exit 2; }

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
shm=$(mktemp -d -p /dev/shm)
log=$tmp/log		# every raw line, printed at the end

# field KEY LINE: the value of KEY=value in LINE
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<" $2"; }
# min and median of the numbers in a file
minmed() { sort -g "$1" | awk '{v[NR]=$1} END {print v[1], v[int((NR+1)/2)]}'; }
# run a command, log its line, print it
run() { local l; l=$("$@"); echo "$l" >>"$log"; echo "$l"; }
# seconds taken by a command (process start included), via EPOCHREALTIME
wall() {
	local t0=$EPOCHREALTIME
	"$@" >/dev/null
	awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.6f\n", b - a}'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.2f", a / b; else print "-"}'; }
us_per() { awk -v s="$1" -v n="$2" 'BEGIN {printf "%.2f", s * 1e6 / n}'; }

rows=$tmp/rows
row() { echo "$*" >>"$rows"; }

# ----- the files -----
# make_x E: the extref image of the E-extent file, on /dev/shm then here
make_x() {
	"$MKFS" -q -b 4096 "$shm/x.img" 4G
	run "$B" "$shm/x.img" make g 1G "$1" >/dev/null
	cp --sparse=always "$shm/x.img" "$tmp/x$1.img"
	rm -f "$shm/x.img"
}
if [ -n "$CACHE" ] && [ -e "$CACHE/xfs.img" ]; then
	cp --sparse=always "$CACHE/xfs.img" "$tmp/xfs.img"
else
	truncate -s 8G "$tmp/xfs.img"
	mkfs.xfs -q -m reflink=1 "$tmp/xfs.img"
fi
loop=$(losetup --find --show "$tmp/xfs.img")
mount "$loop" "$mnt"
declare -A xe ke
xmade=
for e in $EXTENTS; do
	echo "# the $e-extent files" >&2
	if [ -n "$CACHE" ] && [ -e "$CACHE/x$e.img" ]; then
		cp --sparse=always "$CACHE/x$e.img" "$tmp/x$e.img"
	else
		make_x "$e"
		[ -z "$CACHE" ] || cp --sparse=always "$tmp/x$e.img" "$CACHE/"
	fi
	if [ ! -e "$mnt/g$e" ]; then
		run "$B" --posix make "$mnt/g$e" 1G "$e" >/dev/null
		xmade=1
	fi
	xe[$e]=$(field extents "$(run "$B" "$tmp/x$e.img" extents g)")
	ke[$e]=$(field extents "$(run "$B" --posix extents "$mnt/g$e")")
	echo "extref $e: stock debugfs ex lines of /g: $(debugfs -R 'ex /g' "$tmp/x$e.img" 2>/dev/null | wc -l)" >>"$log"
done
if [ -n "$CACHE" ] && [ -n "$xmade" ]; then
	umount "$mnt"
	cp --sparse=always "$tmp/xfs.img" "$CACHE/xfs.img"
	mount "$loop" "$mnt"
fi
sync

# ----- case 1: one reflink, interleaved -----
: >>"$tmp/percall"; : >>"$tmp/pershell"
for e in $EXTENTS; do
	want 1 || continue
	echo "# case 1: reflink of the $e-extent file" >&2
	img=$tmp/x$e.img
	: >"$tmp/xc"; : >"$tmp/kc"; : >"$tmp/xs"; : >"$tmp/ks"
	for r in $(seq "$REPS"); do
		sync
		l=$(run "$B" "$img" reflink g c.$r)
		field op "$l" >>"$tmp/xc"
		sync
		l=$(run "$B" --posix reflink "$mnt/g$e" "$mnt/g$e.c.$r")
		field op_fsync "$l" >>"$tmp/kc"
		sync
		wall "$SH" -w -R "reflink /g /s.$r" "$img" >>"$tmp/xs"
		sync
		wall xfs_io -f -c "reflink $mnt/g$e" -c fsync "$mnt/g$e.s.$r" >>"$tmp/ks"
	done
	read -r xmin xmed < <(minmed "$tmp/xc")
	read -r kmin kmed < <(minmed "$tmp/kc")
	row "1|$e ext (${xe[$e]}/${ke[$e]}): call / FICLONE+fsync|$xmin|$xmed|$kmin|$kmed|$(ratio "$xmin" "$kmin")|$(ratio "$xmed" "$kmed")|$(us_per "$xmed" "${xe[$e]}")|$(us_per "$kmed" "${ke[$e]}")"
	echo "$e $xmed ${xe[$e]} $kmed ${ke[$e]}" >>"$tmp/percall"
	read -r xmin xmed < <(minmed "$tmp/xs")
	read -r kmin kmed < <(minmed "$tmp/ks")
	row "1|$e ext: shell / xfs_io reflink+fsync|$xmin|$xmed|$kmin|$kmed|$(ratio "$xmin" "$kmin")|$(ratio "$xmed" "$kmed")|$(us_per "$xmed" "${xe[$e]}")|$(us_per "$kmed" "${ke[$e]}")"
	echo "$e $xmed ${xe[$e]} $kmed ${ke[$e]}" >>"$tmp/pershell"
	e2fsck -fn "$img" >/dev/null 2>&1 || echo "WARNING: e2fsck -fn x$e.img failed" | tee -a "$log"
done

# cost per extent at the largest E over that at 10,000
growth() {
	awk '{x[$1] = $2 / $3; k[$1] = $4 / $5; if ($1 > m) m = $1}
	     END {if (10000 in x && m > 10000)
		printf "%.2f %.2f\n", x[m] / x[10000], k[m] / k[10000];
		else print "- -"}' "$1"
}
big=$(for e in $EXTENTS; do echo "$e"; done | sort -n | tail -1)
read -r gx gk < <(growth "$tmp/percall")
want 1 && row "1|per-extent cost, $big over 10000: call|-|$gx|-|$gk|-|-|-|-"
read -r gx gk < <(growth "$tmp/pershell")
want 1 && row "1|per-extent cost, $big over 10000: shell|-|$gx|-|$gk|-|-|-|-"

# ----- case 2: N successive reflinks of the 10,000-extent file -----
if [ -e "$tmp/x10000.img" ]; then
    if want 2; then
	echo "# case 2: $N successive reflinks" >&2
	cp --sparse=always "$tmp/x10000.img" "$tmp/y.img"
	sync
	lx=$(run "$B" "$tmp/y.img" reflinks g "$N" r)
	sync
	lk=$(run "$B" --posix reflinks "$mnt/g10000" "$N" "$mnt/r")
	row "2|$N reflinks of 10000 ext: mean s, first 100|-|$(field first100 "$lx")|-|$(field first100 "$lk")|-|$(ratio "$(field first100 "$lx")" "$(field first100 "$lk")")|-|-"
	row "2|$N reflinks of 10000 ext: mean s, last 100|-|$(field last100 "$lx")|-|$(field last100 "$lk")|-|$(ratio "$(field last100 "$lx")" "$(field last100 "$lk")")|-|-"
	row "2|$N reflinks of 10000 ext: last/first|-|$(field ratio "$lx")|-|$(field ratio "$lk")|-|-|-|-"
	row "2|$N reflinks of 10000 ext: median s, first 100|-|$(field first100_med "$lx")|-|$(field first100_med "$lk")|-|$(ratio "$(field first100_med "$lx")" "$(field first100_med "$lk")")|-|-"
	row "2|$N reflinks of 10000 ext: median s, last 100|-|$(field last100_med "$lx")|-|$(field last100_med "$lk")|-|$(ratio "$(field last100_med "$lx")" "$(field last100_med "$lk")")|-|-"
	row "2|$N reflinks of 10000 ext: last/first, medians|-|$(field ratio_med "$lx")|-|$(field ratio_med "$lk")|-|-|-|-"
	# the same on /dev/shm, where fsync is free: the library's CPU alone
	cp --sparse=always "$tmp/x10000.img" "$shm/y.img"
	lx=$(run "$B" "$shm/y.img" reflinks g "$N" r)
	rm -f "$shm/y.img"
	row "2|$N reflinks, tmpfs image: medians s, first 100|-|$(field first100_med "$lx")|-|-|-|-|-|-"
	row "2|$N reflinks, tmpfs image: medians s, last 100|-|$(field last100_med "$lx")|-|-|-|-|-|-"
	row "2|$N reflinks, tmpfs image: last/first, medians|-|$(field ratio_med "$lx")|-|-|-|-|-|-"
	e2fsck -fn "$tmp/y.img" >/dev/null 2>&1 || echo "WARNING: e2fsck -fn y.img failed" | tee -a "$log"
	rm -f "$tmp/y.img"
    fi

	# ----- case 3: 4 KiB copy-on-write into a shared file -----
    if want 3; then
	echo "# case 3: 4 KiB copy-on-write" >&2
	if ! want 1; then	# the first copies, as case 1 makes them
		"$B" "$tmp/x10000.img" reflink g c.1 >/dev/null
		"$B" --posix reflink "$mnt/g10000" "$mnt/g10000.c.1" >/dev/null
	fi
	: >"$tmp/xw"; : >"$tmp/kw"
	for r in $(seq "$REPS"); do
		off=$(( (512 + 8 * r) * 1048576 ))
		sync
		l=$(run "$B" "$tmp/x10000.img" cow c.1 $off 4096)
		field op "$l" >>"$tmp/xw"
		sync
		l=$(run "$B" --posix cow "$mnt/g10000.c.1" $off 4096)
		field op_fsync "$l" >>"$tmp/kw"
	done
	read -r xmin xmed < <(minmed "$tmp/xw")
	read -r kmin kmed < <(minmed "$tmp/kw")
	row "3|4K CoW in shared 10000 ext: call / pwrite+fsync|$xmin|$xmed|$kmin|$kmed|$(ratio "$xmin" "$kmin")|$(ratio "$xmed" "$kmed")|-|-"
    fi
fi

cat <<EOF
# Reflink benchmark: extref (offline image file) vs XFS (kernel FICLONE,
# loop-mounted 8 GiB image, mkfs.xfs -m reflink=1), images on the same
# host filesystem.  Seconds; $REPS repetitions, interleaved; "ext
# (a/b)": extents of the source on extref (libextref's mappings) / on XFS
# (FIEMAP).  Ratios: extref over xfs, of the minima and of the medians
# (issue 14's target: 0.5 or less).  us/ext: median per extent.
#  call:  extref = extref_reflink alone (commits with its fsyncs);
#         xfs = open(O_CREAT) + ioctl(FICLONE) + fsync + close.
#  shell: extref = debugfs.extref -w -R reflink, the whole process;
#         xfs = xfs_io -f -c reflink -c fsync, the whole process.
#  case 2: one process each side, xfs without fsync (growth only).
EOF
printf '%-2s %-48s %9s %9s %9s %9s %6s %6s %8s %8s\n' \
	"" case "x min" "x med" "xfs min" "xfs med" "r min" "r med" \
	"x us/ext" "k us/ext"
while IFS='|' read -r c name a b d f g h i j; do
	printf '%-2s %-48s %9s %9s %9s %9s %6s %6s %8s %8s\n' \
		"$c" "$name" "$a" "$b" "$d" "$f" "$g" "$h" "$i" "$j"
done <"$rows"
echo
echo "# raw figures"
cat "$log"
