//! Shaped shared arrays (seed 000's `block.SharedArray` with a tuple shape): row-major flattening
//! and the emulator's per-dimension bounds checks.

use qd::backend::cpu::EmuErrorKind;
use qd::prelude::*;

/// A kernel that stores `1` at `[row, col]` of an `[8, 9]` shared tile (thread 0 only).
fn poke(row: i32, col: i32) -> Kernel {
    Kernel::explicit("poke", 32, move |k| {
        let out = k.array::<i32>("out");
        let tile = block::shared_array_shaped::<i32, 2>([8, 9]);
        let t = block::thread_idx();
        if_(t.eq(0), || {
            tile.set([Val::constant(row), Val::constant(col)], 1);
            out.set(0, tile.flat().get(row * 9 + col));
        });
    })
}

#[test]
fn an_index_outside_its_dimension_is_an_error_naming_the_dimension() {
    let d = Device::cpu();
    let out = d.zeros::<i32>(1).unwrap();
    // In range in both dimensions: row-major, the flat element row * 9 + col.
    d.launch_grid(&poke(3, 8), 1, &[out.arg()]).unwrap();
    assert_eq!(out.to_vec().unwrap(), [1]);
    // Column 9 of a 9-column tile: flat index 18 is inside the 72 elements, but not a column.
    let line = line!() - 14; // the `tile.set` line of `poke`
    for (row, col, dim, len, index) in [(1, 9, 1, 9, 9), (8, 0, 0, 8, 8), (-1, 5, 0, 8, -1)] {
        match d.launch_grid(&poke(row, col), 1, &[out.arg()]) {
            Err(QdError::Emulator(e)) => {
                assert_eq!(e.loc.expect("a line").line, line, "{e}");
                match e.kind {
                    EmuErrorKind::OutOfBounds { array, index: i, len: l, .. } => {
                        assert!(array.contains(&format!("dimension {dim} of [8, 9]")), "{array}");
                        assert_eq!((i, l), (index, len));
                    }
                    other => panic!("expected out of bounds, got {other:?}"),
                }
            }
            other => panic!("[{row}, {col}]: expected an emulator error, got {other:?}"),
        }
    }
}

#[test]
fn other_targets_trace_no_probes() {
    let k = poke(1, 2);
    let cpu = k.trace(&qd::target::Target::cpu(32)).unwrap();
    assert_eq!(cpu.local_arrays.len(), 2, "one probe per dimension on the emulator");
    let cuda = k.trace(&qd::target::Target::cuda(90)).unwrap();
    assert!(cuda.local_arrays.is_empty());
    assert_eq!(cuda.shared[0].len, 72);
}

#[test]
fn the_shape_must_fit() {
    let k = Kernel::explicit("huge", 32, |_| {
        block::shared_array_shaped::<u8, 3>([1 << 12, 1 << 12, 1 << 12]);
    });
    let e = k.trace(&qd::target::Target::cpu(32)).unwrap_err();
    assert!(e.to_string().contains("more than"), "{e}");
}

#[test]
fn a_shared_vector_array_too_large_is_a_trace_error() {
    let k = Kernel::explicit("huge_vectors", 32, |_| {
        qd::simt::vector::VectorArray::<f32, 4>::shared(u32::MAX / 2);
    });
    let e = k.trace(&qd::target::Target::cpu(32)).unwrap_err();
    assert!(e.to_string().contains("more than"), "{e}");
}
