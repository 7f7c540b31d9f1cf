//! mbarrier: init, arrive (plain, `.noComplete`, `.expect_tx`), `expect_tx`, `complete_tx`,
//! `test_wait`, `try_wait` (with `.parity` and the suspend-time hint), `inval`, `pending_count`,
//! and the seed's `wait` lowered as a `try_wait.parity` loop.
//!
//! Token order: the compound stem in place (`mbarrier.arrive.expect_tx`, `mbarrier.try_wait.parity`
//! must stay together, ptx.md §1), then ordering, scope, state space, `.b64`. The rules ptxas 13.0
//! enforces are checked first: an ordering needs a scope and a scope needs an ordering, the scope is
//! `.cta` or `.cluster`, arrive takes release/relaxed and waits acquire/relaxed, `.noComplete`
//! never combines with `.cluster`, `init`/`inval`/`test_wait`/`try_wait` refuse `::cluster`, and a
//! `.shared::cluster` arrive writes the sink `_`.

use super::caps::Feature;
use super::errors::PtxError;
use super::modifier::{AtomicOrder, NvptxScope};
use super::printer::PtxPrinter;

/// The state space of the mbarrier object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MbarrierSpace {
    /// Generic address: no token.
    Generic,
    /// `.shared`.
    Shared,
    /// `.shared::cta` (PTX 7.8 spelling).
    SharedCta,
    /// `.shared::cluster` (another CTA's barrier; arrive/expect_tx/complete_tx only).
    SharedCluster,
}

impl MbarrierSpace {
    fn token(self) -> &'static str {
        match self {
            MbarrierSpace::Generic => "",
            MbarrierSpace::Shared => ".shared",
            MbarrierSpace::SharedCta => ".shared::cta",
            MbarrierSpace::SharedCluster => ".shared::cluster",
        }
    }
}

/// Ordering, scope and space of one mbarrier instruction. Ordering and scope go together.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MbarrierModifier {
    /// `.release`/`.relaxed` on arrives, `.acquire`/`.relaxed` on waits, `.relaxed` on tx ops.
    pub order: Option<AtomicOrder>,
    /// `.cta` or `.cluster`.
    pub scope: Option<NvptxScope>,
    /// The state space.
    pub space: MbarrierSpace,
}

impl MbarrierModifier {
    /// No ordering or scope, in `space`.
    pub fn new(space: MbarrierSpace) -> MbarrierModifier {
        MbarrierModifier { order: None, scope: None, space }
    }

    /// `.shared` with no ordering or scope (the seed's `[.shared]` templates).
    pub fn shared() -> MbarrierModifier {
        MbarrierModifier::new(MbarrierSpace::Shared)
    }

    /// Adds an ordering and its scope.
    pub fn sem(mut self, order: AtomicOrder, scope: NvptxScope) -> MbarrierModifier {
        self.order = Some(order);
        self.scope = Some(scope);
        self
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Arrive,
    NoComplete,
    Tx,
    Wait,
}

fn invalid(inst: &str, reason: impl Into<String>) -> PtxError {
    PtxError::InvalidForm { inst: inst.to_string(), reason: reason.into() }
}

impl PtxPrinter {
    /// Validates `m` for `stem`, records the features and returns the mnemonic up to `.b64`.
    fn mbarrier_mnemonic(
        &mut self,
        stem: &str,
        class: Class,
        m: &MbarrierModifier,
        extra: &[Feature],
    ) -> Result<String, PtxError> {
        let mut features = vec![Feature::MbarrierCore];
        features.extend_from_slice(extra);
        match (m.order, m.scope) {
            (None, None) => {}
            (Some(o), None) => return Err(invalid(stem, format!("ordering .{o} requires a scope"))),
            (None, Some(s)) => return Err(invalid(stem, format!("scope .{s} requires an ordering"))),
            (Some(o), Some(s)) => {
                let ok = match class {
                    Class::Arrive => matches!(o, AtomicOrder::Release | AtomicOrder::Relaxed),
                    Class::NoComplete => o == AtomicOrder::Release,
                    Class::Tx => o == AtomicOrder::Relaxed,
                    Class::Wait => matches!(o, AtomicOrder::Acquire | AtomicOrder::Relaxed),
                };
                if !ok {
                    return Err(invalid(stem, format!("ordering .{o} is not allowed")));
                }
                match s {
                    NvptxScope::Cta => {}
                    NvptxScope::Cluster if class != Class::NoComplete => features.push(Feature::MbarrierCluster),
                    other => return Err(PtxError::InvalidScope { inst: stem.to_string(), scope: other.to_string() }),
                }
                match o {
                    AtomicOrder::Relaxed if class != Class::Tx => features.push(Feature::MbarrierRelaxed),
                    AtomicOrder::Release | AtomicOrder::Acquire => features.push(Feature::MbarrierSemCta),
                    _ => {}
                }
            }
        }
        match m.space {
            MbarrierSpace::SharedCta => features.push(Feature::SharedCtaSpelling),
            MbarrierSpace::SharedCluster => {
                if matches!(class, Class::Wait | Class::NoComplete) {
                    return Err(PtxError::InvalidSpace { inst: stem.to_string(), space: ".shared::cluster".into() });
                }
                features.push(Feature::MbarrierCluster);
            }
            _ => {}
        }
        self.require(&features)?;
        let mut s = String::from(stem);
        if let (Some(o), Some(sc)) = (m.order, m.scope) {
            s.push_str(o.token());
            s.push_str(sc.fence_token().unwrap_or_default());
        }
        s.push_str(m.space.token());
        s.push_str(".b64");
        Ok(s)
    }

    fn init_like(&mut self, stem: &str, space: MbarrierSpace) -> Result<String, PtxError> {
        if space == MbarrierSpace::SharedCluster {
            return Err(PtxError::InvalidSpace { inst: stem.to_string(), space: ".shared::cluster".into() });
        }
        self.mbarrier_mnemonic(stem, Class::Arrive, &MbarrierModifier::new(space), &[])
    }

    /// `mbarrier.init[.shared].b64 [addr], count;`
    pub fn mbarrier_init(&mut self, space: MbarrierSpace, addr: &str, count: &str) -> Result<String, PtxError> {
        Ok(format!("{} {addr}, {count};", self.init_like("mbarrier.init", space)?))
    }

    /// `mbarrier.inval[.shared].b64 [addr];`
    pub fn mbarrier_inval(&mut self, space: MbarrierSpace, addr: &str) -> Result<String, PtxError> {
        Ok(format!("{} {addr};", self.init_like("mbarrier.inval", space)?))
    }

    fn arrive_state(&self, stem: &str, m: &MbarrierModifier, state: &str) -> Result<Vec<Feature>, PtxError> {
        match (m.space, state == "_") {
            (MbarrierSpace::SharedCluster, false) => {
                Err(invalid(stem, "a .shared::cluster arrive must write the sink _"))
            }
            (MbarrierSpace::Shared | MbarrierSpace::SharedCta, true) => Ok(vec![Feature::MbarrierArriveSink]),
            (MbarrierSpace::Generic, true) => Err(invalid(stem, "the sink _ needs a shared-space address")),
            _ => Ok(vec![]),
        }
    }

    /// `mbarrier.arrive{.sem.scope}{.space}.b64 state, [addr]{, count};` (`state` may be `_`).
    pub fn mbarrier_arrive(
        &mut self,
        m: &MbarrierModifier,
        state: &str,
        addr: &str,
        count: Option<&str>,
    ) -> Result<String, PtxError> {
        let mut extra = self.arrive_state("mbarrier.arrive", m, state)?;
        if count.is_some() {
            extra.push(Feature::MbarrierArriveCount);
        }
        let mn = self.mbarrier_mnemonic("mbarrier.arrive", Class::Arrive, m, &extra)?;
        Ok(match count {
            Some(c) => format!("{mn} {state}, {addr}, {c};"),
            None => format!("{mn} {state}, {addr};"),
        })
    }

    /// `mbarrier.arrive.noComplete{.release.cta}{.shared}.b64 state, [addr], count;`
    pub fn mbarrier_arrive_no_complete(
        &mut self,
        m: &MbarrierModifier,
        state: &str,
        addr: &str,
        count: &str,
    ) -> Result<String, PtxError> {
        let stem = "mbarrier.arrive.noComplete";
        if m.scope == Some(NvptxScope::Cluster) {
            return Err(invalid(stem, ".noComplete cannot be combined with .cluster"));
        }
        let extra = self.arrive_state(stem, m, state)?;
        let mn = self.mbarrier_mnemonic(stem, Class::NoComplete, m, &extra)?;
        Ok(format!("{mn} {state}, {addr}, {count};"))
    }

    /// `mbarrier.arrive.expect_tx{.sem.scope}{.space}.b64 state, [addr], txCount;` (sm_90).
    pub fn mbarrier_arrive_expect_tx(
        &mut self,
        m: &MbarrierModifier,
        state: &str,
        addr: &str,
        tx_count: &str,
    ) -> Result<String, PtxError> {
        let stem = "mbarrier.arrive.expect_tx";
        let mut extra = self.arrive_state(stem, m, state)?;
        extra.push(Feature::MbarrierTx);
        let mn = self.mbarrier_mnemonic(stem, Class::Arrive, m, &extra)?;
        Ok(format!("{mn} {state}, {addr}, {tx_count};"))
    }

    /// `mbarrier.expect_tx{.relaxed.scope}{.space}.b64 [addr], txCount;` (sm_90).
    pub fn mbarrier_expect_tx(&mut self, m: &MbarrierModifier, addr: &str, tx_count: &str) -> Result<String, PtxError> {
        let mn = self.mbarrier_mnemonic("mbarrier.expect_tx", Class::Tx, m, &[Feature::MbarrierTx])?;
        Ok(format!("{mn} {addr}, {tx_count};"))
    }

    /// `mbarrier.complete_tx{.relaxed.scope}{.space}.b64 [addr], txCount;` (sm_90).
    pub fn mbarrier_complete_tx(
        &mut self,
        m: &MbarrierModifier,
        addr: &str,
        tx_count: &str,
    ) -> Result<String, PtxError> {
        let mn = self.mbarrier_mnemonic("mbarrier.complete_tx", Class::Tx, m, &[Feature::MbarrierTx])?;
        Ok(format!("{mn} {addr}, {tx_count};"))
    }

    /// `mbarrier.test_wait{.parity}{.sem.scope}{.space}.b64 pred, [addr], state|parity;`
    /// (`.parity` takes the phase parity instead of an arrive state).
    pub fn mbarrier_test_wait(
        &mut self,
        m: &MbarrierModifier,
        parity: bool,
        pred: &str,
        addr: &str,
        state_or_parity: &str,
    ) -> Result<String, PtxError> {
        let (stem, extra): (&str, &[Feature]) = if parity {
            ("mbarrier.test_wait.parity", &[Feature::MbarrierTestWaitParity])
        } else {
            ("mbarrier.test_wait", &[])
        };
        let mn = self.mbarrier_mnemonic(stem, Class::Wait, m, extra)?;
        Ok(format!("{mn} {pred}, {addr}, {state_or_parity};"))
    }

    /// `mbarrier.try_wait{.parity}{.sem.scope}{.space}.b64 pred, [addr], state|parity{, hint};`
    /// with the optional suspend-time hint in nanoseconds (sm_90).
    pub fn mbarrier_try_wait(
        &mut self,
        m: &MbarrierModifier,
        parity: bool,
        pred: &str,
        addr: &str,
        state_or_parity: &str,
        suspend_hint: Option<&str>,
    ) -> Result<String, PtxError> {
        let stem = if parity { "mbarrier.try_wait.parity" } else { "mbarrier.try_wait" };
        let mn = self.mbarrier_mnemonic(stem, Class::Wait, m, &[Feature::MbarrierTryWait])?;
        Ok(match suspend_hint {
            Some(h) => format!("{mn} {pred}, {addr}, {state_or_parity}, {h};"),
            None => format!("{mn} {pred}, {addr}, {state_or_parity};"),
        })
    }

    /// `mbarrier.pending_count.b64 count, state;` (no state space).
    pub fn mbarrier_pending_count(&mut self, dst: &str, state: &str) -> Result<String, PtxError> {
        self.require(&[Feature::MbarrierCore])?;
        Ok(format!("mbarrier.pending_count.b64 {dst}, {state};"))
    }

    /// The seed's `mbarrier.wait` (which is not a PTX instruction) as a `try_wait.parity` loop:
    ///
    /// ```text
    /// label:
    /// mbarrier.try_wait.parity.shared.b64 %p1, [%r1], %r2;
    /// @!%p1 bra label;
    /// ```
    pub fn mbarrier_wait_parity_loop(
        &mut self,
        m: &MbarrierModifier,
        pred: &str,
        addr: &str,
        parity: &str,
        label: &str,
        suspend_hint: Option<&str>,
    ) -> Result<Vec<String>, PtxError> {
        let wait = self.mbarrier_try_wait(m, true, pred, addr, parity, suspend_hint)?;
        Ok(vec![format!("{label}:"), wait, format!("@!{pred} bra {label};")])
    }
}
