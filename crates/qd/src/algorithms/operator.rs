//! The binary operator of a reduction or scan: add, min, max, or the user's own with its identity.

use crate::simt::{block, subgroup};
use crate::trace::{Shuffle, Val};
use std::fmt;
use std::sync::Arc;

/// A traced binary operator on `Val<T>`.
type OpFn<T> = Arc<dyn Fn(Val<T>, Val<T>) -> Val<T> + Send + Sync>;

/// The binary operator of [`reduce`](super::Workspace::reduce) and the scans, with its identity.
///
/// [`add`](Operator::add), [`min`](Operator::min) and [`max`](Operator::max) take the primitives'
/// fast paths (one `redux.sync` per warp on CUDA for 32-bit integers, one `simd_sum` on Metal);
/// [`custom`](Operator::custom) is any operator the kernel can trace. Integer add wraps (D5); float
/// min/max keep the non-NaN operand, so their identities are `+inf` and `-inf`.
///
/// Scans need the operator to be associative; [`reduce`](super::Workspace::reduce) also needs it to be
/// commutative (like CUB's `DeviceReduce`), since blocks fold elements in the order they load them.
/// A float operator is associative only up to rounding, so float results may differ from a
/// sequential fold by rounding (and between runs of the look-back, which may add predecessors in
/// different groupings).
///
/// ```
/// use qd::algorithms::Operator;
/// // A bitwise-or scan: the identity is 0.
/// let or = Operator::<u32>::custom("or", 0, |a, b| a | b);
/// assert_eq!(or.name(), "or");
/// assert_eq!(Operator::<i32>::min().identity(), i32::MAX);
/// assert_eq!(Operator::<f32>::max().identity(), f32::NEG_INFINITY);
/// ```
#[derive(Clone)]
pub struct Operator<T: Shuffle> {
    kind: Kind<T>,
}

#[derive(Clone)]
enum Kind<T: Shuffle> {
    Add,
    Min,
    Max,
    Custom { name: String, identity: T, f: OpFn<T> },
}

impl<T: Shuffle> Operator<T> {
    /// `a + b` (wrapping for integers); identity 0.
    ///
    /// ```
    /// use qd::algorithms::{reduce, Operator};
    /// use qd::prelude::*;
    /// let d = Device::cpu();
    /// let x = d.array_from(&[0.5f32, 0.25, 0.25]).unwrap();
    /// assert_eq!(reduce(&d, &x, &Operator::add()).unwrap(), 1.0);
    /// assert_eq!(Operator::<f32>::add().identity(), 0.0);
    /// ```
    pub fn add() -> Operator<T> {
        Operator { kind: Kind::Add }
    }

    /// `min(a, b)`; identity `T::MAX` (`+inf` for floats).
    ///
    /// ```
    /// use qd::algorithms::{inclusive_scan, Operator};
    /// use qd::prelude::*;
    /// // Running minimum.
    /// let d = Device::cpu();
    /// let x = d.array_from(&[5i64, 3, 4, 1, 2]).unwrap();
    /// let y = d.zeros::<i64>(5).unwrap();
    /// inclusive_scan(&d, &x, &y, &Operator::min()).unwrap();
    /// assert_eq!(y.to_vec().unwrap(), [5, 3, 3, 1, 1]);
    /// ```
    pub fn min() -> Operator<T> {
        Operator { kind: Kind::Min }
    }

    /// `max(a, b)`; identity `T::MIN` (`-inf` for floats, 0 for unsigned integers).
    ///
    /// ```
    /// use qd::algorithms::{reduce, Operator};
    /// use qd::prelude::*;
    /// let d = Device::cpu();
    /// let x = d.array_from(&[3u32, 9, 2]).unwrap();
    /// assert_eq!(reduce(&d, &x, &Operator::max()).unwrap(), 9);
    /// assert_eq!(Operator::<u32>::max().identity(), 0); // the smallest u32
    /// ```
    pub fn max() -> Operator<T> {
        Operator { kind: Kind::Max }
    }

    /// The user's operator `f`, traced into the algorithms' kernels, with its `identity`
    /// (`f(identity, x) == f(x, identity) == x` for every `x`: partial tiles are padded with it).
    ///
    /// `name` goes into the kernels' names (letters, digits and `_` are kept, anything else becomes
    /// `_`). The kernels are compiled once per operator value: clone an `Operator` to reuse its
    /// kernels, since two calls of `custom` give two operators even with the same name.
    ///
    /// ```
    /// use qd::algorithms::{exclusive_scan, Operator};
    /// use qd::prelude::*;
    /// // A running bitwise or, with its identity 0.
    /// let or = Operator::custom("or", 0u32, |a: Val<u32>, b: Val<u32>| a | b);
    /// let d = Device::cpu();
    /// let x = d.array_from(&[1u32, 4, 2, 8]).unwrap();
    /// let y = d.zeros::<u32>(4).unwrap();
    /// exclusive_scan(&d, &x, &y, &or).unwrap();
    /// assert_eq!(y.to_vec().unwrap(), [0, 1, 5, 7]);
    /// ```
    pub fn custom(
        name: &str,
        identity: T,
        f: impl Fn(Val<T>, Val<T>) -> Val<T> + Send + Sync + 'static,
    ) -> Operator<T> {
        Operator { kind: Kind::Custom { name: name.to_string(), identity, f: Arc::new(f) } }
    }

    /// The identity the operator was given (or the built-in one's).
    ///
    /// ```
    /// use qd::algorithms::Operator;
    /// assert_eq!(Operator::<i32>::min().identity(), i32::MAX);
    /// assert_eq!(Operator::<f64>::max().identity(), f64::NEG_INFINITY);
    /// assert_eq!(Operator::custom("mul", 1i32, |a, b| a * b).identity(), 1);
    /// ```
    pub fn identity(&self) -> T {
        match &self.kind {
            Kind::Add => T::ZERO,
            Kind::Min => T::MAX,
            Kind::Max => T::MIN,
            Kind::Custom { identity, .. } => *identity,
        }
    }

    /// `add`, `min`, `max` or the custom operator's name.
    ///
    /// ```
    /// use qd::algorithms::Operator;
    /// assert_eq!(Operator::<f32>::add().name(), "add");
    /// assert_eq!(Operator::custom("sum of squares", 0u32, |a, b| a * a + b * b).name(), "sum of squares");
    /// ```
    pub fn name(&self) -> &str {
        match &self.kind {
            Kind::Add => "add",
            Kind::Min => "min",
            Kind::Max => "max",
            Kind::Custom { name, .. } => name,
        }
    }

    /// What tells this operator's kernels apart in the algorithms' kernel cache: the name, and for
    /// a custom operator the address of its closure (kept alive by the cached kernels, so never
    /// reused for another closure).
    pub(crate) fn key(&self) -> String {
        match &self.kind {
            Kind::Custom { name, identity, f } => {
                format!("{name}@{:p}:{:x}", Arc::as_ptr(f) as *const u8, identity.to_bits())
            }
            _ => self.name().to_string(),
        }
    }

    /// The name as it appears in a kernel name: identifier characters only.
    pub(crate) fn ident(&self) -> String {
        self.name().chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect()
    }

    /// `op(a, b)` while tracing.
    #[track_caller]
    pub(crate) fn apply(&self, a: Val<T>, b: Val<T>) -> Val<T> {
        match &self.kind {
            Kind::Add => a + b,
            Kind::Min => a.min(b),
            Kind::Max => a.max(b),
            Kind::Custom { f, .. } => f(a, b),
        }
    }

    /// The identity as a traced constant.
    #[track_caller]
    pub(crate) fn identity_val(&self) -> Val<T> {
        Val::constant(self.identity())
    }

    /// Inclusive scan over the whole subgroup (the primitives' one-instruction paths for add, min and
    /// max where the target has them).
    #[track_caller]
    pub(crate) fn subgroup_inclusive(&self, v: Val<T>) -> Val<T> {
        match &self.kind {
            Kind::Add => subgroup::inclusive_add(v),
            Kind::Min => subgroup::inclusive_min(v),
            Kind::Max => subgroup::inclusive_max(v),
            Kind::Custom { f, .. } => {
                subgroup::inclusive_scan_with(v, subgroup::log2_group_size(), &|a: Val<T>, b: Val<T>| f(a, b))
            }
        }
    }

    /// Block reduction of `v` over `block_dim` threads, valid in thread 0.
    #[track_caller]
    pub(crate) fn block_reduce(&self, v: Val<T>, block_dim: u32) -> Val<T> {
        match &self.kind {
            Kind::Add => block::reduce_add(v, block_dim),
            Kind::Min => block::reduce_min(v, block_dim),
            Kind::Max => block::reduce_max(v, block_dim),
            Kind::Custom { f, .. } => block::reduce(v, block_dim, |a, b| f(a, b)),
        }
    }
}

impl<T: Shuffle> fmt::Debug for Operator<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Operator::{}<{}>(identity {:?})", self.name(), T::DTYPE, self.identity())
    }
}
