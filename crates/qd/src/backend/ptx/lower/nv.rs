//! The seed-004 families only `qd::nv` reaches beyond match, redux, elect, proxy fences and the
//! CTA mbarriers: float `redux.sync`, `.L2::cache_hint` loads and atomics, 128-bit CAS and
//! exchange, packed half atomics, the sync_restrict and tensormap proxy fences, the cluster forms
//! of mbarrier with the cluster barrier, the `try_wait` suspend hint, `nanosleep` and `nvvm.breakpoint`.

use super::{mem_ty, Class, Lower};
use crate::backend::ptx::mbarrier::{MbarrierModifier, MbarrierSpace};
use crate::backend::ptx::modifier::{AtomOp, AtomSpace, AtomType, AtomicModifier, AtomicOrder, NvptxScope};
use crate::backend::ptx::printer::FULL_MASK;
use crate::backend::ptx::warp::{ReduxKind, ReduxType};
use crate::ir::*;
use crate::trace::TraceError;

/// The alignment of a kernel's shared memory: 16 bytes, or 128 where it copies a tensor map out of
/// shared memory (`tensormap.cp_fenceproxy` reads a 128-byte aligned object: the first shared
/// array's element 0 is one).
pub(super) fn shared_align(k: &Kernel) -> u32 {
    let mut copies = false;
    k.body.walk(&mut |i| copies |= matches!(i.kind, InstKind::Nv { op: NvOp::TensormapCopy { .. }, .. }));
    if copies {
        128
    } else {
        16
    }
}

impl Lower<'_> {
    /// Lowers the families above; everything else of `Nv` is an mbarrier operation.
    pub(super) fn nv_more(
        &mut self,
        inst: &Inst,
        op: &NvOp,
        dsts: &[ValueId],
        args: &[ValueId],
        place: Option<&Place>,
    ) -> Result<(), TraceError> {
        let a: Vec<String> = args.iter().map(|v| self.r(*v)).collect();
        let d: Vec<String> = dsts.iter().map(|v| self.r(*v)).collect();
        match op {
            NvOp::ReduxF32(r) => {
                let kind = match r {
                    ReduxFloatOp::Min => ReduxKind::FMin,
                    ReduxFloatOp::Max => ReduxKind::FMax,
                    ReduxFloatOp::MinAbsNan => ReduxKind::FMinAbsNan,
                    ReduxFloatOp::MaxAbsNan => ReduxKind::FMaxAbsNan,
                };
                self.print(inst, |p| p.redux_sync(kind, ReduxType::F32, &d[0], &a[0], FULL_MASK))
            }
            NvOp::LoadL2Hint(policy) => {
                let addr = self.global_addr(inst, place)?;
                let pol = self.fresh(Class::B64);
                self.print(inst, |p| p.createpolicy(*policy, &pol))?;
                let t = self.d(dsts[0]);
                self.print(inst, |p| p.ld_cache_hint(AtomSpace::Global, mem_ty(t), &d[0], &addr, &pol))
            }
            NvOp::AtomicL2Hint(aop, policy) => {
                let addr = self.global_addr(inst, place)?;
                let t = self.k.array_dtype(place.map(|p| p.array).unwrap_or(ArrayRef::Param(0)));
                // Cache-hint atomics take only cta or sys scope (seed 004): sys covers the device.
                let m = AtomicModifier::from_ir(*aop, t, Ordering::Relaxed, Scope::System, AddressSpace::Global)
                    .map_err(|e| self.ptx_err(inst, e))?;
                let pol = self.fresh(Class::B64);
                self.print(inst, |p| p.createpolicy(*policy, &pol))?;
                let m = m.cache_hint(&pol);
                let dst = dsts.first().filter(|v| self.used.contains(v)).map(|v| self.r(*v));
                self.print(inst, |p| p.atomic_rmw(&m, dst.as_deref(), &addr, &[&a[0]]))
            }
            NvOp::Exch128 | NvOp::Cas128 => {
                let addr = self.global_addr(inst, place)?;
                let cas = *op == NvOp::Cas128;
                let m = AtomicModifier::new(if cas { AtomOp::Cas } else { AtomOp::Exch }, AtomType::B128)
                    .space(AtomSpace::Global);
                // `.b128` registers live in a nested scope, so the module's register pools stay as
                // they are; the halves travel as two u64 (PTX 8.3's `mov.b128` pack and unpack).
                self.line("{");
                self.line(".reg .b128 %q<3>;");
                self.line(format!("mov.b128 %q1, {{{}, {}}};", a[0], a[1]));
                let operands: Vec<&str> = if cas {
                    self.line(format!("mov.b128 %q2, {{{}, {}}};", a[2], a[3]));
                    vec!["%q1", "%q2"]
                } else {
                    vec!["%q1"]
                };
                self.print(inst, |p| p.atom(&m, "%q0", &addr, &operands))?;
                self.line(format!("mov.b128 {{{}, {}}}, %q0;", d[0], d[1]));
                self.line("}");
                Ok(())
            }
            NvOp::PackedAdd(h) => {
                let Some(pl) = place else { return Err(self.err(inst, "a packed atomic without its word")) };
                let (addr, space) = self.address(pl);
                let ty = if *h == PackedHalf::F16x2 { AtomType::F16x2 } else { AtomType::BF16x2 };
                let m = AtomicModifier::new(AtomOp::Add, ty).space(AtomSpace::from(space));
                let dst = dsts.first().filter(|v| self.used.contains(v)).map(|v| self.r(*v));
                self.print(inst, |p| p.atomic_rmw(&m, dst.as_deref(), &format!("[{addr}]"), &[&a[0]]))
            }
            NvOp::FenceSyncRestrict(o) => self.print(inst, |p| p.fence_sync_restrict(AtomicOrder::from(*o))),
            NvOp::ProxyAsyncFence(o) => {
                self.print(inst, |p| p.fence_proxy_async_generic_sync_restrict(AtomicOrder::from(*o)))
            }
            NvOp::TensormapRelease(s) => self.print(inst, |p| p.fence_proxy_tensormap_release(NvptxScope::from(*s))),
            NvOp::TensormapAcquire(s) => {
                let addr = self.generic_addr(inst, place)?;
                self.print(inst, |p| p.fence_proxy_tensormap_acquire(NvptxScope::from(*s), &addr, 128))
            }
            NvOp::TensormapCopy { scope, src } => {
                let dst = self.global_addr(inst, place)?;
                let (src, _) = self.address(&Place { array: *src, index: args[0] });
                let s = NvptxScope::from(*scope);
                self.print(inst, |p| p.tensormap_cp_fenceproxy(s, &dst, &format!("[{src}]"), 128))
            }
            NvOp::ClusterSync => self.print(inst, |p| p.cluster_sync()),
            NvOp::Nanosleep => self.print(inst, |p| p.nanosleep(&a[0])),
            NvOp::LoadVector => {
                let addr = self.global_addr(inst, place)?;
                let t = self.d(dsts[0]);
                self.print(inst, |p| p.ld_global_vector(mem_ty(t), &d, &addr))
            }
            NvOp::MbarrierArriveCluster => {
                let addr = self.shared_addr(inst, place)?;
                let remote = self.fresh(Class::B64);
                self.print(inst, |p| p.mapa_shared_cluster(&remote, &addr, &a[0]))?;
                let m =
                    MbarrierModifier::new(MbarrierSpace::SharedCluster).sem(AtomicOrder::Release, NvptxScope::Cluster);
                self.print(inst, |p| p.mbarrier_arrive(&m, "_", &format!("[{remote}]"), None))
            }
            NvOp::MbarrierTryWaitParityCluster => {
                let addr = format!("[{}]", self.shared_addr(inst, place)?);
                let m = MbarrierModifier::new(MbarrierSpace::SharedCta).sem(AtomicOrder::Acquire, NvptxScope::Cluster);
                self.print(inst, |p| p.mbarrier_try_wait(&m, true, &d[0], &addr, &a[0], None))
            }
            NvOp::MbarrierTryWaitParityHint => {
                let addr = format!("[{}]", self.shared_addr(inst, place)?);
                let m = MbarrierModifier::shared();
                self.print(inst, |p| p.mbarrier_try_wait(&m, true, &d[0], &addr, &a[0], Some(&a[1])))
            }
            NvOp::Breakpoint => {
                let (start, now, pred) = (self.fresh(Class::B64), self.fresh(Class::B64), self.fresh(Class::Pred));
                let label = self.label("breakpoint");
                let lines = self.p.breakpoint(&start, &now, &pred, &label).map_err(|e| self.ptx_err(inst, e))?;
                for l in lines {
                    // Labels start their line; instructions are indented.
                    if l.ends_with(':') {
                        self.body.push_str(&l);
                        self.body.push('\n');
                    } else {
                        self.line(l);
                    }
                }
                Ok(())
            }
            _ => self.mbarrier(inst, op, dsts, args, place),
        }
    }

    /// `[address]` of a global (kernel parameter) array element, refused elsewhere.
    fn global_addr(&mut self, inst: &Inst, place: Option<&Place>) -> Result<String, TraceError> {
        match place {
            Some(p) if self.k.array_space(p.array) == AddressSpace::Global => Ok(format!("[{}]", self.address(p).0)),
            Some(p) => Err(self.err(
                inst,
                format!("`{}` needs an element of a kernel array (global memory)", self.k.array_name(p.array)),
            )),
            None => Err(self.err(inst, "an operation on global memory without its element")),
        }
    }

    /// `[address]` of a global element as a generic address (what `fence.proxy` takes).
    fn generic_addr(&mut self, inst: &Inst, place: Option<&Place>) -> Result<String, TraceError> {
        let global = self.global_addr(inst, place)?;
        let g = self.fresh(Class::B64);
        self.line(format!("cvta.global.u64 {g}, {};", global.trim_matches(['[', ']'])));
        Ok(format!("[{g}]"))
    }

    /// The shared-space address register of an mbarrier (no brackets), refused elsewhere.
    fn shared_addr(&mut self, inst: &Inst, place: Option<&Place>) -> Result<String, TraceError> {
        match place {
            Some(p) if self.k.array_space(p.array) == AddressSpace::Shared => Ok(self.address(p).0),
            _ => Err(self.err(inst, "an mbarrier lives in shared memory (a u64 element of block::shared_array)")),
        }
    }
}
