#!/bin/bash
# fstests_fuse.sh --- fstests (xfstests) against extref-fuse (issue 31): FSTYP=fuse,
# FUSE_SUBTYP=.extref, the LD_PRELOAD shim loaded for every command fstests
# runs (so xfs_io reflink/dedupe/fiemap, cp --reflink and fsx's clone and
# dedupe reach the server), and fsck.extref -n on both images after each test.
#
# Usage: bash bench/fstests_fuse.sh [options] [GROUP | TEST ...]
#   GROUP   an fstests group of tests/generic (quick, clone, copy_range, ...)
#   TEST    one test, generic/430; default: quick clone copy_range (each test
#           once, in the order given)
# Options:
#   -o DIR  the results (default WORKDIR/results-DATE): results.tsv (test,
#           status pass/fail/notrun, seconds, reason, fsck.extref -n of the
#           TEST and SCRATCH images), summary.txt, log, fstests' results/ of
#           each test, a copy of an image fsck.extref -n complained about
#   -n      list the tests and exit
#   --report DIR  print DIR/results.tsv (a run's, finished or not) as
#           markdown: counts, failures, not-run tests grouped by reason,
#           fsck.extref -n complaints
#   -h, --help  this text
# Environment:
#   XFSTESTS_DIR   a built fstests tree (default /work/xfstests-src; built with
#                  make when its ltp/fsx is missing)
#   EXTREF_BUILD_DIR  the extref build (default: the repository's top; else
#                  the installed tools on PATH)
#   WORKDIR        images and mount points (default /tmp/extref-fstests)
#   SIZE           each image's size (default 4G, sparse)
#   FUSE_OPTS      mount options (default allow_other,default_permissions)
#   EXCLUDE        tests to skip (space separated), reported as notrun
#   TEST_TIMEOUT   seconds a test may run (default 1800), then failed
#   ISOLATE        1 (default): run in a mount namespace of its own (other
#                  FUSE mounts out of sight: a busy one would stall xfs_io
#                  and df); 0: in the caller's
#   SUBTYPE        the mount type's subtype (default extref; another lets two
#                  runs, each with its own XFSTESTS_DIR and WORKDIR, share the
#                  machine: mount.fuse.SUBTYPE runs extref-fuse)
#
# fstests mounts with mount -t fuse.SUBTYPE IMAGE DIR, and mount(8) looks for
# its helper in /sbin only: the script installs /sbin/mount.fuse.SUBTYPE
# (which runs this build's mount.fuse.extref without the shim) for the run
# when none is there, and removes it at the end.  Every ./check runs one
# test, and unmounts both images when it ends; the script then waits for the
# servers to exit and runs fsck.extref -n on each image.  After a complaint
# the image is copied to the results and made again, so that the next tests
# start on a clean one.  Needs root (mount).
set -eu

usage() { sed -n '2,/^set -eu/{/^set -eu/d;s/^# \{0,1\}//;p}' "$0"; }

out= listonly=0 report_dir=

# report TSV: the results as markdown.
report() {
	awk -F'\t' '
	NR == 1 { next }
	{ n[$2]++; total++ }
	$2 == "pass" { pass = pass (pass ? " " : "") $1 }
	$2 == "fail" { fail[++nf] = "| " $1 " | " $4 " |" }
	$2 == "notrun" { r = $4; sub(/[ \t]+$/, "", r)
		if (!(r in why)) order[++nr] = r
		why[r] = why[r] (why[r] ? " " : "") $1 }
	$5 != "ok" || $6 != "ok" { bad[++nb] = "| " $1 " | " $5 " | " $6 " |" }
	END {
		printf "%d tests: %d pass, %d fail, %d not run; fsck.extref -n complained after %d\n\n",
			total, n["pass"], n["fail"], n["notrun"], nb
		if (nb) { print "| test | TEST image | SCRATCH image |\n|---|---|---|"
			for (i = 1; i <= nb; i++) print bad[i]; print "" }
		print "Passed: " pass "\n"
		if (nf) { print "| failed | why |\n|---|---|"
			for (i = 1; i <= nf; i++) print fail[i]; print "" }
		if (nr) { print "| not run because | tests |\n|---|---|"
			for (i = 1; i <= nr; i++) print "| " order[i] " | " why[order[i]] " |" }
	}' "$1"
}
while [ $# -gt 0 ]; do
	case $1 in
	-h|--help) usage; exit 0 ;;
	-o) out=$2; shift 2 ;;
	-n) listonly=1; shift ;;
	--report) report_dir=$2; shift 2 ;;
	--) shift; break ;;
	-*) echo "fstests_fuse.sh: unknown option $1" >&2; exit 2 ;;
	*) break ;;
	esac
done
if [ -n "$report_dir" ]; then report "$report_dir/results.tsv"; exit 0; fi
[ $# -gt 0 ] || set -- quick clone copy_range

here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
xfst=${XFSTESTS_DIR:-/work/xfstests-src}
build=${EXTREF_BUILD_DIR:-$top}
work=${WORKDIR:-/tmp/extref-fstests}
size=${SIZE:-4G}
fopts=${FUSE_OPTS:-allow_other,default_permissions}
timeout_s=${TEST_TIMEOUT:-1800}
sub=${SUBTYPE:-extref}

. "$here/lib.sh"
tool() { bench_tool "$@"; }
mkfs=$(tool mkfs.extref mkfs)
fsck=$(tool fsck.extref fsck)
server=$(tool extref-fuse fuse)
helper=$(dirname "$server")/mount.fuse.extref
[ -x "$helper" ] || helper=$top/fuse/mount.fuse.extref
[ -x "$helper" ] || helper=$(tool mount.fuse.extref fuse)
shim=$build/fuse/libextref-preload.so
[ -f "$shim" ] || shim=$(for d in /usr/local/lib /usr/lib /usr/lib/*-linux-gnu; do
	[ -f "$d/libextref-preload.so" ] && echo "$d/libextref-preload.so"; done | head -n1)
[ -n "$shim" ] || { echo "fstests_fuse.sh: libextref-preload.so not found" >&2; exit 1; }

[ -d "$xfst" ] || { echo "fstests_fuse.sh: no fstests in $xfst (XFSTESTS_DIR)" >&2; exit 1; }
[ -x "$xfst/ltp/fsx" ] || make -C "$xfst" -j"$(nproc)" >/dev/null

# The tests named by the arguments, each once.
expand() {
	local a
	for a in "$@"; do
		case $a in
		*/*) echo "$a" ;;
		*) awk -v g="$a" '{ for (i = 2; i <= NF; i++) if ($i == g) print $1 }' \
			"$xfst/tests/generic/group.list" | sed 's|^|generic/|' ;;
		esac
	done | awk '!seen[$0]++'
}
tests=$(expand "$@")
[ -n "$tests" ] || { echo "fstests_fuse.sh: no tests in $*" >&2; exit 1; }
if [ $listonly = 1 ]; then echo "$tests"; exit 0; fi
[ "$(id -u)" = 0 ] || { echo "fstests_fuse.sh: needs root (mount)" >&2; exit 1; }

# In a mount namespace of its own: xfs_io and df stat every mount at
# start, and wait on any FUSE server busy with a long request (another
# run's, anyone's); the run's mounts are its own, and the FUSE mounts it
# inherits are dropped from its view only.
if [ "${FSTESTS_FUSE_NS:-}" != 1 ] && [ "${ISOLATE:-1}" = 1 ]; then
	FSTESTS_FUSE_NS=1 exec unshare -m --propagation private \
		bash "$0" ${out:+-o "$out"} "$@"
fi
if [ "${FSTESTS_FUSE_NS:-}" = 1 ]; then
	awk '$3 ~ /^fuse/ { print $2 }' /proc/self/mounts |
		while read -r m; do umount -l "$m" 2>/dev/null || true; done
fi

out=${out:-$work/results-$(date -u +%Y%m%dT%H%M%S)}
mkdir -p "$out" "$work/test" "$work/scratch"
out=$(cd "$out" && pwd)
timg=$work/test.img simg=$work/scratch.img

# mount(8) runs /sbin/mount.fuse.SUBTYPE; ours drops the shim for the server.
sbin=/sbin/mount.fuse.$sub installed=0
if [ ! -e "$sbin" ]; then
	printf '#!/bin/sh\n# bench/fstests_fuse.sh, for its run\nunset LD_PRELOAD\nPATH=%s:$PATH\nexport PATH\nexec %s "$@"\n' \
		"$(dirname "$server")" "$helper" >"$sbin"
	chmod 755 "$sbin"
	installed=1
fi

# the server holds the image's flock(2) until it has closed it
busy() { ! flock -n -x "$1" true 2>/dev/null; }
unmount_all() {
	local m
	for m in "$work/test" "$work/scratch"; do
		mountpoint -q "$m" && umount "$m" 2>/dev/null || true
	done
	for m in "$timg" "$simg"; do	# the server closes the image after umount
		for _ in $(seq 300); do busy "$m" || break; sleep 0.1; done
	done
}
cleanup() {
	unmount_all
	[ $installed = 0 ] || rm -f "$sbin"
}
trap cleanup EXIT

mkimg() { rm -f "$1"; "$mkfs" -q "$1" "$size" >/dev/null; }
unmount_all
mkimg "$timg"
mkimg "$simg"

# fstests compares df -T's type with FSTYP, but the kernel names a FUSE
# mount with a subtype fuse.SUBTYPE: its df answers fuse for fuse.extref.
# A df naming no file asks every mount, and waits on any FUSE server that
# is busy (another run's): this one asks only this run's mounts.
cat >"$work/df" <<EOF
#!/bin/bash
# bench/fstests_fuse.sh's DF_PROG
files=0
for a; do case \$a in -*) ;; *) files=1 ;; esac; done
if [ \$files = 0 ]; then
	for m in "$work/test" "$work/scratch"; do
		mountpoint -q "\$m" && set -- "\$@" "\$m" && files=1
	done
	[ \$files = 1 ] || set -- "\$@" /
fi
$(command -v df) "\$@" | awk '\$2 ~ /^fuse\./ { \$2 = "fuse" } 1'
EOF
chmod 755 "$work/df"

cat >"$xfst/local.config" <<EOF
# written by extref's bench/fstests_fuse.sh
export FSTYP=fuse
export FUSE_SUBTYP=.$sub
export TEST_DEV=$timg
export TEST_DIR=$work/test
export SCRATCH_DEV=$simg
export SCRATCH_MNT=$work/scratch
export TEST_FS_MOUNT_OPTS="-o $fopts"
export MOUNT_OPTIONS="-o $fopts"
export LD_PRELOAD=$shim
export RESULT_BASE=$out/results
export DF_PROG="$work/df -T -P"
EOF

# fsck.extref -n on one image: "ok", or "FAIL(rc)" with its output kept, a
# copy of the image, and the image made again.
check_image() {	# IMAGE NAME TEST
	local rc=0 log="$out/fsck-$2-${3//\//-}.txt"
	"$fsck" -n "$1" >"$log" 2>&1 || rc=$?
	if [ $rc = 0 ]; then rm -f "$log"; echo ok; return; fi
	cp --sparse=always "$1" "$out/$2-after-${3//\//-}.img"
	mkimg "$1"
	echo "FAIL($rc)"
}

tsv=$out/results.tsv
printf 'test\tstatus\tseconds\treason\tfsck_test\tfsck_scratch\n' >"$tsv"
ntests=$(echo "$tests" | wc -l) i=0
echo "fstests_fuse.sh: $ntests tests, results in $out" | tee "$out/log"
for t in $tests; do
	i=$((i + 1))
	status= reason= start=$(date +%s)
	if [[ " ${EXCLUDE:-} " == *" $t "* ]]; then
		status=notrun reason="excluded (EXCLUDE)"
	else
		rc=0
		(cd "$xfst" && timeout -k 10 "$timeout_s" ./check "$t") \
			>"$out/check.out" 2>&1 || rc=$?
		cat "$out/check.out" >>"$out/log"
		res=$out/results/$t
		if [ $rc = 124 ] || [ $rc = 137 ]; then
			status=fail reason="timed out after ${timeout_s}s"
		elif [ -f "$res.notrun" ]; then
			status=notrun reason=$(head -n1 "$res.notrun")
		elif grep -q "^Passed all 1 tests" "$out/check.out"; then
			status=pass
		else
			status=fail
			if [ -f "$res.out.bad" ]; then
				reason="output mismatch: $(diff "$xfst/tests/$t.out" "$res.out.bad" 2>/dev/null |
					grep '^[<>]' | head -n2 | tr '\n\t' '  ' | cut -c1-200)"
			else
				reason=$(grep -v "^\(FSTYP\|PLATFORM\|MKFS_OPTIONS\|MOUNT_OPTIONS\|Ran:\|Failures:\|Failed\)" \
					"$out/check.out" | grep . | tail -n2 | tr '\n\t' '  ' | cut -c1-200)
			fi
		fi
	fi
	unmount_all
	ft=$(check_image "$timg" test "$t")
	fs=$(check_image "$simg" scratch "$t")
	secs=$(( $(date +%s) - start ))
	printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$t" "$status" "$secs" "$reason" "$ft" "$fs" >>"$tsv"
	printf '[%d/%d] %s %s %ss %s fsck: %s %s\n' "$i" "$ntests" "$t" "$status" \
		"$secs" "$reason" "$ft" "$fs" | tee -a "$out/log"
done

{
	echo "fstests against extref-fuse, $(date -u '+%Y-%m-%d %H:%M UTC'), kernel $(uname -r)"
	echo "fstests $(git -C "$xfst" rev-parse HEAD 2>/dev/null || cat "$xfst/.commit" 2>/dev/null || echo '?')"
	echo "extref $(git -C "$top" rev-parse HEAD 2>/dev/null || echo '?')"
	for s in pass fail notrun; do
		printf '%s: %s\n' "$s" "$(awk -F'\t' -v s=$s 'NR > 1 && $2 == s' "$tsv" | wc -l)"
	done
	printf 'fsck.extref -n complaints: %s\n' \
		"$(awk -F'\t' 'NR > 1 && ($5 != "ok" || $6 != "ok")' "$tsv" | wc -l)"
} | tee "$out/summary.txt"
report "$tsv" >"$out/results.md"
