/*
 * nvl_bench: how fast one GPU can push data into its peers over NVLink, per way of storing, with
 * every GPU pushing at once (the traffic of an allgather or alltoall: each GPU sends a piece to each
 * peer). One process, peer access through CUDA (no NCCL). Ways:
 *   sm    threads load 16 bytes each (8 in flight) and store them into the peer (kiln's copy1)
 *   tma   one thread per block moves chunks with the Hopper bulk copies: global -> shared
 *         (cp.async.bulk, an mbarrier per stage), then shared -> the peer's memory
 *         (cp.async.bulk.global.shared::cta), several stages in flight
 *   ce    the copy engine: cudaMemcpyAsync to each peer, one after the other on one stream
 *   ceb   the same copies in one cudaMemcpyBatchAsync (CUDA 12.8): whether the engine runs them
 *         closer together than separate calls
 *   pull  the copy engine pulling: each GPU copies its piece from every peer's memory into its own
 *         (cudaMemcpyAsync on its own stream, peer after peer)
 *   smpull SM loads pulling: threads load 16 bytes each (U in flight) from the peers' memory and
 *         store them into this GPU's own (as sm, the other way round)
 *   cesm  both at once: the copy engine copies the first (8 - k) eighths of the piece to each peer
 *         (as ce) while SM stores (as sm, `blocks` blocks on a second stream) move the last k
 *         eighths (column chunk: k): whether the two together pass the engine alone
 *   llhop LL lines passed back and forth between GPUs 0 and 1 (see llhop below): one hop's time
 *         per size, blocks, store and poll instruction
 *   llx   a one-shot allreduce of LL lines among all GPUs (see llx below): a thread per line (every
 *         peer's store and poll in a loop, as kernels/sym.cuh bodyLL), a lane per line and peer, or
 *         blocks that each store to one peer beside blocks that receive
 *   llg   the same allreduce one call per kernel launch, launches replayed from CUDA graphs
 * and reducescatters made of engine copies and local reductions: each GPU has n pieces of
 * PER_PEER bytes, piece g of every GPU summed (32-bit integer adds) into GPU g's output. Per chunk
 * of the piece, side streams copy the n - 1 peers' parts of it into a slot of GPU g's scratch
 * (`rsce`: GPU g pulls them; `rspush`: each peer pushes its part), and GPU g's main stream waits
 * for them (events, across GPUs for rspush) and reduces them with the local part into the output;
 * a slot is copied into again once its reduction is over (SLOTS slots); `rspull`: one kernel per
 * GPU whose threads load piece g of every peer's input straight from the peer's memory (SM loads
 * over NVLink, U vectors in flight per source), add the local part and store the sum: the zero-copy
 * reducescatter of ranks that can read each other's buffers. GB/s = bytes a GPU
 * receives ((n - 1) * PER_PEER) / time, the reducescatter's busbw. The GPUs hold 5 ms before these
 * timed runs so that the host's issuing is not timed.
 * Block j of a kernel starts at peer me + 1 + j % (n - 1), so that at any moment the blocks of a GPU
 * store to every peer. Every destination is checked after the timed runs (exit status 1 on any
 * wrong byte). Time: the slowest GPU's event pair, median of --iters; GB/s = bytes a GPU sends /
 * time.
 *   nvl_bench [--gpus N] [--bytes PER_PEER] [--iters N] [--only WAY,...]
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <vector>

#include "bench_check.h"

static __host__ __device__ __forceinline__ size_t lmin(size_t a, size_t b) { return a < b ? a : b; }

/* The slowest of GPUs 0..gpus-1 between its events e0[g] and e1[g], in microseconds (waits for
 * each e1 and checks for a kernel's error). */
static double slowest_us(int gpus, const cudaEvent_t* e0, const cudaEvent_t* e1) {
  double worst = 0;
  for (int g = 0; g < gpus; g++) {
    CUDA_CHECK(cudaSetDevice(g));
    CUDA_CHECK(cudaEventSynchronize(e1[g]));
    CUDA_CHECK(cudaGetLastError());
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, e0[g], e1[g]));
    worst = std::max(worst, (double)ms * 1000.0);
  }
  return worst;
}

/* The median of the timed runs. */
static double median(std::vector<double> t) {
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

/* The wrong elements over GPUs 0..gpus-1: check(g, counter) starts GPU g's checking kernels on
 * st[g], adding what they find into the zeroed counter (managed memory). */
template <class Check> static unsigned long long wrongOver(int gpus, const cudaStream_t* st, Check check) {
  unsigned long long* bad;
  CUDA_CHECK(cudaMallocManaged(&bad, sizeof *bad));
  unsigned long long wrong = 0;
  for (int g = 0; g < gpus; g++) {
    CUDA_CHECK(cudaSetDevice(g));
    *bad = 0;
    check(g, bad);
    CUDA_CHECK(cudaStreamSynchronize(st[g]));
    wrong += *bad;
  }
  CUDA_CHECK(cudaFree(bad));
  return wrong;
}

enum { MAXG = 8 };

struct Targets {
  char* dst[MAXG]; /* where this GPU's piece goes on each peer */
  int n, me;
};

__device__ __forceinline__ int peerOf(const Targets& t, int k) { return (t.me + 1 + k) % t.n; }

/* ---- SM stores: block j copies its share of every peer's piece, peers in staggered order.
 * HINT 0: plain 16-byte stores, loads through L2 only (kiln's copy1); 1: streaming stores
 * (st.global.cs) and non-caching loads; 2: write-through stores (st.global.wt). ---- */
template <int HINT> __device__ __forceinline__ void store16(uint4* d, uint4 v) {
  if constexpr (HINT == 0)
    *d = v;
  else if constexpr (HINT == 1)
    __stcs(d, v);
  else
    __stwt(d, v);
}
template <int HINT> __device__ __forceinline__ uint4 load16(const uint4* s) {
  if constexpr (HINT == 1)
    return __ldcs(s);
  else
    return __ldcg(s);
}

/* Vectors [lo, hi) of s into d, block-strided, U loads in flight per thread. */
template <int U, int HINT>
__device__ __forceinline__ void copyRange(uint4* d, const uint4* s, size_t lo, size_t hi) {
  size_t i = lo + threadIdx.x;
  for (; i + (size_t)(U - 1) * blockDim.x < hi; i += (size_t)U * blockDim.x) {
    uint4 v[U];
#pragma unroll
    for (int u = 0; u < U; u++) v[u] = load16<HINT>(s + i + (size_t)u * blockDim.x);
#pragma unroll
    for (int u = 0; u < U; u++) store16<HINT>(d + i + (size_t)u * blockDim.x, v[u]);
  }
  for (; i < hi; i += blockDim.x) store16<HINT>(d + i, load16<HINT>(s + i));
}

template <int U, int HINT> __global__ void __launch_bounds__(1024)
    smPush(Targets t, const char* src, size_t bytes) {
  const size_t nvec = bytes / 16;
  const size_t per = (nvec + gridDim.x - 1) / gridDim.x;
  const size_t lo = lmin(nvec, per * blockIdx.x), hi = lmin(nvec, lo + per);
  for (int k0 = 0; k0 < t.n - 1; k0++) {
    const int p = peerOf(t, (k0 + (int)blockIdx.x) % (t.n - 1));
    copyRange<U, HINT>((uint4*)t.dst[p], (const uint4*)src, lo, hi);
  }
}

/* The same, but each warp stays on one peer (warp w of block j: peer (w + j) % (n - 1)), the
 * warps of a peer sharing the block's range of it: every block stores to all peers at once. */
__global__ void __launch_bounds__(1024) smPushWarps(Targets t, const char* src, size_t bytes) {
  constexpr int U = 8;
  const size_t nvec = bytes / 16;
  const size_t per = (nvec + gridDim.x - 1) / gridDim.x;
  const size_t lo = lmin(nvec, per * blockIdx.x), hi = lmin(nvec, lo + per);
  const int warps = blockDim.x / 32, w = threadIdx.x / 32, lane = threadIdx.x % 32, np = t.n - 1;
  const int k = (w + (int)blockIdx.x) % np;
  const int mates = warps / np + (w % np < warps % np ? 1 : 0); /* warps on this peer */
  const int rank = w / np;                                      /* this warp among them */
  const int p = peerOf(t, k);
  const uint4* s = (const uint4*)src;
  uint4* d = (uint4*)t.dst[p];
  const size_t step = (size_t)mates * 32;
  size_t i = lo + (size_t)rank * 32 + lane;
  for (; i + (size_t)(U - 1) * step < hi; i += (size_t)U * step) {
    uint4 v[U];
#pragma unroll
    for (int u = 0; u < U; u++) v[u] = __ldcg(s + i + (size_t)u * step);
#pragma unroll
    for (int u = 0; u < U; u++) d[i + (size_t)u * step] = v[u];
  }
  for (; i < hi; i += step) d[i] = __ldcg(s + i);
}

/* ---- SM loads from the peers: block j copies its share of every peer's piece (src[p], p's own
 * memory) into region p of dst, peers in staggered order. ---- */
struct Sources {
  const char* src[MAXG];
  int n, me;
};

template <int U> __global__ void __launch_bounds__(1024) smPull(Sources t, char* dst, size_t bytes) {
  const size_t nvec = bytes / 16;
  const size_t per = (nvec + gridDim.x - 1) / gridDim.x;
  const size_t lo = lmin(nvec, per * blockIdx.x), hi = lmin(nvec, lo + per);
  for (int k0 = 0; k0 < t.n - 1; k0++) {
    const int p = (t.me + 1 + (k0 + (int)blockIdx.x) % (t.n - 1)) % t.n;
    copyRange<U, 0>((uint4*)(dst + (size_t)p * bytes), (const uint4*)t.src[p], lo, hi);
  }
}

/* ---- rspull: out = piece `me` of every GPU's input summed (32-bit adds), the peers' pieces
 * loaded from their memory; src[q] is piece `me` of GPU q's input (src[me] the local one). ---- */
__device__ __forceinline__ void add4(uint4& a, const uint4& b) {
  a.x += b.x;
  a.y += b.y;
  a.z += b.z;
  a.w += b.w;
}

template <int U> __global__ void __launch_bounds__(1024) rsPull(Sources t, uint32_t* out, size_t bytes) {
  const size_t nvec = bytes / 16;
  const size_t per = (nvec + gridDim.x - 1) / gridDim.x;
  const size_t lo = lmin(nvec, per * blockIdx.x), hi = lmin(nvec, lo + per);
  uint4* d = (uint4*)out;
  size_t i = lo + threadIdx.x;
  for (; i + (size_t)(U - 1) * blockDim.x < hi; i += (size_t)U * blockDim.x) {
    uint4 a[U], b[U];
#pragma unroll
    for (int u = 0; u < U; u++) a[u] = __ldcg((const uint4*)t.src[t.me] + i + (size_t)u * blockDim.x);
    for (int k = 1; k < t.n; k++) {
      const uint4* s = (const uint4*)t.src[(t.me + k) % t.n];
#pragma unroll
      for (int u = 0; u < U; u++) b[u] = __ldcg(s + i + (size_t)u * blockDim.x);
#pragma unroll
      for (int u = 0; u < U; u++) add4(a[u], b[u]);
    }
#pragma unroll
    for (int u = 0; u < U; u++) d[i + (size_t)u * blockDim.x] = a[u];
  }
  for (; i < hi; i += blockDim.x) {
    uint4 a = __ldcg((const uint4*)t.src[t.me] + i);
    for (int k = 1; k < t.n; k++) add4(a, __ldcg((const uint4*)t.src[(t.me + k) % t.n] + i));
    d[i] = a;
  }
}

/* ---- TMA: thread 0 of each block runs a pipeline of S stages of C bytes in shared memory ---- */
__device__ __forceinline__ uint32_t smemAddr(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void mbarInit(uint64_t* bar) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smemAddr(bar)));
}

__device__ __forceinline__ void bulkLoad(void* smem, const void* gmem, uint32_t bytes, uint64_t* bar) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smemAddr(bar)), "r"(bytes)
               : "memory");
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
          smemAddr(smem)),
      "l"(gmem), "r"(bytes), "r"(smemAddr(bar))
      : "memory");
}

__device__ __forceinline__ void mbarWait(uint64_t* bar, uint32_t parity) {
  asm volatile(
      "{\n .reg .pred p;\n WAIT_%=:\n mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n @!p bra "
      "WAIT_%=;\n}\n" ::"r"(smemAddr(bar)),
      "r"(parity)
      : "memory");
}

__device__ __forceinline__ void bulkStore(void* gmem, const void* smem, uint32_t bytes) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(gmem), "r"(smemAddr(smem)),
               "r"(bytes)
               : "memory");
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}

/* Waits until at most N of this thread's store groups still read shared memory. */
template <int N> __device__ __forceinline__ void storesRead() {
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}
__device__ __forceinline__ void storesDone() { asm volatile("cp.async.bulk.wait_group 0;" ::: "memory"); }

template <int S> __global__ void tmaPush(Targets t, const char* src, size_t bytes, uint32_t chunk) {
  extern __shared__ __align__(128) char stage[];
  __shared__ uint64_t bars[S];
  if (threadIdx.x != 0) return;
  for (int s = 0; s < S; s++) mbarInit(&bars[s]);
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  /* The work: (n - 1) pieces, each cut into chunks; block j takes a contiguous share of each. */
  const size_t nchunk = (bytes + chunk - 1) / chunk;
  const size_t per = (nchunk + gridDim.x - 1) / gridDim.x;
  const size_t lo = lmin(nchunk, per * blockIdx.x), hi = lmin(nchunk, lo + per);
  const size_t mine = hi - lo, total = mine * (t.n - 1);
  auto item = [&](size_t q, const char** s, char** d, uint32_t* b) {
    const int k = (int)(q / mine);
    const size_t c = lo + q % mine;
    const int p = peerOf(t, (k + (int)blockIdx.x) % (t.n - 1));
    const size_t off = c * chunk;
    *b = (uint32_t)lmin((size_t)chunk, bytes - off);
    *s = src + off;
    *d = t.dst[p] + off;
  };
  /* Loads run S - 2 ahead of stores; a stage is reloaded once the store two items back has read
   * it. */
  constexpr int AHEAD = S > 2 ? S - 2 : 1;
  for (size_t q = 0; q < lmin(total, (size_t)AHEAD); q++) {
    const char* s;
    char* d;
    uint32_t b;
    item(q, &s, &d, &b);
    bulkLoad(stage + (q % S) * chunk, s, b, &bars[q % S]);
  }
  for (size_t q = 0; q < total; q++) {
    const char* s;
    char* d;
    uint32_t b;
    item(q, &s, &d, &b);
    mbarWait(&bars[q % S], (uint32_t)((q / S) & 1));
    bulkStore(d, stage + (q % S) * chunk, b);
    const size_t nq = q + AHEAD;
    if (nq < total) {
      /* Stage nq % S last held item nq - S = q - (S - AHEAD): at most the S - AHEAD newest
       * store groups (q back to that item's successor) may still read shared memory. */
      storesRead<S - AHEAD>();
      item(nq, &s, &d, &b);
      bulkLoad(stage + (nq % S) * chunk, s, b, &bars[nq % S]);
    }
  }
  storesDone();
}

/* ---- rsce: out[i] = own[i] + the n - 1 pulled parts (32-bit adds), 16 bytes a thread ---- */
__global__ void __launch_bounds__(512) reduceParts(uint32_t* out, const uint32_t* own, const uint32_t* parts,
                                                   int nparts, size_t partWords, size_t words) {
  const size_t nv = words / 4;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < nv;
       i += (size_t)gridDim.x * blockDim.x) {
    uint4 a = __ldcg((const uint4*)own + i);
    for (int k = 0; k < nparts; k++) {
      const uint4 b = __ldcg((const uint4*)(parts + (size_t)k * partWords) + i);
      a.x += b.x;
      a.y += b.y;
      a.z += b.z;
      a.w += b.w;
    }
    ((uint4*)out)[i] = a;
  }
}

__host__ __device__ __forceinline__ uint32_t pattern(size_t i, uint32_t seed) {
  return (uint32_t)(i * 2654435761u) ^ seed;
}

/* Holds the stream for ns nanoseconds (the GPU's clock). */
__global__ void holdFor(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  while (t - t0 < ns);
}

/* out (words of GPU g's piece) against the sum of every GPU's piece g. */
__global__ void countWrongSum(const uint32_t* out, size_t words, size_t base, int n,
                              unsigned long long* bad) {
  unsigned long long b = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < words;
       i += (size_t)gridDim.x * blockDim.x) {
    uint32_t want = 0;
    for (int q = 0; q < n; q++) want += pattern(base + i, 0x9e3779b9u * (q + 1));
    b += out[i] != want;
  }
  if (b) atomicAdd(bad, b);
}

/* ---- checks ---- */
__global__ void fillPattern(uint32_t* p, size_t n, uint32_t seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    p[i] = pattern(i, seed);
}
__global__ void countWrong(const uint32_t* p, size_t n, uint32_t seed, unsigned long long* bad) {
  unsigned long long b = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    b += p[i] != ((uint32_t)(i * 2654435761u) ^ seed);
  if (b) atomicAdd(bad, b);
}

/* Wrong words of a reducescatter over GPUs 0..gpus-1: out[g] (`words` words) against the sum of
 * every GPU's piece g (countWrongSum). */
static unsigned long long rs_wrong(int gpus, const cudaStream_t* st, uint32_t* const* out, size_t words) {
  return wrongOver(gpus, st, [&](int g, unsigned long long* bad) {
    countWrongSum<<<264, 512, 0, st[g]>>>(out[g], words, (size_t)g * words, gpus, bad);
  });
}

/* The engine-pull reducescatter (`rsce`, see the top) for several chunk sizes and slot counts;
 * returns the number of ways with a wrong output. */
static int rsce(int gpus, size_t bytes, int iters, bool push) {
  const size_t words = bytes / 4;
  const int np = gpus - 1;
  std::vector<uint32_t*> in(gpus), out(gpus), scratch(gpus);
  std::vector<cudaStream_t> st(gpus), side(gpus);
  std::vector<cudaEvent_t> e0(gpus), e1(gpus), fork(gpus), join(gpus);
  enum { MAXS = 4 };
  std::vector<std::vector<cudaEvent_t>> copied(gpus, std::vector<cudaEvent_t>(MAXS)),
      reduced(gpus, std::vector<cudaEvent_t>(MAXS));
  const size_t maxChunk = (size_t)32 << 20;
  for (int g = 0; g < gpus; g++) {
    CUDA_CHECK(cudaSetDevice(g));
    CUDA_CHECK(cudaMalloc(&in[g], bytes * gpus));
    CUDA_CHECK(cudaMalloc(&out[g], bytes));
    CUDA_CHECK(cudaMalloc(&scratch[g], maxChunk * np * MAXS));
    CUDA_CHECK(cudaStreamCreateWithFlags(&st[g], cudaStreamNonBlocking));
    CUDA_CHECK(cudaStreamCreateWithFlags(&side[g], cudaStreamNonBlocking));
    for (cudaEvent_t* e : {&e0[g], &e1[g]}) CUDA_CHECK(cudaEventCreate(e));
    for (cudaEvent_t* e : {&fork[g], &join[g]})
      CUDA_CHECK(cudaEventCreateWithFlags(e, cudaEventDisableTiming));
    for (int s = 0; s < MAXS; s++) {
      CUDA_CHECK(cudaEventCreateWithFlags(&copied[g][s], cudaEventDisableTiming));
      CUDA_CHECK(cudaEventCreateWithFlags(&reduced[g][s], cudaEventDisableTiming));
    }
    fillPattern<<<264, 512, 0, st[g]>>>(in[g], words * gpus, 0x9e3779b9u * (g + 1));
    CUDA_CHECK(cudaStreamSynchronize(st[g]));
  }
  printf("# %s: %d GPUs, reducescatter of %zu MiB pieces by engine %s + local reductions; GB/s = busbw\n",
         push ? "rspush" : "rsce", gpus, bytes >> 20, push ? "pushes" : "pulls");
  printf("%-5s %9s %6s %7s %10s %9s\n", "way", "chunkKiB", "slots", "blocks", "us", "GB/s");
  int fails = 0;
  struct W {
    size_t chunk;
    int slots, blocks;
  };
  std::vector<W> ws;
  for (size_t c : {(size_t)2 << 20, (size_t)4 << 20, (size_t)8 << 20, (size_t)16 << 20, (size_t)32 << 20})
    for (int s : {2, 3}) ws.push_back({c, s, 132});
  for (int b : {32, 66, 264}) ws.push_back({(size_t)8 << 20, 2, b});
  for (const W& w : ws) {
    /* Round c of every GPU: its copies (pull: the peers' parts into its own slot; push: its parts
     * into the peers' slots) on the side stream, then its reduction on the main stream once every
     * copy into its slot is over; a slot is copied into again once the reduction that read it is
     * over. Issued round by round over the GPUs, so each event is recorded before it is waited
     * for. */
    auto launchAll = [&]() {
      const size_t nchunk = (bytes + w.chunk - 1) / w.chunk;
      for (int g = 0; g < gpus; g++) {
        CUDA_CHECK(cudaSetDevice(g));
        CUDA_CHECK(cudaEventRecord(fork[g], st[g]));
        CUDA_CHECK(cudaStreamWaitEvent(side[g], fork[g], 0));
      }
      for (size_t c = 0; c < nchunk; c++) {
        const int s = (int)(c % w.slots);
        const size_t off = c * w.chunk, len = std::min(w.chunk, bytes - off);
        auto slot = [&](int g) { return (char*)scratch[g] + (size_t)s * np * w.chunk; };
        for (int g = 0; g < gpus; g++) {
          CUDA_CHECK(cudaSetDevice(g));
          /* The slot's last readers: its own reduction (pull), every peer's (push). */
          if (c >= (size_t)w.slots)
            for (int k = 0; k < (push ? np : 1); k++)
              CUDA_CHECK(cudaStreamWaitEvent(side[g], reduced[push ? (g + 1 + k) % gpus : g][s], 0));
          for (int k = 0; k < np; k++) {
            const int p = (g + 1 + k) % gpus;
            if (push) /* into p's part (g - p - 1) mod n: p's part k' holds rank p + 1 + k' */
              CUDA_CHECK(cudaMemcpyAsync(slot(p) + (size_t)((g - p - 1 + gpus) % gpus) * w.chunk,
                                         (const char*)in[g] + (size_t)p * bytes + off, len, cudaMemcpyDefault,
                                         side[g]));
            else
              CUDA_CHECK(cudaMemcpyAsync(slot(g) + (size_t)k * w.chunk,
                                         (const char*)in[p] + (size_t)g * bytes + off, len, cudaMemcpyDefault,
                                         side[g]));
          }
          CUDA_CHECK(cudaEventRecord(copied[g][s], side[g]));
        }
        for (int g = 0; g < gpus; g++) {
          CUDA_CHECK(cudaSetDevice(g));
          for (int k = 0; k < (push ? np : 1); k++)
            CUDA_CHECK(cudaStreamWaitEvent(st[g], copied[push ? (g + 1 + k) % gpus : g][s], 0));
          reduceParts<<<w.blocks, 512, 0, st[g]>>>(
              (uint32_t*)((char*)out[g] + off),
              (const uint32_t*)((const char*)in[g] + (size_t)g * bytes + off), (const uint32_t*)slot(g), np,
              w.chunk / 4, len / 4);
          CUDA_CHECK(cudaEventRecord(reduced[g][s], st[g]));
        }
      }
      for (int g = 0; g < gpus; g++) {
        CUDA_CHECK(cudaSetDevice(g));
        CUDA_CHECK(cudaEventRecord(join[g], side[g]));
        CUDA_CHECK(cudaStreamWaitEvent(st[g], join[g], 0));
      }
    };
    std::vector<double> times;
    for (int it = 0; it < iters + 2; it++) {
      /* Every GPU's previous reductions (reads of the inputs) are over before anyone copies again. */
      for (int g = 0; g < gpus; g++) {
        CUDA_CHECK(cudaSetDevice(g));
        CUDA_CHECK(cudaStreamSynchronize(st[g]));
        CUDA_CHECK(cudaMemsetAsync(out[g], 0, bytes, st[g]));
        CUDA_CHECK(cudaStreamSynchronize(st[g]));
      }
      /* The GPUs hold 5 ms before the timed work, so that the host's issuing (hundreds of calls)
       * is not timed. */
      for (int g = 0; g < gpus; g++) {
        CUDA_CHECK(cudaSetDevice(g));
        holdFor<<<1, 32, 0, st[g]>>>(5000000ull);
        CUDA_CHECK(cudaEventRecord(e0[g], st[g]));
      }
      launchAll();
      for (int g = 0; g < gpus; g++) {
        CUDA_CHECK(cudaSetDevice(g));
        CUDA_CHECK(cudaEventRecord(e1[g], st[g]));
      }
      const double worst = slowest_us(gpus, e0.data(), e1.data());
      if (it >= 2) times.push_back(worst);
    }
    const double us = median(times);
    const unsigned long long wrong = rs_wrong(gpus, st.data(), out.data(), words);
    fails += wrong != 0;
    printf("%-6s %9zu %6d %7d %10.1f %9.1f%s\n", push ? "rspush" : "rsce", w.chunk >> 10, w.slots, w.blocks,
           us, (double)bytes * np / us / 1e3, wrong ? "  WRONG" : "");
    fflush(stdout);
  }
  for (int g = 0; g < gpus; g++) {
    CUDA_CHECK(cudaSetDevice(g));
    cudaFree(in[g]);
    cudaFree(out[g]);
    cudaFree(scratch[g]);
  }
  return fails;
}

/* ---- llhop: LL lines (8 data bytes and the flag twice per 16-byte line, kiln's LL) passed back
 * and forth between GPUs 0 and 1, `rounds` times: thread t of either GPU sends lines t, t + T, ...
 * of round i (flag i) into the other's buffer, after it has received the same lines of round i
 * (or i - 1), so a line is never overwritten before it was read. Store and poll instructions vary:
 * ST 0 st.volatile (kiln's), 1 st.relaxed.sys, 2 st.global (weak); LD 0 ld.volatile (kiln's), 1
 * ld.relaxed.sys. Every line's data is checked. ---- */
template <int ST> __device__ __forceinline__ void llPut(uint4* p, uint32_t d0, uint32_t d1, uint32_t f) {
  if constexpr (ST == 1)
    asm volatile("st.relaxed.sys.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(d0), "r"(f), "r"(d1),
                 "r"(f)
                 : "memory");
  else if constexpr (ST == 2)
    asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(d0), "r"(f), "r"(d1), "r"(f)
                 : "memory");
  else
    asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(d0), "r"(f), "r"(d1),
                 "r"(f)
                 : "memory");
}
template <int LD> __device__ __forceinline__ uint4 llGet(const uint4* p) {
  uint4 v;
  if constexpr (LD == 1)
    asm volatile("ld.relaxed.sys.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p)
                 : "memory");
  else
    asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p)
                 : "memory");
  return v;
}

template <int ST, int LD> __global__ void __launch_bounds__(512)
    llPingPong(uint4* mine, uint4* theirs, size_t nlines, int rounds, bool first, unsigned long long* bad) {
  const size_t T = (size_t)gridDim.x * blockDim.x, t = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  unsigned long long wrong = 0;
  auto send = [&](uint32_t f) {
    for (size_t l = t; l < nlines; l += T) llPut<ST>(theirs + l, (uint32_t)l ^ f, (uint32_t)l * 3u + f, f);
  };
  auto recv = [&](uint32_t f) {
    for (size_t l = t; l < nlines; l += T) {
      uint4 v;
      do v = llGet<LD>(mine + l);
      while (v.y != f || v.w != f);
      wrong += v.x != ((uint32_t)l ^ f) || v.z != (uint32_t)l * 3u + f;
    }
  };
  for (int i = 1; i <= rounds; i++) {
    const uint32_t f = (uint32_t)i * 2u + 1u;
    if (first) {
      send(f);
      recv(f);
    } else {
      recv(f);
      send(f);
    }
  }
  if (wrong) atomicAdd(bad, wrong);
}

/* The SM-pull reducescatter (`rspull`, see the top) for several block counts and loads in
 * flight; returns the number of ways with a wrong output. Peer access is on (main). */
static int rspull(int gpus, size_t bytes, int iters) {
  const size_t words = bytes / 4;
  std::vector<uint32_t*> in(gpus), out(gpus);
  std::vector<cudaStream_t> st(gpus);
  std::vector<cudaEvent_t> e0(gpus), e1(gpus);
  for (int g = 0; g < gpus; g++) {
    CUDA_CHECK(cudaSetDevice(g));
    CUDA_CHECK(cudaMalloc(&in[g], bytes * gpus));
    CUDA_CHECK(cudaMalloc(&out[g], bytes));
    CUDA_CHECK(cudaStreamCreateWithFlags(&st[g], cudaStreamNonBlocking));
    for (cudaEvent_t* e : {&e0[g], &e1[g]}) CUDA_CHECK(cudaEventCreate(e));
    fillPattern<<<264, 512, 0, st[g]>>>(in[g], words * gpus, 0x9e3779b9u * (g + 1));
    CUDA_CHECK(cudaStreamSynchronize(st[g]));
  }
  printf(
      "# rspull: %d GPUs, reducescatter of %zu MiB pieces, SM loads from the peers' inputs; GB/s = busbw\n",
      gpus, bytes >> 20);
  printf("%-6s %7s %7s %3s %10s %9s\n", "way", "blocks", "threads", "U", "us", "GB/s");
  struct W {
    int blocks, threads, u;
  };
  std::vector<W> ws;
  for (int b : {132, 264, 396, 528}) ws.push_back({b, 512, 4});
  for (int b : {132, 264}) ws.push_back({b, 512, 8});
  for (int b : {132, 264}) ws.push_back({b, 1024, 4});
  for (int b : {264, 528}) ws.push_back({b, 256, 8});
  /* GPU g's sources: piece g of every GPU's input. */
  std::vector<Sources> src(gpus);
  for (int g = 0; g < gpus; g++) {
    memset(&src[g], 0, sizeof src[g]);
    src[g].n = gpus;
    src[g].me = g;
    for (int q = 0; q < gpus; q++) src[g].src[q] = (const char*)in[q] + (size_t)g * bytes;
  }
  int fails = 0;
  for (const W& w : ws) {
    std::vector<double> times;
    for (int it = 0; it < iters + 2; it++) {
      for (int g = 0; g < gpus; g++) {
        CUDA_CHECK(cudaSetDevice(g));
        CUDA_CHECK(cudaMemsetAsync(out[g], 0, bytes, st[g]));
      }
      for (int g = 0; g < gpus; g++) {
        CUDA_CHECK(cudaSetDevice(g));
        CUDA_CHECK(cudaStreamSynchronize(st[g]));
      }
      for (int g = 0; g < gpus; g++) {
        CUDA_CHECK(cudaSetDevice(g));
        CUDA_CHECK(cudaEventRecord(e0[g], st[g]));
        if (w.u == 8)
          rsPull<8><<<w.blocks, w.threads, 0, st[g]>>>(src[g], out[g], bytes);
        else
          rsPull<4><<<w.blocks, w.threads, 0, st[g]>>>(src[g], out[g], bytes);
        CUDA_CHECK(cudaEventRecord(e1[g], st[g]));
      }
      const double worst = slowest_us(gpus, e0.data(), e1.data());
      if (it >= 2) times.push_back(worst);
    }
    const double us = median(times);
    const unsigned long long wrong = rs_wrong(gpus, st.data(), out.data(), words);
    fails += wrong != 0;
    printf("%-6s %7d %7d %3d %10.1f %9.1f%s\n", "rspull", w.blocks, w.threads, w.u, us,
           (double)bytes * (gpus - 1) / us / 1e3, wrong ? "  WRONG" : "");
    fflush(stdout);
  }
  for (int g = 0; g < gpus; g++) {
    CUDA_CHECK(cudaSetDevice(g));
    cudaFree(in[g]);
    cudaFree(out[g]);
  }
  return fails;
}

static int llhop(int iters) {
  int have = 0;
  cudaGetDeviceCount(&have);
  if (have < 2) return 0;
  const size_t maxLines = (size_t)256 << 10 >> 3; /* 256 KiB of data */
  uint4* buf[2];
  unsigned long long* bad[2];
  cudaStream_t st[2];
  cudaEvent_t e0[2], e1[2];
  for (int g = 0; g < 2; g++) {
    CUDA_CHECK(cudaSetDevice(g));
    const int p = 1 - g;
    cudaError_t e = cudaDeviceEnablePeerAccess(p, 0);
    if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) CUDA_CHECK(e);
    cudaGetLastError();
    CUDA_CHECK(cudaMalloc(&buf[g], maxLines * 16));
    CUDA_CHECK(cudaMemset(buf[g], 0, maxLines * 16));
    CUDA_CHECK(cudaMallocManaged(&bad[g], sizeof(unsigned long long)));
    *bad[g] = 0;
    CUDA_CHECK(cudaStreamCreateWithFlags(&st[g], cudaStreamNonBlocking));
    CUDA_CHECK(cudaEventCreate(&e0[g]));
    CUDA_CHECK(cudaEventCreate(&e1[g]));
  }
  CUDA_CHECK(cudaDeviceSynchronize());
  printf("# llhop: LL lines GPU0 <-> GPU1; us = one hop (round trip / 2), GB/s = data bytes / hop\n");
  printf("%-6s %3s %3s %7s %9s %9s %9s\n", "way", "st", "ld", "blocks", "bytes", "us", "GB/s");
  int fails = 0;
  const int rounds = 1000;
  for (int st_ld = 0; st_ld < 4; st_ld++)
    for (int blocks : {1, 4, 16, 64})
      for (size_t bytes :
           {(size_t)8, (size_t)1024, (size_t)4096, (size_t)16384, (size_t)65536, (size_t)262144}) {
        const size_t nlines = (bytes + 7) / 8;
        if ((size_t)blocks * 512 > nlines * 8 && blocks > 1) continue; /* more blocks than lines x 8 */
        auto k = st_ld == 0   ? llPingPong<0, 0>
                 : st_ld == 1 ? llPingPong<1, 0>
                 : st_ld == 2 ? llPingPong<2, 0>
                              : llPingPong<0, 1>;
        *bad[0] = *bad[1] = 0; /* this way's wrong lines only */
        std::vector<double> times;
        for (int it = 0; it < iters + 1; it++) {
          /* Fresh flags every run: the rounds start again at 1, so the lines are cleared. */
          for (int g = 0; g < 2; g++) {
            CUDA_CHECK(cudaSetDevice(g));
            CUDA_CHECK(cudaMemsetAsync(buf[g], 0, nlines * 16, st[g]));
            CUDA_CHECK(cudaStreamSynchronize(st[g]));
          }
          for (int g = 0; g < 2; g++) {
            CUDA_CHECK(cudaSetDevice(g));
            CUDA_CHECK(cudaEventRecord(e0[g], st[g]));
            k<<<blocks, 512, 0, st[g]>>>(buf[g], buf[1 - g], nlines, rounds, g == 0, bad[g]);
            CUDA_CHECK(cudaEventRecord(e1[g], st[g]));
          }
          const double worst = slowest_us(2, e0, e1);
          if (it >= 1) times.push_back(worst);
        }
        const double us = median(times) / (2.0 * rounds);
        const unsigned long long wrong = *bad[0] + *bad[1];
        fails += wrong != 0;
        static const int kSt[] = {0, 1, 2, 0}, kLd[] = {0, 0, 0, 1};
        printf("%-6s %3d %3d %7d %9zu %9.3f %9.2f%s\n", "llhop", kSt[st_ld], kLd[st_ld], blocks, bytes, us,
               (double)bytes / us / 1e3, wrong ? "  WRONG" : "");
        fflush(stdout);
      }
  for (int g = 0; g < 2; g++) {
    CUDA_CHECK(cudaSetDevice(g));
    cudaFree(buf[g]);
    cudaFree(bad[g]);
  }
  return fails;
}

/* ---- llx: a one-shot allreduce (32-bit integer sums) of `lines` LL lines among n GPUs, `rounds`
 * times back to back, each round into receive areas of its own ([round][source rank][line] on every
 * GPU, flag 2 * round + 1). V 0: a thread per line stores it into every peer's area, then polls
 * every peer's line (kernels/sym.cuh bodyLL); V 1: n lanes per line, lane j < n - 1 stores into and
 * polls peer me + 1 + j, lane n - 1 holds the own input, the n values summed in rank order through
 * shuffles (n divides 32); V 2: blocks by role, `lpb` lines each: blocks of role r < n - 1 store
 * their lines into peer me + 1 + r only, blocks of role n - 1 poll every peer's lines and reduce;
 * a store block of range j sends round i + 1 once this GPU's reduce block of range j is done with
 * round i (a local flag), so rounds chain as back-to-back calls do. ---- */
struct LLX {
  uint4* area[MAXG];
  unsigned* done; /* V 2: per range, rounds reduced here */
  int n, me, lpb;
  size_t lines;
};

__device__ __forceinline__ uint2 llxPoll(const uint4* p, uint32_t f) {
  uint4 v;
  do v = llGet<0>(p);
  while (v.y != f || v.w != f);
  return make_uint2(v.x, v.z);
}

/* One line reduced: this GPU's v plus every peer q's line at src(q) (every load issued first, then
 * a poll on those not there yet), 32-bit sums in rank order. */
template <class Src> __device__ __forceinline__ uint2 llxReduce(int n, int me, uint2 v, uint32_t f, Src src) {
  uint4 got[MAXG];
  for (int q = 0; q < n; q++)
    if (q != me) got[q] = llGet<0>(src(q));
  uint32_t s0 = 0, s1 = 0;
  for (int q = 0; q < n; q++) {
    uint2 w = v;
    if (q != me) w = got[q].y == f && got[q].w == f ? make_uint2(got[q].x, got[q].z) : llxPoll(src(q), f);
    s0 += w.x;
    s1 += w.y;
  }
  return make_uint2(s0, s1);
}

template <int V> __global__ void __launch_bounds__(512)
    llxKernel(LLX x, const uint2* in, uint2* out, int rounds) {
  const int n = x.n, me = x.me;
  const size_t T = (size_t)gridDim.x * blockDim.x, t = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  auto at = [&](int p, int i, int src, size_t l) {
    return x.area[p] + ((size_t)(i * n + src) * x.lines + l);
  };
  for (int i = 0; i < rounds; i++) {
    const uint32_t f = (uint32_t)i * 2u + 1u;
    if constexpr (V == 0) {
      for (size_t l = t; l < x.lines; l += T) {
        const uint2 v = in[l];
        for (int k = 1; k < n; k++) llPut<0>(at((me + k) % n, i, me, l), v.x, v.y, f);
        uint32_t s0 = 0, s1 = 0;
        for (int q = 0; q < n; q++) {
          const uint2 w = q == me ? v : llxPoll(at(me, i, q, l), f);
          s0 += w.x;
          s1 += w.y;
        }
        out[l] = make_uint2(s0, s1);
      }
    } else if constexpr (V == 1) {
      const int lane = threadIdx.x & 31, gpw = 32 / n, gi = lane / n, j = lane % n;
      const size_t warp = t / 32, nwarps = T / 32;
      for (size_t base = warp * gpw; base < x.lines; base += nwarps * gpw) {
        const size_t l = base + gi;
        const bool live = l < x.lines;
        uint2 w = make_uint2(0, 0);
        if (live) {
          const uint2 v = in[l];
          if (j < n - 1) {
            const int p = (me + 1 + j) % n;
            llPut<0>(at(p, i, me, l), v.x, v.y, f);
            w = llxPoll(at(me, i, p, l), f);
          } else {
            w = v;
          }
        }
        uint32_t s0 = 0, s1 = 0;
        for (int r = 0; r < n; r++) {
          const int src = gi * n + (r == me ? n - 1 : (r - me - 1 + n) % n);
          s0 += __shfl_sync(0xffffffffu, w.x, src);
          s1 += __shfl_sync(0xffffffffu, w.y, src);
        }
        if (live && j == 0) out[l] = make_uint2(s0, s1);
      }
    } else {
      const int nb = gridDim.x / n, role = blockIdx.x / nb, j = blockIdx.x % nb;
      const size_t lo = (size_t)j * x.lpb, hi = lo + x.lpb < x.lines ? lo + x.lpb : x.lines;
      if (role < n - 1) {
        const int p = (me + 1 + role) % n;
        if (i > 0) {
          if (threadIdx.x == 0)
            while (*(volatile unsigned*)&x.done[j] < (unsigned)i) {}
          __syncthreads();
        }
        for (size_t l = lo + threadIdx.x; l < hi; l += blockDim.x) {
          const uint2 v = in[l];
          llPut<0>(at(p, i, me, l), v.x, v.y, f);
        }
      } else {
        for (size_t l = lo + threadIdx.x; l < hi; l += blockDim.x)
          out[l] = llxReduce(n, me, in[l], f, [&](int q) { return at(me, i, q, l); });
        __syncthreads();
        if (threadIdx.x == 0) {
          __threadfence();
          atomicExch(&x.done[j], (unsigned)i + 1);
        }
      }
    }
  }
}

__global__ void llxCheck(const uint2* out, size_t lines, int n, unsigned long long* bad) {
  unsigned long long b = 0;
  for (size_t l = blockIdx.x * (size_t)blockDim.x + threadIdx.x; l < lines;
       l += (size_t)gridDim.x * blockDim.x) {
    uint32_t s0 = 0, s1 = 0;
    for (int q = 0; q < n; q++) {
      s0 += pattern(2 * l, 0x9e3779b9u * (q + 1));
      s1 += pattern(2 * l + 1, 0x9e3779b9u * (q + 1));
    }
    b += out[l].x != s0 || out[l].y != s1;
  }
  if (b) atomicAdd(bad, b);
}

/* What llx and llg hold per GPU: the receive areas, the input (GPU g's pattern) and the output of
 * up to 64 KiB of data (maxLines lines), `nwords` counters (llx: rounds reduced per range; llg:
 * call numbers per block), a stream and an event pair. */
struct LLGpus {
  static constexpr size_t maxLines = (size_t)64 << 10 >> 3;
  int n;
  std::vector<uint4*> area;
  std::vector<uint2*> in, out;
  std::vector<unsigned*> words;
  std::vector<cudaStream_t> st;
  std::vector<cudaEvent_t> e0, e1;
  LLGpus(int gpus, size_t areaBytes, size_t nwords)
      : n(gpus), area(gpus), in(gpus), out(gpus), words(gpus), st(gpus), e0(gpus), e1(gpus) {
    for (int g = 0; g < n; g++) {
      CUDA_CHECK(cudaSetDevice(g));
      CUDA_CHECK(cudaMalloc(&area[g], areaBytes));
      CUDA_CHECK(cudaMalloc(&in[g], maxLines * 8));
      CUDA_CHECK(cudaMalloc(&out[g], maxLines * 8));
      CUDA_CHECK(cudaMalloc(&words[g], nwords * sizeof(unsigned)));
      CUDA_CHECK(cudaStreamCreateWithFlags(&st[g], cudaStreamNonBlocking));
      CUDA_CHECK(cudaEventCreate(&e0[g]));
      CUDA_CHECK(cudaEventCreate(&e1[g]));
      fillPattern<<<64, 512, 0, st[g]>>>((uint32_t*)in[g], maxLines * 2, 0x9e3779b9u * (g + 1));
      CUDA_CHECK(cudaStreamSynchronize(st[g]));
    }
  }
  ~LLGpus() {
    for (int g = 0; g < n; g++) {
      cudaSetDevice(g);
      cudaFree(area[g]);
      cudaFree(in[g]);
      cudaFree(out[g]);
      cudaFree(words[g]);
    }
  }
  /* GPU g's arguments for calls of `lines` lines, lpb lines a block (llx's V 2). */
  LLX args(int g, size_t lines, int lpb) const {
    LLX x;
    memset(&x, 0, sizeof x);
    x.n = n;
    x.me = g;
    x.lines = lines;
    x.lpb = lpb;
    x.done = words[g];
    for (int p = 0; p < n; p++) x.area[p] = area[p];
    return x;
  }
};

static int llx(int gpus, int iters) {
  if (gpus < 2 || 32 % gpus != 0) return 0;
  const size_t maxLines = LLGpus::maxLines;
  const int rounds = 100;
  LLGpus G(gpus, (size_t)rounds * gpus * maxLines * 16, maxLines);
  auto& st = G.st;
  auto& e0 = G.e0;
  auto& e1 = G.e1;
  auto& out = G.out;
  printf("# llx: one-shot allreduce of LL lines among %d GPUs; us per call (%d rounds back to back)\n", gpus,
         rounds);
  printf("%-5s %2s %6s %7s %9s %9s\n", "way", "V", "lpb", "blocks", "bytes", "us");
  int fails = 0;
  struct W {
    int v, lpb;
  };
  for (W w : {W{0, 256}, W{0, 64}, W{1, 128}, W{2, 256}, W{2, 64}, W{2, 1024}})
    for (size_t bytes : {(size_t)64, (size_t)1024, (size_t)4096, (size_t)16384, (size_t)65536}) {
      const size_t lines = bytes / 8;
      const int ranges = (int)((lines + w.lpb - 1) / w.lpb);
      const int blocks = w.v == 2 ? ranges * gpus : ranges;
      std::vector<double> times;
      for (int it = 0; it < iters + 1; it++) {
        for (int g = 0; g < gpus; g++) {
          CUDA_CHECK(cudaSetDevice(g));
          CUDA_CHECK(cudaMemsetAsync(G.area[g], 0, (size_t)rounds * gpus * lines * 16, st[g]));
          CUDA_CHECK(cudaMemsetAsync(G.words[g], 0, maxLines * sizeof(unsigned), st[g]));
          CUDA_CHECK(cudaStreamSynchronize(st[g]));
        }
        for (int g = 0; g < gpus; g++) {
          CUDA_CHECK(cudaSetDevice(g));
          const LLX x = G.args(g, lines, w.lpb);
          CUDA_CHECK(cudaEventRecord(e0[g], st[g]));
          if (w.v == 0)
            llxKernel<0><<<blocks, 512, 0, st[g]>>>(x, G.in[g], out[g], rounds);
          else if (w.v == 1)
            llxKernel<1><<<blocks, 512, 0, st[g]>>>(x, G.in[g], out[g], rounds);
          else
            llxKernel<2><<<blocks, 512, 0, st[g]>>>(x, G.in[g], out[g], rounds);
          CUDA_CHECK(cudaEventRecord(e1[g], st[g]));
        }
        const double worst = slowest_us(gpus, e0.data(), e1.data());
        if (it >= 1) times.push_back(worst);
      }
      const unsigned long long wrong = wrongOver(gpus, st.data(), [&](int g, unsigned long long* bad) {
        llxCheck<<<64, 256, 0, st[g]>>>(out[g], lines, gpus, bad);
      });
      fails += wrong != 0;
      printf("%-5s %2d %6d %7d %9zu %9.3f%s\n", "llx", w.v, w.lpb, blocks, bytes, median(times) / rounds,
             wrong ? "  WRONG" : "");
      fflush(stdout);
    }
  return fails;
}

/* ---- llg: the one-shot LL allreduce of llx as kiln runs it, one call per kernel launch: every GPU
 * captures K launches in a CUDA graph and replays it; a launch reads its call number from
 * seq[block] (and leaves it one higher), takes flag 2 * call + 1 and the receive area of the call's
 * parity ([parity][source rank][line]). V 0: a thread per line, every peer's store and poll in a
 * loop; V 2: blocks by role, `lpb` lines each, role r < n - 1 storing into peer me + 1 + r only,
 * role n - 1 polling and reducing. A call's lines go out after the call before ended on this GPU,
 * in which every peer's lines of that call were received (so the peer had ended the call before,
 * the last reader of the area this call writes). ---- */
template <int V> __global__ void __launch_bounds__(512)
    llgKernel(LLX x, const uint2* in, uint2* out, unsigned* seq) {
  const int n = x.n, me = x.me;
  __shared__ unsigned call;
  if (threadIdx.x == 0) call = *(volatile unsigned*)&seq[blockIdx.x] + 1;
  __syncthreads();
  const uint32_t f = call * 2u + 1u;
  const int par = (int)(call & 1u);
  auto at = [&](int p, int src, size_t l) { return x.area[p] + ((size_t)(par * n + src) * x.lines + l); };
  if constexpr (V == 0) {
    const size_t T = (size_t)gridDim.x * blockDim.x, t = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    for (size_t l = t; l < x.lines; l += T) {
      const uint2 v = in[l];
      for (int k = 1; k < n; k++) llPut<0>(at((me + k) % n, me, l), v.x, v.y, f);
      out[l] = llxReduce(n, me, v, f, [&](int q) { return at(me, q, l); });
    }
  } else {
    const int nb = gridDim.x / n, role = blockIdx.x / nb, j = blockIdx.x % nb;
    const size_t lo = (size_t)j * x.lpb, hi = lo + x.lpb < x.lines ? lo + x.lpb : x.lines;
    if (role < n - 1) {
      const int p = (me + 1 + role) % n;
      for (size_t l = lo + threadIdx.x; l < hi; l += blockDim.x) {
        const uint2 v = in[l];
        llPut<0>(at(p, me, l), v.x, v.y, f);
      }
    } else {
      for (size_t l = lo + threadIdx.x; l < hi; l += blockDim.x)
        out[l] = llxReduce(n, me, in[l], f, [&](int q) { return at(me, q, l); });
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) seq[blockIdx.x] = call;
}

static int llg(int gpus, int iters) {
  if (gpus < 2) return 0;
  const size_t maxLines = LLGpus::maxLines;
  const int K = 20; /* calls per graph */
  LLGpus G(gpus, 2 * gpus * maxLines * 16, 4096);
  auto& st = G.st;
  auto& e0 = G.e0;
  auto& e1 = G.e1;
  auto& out = G.out;
  printf(
      "# llg: one-shot LL allreduce among %d GPUs, one call per launch, %d launches per CUDA graph; us per "
      "call\n",
      gpus, K);
  printf("%-5s %2s %6s %7s %9s %9s\n", "way", "V", "lpb", "blocks", "bytes", "us");
  int fails = 0;
  struct W {
    int v, lpb;
  };
  for (W w : {W{0, 256}, W{2, 256}, W{2, 64}, W{2, 32}})
    for (size_t bytes : {(size_t)64, (size_t)1024, (size_t)4096, (size_t)16384, (size_t)65536}) {
      const size_t lines = bytes / 8;
      const int ranges = (int)((lines + w.lpb - 1) / w.lpb);
      const int blocks = w.v == 2 ? ranges * gpus : ranges;
      if (blocks > 1024) continue;
      std::vector<cudaGraphExec_t> exec(gpus);
      for (int g = 0; g < gpus; g++) {
        CUDA_CHECK(cudaSetDevice(g));
        CUDA_CHECK(cudaMemsetAsync(G.area[g], 0, 2 * gpus * lines * 16, st[g]));
        CUDA_CHECK(cudaMemsetAsync(G.words[g], 0, 4096 * sizeof(unsigned), st[g]));
        CUDA_CHECK(cudaStreamSynchronize(st[g]));
        const LLX x = G.args(g, lines, w.lpb);
        cudaGraph_t graph;
        CUDA_CHECK(cudaStreamBeginCapture(st[g], cudaStreamCaptureModeThreadLocal));
        for (int k = 0; k < K; k++) {
          if (w.v == 0)
            llgKernel<0><<<blocks, 512, 0, st[g]>>>(x, G.in[g], out[g], G.words[g]);
          else
            llgKernel<2><<<blocks, 512, 0, st[g]>>>(x, G.in[g], out[g], G.words[g]);
        }
        CUDA_CHECK(cudaStreamEndCapture(st[g], &graph));
        CUDA_CHECK(cudaGraphInstantiate(&exec[g], graph, 0));
        CUDA_CHECK(cudaGraphDestroy(graph));
      }
      std::vector<double> times;
      for (int it = 0; it < iters + 2; it++) {
        for (int g = 0; g < gpus; g++) {
          CUDA_CHECK(cudaSetDevice(g));
          CUDA_CHECK(cudaEventRecord(e0[g], st[g]));
          CUDA_CHECK(cudaGraphLaunch(exec[g], st[g]));
          CUDA_CHECK(cudaEventRecord(e1[g], st[g]));
        }
        const double worst = slowest_us(gpus, e0.data(), e1.data());
        if (it >= 2) times.push_back(worst / K);
      }
      const unsigned long long wrong = wrongOver(gpus, st.data(), [&](int g, unsigned long long* bad) {
        llxCheck<<<64, 256, 0, st[g]>>>(out[g], lines, gpus, bad);
      });
      for (int g = 0; g < gpus; g++) CUDA_CHECK(cudaGraphExecDestroy(exec[g]));
      fails += wrong != 0;
      printf("%-5s %2d %6d %7d %9zu %9.3f%s\n", "llg", w.v, w.lpb, blocks, bytes, median(times),
             wrong ? "  WRONG" : "");
      fflush(stdout);
    }
  return fails;
}

int main(int argc, char** argv) {
  int gpus = 4, iters = 10;
  size_t bytes = (size_t)256 << 20;
  const char* only = NULL; /* --only WAY[,WAY...]: just these (names as printed, rsce included) */
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--gpus") && i + 1 < argc)
      gpus = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--bytes") && i + 1 < argc) {
      char* end = NULL;
      bytes = strtoull(argv[++i], &end, 0);
      if (end && (*end == 'K' || *end == 'k'))
        bytes <<= 10;
      else if (end && (*end == 'M' || *end == 'm'))
        bytes <<= 20;
      else if (end && (*end == 'G' || *end == 'g'))
        bytes <<= 30;
    } else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
      iters = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--only") && i + 1 < argc)
      only = argv[++i];
    else {
      fprintf(stderr, "usage: nvl_bench [--gpus N] [--bytes PER_PEER] [--iters N] [--only WAY,...]\n");
      return 2;
    }
  }
  int have = 0;
  if (cudaGetDeviceCount(&have) != cudaSuccess || have < 2) {
    printf("nvl_bench: skipped: no GPU pair (%d visible)\n", have);
    return 0;
  }
  gpus = std::min(std::max(gpus, 2), std::min(have, (int)MAXG));
  bytes = bytes / 16 * 16;
  std::vector<char*> src(gpus), dst(gpus);
  std::vector<cudaStream_t> st(gpus), st2(gpus);
  std::vector<cudaEvent_t> e0(gpus), e1(gpus), fork(gpus), join(gpus);
  for (int g = 0; g < gpus; g++) {
    CUDA_CHECK(cudaSetDevice(g));
    for (int p = 0; p < gpus; p++)
      if (p != g) {
        cudaError_t e = cudaDeviceEnablePeerAccess(p, 0);
        if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) CUDA_CHECK(e);
      }
    cudaGetLastError();
    CUDA_CHECK(cudaMalloc(&src[g], bytes));
    CUDA_CHECK(cudaMalloc(&dst[g], bytes * gpus)); /* region q: from rank q */
    CUDA_CHECK(cudaStreamCreateWithFlags(&st[g], cudaStreamNonBlocking));
    CUDA_CHECK(cudaStreamCreateWithFlags(&st2[g], cudaStreamNonBlocking));
    CUDA_CHECK(cudaEventCreate(&e0[g]));
    CUDA_CHECK(cudaEventCreate(&e1[g]));
    CUDA_CHECK(cudaEventCreateWithFlags(&fork[g], cudaEventDisableTiming));
    CUDA_CHECK(cudaEventCreateWithFlags(&join[g], cudaEventDisableTiming));
    fillPattern<<<264, 512, 0, st[g]>>>((uint32_t*)src[g], bytes / 4, 0x9e3779b9u * (g + 1));
  }
  auto targets = [&](int g) {
    Targets t;
    memset(&t, 0, sizeof t);
    t.n = gpus;
    t.me = g;
    for (int p = 0; p < gpus; p++) t.dst[p] = dst[p] + (size_t)g * bytes;
    return t;
  };
  auto sources = [&](int g) { /* smpull: every GPU's piece, each in its own memory */
                              Sources s;
                              memset(&s, 0, sizeof s);
                              s.n = gpus;
                              s.me = g;
                              for (int p = 0; p < gpus; p++) s.src[p] = src[p];
                              return s;
  };
  struct Way {
    const char* name;
    int blocks, threads, u, hint;
    uint32_t chunk;
    int stages;
  };
  std::vector<Way> ways;
  for (int b : {64, 128, 132, 192, 264, 396}) ways.push_back({"sm", b, 512, 8, 0, 0, 0});
  for (int b : {128, 264}) ways.push_back({"sm", b, 1024, 8, 0, 0, 0});
  for (int b : {128, 264}) ways.push_back({"sm", b, 256, 16, 0, 0, 0});
  for (int b : {128, 264}) ways.push_back({"sm", b, 512, 4, 0, 0, 0});
  for (int h : {1, 2})
    for (int b : {128, 264}) ways.push_back({"sm", b, 512, 8, h, 0, 0});
  for (int b : {129, 264}) ways.push_back({"warps", b, 384, 8, 0, 0, 0});
  for (int b : {8, 64}) ways.push_back({"tma", b, 32, 0, 0, 32768u, 4});
  ways.push_back({"tma", 8, 32, 0, 0, 24576u, 8});
  ways.push_back({"ce", 0, 0, 0, 0, 0, 0});
  ways.push_back({"ceb", 0, 0, 0, 0, 0, 0});
  ways.push_back({"pull", 0, 0, 0, 0, 0, 0});
  for (int b : {132, 264, 396}) ways.push_back({"smpull", b, 512, 8, 0, 0, 0});
  for (int b : {132, 264}) ways.push_back({"smpull", b, 512, 4, 0, 0, 0});
  for (int b : {132, 264}) ways.push_back({"smpull", b, 1024, 4, 0, 0, 0});
  for (int k : {1, 2, 3})
    for (int b : {32, 64}) ways.push_back({"cesm", b, 512, 8, 0, (uint32_t)k, 0});
  for (int g = 0; g < gpus; g++) { /* per device */
    CUDA_CHECK(cudaSetDevice(g));
    CUDA_CHECK(cudaFuncSetAttribute((const void*)tmaPush<4>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    200 * 1024));
    CUDA_CHECK(cudaFuncSetAttribute((const void*)tmaPush<8>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    200 * 1024));
  }
  printf("# nvl_bench: %d GPUs each pushing %zu MiB to every peer at once; GB/s = bytes a GPU sends / time\n",
         gpus, bytes >> 20);
  printf("%-6s %7s %7s %3s %4s %7s %7s %10s %9s\n", "way", "blocks", "threads", "U", "hint", "chunk",
         "stages", "us", "GB/s");
  int fails = 0;
  auto chosen = [&](const char* name) {
    if (!only) return true;
    const size_t n = strlen(name);
    for (const char* p = only; *p;) {
      const char* e = strchr(p, ',');
      const size_t len = e ? (size_t)(e - p) : strlen(p);
      if (len == n && !strncmp(p, name, n)) return true;
      p += len + (e ? 1 : 0);
    }
    return false;
  };
  for (const Way& w : ways) {
    if (!chosen(w.name)) continue;
    for (int g = 0; g < gpus; g++) {
      CUDA_CHECK(cudaSetDevice(g));
      CUDA_CHECK(cudaMemsetAsync(dst[g], 0, bytes * gpus, st[g]));
      CUDA_CHECK(cudaStreamSynchronize(st[g]));
    }
    /* The engine's copies of the first `n` bytes of GPU g's piece into its peers, one after the
     * other on g's stream (ce, and cesm's engine part). */
    auto engineCopies = [&](int g, const Targets& t, size_t n) {
      for (int k = 0; k < gpus - 1; k++)
        CUDA_CHECK(cudaMemcpyAsync(t.dst[(g + 1 + k) % gpus], src[g], n, cudaMemcpyDefault, st[g]));
    };
    auto launch = [&](int g) {
      Targets t = targets(g);
      if (!strcmp(w.name, "sm")) {
        auto k = w.u == 4      ? smPush<4, 0>
                 : w.u == 16   ? smPush<16, 0>
                 : w.hint == 1 ? smPush<8, 1>
                 : w.hint == 2 ? smPush<8, 2>
                               : smPush<8, 0>;
        k<<<w.blocks, w.threads, 0, st[g]>>>(t, src[g], bytes);
      } else if (!strcmp(w.name, "warps")) {
        smPushWarps<<<w.blocks, w.threads, 0, st[g]>>>(t, src[g], bytes);
      } else if (!strcmp(w.name, "tma")) {
        const size_t sm = (size_t)w.chunk * w.stages;
        if (w.stages == 4)
          tmaPush<4><<<w.blocks, w.threads, sm, st[g]>>>(t, src[g], bytes, w.chunk);
        else
          tmaPush<8><<<w.blocks, w.threads, sm, st[g]>>>(t, src[g], bytes, w.chunk);
      } else if (!strcmp(w.name, "cesm")) {
        const size_t ce = bytes / 8 * (8 - w.chunk) / 16 * 16;
        Targets tail = t;
        for (int p = 0; p < gpus; p++) tail.dst[p] += ce;
        CUDA_CHECK(cudaEventRecord(fork[g], st[g]));
        CUDA_CHECK(cudaStreamWaitEvent(st2[g], fork[g], 0));
        smPush<8, 0><<<w.blocks, w.threads, 0, st2[g]>>>(tail, src[g] + ce, bytes - ce);
        engineCopies(g, t, ce);
        CUDA_CHECK(cudaEventRecord(join[g], st2[g]));
        CUDA_CHECK(cudaStreamWaitEvent(st[g], join[g], 0));
      } else if (!strcmp(w.name, "ceb")) {
        void* ds[MAXG];
        const void* ss[MAXG];
        size_t sz[MAXG];
        for (int k = 0; k < gpus - 1; k++) {
          ds[k] = t.dst[(g + 1 + k) % gpus];
          ss[k] = src[g];
          sz[k] = bytes;
        }
        cudaMemcpyAttributes at;
        memset(&at, 0, sizeof at);
        at.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
        size_t idx = 0;
        CUDA_CHECK(cudaMemcpyBatchAsync(ds, ss, sz, (size_t)(gpus - 1), &at, &idx, 1, st[g]));
      } else if (!strcmp(w.name, "smpull")) {
        const Sources so = sources(g);
        if (w.u == 4)
          smPull<4><<<w.blocks, w.threads, 0, st[g]>>>(so, dst[g], bytes);
        else
          smPull<8><<<w.blocks, w.threads, 0, st[g]>>>(so, dst[g], bytes);
      } else if (!strcmp(w.name, "pull")) {
        for (int k = 0; k < gpus - 1; k++) {
          const int p = (g + 1 + k) % gpus;
          CUDA_CHECK(cudaMemcpyAsync(dst[g] + (size_t)p * bytes, src[p], bytes, cudaMemcpyDefault, st[g]));
        }
      } else {
        engineCopies(g, t, bytes);
      }
    };
    std::vector<double> times;
    for (int it = 0; it < iters + 2; it++) {
      for (int g = 0; g < gpus; g++) {
        CUDA_CHECK(cudaSetDevice(g));
        CUDA_CHECK(cudaEventRecord(e0[g], st[g]));
        launch(g);
        CUDA_CHECK(cudaEventRecord(e1[g], st[g]));
      }
      const double worst = slowest_us(gpus, e0.data(), e1.data());
      if (it >= 2) times.push_back(worst);
    }
    const double us = median(times);
    /* Every region from a peer must hold that peer's pattern. */
    const unsigned long long wrong = wrongOver(gpus, st.data(), [&](int g, unsigned long long* bad) {
      for (int q = 0; q < gpus; q++)
        if (q != g)
          countWrong<<<264, 512, 0, st[g]>>>((uint32_t*)(dst[g] + (size_t)q * bytes), bytes / 4,
                                             0x9e3779b9u * (q + 1), bad);
    });
    fails += wrong != 0;
    printf("%-6s %7d %7d %3d %4d %7u %7d %10.1f %9.1f%s\n", w.name, w.blocks, w.threads, w.u, w.hint, w.chunk,
           w.stages, us, (double)bytes * (gpus - 1) / us / 1e3, wrong ? "  WRONG" : "");
    fflush(stdout);
  }
  if (chosen("rsce")) fails += rsce(gpus, bytes, iters, false);
  if (chosen("rspush")) fails += rsce(gpus, bytes, iters, true);
  if (chosen("rspull")) fails += rspull(gpus, bytes, iters);
  if (chosen("llhop")) fails += llhop(iters);
  if (chosen("llx")) fails += llx(gpus, iters);
  if (chosen("llg")) fails += llg(gpus, iters);
  return fails ? 1 : 0;
}
