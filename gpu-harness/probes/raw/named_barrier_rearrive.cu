// Probe (raw CUDA, not generated): is a warp's second barrier instruction on a named barrier,
// before the use completed, counted as a second arrival (semantics.md §9.1, "Arrivals are
// counted")? Three shapes, each in a loop with a bounded spin so that a hang is reported, not
// waited for:
//   A. one warp: `bar.arrive 1, 64` then `bar.sync 1, 64`. Completes only if both count.
//   B. FlashAttention-3's epilogue (hopper/epilogue_fwd.hpp): 4 warps write a tile and
//      `bar.arrive 1, 160`; the last warp then `bar.sync 1, 160` and reads every word. The read
//      must never see an old word: the sync waits for all four warps' arrivals.
//   C. the ping-pong that gives the first turn twice: warps 0 and 1 both `bar.arrive 1, 64`
//      (the use completes with nobody waiting), then warp 0 `bar.sync 1, 64` waits for a use
//      nobody else joins: it must hang (checked with a second warp that times out and reports).
// Build and run on an sm_90 machine:
//   nvcc -arch=sm_90a -O2 -o named_barrier_rearrive named_barrier_rearrive.cu && ./named_barrier_rearrive
// Results and their reading: docs/gpu.md "Named-barrier re-arrival".
#include <cstdio>
#include <cstdint>

__global__ void shape_a(unsigned long long* done, int iters) {
  for (int i = 0; i < iters; ++i) {
    asm volatile("bar.arrive 1, 64;" ::: "memory");
    asm volatile("bar.sync 1, 64;" ::: "memory");
  }
  if (threadIdx.x == 0) atomicAdd(done, (unsigned long long)iters);
}

__global__ void shape_b(unsigned long long* res, int iters) {
  __shared__ uint32_t tile[128 * 4];
  const int warp = threadIdx.x / 32;
  for (int it = 1; it <= iters; ++it) {
    const uint32_t v = (uint32_t)it * 2654435761u ^ blockIdx.x;
    // Warps finish their writes at different times.
    if ((it + warp) % 4 == 0) __nanosleep(200);
    for (int k = 0; k < 4; ++k) ((volatile uint32_t*)tile)[threadIdx.x * 4 + k] = v;
    asm volatile("bar.arrive 1, 160;" ::: "memory");
    if (warp == 3) {
      asm volatile("bar.sync 1, 160;" ::: "memory");
      unsigned long long bad = 0;
      for (int i = threadIdx.x - 96; i < 128 * 4; i += 32)
        if (((volatile uint32_t*)tile)[i] != v) bad++;
      if (bad) atomicAdd(&res[0], bad);
    }
    __syncthreads();  // the next iteration's writes wait for the reader
  }
  if (threadIdx.x == 0) atomicAdd(&res[1], (unsigned long long)iters);
}

// Warp 1 watches warp 0 and reports whether its bar.sync returned within the bound.
__global__ void shape_c(unsigned long long* res, volatile int* flag) {
  const int warp = threadIdx.x / 32;
  asm volatile("bar.arrive 1, 64;" ::: "memory");
  if (warp == 0) {
    asm volatile("bar.sync 1, 64;" ::: "memory");
    if (threadIdx.x == 0) *flag = 1;
  } else {
    long long t0 = clock64();
    while (*flag == 0 && clock64() - t0 < 2000000000LL) {}
    if (threadIdx.x == 32) res[0] = *flag;  // 0: warp 0 never returned (hung)
    // Release warp 0 so the kernel ends: a third arrival completes the next use.
    asm volatile("bar.arrive 1, 64;" ::: "memory");
  }
}

int main() {
  cudaDeviceProp p; cudaGetDeviceProperties(&p, 0); printf("%s\n", p.name);
  unsigned long long* d; cudaMalloc(&d, 4 * sizeof(unsigned long long));
  int* flag; cudaMalloc(&flag, sizeof(int));
  unsigned long long h[4];

  cudaMemset(d, 0, 32);
  shape_a<<<1056, 32>>>(d, 1000);
  cudaError_t e = cudaDeviceSynchronize();
  cudaMemcpy(h, d, 32, cudaMemcpyDeviceToHost);
  printf("A one warp, bar.arrive 1,64 + bar.sync 1,64: %llu uses completed (expect %d) [%s]\n", h[0], 1056 * 1000, cudaGetErrorString(e));

  cudaMemset(d, 0, 32);
  shape_b<<<1056, 128>>>(d, 20000);
  e = cudaDeviceSynchronize();
  cudaMemcpy(h, d, 32, cudaMemcpyDeviceToHost);
  printf("B FA3 epilogue (4 warps arrive 160, warp 3 syncs 160): %llu tiles read, %llu stale words [%s]\n", h[1], h[0], cudaGetErrorString(e));

  cudaMemset(d, 0, 32); cudaMemset(flag, 0, sizeof(int));
  shape_c<<<1, 64>>>(d, flag);
  e = cudaDeviceSynchronize();
  cudaMemcpy(h, d, 32, cudaMemcpyDeviceToHost);
  printf("C two first turns: warp 0's bar.sync %s within ~1 s [%s]\n", h[0] ? "returned" : "did NOT return (hung until released)", cudaGetErrorString(e));
  return 0;
}
