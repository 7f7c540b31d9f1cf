#!/usr/bin/env bash
# The AMDGPU stage of scripts/test.sh: what can be checked about the AMDGPU backend without an AMD GPU.
#   1. `qd emit --target amdgpu:<gfx>` writes the LLVM IR of every built-in kernel for gfx942,
#      gfx90a, gfx1100 and gfx1201 (one line for each kernel a target refuses, with the reason).
#   2. Every gfx942 and gfx1100 file is assembled by llc-19 (-mattr=+wavefrontsize64) and linked by
#      ld.lld-19 -shared into a code object; any failure fails the stage.
#   3. Where Debian's llvm-22 is installed, every gfx942 and gfx1100 file is parsed and verified by
#      its opt-22 (-passes=verify) too: ROCm's LLVM is newer than 19, so the text must not depend
#      on what 19 alone accepts.
# Also: the HIP runtime (cargo feature `amdgpu`) is built, linted and tested (without ROCm, and
# against a stand-in for HIP). The ISA checks
# (crates/qd/tests/amdgpu_isa.rs) run with `cargo test`. llvm-19 and lld-19 are
# installed with apt-get when missing (as root); llvm-22 is used only when present.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

die() {
    echo "test-amdgpu.sh: error: $*" >&2
    exit 1
}

need=()
command -v llc-19 >/dev/null || need+=(llvm-19)
command -v ld.lld-19 >/dev/null || need+=(lld-19)
if ((${#need[@]})); then
    hint="install them with: apt-get update && apt-get install -y --no-install-recommends ${need[*]}"
    [[ "$(id -u)" == 0 ]] || die "${need[*]} missing and this is not root, so apt-get cannot install them; $hint"
    command -v apt-get >/dev/null || die "${need[*]} missing and there is no apt-get; $hint"
    DEBIAN_FRONTEND=noninteractive apt-get update -q </dev/null || die "apt-get update failed; $hint"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}" </dev/null ||
        die "apt-get install ${need[*]} failed; $hint"
fi
LLC22="$(command -v opt-22 || true)"

cargo build --release -q -p qd-cli || die "cargo build --release -p qd-cli failed"
# The HIP runtime (feature `amdgpu`) builds and lints here; it needs ROCm and an AMD GPU to run.
cargo build -q -p qd --features amdgpu || die "cargo build -p qd --features amdgpu failed"
cargo clippy -q -p qd --features amdgpu --all-targets -- -D warnings || die "cargo clippy -p qd --features amdgpu failed"
cargo test -q -p qd --features amdgpu --test amdgpu_runtime --test amdgpu_fake_hip --lib -- runtime::amdgpu without_rocm stand_in ||
    die "the AMDGPU runtime's tests failed (cargo test -p qd --features amdgpu)"
QD="${CARGO_TARGET_DIR:-$ROOT/target}/release/qd"
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT

for gfx in gfx942 gfx90a gfx1100 gfx1201; do
    "$QD" emit --target "amdgpu:$gfx" --out "$OUT/$gfx" >"$OUT/$gfx.refused" 2>&1 ||
        die "qd emit --target amdgpu:$gfx failed: $(tail -n 3 "$OUT/$gfx.refused")"
    echo "amdgpu:$gfx: $(find "$OUT/$gfx" -name '*.ll' | wc -l) files, $(grep -c 'not emitted' "$OUT/$gfx.refused" || true) kernels refused"
done

export OUT LLC22
check_one() {
    local gfx="$1" f="$2" base
    base="$(basename "$f" .ll)"
    llc-19 -mtriple=amdgcn-amd-amdhsa -mcpu="$gfx" -mattr=+wavefrontsize64 -filetype=obj -o "$OUT/$gfx/$base.o" "$f" \
        >"$OUT/$gfx/$base.log" 2>&1 || { echo "REJECTED by llc-19 ($gfx): $base"; cat "$OUT/$gfx/$base.log"; return; }
    ld.lld-19 -shared -o "$OUT/$gfx/$base.so" "$OUT/$gfx/$base.o" >>"$OUT/$gfx/$base.log" 2>&1 ||
        { echo "NOT LINKED ($gfx): $base"; cat "$OUT/$gfx/$base.log"; return; }
    if [[ -n "$LLC22" ]]; then
        # Parsed and verified by LLVM 22 (ROCm's LLVM is newer than 19): opt reads the text, takes
        # the data layout from the module's amdgcn triple (address space 3 has 32-bit pointers) and
        # runs the IR verifier, which is what "a newer LLVM accepts it" needs, at a fraction of llc's cost.
        "$LLC22" -passes=verify -disable-output "$f" \
            >>"$OUT/$gfx/$base.log" 2>&1 || { echo "REJECTED by LLVM 22 ($gfx): $base"; cat "$OUT/$gfx/$base.log"; }
    fi
    rm -f "$OUT/$gfx/$base.o" "$OUT/$gfx/$base.so"
}
export -f check_one

[[ -n "$LLC22" ]] || echo "opt-22 (Debian llvm-22) not installed: the files are checked with LLVM 19 only"
for gfx in gfx942 gfx1100; do
    find "$OUT/$gfx" -name '*.ll' -print0 |
        xargs -0 -P "$(nproc)" -I{} bash -c 'check_one "$1" "$2"' _ "$gfx" {} >"$OUT/$gfx.failures"
    if [[ -s "$OUT/$gfx.failures" ]]; then
        cat "$OUT/$gfx.failures"
        die "$(grep -c '^REJECTED\|^NOT LINKED' "$OUT/$gfx.failures") files for $gfx failed"
    fi
    echo "amdgpu:$gfx: every file assembled and linked"
done
