#!/usr/bin/env bash
# A quick sort sweep on the GPU machine (after `. .gpu/setup`): the sort's CUDA conformance cases,
# tile shapes for keys and pairs at 2^28 (KEY_TUNINGS, PAIR_TUNINGS), and CUB's DeviceRadixSort on
# the same keys in the same run. Logs under $OUT (default /tmp/qd-sort-sweep).
set -uo pipefail
OUT="${OUT:-/tmp/qd-sort-sweep}"
SEED="${SEED:-20261128}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export PATH="$PATH:/usr/local/cuda/bin"
mkdir -p "$OUT"
(nvcc -O3 -arch=sm_90 -o "$OUT/cub_sort" "$HERE/bench/cub_sort.cu" >"$OUT/nvcc.txt" 2>&1) &
nvcc_pid=$!
qd conformance --backend cuda --filter sort/ >"$OUT/conformance.txt" 2>&1
echo "conformance sort/: $(tail -n 1 "$OUT/conformance.txt")" | tee -a "$OUT/summary.txt"
N=$((1 << 28))
qd bench sort --backend cuda --sizes "$N" --reps 10 --warmup 2 --seed "$SEED" \
    --tunings "${KEY_TUNINGS:-default,384x16,384x20,384x24}" 2>>"$OUT/stderr.txt" | tee -a "$OUT/summary.txt"
qd bench sort --backend cuda --values u32 --sizes "$N" --reps 10 --warmup 2 --seed "$SEED" \
    --tunings "${PAIR_TUNINGS:-default,256x16,384x16,384x20}" 2>>"$OUT/stderr.txt" | tee -a "$OUT/summary.txt"
wait "$nvcc_pid"
for mode in keys pairs; do
    "$OUT/cub_sort" $mode "$N" 1.0 10 "$SEED" 2>>"$OUT/stderr.txt" | tee -a "$OUT/summary.txt"
done
rm -f "$OUT/cub_sort"
