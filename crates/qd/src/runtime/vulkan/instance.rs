//! The Vulkan loader and instance, once per process: `libvulkan.so.1` loaded at run time (ash's
//! `loaded` feature), so a machine without it, without a driver (ICD) or without a device gets a
//! reason naming what is missing and how to install it, never a panic.

use ash::vk;
use std::sync::OnceLock;

/// How to get a Vulkan loader and driver on Debian/Ubuntu.
pub(crate) const INSTALL_HINT: &str = "install the loader and lavapipe (a CPU Vulkan driver) with \
     `apt-get install libvulkan1 mesa-vulkan-drivers`, or a GPU vendor's Vulkan driver";

/// The lowest Vulkan version qd runs on: 1.1 has subgroup operations and SPIR-V 1.3.
pub(crate) const MIN_API: u32 = vk::API_VERSION_1_1;

/// The loader, one instance and the physical devices it enumerates, in the loader's order (the
/// order of `vulkan:N`).
pub(crate) struct Vk {
    /// Keeps `libvulkan` loaded.
    _entry: ash::Entry,
    pub(crate) instance: ash::Instance,
    pub(crate) physical: Vec<vk::PhysicalDevice>,
}

static VK: OnceLock<Result<Vk, String>> = OnceLock::new();

/// The process's Vulkan instance, or why there is none. Created on first use and kept for the
/// process's life (the loader reads `VK_DRIVER_FILES` / `VK_ICD_FILENAMES` then).
pub(crate) fn vk() -> Result<&'static Vk, String> {
    VK.get_or_init(init).as_ref().map_err(Clone::clone)
}

/// The driver-selection variables, for messages (`VK_DRIVER_FILES=...`), or "unset".
fn icd_env() -> String {
    let vars: Vec<String> = ["VK_DRIVER_FILES", "VK_ICD_FILENAMES"]
        .iter()
        .filter_map(|v| std::env::var(v).ok().map(|x| format!("{v}={x}")))
        .collect();
    if vars.is_empty() {
        "VK_DRIVER_FILES and VK_ICD_FILENAMES are unset".into()
    } else {
        vars.join(", ")
    }
}

/// `major.minor.patch` of a packed Vulkan version.
pub(crate) fn version_text(v: u32) -> String {
    format!("{}.{}.{}", vk::api_version_major(v), vk::api_version_minor(v), vk::api_version_patch(v))
}

fn init() -> Result<Vk, String> {
    // SAFETY: dlopens libvulkan.so.1 and resolves its entry points; nothing runs before that.
    let entry = unsafe { ash::Entry::load() }
        .map_err(|e| format!("the Vulkan loader (libvulkan.so.1) could not be loaded ({e}); {INSTALL_HINT}"))?;
    // SAFETY: a global command of a loaded entry.
    let loader_version = match unsafe { entry.try_enumerate_instance_version() } {
        Ok(Some(v)) => v,
        Ok(None) => vk::API_VERSION_1_0,
        Err(e) => return Err(format!("vkEnumerateInstanceVersion failed: {e:?}: {e}")),
    };
    if loader_version < MIN_API {
        return Err(format!(
            "the Vulkan loader supports Vulkan {}; qd needs 1.1 (subgroup operations); {INSTALL_HINT}",
            version_text(loader_version)
        ));
    }
    let app = vk::ApplicationInfo::default()
        .application_name(c"qd")
        .engine_name(c"qd")
        .application_version(1)
        .api_version(vk::API_VERSION_1_3);
    let info = vk::InstanceCreateInfo::default().application_info(&app);
    // SAFETY: valid create info; no layers or extensions.
    let instance = unsafe { entry.create_instance(&info, None) }.map_err(|e| match e {
        vk::Result::ERROR_INCOMPATIBLE_DRIVER => format!(
            "the Vulkan loader found no driver (vkCreateInstance: ERROR_INCOMPATIBLE_DRIVER; {}); {INSTALL_HINT} \
             (or point VK_DRIVER_FILES at a driver's ICD file, e.g. /usr/share/vulkan/icd.d/lvp_icd.x86_64.json)",
            icd_env()
        ),
        e => format!("vkCreateInstance failed: {e:?}: {e} ({})", icd_env()),
    })?;
    // SAFETY: a live instance.
    let physical = match unsafe { instance.enumerate_physical_devices() } {
        Ok(p) => p,
        Err(e) => {
            // SAFETY: created above and not used elsewhere.
            unsafe { instance.destroy_instance(None) };
            return Err(format!("vkEnumeratePhysicalDevices failed: {e:?}: {e} ({})", icd_env()));
        }
    };
    if physical.is_empty() {
        // SAFETY: created above and not used elsewhere.
        unsafe { instance.destroy_instance(None) };
        return Err(format!("the Vulkan drivers found no device ({}); {INSTALL_HINT}", icd_env()));
    }
    Ok(Vk { _entry: entry, instance, physical })
}

/// Number of Vulkan physical devices (0 without a loader, a driver or a device).
pub(crate) fn device_count() -> u32 {
    vk().map(|v| v.physical.len() as u32).unwrap_or(0)
}
