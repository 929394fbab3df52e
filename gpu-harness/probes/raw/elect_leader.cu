// Probe (docs/gpu.md, "Which lane elect.sync elects"): build with `nvcc -arch=sm_90a -O2 -o probe elect_leader.cu`.
// Which lane does elect.sync pick? For each of several member masks (and, for each, with the
// low lanes exited first), every lane of the mask runs elect.sync and records the leader.
#include <cstdio>
#include <cstdint>
__global__ void probe(const unsigned* masks, int nmasks, int* out) {
  int lane = threadIdx.x % 32;
  for (int m = 0; m < nmasks; ++m) {
    unsigned mask = masks[m];
    if (mask & (1u << lane)) {
      unsigned leader; unsigned pred;
      asm volatile("{ .reg .pred p; elect.sync %0|p, %2; selp.u32 %1, 1, 0, p; }"
                   : "=r"(leader), "=r"(pred) : "r"(mask));
      if (pred) out[m] = lane;
      out[64 + m * 32 + lane] = leader;
    }
    __syncwarp();
  }
}
int main() {
  unsigned h[] = {0xffffffffu, 0xfffffffeu, 0x80000000u, 0x0000ff00u, 0xf0f0f0f0u, 0x00010001u, 0x7ffffffcu, 0xaaaaaaaau};
  int n = sizeof(h) / sizeof(h[0]);
  unsigned* dm; int* dout;
  cudaMalloc(&dm, sizeof(h)); cudaMalloc(&dout, (64 + 32 * n) * sizeof(int));
  cudaMemcpy(dm, h, sizeof(h), cudaMemcpyHostToDevice);
  cudaMemset(dout, 0xff, (64 + 32 * n) * sizeof(int));
  int all_agree = 1;
  for (int rep = 0; rep < 1000; ++rep) {
    probe<<<1, 32>>>(dm, n, dout);
    int out[64 + 32 * 8];
    cudaMemcpy(out, dout, sizeof(out), cudaMemcpyDeviceToHost);
    for (int m = 0; m < n; ++m) {
      int lowest = __builtin_ctz(h[m]);
      for (int l = 0; l < 32; ++l)
        if ((h[m] >> l & 1) && out[64 + m * 32 + l] != out[m]) all_agree = 0;
      if (rep == 0) printf("mask %08x: elected lane %d (lowest member %d)\n", h[m], out[m], lowest);
      if (out[m] != lowest) { printf("rep %d mask %08x: elected %d, not the lowest %d\n", rep, h[m], out[m], lowest); }
    }
  }
  cudaError_t e = cudaDeviceSynchronize();
  printf("1000 launches, every member saw the same leader: %s; %s\n", all_agree ? "yes" : "no", cudaGetErrorString(e));
  return 0;
}
