#!/usr/bin/env python3
"""Lists the public functions and inherent methods of qd's user-facing modules whose rustdoc has
no example, from the HTML `cargo doc --no-deps -p qd` wrote. Exits 1 when any lacks one.

Usage: scripts/doc-examples.py [target/doc/qd] [--list]
The modules checked are the kernel-facing ones (simt, trace, nv), the device algorithms and the
runtime; an example is a code block in the item's own documentation.
"""
import os
import re
import sys

MODULES = ["simt", "trace", "nv", "algorithms", "runtime"]


def docblock_has_example(html, start):
    """Whether the docblock that follows `start` (up to the item's closing </details>) has code."""
    end = html.find("</details>", start)
    block = html[start : end if end >= 0 else len(html)]
    return "example-wrap" in block


def check(root):
    missing, total = [], 0
    for module in MODULES:
        for dirpath, _, files in os.walk(os.path.join(root, module)):
            for name in sorted(files):
                path = os.path.join(dirpath, name)
                item = os.path.relpath(path, root)[: -len(".html")].replace(os.sep, "::")
                html = open(path, encoding="utf-8").read() if name.endswith(".html") else ""
                if 'http-equiv="refresh"' in html[:600]:
                    continue  # a redirect from a private module's path to the re-exported item
                if name.startswith("fn.") and name.endswith(".html"):
                    total += 1
                    i = html.find('class="docblock')
                    if i < 0 or not docblock_has_example(html, i):
                        missing.append(item)
                elif re.match(r"(struct|enum|trait)\..*\.html$", name):
                    # Inherent and trait methods only: implementations are documented by their trait.
                    cuts = [html.find(m) for m in ('id="trait-implementations"', 'id="synthetic-implementations"', 'id="blanket-implementations"', 'id="foreign-impls"', 'id="implementors"')]
                    body = html[: min([c for c in cuts if c >= 0], default=len(html))]
                    for m in re.finditer(r'<section id="(?:method|tymethod)\.(\w+)"', body):
                        total += 1
                        if not docblock_has_example(body, m.end()):
                            missing.append(f"{item}::{m.group(1)}")
    return total, missing


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    root = args[0] if args else "target/doc/qd"
    if not os.path.isdir(root):
        sys.exit(f"doc-examples: {root} does not exist; run `cargo doc --no-deps -p qd` first")
    total, missing = check(root)
    if "--list" in sys.argv or missing:
        print("\n".join(missing))
    print(f"doc-examples: {total - len(missing)} of {total} public functions and methods have an example")
    sys.exit(1 if missing else 0)


if __name__ == "__main__":
    main()
