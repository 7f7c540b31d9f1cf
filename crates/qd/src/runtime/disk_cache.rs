//! The on-disk cache of compiled kernels: a second process loads the cubin (CUDA: from `ptxas`
//! where one is installed, else opt-in with `QD_CUDA_CUBIN_CACHE=1`; D23) or the code
//! object (AMDGPU, `amdgpu/<gfx>/<key>.hsaco`) the first one made instead of running the driver's
//! PTX JIT (or ROCm's `llc` and `ld.lld`) again; Vulkan keeps its pipeline caches here too
//! (`vulkan/<uuid>/<key>.pipeline`, see `vulkan/pipeline_cache.rs`).
//!
//! * Where: `$QD_CACHE_DIR/cuda/sm_XX/<key>.cubin`; without `QD_CACHE_DIR`, `~/.cache/qd`.
//! * Off: `QD_CACHE_DISABLE=1` (any value but empty or `0`), or [`CudaOptions`](super::CudaOptions).
//! * Key: a 128-bit FNV-1a hash of a format tag, the compute capability, the driver version, the
//!   compiler (the `ptxas`'s path, size and time, or the link API) and the PTX text, so a new
//!   driver, toolkit or PTX never reuses an old cubin.
//! * CUDA's second, IR-level key (`cuda/ir_cache.rs`): the same hash ([`Fnv128`], a `Hasher`) over
//!   the traced kernel's IR instead of the PTX, with the program's [`build_identity`] and the target
//!   added, names a sidecar `cuda/sm_XX/ir/<irkey>.meta` that records the cubin's key and the
//!   entry, shared bytes and parameters. A warm process finds the cubin through it without
//!   lowering the kernel; a sidecar that does not parse, or whose cubin is gone, is a miss and is
//!   rewritten after the kernel is lowered.
//! * Writes go to a temporary file in the same folder and are renamed into place, so concurrent
//!   processes never see a partial file. A file that is not an ELF image, or that the driver refuses
//!   (say, one cut short by a crash), is treated as a miss and overwritten.
//!
//! The cache is best effort: failing to create the folder or write a file never fails a launch; it
//! shows in [`CompileStats::disk`](super::CompileStats).

// The cache is used by the CUDA, AMDGPU and Vulkan runtimes; the settings it reads from the environment
// are part of `CudaOptions`, which every build has. A build without either runtime still compiles
// it (so the code cannot rot behind a feature), and only there is it unused.
#![cfg_attr(not(any(feature = "cuda", feature = "amdgpu", feature = "vulkan")), allow(dead_code))]

use std::io::Write;
use std::path::Path;
use std::path::PathBuf;

/// Bump when the cache's layout or key changes.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
const FORMAT_TAG: &[u8] = b"qd-cubin-cache-v2\0";

/// Environment variable naming the cache folder.
pub const CACHE_DIR_VAR: &str = "QD_CACHE_DIR";
/// Environment variable that turns the disk cache off (`1`).
pub const CACHE_DISABLE_VAR: &str = "QD_CACHE_DISABLE";

/// True when `QD_CACHE_DISABLE` asks for no disk cache (set, not empty, not `0`).
pub(crate) fn disabled_by_env() -> bool {
    std::env::var_os(CACHE_DISABLE_VAR).is_some_and(|v| !v.is_empty() && v != "0")
}

/// The cache folder from the environment: `$QD_CACHE_DIR`, else `$HOME/.cache/qd`; `None` when
/// neither is set.
pub(crate) fn dir_from_env() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os(CACHE_DIR_VAR).filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(d));
    }
    std::env::var_os("HOME").filter(|h| !h.is_empty()).map(|h| PathBuf::from(h).join(".cache").join("qd"))
}

/// 128-bit FNV-1a as a [`Hasher`](std::hash::Hasher), so a value that derives `Hash` (the traced
/// IR) is hashed straight into a cache key, without printing it first; [`Fnv128::finish128`] gives
/// the whole 128 bits (`finish` only the low 64).
#[derive(Clone, Debug)]
pub(crate) struct Fnv128(u128);

impl Fnv128 {
    const OFFSET: u128 = 0x6c62272e07bb014262b821756295c58d;
    const PRIME: u128 = 0x0000000001000000000000000000013B;

    /// The empty hash.
    pub(crate) fn new() -> Fnv128 {
        Fnv128(Fnv128::OFFSET)
    }

    /// Adds one part, length-prefixed, so that moving bytes between parts changes the hash.
    pub(crate) fn part(&mut self, bytes: &[u8]) {
        std::hash::Hasher::write(self, &(bytes.len() as u64).to_le_bytes());
        std::hash::Hasher::write(self, bytes);
    }

    /// The 128-bit hash so far.
    pub(crate) fn finish128(&self) -> u128 {
        self.0
    }
}

impl std::hash::Hasher for Fnv128 {
    fn write(&mut self, bytes: &[u8]) {
        let mut h = self.0;
        for b in bytes {
            h ^= *b as u128;
            h = h.wrapping_mul(Fnv128::PRIME);
        }
        self.0 = h;
    }

    fn finish(&self) -> u64 {
        self.0 as u64
    }
}

/// 128-bit FNV-1a of length-prefixed parts.
fn fnv1a_128(parts: &[&[u8]]) -> u128 {
    let mut h = Fnv128::new();
    for part in parts {
        h.part(part);
    }
    h.finish128()
}

/// What identifies the running program's build, for keys of cached results that depend on qd's
/// own code (the lowering): the crate version and the current executable's path, size and
/// modification time (one `stat`, made once per process). `None` when the executable cannot be
/// found or read: then nothing keyed by it is cached, since a rebuilt program could not be told apart.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) fn build_identity() -> Option<&'static [u8]> {
    static IDENTITY: std::sync::OnceLock<Option<Vec<u8>>> = std::sync::OnceLock::new();
    IDENTITY
        .get_or_init(|| {
            let exe = std::env::current_exe().ok()?;
            let meta = std::fs::metadata(&exe).ok()?;
            let mtime = meta.modified().ok()?.duration_since(std::time::UNIX_EPOCH).ok()?;
            let mut id = Vec::new();
            for part in [
                env!("CARGO_PKG_VERSION").as_bytes(),
                exe.as_os_str().as_encoded_bytes(),
                &meta.len().to_le_bytes(),
                &mtime.as_nanos().to_le_bytes(),
            ] {
                id.extend_from_slice(&(part.len() as u64).to_le_bytes());
                id.extend_from_slice(part);
            }
            Some(id)
        })
        .as_deref()
}

/// The cache key of a PTX module for compute capability `sm` under driver `driver_version`,
/// compiled by `compiler` (a `ptxas`'s identity, or the link API's tag).
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) fn key(ptx: &str, sm: u32, driver_version: u32, compiler: &[u8]) -> String {
    key_of(FORMAT_TAG, &[&sm.to_le_bytes(), &driver_version.to_le_bytes(), compiler, ptx.as_bytes()])
}

/// A cubin cache rooted at one folder.
#[derive(Clone, Debug)]
pub(crate) struct DiskCache {
    root: PathBuf,
}

impl DiskCache {
    /// A cache under `root` (created on the first store).
    pub(crate) fn new(root: PathBuf) -> DiskCache {
        DiskCache { root }
    }

    /// The cache's root folder.
    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// Where the cubin for `key` and `sm` lives.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) fn path(&self, key: &str, sm: u32) -> PathBuf {
        self.path_for("cuda", &format!("sm_{sm}"), key, "cubin")
    }

    /// Where the file `key.ext` of `backend`'s target `arch` lives (`<root>/<backend>/<arch>/<key>.<ext>`).
    pub(crate) fn path_for(&self, backend: &str, arch: &str, key: &str, ext: &str) -> PathBuf {
        self.root.join(backend).join(arch).join(format!("{key}.{ext}"))
    }

    /// The stored cubin, if there is one that looks like an ELF image.
    pub(crate) fn load(&self, path: &Path) -> Option<Vec<u8>> {
        let bytes = std::fs::read(path).ok()?;
        (bytes.len() > 4 && bytes.starts_with(b"\x7fELF")).then_some(bytes)
    }

    /// The stored file, whatever it holds (the caller checks it).
    #[cfg_attr(not(feature = "vulkan"), allow(dead_code))]
    pub(crate) fn load_bytes(&self, path: &Path) -> Option<Vec<u8>> {
        std::fs::read(path).ok()
    }

    /// Stores `cubin` at `path` atomically (temporary file, then rename).
    pub(crate) fn store(&self, path: &Path, cubin: &[u8]) -> std::io::Result<()> {
        let dir = path.parent().ok_or_else(|| std::io::Error::other("cache path has no folder"))?;
        std::fs::create_dir_all(dir)?;
        let nanos =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
        let tmp = dir.join(format!(
            ".{}.{}.{nanos}.tmp",
            path.file_name().and_then(|n| n.to_str()).unwrap_or("cubin"),
            std::process::id()
        ));
        let written = (|| {
            let mut f = std::fs::File::create(&tmp)?;
            // No fsync: it would cost the cold path milliseconds, and a file cut short by a crash is
            // refused by the driver and rewritten.
            f.write_all(cubin)?;
            std::fs::rename(&tmp, path)
        })();
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written
    }
}

/// A cache key from a format tag and the parts that must all match (toolchain, target, source).
pub(crate) fn key_of(tag: &[u8], parts: &[&[u8]]) -> String {
    let mut all = vec![tag];
    all.extend_from_slice(parts);
    format!("{:032x}", fnv1a_128(&all))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_depends_on_every_input() {
        let k = key(".version 8.0", 90, 13000, b"ptxas");
        assert_eq!(k.len(), 32);
        assert_eq!(k, key(".version 8.0", 90, 13000, b"ptxas"));
        assert_ne!(k, key(".version 8.0 ", 90, 13000, b"ptxas"));
        assert_ne!(k, key(".version 8.0", 80, 13000, b"ptxas"));
        assert_ne!(k, key(".version 8.0", 90, 12080, b"ptxas"));
        assert_ne!(k, key(".version 8.0", 90, 13000, b"link-api"));
    }

    #[test]
    fn code_object_keys_and_paths() {
        let k = key_of(b"tag", &[b"gfx942", b"llc 19", b"define"]);
        assert_eq!(k.len(), 32);
        assert_ne!(k, key_of(b"tag", &[b"gfx90a", b"llc 19", b"define"]));
        assert_ne!(k, key_of(b"tag", &[b"gfx942", b"llc 20", b"define"]));
        assert_ne!(k, key_of(b"tag", &[b"gfx942llc 19", b"", b"define"]));
        let cache = DiskCache::new(PathBuf::from("/c"));
        assert_eq!(
            cache.path_for("amdgpu", "gfx942", &k, "hsaco"),
            PathBuf::from(format!("/c/amdgpu/gfx942/{k}.hsaco"))
        );
    }

    #[test]
    fn store_then_load_round_trips_and_rejects_non_elf() {
        let root = std::env::temp_dir().join(format!("qd-disk-cache-test-{}", std::process::id()));
        let cache = DiskCache::new(root.clone());
        assert_eq!(cache.root(), root);
        let path = cache.path(&key("x", 90, 1, b""), 90);
        assert!(path.starts_with(root.join("cuda").join("sm_90")));
        assert!(cache.load(&path).is_none());
        let image = b"\x7fELF and the rest of a cubin".to_vec();
        cache.store(&path, &image).unwrap();
        assert_eq!(cache.load(&path).unwrap(), image);
        cache.store(&path, b"not an image").unwrap();
        assert!(cache.load(&path).is_none());
        // No temporary files are left behind.
        let names: Vec<_> =
            std::fs::read_dir(path.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 1, "{names:?}");
        std::fs::remove_dir_all(&root).unwrap();
    }
}
