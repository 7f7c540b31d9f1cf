//! The tour's kernels are written with `#[qd::kernel]`; here are the same kernels in the builder
//! form they had before. The macro form costs nothing: every pair traces to the same IR text.

use qd::prelude::*;
use qd::target::Target;
use std::collections::BTreeMap;

const BLOCK: u32 = 64;

fn broadcast_lane0() -> Kernel {
    Kernel::range("broadcast_lane0_f32", BLOCK, |k| {
        let a = k.array::<f32>("a");
        k.parallel_for(0, a.len(), |i| {
            a.set(i, subgroup::shuffle(a.get(i), 0u32));
        });
    })
}

fn ballot_count_positive() -> Kernel {
    Kernel::range("ballot_count_positive", BLOCK, |k| {
        let a = k.array::<f32>("a");
        let counts = k.array::<u32>("counts");
        k.parallel_for(0, a.len(), |i| {
            let n = subgroup::group_size().min(32);
            let mask = subgroup::ballot_first_n(a.get(i).gt(0.0f32).to_i32(), n);
            if_(subgroup::invocation_id().eq(0), || {
                counts.set(i >> subgroup::log2_group_size() as i32, mask);
            });
        });
    })
}

fn gather_kernel(name: &str, lane_of: fn(Val<i32>) -> Val<i32>) -> Kernel {
    Kernel::range(&format!("{name}_f32"), BLOCK, move |k| {
        let src = k.array::<f32>("src");
        let dst = k.array::<f32>("dst");
        k.parallel_for(0, src.len(), |i| {
            let lane = subgroup::invocation_id();
            dst.set(i, subgroup::shuffle(src.get(i), lane_of(lane).cast::<u32>()));
        });
    })
}

fn reduce4() -> Kernel {
    Kernel::range("reduce4_f32", BLOCK, |k| {
        let src = k.array::<f32>("src");
        let dst = k.array::<f32>("dst");
        k.parallel_for(0, src.len(), |i| {
            let mut v = src.get(i);
            v = v + subgroup::shuffle_down(v, 2u32);
            v = v + subgroup::shuffle_down(v, 1u32);
            if_((i % 4).eq(0), || dst.set(i, v));
        });
    })
}

fn reservation_counter() -> Kernel {
    Kernel::range("reservation_counter", BLOCK, |k| {
        let counter = k.array::<i32>("counter");
        let slots = k.array::<i32>("slots");
        k.parallel_for(0, slots.len(), |i| {
            let slot = atomic_add(counter.at(0), 1);
            slots.set(i, slot);
        });
    })
}

fn shared_exchange() -> Kernel {
    Kernel::explicit("shared_exchange_f32", BLOCK, |k| {
        let src = k.array::<f32>("src");
        let dst = k.array::<f32>("dst");
        let shared = block::shared_array::<f32>(BLOCK);
        let t = block::thread_idx();
        let g = block::global_thread_idx();
        shared.set(t, src.get(g));
        block::sync();
        dst.set(g, shared.get(block::block_dim() - 1 - t));
    })
}

#[derive(Clone, Copy)]
enum Split {
    Block,
    CrossSubgroup,
    SameSubgroup,
}

fn producer_consumer(split: Split, name: &str) -> Kernel {
    let block_dim = if let Split::CrossSubgroup = split { 2 * BLOCK } else { BLOCK };
    Kernel::explicit(&format!("producer_consumer_{name}"), block_dim, move |k| {
        let src = k.array::<i32>("src");
        let out = k.array::<i32>("out");
        let data = block::shared_array::<i32>(1);
        let flag = block::shared_array::<i32>(1);
        let t = block::thread_idx();
        let g = block::global_thread_idx();
        if_(t.eq(0), || flag.set(0, 0));
        block::sync();
        let sg = subgroup::group_size() as i32;
        let consumer = match split {
            Split::Block => t.ne(0),
            Split::CrossSubgroup => t.ge(sg),
            Split::SameSubgroup => t.ne(0) & t.lt(sg),
        };
        if_else(
            t.eq(0),
            || {
                let value = src.get(block::block_idx());
                data.set(0, value);
                block::mem_fence();
                atomic_exchange(flag.at(0), 1);
                out.set(g, value);
            },
            || {
                if_(consumer, || {
                    while_(|| volatile_load(flag.at(0)).eq(0), || {});
                    block::mem_fence();
                    out.set(g, data.get(0));
                });
            },
        );
    })
}

fn builder_forms() -> Vec<Kernel> {
    vec![
        broadcast_lane0(),
        ballot_count_positive(),
        gather_kernel("identity_shuffle", |lane| lane),
        gather_kernel("swap_neighbours", |lane| lane ^ 1),
        gather_kernel("reverse4", |lane| lane / 4 * 4 + 3 - lane % 4),
        reduce4(),
        reservation_counter(),
        shared_exchange(),
        producer_consumer(Split::Block, "block"),
        producer_consumer(Split::CrossSubgroup, "cross_subgroup"),
        producer_consumer(Split::SameSubgroup, "same_subgroup"),
    ]
}

fn ir(kernel: &Kernel, target: &Target) -> String {
    kernel.trace(target).map(|k| qd::ir::print_kernel(&k)).unwrap_or_else(|e| e.to_string())
}

#[test]
fn every_tour_kernel_traces_to_its_builder_twins_ir() {
    let tour: BTreeMap<String, Kernel> =
        qd_cli::tour::kernels().into_iter().map(|k| (k.name().to_string(), k)).collect();
    let twins = builder_forms();
    assert_eq!(twins.len(), tour.len(), "one twin per tour kernel");
    for target in [Target::cpu(32), Target::cpu(8)] {
        for twin in &twins {
            let macro_form = tour.get(twin.name()).unwrap_or_else(|| panic!("no tour kernel `{}`", twin.name()));
            assert_eq!(ir(macro_form, &target), ir(twin, &target), "`{}` on {}", twin.name(), target.name());
        }
    }
}
