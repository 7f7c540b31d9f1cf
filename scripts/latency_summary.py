#!/usr/bin/env python3
"""Medians of `qd latency` lines (key=value fields, milliseconds): cold runs, then warm runs.

The disk field is listed as found: `hit` (cubin found by its PTX key, lowered first), `ir-hit`
(found by the IR key, not lowered: `lower_ms` is the key and the lookup, D23), `stored`, ...
"""
import statistics
import sys


def fields(path):
    rows = []
    with open(path) as f:
        for line in f:
            if line.startswith("latency "):
                rows.append(dict(kv.split("=", 1) for kv in line.split()[1:]))
    return rows


def median(rows, key):
    vals = [float(r[key]) for r in rows if r.get(key, "none") not in ("none", "")]
    return f"{statistics.median(vals):.3f}" if vals else "n/a"


for label, path in (("cold", sys.argv[1]), ("warm", sys.argv[2])):
    rows = fields(path)
    disk = ",".join(sorted({r.get("disk", "?") for r in rows}))
    print(
        f"latency {label} (median of {len(rows)} processes, disk={disk}): first launch {median(rows, 'first_launch_ms')} ms, "
        f"ours {median(rows, 'ours_ms')} ms, JIT {median(rows, 'jit_ms')} ms, trace {median(rows, 'trace_ms')} ms, "
        f"PTX {median(rows, 'lower_ms')} ms, load {median(rows, 'load_ms')} ms, second launch {median(rows, 'second_launch_ms')} ms"
    )
