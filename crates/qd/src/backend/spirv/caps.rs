//! What a Vulkan device lets the lowering use, and the up-front check that rejects what it cannot
//! express (with the op, the user's line and "vulkan" named) before any instruction is emitted.

use crate::backend::{BackendKind, Caps, Target};
use crate::ir::*;
use crate::trace::TraceError;

/// Device features the SPIR-V lowering may use (from the Vulkan device's feature structs).
///
/// Always assumed (every device the runtime accepts has them): Vulkan 1.1 with compute subgroup
/// operations basic, vote, ballot, shuffle and shuffle-relative, and `shaderInt64` (ballots are u64).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SpirvCaps {
    /// `VK_EXT_shader_atomic_float` `shaderBufferFloat32AtomicAdd`: f32 `atomic_add` on device
    /// arrays is one `OpAtomicFAddEXT` (otherwise a CAS loop).
    pub float32_atomic_add: bool,
    /// `shaderFloat64`: f64 values and arrays.
    pub float64: bool,
    /// `shaderBufferInt64Atomics` and `shaderSharedInt64Atomics`: every 64-bit atomic (integer, and
    /// the CAS loops of f64 atomics).
    pub int64_atomics: bool,
    /// `storageBuffer8BitAccess`: device arrays of bool, i8 and u8.
    pub int8_storage: bool,
    /// `storageBuffer16BitAccess`: device arrays of i16, u16, f16 and bf16.
    pub int16_storage: bool,
    /// `shaderFloat16`. Not needed: f16 is computed in f32 with exact integer conversions.
    pub float16: bool,
    /// `maxComputeSharedMemorySize`, in bytes.
    pub max_shared_bytes: u32,
    /// `vulkanMemoryModel` and `vulkanMemoryModelDeviceScope` (Vulkan 1.2, or
    /// `VK_KHR_vulkan_memory_model`): modules use the Vulkan memory model, which gives D6 its
    /// meaning: device and shared accesses are non-private, fences and block barriers are
    /// acquire-release with availability and visibility operations on both storage classes,
    /// acquire/release atomics make memory visible/available, and a volatile access is a relaxed
    /// atomic at the array's scope (workgroup for shared, device for device arrays; a volatile load
    /// of a shared element an acquire), so a spin-wait followed by a fence orders what comes after it.
    ///
    /// Without it the module uses the GLSL450 model (`Coherent` device arrays, `Volatile` accesses,
    /// acquire-release barriers), whose cross-thread ordering the Vulkan specification leaves
    /// undefined: the flag-and-fence patterns of D6 (the block page's producer/consumer, the grid
    /// look-back) are not guaranteed there, and NVIDIA's driver was seen to break them.
    pub vulkan_memory_model: bool,
}

impl SpirvCaps {
    /// What Mesa's lavapipe (22.3) offers: everything here but `shaderFloat16`, 32 KiB of shared
    /// memory, the Vulkan memory model.
    pub fn lavapipe() -> SpirvCaps {
        SpirvCaps {
            float32_atomic_add: true,
            float64: true,
            int64_atomics: true,
            int8_storage: true,
            int16_storage: true,
            float16: false,
            max_shared_bytes: 32 * 1024,
            vulkan_memory_model: true,
        }
    }
}

/// What a SPIR-V module is lowered for: the subgroup width the kernel was traced for and the
/// device's features.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SpirvTarget {
    /// Subgroup width (the runtime must run the pipeline with exactly this width and full subgroups).
    pub subgroup_size: u32,
    /// Device features.
    pub caps: SpirvCaps,
}

/// Whether the device has a feature.
type Has = fn(&SpirvCaps) -> bool;

impl SpirvTarget {
    /// The [`Target`] to trace kernels for this device (what [`Target::vulkan`] returns): no NVIDIA families, no `vote.all`/`redux` shortcuts, no fused barrier reduction
    /// (the library emulates `sync_*_nonzero`), broadcast from a subgroup-uniform lane, f64 and
    /// 64-bit atomics and shared memory as the device has them.
    pub fn trace_target(&self) -> Target {
        let caps = Caps {
            nv: false,
            vote_shortcut: false,
            redux: false,
            uniform_broadcast_lane: true,
            barrier_reduce: false,
            f64: self.caps.float64,
            atomic_i64: self.caps.int64_atomics,
            max_shared_bytes: self.caps.max_shared_bytes,
        };
        Target { backend: BackendKind::Vulkan, subgroup_size: self.subgroup_size, caps }
    }
}

/// Storage of a device array element: bool/8-bit need `int8_storage`, 16-bit need `int16_storage`.
fn storage_need(d: DType) -> Option<(&'static str, Has)> {
    match d.bits() {
        1 | 8 => Some(("int8_storage (storageBuffer8BitAccess)", |c| c.int8_storage)),
        16 => Some(("int16_storage (storageBuffer16BitAccess)", |c| c.int16_storage)),
        _ => None,
    }
}

/// Why `d` cannot be a value on this target, if it cannot.
fn dtype_problem(d: DType, caps: &SpirvCaps) -> Option<String> {
    if d.is_packed() || d == DType::B128 {
        return Some(format!("{d} values (b128 and packed f16x2/bf16x2) are not supported on vulkan"));
    }
    if d == DType::F64 && !caps.float64 {
        return Some("f64 needs the float64 capability (shaderFloat64), which this vulkan device lacks".into());
    }
    None
}

/// Rejects, before lowering, every instruction this backend cannot express on `target`: the
/// NVIDIA-only families, a barrier with a fused reduction, b128 and packed values, and types or
/// atomics the device's [`SpirvCaps`] lack. `caller` locates module-level problems (parameters).
pub(super) fn check(k: &Kernel, target: &SpirvTarget, caller: SrcLoc) -> Result<(), TraceError> {
    let caps = &target.caps;
    for p in &k.params {
        if let Param::Scalar { dtype, name, .. } = p {
            if let Some(why) = dtype_problem(*dtype, caps) {
                return Err(TraceError {
                    kernel: k.name.clone(),
                    op: "spirv.param".into(),
                    loc: caller,
                    message: format!("parameter `{name}`: {why}"),
                });
            }
        }
    }
    let mut result = Ok(());
    k.body.walk(&mut |inst| {
        if result.is_ok() {
            result = check_inst(k, caps, inst);
        }
    });
    result
}

fn check_inst(k: &Kernel, caps: &SpirvCaps, inst: &Inst) -> Result<(), TraceError> {
    let err = |message: String| TraceError { kernel: k.name.clone(), op: inst.kind.mnemonic(), loc: inst.loc, message };
    use InstKind::*;
    match &inst.kind {
        Nv { .. } | Special { reg: crate::ir::Special::Nv(_), .. } => {
            return Err(err(format!(
                "`{}` is an NVIDIA-only operation (seed 004), not supported on vulkan",
                inst.kind.mnemonic()
            )));
        }
        BlockBarrier { reduce: Some(_) } => {
            return Err(err("a block barrier with a fused predicate reduction is not supported on vulkan; \
                 trace for Target::vulkan, whose caps.barrier_reduce = false makes the library emulate it"
                .into()));
        }
        _ => {}
    }
    for v in inst.kind.defs().into_iter().chain(inst.kind.uses()) {
        if let Some(why) = dtype_problem(k.dtype(v), caps) {
            return Err(err(why));
        }
    }
    let place = match &inst.kind {
        Load { place, .. } | Store { place, .. } | Atomic { place, .. } | Cas { place, .. } => place,
        _ => return Ok(()),
    };
    let t = k.array_dtype(place.array);
    if let Some(why) = dtype_problem(t, caps) {
        return Err(err(format!("array `{}`: {why}", k.array_name(place.array))));
    }
    if let ArrayRef::Param(_) = place.array {
        if let Some((name, has)) = storage_need(t) {
            if !has(caps) {
                return Err(err(format!(
                    "device array `{}` of {t} needs {name}, which this vulkan device lacks",
                    k.array_name(place.array)
                )));
            }
        }
    }
    let atomic = match &inst.kind {
        Atomic { .. } | Cas { .. } => true,
        Load { kind, .. } => matches!(kind, LoadKind::Ordered(..)),
        Store { kind, .. } => matches!(kind, StoreKind::Ordered(..)),
        _ => false,
    };
    let private = matches!(place.array, ArrayRef::Local(_));
    if atomic && !private && t.bits() == 64 && !caps.int64_atomics {
        return Err(err(format!(
            "a 64-bit atomic on `{}` ({t}) needs int64_atomics (shaderBufferInt64Atomics / \
             shaderSharedInt64Atomics), which this vulkan device lacks",
            k.array_name(place.array)
        )));
    }
    Ok(())
}
