#!/bin/bash
# bench/bench_tree.sh --- reference-count tree throughput and space.
#
# For 10^4, 10^5 and 10^6 records: raise and lower throughput (operations
# per second, committing every 1000 operations and, at 10^4, after every
# operation as a one-shot tool would) and on-disk bytes per record.
# Run from a built tree: bash bench/bench_tree.sh
set -euo pipefail
cd "$(dirname "$0")/.."
make -s bench/tree_bench mkfs/mkfs.extref

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

img=$tmp/tree.img
mkfs/mkfs.extref -q -b 4096 -U 6c1ba0a3-5ae5-4d5c-9a34-9d2e0c0a7b11 "$img" 16G

echo "# reference-count tree: shuffled one-block records, 4 KiB nodes"
for n in 10000 100000 1000000; do
	cp --sparse=always "$img" "$tmp/run.img"
	bench/tree_bench "$tmp/run.img" "$n" 1000
done
cp --sparse=always "$img" "$tmp/run.img"
bench/tree_bench "$tmp/run.img" 10000 1
