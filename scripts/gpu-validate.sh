#!/usr/bin/env bash
# The GPU record (issues 3 and 4), run on the GPU machine after `. .gpu/setup` (see
# ../shared/tools/gpu-bundle): device facts, the conformance suite on cuda and on cpu:sg32 with the
# same seed and the comparison of their passing sets, cold and warm first-launch latency, the CUDA
# test binaries, and SASS instruction counts of the warp primitives beside hand-written CUDA.
# Everything lands in $OUT (default /tmp/qd-gpu); the summary is printed last.
set -uo pipefail
OUT="${OUT:-/tmp/qd-gpu}"
SEED="${SEED:-20261122}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
summary() { echo "$*" | tee -a "$OUT/summary.txt"; }
# ONLY="sass latency" runs just those sections (conformance, vulkan, latency, tests, sass); default: all.
want() { [[ -z "${ONLY:-}" || " $ONLY " == *" $1 "* ]]; }
: >"$OUT/summary.txt"

summary "date: $(date -u +%Y-%m-%dT%H:%MZ)"
summary "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -n 1)"
qd info >"$OUT/info.txt" 2>&1
summary "qd info: $(grep -E '^ +cuda' "$OUT/info.txt" | head -n 1 | sed 's/  */ /g')"

# 1. Conformance on cuda and on the emulator, same seed, every case's status in a report.
if want conformance; then
start=$SECONDS
qd conformance --backend cuda --seed "$SEED" --report "$OUT/cases-cuda.tsv" >"$OUT/conformance-cuda.txt" 2>&1
cuda_rc=$?
summary "conformance cuda (seed $SEED, $((SECONDS - start))s, exit $cuda_rc): $(tail -n 1 "$OUT/conformance-cuda.txt")"
qd conformance --backend cpu:sg32 --seed "$SEED" --report "$OUT/cases-cpu.tsv" >"$OUT/conformance-cpu.txt" 2>&1
summary "conformance cpu:sg32 (exit $?): $(tail -n 1 "$OUT/conformance-cpu.txt")"
python3 "$HERE/scripts/compare_cases.py" "$OUT/cases-cpu.tsv" "$OUT/cases-cuda.tsv" >"$OUT/compare.txt" 2>&1
summary "compare: $(tail -n 1 "$OUT/compare.txt")"
qd tour --backend cuda >"$OUT/tour-cuda.txt" 2>&1
summary "tour cuda: exit $?, $(grep -c '' "$OUT/tour-cuda.txt") lines"
fi

# 1b. The same suite on the NVIDIA Vulkan driver (bundle with `gpu-bundle --vulkan`), compared with
#     the emulator at the device's subgroup width (32 on NVIDIA).
if want vulkan; then
start=$SECONDS
qd conformance --backend vulkan --seed "$SEED" --report "$OUT/cases-vulkan.tsv" >"$OUT/conformance-vulkan.txt" 2>&1
summary "conformance vulkan (seed $SEED, $((SECONDS - start))s, exit $?): $(tail -n 1 "$OUT/conformance-vulkan.txt")"
[[ -f "$OUT/cases-cpu.tsv" ]] || qd conformance --backend cpu:sg32 --seed "$SEED" --report "$OUT/cases-cpu.tsv" >/dev/null 2>&1
python3 "$HERE/scripts/compare_cases.py" "$OUT/cases-cpu.tsv" "$OUT/cases-vulkan.tsv" >"$OUT/compare-vulkan.txt" 2>&1
summary "compare vulkan: $(tail -n 1 "$OUT/compare-vulkan.txt")"
qd tour --backend vulkan >"$OUT/tour-vulkan.txt" 2>&1
summary "tour vulkan: exit $?, $(tail -n 1 "$OUT/tour-vulkan.txt")"
fi

# 2. First-launch latency of a small kernel: cold (no disk cache, no driver cache) and warm (a new
#    process whose code the driver's JIT cache holds, the default route of D23, in a fresh cache
#    folder). Five fresh processes each.
if want latency; then
cache="$(mktemp -d)"
for i in 1 2 3 4 5; do QD_CACHE_DISABLE=1 CUDA_CACHE_DISABLE=1 qd latency --backend cuda; done >"$OUT/latency-cold.txt" 2>&1
CUDA_CACHE_PATH="$cache" qd latency --backend cuda >"$OUT/latency-store.txt" 2>&1
for i in 1 2 3 4 5; do CUDA_CACHE_PATH="$cache" qd latency --backend cuda; done >"$OUT/latency-warm.txt" 2>&1
python3 "$HERE/scripts/latency_summary.py" "$OUT/latency-cold.txt" "$OUT/latency-warm.txt" | tee -a "$OUT/summary.txt"
fi

# 3. The CUDA and Vulkan test binaries (copied into .gpu/tests), with the devices required.
if want tests && ls .gpu/tests/* >/dev/null 2>&1; then
    for t in .gpu/tests/*; do
        QD_REQUIRE_CUDA=1 QD_REQUIRE_VULKAN=1 "$t" >>"$OUT/cuda-tests.txt" 2>&1
        summary "test $(basename "$t"): exit $? $(grep 'test result' "$OUT/cuda-tests.txt" | tail -n 1)"
    done
fi

# 4. SASS of the warp primitives (ours: qd's PTX through ptxas; theirs: nvcc on hand-written CUDA).
if want sass; then
sass="$OUT/sass"
mkdir -p "$sass"
qd emit --target ptx:sm_90 --out "$sass/ptx" >/dev/null
for f in "$sass"/ptx/warp_*.ptx; do
    ptxas -arch=sm_90 "$f" -o "$sass/$(basename "$f" .ptx).cubin" || summary "ptxas failed on $f"
done
cat "$sass"/*.cubin >/dev/null 2>&1 && for c in "$sass"/*.cubin; do cuobjdump -sass "$c"; done >"$sass/qd.sass"
nvcc -arch=sm_90 -cubin -O3 "$HERE/bench/warp_baselines.cu" -o "$sass/baselines.cubin" &&
    cuobjdump -sass "$sass/baselines.cubin" >"$sass/cuda.sass"
python3 "$HERE/scripts/sass_count.py" "$sass/qd.sass" "$sass/cuda.sass" | tee "$OUT/sass-counts.md"
tar -C "$OUT" -czf "$OUT/sass.tgz" sass && rm -rf "$sass"
fi

# Only a few files come back from the machine: keep the summaries, pack the rest.
(cd "$OUT" && tar -czf /tmp/qd-record.tgz --exclude=record.tgz . && mv /tmp/qd-record.tgz record.tgz &&
    find . -maxdepth 1 -type f ! -name record.tgz ! -name summary.txt ! -name sass-counts.md ! -name compare.txt -delete)
