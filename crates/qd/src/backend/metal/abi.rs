//! What a printed kernel hands the runtime, and what a kernel needs of the MSL version.

use super::caps::MslVersion;
use crate::ir::{DType, InstKind, Kernel, LoadKind, Ordering, Param, Scope, StoreKind};

/// Buffers a Metal compute function may bind (`[[buffer(0)]]` to `[[buffer(30)]]`).
pub const MAX_BUFFERS: usize = 31;

/// How one kernel parameter reaches the function (see the ABI in the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BufferAbi {
    /// A device array: `[[buffer(index)]]`, elements of `dtype` at their natural size (bool: one byte).
    Array {
        /// Element type.
        dtype: DType,
        /// Its `[[buffer(n)]]` index (`1 +` its index among the array parameters).
        index: u32,
    },
    /// A scalar: its bits, zero-extended, in the parameter block's slot.
    Scalar {
        /// Its type.
        dtype: DType,
    },
}

/// A lowered kernel: one MSL source file with one `kernel` function.
#[derive(Clone, Debug)]
pub struct MslModule {
    /// The `.metal` source.
    pub source: String,
    /// The `kernel` function's name (`qd_` + the kernel's name, other characters as `_`).
    pub entry: String,
    /// The MSL version the source needs (stated in its first lines too).
    pub version: MslVersion,
    /// Threads per threadgroup (= the kernel's `block_dim`).
    pub threadgroup_size: u32,
    /// One per kernel parameter, in order; the parameter block is `[[buffer(0)]]`.
    pub params: Vec<BufferAbi>,
    /// Bytes of threadgroup memory the function declares.
    pub shared_bytes: u32,
    /// Whether the device buffers are declared `coherent(device)`.
    pub coherent: bool,
}

/// What a kernel needs beyond MSL 3.0.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Needs {
    /// bf16 values (`bfloat`, MSL 3.1).
    pub bfloat: bool,
    /// A fence of any scope, or an access ordered beyond relaxed (`atomic_thread_fence` with a
    /// scope, MSL 3.2).
    pub fence: bool,
    /// Device buffers declared `coherent(device)` (MSL 3.2): a grid fence, a volatile load, or an
    /// access or atomic ordered beyond relaxed publishes or observes data across threadgroups.
    pub coherent: bool,
}

impl Needs {
    pub(super) fn of(k: &Kernel) -> Needs {
        let mut n = Needs { bfloat: k.values.contains(&DType::BF16), ..Needs::default() };
        n.bfloat |= k.params.iter().any(|p| p.dtype() == DType::BF16);
        n.bfloat |= k.shared.iter().chain(&k.local_arrays).any(|a| a.dtype == DType::BF16);
        k.body.walk(&mut |inst| {
            let m = Needs::of_inst(k, &inst.kind);
            n.bfloat |= m.bfloat;
            n.fence |= m.fence;
            n.coherent |= m.coherent;
        });
        n
    }

    /// What one instruction needs (not those of nested blocks).
    pub(super) fn of_inst(k: &Kernel, kind: &InstKind) -> Needs {
        let bfloat = kind.defs().into_iter().chain(kind.uses()).any(|v| k.dtype(v) == DType::BF16);
        let (fence, coherent) = match kind {
            InstKind::Fence { scope, .. } => (true, *scope >= Scope::Cluster),
            // A relaxed atomic load or store is MSL 3.0; an ordering needs the scoped fence.
            InstKind::Load { kind: LoadKind::Ordered(o, _), .. }
            | InstKind::Store { kind: StoreKind::Ordered(o, _), .. } => {
                (*o != Ordering::Relaxed, *o != Ordering::Relaxed)
            }
            InstKind::Load { kind: LoadKind::Volatile, .. } => (false, true),
            InstKind::Atomic { ordering, .. } | InstKind::Cas { ordering, .. } | InstKind::WordCas { ordering, .. } => {
                (*ordering != Ordering::Relaxed, *ordering != Ordering::Relaxed)
            }
            _ => (false, false),
        };
        Needs { bfloat, fence, coherent }
    }

    /// The lowest version that has everything the kernel uses.
    pub(super) fn version(self) -> MslVersion {
        if self.fence || self.coherent {
            MslVersion::V3_2
        } else if self.bfloat {
            MslVersion::V3_1
        } else {
            MslVersion::V3_0
        }
    }

    /// Why the kernel needs `version()` (for the error when the target's OS lacks it).
    pub(super) fn why(self) -> &'static str {
        if self.coherent {
            "coherent(device) buffers (a grid fence, volatile_load or an ordered access or atomic)"
        } else if self.fence {
            "atomic_thread_fence with a scope (a memory fence)"
        } else {
            "the bfloat type (bf16 values)"
        }
    }
}

/// The ABI of each parameter, in order.
pub(super) fn params(k: &Kernel) -> Vec<BufferAbi> {
    let mut next = 1;
    k.params
        .iter()
        .map(|p| match p {
            Param::Array { dtype, .. } => {
                next += 1;
                BufferAbi::Array { dtype: *dtype, index: next - 1 }
            }
            Param::Scalar { dtype, .. } => BufferAbi::Scalar { dtype: *dtype },
        })
        .collect()
}
