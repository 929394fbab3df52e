// Probe (raw CUDA, not generated): what makes a TMA store read a small unfenced tile stale?
// The corpus file missing-proxy-fence at its own size: warp 0, 2 threads, each writes its
// 144-byte element (busy stamp, 32 scalar words, final stamp), `bar.sync 1, 32` (warp 0 only),
// thread 0 bulk-stores both elements (cp.async.bulk.global.shared::cta), waits, and compares
// what landed with what the generic proxy shows: read after the copy ("after") or right
// before its issue ("before", as the generated kernel does). Warps 1..P of the block are
// store pressure: they store (scalar or v4) to a 16 KiB scratch area no one reads until warp
// 0 is done. `warm`: warp 0 starts once every pressure thread made one pass; `iters`: trials
// a block (1 = one trial a block, as the harness runs them).
// Build and run on an sm_90 machine (scripts/gpu-check.sh part PROBES does):
//   nvcc -arch=sm_90a -O2 -o proxy_fence_pressure proxy_fence_pressure.cu && ./proxy_fence_pressure 1.0
// Results and their reading (the SASS matters: docs/gpu.md "Proxy fences").
#include <cstdio>
#include <cstdint>
#include <cstdlib>
__device__ __forceinline__ uint32_t sm(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }

template <int FORM, int SEEN>
__global__ void probe(unsigned char* out, unsigned long long* res, int iters, int salt, int scratch_words, int fence, int active, int warm) {
  extern __shared__ __align__(128) unsigned char smem[];
  unsigned char* tile = smem;                     // 2 x 144 bytes
  volatile int* done = (volatile int*)(smem + 384);
  volatile int* warmed = (volatile int*)(smem + 388);
  uint32_t* scratch = (uint32_t*)(smem + 512);
  unsigned char* g = out + (size_t)blockIdx.x * 512;
  if (threadIdx.x == 0) { *done = 0; *warmed = 0; }
  __syncthreads();
  if (threadIdx.x >= 32) {
    uint32_t v = threadIdx.x;
    int lane4 = (threadIdx.x - 32) * 4;
    int stride = (blockDim.x - 32) * 4;
    while (!*done) {
      for (int i = lane4; i < scratch_words; i += stride) {
        if (FORM == 0) asm volatile("st.shared.v4.u32 [%0], {%1,%1,%1,%1};" :: "r"(sm(&scratch[i])), "r"(v) : "memory");
        else asm volatile("st.shared.u32 [%0], %1;" :: "r"(sm(&scratch[i])), "r"(v) : "memory");
      }
      if (v == threadIdx.x) atomicAdd((int*)warmed, 1);
      v++;
    }
    return;
  }
  if (warm) { long long t0 = clock64(); while (*warmed < (int)blockDim.x - 32 && clock64() - t0 < 1000000) {} }
  unsigned long long stale = 0, trials = 0;
  for (int it = 1; it <= iters; ++it) {
    if (threadIdx.x < active) {
      volatile unsigned long long* st = (volatile unsigned long long*)(tile + 144 * threadIdx.x);
      volatile uint32_t* d = (volatile uint32_t*)(tile + 144 * threadIdx.x + 16);
      unsigned long long mine = ((unsigned long long)it << 16) ^ ((unsigned long long)salt << 40) ^ threadIdx.x;
      *st = mine | (1ull << 63);
      for (int w = 0; w < 32; w++) d[w] = (uint32_t)mine;
      *st = mine;
      if (fence) asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    }
    asm volatile("bar.sync 1, 32;" ::: "memory");
    if (threadIdx.x == 0) {
      unsigned long long seen[2];
      for (int j = 0; j < active; j++) {
        if (SEEN) seen[j] = *(volatile unsigned long long*)(tile + 144 * j);
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], 144;" :: "l"(g + 144 * j), "r"(sm(tile + 144 * j)) : "memory");
      }
      asm volatile("cp.async.bulk.commit_group;" ::: "memory");
      asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
      asm volatile("fence.proxy.async.global;" ::: "memory");
      if (!SEEN) for (int j = 0; j < active; j++) seen[j] = *(volatile unsigned long long*)(tile + 144 * j);
      for (int j = 0; j < active; j++) {
        unsigned long long landed = *(volatile unsigned long long*)(g + 144 * j);
        bool bad = landed != seen[j];
        for (int w = 0; w < 32 && !bad; w++) bad = ((volatile uint32_t*)(g + 144 * j + 16))[w] != (uint32_t)landed;
        if (bad) stale++;
      }
      trials++;
    }
    asm volatile("bar.sync 1, 32;" ::: "memory");
  }
  if (threadIdx.x == 0) { *done = 1; atomicAdd(&res[0], stale); atomicAdd(&res[1], trials); }
}

template <int FORM, int SEEN>
void run(const char* form, int warps, int scratch_bytes, int fence, int active, double seconds, int iters = 200, int warm = 0) {
  auto k = probe<FORM, SEEN>;
  int smem = 512 + scratch_bytes;
  cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024);
  int blocks = 132 * 8;
  unsigned char* out; unsigned long long* res;
  cudaMalloc(&out, (size_t)blocks * 512);
  cudaMalloc(&res, 16);
  cudaMemset(res, 0, 16);
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  double spent = 0; int salt = 1;
  cudaEventRecord(a);
  while (spent < seconds) {
    k<<<blocks, 32 * warps, smem>>>(out, res, iters, salt++, scratch_bytes / 4, fence, active, warm);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) { printf("launch %s\n", cudaGetErrorString(e)); return; }
    cudaEventRecord(b); cudaEventSynchronize(b);
    float ms; cudaEventElapsedTime(&ms, a, b); spent = ms / 1000.0;
  }
  cudaError_t e = cudaDeviceSynchronize();
  unsigned long long h[2]; cudaMemcpy(h, res, 16, cudaMemcpyDeviceToHost);
  printf("iters %3d warm %d seen %s pressure %-6s warps %2d scratch %6d fence %d writers %d: %llu trials, %llu stale elements (%.2e per trial) [%s]\n",
         iters, warm, SEEN ? "before" : "after ", form, warps - 1, scratch_bytes, fence, active, h[1], h[0], h[1] ? (double)h[0] / h[1] : 0.0, cudaGetErrorString(e));
  cudaFree(out); cudaFree(res);
}

int main(int argc, char** argv) {
  double s = argc > 1 ? atof(argv[1]) : 1.0;
  cudaDeviceProp p; cudaGetDeviceProperties(&p, 0); printf("%s\n", p.name);
  for (int w : {1, 4, 8, 16}) run<1, 0>("scalar", w, 16384, 0, 2, s, 200, 0);
  run<0, 0>("v4", 8, 16384, 0, 2, s, 200, 0);
  run<1, 0>("scalar", 8, 16384, 0, 2, s, 1, 1);
  run<1, 1>("scalar", 8, 16384, 0, 2, s, 200, 0);
  run<1, 0>("scalar", 8, 16384, 1, 2, s, 200, 0);
  return 0;
}
