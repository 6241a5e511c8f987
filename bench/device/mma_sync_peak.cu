// The ceiling of Ampere's tensor-core instruction on this GPU: how many
// TFLOP/s `mma.sync.m16n8k16` (f16/bf16 operands, f32 accumulation) issues
// when nothing else runs -- operands already in registers, no memory, no
// barriers, 8 independent accumulators a warp to cover its latency. Stage
// 1 of the matmul (mma.sync + cp.async) cannot beat this number, so its
// ratio to cuBLAS (wgmma on Hopper) is bounded by it.
//
//   nvcc -gencode=arch=compute_90a,code=sm_90a -O3 -o mma_sync_peak bench/device/mma_sync_peak.cu && ./mma_sync_peak
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CHECK(call)                                                                                  \
  do {                                                                                               \
    cudaError_t e = (call);                                                                          \
    if (e != cudaSuccess) {                                                                          \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e));      \
      std::exit(1);                                                                                  \
    }                                                                                                \
  } while (0)

constexpr int kChains = 8; // independent accumulators a warp

template <bool BF16> __global__ void mma_loop(const unsigned *seed, float *out, int iterations) {
  unsigned a[4], b[2];
  for (int i = 0; i < 4; ++i)
    a[i] = seed[(threadIdx.x + i) % 64];
  for (int i = 0; i < 2; ++i)
    b[i] = seed[(threadIdx.x + 7 * i) % 64];
  float c[kChains][4] = {};
  for (int it = 0; it < iterations; ++it)
#pragma unroll
    for (int j = 0; j < kChains; ++j) {
      if constexpr (BF16)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};"
                     : "+f"(c[j][0]), "+f"(c[j][1]), "+f"(c[j][2]), "+f"(c[j][3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
      else
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};"
                     : "+f"(c[j][0]), "+f"(c[j][1]), "+f"(c[j][2]), "+f"(c[j][3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
  float sum = 0;
  for (int j = 0; j < kChains; ++j)
    for (int i = 0; i < 4; ++i)
      sum += c[j][i];
  out[blockIdx.x * blockDim.x + threadIdx.x] = sum; // keeps the work
}

/// A matmul warp's pattern: a 64x64 tile of 32 accumulators (128 registers),
/// 4 A fragments of 16 rows and 8 B fragments of 8 columns per K step, each
/// A fragment meeting every B fragment -- what the DSL's mma.sync dot issues
/// per K step, still with operands in registers and no memory.
template <bool BF16> __global__ void mma_tile_loop(const unsigned *seed, float *out, int iterations) {
  unsigned a[4][4], b[8][2];
  for (int i = 0; i < 4; ++i)
    for (int r = 0; r < 4; ++r)
      a[i][r] = seed[(threadIdx.x + 4 * i + r) % 64];
  for (int j = 0; j < 8; ++j)
    for (int r = 0; r < 2; ++r)
      b[j][r] = seed[(threadIdx.x + 7 * j + r) % 64];
  float c[4][8][4] = {};
  for (int it = 0; it < iterations / 4; ++it)
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        if constexpr (BF16)
          asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                       "{%0,%1,%2,%3};"
                       : "+f"(c[i][j][0]), "+f"(c[i][j][1]), "+f"(c[i][j][2]), "+f"(c[i][j][3])
                       : "r"(a[i][0]), "r"(a[i][1]), "r"(a[i][2]), "r"(a[i][3]), "r"(b[j][0]), "r"(b[j][1]));
        else
          asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                       "{%0,%1,%2,%3};"
                       : "+f"(c[i][j][0]), "+f"(c[i][j][1]), "+f"(c[i][j][2]), "+f"(c[i][j][3])
                       : "r"(a[i][0]), "r"(a[i][1]), "r"(a[i][2]), "r"(a[i][3]), "r"(b[j][0]), "r"(b[j][1]));
      }
  float sum = 0;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 8; ++j)
      for (int r = 0; r < 4; ++r)
        sum += c[i][j][r];
  out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

/// One program of `warps` warps on each of `sms` multiprocessors.
template <bool BF16> double tflops(int sms, int warps, bool tile = false) {
  const int iterations = 4096, threads = 32 * warps, blocks = sms;
  unsigned host[64];
  for (int i = 0; i < 64; ++i)
    host[i] = 0x3c003c00u ^ (i * 0x00010001u); // small finite values, never zero
  unsigned *seed;
  float *out;
  CHECK(cudaMalloc(&seed, sizeof host));
  CHECK(cudaMalloc(&out, sizeof(float) * blocks * threads));
  CHECK(cudaMemcpy(seed, host, sizeof host, cudaMemcpyHostToDevice));
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  auto launch = [&] {
    if (tile) // 32 mma.sync per iteration/4: the same count as kChains * iterations
      mma_tile_loop<BF16><<<blocks, threads>>>(seed, out, iterations);
    else
      mma_loop<BF16><<<blocks, threads>>>(seed, out, iterations);
  };
  launch(); // warm-up
  CHECK(cudaGetLastError());
  float best = 1e30f;
  for (int rep = 0; rep < 10; ++rep) {
    CHECK(cudaEventRecord(start));
    launch();
    CHECK(cudaGetLastError());
    CHECK(cudaEventRecord(stop));
    CHECK(cudaEventSynchronize(stop));
    float ms;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    best = ms < best ? ms : best;
  }
  CHECK(cudaFree(seed));
  CHECK(cudaFree(out));
  const double flop = 2.0 * 16 * 8 * 16 * kChains * double(iterations) * (threads / 32) * blocks;
  return flop / (best * 1e-3) / 1e12;
}

int main() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s, %d multiprocessors\n", prop.name, prop.multiProcessorCount);
  std::printf("| operands | pattern | warps a multiprocessor | mma.sync TFLOP/s |\n| --- | --- | ---: | ---: |\n");
  for (int warps : {4, 8, 16}) {
    std::printf("| bf16 | 8 accumulators | %d | %.1f |\n", warps, tflops<true>(prop.multiProcessorCount, warps));
    std::printf("| f16 | 8 accumulators | %d | %.1f |\n", warps, tflops<false>(prop.multiProcessorCount, warps));
  }
  // 128 accumulator registers a thread: at most 8 warps fit.
  for (int warps : {4, 8})
    std::printf("| bf16 | 64x64 warp tile | %d | %.1f |\n", warps, tflops<true>(prop.multiProcessorCount, warps, true));
}
