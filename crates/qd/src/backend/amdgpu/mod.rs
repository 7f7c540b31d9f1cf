//! AMD GPUs (LLVM IR for amdgcn, wave64). So far this folder holds the capability model
//! ([`caps`]): kernels are traced for [`Target::amdgpu`](crate::target::Target::amdgpu) and run on
//! the emulator wearing it (`cpu:sg64@amdgpu:gfx942`), which proves the library paths an AMD GPU
//! takes. The code generator and the HIP runtime are not in this build.

pub mod caps;

pub use caps::AmdgpuArch;
