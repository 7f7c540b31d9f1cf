//! Printer forms only the NVIDIA module (`qd::nv`) reaches beyond atom/red, fences, warp
//! collectives and mbarriers: L2 cache policies and hinted loads, the cluster barrier, `mapa`,
//! `nanosleep`, and seed 004's `nvvm.breakpoint` (a `%globaltimer` busy-wait, then `trap`).

use super::caps::Feature;
use super::errors::PtxError;
use super::modifier::AtomSpace;
use super::printer::PtxPrinter;
use crate::ir::{L2Policy, NvSreg};

/// How long `nvvm.breakpoint` busy-waits on `%globaltimer` before it traps, in nanoseconds: long
/// enough for the other warps' pending stores and a debugger's attach request to land.
pub const BREAKPOINT_WAIT_NS: u32 = 1000;

impl PtxPrinter {
    /// `createpolicy.fractional.L2::<priority>.b64 policy, 1.0;` (sm_80, PTX 7.4): a cache policy
    /// covering every access it is given to.
    pub fn createpolicy(&mut self, policy: L2Policy, dst: &str) -> Result<String, PtxError> {
        self.require(&[Feature::CreatePolicy])?;
        Ok(format!("createpolicy.fractional.L2::{}.b64 {dst}, 1.0;", policy.name()))
    }

    /// `ld{.space}.L2::cache_hint.<ty> d, [a], policy;` (sm_80, PTX 7.4; global or generic).
    pub fn ld_cache_hint(
        &mut self,
        space: AtomSpace,
        ty: &str,
        dst: &str,
        addr: &str,
        policy: &str,
    ) -> Result<String, PtxError> {
        if !matches!(space, AtomSpace::Global | AtomSpace::Generic) {
            return Err(PtxError::CacheHintForm { form: format!("ld on {}", space.name()) });
        }
        self.require(&[Feature::AtomCacheHint])?;
        let sp = space.token().unwrap_or("");
        Ok(format!("ld{sp}.L2::cache_hint.{ty} {dst}, {addr}, {policy};"))
    }

    /// `barrier.cluster.arrive.release;` then `barrier.cluster.wait.acquire;` (sm_90, PTX 8.0):
    /// every thread of every CTA of the cluster meets here, and memory written before is visible
    /// after it cluster-wide.
    pub fn cluster_sync(&mut self) -> Result<Vec<String>, PtxError> {
        self.require(&[Feature::BarrierCluster, Feature::ClusterScope])?;
        Ok(vec!["barrier.cluster.arrive.release;".into(), "barrier.cluster.wait.acquire;".into()])
    }

    /// `mapa.shared::cluster.u64 d, a, rank;` (sm_90, PTX 7.8): the `.shared::cluster` address of
    /// the variable at shared address `a` in the CTA of cluster rank `rank`.
    pub fn mapa_shared_cluster(&mut self, dst: &str, addr: &str, rank: &str) -> Result<String, PtxError> {
        self.require(&[Feature::Mapa, Feature::SharedCluster])?;
        Ok(format!("mapa.shared::cluster.u64 {dst}, {addr}, {rank};"))
    }

    /// `ld.global.v2.<ty>` / `.v4`: `dsts.len()` consecutive elements of `ty` (4 or 8 bytes, the
    /// whole access 16 bytes at most) into `dsts`, from `addr` (aligned to the access's size).
    pub fn ld_global_vector(&mut self, ty: &str, dsts: &[String], addr: &str) -> Result<String, PtxError> {
        let bytes = match &ty[1..] {
            "32" => 4,
            "64" => 8,
            _ => 0,
        };
        if !matches!(dsts.len(), 2 | 4) || bytes == 0 || dsts.len() * bytes > 16 {
            return Err(PtxError::VectorLoadForm { count: dsts.len(), ty: ty.to_string() });
        }
        Ok(format!("ld.global.v{}.{ty} {{{}}}, {addr};", dsts.len(), dsts.join(", ")))
    }

    /// `nanosleep.u32 ns;` (sm_70, PTX 6.3): suspends the thread for up to about `ns` nanoseconds
    /// (a register or an immediate).
    pub fn nanosleep(&mut self, ns: &str) -> Result<String, PtxError> {
        self.require(&[Feature::Nanosleep])?;
        Ok(format!("nanosleep.u32 {ns};"))
    }

    /// Seed 004's `nvvm.breakpoint`: a [`BREAKPOINT_WAIT_NS`] busy-wait on `%globaltimer`, then
    /// `trap;` (the launch ends with an error and the CUDA context is unusable afterwards).
    /// `start`, `now` are `.u64` registers, `pred` a predicate, `label` a fresh label.
    pub fn breakpoint(&mut self, start: &str, now: &str, pred: &str, label: &str) -> Result<Vec<String>, PtxError> {
        let mut lines = vec![self.sreg_read(start, NvSreg::GlobalTimer)?, format!("{label}:")];
        lines.push(self.sreg_read(now, NvSreg::GlobalTimer)?);
        lines.push(format!("sub.u64 {now}, {now}, {start};"));
        lines.push(format!("setp.lt.u64 {pred}, {now}, {BREAKPOINT_WAIT_NS};"));
        lines.push(format!("@{pred} bra {label};"));
        lines.push("trap;".into());
        Ok(lines)
    }
}
