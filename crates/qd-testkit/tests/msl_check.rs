//! The MSL check can fail: clang with our `metal_stdlib` rejects what Metal's compiler rejects in
//! the ways the printer could go wrong (docs/metal.md, "The MSL check").

use qd_testkit::MslCheck;

/// A kernel in the printer's shape whose body is `body`.
fn kernel(body: &str) -> String {
    format!(
        "#include <metal_stdlib>\nusing namespace metal;\n\nkernel void qd_k(\n    constant ulong* qd_params [[buffer(0)]],\n    \
         device float* p0_a [[buffer(1)]],\n    device long* p1_b [[buffer(2)]],\n    \
         uint qd_lane [[thread_index_in_simdgroup]])\n{{\n    threadgroup float s0_t[32];\n{body}\n}}\n"
    )
}

fn check(name: &str, body: &str) -> Option<Result<(), String>> {
    MslCheck::find().map(|c| c.check_source(name, &kernel(body)))
}

#[track_caller]
fn rejects(name: &str, body: &str, diagnostic: &str) {
    if let Some(r) = check(name, body) {
        let e = r.expect_err("the check should reject this");
        assert!(e.contains(diagnostic), "expected `{diagnostic}` in:\n{e}");
    }
}

#[test]
fn accepts_what_the_printer_writes() {
    let body = "    const float v0 = p0_a[qd_lane];\n    s0_t[qd_lane] = simd_shuffle_xor(v0, ushort(1));\n    \
                const float v1 = atomic_fetch_add_explicit((device atomic_float*)&p0_a[0], v0, memory_order_relaxed);\n    \
                atomic_thread_fence(mem_flags::mem_device | mem_flags::mem_threadgroup, memory_order_seq_cst, thread_scope_device);\n    \
                const int v2 = int(simd_prefix_exclusive_sum(uint(qd_lane))) + simd_min(int(qd_lane));\n    \
                p0_a[1] = v1 + s0_t[0] + float(v2);";
    if let Some(r) = check("accepts", body) {
        r.unwrap();
    }
}

#[test]
fn rejects_double() {
    rejects("double", "    const double v0 = double(p0_a[0]);\n    p0_a[0] = float(v0);", "msl_has_no_double");
}

#[test]
fn rejects_a_64_bit_shuffle() {
    rejects("shuffle64", "    p1_b[qd_lane] = simd_shuffle(p1_b[qd_lane], ushort(0));", "simd_shuffle");
}

#[test]
fn rejects_a_threadgroup_pointer_where_a_device_pointer_is_expected() {
    rejects(
        "tg_as_device",
        "    atomic_fetch_add_explicit((threadgroup atomic_float*)&s0_t[0], 1.0f, memory_order_relaxed);",
        "atomic_fetch_add_explicit",
    );
    rejects("tg_to_device", "    device float* p = &s0_t[0];\n    p[0] = 1.0f;", "threadgroup float *");
}

#[test]
fn rejects_an_undeclared_builtin() {
    rejects("simd_product", "    p1_b[0] = long(simd_product(int(p1_b[qd_lane])));", "simd_product");
}

#[test]
fn rejects_a_float_or_64_bit_reduction() {
    rejects("sum_f32", "    p0_a[0] = simd_sum(p0_a[qd_lane]);", "simd_sum");
    rejects("sum_i64", "    p1_b[0] = simd_sum(p1_b[qd_lane]);", "simd_sum");
}

#[test]
fn rejects_an_attribute_it_does_not_know() {
    let src = kernel("").replace("[[thread_index_in_simdgroup]]", "[[thread_index_in_quadgroup]]");
    if let Some(c) = MslCheck::find() {
        let e = c.check_source("attr", &src).expect_err("unknown attribute");
        assert!(e.contains("thread_index_in_quadgroup"), "{e}");
    }
}
