#!/usr/bin/env bash
# The Vulkan validation stage of scripts/test.sh (issue 12): the lavapipe conformance run under
# VK_LAYER_KHRONOS_validation, which must report 0 validation errors.
#   1. The layer (Debian `vulkan-validationlayers`) is installed with apt-get when missing (as root).
#   2. `qd conformance --backend vulkan` (QD_VALIDATION_FILTER narrows it) runs with the layer's
#      errors logged to a file (vk_layer_settings.txt); the layer's "active" message must be there,
#      and any "Validation Error" line there or in the output fails.
# Expects the Vulkan environment of scripts/test.sh (VK_DRIVER_FILES pointing at lavapipe).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

die() {
    echo "test-validation.sh: error: $*" >&2
    exit 1
}

LAYER_JSON=/usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json
if [[ ! -f "$LAYER_JSON" ]]; then
    hint="install it with: apt-get update && apt-get install -y --no-install-recommends vulkan-validationlayers"
    [[ "$(id -u)" == 0 ]] || die "the Vulkan validation layer is missing and this is not root; $hint"
    command -v apt-get >/dev/null || die "the Vulkan validation layer is missing and there is no apt-get; $hint"
    DEBIAN_FRONTEND=noninteractive apt-get update -q </dev/null || die "apt-get update failed; $hint"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends vulkan-validationlayers </dev/null ||
        die "apt-get install vulkan-validationlayers failed; $hint"
    [[ -f "$LAYER_JSON" ]] || die "vulkan-validationlayers installed but $LAYER_JSON is absent"
fi

cargo build --release -q -p qd-cli || die "cargo build --release -p qd-cli failed"
QD="${CARGO_TARGET_DIR:-$ROOT/target}/release/qd"
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT

# The layer reads its settings from this file: errors counted, plus the info message that proves
# it is active (a layer that silently failed to load must not pass as "0 errors").
cat >"$OUT/vk_layer_settings.txt" <<SETTINGS
khronos_validation.debug_action = VK_DBG_LAYER_ACTION_LOG_MSG
khronos_validation.report_flags = info,error
khronos_validation.log_filename = $OUT/layer.log
SETTINGS
export VK_LAYER_SETTINGS_PATH="$OUT"
export VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation

args=(conformance --backend vulkan)
[[ -n "${QD_VALIDATION_FILTER:-}" ]] && args+=(--filter "$QD_VALIDATION_FILTER")
"$QD" "${args[@]}" >"$OUT/run.txt" 2>&1 || die "qd ${args[*]} failed under the layer: $(tail -n 5 "$OUT/run.txt")"
tail -n 1 "$OUT/run.txt"
grep -q 'Khronos Validation Layer Active' "$OUT/layer.log" 2>/dev/null ||
    die "VK_LAYER_KHRONOS_validation did not report itself active (no layer log at $OUT/layer.log)"
tail -n 1 "$OUT/run.txt" | grep -Eq '^[0-9]+ passed, 0 failed, [0-9]+ skipped$' ||
    die "qd ${args[*]} did not end with 'N passed, 0 failed, K skipped' under the layer"
errors=$(cat "$OUT/run.txt" "$OUT/layer.log" 2>/dev/null | grep -c 'Validation Error' || true)
if [[ "$errors" != 0 ]]; then
    grep -h 'Validation Error' "$OUT/run.txt" "$OUT/layer.log" 2>/dev/null | head -n 20 >&2
    die "$errors validation errors under VK_LAYER_KHRONOS_validation"
fi
echo "0 validation errors under VK_LAYER_KHRONOS_validation"
