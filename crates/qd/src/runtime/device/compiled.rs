//! [`CompiledKernel`]: a kernel traced, lowered and loaded by one device.

use super::RuntimeKernel;
use crate::runtime::{PtxCode, SpirvCode};
use std::sync::Arc;

/// A traced and lowered kernel, ready to launch on the device that compiled it.
pub struct CompiledKernel {
    pub(super) exec: Arc<dyn RuntimeKernel>,
}

impl std::fmt::Debug for CompiledKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CompiledKernel({:?})", self.exec)
    }
}

impl CompiledKernel {
    /// The traced IR.
    ///
    /// ```
    /// use qd::prelude::*;
    /// let k = Kernel::range("ir", 32, |k| {
    ///     let a = k.array::<i32>("a");
    ///     k.parallel_for(0, a.len(), |i| a.set(i, i));
    /// });
    /// let compiled = Device::cpu().compile(&k).unwrap();
    /// let ir = compiled.kernel(); // the IR as traced for this device
    /// assert_eq!((ir.block_dim, ir.subgroup_size), (32, 32));
    /// println!("{}", qd::ir::print_kernel(ir));
    /// ```
    pub fn kernel(&self) -> &crate::ir::Kernel {
        self.exec.kernel()
    }

    /// The emulator's program (CPU devices).
    ///
    /// ```
    /// use qd::prelude::*;
    /// let k = Kernel::range("prog", 32, |k| {
    ///     let a = k.array::<i32>("a");
    ///     k.parallel_for(0, a.len(), |i| a.set(i, i));
    /// });
    /// let compiled = Device::cpu().compile(&k).unwrap();
    /// assert!(compiled.cpu_program().is_some()); // the emulator's program
    /// assert!(compiled.ptx().is_none() && compiled.spirv().is_none());
    /// ```
    pub fn cpu_program(&self) -> Option<&crate::backend::cpu::Program> {
        self.exec.cpu_program()
    }

    /// The PTX that was loaded (CUDA devices).
    ///
    /// ```
    /// use qd::prelude::*;
    /// // The PTX a CUDA device loaded; the emulator has none. `qd::backend::ptx` prints it for any kernel.
    /// let k = Kernel::range("p", 32, |k| {
    ///     let a = k.array::<i32>("a");
    ///     k.parallel_for(0, a.len(), |i| a.set(i, i));
    /// });
    /// let device = Device::from_name("cuda").unwrap_or_else(|_| Device::cpu());
    /// let compiled = device.compile(&k).unwrap();
    /// if let Some(ptx) = compiled.ptx() {
    ///     assert!(ptx.text.contains(".entry"));
    /// }
    /// ```
    pub fn ptx(&self) -> Option<&PtxCode> {
        self.exec.ptx()
    }

    /// The SPIR-V that was loaded (Vulkan devices).
    ///
    /// ```
    /// use qd::prelude::*;
    /// // The SPIR-V a Vulkan device loaded (the emulator has none).
    /// let k = Kernel::range("s", 32, |k| {
    ///     let a = k.array::<i32>("a");
    ///     k.parallel_for(0, a.len(), |i| a.set(i, i));
    /// });
    /// let compiled = Device::cpu().compile(&k).unwrap();
    /// assert!(compiled.spirv().is_none());
    /// ```
    pub fn spirv(&self) -> Option<&SpirvCode> {
        self.exec.spirv()
    }

    /// Registers per thread of the code the driver made (CUDA: `CU_FUNC_ATTRIBUTE_NUM_REGS`);
    /// `None` on other devices.
    ///
    /// ```
    /// use qd::prelude::*;
    /// let k = Kernel::range("s", 32, |k| {
    ///     let a = k.array::<i32>("a");
    ///     k.parallel_for(0, a.len(), |i| a.set(i, i));
    /// });
    /// // The emulator has no registers to count.
    /// assert_eq!(Device::cpu().compile(&k).unwrap().registers(), None);
    /// ```
    pub fn registers(&self) -> Option<u32> {
        self.exec.registers()
    }
}
