//! What a Vulkan device lets the lowering use ([`SpirvCaps`]), and the capability model's answers
//! for it (`support`, `limits`); the check pass of `crate::target` rejects what it lacks.

use super::types::Ty;
use crate::ir::{AtomicOp, DType};
use crate::target::{Feature, Limits, MemSpace, Polyfill, Support, Target};

/// Device features the SPIR-V lowering may use (from the Vulkan device's feature structs).
///
/// Always assumed (every device the runtime accepts has them): Vulkan 1.1 with compute subgroup
/// operations basic, vote, ballot, shuffle and shuffle-relative, and `shaderInt64` (ballots are u64).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SpirvCaps {
    /// `VK_EXT_shader_atomic_float` `shaderBufferFloat32AtomicAdd`: f32 `atomic_add` on device
    /// arrays is one `OpAtomicFAddEXT` (otherwise a CAS loop).
    pub float32_atomic_add: bool,
    /// `VK_EXT_shader_atomic_float` `shaderBufferFloat64AtomicAdd`: f64 `atomic_add` on device
    /// arrays is one `OpAtomicFAddEXT` (capability `AtomicFloat64AddEXT`; otherwise a CAS loop).
    pub float64_atomic_add: bool,
    /// `VK_EXT_shader_atomic_float2` `shaderBufferFloat16AtomicAdd`, with `shaderFloat16` and
    /// 16-bit storage: f16 `atomic_add` on device arrays is one `OpAtomicFAddEXT` (capability
    /// `AtomicFloat16AddEXT`; otherwise a CAS loop on the enclosing word).
    pub float16_atomic_add: bool,
    /// `shaderSignedZeroInfNanPreserveFloat32` (`VK_KHR_shader_float_controls`, Vulkan 1.2): modules
    /// that compute in f32 (f16 and bf16 included) ask for `SignedZeroInfNanPreserve 32`, so the
    /// driver keeps `-0.0` (seed 003's float `atomic_sub`); without it [`Feature::SignedZeros`] of
    /// those types is unsupported.
    pub signed_zeros32: bool,
    /// `shaderSignedZeroInfNanPreserveFloat64`: the same for f64.
    pub signed_zeros64: bool,
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
    /// What Mesa's lavapipe (22.3) offers: everything here but `shaderFloat16` and f64 atomic add,
    /// 32 KiB of shared memory, the Vulkan memory model.
    pub fn lavapipe() -> SpirvCaps {
        SpirvCaps {
            float32_atomic_add: true,
            float64_atomic_add: false,
            float16_atomic_add: false,
            signed_zeros32: true,
            signed_zeros64: true,
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

impl SpirvTarget {
    /// The [`Target`] to trace kernels for this device (what [`Target::vulkan`] returns).
    pub fn trace_target(&self) -> Target {
        Target::vulkan(self.subgroup_size, &self.caps)
    }
}

/// The limits of a Vulkan device with `subgroup_size` lanes: its shared memory, in which elements
/// narrower than 32 bits take 32-bit cells (so their atomics are word atomics).
pub(crate) fn limits(subgroup_size: u32, caps: &SpirvCaps) -> Limits {
    Limits {
        subgroup_size,
        max_shared_bytes: caps.max_shared_bytes,
        shared_cell_bytes: 4,
        max_buffer_bytes: None,
        loop_iteration_cap: None,
        block_forward_progress: false,
        max_array_params: None,
    }
}

/// How a Vulkan device with `caps` provides `f`: no NVIDIA families, no vote or barrier-reduce
/// shortcuts (the library composes them), a broadcast from a non-constant lane as a shuffle, types and
/// atomics as the device's features allow, CAS loops where SPIR-V has no native atomic.
pub(crate) fn support(caps: &SpirvCaps, f: Feature) -> Support {
    let int64_atomics = |t: DType| {
        (t.bits() == 64 && !caps.int64_atomics).then(|| {
            Support::unsupported(format!(
                "a 64-bit atomic ({t}) needs int64_atomics (shaderBufferInt64Atomics / \
                 shaderSharedInt64Atomics), which this vulkan device lacks"
            ))
        })
    };
    match f {
        Feature::Nv(_) => Support::unsupported("an NVIDIA-only operation (seed 004)"),
        Feature::VoteShortcut => Support::polyfill(Polyfill::Library("a shuffle-xor butterfly over the tile")),
        Feature::BarrierReduce => Support::polyfill(Polyfill::Library(
            "a shared counter, one atomic add per contributing thread and two barriers",
        )),
        // `OpGroupNonUniformBroadcast` needs a constant lane in SPIR-V 1.3; any other lane is an
        // `OpGroupNonUniformShuffle` (`subgroup.rs`).
        Feature::DynamicBroadcastLane => Support::polyfill(Polyfill::Lowering("OpGroupNonUniformShuffle")),
        Feature::SubgroupFence => Support::Native,
        // OpGroupNonUniform{I,U,S}* Reduce/Scan are not emitted: the trees keep the backends alike.
        Feature::SubgroupArith { .. } => Support::polyfill(Polyfill::SHUFFLE_TREES),
        Feature::Tile { .. } | Feature::SharedMemory { .. } | Feature::SpinWait => Support::Native,
        Feature::Values(d) if d.is_packed() || d == DType::B128 => {
            Support::unsupported(format!("{d} values (b128 and packed f16x2/bf16x2) are not supported on vulkan"))
        }
        Feature::Values(DType::F64) if !caps.float64 => {
            Support::unsupported("f64 needs the float64 capability (shaderFloat64), which this vulkan device lacks")
        }
        Feature::Values(DType::F16 | DType::BF16) => {
            Support::polyfill(Polyfill::Lowering("computed in f32 with exact conversions"))
        }
        Feature::Values(_) => Support::Native,
        Feature::Storage(d, MemSpace::Device) => match d.bits() {
            1 | 8 if !caps.int8_storage => Support::unsupported(format!(
                "device arrays of {d} need int8_storage (storageBuffer8BitAccess), which this vulkan device lacks"
            )),
            16 if !caps.int16_storage => Support::unsupported(format!(
                "device arrays of {d} need int16_storage (storageBuffer16BitAccess), which this vulkan device lacks"
            )),
            _ => Support::Native,
        },
        Feature::Storage(_, MemSpace::Shared) => Support::Native,
        // No atomic store narrower than 32 bits: a store is an exchange loop on the word (an
        // ordered load reads the word atomically).
        Feature::OrderedAccess(t, s) => int64_atomics(t).unwrap_or_else(|| match cell_ty(s, t) {
            Ty::U8 | Ty::U16 => Support::polyfill(Polyfill::SubwordCasLoop),
            _ => Support::Native,
        }),
        Feature::AtomicCas(t, s) => int64_atomics(t).unwrap_or_else(|| match cell_ty(s, t) {
            Ty::U8 | Ty::U16 => Support::polyfill(Polyfill::SubwordCasLoop),
            _ => Support::Native,
        }),
        Feature::AtomicRmw(op, t, s) => int64_atomics(t).unwrap_or_else(|| atomic_rmw(caps, op, t, s)),
        Feature::SignedZeros(t) => signed_zeros(caps, t),
    }
}

/// Whether a module can ask the driver to keep signed zeros in `t` arithmetic (the lowering
/// emits `SignedZeroInfNanPreserve` for every float width it computes in where the device has it).
fn signed_zeros(caps: &SpirvCaps, t: DType) -> Support {
    let (has, width) = match t {
        DType::F64 => (caps.signed_zeros64, 64),
        _ => (caps.signed_zeros32, 32),
    };
    if has || !t.is_float() {
        Support::Native
    } else {
        Support::unsupported(format!(
            "keeping signed zeros in {t} needs shaderSignedZeroInfNanPreserveFloat{width} \
             (VK_KHR_shader_float_controls), which this vulkan device lacks"
        ))
    }
}

/// The storage cell of an element in `s` (as the lowering lays arrays out).
fn cell_ty(s: MemSpace, t: DType) -> Ty {
    super::lower::cell_ty(s.address_space(), t)
}

/// Which read-modify-writes SPIR-V has natively (`memory.rs` lowers exactly these).
fn atomic_rmw(caps: &SpirvCaps, op: AtomicOp, t: DType, s: MemSpace) -> Support {
    let cell = cell_ty(s, t);
    let wide_int = matches!(t, DType::I32 | DType::U32 | DType::I64 | DType::U64);
    let native = match op {
        AtomicOp::Mul => false,
        _ if wide_int => true,
        AtomicOp::And | AtomicOp::Or | AtomicOp::Xor | AtomicOp::Exchange if t.is_int() && cell == Ty::U32 => true,
        AtomicOp::Exchange if t.is_float() && cell != Ty::U16 => true,
        AtomicOp::Add if s == MemSpace::Device => match t {
            DType::F32 => caps.float32_atomic_add,
            DType::F64 => caps.float64_atomic_add,
            DType::F16 => caps.float16_atomic_add && caps.float16 && caps.int16_storage,
            _ => false,
        },
        _ => false,
    };
    if native {
        Support::Native
    } else if matches!(cell, Ty::U8 | Ty::U16) {
        Support::polyfill(Polyfill::SubwordCasLoop)
    } else {
        Support::polyfill(Polyfill::CasLoop)
    }
}
