//! IR -> CUDA C++ stress kernels, compiled with NVRTC and launched through cudarc.
