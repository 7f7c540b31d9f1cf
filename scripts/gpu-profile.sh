#!/usr/bin/env bash
# Nsight Compute profiles of qd's algorithm kernels beside CUB's, for the records of issues 13 and
# 17: where the time goes (stall reasons, bytes, occupancy, per-instruction samples), not timings.
# Run on the GPU machine after `. .gpu/setup` (gpu-bundle --vulkan) from the repository root:
#
#   OUT=$OUT/profile bash scripts/gpu-profile.sh
#
# PROFILE="scan select reduce-by-key sort" picks the kernels. Each profile is one launch after
# warm-up (`--launch-skip`), `--set full` with the clocks left alone (`--clock-control none`),
# saved as .ncu-rep, as text (details) and as per-SASS-instruction CSV (source page). qd's cubins
# are kept under $OUT/qd-cache for cuobjdump.
set -uo pipefail
OUT="${OUT:-/tmp/qd-profile}"
SEED="${SEED:-20261128}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mkdir -p "$OUT"
export PATH="$PATH:/usr/local/cuda/bin"
export QD_CACHE_DIR="$OUT/qd-cache"
want() { [[ -z "${PROFILE:-}" || " $PROFILE " == *" $1 "* ]]; }
log() { echo "[$SECONDS s] $*" | tee -a "$OUT/progress.txt"; }

nvcc -O3 -std=c++17 -arch=sm_90 -lineinfo -DONE_DTYPE -DDTYPE_I32 -o "$OUT/cub_bench_i32" "$HERE/bench/cub_bench.cu" \
    >"$OUT/nvcc.txt" 2>&1 || log "nvcc cub_bench failed"
nvcc -O3 -arch=sm_90 -lineinfo -o "$OUT/cub_sort" "$HERE/bench/cub_sort.cu" >>"$OUT/nvcc.txt" 2>&1 ||
    log "nvcc cub_sort failed"
log "built CUB benches"

# profile NAME KERNEL_REGEX SKIP COMMAND...
profile() {
    local name=$1 regex=$2 skip=$3
    shift 3
    timeout 120 ncu --clock-control none --set full --import-source no -k "regex:$regex" --launch-skip "$skip" \
        --launch-count 1 -f -o "$OUT/$name" "$@" >"$OUT/$name.run.txt" 2>&1
    log "$name: ncu exit $?"
    ncu --import "$OUT/$name.ncu-rep" --page details >"$OUT/$name.txt" 2>&1
    ncu --import "$OUT/$name.ncu-rep" --page source --csv --print-source sass >"$OUT/$name.sass.csv" 2>&1
}

# ncu runs executables, not shell functions: these print a command line.
QD="$(command -v qd)"
bench() { echo "$QD" bench "$1" --backend cuda --dtype i32 --log2n 26 --reps 3 --seed "$SEED"; }
cub() { echo "$OUT/cub_bench_i32" "$1" i32 26 3 "$SEED"; }
want copy && profile qd-copy 'copy' 2 $(bench copy)
if want scan; then
    profile qd-scan 'qd_inclusive_scan' 2 $(bench scan)
    profile cub-scan 'DeviceScanKernel' 2 $(cub scan)
fi
if want select; then
    profile qd-select 'qd_select' 2 $(bench select)
    profile cub-select 'DeviceSelectSweepKernel' 2 $(cub select)
fi
if want reduce-by-key; then
    profile qd-rbk 'qd_reduce_by_key' 2 $(bench reduce-by-key)
    profile cub-rbk 'DeviceReduceByKeyKernel' 2 $(cub reduce-by-key)
fi
if want sort; then
    sort_bench() { echo "$QD" bench sort --backend cuda --values "$1" --sizes 2^28 --reps 1 --warmup 1 --seed "$SEED"; }
    # Skip the warm-up sort's passes (4 per sort) and take the second pass of the timed sort. CUB
    # sorts 2^28 keys in two portions (its portion is just under 2^28 keys), so its passes
    # alternate a full launch and a one-tile launch: skipping 4 takes the third pass's full one.
    profile qd-sort-pass 'sort_pass' 5 $(sort_bench none)
    profile qd-sort-hist 'sort_histogram' 1 $(sort_bench none)
    profile qd-sort-pass-pairs 'sort_pass' 5 $(sort_bench u32)
    [[ -n "${SKIP_CUB_SORT:-}" ]] || profile cub-sort-pass 'Onesweep' 4 "$OUT/cub_sort" keys $((1 << 28)) 1.0 2 "$SEED"
    [[ -n "${SKIP_CUB_SORT:-}" ]] || profile cub-sort-hist 'RadixSortHistogram' 1 "$OUT/cub_sort" keys $((1 << 28)) 1.0 2 "$SEED"
    [[ -n "${SKIP_CUB_SORT:-}" ]] || profile cub-sort-pass-pairs 'Onesweep' 4 "$OUT/cub_sort" pairs $((1 << 28)) 1.0 2 "$SEED"
fi
# The SASS of every kernel profiled (qd's cubins and CUB's binaries).
for f in $(find "$OUT/qd-cache" -name '*.cubin' 2>/dev/null); do
    cuobjdump -sass "$f" >"$f.sass" 2>&1
done
cuobjdump -sass "$OUT/cub_sort" >"$OUT/cub_sort.sass" 2>&1
cuobjdump -sass "$OUT/cub_bench_i32" >"$OUT/cub_bench_i32.sass" 2>&1
log "done"
