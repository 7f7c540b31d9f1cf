//! The Metal backend: each Metal limit is a trace-time error naming the op, the kernel and the
//! user's line, and the MSL printer keeps the rules of docs/metal.md (checked on its text; the
//! clang check of every built-in kernel is in qd-cli's snapshot test).

use qd::backend::metal::{Metal, MslVersion};
use qd::backend::{Backend, Target};
use qd::ir::{LoadKind, Ordering, Scope};
use qd::prelude::*;
use qd::trace::TraceError;

/// Asserts `e` is about `op` in kernel `kernel` at `line` of this file, saying `message`.
#[track_caller]
fn assert_error(e: &TraceError, kernel: &str, op: &str, line: u32, message: &str) {
    assert_eq!(e.kernel, kernel, "{e}");
    assert_eq!(e.op, op, "{e}");
    assert!(e.loc.file.ends_with("metal.rs"), "{e}");
    assert_eq!(e.loc.line, line, "{e}");
    assert!(e.message.contains(message), "{e}");
}

/// The MSL of `k` for `target` (module-level errors point at the caller).
#[track_caller]
fn msl(k: &Kernel, target: &Target) -> Result<String, TraceError> {
    let ir = k.trace(target)?;
    Metal::lower(&ir, target).map(|m| m.source)
}

#[test]
fn f64_is_refused_while_tracing() {
    static LINE: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let k = Kernel::range("uses_f64", 64, |k| {
        let a = k.array::<f64>("a");
        k.parallel_for(0, a.len(), |i| {
            LINE.store(line!() + 1, std::sync::atomic::Ordering::Relaxed);
            a.set(i, a.get(i) * 2.0f64);
        });
    });
    for target in [Target::metal(), Target::cpu(32).wearing(&Target::metal())] {
        let e = k.trace(&target).unwrap_err();
        let line = LINE.load(std::sync::atomic::Ordering::Relaxed);
        assert_error(&e, "uses_f64", "load", line, "Metal has no double-precision type");
        assert!(e.unsupported.is_some());
    }
}

#[test]
fn sixty_four_bit_atomics_are_refused_by_name() {
    static LINE: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let add = Kernel::range("add_i64", 64, |k| {
        let a = k.array::<i64>("a");
        k.parallel_for(0, a.len(), |i| {
            LINE.store(line!() + 1, std::sync::atomic::Ordering::Relaxed);
            atomic_add(a.at(i), 1i64);
        });
    });
    let e = add.trace(&Target::metal()).unwrap_err();
    let line = LINE.load(std::sync::atomic::Ordering::Relaxed);
    assert_error(&e, "add_i64", "atomic_add", line, "Metal has no 64-bit atomics");
    // Apple family 9's ulong min/max is refused too, and the message says so.
    let max = Kernel::range("max_u64", 64, |k| {
        let a = k.array::<u64>("a");
        k.parallel_for(0, a.len(), |i| {
            LINE.store(line!() + 1, std::sync::atomic::Ordering::Relaxed);
            atomic_max(a.at(i), 1u64);
        });
    });
    let e = max.trace(&Target::metal()).unwrap_err();
    let line = LINE.load(std::sync::atomic::Ordering::Relaxed);
    assert_error(&e, "max_u64", "atomic_max", line, "Apple family 9's ulong atomic_fetch_min/max is refused too");
}

#[test]
fn threadgroup_memory_over_32_kib_is_refused() {
    let k = Kernel::explicit("big_shared", 64, |k| {
        let a = k.array::<u32>("a");
        let s = block::shared_array::<u32>(8 * 1024 + 1);
        let t = block::thread_idx();
        s.set(t, a.get(t));
        block::sync();
        a.set(t, s.get(t));
    });
    let e = k.trace(&Target::metal()).unwrap_err();
    assert_eq!(e.kernel, "big_shared");
    assert_eq!(e.op, "block.shared_array");
    assert!(e.loc.file.ends_with("metal.rs"), "{e}");
    assert!(e.message.contains("32772 bytes") && e.message.contains("over the 32768 bytes"), "{e}");
    // 32 KiB exactly fits.
    let fits = Kernel::explicit("fits", 64, |k| {
        let a = k.array::<u32>("a");
        let s = block::shared_array::<u32>(8 * 1024);
        let t = block::thread_idx();
        s.set(t, a.get(t));
        a.set(t, s.get(t));
    });
    assert!(msl(&fits, &Target::metal()).unwrap().contains("threadgroup uint s0_shared0[8192];"));
}

#[test]
fn log2_size_above_5_is_refused() {
    static LINE: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let k = Kernel::range("tile64", 64, |k| {
        let a = k.array::<i32>("a");
        k.parallel_for(0, a.len(), |i| {
            LINE.store(line!() + 1, std::sync::atomic::Ordering::Relaxed);
            a.set(i, subgroup::reduce_add_tiled(a.get(i), 6));
        });
    });
    let e = k.trace(&Target::metal()).unwrap_err();
    let line = LINE.load(std::sync::atomic::Ordering::Relaxed);
    assert_error(&e, "tile64", "subgroup.reduce_add_tiled", line, "log2_size 6 exceeds log2_group_size() = 5");
}

#[test]
fn what_needs_a_later_msl_is_refused_below_it() {
    static LINE: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let fence = Kernel::range("fenced", 64, |k| {
        let a = k.array::<u32>("a");
        k.parallel_for(0, a.len(), |i| {
            a.set(i, 1u32);
            LINE.store(line!() + 1, std::sync::atomic::Ordering::Relaxed);
            grid::mem_fence();
        });
    });
    let old = Target::metal_msl(MslVersion::V3_1);
    let e = msl(&fence, &old).unwrap_err();
    let line = LINE.load(std::sync::atomic::Ordering::Relaxed);
    assert_error(&e, "fenced", "grid.mem_fence", line, "needs MSL 3.2");
    assert!(msl(&fence, &Target::metal()).unwrap().contains("MSL 3.2"));

    let cas = Kernel::range("acq_rel_cas", 64, |k| {
        let a = k.array::<u32>("a");
        k.parallel_for(0, a.len(), |i| {
            LINE.store(line!() + 1, std::sync::atomic::Ordering::Relaxed);
            atomic_cas_with(a.at(i), 0u32, 1u32, Ordering::AcqRel, Scope::Device);
        });
    });
    let e = msl(&cas, &old).unwrap_err();
    let line = LINE.load(std::sync::atomic::Ordering::Relaxed);
    assert_error(&e, "acq_rel_cas", "atomic_cas", line, "coherent(device)");

    // An acquire load needs the scoped fence; a relaxed one is MSL 3.0.
    let acquire = Kernel::range("acquire", 64, |k| {
        let a = k.array::<u32>("a");
        k.parallel_for(0, a.len(), |i| {
            LINE.store(line!() + 1, std::sync::atomic::Ordering::Relaxed);
            let v = a.at(i).load_with(LoadKind::Ordered(Ordering::Acquire, Scope::Device));
            a.set(i, v + 1u32);
        });
    });
    let e = msl(&acquire, &old).unwrap_err();
    let line = LINE.load(std::sync::atomic::Ordering::Relaxed);
    assert_error(&e, "acquire", "load", line, "needs MSL 3.2");
    let relaxed = Kernel::range("relaxed", 64, |k| {
        let a = k.array::<u32>("a");
        k.parallel_for(0, a.len(), |i| {
            let v = a.at(i).load_with(LoadKind::Ordered(Ordering::Relaxed, Scope::Device));
            a.set(i, v + 1u32);
        });
    });
    let src = msl(&relaxed, &Target::metal_msl(MslVersion::V3_0)).unwrap();
    assert!(src.contains("MSL 3.0") && src.contains("atomic_load_explicit("), "{src}");

    let bf16 = Kernel::range("halves", 64, |k| {
        let a = k.array::<BF16>("a");
        k.parallel_for(0, a.len(), |i| {
            LINE.store(line!() + 1, std::sync::atomic::Ordering::Relaxed);
            a.set(i, a.get(i) + a.get(i));
        });
    });
    let e = msl(&bf16, &Target::metal_msl(MslVersion::V3_0)).unwrap_err();
    let line = LINE.load(std::sync::atomic::Ordering::Relaxed);
    assert_error(&e, "halves", "load", line, "bf16 needs MSL 3.1");
    assert!(msl(&bf16, &Target::metal_msl(MslVersion::V3_1)).unwrap().contains("MSL 3.1"));
}

#[test]
fn more_than_30_arrays_is_refused() {
    // While tracing, at the 31st array's declaration: Metal binds 31 buffers, one of them the
    // parameter block.
    let line = line!() + 2;
    let k = Kernel::explicit("many", 32, |k| {
        let arrays: Vec<Array<u32>> = (0..31).map(|j| k.array::<u32>(&format!("a{j}"))).collect();
        let t = block::thread_idx();
        for a in &arrays {
            a.set(t, 0u32);
        }
    });
    let e = msl(&k, &Target::metal()).unwrap_err();
    assert_error(&e, "many", "array", line, "`a30` is one too many");
    assert!(e.message.contains("at most 30 array parameters"), "{e}");
    // 30 arrays compile.
    let k = Kernel::explicit("thirty", 32, |k| {
        let arrays: Vec<Array<u32>> = (0..30).map(|j| k.array::<u32>(&format!("a{j}"))).collect();
        let t = block::thread_idx();
        for a in &arrays {
            a.set(t, 0u32);
        }
    });
    assert!(msl(&k, &Target::metal()).is_ok());
}

#[test]
fn a_kernel_traced_for_another_target_is_refused() {
    let k = Kernel::range("elsewhere", 64, |k| {
        let a = k.array::<f32>("a");
        k.parallel_for(0, a.len(), |i| a.set(i, a.get(i)));
    });
    let cpu = Target::cpu(32);
    let e = Metal::lower(&k.trace(&cpu).unwrap(), &cpu).unwrap_err();
    assert!(e.message.contains("does not compile for cpu:sg32"), "{e}");
}

#[test]
fn the_printer_keeps_the_metal_rules() {
    let k = Kernel::range("rules", 64, |k| {
        let a = k.array::<i64>("a");
        let f = k.array::<f32>("f");
        let flags = k.array::<u32>("flags");
        let b = k.array::<bool>("b");
        k.parallel_for(0, a.len(), |i| {
            // 64-bit shuffles as two 32-bit ones.
            a.set(i, subgroup::shuffle_xor(a.get(i), 1u32));
            // A broadcast from a lane that varies is a shuffle; from a constant lane a broadcast.
            let lane = f.get(i).cast::<u32>() & 31u32;
            f.set(i, subgroup::broadcast(f.get(i), lane) + subgroup::broadcast(f.get(i), 3u32));
            // Fences are fences, not barriers; volatile loads are relaxed atomic loads.
            grid::mem_fence();
            block::mem_fence();
            flags.set(i, volatile_load(flags.at(i)));
            atomic_cas(flags.at(i), 0u32, 1u32);
            atomic_max(f.at(i), 1.0f32);
            flags.set(i, subgroup::ballot(b.get(i)).cast::<u32>());
        });
    });
    let src = msl(&k, &Target::metal()).unwrap();
    let has = |s: &str| assert!(src.contains(s), "missing `{s}` in:\n{src}");
    has("// qd kernel `rules`: MSL 3.2");
    has("coherent(device) device long* p0_a [[buffer(1)]]");
    has("simd_shuffle_xor(uint(ulong(");
    has("simd_shuffle(");
    has("simd_broadcast(");
    has("atomic_thread_fence(mem_flags::mem_device | mem_flags::mem_threadgroup, memory_order_seq_cst, thread_scope_device);");
    has("atomic_thread_fence(mem_flags::mem_device | mem_flags::mem_threadgroup, memory_order_seq_cst, thread_scope_threadgroup);");
    has("atomic_load_explicit((device atomic_uint*)&p2_flags[");
    has("ulong(simd_ballot(");
    // The CAS loop retries a spurious failure (it saw `expected`) and stops on any other value.
    assert!(src.contains("atomic_compare_exchange_weak_explicit(") && src.contains("_seen == "), "{src}");
    // The grid-stride index runs in 64 bits and is narrowed for the body.
    has("for (long qd_i = long(");
    has("qd_i < long(");
    assert!(!src.contains("threadgroup_barrier"), "fences must not be barriers:\n{src}");
    // Every lane takes part in every SIMD-group function: none sits in one arm of a `?:`.
    assert!(!src.contains("? simd_") && !src.contains(": simd_"), "{src}");
}

/// Full-subgroup 32-bit integer reductions and sums are MSL's `simd_*` functions; floats, 64-bit
/// values, other scans and partial tiles keep the shuffle trees (bit-for-bit results everywhere).
#[test]
fn integer_reductions_print_simd_functions() {
    let k = Kernel::range("reductions", 64, |k| {
        let a = k.array::<i32>("a");
        let u = k.array::<u32>("u");
        k.parallel_for(0, a.len(), |i| {
            a.set(i, subgroup::reduce_add(a.get(i)));
            u.set(i, subgroup::reduce_all_max(u.get(i)) + subgroup::inclusive_add(u.get(i)));
            a.set(i, subgroup::exclusive_add(a.get(i)) + subgroup::reduce_min(a.get(i)));
        });
    });
    let src = msl(&k, &Target::metal()).unwrap();
    let has = |s: &str| assert!(src.contains(s), "missing `{s}` in:\n{src}");
    // A signed sum wraps through uint (D5); min and max keep the signedness.
    has("int(simd_sum(uint(");
    has("simd_max(v");
    has("simd_prefix_inclusive_sum(v");
    has("int(simd_prefix_exclusive_sum(uint(");
    has("simd_min(v");
    assert!(!src.contains("simd_shuffle"), "{src}");

    let trees = Kernel::range("trees", 64, |k| {
        let f = k.array::<f32>("f");
        let l = k.array::<i64>("l");
        let a = k.array::<i32>("a");
        k.parallel_for(0, f.len(), |i| {
            f.set(i, subgroup::reduce_add(f.get(i)) + subgroup::inclusive_add(f.get(i)));
            l.set(i, subgroup::reduce_add(l.get(i)));
            a.set(i, subgroup::inclusive_max(a.get(i)) + subgroup::reduce_add_tiled(a.get(i), 3));
        });
    });
    let src = msl(&trees, &Target::metal()).unwrap();
    assert!(!src.contains("simd_sum") && !src.contains("simd_prefix") && !src.contains("simd_max"), "{src}");
    assert!(src.contains("simd_shuffle_down(") && src.contains("simd_shuffle_up("), "{src}");
}

#[cfg(not(target_os = "macos"))]
#[test]
fn metal_devices_are_unavailable_off_macos() {
    for name in ["metal", "metal:0"] {
        match Device::from_name(name) {
            Err(QdError::Unavailable { backend, reason }) => {
                assert_eq!(backend, name);
                assert!(reason.contains("Metal runs on macOS only"), "{reason}");
            }
            other => panic!("{name}: expected Unavailable, got {other:?}"),
        }
    }
    assert!(!qd::runtime::available_devices().iter().any(|d| d.starts_with("metal")));
}
