#!/usr/bin/env python3
"""Plots `qd bench sort` and `cub_sort` lines (scripts/gpu-sort.sh's lines.txt) as SVG, with no
dependencies: throughput (Gkeys/s) against log2(n), one panel per value type, one line per
implementation and entropy. Sizes that are not powers of two are drawn at their log2.

    scripts/sort_plot.py lines.txt out.svg
"""
import math
import sys

W, H, PAD = 520, 360, 50
COLORS = {("qd", "1.0"): "#1f77b4", ("qd", "0.201"): "#6baed6", ("cub", "1.0"): "#d62728", ("cub", "0.201"): "#fc9272"}


def read(path):
    series = {}
    for line in open(path):
        if not line.startswith("bench sort"):
            continue
        f = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
        who = "cub" if f["device"] == "cub" else "qd"
        series.setdefault(f["values"], {}).setdefault((who, f["entropy"]), []).append(
            (math.log2(int(f["n"])), float(f["gkeys"]))
        )
    return series


def panel(x0, title, lines, ymax):
    out = [f'<g transform="translate({x0},0)">', f'<text x="{W / 2}" y="20" text-anchor="middle">{title}</text>']
    sx = lambda v: PAD + (v - 16) / 12 * (W - 2 * PAD)
    sy = lambda v: H - PAD - v / ymax * (H - 2 * PAD)
    out.append(f'<rect x="{PAD}" y="{PAD}" width="{W - 2 * PAD}" height="{H - 2 * PAD}" fill="none" stroke="#888"/>')
    for e in range(16, 29, 2):
        out.append(f'<text x="{sx(e)}" y="{H - PAD + 16}" text-anchor="middle" font-size="11">2^{e}</text>')
    for g in range(0, int(ymax) + 1, 10):
        out.append(f'<text x="{PAD - 6}" y="{sy(g) + 4}" text-anchor="end" font-size="11">{g}</text>')
        out.append(f'<line x1="{PAD}" x2="{W - PAD}" y1="{sy(g)}" y2="{sy(g)}" stroke="#eee"/>')
    out.append(f'<text x="{W / 2}" y="{H - 12}" text-anchor="middle" font-size="12">keys (n)</text>')
    out.append(f'<text x="14" y="{H / 2}" transform="rotate(-90 14 {H / 2})" text-anchor="middle" font-size="12">Gkeys/s</text>')
    for i, (key, pts) in enumerate(sorted(lines.items())):
        pts = sorted(pts)
        d = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in pts)
        out.append(f'<polyline points="{d}" fill="none" stroke="{COLORS.get(key, "#000")}" stroke-width="2"/>')
        out.append(f'<text x="{PAD + 8}" y="{PAD + 16 + 14 * i}" font-size="11" fill="{COLORS.get(key, "#000")}">'
                   f'{key[0]} entropy {key[1]}</text>')
    out.append("</g>")
    return out


def main():
    series = read(sys.argv[1])
    ymax = max(y for s in series.values() for pts in s.values() for _, y in pts)
    ymax = math.ceil(ymax / 10) * 10
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W * len(series)}" height="{H}" font-family="sans-serif">']
    for i, (values, lines) in enumerate(sorted(series.items())):
        title = "keys only (u32)" if values == "none" else f"pairs (u32 keys, {values} values)"
        parts += panel(i * W, title, lines, ymax)
    parts.append("</svg>")
    open(sys.argv[2], "w").write("\n".join(parts) + "\n")


if __name__ == "__main__":
    main()
