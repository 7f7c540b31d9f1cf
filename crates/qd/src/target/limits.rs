//! The numbers a target fixes: subgroup width, shared memory, buffer range, loop cap, progress.

/// The limits of a target; library code reads them while tracing, the check pass and the
/// runtime enforce them.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Limits {
    /// Subgroup width (a trace-time constant: 4 to 64, a power of two).
    pub subgroup_size: u32,
    /// Static shared memory a block may use, in bytes.
    pub max_shared_bytes: u32,
    /// The bytes a shared-array element takes at least (Vulkan: 4, because narrower elements live
    /// in 32-bit cells so their atomics are word atomics; 1 elsewhere).
    pub shared_cell_bytes: u32,
    /// The largest array a kernel may address, in bytes (`None`: only device memory bounds it); set
    /// by the runtime from the device ([`Target::with_max_buffer_bytes`](super::Target::with_max_buffer_bytes)).
    pub max_buffer_bytes: Option<u64>,
    /// Loop iterations after which the device silently ends an invocation's loops (lavapipe:
    /// 65535), when it does; a spin-wait on another block may then give up.
    pub loop_iteration_cap: Option<u64>,
    /// Whether a block that started earlier keeps making progress while a later one spins on it
    /// (what decoupled look-back relies on; true on CUDA and the emulator, which runs blocks in
    /// order, not promised by the Vulkan or Metal specifications).
    pub block_forward_progress: bool,
    /// The most array parameters a kernel may take (Metal: 30, the 31 buffer bindings less the
    /// parameter block); `None`: no limit that a kernel could reach.
    pub max_array_params: Option<u32>,
}

impl Limits {
    /// log2 of the subgroup width.
    pub fn log2_subgroup_size(&self) -> u32 {
        self.subgroup_size.trailing_zeros()
    }
}
