//! qd's SPIR-V run by hand: a small kernel's module, taken from `Device::compile`, bound and
//! dispatched with plain `ash` calls following the ABI `runtime/vulkan/mod.rs` documents (binding 0
//! the parameter block of one u64 per parameter, arrays at bindings 1, 2, ...), on its own logical
//! device. The results must match qd's launch: so the module and its ABI stand alone.
//!
//! With `QD_BARE_REPS=N` it also measures the launch overhead anchor of issue 14: N submits of the
//! recorded dispatch with a fence wait after each (the least a synchronous launch can cost), against
//! N `Device::launch` calls of the same kernel on same-sized arrays, in the same process, and prints
//! the medians and their ratio (`bare-vulkan ...` line). Nothing is asserted about the times.
//!
//! Without a Vulkan device the test prints `skipped` and passes; with `QD_REQUIRE_VULKAN=1` it fails.
#![cfg(feature = "vulkan")]

use ash::vk;
use qd::prelude::*;
use std::ffi::CString;
use std::time::{Duration, Instant};

/// `y[i] = a * x[i] + y[i]`: the kernel of `qd latency`.
fn saxpy() -> Kernel {
    Kernel::range("bare_saxpy", 256, |k| {
        let a = k.scalar::<f32>("a");
        let x = k.array::<f32>("x");
        let y = k.array::<f32>("y");
        k.parallel_for(0, x.len(), |i| y.set(i, a * x.get(i) + y.get(i)));
    })
}

/// A host-visible, coherent buffer with its memory, mapped.
struct Buf {
    buffer: vk::Buffer,
    memory: vk::DeviceMemory,
    ptr: *mut u8,
}

/// The bare device: one instance, device, queue, and what one dispatch needs.
struct Bare {
    _entry: ash::Entry,
    instance: ash::Instance,
    device: ash::Device,
    queue: vk::Queue,
    family: u32,
    memory: vk::PhysicalDeviceMemoryProperties,
}

impl Bare {
    fn new() -> Bare {
        // SAFETY: loads libvulkan; every call below gets valid create infos, and objects are used
        // only while alive.
        unsafe {
            let entry = ash::Entry::load().expect("a Vulkan loader (qd opened a device)");
            let app = vk::ApplicationInfo::default().api_version(vk::API_VERSION_1_3);
            let instance =
                entry.create_instance(&vk::InstanceCreateInfo::default().application_info(&app), None).unwrap();
            let pd = instance.enumerate_physical_devices().unwrap()[0];
            let family = instance
                .get_physical_device_queue_family_properties(pd)
                .iter()
                .position(|f| f.queue_flags.contains(vk::QueueFlags::COMPUTE))
                .unwrap() as u32;
            let prio = [1.0f32];
            let queues = [vk::DeviceQueueCreateInfo::default().queue_family_index(family).queue_priorities(&prio)];
            // A saxpy's module needs 64-bit integers (the parameter block's slots) and, where qd
            // found it on the device, the Vulkan memory model (Vulkan 1.2 devices; lavapipe and
            // NVIDIA have it).
            let v12 = instance.get_physical_device_properties(pd).api_version >= vk::API_VERSION_1_2;
            let mut mm = vk::PhysicalDeviceVulkanMemoryModelFeatures::default();
            if v12 {
                let mut f2 = vk::PhysicalDeviceFeatures2::default().push_next(&mut mm);
                instance.get_physical_device_features2(pd, &mut f2);
            }
            let mut f2 = vk::PhysicalDeviceFeatures2::default()
                .features(vk::PhysicalDeviceFeatures::default().shader_int64(true));
            if v12 {
                f2 = f2.push_next(&mut mm);
            }
            let device = instance
                .create_device(
                    pd,
                    &vk::DeviceCreateInfo::default().queue_create_infos(&queues).push_next(&mut f2),
                    None,
                )
                .unwrap();
            let queue = device.get_device_queue(family, 0);
            let memory = instance.get_physical_device_memory_properties(pd);
            Bare { _entry: entry, instance, device, queue, family, memory }
        }
    }

    fn buffer(&self, bytes: usize) -> Buf {
        // SAFETY: as in `new`.
        unsafe {
            let d = &self.device;
            let buffer = d
                .create_buffer(
                    &vk::BufferCreateInfo::default().size(bytes as u64).usage(vk::BufferUsageFlags::STORAGE_BUFFER),
                    None,
                )
                .unwrap();
            let req = d.get_buffer_memory_requirements(buffer);
            let want = vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
            let ty = (0..self.memory.memory_type_count)
                .find(|&i| {
                    req.memory_type_bits & (1 << i) != 0
                        && self.memory.memory_types[i as usize].property_flags.contains(want)
                })
                .unwrap();
            let memory = d
                .allocate_memory(
                    &vk::MemoryAllocateInfo::default().allocation_size(req.size).memory_type_index(ty),
                    None,
                )
                .unwrap();
            d.bind_buffer_memory(buffer, memory, 0).unwrap();
            let ptr = d.map_memory(memory, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty()).unwrap() as *mut u8;
            Buf { buffer, memory, ptr }
        }
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

#[test]
fn a_dispatch_recorded_by_hand_runs_qds_spirv() {
    let qd_dev = match Device::from_name("vulkan") {
        Ok(d) => d,
        Err(QdError::Unavailable { reason, .. }) if std::env::var("QD_REQUIRE_VULKAN").as_deref() != Ok("1") => {
            eprintln!("skipped: no Vulkan device ({reason}); QD_REQUIRE_VULKAN=1 makes this a failure");
            return;
        }
        Err(e) => panic!("Vulkan required (QD_REQUIRE_VULKAN=1) but unavailable: {e}"),
    };
    let n = 1024usize;
    let k = saxpy();
    let code = qd_dev.compile(&k).unwrap().spirv().unwrap().clone();
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let a = 2.0f32;

    // qd's launch.
    let xa = qd_dev.array_from(&x).unwrap();
    let ya = qd_dev.array_from(&vec![1.0f32; n]).unwrap();
    let args = [Arg::scalar(a), xa.arg(), ya.arg()];
    qd_dev.launch(&k, &args).unwrap();
    let want = ya.to_vec().unwrap();

    // The same module by hand.
    let bare = Bare::new();
    let d = &bare.device;
    let params = bare.buffer(3 * 8);
    let xb = bare.buffer(n * 4);
    let yb = bare.buffer(n * 4);
    let grid = n.div_ceil(256) as u32;
    // SAFETY: as in `Bare::new`; the mappings hold the bytes written; the kernel has finished
    // before the host reads.
    unsafe {
        let slots: [u64; 3] = [a.to_bits() as u64, n as u64, n as u64];
        std::ptr::copy_nonoverlapping(slots.as_ptr() as *const u8, params.ptr, 24);
        std::ptr::copy_nonoverlapping(x.as_ptr() as *const u8, xb.ptr, n * 4);
        std::ptr::copy_nonoverlapping(vec![1.0f32; n].as_ptr() as *const u8, yb.ptr, n * 4);
        let bindings: Vec<_> = (0..3)
            .map(|b| {
                vk::DescriptorSetLayoutBinding::default()
                    .binding(b)
                    .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                    .descriptor_count(1)
                    .stage_flags(vk::ShaderStageFlags::COMPUTE)
            })
            .collect();
        let set_layout = d
            .create_descriptor_set_layout(&vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings), None)
            .unwrap();
        let layouts = [set_layout];
        let layout =
            d.create_pipeline_layout(&vk::PipelineLayoutCreateInfo::default().set_layouts(&layouts), None).unwrap();
        let shader = d.create_shader_module(&vk::ShaderModuleCreateInfo::default().code(&code.words), None).unwrap();
        let entry = CString::new(code.entry.clone()).unwrap();
        let stage = vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::COMPUTE)
            .module(shader)
            .name(&entry);
        let pipeline = d
            .create_compute_pipelines(
                vk::PipelineCache::null(),
                &[vk::ComputePipelineCreateInfo::default().stage(stage).layout(layout)],
                None,
            )
            .unwrap()[0];
        let sizes = [vk::DescriptorPoolSize { ty: vk::DescriptorType::STORAGE_BUFFER, descriptor_count: 3 }];
        let pool = d
            .create_descriptor_pool(&vk::DescriptorPoolCreateInfo::default().max_sets(1).pool_sizes(&sizes), None)
            .unwrap();
        let set = d
            .allocate_descriptor_sets(
                &vk::DescriptorSetAllocateInfo::default().descriptor_pool(pool).set_layouts(&layouts),
            )
            .unwrap()[0];
        let infos = [params.buffer, xb.buffer, yb.buffer]
            .map(|buffer| [vk::DescriptorBufferInfo { buffer, offset: 0, range: vk::WHOLE_SIZE }]);
        let writes: Vec<_> = infos
            .iter()
            .enumerate()
            .map(|(b, info)| {
                vk::WriteDescriptorSet::default()
                    .dst_set(set)
                    .dst_binding(b as u32)
                    .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                    .buffer_info(info)
            })
            .collect();
        d.update_descriptor_sets(&writes, &[]);
        let cmd_pool =
            d.create_command_pool(&vk::CommandPoolCreateInfo::default().queue_family_index(bare.family), None).unwrap();
        let cmd = d
            .allocate_command_buffers(
                &vk::CommandBufferAllocateInfo::default()
                    .command_pool(cmd_pool)
                    .level(vk::CommandBufferLevel::PRIMARY)
                    .command_buffer_count(1),
            )
            .unwrap()[0];
        d.begin_command_buffer(cmd, &vk::CommandBufferBeginInfo::default()).unwrap();
        d.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::COMPUTE, pipeline);
        d.cmd_bind_descriptor_sets(cmd, vk::PipelineBindPoint::COMPUTE, layout, 0, &[set], &[]);
        d.cmd_dispatch(cmd, grid, 1, 1);
        let to_host = vk::MemoryBarrier::default()
            .src_access_mask(vk::AccessFlags::SHADER_WRITE)
            .dst_access_mask(vk::AccessFlags::HOST_READ);
        d.cmd_pipeline_barrier(
            cmd,
            vk::PipelineStageFlags::COMPUTE_SHADER,
            vk::PipelineStageFlags::HOST,
            vk::DependencyFlags::empty(),
            &[to_host],
            &[],
            &[],
        );
        d.end_command_buffer(cmd).unwrap();
        let fence = d.create_fence(&vk::FenceCreateInfo::default(), None).unwrap();
        let cmds = [cmd];
        let submit = [vk::SubmitInfo::default().command_buffers(&cmds)];
        let run = || {
            d.reset_fences(&[fence]).unwrap();
            d.queue_submit(bare.queue, &submit, fence).unwrap();
            d.wait_for_fences(&[fence], true, u64::MAX).unwrap();
        };
        run();
        let got = std::slice::from_raw_parts(yb.ptr as *const f32, n).to_vec();
        assert_eq!(got, want, "the hand-made dispatch of qd's module disagrees with qd's launch");

        if let Some(reps) = std::env::var("QD_BARE_REPS").ok().and_then(|s| s.parse::<usize>().ok()) {
            for _ in 0..10 {
                run();
                qd_dev.launch(&k, &args).unwrap();
            }
            let (mut bare_t, mut qd_t) = (Vec::new(), Vec::new());
            for _ in 0..reps {
                let t = Instant::now();
                run();
                bare_t.push(t.elapsed());
                let t = Instant::now();
                qd_dev.launch(&k, &args).unwrap();
                qd_t.push(t.elapsed());
            }
            let (b, q) = (median(bare_t), median(qd_t));
            println!(
                "bare-vulkan device={} n={n} reps={reps} bare_submit_wait_us={:.2} qd_launch_us={:.2} ratio={:.2}",
                qd_dev.info().model,
                b.as_secs_f64() * 1e6,
                q.as_secs_f64() * 1e6,
                q.as_secs_f64() / b.as_secs_f64()
            );
        }

        d.device_wait_idle().unwrap();
        d.destroy_fence(fence, None);
        d.destroy_command_pool(cmd_pool, None);
        d.destroy_descriptor_pool(pool, None);
        d.destroy_pipeline(pipeline, None);
        d.destroy_shader_module(shader, None);
        d.destroy_pipeline_layout(layout, None);
        d.destroy_descriptor_set_layout(set_layout, None);
        for b in [params, xb, yb] {
            d.destroy_buffer(b.buffer, None);
            d.free_memory(b.memory, None);
        }
        d.destroy_device(None);
        bare.instance.destroy_instance(None);
    }
}
