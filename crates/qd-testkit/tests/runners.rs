//! Each runner against a fake tool (a shell script): the arguments it passes, success, and a
//! rejection's message. The real tools are exercised by the qd and qd-cli tests.

use qd_testkit::{LdLld, Llc, MslCheck, Ptxas, SpirvVal};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// A script that logs its arguments to `<script>.log` and fails, with a message on stderr, when
/// one of its arguments is a file containing `BAD`. All fakes are written once, before any test
/// runs one: a script still open for writing while another thread forks cannot be executed
/// ("text file busy").
fn fake_tool(name: &str) -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    let dir = DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("qd-testkit-fakes-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for tool in ["ptxas", "spirv-val", "llc-19", "ld.lld-19", "clang-19"] {
            let script = dir.join(tool);
            std::fs::write(
                &script,
                "#!/bin/sh\necho \"$@\" > \"$0.log\"\nfor a; do\n\
                 if grep -q BAD \"$a\" 2>/dev/null; then echo \"error: bad input in $a\" >&2; exit 3; fi\ndone\nexit 0\n",
            )
            .unwrap();
            std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        dir
    });
    dir.join(name)
}

fn logged(script: &Path) -> String {
    std::fs::read_to_string(format!("{}.log", script.display())).unwrap()
}

#[test]
fn ptxas_passes_the_arch_and_reports_rejections() {
    let fake = fake_tool("ptxas");
    let ptxas = Ptxas::at(fake.clone());
    ptxas.assemble("good", "sm_90a", ".version 8.0").unwrap();
    assert!(logged(&fake).starts_with("-arch=sm_90a "), "{}", logged(&fake));
    // ptxas takes the input first and the cubin after -o.
    let err = ptxas.assemble("bad", "sm_80", "BAD").unwrap_err();
    assert!(err.contains("ptxas rejected bad for sm_80") && err.contains("error: bad input"), "{err}");
}

#[test]
fn spirv_val_passes_the_environment_and_reports_rejections() {
    let fake = fake_tool("spirv-val");
    let val = SpirvVal::at(fake.clone());
    val.validate("good", &[0x0723_0203], "vulkan1.1").unwrap();
    assert!(logged(&fake).starts_with("--target-env vulkan1.1 "), "{}", logged(&fake));
    let err = val.validate_bytes("bad", b"BAD!", "vulkan1.2").unwrap_err();
    assert!(err.contains("spirv-val rejected bad for vulkan1.2") && err.contains("exit status: 3"), "{err}");
}

#[test]
fn llc_and_ld_lld_pass_target_cpu_and_outputs() {
    let llc = fake_tool("llc-19");
    let obj = Llc::at(llc.clone())
        .compile("k", "define void @k() { ret void }", "amdgcn-amd-amdhsa", "gfx942", &["-mattr=+wavefrontsize64"])
        .unwrap();
    let args = logged(&llc);
    assert!(args.starts_with("-mtriple=amdgcn-amd-amdhsa -mcpu=gfx942 -filetype=obj -mattr=+wavefrontsize64 -o "));
    assert!(args.contains(obj.to_str().unwrap()), "{args}");
    let err = Llc::at(llc).compile("bad", "BAD", "amdgcn-amd-amdhsa", "gfx1100", &[]).unwrap_err();
    assert!(err.contains("llc rejected bad for amdgcn-amd-amdhsa gfx1100"), "{err}");

    let lld = fake_tool("ld.lld-19");
    let so = LdLld::at(lld.clone()).link_shared("k", &[&obj]).unwrap();
    assert_eq!(logged(&lld).trim(), format!("-shared -o {} {}", so.display(), obj.display()));
}

#[test]
fn the_msl_check_includes_the_header() {
    let clang = fake_tool("clang-19");
    let header = std::env::temp_dir().join("qd-testkit-msl-header.h");
    MslCheck::at(clang.clone()).check("k", "kernel void k() {}", &header).unwrap();
    let args = logged(&clang);
    let dir = header.parent().unwrap();
    assert!(args.starts_with(&format!(
        "-x c++ -std=c++17 -fsyntax-only -Werror -I {} -include {} ",
        dir.display(),
        header.display()
    )));
    let err = MslCheck::at(clang).check("bad", "BAD", &header).unwrap_err();
    assert!(err.contains("the MSL check rejected bad"), "{err}");
}

#[test]
#[should_panic(expected = "cannot run /nonexistent/ptxas")]
fn a_tool_that_cannot_start_is_a_broken_tool_not_a_rejection() {
    // A negative test (`assemble(...).is_ok()` expected false) must not pass because ptxas is broken.
    let _ = Ptxas::at(PathBuf::from("/nonexistent/ptxas")).assemble("k", "sm_90", "");
}
