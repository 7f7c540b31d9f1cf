//! The subgroup-size probe: a tiny kernel run once per device that measures how many invocations
//! really share a subgroup (lavapipe's `subgroupSize` property and its executed size can differ).
//!
//! The module, assembled by `spirv-as --target-env vulkan1.1` and accepted by `spirv-val`:
//!
//! ```text
//! ; The executed subgroup size: invocation i of one 128-wide workgroup writes out[2i] = the number of
//! ; invocations in its subgroup (a ballot's bit count), out[2i+1] = the SubgroupSize built-in.
//!                OpCapability Shader
//!                OpCapability GroupNonUniform
//!                OpCapability GroupNonUniformBallot
//!                OpMemoryModel Logical GLSL450
//!                OpEntryPoint GLCompute %main "main" %lid %sgs
//!                OpExecutionMode %main LocalSize 128 1 1
//!                OpDecorate %lid BuiltIn LocalInvocationIndex
//!                OpDecorate %sgs BuiltIn SubgroupSize
//!                OpDecorate %rt ArrayStride 4
//!                OpMemberDecorate %blk 0 Offset 0
//!                OpDecorate %blk Block
//!                OpDecorate %buf DescriptorSet 0
//!                OpDecorate %buf Binding 1
//!        %void = OpTypeVoid
//!          %fn = OpTypeFunction %void
//!         %u32 = OpTypeInt 32 0
//!        %v4u = OpTypeVector %u32 4
//!        %bool = OpTypeBool
//!          %rt = OpTypeRuntimeArray %u32
//!         %blk = OpTypeStruct %rt
//!        %pblk = OpTypePointer StorageBuffer %blk
//!        %pinu = OpTypePointer Input %u32
//!         %psu = OpTypePointer StorageBuffer %u32
//!          %c0 = OpConstant %u32 0
//!          %c1 = OpConstant %u32 1
//!          %c2 = OpConstant %u32 2
//!          %c3 = OpConstant %u32 3
//!        %true = OpConstantTrue %bool
//!         %buf = OpVariable %pblk StorageBuffer
//!         %lid = OpVariable %pinu Input
//!         %sgs = OpVariable %pinu Input
//!        %main = OpFunction %void None %fn
//!           %l = OpLabel
//!           %x = OpLoad %u32 %lid
//!           %b = OpGroupNonUniformBallot %v4u %c3 %true
//!           %n = OpGroupNonUniformBallotBitCount %u32 %c3 Reduce %b
//!           %s = OpLoad %u32 %sgs
//!          %i0 = OpIMul %u32 %x %c2
//!          %p0 = OpAccessChain %psu %buf %c0 %i0
//!                OpStore %p0 %n
//!          %i1 = OpIAdd %u32 %i0 %c1
//!          %p1 = OpAccessChain %psu %buf %c0 %i1
//!                OpStore %p1 %s
//!                OpReturn
//!                OpFunctionEnd
//! ```

/// The probe module's words.
#[rustfmt::skip]
pub(super) const PROBE_WORDS: [u32; 175] = [
    0x07230203, 0x00010300, 0x00070000, 0x0000001d, 0x00000000, 0x00020011, 0x00000001, 0x00020011,
    0x0000003d, 0x00020011, 0x00000040, 0x0003000e, 0x00000000, 0x00000001, 0x0007000f, 0x00000005,
    0x00000001, 0x6e69616d, 0x00000000, 0x00000002, 0x00000003, 0x00060010, 0x00000001, 0x00000011,
    0x00000080, 0x00000001, 0x00000001, 0x00040047, 0x00000002, 0x0000000b, 0x0000001d, 0x00040047,
    0x00000003, 0x0000000b, 0x00000024, 0x00040047, 0x00000004, 0x00000006, 0x00000004, 0x00050048,
    0x00000005, 0x00000000, 0x00000023, 0x00000000, 0x00030047, 0x00000005, 0x00000002, 0x00040047,
    0x00000006, 0x00000022, 0x00000000, 0x00040047, 0x00000006, 0x00000021, 0x00000001, 0x00020013,
    0x00000007, 0x00030021, 0x00000008, 0x00000007, 0x00040015, 0x00000009, 0x00000020, 0x00000000,
    0x00040017, 0x0000000a, 0x00000009, 0x00000004, 0x00020014, 0x0000000b, 0x0003001d, 0x00000004,
    0x00000009, 0x0003001e, 0x00000005, 0x00000004, 0x00040020, 0x0000000c, 0x0000000c, 0x00000005,
    0x00040020, 0x0000000d, 0x00000001, 0x00000009, 0x00040020, 0x0000000e, 0x0000000c, 0x00000009,
    0x0004002b, 0x00000009, 0x0000000f, 0x00000000, 0x0004002b, 0x00000009, 0x00000010, 0x00000001,
    0x0004002b, 0x00000009, 0x00000011, 0x00000002, 0x0004002b, 0x00000009, 0x00000012, 0x00000003,
    0x00030029, 0x0000000b, 0x00000013, 0x0004003b, 0x0000000c, 0x00000006, 0x0000000c, 0x0004003b,
    0x0000000d, 0x00000002, 0x00000001, 0x0004003b, 0x0000000d, 0x00000003, 0x00000001, 0x00050036,
    0x00000007, 0x00000001, 0x00000000, 0x00000008, 0x000200f8, 0x00000014, 0x0004003d, 0x00000009,
    0x00000015, 0x00000002, 0x00050153, 0x0000000a, 0x00000016, 0x00000012, 0x00000013, 0x00060156,
    0x00000009, 0x00000017, 0x00000012, 0x00000000, 0x00000016, 0x0004003d, 0x00000009, 0x00000018,
    0x00000003, 0x00050084, 0x00000009, 0x00000019, 0x00000015, 0x00000011, 0x00060041, 0x0000000e,
    0x0000001a, 0x00000006, 0x0000000f, 0x00000019, 0x0003003e, 0x0000001a, 0x00000017, 0x00050080,
    0x00000009, 0x0000001b, 0x00000019, 0x00000010, 0x00060041, 0x0000000e, 0x0000001c, 0x00000006,
    0x0000000f, 0x0000001b, 0x0003003e, 0x0000001c, 0x00000018, 0x000100fd, 0x00010038,
];

use super::{Bound, Core, SpirvCode, SpirvParam, SubgroupChoice, VulkanBuffer};
use crate::ir::{self, Block, DType, LaunchKind, Param};
use std::collections::BTreeSet;
use std::sync::Arc;

/// Invocations of the probe's one workgroup (the smallest `maxComputeWorkGroupInvocations` Vulkan
/// allows, and a multiple of every subgroup size up to 128).
const PROBE_BLOCK: u32 = 128;

/// The subgroup width kernels on `core` are traced for: the probe's measurement, or the property
/// when the probe cannot run or sees subgroups of different sizes (the note says which).
pub(super) fn measure(core: &Arc<Core>) -> SubgroupChoice {
    let reported = core.props.reported_subgroup_size;
    let counts = match run(core) {
        Ok(c) => c,
        Err(e) => return core.reported_choice(format!("reported by the driver; not measured: the probe failed: {e}")),
    };
    let sizes: BTreeSet<u32> = counts.iter().copied().collect();
    match sizes.iter().copied().collect::<Vec<_>>()[..] {
        [n] if n == reported => core.reported_choice("measured".into()),
        [n] if n.is_power_of_two() && (4..=128).contains(&n) => SubgroupChoice {
            size: n,
            note: format!("measured; the driver reports {reported}"),
            required: core.required_size(n),
        },
        _ => core.reported_choice(format!(
            "reported by the driver; the probe saw subgroups of {sizes:?} invocations, so kernels may not see full \
             subgroups of this size"
        )),
    }
}

/// Runs the probe through the ordinary load and launch path; returns each invocation's count.
fn run(core: &Arc<Core>) -> crate::runtime::Result<Vec<u32>> {
    let provisional = core.reported_choice(String::new());
    let kernel = ir::Kernel {
        name: "qd_subgroup_probe".into(),
        launch: LaunchKind::Explicit,
        block_dim: PROBE_BLOCK,
        subgroup_size: provisional.size,
        params: vec![Param::Array { name: "out".into(), dtype: DType::U32 }],
        values: Vec::new(),
        locals: Vec::new(),
        shared: Vec::new(),
        local_arrays: Vec::new(),
        body: Block::default(),
    };
    let code = SpirvCode {
        words: PROBE_WORDS.to_vec(),
        entry: "main".into(),
        workgroup_size: PROBE_BLOCK,
        params: vec![SpirvParam::Array { dtype: DType::U32, binding: 1 }],
        shared_bytes: 0,
    };
    let k = core.load(kernel, code, &provisional)?;
    let len = 2 * PROBE_BLOCK as usize;
    let mem = core.alloc_host_buffer(len as u64 * 4).map_err(|e| e.into_error("<alloc>"))?;
    let out = VulkanBuffer { core: core.clone(), mem, len, dtype: DType::U32 };
    core.launch(&k, 1, &[Bound::Array(&out)])?;
    let bytes = out.read().map_err(|e| e.into_error("<host copy>"))?;
    let words: Vec<u32> = bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    Ok(words.chunks_exact(2).map(|p| p[0]).collect())
}
