#!/usr/bin/env bash
# The device-wide algorithms' record (issue 13): `qd bench ALGO --json` against NVIDIA's CUB
# (bench/cub_bench.cu) on the same algorithms, dtypes, sizes, seeds and inputs, both timed with CUDA
# events (median of REPS after 3 warm-up launches), results checked on the host. Run on the GPU
# machine after `. .gpu/setup` (see ../shared/tools/gpu-bundle) from the repository root, or with
# QD=/path/to/qd CUB_SRC=/path/to/cub_bench.cu. Everything lands in $OUT (default /tmp/qd-algos);
# `qd plot $OUT/records.jsonl --out DIR` draws it afterwards.
#
#   CONFIGS="scan:i32 ..."   algorithm:dtype pairs (default: every algorithm on i32, then some)
#   SIZES="16..26:2"         log2 n of every config     LARGE=28  one more size, last, while time is left
#   REPS=20  SEED=20261128   DEADLINE=240  seconds after which the large size is skipped
#   BACKEND=cuda  (cpu: a dry run of the script on the emulator, without CUB)
set -uo pipefail
OUT="${OUT:-/tmp/qd-algos}"
SEED="${SEED:-20261128}"
REPS="${REPS:-20}"
SIZES="${SIZES:-16..26:2}"
LARGE="${LARGE:-28}"
DEADLINE="${DEADLINE:-240}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
QD="${QD:-qd}"
CUB_SRC="${CUB_SRC:-$HERE/bench/cub_bench.cu}"
CONFIGS="${CONFIGS:-copy:i32 reduce:i32 scan:i32 exclusive-scan:i32 select:i32 reduce-by-key:i32 histogram:i32 reduce:f32 scan:f32 histogram:f32 scan:u64 select:f64 reduce-by-key:f64}"
mkdir -p "$OUT"
: >"$OUT/records.jsonl"
log() { echo "$*" | tee -a "$OUT/summary.txt"; }
: >"$OUT/summary.txt"
log "date: $(date -u +%Y-%m-%dT%H:%MZ)"
log "gpu: $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit --format=csv,noheader 2>&1 | head -n 1)"
log "qd: $("$QD" info 2>&1 | grep -E '^  cuda:' | head -n 1 | sed 's/^ *//')"
start=$SECONDS
# One CUB binary per dtype, compiled in parallel (CUB's templates take minutes in one file).
cub=""
dtypes=$(for c in $CONFIGS; do echo "${c##*:}"; done | sort -u)
if command -v nvcc >/dev/null; then
    for t in $dtypes; do
        nvcc -O3 -std=c++17 -arch=sm_90 -DONE_DTYPE "-DDTYPE_${t^^}" -o "$OUT/cub_bench_$t" "$CUB_SRC" \
            >"$OUT/nvcc-$t.txt" 2>&1 &
    done
    wait
    cub="$OUT/cub_bench"
    for t in $dtypes; do
        [[ -x "$OUT/cub_bench_$t" ]] || log "nvcc $t failed: $(tail -n 5 "$OUT/nvcc-$t.txt")"
    done
    log "nvcc: $(nvcc --version | tail -n 1) ($((SECONDS - start))s)"
else
    log "no nvcc: qd runs alone"
fi
export QD_CACHE_DIR="$OUT/qd-cache"
mkdir -p "$QD_CACHE_DIR"

sizes() { # expands A..B:S like qd bench --log2n
    python3 -c "import sys; a,b=sys.argv[1].split('..'); b,s=(b.split(':')+['1'])[:2]; print(*range(int(a),int(b)+1,int(s)))" "$1"
}
measure() { # algo dtype log2n-spec
    "$QD" bench "$1" --backend "${BACKEND:-cuda}" --dtype "$2" --log2n "$3" --reps "$REPS" --seed "$SEED" --json \
        2>>"$OUT/qd-stderr.txt" >>"$OUT/records.jsonl" || log "qd bench $1 $2 $3 failed: $(tail -n 2 "$OUT/qd-stderr.txt")"
    if [[ -n "$cub" ]]; then
        for l in $(sizes "$3"); do
            "${cub}_$2" "$1" "$2" "$l" "$REPS" "$SEED" --json 2>>"$OUT/cub-stderr.txt" | grep '^{' >>"$OUT/records.jsonl" ||
                log "cub_bench $1 $2 $l failed: $(tail -n 2 "$OUT/cub-stderr.txt")"
        done
    fi
}
for cfg in $CONFIGS; do
    measure "${cfg%%:*}" "${cfg##*:}" "$SIZES"
done
log "sizes $SIZES done at $((SECONDS - start))s"
# The scan's SASS as the driver compiled it (the hot loop is read, not guessed), and CUB's scan
# kernel's instruction mix beside it.
if command -v cuobjdump >/dev/null; then
    find "$QD_CACHE_DIR" -type f | while read -r f; do
        cuobjdump -sass "$f" 2>/dev/null | awk '/Function : qd_inclusive_scan_add_i32$/{p=1} /Function : /&&!/qd_inclusive_scan_add_i32$/{p=0} p' >>"$OUT/qd_scan_i32.sass"
        cuobjdump -res-usage "$f" 2>/dev/null | grep -A1 'qd_' >>"$OUT/qd-res.txt"
    done
    [[ -x "${cub}_i32" ]] && cuobjdump -res-usage "${cub}_i32" 2>/dev/null | grep -A1 -E 'DeviceScanKernel|DeviceReduceKernel|DeviceSelectSweep|DeviceReduceByKey|DeviceHistogram' |
        grep -E 'Function|REG' >"$OUT/cub-res.txt"
    python3 - "$OUT/qd_scan_i32.sass" >"$OUT/sass-summary.txt" <<'PY'
import re, sys, collections
ops = collections.Counter()
for line in open(sys.argv[1], errors="replace"):
    m = re.search(r"/\*[0-9a-f]{4}\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", line)
    if m:
        ops[m.group(2)] += 1
print("qd_inclusive_scan_add_i32: %d instructions" % sum(ops.values()))
for op, c in sorted(ops.items(), key=lambda x: -x[1])[:40]:
    print(f"  {op} {c}")
PY
fi
for cfg in $CONFIGS; do
    if ((SECONDS - start < DEADLINE)); then
        measure "${cfg%%:*}" "${cfg##*:}" "$LARGE..$LARGE"
    else
        log "skipped $cfg at 2^$LARGE: $((SECONDS - start))s used"
    fi
done

log "done at $((SECONDS - start))s"
rm -rf "$OUT/qd-cache" "$OUT"/cub_bench_*
