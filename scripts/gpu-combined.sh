#!/usr/bin/env bash
# One GPU run for what is left of issues 13, 14, 15 and 16, when little device time is left: run on
# the GPU machine after `. .gpu/setup` (gpu-bundle --vulkan --tests) from the repository root.
# Everything lands in $OUT (default /tmp/qd-combined) as it is made, so a run cut short keeps what
# it did; the summary is printed last.
# The device tool returns at most 8 files of its $OUT: run with OUT=$OUT/combined and tar that
# folder into $OUT afterwards (the 2026-11-28 record lost most of its files by writing there). Steps, each skippable with ONLY="...":
#   speed      issue 14: first-launch latency per CUDA route and the scan per route, with
#              registers (scripts/gpu-speed.sh, ONLY="latency scan"), and the CUDA test binary
#              (the ptxas route's own test)
#   cub        issue 13: CUB's scan, select and reduce-by-key on i32 (nvcc in the background,
#              started after the latency step so it does not disturb it) against `qd bench`
#   conformance  qd conformance on cuda and vulkan; the macro tour (issue 15) on both
#   difftest   issue 16: random programs on the emulators, CUDA and NVIDIA Vulkan (DIFFTEST_SECONDS),
#              and the saved regression cases
#   cross      issue 14: `qd bench --backend cuda,vulkan` for every algorithm (CROSS_ALGOS, CROSS_SIZES)
#   tune       issue 13: scan, select and reduce-by-key on i32 at 2^TUNE_LOG2N over tile orders,
#              block sizes and items per thread (TUNE_ALGOS, TUNE_BLOCKS, TUNE_ITEMS), one line each
set -uo pipefail
OUT="${OUT:-/tmp/qd-combined}"
SEED="${SEED:-20261128}"
DIFFTEST_SECONDS="${DIFFTEST_SECONDS:-45}"
CROSS_SIZES="${CROSS_SIZES:-20,24,28}"
CUB_SIZES="${CUB_SIZES:-24 26 28}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mkdir -p "$OUT"
want() { [[ -z "${ONLY:-}" || " $ONLY " == *" $1 "* ]]; }
summary() { echo "$*" | tee -a "$OUT/summary.txt"; }
: >"$OUT/summary.txt"
start=$SECONDS
summary "date: $(date -u +%Y-%m-%dT%H:%MZ)"
summary "gpu: $(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader 2>&1 | head -n 1)"
summary "ptxas: $(command -v ptxas || ls /usr/local/cuda/bin/ptxas 2>/dev/null || echo none)"
export PATH="$PATH:/usr/local/cuda/bin"

if want speed; then
    OUT="$OUT/speed" ONLY="latency scan" REPS=20 bash "$HERE/scripts/gpu-speed.sh" >/dev/null 2>&1
    grep -E '^(latency|scan)' "$OUT/speed/summary.txt" | tee -a "$OUT/summary.txt"
    bin=$(ls .gpu/tests/cuda_gpu-* 2>/dev/null | head -n 1)
    QD_REQUIRE_CUDA=1 "$bin" --nocapture >"$OUT/test-cuda_gpu.txt" 2>&1
    summary "test cuda_gpu: exit $? $(grep '^test result' "$OUT/test-cuda_gpu.txt" | tail -n 1)"
    summary "$(grep '^ptxas route' "$OUT/test-cuda_gpu.txt")"
fi

# CUB for the algorithms' record, compiled while the rest runs (CUB_BENCH names one built already).
if want cub && [[ -z "${CUB_BENCH:-}" ]] && command -v nvcc >/dev/null; then
    (nvcc -O3 -std=c++17 -arch=sm_90 -DONE_DTYPE -DDTYPE_I32 -o "$OUT/cub_bench_i32" "$HERE/bench/cub_bench.cu" \
        >"$OUT/nvcc.txt" 2>&1) &
    nvcc_pid=$!
fi

if want conformance; then
    for b in cuda vulkan; do
        t=$SECONDS
        qd conformance --backend "$b" --seed "$SEED" >"$OUT/conformance-$b.txt" 2>&1
        summary "conformance $b (seed $SEED, $((SECONDS - t))s, exit $?): $(tail -n 1 "$OUT/conformance-$b.txt")"
        qd tour --backend "$b" >"$OUT/tour-$b.txt" 2>&1
        summary "tour $b (macro form): exit $? $(tail -n 1 "$OUT/tour-$b.txt")"
    done
fi

if want difftest; then
    t=$SECONDS
    # A mismatch is shrunk for 15 s at most and saved under $OUT/difftest-cases (D27).
    qd difftest --backend emulators,cuda,vulkan --seed "$SEED" --seconds "$DIFFTEST_SECONDS" \
        --shrink-seconds 15 --save "$OUT/difftest-cases" >"$OUT/difftest.txt" 2>&1
    summary "difftest emulators,cuda,vulkan (seed $SEED, $((SECONDS - t))s, exit $?): $(tail -n 1 "$OUT/difftest.txt")"
    # The saved cases (the lavapipe ones must agree here); DIFFTEST_REGRESSIONS= skips them.
    DIFFTEST_REGRESSIONS="${DIFFTEST_REGRESSIONS-qd difftest --regressions $HERE/crates/qd-difftest/regressions --backend emulators,cuda,vulkan}"
    if [[ -n "${DIFFTEST_REGRESSIONS:-}" ]]; then
        eval "$DIFFTEST_REGRESSIONS" >"$OUT/difftest-regressions.txt" 2>&1
        summary "difftest regressions: exit $? $(tail -n 1 "$OUT/difftest-regressions.txt")"
        grep -E ': (cuda|vulkan) ' "$OUT/difftest-regressions.txt" | tee -a "$OUT/summary.txt"
    fi
fi

if want cub; then
    cub="${CUB_BENCH:-}"
    if [[ -n "${nvcc_pid:-}" ]]; then
        wait "$nvcc_pid"
        [[ -x "$OUT/cub_bench_i32" ]] && cub="$OUT/cub_bench_i32" || summary "nvcc failed: $(tail -n 3 "$OUT/nvcc.txt")"
    fi
    for algo in ${CUB_ALGOS:-scan select reduce-by-key}; do
        # The same bench from the build before this session's algorithm changes, when bundled as
        # qd-base: a same-run baseline (text lines, with registers).
        if command -v qd-base >/dev/null; then
            qd-base bench "$algo" --backend cuda --dtype i32 --log2n 26 --reps 20 --seed "$SEED" 2>/dev/null |
                sed 's/$/ build=base/' >>"$OUT/base.txt"
            qd bench "$algo" --backend cuda --dtype i32 --log2n 26 --reps 20 --seed "$SEED" 2>/dev/null |
                sed 's/$/ build=new/' >>"$OUT/base.txt"
        fi
        for l in $CUB_SIZES; do
            qd bench "$algo" --backend cuda --dtype i32 --log2n "$l" --reps 20 --seed "$SEED" --json \
                >>"$OUT/records.jsonl" 2>>"$OUT/qd-stderr.txt"
            [[ -n "$cub" ]] && "$cub" "$algo" i32 "$l" 20 "$SEED" --json 2>>"$OUT/cub-stderr.txt" | grep '^{' \
                >>"$OUT/records.jsonl"
        done
    done
    python3 - "$OUT/records.jsonl" <<'EOF' | tee -a "$OUT/summary.txt"
import json, sys
rows = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    rows.setdefault((r["algo"], r["log2n"]), {})[r["implementation"]] = r
for (algo, l), impls in sorted(rows.items()):
    qd, cub = impls.get("qd"), impls.get("cub")
    if qd and cub:
        print(f"vs-cub {algo} i32 n=2^{l} qd_ms={qd['median_ms']:.4f} cub_ms={cub['median_ms']:.4f} "
              f"qd/cub_throughput={cub['median_ms'] / qd['median_ms']:.3f} check={qd['check']}/{cub['check']}")
EOF
    [[ -f "$OUT/base.txt" ]] && tee -a "$OUT/summary.txt" <"$OUT/base.txt"
fi

if want cross; then
    for algo in ${CROSS_ALGOS:-copy reduce scan exclusive-scan select reduce-by-key histogram}; do
        qd bench "$algo" --backend cuda,vulkan --dtype i32 --log2n "$CROSS_SIZES" --reps 10 --seed "$SEED" \
            >>"$OUT/cross.txt" 2>>"$OUT/cross-stderr.txt"
    done
    grep '^compare' "$OUT/cross.txt" | tee -a "$OUT/summary.txt"
    summary "cross checks: $(grep -c 'check=ok' "$OUT/cross.txt") ok, $(grep -c 'check=fail' "$OUT/cross.txt") failed"
fi
if want tune; then
    for algo in ${TUNE_ALGOS:-scan select reduce-by-key}; do
        for order in ticket blockidx; do
            for block in ${TUNE_BLOCKS:-128 256 512}; do
                for items in ${TUNE_ITEMS:-11 15 19 23}; do
                    qd bench "$algo" --backend cuda --dtype i32 --log2n "${TUNE_LOG2N:-26}" --reps 20 \
                        --seed "$SEED" --block-dim "$block" --items "$items" --tile-order "$order" \
                        >>"$OUT/tune.txt" 2>>"$OUT/tune-stderr.txt"
                done
            done
        done
        # The three fastest shapes of each algorithm.
        grep "^bench $algo " "$OUT/tune.txt" |
            awk '{for (i = 1; i <= NF; i++) if ($i ~ /^median_ms=/) { split($i, a, "="); print a[2], $0 }}' |
            sort -g | head -n 3 | cut -d' ' -f2- | sed 's/^/tune /' | tee -a "$OUT/summary.txt"
    done
fi
summary "total: $((SECONDS - start))s"
