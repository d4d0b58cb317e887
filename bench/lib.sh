# lib.sh --- what several bench scripts share; sourced, not run.
#
# bench_build ROOT: the build directory: EXTREF_BUILD_DIR, else the first
#   of ROOT, ROOT/build-test, ROOT/build that holds a Makefile; empty when
#   none does.
# bench_tool NAME SUBDIR: the build's SUBDIR/NAME (the build in $build),
#   else NAME on PATH (the installed tools); else a message naming the
#   calling script, and exit 1.

bench_build() {
	local d
	if [ -n "${EXTREF_BUILD_DIR:-}" ]; then
		echo "$EXTREF_BUILD_DIR"
		return
	fi
	for d in "$1" "$1/build-test" "$1/build"; do
		[ -f "$d/Makefile" ] && { echo "$d"; return; }
	done
}

bench_tool() {
	if [ -x "$build/$2/$1" ]; then echo "$build/$2/$1"
	elif command -v "$1" >/dev/null; then command -v "$1"
	else
		echo "$(basename "$0"): $1 not found (EXTREF_BUILD_DIR?)" >&2
		exit 1
	fi
}
