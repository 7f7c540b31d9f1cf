//! Apple GPUs through Metal (MSL 3.0). So far this folder holds the capability model ([`caps`]):
//! kernels are traced for [`Target::metal`](crate::target::Target::metal) and run on the emulator
//! wearing it (`cpu:sg32@metal`), which proves the library paths a Metal device takes. The MSL
//! printer and the Metal runtime are not in this build.

pub mod caps;
