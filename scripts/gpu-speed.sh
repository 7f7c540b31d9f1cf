#!/usr/bin/env bash
# The runtime-speed record (issue 14), run on the GPU machine after `. .gpu/setup` (gpu-bundle
# --vulkan --tests), from the repository root. Everything lands in $OUT (default /tmp/qd-speed);
# the summary is printed last.
#   1. CUDA anchors (bench/cuda_anchor.cu, nvcc there): the scan's PTX through each loading route
#      (registers), and a bare cuLaunchKernel of qd's saxpy module.
#   2. First-launch latency in fresh processes (D23): cold; warm through qd's cache of ptxas cubins
#      (the default where ptxas is found: /usr/local/cuda/bin here); warm through qd's cache of
#      link-API cubins (QD_PTXAS=0 QD_CUDA_CUBIN_CACHE=1); warm through the driver's own JIT cache
#      (QD_CUDA_CUBIN_CACHE=0; a private CUDA_CACHE_PATH); Vulkan with its pipeline cache on disk.
#      Then the repeated launch (`repeat_launch_us`).
#   3. The Vulkan anchor: tests/vulkan_bare.rs with QD_BARE_REPS (a bare submit of a recorded
#      dispatch against qd's launch, one process).
#   4. The scan at 2^26 through each route (ptxas cubins, link-API cubins, the driver's JIT),
#      interleaved, with their registers.
#   5. `qd bench --backend cuda,vulkan` for every algorithm (ALGOS) at 2^20 ... 2^28 (SIZES).
#   6. Conformance on cuda and vulkan, the Vulkan and CUDA test binaries.
#   SEED=20261122  REPS=20  SIZES="20,22,24,26,28"  ALGOS="copy reduce scan exclusive-scan select
#   reduce-by-key histogram"  ONLY="anchors latency bare scan bench conformance tests"
#   QD_TESTS=.gpu/tests  where the test binaries are (vulkan_bare, vulkan_speed, vulkan_runtime, cuda_gpu)
set -uo pipefail
OUT="${OUT:-/tmp/qd-speed}"
SEED="${SEED:-20261122}"
REPS="${REPS:-20}"
SIZES="${SIZES:-20,22,24,26,28}"
ALGOS="${ALGOS:-copy reduce scan exclusive-scan select reduce-by-key histogram}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mkdir -p "$OUT"
want() { [[ -z "${ONLY:-}" || " $ONLY " == *" $1 "* ]]; }
summary() { echo "$*" | tee -a "$OUT/summary.txt"; }
: >"$OUT/summary.txt"
# The caches and emitted PTX live outside $OUT (thousands of files; a run returns a few files).
SCRATCH="$(mktemp -d)"
export QD_CACHE_DIR="$SCRATCH/qd-cache"
# The driver's JIT cache in a folder of its own, so "warm" means warmed by this run.
export CUDA_CACHE_PATH="$SCRATCH/nv-cache"
mkdir -p "$QD_CACHE_DIR" "$CUDA_CACHE_PATH"
start=$SECONDS

summary "date: $(date -u +%Y-%m-%dT%H:%MZ)"
summary "gpu: $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader 2>&1 | head -n 1)"
qd info >"$OUT/info.txt" 2>&1
summary "qd: $(grep -E '^  (cuda|vulkan):0' "$OUT/info.txt" | sed 's/^ *//' | tr '\n' '|')"
qd emit --target ptx:sm_90 --out "$SCRATCH/ptx" >/dev/null 2>&1

median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
field() { grep -o "$1=[^ ]*" | cut -d= -f2; }

# 1. CUDA anchors.
if want anchors; then
    if nvcc -O2 -o "$SCRATCH/cuda_anchor" "$HERE/bench/cuda_anchor.cu" -lcuda >"$OUT/nvcc.txt" 2>&1; then
        "$SCRATCH/cuda_anchor" routes "$SCRATCH/ptx/bench_scan_i32.ptx" bench_scan_i32 >"$OUT/routes.txt" 2>&1
        summary "routes (bench_scan_i32): $(tr '\n' ';' <"$OUT/routes.txt")"
        "$SCRATCH/cuda_anchor" launch "$SCRATCH/ptx/latency_saxpy.ptx" 1001 >"$OUT/anchor-cuda.txt" 2>&1
        summary "$(cat "$OUT/anchor-cuda.txt")"
    else
        summary "nvcc failed: $(tail -n 3 "$OUT/nvcc.txt")"
    fi
fi

# 2. First-launch latency, one fresh process each.
if want latency; then
    lat() { # label, then env assignments for qd latency
        local label=$1
        shift
        env "$@" qd latency --backend "${BACKEND:-cuda}" 2>&1 | tee -a "$OUT/latency-$label.txt"
    }
    lat cold QD_CACHE_DISABLE=1 CUDA_CACHE_DISABLE=1 >/dev/null
    lat ptxas-store >/dev/null # stores ptxas's cubin (the default where ptxas is found)
    for _ in 1 2 3 4 5; do lat ptxas-warm >/dev/null; done
    lat link-store QD_PTXAS=0 QD_CUDA_CUBIN_CACHE=1 >/dev/null # stores the link API's cubin
    for _ in 1 2 3 4 5; do lat link-warm QD_PTXAS=0 QD_CUDA_CUBIN_CACHE=1 >/dev/null; done
    lat driver-store QD_CUDA_CUBIN_CACHE=0 >/dev/null # fills the driver's cache
    for _ in 1 2 3 4 5; do lat driver-warm QD_CUDA_CUBIN_CACHE=0 >/dev/null; done
    BACKEND=vulkan lat vulkan-store >/dev/null
    for _ in 1 2 3; do BACKEND=vulkan lat vulkan-warm >/dev/null; done
    for l in cold ptxas-store ptxas-warm link-warm driver-warm vulkan-store vulkan-warm; do
        f="$OUT/latency-$l.txt"
        summary "latency $l (median of $(grep -c '^latency' "$f")): first_launch_ms=$(field first_launch_ms <"$f" | median)" \
            "trace_ms=$(field trace_ms <"$f" | median) lower_ms=$(field lower_ms <"$f" | median)" \
            "load_ms=$(field load_ms <"$f" | median) jit_ms=$(field jit_ms <"$f" | median)" \
            "repeat_launch_us=$(field repeat_launch_us <"$f" | median) disk=$(field disk <"$f" | sort | uniq -c | tr -s ' ' | tr '\n' ',')"
    done
fi

# 3. The Vulkan anchor: bare submit vs qd's launch, one process.
if want bare; then
    bin=$(ls "${QD_TESTS:-.gpu/tests}"/vulkan_bare-* 2>/dev/null | head -n 1)
    QD_REQUIRE_VULKAN=1 QD_BARE_REPS=1001 "$bin" --nocapture >"$OUT/anchor-vulkan.txt" 2>&1
    summary "$(grep '^bare-vulkan' "$OUT/anchor-vulkan.txt" || tail -n 3 "$OUT/anchor-vulkan.txt")"
fi

# 4. The scan through each route, interleaved, with registers (each route's cache warmed first).
if want scan; then
    scan() { qd bench scan --backend cuda --log2n 26 --reps "$REPS" --seed "$SEED" 2>/dev/null | sed "s/\$/ jit=$1/"; }
    for round in 0 1 2 3; do
        scan ptxas
        QD_PTXAS=0 QD_CUDA_CUBIN_CACHE=1 scan link
        QD_CUDA_CUBIN_CACHE=0 scan direct
    done | grep -v "^$" >"$OUT/scan-jit-all.txt"
    # Round 0 compiled (and filled the caches); rounds 1-3 are the warm path.
    tail -n 9 "$OUT/scan-jit-all.txt" >"$OUT/scan-jit.txt"
    for j in ptxas link direct; do
        summary "scan 2^26 jit=$j: median_ms=$(grep "jit=$j" "$OUT/scan-jit.txt" | field median_ms | tr '\n' ' ')" \
            "regs=$(grep "jit=$j" "$OUT/scan-jit.txt" | field regs | sort -u | tr '\n' ' ')"
    done
fi

# 5. Across backends.
if want bench; then
    for algo in $ALGOS; do
        qd bench "$algo" --backend cuda,vulkan --dtype i32 --log2n "$SIZES" --reps "$REPS" --seed "$SEED" \
            >>"$OUT/bench.txt" 2>>"$OUT/bench-stderr.txt"
    done
    grep '^compare' "$OUT/bench.txt" | tee -a "$OUT/summary.txt"
    summary "bench checks: $(grep -c 'check=ok' "$OUT/bench.txt") ok, $(grep -c 'check=fail' "$OUT/bench.txt") failed; $(grep -c '^qd: bench' "$OUT/bench-stderr.txt") errors"
fi

# 6. Conformance and test binaries.
if want conformance; then
    for b in cuda vulkan; do
        t=$SECONDS
        qd conformance --backend "$b" --seed "$SEED" >"$OUT/conformance-$b.txt" 2>&1
        summary "conformance $b (seed $SEED, $((SECONDS - t))s, exit $?): $(tail -n 1 "$OUT/conformance-$b.txt")"
    done
fi
if want tests; then
    for t in vulkan_speed vulkan_runtime vulkan_bare cuda_gpu; do
        bin=$(ls "${QD_TESTS:-.gpu/tests}"/$t-* 2>/dev/null | head -n 1)
        [[ -n "$bin" ]] || { summary "test $t: no binary"; continue; }
        QD_REQUIRE_VULKAN=1 QD_REQUIRE_CUDA=1 "$bin" >"$OUT/test-$t.txt" 2>&1
        summary "test $t: exit $? $(grep '^test result' "$OUT/test-$t.txt" | tail -n 1)"
    done
fi
rm -rf "$SCRATCH"
summary "total: $((SECONDS - start))s"
