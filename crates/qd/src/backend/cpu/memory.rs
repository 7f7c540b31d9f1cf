//! Global and shared memory for the emulator: one atomic cell per element, so concurrent blocks
//! never race in the Rust sense (D8), and fences map to `std::sync::atomic::fence`.

use crate::ir::DType;
use std::sync::atomic::{AtomicU64, Ordering};

/// A typed array in emulator memory.
#[derive(Debug)]
pub struct Buffer {
    /// Element type.
    pub dtype: DType,
    cells: Vec<AtomicU64>,
}

impl Buffer {
    /// `len` zeroed elements.
    pub fn zeroed(dtype: DType, len: usize) -> Buffer {
        Buffer { dtype, cells: (0..len).map(|_| AtomicU64::new(0)).collect() }
    }

    /// From raw element bits.
    pub fn from_bits(dtype: DType, bits: &[u64]) -> Buffer {
        Buffer { dtype, cells: bits.iter().map(|b| AtomicU64::new(*b)).collect() }
    }

    /// Element count.
    pub fn len(&self) -> usize {
        self.cells.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    /// Element bits.
    pub fn to_bits(&self) -> Vec<u64> {
        self.cells.iter().map(|c| c.load(Ordering::SeqCst)).collect()
    }

    /// Overwrites every element.
    pub fn write_bits(&self, bits: &[u64]) {
        for (c, b) in self.cells.iter().zip(bits) {
            c.store(*b, Ordering::SeqCst);
        }
    }

    /// One cell.
    pub fn cell(&self, i: usize) -> &AtomicU64 {
        &self.cells[i]
    }
}
