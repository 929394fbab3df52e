// Probe (raw CUDA, not generated): does a warp-converged (.sync.aligned / .sync) instruction
// order the lanes' earlier shared-memory reads before lane 0's later mbarrier arrive?
// The shape of DeepGEMM's sm90 FP8 GEMM math warps (issue 23 point 7): every lane reads a
// word with a plain ld.shared, the warp meets at a converged instruction, lane 0 releases the
// stage (mbarrier.arrive), and the producer warp, after waiting on that barrier, overwrites
// the word (a generic store, or a TMA bulk copy). A read that returns the new value was
// performed after lane 0's release: the converged instruction did not order it.
// The ISA says bar.warp.sync orders memory among its lanes, and nothing of the kind for the
// other converged instructions (docs/semantics.md W9), so this asks the hardware.
// Each trial: lanes sleep a random time (0..255 ns, so they reach the read apart), read their
// word (all 32 words in one bank: a 32-way bank conflict keeps the read long in flight), meet
// at the converged instruction, lane 0 arrives. The read's value is looked at only after the
// arrive. Warps 2 and 3 store to a scratch area meanwhile (pressure on the shared-memory pipe).
// Controls: CONV 0 puts lane 0's arrive on a path of its own, before the other lanes' reads
// (the race the checker must keep); MP variants ask the write->read direction among lanes.
// Build and run on an sm_90 machine (scripts/gpu-check.sh part PROBES does):
//   nvcc -gencode arch=compute_90a,code=sm_90a -O2 -o warp_converged warp_converged.cu && ./warp_converged 1.0
// (wgmma.fence needs sm_90a code; CUDA 13.0's nvcc with -arch=sm_90a assembled compute_90 PTX
// for it and ptxas refused the wgmma instructions, 2026-11-27)
// Results and their reading: docs/gpu.md "Warp-converged instructions".
#include <cstdint>
#include <cstdio>
#include <cstdlib>

__device__ __forceinline__ uint32_t sm(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }
__device__ __forceinline__ uint32_t hash(uint32_t x) {
  x ^= x >> 16; x *= 0x7feb352du; x ^= x >> 15; x *= 0x846ca68bu; x ^= x >> 16;
  return x;
}
// A bounded wait (a watchdog: a probe that hangs tells nothing); false when it gave up.
__device__ __forceinline__ bool wait_parity(uint32_t bar, uint32_t parity) {
  for (uint32_t i = 0; i < (1u << 22); ++i) {
    uint32_t ok;
    asm volatile(
        "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
        : "=r"(ok) : "r"(bar), "r"(parity) : "memory");
    if (ok) return true;
  }
  return false;
}

enum { OLD = 1u, NEW = 2u };

// CONV: 0 control (lane 0 arrives on its own path before the others read), 1 shfl.sync,
// 2 bar.warp.sync, 3 vote.sync.ballot, 4 wgmma.fence + commit_group + wait_group 0 (the
// instructions around DeepGEMM's WGMMAs), 5 no converged instruction (the read, then lane 0's
// arrive, in straight-line code). REFILL: 0 generic stores by the producer warp, 1 a TMA bulk copy.
template <int CONV, int REFILL>
__global__ void __launch_bounds__(128) war_probe(const uint32_t* src, unsigned long long* res, int iters, uint32_t salt) {
  __shared__ __align__(128) uint32_t data[32 * 32];
  __shared__ __align__(16) uint32_t scratch[64 * 32];
  __shared__ __align__(8) uint64_t bars[2];
  const uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const uint32_t empty = sm(&bars[0]), full = sm(&bars[1]);
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(empty) : "memory");
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(full) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  unsigned long long seen_new = 0, reads = 0, gave_up = 0;
  for (int t = 0; t < iters; ++t) {
    if (warp == 1) {
      asm volatile("st.shared.u32 [%0], %1;" :: "r"(sm(&data[lane * 32])), "r"((uint32_t)OLD) : "memory");
      if (REFILL == 1) asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    }
    __syncthreads();
    const uint32_t r = hash(salt ^ (blockIdx.x * 977u) ^ ((uint32_t)t * 7919u) ^ (threadIdx.x * 131u));
    uint32_t v = 0, x = r;  // x: an operand unrelated to v, so nothing waits for the load's result
    const uint32_t addr = sm(&data[lane * 32]);
    if (warp == 0) {
      if (CONV == 0) {
        if (lane == 0) {
          asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];" :: "r"(empty) : "memory");
        } else {
          __nanosleep(r % 256);
          asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(addr) : "memory");
        }
      } else {
        __nanosleep(r % 256);
        asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(addr) : "memory");
        if (CONV == 1) {
          asm volatile("shfl.sync.idx.b32 %0, %0, 0, 31, 0xffffffff;" : "+r"(x) :: "memory");
        } else if (CONV == 2) {
          asm volatile("bar.warp.sync 0xffffffff;" ::: "memory");
        } else if (CONV == 3) {
          asm volatile("{ .reg .pred p; setp.ne.u32 p, %0, 0; vote.sync.ballot.b32 %0, p, 0xffffffff; }" : "+r"(x) :: "memory");
        }
      }
    }
    if (CONV == 4) {
      // wgmma.* are .aligned over the warpgroup: warps 0..3 all run them, here, together
      // (warp 0 after its read, warp 1 before its wait, warps 2 and 3 before their stores).
      asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
      asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
      asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    }
    if (warp == 0) {
      if (CONV != 0 && lane == 0) {
        asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];" :: "r"(empty), "r"(x) : "memory");
      }
      if (lane != 0) {
        reads++;
        if (v == NEW) seen_new++;
      }
    } else if (warp == 1) {
      if (!wait_parity(empty, (uint32_t)t & 1)) gave_up++;
      if (REFILL == 0) {
        asm volatile("st.shared.u32 [%0], %1;" :: "r"(sm(&data[lane * 32])), "r"((uint32_t)NEW) : "memory");
      } else if (lane == 0) {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 4096;" :: "r"(full) : "memory");
        asm volatile(
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], 4096, [%2];"
            :: "r"(sm(data)), "l"(src), "r"(full) : "memory");
        if (!wait_parity(full, (uint32_t)t & 1)) gave_up++;
      }
    } else {
      for (int i = 0; i < 16; ++i)
        asm volatile("st.shared.v4.u32 [%0], {%1,%1,%1,%1};"
                     :: "r"(sm(&scratch[((threadIdx.x - 64) * 4 + i * 256) % (64 * 32)])), "r"(r) : "memory");
    }
    __syncthreads();
  }
  if (reads) { atomicAdd(&res[0], reads); atomicAdd(&res[1], seen_new); }
  if (gave_up) atomicAdd(&res[2], gave_up);
}

// Write->read among lanes: lanes 1..31 store a word, the warp meets at the converged
// instruction, lane 0 reads all 31 words. CONV 0: no converged instruction (lane 0 reads
// right away, the others sleep first: the control), 1 shfl.sync, 2 bar.warp.sync.
template <int CONV>
__global__ void __launch_bounds__(32) mp_probe(unsigned long long* res, int iters, uint32_t salt) {
  __shared__ __align__(128) uint32_t msg[32 * 32];
  const uint32_t lane = threadIdx.x;
  unsigned long long stale = 0, reads = 0;
  for (int t = 1; t <= iters; ++t) {
    const uint32_t r = hash(salt ^ (blockIdx.x * 977u) ^ ((uint32_t)t * 7919u) ^ (lane * 131u));
    if (lane != 0) {
      __nanosleep(r % 256);
      asm volatile("st.shared.u32 [%0], %1;" :: "r"(sm(&msg[lane * 32])), "r"((uint32_t)t) : "memory");
    }
    uint32_t x = r;
    if (CONV == 1) asm volatile("shfl.sync.idx.b32 %0, %0, 0, 31, 0xffffffff;" : "+r"(x) :: "memory");
    if (CONV == 2) asm volatile("bar.warp.sync 0xffffffff;" ::: "memory");
    if (lane == 0) {
      for (uint32_t l = 1; l < 32; ++l) {
        uint32_t v;
        asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(sm(&msg[l * 32])), "r"(x) : "memory");
        reads++;
        if (v != (uint32_t)t) stale++;
      }
    }
    __syncwarp();
  }
  if (reads) { atomicAdd(&res[0], reads); atomicAdd(&res[1], stale); }
}

template <typename K, typename... A>
void timed(const char* name, K kernel, int threads, double seconds, A... args) {
  const int blocks = 132 * 8;
  unsigned long long* res;
  cudaMalloc(&res, 3 * sizeof(unsigned long long));
  cudaMemset(res, 0, 3 * sizeof(unsigned long long));
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  double spent = 0; uint32_t salt = 1;
  cudaEventRecord(a);
  while (spent < seconds) {
    kernel<<<blocks, threads>>>(args..., res, 256, salt++);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) { printf("%s: launch %s\n", name, cudaGetErrorString(e)); return; }
    cudaEventRecord(b);
    if ((e = cudaEventSynchronize(b)) != cudaSuccess) { printf("%s: %s\n", name, cudaGetErrorString(e)); return; }
    float ms; cudaEventElapsedTime(&ms, a, b); spent = ms / 1000.0;
  }
  cudaError_t e = cudaDeviceSynchronize();
  unsigned long long h[3]; cudaMemcpy(h, res, sizeof h, cudaMemcpyDeviceToHost);
  printf("%-58s %14llu reads, %12llu %s, %llu waits gave up [%s]\n", name, h[0], h[1],
         threads == 32 ? "stale" : "saw the refill", h[2], cudaGetErrorString(e));
  cudaFree(res);
}

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IONBF, 0);
  double s = argc > 1 ? atof(argv[1]) : 1.0;
  const int only = argc > 2 ? atoi(argv[2]) : -1;  // run only the variant of this index
  int idx = 0;
#define VARIANT(...) if (only < 0 || only == idx) { __VA_ARGS__; } idx++
  cudaDeviceProp p; cudaGetDeviceProperties(&p, 0); printf("%s\n", p.name);
  uint32_t* src; cudaMalloc(&src, 4096);
  {
    uint32_t h[1024]; for (auto& w : h) w = NEW;
    cudaMemcpy(src, h, 4096, cudaMemcpyHostToDevice);
  }
  VARIANT(timed("WAR control: lane 0 arrives before the reads, store refill", war_probe<0, 0>, 128, s, (const uint32_t*)src));
  VARIANT(timed("WAR control: lane 0 arrives before the reads, TMA refill", war_probe<0, 1>, 128, s, (const uint32_t*)src));
  VARIANT(timed("WAR no converged instruction, store refill", war_probe<5, 0>, 128, s, (const uint32_t*)src));
  VARIANT(timed("WAR no converged instruction, TMA refill", war_probe<5, 1>, 128, s, (const uint32_t*)src));
  VARIANT(timed("WAR shfl.sync, store refill", war_probe<1, 0>, 128, s, (const uint32_t*)src));
  VARIANT(timed("WAR shfl.sync, TMA refill", war_probe<1, 1>, 128, s, (const uint32_t*)src));
  VARIANT(timed("WAR bar.warp.sync, store refill", war_probe<2, 0>, 128, s, (const uint32_t*)src));
  VARIANT(timed("WAR bar.warp.sync, TMA refill", war_probe<2, 1>, 128, s, (const uint32_t*)src));
  VARIANT(timed("WAR vote.sync, store refill", war_probe<3, 0>, 128, s, (const uint32_t*)src));
  VARIANT(timed("WAR vote.sync, TMA refill", war_probe<3, 1>, 128, s, (const uint32_t*)src));
  VARIANT(timed("WAR wgmma.fence/commit/wait_group, store refill", war_probe<4, 0>, 128, s, (const uint32_t*)src));
  VARIANT(timed("WAR wgmma.fence/commit/wait_group, TMA refill", war_probe<4, 1>, 128, s, (const uint32_t*)src));
  VARIANT(timed("MP control: no converged instruction", mp_probe<0>, 32, s));
  VARIANT(timed("MP shfl.sync", mp_probe<1>, 32, s));
  VARIANT(timed("MP bar.warp.sync", mp_probe<2>, 32, s));
  return 0;
}
