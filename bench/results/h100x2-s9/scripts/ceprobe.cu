// Throwaway probe (not part of kiln): NVLink copy bandwidth of copy engines vs SM stores,
// both GPUs sending at once, with and without a concurrent local copy.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1);} } while (0)
__global__ void __launch_bounds__(512) smcopy(uint4* dst, const uint4* src, size_t n) {
  size_t per = (n + gridDim.x - 1) / gridDim.x;
  size_t lo = blockIdx.x * per, hi = min(n, lo + per);
  size_t i = lo + threadIdx.x;
  const int U = 8;
  for (; i + (U - 1) * blockDim.x < hi; i += U * blockDim.x) {
    uint4 v[U];
#pragma unroll
    for (int u = 0; u < U; u++) v[u] = __ldcg(src + i + u * blockDim.x);
#pragma unroll
    for (int u = 0; u < U; u++) dst[i + u * blockDim.x] = v[u];
  }
  for (; i < hi; i += blockDim.x) dst[i] = __ldcg(src + i);
}
int main(int argc, char** argv) {
  size_t bytes = (argc > 1 ? atoll(argv[1]) : 512) << 20;
  const int G = 2;
  cudaStream_t st[G][4];
  cudaEvent_t e0[G], e1[G], fork[G], join[G][4];
  void *src[G], *dst[G], *lsrc[G], *ldst[G];
  for (int g = 0; g < G; g++) {
    CK(cudaSetDevice(g));
    CK(cudaDeviceEnablePeerAccess(1 - g, 0));
    for (int k = 0; k < 4; k++) { CK(cudaStreamCreateWithFlags(&st[g][k], cudaStreamNonBlocking)); CK(cudaEventCreateWithFlags(&join[g][k], cudaEventDisableTiming)); }
    CK(cudaEventCreate(&e0[g])); CK(cudaEventCreate(&e1[g])); CK(cudaEventCreateWithFlags(&fork[g], cudaEventDisableTiming));
    CK(cudaMalloc(&src[g], bytes)); CK(cudaMalloc(&dst[g], bytes)); CK(cudaMalloc(&lsrc[g], bytes)); CK(cudaMalloc(&ldst[g], bytes));
    CK(cudaMemset(src[g], 1, bytes)); CK(cudaMemset(lsrc[g], 2, bytes));
  }
  auto run = [&](const char* name, int mode, int nce, int blocks) {
    std::vector<float> ts;
    for (int rep = 0; rep < 7; rep++) {
      for (int g = 0; g < G; g++) { CK(cudaSetDevice(g)); CK(cudaDeviceSynchronize()); }
      for (int g = 0; g < G; g++) {
        CK(cudaSetDevice(g));
        cudaStream_t s = st[g][0];
        CK(cudaEventRecord(e0[g], s));
        CK(cudaEventRecord(fork[g], s));
        for (int k = 1; k < 4; k++) CK(cudaStreamWaitEvent(st[g][k], fork[g], 0));
        char* rd = (char*)dst[1 - g]; char* rs = (char*)src[g];
        if (mode & 1) { // remote by CE, split over nce streams
          size_t part = bytes / nce;
          for (int k = 0; k < nce; k++) CK(cudaMemcpyAsync(rd + k * part, rs + k * part, part, cudaMemcpyDefault, st[g][k]));
        }
        if (mode & 2) smcopy<<<blocks, 512, 0, st[g][0]>>>((uint4*)rd, (const uint4*)rs, bytes / 16); // remote by SM
        if (mode & 4) smcopy<<<blocks, 512, 0, st[g][3]>>>((uint4*)ldst[g], (const uint4*)lsrc[g], bytes / 16); // local by SM
        if (mode & 8) CK(cudaMemcpyAsync(ldst[g], lsrc[g], bytes, cudaMemcpyDefault, st[g][3])); // local by CE
        for (int k = 1; k < 4; k++) { CK(cudaEventRecord(join[g][k], st[g][k])); CK(cudaStreamWaitEvent(s, join[g][k], 0)); }
        CK(cudaEventRecord(e1[g], s));
      }
      float worst = 0;
      for (int g = 0; g < G; g++) { CK(cudaSetDevice(g)); CK(cudaEventSynchronize(e1[g])); float ms; CK(cudaEventElapsedTime(&ms, e0[g], e1[g])); worst = std::max(worst, ms); }
      if (rep > 0) ts.push_back(worst);
    }
    std::sort(ts.begin(), ts.end());
    float us = ts[ts.size() / 2] * 1000;
    printf("%-40s %9.1f us  %6.1f GB/s per direction\n", name, us, bytes / (us * 1e3));
  };
  printf("bytes per direction: %zu\n", bytes);
  run("CE remote x1", 1, 1, 0);
  run("CE remote x2 streams", 1, 2, 0);
  run("CE remote x3 streams", 1, 3, 0);
  run("SM remote 128 blocks", 2, 0, 128);
  run("SM remote 132 blocks", 2, 0, 132);
  run("SM remote 264 blocks", 2, 0, 264);
  run("SM remote 64 blocks", 2, 0, 64);
  run("SM remote 32 blocks", 2, 0, 32);
  run("SM local only 128", 4, 0, 128);
  run("CE local only", 8, 1, 0);
  run("CE remote x1 + SM local 128", 1 | 4, 1, 128);
  run("CE remote x1 + SM local 32", 1 | 4, 1, 32);
  run("CE remote x2 + SM local 32", 1 | 4, 2, 32);
  run("CE remote x1 + CE local", 1 | 8, 1, 0);
  run("SM remote 128 + SM local 128 (2 kernels)", 2 | 4, 0, 128);
  return 0;
}
