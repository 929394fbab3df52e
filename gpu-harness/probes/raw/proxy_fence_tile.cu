// Probe (raw CUDA, not generated): can the async proxy (a TMA store) read shared memory that
// the generic proxy wrote before a barrier, when no fence.proxy.async orders them?
// Each block, each iteration: threads write a tile with the store form MODE, barrier, thread 0
// bulk-stores the tile to global (cp.async.bulk.global.shared::cta), waits for it, everybody
// checks every word; a stale word that stays stale was read stale by the copy engine.
// Build and run on an sm_90 machine (scripts/gpu-check.sh part PROBES does):
//   nvcc -arch=sm_90a -O2 -o proxy_fence_tile proxy_fence_tile.cu && ./proxy_fence_tile 1.0
// Results and their reading: docs/gpu.md "Proxy fences".
#include <cstdio>
#include <cstdint>
#include <cstdlib>
__device__ __forceinline__ uint32_t sm(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }
__device__ __forceinline__ uint32_t cluster_rank() { uint32_t r; asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r)); return r; }

// FENCE: 0 none, 1 every writer fences before the barrier (CUTLASS, FA3), 2 only the issuing
// thread fences, after the barrier and before the copy (ThunderKittens' epilogue).
template <int MODE, int FENCE>
__global__ void __launch_bounds__(256) probe(uint32_t* out, unsigned long long* res, int iters, int bytes, int salt) {
  extern __shared__ __align__(128) uint32_t tile[];
  const int words = bytes / 4;
  const bool cl = (MODE == 2);
  const uint32_t rank = cl ? cluster_rank() : 0;
  const int grp = cl ? blockIdx.x / 2 : blockIdx.x;
  uint32_t* g = out + (size_t)grp * words;
  uint32_t remote = 0;
  if (cl) { asm volatile("mapa.shared::cluster.u32 %0, %1, 0;" : "=r"(remote) : "r"(sm(tile))); }
  for (int it = 1; it <= iters; ++it) {
    const uint32_t v = ((uint32_t)grp * 2654435761u) ^ ((uint32_t)it * 40503u) ^ (uint32_t)salt;
    if (MODE == 0) {
      for (int i = threadIdx.x * 4; i < words; i += blockDim.x * 4)
        asm volatile("st.shared.v4.u32 [%0], {%1,%1,%1,%1};" :: "r"(sm(&tile[i])), "r"(v) : "memory");
    } else if (MODE == 1) {
      for (int i = threadIdx.x; i < words; i += blockDim.x)
        asm volatile("atom.shared.exch.b32 _, [%0], %1;" :: "r"(sm(&tile[i])), "r"(v) : "memory");
    } else if (MODE == 2) {
      if (rank == 1)
        for (int i = threadIdx.x * 4; i < words; i += blockDim.x * 4)
          asm volatile("st.shared::cluster.v4.u32 [%0], {%1,%1,%1,%1};" :: "r"(remote + 4u * i), "r"(v) : "memory");
    } else if (MODE == 3) {
      for (int i = threadIdx.x * 4; i < words; i += blockDim.x * 4)
        asm volatile("st.v4.u32 [%0], {%1,%1,%1,%1};" :: "l"(&tile[i]), "r"(v) : "memory");
    } else if (MODE == 5) {  // one thread of warp 1 writes the whole tile, the first word last
      if (threadIdx.x == 32) {
        for (int i = 1; i < words; i++) ((volatile uint32_t*)tile)[i] = v;
        ((volatile uint32_t*)tile)[0] = v;
      }
    } else if (MODE == 6) {  // warp 1 only: 16 bytes a lane
      if (threadIdx.x >= 32 && threadIdx.x < 64)
        for (int i = (threadIdx.x - 32) * 4; i < words; i += 32 * 4)
          asm volatile("st.shared.v4.u32 [%0], {%1,%1,%1,%1};" :: "r"(sm(&tile[i])), "r"(v) : "memory");
    } else {  // MODE 4: the issuing thread writes the whole tile itself, right before the store
      if (threadIdx.x == 0)
        for (int i = 0; i < words; i += 4)
          asm volatile("st.shared.v4.u32 [%0], {%1,%1,%1,%1};" :: "r"(sm(&tile[i])), "r"(v) : "memory");
    }
    if (FENCE == 1) {
      if (cl) asm volatile("fence.proxy.async.shared::cluster;" ::: "memory");
      else asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    }
    if (cl) { asm volatile("barrier.cluster.arrive.release.aligned; barrier.cluster.wait.acquire.aligned;" ::: "memory"); }
    else if (MODE != 4) __syncthreads();
    if (threadIdx.x == 0 && rank == 0) {
      if (FENCE == 2) asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
      asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" :: "l"(g), "r"(sm(tile)), "r"(bytes) : "memory");
      asm volatile("cp.async.bulk.commit_group;" ::: "memory");
      asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
      asm volatile("fence.proxy.async.global;" ::: "memory");
    }
    if (cl) { asm volatile("barrier.cluster.arrive.release.aligned; barrier.cluster.wait.acquire.aligned;" ::: "memory"); }
    else __syncthreads();
    if (rank == 0) {
      unsigned long long bad = 0, late = 0;
      for (int i = threadIdx.x; i < words; i += blockDim.x) {
        uint32_t r = ((volatile uint32_t*)g)[i];
        if (r != v) {
          bad++;
          if (MODE == 0 || MODE == 3) atomicAdd(&res[3 + ((i / 4) % blockDim.x) / 32], 1ull);
          for (int k = 0; k < 1000 && r != v; k++) { __nanosleep(100); r = ((volatile uint32_t*)g)[i]; }
          if (r == v) late++;
        }
      }
      if (bad) { atomicAdd(&res[0], bad); atomicAdd(&res[1], late); }
    }
    if (cl) { asm volatile("barrier.cluster.arrive.release.aligned; barrier.cluster.wait.acquire.aligned;" ::: "memory"); }
    else __syncthreads();
  }
  if (threadIdx.x == 0 && rank == 0) atomicAdd(&res[2], (unsigned long long)iters);
}

template <int MODE, int FENCE>
void run(const char* name, int bytes, int threads, double seconds) {
  auto k = probe<MODE, FENCE>;
  cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024);
  int blocks = 132 * 4 * (MODE == 2 ? 2 : 1);
  uint32_t* out; unsigned long long* res;
  cudaMalloc(&out, (size_t)blocks * bytes);
  cudaMalloc(&res, 11 * sizeof(unsigned long long));
  cudaMemset(res, 0, 88);
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  double spent = 0; int salt = 1;
  cudaEventRecord(a);
  while (spent < seconds) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = blocks; cfg.blockDim = threads; cfg.dynamicSmemBytes = bytes;
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = MODE == 2 ? 2 : 1; at[0].val.clusterDim.y = 1; at[0].val.clusterDim.z = 1;
    cfg.attrs = at; cfg.numAttrs = 1;
    cudaError_t e = cudaLaunchKernelEx(&cfg, k, out, res, 200, bytes, salt++);
    if (e != cudaSuccess) { printf("%s: launch %s\n", name, cudaGetErrorString(e)); return; }
    cudaEventRecord(b); cudaEventSynchronize(b);
    float ms; cudaEventElapsedTime(&ms, a, b); spent = ms / 1000.0;
  }
  cudaError_t e = cudaDeviceSynchronize();
  unsigned long long h[11]; cudaMemcpy(h, res, 88, cudaMemcpyDeviceToHost);
  printf("%-36s bytes %6d threads %3d: %llu tile stores, %llu stale words (%llu became visible later) by writer warp [%llu %llu %llu %llu %llu %llu %llu %llu] [%s]\n",
         name, bytes, threads, h[2], h[0], h[1], h[3], h[4], h[5], h[6], h[7], h[8], h[9], h[10], cudaGetErrorString(e));
  cudaFree(out); cudaFree(res);
}

int main(int argc, char** argv) {
  double s = argc > 1 ? atof(argv[1]) : 1.0;
  cudaDeviceProp p; cudaGetDeviceProperties(&p, 0); printf("%s\n", p.name);
  if (argc > 2 && argv[2][0] == 'i') {  // "issuer": the fence only in the issuing thread, after the barrier
    for (int bytes : {256, 1024, 4096}) {
      run<0, 0>("st.shared.v4, no fence", bytes, 256, s);
      run<0, 2>("st.shared.v4, issuer fences after barrier", bytes, 256, s);
      run<0, 1>("st.shared.v4, writers fence (control)", bytes, 256, s);
      run<6, 2>("warp 1 only, issuer fences after barrier", bytes, 64, s);
    }
    run<5, 2>("t32 alone, scalar, issuer fences after", 144, 64, s);
    return 0;
  }
  for (int bytes : {256, 1024, 4096}) {
    run<0, 0>("st.shared.v4, no fence", bytes, 256, s);
    run<0, 1>("st.shared.v4, fence (control)", bytes, 256, s);
    run<0, 0>("st.shared.v4, 64 threads, no fence", bytes, 64, s);
    run<5, 0>("t32 alone, scalar, no fence", bytes, 64, s);
    run<6, 0>("warp 1 only, no fence", bytes, 64, s);
    run<6, 1>("warp 1 only, fence (control)", bytes, 64, s);
  }
  run<4, 0>("issuer's own st.shared.v4, no fence", 1024, 32, s);
  run<2, 0>("remote st.shared::cluster, no fence", 1024, 256, s);
  run<3, 0>("generic st.v4, no fence", 1024, 256, s);
  run<1, 0>("atom.shared.exch, no fence", 1024, 256, s);
  run<5, 0>("t32 alone, scalar, no fence", 144, 64, s);
  run<5, 1>("t32 alone, scalar, fence (control)", 144, 64, s);
  return 0;
}
