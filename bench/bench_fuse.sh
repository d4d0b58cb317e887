#!/bin/bash
# bench/bench_fuse.sh --- extref-fuse against stock fuse2fs (issue 31): the
# same workloads through each mount, on images of the same size and
# features, and the ratio of their times (extref-fuse / fuse2fs).
#
# Usage: bash bench/bench_fuse.sh [--help]   (as root: it mounts, and drops
#        the page cache before every timed step)
#
# Workloads, each timed once on each side after `sync; echo 3 >
# /proc/sys/vm/drop_caches` (wall-clock seconds):
#   extract  tar -xf of a tree of Debian packages (a fixed list of 30, about
#            400 MB and 30,000 files; SMALL=1: 4 of them) -- target <= 1.0
#   write    a 1 GiB file, dd bs=1M conv=fsync       -- target <= 1.0
#   read     it read back, dd to /dev/null           -- target <= 1.0
#   cp       plain cp of it, then sync of the copy   -- target <= 0.05
#            (on extref-fuse a clone through copy_file_range, not a copy)
#   rm       rm -r of the extracted tree             -- no target
#   umount   fusermount3 -u until the server exits   -- no target
# then fsck.extref -n and stock e2fsck -fn on the extref image and
# e2fsck -fn on the ext4 one: any not clean is a failure.  Printed: the
# table (workload, extref-fuse s, fuse2fs s, ratio, target, PASS/MISS).
# Exit 0 even on a MISS (this is a bench); non-zero on a failure.
#
# Environment:
#   EXTREF_BUILD_DIR  the build (default: the source tree, build-test/ or
#                     build/, whichever has a Makefile)
#   SMALL=1           a 64 MiB file and a small tree: a quick check
#   SIZE=SIZE         the images' size (default 4G; SMALL: 1G), sparse
#                     files in a temporary directory under TMPDIR
#                     (default /var/tmp), removed at exit
#   FUSEBENCH_DEBS=DIR  the .deb cache (default /var/tmp/fusebench-debs):
#                     a package of the list found neither there nor in
#                     /var/cache/apt/archives is fetched there once with
#                     `apt-get download` (nothing is installed)
#   EXTREF_FUSE_OPTS=OPTS  extra -o options for extref-fuse
#   PROFILE=strace|perf  profile extref-fuse's server during its
#                     extraction (strace -c -w -f -p: wall-clock time in
#                     each system call; or perf record -g -p);
#                     the report goes to PROFILE_OUT (default
#                     ./fusebench-PROFILE.txt) and its top is printed.
#                     That extraction's time is then not a measurement.
#
# fuse2fs gets an ordinary mkfs.ext4 image with the extref image's
# features less shared_blocks, never the extref image: fuse2fs writes a
# shared block in place, changing every file that shares it
# (tests/test_foreign_write.py).  Each server runs in the foreground
# (-f) as a child of this script; the exit trap unmounts what is still
# mounted and waits for (then kills) only those children.
set -euo pipefail

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }
case "${1:-}" in
-h|--help) usage; exit 0 ;;
"") ;;
*) echo "bench_fuse.sh: no arguments (see --help)" >&2; exit 2 ;;
esac

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
. "$here/lib.sh"
build=$(bench_build "$root")
[ -n "$build" ] || { echo "bench_fuse.sh: no build found: configure and make (docs/HACKING)" >&2; exit 1; }
make -s -C "$build" fuse/extref-fuse mkfs/mkfs.extref fsck/fsck.extref
xfuse=$build/fuse/extref-fuse
mkfs=$build/mkfs/mkfs.extref
fsck=$build/fsck/fsck.extref
for t in "$xfuse" "$mkfs" "$fsck"; do
	[ -x "$t" ] || { echo "bench_fuse.sh: $t not built (libfuse3-dev missing at configure?)" >&2; exit 1; }
done

# What is missing is said, never installed (scripts/install-deps does).
missing=
for t in fuse2fs:fuse2fs fusermount3:fuse3 mkfs.ext4:e2fsprogs \
	 e2fsck:e2fsprogs dumpe2fs:e2fsprogs dpkg-deb:dpkg tar:tar; do
	command -v "${t%%:*}" >/dev/null 2>&1 || missing="$missing ${t%%:*} (package ${t#*:})"
done
[ -e /dev/fuse ] || missing="$missing /dev/fuse"
if [ -n "$missing" ]; then
	echo "bench_fuse.sh: missing:$missing; scripts/install-deps installs the packages" >&2
	exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "bench_fuse.sh: run as root (mounts; /proc/sys/vm/drop_caches)" >&2
	exit 1
fi

SMALL=${SMALL:-}
if [ -n "$SMALL" ]; then
	size=${SIZE:-1G}
	file_mb=64
else
	size=${SIZE:-4G}
	file_mb=1024
fi
debs=${FUSEBENCH_DEBS:-/var/tmp/fusebench-debs}
profile=${PROFILE:-}
case "$profile" in
""|strace|perf) ;;
*) echo "bench_fuse.sh: PROFILE is strace or perf" >&2; exit 2 ;;
esac
[ -z "$profile" ] || command -v "$profile" >/dev/null 2>&1 ||
	{ echo "bench_fuse.sh: missing: $profile" >&2; exit 1; }
profile_out=${PROFILE_OUT:-$PWD/fusebench-$profile.txt}

# Debian bookworm packages of a few to 50 MB each, many files: source
# trees, headers, Python, Perl and Ruby modules.
PKGS="bison python3-fonttools cython3 libabsl-dev libarmadillo-dev
libasio-dev octave-dev libmsgpack-cxx-dev swig4.0 postgresql-client-15
python3-pythran libeigen3-dev perl-base libglib2.0-dev libglib2.0-data
python3-networkx libopenmpi-dev systemd texinfo perl-modules-5.36
octave-common python3-numpy libruby3.1 python3-sympy libcgal-dev
libjs-mathjax meson libgsl-dev libgdcm-dev libkml-dev"
[ -z "$SMALL" ] || PKGS="bison python3-fonttools cython3 libasio-dev"

work=$(mktemp -d "${TMPDIR:-/var/tmp}/bench-fuse.XXXXXX")
declare -A pid=()		# side -> its server's pid (our child)
cleanup() {
	local s m _
	for s in "${!pid[@]}"; do
		m=$work/mnt-$s
		if grep -q " $m " /proc/mounts; then
			for _ in 1 2 3 4 5; do
				fusermount3 -u "$m" 2>/dev/null && break
				sleep 1
			done
			grep -q " $m " /proc/mounts && fusermount3 -uz "$m" 2>/dev/null || true
		fi
		for _ in $(seq 50); do
			kill -0 "${pid[$s]}" 2>/dev/null || break
			sleep 0.2
		done
		kill "${pid[$s]}" 2>/dev/null || true
		wait "${pid[$s]}" 2>/dev/null || true
	done
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

die() { echo "bench_fuse.sh: $*" >&2; exit 1; }
dropcaches() { sync; echo 3 > /proc/sys/vm/drop_caches; }
side_name() { if [ "$1" = x ]; then echo extref-fuse; else echo fuse2fs; fi; }
say() { echo "  ... $1 on $(side_name "$2")" >&2; }	# progress
# $(secs CMD...): the wall-clock seconds of CMD (its output discarded).
secs() {
	local t0=$EPOCHREALTIME
	"$@" >/dev/null 2>"$work/cmd.err" || { cat "$work/cmd.err" >&2; die "failed: $*"; }
	awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }'
}

# ----- the tree: the packages extracted, one tar -----
mkdir -p "$debs"
debfiles=()
fetch=()
for p in $PKGS; do
	f=$(ls "$debs/${p}"_*.deb /var/cache/apt/archives/"${p}"_*.deb 2>/dev/null |
		sort -V | tail -1 || true)
	if [ -n "$f" ]; then debfiles+=("$f"); else fetch+=("$p"); fi
done
if [ ${#fetch[@]} -gt 0 ]; then
	command -v apt-get >/dev/null 2>&1 || die "missing: apt-get, to fetch ${fetch[*]}"
	echo "fetching into $debs: ${fetch[*]}"
	(cd "$debs" && apt-get download -q "${fetch[@]}" >/dev/null) ||
		die "apt-get download failed (apt-get update first?); or put the .deb files of ${fetch[*]} in $debs"
	for p in "${fetch[@]}"; do
		f=$(ls "$debs/${p}"_*.deb 2>/dev/null | sort -V | tail -1 || true)
		[ -n "$f" ] || die "$p: no .deb in $debs after apt-get download"
		debfiles+=("$f")
	done
fi
mkdir "$work/stage"
for f in "${debfiles[@]}"; do
	dpkg-deb -x "$f" "$work/stage" || die "dpkg-deb -x $f failed"
done
tar -cf "$work/tree.tar" -C "$work/stage" .
nfiles=$(find "$work/stage" | wc -l)
tree_mb=$(du -sm "$work/stage" | cut -f1)
rm -rf "$work/stage"
echo "tree: ${#debfiles[@]} packages, $nfiles names, $tree_mb MB (tar $(( $(stat -c %s "$work/tree.tar") >> 20 )) MiB)"

# ----- the images -----
ximg=$work/extref.img
eimg=$work/ext4.img
"$mkfs" -q "$ximg" "$size"
hdr() { dumpe2fs -h "$ximg" 2>/dev/null | sed -n "s/^$1: *//p"; }
feat=$(hdr "Filesystem features" | tr ' ' '\n' | grep -v '^shared_blocks$' | grep . | paste -sd,)
jmb=$(( $(hdr "Total journal size" | tr -dc 0-9) ))
mkfs.ext4 -q -F -b "$(hdr "Block size")" -I "$(hdr "Inode size" | tr -dc 0-9)" \
	-N "$(hdr "Inode count")" -J "size=$jmb" -O "none,$feat" "$eimg" "$size" >/dev/null ||
	die "mkfs.ext4 failed"
echo "images: $size sparse, $(hdr "Block size")-byte blocks, ${jmb}M journal; features $feat (+ shared_blocks on the extref one)"

# ----- mounts -----
mount_side() {	# side: start its server in the foreground, await the mount
	local s=$1 m=$work/mnt-$1 _
	mkdir -p "$m"
	if [ "$s" = x ]; then
		"$xfuse" "$ximg" "$m" -f ${EXTREF_FUSE_OPTS:+-o "$EXTREF_FUSE_OPTS"} \
			>"$work/$s.log" 2>&1 &
	else
		fuse2fs "$eimg" "$m" -f -o rw >"$work/$s.log" 2>&1 &
	fi
	pid[$s]=$!
	for _ in $(seq 150); do
		grep -q " $m " /proc/mounts && return 0
		kill -0 "${pid[$s]}" 2>/dev/null || break
		sleep 0.2
	done
	cat "$work/$s.log" >&2
	die "the $(side_name "$s") mount did not come up"
}
umount_side() {	# side: unmount, wait for its server to exit
	local s=$1 m=$work/mnt-$1 _ rc=0
	for _ in $(seq 10); do
		fusermount3 -u "$m" 2>/dev/null && break
		sleep 0.5
	done
	grep -q " $m " /proc/mounts && die "could not unmount $m"
	wait "${pid[$s]}" || rc=$?
	unset "pid[$s]"
	[ $rc -eq 0 ] || { cat "$work/$s.log" >&2; die "$(side_name "$s") exited $rc"; }
}
umount_secs() {	# side: the time into T[umount,side] (no subshell: the
	local t0=$EPOCHREALTIME	# server is this shell's child)
	umount_side "$1"
	T[umount,$1]=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')
}

# The extraction, profiled on extref-fuse if asked.
extract() {	# side
	local m=$work/mnt-$1 prof='' t
	if [ "$1" = x ] && [ -n "$profile" ]; then
		if [ "$profile" = strace ]; then
			strace -c -w -f -p "${pid[x]}" -o "$profile_out" &
		else
			perf record -q -g -p "${pid[x]}" -o "$work/perf.data" >/dev/null 2>&1 &
		fi
		prof=$!
		sleep 1
	fi
	t=$(secs tar -xf "$work/tree.tar" -C "$m/tree")
	if [ -n "$prof" ]; then
		kill -INT "$prof"
		wait "$prof" || true
		if [ "$profile" = perf ]; then
			perf report -i "$work/perf.data" --stdio --no-children \
				--percent-limit 1 2>/dev/null > "$profile_out" || true
		fi
	fi
	echo "$t"
}

declare -A T=()
for s in x e; do mount_side "$s"; done
for s in x e; do
	m=$work/mnt-$s
	mkdir "$m/tree"
	say extract "$s"
	dropcaches; T[extract,$s]=$(extract "$s")
	n=$(find "$m/tree" | wc -l)
	[ "$n" -eq "$nfiles" ] || die "$(side_name "$s"): $n names extracted, not $nfiles"
done
for s in x e; do
	m=$work/mnt-$s
	say "write, read, cp, rm" "$s"
	dropcaches; T[write,$s]=$(secs dd if=/dev/zero of="$m/big" bs=1M count="$file_mb" conv=fsync)
	dropcaches; T[read,$s]=$(secs dd if="$m/big" of=/dev/null bs=1M)
	dropcaches; T[cp,$s]=$(secs sh -c 'cp "$1/big" "$1/big.copy" && sync "$1/big.copy"' sh "$m")
	if [ "$(stat -c %s "$m/big.copy")" -ne $(( file_mb << 20 )) ]; then
		die "$(side_name "$s"): the copy's size is wrong"
	fi
	dropcaches; T[rm,$s]=$(secs rm -r "$m/tree")
	if [ -e "$m/tree" ]; then die "$(side_name "$s"): rm -r left $m/tree"; fi
done
for s in x e; do umount_secs "$s"; done

# ----- the images after: every checker clean -----
"$fsck" -n "$ximg" >"$work/check.out" 2>&1 || { cat "$work/check.out" >&2; die "fsck.extref -n: the extref image is not clean"; }
e2fsck -fn "$ximg" >"$work/check.out" 2>&1 || { cat "$work/check.out" >&2; die "e2fsck -fn: the extref image is not clean"; }
e2fsck -fn "$eimg" >"$work/check.out" 2>&1 || { cat "$work/check.out" >&2; die "e2fsck -fn: the ext4 image is not clean"; }

# ----- the table -----
[ -z "$profile" ] || echo "(PROFILE=$profile: extref-fuse's extract time is not a measurement)"
echo "file: $file_mb MiB; extref-fuse options: ${EXTREF_FUSE_OPTS:-none}"
printf "%-8s %12s %10s %8s %8s %6s\n" workload extref-fuse_s fuse2fs_s ratio target result
for w in extract write read cp rm umount; do
	case $w in
	extract|write|read) tgt=1.0 ;;
	cp) tgt=0.05 ;;
	*) tgt=- ;;
	esac
	r=$(awk -v a="${T[$w,x]}" -v b="${T[$w,e]}" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "-" }')
	res=-
	if [ "$tgt" != - ] && [ "$r" != - ]; then
		res=$(awk -v r="$r" -v t="$tgt" 'BEGIN { print (r <= t) ? "PASS" : "MISS" }')
	fi
	[ "$tgt" = - ] || tgt="<= $tgt"
	printf "%-8s %12s %10s %8s %8s %6s\n" "$w" "${T[$w,x]}" "${T[$w,e]}" "$r" "$tgt" "$res"
done
echo "checks: fsck.extref -n, e2fsck -fn (both images): clean"
if [ -n "$profile" ]; then
	echo "profile of extref-fuse's extraction: $profile_out"
	if [ "$profile" = strace ]; then
		head -20 "$profile_out"
	else
		grep -v '^#' "$profile_out" | grep . | head -40
	fi
fi
