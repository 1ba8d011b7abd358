/*
 * prim_bench: microbenchmarks of kiln's device primitives (kernels/primitives.cuh), one process,
 * GPUs 0 and 1 (peer access through CUDA, no NCCL):
 *   flag   one-way flag latency GPU0 -> GPU1 (ping-pong of one thread each, round trip halved)
 *   hop-simp, hop-ll, hop-ll128  one-way latency of a piece (8 B - 512 KiB) passed back and forth
 *          between blocks of GPU0 and GPU1 per protocol, as plan steps pass it (1-16 block pairs);
 *          timed without checks, then a shorter run checks every round's data (exit status 1
 *          when any element was wrong or a wait timed out)
 *   copy   Simple copy bandwidth: local (GPU0 -> GPU0) and over NVLink (GPU0 -> GPU1 stores)
 *   reduce Simple reduce (dst <- dst + src, float) bandwidth: local and with the source on GPU1
 *   ll, ll128  LL / LL128 pipe: GPU0 blocks send lines into GPU1 memory, GPU1 blocks receive
 *          them (every call's data is checked against what was sent)
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

/* A piece of n floats whose receive and send slots have the same use number. */
__device__ __forceinline__ Piece<float> makePiece(const float* src, float* dst, const void* rslot,
                                                  void* sslot, size_t n, uint64_t use) {
  Piece<float> pc;
  pc.src = src;
  pc.dst = dst;
  pc.rslot = rslot;
  pc.sslot = sslot;
  pc.n = pc.m = n;
  pc.ruse = pc.suse = use;
  return pc;
}

/* ---- Simple copy / reduce: each block moves its share of n floats ---- */
template <int F> __global__ void simpleKernel(const float* src, float* dst, size_t n) {
  Spin spin(1000000000ull, &gAbort, &gErr); /* Simple pieces never wait */
  const size_t per = (n + gridDim.x - 1) / gridDim.x;
  const size_t lo = min(n, per * blockIdx.x), hi = min(n, lo + per);
  const Piece<float> pc = makePiece(src + lo, dst + lo, nullptr, nullptr, hi - lo, 0);
  kilnPrim<float, OpSum, KILN_DEV_PROTO_SIMPLE, F>(pc, OpSum(), spin);
}

/* ---- LL / LL128 pipe: block b of the sender writes its share into lines on the peer; the
 * receiver's block b reads them into dst (the line flags come from the call number). A block's
 * share is whole lines (LL: 2 floats, LL128: 30). ---- */
template <int PROTO> struct Pipe {
  static constexpr size_t unit =
      (PROTO == KILN_DEV_PROTO_LL128 ? KILN_DEV_LL128_DATA_BYTES : KILN_DEV_LL_DATA_BYTES) / sizeof(float);
  static __device__ void share(size_t n, size_t* lo, size_t* hi) {
    const size_t per = ((n + gridDim.x - 1) / gridDim.x + unit - 1) / unit * unit;
    *lo = min(n, per * blockIdx.x);
    *hi = min(n, *lo + per);
  }
};
/* F: FLAG_SRC | FLAG_SEND (src -> the lines) or FLAG_RECV | FLAG_DST (the lines -> dst). */
template <int PROTO, int F>
__global__ void pipeKernel(const float* src, float* dst, char* lines, size_t n, uint64_t use) {
  Spin spin(2000000000ull, &gAbort, &gErr);
  size_t lo, hi;
  Pipe<PROTO>::share(n, &lo, &hi);
  char* slot = lines + pieceBytes<PROTO>(lo, sizeof(float));
  const bool sends = (F & FLAG_SEND) != 0;
  const Piece<float> pc = makePiece(sends ? src + lo : nullptr, sends ? nullptr : dst + lo,
                                    sends ? nullptr : slot, sends ? slot : nullptr, hi - lo, use);
  kilnPrim<float, OpSum, PROTO, F>(pc, OpSum(), spin);
}

/* Elements that arrived wrong, counted on the device that checks (gBad, per device). */
__device__ unsigned long long gBad;
__global__ void countDiff(const float* got, const float* want, size_t n) {
  unsigned long long bad = 0;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    bad += got[i] != want[i];
  if (bad) atomicAdd(&gBad, bad);
}

/* ---- Hop latency per protocol: block b of GPU0 and block b of GPU1 pass a piece of n floats back
 * and forth `rounds` times through each other's slots, as plan steps do: Simple stores the data,
 * then one thread releases a head counter after a barrier (the receiver acquires it, then reads
 * its slot); LL and LL128 carry flags in the lines. GPU0's block 0 times the rounds with
 * %globaltimer: one hop = elapsed / (2 rounds). Flags use numbers from `use0` + 1 on. CHECK: each
 * round sends a pattern of its own and the receiver counts the elements that differ (gBad); the
 * timed runs do not check (the pattern and the check are two passes over the piece). ---- */
__device__ __forceinline__ float pattern(int round, bool first, int block, size_t e) {
  return (float)((round * 7 + (first ? 1 : 2) * 131 + block * 17 + (int)e) % 65521);
}

/* One piece of a hop (UL: LL128's warp stores per round). */
template <int PROTO, int UL, int F> __device__ void hopPiece(const Piece<float>& pc, Spin& spin) {
  if (PROTO == KILN_DEV_PROTO_LL128)
    ll128Prim<float, OpSum, F, UL>(pc, OpSum(), spin);
  else
    kilnPrim<float, OpSum, PROTO, F>(pc, OpSum(), spin);
}

template <int PROTO, bool CHECK, int UL = KILN_LL128_UL>
__global__ void hopKernel(char* mySlots, char* peerSlots, uint64_t* myHeads, uint64_t* peerHeads, float* buf,
                          size_t n, size_t stride, int rounds, uint64_t use0, bool first,
                          unsigned long long* ns) {
  Spin spin(2000000000ull, &gAbort, &gErr);
  char* mine = mySlots + blockIdx.x * stride;
  char* theirs = peerSlots + blockIdx.x * stride;
  float* data = buf + blockIdx.x * (stride / sizeof(float));
  const uint64_t t0 = globaltimer();
  for (int i = 1; i <= rounds; i++) {
    for (int half = 0; half < 2; half++) {
      const uint64_t use = use0 + (uint64_t)i;
      if ((half == 0) == first) {
        if (CHECK) { /* this round's pattern, different on each side */
          for (size_t e = threadIdx.x; e < n; e += blockDim.x) data[e] = pattern(i, first, blockIdx.x, e);
          __syncthreads();
        }
        hopPiece<PROTO, UL, FLAG_SRC | FLAG_SEND>(makePiece(data, nullptr, nullptr, theirs, n, use), spin);
        if (PROTO == KILN_DEV_PROTO_SIMPLE) {
          __syncthreads();
          if (threadIdx.x == 0) stReleaseSys(peerHeads + blockIdx.x, (uint64_t)i);
        }
      } else {
        if (PROTO == KILN_DEV_PROTO_SIMPLE) {
          if (threadIdx.x == 0)
            while (ldAcquireSys(myHeads + blockIdx.x) < (uint64_t)i && !spin.tick()) {}
          __syncthreads();
        }
        hopPiece<PROTO, UL, FLAG_RECV | FLAG_DST>(makePiece(nullptr, data, mine, nullptr, n, use), spin);
        if (CHECK) {
          __syncthreads();
          for (size_t e = threadIdx.x; e < n; e += blockDim.x)
            if (data[e] != pattern(i, !first, blockIdx.x, e)) atomicAdd(&gBad, 1ull);
        }
      }
      __syncthreads();
    }
  }
  if (first && blockIdx.x == 0 && threadIdx.x == 0) *ns = globaltimer() - t0;
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
  CUDA_CHECK(cudaGetLastError()); /* the launches */
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return 1000.0 * median(t);
}

static void row(const char* what, const char* where, int blocks, size_t bytes, double us) {
  double gbs = bytes / (us * 1e3);
  printf("%-8s %-8s %6d %12zu %10.2f %9.2f\n", what, where, blocks, bytes, us, gbs);
  if (csv) fprintf(csv, "%s,%s,%d,%zu,%.3f,%.3f\n", what, where, blocks, bytes, us, gbs);
}

/* Reads and clears both GPUs' gBad: the elements the last checked runs found wrong. */
static unsigned long long take_bad(void) {
  unsigned long long sum = 0;
  for (int d = 0; d < 2; d++) {
    unsigned long long v = 0;
    const unsigned long long zero = 0;
    CUDA_CHECK(cudaSetDevice(d));
    CUDA_CHECK(cudaMemcpyFromSymbol(&v, gBad, sizeof(v)));
    CUDA_CHECK(cudaMemcpyToSymbol(gBad, &zero, sizeof(zero)));
    sum += v;
  }
  return sum;
}

/* Exits when a wait of the runs so far gave up (a bounded spin recorded its timeout in gErr):
 * their times and data would mean nothing. */
static void check_no_timeout(const char* what) {
  for (int d = 0; d < 2; d++) {
    int err = 0;
    CUDA_CHECK(cudaSetDevice(d));
    CUDA_CHECK(cudaMemcpyFromSymbol(&err, gErr, sizeof(err)));
    if (err != KILN_DEV_OK) {
      fprintf(stderr, "prim_bench: %s: a wait on GPU %d timed out\n", what, d);
      exit(1);
    }
  }
}

int main(int argc, char** argv) {
  int iters = 20;
  uint64_t maxB = 256ull << 20;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--iters") && i + 1 < argc)
      iters = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--max") && i + 1 < argc) {
      if (!kilnParseSize(argv[++i], &maxB)) {
        fprintf(stderr, "prim_bench: bad size %s\n", argv[i]);
        return 2;
      }
    } else if (!strcmp(argv[i], "--csv") && i + 1 < argc) {
      csv = fopen(argv[++i], "w");
      if (!csv) {
        fprintf(stderr, "prim_bench: cannot write %s\n", argv[i]);
        return 1;
      }
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
  if (ngpu < 2) {
    fprintf(stderr, "prim_bench: needs 2 GPUs\n");
    return 1;
  }
  cudaStream_t s[2];
  for (int d = 0; d < 2; d++) {
    CUDA_CHECK(cudaSetDevice(d));
    CUDA_CHECK(cudaDeviceEnablePeerAccess(1 - d, 0));
    CUDA_CHECK(cudaStreamCreateWithFlags(&s[d], cudaStreamNonBlocking));
  }
  const size_t maxN = maxB / sizeof(float);
  float *a0, *b0, *b1;
  char* lines1;
  uint64_t *f0, *f1;
  unsigned long long* cyc;
  CUDA_CHECK(cudaSetDevice(0));
  CUDA_CHECK(cudaMalloc(&a0, maxB));
  CUDA_CHECK(cudaMalloc(&b0, maxB));
  CUDA_CHECK(cudaMalloc(&f0, 4096));
  CUDA_CHECK(cudaMalloc(&cyc, 8));
  /* The source of the pipes: random floats, so a check of what arrived means something. */
  std::vector<float> ha0(maxN);
  srand(12345);
  for (size_t i = 0; i < maxN; i++) ha0[i] = (float)(rand() % 2000001 - 1000000) / 1024.0f;
  CUDA_CHECK(cudaMemcpy(a0, ha0.data(), maxB, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemset(b0, 0, maxB));
  CUDA_CHECK(cudaSetDevice(1));
  CUDA_CHECK(cudaMalloc(&b1, maxB));
  CUDA_CHECK(cudaMalloc(&lines1, 2 * maxB));
  CUDA_CHECK(cudaMalloc(&f1, 4096));
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
    CUDA_CHECK(cudaGetLastError()); /* both launches (the last error is per thread) */
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
  /* one-way hop latency per protocol and piece size, 1 to 16 block pairs at once: a timed run,
   * then a shorter checked one */
  {
    const int rounds = 2000, checkedRounds = 200;
    int hopFailures = 0;
    const size_t stride = 1 << 20; /* per block: its slot on each GPU and its data */
    uint64_t use0 = 0;             /* every run's flags new: the slots are reused */
    /* Both GPUs run k (slots in the first half of their b buffer, data in the second); returns
     * GPU0's block 0 time in ns. */
    auto runHop = [&](auto k, int nb, size_t n, int nrounds) {
      CUDA_CHECK(cudaSetDevice(0));
      CUDA_CHECK(cudaMemset(f0, 0, 4096));
      CUDA_CHECK(cudaSetDevice(1));
      CUDA_CHECK(cudaMemset(f1, 0, 4096));
      CUDA_CHECK(cudaDeviceSynchronize());
      k<<<nb, 512, 0, s[1]>>>((char*)b1, (char*)b0, f1, f0, b1 + maxN / 2, n, stride, nrounds, use0, false,
                              nullptr);
      CUDA_CHECK(cudaGetLastError());
      CUDA_CHECK(cudaSetDevice(0));
      k<<<nb, 512, 0, s[0]>>>((char*)b0, (char*)b1, f0, f1, b0 + maxN / 2, n, stride, nrounds, use0, true,
                              cyc);
      CUDA_CHECK(cudaGetLastError());
      CUDA_CHECK(cudaDeviceSynchronize());
      CUDA_CHECK(cudaSetDevice(1));
      CUDA_CHECK(cudaDeviceSynchronize());
      use0 += (uint64_t)nrounds;
      unsigned long long ns = 0;
      CUDA_CHECK(cudaMemcpy(&ns, cyc, 8, cudaMemcpyDeviceToHost));
      return ns;
    };
    auto hop = [&](const char* name, auto timedK, auto checkedK) {
      for (size_t bytes :
           {(size_t)8, (size_t)1 << 10, (size_t)8 << 10, (size_t)64 << 10, (size_t)512 << 10}) {
        for (int nb : {1, 4, 16}) {
          if ((size_t)nb * stride * 2 > maxB) continue;
          const size_t n = bytes / sizeof(float);
          const unsigned long long ns = runHop(timedK, nb, n, rounds);
          row(name, "nvlink", nb, bytes, (double)ns / 1000.0 / (2.0 * rounds));
          runHop(checkedK, nb, n, checkedRounds);
          const unsigned long long bad = take_bad();
          if (bad != 0) {
            fprintf(stderr,
                    "prim_bench: %s, %d blocks, %zu bytes: %llu elements received were not what was sent\n",
                    name, nb, bytes, bad);
            hopFailures++;
          }
          check_no_timeout(name);
        }
      }
    };
    hop("hop-simp", hopKernel<KILN_DEV_PROTO_SIMPLE, false>, hopKernel<KILN_DEV_PROTO_SIMPLE, true>);
    hop("hop-ll", hopKernel<KILN_DEV_PROTO_LL, false>, hopKernel<KILN_DEV_PROTO_LL, true>);
    hop("hop-ll128", hopKernel<KILN_DEV_PROTO_LL128, false>, hopKernel<KILN_DEV_PROTO_LL128, true>);
    /* LL128 with 8 warp stores per round instead of KILN_LL128_UL's 4 (why 4: primitives.cuh) */
    hop("hop-ll128u8", hopKernel<KILN_DEV_PROTO_LL128, false, 8>, hopKernel<KILN_DEV_PROTO_LL128, true, 8>);
    if (hopFailures) return 1;
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
  /* LL and LL128 pipes: sender and receiver concurrently; time on the receiver (which also waits
   * for the sender's launch, so small sizes include a launch skew). The calls alternate between
   * two random sources (the halves of a0), and after each call a kernel counts the elements of
   * the result that are not its source's (data of the call before would be caught). */
  uint64_t use = 0; /* every call a new use number: the lines are reused */
  auto pipe = [&](const char* name, auto sendK, auto recvK) {
    for (size_t bytes = 4 << 10; bytes <= std::min<uint64_t>(maxB / 2, 64ull << 20); bytes *= 16) {
      const size_t n = bytes / sizeof(float);
      for (int nb : blockSet) {
        std::vector<float> t(iters);
        cudaEvent_t e0, e1;
        CUDA_CHECK(cudaSetDevice(1));
        CUDA_CHECK(cudaEventCreate(&e0));
        CUDA_CHECK(cudaEventCreate(&e1));
        for (int i = 0; i < iters; i++) {
          use++;
          const float* src = a0 + (size_t)(i % 2) * (maxN / 2);
          CUDA_CHECK(cudaSetDevice(1));
          CUDA_CHECK(cudaEventRecord(e0, s[1]));
          recvK<<<nb, 512, 0, s[1]>>>(nullptr, b1, lines1, n, use);
          CUDA_CHECK(cudaEventRecord(e1, s[1]));
          CUDA_CHECK(cudaSetDevice(0));
          sendK<<<nb, 512, 0, s[0]>>>(src, nullptr, lines1, n, use);
          CUDA_CHECK(cudaGetLastError()); /* the last error is per thread: both launches */
          CUDA_CHECK(cudaStreamSynchronize(s[0]));
          CUDA_CHECK(cudaSetDevice(1));
          CUDA_CHECK(cudaEventSynchronize(e1));
          CUDA_CHECK(cudaEventElapsedTime(&t[i], e0, e1));
          countDiff<<<64, 512, 0, s[1]>>>(b1, src, n);
          CUDA_CHECK(cudaGetLastError());
          CUDA_CHECK(cudaMemsetAsync(b1, 0, bytes, s[1]));
        }
        CUDA_CHECK(cudaStreamSynchronize(s[1]));
        cudaEventDestroy(e0);
        cudaEventDestroy(e1);
        const unsigned long long bad = take_bad();
        if (bad != 0) {
          fprintf(
              stderr,
              "prim_bench: %s pipe, %d blocks, %zu bytes: %llu elements received were not what was sent\n",
              name, nb, bytes, bad);
          exit(1);
        }
        check_no_timeout(name);
        row(name, "nvlink", nb, bytes, 1000.0 * median(t));
      }
    }
  };
  pipe("ll", pipeKernel<KILN_DEV_PROTO_LL, FLAG_SRC | FLAG_SEND>,
       pipeKernel<KILN_DEV_PROTO_LL, FLAG_RECV | FLAG_DST>);
  pipe("ll128", pipeKernel<KILN_DEV_PROTO_LL128, FLAG_SRC | FLAG_SEND>,
       pipeKernel<KILN_DEV_PROTO_LL128, FLAG_RECV | FLAG_DST>);
  if (csv) fclose(csv);
  return 0;
}
