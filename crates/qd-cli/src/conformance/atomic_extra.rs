//! The atomics the table of `examples` leaves out: `atomic_mul` on every dtype (device and
//! shared arrays), float `atomic_sub` (device and shared), and the signed zero of seed 003's
//! float `atomic_sub` (`add(x, -y)`: `-0.0 - +0.0` is `-0.0`).

use super::examples::{download, random_len, random_vec, upload, Check, Elt, BLOCK, SLOTS};
use super::{expect_eq, fail, Case, Outcome, Rng};
use qd::prelude::*;
use qd::target::Feature;

/// [`Elt`]s `atomic_mul` runs on: the host product and factors that keep every product exact.
pub trait MulElt: Elt {
    /// The product as the device computes it (integers wrap).
    fn host_mul(self, o: Self) -> Self;
    /// A random factor: any integer; for floats ±1, ±2 or ±0.5, so that a contended product is
    /// exact whatever the order of the multiplications.
    fn factor(rng: &mut Rng) -> Self;
}

macro_rules! int_mul {
    ($($t:ty),*) => {$(
        impl MulElt for $t {
            fn host_mul(self, o: Self) -> Self {
                self.wrapping_mul(o)
            }
            fn factor(rng: &mut Rng) -> Self {
                rng.next_u64() as $t
            }
        }
    )*};
}
int_mul!(i8, u8, i16, u16, i32, u32, i64, u64);

macro_rules! float_mul {
    ($($t:ty),*) => {$(
        impl MulElt for $t {
            fn host_mul(self, o: Self) -> Self {
                self * o
            }
            fn factor(rng: &mut Rng) -> Self {
                [1.0, -1.0, 2.0, -2.0, 0.5, -0.5][rng.range_i64(0, 6) as usize]
            }
        }
    )*};
}
float_mul!(f32, f64);

/// Where the atomics of a check land.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Space {
    /// Elements of device arrays.
    Device,
    /// Elements of shared arrays, loaded from and stored back to the device arrays per block.
    Shared,
}

impl Space {
    const ALL: [Space; 2] = [Space::Device, Space::Shared];

    fn name(self) -> &'static str {
        match self {
            Space::Device => "device",
            Space::Shared => "shared",
        }
    }
}

/// One fold op: its device atomic, host meaning and operand draw.
#[derive(Clone, Copy)]
struct Fold<T> {
    name: &'static str,
    device: fn(Elem<T>, Val<T>) -> Val<T>,
    host: fn(T, T) -> T,
    random: fn(&mut Rng) -> T,
}

/// `olds[i] = op(own[i], vals[i])` (old and new values checked exactly) and
/// `op(acc[slot], vals[i])` over `SLOTS` slots (a fold under contention): on device arrays over the
/// whole launch, or on shared arrays per block (`acc` holds `SLOTS` slots per block).
fn fold_check<T: Elt>(op: Fold<T>, space: Space) -> Check {
    let name = format!("atomic_{}_{}_{}", op.name, space.name(), T::NAME);
    let kernel = Kernel::explicit(&name, BLOCK, move |k| {
        let vals = k.array::<T>("vals");
        let own = k.array::<T>("own");
        let olds = k.array::<T>("olds");
        let acc = k.array::<T>("acc");
        let g = block::global_thread_idx();
        let v = vals.get(g);
        match space {
            Space::Device => {
                olds.set(g, (op.device)(own.at(g), v));
                (op.device)(acc.at(g % SLOTS as i32), v);
            }
            Space::Shared => {
                let t = block::thread_idx();
                let slot = block::block_idx() * SLOTS as i32 + t;
                let sh_own = block::shared_array::<T>(BLOCK);
                let sh_acc = block::shared_array::<T>(SLOTS as u32);
                sh_own.set(t, own.get(g));
                if_(t.lt(SLOTS as i32), || sh_acc.set(t, acc.get(slot)));
                block::sync();
                olds.set(g, (op.device)(sh_own.at(t), v));
                (op.device)(sh_acc.at(t % SLOTS as i32), v);
                block::sync();
                own.set(g, sh_own.get(t));
                if_(t.lt(SLOTS as i32), || acc.set(slot, sh_acc.get(t)));
            }
        }
    });
    Check::new(kernel, move |kernel, device, rng| {
        let n = random_len(rng);
        let blocks = n / BLOCK as usize;
        let groups = match space {
            Space::Device => 1,
            Space::Shared => blocks,
        };
        let vals = random_vec(rng, n, op.random);
        let own_init = random_vec(rng, n, T::random);
        let acc_init = random_vec(rng, SLOTS * groups, T::random);
        let (v, own, acc) = (upload(device, &vals)?, upload(device, &own_init)?, upload(device, &acc_init)?);
        let olds = device.zeros::<T>(n).map_err(fail)?;
        device.launch_grid(kernel, blocks as u32, &[v.arg(), own.arg(), olds.arg(), acc.arg()]).map_err(fail)?;
        expect_eq("olds", &download(&olds)?, &own_init)?;
        let own_want: Vec<T> = own_init.iter().zip(&vals).map(|(&x, &y)| (op.host)(x, y)).collect();
        expect_eq("own", &download(&own)?, &own_want)?;
        // Thread g lands on slot g % SLOTS of its group (the launch, or its block).
        let per_group = n / groups;
        let acc_want: Vec<T> = (0..SLOTS * groups)
            .map(|i| {
                let (group, slot) = (i / SLOTS, i % SLOTS);
                let mine = vals[group * per_group..(group + 1) * per_group].iter().skip(slot).step_by(SLOTS);
                mine.copied().fold(acc_init[i], op.host)
            })
            .collect();
        expect_eq("acc", &download(&acc)?, &acc_want)?;
        Ok(format!("{n} threads, {} contended slots", acc_want.len()))
    })
}

/// `atomic_sub` on floats keeps signed zeros: `olds[i] = atomic_sub(x[i], y[i])` over every pair
/// of signed zeros, compared bit for bit (`-0.0 - +0.0` is `-0.0`; `0 - y` would give `+0.0`).
fn sub_signed_zero<T: Elt>(neg_zero: T, bits: fn(T) -> u64) -> Check {
    let kernel = Kernel::range(&format!("atomic_sub_signed_zero_{}", T::NAME), BLOCK, |k| {
        k.requires(Feature::SignedZeros(T::DTYPE));
        let x = k.array::<T>("x");
        let y = k.array::<T>("y");
        let olds = k.array::<T>("olds");
        k.parallel_for(0, x.len(), |i| olds.set(i, atomic_sub(x.at(i), y.get(i))));
    });
    Check::new(kernel, move |kernel, device, _rng| {
        let (pz, nz) = (T::from_i64(0), neg_zero);
        let xs = [nz, pz, nz, pz];
        let ys = [pz, nz, nz, pz];
        let (x, y) = (upload(device, &xs)?, upload(device, &ys)?);
        let olds = device.zeros::<T>(xs.len()).map_err(fail)?;
        device.launch(kernel, &[x.arg(), y.arg(), olds.arg()]).map_err(fail)?;
        let got: Vec<u64> = download(&x)?.into_iter().map(bits).collect();
        let want: Vec<u64> = xs.iter().zip(&ys).map(|(&a, &b)| bits(a.host_sub(b))).collect();
        expect_eq("x - y (bits)", &got, &want)?;
        let old_bits: Vec<u64> = download(&olds)?.into_iter().map(bits).collect();
        expect_eq("olds (bits)", &old_bits, &xs.map(bits))?;
        Ok("-0 - +0 = -0, +0 - -0 = +0, -0 - -0 = +0, +0 - +0 = +0".into())
    })
}

fn mul<T: MulElt>() -> Fold<T> {
    Fold { name: "mul", device: |e, v| atomic_mul(e, v), host: T::host_mul, random: T::factor }
}

fn sub<T: Elt>() -> Fold<T> {
    Fold { name: "sub", device: |e, v| atomic_sub(e, v), host: T::host_sub, random: T::summand }
}

fn mul_cases<T: MulElt>(checks: &mut Vec<(String, Check)>) {
    for space in Space::ALL {
        checks.push((format!("atomic/mul/{}/{}", space.name(), T::NAME), fold_check(mul::<T>(), space)));
    }
}

/// Every check of this module with its case id, in a stable order.
pub fn checks() -> Vec<(String, Check)> {
    let mut checks = Vec::new();
    mul_cases::<i8>(&mut checks);
    mul_cases::<u8>(&mut checks);
    mul_cases::<i16>(&mut checks);
    mul_cases::<u16>(&mut checks);
    mul_cases::<i32>(&mut checks);
    mul_cases::<u32>(&mut checks);
    mul_cases::<i64>(&mut checks);
    mul_cases::<u64>(&mut checks);
    mul_cases::<f32>(&mut checks);
    mul_cases::<f64>(&mut checks);
    for space in Space::ALL {
        checks.push((format!("atomic/sub/{}/f32", space.name()), fold_check(sub::<f32>(), space)));
        checks.push((format!("atomic/sub/{}/f64", space.name()), fold_check(sub::<f64>(), space)));
    }
    checks.push(("atomic/sub_signed_zero/f32".into(), sub_signed_zero(-0.0f32, |x| x.to_bits().into())));
    checks.push(("atomic/sub_signed_zero/f64".into(), sub_signed_zero(-0.0f64, f64::to_bits)));
    checks
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
