//! The per-instruction printer (D7): explicit operands in, one validated PTX line out.
//!
//! Operands are register or immediate strings as they should appear (`%r0`, `[%rd1]`, `0x1F`,
//! `{%f0,%f1}`); addresses include their brackets. Every method validates the instruction first
//! (the seed's diagnostics, then the target's feature floors) and records the features it used, so
//! [`PtxPrinter::version`] gives the module's `.version` (D7). Lines carry no indentation and end
//! with `;`.

use super::caps::{capped_version, module_header, required_version, Feature, FeatureSet, PtxTarget, PtxVersion};
use super::errors::PtxError;
use super::modifier::{AtomSpace, AtomicModifier, AtomicOrder, NvptxScope};

/// The full-warp membership mask, as printed (hex immediates are uppercase, D7).
pub const FULL_MASK: &str = "0xFFFFFFFF";

/// An immediate in D7's spelling: `0x` and uppercase hex digits.
pub fn hex_imm(value: u64) -> String {
    format!("0x{value:X}")
}

/// Prints instructions for one target and collects the features they use.
#[derive(Clone, Debug)]
pub struct PtxPrinter {
    target: PtxTarget,
    cap: PtxVersion,
    features: FeatureSet,
}

impl PtxPrinter {
    /// A printer for `target` whose output the validating ptxas 13.0 accepts (`.version` at most
    /// [`PtxVersion::PTXAS_13_0_MAX`]).
    pub fn new(target: PtxTarget) -> PtxPrinter {
        PtxPrinter::with_cap(target, PtxVersion::PTXAS_13_0_MAX)
    }

    /// A printer whose output must assemble at `.version` `cap` or lower (the driver's or the
    /// validating ptxas's maximum). Features above the cap are refused, or replaced by their
    /// fallback where one exists (split fences).
    pub fn with_cap(target: PtxTarget, cap: PtxVersion) -> PtxPrinter {
        PtxPrinter { target, cap, features: FeatureSet::new() }
    }

    /// The target.
    pub fn target(&self) -> PtxTarget {
        self.target
    }

    /// The features used so far.
    pub fn features(&self) -> &FeatureSet {
        &self.features
    }

    /// The `.version` the lines printed so far need (D7: highest floor of target and features).
    pub fn version(&self) -> Result<PtxVersion, PtxError> {
        required_version(self.target, self.features.iter().copied())
    }

    /// The module header (`.version`, `.target`, `.address_size 64`) for the lines printed so far,
    /// refused when the needed version exceeds the printer's cap.
    pub fn header(&self) -> Result<String, PtxError> {
        let v = capped_version(self.target, self.features.iter().copied(), self.cap)?;
        Ok(module_header(v, self.target))
    }

    /// Whether the target has `feature` within the version cap.
    pub fn has(&self, feature: Feature) -> bool {
        self.target.check(feature).is_ok() && feature.floor().ptx <= self.cap
    }

    /// Checks `features` against the target and the version cap and, if all pass, records them.
    pub(crate) fn require(&mut self, features: &[Feature]) -> Result<(), PtxError> {
        for f in features {
            self.target.check(*f)?;
            let need = f.floor().ptx;
            if need > self.cap {
                return Err(PtxError::VersionCap {
                    required: format!("{need} (for {})", f.name()),
                    cap: self.cap.to_string(),
                });
            }
        }
        self.features.extend(features.iter().copied());
        Ok(())
    }

    fn operand_count(inst: &str, args: &[&str], want: usize) -> Result<(), PtxError> {
        if args.len() != want {
            return Err(PtxError::InvalidForm {
                inst: inst.to_string(),
                reason: format!("expected {want} source operand(s), got {}", args.len()),
            });
        }
        Ok(())
    }

    // ----- atom / red -------------------------------------------------------------------------

    /// `atom…` with destination `dst` (`_` is the sink), address `addr` and `args` (one value, or
    /// compare and new value for `.cas`); the cache-policy operand comes from the record.
    ///
    /// `atom.relaxed.cta.add.u32.shared %r0, [%r1], %r2;`
    pub fn atom(&mut self, m: &AtomicModifier, dst: &str, addr: &str, args: &[&str]) -> Result<String, PtxError> {
        let features = m.validate(false)?;
        let want = if m.op == super::modifier::AtomOp::Cas { 2 } else { 1 };
        Self::operand_count("atom", args, want)?;
        self.require(&features)?;
        let mut line = format!("{} {dst}, {addr}", m.mnemonic("atom"));
        for a in args {
            line.push_str(", ");
            line.push_str(a);
        }
        if let Some(h) = &m.cache_hint {
            line.push_str(", ");
            line.push_str(&h.policy);
        }
        line.push(';');
        Ok(line)
    }

    /// `red…` (no result): `red.gpu.add.f32.global [%rd0], %f1;`
    pub fn red(&mut self, m: &AtomicModifier, addr: &str, value: &str) -> Result<String, PtxError> {
        let features = m.validate(true)?;
        self.require(&features)?;
        let mut line = format!("{} {addr}, {value}", m.mnemonic("red"));
        if let Some(h) = &m.cache_hint {
            line.push_str(", ");
            line.push_str(&h.policy);
        }
        line.push(';');
        Ok(line)
    }

    /// Whether an atomic whose result is unused may print as `red` (D6): relaxed or release
    /// ordering (or the default), an operation `red` has, and a type `red` takes for it.
    pub fn red_eligible(m: &AtomicModifier) -> bool {
        matches!(m.order, None | Some(AtomicOrder::Relaxed | AtomicOrder::Release)) && m.validate(true).is_ok()
    }

    /// Lowers one read-modify-write atomic (D6):
    /// * result unused (`dst == None`) and [`PtxPrinter::red_eligible`]: one `red`;
    /// * `seq_cst`: `fence.sc.<scope>;` then the `atom` with `.acquire` (LLVM and nvcc's mapping;
    ///   PTX has no `atom.sc`);
    /// * otherwise one `atom` (into the sink `_` when the result is unused).
    pub fn atomic_rmw(
        &mut self,
        m: &AtomicModifier,
        dst: Option<&str>,
        addr: &str,
        args: &[&str],
    ) -> Result<Vec<String>, PtxError> {
        if dst.is_none() && args.len() == 1 && Self::red_eligible(m) {
            return Ok(vec![self.red(m, addr, args[0])?]);
        }
        let dst = dst.unwrap_or("_");
        if m.order == Some(AtomicOrder::SeqCst) {
            let acquire = AtomicModifier { order: Some(AtomicOrder::Acquire), ..m.clone() };
            // Validate the atom before printing the fence, so nothing is emitted on error.
            acquire.validate(false)?;
            let mut lines: Vec<String> = self.fence(AtomicOrder::SeqCst, m.scope)?.into_iter().collect();
            lines.push(self.atom(&acquire, dst, addr, args)?);
            return Ok(lines);
        }
        Ok(vec![self.atom(m, dst, addr, args)?])
    }

    /// Whether [`PtxPrinter::atomic_rmw`] prints `m` natively for this target: the record is valid
    /// for `atom` (seq_cst checked as its acquire half) and the target has every feature it needs
    /// within the version cap. When it does not (a type or operation the target lacks), lowering
    /// builds the operation from a CAS loop instead.
    pub fn atom_supported(&self, m: &AtomicModifier) -> bool {
        let checked = match m.order {
            Some(AtomicOrder::SeqCst) => AtomicModifier { order: Some(AtomicOrder::Acquire), ..m.clone() },
            _ => m.clone(),
        };
        checked.validate(false).is_ok_and(|features| features.iter().all(|f| self.has(*f)))
    }

    // ----- ordered loads and stores -----------------------------------------------------------

    /// The scope token and features of an ordered `ld`/`st` in `space` (validated, not recorded).
    /// PTX has no thread scope; the narrowest one, `.cta`, orders at least as much.
    fn mem_sem_parts(
        inst: &str,
        scope: NvptxScope,
        space: AtomSpace,
    ) -> Result<(&'static str, &'static str, Vec<Feature>), PtxError> {
        let mut features = vec![Feature::MemorySem];
        match space {
            AtomSpace::Local => {
                return Err(PtxError::InvalidSpace { inst: format!("ordered {inst}"), space: ".local".into() })
            }
            AtomSpace::SharedCta => features.push(Feature::SharedCtaSpelling),
            AtomSpace::SharedCluster => features.push(Feature::SharedCluster),
            _ => {}
        }
        if scope == NvptxScope::Cluster {
            features.push(Feature::ClusterScope);
        }
        Ok((scope.fence_token().unwrap_or(".cta"), space.token().unwrap_or(""), features))
    }

    /// Records `features` before sm_70, where ordered loads and stores fall back to `.volatile`:
    /// only what the fallback still needs (cluster scope has no fallback).
    fn require_volatile_fallback(&mut self, features: &[Feature]) -> Result<(), PtxError> {
        let kept: Vec<Feature> = features.iter().copied().filter(|f| *f != Feature::MemorySem).collect();
        self.require(&kept)
    }

    /// An atomic load of type `ty` (`u32`, `b64`, ...):
    /// * relaxed: `ld.relaxed.<scope>{.space}.<ty> d, [a];`
    /// * acquire: `ld.acquire.<scope>{.space}.<ty> d, [a];`
    /// * seq_cst: `fence.sc.<scope>;` then the acquire load (LLVM's mapping; PTX has no `ld.sc`).
    ///
    /// The scope prints as on fences (`.gpu` for the implicit device scope; thread scope prints
    /// `.cta`). Below sm_70 (no `.relaxed`/`.acquire`) the load is `ld.volatile`, followed by
    /// `membar` when it acquires (preceded by one for seq_cst). `.local` is refused.
    pub fn ld_ordered(
        &mut self,
        order: AtomicOrder,
        scope: NvptxScope,
        space: AtomSpace,
        ty: &str,
        dst: &str,
        addr: &str,
    ) -> Result<Vec<String>, PtxError> {
        let sem = match order {
            AtomicOrder::Relaxed => ".relaxed",
            AtomicOrder::Acquire | AtomicOrder::SeqCst => ".acquire",
            other => {
                return Err(PtxError::InvalidForm {
                    inst: "ld".into(),
                    reason: format!("a load cannot be {other} (relaxed, acquire or seq_cst)"),
                })
            }
        };
        let (s, sp, features) = Self::mem_sem_parts("ld", scope, space)?;
        let mut lines = Vec::new();
        if self.target.sm < Feature::MemorySem.floor().sm {
            self.require_volatile_fallback(&features)?;
            if order == AtomicOrder::SeqCst {
                lines.extend(self.fence(AtomicOrder::SeqCst, scope)?);
            }
            lines.push(format!("ld.volatile{sp}.{ty} {dst}, {addr};"));
            if order != AtomicOrder::Relaxed {
                lines.extend(self.fence(AtomicOrder::Acquire, scope)?);
            }
            return Ok(lines);
        }
        self.require(&features)?;
        if order == AtomicOrder::SeqCst {
            lines.extend(self.fence(AtomicOrder::SeqCst, scope)?);
        }
        lines.push(format!("ld{sem}{s}{sp}.{ty} {dst}, {addr};"));
        Ok(lines)
    }

    /// An atomic store of type `ty`:
    /// * relaxed: `st.relaxed.<scope>{.space}.<ty> [a], v;`
    /// * release: `st.release.<scope>{.space}.<ty> [a], v;`
    /// * seq_cst: `fence.sc.<scope>;` then the release store (LLVM's mapping).
    ///
    /// Scopes as in [`PtxPrinter::ld_ordered`]. Below sm_70 the store is `st.volatile`, preceded by
    /// `membar` when it releases. `.local` is refused.
    pub fn st_ordered(
        &mut self,
        order: AtomicOrder,
        scope: NvptxScope,
        space: AtomSpace,
        ty: &str,
        addr: &str,
        value: &str,
    ) -> Result<Vec<String>, PtxError> {
        let sem = match order {
            AtomicOrder::Relaxed => ".relaxed",
            AtomicOrder::Release | AtomicOrder::SeqCst => ".release",
            other => {
                return Err(PtxError::InvalidForm {
                    inst: "st".into(),
                    reason: format!("a store cannot be {other} (relaxed, release or seq_cst)"),
                })
            }
        };
        let (s, sp, features) = Self::mem_sem_parts("st", scope, space)?;
        let mut lines = Vec::new();
        if self.target.sm < Feature::MemorySem.floor().sm {
            self.require_volatile_fallback(&features)?;
            if order != AtomicOrder::Relaxed {
                lines.extend(self.fence(order, scope)?);
            }
            lines.push(format!("st.volatile{sp}.{ty} {addr}, {value};"));
            return Ok(lines);
        }
        self.require(&features)?;
        if order == AtomicOrder::SeqCst {
            lines.extend(self.fence(AtomicOrder::SeqCst, scope)?);
        }
        lines.push(format!("st{sem}{s}{sp}.{ty} {addr}, {value};"));
        Ok(lines)
    }

    // ----- fences -----------------------------------------------------------------------------

    /// A memory fence. `acq_rel` and `seq_cst` print `fence.acq_rel.<scope>;` / `fence.sc.<scope>;`;
    /// `acquire` and `release` print `fence.acquire.<scope>;` / `fence.release.<scope>;` where the
    /// target has split fences (sm_90, PTX 8.6) and fall back to `fence.acq_rel.<scope>;` elsewhere
    /// (LLVM's `hasSplitAcquireAndReleaseFences`). Below sm_70 the fence is `membar.{cta,gl,sys}`.
    /// A thread-scope fence prints nothing (`Ok(None)`); a relaxed one is refused.
    pub fn fence(&mut self, order: AtomicOrder, scope: NvptxScope) -> Result<Option<String>, PtxError> {
        if !matches!(order, AtomicOrder::Acquire | AtomicOrder::Release | AtomicOrder::AcqRel | AtomicOrder::SeqCst) {
            return Err(PtxError::InvalidFenceOrdering { ordering: order.name().to_string() });
        }
        let Some(scope_token) = scope.fence_token() else {
            return Ok(None);
        };
        if scope == NvptxScope::Cluster {
            // No pre-Hopper fallback for cluster scope.
            self.require(&[Feature::ClusterScope])?;
        }
        if self.target.sm < Feature::FenceScoped.floor().sm {
            let level = match scope {
                NvptxScope::Cta => "cta",
                NvptxScope::System => "sys",
                _ => "gl",
            };
            return Ok(Some(format!("membar.{level};")));
        }
        self.require(&[Feature::FenceScoped])?;
        let sem = match order {
            AtomicOrder::Acquire | AtomicOrder::Release if self.has(Feature::FenceSplit) => {
                self.require(&[Feature::FenceSplit])?;
                order.token()
            }
            AtomicOrder::SeqCst => ".sc",
            _ => ".acq_rel",
        };
        Ok(Some(format!("fence{sem}{scope_token};")))
    }

    /// The legacy `membar.{cta,gl,sys};` (on sm_70+ a synonym of `fence.sc`).
    pub fn membar(&mut self, level: MembarLevel) -> String {
        format!("membar.{};", level.name())
    }

    /// `fence.mbarrier_init.release.cluster;` (sm_90, PTX 8.0; only this spelling assembles).
    pub fn fence_mbarrier_init(&mut self) -> Result<String, PtxError> {
        self.require(&[Feature::FenceMbarrierInit])?;
        Ok("fence.mbarrier_init.release.cluster;".to_string())
    }

    /// `fence.proxy.<kind>;` for the alias and async proxy kinds.
    pub fn fence_proxy(&mut self, kind: ProxyKind) -> Result<String, PtxError> {
        let feature = match kind {
            ProxyKind::Alias => Feature::FenceProxyAlias,
            _ => Feature::FenceProxyAsync,
        };
        self.require(&[feature])?;
        Ok(format!("fence.proxy.{};", kind.name()))
    }

    /// `membar.proxy.alias;` (sm_60, PTX 7.5).
    pub fn membar_proxy_alias(&mut self) -> Result<String, PtxError> {
        self.require(&[Feature::MembarProxyAlias])?;
        Ok("membar.proxy.alias;".to_string())
    }

    fn tensormap_scope(inst: &str, scope: NvptxScope) -> Result<&'static str, PtxError> {
        scope.fence_token().ok_or_else(|| PtxError::InvalidScope { inst: inst.to_string(), scope: scope.name().into() })
    }

    /// `fence.proxy.tensormap::generic.release.<scope>;` (sm_90, PTX 8.3).
    pub fn fence_proxy_tensormap_release(&mut self, scope: NvptxScope) -> Result<String, PtxError> {
        let s = Self::tensormap_scope("fence.proxy.tensormap::generic", scope)?;
        self.require_scope_features(scope, Feature::FenceProxyTensormap)?;
        Ok(format!("fence.proxy.tensormap::generic.release{s};"))
    }

    /// `fence.proxy.tensormap::generic.acquire.<scope> [addr], 128;` (the size must be 128).
    pub fn fence_proxy_tensormap_acquire(
        &mut self,
        scope: NvptxScope,
        addr: &str,
        size: u32,
    ) -> Result<String, PtxError> {
        let s = Self::tensormap_scope("fence.proxy.tensormap::generic", scope)?;
        if size != 128 {
            return Err(PtxError::InvalidForm {
                inst: "fence.proxy.tensormap::generic.acquire".into(),
                reason: format!("the size must be 128, not {size}"),
            });
        }
        self.require_scope_features(scope, Feature::FenceProxyTensormap)?;
        Ok(format!("fence.proxy.tensormap::generic.acquire{s} {addr}, {size};"))
    }

    /// `fence.proxy.async::generic.acquire.sync_restrict::shared::cluster.cluster;` or
    /// `fence.proxy.async::generic.release.sync_restrict::shared::cta.cluster;` (sm_90, PTX 8.6:
    /// acquire pairs only with shared::cluster, release only with shared::cta).
    pub fn fence_proxy_async_generic_sync_restrict(&mut self, order: AtomicOrder) -> Result<String, PtxError> {
        let tail = Self::sync_restrict_tail("fence.proxy.async::generic", order)?;
        self.require(&[Feature::FenceSyncRestrict])?;
        Ok(format!("fence.proxy.async::generic{tail}"))
    }

    /// `fence.acquire.sync_restrict::shared::cluster.cluster;` or
    /// `fence.release.sync_restrict::shared::cta.cluster;` (sm_90, PTX 8.6).
    pub fn fence_sync_restrict(&mut self, order: AtomicOrder) -> Result<String, PtxError> {
        let tail = Self::sync_restrict_tail("fence.sync_restrict", order)?;
        self.require(&[Feature::FenceSyncRestrict])?;
        Ok(format!("fence{tail}"))
    }

    fn sync_restrict_tail(inst: &str, order: AtomicOrder) -> Result<&'static str, PtxError> {
        match order {
            AtomicOrder::Acquire => Ok(".acquire.sync_restrict::shared::cluster.cluster;"),
            AtomicOrder::Release => Ok(".release.sync_restrict::shared::cta.cluster;"),
            other => Err(PtxError::InvalidForm {
                inst: inst.to_string(),
                reason: format!("ordering must be acquire or release, not {other}"),
            }),
        }
    }

    /// `tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.<scope>.sync.aligned
    /// [dst], [src], 128;` (sm_90, PTX 8.3). The seed's template
    /// `tensormap.cp_fenceproxy.<scope>.tensormap::generic…` does not assemble ("Multiple scope
    /// modifiers"); this is ptx.md's assembling form.
    pub fn tensormap_cp_fenceproxy(
        &mut self,
        scope: NvptxScope,
        dst: &str,
        src: &str,
        size: u32,
    ) -> Result<String, PtxError> {
        let s = Self::tensormap_scope("tensormap.cp_fenceproxy", scope)?;
        if size != 128 {
            return Err(PtxError::InvalidForm {
                inst: "tensormap.cp_fenceproxy".into(),
                reason: format!("the size must be 128, not {size}"),
            });
        }
        self.require_scope_features(scope, Feature::TensormapCpFenceproxy)?;
        Ok(format!(
            "tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release{s}.sync.aligned {dst}, {src}, {size};"
        ))
    }

    fn require_scope_features(&mut self, scope: NvptxScope, feature: Feature) -> Result<(), PtxError> {
        if scope == NvptxScope::Cluster {
            self.require(&[feature, Feature::ClusterScope])
        } else {
            self.require(&[feature])
        }
    }

    // ----- CTA barriers -----------------------------------------------------------------------

    fn barrier_id(id: u32, count: Option<u32>) -> Result<String, PtxError> {
        if id > 15 {
            return Err(PtxError::InvalidForm {
                inst: "bar".into(),
                reason: format!("barrier number {id} out of range 0..15"),
            });
        }
        match count {
            None => Ok(id.to_string()),
            Some(c) if c > 0 && c.is_multiple_of(32) => Ok(format!("{id}, {c}")),
            Some(c) => Err(PtxError::InvalidForm {
                inst: "bar".into(),
                reason: format!("thread count {c} must be a non-zero multiple of 32"),
            }),
        }
    }

    /// `bar.sync id{, count};` (`__syncthreads()` is `bar.sync 0;`).
    pub fn bar_sync(&mut self, id: u32, count: Option<u32>) -> Result<String, PtxError> {
        Ok(format!("bar.sync {};", Self::barrier_id(id, count)?))
    }

    /// `bar.arrive id, count;` (the count is mandatory).
    pub fn bar_arrive(&mut self, id: u32, count: u32) -> Result<String, PtxError> {
        Ok(format!("bar.arrive {};", Self::barrier_id(id, Some(count))?))
    }

    /// `bar.red.popc.u32 dst, id, pred;` (`__syncthreads_count`).
    pub fn bar_red_popc(&mut self, dst: &str, id: u32, pred: &str) -> Result<String, PtxError> {
        Ok(format!("bar.red.popc.u32 {dst}, {}, {pred};", Self::barrier_id(id, None)?))
    }

    /// `bar.red.and.pred dst, id, pred;` / `bar.red.or.pred …` (`__syncthreads_and/_or`).
    pub fn bar_red_pred(&mut self, op: BarRedOp, dst: &str, id: u32, pred: &str) -> Result<String, PtxError> {
        Ok(format!("bar.red.{}.pred {dst}, {}, {pred};", op.name(), Self::barrier_id(id, None)?))
    }
}

/// The level of a legacy `membar`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MembarLevel {
    /// `membar.cta`.
    Cta,
    /// `membar.gl` (device).
    Gl,
    /// `membar.sys`.
    Sys,
}

impl MembarLevel {
    /// The level's name.
    pub fn name(self) -> &'static str {
        match self {
            MembarLevel::Cta => "cta",
            MembarLevel::Gl => "gl",
            MembarLevel::Sys => "sys",
        }
    }
}

/// The proxy kinds of `fence.proxy.<kind>;` (ptx.md §6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProxyKind {
    /// `alias` (sm_70, PTX 7.5).
    Alias,
    /// `async` (sm_90, PTX 8.0).
    Async,
    /// `async.global`.
    AsyncGlobal,
    /// `async.shared::cta`.
    AsyncSharedCta,
    /// `async.shared::cluster`.
    AsyncSharedCluster,
}

impl ProxyKind {
    /// The suffix after `fence.proxy.`.
    pub fn name(self) -> &'static str {
        match self {
            ProxyKind::Alias => "alias",
            ProxyKind::Async => "async",
            ProxyKind::AsyncGlobal => "async.global",
            ProxyKind::AsyncSharedCta => "async.shared::cta",
            ProxyKind::AsyncSharedCluster => "async.shared::cluster",
        }
    }

    /// Parses the suffix (the IR's `NvOp::ProxyFence` spelling).
    pub fn parse(name: &str) -> Result<ProxyKind, PtxError> {
        [
            ProxyKind::Alias,
            ProxyKind::Async,
            ProxyKind::AsyncGlobal,
            ProxyKind::AsyncSharedCta,
            ProxyKind::AsyncSharedCluster,
        ]
        .into_iter()
        .find(|k| k.name() == name)
        .ok_or_else(|| PtxError::InvalidForm {
            inst: "fence.proxy".into(),
            reason: format!("unknown proxy kind {name:?}"),
        })
    }
}

/// The predicate reduction of `bar.red`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BarRedOp {
    /// `.and`.
    And,
    /// `.or`.
    Or,
}

impl BarRedOp {
    /// The operation's name.
    pub fn name(self) -> &'static str {
        match self {
            BarRedOp::And => "and",
            BarRedOp::Or => "or",
        }
    }
}
