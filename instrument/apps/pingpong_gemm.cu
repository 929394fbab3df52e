// A test application for `phasecheck fuzz --app` (issue 27): our own host program around the
// stock CUTLASS 3.x sm90 Pingpong GEMM (two consumer warp groups taking turns through the
// math order barrier, one producer warp group issuing TMA loads, the TMA-store epilogue),
// bf16 x bf16 -> f32, 64x128x64 tiles, cluster 1x1x1 (with -DCOOPERATIVE_CLUSTER2: the
// Cooperative schedule, 128x128x64 tiles, a 2x1 cluster with TMA multicast). It runs the GEMM ITERS times through
// CUTLASS's GemmUniversalAdapter (cudaLaunchKernelEx underneath) and checks D against a naive
// reference kernel, so that a swapped-in instrumented kernel is seen to compute the same result.
//
//   ./pingpong_gemm M N K ITERS [SMS]   (defaults 512 512 1024 1, SMS: the device's)
//
// SMS caps the persistent grid (CUTLASS's hw_info.sm_count): with fewer blocks than tiles
// each block's two consumer warp groups take turns on several tiles.
//
// Built by build.sh with the headers of the nvidia-cutlass Python package
// (site-packages/cutlass_library/source/include); nothing of CUTLASS is kept in this repository.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#include "cutlass/cutlass.h"
#include "cute/tensor.hpp"
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"

using namespace cute;

using ElementA = cutlass::bfloat16_t;
using ElementB = cutlass::bfloat16_t;
using ElementC = float;
using ElementAccumulator = float;
using LayoutA = cutlass::layout::RowMajor;
using LayoutB = cutlass::layout::ColumnMajor;
using LayoutC = cutlass::layout::ColumnMajor;
#ifdef COOPERATIVE_CLUSTER2
// The second kernel of the test: CUTLASS's Cooperative schedule (both consumer warp groups on
// one 128x128 tile) on a 2x1 cluster, B multicast by TMA to both blocks of the cluster.
using TileShape = Shape<_128, _128, _64>;
using ClusterShape = Shape<_2, _1, _1>;
using MainloopSchedule = cutlass::gemm::KernelTmaWarpSpecializedCooperative;
using EpilogueSchedule = cutlass::epilogue::TmaWarpSpecializedCooperative;
#else
using TileShape = Shape<_64, _128, _64>;
using ClusterShape = Shape<_1, _1, _1>;
using MainloopSchedule = cutlass::gemm::KernelTmaWarpSpecializedPingpong;
using EpilogueSchedule = cutlass::epilogue::TmaWarpSpecialized;
#endif

using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
    cutlass::epilogue::collective::EpilogueTileAuto, ElementAccumulator, ElementAccumulator,
    ElementC, LayoutC, 4, ElementC, LayoutC, 4,
    EpilogueSchedule>::CollectiveOp;

using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, ElementA, LayoutA, 8, ElementB, LayoutB, 8,
    ElementAccumulator, TileShape, ClusterShape,
    cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
        sizeof(typename CollectiveEpilogue::SharedStorage))>,
    MainloopSchedule>::CollectiveOp;

using GemmKernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, CollectiveMainloop,
                                                        CollectiveEpilogue>;
using Gemm = cutlass::gemm::device::GemmUniversalAdapter<GemmKernel>;

#define CHECK(x)                                                                       \
  do {                                                                                 \
    cudaError_t e_ = (x);                                                              \
    if (e_ != cudaSuccess) {                                                           \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(2);                                                                    \
    }                                                                                  \
  } while (0)

// D[m + n*M] = sum_k A[m*K + k] * B[n*K + k] (A row-major MxK, B column-major KxN, D column-major).
__global__ void reference_gemm(const ElementA* a, const ElementB* b, float* d, int M, int N, int K) {
  int m = blockIdx.x * blockDim.x + threadIdx.x;
  int n = blockIdx.y;
  if (m >= M || n >= N) return;
  float acc = 0.f;
  for (int k = 0; k < K; ++k) acc += float(a[(size_t)m * K + k]) * float(b[(size_t)n * K + k]);
  d[m + (size_t)n * M] = acc;
}

int main(int argc, char** argv) {
  int M = argc > 1 ? std::atoi(argv[1]) : 512;
  int N = argc > 2 ? std::atoi(argv[2]) : 512;
  int K = argc > 3 ? std::atoi(argv[3]) : 1024;
  int iters = argc > 4 ? std::atoi(argv[4]) : 1;
  int sms = argc > 5 ? std::atoi(argv[5]) : 0;
  if (M <= 0 || N <= 0 || K <= 0 || iters <= 0 || sms < 0) {
    std::fprintf(stderr, "usage: pingpong_gemm M N K ITERS [SMS] (positive)\n");
    return 2;
  }
  std::vector<ElementA> ha((size_t)M * K);
  std::vector<ElementB> hb((size_t)N * K);
  uint32_t x = 12345;
  auto next = [&] { x ^= x << 13; x ^= x >> 17; x ^= x << 5; return int(x % 9) - 4; };
  for (auto& v : ha) v = ElementA(float(next()) / 4.f);
  for (auto& v : hb) v = ElementB(float(next()) / 4.f);
  ElementA* a; ElementB* b; float *c, *d, *ref;
  CHECK(cudaMalloc(&a, ha.size() * sizeof(ElementA)));
  CHECK(cudaMalloc(&b, hb.size() * sizeof(ElementB)));
  CHECK(cudaMalloc(&c, (size_t)M * N * sizeof(float)));
  CHECK(cudaMalloc(&d, (size_t)M * N * sizeof(float)));
  CHECK(cudaMalloc(&ref, (size_t)M * N * sizeof(float)));
  CHECK(cudaMemcpy(a, ha.data(), ha.size() * sizeof(ElementA), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(b, hb.data(), hb.size() * sizeof(ElementB), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(c, 0, (size_t)M * N * sizeof(float)));
  reference_gemm<<<dim3((M + 127) / 128, N), 128>>>(a, b, ref, M, N, K);
  CHECK(cudaGetLastError());

  using StrideA = typename Gemm::GemmKernel::StrideA;
  using StrideB = typename Gemm::GemmKernel::StrideB;
  using StrideC = typename Gemm::GemmKernel::StrideC;
  using StrideD = typename Gemm::GemmKernel::StrideD;
  StrideA sa{}; get<0>(sa) = K; get<2>(sa) = (int64_t)M * K;
  StrideB sb{}; get<0>(sb) = K; get<2>(sb) = (int64_t)N * K;
  StrideC sc{}; get<1>(sc) = M; get<2>(sc) = (int64_t)M * N;
  StrideD sd{}; get<1>(sd) = M; get<2>(sd) = (int64_t)M * N;

  typename Gemm::Arguments args{cutlass::gemm::GemmUniversalMode::kGemm,
                                {M, N, K, 1},
                                {a, sa, b, sb},
                                {{1.0f, 0.0f}, c, sc, d, sd}};
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  args.hw_info.sm_count = sms > 0 ? sms : prop.multiProcessorCount;
  Gemm gemm;
  if (gemm.can_implement(args) != cutlass::Status::kSuccess) {
    std::fprintf(stderr, "CUTLASS cannot implement %dx%dx%d\n", M, N, K);
    return 2;
  }
  size_t ws = Gemm::get_workspace_size(args);
  void* workspace = nullptr;
  if (ws) CHECK(cudaMalloc(&workspace, ws));
  if (gemm.initialize(args, workspace) != cutlass::Status::kSuccess) {
    std::fprintf(stderr, "CUTLASS initialize failed\n");
    return 2;
  }
  int bad_iters = 0;
  std::vector<float> hd((size_t)M * N), hr((size_t)M * N);
  CHECK(cudaMemcpy(hr.data(), ref, hr.size() * sizeof(float), cudaMemcpyDeviceToHost));
  for (int it = 0; it < iters; ++it) {
    CHECK(cudaMemset(d, 0xff, (size_t)M * N * sizeof(float)));
    if (gemm.run() != cutlass::Status::kSuccess) {
      std::fprintf(stderr, "CUTLASS run failed\n");
      return 2;
    }
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(hd.data(), d, hd.size() * sizeof(float), cudaMemcpyDeviceToHost));
    size_t wrong = 0;
    for (size_t i = 0; i < hd.size(); ++i)
      if (!(std::abs(hd[i] - hr[i]) <= 1e-3f * (1.f + std::abs(hr[i])))) ++wrong;
    if (wrong) {
      ++bad_iters;
      if (bad_iters <= 3) std::printf("iteration %d: %zu of %zu elements differ from the reference\n", it, wrong, hd.size());
    }
  }
  std::printf("%s %dx%dx%d on %d SMs: %d iterations, %d with a wrong result\n", argv[0], M, N, K,
              args.hw_info.sm_count, iters, bad_iters);
  return bad_iters ? 1 : 0;
}
