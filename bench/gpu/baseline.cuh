// bench/gpu/baseline.cuh: the hand-written CUDA double-buffer kernel that the generated stress
// kernel is timed against (`phasecheck fuzz ... --baseline bench/gpu/baseline.cuh`,
// scripts/gpu-check.sh part BENCH, docs/gpu.md "Throughput"). It is the protocol of
// corpus/guide/double_buffer.phase (= gpu-harness/tests/fixtures/double_buffer.phase) written
// directly in CUDA with inline PTX mbarriers; the result is reported as a ratio of barrier
// phases per second, generated / baseline, measured in one run with the same blocks and delays.
//
// Hand-written baseline: the double-buffer protocol (one producer thread, blockDim-32 consumer
// threads, 2 stages, parity waits on PTX mbarriers), with random delays and bounded waits.
// Used to compare the throughput of generated stress kernels against hand-written code.
__device__ __forceinline__ unsigned smem_addr(const void* p){ return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void mb_init(unsigned long long* b, unsigned c){
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(smem_addr(b)), "r"(c) : "memory"); }
__device__ __forceinline__ void mb_arrive(unsigned long long* b){
  asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];" :: "r"(smem_addr(b)) : "memory"); }
__device__ __forceinline__ unsigned mb_try_parity(unsigned long long* b, unsigned par){
  unsigned ok;
  asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
    : "=r"(ok) : "r"(smem_addr(b)), "r"(par) : "memory");
  return ok; }
__device__ __forceinline__ unsigned xorshift(unsigned &s){ s ^= s << 13; s ^= s >> 17; s ^= s << 5; return s; }
__device__ __forceinline__ int wait_parity_bounded(unsigned long long* b, unsigned par, long long budget){
  long long t0 = clock64();
  while(!mb_try_parity(b, par)){ if(clock64() - t0 > budget) return 1; }
  return 0; }

// One block = one independent trial. Counters: hangs (bounded waits that expired), races (stale
// stage contents seen by a consumer), done (threads that finished).
extern "C" __global__ void baseline_double_buffer(unsigned iters, unsigned seed, long long budget,
    unsigned maxdelay_ns, unsigned* hangs, unsigned* races, unsigned long long* done){
  __shared__ unsigned long long full[2], empty[2];
  __shared__ unsigned stage[2][32];
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const unsigned consumers = blockDim.x - 32;
  unsigned s = seed ^ (blockIdx.x * 0x9E3779B9u) ^ (tid * 0x85EBCA6Bu); if(!s) s = 1;
  if(tid == 0){ for(int i = 0; i < 2; i++){ mb_init(&full[i], 1); mb_init(&empty[i], consumers); } }
  __syncthreads();
  if(warp == 0){
    if(lane != 0) return;
    for(unsigned k = 0; k < iters; k++){
      unsigned st = k & 1, ph = (k >> 1) & 1;
      if(wait_parity_bounded(&empty[st], ph ^ 1, budget)){ atomicAdd(hangs, 1); return; }
      if(maxdelay_ns) __nanosleep(xorshift(s) % maxdelay_ns);
      for(int j = 0; j < 32; j++) stage[st][j] = k;
      mb_arrive(&full[st]);
    }
  } else {
    for(unsigned k = 0; k < iters; k++){
      unsigned st = k & 1, ph = (k >> 1) & 1;
      if(wait_parity_bounded(&full[st], ph, budget)){ atomicAdd(hangs, 1); return; }
      if(stage[st][lane] != k) atomicAdd(races, 1);
      if(maxdelay_ns) __nanosleep(xorshift(s) % maxdelay_ns);
      mb_arrive(&empty[st]);
    }
  }
  atomicAdd(done, 1ull);
}
