#!/bin/bash
# bench/kernel_diff.sh --- the differential test against the kernel
# (tests/test_kernel_diff.py) with many seeds and long sequences: extref's
# clone_range, dedupe, pwrite, truncate, punch, unshare and reflink against
# XFS's (loop mount) after every operation.
#
#     bash bench/kernel_diff.sh              # seeds 1-100, 400 ops each
#     SEEDS=500-600 OPS=1000 bash bench/kernel_diff.sh
#
# Needs root (loop mount), mkfs.xfs, stock debugfs and e2fsck.  A failure
# prints the seed, the operation's index and the operation; rerun one
# seed with EXTREF_DIFF_SEEDS=SEED EXTREF_DIFF_OPS=N.
set -euo pipefail
cd "$(dirname "$0")/.."
make -s
SEEDS=${SEEDS:-1-100}
OPS=${OPS:-400}
start=$(date +%s)
EXTREF_DIFF_SEEDS=$SEEDS EXTREF_DIFF_OPS=$OPS \
	"${PYTHON3:-/usr/bin/python3}" -m pytest -q -p no:cacheprovider tests/test_kernel_diff.py \
	-k "test_kernel_diff and not issue and not documented" "$@"
echo "seeds $SEEDS, $OPS operations each: $(( $(date +%s) - start )) s"
