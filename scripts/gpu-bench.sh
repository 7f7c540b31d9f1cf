#!/usr/bin/env bash
# The device-wide benchmark record: `qd bench` (reduce i32/f32, scan i32, copy) against NVIDIA's CUB
# (bench/cub_bench.cu: DeviceReduce::Sum, DeviceScan::InclusiveSum, cudaMemcpy device to device) on
# the same sizes, dtypes, seeds and inputs, both timed with CUDA events (median of REPS after a
# warm-up). Run on the GPU machine after `. .gpu/setup` (see ../shared/tools/gpu-bundle), from the
# repository root. Everything lands in $OUT (default /tmp/qd-bench); the table is printed last.
#
#   SIZES="24 26 28"  log2 of the element counts      REPS=20   timed launches per measurement
#   SEED=20261122     the inputs' seed                  ONLY="bench sweep sass ncu"  sections to run
#   LARGE_DEADLINE=170  the largest size runs last, only if fewer seconds than this have passed
#   NCU_CUB=1         also read CUB's kernels' counters (0: qd's only)
# Order: nvcc, the sizes but the largest, the 2^26 variants, SASS, counters, the largest size, table.
set -uo pipefail
OUT="${OUT:-/tmp/qd-bench}"
SEED="${SEED:-20261122}"
REPS="${REPS:-20}"
SIZES="${SIZES:-24 26 28}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mkdir -p "$OUT"
want() { [[ -z "${ONLY:-}" || " $ONLY " == *" $1 "* ]]; }
summary() { echo "$*" | tee -a "$OUT/summary.txt"; }
: >"$OUT/summary.txt"
: >"$OUT/lines.txt"

summary "date: $(date -u +%Y-%m-%dT%H:%MZ)"
summary "gpu: $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit --format=csv,noheader 2>&1 | head -n 1)"
summary "qd: $(qd info 2>&1 | grep -E '^  cuda:' | head -n 1 | sed 's/^ *//')"

start=$SECONDS
if ! nvcc -O3 -arch=sm_90 -o "$OUT/cub_bench" "$HERE/bench/cub_bench.cu" >"$OUT/nvcc.txt" 2>&1; then
    summary "nvcc failed: $(tail -n 5 "$OUT/nvcc.txt")"
    exit 1
fi
summary "nvcc: $(nvcc --version | tail -n 1) ($((SECONDS - start))s)"
summary "cub: $("$OUT/cub_bench" copy i32 10 1 1 | head -n 1)"

# The cubins qd's kernels were JIT-compiled to land here, for their SASS: qd's cubin cache (D23; off
# by default since issue 14) keeps this record comparable with the earlier ones, which measured it.
export QD_CACHE_DIR="$OUT/qd-cache" QD_CUDA_CUBIN_CACHE=1
mkdir -p "$QD_CACHE_DIR"

# One measurement: qd's line, then CUB's (or cudaMemcpy's) on the same inputs.
measure() { # algo dtype log2n [extra qd args...]
    local algo=$1 dtype=$2 log2n=$3
    shift 3
    qd bench "$algo" --backend cuda --dtype "$dtype" --log2n "$log2n" --reps "$REPS" --seed "$SEED" "$@" \
        2>>"$OUT/qd-stderr.txt" | tee -a "$OUT/lines.txt"
}
anchor() { # algo dtype log2n
    "$OUT/cub_bench" "$1" "$2" "$3" "$REPS" "$SEED" 2>>"$OUT/cub-stderr.txt" | grep '^bench' | tee -a "$OUT/lines.txt"
}

# qd's kernels through qd's cubin cache (QD_CUDA_CUBIN_CACHE=1 above), whose cubins come from the
# driver's link API, which compiles PTX as relocatable code (ptxas -c). `direct` also measures the
# scan with QD_CACHE_DISABLE=1, loaded with cuModuleLoadDataEx (whole-program code, fewer registers),
# marked `jit=direct` in the table.
measure_direct() { # like measure
    local algo=$1 dtype=$2 log2n=$3
    shift 3
    QD_CACHE_DISABLE=1 qd bench "$algo" --backend cuda --dtype "$dtype" --log2n "$log2n" --reps "$REPS" \
        --seed "$SEED" "$@" 2>>"$OUT/qd-stderr.txt" | sed 's/$/ jit=direct/' | tee -a "$OUT/lines.txt"
}
bench_sizes() {
    for l in "$@"; do
        for cfg in "copy i32" "reduce i32" "reduce f32" "scan i32"; do
            read -r algo dtype <<<"$cfg"
            measure "$algo" "$dtype" "$l"
            anchor "$algo" "$dtype" "$l"
        done
        measure_direct scan i32 "$l"
    done
}
# The largest size last, and only while time is left (a run on the GPU machine has a limit).
small_sizes=$(echo $SIZES | tr ' ' '\n' | sort -n | head -n -1 | tr '\n' ' ')
large_size=$(echo $SIZES | tr ' ' '\n' | sort -n | tail -n 1)
want bench && bench_sizes $small_sizes

# Variants at 2^26: block size, items per thread, the scan's tile order, both JIT paths (qd's
# defaults are measured again, which shows the run-to-run spread). Each variant compiles into its
# own cache folder, so its registers can be read from the cubin the driver made.
if want sweep; then
    variant() { # label, then measure's arguments
        local label=$1
        shift
        QD_CACHE_DIR="$OUT/qd-sweep/$label" measure "$@"
        regs=$(find "$OUT/qd-sweep/$label" -name '*.cubin' -exec cuobjdump -res-usage {} \; 2>/dev/null |
            grep -o 'REG:[0-9]*' | head -n 1)
        echo "  $label: $regs" | tee -a "$OUT/sweep-regs.txt"
    }
    for block in 128 256; do
        for items in 15 19 23; do
            variant "scan-b$block-i$items" scan i32 26 --block-dim "$block" --items "$items"
            measure_direct scan i32 26 --block-dim "$block" --items "$items"
        done
    done
    variant scan-b256-i19-blockidx scan i32 26 --tile-order blockidx
    measure_direct scan i32 26 --tile-order blockidx
    measure_direct reduce i32 26
    # The toolkit's ptxas on the same PTX, whole-program and relocatable (-c, what the link API
    # does), beside the driver JIT's registers above.
    qd emit --target ptx:sm_90 --out "$OUT/ptx" >/dev/null
    for f in "$OUT"/ptx/bench_*.ptx; do
        echo "  ptxas -O3 $(basename "$f"): $(ptxas -arch=sm_90 -v "$f" -o /dev/null 2>&1 | grep -o 'Used [0-9]* registers')," \
            "with -c: $(ptxas -arch=sm_90 -c -v "$f" -o /dev/null 2>&1 | grep -o 'Used [0-9]* registers')"
    done | tee -a "$OUT/sweep-regs.txt"
    rm -rf "$OUT/ptx"
fi

# SASS: qd's cubins (as the driver compiled them) and CUB's kernels: instruction mix of memory
# accesses, registers and spills.
if want sass; then
    sass="$OUT/sass"
    mkdir -p "$sass"
    find "$QD_CACHE_DIR" -name '*.cubin' | while read -r c; do
        cuobjdump -sass "$c" >>"$sass/qd.sass" 2>&1
        cuobjdump -res-usage "$c" >>"$sass/qd-res.txt" 2>&1
    done
    cuobjdump -sass "$OUT/cub_bench" >"$sass/cub.sass" 2>&1
    cuobjdump -res-usage "$OUT/cub_bench" >"$sass/cub-res.txt" 2>&1
    python3 - "$sass/qd.sass" "$sass/cub.sass" "$sass/qd-res.txt" "$sass/cub-res.txt" >"$OUT/sass-summary.txt" <<'EOF'
import re, sys
MEMORY_AND_SYNC = {"LDG", "STG", "LD", "ST", "LDS", "STS", "LDL", "STL", "ATOM", "ATOMG", "RED", "REDG", "BAR",
                   "MEMBAR", "SHFL", "VOTE", "REDUX", "NANOSLEEP", "FENCE", "CCTL"}
def mix(path):
    out, name = {}, None
    for line in open(path, errors="replace"):
        m = re.search(r"Function : (\S+)", line)
        if m:
            name = m.group(1)
            out[name] = {}
            continue
        m = re.search(r"/\*[0-9a-f]{4}\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", line)
        if m and name:
            op = m.group(2)
            if op.split(".")[0] in MEMORY_AND_SYNC:
                out[name][op] = out[name].get(op, 0) + 1
            out[name]["total"] = out[name].get("total", 0) + 1
    return out
def res(path):
    regs, name = {}, None
    for line in open(path, errors="replace"):
        m = re.search(r"Function (\S+):", line)
        if m:
            name = m.group(1)
        m = re.search(r"REG:(\d+) STACK:(\d+) SHARED:(\d+) LOCAL:(\d+)", line)
        if m and name:
            regs[name] = "REG:%s STACK:%s SHARED:%s LOCAL:%s" % m.groups()
    return regs
keep = re.compile(r"bench_|DeviceReduceKernel|DeviceReduceSingleTileKernel|DeviceScanKernel|DeviceScanInitKernel")
for label, sass, r in (("qd", sys.argv[1], sys.argv[3]), ("cub", sys.argv[2], sys.argv[4])):
    regs = res(r)
    for name, ops in sorted(mix(sass).items()):
        if not keep.search(name):
            continue
        short = name if len(name) < 70 else name[:67] + "..."
        print(f"{label} {short}: {regs.get(name, '?')} instructions {ops.get('total', 0)}")
        print("    " + " ".join(f"{k}={v}" for k, v in sorted(ops.items()) if k != "total"))
EOF
    cat "$OUT/sass-summary.txt"
    tar -C "$OUT" -czf "$OUT/sass.tgz" sass && rm -rf "$sass"
fi

# Hardware counters of one launch of each kernel at 2^26 (Nsight Compute, clocks left alone):
# DRAM bytes and throughput, global sectors per request (4 = a warp's 32 4-byte accesses in one
# 128-byte line), achieved occupancy.
if want ncu && command -v ncu >/dev/null; then
    metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed
    metrics=$metrics,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum
    metrics=$metrics,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum
    metrics=$metrics,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__grid_size
    ncu_run() { # name, command...
        local name=$1
        shift
        timeout 60 ncu --clock-control none --csv --metrics "$metrics" "$@" >"$OUT/ncu-$name.csv" 2>"$OUT/ncu-$name.err" ||
            summary "ncu $name: exit $? $(tail -n 2 "$OUT/ncu-$name.err")"
    }
    ncu_run qd-reduce -k regex:bench_reduce -c 1 qd bench reduce --backend cuda --log2n 26 --reps 1 --warmup 0 --seed "$SEED"
    ncu_run qd-scan -k regex:bench_scan -c 1 qd bench scan --backend cuda --log2n 26 --reps 1 --warmup 0 --seed "$SEED"
    ncu_run qd-copy -k regex:bench_copy -c 1 qd bench copy --backend cuda --log2n 26 --reps 1 --warmup 0 --seed "$SEED"
    if [[ "${NCU_CUB:-1}" == 1 ]]; then
        ncu_run cub-reduce -k regex:DeviceReduce -c 2 "$OUT/cub_bench" reduce i32 26 1 "$SEED"
        ncu_run cub-scan -k regex:DeviceScan -c 2 "$OUT/cub_bench" scan i32 26 1 "$SEED"
    fi
    python3 - "$OUT"/ncu-*.csv >"$OUT/ncu-summary.txt" <<'EOF'
import csv, sys
for path in sys.argv[1:]:
    rows = [r for r in csv.reader(open(path, errors="replace")) if len(r) > 10]
    if not rows or "Kernel Name" not in rows[0] or "ID" not in rows[0]:
        print(f"{path.rsplit('/', 1)[-1]}: no metrics")
        continue
    head = rows[0]
    ki, mi, vi, ui = head.index("Kernel Name"), head.index("Metric Name"), head.index("Metric Value"), head.index("Metric Unit")
    per = {}
    for r in rows[1:]:
        per.setdefault((r[head.index("ID")], r[ki][:60]), []).append(f"{r[mi]}={r[vi]}{r[ui] and ' ' + r[ui]}")
    for (i, k), vals in per.items():
        print(f"{path.rsplit('/', 1)[-1]} [{i}] {k}")
        for v in vals:
            print("    " + v)
EOF
    cat "$OUT/ncu-summary.txt"
fi

if want bench; then
    if ((SECONDS < ${LARGE_DEADLINE:-170})); then
        bench_sizes $large_size
    else
        summary "skipped n=2^$large_size: ${SECONDS}s used"
    fi
fi

# The table: qd against CUB (cudaMemcpy for copy) on each size; ratio = qd's median time over the
# anchor's (below 1: qd is faster).
python3 - "$OUT/lines.txt" <<'EOF' | tee "$OUT/table.md"
import re, sys
rows = {}
order = []
for line in open(sys.argv[1]):
    f = dict(re.findall(r"(\w+)=(\S+)", line))
    parts = line.split()
    if len(parts) < 3 or parts[0] != "bench":
        continue
    key = (parts[1], parts[2], f["n"], f.get("items", "") + f.get("block", "") + f.get("jit", ""), f.get("order", ""))
    if f["device"] in ("cub", "memcpy"):
        key = (parts[1], parts[2], f["n"], "", "")
        rows.setdefault(key, {})["anchor"] = f
    else:
        rows.setdefault(key, {}).setdefault("qd", []).append(f)
    if key not in order:
        order.append(key)
print("| algo | dtype | n | variant | qd median ms | qd GB/s | anchor | anchor median ms | anchor GB/s | qd/anchor time | checks |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for key in order:
    algo, dtype, n, items, ordr = key
    anchor = rows.get((algo, dtype, n, "", ""), {}).get("anchor")
    for q in rows[key].get("qd", []):
        variant = " ".join(f"{k}={q[k]}" for k in ("block", "items", "order", "jit") if k in q) or "default"
        a_ms = anchor and float(anchor["median_ms"])
        ratio = f"{float(q['median_ms']) / a_ms:.2f}" if a_ms else "-"
        checks = q["check"] + ("/" + anchor["check"] if anchor else "")
        print(f"| {algo} | {dtype} | {n} | {variant} | {q['median_ms']} | {q['gbps']} | {anchor['device'] if anchor else '-'} | "
              f"{anchor['median_ms'] if anchor else '-'} | {anchor['gbps'] if anchor else '-'} | {ratio} | {checks} |")
EOF

# Only a few files come back from the machine: keep the summaries, pack the rest.
(cd "$OUT" && tar -czf /tmp/qd-bench.tgz --exclude=record.tgz --exclude=cub_bench --exclude=qd-cache --exclude=qd-sweep . &&
    mv /tmp/qd-bench.tgz record.tgz &&
    find . -maxdepth 1 -type f ! -name record.tgz ! -name summary.txt ! -name table.md ! -name lines.txt \
        ! -name sass-summary.txt ! -name ncu-summary.txt ! -name sweep-regs.txt -delete && rm -rf qd-cache qd-sweep)
