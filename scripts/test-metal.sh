#!/usr/bin/env bash
# The Metal stage of scripts/test.sh: what can be checked about the Metal backend without a Mac.
#   1. `qd emit --target msl` writes the MSL of every built-in kernel Metal can run (one line for
#      each it cannot), and every file passes clang-19's C++17 parse against our header
#      (crates/qd-testkit/msl/metal_stdlib) with -Werror: docs/metal.md says what that proves.
#   2. The Metal runtime type-checks for Apple silicon:
#      cargo check -p qd --target aarch64-apple-darwin --features metal
# clang-19 is installed with apt-get when missing (as root); the Rust target comes from
# rust-toolchain.toml (rustup installs it), else `rustup target add`.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

die() {
    echo "test-metal.sh: error: $*" >&2
    exit 1
}

CLANG="${CLANG:-}"
if [[ -z "$CLANG" ]]; then
    if ! command -v clang-19 >/dev/null; then
        hint="install it with: apt-get update && apt-get install -y --no-install-recommends clang-19 (or set CLANG)"
        [[ "$(id -u)" == 0 ]] || die "clang-19 is missing and this is not root, so apt-get cannot install it; $hint"
        command -v apt-get >/dev/null || die "clang-19 is missing and there is no apt-get; $hint"
        DEBIAN_FRONTEND=noninteractive apt-get update -q </dev/null || die "apt-get update failed; $hint"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends clang-19 </dev/null ||
            die "apt-get install clang-19 failed; $hint"
    fi
    CLANG="$(command -v clang-19)"
fi
"$CLANG" --version | head -n 1

# 1. Every emitted file through the check (the same rewrite and flags as qd-testkit's MslCheck).
cargo build --release -q -p qd-cli || die "cargo build --release -p qd-cli failed"
QD="${CARGO_TARGET_DIR:-$ROOT/target}/release/qd"
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
"$QD" emit --target msl --out "$OUT/msl" >"$OUT/refused.txt" 2>&1 || die "qd emit --target msl failed: $(tail -n 3 "$OUT/refused.txt")"
HEADER_DIR="$ROOT/crates/qd-testkit/msl"
mkdir -p "$OUT/checked"
export CLANG HEADER_DIR OUT
check_one() {
    local f="$1" base
    base="$(basename "$f")"
    # clang refuses automatic variables in an address space: threadgroup arrays are checked as
    # static locals (the one rewrite; see docs/metal.md).
    sed -E 's/^(\s*)(alignas\([0-9]+\) )?threadgroup (.*\];)$/\1\2static threadgroup \3/' "$f" >"$OUT/checked/$base"
    "$CLANG" -x c++ -std=c++17 -fsyntax-only -Werror -I "$HEADER_DIR" -include "$HEADER_DIR/metal_stdlib" \
        "$OUT/checked/$base" >"$OUT/checked/$base.log" 2>&1 || { echo "REJECTED $base"; cat "$OUT/checked/$base.log"; }
}
export -f check_one
written=$(find "$OUT/msl" -name '*.metal' | wc -l)
refused=$(grep -c '^kernel `' "$OUT/refused.txt" || true)
[[ "$written" -gt 1000 ]] || die "qd emit --target msl wrote only $written files"
rejected="$(find "$OUT/msl" -name '*.metal' -print0 | xargs -0 -n 16 -P "$(nproc)" bash -c 'for f; do check_one "$f"; done' _)"
[[ -z "$rejected" ]] || die "the MSL check rejected files:
$rejected"
echo "msl: $written files written, all passed the clang check; $refused kernels refused with a reason"

# 2. The runtime, type-checked for macOS.
rustup target list --installed | grep -qx aarch64-apple-darwin || rustup target add aarch64-apple-darwin ||
    die "the aarch64-apple-darwin target is missing and rustup could not add it"
cargo check -q -p qd --target aarch64-apple-darwin --features metal ||
    die "cargo check -p qd --target aarch64-apple-darwin --features metal failed"
echo "metal runtime: type-checks for aarch64-apple-darwin"
