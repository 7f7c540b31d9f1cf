#!/usr/bin/env python3
"""Compares two `qd conformance --report` files: every case that passes on the reference backend
(first file) must pass on the other (second), unless the other skipped it with a stated reason."""
import sys


def load(path):
    cases = {}
    with open(path) as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) >= 2:
                cases[parts[0]] = (parts[1], parts[2] if len(parts) > 2 else "")
    return cases


ref, other = load(sys.argv[1]), load(sys.argv[2])
ref_pass = {c for c, (s, _) in ref.items() if s == "pass"}
other_pass = {c for c, (s, _) in other.items() if s == "pass"}
skipped = {c: why for c, (s, why) in other.items() if s == "skip" and c in ref_pass}
failed = {c: why for c, (s, why) in other.items() if s == "fail"}
missing = sorted(ref_pass - other_pass - set(skipped) - set(failed))
extra = sorted(other_pass - ref_pass)
for c, why in sorted(failed.items()):
    print(f"FAIL on second backend: {c}: {why}")
for c in missing:
    print(f"MISSING on second backend: {c}")
reasons = {}
for why in skipped.values():
    reasons[why] = reasons.get(why, 0) + 1
for why, n in sorted(reasons.items()):
    print(f"skipped on second backend ({n}): {why}")
for c in extra:
    print(f"passes only on second backend: {c}")
same = not failed and not missing
print(
    f"{'EQUAL' if same else 'DIFFERENT'}: {len(ref_pass)} pass on the first, {len(other_pass)} on the second, "
    f"{len(skipped)} skipped with a reason, {len(failed)} failed, {len(missing)} missing, {len(extra)} extra"
)
sys.exit(0 if same else 1)
