//! The NVPTX backend: PTX text printed from the IR (seed 004's emission contract, D7).
pub mod lower;
