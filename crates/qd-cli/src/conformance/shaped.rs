//! Shaped shared arrays (seed 000's `block.SharedArray` with a tuple shape): a padded 2-D tile
//! transposed through shared memory, and a 3-D array read back with its indices reversed.

use super::examples::{download, random_blocks, random_vec, upload, Check, BLOCK};
use super::{expect_eq, fail, Case, Outcome};
use qd::prelude::*;

/// `dst[b][r][c] = src[b][c][r]` over 8×8 blocks through an `[8, 9]` shared tile (one padding
/// column, as bank-conflict-free transposes do).
fn transpose_2d() -> Check {
    let kernel = Kernel::explicit("shared_shaped_transpose_2d", BLOCK, |k| {
        let src = k.array::<i32>("src");
        let dst = k.array::<i32>("dst");
        let tile = block::shared_array_shaped::<i32, 2>([8, 9]);
        let (t, g) = (block::thread_idx(), block::global_thread_idx());
        let (row, col) = (t / 8, t % 8);
        tile.set([row, col], src.get(g));
        block::sync();
        dst.set(g, tile.get([col, row]));
    });
    Check::new(kernel, |kernel, device, rng| {
        let blocks = random_blocks(rng);
        let src = random_vec(rng, blocks * BLOCK as usize, |r| r.next_u64() as i32);
        let (s, d) = (upload(device, &src)?, device.zeros::<i32>(src.len()).map_err(fail)?);
        device.launch_grid(kernel, blocks as u32, &[s.arg(), d.arg()]).map_err(fail)?;
        let want: Vec<i32> = (0..src.len()).map(|g| src[g - g % 64 + (g % 8) * 8 + (g % 64) / 8]).collect();
        expect_eq("dst", &download(&d)?, &want)?;
        Ok(format!("{blocks} blocks of 8x8 transposed"))
    })
}

/// Thread `t = (i, j, k)` of a `[4, 4, 4]` array stores at `[i, j, k]` and reads `[k, j, i]`.
fn reverse_3d() -> Check {
    let kernel = Kernel::explicit("shared_shaped_reverse_3d", BLOCK, |k| {
        let src = k.array::<f32>("src");
        let dst = k.array::<f32>("dst");
        let cube = block::shared_array_shaped::<f32, 3>([4, 4, 4]);
        let (t, g) = (block::thread_idx(), block::global_thread_idx());
        let (i, j, l) = (t / 16, t / 4 % 4, t % 4);
        cube.set([i, j, l], src.get(g));
        block::sync();
        dst.set(g, cube.get([l, j, i]));
    });
    Check::new(kernel, |kernel, device, rng| {
        let blocks = random_blocks(rng);
        let src = random_vec(rng, blocks * BLOCK as usize, |r| r.range_i64(-1000, 1000) as f32);
        let (s, d) = (upload(device, &src)?, device.zeros::<f32>(src.len()).map_err(fail)?);
        device.launch_grid(kernel, blocks as u32, &[s.arg(), d.arg()]).map_err(fail)?;
        let want: Vec<f32> = (0..src.len())
            .map(|g| {
                let t = g % 64;
                src[g - t + (t % 4) * 16 + (t / 4 % 4) * 4 + t / 16]
            })
            .collect();
        expect_eq("dst", &download(&d)?, &want)?;
        Ok(format!("{blocks} blocks of 4x4x4 reversed"))
    })
}

/// Adds this module's cases.
pub fn register(cases: &mut Vec<Case>) {
    for (id, check) in
        [("block/shared_shaped/transpose_2d", transpose_2d()), ("block/shared_shaped/reverse_3d", reverse_3d())]
    {
        let kernel = check.kernel().clone();
        cases.push(
            Case::new(id, move |device, rng| check.run(device, rng).map(|_| Outcome::Pass))
                .launching(move || vec![kernel.clone()]),
        );
    }
}
