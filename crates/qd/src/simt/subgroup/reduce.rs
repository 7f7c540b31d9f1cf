//! Reductions: `reduce_*` (shuffle_down tree, valid in tile lane 0), `reduce_all_*` (xor butterfly,
//! valid and bitwise identical in every lane) and `segmented_reduce_*` (inclusive scans that restart
//! at every head flag).

use super::{
    ballot, check_log2_size, lane_u32, log2_group_size, shuffle_down, shuffle_up, shuffle_xor, Op, Predicate, Shuffle,
};
use crate::ir::{DType, InstKind, NvOp, ReduxOp, ScanKind};
use crate::target::{Feature, NvFeature};
use crate::trace::{current_loc, emit_at, new_value, op_scope, select, target, IntoVal, Val};

/// The sm_80+ shortcut: a full-warp 32-bit integer add/min/max is one `redux.sync`.
///
/// Emitted as `InstKind::Nv { op: NvOp::Redux(..), dsts: [result], args: [value] }` over the full
/// warp (like every collective in the IR, the member mask is implied full); the signedness comes
/// from the value's dtype (`.s32` / `.u32`). `redux.sync` gives the result to every lane, so it
/// serves both `reduce_*` and `reduce_all_*`.
#[track_caller]
fn redux_full_warp<T: Shuffle>(op: Op, v: Val<T>, log2_size: u32) -> Option<Val<T>> {
    let t = target();
    if !t.has(Feature::Nv(NvFeature::Redux)) || t.subgroup_size() != 32 || log2_size != 5 {
        return None;
    }
    if !matches!(T::DTYPE, DType::I32 | DType::U32) {
        return None;
    }
    let rop = match op {
        Op::Add => ReduxOp::Add,
        Op::Min => ReduxOp::Min,
        Op::Max => ReduxOp::Max,
        _ => return None,
    };
    let dst = new_value(T::DTYPE);
    emit_at(InstKind::Nv { op: NvOp::Redux(rop), dsts: vec![dst], args: vec![v.id()], place: None }, current_loc());
    Some(Val::from_id(dst))
}

/// A full-subgroup integer reduction (`scan: None`) or scan as one instruction, where the target
/// has it (`Feature::SubgroupArith`: Metal's `simd_sum` family, the emulator); `None` otherwise,
/// and for tiles narrower than the subgroup, floats and products, which take the shuffle trees.
#[track_caller]
pub(super) fn subgroup_arith<T: Shuffle>(op: Op, scan: Option<ScanKind>, v: Val<T>, log2_size: u32) -> Option<Val<T>> {
    let rop = match op {
        Op::Add => ReduxOp::Add,
        Op::Min => ReduxOp::Min,
        Op::Max => ReduxOp::Max,
        Op::And => ReduxOp::And,
        Op::Or => ReduxOp::Or,
        Op::Xor => ReduxOp::Xor,
        Op::Mul => return None,
    };
    let feature = Feature::SubgroupArith { op: rop, scan, dtype: T::DTYPE };
    if log2_size != log2_group_size() || !T::DTYPE.is_int() || !target().has(feature) {
        return None;
    }
    let dst = new_value(T::DTYPE);
    emit_at(InstKind::SubgroupReduce { dst, op: rop, scan, value: v.id() }, current_loc());
    Some(Val::from_id(dst))
}

/// `for off = T/2 .. 1: v = op(v, shuffle_down(v, off))`; valid in tile lane 0.
#[track_caller]
fn reduce_tiled<T: Shuffle>(name: &'static str, op: Op, value: Val<T>, log2_size: u32) -> Val<T> {
    if !check_log2_size(name, log2_size) {
        return value;
    }
    if let Some(r) = redux_full_warp(op, value, log2_size).or_else(|| subgroup_arith(op, None, value, log2_size)) {
        return r;
    }
    reduce_tree_with(value, log2_size, &|a, b| op.apply(a, b))
}

/// The `shuffle_down` tree with any associative `op` (`v = op(v, shuffle_down(v, off))` for
/// `off = T/2 .. 1`): valid in tile lane 0. Shared with the block reductions.
#[track_caller]
pub(crate) fn reduce_tree_with<T: Shuffle>(
    value: Val<T>,
    log2_size: u32,
    op: &impl Fn(Val<T>, Val<T>) -> Val<T>,
) -> Val<T> {
    let mut v = value;
    for j in (0..log2_size).rev() {
        let other = shuffle_down(v, 1u32 << j);
        v = op(v, other);
    }
    v
}

/// `for m = 1 .. T/2: v = op(v, shuffle_xor(v, m))`; every lane of the tile ends with the same bits.
#[track_caller]
fn reduce_all_tiled<T: Shuffle>(name: &'static str, op: Op, value: Val<T>, log2_size: u32) -> Val<T> {
    if !check_log2_size(name, log2_size) {
        return value;
    }
    if let Some(r) = redux_full_warp(op, value, log2_size).or_else(|| subgroup_arith(op, None, value, log2_size)) {
        return r;
    }
    let mut v = value;
    for j in 0..log2_size {
        let other = shuffle_xor(v, 1u32 << j);
        v = op.apply(v, other);
    }
    v
}

/// quadrants.md 3.2: the distance of each lane to its segment head (the tile base is an implicit
/// head), then a guarded shuffle_up scan that never combines across a head.
#[track_caller]
fn segmented_tiled<T: Shuffle>(name: &'static str, op: Op, value: Val<T>, head: Val<bool>, log2_size: u32) -> Val<T> {
    if !check_log2_size(name, log2_size) {
        return value;
    }
    if log2_size > 6 {
        // Unreachable while subgroups have at most 64 lanes; kept as the seed's explicit check.
        crate::trace::trace_error(name, format!("{name} requires log2_size <= 6"));
        return value;
    }
    let full = ballot(head);
    if log2_size == 0 {
        // Every lane is its own segment.
        return value;
    }
    let lane = lane_u32();
    let dist: Val<u32> = if log2_size <= 5 {
        // u32 path: the tile fits in one 32-lane half of the subgroup.
        let (hmask, lh) = if super::group_size() <= 32 {
            (full.cast::<u32>(), lane)
        } else {
            let half = lane & !31u32;
            ((full >> half.cast::<u64>()).cast::<u32>(), lane - half)
        };
        let tile = 1u32 << log2_size;
        let gbase = lh & !(tile - 1);
        let at_base = Val::constant(1u32) << gbase;
        let eff = if tile == 32 {
            hmask | at_base
        } else {
            let tilebits = Val::constant((1u32 << tile) - 1) << gbase;
            (hmask & tilebits) | at_base
        };
        let upto_me = Val::constant(u32::MAX) >> (31u32 - lh);
        let headpos = 31u32 - (eff & upto_me).clz();
        lh - headpos
    } else {
        // u64 path (log2_size == 6, a 64-lane subgroup): the tile is the whole subgroup, base 0.
        let eff = full | 1u64;
        let upto_me = Val::constant(u64::MAX) >> (63u32 - lane).cast::<u64>();
        let headpos = 63u32 - (eff & upto_me).clz();
        lane - headpos
    };
    let mut v = value;
    for j in 0..log2_size {
        let off = 1u32 << j;
        let p = shuffle_up(v, off);
        v = select(dist.ge(off), op.apply(v, p), v);
    }
    v
}

macro_rules! reductions {
    ($op:ident, $opname:literal,
     $tiled:ident, $full:ident, $all_tiled:ident, $all_full:ident, $seg_tiled:ident, $seg_full:ident,
     $tiled_ex:literal, $all_ex:literal, $seg_ex:literal, $host:literal) => {
        #[doc = concat!("The ", $opname, " of `value` over each aligned `2^log2_size`-lane tile, valid in the tile's")]
        #[doc = "lane 0 only (other lanes hold partial results).\n\n"]
        #[doc = "A `shuffle_down` tree: `log2_size` shuffles and ops, fully unrolled. On sm_80+ CUDA a"]
        #[doc = "full-warp 32-bit integer reduction is a single `redux.sync`, and where the target has"]
        #[doc = "`Feature::SubgroupArith` (Metal's `simd_sum`/`simd_min`/`simd_max` on 32-bit integers,"]
        #[doc = "the emulator) a full-subgroup integer one is a single instruction. `log2_size` above"]
        #[doc = "[`log2_group_size`] is a trace-time error."]
        #[doc = $tiled_ex]
        #[doc = concat!(
            "\n```\n",
            "use qd::prelude::*;\n",
            "let k = Kernel::range(\"k\", 8, |k| {\n",
            "    let a = k.array::<i32>(\"a\");\n",
            "    let out = k.array::<i32>(\"out\");\n",
            "    k.parallel_for(0, a.len(), |i| {\n",
            "        let r = subgroup::", stringify!($tiled), "(a.get(i), 2);\n",
            "        if_((subgroup::invocation_id() % 4).eq(0), || out.set(i, r)); // valid in each tile's lane 0\n",
            "    });\n",
            "});\n",
            "let d = Device::from_name(\"cpu:sg8\").unwrap();\n",
            "let data: Vec<i32> = (0..32).map(|x| (x * 7) % 11 - 5).collect();\n",
            "let a = d.array_from(&data).unwrap();\n",
            "let out = d.zeros::<i32>(32).unwrap();\n",
            "d.launch(&k, &[a.arg(), out.arg()]).unwrap();\n",
            "let op = ", $host, ";\n",
            "let got = out.to_vec().unwrap();\n",
            "for (t, c) in data.chunks(4).enumerate() {\n",
            "    assert_eq!(got[t * 4], c.iter().copied().reduce(op).unwrap());\n",
            "}\n",
            "```",
        )]
        #[track_caller]
        pub fn $tiled<T: Shuffle>(value: impl IntoVal<T>, log2_size: u32) -> Val<T> {
            let name = concat!("subgroup.", stringify!($tiled));
            let _op = op_scope(name);
            let v = value.into_val();
            reduce_tiled(name, Op::$op, v, log2_size)
        }

        #[doc = concat!("The ", $opname, " of `value` over the whole subgroup, valid in lane 0 only:")]
        #[doc = concat!("`", stringify!($tiled), "(value, log2_group_size())`.")]
        #[doc = concat!(
            "\n```\n",
            "use qd::prelude::*;\n",
            "let k = Kernel::range(\"k\", 8, |k| {\n",
            "    let a = k.array::<i32>(\"a\");\n",
            "    let out = k.array::<i32>(\"out\");\n",
            "    k.parallel_for(0, a.len(), |i| {\n",
            "        let r = subgroup::", stringify!($full), "(a.get(i));\n",
            "        if_((subgroup::invocation_id() % 8).eq(0), || out.set(i, r)); // valid in each tile's lane 0\n",
            "    });\n",
            "});\n",
            "let d = Device::from_name(\"cpu:sg8\").unwrap();\n",
            "let data: Vec<i32> = (0..32).map(|x| (x * 7) % 11 - 5).collect();\n",
            "let a = d.array_from(&data).unwrap();\n",
            "let out = d.zeros::<i32>(32).unwrap();\n",
            "d.launch(&k, &[a.arg(), out.arg()]).unwrap();\n",
            "let op = ", $host, ";\n",
            "let got = out.to_vec().unwrap();\n",
            "for (t, c) in data.chunks(8).enumerate() {\n",
            "    assert_eq!(got[t * 8], c.iter().copied().reduce(op).unwrap());\n",
            "}\n",
            "```",
        )]
        #[track_caller]
        pub fn $full<T: Shuffle>(value: impl IntoVal<T>) -> Val<T> {
            let _op = op_scope(concat!("subgroup.", stringify!($full)));
            $tiled(value, log2_group_size())
        }

        #[doc = concat!("The ", $opname, " of `value` over each aligned `2^log2_size`-lane tile, in every lane of")]
        #[doc = "the tile (bitwise identical across the tile).\n\n"]
        #[doc = "A `shuffle_xor` butterfly: `log2_size` shuffles and ops, fully unrolled; a single"]
        #[doc = "`redux.sync` for a full-warp 32-bit integer reduction on sm_80+ CUDA, and a single"]
        #[doc = "instruction for a full-subgroup integer one where the target has `Feature::SubgroupArith`."]
        #[doc = $all_ex]
        #[doc = concat!(
            "\n```\n",
            "use qd::prelude::*;\n",
            "let k = Kernel::range(\"k\", 8, |k| {\n",
            "    let a = k.array::<i32>(\"a\");\n",
            "    let out = k.array::<i32>(\"out\");\n",
            "    k.parallel_for(0, a.len(), |i| {\n",
            "        let r = subgroup::", stringify!($all_tiled), "(a.get(i), 2);\n",
            "        out.set(i, r);\n",
            "    });\n",
            "});\n",
            "let d = Device::from_name(\"cpu:sg8\").unwrap();\n",
            "let data: Vec<i32> = (0..32).map(|x| (x * 7) % 11 - 5).collect();\n",
            "let a = d.array_from(&data).unwrap();\n",
            "let out = d.zeros::<i32>(32).unwrap();\n",
            "d.launch(&k, &[a.arg(), out.arg()]).unwrap();\n",
            "let op = ", $host, ";\n",
            "let got = out.to_vec().unwrap();\n",
            "for (j, &g) in got.iter().enumerate() {\n",
            "    let tile = &data[j / 4 * 4..][..4];\n",
            "    assert_eq!(g, tile.iter().copied().reduce(op).unwrap());\n",
            "}\n",
            "```",
        )]
        #[track_caller]
        pub fn $all_tiled<T: Shuffle>(value: impl IntoVal<T>, log2_size: u32) -> Val<T> {
            let name = concat!("subgroup.", stringify!($all_tiled));
            let _op = op_scope(name);
            let v = value.into_val();
            reduce_all_tiled(name, Op::$op, v, log2_size)
        }

        #[doc = concat!("The ", $opname, " of `value` over the whole subgroup, in every lane:")]
        #[doc = concat!("`", stringify!($all_tiled), "(value, log2_group_size())`.")]
        #[doc = concat!(
            "\n```\n",
            "use qd::prelude::*;\n",
            "let k = Kernel::range(\"k\", 8, |k| {\n",
            "    let a = k.array::<i32>(\"a\");\n",
            "    let out = k.array::<i32>(\"out\");\n",
            "    k.parallel_for(0, a.len(), |i| {\n",
            "        let r = subgroup::", stringify!($all_full), "(a.get(i));\n",
            "        out.set(i, r);\n",
            "    });\n",
            "});\n",
            "let d = Device::from_name(\"cpu:sg8\").unwrap();\n",
            "let data: Vec<i32> = (0..32).map(|x| (x * 7) % 11 - 5).collect();\n",
            "let a = d.array_from(&data).unwrap();\n",
            "let out = d.zeros::<i32>(32).unwrap();\n",
            "d.launch(&k, &[a.arg(), out.arg()]).unwrap();\n",
            "let op = ", $host, ";\n",
            "let got = out.to_vec().unwrap();\n",
            "for (j, &g) in got.iter().enumerate() {\n",
            "    let tile = &data[j / 8 * 8..][..8];\n",
            "    assert_eq!(g, tile.iter().copied().reduce(op).unwrap());\n",
            "}\n",
            "```",
        )]
        #[track_caller]
        pub fn $all_full<T: Shuffle>(value: impl IntoVal<T>) -> Val<T> {
            let _op = op_scope(concat!("subgroup.", stringify!($all_full)));
            $all_tiled(value, log2_group_size())
        }

        #[doc = concat!("Segmented inclusive ", $opname, " within each aligned `2^log2_size`-lane tile: a lane whose")]
        #[doc = "`head` is true (non-zero) starts a new segment (the tile's first lane always does), and every"]
        #[doc = "lane gets the reduction of its segment from the head up to itself.\n\n"]
        #[doc = "One ballot, a find-last-set for the distance to the head (a u32 bitmask for tiles of up"]
        #[doc = "to 32 lanes, u64 for 64), then `log2_size` guarded `shuffle_up` steps."]
        #[doc = $seg_ex]
        #[doc = concat!(
            "\n```\n",
            "use qd::prelude::*;\n",
            "let k = Kernel::range(\"k\", 8, |k| {\n",
            "    let a = k.array::<i32>(\"a\");\n",
            "    let out = k.array::<i32>(\"out\");\n",
            "    k.parallel_for(0, a.len(), |i| {\n",
            "        let r = subgroup::", stringify!($seg_tiled), "(a.get(i), (i % 3).eq(0), 2);\n",
            "        out.set(i, r);\n",
            "    });\n",
            "});\n",
            "let d = Device::from_name(\"cpu:sg8\").unwrap();\n",
            "let data: Vec<i32> = (0..32).map(|x| (x * 7) % 11 - 5).collect();\n",
            "let a = d.array_from(&data).unwrap();\n",
            "let out = d.zeros::<i32>(32).unwrap();\n",
            "d.launch(&k, &[a.arg(), out.arg()]).unwrap();\n",
            "let op = ", $host, ";\n",
            "let got = out.to_vec().unwrap();\n",
            "for (j, &g) in got.iter().enumerate() {\n",
            "    // From the last head (or the tile's first lane) up to lane j.\n",
            "    let start = (0..=j).rev().find(|&h| h % 3 == 0 || h % 4 == 0).unwrap();\n",
            "    assert_eq!(g, data[start..=j].iter().copied().reduce(op).unwrap());\n",
            "}\n",
            "```",
        )]
        #[track_caller]
        pub fn $seg_tiled<T: Shuffle>(value: impl IntoVal<T>, head: impl Predicate, log2_size: u32) -> Val<T> {
            let name = concat!("subgroup.", stringify!($seg_tiled));
            let _op = op_scope(name);
            let v = value.into_val();
            let h = head.into_pred();
            segmented_tiled(name, Op::$op, v, h, log2_size)
        }

        #[doc = concat!("Segmented inclusive ", $opname, " over the whole subgroup:")]
        #[doc = concat!("`", stringify!($seg_tiled), "(value, head, log2_group_size())`.")]
        #[doc = concat!(
            "\n```\n",
            "use qd::prelude::*;\n",
            "let k = Kernel::range(\"k\", 8, |k| {\n",
            "    let a = k.array::<i32>(\"a\");\n",
            "    let out = k.array::<i32>(\"out\");\n",
            "    k.parallel_for(0, a.len(), |i| {\n",
            "        let r = subgroup::", stringify!($seg_full), "(a.get(i), (i % 3).eq(0));\n",
            "        out.set(i, r);\n",
            "    });\n",
            "});\n",
            "let d = Device::from_name(\"cpu:sg8\").unwrap();\n",
            "let data: Vec<i32> = (0..32).map(|x| (x * 7) % 11 - 5).collect();\n",
            "let a = d.array_from(&data).unwrap();\n",
            "let out = d.zeros::<i32>(32).unwrap();\n",
            "d.launch(&k, &[a.arg(), out.arg()]).unwrap();\n",
            "let op = ", $host, ";\n",
            "let got = out.to_vec().unwrap();\n",
            "for (j, &g) in got.iter().enumerate() {\n",
            "    // From the last head (or the tile's first lane) up to lane j.\n",
            "    let start = (0..=j).rev().find(|&h| h % 3 == 0 || h % 8 == 0).unwrap();\n",
            "    assert_eq!(g, data[start..=j].iter().copied().reduce(op).unwrap());\n",
            "}\n",
            "```",
        )]
        #[track_caller]
        pub fn $seg_full<T: Shuffle>(value: impl IntoVal<T>, head: impl Predicate) -> Val<T> {
            let _op = op_scope(concat!("subgroup.", stringify!($seg_full)));
            $seg_tiled(value, head, log2_group_size())
        }
    };
}

reductions!(
    Add,
    "sum",
    reduce_add_tiled,
    reduce_add,
    reduce_all_add_tiled,
    reduce_all_add,
    segmented_reduce_add_tiled,
    segmented_reduce_add,
    r#"
```
use qd::prelude::*;
// Sum groups of 8 lanes; tile lane 0 holds each total.
#[qd::kernel]
fn sum8(a: &[f32], out: &mut [f32]) {
    qd::loop_config(block_dim = 64);
    for i in range(a.len()) {
        let total = subgroup::reduce_add_tiled(a[i], 3);
        if subgroup::invocation_id() % 8 == 0 {
            out[i / 8] = total;
        }
    }
}
let d = Device::from_name("cpu:sg32").unwrap();
let a = d.array_from(&(0..64).map(|x| x as f32).collect::<Vec<_>>()).unwrap();
let mut out = d.zeros::<f32>(8).unwrap();
sum8().launch(&d, (&a, &mut out)).unwrap();
assert_eq!(out.to_vec().unwrap()[..3], [28.0, 92.0, 156.0]);
```"#,
    r#"
```
use qd::prelude::*;
// Normalise each subgroup by its sum.
#[qd::kernel]
fn normalize(a: &mut [f64]) {
    qd::loop_config(block_dim = 64);
    for i in range(a.len()) {
        let v = a[i];
        a[i] = v / subgroup::reduce_all_add(v);
    }
}
let d = Device::from_name("cpu:sg64").unwrap();
let mut a = d.array_from(&[2.0f64; 64]).unwrap();
normalize().launch(&d, (&mut a,)).unwrap();
assert!(a.to_vec().unwrap().iter().all(|&x| x == 1.0 / 64.0));
```"#,
    r#"
```
use qd::prelude::*;
// Running sums that restart at every head flag (and at each 16-lane tile).
#[qd::kernel]
fn seg(a: &mut [i32], head: &[i32]) {
    qd::loop_config(block_dim = 64);
    for i in range(a.len()) {
        a[i] = subgroup::segmented_reduce_add_tiled(a[i], head[i], 4);
    }
}
let d = Device::from_name("cpu:sg16").unwrap();
let mut a = d.array_from(&[1i32; 64]).unwrap();
let mut h = vec![0i32; 64];
h[3] = 1;
h[6] = 7; // any non-zero value is a head
let head = d.array_from(&h).unwrap();
seg().launch(&d, (&mut a, &head)).unwrap();
assert_eq!(a.to_vec().unwrap()[..10], [1, 2, 3, 1, 2, 3, 1, 2, 3, 4]);
```"#,
    "|x: i32, y: i32| x.wrapping_add(y)"
);
reductions!(
    Min,
    "minimum (floats: minNum, a NaN loses to a number)",
    reduce_min_tiled,
    reduce_min,
    reduce_all_min_tiled,
    reduce_all_min,
    segmented_reduce_min_tiled,
    segmented_reduce_min,
    "",
    "",
    "",
    "|x: i32, y: i32| x.min(y)"
);
reductions!(
    Max,
    "maximum (floats: maxNum, a NaN loses to a number)",
    reduce_max_tiled,
    reduce_max,
    reduce_all_max_tiled,
    reduce_all_max,
    segmented_reduce_max_tiled,
    segmented_reduce_max,
    "",
    "",
    "",
    "|x: i32, y: i32| x.max(y)"
);
