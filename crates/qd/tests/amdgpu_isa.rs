//! The AMDGPU backend's machine code (issue 9, Deliver 3): each kernel is printed as LLVM IR,
//! assembled by llc-19 for its chip (wave64), linked by ld.lld-19 and read back with
//! llvm-objdump-19 (instructions) and llvm-readelf-19 (the code object's notes). Without those
//! tools the tests skip with a message, except under `CI=true`, where a missing tool fails.

use qd::backend::amdgpu::{Amdgpu, AmdgpuArch};
use qd::backend::{Backend, Target};
use qd::prelude::*;
use std::path::PathBuf;
use std::process::Command;

/// An LLVM tool by its Debian name (or the path in `env`); `None` (skip) only outside CI.
fn tool(name: &str, env: &str) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(env) {
        return Some(PathBuf::from(p));
    }
    let found = std::env::var_os("PATH")
        .and_then(|paths| std::env::split_paths(&paths).map(|d| d.join(name)).find(|p| p.is_file()));
    if found.is_none() {
        let ci = std::env::var("CI").is_ok_and(|v| v == "true");
        assert!(!ci, "{name} not found (set {env}; Debian: apt-get install llvm-19 lld-19)");
        eprintln!("skipping: {name} not found (set {env})");
    }
    found
}

/// The disassembly and the notes of `k`'s code object for `arch`.
struct Isa {
    asm: String,
    notes: String,
}

impl Isa {
    fn count(&self, needle: &str) -> usize {
        self.asm.lines().filter(|l| l.contains(needle)).count()
    }
}

fn isa(k: &Kernel, arch: AmdgpuArch) -> Option<Isa> {
    let (objdump, readelf) = (tool("llvm-objdump-19", "LLVM_OBJDUMP")?, tool("llvm-readelf-19", "LLVM_READELF")?);
    let (llc, lld) = (qd_testkit::Llc::find()?, qd_testkit::LdLld::find()?);
    let target = Target::amdgpu(arch);
    let module = Amdgpu::lower(&k.trace(&target).unwrap(), &target).unwrap();
    let name = format!("{}_{arch}", k.name());
    let obj = llc.compile(&name, &module.text, "amdgcn-amd-amdhsa", arch.name(), &["-mattr=+wavefrontsize64"]).unwrap();
    let so = lld.link_shared(&name, &[&obj]).unwrap();
    let run = |tool: &PathBuf, args: &[&str]| {
        let out = Command::new(tool).args(args).arg(&so).output().unwrap();
        assert!(out.status.success(), "{}: {}", tool.display(), String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let mcpu = format!("--mcpu={arch}");
    let isa = Isa { asm: run(&objdump, &["-d", &mcpu]), notes: run(&readelf, &["--notes"]) };
    let _ = std::fs::remove_file(obj);
    let _ = std::fs::remove_file(so);
    Some(isa)
}

/// `out[i] = f(a[i])` over a range, with `threads` per block.
fn map_f32(name: &str, threads: u32, f: impl Fn(Val<f32>) -> Val<f32> + Send + Sync + 'static) -> Kernel {
    Kernel::range(name, threads, move |k| {
        let a = k.array::<f32>("a");
        let out = k.array::<f32>("out");
        k.parallel_for(0, a.len(), |i| out.set(i, f(a.get(i))));
    })
}

#[test]
fn every_object_is_wave64() {
    let k = map_f32("plain", 256, |v| v * 2.0f32);
    for arch in AmdgpuArch::ALL {
        let Some(code) = isa(&k, arch) else { return };
        assert!(code.notes.contains(".wavefront_size: 64"), "{arch}:\n{}", code.notes);
    }
}

#[test]
fn cross_half_shuffle_uses_permlane64_on_rdna_only() {
    let k = Kernel::range("shuffle_dyn", 64, |k| {
        let a = k.array::<f32>("a");
        let lanes = k.array::<u32>("lanes");
        let out = k.array::<f32>("out");
        k.parallel_for(0, a.len(), |i| out.set(i, subgroup::shuffle(a.get(i), lanes.get(i))));
    });
    let Some(rdna) = isa(&k, AmdgpuArch::Gfx1100) else { return };
    assert_eq!(rdna.count("v_permlane64_b32"), 1, "{}", rdna.asm);
    assert_eq!(rdna.count("ds_bpermute_b32"), 2, "{}", rdna.asm);
    let Some(cdna) = isa(&k, AmdgpuArch::Gfx942) else { return };
    assert_eq!(cdna.count("permlane64"), 0, "{}", cdna.asm);
    assert_eq!(cdna.count("ds_bpermute_b32"), 1, "{}", cdna.asm);
}

#[test]
fn constant_shuffle_keeps_its_bpermute_and_constant_broadcast_is_one_readlane() {
    let shuffle = map_f32("shuffle40", 64, |v| subgroup::shuffle(v, 40u32));
    let Some(isa1) = isa(&shuffle, AmdgpuArch::Gfx942) else { return };
    assert_eq!(isa1.count("ds_bpermute_b32"), 1, "{}", isa1.asm);
    assert_eq!(isa1.count("v_readlane_b32"), 0, "{}", isa1.asm);
    let broadcast = map_f32("broadcast7", 64, |v| subgroup::broadcast(v, 7u32));
    let Some(isa2) = isa(&broadcast, AmdgpuArch::Gfx942) else { return };
    assert_eq!(isa2.count("v_readlane_b32"), 1, "{}", isa2.asm);
    assert_eq!(isa2.count("ds_bpermute_b32"), 0, "{}", isa2.asm);
}

#[test]
fn ballot_is_one_compare_into_a_64_bit_mask() {
    // An explicit kernel: a range kernel's loop adds its own compare.
    let k = Kernel::explicit("ballot", 64, |k| {
        let a = k.array::<f32>("a");
        let out = k.array::<u64>("out");
        let t = block::thread_idx();
        out.set(t, subgroup::ballot(a.get(t).gt(0.0f32)));
    });
    let Some(code) = isa(&k, AmdgpuArch::Gfx942) else { return };
    let cmps: Vec<&str> = code.asm.lines().filter(|l| l.contains("v_cmp_")).collect();
    assert_eq!(cmps.len(), 1, "{}", code.asm);
    // VOPC writes vcc (64 bits under wave64); VOP3 names an SGPR pair s[n:n+1].
    assert!(cmps[0].contains("vcc") || cmps[0].contains("s["), "{}", cmps[0]);
}

#[test]
fn subgroup_sync_emits_no_barrier_and_no_memory_instruction() {
    let plain = map_f32("no_sync", 128, |v| v + 1.0f32);
    let synced = map_f32("with_sync", 128, |v| {
        subgroup::sync();
        v + 1.0f32
    });
    let memory = |isa: &Isa| {
        isa.asm
            .lines()
            .filter(|l| ["global_", "buffer_", "ds_", "flat_", "scratch_"].iter().any(|m| l.contains(m)))
            .count()
    };
    for arch in AmdgpuArch::ALL {
        let (Some(a), Some(b)) = (isa(&plain, arch), isa(&synced, arch)) else { return };
        assert_eq!(b.count("s_barrier"), 0, "{arch}: {}", b.asm);
        assert_eq!(memory(&a), memory(&b), "{arch}: {}", b.asm);
    }
}

#[test]
fn block_sync_is_s_barrier_unless_the_block_is_one_wave() {
    let k = |threads: u32| {
        Kernel::explicit(&format!("sync{threads}"), threads, move |k| {
            let a = k.array::<u32>("a");
            let s = block::shared_array::<u32>(threads);
            let t = block::thread_idx();
            s.set(t, a.get(t));
            block::sync();
            a.set(t, s.get((t + 1i32) % threads as i32));
        })
    };
    for arch in AmdgpuArch::ALL {
        let Some(two_waves) = isa(&k(128), arch) else { return };
        if arch == AmdgpuArch::Gfx1201 {
            assert_eq!(two_waves.count("s_barrier_signal -1"), 1, "{arch}: {}", two_waves.asm);
            // llvm-objdump-19 prints the 16-bit -1 as 0xffff.
            let wait = two_waves.count("s_barrier_wait -1") + two_waves.count("s_barrier_wait 0xffff");
            assert_eq!(wait, 1, "{arch}: {}", two_waves.asm);
        } else {
            assert_eq!(two_waves.count("s_barrier"), 1, "{arch}: {}", two_waves.asm);
        }
        // One wave (64 threads) needs no barrier: LLVM drops it.
        let Some(one_wave) = isa(&k(64), arch) else { return };
        assert_eq!(one_wave.count("s_barrier"), 0, "{arch}: {}", one_wave.asm);
    }
}

#[test]
fn grid_fence_per_chip() {
    // A store before the fence, so its release half has something to wait for.
    let k = Kernel::explicit("grid_fence", 64, |k| {
        let a = k.array::<f32>("a");
        let out = k.array::<f32>("out");
        let t = block::thread_idx();
        out.set(t, a.get(t));
        grid::mem_fence();
        a.set(t, out.get(t + 1i32));
    });
    let expect: [(AmdgpuArch, &[&str]); 4] = [
        (AmdgpuArch::Gfx942, &["buffer_wbl2 sc1", "s_waitcnt vmcnt(0)", "buffer_inv sc1"]),
        (AmdgpuArch::Gfx90a, &["s_waitcnt vmcnt(0)", "buffer_wbinvl1_vol"]),
        (AmdgpuArch::Gfx1100, &["s_waitcnt_vscnt null, 0x0", "buffer_gl1_inv", "buffer_gl0_inv"]),
        (AmdgpuArch::Gfx1201, &["global_wb scope:SCOPE_DEV", "s_wait_storecnt 0x0", "global_inv scope:SCOPE_DEV"]),
    ];
    for (arch, seq) in expect {
        let Some(code) = isa(&k, arch) else { return };
        let lines: Vec<&str> = code.asm.lines().map(str::trim).collect();
        let found = lines.windows(seq.len()).any(|w| w.iter().zip(seq).all(|(l, m)| l.starts_with(m)));
        assert!(found, "{arch}: expected {seq:?} in a row:\n{}", code.asm);
    }
}

#[test]
fn float_atomics_on_gfx942() {
    let add = Kernel::range("add_f32", 64, |k| {
        let a = k.array::<f32>("a");
        let sum = k.array::<f32>("sum");
        k.parallel_for(0, a.len(), |i| {
            atomic_add(sum.at(0i32), a.get(i));
        });
    });
    let min = Kernel::range("min_f64", 64, |k| {
        let a = k.array::<f64>("a");
        let m = k.array::<f64>("m");
        k.parallel_for(0, a.len(), |i| {
            atomic_min(m.at(0i32), a.get(i));
        });
    });
    let max = Kernel::range("max_f32", 64, |k| {
        let a = k.array::<f32>("a");
        let m = k.array::<f32>("m");
        k.parallel_for(0, a.len(), |i| {
            atomic_max(m.at(0i32), a.get(i));
        });
    });
    let Some(add) = isa(&add, AmdgpuArch::Gfx942) else { return };
    assert_eq!(add.count("global_atomic_add_f32"), 1, "{}", add.asm);
    assert_eq!(add.count("cmpswap"), 0, "{}", add.asm);
    let Some(min) = isa(&min, AmdgpuArch::Gfx942) else { return };
    assert_eq!(min.count("global_atomic_min_f64"), 1, "{}", min.asm);
    assert_eq!(min.count("cmpswap"), 0, "{}", min.asm);
    let Some(max) = isa(&max, AmdgpuArch::Gfx942) else { return };
    assert_eq!(max.count("global_atomic_cmpswap"), 1, "{}", max.asm);
    assert_eq!(max.count("global_atomic_max"), 0, "{}", max.asm);
}
