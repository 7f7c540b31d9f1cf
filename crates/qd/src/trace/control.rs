//! Structured control flow and mutable variables (D2).

use super::scalar::{Int, Scalar};
use super::value::{new_value, IntoVal, Val};
use super::{current_loc, emit_at, pop_block, push_block_at, with};
use crate::ir::{InstKind, LocalDecl, LocalId, SrcLoc};
use std::marker::PhantomData;

/// Runs `then` on the lanes where `cond` holds.
///
/// ```
/// # use qd::prelude::*;
/// # let k = Kernel::explicit("k", 32, |k| { let out = k.array::<i32>("out");
/// let t = block::thread_idx();
/// if_(t.eq(0), || out.set(0, 7));
/// # });
/// # let d = Device::cpu(); let out = d.array_from(&[0i32]).unwrap();
/// # d.launch_grid(&k, 1, &[out.arg()]).unwrap(); assert_eq!(out.to_vec().unwrap(), [7]);
/// ```
#[track_caller]
pub fn if_(cond: impl IntoVal<bool>, then: impl FnOnce()) {
    if_else(cond, then, || {});
}

/// Runs `then` where `cond` holds and `otherwise` elsewhere.
///
/// ```
/// use qd::prelude::*;
/// let k = Kernel::range("abs", 32, |k| {
///     let a = k.array::<i32>("a");
///     k.parallel_for(0, a.len(), |i| {
///         let v = a.get(i);
///         if_else(v.lt(0), || a.set(i, -v), || a.set(i, v));
///     });
/// });
/// let d = Device::cpu();
/// let a = d.array_from(&[-3i32, 4, -5]).unwrap();
/// d.launch(&k, &[a.arg()]).unwrap();
/// assert_eq!(a.to_vec().unwrap(), [3, 4, 5]);
/// ```
#[track_caller]
pub fn if_else(cond: impl IntoVal<bool>, then: impl FnOnce(), otherwise: impl FnOnce()) {
    let loc = current_loc();
    let cond = cond.into_val().id();
    if push_block_at(loc) {
        then();
    }
    let then_block = pop_block();
    if push_block_at(loc) {
        otherwise();
    }
    let else_block = pop_block();
    emit_at(InstKind::If { cond, then_block, else_block }, loc);
}

/// Repeats `body` until it calls [`break_`] (or the thread returns).
///
/// ```
/// use qd::prelude::*;
/// // The first power of two above each value.
/// let k = Kernel::range("pow2", 32, |k| {
///     let a = k.array::<i32>("a");
///     k.parallel_for(0, a.len(), |i| {
///         let p = var(1);
///         loop_(|| {
///             if_(p.get().gt(a.get(i)), break_);
///             p.set(p.get() * 2);
///         });
///         a.set(i, p.get());
///     });
/// });
/// let d = Device::cpu();
/// let a = d.array_from(&[0i32, 5, 8]).unwrap();
/// d.launch(&k, &[a.arg()]).unwrap();
/// assert_eq!(a.to_vec().unwrap(), [1, 8, 16]);
/// ```
#[track_caller]
pub fn loop_(body: impl FnOnce()) {
    let loc = current_loc();
    with(|s| s.loop_depth += 1);
    if push_block_at(loc) {
        body();
    }
    let body = pop_block();
    with(|s| s.loop_depth -= 1);
    emit_at(InstKind::Loop { body }, loc);
}

/// `while cond() { body() }`: `cond` is traced at the top of every iteration.
///
/// ```
/// use qd::prelude::*;
/// // Integer square roots by counting.
/// let k = Kernel::range("isqrt", 32, |k| {
///     let a = k.array::<i32>("a");
///     k.parallel_for(0, a.len(), |i| {
///         let r = var(0);
///         while_(|| ((r.get() + 1) * (r.get() + 1)).le(a.get(i)), || r.set(r.get() + 1));
///         a.set(i, r.get());
///     });
/// });
/// let d = Device::cpu();
/// let a = d.array_from(&[0i32, 15, 16, 99]).unwrap();
/// d.launch(&k, &[a.arg()]).unwrap();
/// assert_eq!(a.to_vec().unwrap(), [0, 3, 4, 9]);
/// ```
#[track_caller]
pub fn while_(cond: impl FnOnce() -> Val<bool>, body: impl FnOnce()) {
    loop_(|| {
        let stop = !cond();
        if_(stop, break_);
        body();
    });
}

/// `for i in begin..end { body(i) }`, a sequential loop in each thread.
///
/// ```
/// use qd::prelude::*;
/// // Each thread sums its row of a 4-column matrix.
/// let k = Kernel::range("rows", 32, |k| {
///     let m = k.array::<f32>("m");
///     let sums = k.array::<f32>("sums");
///     k.parallel_for(0, sums.len(), |r| {
///         let acc = var(0.0f32);
///         for_range(0, 4, |c| acc.set(acc.get() + m.get(r * 4 + c)));
///         sums.set(r, acc.get());
///     });
/// });
/// let d = Device::cpu();
/// let m = d.array_from(&(0..8).map(|x| x as f32).collect::<Vec<_>>()).unwrap();
/// let sums = d.zeros::<f32>(2).unwrap();
/// d.launch(&k, &[m.arg(), sums.arg()]).unwrap();
/// assert_eq!(sums.to_vec().unwrap(), [6.0, 22.0]);
/// ```
#[track_caller]
pub fn for_range<T: Int>(begin: impl IntoVal<T>, end: impl IntoVal<T>, body: impl FnOnce(Val<T>)) {
    let (begin, end) = (begin.into_val(), end.into_val());
    let i = var(begin);
    loop_(|| {
        let cur = i.get();
        if_(cur.ge(end), break_);
        // Advance before the body so that `continue_` inside it moves to the next index.
        i.set(cur + T::ONE);
        body(cur);
    });
}

/// Leaves the innermost loop.
///
/// ```
/// use qd::prelude::*;
/// // The index of the first zero in each row of 8 (8 when there is none).
/// let k = Kernel::range("first_zero", 32, |k| {
///     let m = k.array::<i32>("m");
///     let out = k.array::<i32>("out");
///     k.parallel_for(0, out.len(), |r| {
///         let found = var(8);
///         for_range(0, 8, |c| {
///             if_(m.get(r * 8 + c).eq(0), || {
///                 found.set(c);
///                 break_();
///             });
///         });
///         out.set(r, found.get());
///     });
/// });
/// let d = Device::cpu();
/// let m = d.array_from(&[1i32, 1, 0, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]).unwrap();
/// let out = d.zeros::<i32>(2).unwrap();
/// d.launch(&k, &[m.arg(), out.arg()]).unwrap();
/// assert_eq!(out.to_vec().unwrap(), [2, 8]);
/// ```
#[track_caller]
pub fn break_() {
    jump(InstKind::Break, "break_");
}

/// Starts the next iteration of the innermost loop.
///
/// ```
/// use qd::prelude::*;
/// // Sum the odd numbers below each value.
/// let k = Kernel::range("odd_sum", 32, |k| {
///     let a = k.array::<i32>("a");
///     k.parallel_for(0, a.len(), |i| {
///         let s = var(0);
///         for_range(0, a.get(i), |j| {
///             if_((j % 2).eq(0), continue_);
///             s.set(s.get() + j);
///         });
///         a.set(i, s.get());
///     });
/// });
/// let d = Device::cpu();
/// let a = d.array_from(&[10i32, 5]).unwrap();
/// d.launch(&k, &[a.arg()]).unwrap();
/// assert_eq!(a.to_vec().unwrap(), [25, 4]);
/// ```
#[track_caller]
pub fn continue_() {
    jump(InstKind::Continue, "continue_");
}

#[track_caller]
fn jump(kind: InstKind, name: &str) {
    let loc = current_loc();
    let in_loop = with(|s| s.loop_depth > 0);
    if !in_loop {
        with(|s| s.fail(name, loc, format!("{name}() outside of a loop")));
        return;
    }
    emit_at(kind, loc);
}

/// Ends the calling thread (allowed outside loops, D2).
///
/// ```
/// use qd::prelude::*;
/// // Threads past the data leave early (an explicit kernel launched on whole blocks).
/// let k = Kernel::explicit("guarded", 32, |k| {
///     let a = k.array::<i32>("a");
///     let n = k.scalar::<i32>("n");
///     let g = block::global_thread_idx();
///     if_(g.ge(n), return_);
///     a.set(g, g);
/// });
/// let d = Device::cpu();
/// let a = d.zeros::<i32>(40).unwrap();
/// d.launch_grid(&k, 2, &[a.arg(), Arg::scalar(40i32)]).unwrap(); // 64 threads, 40 elements
/// assert_eq!(a.to_vec().unwrap()[39], 39);
/// ```
#[track_caller]
pub fn return_() {
    let loc = current_loc();
    let (in_loop, in_range) = with(|s| (s.loop_depth > 0, s.in_range));
    if in_loop {
        with(|s| s.fail("return_", loc, "an early return inside a loop is not supported (D2); break out first".into()));
        return;
    }
    if in_range {
        let why = "return_ inside parallel_for would also skip the thread's later grid-stride iterations (D2); \
                   put the rest of the body under if_ instead";
        with(|s| s.fail("return_", loc, why.into()));
        return;
    }
    emit_at(InstKind::Return, loc);
}

/// A mutable per-thread variable (`let mut` in kernel code).
pub struct Var<T> {
    id: LocalId,
    /// The trace that declared it (a variable kept past its trace is a trace error, not a panic).
    generation: u32,
    _t: PhantomData<T>,
}

impl<T> Clone for Var<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Var<T> {}

/// Declares a variable holding `init`.
///
/// ```
/// use qd::prelude::*;
/// // A value that changes at run time lives in a var.
/// let k = Kernel::range("count_down", 32, |k| {
///     let a = k.array::<i32>("a");
///     k.parallel_for(0, a.len(), |i| {
///         let x = var(a.get(i));
///         let steps = var(0);
///         while_(|| x.get().gt(0), || {
///             x.set(x.get() - 3);
///             steps.set(steps.get() + 1);
///         });
///         a.set(i, steps.get());
///     });
/// });
/// let d = Device::cpu();
/// let a = d.array_from(&[0i32, 1, 3, 10]).unwrap();
/// d.launch(&k, &[a.arg()]).unwrap();
/// assert_eq!(a.to_vec().unwrap(), [0, 1, 1, 4]);
/// ```
#[track_caller]
pub fn var<T: Scalar>(init: impl IntoVal<T>) -> Var<T> {
    let init = init.into_val();
    let id = with(|s| {
        s.kernel.locals.push(LocalDecl { dtype: T::DTYPE });
        LocalId(s.kernel.locals.len() as u32 - 1)
    });
    let v = Var { id, generation: with(|s| s.generation), _t: PhantomData };
    v.set(init);
    v
}

impl<T: Scalar> Var<T> {
    /// Records an error when this variable belongs to another kernel's trace.
    #[track_caller]
    fn check_trace(self) {
        let loc = SrcLoc::caller();
        with(|s| {
            if s.generation != self.generation {
                s.fail("var", loc, "uses a variable declared by another kernel's trace".into());
            }
        });
    }

    /// Current value.
    ///
    /// ```
    /// use qd::prelude::*;
    /// let k = Kernel::range("acc", 32, |k| {
    ///     let a = k.array::<f64>("a");
    ///     k.parallel_for(0, a.len(), |i| {
    ///         let acc = var(1.0f64);
    ///         for_range(0, 3, |_| acc.set(acc.get() * a.get(i)));
    ///         a.set(i, acc.get()); // the value now
    ///     });
    /// });
    /// let d = Device::cpu();
    /// let a = d.array_from(&[2.0f64, 0.5]).unwrap();
    /// d.launch(&k, &[a.arg()]).unwrap();
    /// assert_eq!(a.to_vec().unwrap(), [8.0, 0.125]);
    /// ```
    #[track_caller]
    pub fn get(self) -> Val<T> {
        self.check_trace();
        let loc = SrcLoc::caller();
        let dst = new_value(T::DTYPE);
        emit_at(InstKind::LocalGet { dst, local: self.id }, loc);
        Val::from_id(dst)
    }

    /// Assigns a new value.
    ///
    /// ```
    /// use qd::prelude::*;
    /// let k = Kernel::range("clamp", 32, |k| {
    ///     let a = k.array::<i32>("a");
    ///     k.parallel_for(0, a.len(), |i| {
    ///         let v = var(a.get(i));
    ///         if_(v.get().gt(10), || v.set(10));
    ///         a.set(i, v.get());
    ///     });
    /// });
    /// let d = Device::cpu();
    /// let a = d.array_from(&[3i32, 30]).unwrap();
    /// d.launch(&k, &[a.arg()]).unwrap();
    /// assert_eq!(a.to_vec().unwrap(), [3, 10]);
    /// ```
    #[track_caller]
    pub fn set(self, v: impl IntoVal<T>) {
        self.check_trace();
        let loc = SrcLoc::caller();
        let value = v.into_val().id();
        emit_at(InstKind::LocalSet { local: self.id, value }, loc);
    }
}
