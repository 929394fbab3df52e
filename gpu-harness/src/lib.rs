//! IR -> CUDA C++ stress kernels, compiled with NVRTC and launched through cudarc.
//!
//! - [`lower`]: the pure function IR -> CUDA C++ (snapshot-tested without a GPU);
//! - [`cuda_env`]: finding the driver, NVRTC and headers, with errors that say where we looked;
//! - [`run`]: NVRTC compilation and launches (cudarc);
//! - [`decode`]: the kernel's result buffer as counts and events;
//! - [`sequencer`]: a checker trace as the table the device-side sequencer replays.

pub mod cuda_env;
pub mod decode;
pub mod lower;
pub mod run;
pub mod sequencer;
