#!/usr/bin/env python3
"""Counts warp-level SASS instructions (SHFL, REDUX, VOTE, MATCH) per kernel in `cuobjdump -sass`
output: ours (first file) beside hand-written CUDA (second file), as a Markdown table."""
import re
import sys

KINDS = ("SHFL", "REDUX", "VOTE", "MATCH")
PAIRS = [
    ("reduce_add i32", "warp_reduce_add_i32", ["reduce_add_i32_redux", "reduce_add_i32_shfl"]),
    ("reduce_add f32", "warp_reduce_add_f32", ["reduce_add_f32_shfl"]),
    ("reduce_all_add i32", "warp_reduce_all_add_i32", ["reduce_all_add_i32_shfl"]),
    ("reduce_all_add f32", "warp_reduce_all_add_f32", []),
    ("inclusive_add i32", "warp_inclusive_add_i32", ["inclusive_add_i32_shfl"]),
    ("segmented_reduce_add i32", "warp_segmented_reduce_add_i32", []),
    ("bitonic_sort_kv i32", "warp_bitonic_sort_kv_i32", ["bitonic_sort_i32_shfl"]),
]


def counts(path):
    per = {}
    name = None
    with open(path) as f:
        for line in f:
            m = re.search(r"Function : (\S+)", line)
            if m:
                name = m.group(1)
                per[name] = {k: 0 for k in KINDS} | {"total": 0}
                continue
            if name and re.search(r"/\*[0-9a-f]{4,}\*/", line):
                per[name]["total"] += 1
                for k in KINDS:
                    if re.search(rf"\b{k}\b|\b{k}\.", line):
                        per[name][k] += 1
    return per


def fmt(c):
    return " ".join(f"{k}={c[k]}" for k in KINDS if c[k]) + f" (all {c['total']})"


ours, theirs = counts(sys.argv[1]), counts(sys.argv[2])
print("| op | qd (sm_90 SASS) | hand-written CUDA (nvcc -O3, sm_90) |")
print("|---|---|---|")
for label, ours_name, their_names in PAIRS:
    mine = next((c for n, c in ours.items() if ours_name in n), None)
    refs = "; ".join(f"{n}: {fmt(theirs[n])}" for n in their_names if n in theirs) or "-"
    print(f"| {label} | {fmt(mine) if mine else 'missing'} | {refs} |")
