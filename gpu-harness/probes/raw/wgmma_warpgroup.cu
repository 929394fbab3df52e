// Probe (raw CUDA, not generated): does one warp of a warpgroup get past its
// `wgmma.mma_async` + `commit_group` + `wait_group 0` before another warp of the same warpgroup
// has issued its part of that `wgmma`? And if so, can it change the shared-memory operand the
// late warp's part then reads?
//
// The shape of ThunderKittens' H100 attention consumers (issue 23; kernels/attention/mha_h100/
// mha_h100.cu at HazyResearch/ThunderKittens 0b55588d2769dde0c7a9a606ffc015b0ca7a9551): after
// its own `wgmma.wait_group`, lane 0 of the warpgroup's first warp releases the K/V stage, and
// the producer refills it. The ISA says each of these instructions makes "the executing thread
// ... wait until all threads in the warp execute the same" instruction (`.sync`), and that "all
// threads in the warpgroup must execute the same" one (`.aligned`, a requirement on the
// program); `wgmma.commit_group` "creates a new wgmma-group per warpgroup and batches all prior
// wgmma.mma_async instructions initiated by the executing warp", and `wgmma.wait_group` waits
// until "all the prior wgmma-groups committed by the executing threads are complete". Whether a
// warp's wait covers the parts the other warps have not yet issued is not said.
//
// Each trial is one block of 128 threads (one warpgroup). A (64x16) and B (16x8) bf16 tiles in
// shared memory hold 1.0, so every element of D = A*B is 16. One warp (LATE = 1, 2 or 3, or
// none) spins DELAY_NS on %globaltimer before it enters the wgmma sequence. Warp 0, after its
// `wait_group 0`, overwrites B with 2.0 (generic stores, then `fence.proxy.async`, as a refill
// through the generic proxy would). A late warp whose part read B after that gets 32 (or 24 if
// one k-half was read before), and its timestamps show when it issued relative to warp 0's
// return from the wait. Warps 0..3 record %globaltimer after each instruction (lane 0).
//
// Build and run on an sm_90a machine (scripts/gpu-check.sh part PROBES builds every raw probe):
//   nvcc -gencode arch=compute_90a,code=sm_90a -O2 -o wgmma_warpgroup wgmma_warpgroup.cu && ./wgmma_warpgroup
// Results and their reading: docs/gpu.md, "Warpgroup convergence of wgmma".
#include <cstdint>
#include <cstdio>
#include <cstdlib>

__device__ __forceinline__ uint32_t sm(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }
__device__ __forceinline__ uint64_t now() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)::"memory");
  return t;
}
// A no-swizzle (interleaved) shared-memory matrix descriptor: start address, leading and
// stride byte offsets, each in 16-byte units (PTX ISA, "Matrix Descriptor Format"). Every
// element of the tiles is the same value, so the exact layout does not matter; the offsets
// keep every read inside its tile.
__device__ __forceinline__ uint64_t desc(uint32_t addr, uint32_t lbo, uint32_t sbo) {
  return (uint64_t)((addr >> 4) & 0x3FFF) | ((uint64_t)((lbo >> 4) & 0x3FFF) << 16) |
         ((uint64_t)((sbo >> 4) & 0x3FFF) << 32);
}

enum { TIMES = 5 };  // per warp: entered, after mma_async, after commit (and the pos-1 delay), after wait, after B store

struct Trial {
  float d[128][4];          // every thread's four accumulators
  uint64_t t[4][TIMES];     // per warp (lane 0)
};

__device__ __forceinline__ void spin(uint32_t ns) {
  const uint64_t until = now() + ns;
  while (now() < until) {
  }
}

// `pos`: where the late warp waits DELAY_NS: 0 before `wgmma.fence` (it enters the sequence
// late), 1 between `commit_group` and `wait_group` (it has issued its part, and reaches the
// wait late).
__global__ void __launch_bounds__(128) probe(Trial* out, int late, uint32_t delay_ns, int pos) {
  __shared__ __align__(128) uint16_t a[64 * 16 * 2];  // twice the tile: room for the offsets
  __shared__ __align__(128) uint16_t b[16 * 8 * 4];
  const uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (uint32_t i = threadIdx.x; i < sizeof(a) / 2; i += 128) a[i] = 0x3F80;  // bf16 1.0
  for (uint32_t i = threadIdx.x; i < sizeof(b) / 2; i += 128) b[i] = 0x3F80;
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  Trial& tr = out[blockIdx.x];
  if ((int)warp == late && pos == 0) spin(delay_ns);
  __syncwarp();
  const uint64_t t_enter = now();
  float d0 = 0.f, d1 = 0.f, d2 = 0.f, d3 = 0.f;
  const uint64_t da = desc(sm(a), 128, 256), db = desc(sm(b), 128, 256);
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0, %1, %2, %3}, %4, %5, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
      : "l"(da), "l"(db), "r"(0)
      : "memory");
  const uint64_t t_mma = now();
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
  if ((int)warp == late && pos == 1) spin(delay_ns);
  __syncwarp();
  const uint64_t t_commit = now();
  asm volatile("wgmma.wait_group.sync.aligned 0;" : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)::"memory");
  const uint64_t t_wait = now();
  uint64_t t_store = 0;
  if (warp == 0) {
    // The "refill": B becomes 2.0, published to the async proxy.
    for (uint32_t i = lane; i < sizeof(b) / 2; i += 32) b[i] = 0x4000;
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    t_store = now();
  }
  tr.d[threadIdx.x][0] = d0;
  tr.d[threadIdx.x][1] = d1;
  tr.d[threadIdx.x][2] = d2;
  tr.d[threadIdx.x][3] = d3;
  if (lane == 0) {
    tr.t[warp][0] = t_enter;
    tr.t[warp][1] = t_mma;
    tr.t[warp][2] = t_commit;
    tr.t[warp][3] = t_wait;
    tr.t[warp][4] = t_store;
  }
}

int main(int argc, char** argv) {
  const int blocks = 264, launches = argc > 1 ? atoi(argv[1]) : 100;
  const uint32_t delays[] = {0, 2000, 20000};
  Trial* dev;
  if (cudaMalloc(&dev, sizeof(Trial) * blocks) != cudaSuccess) {
    printf("cudaMalloc failed\n");
    return 1;
  }
  Trial* host = (Trial*)malloc(sizeof(Trial) * blocks);
  printf("wgmma_warpgroup: %d launches x %d blocks per variant\n", launches, blocks);
  for (int pos = 0; pos <= 1; ++pos)
  for (int late = -1; late <= 3; ++late) {
    if (late == 0) continue;  // warp 0 is the writer
    if (pos == 1 && late < 0) continue;
    for (uint32_t delay : delays) {
      if (late < 0 && delay) continue;
      long trials = 0, late_saw_new = 0, late_mixed = 0, others_wrong = 0, ran_ahead = 0;
      double ahead_ns = 0;
      for (int l = 0; l < launches; ++l) {
        probe<<<blocks, 128>>>(dev, late, delay, pos);
        cudaError_t e = cudaDeviceSynchronize();
        if (e != cudaSuccess) {
          printf("launch failed: %s\n", cudaGetErrorString(e));
          return 1;
        }
        cudaMemcpy(host, dev, sizeof(Trial) * blocks, cudaMemcpyDeviceToHost);
        for (int bl = 0; bl < blocks; ++bl) {
          const Trial& tr = host[bl];
          ++trials;
          for (int w = 0; w < 4; ++w) {
            bool any32 = false, any16 = false, other = false;
            for (int i = w * 32; i < w * 32 + 32; ++i)
              for (int j = 0; j < 4; ++j) {
                const float v = tr.d[i][j];
                if (v == 16.f) any16 = true;
                else if (v == 32.f || v == 24.f) any32 = true;
                else other = true;
              }
            if (w == late) {
              if (any32 && !any16 && !other) ++late_saw_new;
              else if (any32 || other) ++late_mixed;
            } else if (any32 || other) {
              ++others_wrong;
            }
          }
          // pos 0: warp 0 back from its wait before the late warp entered the sequence;
          // pos 1: before the late warp was back from its delay after commit_group.
          const uint64_t mark = pos == 0 ? tr.t[late > 0 ? late : 0][0] : tr.t[late > 0 ? late : 0][2];
          if (late > 0 && tr.t[0][3] < mark) {
            ++ran_ahead;
            ahead_ns += (double)(mark - tr.t[0][3]);
          }
        }
      }
      printf("pos=%d late=%d delay=%uns trials=%ld warp0_wait_done_before_late_got_there=%ld (mean lead %.0f ns) "
             "late_read_new_B=%ld late_mixed=%ld other_warps_not_16=%ld\n",
             pos, late, delay, trials, ran_ahead, ran_ahead ? ahead_ns / ran_ahead : 0.0, late_saw_new,
             late_mixed, others_wrong);
      if (late > 0 && delay == delays[2]) {
        const Trial& tr = host[0];
        printf("  last launch, block 0, ns after warp 0 entered: ");
        for (int w = 0; w < 4; ++w) {
          printf(" w%d[", w);
          for (int k = 0; k < TIMES; ++k)
            printf("%s%lld", k ? " " : "", tr.t[w][k] ? (long long)(tr.t[w][k] - tr.t[0][0]) : -1LL);
          printf("]");
        }
        printf("  late warp d[0]=%g\n", tr.d[late * 32][0]);
      }
    }
  }
  cudaFree(dev);
  free(host);
  return 0;
}
