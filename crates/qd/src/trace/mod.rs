//! The tracing front end: kernels are Rust closures run once per (target, compile-time parameters),
//! recording IR as they go.
//!
//! Compile-time parameters (sizes, dtypes, operator closures) are ordinary Rust values while tracing.
//! Every traced operation goes through a thread-local builder; the first mistake is recorded with the
//! user's source line and returned from [`Kernel::trace`] as a [`TraceError`].
//!
//! # Traced operations outside a kernel body
//!
//! A traced operation (`subgroup::shuffle`, `block::sync`, arithmetic on a `Val` kept from an
//! earlier trace...) called when no trace is in progress on this thread does not panic. It runs
//! against a throwaway builder, its result is meaningless, and the first such call is kept as a
//! pending [`TraceError`] naming the op and the user's line (kernel [`OUTSIDE_KERNEL`]). That
//! error is returned by the next [`Kernel::trace`] on the same thread, and so by the next
//! `Device::compile` or launch there, even of a kernel already compiled; [`take_misuse`] returns
//! (and clears) it directly.

mod array;
mod control;
mod scalar;
mod value;

pub use array::{local_array, volatile_load, Array, Elem, SharedArray};
pub(crate) use array::{local_array_named, shared_array as shared_array_named};
pub use control::{break_, continue_, for_range, if_, if_else, loop_, return_, var, while_, Var};
pub use scalar::{f16_bits_to_f32, f32_to_f16_bits, Float, Int, Num, Scalar, Shuffle, Signed, BF16, F16};
pub(crate) use value::new_value;
pub use value::{bit_cast, cast, fma, select, IntoIndex, IntoVal, Val};

use crate::ir::{self, Block, DType, Inst, InstKind, LaunchKind, SrcLoc, ValueId};
use crate::target::{Feature, Target};
use std::cell::RefCell;
use std::sync::Arc;

/// A mistake found while tracing: which kernel, which operation, where, and what.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("kernel `{kernel}`: `{op}` at {loc}: {message}")]
pub struct TraceError {
    /// Kernel name.
    pub kernel: String,
    /// The operation (e.g. `subgroup.reduce_add_tiled`, `block.sync`).
    pub op: String,
    /// The user's source line.
    pub loc: SrcLoc,
    /// What was wrong.
    pub message: String,
    /// The feature (or limit) the target lacks, when that is what was wrong: the kernel is
    /// correct but needs another target (the conformance suite skips such cases, with the reason).
    pub unsupported: Option<crate::target::Feature>,
}

impl From<ir::VerifyError> for TraceError {
    fn from(e: ir::VerifyError) -> Self {
        TraceError { kernel: e.kernel, op: e.op, loc: e.loc, message: e.message, unsupported: None }
    }
}

type Body = dyn Fn(&mut KernelBuilder) + Send + Sync;

/// A kernel definition: a name, a launch shape and the Rust closure that traces its body.
///
/// Tracing happens when a device compiles the kernel, once per target.
#[derive(Clone)]
pub struct Kernel {
    name: String,
    launch: LaunchKind,
    block_dim: u32,
    /// See [`Kernel::min_blocks_per_sm`].
    min_blocks_per_sm: Option<u32>,
    body: Arc<Body>,
    /// Unique per definition (clones share it): the compile cache's key, never reused.
    id: u64,
    /// The user's line of `Kernel::range` / `Kernel::explicit`.
    defined_at: SrcLoc,
}

static NEXT_KERNEL_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

fn next_kernel_id() -> u64 {
    NEXT_KERNEL_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

impl std::fmt::Debug for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kernel").field("name", &self.name).field("block_dim", &self.block_dim).finish()
    }
}

impl Kernel {
    /// A range kernel (D1): the body calls [`KernelBuilder::parallel_for`] exactly once.
    ///
    /// ```
    /// use qd::prelude::*;
    /// let square = Kernel::range("square", 64, |k| {
    ///     let a = k.array::<i32>("a");
    ///     k.parallel_for(0, a.len(), |i| a.set(i, a.get(i) * a.get(i)));
    /// });
    /// let d = Device::cpu();
    /// let a = d.array_from(&[1i32, 2, 3]).unwrap();
    /// d.launch(&square, &[a.arg()]).unwrap();
    /// assert_eq!(a.to_vec().unwrap(), [1, 4, 9]);
    /// ```
    #[track_caller]
    pub fn range(name: &str, block_dim: u32, body: impl Fn(&mut KernelBuilder) + Send + Sync + 'static) -> Kernel {
        Kernel {
            name: name.to_string(),
            launch: LaunchKind::Range,
            block_dim,
            min_blocks_per_sm: None,
            body: Arc::new(body),
            id: next_kernel_id(),
            defined_at: SrcLoc::caller(),
        }
    }

    /// An explicit kernel: launched with a grid of blocks of `block_dim` threads chosen at launch.
    ///
    /// ```
    /// use qd::prelude::*;
    /// // One block per row: the block count is chosen at launch.
    /// let row_sums = Kernel::explicit("row_sums", 32, |k| {
    ///     let m = k.array::<f32>("m");
    ///     let sums = k.array::<f32>("sums");
    ///     let b = block::block_idx();
    ///     let total = block::reduce_add(m.get(b * 32 + block::thread_idx()), 32);
    ///     if_(block::thread_idx().eq(0), || sums.set(b, total));
    /// });
    /// let d = Device::cpu();
    /// let m = d.array_from(&(0..96).map(|x| (x / 32) as f32).collect::<Vec<_>>()).unwrap();
    /// let sums = d.zeros::<f32>(3).unwrap();
    /// d.launch_grid(&row_sums, 3, &[m.arg(), sums.arg()]).unwrap();
    /// assert_eq!(sums.to_vec().unwrap(), [0.0, 32.0, 64.0]);
    /// ```
    #[track_caller]
    pub fn explicit(name: &str, block_dim: u32, body: impl Fn(&mut KernelBuilder) + Send + Sync + 'static) -> Kernel {
        Kernel {
            name: name.to_string(),
            launch: LaunchKind::Explicit,
            block_dim,
            min_blocks_per_sm: None,
            body: Arc::new(body),
            id: next_kernel_id(),
            defined_at: SrcLoc::caller(),
        }
    }

    /// Identity of this kernel definition (the compile cache key): unique for the process, shared
    /// by clones, never reused after the kernel is dropped.
    ///
    /// ```
    /// use qd::prelude::*;
    /// let a = Kernel::explicit("a", 32, |_| {});
    /// let b = Kernel::explicit("a", 32, |_| {}); // the same name, another definition
    /// assert_ne!(a.id(), b.id());
    /// assert_eq!(a.clone().id(), a.id()); // clones share the compiled code
    /// ```
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The same identity as [`Kernel::id`], as a `usize` (kept for the runtime's cache key).
    pub(crate) fn body_ptr(&self) -> usize {
        self.id as usize
    }

    /// The kernel's name.
    ///
    /// ```
    /// use qd::prelude::*;
    /// assert_eq!(Kernel::explicit("blur", 64, |_| {}).name(), "blur");
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Threads per block.
    ///
    /// ```
    /// use qd::prelude::*;
    /// assert_eq!(Kernel::explicit("k", 128, |_| {}).block_dim(), 128);
    /// ```
    pub fn block_dim(&self) -> u32 {
        self.block_dim
    }

    /// Asks the code generator to leave room for `blocks` resident blocks per multiprocessor,
    /// trading registers for occupancy: CUDA's `__launch_bounds__` minimum (PTX `.minnctapersm`;
    /// `ptxas` then caps registers per thread, spilling if it must). Other targets ignore it:
    /// SPIR-V, Metal and the emulator have no such control, and AMDGPU's (`amdgpu-waves-per-eu`)
    /// is left alone until a shape is measured there (the sort's 384 x 20 pass needs 32.8 KB of
    /// LDS, so a gfx9 compute unit's 64 KB holds one block whatever the registers). A performance
    /// hint only: results never depend on it. `0` removes it.
    ///
    /// ```
    /// use qd::prelude::*;
    /// let k = Kernel::explicit("k", 384, |k| {
    ///     let a = k.array::<i32>("a");
    ///     a.set(block::thread_idx(), 1);
    /// })
    /// .min_blocks_per_sm(2);
    /// assert_eq!(k.min_blocks(), Some(2));
    /// let d = Device::cpu();
    /// let a = d.zeros::<i32>(384).unwrap();
    /// d.launch_grid(&k, 1, &[a.arg()]).unwrap();
    /// assert_eq!(a.to_vec().unwrap(), vec![1; 384]);
    /// ```
    pub fn min_blocks_per_sm(mut self, blocks: u32) -> Kernel {
        self.min_blocks_per_sm = (blocks > 0).then_some(blocks);
        // Other code: a definition of its own for the compile cache (a clone keeps the old one).
        self.id = next_kernel_id();
        self
    }

    /// The hint [`Kernel::min_blocks_per_sm`] set, if any.
    ///
    /// ```
    /// use qd::prelude::*;
    /// assert_eq!(Kernel::explicit("k", 64, |_| {}).min_blocks(), None);
    /// ```
    pub fn min_blocks(&self) -> Option<u32> {
        self.min_blocks_per_sm
    }

    /// Range or explicit.
    ///
    /// ```
    /// use qd::prelude::*;
    /// use qd::ir::LaunchKind;
    /// let k = Kernel::range("k", 32, |k| {
    ///     let a = k.array::<i32>("a");
    ///     k.parallel_for(0, a.len(), |i| a.set(i, 0));
    /// });
    /// assert_eq!(k.launch_kind(), LaunchKind::Range);
    /// assert_eq!(Kernel::explicit("e", 32, |_| {}).launch_kind(), LaunchKind::Explicit);
    /// ```
    pub fn launch_kind(&self) -> LaunchKind {
        self.launch
    }

    /// The user's line that defined the kernel (its `Kernel::range` / `Kernel::explicit` call):
    /// where an error about the kernel as a whole points (a `block_dim` out of range, a scalar
    /// parameter type the target lacks).
    ///
    /// ```
    /// use qd::prelude::*;
    /// let k = Kernel::explicit("here", 32, |_| {});
    /// assert!(k.defined_at().file.ends_with(".rs"));
    /// assert!(k.defined_at().line > 0);
    /// ```
    pub fn defined_at(&self) -> SrcLoc {
        self.defined_at
    }

    /// Traces the body for `target` and verifies the result. (`#[track_caller]`, like the launch
    /// calls that trace: a kernel traced inside another kernel's trace is an error at that call.)
    ///
    /// ```
    /// use qd::prelude::*;
    /// use qd::target::Target;
    /// // Trace without running: the IR for a target (here lavapipe's 8-lane Vulkan, no device needed).
    /// let k = Kernel::range("sum8", 8, |k| {
    ///     let a = k.array::<i32>("a");
    ///     k.parallel_for(0, a.len(), |i| a.set(i, subgroup::reduce_all_add(a.get(i))));
    /// });
    /// let target = Target::vulkan(8, &qd::backend::spirv::SpirvCaps::lavapipe());
    /// let ir = k.trace(&target).unwrap();
    /// assert_eq!(ir.subgroup_size, 8);
    /// println!("{}", qd::ir::print_kernel(&ir)); // the IR as text
    /// ```
    #[track_caller]
    pub fn trace(&self, target: &Target) -> Result<ir::Kernel, TraceError> {
        if !is_tracing()
            && let Some(e) = take_misuse()
        {
            return Err(e);
        }
        let kernel = ir::Kernel {
            name: self.name.clone(),
            launch: self.launch,
            block_dim: self.block_dim,
            subgroup_size: target.subgroup_size(),
            min_blocks_per_sm: self.min_blocks_per_sm,
            params: Vec::new(),
            values: Vec::new(),
            locals: Vec::new(),
            shared: Vec::new(),
            local_arrays: Vec::new(),
            body: Block::default(),
        };
        let state = State {
            kernel,
            blocks: vec![Block::default()],
            error: None,
            target: target.clone(),
            generation: next_generation(),
            loop_depth: 0,
            in_range: false,
            op_scope: Vec::new(),
            control_loc: Vec::new(),
        };
        let previous = BUILDER.with(|b| b.borrow_mut().replace(state));
        if previous.is_some() {
            BUILDER.with(|b| *b.borrow_mut() = previous);
            return Err(TraceError {
                kernel: self.name.clone(),
                op: "trace".into(),
                loc: SrcLoc::caller(),
                message: "kernels cannot be traced from inside another kernel's trace".into(),
                unsupported: None,
            });
        }
        // Clears the builder even if the body panics, so the next trace on this thread starts clean.
        struct Reset;
        impl Drop for Reset {
            fn drop(&mut self) {
                BUILDER.with(|b| b.borrow_mut().take());
            }
        }
        let _reset = Reset;
        let mut kb = KernelBuilder { _private: () };
        // A block_dim that is not a multiple of the subgroup width is allowed: collectives in its
        // partial last subgroup are reported by the emulator, and block ops check it while tracing.
        if self.block_dim == 0 || self.block_dim > 1024 {
            let op = match self.launch {
                LaunchKind::Range => "Kernel::range",
                LaunchKind::Explicit => "Kernel::explicit",
            };
            let message = format!("block_dim must be in 1..=1024 (threads per block), got {}", self.block_dim);
            with(|s| s.fail(op, self.defined_at, message));
        }
        (self.body)(&mut kb);
        let state = BUILDER.with(|b| b.borrow_mut().take()).expect("builder state present");
        if let Some(e) = state.error {
            return Err(e);
        }
        let mut kernel = state.kernel;
        let mut blocks = state.blocks;
        kernel.body = blocks.pop().unwrap_or_default();
        // The checks in order: the IR's own rules (types, structure, D3 uniformity; a varying
        // broadcast lane where the target needs a uniform one), then the capability check. (The
        // atomics a target provides as CAS loops become loops when a backend lowers the kernel.)
        let uniform_broadcast_lane = !target.support(Feature::DynamicBroadcastLane).is_available();
        ir::verify(&kernel, ir::VerifyOptions { uniform_broadcast_lane })?;
        crate::target::check(&kernel, target, self.defined_at)?;
        Ok(kernel)
    }
}

/// Handle given to a kernel body for declaring parameters and the parallel loop.
pub struct KernelBuilder {
    _private: (),
}

impl KernelBuilder {
    /// Declares that the kernel needs `feature` although no single instruction shows it (e.g.
    /// [`Feature::SpinWait`] for a look-back whose blocks spin on each other): a target that
    /// lacks it refuses the kernel while tracing, naming the feature and why.
    ///
    /// ```
    /// use qd::prelude::*;
    /// use qd::ir::DType;
    /// use qd::target::{Feature, Target};
    /// // This kernel's result depends on the sign of zero: say so, and targets that drop it refuse it.
    /// let k = Kernel::range("negate", 32, |k| {
    ///     k.requires(Feature::SignedZeros(DType::F32));
    ///     let a = k.array::<f32>("a");
    ///     k.parallel_for(0, a.len(), |i| a.set(i, -a.get(i)));
    /// });
    /// assert!(k.trace(&Target::cpu(32)).is_ok());
    /// let plain = qd::backend::spirv::SpirvCaps { signed_zeros32: false, ..qd::backend::spirv::SpirvCaps::lavapipe() };
    /// let err = k.trace(&Target::vulkan(32, &plain)).unwrap_err();
    /// assert_eq!(err.unsupported, Some(Feature::SignedZeros(DType::F32)));
    /// ```
    #[track_caller]
    pub fn requires(&mut self, feature: Feature) {
        require("kernel.requires", feature);
    }
    /// Declares the next parameter as a global array of `T`.
    ///
    /// ```
    /// use qd::prelude::*;
    /// // Parameters are declared in launch order.
    /// let k = Kernel::range("add", 32, |k| {
    ///     let x = k.array::<i64>("x");
    ///     let y = k.array::<i64>("y");
    ///     k.parallel_for(0, x.len(), |i| y.set(i, x.get(i) + y.get(i)));
    /// });
    /// let d = Device::cpu();
    /// let (x, y) = (d.array_from(&[1i64, 2]).unwrap(), d.array_from(&[10i64, 20]).unwrap());
    /// d.launch(&k, &[x.arg(), y.arg()]).unwrap();
    /// assert_eq!(y.to_vec().unwrap(), [11, 22]);
    /// ```
    #[track_caller]
    pub fn array<T: Scalar>(&mut self, name: &str) -> Array<T> {
        let (index, arrays, limit) = with(|s| {
            s.kernel.params.push(ir::Param::Array { name: name.to_string(), dtype: T::DTYPE });
            let arrays = s.kernel.params.iter().filter(|p| matches!(p, ir::Param::Array { .. })).count();
            (s.kernel.params.len() as u32 - 1, arrays, s.target.limits().max_array_params)
        });
        if let Some(max) = limit
            && arrays > max as usize
        {
            trace_error(
                "array",
                format!(
                    "array parameter `{name}` is one too many: {} takes at most {max} array parameters",
                    target().name()
                ),
            );
        }
        Array::from_ref(ir::ArrayRef::Param(index))
    }

    /// Declares the next parameter as a scalar of `T`, passed by value.
    ///
    /// ```
    /// use qd::prelude::*;
    /// let k = Kernel::range("fill", 32, |k| {
    ///     let a = k.array::<u8>("a");
    ///     let v = k.scalar::<u8>("v");
    ///     k.parallel_for(0, a.len(), |i| a.set(i, v));
    /// });
    /// let d = Device::cpu();
    /// let a = d.zeros::<u8>(5).unwrap();
    /// d.launch(&k, &[a.arg(), Arg::scalar(7u8)]).unwrap();
    /// assert_eq!(a.to_vec().unwrap(), [7; 5]);
    /// ```
    #[track_caller]
    pub fn scalar<T: Scalar>(&mut self, name: &str) -> Val<T> {
        let v = with(|s| {
            let value = s.new_value(T::DTYPE);
            s.kernel.params.push(ir::Param::Scalar { name: name.to_string(), dtype: T::DTYPE, value });
            value
        });
        Val::from_id(v)
    }

    /// The one parallel loop of a range kernel: `body(i)` runs for every `i` in `begin..end`, with
    /// `thread_idx == (i - begin) % block_dim` (D1).
    ///
    /// `begin` and `end` must be computable on the host at launch: constants, scalar parameters,
    /// array lengths and arithmetic on them.
    ///
    /// ```
    /// use qd::prelude::*;
    /// // A range computed on the host from a scalar argument: indices begin..end.
    /// let k = Kernel::range("window", 64, |k| {
    ///     let a = k.array::<i32>("a");
    ///     let begin = k.scalar::<i32>("begin");
    ///     k.parallel_for(begin, a.len() - 1, |i| a.set(i, i));
    /// });
    /// let d = Device::cpu();
    /// let a = d.zeros::<i32>(10).unwrap();
    /// d.launch(&k, &[a.arg(), Arg::scalar(3i32)]).unwrap();
    /// assert_eq!(a.to_vec().unwrap(), [0, 0, 0, 3, 4, 5, 6, 7, 8, 0]);
    /// ```
    #[track_caller]
    pub fn parallel_for(&mut self, begin: impl IntoVal<i32>, end: impl IntoVal<i32>, body: impl FnOnce(Val<i32>)) {
        let loc = current_loc();
        let begin = begin.into_val().id();
        let end = end.into_val().id();
        let ok = with(|s| {
            if s.kernel.launch != LaunchKind::Range {
                s.fail("range", loc, "parallel_for is only allowed in a range kernel (Kernel::range)".into());
                return None;
            }
            if s.blocks.len() != 1 {
                s.fail("range", loc, "parallel_for must be called at the top level of the kernel body".into());
                return None;
            }
            Some(s.new_value(DType::I32))
        });
        let Some(index) = ok else { return };
        push_block_at(loc);
        with(|s| s.in_range = true);
        body(Val::from_id(index));
        with(|s| s.in_range = false);
        let body = pop_block();
        emit_at(InstKind::GridStride { begin, end, index, body }, loc);
    }

    /// The target being traced for.
    ///
    /// ```
    /// use qd::prelude::*;
    /// // Pick a code path by what the traced target has.
    /// let k = Kernel::range("width", 32, |k| {
    ///     let out = k.array::<u32>("out");
    ///     let wide = k.target().subgroup_size() >= 32;
    ///     k.parallel_for(0, out.len(), |i| out.set(i, if wide { 1u32 } else { 0u32 }));
    /// });
    /// let d = Device::from_name("cpu:sg8").unwrap();
    /// let out = d.zeros::<u32>(32).unwrap();
    /// d.launch(&k, &[out.arg()]).unwrap();
    /// assert_eq!(out.to_vec().unwrap()[0], 0);
    /// ```
    pub fn target(&self) -> Target {
        target()
    }
}

thread_local! {
    static BUILDER: RefCell<Option<State>> = const { RefCell::new(None) };
}

static GENERATION: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(1);

fn next_generation() -> u32 {
    GENERATION.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

pub(crate) struct State {
    pub(crate) kernel: ir::Kernel,
    blocks: Vec<Block>,
    error: Option<TraceError>,
    pub(crate) target: Target,
    pub(crate) generation: u32,
    pub(crate) loop_depth: usize,
    /// Inside the `parallel_for` body, where `return_` is rejected (D2).
    pub(crate) in_range: bool,
    /// Library operations in progress: the outermost one names the op and the user's line.
    op_scope: Vec<(&'static str, SrcLoc)>,
    /// Lines of the enclosing control-flow calls, used when an op is passed as a function value
    /// (`if_(c, block::sync)`) and `#[track_caller]` only sees the standard library's shim.
    control_loc: Vec<SrcLoc>,
}

impl State {
    pub(crate) fn new_value(&mut self, dtype: DType) -> ValueId {
        self.kernel.values.push(dtype);
        ValueId(self.kernel.values.len() as u32 - 1)
    }

    /// The user's line for an op recorded at `loc`.
    pub(crate) fn user_loc(&self, loc: SrcLoc) -> SrcLoc {
        let loc = self.op_scope.first().map(|x| x.1).unwrap_or(loc);
        if loc.file.starts_with("/rustc/") {
            self.control_loc.last().copied().unwrap_or(loc)
        } else {
            loc
        }
    }

    pub(crate) fn fail(&mut self, op: &str, loc: SrcLoc, message: String) {
        self.fail_with(op, loc, message, None);
    }

    fn fail_with(&mut self, op: &str, loc: SrcLoc, message: String, unsupported: Option<Feature>) {
        if self.error.is_none() {
            let op = self.op_scope.first().map(|x| x.0.to_string()).unwrap_or_else(|| op.to_string());
            let loc = self.user_loc(loc);
            self.error = Some(TraceError { kernel: self.kernel.name.clone(), op, loc, message, unsupported });
        }
    }
}

/// Runs `f` on the builder of the trace in progress.
///
/// With no trace in progress on this thread, `f` runs on the thread's throwaway builder and the
/// first such call is recorded as a pending misuse error (see the module documentation).
#[track_caller]
pub(crate) fn with<R>(f: impl FnOnce(&mut State) -> R) -> R {
    let loc = SrcLoc::caller();
    BUILDER.with(|b| {
        let mut guard = b.borrow_mut();
        match guard.as_mut() {
            Some(state) => f(state),
            None => {
                drop(guard);
                with_orphan(loc, f)
            }
        }
    })
}

/// The kernel name of an error recorded for a traced operation called outside any kernel body.
pub const OUTSIDE_KERNEL: &str = "<outside a kernel body>";

/// Placeholder op of a pending misuse until the op that made the call is known.
const UNKNOWN_OP: &str = "";

thread_local! {
    /// The throwaway builder traced operations run against outside a kernel body.
    static ORPHAN: RefCell<Option<State>> = const { RefCell::new(None) };
}

fn orphan_state() -> State {
    State {
        kernel: ir::Kernel {
            name: OUTSIDE_KERNEL.into(),
            launch: LaunchKind::Explicit,
            block_dim: 32,
            subgroup_size: 32,
            min_blocks_per_sm: None,
            params: Vec::new(),
            values: Vec::new(),
            locals: Vec::new(),
            shared: Vec::new(),
            local_arrays: Vec::new(),
            body: Block::default(),
        },
        blocks: vec![Block::default()],
        error: None,
        target: Target::cpu(32),
        generation: next_generation(),
        loop_depth: 0,
        in_range: false,
        op_scope: Vec::new(),
        control_loc: Vec::new(),
    }
}

fn with_orphan<R>(loc: SrcLoc, f: impl FnOnce(&mut State) -> R) -> R {
    ORPHAN.with(|o| {
        let mut guard = o.borrow_mut();
        // Between top-level calls, a long run of misuse starts over rather than growing without
        // bound (the pending error is kept; values of the old builder are then another trace's).
        let idle = guard.as_ref().is_some_and(|s| s.blocks.len() == 1 && s.op_scope.is_empty());
        if idle && guard.as_ref().is_some_and(|s| s.kernel.values.len() > 1 << 16) {
            let error = guard.take().and_then(|s| s.error);
            *guard = Some(State { error, ..orphan_state() });
        }
        let state = guard.get_or_insert_with(orphan_state);
        if state.error.is_none() {
            let message = "called outside a kernel body: traced operations only run while a kernel's closure is \
                           traced (Kernel::range / Kernel::explicit), and values from a trace are only valid \
                           inside it"
                .to_string();
            let loc = state.user_loc(loc);
            state.error = Some(TraceError {
                kernel: OUTSIDE_KERNEL.into(),
                op: UNKNOWN_OP.into(),
                loc,
                message,
                unsupported: None,
            });
        }
        let emitted = state.blocks.last().map_or(0, |b| b.insts.len());
        let r = f(state);
        // Name the op once it is known: the outermost library op, else the first instruction
        // other than a constant (`val * 2` first makes the constant 2).
        if state.error.as_ref().is_some_and(|e| e.op == UNKNOWN_OP) {
            let first_inst = |b: &Block| {
                let new = b.insts.get(emitted..).unwrap_or_default();
                new.iter().find(|i| !matches!(i.kind, InstKind::Const { .. })).map(|i| (i.kind.mnemonic(), None))
            };
            let named = match state.op_scope.first() {
                Some(&(name, at)) => Some((name.to_string(), Some(at))),
                None => state.blocks.last().and_then(first_inst),
            };
            if let (Some((op, at)), Some(e)) = (named, state.error.as_mut()) {
                e.op = op;
                if let Some(at) = at {
                    e.loc = at;
                }
            }
        }
        r
    })
}

/// Takes the pending error of a traced operation called outside a kernel body on this thread
/// (see the module documentation), clearing it. [`Kernel::trace`] returns it when there is one.
///
/// ```
/// use qd::prelude::*;
/// // A traced operation outside any kernel body does not panic: the error waits for the next trace.
/// let _ = block::thread_idx();
/// let err = qd::trace::take_misuse().unwrap();
/// assert!(err.to_string().contains("outside a kernel body"), "{err}");
/// assert!(qd::trace::take_misuse().is_none()); // taken
/// ```
pub fn take_misuse() -> Option<TraceError> {
    let state = ORPHAN.with(|o| o.borrow_mut().take())?;
    let mut e = state.error?;
    if e.op == UNKNOWN_OP {
        e.op = "traced operation".into();
    }
    Some(e)
}

/// The target of the trace in progress.
///
/// ```
/// use qd::prelude::*;
/// let k = Kernel::range("target", 32, |k| {
///     let out = k.array::<u32>("out");
///     let t = qd::trace::target(); // inside a library function, without the builder at hand
///     let shared_kib = t.limits().max_shared_bytes / 1024;
///     k.parallel_for(0, out.len(), |i| out.set(i, shared_kib));
/// });
/// let d = Device::cpu();
/// let out = d.zeros::<u32>(1).unwrap();
/// d.launch(&k, &[out.arg()]).unwrap();
/// assert_eq!(out.to_vec().unwrap(), [228]);
/// ```
pub fn target() -> Target {
    with(|s| s.target.clone())
}

/// True while a kernel is being traced on this thread.
///
/// ```
/// use qd::prelude::*;
/// assert!(!qd::trace::is_tracing());
/// let k = Kernel::explicit("k", 32, |_| assert!(qd::trace::is_tracing()));
/// Device::cpu().trace(&k).unwrap();
/// ```
pub fn is_tracing() -> bool {
    BUILDER.with(|b| b.borrow().is_some())
}

/// The location recorded for an op: the outermost library call's, else the caller's.
#[track_caller]
pub(crate) fn current_loc() -> SrcLoc {
    let own = SrcLoc::caller();
    with(|s| s.user_loc(own))
}

/// Marks a library operation: errors and instructions inside it point at the user's call.
///
/// ```
/// # use qd::trace::op_scope;
/// // inside a library function marked #[track_caller]:
/// // let _op = op_scope("subgroup.reduce_add_tiled");
/// ```
#[track_caller]
pub fn op_scope(name: &'static str) -> OpScope {
    let loc = SrcLoc::caller();
    with(|s| {
        let loc = s.user_loc(loc);
        s.op_scope.push((name, loc))
    });
    OpScope { _private: () }
}

/// Guard returned by [`op_scope`].
pub struct OpScope {
    _private: (),
}

impl Drop for OpScope {
    fn drop(&mut self) {
        let popped = BUILDER.with(|b| b.borrow_mut().as_mut().map(|s| s.op_scope.pop()).is_some());
        if !popped {
            ORPHAN.with(|o| o.borrow_mut().as_mut().map(|s| s.op_scope.pop()));
        }
    }
}

/// Records an error naming the current library op (or `op`), at the user's line.
///
/// ```
/// use qd::prelude::*;
/// // A library function checking a compile-time argument, as the built-in ops do.
/// #[track_caller]
/// fn tile_sum(v: Val<i32>, lanes: u32) -> Val<i32> {
///     if !lanes.is_power_of_two() {
///         qd::trace::trace_error("tile_sum", format!("{lanes} lanes is not a power of two"));
///         return v;
///     }
///     subgroup::reduce_all_add_tiled(v, lanes.trailing_zeros())
/// }
/// let k = Kernel::range("bad", 32, |k| {
///     let a = k.array::<i32>("a");
///     k.parallel_for(0, a.len(), |i| a.set(i, tile_sum(a.get(i), 6)));
/// });
/// let err = Device::cpu().trace(&k).unwrap_err();
/// assert!(err.to_string().contains("6 lanes is not a power of two"), "{err}");
/// ```
#[track_caller]
pub fn trace_error(op: &str, message: impl Into<String>) {
    let loc = current_loc();
    with(|s| s.fail(op, loc, message.into()));
}

/// Asks the target being traced for `feature` on behalf of `op`: true when it has it natively.
/// When the target lacks it altogether, records an error naming the op, the target, the feature
/// and why (marked [`TraceError::unsupported`]) at the user's line, and returns false.
///
/// ```
/// use qd::prelude::*;
/// use qd::target::Feature;
/// // Ask for a feature the op cannot do without: an error naming the op where the target lacks it.
/// let k = Kernel::range("tiles64", 64, |k| {
///     let a = k.array::<i32>("a");
///     k.parallel_for(0, a.len(), |i| {
///         if qd::trace::require("my_op", Feature::Tile { lanes: 64 }) {
///             a.set(i, subgroup::reduce_all_add_tiled(a.get(i), 6));
///         }
///     });
/// });
/// assert!(Device::from_name("cpu:sg64").unwrap().trace(&k).is_ok());
/// assert!(Device::from_name("cpu:sg32").unwrap().trace(&k).is_err());
/// ```
#[track_caller]
pub fn require(op: &str, feature: Feature) -> bool {
    let t = target();
    match t.support(feature) {
        crate::target::Support::Native => true,
        crate::target::Support::Unsupported { why } => {
            let loc = current_loc();
            let message = format!("{feature} is not supported on {}: {why}", t.name());
            with(|s| s.fail_with(op, loc, message, Some(feature)));
            false
        }
        crate::target::Support::Polyfill { .. } => false,
    }
}

/// Like [`trace_error`], for a requirement `feature` the target does not meet: the error is
/// marked [`TraceError::unsupported`] (the kernel is fine; another target could run it).
#[track_caller]
pub(crate) fn trace_unsupported(op: &str, feature: Feature, message: impl Into<String>) {
    let loc = current_loc();
    with(|s| s.fail_with(op, loc, message.into(), Some(feature)));
}

pub(crate) fn emit_at(kind: InstKind, loc: SrcLoc) {
    with(|s| {
        let loc = s.user_loc(loc);
        let op = s.op_scope.first().map(|x| x.0);
        s.blocks.last_mut().expect("a block is open").insts.push(Inst { kind, loc, op });
    });
}

#[track_caller]
pub(crate) fn emit(kind: InstKind) {
    let loc = SrcLoc::caller();
    emit_at(kind, loc);
}

/// Opens a nested block for a control-flow call written at `loc`.
/// The deepest nesting of control-flow blocks (`if_`, `loop_`, `parallel_for` bodies...) a kernel
/// may have. Deeper is a trace error: every pass over the IR (verification, optimization, the
/// emulator's lowering, the code generators) recurses once per level, and a limit far above what
/// kernels use keeps them within any thread's stack.
pub const MAX_NESTING: usize = 256;

/// Opens a nested block; false (with a trace error) past [`MAX_NESTING`], when the caller skips
/// tracing the block's body, so runaway recursion in kernel code ends too.
pub(crate) fn push_block_at(loc: SrcLoc) -> bool {
    with(|s| {
        s.blocks.push(Block::default());
        s.control_loc.push(loc);
        let ok = s.blocks.len() <= MAX_NESTING;
        if !ok {
            let message = format!("control flow nested deeper than {MAX_NESTING} levels (qd::trace::MAX_NESTING)");
            s.fail("nesting", loc, message);
        }
        ok
    })
}

pub(crate) fn pop_block() -> Block {
    with(|s| {
        s.control_loc.pop();
        s.blocks.pop().expect("a block is open")
    })
}
