#!/bin/bash
# bench/fuzz_never_worse.sh --- long runs of the "never worse" fuzzer.
#
# Usage: bash bench/fuzz_never_worse.sh [SECONDS] [FIRST_SEED]
#
# Runs tests/neverworse.py for SECONDS (default 600) from FIRST_SEED
# (default: the clock, printed): each trial is a valid extref image with
# reflinks, one to three random edits by stock tools (debugfs -w sif,
# set_bg, freeb, setb, zap_block; dd of a block; tune2fs), then one
# random extref operation through the default open (debugfs.extref -w,
# mkfs.extref --update).  The operation must refuse and leave the image
# byte-identical, or succeed with every other file's bytes (stock debugfs
# dump) and stock e2fsck -fn no worse than before.  Each failure is
# printed with its seed, edits and operation, minimised to the fewest
# edits that still fail, with the class it most likely belongs to; the
# summary counts them by class.  Failures go to
# bench/out/neverworse-SEED.json (a record tests/test_never_worse.py's
# regression cases are written from).  BUILD=DIR tests another build's
# tools (default: the configured build directory).  Exits 1 when a trial
# failed.
set -uo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-600}
SEED=${2:-$(date +%s)}
OUT=bench/out
mkdir -p "$OUT"
echo "neverworse: $SECS s from seed $SEED"
exec /usr/bin/python3 tests/neverworse.py --seconds "$SECS" --seed "$SEED" \
	--minimize --json "$OUT/neverworse-$SEED.json" \
	${BUILD:+--build "$BUILD"}
