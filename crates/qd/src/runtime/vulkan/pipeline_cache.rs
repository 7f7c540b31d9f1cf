//! Compute pipelines through a pipeline cache on disk, beside CUDA's cubins (`disk_cache.rs`): a
//! later process hands the driver the data an earlier one got back for the same pipeline, so the
//! driver skips compiling the SPIR-V again.
//!
//! * Where: `$QD_CACHE_DIR/vulkan/<pipelineCacheUUID>/<key>.pipeline` (else `~/.cache/qd/...`), one
//!   file per pipeline, written atomically.
//! * Key: a 128-bit FNV-1a hash of a format tag, the device's vendor and device ids, its driver
//!   version and pipeline-cache UUID, the module's words, entry point and workgroup size, and the
//!   pipeline's required subgroup size and full-subgroups flag.
//! * A driver that hands back no data past the header (lavapipe 22.3 caches nothing) gets no file,
//!   and the compile reports [`DiskCacheUse::NotApplicable`].
//! * A file whose header does not name this device (`VkPipelineCacheHeaderVersionOne`: length,
//!   version, vendor, device, UUID) is never handed to the driver; it is overwritten.
//! * Off (`QD_CACHE_DISABLE=1`, [`VulkanOptions::disk_cache`](super::VulkanOptions::disk_cache)):
//!   pipelines go through the device's in-memory pipeline cache, shared by the process.

use super::device::Props;
use super::{check, Core, SpirvCode, VkFailure};
use crate::runtime::disk_cache::{key_of, DiskCache};
use crate::runtime::DiskCacheUse;
use ash::vk;

/// Bump when the key or the file's layout changes.
const FORMAT_TAG: &[u8] = b"qd-vulkan-pipeline-cache-v1\0";

/// `VkPipelineCacheHeaderVersionOne`: 4 u32s and a 16-byte UUID.
const HEADER_BYTES: usize = 32;

impl Core {
    /// Creates the compute pipeline `info` describes (for `code`, with `variant` naming the
    /// creation choices the module does not show: required subgroup size, full subgroups), through
    /// the disk cache when there is one. Sets `disk_use` to what the cache did.
    pub(super) unsafe fn create_pipeline(
        &self,
        code: &SpirvCode,
        variant: &[u32],
        info: &[vk::ComputePipelineCreateInfo],
        disk: Option<&DiskCache>,
        disk_use: &mut DiskCacheUse,
    ) -> std::result::Result<vk::Pipeline, VkFailure> {
        // SAFETY: the caller upholds this function's contract (its doc comment).
        unsafe {
            let d = &self.device;
            let Some(disk) = disk else {
                *disk_use = DiskCacheUse::Disabled;
                return create(d, self.pipeline_cache, info);
            };
            let p = &self.props;
            let key = cache_key(p, code, variant);
            let path = disk.path_for("vulkan", &hex(&p.cache_uuid), &key, "pipeline");
            let stored = disk.load_bytes(&path).filter(|data| header_matches(data, p));
            let initial = stored.as_deref().unwrap_or(&[]);
            let cache = check(
                "vkCreatePipelineCache",
                d.create_pipeline_cache(&vk::PipelineCacheCreateInfo::default().initial_data(initial), None),
            )?;
            let made = create(d, cache, info);
            if made.is_ok() {
                *disk_use = match stored {
                    Some(_) => DiskCacheUse::Hit(path),
                    None => match d.get_pipeline_cache_data(cache) {
                        Ok(data) if header_matches(&data, p) => match disk.store(&path, &data) {
                            Ok(()) => DiskCacheUse::Stored(path),
                            Err(e) => DiskCacheUse::StoreFailed(format!("{}: {e}", path.display())),
                        },
                        // A header and nothing more (lavapipe 22.3): the driver caches nothing, so
                        // there is nothing to store or to find later.
                        Ok(data) if data.len() <= HEADER_BYTES => DiskCacheUse::NotApplicable,
                        Ok(_) => {
                            DiskCacheUse::StoreFailed("the driver's pipeline cache data names another device".into())
                        }
                        Err(e) => DiskCacheUse::StoreFailed(format!("vkGetPipelineCacheData: {e:?}")),
                    },
                };
            }
            d.destroy_pipeline_cache(cache, None);
            made
        }
    }
}

/// One compute pipeline through `cache`.
unsafe fn create(
    d: &ash::Device,
    cache: vk::PipelineCache,
    info: &[vk::ComputePipelineCreateInfo],
) -> std::result::Result<vk::Pipeline, VkFailure> {
    // SAFETY: the caller upholds this function's contract (its doc comment).
    unsafe {
        let pipelines = d.create_compute_pipelines(cache, info, None).map_err(|(made, e)| {
            for p in made {
                d.destroy_pipeline(p, None);
            }
            VkFailure::new("vkCreateComputePipelines", e)
        })?;
        Ok(pipelines[0])
    }
}

/// The file name of a pipeline's cache entry.
fn cache_key(p: &Props, code: &SpirvCode, variant: &[u32]) -> String {
    let words: Vec<u8> = code.words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let variant: Vec<u8> = variant.iter().flat_map(|w| w.to_le_bytes()).collect();
    key_of(
        FORMAT_TAG,
        &[
            &p.vendor_id.to_le_bytes(),
            &p.device_id.to_le_bytes(),
            &p.driver_version.to_le_bytes(),
            &p.cache_uuid,
            &words,
            code.entry.as_bytes(),
            &code.workgroup_size.to_le_bytes(),
            &variant,
        ],
    )
}

/// Whether `data` starts with a version-one header naming this device.
fn header_matches(data: &[u8], p: &Props) -> bool {
    let word = |i: usize| u32::from_le_bytes([data[4 * i], data[4 * i + 1], data[4 * i + 2], data[4 * i + 3]]);
    data.len() > HEADER_BYTES
        && word(0) as usize >= HEADER_BYTES
        && word(1) == vk::PipelineCacheHeaderVersion::ONE.as_raw() as u32
        && word(2) == p.vendor_id
        && word(3) == p.device_id
        && data[16..32] == p.cache_uuid
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
