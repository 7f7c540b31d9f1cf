//! Control flow of macro kernels: `if` on compile-time or device conditions, loops, the host
//! signals that leave an unrolled loop, and the result slot of a `#[qd::func]` that returns early.

use crate::trace::{if_else, loop_, trace_error, var, IntoVal, Scalar, Val, Var};

/// What a branch body asks of the enclosing unrolled (`qd::unroll`, trace-time) loop: nothing,
/// `break` or `continue`. Bodies of `if` are closures, so they hand these back instead of leaving
/// the Rust loop themselves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub enum Flow {
    /// Go on with the next statement.
    Normal,
    /// Leave the unrolled loop.
    Break,
    /// Start its next iteration.
    Continue,
}

/// The condition of an `if` in kernel code, with the values of its two branches `A` and `B`.
///
/// A `bool` (a compile-time value) traces only the branch it selects (the seeds' `static`); a
/// `Val<bool>` traces both under a device `if` and merges their values in a local.
#[diagnostic::on_unimplemented(
    message = "`if` in kernel code needs a `bool` or `Val<bool>` condition whose branches have one type; got `{Self}` with branches `{A}` and `{B}`",
    label = "compare to get a condition (`x != 0`); both branches must give the same scalar type or `()`"
)]
pub trait If<A, B> {
    /// The value of the whole `if`.
    type Output;
    /// Runs (traces) the branches.
    #[track_caller]
    fn branch(self, then: impl FnOnce() -> A, otherwise: impl FnOnce() -> B) -> Self::Output;
}

impl<A> If<A, A> for bool {
    type Output = A;
    fn branch(self, then: impl FnOnce() -> A, otherwise: impl FnOnce() -> A) -> A {
        if self {
            then()
        } else {
            otherwise()
        }
    }
}

impl<T: Scalar> If<Val<T>, T> for bool {
    type Output = Val<T>;
    #[track_caller]
    fn branch(self, then: impl FnOnce() -> Val<T>, otherwise: impl FnOnce() -> T) -> Val<T> {
        if self {
            then()
        } else {
            otherwise().into_val()
        }
    }
}

impl<T: Scalar> If<T, Val<T>> for bool {
    type Output = Val<T>;
    #[track_caller]
    fn branch(self, then: impl FnOnce() -> T, otherwise: impl FnOnce() -> Val<T>) -> Val<T> {
        if self {
            then().into_val()
        } else {
            otherwise()
        }
    }
}

impl If<(), ()> for Val<bool> {
    type Output = ();
    #[track_caller]
    fn branch(self, then: impl FnOnce(), otherwise: impl FnOnce()) {
        if_else(self, then, otherwise);
    }
}

impl If<Flow, Flow> for Val<bool> {
    type Output = Flow;
    #[track_caller]
    fn branch(self, then: impl FnOnce() -> Flow, otherwise: impl FnOnce() -> Flow) -> Flow {
        let asked = std::cell::Cell::new(Flow::Normal);
        if_else(
            self,
            || asked.set(merge_flow(asked.get(), then())),
            || asked.set(merge_flow(asked.get(), otherwise())),
        );
        if asked.get() != Flow::Normal {
            trace_error(
                "if",
                "`break`/`continue` of a `qd::unroll` loop under a device condition: the loop is unrolled \
                 while tracing, so only a compile-time condition can leave it; use a device loop \
                 (`for i in a..b`, `while`, `loop`) instead",
            );
        }
        Flow::Normal
    }
}

fn merge_flow(a: Flow, b: Flow) -> Flow {
    if a == Flow::Normal {
        b
    } else {
        a
    }
}

/// Two branch values that merge into one device value: `Val<T>` or a compile-time `T`, either side.
#[diagnostic::on_unimplemented(
    message = "the branches of a device `if` give `{Self}` and `{B}`, which do not merge into one device value",
    label = "both branches must give the same scalar type (as `Val<T>` or a compile-time value), or tuples of them"
)]
pub trait Join<B> {
    /// The scalar type of the merged value.
    type Out: Scalar;
    /// The left value as a device value.
    #[track_caller]
    fn left(self) -> Val<Self::Out>;
    /// The right value as a device value.
    #[track_caller]
    fn right(b: B) -> Val<Self::Out>;
}

macro_rules! join {
    ($a:ty, $b:ty) => {
        impl<T: Scalar> Join<$b> for $a {
            type Out = T;
            #[track_caller]
            fn left(self) -> Val<T> {
                self.into_val()
            }
            #[track_caller]
            fn right(b: $b) -> Val<T> {
                b.into_val()
            }
        }
    };
}
join!(Val<T>, Val<T>);
join!(Val<T>, T);
join!(T, Val<T>);
join!(T, T);

impl<A: Join<B>, B> If<A, B> for Val<bool> {
    type Output = Val<A::Out>;
    #[track_caller]
    fn branch(self, then: impl FnOnce() -> A, otherwise: impl FnOnce() -> B) -> Val<A::Out> {
        let slot = zeroed::<A::Out>();
        if_else(self, || slot.set(then().left()), || slot.set(A::right(otherwise())));
        slot.get()
    }
}

macro_rules! join_tuple {
    ($(($($a:ident $b:ident $i:tt),*)),*) => {$(
        impl<$($a: Join<$b>, $b),*> If<($($a,)*), ($($b,)*)> for Val<bool> {
            type Output = ($(Val<$a::Out>,)*);
            #[track_caller]
            fn branch(self, then: impl FnOnce() -> ($($a,)*), otherwise: impl FnOnce() -> ($($b,)*)) -> Self::Output {
                let slots = ($(zeroed::<$a::Out>(),)*);
                if_else(
                    self,
                    || {
                        let v = then();
                        $(slots.$i.set(v.$i.left());)*
                    },
                    || {
                        let v = otherwise();
                        $(slots.$i.set($a::right(v.$i));)*
                    },
                );
                ($(slots.$i.get(),)*)
            }
        }
    )*};
}
join_tuple!((A0 B0 0, A1 B1 1), (A0 B0 0, A1 B1 1, A2 B2 2), (A0 B0 0, A1 B1 1, A2 B2 2, A3 B3 3));

/// A local holding zero: the slot a branch or an early return writes its value into.
#[track_caller]
fn zeroed<T: Scalar>() -> Var<T> {
    var(Val::constant(T::from_bits(0)))
}

/// `if cond { then } else { otherwise }` in kernel code (see [`If`]).
#[track_caller]
pub fn branch<C: If<A, B>, A, B>(cond: C, then: impl FnOnce() -> A, otherwise: impl FnOnce() -> B) -> C::Output {
    cond.branch(then, otherwise)
}

/// `while cond { body }` in kernel code: a device loop whose condition is traced at the top of
/// every iteration (a compile-time `bool` condition becomes a constant).
#[track_caller]
pub fn while_<C: IntoVal<bool>>(cond: impl FnOnce() -> C, body: impl FnOnce()) {
    crate::trace::while_(|| cond().into_val(), body)
}

/// Iterates a compile-time collection or range while tracing: `for i in qd::unroll(0..4)` traces
/// the body four times, with `i` a plain integer each time (no loop in the kernel).
///
/// ```
/// # use qd::prelude::*;
/// #[qd::kernel(block_dim = 32)]
/// fn four(out: &mut [i32]) {
///     let t = block::thread_idx();
///     for k in qd::unroll(0..4) {
///         out[t * 4 + k] = k;
///     }
/// }
/// let device = Device::cpu();
/// let mut out = device.zeros::<i32>(128).unwrap();
/// four().launch_grid(&device, 1, (&mut out,)).unwrap();
/// assert_eq!(&out.to_vec().unwrap()[..8], &[0, 1, 2, 3, 0, 1, 2, 3]);
/// ```
#[diagnostic::on_unimplemented(
    message = "`qd::unroll` needs a compile-time iterator, and `{Self}` is not one",
    label = "a range of device values (`Val<T>`) is not known while tracing",
    note = "a loop over run-time bounds is a device loop: `for i in a..b`"
)]
pub trait Unroll {
    /// The iterator.
    type Iter: Iterator;
    /// Starts iterating.
    fn unroll(self) -> Self::Iter;
}

impl<I: IntoIterator> Unroll for I {
    type Iter = I::IntoIter;
    fn unroll(self) -> I::IntoIter {
        self.into_iter()
    }
}

/// See [`Unroll`]: `for i in qd::unroll(0..N)` is unrolled while tracing.
pub fn unroll<I: Unroll>(items: I) -> I::Iter {
    items.unroll()
}

/// The result of a `#[qd::func]` that returns from inside device control flow: the body runs in a
/// one-iteration device loop, and `return v` stores `v` here and leaves that loop.
#[diagnostic::on_unimplemented(
    message = "a `#[qd::func]` that returns early must return `()`, a scalar or a tuple of scalars, not `{Self}`"
)]
pub trait ReturnValue: Sized {
    /// The locals that hold the value.
    type Slot: Copy;
    /// Declares them.
    #[track_caller]
    fn slot() -> Self::Slot;
    /// Stores a value.
    #[track_caller]
    fn put(slot: Self::Slot, v: Self);
    /// Reads it back after the loop.
    #[track_caller]
    fn take(slot: Self::Slot) -> Self;
}

impl ReturnValue for () {
    type Slot = ();
    fn slot() {}
    fn put(_: (), _: ()) {}
    fn take(_: ()) {}
}

impl<T: Scalar> ReturnValue for Val<T> {
    type Slot = Var<T>;
    #[track_caller]
    fn slot() -> Var<T> {
        zeroed()
    }
    #[track_caller]
    fn put(slot: Var<T>, v: Val<T>) {
        slot.set(v)
    }
    #[track_caller]
    fn take(slot: Var<T>) -> Val<T> {
        slot.get()
    }
}

macro_rules! return_tuple {
    ($(($($a:ident $i:tt),*)),*) => {$(
        impl<$($a: ReturnValue),*> ReturnValue for ($($a,)*) {
            type Slot = ($($a::Slot,)*);
            #[track_caller]
            fn slot() -> Self::Slot {
                ($($a::slot(),)*)
            }
            #[track_caller]
            fn put(slot: Self::Slot, v: Self) {
                $($a::put(slot.$i, v.$i);)*
            }
            #[track_caller]
            fn take(slot: Self::Slot) -> Self {
                ($($a::take(slot.$i),)*)
            }
        }
    )*};
}
return_tuple!((A0 0, A1 1), (A0 0, A1 1, A2 2), (A0 0, A1 1, A2 2, A3 3));

/// The result slot of a `#[qd::func]` with an early `return` (see [`ReturnValue`]).
pub struct Returns<R: ReturnValue> {
    slot: R::Slot,
}

impl<R: ReturnValue> Clone for Returns<R> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<R: ReturnValue> Copy for Returns<R> {}

impl<R: ReturnValue> Returns<R> {
    /// Runs `body` in a one-iteration device loop; `body` ends with the value of its last
    /// expression, and every `return v` inside it is [`Returns::early`].
    #[track_caller]
    pub fn run(body: impl FnOnce(Self) -> R) -> R {
        let slot = R::slot();
        let this = Returns { slot };
        loop_(|| {
            let v = body(this);
            R::put(slot, v);
            crate::trace::break_();
        });
        R::take(slot)
    }

    /// `return v` from inside the body: stores `v` and leaves the one-iteration loop.
    #[track_caller]
    pub fn early(self, v: R) {
        R::put(self.slot, v);
        crate::trace::break_();
    }
}
