//! Global and shared memory for the emulator: one atomic cell per element, so concurrent blocks
//! never race in the Rust sense (D8), and fences map to `std::sync::atomic::fence`.

use crate::ir::DType;
use std::sync::atomic::{AtomicU64, Ordering};

/// The most bytes of emulator memory one array may take: half of the memory the kernel reports as
/// available (`MemAvailable` in `/proc/meminfo`) when the request is made, so an oversized array is
/// a typed error instead of a visit from the OOM killer (reserving alone does not prevent one:
/// pages are committed only when zeroed). `None` where the figure cannot be read.
pub fn memory_budget() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024) / 2)
}

/// Bytes of emulator memory `len` elements take (one 8-byte cell each); `None` on overflow.
pub fn buffer_bytes(len: usize) -> Option<u64> {
    (len as u64).checked_mul(std::mem::size_of::<AtomicU64>() as u64)
}

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
