//! Small vector and matrix values (`qd::simt::vector`): element-wise arithmetic, indexing, packed
//! loads and stores, shared arrays of vectors, and atomics that fan out per component under
//! contention.

use super::atomic_extra::MulElt;
use super::examples::{download, random_len, random_vec, upload, Check, Elt, BLOCK, SLOTS};
use super::{expect_eq, fail, Case, Outcome};
use qd::prelude::*;
use qd::simt::vector::{Mat3, MatrixArray, Vec3, Vec4, VectorArray};

/// `out = a * b + a - b`, `dots = a · b`, `picked = a[i % 3]` (a run-time component) for packed
/// `Vec3`s: element-wise arithmetic and indexing against the host.
fn arith<T: MulElt>() -> Check {
    let kernel = Kernel::range(&format!("vec3_arith_{}", T::NAME), BLOCK, |k| {
        let a = VectorArray::<T, 3>::new(k.array::<T>("a"));
        let b = VectorArray::<T, 3>::new(k.array::<T>("b"));
        let out = VectorArray::<T, 3>::new(k.array::<T>("out"));
        let dots = k.array::<T>("dots");
        let picked = k.array::<T>("picked");
        k.parallel_for(0, a.len(), |i| {
            let (x, y): (Vec3<T>, Vec3<T>) = (a.get(i), b.get(i));
            out.set(i, x * y + x - y);
            dots.set(i, x.dot(y));
            picked.set(i, x.get(i % 3));
        });
    });
    Check::new(kernel, |kernel, device, rng| {
        let n = random_len(rng);
        let (a, b) = (random_vec(rng, 3 * n, T::summand), random_vec(rng, 3 * n, T::summand));
        let (da, db) = (upload(device, &a)?, upload(device, &b)?);
        let out = device.zeros::<T>(3 * n).map_err(fail)?;
        let (dots, picked) = (device.zeros::<T>(n).map_err(fail)?, device.zeros::<T>(n).map_err(fail)?);
        device.launch(kernel, &[da.arg(), db.arg(), out.arg(), dots.arg(), picked.arg()]).map_err(fail)?;
        let mul = T::host_mul;
        let want: Vec<T> = a.iter().zip(&b).map(|(&x, &y)| mul(x, y).host_add(x).host_sub(y)).collect();
        expect_eq("out", &download(&out)?, &want)?;
        let dot = |i: usize| (0..3).fold(T::from_i64(0), |acc, c| acc.host_add(mul(a[3 * i + c], b[3 * i + c])));
        expect_eq("dots", &download(&dots)?, &(0..n).map(dot).collect::<Vec<_>>())?;
        expect_eq("picked", &download(&picked)?, &(0..n).map(|i| a[3 * i + i % 3]).collect::<Vec<_>>())?;
        Ok(format!("{n} Vec3s"))
    })
}

/// `out = m * v` and `mm = m * transpose(m)` for packed row-major `Mat3`s.
fn matrix<T: MulElt>() -> Check {
    let kernel = Kernel::range(&format!("mat3_mul_{}", T::NAME), BLOCK, |k| {
        let ms = MatrixArray::<T, 3, 3>::new(k.array::<T>("m"));
        let vs = VectorArray::<T, 3>::new(k.array::<T>("v"));
        let out = VectorArray::<T, 3>::new(k.array::<T>("out"));
        let mm = MatrixArray::<T, 3, 3>::new(k.array::<T>("mm"));
        k.parallel_for(0, vs.len(), |i| {
            let m: Mat3<T> = ms.get(i);
            out.set(i, m * vs.get(i));
            mm.set(i, m * m.transpose());
        });
    });
    Check::new(kernel, |kernel, device, rng| {
        let n = random_len(rng);
        let small = |r: &mut super::Rng| T::from_i64(r.range_i64(-16, 16));
        let (m, v) = (random_vec(rng, 9 * n, small), random_vec(rng, 3 * n, small));
        let (dm, dv) = (upload(device, &m)?, upload(device, &v)?);
        let (out, mm) = (device.zeros::<T>(3 * n).map_err(fail)?, device.zeros::<T>(9 * n).map_err(fail)?);
        device.launch(kernel, &[dm.arg(), dv.arg(), out.arg(), mm.arg()]).map_err(fail)?;
        let dot = |x: &[T], y: &[T]| x.iter().zip(y).fold(T::from_i64(0), |acc, (&p, &q)| acc.host_add(p.host_mul(q)));
        let mut want_out = Vec::new();
        let mut want_mm = Vec::new();
        for i in 0..n {
            let row = |r: usize| &m[9 * i + 3 * r..9 * i + 3 * r + 3];
            for r in 0..3 {
                want_out.push(dot(row(r), &v[3 * i..3 * i + 3]));
                for c in 0..3 {
                    want_mm.push(dot(row(r), row(c)));
                }
            }
        }
        expect_eq("out", &download(&out)?, &want_out)?;
        expect_eq("mm", &download(&mm)?, &want_mm)?;
        Ok(format!("{n} Mat3s"))
    })
}

/// A shared array of `Vec4`s: each thread stores its vector, then reads its neighbour's.
fn shared<T: Elt>() -> Check {
    let kernel = Kernel::explicit(&format!("vec4_shared_{}", T::NAME), BLOCK, |k| {
        let src = VectorArray::<T, 4>::new(k.array::<T>("src"));
        let dst = VectorArray::<T, 4>::new(k.array::<T>("dst"));
        let tile = VectorArray::<T, 4>::shared(BLOCK);
        let (t, g) = (block::thread_idx(), block::global_thread_idx());
        tile.set(t, src.get(g));
        block::sync();
        dst.set(g, tile.get((t + 1) % BLOCK as i32));
    });
    Check::new(kernel, |kernel, device, rng| {
        let n = random_len(rng);
        let src = random_vec(rng, 4 * n, T::random);
        let (s, d) = (upload(device, &src)?, device.zeros::<T>(4 * n).map_err(fail)?);
        device.launch_grid(kernel, (n / BLOCK as usize) as u32, &[s.arg(), d.arg()]).map_err(fail)?;
        let b = BLOCK as usize;
        let want: Vec<T> =
            (0..4 * n).map(|e| (e / 4, e % 4)).map(|(g, c)| src[4 * (g - g % b + (g + 1) % b) + c]).collect();
        expect_eq("dst", &download(&d)?, &want)?;
        Ok(format!("{n} Vec4s through shared memory"))
    })
}

/// `olds[i] = atomic_add(own[i], v[i])` and `atomic_add(acc[i % SLOTS], v[i])` on `Vec4`s (each
/// component its own atomic), in device or shared memory, and `Mat3` atomic adds on device slots.
fn atomic_add<T: Elt>(shared: bool) -> Check {
    let space = if shared { "shared" } else { "device" };
    let kernel = Kernel::explicit(&format!("vec4_atomic_add_{space}_{}", T::NAME), BLOCK, move |k| {
        let vals = VectorArray::<T, 4>::new(k.array::<T>("vals"));
        let own = VectorArray::<T, 4>::new(k.array::<T>("own"));
        let olds = VectorArray::<T, 4>::new(k.array::<T>("olds"));
        let acc = VectorArray::<T, 4>::new(k.array::<T>("acc"));
        let macc = MatrixArray::<T, 3, 3>::new(k.array::<T>("macc"));
        let (t, g) = (block::thread_idx(), block::global_thread_idx());
        let v: Vec4<T> = vals.get(g);
        if shared {
            let (sh_own, sh_acc) = (VectorArray::<T, 4>::shared(BLOCK), VectorArray::<T, 4>::shared(SLOTS as u32));
            let slot = block::block_idx() * SLOTS as i32 + t;
            sh_own.set(t, own.get(g));
            if_(t.lt(SLOTS as i32), || sh_acc.set(t, acc.get(slot)));
            block::sync();
            olds.set(g, sh_own.atomic_add(t, v));
            sh_acc.atomic_add(t % SLOTS as i32, v);
            block::sync();
            own.set(g, sh_own.get(t));
            if_(t.lt(SLOTS as i32), || acc.set(slot, sh_acc.get(t)));
        } else {
            olds.set(g, own.atomic_add(g, v));
            acc.atomic_add(g % SLOTS as i32, v);
            let m = Mat3::from_rows([[v[0], v[1], v[2]], [v[3], v[0], v[1]], [v[2], v[3], v[0]]]);
            macc.atomic_add(g % 2, m);
        }
    });
    Check::new(kernel, move |kernel, device, rng| {
        let n = random_len(rng);
        let blocks = n / BLOCK as usize;
        let groups = if shared { blocks } else { 1 };
        let vals = random_vec(rng, 4 * n, T::summand);
        let own_init = random_vec(rng, 4 * n, T::summand);
        let acc_init = random_vec(rng, 4 * SLOTS * groups, T::summand);
        let (v, own, acc) = (upload(device, &vals)?, upload(device, &own_init)?, upload(device, &acc_init)?);
        let olds = device.zeros::<T>(4 * n).map_err(fail)?;
        let macc = device.zeros::<T>(18).map_err(fail)?;
        let args = [v.arg(), own.arg(), olds.arg(), acc.arg(), macc.arg()];
        device.launch_grid(kernel, blocks as u32, &args).map_err(fail)?;
        expect_eq("olds", &download(&olds)?, &own_init)?;
        let own_want: Vec<T> = own_init.iter().zip(&vals).map(|(&x, &y)| x.host_add(y)).collect();
        expect_eq("own", &download(&own)?, &own_want)?;
        let per_group = n / groups;
        let mut acc_want = acc_init.clone();
        for g in 0..n {
            let slot = (g / per_group) * SLOTS + g % SLOTS;
            for c in 0..4 {
                acc_want[4 * slot + c] = acc_want[4 * slot + c].host_add(vals[4 * g + c]);
            }
        }
        expect_eq("acc", &download(&acc)?, &acc_want)?;
        if !shared {
            // Element e of the matrix is component PATTERN[e] of the thread's vector.
            const PATTERN: [usize; 9] = [0, 1, 2, 3, 0, 1, 2, 3, 0];
            let mut m_want = vec![T::from_i64(0); 18];
            for g in 0..n {
                for (e, &c) in PATTERN.iter().enumerate() {
                    m_want[9 * (g % 2) + e] = m_want[9 * (g % 2) + e].host_add(vals[4 * g + c]);
                }
            }
            expect_eq("macc", &download(&macc)?, &m_want)?;
        }
        Ok(format!("{n} threads, {} contended Vec4 slots", SLOTS * groups))
    })
}

/// Every check of this module with its case id, in a stable order.
pub fn checks() -> Vec<(String, Check)> {
    vec![
        ("vector/arith/i32".into(), arith::<i32>()),
        ("vector/arith/f32".into(), arith::<f32>()),
        ("vector/matrix/i32".into(), matrix::<i32>()),
        ("vector/matrix/f32".into(), matrix::<f32>()),
        ("vector/shared/u32".into(), shared::<u32>()),
        ("vector/shared/f64".into(), shared::<f64>()),
        ("vector/atomic_add/device/i32".into(), atomic_add::<i32>(false)),
        ("vector/atomic_add/device/f32".into(), atomic_add::<f32>(false)),
        ("vector/atomic_add/shared/u32".into(), atomic_add::<u32>(true)),
        ("vector/atomic_add/shared/f32".into(), atomic_add::<f32>(true)),
    ]
}

/// Adds this module's cases.
pub fn register(cases: &mut Vec<Case>) {
    for (id, check) in checks() {
        let kernel = check.kernel().clone();
        cases.push(
            Case::new(id, move |device, rng| check.run(device, rng).map(|_| Outcome::Pass))
                .launching(move || vec![kernel.clone()]),
        );
    }
}
