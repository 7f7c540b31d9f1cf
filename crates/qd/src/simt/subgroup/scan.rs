//! Inclusive and exclusive scans: Hillis–Steele over `shuffle_up`, the predecessor as the left
//! operand, fully unrolled while tracing; full-subgroup integer scans are one `SubgroupReduce`
//! where the target has it (`reduce::subgroup_arith`).

use super::reduce::subgroup_arith;
use super::{check_dtype, check_log2_size, log2_group_size, shuffle_up, tile_lane, Op, Shuffle};
use crate::ir::ScanKind;
use crate::trace::{op_scope, select, IntoVal, Val};

/// `t = lane & (T-1)`; `for off = 1, 2, .., T/2: p = shuffle_up(v, off); if t >= off { v = op(p, v) }`.
///
/// The guarded update is a `select` (no branch): every lane runs every shuffle, and the IR has no
/// control flow for the backends to get wrong.
#[track_caller]
fn inclusive_scan<T: Shuffle>(op: Op, value: Val<T>, log2_size: u32) -> Val<T> {
    inclusive_scan_with(value, log2_size, &|a, b| op.apply(a, b))
}

/// The same Hillis–Steele scan with any associative `op` (shared with the block scans).
#[track_caller]
pub(crate) fn inclusive_scan_with<T: Shuffle>(
    value: Val<T>,
    log2_size: u32,
    op: &impl Fn(Val<T>, Val<T>) -> Val<T>,
) -> Val<T> {
    if log2_size == 0 {
        return value;
    }
    let t = tile_lane(log2_size);
    let mut v = value;
    for j in 0..log2_size {
        let off = 1u32 << j;
        let p = shuffle_up(v, off);
        v = select(t.ge(off), op(p, v), v);
    }
    v
}

#[track_caller]
fn inclusive_tiled<T: Shuffle>(name: &'static str, op: Op, value: Val<T>, log2_size: u32) -> Val<T> {
    if !check_dtype::<T>(name, op) || !check_log2_size(name, log2_size) {
        return value;
    }
    if let Some(r) = subgroup_arith(op, Some(ScanKind::Inclusive), value, log2_size) {
        return r;
    }
    inclusive_scan(op, value, log2_size)
}

/// Shifts the input up by one lane (the identity at tile lane 0), then scans inclusively.
#[track_caller]
fn exclusive_tiled<T: Shuffle>(name: &'static str, op: Op, value: Val<T>, log2_size: u32) -> Val<T> {
    if !check_dtype::<T>(name, op) || !check_log2_size(name, log2_size) {
        return value;
    }
    if op == Op::Add
        && let Some(r) = subgroup_arith(op, Some(ScanKind::Exclusive), value, log2_size)
    {
        return r;
    }
    let id = op.identity::<T>();
    if log2_size == 0 {
        return Val::constant(id);
    }
    let t = tile_lane(log2_size);
    let p = shuffle_up(value, 1u32);
    let shifted = select(t.eq(0u32), id, p);
    inclusive_scan(op, shifted, log2_size)
}

macro_rules! scans {
    ($op:ident, $desc:literal, $types:literal, $inc_tiled:ident, $inc:ident, $exc_tiled:ident, $exc:ident,
     $inc_ex:literal, $exc_ex:literal, $host:literal, $identity:literal) => {
        #[doc = concat!("Inclusive ", $desc, " scan within each aligned `2^log2_size`-lane tile: tile lane `k` gets")]
        #[doc = "`v[0] op v[1] op … op v[k]` of its tile, folded from the left.\n\n"]
        #[doc = concat!("Accepts ", $types, ". `log2_size` shuffle_up steps, fully unrolled (a single")]
        #[doc = "instruction for a full-subgroup integer add/min/max/and/or/xor scan where the target has"]
        #[doc = "`Feature::SubgroupArith`: Metal's `simd_prefix_inclusive_sum` on 32-bit integers, the"]
        #[doc = "emulator); `log2_size` above [`log2_group_size`] is a trace-time error."]
        #[doc = $inc_ex]
        #[doc = concat!(
            "\n```\n",
            "use qd::prelude::*;\n",
            "let k = Kernel::range(\"k\", 8, |k| {\n",
            "    let a = k.array::<i32>(\"a\");\n",
            "    k.parallel_for(0, a.len(), |i| a.set(i, subgroup::", stringify!($inc_tiled), "(a.get(i), 2)));\n",
            "});\n",
            "let d = Device::from_name(\"cpu:sg8\").unwrap();\n",
            "let data: Vec<i32> = (0..32).map(|x| (x * 7) % 11 - 5).collect();\n",
            "let a = d.array_from(&data).unwrap();\n",
            "d.launch(&k, &[a.arg()]).unwrap();\n",
            "let (op, identity) = (", $host, ", ", $identity, ");\n",
            "for (j, &got) in a.to_vec().unwrap().iter().enumerate() {\n",
            "    let tile_start = j / 4 * 4;\n",
            "    let want = data[tile_start..=j].iter().copied().fold(identity, op);\n",
            "    assert_eq!(got, want, \"lane {j}\");\n",
            "}\n",
            "```",
        )]
        #[track_caller]
        pub fn $inc_tiled<T: Shuffle>(value: impl IntoVal<T>, log2_size: u32) -> Val<T> {
            let name = concat!("subgroup.", stringify!($inc_tiled));
            let _op = op_scope(name);
            let v = value.into_val();
            inclusive_tiled(name, Op::$op, v, log2_size)
        }

        #[doc = concat!("Inclusive ", $desc, " scan over the whole subgroup:")]
        #[doc = concat!("`", stringify!($inc_tiled), "(value, log2_group_size())`.")]
        #[doc = concat!(
            "\n```\n",
            "use qd::prelude::*;\n",
            "let k = Kernel::range(\"k\", 8, |k| {\n",
            "    let a = k.array::<i32>(\"a\");\n",
            "    k.parallel_for(0, a.len(), |i| a.set(i, subgroup::", stringify!($inc), "(a.get(i))));\n",
            "});\n",
            "let d = Device::from_name(\"cpu:sg8\").unwrap();\n",
            "let data: Vec<i32> = (0..32).map(|x| (x * 7) % 11 - 5).collect();\n",
            "let a = d.array_from(&data).unwrap();\n",
            "d.launch(&k, &[a.arg()]).unwrap();\n",
            "let (op, identity) = (", $host, ", ", $identity, ");\n",
            "for (j, &got) in a.to_vec().unwrap().iter().enumerate() {\n",
            "    let tile_start = j / 8 * 8;\n",
            "    let want = data[tile_start..=j].iter().copied().fold(identity, op);\n",
            "    assert_eq!(got, want, \"lane {j}\");\n",
            "}\n",
            "```",
        )]
        #[track_caller]
        pub fn $inc<T: Shuffle>(value: impl IntoVal<T>) -> Val<T> {
            let _op = op_scope(concat!("subgroup.", stringify!($inc)));
            $inc_tiled(value, log2_group_size())
        }

        #[doc = concat!("Exclusive ", $desc, " scan within each aligned `2^log2_size`-lane tile: tile lane 0 gets the")]
        #[doc = "identity, tile lane `k > 0` gets `v[0] op … op v[k-1]` of its tile.\n\n"]
        #[doc = concat!("Accepts ", $types, ". The identity comes from the dtype: add/or/xor 0, mul 1, and all")]
        #[doc = "ones, min the largest value (+inf for floats), max the smallest (-inf for floats, 0 for"]
        #[doc = "unsigned)."]
        #[doc = $exc_ex]
        #[doc = concat!(
            "\n```\n",
            "use qd::prelude::*;\n",
            "let k = Kernel::range(\"k\", 8, |k| {\n",
            "    let a = k.array::<i32>(\"a\");\n",
            "    k.parallel_for(0, a.len(), |i| a.set(i, subgroup::", stringify!($exc_tiled), "(a.get(i), 2)));\n",
            "});\n",
            "let d = Device::from_name(\"cpu:sg8\").unwrap();\n",
            "let data: Vec<i32> = (0..32).map(|x| (x * 7) % 11 - 5).collect();\n",
            "let a = d.array_from(&data).unwrap();\n",
            "d.launch(&k, &[a.arg()]).unwrap();\n",
            "let (op, identity) = (", $host, ", ", $identity, ");\n",
            "for (j, &got) in a.to_vec().unwrap().iter().enumerate() {\n",
            "    let tile_start = j / 4 * 4;\n",
            "    let want = data[tile_start..j].iter().copied().fold(identity, op); // lane 0: the identity\n",
            "    assert_eq!(got, want, \"lane {j}\");\n",
            "}\n",
            "```",
        )]
        #[track_caller]
        pub fn $exc_tiled<T: Shuffle>(value: impl IntoVal<T>, log2_size: u32) -> Val<T> {
            let name = concat!("subgroup.", stringify!($exc_tiled));
            let _op = op_scope(name);
            let v = value.into_val();
            exclusive_tiled(name, Op::$op, v, log2_size)
        }

        #[doc = concat!("Exclusive ", $desc, " scan over the whole subgroup:")]
        #[doc = concat!("`", stringify!($exc_tiled), "(value, log2_group_size())`.")]
        #[doc = concat!(
            "\n```\n",
            "use qd::prelude::*;\n",
            "let k = Kernel::range(\"k\", 8, |k| {\n",
            "    let a = k.array::<i32>(\"a\");\n",
            "    k.parallel_for(0, a.len(), |i| a.set(i, subgroup::", stringify!($exc), "(a.get(i))));\n",
            "});\n",
            "let d = Device::from_name(\"cpu:sg8\").unwrap();\n",
            "let data: Vec<i32> = (0..32).map(|x| (x * 7) % 11 - 5).collect();\n",
            "let a = d.array_from(&data).unwrap();\n",
            "d.launch(&k, &[a.arg()]).unwrap();\n",
            "let (op, identity) = (", $host, ", ", $identity, ");\n",
            "for (j, &got) in a.to_vec().unwrap().iter().enumerate() {\n",
            "    let tile_start = j / 8 * 8;\n",
            "    let want = data[tile_start..j].iter().copied().fold(identity, op); // lane 0: the identity\n",
            "    assert_eq!(got, want, \"lane {j}\");\n",
            "}\n",
            "```",
        )]
        #[track_caller]
        pub fn $exc<T: Shuffle>(value: impl IntoVal<T>) -> Val<T> {
            let _op = op_scope(concat!("subgroup.", stringify!($exc)));
            $exc_tiled(value, log2_group_size())
        }
    };
}

scans!(
    Add,
    "sum",
    "i32, u32, i64, u64, f32 and f64",
    inclusive_add_tiled,
    inclusive_add,
    exclusive_add_tiled,
    exclusive_add,
    r#"
```
use qd::prelude::*;
#[qd::kernel]
fn cumsum(a: &mut [i32]) {
    qd::loop_config(block_dim = 64);
    for i in range(a.len()) {
        a[i] = subgroup::inclusive_add_tiled(a[i], 2);
    }
}
let d = Device::from_name("cpu:sg8").unwrap();
let mut a = d.array_from(&(1..=64).collect::<Vec<i32>>()).unwrap();
cumsum().launch(&d, (&mut a,)).unwrap();
assert_eq!(a.to_vec().unwrap()[..8], [1, 3, 6, 10, 5, 11, 18, 26]);
```"#,
    r#"
```
use qd::prelude::*;
// Offsets for a compaction: each lane's write position within its subgroup.
#[qd::kernel]
fn offsets(n: &mut [u32]) {
    qd::loop_config(block_dim = 64);
    for i in range(n.len()) {
        n[i] = subgroup::exclusive_add(n[i]);
    }
}
let d = Device::from_name("cpu:sg4").unwrap();
let mut n = d.array_from(&[2u32; 64]).unwrap();
offsets().launch(&d, (&mut n,)).unwrap();
assert_eq!(n.to_vec().unwrap()[..6], [0, 2, 4, 6, 0, 2]);
```"#,
    "|x: i32, y: i32| x.wrapping_add(y)",
    "0"
);
scans!(
    Mul,
    "product",
    "i32, u32, i64, u64, f32 and f64",
    inclusive_mul_tiled,
    inclusive_mul,
    exclusive_mul_tiled,
    exclusive_mul,
    "",
    "",
    "|x: i32, y: i32| x.wrapping_mul(y)",
    "1"
);
scans!(
    Min,
    "minimum",
    "i32, u32, i64, u64, f32 and f64",
    inclusive_min_tiled,
    inclusive_min,
    exclusive_min_tiled,
    exclusive_min,
    "",
    r#"
```
use qd::prelude::*;
let k = Kernel::range("exmin", 64, |k| {
    let a = k.array::<f32>("a");
    k.parallel_for(0, a.len(), |i| a.set(i, subgroup::exclusive_min_tiled(a.get(i), 2)));
});
let d = Device::from_name("cpu:sg16").unwrap();
let a = d.array_from(&[[5.0f32, 3.0, 4.0, 1.0]; 16].concat()).unwrap();
d.launch(&k, &[a.arg()]).unwrap();
assert_eq!(a.to_vec().unwrap()[..4], [f32::INFINITY, 5.0, 3.0, 3.0]);
```"#,
    "|x: i32, y: i32| x.min(y)",
    "i32::MAX"
);
scans!(
    Max,
    "maximum",
    "i32, u32, i64, u64, f32 and f64",
    inclusive_max_tiled,
    inclusive_max,
    exclusive_max_tiled,
    exclusive_max,
    "",
    "",
    "|x: i32, y: i32| x.max(y)",
    "i32::MIN"
);
scans!(
    And,
    "bitwise-and",
    "i32, u32, i64, u64 (a float dtype is a trace-time error)",
    inclusive_and_tiled,
    inclusive_and,
    exclusive_and_tiled,
    exclusive_and,
    "",
    "",
    "|x: i32, y: i32| x & y",
    "-1"
);
scans!(
    Or,
    "bitwise-or",
    "i32, u32, i64, u64 (a float dtype is a trace-time error)",
    inclusive_or_tiled,
    inclusive_or,
    exclusive_or_tiled,
    exclusive_or,
    r#"
```
use qd::prelude::*;
let k = Kernel::range("bits", 64, |k| {
    let a = k.array::<u64>("a");
    k.parallel_for(0, a.len(), |i| a.set(i, subgroup::inclusive_or(a.get(i))));
});
let d = Device::from_name("cpu:sg8").unwrap();
let a = d.array_from(&(0..64).map(|i| 1u64 << (i % 8)).collect::<Vec<_>>()).unwrap();
d.launch(&k, &[a.arg()]).unwrap();
assert_eq!(a.to_vec().unwrap()[..4], [0b1, 0b11, 0b111, 0b1111]);
```"#,
    "",
    "|x: i32, y: i32| x | y",
    "0"
);
scans!(
    Xor,
    "bitwise-xor",
    "i32, u32, i64, u64 (a float dtype is a trace-time error)",
    inclusive_xor_tiled,
    inclusive_xor,
    exclusive_xor_tiled,
    exclusive_xor,
    "",
    "",
    "|x: i32, y: i32| x ^ y",
    "0"
);
