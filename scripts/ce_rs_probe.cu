/* Probe: reducescatter through the copy engine, pipelined (no kiln library; one process drives
 * every GPU). Per call and rank r: a meeting kernel; a reduce kernel on a side stream; on the
 * call's stream, chunk by chunk, a wait for each peer's "slot free" word, the engine's copy of
 * r's piece of the chunk for peer j into j's staging slot, a write of j's "arrived" word (stream
 * memory operations: the engine's data is visible before the word); then the join and a second
 * meeting. After a warm-up run of `calls` calls (the outputs first set to NaN) checks the output
 * against the CPU (rank-order float sums of small integers, exact), then prints the best time per
 * call of five runs (graphs of `calls` calls, or eager) and its busbw; the timed calls are not
 * checked. Modes (below) time parts of it. Measured and dropped: bench/results/h200-s21.
 *   nvcc -O2 -arch=sm_90 -o ce_rs_probe scripts/ce_rs_probe.cu -lcuda
 *   ce_rs_probe NRANKS BYTES_PER_RANK CHUNK_BYTES [graph=1] [blocks=32] [calls=10] [mode=0] */
#include <cuda.h>
#include <cuda_runtime.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#define CK(x)                                                                                 \
  do {                                                                                        \
    cudaError_t e_ = (x);                                                                     \
    if (e_ != cudaSuccess) {                                                                  \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));     \
      exit(1);                                                                                \
    }                                                                                         \
  } while (0)
#define DK(x)                                                                                 \
  do {                                                                                        \
    CUresult e_ = (x);                                                                        \
    if (e_ != CUDA_SUCCESS) {                                                                 \
      const char* s_ = "";                                                                    \
      cuGetErrorString(e_, &s_);                                                              \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, s_);                         \
      exit(1);                                                                                \
    }                                                                                         \
  } while (0)

enum { MAXR = 8 };
struct Rank {
  float *in, *out;
  char* stage;           /* [2 slots][src rank] of chunk bytes */
  uint32_t* words;       /* arrived[MAXR], freed[MAXR], meet[src] at 16, count[2] at 32 */
  unsigned long long* seq;
  cudaStream_t s, side;
  cudaEvent_t fork, join, t0, t1;
  cudaStream_t cs[2 * MAXR];  /* modes 5 and 7: copy streams */
  cudaEvent_t ce[2 * MAXR];
  cudaGraphExec_t g;
};

__device__ __forceinline__ uint32_t ldAcq(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void stRel(uint32_t* p, uint32_t v) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

/* Every rank's meet word: the call's meeting number (one per meeting, from a device counter). */
struct MeetArgs {
  uint32_t* meet[MAXR];
  unsigned long long* seq;
  int n, me;
};
__global__ void meetKernel(MeetArgs a) {
  const uint32_t v = (uint32_t)(++*a.seq);
  __threadfence_system();
  for (int p = 0; p < a.n; p++)
    if (p != a.me) stRel(a.meet[p] + a.me, v);
  for (int p = 0; p < a.n; p++)
    if (p != a.me)
      while ((int32_t)(ldAcq(a.meet[a.me] + p) - v) < 0) {
      }
}

/* Mode 4's step after chunk k's copies on the call's stream: tell each peer j that chunk k of this
 * rank's piece is in its staging, then wait until every peer is done with the chunk that the next
 * one overwrites (wait >= want; 0: none); the last one sets the freed words back to 0. */
struct SigArgs {
  uint32_t* arrived[MAXR]; /* peer j's arrived word for this rank */
  uint32_t* freed;         /* this rank's freed words [peer] */
  uint32_t value, want;
  int n, me, reset;
};
__global__ void signalKernel(SigArgs a) {
  const int p = threadIdx.x;
  if (p < a.n && p != a.me) {
    stRel(a.arrived[p], a.value);
    if (a.want)
      while ((int32_t)(ldAcq(a.freed + p) - a.want) < 0) {
      }
    if (a.reset) a.freed[p] = 0;
  }
}

struct RedArgs {
  const float* in;   /* this rank's input: share q at q * share */
  float* out;
  const char* stage; /* this rank's staging */
  uint32_t* arrived; /* [src]: chunk k of src's piece is in slot k & 1 when >= k + 1 */
  uint32_t* freed[MAXR]; /* peer j's freed word for this rank (written: this rank is done with chunk k) */
  uint32_t* count;
  size_t share, chunk; /* elements */
  int K, n, me;
};
/* Chunk k: out[k*chunk ..] = sum over ranks in order of their piece (own input or staging). */
__global__ void __launch_bounds__(512) reduceKernel(RedArgs a) {
  for (int k = 0; k < a.K; k++) {
    if (threadIdx.x == 0) {
      for (int p = 0; p < a.n; p++)
        if (p != a.me)
          while ((int32_t)(ldAcq(a.arrived + p) - (uint32_t)(k + 1)) < 0) {
          }
    }
    __syncthreads();
    const size_t lo = (size_t)k * a.chunk, len = min(a.chunk, a.share - lo);
    const size_t n4 = len / 4;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n4; i += (size_t)gridDim.x * blockDim.x) {
      float4 acc = make_float4(0, 0, 0, 0);
      for (int p = 0; p < a.n; p++) {
        const float4* src = p == a.me ? (const float4*)(a.in + (size_t)a.me * a.share + lo)
                                      : (const float4*)(a.stage + ((size_t)(k & 1) * a.n + p) * a.chunk * 4);
        const float4 v = src[i];
        if (p == 0) acc = v;
        else { acc.x += v.x; acc.y += v.y; acc.z += v.z; acc.w += v.w; }
      }
      ((float4*)(a.out + lo))[i] = acc;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      __threadfence();
      /* A block is at most one chunk ahead of another (chunk k + 2 arrives only once every block
       * is done with k): a counter per parity. */
      const uint32_t old = atomicAdd(a.count + (k & 1), 1u);
      if (old + 1 == (uint32_t)(k / 2 + 1) * gridDim.x) {
        if (k + 2 < a.K)
          for (int p = 0; p < a.n; p++)
            if (p != a.me) stRel(a.freed[p], (uint32_t)(k + 1));
        if (k + 1 == a.K) { /* every block is done: the words start again from 0 next call */
          for (int p = 0; p < a.n; p++) a.arrived[p] = 0;
          a.count[0] = a.count[1] = 0;
          __threadfence();
        }
      }
    }
  }
}

/* One batch of stream memory operations on this rank's freed words (freed[p] for every peer p):
 * wait until each is >= value (cyclic), or write value into each. */
static void freedOps(cudaStream_t s, uint32_t* freed, int n, int me, bool wait, uint32_t value) {
  CUstreamBatchMemOpParams w[MAXR];
  int nw = 0;
  for (int p = 0; p < n; p++)
    if (p != me) {
      memset(&w[nw], 0, sizeof(w[nw]));
      if (wait) {
        w[nw].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32;
        w[nw].waitValue.address = (CUdeviceptr)(freed + p);
        w[nw].waitValue.value = value;
        w[nw].waitValue.flags = CU_STREAM_WAIT_VALUE_GEQ;
      } else {
        w[nw].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
        w[nw].writeValue.address = (CUdeviceptr)(freed + p);
        w[nw].writeValue.value = value;
      }
      nw++;
    }
  DK(cuStreamBatchMemOp((CUstream)s, nw, w, 0));
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: ce_rs_probe NRANKS BYTES_PER_RANK CHUNK_BYTES [graph] [blocks] [calls]\n");
    return 2;
  }
  const int n = atoi(argv[1]);
  const size_t bytes = strtoull(argv[2], 0, 0), chunkB = strtoull(argv[3], 0, 0);
  const int graph = argc > 4 ? atoi(argv[4]) : 1, blocks = argc > 5 ? atoi(argv[5]) : 32,
            calls = argc > 6 ? atoi(argv[6]) : 10, mode = argc > 7 ? atoi(argv[7]) : 0;
  /* mode 0: stream memory operations (waits and writes); 1: the copies alone; 2: copies and the
   * writes; 3: copies and waits that pass at once; 4: a one-warp kernel after each chunk's copies
   * signals and waits (signalKernel); copies alone: 5 on a stream per peer, 6 one
   * cudaMemcpyBatchAsync per chunk (every peer's copy), 7 on two streams per peer taking
   * alternate chunks. 1-3 and 5-7 are not checked (no reduce). */
  const bool full = mode == 0 || mode == 4;
  const size_t share = bytes / 4 / n, chunk = chunkB / 4 < share ? chunkB / 4 : share;
  const int K = (int)((share + chunk - 1) / chunk);
  DK(cuInit(0));
  std::vector<Rank> R(n);
  for (int r = 0; r < n; r++) {
    CK(cudaSetDevice(r));
    for (int p = 0; p < n; p++)
      if (p != r) {
        cudaError_t e = cudaDeviceEnablePeerAccess(p, 0);
        if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) CK(e);
        (void)cudaGetLastError();
      }
    CK(cudaMalloc(&R[r].in, bytes));
    CK(cudaMalloc(&R[r].out, share * 4));
    CK(cudaMalloc(&R[r].stage, 2 * (size_t)n * chunk * 4));
    CK(cudaMalloc(&R[r].words, 256));
    CK(cudaMemset(R[r].words, 0, 256));
    CK(cudaMalloc(&R[r].seq, 8));
    CK(cudaMemset(R[r].seq, 0, 8));
    CK(cudaStreamCreateWithFlags(&R[r].s, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&R[r].side, cudaStreamNonBlocking));
    CK(cudaEventCreateWithFlags(&R[r].fork, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&R[r].join, cudaEventDisableTiming));
    for (int i = 0; i < 2 * MAXR; i++) {
      CK(cudaStreamCreateWithFlags(&R[r].cs[i], cudaStreamNonBlocking));
      CK(cudaEventCreateWithFlags(&R[r].ce[i], cudaEventDisableTiming));
    }
    CK(cudaEventCreate(&R[r].t0));
    CK(cudaEventCreate(&R[r].t1));
  }
  /* Random inputs of small integers (exact float sums), fresh per rank. */
  std::vector<std::vector<float>> host(n, std::vector<float>(bytes / 4));
  for (int r = 0; r < n; r++) {
    uint64_t z = 0x9E3779B97F4A7C15ull * (r + 1);
    for (auto& x : host[r]) {
      z = z * 6364136223846793005ull + 1442695040888963407ull;
      x = (float)((int)(z >> 33) % 2001 - 1000);
    }
    CK(cudaSetDevice(r));
    CK(cudaMemset(R[r].out, 0xff, share * 4));
    CK(cudaSetDevice(r));
    CK(cudaMemcpy(R[r].in, host[r].data(), bytes, cudaMemcpyHostToDevice));
  }
  auto issue = [&](int r) {
    Rank& m = R[r];
    CK(cudaSetDevice(r));
    MeetArgs ma;
    for (int p = 0; p < n; p++) ma.meet[p] = R[p].words + 16;
    ma.seq = m.seq;
    ma.n = n;
    ma.me = r;
    meetKernel<<<1, 1, 0, m.s>>>(ma);
    CK(cudaEventRecord(m.fork, m.s));
    CK(cudaStreamWaitEvent(m.side, m.fork, 0));
    RedArgs ra;
    ra.in = m.in;
    ra.out = m.out;
    ra.stage = m.stage;
    ra.arrived = m.words;
    for (int p = 0; p < n; p++) ra.freed[p] = R[p].words + MAXR + r;
    ra.count = m.words + 32;
    ra.share = share;
    ra.chunk = chunk;
    ra.K = K;
    ra.n = n;
    ra.me = r;
    if (full) reduceKernel<<<blocks, 512, 0, m.side>>>(ra);
    if (mode == 5 || mode == 7) {
      const int per = mode == 7 ? 2 : 1, ns = (n - 1) * per;
      for (int i = 0; i < ns; i++) CK(cudaStreamWaitEvent(m.cs[i], m.fork, 0));
      for (int k = 0; k < K; k++) {
        const size_t lo = (size_t)k * chunk, len = (chunk < share - lo ? chunk : share - lo) * 4;
        for (int t = 1; t < n; t++) {
          const int j = (r + t) % n;
          CK(cudaMemcpyAsync(R[j].stage + ((size_t)(k & 1) * n + r) * chunk * 4, m.in + (size_t)j * share + lo, len,
                             cudaMemcpyDefault, m.cs[(t - 1) * per + (k % per)]));
        }
      }
      for (int i = 0; i < ns; i++) {
        CK(cudaEventRecord(m.ce[i], m.cs[i]));
        CK(cudaStreamWaitEvent(m.s, m.ce[i], 0));
      }
    }
    if (mode == 6)
      for (int k = 0; k < K; k++) {
        const size_t lo = (size_t)k * chunk, len = (chunk < share - lo ? chunk : share - lo) * 4;
        void* dsts[MAXR];
        const void* srcs[MAXR];
        size_t sizes[MAXR];
        int nc = 0;
        for (int t = 1; t < n; t++) {
          const int j = (r + t) % n;
          dsts[nc] = R[j].stage + ((size_t)(k & 1) * n + r) * chunk * 4;
          srcs[nc] = m.in + (size_t)j * share + lo;
          sizes[nc++] = len;
        }
        cudaMemcpyAttributes at;
        memset(&at, 0, sizeof(at));
        at.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
        size_t idx = 0;
        CK(cudaMemcpyBatchAsync(dsts, srcs, sizes, nc, &at, &idx, 1, m.s));
      }
    for (int k = 0; k < K && mode <= 4; k++) {
      const size_t lo = (size_t)k * chunk, len = (chunk < share - lo ? chunk : share - lo) * 4;
      if (k >= 2 && (mode == 0 || mode == 3)) {
        freedOps(m.s, m.words + MAXR, n, r, true, mode == 3 ? 0 : (uint32_t)(k - 1));
      }
      for (int t = 1; t < n; t++) {
        const int j = (r + t) % n;
        CK(cudaMemcpyAsync(R[j].stage + ((size_t)(k & 1) * n + r) * chunk * 4, m.in + (size_t)j * share + lo, len,
                           cudaMemcpyDefault, m.s));
        if (mode == 0 || mode == 2)
          DK(cuStreamWriteValue32((CUstream)m.s, (CUdeviceptr)(R[j].words + r), (cuuint32_t)(k + 1), 0));
      }
      if (mode == 4) {
        SigArgs sa;
        for (int p = 0; p < n; p++) sa.arrived[p] = R[p].words + r;
        sa.freed = m.words + MAXR;
        sa.value = (uint32_t)(k + 1);
        sa.want = k >= 1 && k + 1 < K ? (uint32_t)k : 0;
        sa.n = n;
        sa.me = r;
        sa.reset = k + 1 == K;
        signalKernel<<<1, 32, 0, m.s>>>(sa);
      }
    }
    /* The freed words start again from 0 (every write of them this call was seen by a wait). */
    if (K > 2 && mode == 0) freedOps(m.s, m.words + MAXR, n, r, false, 0);
    CK(cudaEventRecord(m.join, m.side));
    CK(cudaStreamWaitEvent(m.s, m.join, 0));
    meetKernel<<<1, 1, 0, m.s>>>(ma);
    CK(cudaGetLastError());
  };
  if (graph) {
    for (int r = 0; r < n; r++) {
      CK(cudaSetDevice(r));
      CK(cudaStreamBeginCapture(R[r].s, cudaStreamCaptureModeRelaxed));
      for (int c = 0; c < calls; c++) issue(r);
      cudaGraph_t gr;
      CK(cudaSetDevice(r));
      CK(cudaStreamEndCapture(R[r].s, &gr));
      CK(cudaGraphInstantiate(&R[r].g, gr, 0));
    }
  }
  auto run = [&]() {
    for (int r = 0; r < n; r++) {
      CK(cudaSetDevice(r));
      CK(cudaEventRecord(R[r].t0, R[r].s));
    }
    if (graph)
      for (int r = 0; r < n; r++) {
        CK(cudaSetDevice(r));
        CK(cudaGraphLaunch(R[r].g, R[r].s));
      }
    else
      for (int c = 0; c < calls; c++)
        for (int r = 0; r < n; r++) issue(r);
    for (int r = 0; r < n; r++) {
      CK(cudaSetDevice(r));
      CK(cudaEventRecord(R[r].t1, R[r].s));
    }
    float worst = 0;
    for (int r = 0; r < n; r++) {
      CK(cudaSetDevice(r));
      CK(cudaEventSynchronize(R[r].t1));
      float ms;
      CK(cudaEventElapsedTime(&ms, R[r].t0, R[r].t1));
      if (ms > worst) worst = ms;
    }
    return worst * 1000 / calls;
  };
  run(); /* warm-up, then check */
  long bad = 0;
  std::vector<float> got(share);
  for (int r = 0; r < n && full; r++) {
    CK(cudaSetDevice(r));
    CK(cudaMemcpy(got.data(), R[r].out, share * 4, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < share; i++) {
      float want = host[0][(size_t)r * share + i];
      for (int p = 1; p < n; p++) want += host[p][(size_t)r * share + i];
      if (got[i] != want && bad++ < 3)
        fprintf(stderr, "rank %d element %zu: got %g want %g\n", r, i, got[i], want);
    }
  }
  float best = 1e30f;
  for (int i = 0; i < 5; i++) {
    const float t = run();
    if (t < best) best = t;
  }
  const double busbw = (double)bytes * (n - 1) / n / (best * 1e-6) / 1e9;
  printf("ce_rs mode=%d n=%d bytes=%zu chunk=%zu K=%d graph=%d blocks=%d: %.2f us busbw %.1f GB/s errors %s%ld\n", mode,
         n, bytes, chunk * 4, K, graph, blocks, best, busbw, full ? "" : "unchecked ", bad);
  return bad != 0;
}
