#!/usr/bin/env bash
# The sanitizer record (issue 12), run on the GPU machine after `. .gpu/setup` like
# scripts/gpu-validate.sh: compute-sanitizer's memcheck, racecheck, synccheck and initcheck over
# `qd conformance --backend cuda`, one top-level section at a time (racecheck is slow), each tool's
# total capped at 6 minutes (SANITIZE_BUDGET seconds). Logs land in $OUT (default /tmp/qd-sanitize):
# <tool>-<section>.txt per run and summary.txt with each run's error count and conformance result.
# Every reported hazard must be explained in docs/gpu-records/ (a bug fixed, or why the tool cannot
# see the synchronisation).
set -uo pipefail
OUT="${OUT:-/tmp/qd-sanitize}"
SEED="${SEED:-20261122}"
BUDGET="${SANITIZE_BUDGET:-360}"
SECTIONS="${SECTIONS:-examples block atomic grid nv range subgroup}"
TOOLS="${TOOLS:-memcheck racecheck synccheck initcheck}"
mkdir -p "$OUT"
summary() { echo "$*" | tee -a "$OUT/summary.txt"; }
: >"$OUT/summary.txt"
command -v compute-sanitizer >/dev/null || { summary "compute-sanitizer not found (CUDA toolkit bin on PATH?)"; exit 1; }
summary "date: $(date -u +%Y-%m-%dT%H:%MZ)"
summary "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -n 1)"
summary "compute-sanitizer: $(compute-sanitizer --version 2>&1 | tail -n 1)"

for tool in $TOOLS; do
    tool_start=$SECONDS
    for section in $SECTIONS; do
        left=$((BUDGET - (SECONDS - tool_start)))
        if ((left <= 0)); then
            summary "$tool $section: not run (the tool's ${BUDGET}s budget is spent)"
            continue
        fi
        log="$OUT/$tool-$section.txt"
        start=$SECONDS
        # racecheck checks shared-memory hazards; --racecheck-report all lists hazards and analysis.
        extra=()
        [[ "$tool" == racecheck ]] && extra=(--racecheck-report all)
        timeout "$left" compute-sanitizer --tool "$tool" "${extra[@]}" --print-limit 100 \
            qd conformance --backend cuda --seed "$SEED" --filter "$section/" >"$log" 2>&1
        rc=$?
        errors=$(grep -Eo 'ERROR SUMMARY: [0-9]+ error' "$log" | tail -n 1 | grep -Eo '[0-9]+' || echo "?")
        hazards=$(grep -Eo 'RACECHECK SUMMARY: [0-9]+ hazard' "$log" | tail -n 1 | grep -Eo '[0-9]+' || true)
        result=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
        timed_out=""
        ((rc == 124)) && timed_out=" (cut at the budget)"
        summary "$tool $section: $((SECONDS - start))s, exit $rc$timed_out, errors ${errors}${hazards:+, hazards $hazards}; $result"
    done
    summary "$tool total: $((SECONDS - tool_start))s"
done
