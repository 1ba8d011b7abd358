/*
 * prim_bench: microbenchmarks of kiln's device primitives (kernels/primitives.cuh), one process,
 * GPUs 0 and 1 (peer access through CUDA, no NCCL):
 *   flag   one-way flag latency GPU0 -> GPU1 (ping-pong of one thread each, round trip halved)
 *   copy   Simple copy bandwidth: local (GPU0 -> GPU0) and over NVLink (GPU0 -> GPU1 stores)
 *   reduce Simple reduce (dst <- dst + src, float) bandwidth: local and with the source on GPU1
 *   ll     LL pipe: GPU0 blocks send lines into GPU1 memory, GPU1 blocks receive them
 * Sizes and block counts are swept; times are CUDA events, median of --iters runs.
 *   prim_bench [--iters N] [--max SIZE] [--csv FILE]
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <vector>

#include "bench_check.h"
#include "kiln/kiln.h"
#include "primitives.cuh"


using namespace kiln;

/* The waits' abort and error words (device globals: atomics need global memory). */
__device__ int gAbort, gErr;

/* ---- flag ping-pong ---- */
__global__ void pingKernel(volatile uint64_t* mine, volatile uint64_t* theirs, int rounds, bool first,
                           unsigned long long* cycles) {
  long long t0 = clock64();
  for (int i = 1; i <= rounds; i++) {
    if (first) {
      stReleaseSys((uint64_t*)theirs, (uint64_t)i);
      while (ldAcquireSys((const uint64_t*)mine) < (uint64_t)i) {}
    } else {
      while (ldAcquireSys((const uint64_t*)mine) < (uint64_t)i) {}
      stReleaseSys((uint64_t*)theirs, (uint64_t)i);
    }
  }
  if (first) *cycles = (unsigned long long)(clock64() - t0);
}

/* ---- Simple copy / reduce: each block moves its share of n floats ---- */
template <int F>
__global__ void simpleKernel(const float* src, float* dst, size_t n) {
  Spin spin(1000000000ull, &gAbort, &gErr); /* Simple pieces never wait */
  const size_t per = (n + gridDim.x - 1) / gridDim.x;
  const size_t lo = min(n, per * blockIdx.x), hi = min(n, lo + per);
  Piece<float> pc;
  pc.src = src + lo;
  pc.dst = dst + lo;
  pc.rslot = nullptr;
  pc.sslot = nullptr;
  pc.n = pc.m = hi - lo;
  pc.rflag = pc.sflag = 0;
  kilnPrim<float, OpSum, KILN_DEV_PROTO_SIMPLE, F>(pc, OpSum(), spin);
}

/* ---- LL pipe: block b of the sender writes its share into lines on the peer; the receiver's
 * block b reads them (flag = call number) into dst. ---- */
__global__ void llSend(const float* src, void* lines, size_t n, uint32_t flag) {
  Spin spin(1000000000ull, &gAbort, &gErr); /* sends never wait */
  const size_t per = ((n + gridDim.x - 1) / gridDim.x + 1) & ~(size_t)1;
  const size_t lo = min(n, per * blockIdx.x), hi = min(n, lo + per);
  Piece<float> pc;
  pc.src = src + lo;
  pc.dst = nullptr;
  pc.rslot = nullptr;
  pc.sslot = (uint4*)lines + lo / 2;
  pc.n = pc.m = hi - lo;
  pc.rflag = 0;
  pc.sflag = flag;
  send<float, OpSum, KILN_DEV_PROTO_LL>(pc, OpSum(), spin);
}
__global__ void llRecv(float* dst, const void* lines, size_t n, uint32_t flag) {
  Spin spin(2000000000ull, &gAbort, &gErr);
  const size_t per = ((n + gridDim.x - 1) / gridDim.x + 1) & ~(size_t)1;
  const size_t lo = min(n, per * blockIdx.x), hi = min(n, lo + per);
  Piece<float> pc;
  pc.src = nullptr;
  pc.dst = dst + lo;
  pc.rslot = (const uint4*)lines + lo / 2;
  pc.sslot = nullptr;
  pc.n = pc.m = hi - lo;
  pc.rflag = flag;
  pc.sflag = 0;
  recv<float, OpSum, KILN_DEV_PROTO_LL>(pc, OpSum(), spin);
}

static FILE* csv;

static double median(std::vector<float>& v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/* Times `launch` (on dev's stream) iters times; returns the median in µs. */
template <class L> static double timeIt(int dev, cudaStream_t s, int iters, L launch) {
  CUDA_CHECK(cudaSetDevice(dev));
  cudaEvent_t a, b;
  CUDA_CHECK(cudaEventCreate(&a));
  CUDA_CHECK(cudaEventCreate(&b));
  launch(); /* warm up */
  CUDA_CHECK(cudaStreamSynchronize(s));
  std::vector<float> t(iters);
  for (int i = 0; i < iters; i++) {
    CUDA_CHECK(cudaEventRecord(a, s));
    launch();
    CUDA_CHECK(cudaEventRecord(b, s));
    CUDA_CHECK(cudaEventSynchronize(b));
    CUDA_CHECK(cudaEventElapsedTime(&t[i], a, b));
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return 1000.0 * median(t);
}

static void row(const char* what, const char* where, int blocks, size_t bytes, double us) {
  double gbs = bytes / (us * 1e3);
  printf("%-8s %-8s %6d %12zu %10.2f %9.2f\n", what, where, blocks, bytes, us, gbs);
  if (csv) fprintf(csv, "%s,%s,%d,%zu,%.3f,%.3f\n", what, where, blocks, bytes, us, gbs);
}

int main(int argc, char** argv) {
  int iters = 20;
  uint64_t maxB = 256ull << 20;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--max") && i + 1 < argc) {
      if (!kilnParseSize(argv[++i], &maxB)) { fprintf(stderr, "prim_bench: bad size %s\n", argv[i]); return 2; }
    } else if (!strcmp(argv[i], "--csv") && i + 1 < argc) {
      csv = fopen(argv[++i], "w");
      if (!csv) { fprintf(stderr, "prim_bench: cannot write %s\n", argv[i]); return 1; }
      fprintf(csv, "test,where,blocks,bytes,us,GBps\n");
    } else if (!strcmp(argv[i], "--help")) {
      printf("usage: prim_bench [--iters N] [--max SIZE] [--csv FILE]\n");
      return 0;
    } else {
      fprintf(stderr, "usage: prim_bench [--iters N] [--max SIZE] [--csv FILE]\n");
      return 2;
    }
  }
  if (iters < 1) iters = 1;
  int ngpu = 0;
  CUDA_CHECK(cudaGetDeviceCount(&ngpu));
  if (ngpu < 2) { fprintf(stderr, "prim_bench: needs 2 GPUs\n"); return 1; }
  cudaStream_t s[2];
  for (int d = 0; d < 2; d++) {
    CUDA_CHECK(cudaSetDevice(d));
    CUDA_CHECK(cudaDeviceEnablePeerAccess(1 - d, 0));
    CUDA_CHECK(cudaStreamCreateWithFlags(&s[d], cudaStreamNonBlocking));
  }
  const size_t maxN = maxB / sizeof(float);
  float *a0, *b0, *b1, *lines1;
  uint64_t *f0, *f1;
  unsigned long long* cyc;
  CUDA_CHECK(cudaSetDevice(0));
  CUDA_CHECK(cudaMalloc(&a0, maxB));
  CUDA_CHECK(cudaMalloc(&b0, maxB));
  CUDA_CHECK(cudaMalloc(&f0, 256));
  CUDA_CHECK(cudaMalloc(&cyc, 8));
  CUDA_CHECK(cudaMemset(a0, 0, maxB));
  CUDA_CHECK(cudaMemset(b0, 0, maxB));
  CUDA_CHECK(cudaSetDevice(1));
  CUDA_CHECK(cudaMalloc(&b1, maxB));
  CUDA_CHECK(cudaMalloc(&lines1, 2 * maxB));
  CUDA_CHECK(cudaMalloc(&f1, 256));
  CUDA_CHECK(cudaMemset(b1, 0, maxB));
  CUDA_CHECK(cudaMemset(lines1, 0, 2 * maxB));

  printf("%-8s %-8s %6s %12s %10s %9s\n", "test", "where", "blocks", "bytes", "time(us)", "GB/s");
  /* flag round trip */
  {
    const int rounds = 10000;
    CUDA_CHECK(cudaSetDevice(0));
    CUDA_CHECK(cudaMemset(f0, 0, 256));
    CUDA_CHECK(cudaSetDevice(1));
    CUDA_CHECK(cudaMemset(f1, 0, 256));
    CUDA_CHECK(cudaDeviceSynchronize());
    pingKernel<<<1, 1, 0, s[1]>>>(f1, f0, rounds, false, nullptr);
    CUDA_CHECK(cudaSetDevice(0));
    pingKernel<<<1, 1, 0, s[0]>>>(f0, f1, rounds, true, cyc);
    CUDA_CHECK(cudaDeviceSynchronize());
    unsigned long long c = 0;
    CUDA_CHECK(cudaMemcpy(&c, cyc, 8, cudaMemcpyDeviceToHost));
    int khz = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0));
    double us = (double)c / rounds / 2.0 / (khz * 1e-3);
    printf("%-8s %-8s %6d %12d %10.3f %9s   (one-way, %.0f cycles per round trip at %d MHz)\n", "flag",
           "nvlink", 1, 8, us, "-", (double)c / rounds, khz / 1000);
    if (csv) fprintf(csv, "flag,nvlink,1,8,%.4f,\n", us);
    CUDA_CHECK(cudaSetDevice(1));
    CUDA_CHECK(cudaDeviceSynchronize());
  }
  const int blockSet[] = {1, 4, 16, 32, 64};
  for (size_t bytes = 64 << 10; bytes <= maxB; bytes *= 16) {
    const size_t n = bytes / sizeof(float);
    if (n > maxN) break;
    for (int nb : blockSet) {
      row("copy", "local", nb, bytes, timeIt(0, s[0], iters, [&] {
        simpleKernel<FLAG_SRC | FLAG_DST><<<nb, 512, 0, s[0]>>>(a0, b0, n);
      }));
      row("copy", "nvlink", nb, bytes, timeIt(0, s[0], iters, [&] {
        simpleKernel<FLAG_SRC | FLAG_DST><<<nb, 512, 0, s[0]>>>(a0, b1, n);
      }));
      row("reduce", "local", nb, bytes, timeIt(0, s[0], iters, [&] {
        simpleKernel<FLAG_SRC | FLAG_REDUCE_DST><<<nb, 512, 0, s[0]>>>(a0, b0, n);
      }));
      row("reduce", "nvlink", nb, bytes, timeIt(0, s[0], iters, [&] {
        simpleKernel<FLAG_SRC | FLAG_REDUCE_DST><<<nb, 512, 0, s[0]>>>(b1, b0, n);
      }));
    }
  }
  /* LL pipe: sender and receiver concurrently; time on the receiver (which also waits for the
   * sender's launch, so small sizes include a launch skew). */
  for (size_t bytes = 4 << 10; bytes <= std::min<uint64_t>(maxB, 64ull << 20); bytes *= 16) {
    const size_t n = bytes / sizeof(float);
    for (int nb : blockSet) {
      static uint32_t flag = 0;
      std::vector<float> t(iters);
      for (int i = 0; i < iters; i++) {
        flag++;
        cudaEvent_t e0, e1;
        CUDA_CHECK(cudaSetDevice(1));
        CUDA_CHECK(cudaEventCreate(&e0));
        CUDA_CHECK(cudaEventCreate(&e1));
        CUDA_CHECK(cudaEventRecord(e0, s[1]));
        llRecv<<<nb, 512, 0, s[1]>>>(b1, lines1, n, flag);
        CUDA_CHECK(cudaEventRecord(e1, s[1]));
        CUDA_CHECK(cudaSetDevice(0));
        llSend<<<nb, 512, 0, s[0]>>>(a0, lines1, n, flag);
        CUDA_CHECK(cudaStreamSynchronize(s[0]));
        CUDA_CHECK(cudaSetDevice(1));
        CUDA_CHECK(cudaEventSynchronize(e1));
        CUDA_CHECK(cudaEventElapsedTime(&t[i], e0, e1));
        cudaEventDestroy(e0);
        cudaEventDestroy(e1);
      }
      row("ll", "nvlink", nb, bytes, 1000.0 * median(t));
    }
  }
  if (csv) fclose(csv);
  return 0;
}
