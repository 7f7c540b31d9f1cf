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
#[track_caller]
pub fn while_(cond: impl FnOnce() -> Val<bool>, body: impl FnOnce()) {
    loop_(|| {
        let stop = !cond();
        if_(stop, break_);
        body();
    });
}

/// `for i in begin..end { body(i) }`, a sequential loop in each thread.
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
#[track_caller]
pub fn break_() {
    jump(InstKind::Break, "break_");
}

/// Starts the next iteration of the innermost loop.
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
    #[track_caller]
    pub fn get(self) -> Val<T> {
        self.check_trace();
        let loc = SrcLoc::caller();
        let dst = new_value(T::DTYPE);
        emit_at(InstKind::LocalGet { dst, local: self.id }, loc);
        Val::from_id(dst)
    }

    /// Assigns a new value.
    #[track_caller]
    pub fn set(self, v: impl IntoVal<T>) {
        self.check_trace();
        let loc = SrcLoc::caller();
        let value = v.into_val().id();
        emit_at(InstKind::LocalSet { local: self.id, value }, loc);
    }
}
