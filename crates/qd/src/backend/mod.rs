//! Backends: one folder each, of the same shape (`mod.rs` with the entry point, `caps.rs` with the
//! capability model's answers, the lowering split by topic, a printer, emitter or executor).
//!
//! * [`cpu`]: the lane-exact SIMT emulator (D8);
//! * [`ptx`]: NVIDIA GPUs through PTX (seed 004, D7);
//! * [`spirv`]: Vulkan through SPIR-V;
//! * [`amdgpu`], [`metal`]: so far their capability models, which the emulator wears.
//!
//! What a backend can do is asked of the [`Target`] (the capability layer, `crate::target`);
//! nothing outside `backend/`, `runtime/` and that layer tests which backend it is.

pub mod amdgpu;
pub mod cpu;
pub mod metal;
pub mod ptx;
pub mod spirv;

pub use crate::target::Target;
