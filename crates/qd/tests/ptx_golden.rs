//! Golden tests of the PTX printer contract (seed 004, D7): every literal line of the seed that
//! assembles, a sample of the seed's table rows in D7's token order, one test per diagnostic, and
//! (D9) every golden assembled with ptxas 13.0 for its target.

use qd::backend::ptx::*;
use qd::ir::{AddressSpace, AtomicOp, DType, NvSreg, Ordering, Scope};

const SM80: PtxTarget = PtxTarget::sm(80);
const SM90: PtxTarget = PtxTarget::sm(90);
const SM100A: PtxTarget = PtxTarget::arch_specific(100);

type Emit = fn(&mut PtxPrinter) -> Result<Vec<String>, PtxError>;

/// One golden: what the printer must produce for a target, and the `.version` it must ask for
/// (empty: not checked).
struct Golden {
    name: &'static str,
    target: PtxTarget,
    version: &'static str,
    expect: &'static [&'static str],
    emit: Emit,
}

fn one(r: Result<String, PtxError>) -> Result<Vec<String>, PtxError> {
    r.map(|l| vec![l])
}

fn some(r: Result<Option<String>, PtxError>) -> Result<Vec<String>, PtxError> {
    r.map(|l| l.into_iter().collect())
}

fn am(op: AtomOp, ty: AtomType) -> AtomicModifier {
    AtomicModifier::new(op, ty)
}

use AtomOp::*;
use AtomicOrder::{AcqRel, Acquire, Relaxed, Release, SeqCst};
use NvptxScope::{Cta, Device, Gpu, System};

fn goldens() -> Vec<Golden> {
    vec![
        // ----- the seed's literal lines ----------------------------------------------------
        Golden {
            name: "seed_atom_shared_add",
            target: SM90,
            version: "7.8",
            expect: &["atom.relaxed.cta.add.u32.shared %r0, [%r1], %r2;"],
            emit: |p| {
                let m = am(Add, AtomType::U32).order(Relaxed).scope(Cta).space(AtomSpace::Shared);
                one(p.atom(&m, "%r0", "[%r1]", &["%r2"]))
            },
        },
        Golden {
            name: "seed_red_global_add",
            target: SM90,
            version: "7.8",
            expect: &["red.gpu.add.f32.global [%rd0], %f1;"],
            emit: |p| one(p.red(&am(Add, AtomType::F32).scope(Gpu).space(AtomSpace::Global), "[%rd0]", "%f1")),
        },
        Golden {
            name: "seed_red_via_unused_result",
            target: SM90,
            version: "7.8",
            expect: &["red.gpu.add.f32.global [%rd0], %f1;"],
            emit: |p| p.atomic_rmw(&am(Add, AtomType::F32).scope(Gpu).space(AtomSpace::Global), None, "[%rd0]", &["%f1"]),
        },
        Golden {
            name: "seed_atom_acquire_cas",
            target: SM90,
            version: "7.8",
            expect: &["atom.acquire.gpu.cas.b64.global %rd0, [%rd1], %rd2, %rd3;"],
            emit: |p| {
                let m = am(Cas, AtomType::B64).order(Acquire).scope(Gpu).space(AtomSpace::Global);
                one(p.atom(&m, "%rd0", "[%rd1]", &["%rd2", "%rd3"]))
            },
        },
        Golden {
            name: "seed_redux_add",
            target: SM90,
            version: "7.8",
            expect: &["redux.sync.add.s32 %r0, %r1, 0xFFFFFFFF;"],
            emit: |p| one(p.redux_sync(ReduxKind::Add, ReduxType::S32, "%r0", "%r1", FULL_MASK)),
        },
        Golden {
            name: "seed_shfl_bfly",
            target: SM90,
            version: "7.8",
            expect: &["shfl.sync.bfly.b32 %r0|%p0, %r1, 0x10, 0x1F, 0xFFFFFFFF;"],
            emit: |p| {
                let c = hex_imm(ShflMode::Bfly.c_operand(32).into());
                one(p.shfl_sync(ShflMode::Bfly, "%r0", Some("%p0"), "%r1", &hex_imm(0x10), &c, &hex_imm(0xFFFF_FFFF)))
            },
        },
        Golden {
            name: "seed_vote_ballot",
            target: SM90,
            version: "7.8",
            expect: &["vote.sync.ballot.b32 %r0, %p1, 0xFFFFFFFF;"],
            emit: |p| one(p.vote_sync(VoteMode::Ballot, "%r0", "%p1", FULL_MASK)),
        },
        Golden {
            name: "seed_match_any",
            target: SM90,
            version: "7.8",
            expect: &["match.sync.any.b32 %r0, %r1, 0xFFFFFFFF;"],
            emit: |p| one(p.match_sync(MatchMode::Any, MatchType::B32, "%r0", None, "%r1", FULL_MASK)),
        },
        Golden {
            name: "seed_sreg_tid_x",
            target: SM90,
            version: "7.8",
            expect: &["mov.u32 %r0, %tid.x;"],
            emit: |p| one(p.sreg_read("%r0", NvSreg::Tid(0))),
        },
        Golden {
            name: "seed_fence_acq_rel_cta",
            target: SM90,
            version: "7.8",
            expect: &["fence.acq_rel.cta;"],
            emit: |p| some(p.fence(AcqRel, Cta)),
        },
        Golden {
            name: "seed_fence_sc_gpu",
            target: SM90,
            version: "7.8",
            expect: &["fence.sc.gpu;"],
            emit: |p| some(p.fence(SeqCst, Device)),
        },
        Golden {
            name: "seed_fence_acquire_scoped",
            target: SM90,
            version: "8.6",
            expect: &["fence.acquire.cta;", "fence.release.cluster;", "fence.acquire.gpu;", "fence.release.sys;"],
            emit: |p| {
                let mut v = Vec::new();
                v.extend(p.fence(Acquire, Cta)?);
                v.extend(p.fence(Release, NvptxScope::Cluster)?);
                v.extend(p.fence(Acquire, Gpu)?);
                v.extend(p.fence(Release, System)?);
                Ok(v)
            },
        },
        Golden {
            name: "fence_acquire_falls_back_below_sm90",
            target: SM80,
            version: "7.0",
            expect: &["fence.acq_rel.cta;", "fence.acq_rel.gpu;"],
            emit: |p| {
                let mut v = Vec::new();
                v.extend(p.fence(Acquire, Cta)?);
                v.extend(p.fence(Release, Device)?);
                Ok(v)
            },
        },
        Golden {
            name: "fence_sc_acq_rel_all_scopes",
            target: SM90,
            version: "7.8",
            expect: &[
                "fence.sc.cta;",
                "fence.sc.cluster;",
                "fence.sc.gpu;",
                "fence.sc.sys;",
                "fence.acq_rel.cta;",
                "fence.acq_rel.cluster;",
                "fence.acq_rel.gpu;",
                "fence.acq_rel.sys;",
            ],
            emit: |p| {
                let mut v = Vec::new();
                for o in [SeqCst, AcqRel] {
                    for s in [Cta, NvptxScope::Cluster, Gpu, System] {
                        v.extend(p.fence(o, s)?);
                    }
                }
                Ok(v)
            },
        },
        Golden {
            name: "seed_membar",
            target: SM80,
            version: "7.0",
            expect: &["membar.gl;", "membar.cta;", "membar.sys;"],
            emit: |p| Ok(vec![p.membar(MembarLevel::Gl), p.membar(MembarLevel::Cta), p.membar(MembarLevel::Sys)]),
        },
        Golden {
            name: "seed_fence_mbarrier_init",
            target: SM90,
            version: "8.0",
            expect: &["fence.mbarrier_init.release.cluster;"],
            emit: |p| one(p.fence_mbarrier_init()),
        },
        Golden {
            name: "fence_proxy_alias",
            target: SM80,
            version: "7.5",
            expect: &["fence.proxy.alias;", "membar.proxy.alias;"],
            emit: |p| Ok(vec![p.fence_proxy(ProxyKind::Alias)?, p.membar_proxy_alias()?]),
        },
        Golden {
            name: "fence_proxy_async",
            target: SM90,
            version: "8.0",
            expect: &[
                "fence.proxy.async;",
                "fence.proxy.async.global;",
                "fence.proxy.async.shared::cta;",
                "fence.proxy.async.shared::cluster;",
            ],
            emit: |p| {
                let kinds = ["async", "async.global", "async.shared::cta", "async.shared::cluster"];
                kinds.iter().map(|k| p.fence_proxy(ProxyKind::parse(k)?)).collect()
            },
        },
        Golden {
            name: "fence_proxy_tensormap",
            target: SM90,
            version: "8.3",
            expect: &[
                "fence.proxy.tensormap::generic.release.gpu;",
                "fence.proxy.tensormap::generic.release.cluster;",
                "fence.proxy.tensormap::generic.acquire.cta [%rd1], 128;",
                "fence.proxy.tensormap::generic.acquire.sys [%rd1], 128;",
            ],
            emit: |p| {
                Ok(vec![
                    p.fence_proxy_tensormap_release(Device)?,
                    p.fence_proxy_tensormap_release(NvptxScope::Cluster)?,
                    p.fence_proxy_tensormap_acquire(Cta, "[%rd1]", 128)?,
                    p.fence_proxy_tensormap_acquire(System, "[%rd1]", 128)?,
                ])
            },
        },
        Golden {
            name: "fence_sync_restrict",
            target: SM90,
            version: "8.6",
            expect: &[
                "fence.proxy.async::generic.acquire.sync_restrict::shared::cluster.cluster;",
                "fence.proxy.async::generic.release.sync_restrict::shared::cta.cluster;",
                "fence.acquire.sync_restrict::shared::cluster.cluster;",
                "fence.release.sync_restrict::shared::cta.cluster;",
            ],
            emit: |p| {
                Ok(vec![
                    p.fence_proxy_async_generic_sync_restrict(Acquire)?,
                    p.fence_proxy_async_generic_sync_restrict(Release)?,
                    p.fence_sync_restrict(Acquire)?,
                    p.fence_sync_restrict(Release)?,
                ])
            },
        },
        Golden {
            name: "tensormap_cp_fenceproxy",
            target: SM90,
            version: "8.3",
            expect: &[
                "tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned [%rd1], [%rd2], 128;",
                "tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.cluster.sync.aligned [%rd1], [%r2], 128;",
            ],
            emit: |p| {
                Ok(vec![
                    p.tensormap_cp_fenceproxy(Gpu, "[%rd1]", "[%rd2]", 128)?,
                    p.tensormap_cp_fenceproxy(NvptxScope::Cluster, "[%rd1]", "[%r2]", 128)?,
                ])
            },
        },
        // ----- CTA and warp barriers -------------------------------------------------------
        Golden {
            name: "cta_barriers",
            target: SM80,
            version: "7.0",
            expect: &[
                "bar.sync 0;",
                "bar.sync 1, 64;",
                "bar.arrive 2, 128;",
                "bar.red.popc.u32 %r0, 0, %p1;",
                "bar.red.and.pred %p2, 0, %p1;",
                "bar.red.or.pred %p2, 0, !%p1;",
            ],
            emit: |p| {
                Ok(vec![
                    p.bar_sync(0, None)?,
                    p.bar_sync(1, Some(64))?,
                    p.bar_arrive(2, 128)?,
                    p.bar_red_popc("%r0", 0, "%p1")?,
                    p.bar_red_pred(BarRedOp::And, "%p2", 0, "%p1")?,
                    p.bar_red_pred(BarRedOp::Or, "%p2", 0, "!%p1")?,
                ])
            },
        },
        Golden {
            name: "bar_warp_sync",
            target: SM80,
            version: "7.0",
            expect: &["bar.warp.sync 0xFFFFFFFF;", "bar.warp.sync %r3;"],
            emit: |p| Ok(vec![p.bar_warp_sync(FULL_MASK)?, p.bar_warp_sync("%r3")?]),
        },
        // ----- warp collectives ------------------------------------------------------------
        Golden {
            name: "shfl_modes",
            target: SM80,
            version: "7.0",
            expect: &[
                "shfl.sync.idx.b32 %r0|%p0, %r1, %r2, 0x1F, 0xFFFFFFFF;",
                "shfl.sync.up.b32 %r0, %r1, 0x1, 0x0, 0xFFFFFFFF;",
                "shfl.sync.down.b32 %r0|%p1, %r1, 0x4, 0x101F, 0xFFFFFFFF;",
                "shfl.sync.bfly.b32 %r0, %r1, 0x2, 0x181F, %r5;",
            ],
            emit: |p| {
                let c = |m: ShflMode, w: u32| hex_imm(m.c_operand(w).into());
                Ok(vec![
                    p.shfl_sync(ShflMode::Idx, "%r0", Some("%p0"), "%r1", "%r2", &c(ShflMode::Idx, 32), FULL_MASK)?,
                    p.shfl_sync(ShflMode::Up, "%r0", None, "%r1", &hex_imm(1), &c(ShflMode::Up, 32), FULL_MASK)?,
                    p.shfl_sync(ShflMode::Down, "%r0", Some("%p1"), "%r1", &hex_imm(4), &c(ShflMode::Down, 16), FULL_MASK)?,
                    p.shfl_sync(ShflMode::Bfly, "%r0", None, "%r1", &hex_imm(2), &c(ShflMode::Bfly, 8), "%r5")?,
                ])
            },
        },
        Golden {
            name: "vote_modes",
            target: SM80,
            version: "7.0",
            expect: &[
                "vote.sync.any.pred %p0, %p1, 0xFFFFFFFF;",
                "vote.sync.all.pred %p0, !%p1, 0xFFFFFFFF;",
                "vote.sync.uni.pred %p2, %p1, %r3;",
                "vote.sync.ballot.b32 %r0, %p1, 0xFFFFFFFF;",
            ],
            emit: |p| {
                Ok(vec![
                    p.vote_sync(VoteMode::Any, "%p0", "%p1", FULL_MASK)?,
                    p.vote_sync(VoteMode::All, "%p0", "!%p1", FULL_MASK)?,
                    p.vote_sync(VoteMode::Uni, "%p2", "%p1", "%r3")?,
                    p.vote_sync(VoteMode::Ballot, "%r0", "%p1", FULL_MASK)?,
                ])
            },
        },
        Golden {
            name: "match_modes",
            target: SM80,
            version: "7.0",
            expect: &[
                "match.sync.all.b32 %r0|%p1, %r1, 0xFFFFFFFF;",
                "match.sync.all.b64 %r0, %rd1, 0xFFFFFFFF;",
                "match.sync.any.b64 %r0, %rd1, 0xFFFFFFFF;",
            ],
            emit: |p| {
                Ok(vec![
                    p.match_sync(MatchMode::All, MatchType::B32, "%r0", Some("%p1"), "%r1", FULL_MASK)?,
                    p.match_sync(MatchMode::All, MatchType::B64, "%r0", None, "%rd1", FULL_MASK)?,
                    p.match_sync(MatchMode::Any, MatchType::B64, "%r0", None, "%rd1", FULL_MASK)?,
                ])
            },
        },
        Golden {
            name: "redux_integer",
            target: SM80,
            version: "7.0",
            expect: &[
                "redux.sync.add.u32 %r0, %r1, 0xFFFFFFFF;",
                "redux.sync.min.u32 %r0, %r1, 0xFFFFFFFF;",
                "redux.sync.max.u32 %r0, %r1, 0xFFFFFFFF;",
                "redux.sync.min.s32 %r0, %r1, 0xFFFFFFFF;",
                "redux.sync.max.s32 %r0, %r1, 0xFFFFFFFF;",
                "redux.sync.and.b32 %r0, %r1, 0xFFFFFFFF;",
                "redux.sync.or.b32 %r0, %r1, 0xFFFFFFFF;",
                "redux.sync.xor.b32 %r0, %r1, %r2;",
            ],
            emit: |p| {
                use ReduxKind as K;
                use ReduxType as T;
                Ok(vec![
                    p.redux_sync(K::Add, T::U32, "%r0", "%r1", FULL_MASK)?,
                    p.redux_sync(K::UMin, T::U32, "%r0", "%r1", FULL_MASK)?,
                    p.redux_sync(K::UMax, T::U32, "%r0", "%r1", FULL_MASK)?,
                    p.redux_sync(K::Min, T::S32, "%r0", "%r1", FULL_MASK)?,
                    p.redux_sync(K::Max, T::S32, "%r0", "%r1", FULL_MASK)?,
                    p.redux_sync(K::And, T::B32, "%r0", "%r1", FULL_MASK)?,
                    p.redux_sync(K::Or, T::B32, "%r0", "%r1", FULL_MASK)?,
                    p.redux_sync(K::Xor, T::B32, "%r0", "%r1", "%r2")?,
                ])
            },
        },
        Golden {
            name: "redux_float_sm100a",
            target: SM100A,
            version: "8.6",
            expect: &[
                "redux.sync.min.f32 %f0, %f1, 0xFFFFFFFF;",
                "redux.sync.max.f32 %f0, %f1, 0xFFFFFFFF;",
                "redux.sync.min.abs.NaN.f32 %f0, %f1, 0xFFFFFFFF;",
                "redux.sync.max.abs.NaN.f32 %f0, %f1, 0xFFFFFFFF;",
            ],
            emit: |p| {
                use ReduxKind as K;
                Ok(vec![
                    p.redux_sync(K::FMin, ReduxType::F32, "%f0", "%f1", FULL_MASK)?,
                    p.redux_sync(K::FMax, ReduxType::F32, "%f0", "%f1", FULL_MASK)?,
                    p.redux_sync(K::FMinAbsNan, ReduxType::F32, "%f0", "%f1", FULL_MASK)?,
                    p.redux_sync(K::FMaxAbsNan, ReduxType::F32, "%f0", "%f1", FULL_MASK)?,
                ])
            },
        },
        Golden {
            name: "activemask_elect",
            target: SM90,
            version: "8.0",
            expect: &["activemask.b32 %r0;", "elect.sync %r1|%p1, 0xFFFFFFFF;"],
            emit: |p| Ok(vec![p.activemask("%r0")?, p.elect_sync("%r1", "%p1", FULL_MASK)?]),
        },
        // ----- special registers -----------------------------------------------------------
        Golden {
            name: "sreg_compact_path",
            target: SM80,
            version: "7.0",
            expect: &[
                "mov.u32 %r0, %tid.x;",
                "mov.u32 %r1, %tid.y;",
                "mov.u32 %r2, %tid.z;",
                "mov.u32 %r3, %ntid.x;",
                "mov.u32 %r4, %ntid.y;",
                "mov.u32 %r5, %ntid.z;",
                "mov.u32 %r6, %ctaid.x;",
                "mov.u32 %r7, %ctaid.y;",
                "mov.u32 %r8, %ctaid.z;",
                "mov.u32 %r9, %nctaid.x;",
                "mov.u32 %r10, %nctaid.y;",
                "mov.u32 %r11, %nctaid.z;",
            ],
            emit: |p| {
                let mut v = Vec::new();
                let ctors: [fn(u8) -> NvSreg; 4] = [NvSreg::Tid, NvSreg::Ntid, NvSreg::Ctaid, NvSreg::Nctaid];
                for (i, c) in ctors.iter().enumerate() {
                    for a in 0..3u8 {
                        v.push(p.sreg_read(&format!("%r{}", i * 3 + a as usize), c(a))?);
                    }
                }
                Ok(v)
            },
        },
        Golden {
            name: "sreg_generic_path",
            target: SM80,
            version: "7.0",
            expect: &[
                "mov.u32 %r0, %smid;",
                "mov.u32 %r0, %nsmid;",
                "mov.u32 %r0, %warpid;",
                "mov.u32 %r0, %nwarpid;",
                "mov.u32 %r0, %laneid;",
                "mov.u32 %r0, WARP_SZ;",
                "mov.u64 %rd0, %gridid;",
                "mov.u32 %r0, %lanemask_eq;",
                "mov.u32 %r0, %lanemask_le;",
                "mov.u32 %r0, %lanemask_lt;",
                "mov.u32 %r0, %lanemask_ge;",
                "mov.u32 %r0, %lanemask_gt;",
                "mov.u32 %r0, %clock;",
                "mov.u64 %rd0, %clock64;",
                "mov.u64 %rd0, %globaltimer;",
                "mov.u32 %r0, %envreg0;",
                "mov.u32 %r0, %envreg31;",
                "mov.u32 %r0, %dynamic_smem_size;",
            ],
            emit: |p| {
                use NvSreg::*;
                let regs = [
                    Smid,
                    Nsmid,
                    Warpid,
                    Nwarpid,
                    Laneid,
                    Warpsize,
                    Gridid,
                    LanemaskEq,
                    LanemaskLe,
                    LanemaskLt,
                    LanemaskGe,
                    LanemaskGt,
                    Clock,
                    Clock64,
                    GlobalTimer,
                    EnvReg(0),
                    EnvReg(31),
                ];
                let mut v = Vec::new();
                for r in regs {
                    let dst = if sreg_mov_type(r) == "u64" { "%rd0" } else { "%r0" };
                    v.push(p.sreg_read(dst, r)?);
                }
                v.push(p.dynamic_smem_size("%r0")?);
                Ok(v)
            },
        },
        Golden {
            name: "sreg_cluster",
            target: SM90,
            version: "7.8",
            expect: &[
                "mov.u32 %r0, %clusterid.x;",
                "mov.u32 %r0, %nclusterid.y;",
                "mov.u32 %r0, %cluster_ctaid.z;",
                "mov.u32 %r0, %cluster_nctaid.x;",
                "mov.u32 %r0, %cluster_ctarank;",
                "mov.u32 %r0, %cluster_nctarank;",
            ],
            emit: |p| {
                use NvSreg::*;
                [ClusterId(0), NClusterId(1), ClusterCtaid(2), ClusterNctaid(0), ClusterCtarank, ClusterNctarank]
                    .into_iter()
                    .map(|r| p.sreg_read("%r0", r))
                    .collect()
            },
        },
        // ----- mbarrier --------------------------------------------------------------------
        Golden {
            name: "mbarrier_seed_templates_sm80",
            target: SM80,
            version: "7.1",
            expect: &[
                "mbarrier.init.shared.b64 [%r1], %r2;",
                "mbarrier.init.b64 [%rd1], 32;",
                "mbarrier.arrive.shared.b64 %rd1, [%r1];",
                "mbarrier.arrive.noComplete.shared.b64 %rd1, [%r1], %r2;",
                "mbarrier.test_wait.shared.b64 %p1, [%r1], %rd1;",
                "mbarrier.test_wait.parity.shared.b64 %p1, [%r1], %r2;",
                "mbarrier.pending_count.b64 %r1, %rd4;",
                "mbarrier.inval.shared.b64 [%r1];",
            ],
            emit: |p| {
                let s = MbarrierModifier::shared();
                Ok(vec![
                    p.mbarrier_init(MbarrierSpace::Shared, "[%r1]", "%r2")?,
                    p.mbarrier_init(MbarrierSpace::Generic, "[%rd1]", "32")?,
                    p.mbarrier_arrive(&s, "%rd1", "[%r1]", None)?,
                    p.mbarrier_arrive_no_complete(&s, "%rd1", "[%r1]", "%r2")?,
                    p.mbarrier_test_wait(&s, false, "%p1", "[%r1]", "%rd1")?,
                    p.mbarrier_test_wait(&s, true, "%p1", "[%r1]", "%r2")?,
                    p.mbarrier_pending_count("%r1", "%rd4")?,
                    p.mbarrier_inval(MbarrierSpace::Shared, "[%r1]")?,
                ])
            },
        },
        Golden {
            name: "mbarrier_release_cta_sm80",
            target: SM80,
            version: "8.0",
            expect: &[
                "mbarrier.arrive.release.cta.shared::cta.b64 %rd4, [%r3];",
                "mbarrier.arrive.noComplete.release.cta.shared.b64 %rd4, [%r3], %r2;",
                "mbarrier.test_wait.acquire.cta.shared.b64 %p1, [%r3], %rd4;",
            ],
            emit: |p| {
                let cta = MbarrierModifier::new(MbarrierSpace::SharedCta).sem(Release, Cta);
                let sh = MbarrierModifier::shared().sem(Release, Cta);
                let acq = MbarrierModifier::shared().sem(Acquire, Cta);
                Ok(vec![
                    p.mbarrier_arrive(&cta, "%rd4", "[%r3]", None)?,
                    p.mbarrier_arrive_no_complete(&sh, "%rd4", "[%r3]", "%r2")?,
                    p.mbarrier_test_wait(&acq, false, "%p1", "[%r3]", "%rd4")?,
                ])
            },
        },
        Golden {
            name: "mbarrier_sm90",
            target: SM90,
            version: "8.0",
            expect: &[
                "mbarrier.arrive.shared.b64 %rd1, [%r1], %r2;",
                "mbarrier.arrive.expect_tx.shared.b64 %rd1, [%r1], %r2;",
                "mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 %rd4, [%r3], %r2;",
                "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%r3];",
                "mbarrier.arrive.expect_tx.release.cluster.shared::cluster.b64 _, [%r3], %r2;",
                "mbarrier.expect_tx.shared.b64 [%r1], %r2;",
                "mbarrier.complete_tx.shared.b64 [%r1], %r2;",
                "mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%r3], %r2;",
                "mbarrier.complete_tx.relaxed.cluster.shared::cluster.b64 [%r3], %r2;",
                "mbarrier.test_wait.parity.acquire.cta.shared::cta.b64 %p1, [%r3], %r2;",
                "mbarrier.try_wait.shared.b64 %p1, [%r1], %rd1;",
                "mbarrier.try_wait.parity.shared.b64 %p1, [%r1], %r2;",
                "mbarrier.try_wait.parity.shared.b64 %p1, [%r1], %r2, 0x989680;",
                "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 %p1, [%r3], %r1, %r4;",
                "mbarrier.arrive.shared.b64 _, [%r1];",
            ],
            emit: |p| {
                let s = MbarrierModifier::shared();
                let cta = MbarrierModifier::new(MbarrierSpace::SharedCta);
                let clu = MbarrierModifier::new(MbarrierSpace::SharedCluster);
                let hint = hex_imm(10_000_000);
                Ok(vec![
                    p.mbarrier_arrive(&s, "%rd1", "[%r1]", Some("%r2"))?,
                    p.mbarrier_arrive_expect_tx(&s, "%rd1", "[%r1]", "%r2")?,
                    p.mbarrier_arrive_expect_tx(&cta.sem(Release, Cta), "%rd4", "[%r3]", "%r2")?,
                    p.mbarrier_arrive(&clu.sem(Release, NvptxScope::Cluster), "_", "[%r3]", None)?,
                    p.mbarrier_arrive_expect_tx(&clu.sem(Release, NvptxScope::Cluster), "_", "[%r3]", "%r2")?,
                    p.mbarrier_expect_tx(&s, "[%r1]", "%r2")?,
                    p.mbarrier_complete_tx(&s, "[%r1]", "%r2")?,
                    p.mbarrier_expect_tx(&cta.sem(Relaxed, Cta), "[%r3]", "%r2")?,
                    p.mbarrier_complete_tx(&clu.sem(Relaxed, NvptxScope::Cluster), "[%r3]", "%r2")?,
                    p.mbarrier_test_wait(&cta.sem(Acquire, Cta), true, "%p1", "[%r3]", "%r2")?,
                    p.mbarrier_try_wait(&s, false, "%p1", "[%r1]", "%rd1", None)?,
                    p.mbarrier_try_wait(&s, true, "%p1", "[%r1]", "%r2", None)?,
                    p.mbarrier_try_wait(&s, true, "%p1", "[%r1]", "%r2", Some(&hint))?,
                    p.mbarrier_try_wait(&cta.sem(Acquire, NvptxScope::Cluster), true, "%p1", "[%r3]", "%r1", Some("%r4"))?,
                    p.mbarrier_arrive(&s, "_", "[%r1]", None)?,
                ])
            },
        },
        Golden {
            name: "mbarrier_relaxed",
            target: SM90,
            version: "8.6",
            expect: &[
                "mbarrier.arrive.relaxed.cta.shared.b64 %rd1, [%r1];",
                "mbarrier.try_wait.relaxed.cta.shared.b64 %p1, [%r1], %rd1;",
            ],
            emit: |p| {
                let r = MbarrierModifier::shared().sem(Relaxed, Cta);
                Ok(vec![
                    p.mbarrier_arrive(&r, "%rd1", "[%r1]", None)?,
                    p.mbarrier_try_wait(&r, false, "%p1", "[%r1]", "%rd1", None)?,
                ])
            },
        },
        Golden {
            name: "mbarrier_wait_loop",
            target: SM90,
            version: "7.8",
            expect: &[
                "$L__mbar_wait0:",
                "mbarrier.try_wait.parity.shared.b64 %p1, [%r1], %r2;",
                "@!%p1 bra $L__mbar_wait0;",
            ],
            emit: |p| p.mbarrier_wait_parity_loop(&MbarrierModifier::shared(), "%p1", "[%r1]", "%r2", "$L__mbar_wait0", None),
        },
        // ----- atom/red table rows in D7's order -------------------------------------------
        Golden {
            name: "red_rows",
            target: SM90,
            version: "7.8",
            expect: &[
                "red.release.cta.add.u32.shared [%r1], %r2;",
                "red.relaxed.sys.or.b64.global [%rd1], %rd2;",
                "red.release.cluster.add.u32.shared::cluster [%r1], %r2;",
                "red.add.noftz.f16.global [%rd1], %rs1;",
                "red.relaxed.gpu.add.noftz.f16x2.global [%rd1], %r2;",
                "red.add.noftz.bf16.global [%rd1], %rs1;",
                "red.add.noftz.bf16x2 [%rd1], %r2;",
                "red.max.s64.global [%rd1], %rd2;",
                "red.min.u32 [%rd1], %r2;",
                "red.add.f64.global [%rd1], %fd1;",
                "red.add.s32.global [%rd1], %r2;",
                "red.xor.b32.global [%rd1], %r2;",
                "red.inc.u32.global [%rd1], %r2;",
            ],
            emit: |p| {
                let g = AtomSpace::Global;
                Ok(vec![
                    p.red(&am(Add, AtomType::U32).order(Release).scope(Cta).space(AtomSpace::Shared), "[%r1]", "%r2")?,
                    p.red(&am(Or, AtomType::B64).order(Relaxed).scope(System).space(g), "[%rd1]", "%rd2")?,
                    p.red(
                        &am(Add, AtomType::U32).order(Release).scope(NvptxScope::Cluster).space(AtomSpace::SharedCluster),
                        "[%r1]",
                        "%r2",
                    )?,
                    p.red(&am(Add, AtomType::F16).space(g), "[%rd1]", "%rs1")?,
                    p.red(&am(Add, AtomType::F16x2).order(Relaxed).scope(Gpu).space(g), "[%rd1]", "%r2")?,
                    p.red(&am(Add, AtomType::BF16).space(g), "[%rd1]", "%rs1")?,
                    p.red(&am(Add, AtomType::BF16x2), "[%rd1]", "%r2")?,
                    p.red(&am(Max, AtomType::S64).space(g), "[%rd1]", "%rd2")?,
                    p.red(&am(Min, AtomType::U32), "[%rd1]", "%r2")?,
                    p.red(&am(Add, AtomType::F64).space(g), "[%rd1]", "%fd1")?,
                    p.red(&am(Add, AtomType::S32).space(g), "[%rd1]", "%r2")?,
                    p.red(&am(Xor, AtomType::B32).space(g), "[%rd1]", "%r2")?,
                    p.red(&am(Inc, AtomType::U32).space(g), "[%rd1]", "%r2")?,
                ])
            },
        },
        Golden {
            name: "atom_cas_exch_rows",
            target: SM90,
            version: "8.4",
            expect: &[
                "atom.acq_rel.cluster.cas.b32.shared::cluster %r1, [%r3], %r2, %r4;",
                "atom.acquire.gpu.cas.b16.global %rs1, [%rd1], %rs2, %rs3;",
                "atom.cas.b128.global %q1, [%rd2], %q2, %q3;",
                "atom.release.sys.cas.b32 %r1, [%rd1], %r2, %r3;",
                "atom.relaxed.cta.exch.b32.shared %r1, [%r1], %r2;",
                "atom.exch.b64.global %rd4, [%rd2], %rd5;",
                "atom.relaxed.sys.exch.b128.global.L2::cache_hint %q1, [%rd1], %q2, %rd4;",
            ],
            emit: |p| {
                let g = AtomSpace::Global;
                Ok(vec![
                    p.atom(
                        &am(Cas, AtomType::B32).order(AcqRel).scope(NvptxScope::Cluster).space(AtomSpace::SharedCluster),
                        "%r1",
                        "[%r3]",
                        &["%r2", "%r4"],
                    )?,
                    p.atom(&am(Cas, AtomType::B16).order(Acquire).scope(Gpu).space(g), "%rs1", "[%rd1]", &["%rs2", "%rs3"])?,
                    p.atom(&am(Cas, AtomType::B128).space(g), "%q1", "[%rd2]", &["%q2", "%q3"])?,
                    p.atom(&am(Cas, AtomType::B32).order(Release).scope(System), "%r1", "[%rd1]", &["%r2", "%r3"])?,
                    p.atom(&am(Exch, AtomType::B32).order(Relaxed).scope(Cta).space(AtomSpace::Shared), "%r1", "[%r1]", &["%r2"])?,
                    p.atom(&am(Exch, AtomType::B64).space(g), "%rd4", "[%rd2]", &["%rd5"])?,
                    p.atom(
                        &am(Exch, AtomType::B128).order(Relaxed).scope(System).space(g).cache_hint("%rd4"),
                        "%q1",
                        "[%rd1]",
                        &["%q2"],
                    )?,
                ])
            },
        },
        Golden {
            name: "atom_arith_rows",
            target: SM90,
            version: "7.8",
            expect: &[
                "atom.acq_rel.gpu.add.u64.global %rd1, [%rd2], %rd3;",
                "atom.release.cta.add.f32 %f1, [%rd1], %f2;",
                "atom.add.noftz.f16.global %rs1, [%rd2], %rs2;",
                "atom.acquire.gpu.add.noftz.bf16x2.global %r1, [%rd1], %r2;",
                "atom.add.f64.global %fd1, [%rd1], %fd2;",
                "atom.relaxed.cta.add.u32.global.L2::cache_hint %r1, [%rd2], %r2, %rd5;",
                "atom.relaxed.cluster.and.b64.global %rd1, [%rd2], %rd3;",
                "atom.or.b32.shared %r1, [%r2], %r3;",
                "atom.acq_rel.sys.xor.b32.global %r1, [%rd2], %r3;",
                "atom.acquire.cta.min.s32.shared %r1, [%r2], %r3;",
                "atom.max.u64.global %rd1, [%rd2], %rd3;",
                "atom.release.gpu.max.s64.global %rd1, [%rd2], %rd3;",
                "atom.inc.u32.global %r1, [%rd2], %r2;",
                "atom.relaxed.gpu.dec.u32.shared::cta %r1, [%r2], %r3;",
            ],
            emit: |p| {
                let g = AtomSpace::Global;
                let sh = AtomSpace::Shared;
                Ok(vec![
                    p.atom(&am(Add, AtomType::U64).order(AcqRel).scope(Gpu).space(g), "%rd1", "[%rd2]", &["%rd3"])?,
                    p.atom(&am(Add, AtomType::F32).order(Release).scope(Cta), "%f1", "[%rd1]", &["%f2"])?,
                    p.atom(&am(Add, AtomType::F16).space(g), "%rs1", "[%rd2]", &["%rs2"])?,
                    p.atom(&am(Add, AtomType::BF16x2).order(Acquire).scope(Gpu).space(g), "%r1", "[%rd1]", &["%r2"])?,
                    p.atom(&am(Add, AtomType::F64).space(g), "%fd1", "[%rd1]", &["%fd2"])?,
                    p.atom(
                        &am(Add, AtomType::U32).order(Relaxed).scope(Cta).space(g).cache_hint("%rd5"),
                        "%r1",
                        "[%rd2]",
                        &["%r2"],
                    )?,
                    p.atom(&am(And, AtomType::B64).order(Relaxed).scope(NvptxScope::Cluster).space(g), "%rd1", "[%rd2]", &["%rd3"])?,
                    p.atom(&am(Or, AtomType::B32).space(sh), "%r1", "[%r2]", &["%r3"])?,
                    p.atom(&am(Xor, AtomType::B32).order(AcqRel).scope(System).space(g), "%r1", "[%rd2]", &["%r3"])?,
                    p.atom(&am(Min, AtomType::S32).order(Acquire).scope(Cta).space(sh), "%r1", "[%r2]", &["%r3"])?,
                    p.atom(&am(Max, AtomType::U64).space(g), "%rd1", "[%rd2]", &["%rd3"])?,
                    p.atom(&am(Max, AtomType::S64).order(Release).scope(Gpu).space(g), "%rd1", "[%rd2]", &["%rd3"])?,
                    p.atom(&am(Inc, AtomType::U32).space(g), "%r1", "[%rd2]", &["%r2"])?,
                    p.atom(&am(Dec, AtomType::U32).order(Relaxed).scope(Gpu).space(AtomSpace::SharedCta), "%r1", "[%r2]", &["%r3"])?,
                ])
            },
        },
        Golden {
            name: "atom_vector_rows",
            target: SM90,
            version: "8.1",
            expect: &[
                "atom.add.v4.f32.global {%f0,%f1,%f2,%f3}, [%rd2], {%f4,%f5,%f6,%f7};",
                "atom.max.noftz.v4.bf16x2.global {%r0,%r1,%r2,%r4}, [%rd2], {%r5,%r6,%r7,%r8};",
                "atom.min.noftz.v2.f16 {%rs0,%rs1}, [%rd1], {%rs2,%rs3};",
                "red.add.noftz.v8.bf16.global [%rd2], {%rs0,%rs1,%rs2,%rs3,%rs4,%rs5,%rs6,%rs7};",
                "atom.relaxed.sys.add.noftz.v2.f16x2.global.L2::cache_hint {%r0,%r1}, [%rd1], {%r2,%r3}, %rd5;",
            ],
            emit: |p| {
                let g = AtomSpace::Global;
                let v = VectorWidth::V4;
                Ok(vec![
                    p.atom(&am(Add, AtomType::F32).vector(v).space(g), "{%f0,%f1,%f2,%f3}", "[%rd2]", &["{%f4,%f5,%f6,%f7}"])?,
                    p.atom(&am(Max, AtomType::BF16x2).vector(v).space(g), "{%r0,%r1,%r2,%r4}", "[%rd2]", &["{%r5,%r6,%r7,%r8}"])?,
                    p.atom(&am(Min, AtomType::F16).vector(VectorWidth::V2), "{%rs0,%rs1}", "[%rd1]", &["{%rs2,%rs3}"])?,
                    p.red(
                        &am(Add, AtomType::BF16).vector(VectorWidth::V8).space(g),
                        "[%rd2]",
                        "{%rs0,%rs1,%rs2,%rs3,%rs4,%rs5,%rs6,%rs7}",
                    )?,
                    p.atom(
                        &am(Add, AtomType::F16x2).order(Relaxed).scope(System).vector(VectorWidth::V2).space(g).cache_hint("%rd5"),
                        "{%r0,%r1}",
                        "[%rd1]",
                        &["{%r2,%r3}"],
                    )?,
                ])
            },
        },
        Golden {
            name: "atom_sm80_rows",
            target: SM80,
            version: "7.4",
            expect: &[
                "atom.relaxed.gpu.add.u32.global %r0, [%rd1], %r2;",
                "atom.relaxed.sys.add.u32.global.L2::cache_hint %r0, [%rd1], %r2, %rd3;",
                "atom.acquire.cta.cas.b16.shared %rs0, [%r1], %rs1, %rs2;",
                "red.add.noftz.f16x2.global [%rd1], %r2;",
            ],
            emit: |p| {
                let g = AtomSpace::Global;
                Ok(vec![
                    p.atom(&am(Add, AtomType::U32).order(Relaxed).scope(Gpu).space(g), "%r0", "[%rd1]", &["%r2"])?,
                    p.atom(&am(Add, AtomType::U32).order(Relaxed).scope(System).space(g).cache_hint("%rd3"), "%r0", "[%rd1]", &["%r2"])?,
                    p.atom(&am(Cas, AtomType::B16).order(Acquire).scope(Cta).space(AtomSpace::Shared), "%rs0", "[%r1]", &["%rs1", "%rs2"])?,
                    p.red(&am(Add, AtomType::F16x2).space(g), "[%rd1]", "%r2")?,
                ])
            },
        },
        // ----- D6 lowering of read-modify-writes -------------------------------------------
        Golden {
            name: "seq_cst_rmw_is_fence_plus_acquire",
            target: SM90,
            version: "7.8",
            expect: &[
                "fence.sc.gpu;",
                "atom.acquire.gpu.add.u32.global %r0, [%rd1], %r2;",
                "fence.sc.gpu;",
                "atom.acquire.add.u32.global %r0, [%rd1], %r2;",
                "fence.sc.cta;",
                "atom.acquire.cta.add.u32.shared %r0, [%r1], %r2;",
                "fence.sc.sys;",
                "atom.acquire.sys.cas.b32.global %r0, [%rd1], %r2, %r3;",
            ],
            emit: |p| {
                let g = AtomSpace::Global;
                let mut v = p.atomic_rmw(&am(Add, AtomType::U32).order(SeqCst).scope(Gpu).space(g), Some("%r0"), "[%rd1]", &["%r2"])?;
                v.extend(p.atomic_rmw(&am(Add, AtomType::U32).order(SeqCst).space(g), Some("%r0"), "[%rd1]", &["%r2"])?);
                v.extend(p.atomic_rmw(
                    &am(Add, AtomType::U32).order(SeqCst).scope(Cta).space(AtomSpace::Shared),
                    Some("%r0"),
                    "[%r1]",
                    &["%r2"],
                )?);
                let cas = AtomicModifier::cas_from_ir(DType::F32, Ordering::SeqCst, Scope::System, AddressSpace::Global)?;
                v.extend(p.atomic_rmw(&cas, Some("%r0"), "[%rd1]", &["%r2", "%r3"])?);
                Ok(v)
            },
        },
        Golden {
            name: "unused_result_red_only_when_legal",
            target: SM90,
            version: "7.8",
            expect: &[
                "red.release.gpu.add.u32.global [%rd1], %r2;",
                "atom.acquire.gpu.add.u32.global _, [%rd1], %r2;",
                "fence.sc.gpu;",
                "atom.acquire.gpu.add.u32.global _, [%rd1], %r2;",
                "atom.exch.b32.global _, [%rd1], %r2;",
            ],
            emit: |p| {
                let m = |o| am(Add, AtomType::U32).order(o).scope(Gpu).space(AtomSpace::Global);
                let mut v = p.atomic_rmw(&m(Release), None, "[%rd1]", &["%r2"])?;
                v.extend(p.atomic_rmw(&m(Acquire), None, "[%rd1]", &["%r2"])?);
                v.extend(p.atomic_rmw(&m(SeqCst), None, "[%rd1]", &["%r2"])?);
                v.extend(p.atomic_rmw(&am(Exch, AtomType::B32).space(AtomSpace::Global), None, "[%rd1]", &["%r2"])?);
                Ok(v)
            },
        },
        Golden {
            name: "from_ir_mapping",
            target: SM90,
            version: "7.8",
            expect: &[
                "red.add.u32.global [%rd1], %r2;",
                "atom.add.u32.global %r0, [%rd1], %r2;",
                "atom.acq_rel.cta.add.u64.shared %rd0, [%r1], %rd2;",
                "atom.relaxed.sys.and.b32.global %r0, [%rd1], %r2;",
                "atom.min.s32.global %r0, [%rd1], %r2;",
                "atom.max.u64.global %rd0, [%rd1], %rd2;",
                "atom.release.cta.exch.b64.shared %rd0, [%r1], %rd2;",
            ],
            emit: |p| {
                let ir = |op, d, o, s, sp| AtomicModifier::from_ir(op, d, o, s, sp);
                let (g, sh) = (AddressSpace::Global, AddressSpace::Shared);
                let add = ir(AtomicOp::Add, DType::I32, Ordering::Relaxed, Scope::Device, g)?;
                let mut v = p.atomic_rmw(&add, None, "[%rd1]", &["%r2"])?;
                v.extend(p.atomic_rmw(&add, Some("%r0"), "[%rd1]", &["%r2"])?);
                let add64 = ir(AtomicOp::Add, DType::I64, Ordering::AcqRel, Scope::Block, sh)?;
                v.extend(p.atomic_rmw(&add64, Some("%rd0"), "[%r1]", &["%rd2"])?);
                let and = ir(AtomicOp::And, DType::I32, Ordering::Relaxed, Scope::System, g)?;
                v.extend(p.atomic_rmw(&and, Some("%r0"), "[%rd1]", &["%r2"])?);
                let min = ir(AtomicOp::Min, DType::I32, Ordering::Relaxed, Scope::Device, g)?;
                v.extend(p.atomic_rmw(&min, Some("%r0"), "[%rd1]", &["%r2"])?);
                let max = ir(AtomicOp::Max, DType::U64, Ordering::Relaxed, Scope::Device, g)?;
                v.extend(p.atomic_rmw(&max, Some("%rd0"), "[%rd1]", &["%rd2"])?);
                let exch = ir(AtomicOp::Exchange, DType::F64, Ordering::Release, Scope::Subgroup, sh)?;
                v.extend(p.atomic_rmw(&exch, Some("%rd0"), "[%r1]", &["%rd2"])?);
                Ok(v)
            },
        },
        // ----- ordered loads and stores (LoadKind/StoreKind::Ordered) ------------------------
        Golden {
            name: "ordered_ld_st",
            target: SM90,
            version: "7.8",
            expect: &[
                "ld.relaxed.gpu.global.u32 %r0, [%rd1];",
                "ld.acquire.cta.shared.b64 %rd0, [%r1];",
                "fence.sc.sys;",
                "ld.acquire.sys.global.u32 %r0, [%rd1];",
                "ld.relaxed.cta.global.u8 %rs0, [%rd1];",
                "st.release.gpu.global.u32 [%rd1], %r0;",
                "fence.sc.cta;",
                "st.release.cta.u32 [%rd1], %r0;",
                "st.relaxed.cluster.shared::cluster.u32 [%r1], %r0;",
                "ld.acquire.cta.shared::cta.u32 %r0, [%r1];",
            ],
            emit: |p| {
                let (g, sh) = (AtomSpace::Global, AtomSpace::Shared);
                let mut v = p.ld_ordered(Relaxed, Device, g, "u32", "%r0", "[%rd1]")?;
                v.extend(p.ld_ordered(Acquire, Cta, sh, "b64", "%rd0", "[%r1]")?);
                v.extend(p.ld_ordered(SeqCst, System, g, "u32", "%r0", "[%rd1]")?);
                // PTX has no thread scope: .cta
                v.extend(p.ld_ordered(Relaxed, NvptxScope::Thread, g, "u8", "%rs0", "[%rd1]")?);
                v.extend(p.st_ordered(Release, Gpu, g, "u32", "[%rd1]", "%r0")?);
                v.extend(p.st_ordered(SeqCst, Cta, AtomSpace::Generic, "u32", "[%rd1]", "%r0")?);
                v.extend(p.st_ordered(Relaxed, NvptxScope::Cluster, AtomSpace::SharedCluster, "u32", "[%r1]", "%r0")?);
                v.extend(p.ld_ordered(Acquire, Cta, AtomSpace::SharedCta, "u32", "%r0", "[%r1]")?);
                Ok(v)
            },
        },
        Golden {
            name: "ordered_ld_st_sm80",
            target: SM80,
            version: "7.0",
            expect: &["ld.acquire.gpu.global.f32 %f0, [%rd1];", "st.relaxed.sys.global.f64 [%rd1], %fd0;"],
            emit: |p| {
                let mut v = p.ld_ordered(Acquire, Device, AtomSpace::Global, "f32", "%f0", "[%rd1]")?;
                v.extend(p.st_ordered(Relaxed, System, AtomSpace::Global, "f64", "[%rd1]", "%fd0")?);
                Ok(v)
            },
        },
        // ----- forms only qd::nv reaches (backend/ptx/nvops.rs) ---------------------------
        Golden {
            name: "createpolicy_evict_last",
            target: SM80,
            version: "7.4",
            expect: &["createpolicy.fractional.L2::evict_last.b64 %rd1, 1.0;"],
            emit: |p| one(p.createpolicy(qd::ir::L2Policy::EvictLast, "%rd1")),
        },
        Golden {
            name: "ld_l2_cache_hint",
            target: SM80,
            version: "7.4",
            expect: &["ld.global.L2::cache_hint.u32 %r1, [%rd2], %rd1;"],
            emit: |p| one(p.ld_cache_hint(AtomSpace::Global, "u32", "%r1", "[%rd2]", "%rd1")),
        },
        Golden {
            name: "barrier_cluster_release_acquire",
            target: SM90,
            version: "8.0",
            expect: &["barrier.cluster.arrive.release;", "barrier.cluster.wait.acquire;"],
            emit: |p| p.cluster_sync(),
        },
        Golden {
            name: "mapa_shared_cluster",
            target: SM90,
            version: "7.8",
            expect: &["mapa.shared::cluster.u64 %rd1, %rd2, %r1;"],
            emit: |p| one(p.mapa_shared_cluster("%rd1", "%rd2", "%r1")),
        },
        Golden {
            name: "nvvm_breakpoint",
            target: SM80,
            version: "7.0",
            expect: &[
                "mov.u64 %rd1, %globaltimer;",
                "$L_bp:",
                "mov.u64 %rd2, %globaltimer;",
                "sub.u64 %rd2, %rd2, %rd1;",
                "setp.lt.u64 %p1, %rd2, 1000;",
                "@%p1 bra $L_bp;",
                "trap;",
            ],
            emit: |p| p.breakpoint("%rd1", "%rd2", "%p1", "$L_bp"),
        },
    ]
}

fn golden(name: &str) -> Golden {
    goldens().into_iter().find(|g| g.name == name).unwrap_or_else(|| panic!("no golden named {name}"))
}

/// Prints a golden and returns its lines and the `.version` the printer asks for.
fn print(g: &Golden) -> (Vec<String>, PtxVersion) {
    let mut p = PtxPrinter::new(g.target);
    let lines = (g.emit)(&mut p).unwrap_or_else(|e| panic!("{}: printer refused: {e}", g.name));
    let version = p.version().unwrap_or_else(|e| panic!("{}: version: {e}", g.name));
    (lines, version)
}

fn check(name: &str) {
    let g = golden(name);
    let (lines, version) = print(&g);
    assert_eq!(lines, g.expect, "golden {name}");
    if !g.version.is_empty() {
        assert_eq!(version.to_string(), g.version, "golden {name}: .version");
    }
}

// ----- the seed's literal lines, byte for byte ------------------------------------------------

#[test]
fn seed_atom_relaxed_cta_add_u32_shared() {
    check("seed_atom_shared_add");
}

#[test]
fn seed_red_gpu_add_f32_global() {
    check("seed_red_global_add");
    check("seed_red_via_unused_result");
}

#[test]
fn seed_atom_acquire_gpu_cas_b64_global() {
    check("seed_atom_acquire_cas");
}

#[test]
fn seed_redux_sync_add_s32() {
    check("seed_redux_add");
}

#[test]
fn seed_shfl_sync_bfly_with_predicate() {
    check("seed_shfl_bfly");
}

#[test]
fn seed_vote_sync_ballot() {
    check("seed_vote_ballot");
}

#[test]
fn seed_match_sync_any() {
    check("seed_match_any");
}

#[test]
fn seed_sreg_mov_tid_x() {
    check("seed_sreg_tid_x");
}

#[test]
fn seed_fence_lines() {
    for name in [
        "seed_fence_acq_rel_cta",
        "seed_fence_sc_gpu",
        "seed_fence_acquire_scoped",
        "fence_acquire_falls_back_below_sm90",
        "fence_sc_acq_rel_all_scopes",
        "seed_membar",
        "seed_fence_mbarrier_init",
        "fence_proxy_alias",
        "fence_proxy_async",
        "fence_proxy_tensormap",
        "fence_sync_restrict",
        "tensormap_cp_fenceproxy",
    ] {
        check(name);
    }
}

#[test]
fn every_golden_matches() {
    for g in goldens() {
        check(g.name);
    }
}

#[test]
fn golden_names_are_unique() {
    let mut names: Vec<_> = goldens().iter().map(|g| g.name).collect();
    names.sort();
    let n = names.len();
    names.dedup();
    assert_eq!(names.len(), n);
}

// ----- modifier word and scope mapping --------------------------------------------------------

#[test]
fn pack_atomic_modifier_matches_the_seed() {
    assert_eq!(pack_atomic_modifier(Relaxed, Cta, false), 1 | (1 << 4));
    assert_eq!(pack_atomic_modifier(Acquire, System, false), 2 | (2 << 4));
    assert_eq!(pack_atomic_modifier(Release, NvptxScope::Cluster, false), 3 | (3 << 4));
    assert_eq!(pack_atomic_modifier(AcqRel, Device, false), 4);
    assert_eq!(pack_atomic_modifier(SeqCst, NvptxScope::Thread, false), 5);
    assert_eq!(pack_atomic_modifier(SeqCst, Gpu, false), 5);
    assert_eq!(pack_atomic_modifier(Relaxed, Cta, true), 1 | (1 << 4) | (1 << 9));
    // The record packs its default ordering as 0 and keeps the cluster-tail bit.
    let m = am(Add, AtomType::U32).scope(Cta).cluster_tail(true);
    assert_eq!(m.packed(), (1 << 4) | (1 << 9));
    assert_eq!(unpack_atomic_modifier(m.packed()), (None, Cta, true));
    let m = am(Add, AtomType::U32).order(AcqRel).scope(System);
    assert_eq!(unpack_atomic_modifier(m.packed()), (Some(AcqRel), System, false));
}

#[test]
fn syncscope_mapping() {
    assert_eq!(syncscope_from_llvm(""), Ok(System));
    assert_eq!(syncscope_from_llvm("singlethread"), Ok(NvptxScope::Thread));
    assert_eq!(syncscope_from_llvm("block"), Ok(Cta));
    assert_eq!(syncscope_from_llvm("cluster"), Ok(NvptxScope::Cluster));
    assert_eq!(syncscope_from_llvm("device"), Ok(Device));
    // D7: the implicit device scope prints no token on atom/red, `.gpu` on fences.
    assert_eq!(Device.atom_token(), None);
    assert_eq!(Device.fence_token(), Some(".gpu"));
    assert_eq!(Gpu.atom_token(), Some(".gpu"));
    assert_eq!(System.atom_token(), Some(".sys"));
    assert_eq!(NvptxScope::Thread.atom_token(), None);
}

#[test]
fn singlethread_fence_prints_nothing() {
    let mut p = PtxPrinter::new(SM90);
    assert_eq!(p.fence(SeqCst, NvptxScope::Thread), Ok(None));
    assert_eq!(p.fence(Acquire, syncscope_from_llvm("singlethread").unwrap()), Ok(None));
}

#[test]
fn token_order_is_d7() {
    // stem, ordering, scope, operation, .noftz, vector, type, space, cache hint.
    let m = am(Add, AtomType::BF16x2)
        .order(Release)
        .scope(System)
        .vector(VectorWidth::V2)
        .space(AtomSpace::Global)
        .cache_hint("%rd9");
    let line = PtxPrinter::new(SM90).atom(&m, "{%r0,%r1}", "[%rd1]", &["{%r2,%r3}"]).unwrap();
    assert_eq!(line, "atom.release.sys.add.noftz.v2.bf16x2.global.L2::cache_hint {%r0,%r1}, [%rd1], {%r2,%r3}, %rd9;");
    let tokens: Vec<&str> = line.split(' ').next().unwrap().split('.').collect();
    assert_eq!(tokens, ["atom", "release", "sys", "add", "noftz", "v2", "bf16x2", "global", "L2::cache_hint"]);
}

#[test]
fn hex_immediates_are_uppercase() {
    assert_eq!(hex_imm(0xffff_ffff), "0xFFFFFFFF");
    assert_eq!(hex_imm(0x1f), "0x1F");
    assert_eq!(FULL_MASK, "0xFFFFFFFF");
    assert_eq!(ShflMode::Up.c_operand(16), 0x1000);
    assert_eq!(ShflMode::Down.c_operand(16), 0x101F);
    assert_eq!(ShflMode::Idx.c_operand(8), 0x181F);
}

// ----- targets and .version (D7) --------------------------------------------------------------

#[test]
fn target_floors_and_names() {
    assert_eq!(SM90.floor().unwrap(), PtxVersion::new(7, 8));
    assert_eq!(PtxTarget::arch_specific(90).floor().unwrap(), PtxVersion::new(8, 0));
    assert_eq!(SM80.floor().unwrap(), PtxVersion::new(7, 0));
    assert_eq!(SM100A.floor().unwrap(), PtxVersion::new(8, 6));
    assert_eq!(PtxTarget::parse("sm_100a").unwrap(), SM100A);
    assert_eq!(PtxTarget::parse("90").unwrap(), SM90);
    assert_eq!(SM100A.to_string(), "sm_100a");
    assert_eq!(module_header(PtxVersion::new(9, 0), SM90), ".version 9.0\n.target sm_90\n.address_size 64\n");
}

#[test]
fn version_is_the_highest_floor() {
    assert_eq!(required_version(SM90, []).unwrap().to_string(), "7.8");
    assert_eq!(required_version(SM90, [Feature::AtomVector, Feature::AtomB128]).unwrap().to_string(), "8.3");
    assert_eq!(required_version(SM80, [Feature::AtomCacheHint]).unwrap().to_string(), "7.4");
    assert_eq!(required_version(SM100A, [Feature::ReduxF32]).unwrap().to_string(), "8.6");
    assert!(required_version(SM80, [Feature::ClusterScope]).is_err());
    // The printer accumulates what it printed.
    let mut p = PtxPrinter::new(SM90);
    assert_eq!(p.header().unwrap(), ".version 7.8\n.target sm_90\n.address_size 64\n");
    p.atom(&am(Cas, AtomType::B128).space(AtomSpace::Global), "%q0", "[%rd1]", &["%q1", "%q2"]).unwrap();
    assert_eq!(p.version().unwrap().to_string(), "8.3");
    p.fence(Acquire, Gpu).unwrap();
    assert_eq!(p.header().unwrap(), ".version 8.6\n.target sm_90\n.address_size 64\n");
}

#[test]
fn version_cap_refuses_or_falls_back() {
    let mut p = PtxPrinter::with_cap(SM90, PtxVersion::new(8, 0));
    // Split fences need 8.6: fall back to acq_rel, as LLVM does.
    assert_eq!(p.fence(Acquire, Cta).unwrap().as_deref(), Some("fence.acq_rel.cta;"));
    let e = p.atom(&am(Cas, AtomType::B128), "%q0", "[%rd1]", &["%q1", "%q2"]).unwrap_err();
    assert!(matches!(e, PtxError::VersionCap { .. }), "{e}");
    assert!(e.to_string().contains("8.3"), "{e}");
    assert!(matches!(
        capped_version(SM100A, [Feature::ReduxF32], PtxVersion::new(8, 5)),
        Err(PtxError::VersionCap { .. })
    ));
}

// ----- one test per diagnostic ----------------------------------------------------------------

fn msg(r: Result<impl std::fmt::Debug, PtxError>) -> String {
    r.expect_err("expected a diagnostic").to_string()
}

#[test]
fn diag_unsupported_ordering_for_atomic_rmw() {
    for name in ["unordered", "not_atomic", "consume"] {
        let e = msg(AtomicOrder::from_llvm_rmw(name));
        assert!(e.contains("unsupported ordering for nvvm.atomic.rmw"), "{e}");
    }
    assert_eq!(AtomicOrder::from_llvm_rmw("monotonic"), Ok(Relaxed));
    assert_eq!(AtomicOrder::from_llvm_rmw("seq_cst"), Ok(SeqCst));
    // atom itself has no .sc: a seq_cst record handed straight to `atom` is refused.
    let e = msg(PtxPrinter::new(SM90).atom(&am(Add, AtomType::U32).order(SeqCst), "%r0", "[%rd1]", &["%r2"]));
    assert!(e.contains("unsupported ordering for nvvm.atomic.rmw"), "{e}");
}

#[test]
fn diag_invalid_memory_model_ordering_for_red() {
    for o in [Acquire, AcqRel, SeqCst] {
        let e = msg(PtxPrinter::new(SM90).red(&am(Add, AtomType::U32).order(o), "[%rd1]", "%r2"));
        assert!(e.contains("Invalid memory model ordering for nvvm.red"), "{e}");
    }
}

#[test]
fn diag_invalid_reduction_op_for_red() {
    for (op, ty) in [(Cas, AtomType::B32), (Exch, AtomType::B64)] {
        let e = msg(PtxPrinter::new(SM90).red(&am(op, ty), "[%rd1]", "%r2"));
        assert!(e.contains("Invalid reduction op for nvvm.red"), "{e}");
    }
}

#[test]
fn diag_invalid_reduction_type_for_red() {
    for (op, ty) in [
        (Add, AtomType::B32),
        (Add, AtomType::S64),
        (And, AtomType::U32),
        (Inc, AtomType::S32),
        (Min, AtomType::F32),
        (Max, AtomType::F16),
        (Add, AtomType::B128),
    ] {
        let e = msg(PtxPrinter::new(SM90).red(&am(op, ty), "[%rd1]", "%r2"));
        assert!(e.contains("Invalid reduction type for nvvm.red"), "{op:?} {ty:?}: {e}");
    }
}

#[test]
fn diag_unsupported_syncscope() {
    for name in ["agent", "workgroup", "wavefront", "gpu", "system"] {
        let e = msg(syncscope_from_llvm(name));
        assert!(e.contains("unsupported NVPTX synchronization scope"), "{e}");
    }
}

#[test]
fn diag_fence_ordering() {
    let e = msg(PtxPrinter::new(SM90).fence(Relaxed, Cta));
    assert!(e.contains("fence ordering must be acquire, release, acq_rel, or seq_cst"), "{e}");
}

#[test]
fn diag_cluster_tail_rejected() {
    let m = am(Add, AtomType::U32).order(Relaxed).scope(Cta).space(AtomSpace::Shared).cluster_tail(true);
    let mut p = PtxPrinter::new(SM90);
    assert_eq!(p.atom(&m, "%r0", "[%r1]", &["%r2"]), Err(PtxError::ClusterTailScope));
    assert_eq!(p.red(&m, "[%r1]", "%r2"), Err(PtxError::ClusterTailScope));
    assert!(PtxError::ClusterTailScope.to_string().contains(".cta::cluster"));
}

#[test]
fn diag_cache_hint_scope() {
    let mut p = PtxPrinter::new(SM90);
    for s in [NvptxScope::Cluster, Gpu, Device] {
        let m = am(Add, AtomType::U32).scope(s).space(AtomSpace::Global).cache_hint("%rd5");
        let e = p.atom(&m, "%r0", "[%rd1]", &["%r2"]).unwrap_err();
        assert!(matches!(e, PtxError::CacheHintScope { .. }), "{e}");
    }
    // cta and sys are accepted
    for s in [Cta, System] {
        let m = am(Add, AtomType::U32).scope(s).space(AtomSpace::Global).cache_hint("%rd5");
        assert!(p.atom(&m, "%r0", "[%rd1]", &["%r2"]).is_ok());
    }
}

#[test]
fn diag_cache_hint_form() {
    let mut p = PtxPrinter::new(SM90);
    let cas = am(Cas, AtomType::B32).scope(Cta).space(AtomSpace::Global).cache_hint("%rd5");
    assert!(matches!(p.atom(&cas, "%r0", "[%rd1]", &["%r2", "%r3"]), Err(PtxError::CacheHintForm { .. })));
    let sh = am(Add, AtomType::U32).scope(Cta).space(AtomSpace::Shared).cache_hint("%rd5");
    assert!(matches!(p.atom(&sh, "%r0", "[%r1]", &["%r2"]), Err(PtxError::CacheHintForm { .. })));
}

#[test]
fn diag_invalid_atom_type() {
    let mut p = PtxPrinter::new(SM90);
    for (op, ty) in [
        (Add, AtomType::B32),
        (Add, AtomType::S64),
        (And, AtomType::U32),
        (Exch, AtomType::U32),
        (Cas, AtomType::U32),
        (Inc, AtomType::S32),
        (Min, AtomType::F32),
        (Min, AtomType::F16),
    ] {
        let args: &[&str] = if op == Cas { &["%r2", "%r3"] } else { &["%r2"] };
        let e = p.atom(&am(op, ty), "%r0", "[%rd1]", args).unwrap_err();
        assert!(matches!(e, PtxError::InvalidAtomType { .. }), "{op:?} {ty:?}: {e}");
    }
    // vector forms: f32 min, v8 f32 add, f64 vector
    for (op, ty, v) in [
        (Min, AtomType::F32, VectorWidth::V2),
        (Add, AtomType::F32, VectorWidth::V8),
        (Add, AtomType::F64, VectorWidth::V2),
    ] {
        let e = p.atom(&am(op, ty).vector(v), "{%f0,%f1}", "[%rd1]", &["{%f2,%f3}"]).unwrap_err();
        assert!(matches!(e, PtxError::InvalidAtomType { .. }), "{e}");
    }
}

#[test]
fn diag_needs_cas_loop() {
    let g = AddressSpace::Global;
    for (op, d) in [
        (AtomicOp::Mul, DType::I32),
        (AtomicOp::Min, DType::F32),
        (AtomicOp::Add, DType::I16),
        (AtomicOp::And, DType::F32),
    ] {
        let e = AtomicModifier::from_ir(op, d, Ordering::Relaxed, Scope::Device, g).unwrap_err();
        assert!(matches!(e, PtxError::NeedsCasLoop { .. }), "{e}");
    }
    assert!(AtomicModifier::cas_from_ir(DType::U8, Ordering::Relaxed, Scope::Device, g).is_err());
}

#[test]
fn diag_invalid_space() {
    let mut p = PtxPrinter::new(SM90);
    let local =
        AtomicModifier::from_ir(AtomicOp::Add, DType::I32, Ordering::Relaxed, Scope::Device, AddressSpace::Local)
            .unwrap();
    assert!(matches!(p.atom(&local, "%r0", "[%rd1]", &["%r2"]), Err(PtxError::InvalidSpace { .. })));
    let vec_shared = am(Add, AtomType::F32).vector(VectorWidth::V2).space(AtomSpace::Shared);
    assert!(matches!(p.atom(&vec_shared, "{%f0,%f1}", "[%r1]", &["{%f2,%f3}"]), Err(PtxError::InvalidSpace { .. })));
}

#[test]
fn diag_operand_count() {
    let mut p = PtxPrinter::new(SM90);
    assert!(matches!(p.atom(&am(Cas, AtomType::B32), "%r0", "[%rd1]", &["%r2"]), Err(PtxError::InvalidForm { .. })));
    assert!(matches!(
        p.atom(&am(Add, AtomType::U32), "%r0", "[%rd1]", &["%r2", "%r3"]),
        Err(PtxError::InvalidForm { .. })
    ));
}

#[test]
fn diag_target_gates() {
    let mut p80 = PtxPrinter::new(SM80);
    let e = p80.atom(&am(Add, AtomType::U32).scope(NvptxScope::Cluster), "%r0", "[%rd1]", &["%r2"]).unwrap_err();
    assert!(matches!(e, PtxError::TargetTooOld { min_sm: 90, .. }), "{e}");
    assert!(e.to_string().contains("sm_90"), "{e}");
    // no pre-Hopper fallback for cluster fences
    assert!(matches!(p80.fence(SeqCst, NvptxScope::Cluster), Err(PtxError::TargetTooOld { .. })));
    assert!(matches!(
        p80.atom(&am(Cas, AtomType::B128), "%q0", "[%rd1]", &["%q1", "%q2"]),
        Err(PtxError::TargetTooOld { .. })
    ));
    assert!(matches!(p80.red(&am(Add, AtomType::BF16), "[%rd1]", "%rs1"), Err(PtxError::TargetTooOld { .. })));
    assert!(matches!(p80.elect_sync("%r0", "%p0", FULL_MASK), Err(PtxError::TargetTooOld { .. })));
    assert!(matches!(p80.fence_mbarrier_init(), Err(PtxError::TargetTooOld { .. })));
    assert!(matches!(
        p80.mbarrier_try_wait(&MbarrierModifier::shared(), true, "%p1", "[%r1]", "%r2", None),
        Err(PtxError::TargetTooOld { .. })
    ));
    assert!(matches!(p80.sreg_read("%r0", NvSreg::ClusterCtarank), Err(PtxError::TargetTooOld { .. })));
    // redux .f32 only on sm_100a / sm_103a
    for t in [SM90, PtxTarget::sm(100), PtxTarget::arch_specific(120), PtxTarget::arch_specific(90)] {
        let e = PtxPrinter::new(t).redux_sync(ReduxKind::FMin, ReduxType::F32, "%f0", "%f1", FULL_MASK).unwrap_err();
        assert!(matches!(e, PtxError::ArchSpecific { .. }), "{t}: {e}");
    }
    assert!(PtxPrinter::new(PtxTarget::arch_specific(103))
        .redux_sync(ReduxKind::FMax, ReduxType::F32, "%f0", "%f1", FULL_MASK)
        .is_ok());
    // integer redux needs sm_80; below sm_70 fences are membar
    let mut p75 = PtxPrinter::new(PtxTarget::sm(75));
    assert!(matches!(
        p75.redux_sync(ReduxKind::Add, ReduxType::S32, "%r0", "%r1", FULL_MASK),
        Err(PtxError::TargetTooOld { .. })
    ));
    let mut p60 = PtxPrinter::new(PtxTarget::sm(60));
    assert_eq!(p60.fence(SeqCst, Device).unwrap().as_deref(), Some("membar.gl;"));
    assert_eq!(p60.fence(AcqRel, Cta).unwrap().as_deref(), Some("membar.cta;"));
}

#[test]
fn diag_unknown_target() {
    for t in ["sm_101", "sm_80a", "sm_9x", "compute_90"] {
        assert!(matches!(PtxTarget::parse(t), Err(PtxError::UnknownTarget { .. })), "{t}");
    }
}

#[test]
fn diag_mbarrier_rules() {
    let mut p = PtxPrinter::new(SM90);
    let s = MbarrierModifier::shared();
    let only_order = MbarrierModifier { order: Some(Release), ..s };
    assert!(matches!(p.mbarrier_arrive(&only_order, "%rd1", "[%r1]", None), Err(PtxError::InvalidForm { .. })));
    let only_scope = MbarrierModifier { scope: Some(Cta), ..s };
    assert!(matches!(p.mbarrier_arrive(&only_scope, "%rd1", "[%r1]", None), Err(PtxError::InvalidForm { .. })));
    assert!(matches!(
        p.mbarrier_arrive(&s.sem(Release, Gpu), "%rd1", "[%r1]", None),
        Err(PtxError::InvalidScope { .. })
    ));
    assert!(matches!(
        p.mbarrier_arrive(&s.sem(Acquire, Cta), "%rd1", "[%r1]", None),
        Err(PtxError::InvalidForm { .. })
    ));
    assert!(p.mbarrier_test_wait(&s.sem(Release, Cta), false, "%p1", "[%r1]", "%rd1").is_err());
    assert!(p.mbarrier_arrive_no_complete(&s.sem(Release, NvptxScope::Cluster), "%rd1", "[%r1]", "%r2").is_err());
    let clu = MbarrierModifier::new(MbarrierSpace::SharedCluster).sem(Release, NvptxScope::Cluster);
    assert!(p.mbarrier_arrive(&clu, "%rd1", "[%r1]", None).is_err(), "shared::cluster arrive must use _");
    assert!(matches!(
        p.mbarrier_test_wait(&MbarrierModifier::new(MbarrierSpace::SharedCluster), true, "%p1", "[%r1]", "%r2"),
        Err(PtxError::InvalidSpace { .. })
    ));
    assert!(matches!(p.mbarrier_init(MbarrierSpace::SharedCluster, "[%r1]", "1"), Err(PtxError::InvalidSpace { .. })));
    assert!(p.mbarrier_expect_tx(&s.sem(Release, Cta), "[%r1]", "%r2").is_err());
}

#[test]
fn diag_warp_rules() {
    let mut p = PtxPrinter::new(SM90);
    assert!(matches!(
        p.match_sync(MatchMode::Any, MatchType::B32, "%r0", Some("%p1"), "%r1", FULL_MASK),
        Err(PtxError::InvalidForm { .. })
    ));
    for (k, t) in [
        (ReduxKind::Add, ReduxType::B32),
        (ReduxKind::And, ReduxType::U32),
        (ReduxKind::UMin, ReduxType::S32),
        (ReduxKind::Add, ReduxType::F32),
        (ReduxKind::FMin, ReduxType::U32),
    ] {
        assert!(
            matches!(p.redux_sync(k, t, "%r0", "%r1", FULL_MASK), Err(PtxError::InvalidForm { .. })),
            "{k:?} {t:?}"
        );
    }
}

#[test]
fn diag_barrier_and_fence_operands() {
    let mut p = PtxPrinter::new(SM90);
    assert!(p.bar_sync(16, None).is_err());
    assert!(p.bar_sync(0, Some(33)).is_err());
    assert!(p.bar_sync(0, Some(0)).is_err());
    assert!(p.fence_proxy_tensormap_acquire(Gpu, "[%rd1]", 64).is_err());
    assert!(p.tensormap_cp_fenceproxy(NvptxScope::Thread, "[%rd1]", "[%rd2]", 128).is_err());
    assert!(p.fence_sync_restrict(AcqRel).is_err());
    assert!(ProxyKind::parse("async.shared").is_err());
}

#[test]
fn diag_sreg_operands() {
    let mut p = PtxPrinter::new(SM90);
    assert!(p.sreg_read("%r0", NvSreg::Tid(3)).is_err());
    assert!(p.sreg_read("%r0", NvSreg::EnvReg(32)).is_err());
    assert!(is_thread_or_cta_sreg(NvSreg::Nctaid(2)));
    assert!(!is_thread_or_cta_sreg(NvSreg::ClusterId(0)));
}

#[test]
fn diag_ordered_ld_st() {
    let mut p = PtxPrinter::new(SM90);
    for o in [Release, AcqRel] {
        let e = p.ld_ordered(o, Gpu, AtomSpace::Global, "u32", "%r0", "[%rd1]").unwrap_err();
        assert!(matches!(e, PtxError::InvalidForm { .. }), "{e}");
        assert!(e.to_string().contains("a load cannot be"), "{e}");
    }
    for o in [Acquire, AcqRel] {
        let e = p.st_ordered(o, Gpu, AtomSpace::Global, "u32", "[%rd1]", "%r0").unwrap_err();
        assert!(e.to_string().contains("a store cannot be"), "{e}");
    }
    assert!(matches!(
        p.ld_ordered(Relaxed, Cta, AtomSpace::Local, "u32", "%r0", "[%rd1]"),
        Err(PtxError::InvalidSpace { .. })
    ));
    assert!(matches!(
        p.st_ordered(Release, Cta, AtomSpace::Local, "u32", "[%rd1]", "%r0"),
        Err(PtxError::InvalidSpace { .. })
    ));
    // Nothing was recorded by the refusals.
    assert!(p.features().is_empty(), "{:?}", p.features());
    let e = PtxPrinter::new(SM80)
        .ld_ordered(Acquire, NvptxScope::Cluster, AtomSpace::Global, "u32", "%r0", "[%rd1]")
        .unwrap_err();
    assert!(matches!(e, PtxError::TargetTooOld { min_sm: 90, .. }), "{e}");
}

/// Before sm_70 there is no `.relaxed`/`.acquire`/`.release`: ordered loads and stores are
/// `.volatile`, with `membar` where they acquire or release. (ptxas 13.0 no longer assembles
/// sm_60, so this is checked as text only.)
#[test]
fn ordered_ld_st_fall_back_to_volatile_below_sm70() {
    let mut p = PtxPrinter::new(PtxTarget::sm(60));
    let mut v = p.ld_ordered(Relaxed, Device, AtomSpace::Global, "u32", "%r0", "[%rd1]").unwrap();
    v.extend(p.ld_ordered(Acquire, Device, AtomSpace::Global, "u32", "%r0", "[%rd1]").unwrap());
    v.extend(p.ld_ordered(SeqCst, System, AtomSpace::Global, "u32", "%r0", "[%rd1]").unwrap());
    v.extend(p.st_ordered(Release, Cta, AtomSpace::Shared, "u32", "[%r1]", "%r0").unwrap());
    v.extend(p.st_ordered(Relaxed, Device, AtomSpace::Global, "u32", "[%rd1]", "%r0").unwrap());
    assert_eq!(
        v,
        [
            "ld.volatile.global.u32 %r0, [%rd1];",
            "ld.volatile.global.u32 %r0, [%rd1];",
            "membar.gl;",
            "membar.sys;",
            "ld.volatile.global.u32 %r0, [%rd1];",
            "membar.sys;",
            "membar.cta;",
            "st.volatile.shared.u32 [%r1], %r0;",
            "st.volatile.global.u32 [%rd1], %r0;",
        ]
    );
    assert!(!p.features().contains(&Feature::MemorySem));
    assert_eq!(p.version().unwrap().to_string(), "5.0");
}

/// `atom_supported` says when lowering must fall back to a CAS loop: a type the target lacks
/// (bf16 add before sm_90, f16 add before sm_70), never for a form that is simply invalid there.
#[test]
fn atom_supported_follows_target_and_cap() {
    let bf16 = am(Add, AtomType::BF16).space(AtomSpace::Global);
    assert!(PtxPrinter::new(SM90).atom_supported(&bf16));
    assert!(!PtxPrinter::new(SM80).atom_supported(&bf16));
    let cas16 = am(Cas, AtomType::B16).space(AtomSpace::Shared);
    assert!(PtxPrinter::new(SM80).atom_supported(&cas16));
    assert!(!PtxPrinter::new(PtxTarget::sm(60)).atom_supported(&cas16));
    // seq_cst is checked as its acquire half (atomic_rmw prints fence.sc + atom.acquire).
    assert!(PtxPrinter::new(SM80).atom_supported(&am(Add, AtomType::U32).order(SeqCst).scope(Gpu)));
    // Over the version cap: b128 CAS needs PTX 8.3.
    let b128 = am(Cas, AtomType::B128).space(AtomSpace::Global);
    assert!(PtxPrinter::new(SM90).atom_supported(&b128));
    assert!(!PtxPrinter::with_cap(SM90, PtxVersion::new(8, 0)).atom_supported(&b128));
    // Invalid records are not "supported" either; from_ir's NeedsCasLoop covers the IR's cases.
    assert!(!PtxPrinter::new(SM90).atom_supported(&am(Add, AtomType::U32).space(AtomSpace::Local)));
    let p = PtxPrinter::new(SM90);
    assert!(p.features().is_empty(), "atom_supported records nothing");
}

// ----- D9: ptxas ----------------------------------------------------------------------------

use qd_testkit::Ptxas;

/// Assembles `text` for `target` with the kit's ptxas (D9); `Err` holds ptxas's message.
fn assemble(ptxas: &Ptxas, name: &str, target: PtxTarget, text: &str) -> Result<(), String> {
    ptxas.assemble(name, &target.to_string(), text)
}

/// Wraps lines in a minimal kernel with register pools for every class the goldens use.
fn module(version: &str, target: PtxTarget, lines: &[String]) -> String {
    let mut s = format!(".version {version}\n.target {target}\n.address_size 64\n");
    s.push_str(".visible .entry k(.param .u64 p)\n{\n");
    s.push_str("  .reg .pred %p<16>;\n  .reg .b16 %rs<16>;\n  .reg .b32 %r<16>;\n  .reg .b64 %rd<16>;\n");
    s.push_str("  .reg .f32 %f<16>;\n  .reg .f64 %fd<16>;\n");
    let (maj, min) = version.split_once('.').unwrap();
    if (maj.parse::<u32>().unwrap(), min.parse::<u32>().unwrap()) >= (8, 3) {
        s.push_str("  .reg .b128 %q<4>;\n");
    }
    for l in lines {
        s.push_str("  ");
        s.push_str(l);
        s.push('\n');
    }
    s.push_str("  ret;\n}\n");
    s
}

#[test]
fn ptxas_assembles_every_golden() {
    let Some(ptxas) = Ptxas::find() else { return };
    let mut failures = Vec::new();
    let mut count = 0;
    for g in goldens() {
        let (lines, version) = print(&g);
        // The printed .version (D7) must suffice, and so must the highest one ptxas 13.0 takes.
        for v in [version.to_string(), PtxVersion::PTXAS_13_0_MAX.to_string()] {
            count += 1;
            let text = module(&v, g.target, &lines);
            if let Err(e) = assemble(&ptxas, &format!("{}_{}", g.name, v.replace('.', "_")), g.target, &text) {
                failures.push(format!("{} ({}, .version {v}):\n{text}{e}", g.name, g.target));
            }
        }
        // Everything sm_90 accepts must also be accepted by newer targets of the same family.
        if g.target == SM90 {
            count += 1;
            let text = module(&PtxVersion::PTXAS_13_0_MAX.to_string(), SM100A, &lines);
            if let Err(e) = assemble(&ptxas, &format!("{}_sm100a", g.name), SM100A, &text) {
                failures.push(format!("{} (sm_100a):\n{text}{e}", g.name));
            }
        }
    }
    assert!(failures.is_empty(), "ptxas rejected {} of {count} modules:\n{}", failures.len(), failures.join("\n"));
}

/// Forms the printer refuses, spelled out: ptxas must refuse them too (so the refusals are not
/// over-strict guesses), and the printer must refuse its equivalent request.
#[test]
fn ptxas_rejects_what_the_printer_refuses() {
    let mut p = PtxPrinter::new(SM90);
    let refused: Vec<(&str, bool)> = vec![
        (
            "atom.relaxed.cta::cluster.add.u32.shared %r0, [%r1], %r2;",
            p.atom(
                &am(Add, AtomType::U32).order(Relaxed).scope(Cta).space(AtomSpace::Shared).cluster_tail(true),
                "%r0",
                "[%r1]",
                &["%r2"],
            )
            .is_err(),
        ),
        (
            "atom.sc.gpu.add.u32.global %r0, [%rd1], %r2;",
            p.atom(&am(Add, AtomType::U32).order(SeqCst).scope(Gpu), "%r0", "[%rd1]", &["%r2"]).is_err(),
        ),
        (
            "red.acquire.gpu.add.u32.global [%rd1], %r2;",
            p.red(&am(Add, AtomType::U32).order(Acquire).scope(Gpu), "[%rd1]", "%r2").is_err(),
        ),
        (
            "red.acq_rel.gpu.add.u32.global [%rd1], %r2;",
            p.red(&am(Add, AtomType::U32).order(AcqRel).scope(Gpu), "[%rd1]", "%r2").is_err(),
        ),
        ("red.exch.b32.global [%rd1], %r2;", p.red(&am(Exch, AtomType::B32), "[%rd1]", "%r2").is_err()),
        ("red.add.s64.global [%rd1], %rd2;", p.red(&am(Add, AtomType::S64), "[%rd1]", "%rd2").is_err()),
        ("atom.add.b32.global %r0, [%rd1], %r2;", p.atom(&am(Add, AtomType::B32), "%r0", "[%rd1]", &["%r2"]).is_err()),
        ("atom.and.u32.global %r0, [%rd1], %r2;", p.atom(&am(And, AtomType::U32), "%r0", "[%rd1]", &["%r2"]).is_err()),
        (
            "atom.min.noftz.f16.global %rs0, [%rd1], %rs2;",
            p.atom(&am(Min, AtomType::F16), "%rs0", "[%rd1]", &["%rs2"]).is_err(),
        ),
        (
            "atom.cas.b32.global.L2::cache_hint %r0, [%rd1], %r2, %r3, %rd3;",
            p.atom(&am(Cas, AtomType::B32).scope(Cta).cache_hint("%rd3"), "%r0", "[%rd1]", &["%r2", "%r3"]).is_err(),
        ),
        (
            "atom.relaxed.cta.add.u32.shared.L2::cache_hint %r0, [%r1], %r2, %rd3;",
            p.atom(
                &am(Add, AtomType::U32).order(Relaxed).scope(Cta).space(AtomSpace::Shared).cache_hint("%rd3"),
                "%r0",
                "[%r1]",
                &["%r2"],
            )
            .is_err(),
        ),
        (
            "atom.add.v2.f32.shared {%f0,%f1}, [%r1], {%f2,%f3};",
            p.atom(
                &am(Add, AtomType::F32).vector(VectorWidth::V2).space(AtomSpace::Shared),
                "{%f0,%f1}",
                "[%r1]",
                &["{%f2,%f3}"],
            )
            .is_err(),
        ),
        (
            "atom.add.u32.local %r0, [%rd1], %r2;",
            p.atom(&am(Add, AtomType::U32).space(AtomSpace::Local), "%r0", "[%rd1]", &["%r2"]).is_err(),
        ),
        ("fence.relaxed.gpu;", p.fence(Relaxed, Gpu).is_err()),
        (
            // the seed's tensormap.cp_fenceproxy template
            "tensormap.cp_fenceproxy.gpu.tensormap::generic.release.gpu.sync.aligned [%rd1], [%rd2], 128;",
            true,
        ),
        (
            // the seed's fence.proxy acquire template with .sync.aligned
            "fence.proxy.tensormap::generic.acquire.gpu.sync.aligned [%rd1], 128;",
            true,
        ),
        (
            "fence.proxy.tensormap::generic.acquire.gpu [%rd1], 64;",
            p.fence_proxy_tensormap_acquire(Gpu, "[%rd1]", 64).is_err(),
        ),
        (
            "mov.u32 %r0, %warpsize;",
            p.sreg_read("%r0", NvSreg::Warpsize).map(|l| !l.contains("%warpsize")).unwrap_or(false),
        ),
        ("mbarrier.wait.parity.shared.b64 %p1, [%r1], %r2;", true),
        (
            "mbarrier.arrive.release.shared.b64 %rd1, [%r1];",
            p.mbarrier_arrive(
                &MbarrierModifier { order: Some(Release), ..MbarrierModifier::shared() },
                "%rd1",
                "[%r1]",
                None,
            )
            .is_err(),
        ),
        (
            "mbarrier.arrive.noComplete.release.cluster.shared.b64 %rd1, [%r1], %r2;",
            p.mbarrier_arrive_no_complete(
                &MbarrierModifier::shared().sem(Release, NvptxScope::Cluster),
                "%rd1",
                "[%r1]",
                "%r2",
            )
            .is_err(),
        ),
        (
            "mbarrier.arrive.release.cluster.shared::cluster.b64 %rd1, [%r1];",
            p.mbarrier_arrive(
                &MbarrierModifier::new(MbarrierSpace::SharedCluster).sem(Release, NvptxScope::Cluster),
                "%rd1",
                "[%r1]",
                None,
            )
            .is_err(),
        ),
        (
            "match.sync.any.b32 %r0|%p1, %r1, 0xFFFFFFFF;",
            p.match_sync(MatchMode::Any, MatchType::B32, "%r0", Some("%p1"), "%r1", FULL_MASK).is_err(),
        ),
        (
            "redux.sync.add.b32 %r0, %r1, 0xFFFFFFFF;",
            p.redux_sync(ReduxKind::Add, ReduxType::B32, "%r0", "%r1", FULL_MASK).is_err(),
        ),
        (
            "redux.sync.min.f32 %f0, %f1, 0xFFFFFFFF;",
            p.redux_sync(ReduxKind::FMin, ReduxType::F32, "%f0", "%f1", FULL_MASK).is_err(),
        ),
        ("bar.sync 16;", p.bar_sync(16, None).is_err()),
        (
            "ld.release.gpu.global.u32 %r0, [%rd1];",
            p.ld_ordered(Release, Gpu, AtomSpace::Global, "u32", "%r0", "[%rd1]").is_err(),
        ),
        (
            "ld.acq_rel.gpu.global.u32 %r0, [%rd1];",
            p.ld_ordered(AcqRel, Gpu, AtomSpace::Global, "u32", "%r0", "[%rd1]").is_err(),
        ),
        (
            "st.acquire.gpu.global.u32 [%rd1], %r0;",
            p.st_ordered(Acquire, Gpu, AtomSpace::Global, "u32", "[%rd1]", "%r0").is_err(),
        ),
        (
            "ld.relaxed.gpu.local.u32 %r0, [%rd1];",
            p.ld_ordered(Relaxed, Gpu, AtomSpace::Local, "u32", "%r0", "[%rd1]").is_err(),
        ),
        (
            "st.relaxed.cta.local.u32 [%rd1], %r0;",
            p.st_ordered(Relaxed, Cta, AtomSpace::Local, "u32", "[%rd1]", "%r0").is_err(),
        ),
        // seq_cst loads are fence.sc + ld.acquire: there is no ld.sc
        (
            "ld.sc.gpu.global.u32 %r0, [%rd1];",
            p.ld_ordered(SeqCst, Gpu, AtomSpace::Global, "u32", "%r0", "[%rd1]").is_ok_and(|l| l.len() == 2),
        ),
    ];
    for (line, printer_refused) in &refused {
        assert!(printer_refused, "the printer accepted the equivalent of `{line}`");
    }
    let Some(ptxas) = Ptxas::find() else { return };
    let mut accepted = Vec::new();
    for (i, (line, _)) in refused.iter().enumerate() {
        let text = module("9.0", SM90, &[line.to_string()]);
        if assemble(&ptxas, &format!("reject{i}"), SM90, &text).is_ok() {
            accepted.push(*line);
        }
    }
    assert!(accepted.is_empty(), "ptxas accepted forms the printer refuses: {accepted:#?}");
}

/// D7's `.version` is the *highest floor*, not just a sufficient one: one PTX ISA step lower must
/// fail wherever ptxas enforces the floor. The split fences are the documented exception (ptx.md §6:
/// the spec, libcu++ and LLVM gate `fence.acquire/.release` at 8.6; ptxas 13.0 does not check).
#[test]
fn ptxas_version_floors_are_tight() {
    const NOT_ENFORCED_BY_PTXAS: &[&str] = &["seed_fence_acquire_scoped"];
    const STEPS: &[&str] = &[
        "6.0", "6.1", "6.2", "6.3", "6.4", "6.5", "7.0", "7.1", "7.2", "7.3", "7.4", "7.5", "7.6", "7.7", "7.8", "8.0",
        "8.1", "8.2", "8.3", "8.4", "8.5", "8.6", "8.7", "8.8", "9.0",
    ];
    let Some(ptxas) = Ptxas::find() else { return };
    let mut loose = Vec::new();
    for g in goldens() {
        let (lines, version) = print(&g);
        if version == g.target.floor().unwrap() || NOT_ENFORCED_BY_PTXAS.contains(&g.name) {
            continue;
        }
        let v = version.to_string();
        let idx = STEPS.iter().position(|s| *s == v).expect("known PTX ISA version");
        let lower = STEPS[idx - 1];
        let text = module(lower, g.target, &lines);
        if assemble(&ptxas, &format!("{}_below", g.name), g.target, &text).is_ok() {
            loose.push(format!("{} ({}): printed .version {v}, but {lower} assembles", g.name, g.target));
        }
    }
    assert!(loose.is_empty(), "feature floors above what ptxas needs:\n{}", loose.join("\n"));
}

// ----- library ops at the seed's strength ---------------------------------------------------

/// Seed 002: `subgroup.mem_fence()` is `__threadfence_block()` on CUDA (`nvvm.membar.cta`), i.e.
/// `membar.cta` = `fence.sc.cta` on sm_70+, not the weaker `fence.acq_rel.cta`; pinned on a whole
/// kernel lowered from the library call, then assembled (D9).
#[test]
fn subgroup_mem_fence_is_fence_sc_cta() {
    use qd::prelude::*;
    let k = Kernel::explicit("sg_fence", 32, |k| {
        let out = k.array::<u32>("out");
        out.set(block::thread_idx(), 1u32);
        subgroup::mem_fence();
    });
    for target in [SM80, SM90] {
        let ir = k.trace(&qd::backend::Target::ptx(target)).unwrap();
        let m = qd::backend::ptx::lower::lower_kernel(&ir, &target).unwrap();
        let fences: Vec<&str> =
            m.text.lines().map(str::trim).filter(|l| l.starts_with("fence") || l.starts_with("membar")).collect();
        assert_eq!(fences, ["fence.sc.cta;"], "{target}:\n{}", m.text);
        if let Some(ptxas) = Ptxas::find() {
            ptxas.assert_assembles("sg_fence", &target.to_string(), &m.text);
        }
    }
}
