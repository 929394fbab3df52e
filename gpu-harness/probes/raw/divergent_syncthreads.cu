// Probe (raw CUDA, not generated): does a `__syncthreads` (barrier.sync.aligned 0) or a
// non-aligned `barrier.sync 0` complete when the threads of one warp reach it at different
// statements, the pattern of corpus/hazards/barrier-divergence/fail.phase (thread 0 skips the
// first barrier and meets the others at the second)? Each configuration is one launch; one that
// has not finished after 5 s is reported as hanging and the process ends (the context is lost).
//   nvcc -arch=sm_90a -O2 -o divergent_syncthreads divergent_syncthreads.cu && ./divergent_syncthreads
// Results: docs/gpu.md "Divergent syncthreads".
#include <cstdio>
#include <cstdlib>
#include <unistd.h>
template <bool ALIGNED>
__global__ void diverge(int* out, int k) {
  int t = threadIdx.x;
  for (int i = 0; i < k; i++) {
    if (t == 0) atomicAdd(&out[0], 1);
    if (t != 0) {
      if (ALIGNED) __syncthreads(); else asm volatile("barrier.sync 0;" ::: "memory");
    }
    atomicAdd(&out[1], 1);
    if (ALIGNED) __syncthreads(); else asm volatile("barrier.sync 0;" ::: "memory");
  }
  atomicAdd(&out[2], 1);
}
static void run(bool aligned, int threads) {
  int* out;
  cudaMalloc(&out, 16);
  cudaMemset(out, 0, 16);
  if (aligned) diverge<true><<<1, threads>>>(out, 2); else diverge<false><<<1, threads>>>(out, 2);
  for (int i = 0; i < 50 && cudaStreamQuery(0) == cudaErrorNotReady; i++) usleep(100000);
  const char* form = aligned ? "__syncthreads (aligned)" : "barrier.sync 0 (non-aligned)";
  if (cudaStreamQuery(0) == cudaErrorNotReady) {
    printf("%s, %d threads: hangs (still running after 5 s)\n", form, threads);
    fflush(stdout);
    _exit(3);
  }
  int h[3] = {0, 0, 0};
  cudaError_t e = cudaMemcpy(h, out, 12, cudaMemcpyDeviceToHost);
  printf("%s, %d threads: finished (%s): thread 0 wrote %d times, %d passes, %d threads exited\n",
         form, threads, cudaGetErrorString(e), h[0], h[1], h[2]);
  cudaFree(out);
}
int main() {
  cudaDeviceProp p;
  cudaGetDeviceProperties(&p, 0);
  printf("%s\n", p.name);
  for (int threads : {3, 64}) run(false, threads);
  for (int threads : {3, 64}) run(true, threads);
  return 0;
}
