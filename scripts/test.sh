#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run calls exactly this): external tools, formatting,
# lints, unit and integration tests, then the conformance suite and the tour from the release `qd`
# binary. Prints the time of each stage; the total must stay well under 30 minutes on 2 cores (D11).
# The decisions (Dn) are in docs/decisions.md.
#
# The cargo tests include the safety net: crates/qd-cli/tests/snapshots.rs pins the IR, PTX
# (sm_80, sm_90) and SPIR-V (sg8, sg32) of every built-in kernel and runs ptxas and spirv-val on
# each module, through the validator kit crates/qd-testkit. Snapshots are never written here
# (INSTA_UPDATE=no): a changed module fails until its diff is reviewed and committed.
#
# External tools (D9) are found through environment variables, else in the git-ignored `.tools/`
# folder, else installed there:
#   PTXAS  ptxas from the nvidia-cuda-nvcc==13.0.88 wheel (PyPI), matching the CUDA 13.0 driver.
# Vulkan: lavapipe (Mesa's CPU Vulkan driver) and spirv-val are found on the system, else installed
# with apt-get (as root): the loader is pointed at lavapipe (VK_DRIVER_FILES, VK_ICD_FILENAMES),
# SPIRV_VAL is exported, and QD_REQUIRE_VULKAN=1 makes a missing Vulkan device a test failure.
# Needs no standard input (runs under CI=true).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
TOOLS="$ROOT/.tools"
QD="${CARGO_TARGET_DIR:-$ROOT/target}/release/qd"

die() {
    echo "test.sh: error: $*" >&2
    exit 1
}

# Runs one stage, printing its wall time; the times are summed up at the end.
STAGE_TIMES=()
stage() {
    local name="$1"
    shift
    local start=$SECONDS
    echo
    echo "==> $name"
    "$@"
    local took=$((SECONDS - start))
    echo "<== $name: ${took}s"
    STAGE_TIMES+=("$(printf '%5ss  %s' "$took" "$name")")
}

# ptxas (D9): $PTXAS, else .tools/ptxas, else unpacked from the nvidia-cuda-nvcc wheel.
# pip downloads the wheel (no install, so Debian's PEP 668 refusal does not apply) and python's
# zipfile takes the one member we need, so neither a CUDA toolkit nor unzip is required.
ensure_ptxas() {
    local version="13.0.88"
    local member="nvidia/cu13/bin/ptxas"
    local install_hint="install it with: python3 -m pip download --no-deps nvidia-cuda-nvcc==$version -d .tools/wheels, then unzip $member from the wheel into .tools/ (or set PTXAS to an existing ptxas)"
    if [[ -n "${PTXAS:-}" ]]; then
        [[ -x "$PTXAS" ]] || die "PTXAS=$PTXAS is not an executable file; $install_hint"
    elif [[ -x "$TOOLS/ptxas" ]]; then
        PTXAS="$TOOLS/ptxas"
    else
        command -v python3 >/dev/null || die "ptxas is missing and python3 (needed to fetch it) is not installed; $install_hint"
        echo "ptxas not found: downloading nvidia-cuda-nvcc==$version into .tools/wheels"
        mkdir -p "$TOOLS/wheels"
        python3 -m pip download --no-deps --no-input --disable-pip-version-check --quiet \
            "nvidia-cuda-nvcc==$version" -d "$TOOLS/wheels" </dev/null ||
            die "could not download nvidia-cuda-nvcc==$version with pip (network or pip missing?); $install_hint"
        local wheel
        wheel="$(ls "$TOOLS"/wheels/nvidia_cuda_nvcc-"$version"-*.whl 2>/dev/null | head -n 1 || true)"
        [[ -n "$wheel" ]] || die "pip reported success but no nvidia_cuda_nvcc-$version wheel is in .tools/wheels; $install_hint"
        python3 - "$wheel" "$member" "$TOOLS/ptxas" <<'EOF' || die "could not extract $member from $wheel; $install_hint"
import shutil, sys, zipfile
wheel, member, dest = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    if member not in z.namelist():
        sys.exit(f"{member} is not in {wheel}")
    with z.open(member) as src, open(dest, "wb") as out:
        shutil.copyfileobj(src, out)
EOF
        chmod +x "$TOOLS/ptxas"
        PTXAS="$TOOLS/ptxas"
    fi
    "$PTXAS" --version >/dev/null 2>&1 || die "$PTXAS does not run (ptxas --version failed); $install_hint"
    export PTXAS
    echo "PTXAS=$PTXAS ($("$PTXAS" --version | tail -n 1))"
}

# Vulkan (D9): lavapipe, the loader and spirv-val, from the system or installed with apt-get.
VULKAN_PACKAGES="mesa-vulkan-drivers libvulkan1 spirv-tools"
LAVAPIPE_ICD_GLOB="/usr/share/vulkan/icd.d/lvp_icd*.json"

lavapipe_icd() {
    local f
    for f in $LAVAPIPE_ICD_GLOB; do
        [[ -f "$f" ]] && {
            echo "$f"
            return
        }
    done
    return 0
}

vulkan_loader_present() {
    # (No `ldconfig -p | grep -q`: with pipefail, grep leaving early fails the pipe.)
    [[ "$(ldconfig -p 2>/dev/null || true)" == *"libvulkan.so.1 "* ]] ||
        compgen -G "/usr/lib/*/libvulkan.so.1" >/dev/null || compgen -G "/usr/lib*/libvulkan.so.1" >/dev/null
}

ensure_vulkan() {
    local hint="install them with: apt-get update && apt-get install -y --no-install-recommends $VULKAN_PACKAGES"
    local icd val
    icd="$(lavapipe_icd)"
    val="${SPIRV_VAL:-$(command -v spirv-val || true)}"
    if [[ -z "$icd" || -z "$val" ]] || ! vulkan_loader_present; then
        echo "lavapipe, the Vulkan loader or spirv-val is missing: installing $VULKAN_PACKAGES"
        [[ "$(id -u)" == 0 ]] || die "lavapipe ($LAVAPIPE_ICD_GLOB), libvulkan.so.1 or spirv-val is missing and this is not root, so apt-get cannot install them; $hint"
        command -v apt-get >/dev/null || die "lavapipe, libvulkan.so.1 or spirv-val is missing and there is no apt-get; install the packages $VULKAN_PACKAGES (Debian/Ubuntu names)"
        DEBIAN_FRONTEND=noninteractive apt-get update -q </dev/null || die "apt-get update failed; $hint"
        # shellcheck disable=SC2086 # the package list is split on purpose
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $VULKAN_PACKAGES </dev/null ||
            die "apt-get install failed; $hint"
        icd="$(lavapipe_icd)"
        val="${SPIRV_VAL:-$(command -v spirv-val || true)}"
        [[ -n "$icd" ]] || die "lavapipe's driver file ($LAVAPIPE_ICD_GLOB) is missing after installing $VULKAN_PACKAGES"
        vulkan_loader_present || die "libvulkan.so.1 is missing after installing $VULKAN_PACKAGES"
        [[ -n "$val" ]] || die "spirv-val is missing after installing $VULKAN_PACKAGES"
    fi
    [[ -x "$val" ]] || die "SPIRV_VAL=$val is not an executable file; $hint"
    "$val" --version >/dev/null 2>&1 || die "$val does not run (spirv-val --version failed); $hint"
    export SPIRV_VAL="$val"
    # Only lavapipe, whatever else is installed: the same device everywhere CI runs.
    export VK_DRIVER_FILES="$icd" VK_ICD_FILENAMES="$icd"
    # The loader and Mesa complain without a usable runtime folder; give them a private one.
    XDG_RUNTIME_DIR="$(mktemp -d "${TMPDIR:-/tmp}/qd-xdg.XXXXXX")"
    chmod 700 "$XDG_RUNTIME_DIR"
    export XDG_RUNTIME_DIR
    trap 'rm -rf "$XDG_RUNTIME_DIR"' EXIT
    # The Vulkan tests fail, rather than skip, when the device is missing.
    export QD_REQUIRE_VULKAN=1
    echo "SPIRV_VAL=$SPIRV_VAL ($("$SPIRV_VAL" --version | head -n 1))"
    echo "VK_DRIVER_FILES=$VK_DRIVER_FILES"
}

ensure_tools() {
    ensure_ptxas
    ensure_vulkan
}

conformance() {
    "$QD" conformance --backend "$1"
}

# The Vulkan conformance run on lavapipe: besides the exit status, the last line must say
# `N passed, 0 failed, K skipped` (cases lavapipe cannot run skip themselves, with a reason).
conformance_vulkan() {
    local log="${CARGO_TARGET_DIR:-$ROOT/target}/conformance-vulkan.log"
    "$QD" info | sed -n '/^devices:/,/^$/p'
    "$QD" conformance --backend vulkan | tee "$log" || die "qd conformance --backend vulkan failed (log: $log)"
    tail -n 1 "$log" | grep -Eq '^[0-9]+ passed, 0 failed, [0-9]+ skipped$' ||
        die "qd conformance --backend vulkan did not end with 'N passed, 0 failed, K skipped' (log: $log)"
}

# The Vulkan runtime's staging path (D22): lavapipe's memory is all host-visible, so its copies
# take the discrete-GPU path only when QD_VULKAN_STAGING=1 forces it. The runtime tests and two
# conformance groups (examples, atomics: every dtype copied both ways) run with it.
vulkan_staging() {
    # --workspace: the features of the "tests" stage, so nothing is rebuilt.
    QD_VULKAN_STAGING=1 cargo test -q --workspace --test vulkan_runtime --test vulkan_speed ||
        die "the Vulkan runtime tests failed with QD_VULKAN_STAGING=1"
    local f
    for f in examples atomic; do
        QD_VULKAN_STAGING=1 "$QD" conformance --backend vulkan --filter "$f" | tail -n 1 |
            grep -Eq '^[0-9]+ passed, 0 failed, [0-9]+ skipped$' ||
            die "qd conformance --backend vulkan --filter $f failed with QD_VULKAN_STAGING=1"
    done
}

# The emulator's weak-memory mode (D26): plain stores buffered per block and loads possibly stale,
# so a kernel missing a fence can fail. The grid cases (look-back scan, last block done), the
# device-wide algorithms (`qd::algorithms`: look-back and fallback) and the benchmark's look-back
# kernels (the scan in both tile orders, the reduction) at the emulator's default sizes; the seed
# is random and printed, so a failure names its reproduction.
weak_memory() {
    "$QD" conformance --backend cpu:sg32 --memory weak --filter grid/
    "$QD" conformance --backend cpu:sg32 --memory weak --filter algorithms/
    local order
    for order in ticket blockidx; do
        "$QD" bench scan --backend cpu:sg32 --memory weak --reps 2 --warmup 0 --tile-order "$order"
    done
    "$QD" bench reduce --backend cpu:sg32 --memory weak --reps 2 --warmup 0
}

# The `qd` crate without its GPU runtimes (`--no-default-features`: no `cuda`, no `vulkan`): it builds,
# passes its tests and lints with the code generators alone, and pulls in neither driver binding.
no_gpu_features() {
    cargo build -p qd --no-default-features || die "cargo build -p qd --no-default-features failed"
    cargo test -p qd --no-default-features || die "cargo test -p qd --no-default-features failed"
    cargo clippy -p qd --no-default-features --all-targets -- -D warnings ||
        die "cargo clippy -p qd --no-default-features failed"
    local tree
    tree="$(cargo tree -p qd --no-default-features -e normal --prefix none)" ||
        die "cargo tree -p qd --no-default-features failed"
    local leaked
    leaked="$(grep -E '^(cudarc|ash|gpu-allocator) ' <<<"$tree" || true)"
    [[ -z "$leaked" ]] || die "qd --no-default-features still depends on a driver binding: $leaked"
    echo "qd without GPU features: builds, tests and lints clean; no cudarc, no ash"
}

# The documentation (D32): rustdoc of `qd` with warnings denied (broken intra-doc links included),
# an example for every public function and method of the user-facing modules
# (scripts/doc-examples.py reads the generated HTML), and the doctests: the guide's pages
# (docs/guide/) and every example, merged into one binary per crate (edition 2024), run on the
# emulator. The doctests run here, not in the "tests" stage, so their time is this stage's.
docs() {
    RUSTDOCFLAGS="-D warnings" cargo doc --no-deps -p qd || die "cargo doc -p qd has warnings (RUSTDOCFLAGS=-D warnings)"
    python3 scripts/doc-examples.py "${CARGO_TARGET_DIR:-$ROOT/target}/doc/qd" ||
        die "a public function or method has no example (scripts/doc-examples.py lists them)"
    cargo test --workspace --doc || die "cargo test --workspace --doc failed"
}

TOTAL_START=$SECONDS
stage "tools" ensure_tools
stage "metal (MSL check, macOS type-check)" bash scripts/test-metal.sh
stage "amdgpu (llc/ld.lld on every kernel)" bash scripts/test-amdgpu.sh
stage "rustfmt" cargo fmt --all -- --check
stage "clippy" cargo clippy --workspace --all-targets -- -D warnings
stage "no GPU features" no_gpu_features
export INSTA_UPDATE=no
unset INSTA_FORCE_PASS # it would turn every snapshot mismatch into a pass
stage "tests" cargo test --workspace --all-targets
stage "docs (rustdoc, examples, doctests)" docs
stage "release build" cargo build --release -p qd-cli
for sg in 4 8 16 32 64; do
    stage "conformance cpu:sg$sg" conformance "cpu:sg$sg"
done
# The emulator wearing the AMDGPU and Metal capability models: the library paths those targets
# take, and skips only where the check refuses a kernel (f64 and 64-bit atomics on Metal, ...).
stage "conformance cpu:sg64@amdgpu:gfx942" conformance "cpu:sg64@amdgpu:gfx942"
stage "conformance cpu:sg32@metal" conformance "cpu:sg32@metal"
stage "weak memory cpu:sg32 (grid cases, look-back kernels)" weak_memory
stage "conformance vulkan" conformance_vulkan
# D27: random programs on every emulator width (and worn profile) and on lavapipe, bit for bit. A
# fixed seed and case count, so a CI failure is the same on every run (random seeds are for
# `qd difftest` by hand and the GPU record); --seconds only caps a slow machine.
stage "difftest (emulators + lavapipe, 400 cases)" "$QD" difftest --seed 1 --cases 400 --seconds 60 --backend emulators,vulkan
stage "vulkan staging path" vulkan_staging
stage "vulkan validation layers" bash scripts/test-validation.sh
stage "tour" "$QD" tour

echo
echo "stage times:"
printf '%s\n' "${STAGE_TIMES[@]}"
echo "all stages passed in $((SECONDS - TOTAL_START))s"
