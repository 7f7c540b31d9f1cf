//! Probes run once per device, through the ordinary load and launch path, to measure what the
//! driver's properties do not say or say wrongly:
//!
//! * the subgroup size kernels really run with (lavapipe's `subgroupSize` property and its executed
//!   size can differ);
//! * whether the driver silently ends long loops (lavapipe 22.3 ends every loop of an invocation
//!   after 65535 iterations in all, `LP_MAX_TGSI_LOOP_ITERATIONS`, so a spin-wait on another block
//!   can give up and read stale data instead of hanging).
//!
//! Both modules were assembled by `spirv-as --target-env vulkan1.1` and are accepted by `spirv-val`.

/// The subgroup probe:
///
/// ```text
/// ; The executed subgroup size: invocation i of one 128-wide workgroup writes out[2i] = the number of
/// ; invocations in its subgroup (a ballot's bit count), out[2i+1] = the SubgroupSize built-in.
///                OpCapability Shader
///                OpCapability GroupNonUniform
///                OpCapability GroupNonUniformBallot
///                OpMemoryModel Logical GLSL450
///                OpEntryPoint GLCompute %main "main" %lid %sgs
///                OpExecutionMode %main LocalSize 128 1 1
///                OpDecorate %lid BuiltIn LocalInvocationIndex
///                OpDecorate %sgs BuiltIn SubgroupSize
///                OpDecorate %rt ArrayStride 4
///                OpMemberDecorate %blk 0 Offset 0
///                OpDecorate %blk Block
///                OpDecorate %buf DescriptorSet 0
///                OpDecorate %buf Binding 1
///        %void = OpTypeVoid
///          %fn = OpTypeFunction %void
///         %u32 = OpTypeInt 32 0
///        %v4u = OpTypeVector %u32 4
///        %bool = OpTypeBool
///          %rt = OpTypeRuntimeArray %u32
///         %blk = OpTypeStruct %rt
///        %pblk = OpTypePointer StorageBuffer %blk
///        %pinu = OpTypePointer Input %u32
///         %psu = OpTypePointer StorageBuffer %u32
///          %c0 = OpConstant %u32 0
///          %c1 = OpConstant %u32 1
///          %c2 = OpConstant %u32 2
///          %c3 = OpConstant %u32 3
///        %true = OpConstantTrue %bool
///         %buf = OpVariable %pblk StorageBuffer
///         %lid = OpVariable %pinu Input
///         %sgs = OpVariable %pinu Input
///        %main = OpFunction %void None %fn
///           %l = OpLabel
///           %x = OpLoad %u32 %lid
///           %b = OpGroupNonUniformBallot %v4u %c3 %true
///           %n = OpGroupNonUniformBallotBitCount %u32 %c3 Reduce %b
///           %s = OpLoad %u32 %sgs
///          %i0 = OpIMul %u32 %x %c2
///          %p0 = OpAccessChain %psu %buf %c0 %i0
///                OpStore %p0 %n
///          %i1 = OpIAdd %u32 %i0 %c1
///          %p1 = OpAccessChain %psu %buf %c0 %i1
///                OpStore %p1 %s
///                OpReturn
///                OpFunctionEnd
/// ```
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

/// The loop probe, assembled and validated the same way:
///
/// ```text
/// ; The loop probe: one invocation runs `for i in 0..n { c = c * 1664525 + 1013904223 }` with n from the
/// ; parameter block's slot 1 and writes out[0] = the iterations that ran, out[1] = c (so the loop is
/// ; not folded away). A driver that ends long loops early (lavapipe: 65535 iterations) writes less than n.
///                OpCapability Shader
///                OpMemoryModel Logical GLSL450
///                OpEntryPoint GLCompute %main "main"
///                OpExecutionMode %main LocalSize 1 1 1
///                OpDecorate %rtu ArrayStride 4
///                OpMemberDecorate %blk 0 Offset 0
///                OpDecorate %blk Block
///                OpDecorate %params DescriptorSet 0
///                OpDecorate %params Binding 0
///                OpDecorate %out DescriptorSet 0
///                OpDecorate %out Binding 1
///        %void = OpTypeVoid
///          %fn = OpTypeFunction %void
///         %u32 = OpTypeInt 32 0
///        %bool = OpTypeBool
///         %rtu = OpTypeRuntimeArray %u32
///         %blk = OpTypeStruct %rtu
///        %pblk = OpTypePointer StorageBuffer %blk
///         %psu = OpTypePointer StorageBuffer %u32
///         %pfu = OpTypePointer Function %u32
///          %c0 = OpConstant %u32 0
///          %c1 = OpConstant %u32 1
///          %c2 = OpConstant %u32 2
///          %ca = OpConstant %u32 1664525
///          %cc = OpConstant %u32 1013904223
///      %params = OpVariable %pblk StorageBuffer
///         %out = OpVariable %pblk StorageBuffer
///        %main = OpFunction %void None %fn
///       %entry = OpLabel
///           %i = OpVariable %pfu Function
///           %c = OpVariable %pfu Function
///          %pn = OpAccessChain %psu %params %c0 %c2
///           %n = OpLoad %u32 %pn
///                OpStore %i %c0
///                OpStore %c %c1
///                OpBranch %header
///      %header = OpLabel
///                OpLoopMerge %merge %continue None
///                OpBranch %cond
///        %cond = OpLabel
///          %iv = OpLoad %u32 %i
///          %lt = OpULessThan %bool %iv %n
///                OpBranchConditional %lt %body %merge
///        %body = OpLabel
///          %cv = OpLoad %u32 %c
///          %m = OpIMul %u32 %cv %ca
///          %a = OpIAdd %u32 %m %cc
///                OpStore %c %a
///                OpBranch %continue
///    %continue = OpLabel
///        %next = OpIAdd %u32 %iv %c1
///                OpStore %i %next
///                OpBranch %header
///       %merge = OpLabel
///          %fi = OpLoad %u32 %i
///          %fc = OpLoad %u32 %c
///          %p0 = OpAccessChain %psu %out %c0 %c0
///                OpStore %p0 %fi
///          %p1 = OpAccessChain %psu %out %c0 %c1
///                OpStore %p1 %fc
///                OpReturn
///                OpFunctionEnd
/// ```
#[rustfmt::skip]
pub(super) const LOOP_PROBE_WORDS: [u32; 225] = [
    0x07230203, 0x00010300, 0x00070000, 0x00000026, 0x00000000, 0x00020011, 0x00000001, 0x0003000e,
    0x00000000, 0x00000001, 0x0005000f, 0x00000005, 0x00000001, 0x6e69616d, 0x00000000, 0x00060010,
    0x00000001, 0x00000011, 0x00000001, 0x00000001, 0x00000001, 0x00040047, 0x00000002, 0x00000006,
    0x00000004, 0x00050048, 0x00000003, 0x00000000, 0x00000023, 0x00000000, 0x00030047, 0x00000003,
    0x00000002, 0x00040047, 0x00000004, 0x00000022, 0x00000000, 0x00040047, 0x00000004, 0x00000021,
    0x00000000, 0x00040047, 0x00000005, 0x00000022, 0x00000000, 0x00040047, 0x00000005, 0x00000021,
    0x00000001, 0x00020013, 0x00000006, 0x00030021, 0x00000007, 0x00000006, 0x00040015, 0x00000008,
    0x00000020, 0x00000000, 0x00020014, 0x00000009, 0x0003001d, 0x00000002, 0x00000008, 0x0003001e,
    0x00000003, 0x00000002, 0x00040020, 0x0000000a, 0x0000000c, 0x00000003, 0x00040020, 0x0000000b,
    0x0000000c, 0x00000008, 0x00040020, 0x0000000c, 0x00000007, 0x00000008, 0x0004002b, 0x00000008,
    0x0000000d, 0x00000000, 0x0004002b, 0x00000008, 0x0000000e, 0x00000001, 0x0004002b, 0x00000008,
    0x0000000f, 0x00000002, 0x0004002b, 0x00000008, 0x00000010, 0x0019660d, 0x0004002b, 0x00000008,
    0x00000011, 0x3c6ef35f, 0x0004003b, 0x0000000a, 0x00000004, 0x0000000c, 0x0004003b, 0x0000000a,
    0x00000005, 0x0000000c, 0x00050036, 0x00000006, 0x00000001, 0x00000000, 0x00000007, 0x000200f8,
    0x00000012, 0x0004003b, 0x0000000c, 0x00000013, 0x00000007, 0x0004003b, 0x0000000c, 0x00000014,
    0x00000007, 0x00060041, 0x0000000b, 0x00000015, 0x00000004, 0x0000000d, 0x0000000f, 0x0004003d,
    0x00000008, 0x00000016, 0x00000015, 0x0003003e, 0x00000013, 0x0000000d, 0x0003003e, 0x00000014,
    0x0000000e, 0x000200f9, 0x00000017, 0x000200f8, 0x00000017, 0x000400f6, 0x00000018, 0x00000019,
    0x00000000, 0x000200f9, 0x0000001a, 0x000200f8, 0x0000001a, 0x0004003d, 0x00000008, 0x0000001b,
    0x00000013, 0x000500b0, 0x00000009, 0x0000001c, 0x0000001b, 0x00000016, 0x000400fa, 0x0000001c,
    0x0000001d, 0x00000018, 0x000200f8, 0x0000001d, 0x0004003d, 0x00000008, 0x0000001e, 0x00000014,
    0x00050084, 0x00000008, 0x0000001f, 0x0000001e, 0x00000010, 0x00050080, 0x00000008, 0x00000020,
    0x0000001f, 0x00000011, 0x0003003e, 0x00000014, 0x00000020, 0x000200f9, 0x00000019, 0x000200f8,
    0x00000019, 0x00050080, 0x00000008, 0x00000021, 0x0000001b, 0x0000000e, 0x0003003e, 0x00000013,
    0x00000021, 0x000200f9, 0x00000017, 0x000200f8, 0x00000018, 0x0004003d, 0x00000008, 0x00000022,
    0x00000013, 0x0004003d, 0x00000008, 0x00000023, 0x00000014, 0x00060041, 0x0000000b, 0x00000024,
    0x00000005, 0x0000000d, 0x0000000d, 0x0003003e, 0x00000024, 0x00000022, 0x00060041, 0x0000000b,
    0x00000025, 0x00000005, 0x0000000d, 0x0000000e, 0x0003003e, 0x00000025, 0x00000023, 0x000100fd,
    0x00010038,
];

use super::{Bound, Core, SpirvCode, SpirvParam, SubgroupChoice};
use crate::ir::{self, Block, DType, LaunchKind, Param, ValueId};
use crate::runtime::Result;
use std::collections::BTreeSet;
use std::sync::Arc;

/// Invocations of the subgroup probe's one workgroup (the smallest `maxComputeWorkGroupInvocations`
/// Vulkan allows, and a multiple of every subgroup size up to 128).
const PROBE_BLOCK: u32 = 128;

/// Iterations the loop probe asks for: far past lavapipe's 65535, quick everywhere.
const LOOP_PROBE_ITERATIONS: u32 = 1 << 20;

/// The subgroup width kernels on `core` are traced for: the probe's measurement, or the property
/// when the probe cannot run or sees subgroups of different sizes (the note says which).
pub(super) fn measure(core: &Arc<Core>) -> SubgroupChoice {
    let reported = core.props.reported_subgroup_size;
    let provisional = core.reported_choice(String::new());
    let counts = match run(core, &PROBE_WORDS, PROBE_BLOCK, 2 * PROBE_BLOCK as usize, None, &provisional) {
        Ok(words) => words.chunks_exact(2).map(|p| p[0]).collect::<Vec<u32>>(),
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

/// The number of loop iterations after which the driver ends a kernel's loops, if it does within
/// [`LOOP_PROBE_ITERATIONS`]; or why the probe could not tell.
pub(super) fn loop_limit(core: &Arc<Core>) -> std::result::Result<Option<u64>, String> {
    let words =
        run(core, &LOOP_PROBE_WORDS, 1, 2, Some(LOOP_PROBE_ITERATIONS), &core.subgroup()).map_err(|e| e.to_string())?;
    Ok((words[0] < LOOP_PROBE_ITERATIONS).then_some(words[0] as u64))
}

/// Runs a probe module through the ordinary load and launch path: one workgroup of `block`
/// invocations, an output array of `len` u32s at binding 1, and `scalar` (a u32) as the second
/// parameter when given. Returns the output.
fn run(
    core: &Arc<Core>,
    words: &[u32],
    block: u32,
    len: usize,
    scalar: Option<u32>,
    sg: &SubgroupChoice,
) -> Result<Vec<u32>> {
    let mut params = vec![Param::Array { name: "out".into(), dtype: DType::U32 }];
    let mut abi = vec![SpirvParam::Array { dtype: DType::U32, binding: 1 }];
    if scalar.is_some() {
        params.push(Param::Scalar { name: "n".into(), dtype: DType::U32, value: ValueId(0) });
        abi.push(SpirvParam::Scalar { dtype: DType::U32 });
    }
    let kernel = ir::Kernel {
        name: "qd_probe".into(),
        launch: LaunchKind::Explicit,
        block_dim: block,
        subgroup_size: sg.size,
        min_blocks_per_sm: None,
        params,
        values: Vec::new(),
        locals: Vec::new(),
        shared: Vec::new(),
        local_arrays: Vec::new(),
        body: Block::default(),
    };
    let code =
        SpirvCode { words: words.to_vec(), entry: "main".into(), workgroup_size: block, params: abi, shared_bytes: 0 };
    let k = core.load(kernel, code, sg, None, &mut Default::default())?;
    let out = core.alloc_array(DType::U32, len, None, false).map_err(|e| e.into_error("<alloc>"))?;
    let mut args = vec![Bound::Array(&out)];
    args.extend(scalar.map(|n| Bound::Scalar(n as u64)));
    core.launch(&k, 1, &args, false)?;
    let bytes = out.read().map_err(|e| e.into_error("<host copy>"))?;
    Ok(bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
}
