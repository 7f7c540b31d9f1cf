//! Warp collectives beyond match/redux/elect: float `redux.sync`, `shfl.sync` with its validity
//! predicate and `vote.sync.uni`.

use super::{nv_op, require_nv};
use crate::ir::{DType, InstKind, NvOp, ReduxFloatOp, ShuffleKind, VoteKind};
use crate::target::NvFeature;
use crate::trace::{current_loc, emit_at, new_value, op_scope, IntoVal, Shuffle, Val};

#[track_caller]
fn redux_f32(name: &'static str, op: ReduxFloatOp, value: Val<f32>) -> Val<f32> {
    let _op = op_scope(name);
    require_nv(name, NvFeature::ReduxFloat);
    Val::from_id(nv_op(NvOp::ReduxF32(op), &[DType::F32], vec![value.id()], None)[0])
}

/// `redux.sync.min.f32` over the full warp: every lane gets the minimum.
///
/// Only sm_100a and sm_103a have it (ptxas refuses it elsewhere, sm_90 and sm_100 included), so it
/// is CUDA-only: the capability check refuses it on the emulator and on any other target.
///
/// ```
/// use qd::prelude::*;
/// use qd::backend::{ptx::PtxTarget, Target};
/// #[qd::kernel]
/// fn fmin(a: &mut [f32]) {
///     qd::loop_config(block_dim = 32);
///     for i in range(32) {
///         a[i] = qd::nv::redux_min_f32(a[i]);
///     }
/// }
/// let k = fmin().into_kernel();
/// assert!(k.trace(&Target::ptx(PtxTarget::arch_specific(100))).is_ok());
/// let refused = k.trace(&Target::ptx(PtxTarget::sm(90))).unwrap_err();
/// assert!(refused.to_string().contains("sm_100a"), "{refused}");
/// ```
#[track_caller]
pub fn redux_min_f32(value: impl IntoVal<f32>) -> Val<f32> {
    redux_f32("nv.redux_min_f32", ReduxFloatOp::Min, value.into_val())
}

/// `redux.sync.max.f32` over the full warp (sm_100a/sm_103a; see [`redux_min_f32`]).
///
/// ```
/// use qd::prelude::*;
/// use qd::backend::{ptx::{lower_kernel, PtxTarget}, Target};
/// // Float redux.sync exists on sm_100a-class GPUs only.
/// let k = Kernel::range("fmax", 32, |k| {
///     let a = k.array::<f32>("a");
///     k.parallel_for(0, a.len(), |i| a.set(i, qd::nv::redux_max_f32(a.get(i))));
/// });
/// let ir = k.trace(&Target::ptx(PtxTarget::arch_specific(100))).unwrap();
/// assert!(lower_kernel(&ir, &PtxTarget::arch_specific(100)).unwrap().text.contains("redux.sync.max"));
/// assert!(k.trace(&Target::ptx(PtxTarget::sm(90))).is_err());
/// ```
#[track_caller]
pub fn redux_max_f32(value: impl IntoVal<f32>) -> Val<f32> {
    redux_f32("nv.redux_max_f32", ReduxFloatOp::Max, value.into_val())
}

/// `redux.sync.min.abs.NaN.f32`: the smallest magnitude over the full warp, NaN when any lane
/// holds NaN (sm_100a/sm_103a; see [`redux_min_f32`]).
///
/// ```
/// use qd::prelude::*;
/// use qd::backend::{ptx::{lower_kernel, PtxTarget}, Target};
/// let k = Kernel::range("fminabs", 32, |k| {
///     let a = k.array::<f32>("a");
///     k.parallel_for(0, a.len(), |i| a.set(i, qd::nv::redux_min_abs_nan_f32(a.get(i))));
/// });
/// let ir = k.trace(&Target::ptx(PtxTarget::arch_specific(100))).unwrap();
/// assert!(lower_kernel(&ir, &PtxTarget::arch_specific(100)).unwrap().text.contains(".abs.NaN"));
/// ```
#[track_caller]
pub fn redux_min_abs_nan_f32(value: impl IntoVal<f32>) -> Val<f32> {
    redux_f32("nv.redux_min_abs_nan_f32", ReduxFloatOp::MinAbsNan, value.into_val())
}

/// `redux.sync.max.abs.NaN.f32`: the largest magnitude, NaN when any lane holds NaN
/// (sm_100a/sm_103a; see [`redux_min_f32`]).
///
/// ```
/// use qd::prelude::*;
/// use qd::backend::{ptx::{lower_kernel, PtxTarget}, Target};
/// let k = Kernel::range("fmaxabs", 32, |k| {
///     let a = k.array::<f32>("a");
///     k.parallel_for(0, a.len(), |i| a.set(i, qd::nv::redux_max_abs_nan_f32(a.get(i))));
/// });
/// let ir = k.trace(&Target::ptx(PtxTarget::arch_specific(100))).unwrap();
/// assert!(lower_kernel(&ir, &PtxTarget::arch_specific(100)).unwrap().text.contains("redux.sync.max"));
/// ```
#[track_caller]
pub fn redux_max_abs_nan_f32(value: impl IntoVal<f32>) -> Val<f32> {
    redux_f32("nv.redux_max_abs_nan_f32", ReduxFloatOp::MaxAbsNan, value.into_val())
}

/// `shfl.sync` with its validity predicate: (the value read, whether the source lane was inside
/// the warp). `kind` picks the source as in `subgroup::shuffle*`: `Idx` reads lane `lane`, `Up`
/// lane `- lane`, `Down` lane `+ lane`, `Xor` lane `^ lane`. Where the source is outside the warp
/// the value is this lane's own and the predicate is false. With 64-bit values the predicate is
/// the low half's (both halves move from the same source).
///
/// ```
/// use qd::prelude::*;
/// use qd::ir::ShuffleKind;
/// #[qd::kernel]
/// fn up_valid(out: &mut [u32]) {
///     qd::loop_config(block_dim = 32);
///     for i in range(32) {
///         let (v, ok) = qd::nv::shuffle_valid(ShuffleKind::Up, i as u32, 3u32);
///         out[i] = if ok { v } else { 999u32 };
///     }
/// }
/// let d = Device::cpu();
/// let mut out = d.zeros::<u32>(32).unwrap();
/// up_valid().launch(&d, (&mut out,)).unwrap();
/// let want: Vec<u32> = (0..32).map(|l| if l >= 3 { l - 3 } else { 999 }).collect();
/// assert_eq!(out.to_vec().unwrap(), want);
/// ```
#[track_caller]
pub fn shuffle_valid<T: Shuffle>(
    kind: ShuffleKind,
    value: impl IntoVal<T>,
    lane: impl IntoVal<u32>,
) -> (Val<T>, Val<bool>) {
    let _op = op_scope("nv.shuffle_valid");
    let (value, lane) = (value.into_val(), lane.into_val());
    require_nv("nv.shuffle_valid", NvFeature::ShuffleValid);
    let loc = current_loc();
    let (dst, valid) = (new_value(T::DTYPE), new_value(DType::Bool));
    emit_at(InstKind::Shuffle { dst, valid: Some(valid), kind, value: value.id(), lane: lane.id() }, loc);
    (Val::from_id(dst), Val::from_id(valid))
}

/// `vote.sync.uni`: true on every lane when the predicate is the same on all lanes of the warp.
///
/// ```
/// use qd::prelude::*;
/// #[qd::kernel]
/// fn uni(out: &mut [u32]) {
///     qd::loop_config(block_dim = 64);
///     for i in range(64) {
///         // Uniform in the first warp, mixed in the second.
///         let p = i < 32 || i % 2 == 0;
///         out[i] = qd::nv::vote_uni(p) as u32;
///     }
/// }
/// let d = Device::cpu();
/// let mut out = d.zeros::<u32>(64).unwrap();
/// uni().launch(&d, (&mut out,)).unwrap();
/// let o = out.to_vec().unwrap();
/// assert!(o[..32].iter().all(|&x| x == 1) && o[32..].iter().all(|&x| x == 0));
/// ```
#[track_caller]
pub fn vote_uni(pred: impl IntoVal<bool>) -> Val<bool> {
    let _op = op_scope("nv.vote_uni");
    let pred = pred.into_val();
    require_nv("nv.vote_uni", NvFeature::VoteUni);
    let loc = current_loc();
    let dst = new_value(DType::Bool);
    emit_at(InstKind::Vote { dst, kind: VoteKind::Uni, pred: pred.id() }, loc);
    Val::from_id(dst)
}
