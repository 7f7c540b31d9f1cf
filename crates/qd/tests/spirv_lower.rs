//! Whole kernels lowered to SPIR-V for Vulkan (8- and 32-lane subgroups, the Vulkan and the
//! GLSL450 memory model) and validated by `spirv-val --target-env vulkan1.1` (D9).

use qd::backend::spirv::{lower_kernel, ParamAbi, SpirvCaps, SpirvModule, SpirvTarget};
use qd::backend::Target;
use qd::prelude::*;

/// Validates a module with the kit's spirv-val (D9) for Vulkan 1.1, failing the test with
/// spirv-val's message and the disassembly.
fn validate(name: &str, words: &[u32]) {
    if let Some(val) = qd_testkit::SpirvVal::find() {
        val.assert_valid(name, words);
    }
}

/// The target to trace for a Vulkan device (`Target::vulkan` once the runtime switches to this
/// lowering; the two agree field for field).
fn vulkan(subgroup_size: u32, caps: &SpirvCaps) -> Target {
    SpirvTarget { subgroup_size, caps: caps.clone() }.trace_target()
}

/// Lowers `k` for 8- and 32-lane subgroups with lavapipe's caps and validates each module.
fn check(k: &Kernel) -> Vec<SpirvModule> {
    check_with(k, &SpirvCaps::lavapipe())
}

/// Lowers `k` for 8- and 32-lane subgroups with `caps` and validates each module; also without
/// the Vulkan memory model (GLSL450) when `caps` has it. Returns the modules for `caps`.
fn check_with(k: &Kernel, caps: &SpirvCaps) -> Vec<SpirvModule> {
    if caps.vulkan_memory_model {
        lower_and_validate(k, &SpirvCaps { vulkan_memory_model: false, ..caps.clone() });
    }
    lower_and_validate(k, caps)
}

fn lower_and_validate(k: &Kernel, caps: &SpirvCaps) -> Vec<SpirvModule> {
    let model = if caps.vulkan_memory_model { "vulkan" } else { "glsl450" };
    let mut out = Vec::new();
    for sg in [8, 32] {
        let ir = k.trace(&vulkan(sg, caps)).unwrap_or_else(|e| panic!("{e}"));
        let target = SpirvTarget { subgroup_size: sg, caps: caps.clone() };
        let m = lower_kernel(&ir, &target).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(m.entry, k.name());
        assert_eq!(m.workgroup_size, k.block_dim());
        assert_eq!(m.params.len(), ir.params.len());
        assert_eq!(m.words, lower_kernel(&ir, &target).unwrap().words, "lowering is deterministic");
        validate(&format!("{}_sg{sg}_{model}", k.name()), &m.words);
        out.push(m);
    }
    out
}

#[test]
fn smoke() {
    check(&Kernel::range("smoke", 64, |k| {
        let a = k.array::<f32>("a");
        let b = k.array::<i32>("b");
        let s = k.scalar::<f32>("s");
        k.parallel_for(0, a.len(), |i| {
            a.set(i, a.get(i) * s + 1.0f32);
            b.set(i, b.get(i) / 3 + i);
        });
    }));
}

/// Lowering `ir` for `sg` lanes fails; returns the error.
fn rejected(ir: &qd::ir::Kernel, sg: u32, caps: SpirvCaps) -> qd::trace::TraceError {
    match lower_kernel(ir, &SpirvTarget { subgroup_size: sg, caps }) {
        Ok(_) => panic!("{} should not lower", ir.name),
        Err(e) => {
            assert!(e.message.contains("vulkan"), "the message names the backend: {e}");
            assert_eq!(e.kernel, ir.name);
            e
        }
    }
}

#[test]
fn the_vulkan_trace_target_has_the_spirv_capabilities() {
    let caps = SpirvCaps { float64: false, int64_atomics: false, max_shared_bytes: 48 * 1024, ..SpirvCaps::lavapipe() };
    let t = vulkan(16, &caps);
    use qd::ir::{AtomicOp, DType};
    use qd::target::{Feature, MemSpace, NvFeature};
    assert_eq!((t.backend_name(), t.subgroup_size()), ("vulkan", 16));
    let lacks = |f: Feature| !t.support(f).is_available();
    assert!(lacks(Feature::Nv(NvFeature::Match)) && lacks(Feature::Nv(NvFeature::Redux)));
    assert!(!t.has(Feature::VoteShortcut) && !t.has(Feature::BarrierReduce));
    assert!(!t.has(Feature::DynamicBroadcastLane) && !lacks(Feature::DynamicBroadcastLane));
    assert!(
        lacks(Feature::Values(DType::F64)) && lacks(Feature::AtomicRmw(AtomicOp::Add, DType::I64, MemSpace::Device))
    );
    assert_eq!(t.limits().max_shared_bytes, 48 * 1024);
}

#[test]
fn nvidia_only_operations_are_rejected_naming_vulkan() {
    let k = Kernel::explicit("nv_on_vulkan", 32, |k| {
        let out = k.array::<u32>("out");
        let t = block::thread_idx();
        let (leader, _) = qd::nv::elect(); // ELECT
        out.set(t, leader);
    });
    let ir = k.trace(&Target::cpu(32)).unwrap();
    let e = rejected(&ir, 32, SpirvCaps::lavapipe());
    assert_eq!(e.op, "nv.elect");
    assert_eq!((e.loc.file, e.loc.line), (file!(), line_of("qd::nv::elect(); // ELECT")));
    let k = Kernel::explicit("nv_sreg_on_vulkan", 32, |k| {
        let out = k.array::<u64>("out");
        out.set(block::thread_idx(), qd::nv::clock64());
    });
    let e = rejected(&k.trace(&Target::cpu(32)).unwrap(), 32, SpirvCaps::lavapipe());
    assert_eq!(e.op, "nv.sreg", "{e}");
}

#[test]
fn fused_barrier_reductions_are_rejected_and_emulated_for_vulkan() {
    let k = Kernel::explicit("count_nonzero", 64, |k| {
        let a = k.array::<i32>("a");
        let t = block::thread_idx();
        a.set(t, block::sync_count_nonzero(a.get(t)));
    });
    // Traced for CUDA (a fused bar.red): SPIR-V has no such barrier.
    let e = rejected(&k.trace(&Target::cuda(90)).unwrap(), 32, SpirvCaps::lavapipe());
    assert_eq!(e.op, "block.sync_count_nonzero");
    assert!(e.message.contains("fused"), "{e}");
    // Traced for Vulkan, the library emulates it with shared memory and plain barriers.
    check(&k);
}

#[test]
fn b128_and_packed_values_are_rejected() {
    let k = Kernel::explicit("wide", 32, |k| {
        let a = k.array::<u64>("a");
        let b = k.array::<u64>("b");
        let t = block::thread_idx();
        b.set(t, a.get(t));
    });
    for wide in [qd::ir::DType::B128, qd::ir::DType::F16x2] {
        let mut ir = k.trace(&vulkan(8, &SpirvCaps::lavapipe())).unwrap();
        for p in &mut ir.params {
            if let qd::ir::Param::Array { dtype, .. } = p {
                *dtype = wide;
            }
        }
        for v in &mut ir.values {
            if *v == qd::ir::DType::U64 {
                *v = wide;
            }
        }
        let e = rejected(&ir, 8, SpirvCaps::lavapipe());
        assert!(e.message.contains("b128 and packed"), "{e}");
    }
}

#[test]
fn what_the_device_lacks_is_rejected() {
    let f64_kernel = Kernel::explicit("doubles", 32, |k| {
        let a = k.array::<f64>("a");
        let t = block::thread_idx();
        a.set(t, a.get(t) * 2.0f64);
    });
    let no_f64 = SpirvCaps { float64: false, ..SpirvCaps::lavapipe() };
    let ir = f64_kernel.trace(&vulkan(8, &SpirvCaps::lavapipe())).unwrap();
    assert!(rejected(&ir, 8, no_f64).message.contains("shaderFloat64"));

    let bytes = Kernel::explicit("bytes", 32, |k| {
        let a = k.array::<u8>("a");
        let t = block::thread_idx();
        a.set(t, a.get(t) + 1u8);
    });
    let ir = bytes.trace(&vulkan(8, &SpirvCaps::lavapipe())).unwrap();
    let e = rejected(&ir, 8, SpirvCaps { int8_storage: false, ..SpirvCaps::lavapipe() });
    assert!(e.message.contains("storageBuffer8BitAccess"), "{e}");
    let halves = Kernel::explicit("halves", 32, |k| {
        let a = k.array::<F16>("a");
        let t = block::thread_idx();
        a.set(t, a.get(t) + F16::from_f32(1.0));
    });
    let ir = halves.trace(&vulkan(8, &SpirvCaps::lavapipe())).unwrap();
    let e = rejected(&ir, 8, SpirvCaps { int16_storage: false, ..SpirvCaps::lavapipe() });
    assert!(e.message.contains("storageBuffer16BitAccess"), "{e}");
    // f16 needs no shaderFloat16: it is computed in f32.
    check_with(&halves, &SpirvCaps { float16: false, ..SpirvCaps::lavapipe() });

    let atomics64 = Kernel::explicit("atomics64", 32, |k| {
        let a = k.array::<u64>("a");
        atomic_cas_with(a.at(0), 0u64, 1u64, qd::ir::Ordering::Relaxed, qd::ir::Scope::Device);
    });
    let ir = atomics64.trace(&vulkan(8, &SpirvCaps::lavapipe())).unwrap();
    let e = rejected(&ir, 8, SpirvCaps { int64_atomics: false, ..SpirvCaps::lavapipe() });
    assert!(e.message.contains("int64_atomics"), "{e}");

    // Shared arrays of elements below 32 bits take 32-bit cells.
    let shared = Kernel::explicit("shared_bytes", 32, |k| {
        let a = k.array::<u32>("a");
        let s = block::shared_array::<u8>(12 * 1024);
        let t = block::thread_idx();
        s.set(t, 1u8);
        block::sync();
        a.set(t, s.get(t).cast::<u32>());
    });
    // Tracing for the device refuses it (the capability check), and so does lowering a kernel
    // traced for a target with more shared memory.
    let e = shared.trace(&vulkan(8, &SpirvCaps::lavapipe())).unwrap_err();
    assert_eq!(e.op, "block.shared_array");
    assert!(e.message.contains("49152 bytes") && e.unsupported.is_some(), "{e}");
    let roomy = SpirvCaps { max_shared_bytes: 64 * 1024, ..SpirvCaps::lavapipe() };
    let ir = shared.trace(&vulkan(8, &roomy)).unwrap();
    let e = rejected(&ir, 8, SpirvCaps::lavapipe());
    assert!(e.message.contains("49152 bytes"), "{e}");

    // The kernel must have been traced for the target's subgroup width.
    let e = rejected(&ir, 32, SpirvCaps::lavapipe());
    assert!(e.message.contains("8-lane"), "{e}");
}

#[test]
fn the_abi_numbers_array_bindings_in_order() {
    let k = Kernel::explicit("abi", 32, |k| {
        let a = k.array::<f32>("a");
        let n = k.scalar::<u32>("n");
        let b = k.array::<bool>("b");
        let c = k.array::<i16>("c");
        let flag = k.scalar::<bool>("flag");
        let t = block::thread_idx();
        if_(t.cast::<u32>().lt(n) & flag, || {
            a.set(t, c.get(t).cast::<f32>());
            b.set(t, true);
        });
    });
    let m = &check(&k)[0];
    use qd::ir::DType::*;
    assert_eq!(
        m.params,
        [
            ParamAbi::Array { dtype: F32, binding: 1 },
            ParamAbi::Scalar { dtype: U32 },
            ParamAbi::Array { dtype: Bool, binding: 2 },
            ParamAbi::Array { dtype: I16, binding: 3 },
            ParamAbi::Scalar { dtype: Bool },
        ]
    );
    assert_eq!((m.workgroup_size, m.shared_bytes), (32, 0));
    assert_eq!(m.words[0], 0x0723_0203, "the SPIR-V magic number");
    assert_eq!(m.words[1], 0x0001_0300, "SPIR-V 1.3");
}

/// The 1-based line of this file that holds `needle` (not counting the lookup itself).
fn line_of(needle: &str) -> u32 {
    let src = include_str!("spirv_lower.rs");
    let at = src.lines().position(|l| l.contains(needle) && !l.contains("line_of("));
    at.map(|i| i as u32 + 1).unwrap_or_else(|| panic!("no line holds {needle:?}"))
}

/// One instruction of a lowered module, with its id operands resolved to constants where they
/// name one (scopes and memory semantics are constant ids).
#[derive(Debug)]
struct Seen {
    op: rspirv::spirv::Op,
    operands: Vec<rspirv::dr::Operand>,
    consts: Vec<Option<u32>>,
}

/// The module's memory model and the instructions of its function.
fn disassemble(words: &[u32]) -> (rspirv::spirv::MemoryModel, Vec<Seen>, rspirv::dr::Module) {
    use rspirv::dr::Operand;
    let m = rspirv::dr::load_words(words).expect("a parsable module");
    let mut consts = std::collections::HashMap::new();
    for i in &m.types_global_values {
        if let (rspirv::spirv::Op::Constant, Some(id), Some(Operand::LiteralBit32(v))) =
            (i.class.opcode, i.result_id, i.operands.first())
        {
            consts.insert(id, *v);
        }
    }
    let model = match m.memory_model.as_ref().map(|i| &i.operands[1]) {
        Some(Operand::MemoryModel(model)) => *model,
        other => panic!("no memory model: {other:?}"),
    };
    let seen = m.functions[0]
        .blocks
        .iter()
        .flat_map(|b| &b.instructions)
        .map(|i| Seen {
            op: i.class.opcode,
            operands: i.operands.clone(),
            consts: i
                .operands
                .iter()
                .map(|o| match o {
                    Operand::IdRef(id) | Operand::IdScope(id) | Operand::IdMemorySemantics(id) => {
                        consts.get(id).copied()
                    }
                    _ => None,
                })
                .collect(),
        })
        .collect();
    (model, seen, m)
}

/// The memory-access mask of an `OpLoad` (after the pointer) or `OpStore` (after the value).
fn access_mask(i: &Seen) -> rspirv::spirv::MemoryAccess {
    let at = if i.op == rspirv::spirv::Op::Load { 1 } else { 2 };
    match i.operands.get(at) {
        Some(rspirv::dr::Operand::MemoryAccess(m)) => *m,
        _ => rspirv::spirv::MemoryAccess::NONE,
    }
}

/// D6 under the Vulkan memory model: the block page's producer/consumer (a shared flag) and the
/// grid page's look-back (a device flag) with volatile spin-waits and fences, and volatile loads
/// with no native atomic. Without the model (GLSL450) the old form remains.
#[test]
fn fences_volatile_loads_and_plain_accesses_follow_the_vulkan_memory_model() {
    use rspirv::spirv::{MemoryAccess as A, MemoryModel, MemorySemantics as S, Op};
    let k = Kernel::explicit("d6_patterns", 64, |k| {
        let src = k.array::<i32>("src");
        let out = k.array::<i32>("out");
        let flags = k.array::<i32>("flags");
        let bytes = k.array::<u8>("bytes");
        let wide = k.array::<u64>("wide");
        let data = block::shared_array::<i32>(1);
        let flag = block::shared_array::<i32>(1);
        let t = block::thread_idx();
        if_else(
            t.eq(0),
            || {
                data.set(0, src.get(0));
                block::mem_fence();
                flag.set(0, 1);
                out.set(0, 1);
                grid::mem_fence();
                flags.set(0, 1);
            },
            || {
                while_(|| volatile_load(flag.at(0)).eq(0), || {});
                block::mem_fence();
                while_(|| volatile_load(flags.at(0)).eq(0), || {});
                grid::mem_fence();
                let x = volatile_load(bytes.at(t)).cast::<i32>() + volatile_load(wide.at(t)).cast::<i32>();
                out.set(t, data.get(0) + x);
            },
        );
        block::sync();
    });
    let no_i64_atomics = SpirvCaps { int64_atomics: false, ..SpirvCaps::lavapipe() };
    for caps in [SpirvCaps::lavapipe(), no_i64_atomics.clone()] {
        let m = &check_with(&k, &caps)[0];
        let (model, insts, module) = disassemble(&m.words);
        assert_eq!(model, MemoryModel::Vulkan);
        assert_eq!(m.words[1], 0x0001_0300, "SPIR-V 1.3 with SPV_KHR_vulkan_memory_model");
        assert!(module.annotations.iter().all(|a| !format!("{a:?}").contains("Coherent")), "no Coherent");
        // Fences (workgroup and device scope) and the block barrier: acquire-release with
        // availability and visibility on both storage classes.
        let full = S::ACQUIRE_RELEASE | S::UNIFORM_MEMORY | S::WORKGROUP_MEMORY | S::MAKE_AVAILABLE | S::MAKE_VISIBLE;
        let fences: Vec<_> =
            insts.iter().filter(|i| i.op == Op::MemoryBarrier).map(|i| (i.consts[0], i.consts[1])).collect();
        assert_eq!(fences.len(), 4);
        assert!(fences.contains(&(Some(2), Some(full.bits()))) && fences.contains(&(Some(1), Some(full.bits()))));
        let barriers: Vec<_> = insts.iter().filter(|i| i.op == Op::ControlBarrier).map(|i| i.consts.clone()).collect();
        assert_eq!(barriers, [vec![Some(2), Some(2), Some(full.bits())]]);
        // Spin-waits: volatile atomics at the array's scope, an acquire on shared memory
        // (workgroup), relaxed on device memory.
        let atomics: Vec<_> =
            insts.iter().filter(|i| i.op == Op::AtomicLoad).map(|i| (i.consts[1], i.consts[2])).collect();
        let volatile = Some(S::VOLATILE.bits());
        let acquire = S::ACQUIRE | S::UNIFORM_MEMORY | S::WORKGROUP_MEMORY | S::MAKE_VISIBLE | S::VOLATILE;
        let mut want = vec![(Some(2), Some(acquire.bits())), (Some(1), volatile)];
        if caps.int64_atomics {
            want.push((Some(1), volatile));
        }
        assert_eq!(atomics, want);
        // Every other load and store of device or shared memory is non-private; the u8 (and the
        // u64 without 64-bit atomics) volatile loads are volatile, visible at device scope.
        let accesses: Vec<_> = insts.iter().filter(|i| matches!(i.op, Op::Load | Op::Store)).collect();
        let nonprivate = accesses.iter().filter(|i| access_mask(i) == A::NON_PRIVATE_POINTER).count();
        assert_eq!(nonprivate, 7, "{accesses:#?}");
        let vis = A::VOLATILE | A::MAKE_POINTER_VISIBLE | A::NON_PRIVATE_POINTER;
        let volatile_loads: Vec<_> = accesses.iter().filter(|i| access_mask(i) == vis).map(|i| i.consts[2]).collect();
        assert_eq!(volatile_loads, vec![Some(1); if caps.int64_atomics { 1 } else { 2 }]);
    }
    let glsl = SpirvCaps { vulkan_memory_model: false, ..SpirvCaps::lavapipe() };
    let m = &check_with(&k, &glsl)[0];
    let (model, insts, module) = disassemble(&m.words);
    assert_eq!(model, MemoryModel::GLSL450);
    assert!(module.annotations.iter().any(|a| format!("{a:?}").contains("Coherent")));
    assert!(insts.iter().all(|i| i.op != Op::AtomicLoad));
    assert_eq!(insts.iter().filter(|i| i.op == Op::Load && access_mask(i) == A::VOLATILE).count(), 4);
}

/// Signed division and remainder are computed from `OpUDiv`/`OpUMod` on the magnitudes: NVIDIA's
/// Vulkan driver computed `OpSRem` as an unsigned remainder, with `uint`- and with `int`-typed
/// operands alike (the difftest regressions `nvidia-vulkan-srem-*.json`, D27).
#[test]
fn signed_division_and_remainder_avoid_sdiv_and_srem() {
    use rspirv::spirv::Op;
    macro_rules! kernel {
        ($t:ty) => {
            Kernel::range(concat!("sdivrem_", stringify!($t)), 64, |k| {
                let a = k.array::<$t>("a");
                let b = k.array::<$t>("b");
                k.parallel_for(0, a.len(), |i| {
                    let (x, y) = (a.get(i), b.get(i));
                    a.set(i, x / y);
                    b.set(i, x % y);
                })
            })
        };
    }
    // NVIDIA's Vulkan driver computes OpSRem as unsigned (D27): signed division goes through
    // OpUDiv/OpUMod on the magnitudes.
    for k in [kernel!(i8), kernel!(i16), kernel!(i32), kernel!(i64)] {
        for m in check(&k) {
            let (_, seen, module) = disassemble(&m.words);
            let ops: Vec<Op> = function_instructions(&module).map(|i| i.class.opcode).collect();
            assert!(!ops.iter().any(|o| matches!(o, Op::SDiv | Op::SRem | Op::SMod)), "{}: {seen:?}", k.name());
            assert_eq!(ops.iter().filter(|&&o| o == Op::UDiv).count(), 1, "{}: one UDiv, got {seen:?}", k.name());
            assert_eq!(ops.iter().filter(|&&o| o == Op::UMod).count(), 1, "{}: one UMod, got {seen:?}", k.name());
        }
    }
}

/// The instructions of a module's functions.
fn function_instructions(m: &rspirv::dr::Module) -> impl Iterator<Item = &rspirv::dr::Instruction> {
    m.functions.iter().flat_map(|f| &f.blocks).flat_map(|b| &b.instructions)
}
