#!/usr/bin/env bash
# The differential tester's GPU record (issue 16, D27), run on the GPU machine after `. .gpu/setup`
# (bundle with `../shared/tools/gpu-bundle --vulkan`): the saved regression cases replayed on CUDA
# and NVIDIA's Vulkan driver (the three lavapipe cases must agree there: lavapipe's bug, not qd's),
# then a timed random run on both. About 75 s; everything lands in $OUT (default /tmp/qd-gpu).
set -uo pipefail
OUT="${OUT:-/tmp/qd-gpu}"
SEED="${SEED:-20261128}"
SECONDS_RUN="${SECONDS_RUN:-60}"
BACKENDS="${BACKENDS:-emulators,cuda,vulkan}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mkdir -p "$OUT"
summary() { echo "$*" | tee -a "$OUT/difftest-summary.txt"; }
: >"$OUT/difftest-summary.txt"

summary "date: $(date -u +%Y-%m-%dT%H:%MZ)"
summary "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -n 1)"

qd difftest --regressions "$HERE/crates/qd-difftest/regressions" --backend "$BACKENDS" \
    >"$OUT/difftest-regressions.txt" 2>&1
summary "regression cases (exit $?): $(tail -n 1 "$OUT/difftest-regressions.txt")"
grep -E ' (cuda|vulkan)' "$OUT/difftest-regressions.txt" | tee -a "$OUT/difftest-summary.txt"

# A mismatch is shrunk for at most 15 s and saved under $OUT/difftest-cases (copy it into
# crates/qd-difftest/regressions/ and write a finding).
qd difftest --backend "$BACKENDS" --seed "$SEED" --seconds "$SECONDS_RUN" --shrink-seconds 15 \
    --save "$OUT/difftest-cases" >"$OUT/difftest-run.txt" 2>&1
summary "random run, seed $SEED, ${SECONDS_RUN}s (exit $?): $(tail -n 1 "$OUT/difftest-run.txt")"
grep -E '^difftest:|^  (cuda|vulkan)|IR instruction kinds|^MISMATCH' "$OUT/difftest-run.txt" | tee -a "$OUT/difftest-summary.txt"
