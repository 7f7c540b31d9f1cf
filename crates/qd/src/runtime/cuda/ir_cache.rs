//! The IR level of the CUDA disk cache (D23): a key computed from the traced kernel instead of
//! its PTX, and a small sidecar file per key naming the cubin and what loading it needs, so a warm
//! process skips the lowering (capability check, legalization, PTX printing) altogether.
//!
//! * Key: a 128-bit FNV-1a hash ([`Fnv128`]) of a format tag, the compute capability, the driver
//!   version, the compiler (as in the cubin's key), the running program's build
//!   ([`disk_cache::build_identity`]: a rebuilt qd may lower differently), the [`Target`] and the
//!   [`ir::Kernel`] itself, through the IR types' derived `Hash` (constants by their bits). All
//!   but the kernel are hashed once per device ([`seed`]).
//! * Sidecar: `<root>/cuda/sm_XX/ir/<irkey>.meta`, a few lines of text ([`IrMeta`]): the cubin's key,
//!   the entry name, the shared bytes and each parameter's passing. Written atomically after a
//!   lowered kernel loads; a sidecar that does not parse, or whose cubin is missing or refused, is a
//!   miss (the kernel is lowered and the sidecar rewritten).
//!
//! The functions here need no driver, so they are built and tested without the `cuda` feature.

#![cfg_attr(not(feature = "cuda"), allow(dead_code))]

use super::PtxParam;
use crate::ir::{self, DType};
use crate::runtime::disk_cache::{DiskCache, Fnv128};
use crate::target::Target;
use std::hash::Hash;
use std::path::PathBuf;

/// Bump when the IR key or the sidecar's contents change meaning.
const IR_FORMAT_TAG: &[u8] = b"qd-cuda-ir-key-v1\0";
/// The sidecar's first line.
const META_HEADER: &str = "qd-cuda-ir-meta 1";

/// The part of every IR key that one device shares: hashed once when the device opens.
pub(crate) fn seed(sm: u32, driver_version: u32, compiler: &[u8], build: &[u8], target: &Target) -> Fnv128 {
    let mut h = Fnv128::new();
    h.part(IR_FORMAT_TAG);
    h.part(&sm.to_le_bytes());
    h.part(&driver_version.to_le_bytes());
    h.part(compiler);
    h.part(build);
    target.hash(&mut h);
    h
}

/// The IR key of `kernel` under a device's [`seed`] (32 hex digits).
pub(crate) fn key(seed: &Fnv128, kernel: &ir::Kernel) -> String {
    let mut h = seed.clone();
    kernel.hash(&mut h);
    format!("{:032x}", h.finish128())
}

/// Where the sidecar of IR key `key` lives for `sm_XX`.
pub(crate) fn meta_path(disk: &DiskCache, key: &str, sm: u32) -> PathBuf {
    disk.root().join("cuda").join(format!("sm_{sm}")).join("ir").join(format!("{key}.meta"))
}

/// What a warm process needs to load a kernel without lowering it: the cubin's key and what
/// `PtxCode` holds besides the text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct IrMeta {
    /// The cubin's key (its file name under `cuda/sm_XX/`), 32 hex digits.
    pub(crate) ptx_key: String,
    /// The `.entry` name.
    pub(crate) entry: String,
    /// `PtxCode::shared_bytes`.
    pub(crate) shared_bytes: u32,
    /// `PtxCode::params`.
    pub(crate) params: Vec<PtxParam>,
}

impl IrMeta {
    /// The sidecar's text; `None` when a field cannot be written on one line.
    pub(crate) fn to_text(&self) -> Option<String> {
        if !is_key(&self.ptx_key) || self.entry.is_empty() || self.entry.chars().any(char::is_whitespace) {
            return None;
        }
        let mut s = format!(
            "{META_HEADER}\nptx {}\nentry {}\nshared {}\nparams {}\n",
            self.ptx_key,
            self.entry,
            self.shared_bytes,
            self.params.len()
        );
        for p in &self.params {
            let (kind, dtype) = match p {
                PtxParam::Array { dtype } => ("array", dtype),
                PtxParam::Scalar { dtype } => ("scalar", dtype),
            };
            s.push_str(&format!("{kind} {}\n", dtype.name()));
        }
        s.push_str("end\n");
        Some(s)
    }

    /// Reads a sidecar's text; `None` for anything but a whole, well-formed one.
    pub(crate) fn parse(text: &str) -> Option<IrMeta> {
        let mut lines = text.lines();
        if lines.next()? != META_HEADER {
            return None;
        }
        let mut next = |name: &str| -> Option<String> {
            let value = lines.next()?.strip_prefix(name)?.strip_prefix(' ')?;
            (!value.is_empty() && !value.contains(char::is_whitespace)).then(|| value.to_string())
        };
        let ptx_key = next("ptx").filter(|k| is_key(k))?;
        let entry = next("entry")?;
        let shared_bytes = next("shared")?.parse().ok()?;
        let count: usize = next("params")?.parse().ok()?;
        let mut params = Vec::with_capacity(count.min(256));
        for _ in 0..count {
            let line = lines.next()?;
            let (kind, dtype) = line.split_once(' ')?;
            let dtype = DType::from_name(dtype)?;
            params.push(match kind {
                "array" => PtxParam::Array { dtype },
                "scalar" => PtxParam::Scalar { dtype },
                _ => return None,
            });
        }
        (lines.next()? == "end" && lines.next().is_none()).then_some(IrMeta { ptx_key, entry, shared_bytes, params })
    }
}

/// A cache key: 32 lowercase hex digits (so a sidecar never names a path outside the cache).
fn is_key(s: &str) -> bool {
    s.len() == 32 && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{InstKind, Param};
    use crate::prelude::*;

    fn scale(name: &str, block: u32, c: f32) -> Kernel {
        Kernel::range(name, block, move |k| {
            let a = k.array::<f32>("a");
            k.parallel_for(0, a.len(), |i| a.set(i, a.get(i) * c));
        })
    }

    fn traced(k: &Kernel) -> ir::Kernel {
        k.trace(&Target::cuda(90)).unwrap()
    }

    fn seed90() -> Fnv128 {
        seed(90, 13000, b"ptxas", b"build", &Target::cuda(90))
    }

    #[test]
    fn the_ir_key_is_stable_and_follows_the_kernel() {
        let s = seed90();
        let base = traced(&scale("scale", 128, 2.0));
        let k = key(&s, &base);
        assert_eq!(k.len(), 32);
        // The same kernel traced again, and built again.
        assert_eq!(k, key(&s, &traced(&scale("scale", 128, 2.0))));
        assert_eq!(k, key(&s, &base.clone()));
        // A constant, the block size, the name.
        assert_ne!(k, key(&s, &traced(&scale("scale", 128, 3.0))));
        assert_ne!(k, key(&s, &traced(&scale("scale", 128, -2.0))));
        assert_ne!(k, key(&s, &traced(&scale("scale", 256, 2.0))));
        assert_ne!(k, key(&s, &traced(&scale("scale2", 128, 2.0))));
        // -0.0 and 0.0 are different constants: hashed by their bits.
        assert_ne!(key(&s, &traced(&scale("z", 64, 0.0))), key(&s, &traced(&scale("z", 64, -0.0))));
        // A dtype: of a parameter, of a value.
        let mut other = base.clone();
        other.params[0] = Param::Array { name: "a".into(), dtype: DType::F64 };
        assert_ne!(k, key(&s, &other));
        let mut other = base.clone();
        other.values[0] = if other.values[0] == DType::I64 { DType::U64 } else { DType::I64 };
        assert_ne!(k, key(&s, &other));
        // A constant's bits in the IR.
        let mut other = base.clone();
        let mut changed = false;
        fn bump(b: &mut ir::Block, changed: &mut bool) {
            for inst in &mut b.insts {
                match &mut inst.kind {
                    InstKind::Const { value, .. } if !*changed => {
                        value.bits ^= 1;
                        *changed = true;
                    }
                    InstKind::If { then_block, else_block, .. } => {
                        bump(then_block, changed);
                        bump(else_block, changed);
                    }
                    InstKind::Loop { body } | InstKind::GridStride { body, .. } => bump(body, changed),
                    _ => {}
                }
            }
        }
        bump(&mut other.body, &mut changed);
        assert!(changed, "the kernel has a constant");
        assert_ne!(k, key(&s, &other));
    }

    #[test]
    fn the_ir_key_follows_the_device_and_the_build() {
        let base = traced(&scale("scale", 128, 2.0));
        let k = key(&seed90(), &base);
        let t = Target::cuda(90);
        assert_ne!(k, key(&seed(89, 13000, b"ptxas", b"build", &t), &base));
        assert_ne!(k, key(&seed(90, 12080, b"ptxas", b"build", &t), &base));
        assert_ne!(k, key(&seed(90, 13000, b"link-api", b"build", &t), &base));
        assert_ne!(k, key(&seed(90, 13000, b"ptxas", b"rebuilt", &t), &base));
        assert_ne!(k, key(&seed(90, 13000, b"ptxas", b"build", &t.clone().with_max_shared_bytes(100 * 1024)), &base));
        // The program's own build identity is known and stable within the process.
        let id = crate::runtime::disk_cache::build_identity().expect("the test executable can be read");
        assert!(id.windows(env!("CARGO_PKG_VERSION").len()).any(|w| w == env!("CARGO_PKG_VERSION").as_bytes()));
        assert_eq!(crate::runtime::disk_cache::build_identity(), Some(id));
    }

    fn meta() -> IrMeta {
        IrMeta {
            ptx_key: "0123456789abcdef0123456789abcdef".into(),
            entry: "scale".into(),
            shared_bytes: 4096,
            params: vec![PtxParam::Array { dtype: DType::F32 }, PtxParam::Scalar { dtype: DType::Bool }],
        }
    }

    #[test]
    fn the_sidecar_round_trips() {
        let m = meta();
        let text = m.to_text().unwrap();
        assert!(text.starts_with("qd-cuda-ir-meta 1\nptx 0123456789abcdef0123456789abcdef\nentry scale\n"), "{text}");
        assert_eq!(IrMeta::parse(&text), Some(m.clone()));
        let none = IrMeta { params: Vec::new(), shared_bytes: 0, ..m };
        assert_eq!(IrMeta::parse(&none.to_text().unwrap()), Some(none));
        // Through the disk cache's atomic store, at its place in the cache.
        let root = std::env::temp_dir().join(format!("qd-ir-cache-test-{}", std::process::id()));
        let disk = DiskCache::new(root.clone());
        let path = meta_path(&disk, &"f".repeat(32), 90);
        assert_eq!(path, root.join("cuda").join("sm_90").join("ir").join(format!("{}.meta", "f".repeat(32))));
        disk.store(&path, text.as_bytes()).unwrap();
        assert_eq!(IrMeta::parse(&std::fs::read_to_string(&path).unwrap()), Some(meta()));
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_corrupt_sidecar_is_rejected() {
        let text = meta().to_text().unwrap();
        // Every cut short, including just before the final newline's `end`.
        for cut in 0..text.len() - 1 {
            assert_eq!(IrMeta::parse(&text[..cut]), None, "cut at {cut}: {:?}", &text[..cut]);
        }
        for (from, to) in [
            ("qd-cuda-ir-meta 1", "qd-cuda-ir-meta 2"),
            ("ptx 0123456789abcdef0123456789abcdef", "ptx ../../../etc/passwd"),
            ("ptx 0123456789abcdef0123456789abcdef", "ptx 0123456789ABCDEF0123456789abcdef"),
            ("shared 4096", "shared -1"),
            ("shared 4096", "shared"),
            ("params 2", "params 3"),
            ("params 2", "params 1"),
            ("array f32", "array f33"),
            ("scalar bool", "value bool"),
            ("end\n", "end\nmore\n"),
            ("entry scale", "entry "),
        ] {
            let bad = text.replace(from, to);
            assert_ne!(bad, text, "{from}");
            assert_eq!(IrMeta::parse(&bad), None, "{bad}");
        }
        assert_eq!(IrMeta::parse(""), None);
        assert_eq!(IrMeta::parse("\u{0}\u{1}garbage"), None);
        // Fields that cannot be written on their line are not written.
        assert_eq!(IrMeta { entry: "two words".into(), ..meta() }.to_text(), None);
        assert_eq!(IrMeta { ptx_key: "short".into(), ..meta() }.to_text(), None);
    }
}
