//! The proptest strategies that write [`Program`]s (D27).
//!
//! Validity is by construction, and every rule keeps holding when proptest shrinks a program
//! (removes statements, replaces an expression by a simpler one):
//!
//! * Control uniformity (D3): every statement list is generated for a control *level* (the join of
//!   its enclosing conditions and loop trip counts). Subgroup collectives appear only at level
//!   `Subgroup` or better, block barriers (and the block library ops that contain them) at `Block`
//!   or better. A condition or trip count is generated under a uniformity *bound* that becomes the
//!   level of its body; `break`/`continue` only where the control is no worse than the loop's.
//! * Variables have a fixed class (an upper bound of their uniformity): an assignment's value and
//!   its control level are both at most the variable's class, so the IR's analysis never finds a
//!   variable less uniform than the generator assumed.
//! * No implementation-defined result reaches memory: shuffles stay inside their tile (sources
//!   outside it keep the lane's own value), a reduction's lanes other than its valid one read 0,
//!   integer divisors are never 0, indices are masked into range.
//! * Results that may legitimately differ between backends are never made (D27's list): see
//!   `floats.rs` for floats, [`crate::build`] for the exact forms of division and square root, and
//!   the order-independent atomics below.

use crate::floats::{in_window, Fl};
use crate::program::*;
use proptest::prelude::*;
use proptest::sample::select;
use proptest::strategy::{BoxedStrategy, Union};
use qd::ir::uniformity::Uniformity;
use qd::ir::{AtomicOp, BinOp, CmpOp, DType, Scope, UnOp};
use qd::trace::{BF16, F16};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

/// What the generated programs must fit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GenConfig {
    /// Which widths the program is written for.
    pub sizing: Sizing,
    /// `block_dim` is a multiple of this (the widest subgroup the program runs on).
    pub block_multiple: u32,
}

/// Programs for `cfg`.
pub fn program(cfg: GenConfig) -> impl Strategy<Value = Program> {
    (shape(cfg), decls()).prop_flat_map(move |(shape, d)| {
        let env = Rc::new(Env { shape, decls: d.clone() });
        let g = Gen { env: env.clone(), memo: Rc::default(), stmt_memo: Rc::default() };
        let top = Ctx { level: Uniformity::Uniform, loops: Vec::new(), loop_level: None };
        let body = g.stmts(&top, 2, 1..10);
        let tail = match shape.launch {
            Launch::Explicit => {
                let vary = Ctx { level: Uniformity::Varying, loops: Vec::new(), loop_level: None };
                let cond = g.expr(DType::Bool, Uniformity::Varying, &vary, 2);
                proptest::option::of((cond, g.stmts(&vary, 1, 0..4)).prop_map(|(cond, body)| Tail { cond, body }))
                    .boxed()
            }
            Launch::Range { .. } => Just(None).boxed(),
        };
        (body, tail).prop_map(move |(body, tail)| Program {
            shape,
            params: d.params.clone(),
            inputs: d.inputs.clone(),
            vars: d.vars.clone(),
            outputs: d.outputs.clone(),
            accs: d.accs.clone(),
            owns: d.owns.clone(),
            body,
            tail,
        })
    })
}

fn shape(cfg: GenConfig) -> impl Strategy<Value = Shape> {
    let mut dims = Vec::new();
    let mut bd = cfg.block_multiple.max(4);
    while bd <= 256 {
        dims.push(bd);
        bd *= 2;
    }
    let launch = prop_oneof![
        3 => Just(0i32),
        1 => -200i32..200,
        1 => Just(i32::MIN),
        2 => Just(i32::MAX),
    ];
    (select(dims), 1u32..=3, launch, any::<bool>()).prop_map(move |(block_dim, blocks, begin, explicit)| {
        let n = (block_dim * blocks) as i32;
        let launch = if explicit {
            Launch::Explicit
        } else {
            // The last indices sit at i32::MAX when asked for: the grid-stride loop must not wrap.
            Launch::Range { begin: if begin == i32::MAX { i32::MAX - n } else { begin } }
        };
        Shape { sizing: cfg.sizing, block_dim, blocks, launch }
    })
}

/// Everything declared before the body.
#[derive(Clone, Debug)]
struct Decls {
    params: Vec<(DType, u64)>,
    inputs: Vec<Data>,
    vars: Vec<VarDecl>,
    outputs: Vec<DType>,
    accs: Vec<Data>,
    /// The one operation applied to each accumulator.
    acc_ops: Vec<AtomicOp>,
    owns: Vec<Data>,
}

fn value_type() -> impl Strategy<Value = DType> {
    // Every type, with the 32-bit ones most often.
    prop_oneof![
        2 => select(VALUE_TYPES.to_vec()),
        1 => select(vec![DType::I32, DType::U32, DType::F32]),
    ]
}

fn numeric_type() -> impl Strategy<Value = DType> {
    select(VALUE_TYPES.iter().copied().filter(|d| *d != DType::Bool).collect::<Vec<_>>())
}

fn data(d: DType, len: usize) -> impl Strategy<Value = Data> {
    proptest::collection::vec(const_bits(d), len).prop_map(move |bits| Data { dtype: d, bits })
}

fn decls() -> impl Strategy<Value = Decls> {
    let params =
        proptest::collection::vec(value_type().prop_flat_map(|d| const_bits(d).prop_map(move |b| (d, b))), 0..3);
    let inputs = proptest::collection::vec(value_type().prop_flat_map(|d| data(d, INPUT_LEN as usize)), 1..4);
    let class = select(vec![Uniformity::Uniform, Uniformity::Block, Uniformity::Subgroup, Uniformity::Varying]);
    let var = (value_type(), class, any::<u64>())
        .prop_flat_map(|(dtype, class, _)| const_bits(dtype).prop_map(move |init| VarDecl { dtype, class, init }));
    let vars = proptest::collection::vec(var, 2..9);
    let outputs = proptest::collection::vec(value_type(), 1..4);
    // Contended atomics: the types whose order-independent operations exist everywhere.
    let acc_type =
        select(vec![DType::I32, DType::U32, DType::I64, DType::U64, DType::F32, DType::F64, DType::I8, DType::U16]);
    // One operation per array: mixing two (an add after a product) would depend on the order.
    let accs = proptest::collection::vec(
        acc_type.prop_flat_map(|d| (data(d, ACC_LEN as usize), select(contended_ops(d)))),
        0..3,
    );
    let owns = proptest::collection::vec(numeric_type().prop_flat_map(|d| data(d, INPUT_LEN as usize)), 1..4);
    (params, inputs, vars, outputs, accs, owns).prop_map(|(params, inputs, vars, outputs, accs, owns)| {
        let (accs, acc_ops) = accs.into_iter().unzip();
        Decls { params, inputs, vars, outputs, accs, acc_ops, owns }
    })
}

/// Constant bits of `d`, biased to the edges of the type.
pub fn const_bits(d: DType) -> BoxedStrategy<u64> {
    match d {
        DType::Bool => (0u64..2).boxed(),
        DType::F16 => float_bits::<F16>(),
        DType::BF16 => float_bits::<BF16>(),
        DType::F32 => float_bits::<f32>(),
        DType::F64 => float_bits::<f64>(),
        _ => {
            let bits = d.bits();
            let mask = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
            let smax = mask >> 1;
            let edges = vec![0, 1, 2, mask, mask - 1, smax, smax - 1, smax + 1, smax + 2, 1 << (bits - 1), 0xff & mask];
            prop_oneof![
                3 => select(edges),
                3 => (-16i64..16).prop_map(move |x| x as u64 & mask),
                1 => (0..bits).prop_map(move |k| (1u64 << k) & mask),
                2 => any::<u64>().prop_map(move |x| x & mask),
            ]
            .boxed()
        }
    }
}

fn float_bits<T: Fl>() -> BoxedStrategy<u64> {
    let keep = |x: f64| {
        let t = T::from_f64(x);
        if in_window(t) {
            t.to_bits()
        } else {
            0
        }
    };
    prop_oneof![
        4 => (-64i32..64).prop_map(move |q| keep(q as f64 / 4.0)),
        1 => (-20i32..20, any::<bool>()).prop_map(move |(k, neg)| keep(if neg { -(k as f64).exp2() } else { (k as f64).exp2() })),
        1 => select(vec![T::LO, -T::LO, T::HI, -T::HI]).prop_map(keep),
        1 => (-1.0e6f64..1.0e6).prop_map(keep),
    ]
    .boxed()
}

struct Env {
    shape: Shape,
    decls: Decls,
}

/// Where a statement or expression is generated.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Ctx {
    /// Control uniformity.
    level: Uniformity,
    /// The uniformity of each enclosing loop's index, outermost first.
    loops: Vec<Uniformity>,
    /// The control level of the innermost loop's body (where break/continue may go).
    loop_level: Option<Uniformity>,
}

impl Ctx {
    fn collectives(&self) -> bool {
        self.level <= Uniformity::Subgroup
    }
    fn barriers(&self) -> bool {
        self.level <= Uniformity::Block
    }
}

type Key = (DType, Uniformity, bool, bool, Vec<Uniformity>, u32);

/// Strategies already built, by what they were built for.
type Memo<K, T> = Rc<RefCell<HashMap<K, BoxedStrategy<T>>>>;

/// Strategies are built lazily (a nested body only when a generated `if` or loop asks for it)
/// and memoized: building every alternative eagerly took most of a case's time.
#[derive(Clone)]
struct Gen {
    env: Rc<Env>,
    memo: Memo<Key, Expr>,
    stmt_memo: Memo<(Ctx, u32), Stmt>,
}

fn weighted<T: std::fmt::Debug + 'static>(alts: Vec<(u32, BoxedStrategy<T>)>) -> BoxedStrategy<T> {
    Union::new_weighted(alts).boxed()
}

fn uniformities_up_to(b: Uniformity) -> Vec<Uniformity> {
    [Uniformity::Uniform, Uniformity::Block, Uniformity::Subgroup, Uniformity::Varying]
        .into_iter()
        .filter(|u| *u <= b)
        .collect()
}

fn is_shuffle(d: DType) -> bool {
    SHUFFLE_TYPES.contains(&d)
}

fn same_width(d: DType) -> Vec<DType> {
    VALUE_TYPES.iter().copied().filter(|t| *t != d && *t != DType::Bool && t.bits() == d.bits()).collect()
}

fn int_types() -> Vec<DType> {
    VALUE_TYPES.iter().copied().filter(|t| t.is_int()).collect()
}

impl Gen {
    fn portable(&self) -> bool {
        matches!(self.env.shape.sizing, Sizing::Portable { .. })
    }

    fn max_log2(&self) -> u32 {
        self.env.shape.sizing.max_log2_tile()
    }

    fn log2s(&self, min: u32) -> Option<BoxedStrategy<u8>> {
        let max = self.max_log2();
        (min <= max).then(|| (min as u8..=max as u8).boxed())
    }

    /// An expression of any of `types` (chosen first, so only that type's strategy is built).
    fn any_of(&self, types: Vec<DType>, bound: Uniformity, ctx: &Ctx, depth: u32) -> BoxedStrategy<Expr> {
        let (g, ctx) = (self.clone(), ctx.clone());
        select(types).prop_flat_map(move |t| g.expr(t, bound, &ctx, depth)).boxed()
    }

    /// An expression of type `d` whose uniformity is at most `bound`, valid at `ctx`.
    fn expr(&self, d: DType, bound: Uniformity, ctx: &Ctx, depth: u32) -> BoxedStrategy<Expr> {
        let key = (d, bound, ctx.collectives(), ctx.barriers(), ctx.loops.clone(), depth);
        if let Some(s) = self.memo.borrow().get(&key) {
            return s.clone();
        }
        let s = self.make_expr(d, bound, ctx, depth);
        self.memo.borrow_mut().insert(key, s.clone());
        s
    }

    fn leaves(&self, d: DType, bound: Uniformity, ctx: &Ctx) -> Vec<(u32, BoxedStrategy<Expr>)> {
        use Uniformity::*;
        let decls = &self.env.decls;
        let mut alts: Vec<(u32, BoxedStrategy<Expr>)> =
            vec![(3, const_bits(d).prop_map(move |b| Expr::Const(d, b)).boxed())];
        let vars: Vec<u16> = (0..decls.vars.len() as u16)
            .filter(|&v| decls.vars[v as usize].dtype == d && decls.vars[v as usize].class <= bound)
            .collect();
        if !vars.is_empty() {
            alts.push((6, select(vars).prop_map(Expr::Var).boxed()));
        }
        let params: Vec<u16> = (0..decls.params.len() as u16).filter(|&p| decls.params[p as usize].0 == d).collect();
        if !params.is_empty() {
            alts.push((2, select(params).prop_map(Expr::Param).boxed()));
        }
        if d == DType::I32 {
            let mut sp = vec![(Special::BlockDim, Uniform), (Special::GridDim, Uniform), (Special::BlockIdx, Block)];
            sp.extend([(Special::Index, Varying), (Special::ThreadIdx, Varying), (Special::GlobalThreadIdx, Varying)]);
            if !self.portable() && bound == Varying {
                // The lane id is what makes an exact program's results depend on the width.
                alts.push((2, Just(Expr::Special(Special::Lane)).boxed()));
            }
            let sp: Vec<Special> = sp.into_iter().filter(|(_, u)| *u <= bound).map(|(s, _)| s).collect();
            if !sp.is_empty() {
                alts.push((4, select(sp).prop_map(Expr::Special).boxed()));
            }
            let n = decls.inputs.len() as u16;
            alts.push((1, (0..n).prop_map(Expr::Len).boxed()));
        }
        if d == DType::U32 {
            if bound == Varying {
                alts.push((2, (0..=self.max_log2() as u8).prop_map(|l| Expr::Special(Special::TileLane(l))).boxed()));
            }
            let loops: Vec<u8> = (0..ctx.loops.len() as u8).filter(|&i| ctx.loops[i as usize] <= bound).collect();
            if !loops.is_empty() {
                alts.push((4, select(loops).prop_map(Expr::LoopIndex).boxed()));
            }
        }
        alts
    }

    fn make_expr(&self, d: DType, bound: Uniformity, ctx: &Ctx, depth: u32) -> BoxedStrategy<Expr> {
        use Uniformity::*;
        let mut alts = self.leaves(d, bound, ctx);
        if depth == 0 {
            return weighted(alts);
        }
        let k = depth - 1;
        let sub = |t: DType| self.expr(t, bound, ctx, k);
        let bx = |s: BoxedStrategy<Expr>| s.prop_map(Box::new);
        let decls = &self.env.decls;

        // Loads.
        let inputs: Vec<u16> =
            (0..decls.inputs.len() as u16).filter(|&i| decls.inputs[i as usize].dtype == d).collect();
        if !inputs.is_empty() {
            let index = self.any_of(int_types(), bound, ctx, k);
            let volatile = if bound == Varying { any::<bool>().boxed() } else { Just(false).boxed() };
            alts.push((
                3,
                (select(inputs), index, select(int_types()), volatile)
                    .prop_map(|(input, index, index_type, volatile)| Expr::Load {
                        input,
                        index: Box::new(index),
                        index_type,
                        volatile,
                    })
                    .boxed(),
            ));
        }

        // Arithmetic.
        let mut binops = Vec::new();
        if d == DType::Bool {
            binops.extend([BinOp::And, BinOp::Or, BinOp::Xor]);
        } else {
            binops.extend([BinOp::Add, BinOp::Sub, BinOp::Mul, BinOp::Min, BinOp::Max]);
        }
        if d.is_int() {
            binops.extend([BinOp::Div, BinOp::Rem, BinOp::And, BinOp::Or, BinOp::Xor, BinOp::Shl, BinOp::Shr]);
        }
        alts.push((6, (select(binops), bx(sub(d)), bx(sub(d))).prop_map(|(op, a, b)| Expr::Binary(op, a, b)).boxed()));
        let mut unops = Vec::new();
        if d.is_signed_int() || d.is_float() {
            unops.extend([UnOp::Neg, UnOp::Abs]);
        }
        if d.is_int() || d == DType::Bool {
            unops.push(UnOp::Not);
        }
        if !unops.is_empty() {
            alts.push((2, (select(unops), bx(sub(d))).prop_map(|(op, a)| Expr::Unary(op, a)).boxed()));
        }
        if d == DType::U32 {
            let wide = self.any_of(vec![DType::I32, DType::U32, DType::I64, DType::U64], bound, ctx, k);
            alts.push((
                2,
                (select(vec![UnOp::Popc, UnOp::Clz]), wide.prop_map(Box::new))
                    .prop_map(|(op, a)| Expr::Unary(op, a))
                    .boxed(),
            ));
        }
        if d == DType::Bool {
            let g = self.clone();
            let (ctx2, k2) = (ctx.clone(), k);
            let cmps = select(VALUE_TYPES.to_vec()).prop_flat_map(move |t| {
                let ops = if t == DType::Bool {
                    vec![CmpOp::Eq, CmpOp::Ne]
                } else {
                    vec![CmpOp::Eq, CmpOp::Ne, CmpOp::Lt, CmpOp::Le, CmpOp::Gt, CmpOp::Ge]
                };
                let sub = g.expr(t, bound, &ctx2, k2);
                (select(ops), sub.clone().prop_map(Box::new), sub.prop_map(Box::new))
                    .prop_map(|(op, a, b)| Expr::Cmp(op, a, b))
            });
            alts.push((6, cmps.boxed()));
        }
        alts.push((
            2,
            (bx(sub(DType::Bool)), bx(sub(d)), bx(sub(d))).prop_map(|(c, a, b)| Expr::Select(c, a, b)).boxed(),
        ));
        if d != DType::Bool {
            // Operands of other types are built only when a cast of that type is generated.
            let froms: Vec<DType> = VALUE_TYPES.iter().copied().filter(|&t| t != d).collect();
            let (g, ctx2) = (self.clone(), ctx.clone());
            let cast = select(froms)
                .prop_flat_map(move |t| g.expr(t, bound, &ctx2, k).prop_map(move |a| Expr::Cast(d, Box::new(a))));
            alts.push((3, cast.boxed()));
            let (g, ctx2) = (self.clone(), ctx.clone());
            let same = same_width(d);
            let same = (!same.is_empty()).then(|| {
                select(same)
                    .prop_flat_map(move |t| g.expr(t, bound, &ctx2, k).prop_map(move |a| Expr::BitCast(d, Box::new(a))))
            });
            if let Some(same) = same {
                alts.push((1, same.boxed()));
            }
        }
        if d.is_float() {
            alts.push((1, (bx(sub(d)), -3i8..=3, bx(sub(d))).prop_map(|(a, k, c)| Expr::Fma(a, k, c)).boxed()));
            alts.push((1, (bx(sub(DType::I32)), 1u8..=9).prop_map(move |(q, k)| Expr::ExactDiv(d, q, k)).boxed()));
            alts.push((1, bx(sub(DType::I32)).prop_map(move |q| Expr::ExactSqrt(d, q)).boxed()));
        }

        // Per-thread atomics (the old value is this thread's own: deterministic).
        let owns: Vec<u16> = (0..decls.owns.len() as u16).filter(|&o| decls.owns[o as usize].dtype == d).collect();
        if bound == Varying && !owns.is_empty() {
            let ops: Vec<OwnOp> = if d.is_float() {
                vec![
                    OwnOp::Rmw(AtomicOp::Add),
                    OwnOp::Rmw(AtomicOp::Mul),
                    OwnOp::Rmw(AtomicOp::Min),
                    OwnOp::Rmw(AtomicOp::Max),
                    OwnOp::Rmw(AtomicOp::Exchange),
                    OwnOp::Sub,
                    OwnOp::LoadAcquire,
                ]
            } else {
                let mut v: Vec<OwnOp> = [
                    AtomicOp::Add,
                    AtomicOp::Mul,
                    AtomicOp::Min,
                    AtomicOp::Max,
                    AtomicOp::And,
                    AtomicOp::Or,
                    AtomicOp::Xor,
                    AtomicOp::Exchange,
                ]
                .into_iter()
                .map(OwnOp::Rmw)
                .collect();
                v.extend([OwnOp::Sub, OwnOp::Cas, OwnOp::LoadAcquire]);
                v
            };
            alts.push((
                4,
                (select(owns), select(ops), bx(sub(d)), bx(sub(DType::Bool)))
                    .prop_map(|(own, op, value, hit)| Expr::Own { own, op, value, hit })
                    .boxed(),
            ));
        }

        if ctx.collectives() && bound == Varying {
            alts.extend(self.collectives(d, &sub, ctx, k));
        }
        if ctx.barriers() {
            alts.extend(self.block_ops(d, bound, &sub));
        }
        weighted(alts)
    }

    /// Subgroup operations giving a `d` (all varying for the IR's analysis).
    fn collectives(
        &self,
        d: DType,
        sub: &dyn Fn(DType) -> BoxedStrategy<Expr>,
        ctx: &Ctx,
        k: u32,
    ) -> Vec<(u32, BoxedStrategy<Expr>)> {
        let bx = |s: BoxedStrategy<Expr>| s.prop_map(Box::new);
        let mut alts = Vec::new();
        let exact = !self.portable();
        let all = self.log2s(0).expect("tile 1 always fits");
        if is_shuffle(d) {
            let max = self.max_log2();
            let idx = (bx(sub(d)), bx(sub(DType::U32)), all.clone()).prop_map(|(value, arg, log2)| Expr::Shuffle {
                mode: ShuffleMode::Idx,
                value,
                arg,
                log2,
            });
            alts.push((2, idx.boxed()));
            if max >= 1 {
                let rel = (1u8..=max as u8).prop_flat_map(|log2| {
                    let t = 1u8 << log2;
                    (
                        Just(log2),
                        prop_oneof![
                            (1..t).prop_map(ShuffleMode::Up),
                            (1..t).prop_map(ShuffleMode::Down),
                            (1..t).prop_map(ShuffleMode::Xor)
                        ],
                    )
                });
                alts.push((
                    3,
                    (rel, bx(sub(d)))
                        .prop_map(|((log2, mode), value)| Expr::Shuffle {
                            mode,
                            value,
                            arg: Box::new(Expr::Const(DType::U32, 0)),
                            log2,
                        })
                        .boxed(),
                ));
            }
            let red_ops = vec![RedOp::Add, RedOp::Min, RedOp::Max];
            let forms = vec![ReduceForm::Lane0, ReduceForm::All, ReduceForm::Segmented];
            alts.push((
                4,
                (select(red_ops), select(forms), bx(sub(d)), bx(sub(DType::Bool)), all.clone())
                    .prop_map(|(op, form, value, head, log2)| Expr::Reduce { op, form, value, head, log2 })
                    .boxed(),
            ));
            let mut scan_ops = vec![RedOp::Add, RedOp::Mul, RedOp::Min, RedOp::Max];
            if d.is_int() {
                scan_ops.extend([RedOp::And, RedOp::Or, RedOp::Xor]);
            }
            alts.push((
                4,
                (select(scan_ops), any::<bool>(), bx(sub(d)), all.clone())
                    .prop_map(|(op, exclusive, value, log2)| Expr::Scan { op, exclusive, value, log2 })
                    .boxed(),
            ));
            let others = self.any_of(SHUFFLE_TYPES.to_vec(), Uniformity::Varying, ctx, k);
            let sort_key = (bx(sub(d)), others.clone().prop_map(Box::new), all.clone())
                .prop_map(|(key, value, log2)| Expr::Sort { key, value, read_key: true, log2 });
            let sort_val = (others.prop_map(Box::new), bx(sub(d)), all.clone())
                .prop_map(|(key, value, log2)| Expr::Sort { key, value, read_key: false, log2 });
            alts.push((1, prop_oneof![sort_key, sort_val].boxed()));
            if exact {
                let w = 1u8 << self.max_log2();
                alts.push((2, (bx(sub(d)), 0..w).prop_map(|(v, l)| Expr::Broadcast(v, l)).boxed()));
            }
        }
        if d == DType::U64 {
            alts.push((3, (bx(sub(DType::Bool)), all.clone()).prop_map(|(p, l)| Expr::Ballot(p, l)).boxed()));
        }
        if d == DType::I32 {
            let vote = (select(vec![VoteOp::All, VoteOp::Any]), bx(sub(DType::Bool)), all.clone())
                .prop_map(|(op, p, l)| Expr::Vote(op, p, l));
            let keys = self.any_of(SHUFFLE_TYPES.to_vec(), Uniformity::Varying, ctx, k);
            let eq = (keys.prop_map(Box::new), all.clone()).prop_map(|(v, l)| Expr::Vote(VoteOp::Equal, v, l));
            alts.push((3, prop_oneof![vote, eq].boxed()));
            if exact {
                alts.push((1, Just(Expr::Elect).boxed()));
            }
        }
        alts
    }

    /// Block library operations (they contain barriers) giving a `d` within `bound`.
    fn block_ops(
        &self,
        d: DType,
        bound: Uniformity,
        sub: &dyn Fn(DType) -> BoxedStrategy<Expr>,
    ) -> Vec<(u32, BoxedStrategy<Expr>)> {
        let bx = |s: BoxedStrategy<Expr>| s.prop_map(Box::new);
        let mut alts = Vec::new();
        if d == DType::I32 && bound >= Uniformity::Block {
            let ops = vec![BlockVote::All, BlockVote::Any, BlockVote::Count];
            alts.push((2, (select(ops), bx(sub(DType::I32))).prop_map(|(op, p)| Expr::BlockVote(op, p)).boxed()));
        }
        // A float block reduction's association order follows the subgroup width (a tree per
        // subgroup, then the subgroups' totals): only exact-width programs have them.
        if is_shuffle(d) && (!self.portable() || d.is_int()) {
            let mut forms = vec![BlockForm::ReduceAll];
            if bound == Uniformity::Varying {
                forms.extend([BlockForm::Reduce, BlockForm::Inclusive, BlockForm::Exclusive]);
            }
            if bound >= Uniformity::Block {
                let ops = vec![RedOp::Add, RedOp::Min, RedOp::Max];
                alts.push((
                    2,
                    (select(ops), select(forms), bx(sub(d)))
                        .prop_map(|(op, form, value)| Expr::Block { op, form, value })
                        .boxed(),
                ));
            }
        }
        alts
    }

    /// A list of statements at `ctx`.
    fn stmts(&self, ctx: &Ctx, depth: u32, len: std::ops::Range<usize>) -> BoxedStrategy<Vec<Stmt>> {
        proptest::collection::vec(self.stmt(ctx, depth), len).boxed()
    }

    fn stmt(&self, ctx: &Ctx, depth: u32) -> BoxedStrategy<Stmt> {
        let key = (ctx.clone(), depth);
        if let Some(s) = self.stmt_memo.borrow().get(&key) {
            return s.clone();
        }
        let s = self.make_stmt(ctx, depth);
        self.stmt_memo.borrow_mut().insert(key, s.clone());
        s
    }

    fn make_stmt(&self, ctx: &Ctx, depth: u32) -> BoxedStrategy<Stmt> {
        use Uniformity::*;
        let decls = &self.env.decls;
        let e = |d: DType, b: Uniformity| self.expr(d, b, ctx, 3);
        let mut alts: Vec<(u32, BoxedStrategy<Stmt>)> = Vec::new();

        // Assignments: the variable's class bounds both the value and the control.
        let assigns: Vec<BoxedStrategy<Stmt>> = (0..decls.vars.len() as u16)
            .filter(|&v| decls.vars[v as usize].class >= ctx.level)
            .map(|v| {
                let decl = decls.vars[v as usize];
                e(decl.dtype, decl.class).prop_map(move |x| Stmt::Assign(v, x)).boxed()
            })
            .collect();
        if !assigns.is_empty() {
            alts.push((8, Union::new(assigns).boxed()));
        }
        let outs: Vec<BoxedStrategy<Stmt>> = (0..decls.outputs.len() as u16)
            .map(|out| {
                let mode = select(vec![StoreMode::Plain, StoreMode::Plain, StoreMode::Volatile, StoreMode::Release]);
                (0..SLOTS as u8, e(decls.outputs[out as usize], Varying), mode)
                    .prop_map(move |(slot, value, mode)| Stmt::Out { out, slot, value, mode })
                    .boxed()
            })
            .collect();
        alts.push((8, Union::new(outs).boxed()));
        alts.push((1, select(vec![Scope::Subgroup, Scope::Block, Scope::Device]).prop_map(Stmt::Fence).boxed()));

        if depth > 0 {
            // The body's level is the bound its condition (or trip count) is generated under.
            let levels: Vec<Uniformity> = uniformities_up_to(Varying).into_iter().filter(|l| *l >= ctx.level).collect();
            let (g, outer) = (self.clone(), ctx.clone());
            let ifs = select(levels.clone()).prop_flat_map(move |level| {
                let inner = Ctx { level, ..outer.clone() };
                let body = g.stmts(&inner, depth - 1, 0..4);
                (g.expr(DType::Bool, level, &outer, 3), body.clone(), body).prop_map(|(cond, then, els)| Stmt::If {
                    cond,
                    then,
                    els,
                })
            });
            alts.push((4, ifs.boxed()));
            let (g, outer) = (self.clone(), ctx.clone());
            let loops = select(levels).prop_flat_map(move |level| {
                let mut loops = outer.loops.clone();
                loops.push(level);
                let inner = Ctx { level, loops, loop_level: Some(level) };
                (g.expr(DType::U32, level, &outer, 3), g.stmts(&inner, depth - 1, 1..4))
                    .prop_map(|(trip, body)| Stmt::Loop { trip, body })
            });
            alts.push((3, loops.boxed()));
        }
        if let Some(l) = ctx.loop_level.filter(|l| ctx.level <= *l) {
            let c = e(DType::Bool, l);
            alts.push((1, prop_oneof![c.clone().prop_map(Stmt::Break), c.prop_map(Stmt::Continue)].boxed()));
        }
        if ctx.collectives() {
            alts.push((1, Just(Stmt::SubgroupSync).boxed()));
        }
        if ctx.barriers() {
            alts.push((1, Just(Stmt::Sync).boxed()));
            alts.extend(self.shared_stmts(ctx));
        }
        if !decls.accs.is_empty() {
            let accs: Vec<BoxedStrategy<Stmt>> = (0..decls.accs.len() as u16)
                .map(|acc| {
                    let d = decls.accs[acc as usize].dtype;
                    let op = decls.acc_ops[acc as usize];
                    (e(DType::U32, Varying), e(d, Varying))
                        .prop_map(move |(slot, value)| Stmt::AccAtomic { acc, slot, op, value })
                        .boxed()
                })
                .collect();
            alts.push((3, Union::new(accs).boxed()));
        }
        let locals: Vec<BoxedStrategy<Stmt>> = (0..decls.vars.len() as u16)
            .filter(|&v| decls.vars[v as usize].class == Varying)
            .map(|var| {
                let d = decls.vars[var as usize].dtype;
                (e(DType::U32, Varying), e(d, Varying), e(DType::U32, Varying))
                    .prop_map(move |(write, value, read)| Stmt::Local { var, write, value, read })
                    .boxed()
            })
            .collect();
        if !locals.is_empty() {
            alts.push((1, Union::new(locals).boxed()));
        }
        weighted(alts)
    }

    /// Shared-memory statements (block-uniform control).
    fn shared_stmts(&self, ctx: &Ctx) -> Vec<(u32, BoxedStrategy<Stmt>)> {
        use Uniformity::*;
        let decls = &self.env.decls;
        let e = |d: DType, b: Uniformity| self.expr(d, b, ctx, 2);
        let swaps: Vec<BoxedStrategy<Stmt>> = (0..decls.vars.len() as u16)
            .filter(|&v| decls.vars[v as usize].class == Varying)
            .map(|var| {
                let d = decls.vars[var as usize].dtype;
                (e(d, Varying), e(DType::U32, Varying))
                    .prop_map(move |(value, index)| Stmt::SharedSwap { var, value, index })
                    .boxed()
            })
            .collect();
        let counters: Vec<BoxedStrategy<Stmt>> = (0..decls.vars.len() as u16)
            .filter(|&v| {
                let decl = decls.vars[v as usize];
                decl.class >= Block && !contended_ops(decl.dtype).is_empty()
            })
            .map(|var| {
                let d = decls.vars[var as usize].dtype;
                (e(d, Varying), select(contended_ops(d)), e(d, Varying))
                    .prop_map(move |(init, op, value)| Stmt::SharedAtomic { var, init, op, value })
                    .boxed()
            })
            .collect();
        let mut alts = Vec::new();
        if !swaps.is_empty() {
            alts.push((2, Union::new(swaps).boxed()));
        }
        if !counters.is_empty() {
            alts.push((2, Union::new(counters).boxed()));
        }
        alts
    }
}

/// The atomics whose final value does not depend on the order threads apply them in: integer
/// add/mul/min/max/and/or/xor (wrapping), float min/max, and float add for f32/f64 of small
/// integers (exact in any order); never exchange or a float product.
fn contended_ops(d: DType) -> Vec<AtomicOp> {
    match d {
        DType::Bool => vec![],
        DType::F32 | DType::F64 => vec![AtomicOp::Add, AtomicOp::Min, AtomicOp::Max],
        DType::F16 | DType::BF16 => vec![AtomicOp::Min, AtomicOp::Max],
        _ => {
            vec![AtomicOp::Add, AtomicOp::Mul, AtomicOp::Min, AtomicOp::Max, AtomicOp::And, AtomicOp::Or, AtomicOp::Xor]
        }
    }
}
