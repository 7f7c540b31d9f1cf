#!/usr/bin/env bash
# The GPU record of the radix sort (issue 17): `qd bench sort` beside CUB's DeviceRadixSort
# (bench/cub_sort.cu) in the same run, on the same keys.
#
#   scripts/gpu-sort.sh BUNDLE OUT
#
# BUNDLE holds bin/qd (../shared/tools/gpu-bundle) and cub_sort (nvcc -O3 -arch=sm_90 -o cub_sort
# bench/cub_sort.cu; built here when missing and nvcc is on PATH). OUT gets the logs:
# device.txt, conformance.txt, tuning.txt, lines.txt (qd and CUB), table.md (qd / CUB per size and
# entropy). Order: the device, the sort's conformance cases on CUDA, a tile-shape sweep at 2^28,
# the SASS of the compiled kernels (qd-cache/**/*.sass), then keys and pairs (u32 keys, u32 values)
# at 2^16..2^28 and 2^28 - 2^20, entropy 1.0 and 0.201, for qd's default shape and for CUB.
# KEY_TUNINGS and PAIR_TUNINGS replace the sweep's shape lists, REPS the timed sorts per line (20).
# SWEEP_ONLY=1 stops after the sweep and the SASS, with CUB's keys and pairs at 2^28 beside it in
# tuning.txt: a short call (about 2.5 minutes with four shapes each).
# The whole run took 473 s on an H200 with the default lists; give it a 600 s call of its own.
set -uo pipefail
B="$1"
OUT="$2"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
QD="$B/bin/qd"
SEED=20261128
REPS="${REPS:-20}"
# qd's cubins land here, for the SASS of the pass kernel (cuobjdump, at the end).
export QD_CACHE_DIR="$OUT/qd-cache"
export PATH="$PATH:/usr/local/cuda/bin"
start=$SECONDS
log() { echo "[$((SECONDS - start))s] $*" | tee -a "$OUT/progress.txt"; }

{
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv
    "$QD" info
} >"$OUT/device.txt" 2>&1
log "device: $(head -n 2 "$OUT/device.txt" | tail -n 1)"

if [[ ! -x "$B/cub_sort" ]]; then
    nvcc -O3 -arch=sm_90 -o "$B/cub_sort" "$HERE/bench/cub_sort.cu" >"$OUT/nvcc.txt" 2>&1 || log "nvcc failed"
fi

"$QD" conformance --backend cuda --filter sort/ >"$OUT/conformance.txt" 2>&1
"$QD" conformance --backend cuda --filter radix_rank >>"$OUT/conformance.txt" 2>&1
log "conformance: $(grep -h passed "$OUT/conformance.txt" | tr '\n' ' ')"

# Tile shapes at 2^28 (random keys): the default first.
"$QD" bench sort --backend cuda --sizes 2^28 --reps 10 --warmup 2 --seed $SEED \
    --tunings "${KEY_TUNINGS:-default,256x16,256x24,384x16,384x24,512x12,512x16,640x12}" 2>>"$OUT/stderr.txt" |
    tee -a "$OUT/tuning.txt"
"$QD" bench sort --backend cuda --values u32 --sizes 2^28 --reps 10 --warmup 2 --seed $SEED \
    --tunings "${PAIR_TUNINGS:-default,256x16,256x20,384x12,384x20,512x12}" 2>>"$OUT/stderr.txt" |
    tee -a "$OUT/tuning.txt"
log "tuning done"
# The SASS of every kernel compiled so far (the defaults' pass and histogram kernels among them),
# before the long size sweep: a run cut short keeps it.
for f in $(find "$OUT/qd-cache" -name '*.cubin' 2>/dev/null); do
    cuobjdump -sass "$f" >"$f.sass" 2>&1
done
if [[ -n "${SWEEP_ONLY:-}" ]]; then
    for mode in keys pairs; do
        "$B/cub_sort" $mode $((1 << 28)) 1.0 10 $SEED 2>>"$OUT/stderr.txt" | tee -a "$OUT/tuning.txt"
    done
    log "sweep done"
    exit 0
fi

SIZES="2^16..2^28,2^28-2^20"
CSIZES=$(for e in $(seq 16 28); do printf '%d,' $((1 << e)); done)$(((1 << 28) - (1 << 20)))
for values in none u32; do
    "$QD" bench sort --backend cuda --values $values --sizes "$SIZES" --entropy 1.0,0.201 --reps $REPS --warmup 3 \
        --seed $SEED 2>>"$OUT/stderr.txt" | tee -a "$OUT/lines.txt"
    log "qd values=$values done"
done
for mode in keys pairs; do
    "$B/cub_sort" $mode "$CSIZES" 1.0,0.201 $REPS $SEED 2>>"$OUT/stderr.txt" | tee -a "$OUT/lines.txt"
    log "cub $mode done"
done

# qd / CUB throughput per size and entropy.
python3 - "$OUT/lines.txt" >"$OUT/table.md" <<'EOF'
import re, sys
rows = {}
for line in open(sys.argv[1]):
    f = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
    key = (f["values"], f["entropy"], int(f["n"]))
    rows.setdefault(key, {})["cub" if f["device"] == "cub" else "qd"] = f
print("| values | entropy | n | qd ms | qd Gkeys/s | qd wall ms | CUB ms | CUB Gkeys/s | qd / CUB | check |")
print("|---|---|---|---|---|---|---|---|---|---|")
for (values, entropy, n), r in sorted(rows.items()):
    q, c = r.get("qd"), r.get("cub")
    if not q or not c:
        continue
    ratio = float(c["median_ms"]) / float(q["median_ms"])
    print(f"| {values} | {entropy} | {n} | {q['median_ms']} | {q['gkeys']} | {q['wall_ms']} | {c['median_ms']} | "
          f"{c['gkeys']} | {ratio:.3f} | {q['check']}/{c['check']} |")
EOF
cat "$OUT/table.md"
log "all done"
