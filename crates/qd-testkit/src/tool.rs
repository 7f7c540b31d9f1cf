//! Finding an external tool: its environment variable, the workspace's `.tools/` folder, `PATH`.

use std::ffi::OsString;
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};

/// An external program the tests run, and how to find and install it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tool {
    /// What the tool is, for messages (e.g. `ptxas (CUDA 13.0)`).
    pub what: &'static str,
    /// The environment variable that names the executable (what `scripts/test.sh` exports).
    pub env: &'static str,
    /// The opt-out variable: set to `1`, a missing tool is a reported skip instead of a failure.
    pub skip_env: &'static str,
    /// File names tried in the workspace's `.tools/` folder and then on `PATH`, in order.
    pub names: &'static [&'static str],
    /// The command that installs it.
    pub install: &'static str,
}

/// ptxas from the `nvidia-cuda-nvcc==13.0.88` wheel, which `scripts/test.sh` unpacks into `.tools/`.
pub const PTXAS: Tool = Tool {
    what: "ptxas (CUDA 13.0)",
    env: "PTXAS",
    skip_env: "QD_SKIP_PTXAS",
    names: &["ptxas"],
    install: "bash scripts/test.sh (it downloads the nvidia-cuda-nvcc==13.0.88 wheel with pip and unpacks \
              nvidia/cu13/bin/ptxas into .tools/), or set PTXAS to a CUDA 13.0 ptxas",
};

/// spirv-val from Debian's `spirv-tools`.
pub const SPIRV_VAL: Tool = Tool {
    what: "spirv-val",
    env: "SPIRV_VAL",
    skip_env: "QD_SKIP_SPIRV_VAL",
    names: &["spirv-val"],
    install: "apt-get install --no-install-recommends spirv-tools (Debian), or set SPIRV_VAL to a spirv-val binary",
};

/// spirv-dis, beside spirv-val: only used to show a rejected module, never required.
pub const SPIRV_DIS: Tool = Tool {
    what: "spirv-dis",
    env: "SPIRV_DIS",
    skip_env: "QD_SKIP_SPIRV_DIS",
    names: &["spirv-dis"],
    install: "apt-get install --no-install-recommends spirv-tools (Debian), or set SPIRV_DIS",
};

/// llc from LLVM 19 (Debian's `llvm-19`), for the AMDGPU backend's LLVM IR.
pub const LLC: Tool = Tool {
    what: "llc (LLVM 19)",
    env: "LLC",
    skip_env: "QD_SKIP_LLC",
    names: &["llc-19"],
    install: "apt-get install --no-install-recommends llvm-19 (Debian), or set LLC to an LLVM 19 llc",
};

/// ld.lld from LLVM 19 (Debian's `lld-19`), to link AMDGPU code objects.
pub const LD_LLD: Tool = Tool {
    what: "ld.lld (LLVM 19)",
    env: "LD_LLD",
    skip_env: "QD_SKIP_LD_LLD",
    names: &["ld.lld-19"],
    install: "apt-get install --no-install-recommends lld-19 (Debian), or set LD_LLD to an LLVM 19 ld.lld",
};

/// clang 19 (Debian's `clang-19`), which syntax-checks the MSL printer's output against our header.
pub const CLANG: Tool = Tool {
    what: "clang (LLVM 19)",
    env: "CLANG",
    skip_env: "QD_SKIP_CLANG",
    names: &["clang-19"],
    install: "apt-get install --no-install-recommends clang-19 (Debian), or set CLANG to a clang 19",
};

/// Every tool this crate knows.
pub const TOOLS: [Tool; 6] = [PTXAS, SPIRV_VAL, SPIRV_DIS, LLC, LD_LLD, CLANG];

/// A tool that could not be found: where we looked and how to install it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Missing {
    /// The tool.
    pub tool: Tool,
    /// Why the lookup failed (which variable or folders were tried).
    pub reason: String,
}

impl fmt::Display for Missing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = &self.tool;
        write!(
            f,
            "{} is needed to validate emitted code (D9) but {}. Install it with: {}; or set {}=1 to skip these checks",
            t.what, self.reason, t.install, t.skip_env
        )
    }
}

impl std::error::Error for Missing {}

/// The workspace root (this crate lives in `crates/qd-testkit`).
fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn is_file(p: &Path) -> bool {
    p.is_file()
}

impl Tool {
    /// Finds the tool in this process's environment.
    pub fn locate(&self) -> Result<PathBuf, Missing> {
        self.locate_in(&|name| std::env::var_os(name), &workspace_root().join(".tools"), &is_file)
    }

    /// Finds the tool with `env` for the environment, `tools_dir` for the workspace's tool folder
    /// and `exists` for the file system (so the rules are testable without touching either).
    ///
    /// The variable wins when set: a variable naming no file is an error, not a fall-back, so a
    /// typo in `PTXAS=…` is reported rather than silently replaced by another ptxas.
    pub fn locate_in(
        &self,
        env: &dyn Fn(&str) -> Option<OsString>,
        tools_dir: &Path,
        exists: &dyn Fn(&Path) -> bool,
    ) -> Result<PathBuf, Missing> {
        if let Some(p) = env(self.env).filter(|p| !p.is_empty()) {
            let p = PathBuf::from(p);
            return if exists(&p) {
                Ok(p)
            } else {
                Err(Missing { tool: *self, reason: format!("{}={} is not a file", self.env, p.display()) })
            };
        }
        let path_dirs: Vec<PathBuf> = env("PATH").map(|p| std::env::split_paths(&p).collect()).unwrap_or_default();
        let mut tried = vec![tools_dir.to_path_buf()];
        tried.extend(path_dirs.iter().cloned());
        for name in self.names {
            if let Some(found) = tried.iter().map(|d| d.join(name)).find(|p| exists(p)) {
                return Ok(found);
            }
        }
        Err(Missing {
            tool: *self,
            reason: format!(
                "{} is unset and no {} was found in {} or on PATH",
                self.env,
                self.names.join(" or "),
                tools_dir.display()
            ),
        })
    }

    /// Whether the opt-out variable is set to `1` in `env`.
    pub fn skipped_in(&self, env: &dyn Fn(&str) -> Option<OsString>) -> bool {
        env(self.skip_env).is_some_and(|v| v == "1")
    }

    /// The tool's path. A missing tool panics with [`Missing`]'s message (install command
    /// included), unless the opt-out variable is `1`: then the skip is printed on stderr and the
    /// result is `None`.
    pub fn find(&self) -> Option<PathBuf> {
        match self.locate() {
            Ok(p) => Some(p),
            Err(m) if self.skipped_in(&|name| std::env::var_os(name)) => {
                // Straight to the process's stderr: the test harness captures `eprintln!`, and a
                // skip must be seen even when the test passes.
                let msg = format!("skipped: {} not found ({}=1): {}\n", self.what, self.skip_env, m.reason);
                let _ = std::io::stderr().write_all(msg.as_bytes());
                None
            }
            Err(m) => panic!("{m}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env_of(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let m: HashMap<String, OsString> = vars.iter().map(|(k, v)| (k.to_string(), OsString::from(v))).collect();
        move |k| m.get(k).cloned()
    }

    fn files(list: &[&str]) -> impl Fn(&Path) -> bool {
        let set: Vec<PathBuf> = list.iter().map(PathBuf::from).collect();
        move |p| set.iter().any(|f| f == p)
    }

    #[test]
    fn the_variable_wins_and_must_name_a_file() {
        let env = env_of(&[("PTXAS", "/opt/ptxas"), ("PATH", "/usr/bin")]);
        let found = PTXAS.locate_in(&env, Path::new("/w/.tools"), &files(&["/opt/ptxas", "/usr/bin/ptxas"]));
        assert_eq!(found.unwrap(), PathBuf::from("/opt/ptxas"));
        let err = PTXAS.locate_in(&env, Path::new("/w/.tools"), &files(&["/usr/bin/ptxas"])).unwrap_err();
        assert!(err.reason.contains("PTXAS=/opt/ptxas is not a file"), "{err}");
    }

    #[test]
    fn the_tools_folder_comes_before_path() {
        let env = env_of(&[("PATH", "/a:/b")]);
        let all = files(&["/w/.tools/ptxas", "/b/ptxas"]);
        assert_eq!(PTXAS.locate_in(&env, Path::new("/w/.tools"), &all).unwrap(), PathBuf::from("/w/.tools/ptxas"));
        let path_only = files(&["/b/ptxas"]);
        assert_eq!(PTXAS.locate_in(&env, Path::new("/w/.tools"), &path_only).unwrap(), PathBuf::from("/b/ptxas"));
        // Versioned LLVM names: llc-19, not whatever llc is first on PATH.
        let llc = files(&["/a/llc", "/b/llc-19"]);
        assert_eq!(LLC.locate_in(&env, Path::new("/w/.tools"), &llc).unwrap(), PathBuf::from("/b/llc-19"));
    }

    #[test]
    fn a_missing_tool_names_its_install_command_and_opt_out() {
        let env = env_of(&[("PATH", "/a")]);
        for tool in TOOLS {
            let err = tool.locate_in(&env, Path::new("/w/.tools"), &files(&[])).unwrap_err();
            let msg = err.to_string();
            assert!(msg.contains(tool.what) && msg.contains(tool.install), "{msg}");
            assert!(msg.contains(&format!("{}=1", tool.skip_env)), "{msg}");
            assert!(msg.contains(&format!("{} is unset", tool.env)), "{msg}");
        }
    }

    #[test]
    fn only_the_value_1_opts_out() {
        assert!(SPIRV_VAL.skipped_in(&env_of(&[("QD_SKIP_SPIRV_VAL", "1")])));
        assert!(!SPIRV_VAL.skipped_in(&env_of(&[("QD_SKIP_SPIRV_VAL", "0")])));
        assert!(!SPIRV_VAL.skipped_in(&env_of(&[("QD_SKIP_PTXAS", "1")])));
        assert!(!SPIRV_VAL.skipped_in(&env_of(&[])));
    }

    #[test]
    fn every_tool_has_its_own_variables() {
        for (i, a) in TOOLS.iter().enumerate() {
            assert_eq!(a.skip_env, format!("QD_SKIP_{}", a.env), "the opt-out is QD_SKIP_<variable>");
            for b in &TOOLS[i + 1..] {
                assert_ne!(a.env, b.env);
            }
        }
    }
}
