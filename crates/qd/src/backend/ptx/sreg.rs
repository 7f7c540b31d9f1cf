//! Special-register readers (seed 004's table): a one-line `mov` keyed by the register's name.
//!
//! Thread and CTA coordinates (`%tid`, `%ntid`, `%ctaid`, `%nctaid`) take the compact path that
//! writes `mov.u32 %rN, %tid.x;` directly; every other register goes through the generic path,
//! which picks the `mov` type from the register's width and records its feature floor.

use super::caps::Feature;
use super::errors::PtxError;
use super::printer::PtxPrinter;
use crate::ir::NvSreg;

const AXES: [&str; 3] = ["x", "y", "z"];

fn axis(name: &str, a: u8) -> Result<String, PtxError> {
    AXES.get(a as usize).map(|x| format!("%{name}.{x}")).ok_or_else(|| PtxError::InvalidForm {
        inst: format!("mov %{name}"),
        reason: format!("axis {a} is not 0 (x), 1 (y) or 2 (z)"),
    })
}

/// The register's PTX spelling (`%tid.x`, `%clock64`, ...).
///
/// `%warpsize` in the seed's table is not a PTX special register (ptxas 13.0: "Unknown symbol
/// '%warpsize'"); its value is the PTX constant `WARP_SZ`, which is printed instead.
pub fn sreg_token(sreg: NvSreg) -> Result<String, PtxError> {
    use NvSreg::*;
    Ok(match sreg {
        Tid(a) => axis("tid", a)?,
        Ntid(a) => axis("ntid", a)?,
        Ctaid(a) => axis("ctaid", a)?,
        Nctaid(a) => axis("nctaid", a)?,
        ClusterId(a) => axis("clusterid", a)?,
        NClusterId(a) => axis("nclusterid", a)?,
        ClusterCtaid(a) => axis("cluster_ctaid", a)?,
        ClusterNctaid(a) => axis("cluster_nctaid", a)?,
        ClusterCtarank => "%cluster_ctarank".into(),
        ClusterNctarank => "%cluster_nctarank".into(),
        Smid => "%smid".into(),
        Nsmid => "%nsmid".into(),
        Warpid => "%warpid".into(),
        Nwarpid => "%nwarpid".into(),
        Laneid => "%laneid".into(),
        Warpsize => "WARP_SZ".into(),
        Gridid => "%gridid".into(),
        LanemaskEq => "%lanemask_eq".into(),
        LanemaskLe => "%lanemask_le".into(),
        LanemaskLt => "%lanemask_lt".into(),
        LanemaskGe => "%lanemask_ge".into(),
        LanemaskGt => "%lanemask_gt".into(),
        Clock => "%clock".into(),
        Clock64 => "%clock64".into(),
        GlobalTimer => "%globaltimer".into(),
        EnvReg(n) if n < 32 => format!("%envreg{n}"),
        EnvReg(n) => {
            return Err(PtxError::InvalidForm {
                inst: "mov %envreg".into(),
                reason: format!("%envreg{n} does not exist (0..31)"),
            })
        }
        DynamicSmemSize => "%dynamic_smem_size".into(),
    })
}

/// The `mov` type of a register read: `u64` for `%gridid`, `%clock64`, `%globaltimer`, else `u32`.
pub fn sreg_mov_type(sreg: NvSreg) -> &'static str {
    match sreg {
        NvSreg::Gridid | NvSreg::Clock64 | NvSreg::GlobalTimer => "u64",
        _ => "u32",
    }
}

/// Whether the compact thread/CTA-coordinate path prints it.
pub fn is_thread_or_cta_sreg(sreg: NvSreg) -> bool {
    matches!(sreg, NvSreg::Tid(_) | NvSreg::Ntid(_) | NvSreg::Ctaid(_) | NvSreg::Nctaid(_))
}

fn sreg_feature(sreg: NvSreg) -> Option<Feature> {
    use NvSreg::*;
    match sreg {
        ClusterId(_) | NClusterId(_) | ClusterCtaid(_) | ClusterNctaid(_) | ClusterCtarank | ClusterNctarank => {
            Some(Feature::SregCluster)
        }
        GlobalTimer => Some(Feature::SregGlobaltimer),
        DynamicSmemSize => Some(Feature::SregSmemSize),
        _ => None,
    }
}

impl PtxPrinter {
    /// Reads a special register into `dst`: `mov.u32 %r0, %tid.x;`, `mov.u64 %rd0, %clock64;`.
    pub fn sreg_read(&mut self, dst: &str, sreg: NvSreg) -> Result<String, PtxError> {
        if is_thread_or_cta_sreg(sreg) {
            // Compact path: no type lookup, no feature floor.
            return Ok(format!("mov.u32 {dst}, {};", sreg_token(sreg)?));
        }
        let token = sreg_token(sreg)?;
        if let Some(f) = sreg_feature(sreg) {
            self.require(&[f])?;
        }
        Ok(format!("mov.{} {dst}, {token};", sreg_mov_type(sreg)))
    }

    /// `mov.u32 dst, %dynamic_smem_size;` (PTX 4.1).
    pub fn dynamic_smem_size(&mut self, dst: &str) -> Result<String, PtxError> {
        self.sreg_read(dst, NvSreg::DynamicSmemSize)
    }
}
