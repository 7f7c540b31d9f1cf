//! Support tables rendered from the model: op × target, each cell native, a polyfill with its
//! cost, or unsupported and why. `qd info --support` prints them and `docs/support.md` is
//! generated from [`markdown`] (a test fails when the committed file differs).

use super::{Feature, MemSpace, NvFeature, Polyfill, Support, Target};
use crate::backend::amdgpu::AmdgpuArch;
use crate::backend::spirv::SpirvCaps;
use crate::ir::{reduce_name, AtomicOp, DType, ReduxOp, ScanKind};

/// One column of the table: a target, or a family whose answer depends on the device.
pub struct Column {
    /// Header (`cuda:sm_90`, `vulkan`, ...).
    pub name: String,
    answer: Box<dyn Fn(Feature) -> String>,
}

impl Column {
    /// The cell for `feature`.
    pub fn cell(&self, feature: Feature) -> String {
        (self.answer)(feature)
    }
}

/// A cell's text for one answer: `native`, `polyfill: <cost>`, `library: <how>`, `lowered: <how>` or
/// `unsupported: <why>`.
pub fn short(s: &Support) -> String {
    match s {
        Support::Native => "native".into(),
        Support::Polyfill { how } => match how {
            Polyfill::CasLoop | Polyfill::SubwordCasLoop => format!("polyfill: {}", how.cost()),
            Polyfill::Library(h) => format!("library: {h}"),
            Polyfill::Lowering(h) => format!("lowered: {h}"),
        },
        Support::Unsupported { why } => format!("unsupported: {why}"),
    }
}

/// The targets a column answers for: one, or for a family whose answer depends on the device (Vulkan)
/// the target with every optional feature and the one without them.
#[derive(Clone, Debug)]
pub struct ColumnTargets {
    /// Header (`cuda:sm_90`, `vulkan`, ...).
    pub name: String,
    /// The target (with every optional device feature).
    pub with: Target,
    /// The same family without its optional device features, where they change answers.
    pub without: Option<Target>,
}

impl ColumnTargets {
    /// A column's text from the answer for each target: where the two differ, both, naming the
    /// device feature (the reasons name the Vulkan feature).
    pub fn cell(&self, answer: impl Fn(&Target) -> String) -> String {
        let with = answer(&self.with);
        match &self.without {
            Some(poor) => {
                let without = answer(poor);
                if with == without {
                    with
                } else {
                    format!("{with} with the device feature, else {without}")
                }
            }
            None => with,
        }
    }
}

/// The Vulkan column: every optional device feature, and none of them (with lavapipe's loop cap).
fn vulkan() -> ColumnTargets {
    let all = SpirvCaps { float16: true, float64_atomic_add: true, float16_atomic_add: true, ..SpirvCaps::lavapipe() };
    let none = SpirvCaps {
        float32_atomic_add: false,
        float64_atomic_add: false,
        float16_atomic_add: false,
        signed_zeros32: false,
        signed_zeros64: false,
        float64: false,
        int64_atomics: false,
        int8_storage: false,
        int16_storage: false,
        float16: false,
        max_shared_bytes: all.max_shared_bytes,
        vulkan_memory_model: false,
    };
    // lavapipe ends every loop after 65535 iterations (measured by the runtime).
    ColumnTargets {
        name: "vulkan".into(),
        with: Target::vulkan(32, &all),
        without: Some(Target::vulkan(32, &none).with_loop_iteration_cap(Some(65535))),
    }
}

fn fixed(target: Target) -> ColumnTargets {
    ColumnTargets { name: target.features_name(), with: target, without: None }
}

/// The columns' targets: the emulator, CUDA before and from sm_90, Vulkan, AMDGPU, Metal (also the
/// columns of the guide's per-family tables).
pub fn column_targets() -> Vec<ColumnTargets> {
    vec![
        fixed(Target::cpu(32)),
        fixed(Target::cuda(80)),
        fixed(Target::cuda(90)),
        vulkan(),
        fixed(Target::amdgpu(AmdgpuArch::Gfx942)),
        fixed(Target::metal()),
    ]
}

/// The columns: the emulator, CUDA before and from sm_90, Vulkan, AMDGPU, Metal.
pub fn columns() -> Vec<Column> {
    column_targets()
        .into_iter()
        .map(|c| Column { name: c.name.clone(), answer: Box::new(move |f| c.cell(|t| short(&t.support(f)))) })
        .collect()
}

/// The rows: (group, op as users write it, the feature it needs).
pub fn rows() -> Vec<(&'static str, String, Feature)> {
    let mut rows: Vec<(&'static str, String, Feature)> = vec![
        ("library paths", "subgroup.all_true / any_true (full subgroup)".into(), Feature::VoteShortcut),
        ("library paths", "block.sync_*_nonzero".into(), Feature::BarrierReduce),
        ("library paths", "subgroup.broadcast from a varying lane".into(), Feature::DynamicBroadcastLane),
        ("library paths", "subgroup.mem_fence".into(), Feature::SubgroupFence),
        ("library paths", "_tiled ops with log2_size = 6".into(), Feature::Tile { lanes: 64 }),
        ("library paths", "spin-waits on other blocks (look-back)".into(), Feature::SpinWait),
    ];
    let arith = [
        (ReduxOp::Add, None),
        (ReduxOp::Min, None),
        (ReduxOp::Max, None),
        (ReduxOp::Add, Some(ScanKind::Inclusive)),
        (ReduxOp::Min, Some(ScanKind::Inclusive)),
        (ReduxOp::Add, Some(ScanKind::Exclusive)),
    ];
    for (op, scan) in arith {
        for dtype in [DType::I32, DType::I64] {
            let name = format!("subgroup.{} on {dtype} (full subgroup)", reduce_name(op, scan));
            rows.push(("subgroup arithmetic", name, Feature::SubgroupArith { op, scan, dtype }));
        }
    }
    for n in NvFeature::ALL {
        rows.push(("qd::nv (seed 004)", n.name().into(), Feature::Nv(n)));
    }
    for d in [DType::F16, DType::BF16, DType::F64, DType::I64, DType::F16x2, DType::B128] {
        rows.push(("values", format!("{d} values"), Feature::Values(d)));
    }
    for d in [DType::F32, DType::F64] {
        rows.push(("values", format!("signed zeros in {d} (float atomic_sub)"), Feature::SignedZeros(d)));
    }
    for d in [DType::Bool, DType::U8, DType::I16, DType::F16, DType::F64] {
        rows.push(("arrays", format!("device arrays of {d}"), Feature::Storage(d, MemSpace::Device)));
    }
    let ops = [
        AtomicOp::Add,
        AtomicOp::Mul,
        AtomicOp::Min,
        AtomicOp::Max,
        AtomicOp::And,
        AtomicOp::Or,
        AtomicOp::Xor,
        AtomicOp::Exchange,
    ];
    let types = [
        DType::I32,
        DType::U32,
        DType::I64,
        DType::U64,
        DType::F32,
        DType::F64,
        DType::F16,
        DType::BF16,
        DType::U8,
        DType::I16,
    ];
    for space in [MemSpace::Device, MemSpace::Shared] {
        for op in ops {
            for d in types {
                if !d.is_int() && matches!(op, AtomicOp::And | AtomicOp::Or | AtomicOp::Xor) {
                    continue;
                }
                rows.push((
                    "atomics",
                    format!("atomic_{} on {} {d}", op.name(), space.name()),
                    Feature::AtomicRmw(op, d, space),
                ));
            }
        }
        for d in types {
            rows.push(("atomics", format!("atomic_cas on {} {d}", space.name()), Feature::AtomicCas(d, space)));
        }
    }
    rows
}

/// The whole table as Markdown, one section per group (what `docs/support.md` holds). With
/// `only`, just the column whose name starts with it.
pub fn markdown(only: Option<&str>) -> String {
    let cols: Vec<Column> = columns().into_iter().filter(|c| only.is_none_or(|o| c.name.starts_with(o))).collect();
    let mut out = String::from(
        "# What each target supports\n\nGenerated from the capability model (`crate::target`, one \
         `backend/<name>/caps.rs` per backend) by `qd info --support`; a test fails when this file \
         differs. `native`: one instruction or the natural form; `polyfill`: a CAS loop the IR \
         rewrite or the backend writes; `library`: the library composes it while tracing; \
         `lowered`: the backend expands it; `unsupported`: refused while tracing, with the reason. \
         AMDGPU and Metal are the profiles the emulator wears (`cpu:sg64@amdgpu:gfx942`, \
         `cpu:sg32@metal`), and code generators (`qd emit --target msl`, `qd emit --target \
         amdgpu:gfxNNN`) whose output this project has not run on their hardware.\n",
    );
    let mut group = "";
    for (g, op, feature) in rows() {
        if g != group {
            group = g;
            out.push_str(&format!(
                "\n## {g}\n\n| op | {} |\n|---|",
                cols.iter().map(|c| c.name.as_str()).collect::<Vec<_>>().join(" | ")
            ));
            out.push_str(&"---|".repeat(cols.len()));
            out.push('\n');
        }
        let cells: Vec<String> = cols.iter().map(|c| c.cell(feature).replace('|', "\\|")).collect();
        out.push_str(&format!("| {op} | {} |\n", cells.join(" | ")));
    }
    out
}
