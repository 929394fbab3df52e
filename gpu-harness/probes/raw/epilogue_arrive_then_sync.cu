// Probe (raw CUDA, not generated): FlashInfer's sm90 epilogue, where the same 256 threads
// `bar.arrive` and later `bar.sync` one named barrier of count 256, between their writes of an
// output tile to shared memory and their reads of the whole tile back (issue 23; the shape of
// flashinfer/data/include/flashinfer/attention/hopper/epilogue.cuh:171 and :199 of
// `flashinfer-python` 0.7.2.post1: `NamedBarrier::arrive(NUM_MMA_THREADS, EpilogueBarrier)`,
// then `NamedBarrier::sync(NUM_MMA_THREADS, EpilogueBarrier)`, NUM_MMA_THREADS = 256).
//
// The ISA counts arrivals per warp and lets a warp arrive twice: "Care must be taken to keep a
// warp from executing more barrier{.cta} instructions than intended (barrier{.cta}.arrive
// followed by any other barrier{.cta} instruction to the same barrier) prior to the reset of
// the arrival counter" ([PTX] barrier{.cta}); named_barrier_rearrive.cu shape A showed both
// instructions counted on an H200. Then one warp group's 4 arrives and 4 syncs make the 256 alone,
// and its reads of the other group's rows are not ordered after that group's writes.
//
// Each block has 256 threads, two warp groups (WG0: tid 0..127, WG1: 128..255), and repeats:
//   bar.sync 1, 256                      (FlashInfer's kValueEmpty: every thread is here)
//   [WG1 only, one iteration in PERIOD: spin DELAY_NS]
//   each thread writes its 4 words of the tile (the iteration's value)
//   bar.arrive 2, 256                    (EpilogueBarrier)
//   bar.sync 2, 256                      (EpilogueBarrier)
//   each thread reads the 4 words of the thread 128 away (the other warp group's rows) and
//   counts words that are not this iteration's value
// Variants: `arrive+sync` (FlashInfer's), and the control `sync only` (the arrive left out: one
// use of 256 arrivals, which needs both groups). Each is run with no skew (both groups run the
// same instructions), with a skew of one integer remainder that only WG1 computes (a few dozen
// cycles), and with that remainder deciding a 500 ns or 2 us spin of WG1 one iteration in four.
//
// Build and run on an sm_90a machine (scripts/gpu-check.sh part PROBES builds every raw probe):
//   nvcc -gencode arch=compute_90a,code=sm_90a -O2 -o epilogue_arrive_then_sync epilogue_arrive_then_sync.cu && ./epilogue_arrive_then_sync
// Results and their reading: docs/gpu.md, "FlashInfer's epilogue barrier".
#include <cstdint>
#include <cstdio>

__device__ __forceinline__ uint64_t now() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)::"memory");
  return t;
}

__device__ __forceinline__ void spin(uint32_t ns) {
  const uint64_t until = now() + ns;
  while (now() < until) {
  }
}

enum { TRACE = 12 };

// res[0]: stale words read, res[1]: iterations with at least one stale word (per thread),
// res[2]: words read.
template <bool ARRIVE_FIRST>
__global__ void epilogue(unsigned long long* res, unsigned* trace, int iters, bool skew,
                         uint32_t delay_ns, int period) {
  __shared__ uint32_t tile[256 * 4];
  const int tid = threadIdx.x;
  const int wg = tid / 128;
  unsigned long long stale = 0, stale_iters = 0;
  for (int it = 1; it <= iters; ++it) {
    const uint32_t v = (uint32_t)it * 2654435761u ^ blockIdx.x;
    asm volatile("bar.sync 1, 256;" ::: "memory");
    // With `skew`, WG1 computes an integer remainder (a few dozen cycles) that WG0 skips.
    if (wg == 1 && skew && it % period == 0) spin(delay_ns);
    for (int k = 0; k < 4; ++k) ((volatile uint32_t*)tile)[tid * 4 + k] = v;
    if (ARRIVE_FIRST) asm volatile("bar.arrive 2, 256;" ::: "memory");
    asm volatile("bar.sync 2, 256;" ::: "memory");
    const int other = (tid + 128) % 256;
    unsigned long long bad = 0;
    for (int k = 0; k < 4; ++k)
      if (((volatile uint32_t*)tile)[other * 4 + k] != v) bad++;
    stale += bad;
    stale_iters += bad != 0;
    // Block 0's first TRACE iterations: stale words seen by each warp group.
    if (blockIdx.x == 0 && it <= TRACE && bad) atomicAdd(&trace[(it - 1) * 2 + wg], (unsigned)bad);
  }
  atomicAdd(&res[0], stale);
  atomicAdd(&res[1], stale_iters);
  atomicAdd(&res[2], (unsigned long long)iters * 4);
}

int main() {
  cudaDeviceProp p;
  cudaGetDeviceProperties(&p, 0);
  printf("%s\n", p.name);
  unsigned long long* d;
  cudaMalloc(&d, 3 * sizeof(unsigned long long));
  unsigned* trace;
  cudaMalloc(&trace, 2 * TRACE * sizeof(unsigned));
  const int blocks = 2 * p.multiProcessorCount, iters = 20000, period = 4;
  // {skew, delay}: no skew; the remainder only; the remainder and a 500 ns or 2 us spin.
  const struct { bool skew; uint32_t delay; } runs[] = {{false, 0}, {true, 0}, {true, 500}, {true, 2000}};
  for (int variant = 0; variant < 2; ++variant) {
    for (auto run : runs) {
      const bool skew = run.skew;
      const uint32_t delay = run.delay;
      unsigned long long h[3] = {0, 0, 0};
      unsigned t[2 * TRACE];
      cudaMemset(d, 0, 3 * sizeof(unsigned long long));
      cudaMemset(trace, 0, sizeof t);
      if (variant == 0)
        epilogue<true><<<blocks, 256>>>(d, trace, iters, skew, delay, period);
      else
        epilogue<false><<<blocks, 256>>>(d, trace, iters, skew, delay, period);
      cudaError_t e = cudaDeviceSynchronize();
      cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
      cudaMemcpy(t, trace, sizeof t, cudaMemcpyDeviceToHost);
      printf("%-12s %s, WG1 spin %4u ns 1 in %d: %llu stale words of %llu read, %llu thread-iterations with a stale word [%s]\n",
             variant == 0 ? "arrive+sync" : "sync only", skew ? "skew   " : "no skew", delay, period, h[0], h[2], h[1],
             cudaGetErrorString(e));
      printf("    block 0, iterations 1..%d, stale words seen by WG0/WG1:", TRACE);
      for (int i = 0; i < TRACE; ++i) printf(" %u/%u", t[2 * i], t[2 * i + 1]);
      printf("\n");
    }
  }
  return 0;
}
