/*
 * coll_bench: kiln's baked kernels, kiln's interpreter and NCCL, side by side, in the same run,
 * on the same buffers, in the same process model; nccl-tests-style rows, CSV and an SVG figure.
 *
 *   coll_bench [--ranks N] [--colls allreduce,allgather,reducescatter,alltoall] [--dtype float]
 *              [--op sum] [--min 8] [--max 1G] [--factor 4] [--iters 20] [--warmup 5]
 *              [--inplace] [--plan NAME] [--plans PATH] [--csv FILE] [--svg FILE] [--mp]
 *              [--no-check] [--timeout-ms MS] [--sweep] [--graph N] [--batch [--host-time]]
 *              [--slot-bytes SIZE] [--nslots N] [--threads N] [--channels N] [--sym-bytes SIZE]
 *              [--sym auto|off|oneshot|twoshot] [--window] [--shared G]
 *              [--classic ALGO[:PROTO[:INSTANCES[:CHUNKS]]]] [--mirror] [--write-plans DIR]
 *
 * Sizes are the collective's reference bytes (nccl-tests' "size"): allreduce per-rank input,
 * allgather total output, reducescatter and alltoall total input. Per size and variant: warmup
 * calls, then `iters` calls each timed with CUDA events on every rank's stream; a call's time is
 * the slowest rank's, the row shows the median over calls. algbw = size / time; busbw = algbw x
 * 2(n-1)/n for allreduce, x (n-1)/n otherwise (docs/ARCHITECTURE.md, Measuring).
 * Results: kiln's output is compared element for element (bitwise; inputs are small integers, so
 * every order of summation gives the same value) with NCCL's output of the same call; the
 * errors column counts differing elements over all ranks.
 * Process models: default one process driving all N GPUs (each call a group over the GPUs:
 * ncclGroupStart/End, kilnGroupStart/End); --mp forks one process per GPU (NCCL id through a
 * pipe, results gathered by rank 0).
 * Plan choice: the selector's (kilnSelect: what kiln runs by default, as the drop-in asks it) where
 * it picks a plan, else the registry's first (kilnRegistrySelect), or --plan NAME for every size, or
 * --classic ALGO[:PROTO[:INSTANCES[:CHUNKS]]] (kiln classic's plan of that algorithm for each
 * collective it has, made here and added to the registry: e.g. oneshot:LL:4, staged:LL128:8,
 * twoshot:Simple:32, zerocopy), or --mirror: at each size the plan of kiln classic that has the
 * symmetric kernel's form for the call (the sym column's algorithm: oneshot, twoshot, staged, or
 * zerocopy where that kernel goes direct; its protocol: LL, LL12, LL128 or Simple for its flag
 * form; an instance per block of it, at most one per channel), so that the plan path and the
 * symmetric kernels run the same algorithm side by side on the same buffers (the A/B of the plan
 * path; its "plan/sym" column
 * is the plan's time, baked where the build baked that plan's shape, else interpreted, over the
 * sym kernel's); --write-plans DIR also writes each of those plans to DIR/NAME.xml, for a build
 * that bakes them (KILN_PLANS_DIR: gen/README.md), so that the plan path runs generated kernels;
 * --mirror-plans DIR writes them without a GPU (the same sizes, ranks and --shared; --sms S, 132 by
 * default: the GPU's SMs, which set a shared rank's blocks), so that one build and one GPU call
 * make the A/B (bench/device/README.md). The "baked" column runs the plan's generated kernel
 * (absent: "-"), "interp" the interpreter on the same plan. --sweep: every plan of the registry
 * for the collective and rank count, whatever its byte range, one row per plan and size, baked
 * kernels only (to choose the ranges of plans/baked).
 * "sym" column: the symmetric-memory kernel (kilnSymRun) on the same call, where its staging
 * memory allows: the one of the symmetric kernels' ranges (kilnSymSelect) or, outside them, the
 * collective's one
 * (allreduce: one-shot to 256 KiB, two-shot above; --sym oneshot|twoshot forces one; --sym off:
 * no column). Speed-up column: NCCL's time / the time of what kiln runs by default (kilnSelect):
 * the sym kernel where it picks one, else the plan's (the baked kernel for LL plans, the
 * interpreter for Simple plans: host/exec.c); "-" where it hands the call to NCCL.
 * --graph N: every variant is captured as a CUDA graph of N calls per rank (after the warmup calls,
 * outside capture); a call's time is a graph launch's time / N, median over `iters` launches. This
 * takes the host's launch cost out, as a graph-capturing framework does.
 * --window: every rank's buffers come from ncclMemAlloc and are registered as symmetric windows
 * (ncclCommWindowRegister, NCCL_WIN_COLL_SYMMETRIC) for NCCL and added to kiln
 * (kilnCommWindowAdd): NCCL may then use its symmetric kernels, kiln's sym column goes zero copy
 * from KILN_SYM_DIRECT_BYTES (kiln/runtime.h). Both see the same registered buffers. Without it,
 * one process driving every GPU (not --mp): kiln's grouped calls go zero copy into the plain
 * buffers from the same sizes (kilnCommCreateAll's clique); KILN_SYM_PEERS=0 keeps them staged,
 * as they are across processes.
 * --batch (eager): a call's time is that of `iters` calls issued back to back between one pair of
 * events per rank, divided by `iters` (the slowest rank; median of 5 such batches; with --mp the
 * processes meet on the host before each batch), as nccl-tests times its loop (--host-time: also
 * prints the host's time to issue one call, median of the batches, and its mean split into the
 * calls before the group's end and the end). The
 * default times every call between its own events, which adds two event records per GPU to each
 * call's host time: with one thread driving several GPUs the host is the bottleneck at small
 * sizes, so the default shows more host cost than a training loop pays.
 * --shared G: the ranks on G GPUs (rank r on GPU r % G; default 2 ranks), one process, kiln's
 * communicators over CUDA peer memory without NCCL (kilnCommCreateShared: ranks on one GPU each
 * take an equal share of its SMs, and their kernels run side by side on their own streams,
 * launched without programmatic serialization, so small calls pay a launch each). No NCCL column
 * (NCCL takes one rank per GPU): kiln's outputs are checked against a reference computed on the
 * GPU from what the inputs hold (sum, max and min, exact in every type but the 8-bit floats, whose
 * reductions go unchecked as prod and avg do: "-"). Ranks on one GPU meet over its own memory, not NVLink: the times tell two builds or
 * settings of kiln's kernels apart (what they compute and how they wait), where one GPU is all
 * there is, but not how a call fares against NCCL.
 */
#include <cuda_runtime.h>
#include <math.h>
#include <nccl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "bench_check.h"
#include "bench_svg.h"
#include "kiln/registry.h"
#include "kiln/runtime.h"
#include "kiln_dev.h"         /* KILN_SYM_LINES_*: the sym kernel's line forms, for --mirror */
#include "runtime_internal.h" /* kilnCommCreateShared, kilnSymCallShape */
#include "runtime_test.h"     /* --mirror-plans: a communicator's host part alone */

#define MAXR 8

/* ---- options ---- */
struct Options {
  int nranks = 0;
  bool colls[KILN_NUM_COLLS] = {};
  kilnDataType_t dtype = KILN_FLOAT32;
  kilnRedOp_t op = KILN_SUM;
  uint64_t minB = 8, maxB = 1ull << 30;
  int factor = 4, iters = 20, warmup = 5;
  int graph = 0;         /* > 0: time CUDA graphs of this many captured calls */
  bool batch = false;    /* eager, nccl-tests' way: one event pair around `iters` back-to-back calls */
  bool hostTime = false; /* --batch: also print the host's time to issue a call */
  bool inplace = false, check = true, mp = false, sweep = false;
  const char* plan = nullptr;
  const char* plans = nullptr;
  const char* csv = nullptr;
  const char* svg = nullptr;
  int timeoutMs = 3000;
  uint64_t slotBytes = 0; /* kilnCommConfig overrides (0: runtime default) */
  int nslots = 0, threads = 0, channels = 0;
  long long symBytes = -1;           /* kilnCommConfig.symBytes (-1: runtime default) */
  int sym = 1;                       /* 0 off, 1 auto, 2 one-shot, 3 two-shot (allreduce) */
  bool window = false;               /* buffers from ncclMemAlloc in symmetric windows (NCCL and kiln) */
  const char* classic = nullptr;     /* --classic ALGO[:PROTO[:INSTANCES[:CHUNKS]]] */
  bool mirror = false;               /* --mirror: the classic plan of the sym kernel's form per size */
  const char* writePlans = nullptr;  /* --write-plans DIR: the --classic / --mirror plans as XML there */
  const char* mirrorPlans = nullptr; /* --mirror-plans DIR: write --mirror's plans without a GPU */
  int sms = 132;                     /* --sms S: the GPUs' SMs, for --mirror-plans */
  int shared = 0;                    /* > 0: the ranks on this many GPUs, no NCCL (kilnCommCreateShared) */
};

enum { V_NCCL = 0, V_BAKED = 1, V_INTERP = 2, V_SYM = 3, NV = 4 };
static const char* const vname[NV] = {"nccl", "kiln-baked", "kiln-interp", "kiln-sym"};

/* One measured row. */
struct Row {
  kilnColl_t coll;
  uint64_t bytes, count;
  char plan[64];
  double us[NV];     /* median time, <0: not run */
  long long err[NV]; /* differing elements vs NCCL, -1: not checked */
  bool bakedDefault; /* kiln runs the plan's baked kernel by default (inlined), else the interpreter */
  char sym[32];      /* the sym column's algorithm ("-": none) */
  bool symDefault;   /* kiln runs it by default (the selector, kilnSelect) */
  bool ncclDefault;  /* the selector hands the call to NCCL: no speed-up to show */
};

/* The speed-up column: NCCL's time over the time of what kiln runs by default (the selector): the
 * sym kernel where it picks one, else what kilnRun runs for this plan (host/exec.c: the baked
 * kernel when gen/ inlined its steps, else the interpreter), or the other variant when that one
 * did not run; <= 0: none (also where the selector hands the call to NCCL). */
static double speedup(const Row& r) {
  if (r.ncclDefault) return -1;
  if (r.symDefault && r.us[V_SYM] > 0 && r.us[V_NCCL] > 0) return r.us[V_NCCL] / r.us[V_SYM];
  const int first = r.bakedDefault ? V_BAKED : V_INTERP, second = r.bakedDefault ? V_INTERP : V_BAKED;
  const double k = r.us[first] > 0 ? r.us[first] : r.us[second];
  return k > 0 && r.us[V_NCCL] > 0 ? r.us[V_NCCL] / k : -1;
}

static void die(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "coll_bench: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  exit(1);
}

#define NCCL_CHECK(x)                                                                           \
  do {                                                                                          \
    ncclResult_t r_ = (x);                                                                      \
    if (r_ != ncclSuccess) die("%s:%d %s: %s", __FILE__, __LINE__, #x, ncclGetErrorString(r_)); \
  } while (0)

static const char* plural(int n) { return n == 1 ? "" : "s"; }

static bool reduces(kilnColl_t c) { return c == KILN_COLL_ALLREDUCE || c == KILN_COLL_REDUCESCATTER; }

static double bus_factor(kilnColl_t c, int n) {
  return c == KILN_COLL_ALLREDUCE ? 2.0 * (n - 1) / n : (double)(n - 1) / n;
}

/* ---- device helpers ---- */

/* Small integers (exact in every dtype, sums of a few too) that differ by rank and position. */
template <typename T> __global__ void fillKernel(T* p, size_t n, int rank) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    p[i] = (T)(float)((i * 7 + (size_t)rank * 3) % 13);
}
__global__ void fillBytes(unsigned char* p, size_t n, unsigned char v) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    p[i] = v;
}
/* Counts elements of es bytes that differ. */
__global__ void diffKernel(const unsigned char* a, const unsigned char* b, size_t nelem, int es,
                           unsigned long long* out) {
  unsigned long long bad = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < nelem;
       i += (size_t)gridDim.x * blockDim.x) {
    bool d = false;
    for (int k = 0; k < es; k++) d |= a[i * es + k] != b[i * es + k];
    bad += d;
  }
  if (bad) atomicAdd(out, bad);
}

/* --shared: what fillKernel put in input element i of rank q. */
__device__ __forceinline__ double fillValue(size_t i, int q) {
  return (double)((i * 7 + (size_t)q * 3) % 13);
}

/* --shared: rank `rank`'s expected output (nout elements) of collective `coll` over n ranks
 * (`count` elements a rank as NCCL counts them), from fillValue; reductions by op (sum, max or
 * min: exact for these small integers in every type, whatever the order). */
template <typename T>
__global__ void refKernel(T* out, size_t nout, int coll, size_t count, int n, int rank, int op) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < nout;
       i += (size_t)gridDim.x * blockDim.x) {
    double v = 0;
    if (coll == KILN_COLL_ALLREDUCE || coll == KILN_COLL_REDUCESCATTER) {
      const size_t at = coll == KILN_COLL_ALLREDUCE ? i : (size_t)rank * count + i;
      v = fillValue(at, 0);
      for (int q = 1; q < n; q++) {
        const double x = fillValue(at, q);
        v = op == KILN_SUM ? v + x : op == KILN_MAX ? fmax(v, x) : fmin(v, x);
      }
    } else { /* block q of the output: rank q's input (allgather), its block for this rank (alltoall) */
      const int q = (int)(i / count);
      const size_t j = i % count;
      v = fillValue(coll == KILN_COLL_ALLGATHER ? j : (size_t)rank * count + j, q);
    }
    out[i] = (T)(float)v;
  }
}

/* Calls f with a null T* for the element type T that fill and reference give t (any other type:
 * bytes). */
template <class F> static void withType(kilnDataType_t t, F f) {
  switch (t) {
    case KILN_FLOAT32: f((float*)nullptr); break;
    case KILN_FLOAT64: f((double*)nullptr); break;
    case KILN_FLOAT16: f((__half*)nullptr); break;
    case KILN_BFLOAT16: f((__nv_bfloat16*)nullptr); break;
    case KILN_INT32: f((int32_t*)nullptr); break;
    case KILN_UINT32: f((uint32_t*)nullptr); break;
    case KILN_INT64: f((int64_t*)nullptr); break;
    case KILN_UINT64: f((uint64_t*)nullptr); break;
    case KILN_INT8: f((int8_t*)nullptr); break;
    default: f((uint8_t*)nullptr); break;
  }
}

static void fill(kilnDataType_t t, void* p, size_t n, int rank, cudaStream_t s) {
  withType(t, [&](auto* as) { fillKernel<<<256, 256, 0, s>>>((decltype(as))p, n, rank); });
}

/* --shared: rank's expected output of (coll, count) at p (nout elements); see refKernel. */
static void reference(kilnDataType_t t, void* p, size_t nout, kilnColl_t c, size_t count, int n, int rank,
                      kilnRedOp_t op, cudaStream_t s) {
  withType(t, [&](auto* as) {
    refKernel<<<256, 256, 0, s>>>((decltype(as))p, nout, (int)c, count, n, rank, (int)op);
  });
}

/* ---- one rank's state ---- */
struct Rank {
  int rank, dev;
  ncclComm_t nccl;
  kilnComm_t kc;
  cudaStream_t stream;
  char *send, *recvN, *recvK; /* input; NCCL's output; kiln's output */
  ncclWindow_t win[3];        /* --window: send, recvN, recvK registered */
  size_t sendBytes, recvBytes;
  /* Buffer k of send, recvN, recvK, and its bytes. */
  char* buf(int k) const { return k == 0 ? send : k == 1 ? recvN : recvK; }
  size_t bufBytes(int k) const { return k == 0 ? sendBytes : recvBytes; }
  cudaEvent_t *ev0, *ev1; /* per timed call */
  unsigned long long* dcount;
};

/* Per-call buffer sizes (bytes) of rank buffers for reference size `bytes`. */
static void buffer_bytes(kilnColl_t c, int n, uint64_t bytes, size_t* sendB, size_t* recvB) {
  switch (c) {
    case KILN_COLL_ALLREDUCE: *sendB = *recvB = bytes; break;
    case KILN_COLL_ALLGATHER:
      *sendB = bytes / n;
      *recvB = bytes;
      break;
    case KILN_COLL_REDUCESCATTER:
      *sendB = bytes;
      *recvB = bytes / n;
      break;
    default: *sendB = *recvB = bytes; break;
  }
}

/* NCCL-style count of the call. */
static size_t call_count(kilnColl_t c, int n, uint64_t bytes, size_t es) {
  return c == KILN_COLL_ALLREDUCE ? bytes / es : bytes / es / n;
}

static ncclDataType_t nccl_type(kilnDataType_t t) { return (ncclDataType_t)t; }
static ncclRedOp_t nccl_op(kilnRedOp_t o) { return (ncclRedOp_t)o; }

static void nccl_call(kilnColl_t c, Rank& R, const void* sb, void* rb, size_t count, const Options& o) {
  switch (c) {
    case KILN_COLL_ALLREDUCE:
      NCCL_CHECK(ncclAllReduce(sb, rb, count, nccl_type(o.dtype), nccl_op(o.op), R.nccl, R.stream));
      break;
    case KILN_COLL_ALLGATHER:
      NCCL_CHECK(ncclAllGather(sb, rb, count, nccl_type(o.dtype), R.nccl, R.stream));
      break;
    case KILN_COLL_REDUCESCATTER:
      NCCL_CHECK(ncclReduceScatter(sb, rb, count, nccl_type(o.dtype), nccl_op(o.op), R.nccl, R.stream));
      break;
    default: NCCL_CHECK(ncclAlltoAll(sb, rb, count, nccl_type(o.dtype), R.nccl, R.stream)); break;
  }
}

/* Send/recv pointers of a call (in place: NCCL's aliasing). */
static void call_buffers(kilnColl_t c, Rank& R, char* out, size_t count, size_t es, bool inplace,
                         const void** sb, void** rb) {
  *rb = out;
  *sb = R.send;
  if (!inplace) return;
  switch (c) {
    case KILN_COLL_ALLGATHER: *sb = out + (size_t)R.rank * count * es; break;
    case KILN_COLL_REDUCESCATTER:
      *sb = out;
      *rb = out + (size_t)R.rank * count * es;
      break;
    default: *sb = out; break;
  }
}

/* ---- the run over every rank this process drives ---- */
struct Bench {
  Options o;
  int n;                   /* ranks in the communicator */
  std::vector<Rank> ranks; /* those this process drives (all, or one with --mp) */
  bool kilnOk = true;
  /* Execs per registry entry, per local rank. */
  std::vector<const kilnRegistryEntry*> ents;
  std::vector<std::vector<kilnExec_t>> execs;
  kilnSymAlgo_t symAlgo = KILN_SYM_NONE; /* what V_SYM runs for the current row */
};

static std::vector<kilnExec_t>* execsFor(Bench& b, const kilnRegistryEntry* e) {
  for (size_t i = 0; i < b.ents.size(); i++)
    if (b.ents[i] == e) return &b.execs[i];
  const kilnPlan* p = nullptr;
  std::vector<kilnExec_t> v(b.ranks.size(), nullptr);
  if (kilnRegistryPlan(e, &p) != KILN_SUCCESS) {
    fprintf(stderr, "coll_bench: plan %s: %s\n", e->name, kilnLastError());
  } else {
    for (size_t r = 0; r < b.ranks.size(); r++)
      if (kilnPlanLoad(b.ranks[r].kc, p, &v[r]) != KILN_SUCCESS) {
        fprintf(stderr, "coll_bench: rank %d: plan %s: %s\n", b.ranks[r].rank, e->name, kilnLastError());
        for (auto& x : v) {
          kilnExecFree(x);
          x = nullptr;
        }
        break;
      }
  }
  b.ents.push_back(e);
  b.execs.push_back(v);
  return &b.execs.back();
}

/* Rank 0 of --mp gathers every rank's per-call times through this shared page. */
struct Shared {
  volatile int count, gen;
  float us[MAXR][1024];
  long long err[MAXR];
};
static Shared* shared;

/* Barrier over the processes of --mp (sense reversal on the shared page). */
static void mp_barrier(Bench& b) {
  if (!b.o.mp) return;
  const int gen = shared->gen;
  __sync_synchronize();
  if (__sync_add_and_fetch(&shared->count, 1) == b.n) {
    shared->count = 0;
    __sync_synchronize();
    shared->gen = gen + 1;
  } else {
    while (shared->gen == gen) usleep(20);
  }
  __sync_synchronize();
}

/* --host-time: the host's time in the calls before the group's end (every rank's call queued)
 * and in the group's end (the launches), summed over the timed calls of a batch. */
static double gQueueUs = 0, gEndUs = 0;

static double mono_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec * 1e-3;
}

/* Enqueues one call of variant v on every rank this process drives; false when kiln refused.
 * slot >= 0: each rank's start event ev0[slot] is recorded on its stream just before its call. */
static bool enqueue_call(Bench& b, kilnColl_t c, int v, std::vector<kilnExec_t>* ex, size_t count,
                         int slot = -1) {
  const size_t es = kilnDataTypeSize(b.o.dtype);
  bool ok = true;
  const double t0 = b.o.hostTime ? mono_us() : 0;
  /* Both grouped: NCCL and kiln issue the GPUs' launches at the group's end. */
  if (v == V_NCCL)
    NCCL_CHECK(ncclGroupStart());
  else
    kilnGroupStart();
  for (size_t r = 0; r < b.ranks.size(); r++) {
    Rank& R = b.ranks[r];
    CUDA_CHECK(cudaSetDevice(R.dev));
    if (slot >= 0) CUDA_CHECK(cudaEventRecord(R.ev0[slot], R.stream));
    const void* sb;
    void* rb;
    call_buffers(c, R, v == V_NCCL ? R.recvN : R.recvK, count, es, b.o.inplace, &sb, &rb);
    if (v == V_NCCL)
      nccl_call(c, R, sb, rb, count, b.o);
    else if (v == V_SYM) {
      if (kilnSymRun(R.kc, b.symAlgo, sb, rb, count, b.o.dtype, b.o.op, R.stream) != KILN_SUCCESS) {
        fprintf(stderr, "coll_bench: rank %d: %s\n", R.rank, kilnLastError());
        ok = false;
      }
    } else {
      kilnExecUseBaked((*ex)[r], v == V_BAKED);
      if (kilnRun((*ex)[r], sb, rb, count, b.o.dtype, b.o.op, R.stream) != KILN_SUCCESS) {
        fprintf(stderr, "coll_bench: rank %d: %s\n", R.rank, kilnLastError());
        ok = false;
      }
    }
  }
  const double t1 = b.o.hostTime ? mono_us() : 0;
  if (v == V_NCCL)
    NCCL_CHECK(ncclGroupEnd());
  else if (kilnGroupEnd() != KILN_SUCCESS) {
    fprintf(stderr, "coll_bench: %s\n", kilnLastError());
    ok = false;
  }
  if (b.o.hostTime) {
    gQueueUs += t1 - t0;
    gEndUs += mono_us() - t1;
  }
  return ok;
}

/* slow[i]: this process's slowest rank in iteration (or batch) i (ms). With --mp, takes the
 * slowest over every process too. Returns the median in µs, or -1 when any rank failed. */
static double median_of_slowest(Bench& b, std::vector<float>& slow, bool ok) {
  const int n = (int)slow.size();
  if (b.o.mp) {
    for (int i = 0; i < n; i++) shared->us[b.ranks[0].rank][i] = ok ? slow[i] : -1.f;
    mp_barrier(b);
    for (int i = 0; i < n; i++)
      for (int r = 0; r < b.n; r++) {
        if (shared->us[r][i] < 0) ok = false;
        slow[i] = std::max(slow[i], shared->us[r][i]);
      }
    mp_barrier(b);
  }
  if (!ok) return -1;
  std::sort(slow.begin(), slow.end());
  return 1000.0 * slow[n / 2];
}

/* --graph: captures o.graph calls per rank into a graph, then times `iters` launches of it
 * (after the warmup calls, uncaptured, and one untimed launch). Median per-call µs of the slowest
 * rank, or -1. */
static double time_variant_graph(Bench& b, kilnColl_t c, int v, std::vector<kilnExec_t>* ex, size_t count) {
  const Options& o = b.o;
  const size_t nr = b.ranks.size();
  bool ok = true;
  for (int it = 0; it < std::max(1, o.warmup) && ok; it++) ok = enqueue_call(b, c, v, ex, count);
  for (auto& R : b.ranks) {
    CUDA_CHECK(cudaSetDevice(R.dev));
    CUDA_CHECK(cudaStreamSynchronize(R.stream));
  }
  std::vector<cudaGraph_t> g(nr, nullptr);
  std::vector<cudaGraphExec_t> ge(nr, nullptr);
  for (size_t r = 0; r < nr && ok; r++) {
    CUDA_CHECK(cudaSetDevice(b.ranks[r].dev));
    ok = cudaStreamBeginCapture(b.ranks[r].stream, cudaStreamCaptureModeRelaxed) == cudaSuccess;
  }
  for (int k = 0; k < o.graph && ok; k++) ok = enqueue_call(b, c, v, ex, count);
  for (size_t r = 0; r < nr; r++) {
    CUDA_CHECK(cudaSetDevice(b.ranks[r].dev));
    cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    cudaStreamIsCapturing(b.ranks[r].stream, &st);
    if (st != cudaStreamCaptureStatusNone && cudaStreamEndCapture(b.ranks[r].stream, &g[r]) != cudaSuccess)
      ok = false;
    if (ok && g[r] && cudaGraphInstantiate(&ge[r], g[r], 0) != cudaSuccess) ok = false;
  }
  if (!ok)
    fprintf(stderr, "coll_bench: %s: graph capture failed (%s)\n", vname[v],
            cudaGetErrorString(cudaGetLastError()));
  std::vector<std::vector<float>> per(nr, std::vector<float>(o.iters, 0.f));
  for (int it = -1; it < o.iters && ok; it++) {
    for (size_t r = 0; r < nr; r++) {
      Rank& R = b.ranks[r];
      CUDA_CHECK(cudaSetDevice(R.dev));
      if (it >= 0) CUDA_CHECK(cudaEventRecord(R.ev0[it], R.stream));
      CUDA_CHECK(cudaGraphLaunch(ge[r], R.stream));
      if (it >= 0) CUDA_CHECK(cudaEventRecord(R.ev1[it], R.stream));
    }
  }
  for (size_t r = 0; r < nr; r++) {
    Rank& R = b.ranks[r];
    CUDA_CHECK(cudaSetDevice(R.dev));
    CUDA_CHECK(cudaStreamSynchronize(R.stream));
    if (v != V_NCCL && R.kc) {
      kilnResult_t ae = KILN_SUCCESS;
      kilnCommGetAsyncError(R.kc, &ae);
      if (ae != KILN_SUCCESS) {
        fprintf(stderr, "coll_bench: rank %d: kiln failed on the GPU (%s); kiln is off from here\n", R.rank,
                kilnResultName(ae));
        b.kilnOk = false;
        ok = false;
      }
    }
    for (int i = 0; i < o.iters && ok; i++) CUDA_CHECK(cudaEventElapsedTime(&per[r][i], R.ev0[i], R.ev1[i]));
    if (ge[r]) cudaGraphExecDestroy(ge[r]);
    if (g[r]) cudaGraphDestroy(g[r]);
  }
  std::vector<float> slow(o.iters, 0.f);
  for (int i = 0; i < o.iters; i++)
    for (size_t r = 0; r < nr; r++) slow[i] = std::max(slow[i], per[r][i] / o.graph);
  return median_of_slowest(b, slow, ok);
}

/* Waits for every rank's stream; false (and kiln off from here) when kiln failed on a GPU. */
static bool finish_ranks(Bench& b, int v) {
  bool ok = true;
  for (size_t r = 0; r < b.ranks.size(); r++) {
    CUDA_CHECK(cudaSetDevice(b.ranks[r].dev));
    CUDA_CHECK(cudaStreamSynchronize(b.ranks[r].stream));
    if (v == V_NCCL) continue;
    kilnResult_t ae = KILN_SUCCESS;
    kilnCommGetAsyncError(b.ranks[r].kc, &ae);
    if (ae != KILN_SUCCESS) {
      fprintf(stderr, "coll_bench: rank %d: kiln failed on the GPU (%s); kiln is off from here\n",
              b.ranks[r].rank, kilnResultName(ae));
      b.kilnOk = false;
      ok = false;
    }
  }
  return ok;
}

/* --batch: 5 batches of `iters` back-to-back calls, each between one event pair per rank; a
 * batch's time is its slowest rank's / iters (over every process with --mp, whose processes meet
 * on the host before each batch); returns the median batch in µs (-1: failure). */
static double time_variant_batch(Bench& b, kilnColl_t c, int v, std::vector<kilnExec_t>* ex, size_t count) {
  const Options& o = b.o;
  const int reps = std::min(5, o.iters);
  bool ok = true;
  for (int it = 0; it < o.warmup && ok; it++) ok = enqueue_call(b, c, v, ex, count);
  ok = finish_ranks(b, v) && ok;
  std::vector<double> host;
  gQueueUs = gEndUs = 0;
  for (int k = 0; k < reps; k++) {
    mp_barrier(b); /* every process, also one that failed: the others wait for it here */
    if (!ok) continue;
    for (auto& R : b.ranks) {
      CUDA_CHECK(cudaSetDevice(R.dev));
      CUDA_CHECK(cudaEventRecord(R.ev0[k], R.stream));
    }
    const double t0 = mono_us();
    for (int it = 0; it < o.iters && ok; it++) ok = enqueue_call(b, c, v, ex, count);
    host.push_back((mono_us() - t0) / o.iters);
    for (auto& R : b.ranks) {
      CUDA_CHECK(cudaSetDevice(R.dev));
      CUDA_CHECK(cudaEventRecord(R.ev1[k], R.stream));
    }
  }
  ok = finish_ranks(b, v) && ok;
  std::vector<float> slow(reps, 0.f);
  for (int k = 0; k < reps && ok; k++)
    for (auto& R : b.ranks) {
      float ms = 0.f;
      CUDA_CHECK(cudaEventElapsedTime(&ms, R.ev0[k], R.ev1[k]));
      slow[k] = std::max(slow[k], ms / (float)o.iters);
    }
  const double us = median_of_slowest(b, slow, ok);
  if (us < 0) return -1;
  if (o.hostTime && b.ranks[0].rank == 0) {
    std::sort(host.begin(), host.end());
    const double calls = (double)reps * o.iters;
    printf(
        "#   host: %s %zu elements %s: %.2f us per call to issue (GPU: %.2f; queueing %.2f, group end "
        "%.2f)\n",
        kilnCollName(c), count, vname[v], host[host.size() / 2], us, gQueueUs / calls, gEndUs / calls);
  }
  return us;
}

/* Runs variant v `warmup + iters` times; returns the median time (µs) of the slowest rank per
 * call, or -1 when the variant cannot run (--graph, --batch: their own timing). */
static double time_variant(Bench& b, kilnColl_t c, int v, std::vector<kilnExec_t>* ex, size_t count) {
  const Options& o = b.o;
  if (o.graph > 0) return time_variant_graph(b, c, v, ex, count);
  if (o.batch) return time_variant_batch(b, c, v, ex, count);
  const int total = o.warmup + o.iters;
  std::vector<std::vector<float>> per(b.ranks.size(), std::vector<float>(o.iters, 0.f));
  bool ok = true;
  for (int it = 0; it < total && ok; it++) {
    int slot = it - o.warmup;
    ok = enqueue_call(b, c, v, ex, count, slot);
    for (size_t r = 0; r < b.ranks.size() && slot >= 0; r++) {
      CUDA_CHECK(cudaSetDevice(b.ranks[r].dev));
      CUDA_CHECK(cudaEventRecord(b.ranks[r].ev1[slot], b.ranks[r].stream));
    }
  }
  ok = finish_ranks(b, v) && ok;
  for (size_t r = 0; r < b.ranks.size() && ok; r++)
    for (int i = 0; i < o.iters; i++)
      CUDA_CHECK(cudaEventElapsedTime(&per[r][i], b.ranks[r].ev0[i], b.ranks[r].ev1[i]));
  std::vector<float> slow(o.iters, 0.f);
  for (int i = 0; i < o.iters; i++)
    for (size_t r = 0; r < b.ranks.size(); r++) slow[i] = std::max(slow[i], per[r][i]);
  return median_of_slowest(b, slow, ok);
}

/* Elements of kiln's output that differ from NCCL's, over every rank (all processes). */
static long long compare_outputs(Bench& b, kilnColl_t c, size_t count, size_t recvBytes) {
  const size_t es = kilnDataTypeSize(b.o.dtype);
  unsigned long long total = 0;
  for (auto& R : b.ranks) {
    CUDA_CHECK(cudaSetDevice(R.dev));
    const void* sb;
    void *rn, *rk;
    call_buffers(c, R, R.recvN, count, es, b.o.inplace, &sb, &rn);
    call_buffers(c, R, R.recvK, count, es, b.o.inplace, &sb, &rk);
    CUDA_CHECK(cudaMemsetAsync(R.dcount, 0, sizeof(unsigned long long), R.stream));
    diffKernel<<<256, 256, 0, R.stream>>>((const unsigned char*)rn, (const unsigned char*)rk, recvBytes / es,
                                          (int)es, R.dcount);
    unsigned long long h = 0;
    CUDA_CHECK(cudaMemcpyAsync(&h, R.dcount, sizeof h, cudaMemcpyDeviceToHost, R.stream));
    CUDA_CHECK(cudaStreamSynchronize(R.stream));
    total += h;
  }
  if (b.o.mp) {
    shared->err[b.ranks[0].rank] = (long long)total;
    mp_barrier(b);
    total = 0;
    for (int r = 0; r < b.n; r++) total += (unsigned long long)shared->err[r];
    mp_barrier(b);
  }
  return (long long)total;
}

/* Restores inputs (in place, the output buffers hold them) and poisons kiln's output. */
static void reset_buffers(Bench& b, kilnColl_t c, size_t count, bool kilnSide) {
  const size_t es = kilnDataTypeSize(b.o.dtype);
  for (auto& R : b.ranks) {
    CUDA_CHECK(cudaSetDevice(R.dev));
    char* out = kilnSide ? R.recvK : R.recvN;
    size_t sendB, recvB;
    buffer_bytes(c, b.n, kilnRegistryCallBytes(c, b.n, count, b.o.dtype), &sendB, &recvB);
    fillBytes<<<256, 256, 0, R.stream>>>((unsigned char*)out, recvB, 0xA5);
    if (b.o.inplace) {
      const void* sb;
      void* rb;
      call_buffers(c, R, out, count, es, true, &sb, &rb);
      fill(b.o.dtype, (void*)sb, sendB / es, R.rank, R.stream);
    } else {
      fill(b.o.dtype, R.send, sendB / es, R.rank, R.stream);
    }
  }
  for (auto& R : b.ranks) {
    CUDA_CHECK(cudaSetDevice(R.dev));
    CUDA_CHECK(cudaStreamSynchronize(R.stream));
  }
}

/* --shared: the reference output of every rank in its NCCL-output buffer (after reset_buffers). */
static void reference_outputs(Bench& b, kilnColl_t c, size_t count) {
  const size_t es = kilnDataTypeSize(b.o.dtype);
  size_t sendB, recvB;
  buffer_bytes(c, b.n, kilnRegistryCallBytes(c, b.n, count, b.o.dtype), &sendB, &recvB);
  for (auto& R : b.ranks) {
    CUDA_CHECK(cudaSetDevice(R.dev));
    const void* sb;
    void* rb;
    call_buffers(c, R, R.recvN, count, es, b.o.inplace, &sb, &rb);
    reference(b.o.dtype, rb, recvB / es, c, count, b.n, R.rank, b.o.op, R.stream);
    CUDA_CHECK(cudaGetLastError());
  }
}

/* --shared: whether refKernel's reference is exact for (c, op) on type t. The 8-bit floats are
 * filled with the small integers as raw bytes (withType): moved, they compare byte for byte;
 * reduced, they are not those integers. */
static bool reference_exact(kilnColl_t c, kilnRedOp_t op, kilnDataType_t t) {
  if (!reduces(c)) return true;
  if (t == KILN_FLOAT8E4M3 || t == KILN_FLOAT8E5M2) return false;
  return op == KILN_SUM || op == KILN_MAX || op == KILN_MIN;
}

/* How the ranks are driven, for the header (long) or the CSV's model field. */
static const char* model_name(const Options& o, bool csv) {
  static char buf[96];
  const char* timing = o.graph ? "+graph" : o.batch ? "+batch" : "";
  if (o.shared && csv)
    snprintf(buf, sizeof buf, "shared%d%s", o.shared, timing);
  else if (o.shared)
    snprintf(buf, sizeof buf, "one process, ranks sharing %d GPU%s (no NCCL)", o.shared, plural(o.shared));
  else if (csv)
    snprintf(buf, sizeof buf, "%s%s", o.mp ? "mp" : "single", timing);
  else
    snprintf(buf, sizeof buf, "%s", o.mp ? "one process per GPU" : "one process driving all GPUs");
  return buf;
}

/* --mp: whether `mine` holds in every process (without --mp: mine). What decides the path
 * through the variants must be the same everywhere, or the processes would wait at different
 * barriers: kiln turned off in one process whose kiln failed on the GPU (finish_ranks, one_call),
 * a plan that loaded in one but not another (execsFor). */
static bool agree_all(Bench& b, bool mine) {
  if (!b.o.mp) return mine;
  shared->err[b.ranks[0].rank] = mine ? 1 : 0;
  mp_barrier(b);
  bool all = true;
  for (int r = 0; r < b.n; r++) all = all && shared->err[r] != 0;
  mp_barrier(b);
  return all;
}

/* One checked call of variant v (after reset_buffers): returns false when kiln failed. */
static bool one_call(Bench& b, kilnColl_t c, int v, std::vector<kilnExec_t>* ex, size_t count) {
  bool ok = enqueue_call(b, c, v, ex, count);
  for (auto& R : b.ranks) {
    CUDA_CHECK(cudaSetDevice(R.dev));
    CUDA_CHECK(cudaStreamSynchronize(R.stream));
    if (v != V_NCCL) {
      kilnResult_t ae = KILN_SUCCESS;
      kilnCommGetAsyncError(R.kc, &ae);
      if (ae != KILN_SUCCESS) {
        b.kilnOk = false;
        ok = false;
      }
    }
  }
  return ok;
}

/* What kiln runs by default for a call of count elements on the lead rank's buffers: the
 * selector's answer (kilnSelect over the registry, as the drop-in asks it). */
static kilnChoice selected(const Bench& b, kilnColl_t c, size_t count) {
  Rank& R = const_cast<Rank&>(b.ranks[0]);
  kilnCall call = {c, nullptr, nullptr, count, b.o.dtype, b.o.op, b.o.graph > 0};
  void* rb = nullptr;
  call_buffers(c, R, R.recvK, count, kilnDataTypeSize(b.o.dtype), b.o.inplace, &call.sendbuf, &rb);
  call.recvbuf = rb;
  return kilnSelect(R.kc, nullptr, &call);
}

/* The symmetric algorithm for a call on kc (KILN_SYM_NONE: nothing fits the staging memory): the
 * one of the symmetric kernels' ranges (kilnSymSelect, whatever plans the bench added), else the
 * collective's algorithm (allreduce: one-shot to 256 KiB, two-shot above); --sym oneshot|twoshot
 * forces one for allreduce. */
static kilnSymAlgo_t sym_algo(kilnComm_t kc, const Options& o, kilnColl_t c, size_t count, uint64_t bytes) {
  kilnSymAlgo_t a = kilnSymSelect(kc, c, count, o.dtype, o.inplace);
  if (c == KILN_COLL_ALLREDUCE && o.sym >= 2)
    a = o.sym == 2 ? KILN_SYM_ALLREDUCE_ONESHOT : KILN_SYM_ALLREDUCE_TWOSHOT;
  else if (a == KILN_SYM_NONE)
    a = c == KILN_COLL_ALLREDUCE
            ? (bytes <= (256u << 10) ? KILN_SYM_ALLREDUCE_ONESHOT : KILN_SYM_ALLREDUCE_TWOSHOT)
        : c == KILN_COLL_REDUCESCATTER ? KILN_SYM_REDUCESCATTER
        : c == KILN_COLL_ALLGATHER     ? KILN_SYM_ALLGATHER
                                       : KILN_SYM_ALLTOALL;
  return kilnSymFits(kc, a, count, o.dtype, o.inplace) ? a : KILN_SYM_NONE;
}

/* What the sym column runs for a call (sym_algo); *isDefault: kiln runs it by default (the
 * selector's choice). */
static kilnSymAlgo_t sym_column(const Bench& b, kilnColl_t c, size_t count, uint64_t bytes,
                                const kilnChoice& ch, bool* isDefault) {
  const kilnSymAlgo_t a = sym_algo(b.ranks[0].kc, b.o, c, count, bytes);
  *isDefault = a != KILN_SYM_NONE && ch.serve == KILN_SERVE_SYM && ch.sym == a;
  return a;
}

/* kiln classic's plan (algo, coll, n ranks, proto, instances, chunks, in place or not), or
 * nullptr with the reason in kilnLastError. */
static kilnPlan* classic_plan(const char* algo, kilnColl_t c, int n, kilnProto_t proto, int instances,
                              int chunks, bool inplace) {
  kilnClassicOptions co = KILN_CLASSIC_OPTIONS_INIT;
  co.proto = proto;
  co.instances = instances;
  co.chunks = chunks;
  co.inplace = inplace;
  kilnPlan* p = nullptr;
  return kilnClassicPlan(algo, c, n, &co, &p) == KILN_SUCCESS ? p : nullptr;
}

/* The registry's entry of kiln classic's plan (algo, coll, the bench's ranks, proto, instances,
 * chunks, o.inplace), made and added on first use (nullptr with a message where classic has no
 * such plan or the registry refuses it). */
static const kilnRegistryEntry* classic_entry(const Bench& b, const char* algo, kilnColl_t c,
                                              kilnProto_t proto, int instances, int chunks) {
  kilnPlan* p = classic_plan(algo, c, b.n, proto, instances, chunks, b.o.inplace);
  if (!p) {
    fprintf(stderr, "coll_bench: kiln classic %s %s: %s\n", algo, kilnCollName(c), kilnLastError());
    return nullptr;
  }
  const kilnRegistryEntry* e = kilnRegistryFind(p->name);
  if (!e && kilnRegistryAddPlan(p, &e) != KILN_SUCCESS) {
    fprintf(stderr, "coll_bench: plan %s: %s\n", p->name, kilnLastError());
    e = nullptr;
  }
  if (e && b.o.writePlans && b.ranks[0].rank == 0) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.xml", b.o.writePlans, p->name);
    if (kilnPlanWriteFile(p, path) != KILN_SUCCESS) die("--write-plans: %s", kilnLastError());
  }
  kilnPlanFree(p);
  return e;
}

/* --classic: the plan of the spec for collective c (nullptr where the algorithm has none). */
static const kilnRegistryEntry* classic_spec_entry(const Bench& b, kilnColl_t c) {
  char algo[32] = "", proto[16] = "Simple";
  int instances = 1, chunks = 1;
  sscanf(b.o.classic, "%31[^:]:%15[^:]:%d:%d", algo, proto, &instances, &chunks);
  kilnProto_t pr = KILN_PROTO_SIMPLE;
  if (!kilnProtoParse(proto, &pr)) die("--classic %s: protocol %s unknown", b.o.classic, proto);
  return classic_entry(b, algo, c, pr, instances, chunks);
}

/* kiln classic's plan of the form symmetric kernel a runs for a call (kc's geometry of it): its
 * algorithm (oneshot, twoshot, staged, or zerocopy where the kernel goes direct), the protocol of
 * its lines or Simple for its flag form, an instance per block of it (at most `channels`: a plan's
 * threadblocks of one peer pair take a channel each); false where the kernel cannot take the call. */
struct MirrorSpec {
  const char* algo;
  kilnProto_t proto;
  int instances;
};
static bool mirror_spec(kilnComm_t kc, kilnSymAlgo_t a, kilnColl_t c, const void* sb, void* rb, size_t count,
                        kilnDataType_t dtype, int channels, MirrorSpec* m) {
  int direct = 0, lines = 0, blocks = 1;
  if (!kilnSymCallShape(kc, a, sb, rb, count, dtype, &direct, &lines, &blocks)) return false;
  m->instances = blocks < channels ? blocks : channels;
  if (direct && (c == KILN_COLL_ALLGATHER || c == KILN_COLL_ALLTOALL)) {
    m->algo = "zerocopy";
    m->proto = KILN_PROTO_SIMPLE;
    return true;
  }
  m->proto = lines == KILN_SYM_LINES_LL      ? KILN_PROTO_LL
             : lines == KILN_SYM_LINES_LL12  ? KILN_PROTO_LL12
             : lines == KILN_SYM_LINES_LL128 ? KILN_PROTO_LL128
                                             : KILN_PROTO_SIMPLE;
  m->algo = a == KILN_SYM_ALLREDUCE_TWOSHOT                                  ? "twoshot"
            : a == KILN_SYM_ALLREDUCE_ONESHOT || a == KILN_SYM_REDUCESCATTER ? "oneshot"
                                                                             : "staged";
  return true;
}

/* The channels of the bench's communicators. */
static int bench_channels(const Options& o) {
  const kilnCommConfig defaults = KILN_COMM_CONFIG_INITIALIZER;
  return o.channels ? o.channels : defaults.maxChannels;
}

/* --mirror: kiln classic's plan of the form the sym column runs for this call (sym_algo,
 * mirror_spec), or nullptr where there is none. */
static const kilnRegistryEntry* mirror_entry(const Bench& b, kilnColl_t c, size_t count, uint64_t bytes) {
  const kilnSymAlgo_t a = sym_algo(b.ranks[0].kc, b.o, c, count, bytes);
  if (a == KILN_SYM_NONE) return nullptr;
  Rank& R = const_cast<Rank&>(b.ranks[0]);
  const size_t es = kilnDataTypeSize(b.o.dtype);
  const void* sb;
  void* rb;
  call_buffers(c, R, R.recvK, count, es, b.o.inplace, &sb, &rb);
  MirrorSpec m;
  if (!mirror_spec(R.kc, a, c, sb, rb, count, b.o.dtype, bench_channels(b.o), &m)) return nullptr;
  return classic_entry(b, m.algo, c, m.proto, m.instances, 1);
}

/* --mirror-plans DIR: without a GPU, the plans --mirror runs on staged buffers at the bench's
 * sizes (ranks sharing --shared G GPUs of --sms S SMs each: a rank's share sets the blocks), written
 * to DIR for a build that bakes them (KILN_PLANS_DIR), so that --mirror then times generated
 * kernels. The symmetric kernel of a size is sym_algo's, as the sym column's. */
static int write_mirror_plans(const Options& o, int n) {
  const kilnCommConfig defaults = KILN_COMM_CONFIG_INITIALIZER;
  const size_t symBytes = o.symBytes >= 0 ? (size_t)o.symBytes : defaults.symBytes;
  const int perGpu = o.shared ? (n + o.shared - 1) / o.shared : 1;
  kilnComm_t kc = kilnTestCommHost(n, 0, symBytes / 2);
  if (!kc) die("--mirror-plans: out of memory");
  kilnTestCommSetSms(kc, o.sms / perGpu);
  kilnTestCommConfigure(kc);
  const size_t es = kilnDataTypeSize(o.dtype);
  int written = 0;
  for (int ci = 0; ci < KILN_NUM_COLLS; ci++) {
    const kilnColl_t c = (kilnColl_t)ci;
    if (!o.colls[c] || (o.inplace && c == KILN_COLL_ALLTOALL)) continue;
    for (uint64_t bytes = o.minB; bytes <= o.maxB; bytes *= (uint64_t)o.factor) {
      const size_t count = call_count(c, n, bytes, es);
      if (count == 0) continue;
      /* Rank 0's buffers, never dereferenced and in no window (staged); in place: the same. */
      void* const rb = (void*)(uintptr_t)(1ull << 33);
      const void* const sb = o.inplace ? rb : (const void*)(uintptr_t)(1ull << 32);
      const kilnSymAlgo_t a = sym_algo(kc, o, c, count, kilnRegistryCallBytes(c, n, count, o.dtype));
      MirrorSpec m;
      if (a == KILN_SYM_NONE || !mirror_spec(kc, a, c, sb, rb, count, o.dtype, bench_channels(o), &m))
        continue;
      kilnPlan* p = classic_plan(m.algo, c, n, m.proto, m.instances, 1, o.inplace);
      if (!p) die("--mirror-plans: kiln classic %s %s: %s", m.algo, kilnCollName(c), kilnLastError());
      char path[4096];
      snprintf(path, sizeof path, "%s/%s.xml", o.mirrorPlans, p->name);
      if (access(path, F_OK) != 0) {
        if (kilnPlanWriteFile(p, path) != KILN_SUCCESS) die("--mirror-plans: %s", kilnLastError());
        written++;
      }
      printf("%s %llu B: %s\n", kilnCollName(c), (unsigned long long)bytes, p->name);
      kilnPlanFree(p);
    }
  }
  kilnTestCommFree(kc);
  printf("# %d plan%s written to %s\n", written, plural(written), o.mirrorPlans);
  return 0;
}

static void run_coll(Bench& b, kilnColl_t c, std::vector<Row>& rows) {
  const Options& o = b.o;
  const size_t es = kilnDataTypeSize(o.dtype);
  const bool lead = b.ranks[0].rank == 0;
  if (lead) {
    printf("#\n# %s, %d ranks, %s, %s%s, %s%s\n", kilnCollName(c), b.n, kilnDataTypeName(o.dtype),
           reduces(c) ? kilnRedOpName(o.op) : "-", o.inplace ? ", in place" : "", model_name(o, false),
           o.graph ? ", CUDA graphs" : "");
    if (o.shared && !reference_exact(c, o.op, o.dtype))
      printf("# %s %s results not checked (no exact reference)\n", kilnDataTypeName(o.dtype),
             kilnRedOpName(o.op));
    printf(
        "# %12s %12s %6s  %-30s %9s %7s %7s  %9s %7s %7s %5s  %9s %7s %7s %5s  %9s %7s %7s %5s  %7s  %8s\n",
        "size(B)", "count", "type", "plan", "nccl(us)", "algbw", "busbw", "baked(us)", "algbw", "busbw",
        "err", "interp(us)", "algbw", "busbw", "err", "sym(us)", "algbw", "busbw", "err", "speedup",
        "plan/sym");
  }
  for (uint64_t bytes = o.minB; bytes <= o.maxB; bytes *= (uint64_t)o.factor) {
    const size_t count = call_count(c, b.n, bytes, es);
    if (count == 0) continue;
    const uint64_t real = kilnRegistryCallBytes(c, b.n, count, o.dtype);
    const kilnChoice choice =
        b.kilnOk ? selected(b, c, count)
                 : kilnChoice{KILN_SERVE_NCCL, -1, nullptr, KILN_SYM_NONE, KILN_SELECT_NO_KILN};
    /* The plans to measure at this size. */
    std::vector<const kilnRegistryEntry*> cands;
    if (o.sweep) {
      for (int i = 0; i < kilnRegistryCount(); i++) {
        const kilnRegistryEntry* x = kilnRegistryAt(i);
        if (x && x->coll == c && x->nranks == b.n && (o.inplace ? x->inplace : x->outofplace))
          cands.push_back(x);
      }
    } else {
      /* The selector's plan where it picks one, else the plan the registry ranks first (measured
       * beside the default: the A/B of the plan path); --classic and --mirror: kiln classic's. */
      const kilnRegistryEntry* e = o.plan      ? kilnRegistryFind(o.plan)
                                   : o.classic ? classic_spec_entry(b, c)
                                   : o.mirror  ? mirror_entry(b, c, count, real)
                                   : choice.serve == KILN_SERVE_PLAN
                                       ? choice.entry
                                       : kilnRegistrySelect(c, b.n, real, o.inplace, o.dtype, o.op);
      if (e && (e->coll != c || e->nranks != b.n)) e = nullptr;
      cands.push_back(e);
    }
    reset_buffers(b, c, count, false);
    const double ncclUs = o.shared ? -1 : time_variant(b, c, V_NCCL, nullptr, count);
    for (const kilnRegistryEntry* e : cands) {
      Row row;
      memset(&row, 0, sizeof row);
      row.coll = c;
      row.bytes = real;
      row.count = count;
      for (int v = 0; v < NV; v++) {
        row.us[v] = -1;
        row.err[v] = -1;
      }
      snprintf(row.plan, sizeof row.plan, "%s", e ? e->name : "-");
      row.bakedDefault = e && e->inlined;
      row.ncclDefault = choice.serve == KILN_SERVE_NCCL && !o.plan && !o.sweep;
      b.kilnOk = agree_all(b, b.kilnOk);
      std::vector<kilnExec_t>* ex = (e && b.kilnOk) ? execsFor(b, e) : nullptr;
      if (ex && !(*ex)[0]) ex = nullptr;
      if (!agree_all(b, ex != nullptr || !e)) ex = nullptr;
      bool hasBaked =
          e && kilnRegistryKernel(e, o.dtype, o.op) != nullptr && ex && kilnExecUseBaked((*ex)[0], true);
      row.us[V_NCCL] = ncclUs;
      /* The sym column: once per size (the first candidate's row). */
      b.symAlgo = o.sym && e == cands[0] && b.kilnOk ? sym_column(b, c, count, real, choice, &row.symDefault)
                                                     : KILN_SYM_NONE;
      snprintf(row.sym, sizeof row.sym, "%s", b.symAlgo == KILN_SYM_NONE ? "-" : kilnSymAlgoName(b.symAlgo));
      for (int v = V_BAKED; v < NV; v++) {
        b.kilnOk = agree_all(b, b.kilnOk);
        if (!b.kilnOk) break;
        if (v != V_SYM && !ex) continue;
        if (v == V_SYM && b.symAlgo == KILN_SYM_NONE) continue;
        if (v == V_BAKED && !hasBaked) continue;
        if (v == V_INTERP && o.sweep) continue;
        reset_buffers(b, c, count, true);
        row.us[v] = time_variant(b, c, v, ex, count);
        if (row.us[v] < 0 || !o.check || (o.shared && !reference_exact(c, o.op, o.dtype))) continue;
        reset_buffers(b, c, count, false);
        if (o.shared)
          reference_outputs(b, c, count);
        else
          one_call(b, c, V_NCCL, nullptr, count);
        reset_buffers(b, c, count, true);
        const bool called = one_call(b, c, v, ex, count);
        size_t sendB, recvB;
        buffer_bytes(c, b.n, real, &sendB, &recvB);
        row.err[v] = compare_outputs(b, c, count, recvB);
        if (!called) row.us[v] = -1, row.err[v] = -1;
      }
      rows.push_back(row);
      if (!lead) continue;
      const double f = bus_factor(c, b.n);
      printf("  %12llu %12zu %6s  %-30.30s", (unsigned long long)real, count, kilnDataTypeName(o.dtype),
             row.plan);
      for (int v = 0; v < NV; v++) {
        if (row.us[v] < 0) {
          printf(v == 0 ? " %9s %7s %7s" : "  %9s %7s %7s %5s", "-", "-", "-", "-");
          continue;
        }
        const double alg = (double)real / (row.us[v] * 1e3);
        printf(v == 0 ? " %9.2f %7.2f %7.2f" : "  %9.2f %7.2f %7.2f", row.us[v], alg, alg * f);
        if (v) {
          if (row.err[v] < 0)
            printf(" %5s", "-");
          else
            printf(" %5lld", row.err[v]);
        }
      }
      if (speedup(row) > 0)
        printf("  %6.2fx", speedup(row));
      else
        printf("  %7s", "-");
      /* The plan path against the symmetric kernel on the same call: the plan's baked time where it
     * ran, else its interpreted time, over the sym column's. */
      const double planUs = row.us[V_BAKED] > 0 ? row.us[V_BAKED] : row.us[V_INTERP];
      if (planUs > 0 && row.us[V_SYM] > 0)
        printf("  %7.3fx\n", planUs / row.us[V_SYM]);
      else
        printf("  %8s\n", "-");
      fflush(stdout);
    }
  }
}

static void write_csv(const Bench& b, const std::vector<Row>& rows) {
  FILE* f = fopen(b.o.csv, "w");
  if (!f) die("cannot write %s", b.o.csv);
  fprintf(f, "coll,nranks,model,dtype,op,inplace,size,count,plan");
  for (int v = 0; v < NV; v++)
    fprintf(f, ",%s_us,%s_algbw,%s_busbw,%s_err", vname[v], vname[v], vname[v], vname[v]);
  fprintf(f, ",speedup,sym\n");
  for (const Row& r : rows) {
    fprintf(f, "%s,%d,%s,%s,%s,%d,%llu,%llu,%s", kilnCollName(r.coll), b.n, model_name(b.o, true),
            kilnDataTypeName(b.o.dtype), kilnRedOpName(b.o.op), b.o.inplace, (unsigned long long)r.bytes,
            (unsigned long long)r.count, r.plan);
    for (int v = 0; v < NV; v++) {
      if (r.us[v] < 0) {
        fprintf(f, ",,,,");
        continue;
      }
      double alg = (double)r.bytes / (r.us[v] * 1e3);
      fprintf(f, ",%.3f,%.3f,%.3f,", r.us[v], alg, alg * bus_factor(r.coll, b.n));
      if (v && r.err[v] >= 0) fprintf(f, "%lld", r.err[v]);
    }
    if (speedup(r) > 0)
      fprintf(f, ",%.3f", speedup(r));
    else
      fprintf(f, ",");
    fprintf(f, ",%s%s\n", r.sym, r.symDefault ? "*" : "");
  }
  fclose(f);
}

static void write_svg(const Bench& b, const std::vector<Row>& rows) {
  std::vector<benchPanel> panels;
  std::vector<std::vector<benchSeries>> series;
  std::vector<std::vector<std::vector<double>>> xs, ys;
  for (int c = 0; c < KILN_NUM_COLLS; c++) {
    if (!b.o.colls[c]) continue;
    std::vector<std::vector<double>> x(NV), y(NV);
    for (const Row& r : rows)
      if (r.coll == c)
        for (int v = 0; v < NV; v++)
          if (r.us[v] > 0) {
            x[v].push_back((double)r.bytes);
            y[v].push_back((double)r.bytes / (r.us[v] * 1e3));
          }
    xs.push_back(x);
    ys.push_back(y);
  }
  size_t k = 0;
  series.resize(xs.size());
  for (int c = 0; c < KILN_NUM_COLLS; c++) {
    if (!b.o.colls[c]) continue;
    for (int v = 0; v < NV; v++)
      series[k].push_back(benchSeries{vname[v], xs[k][v].data(), ys[k][v].data(), (int)xs[k][v].size()});
    benchPanel p;
    if (b.o.shared)
      snprintf(p.title, sizeof p.title, "%s, %d ranks on %d GPU%s", kilnCollName((kilnColl_t)c), b.n,
               b.o.shared, plural(b.o.shared));
    else
      snprintf(p.title, sizeof p.title, "%s, %d GPUs%s", kilnCollName((kilnColl_t)c), b.n,
               b.o.mp ? " (one process per GPU)" : "");
    p.series = series[k].data();
    p.nseries = (int)series[k].size();
    panels.push_back(p);
    k++;
  }
  char title[160];
  snprintf(title, sizeof title, "algbw (GB/s) vs size: NCCL, kiln baked, kiln interpreted, kiln sym (%s)",
           kilnDataTypeName(b.o.dtype));
  if (benchSvgWrite(b.o.svg, title, panels.data(), (int)panels.size()) != 0) die("cannot write %s", b.o.svg);
}

static void usage(FILE* f) {
  fprintf(f,
          "usage: coll_bench [--ranks N] [--colls LIST] [--dtype T] [--op OP] [--min SIZE] [--max SIZE]\n"
          "                  [--factor F] [--iters N] [--warmup N] [--inplace] [--plan NAME]\n"
          "                  [--plans PATH] [--csv FILE] [--svg FILE] [--mp] [--no-check]\n"
          "                  [--timeout-ms MS] [--sweep] [--graph N] [--batch [--host-time]]\n"
          "                  [--slot-bytes SIZE] [--nslots N] [--threads N] [--channels N]\n"
          "                  [--sym-bytes SIZE] [--sym auto|off|oneshot|twoshot] [--window]\n"
          "                  [--shared G] [--classic ALGO[:PROTO[:INSTANCES[:CHUNKS]]]] [--mirror]\n"
          "                  [--write-plans DIR] [--mirror-plans DIR [--sms S]]\n"
          "Measures NCCL, kiln baked, kiln interpreted and kiln's symmetric-memory kernels side by\n"
          "side (see bench/coll_bench.cu).\n");
}

static void parse_args(int argc, char** argv, Options& o) {
  bool anyColl = false;
  for (int i = 1; i < argc; i++) {
    auto need = [&](const char* what) -> const char* {
      if (i + 1 >= argc) {
        usage(stderr);
        die("%s needs a value", what);
      }
      return argv[++i];
    };
    const char* a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      exit(0);
    } else if (!strcmp(a, "--ranks"))
      o.nranks = atoi(need(a));
    else if (!strcmp(a, "--colls")) {
      char* list = strdup(need(a));
      for (char* s = strtok(list, ","); s; s = strtok(NULL, ",")) {
        kilnColl_t c;
        if (!kilnCollParse(s, &c) || c == KILN_COLL_CUSTOM) {
          usage(stderr);
          die("unknown collective %s", s);
        }
        o.colls[c] = anyColl = true;
      }
      free(list);
    } else if (!strcmp(a, "--dtype")) {
      if (!kilnDataTypeParse(need(a), &o.dtype)) die("unknown dtype %s", argv[i]);
    } else if (!strcmp(a, "--op")) {
      if (!kilnRedOpParse(need(a), &o.op)) die("unknown op %s", argv[i]);
    } else if (!strcmp(a, "--min")) {
      if (!kilnParseSize(need(a), &o.minB)) die("bad size %s", argv[i]);
    } else if (!strcmp(a, "--max")) {
      if (!kilnParseSize(need(a), &o.maxB)) die("bad size %s", argv[i]);
    } else if (!strcmp(a, "--factor"))
      o.factor = atoi(need(a));
    else if (!strcmp(a, "--iters"))
      o.iters = atoi(need(a));
    else if (!strcmp(a, "--warmup"))
      o.warmup = atoi(need(a));
    else if (!strcmp(a, "--timeout-ms"))
      o.timeoutMs = atoi(need(a));
    else if (!strcmp(a, "--slot-bytes")) {
      if (!kilnParseSize(need(a), &o.slotBytes)) die("bad size %s", argv[i]);
    } else if (!strcmp(a, "--nslots"))
      o.nslots = atoi(need(a));
    else if (!strcmp(a, "--channels"))
      o.channels = atoi(need(a));
    else if (!strcmp(a, "--threads"))
      o.threads = atoi(need(a));
    else if (!strcmp(a, "--sym-bytes")) {
      uint64_t v = 0;
      if (!kilnParseSize(need(a), &v)) die("bad size %s", argv[i]);
      o.symBytes = (long long)v;
    } else if (!strcmp(a, "--sym")) {
      const char* v = need(a);
      o.sym = !strcmp(v, "off")       ? 0
              : !strcmp(v, "auto")    ? 1
              : !strcmp(v, "oneshot") ? 2
              : !strcmp(v, "twoshot") ? 3
                                      : -1;
      if (o.sym < 0) {
        usage(stderr);
        die("--sym: auto, off, oneshot or twoshot, not %s", v);
      }
    } else if (!strcmp(a, "--inplace"))
      o.inplace = true;
    else if (!strcmp(a, "--window"))
      o.window = true;
    else if (!strcmp(a, "--no-check"))
      o.check = false;
    else if (!strcmp(a, "--mp"))
      o.mp = true;
    else if (!strcmp(a, "--shared")) {
      o.shared = atoi(need(a));
      if (o.shared < 1) {
        usage(stderr);
        die("--shared: a GPU count of 1 or more, not %s", argv[i]);
      }
    } else if (!strcmp(a, "--sweep"))
      o.sweep = true;
    else if (!strcmp(a, "--graph"))
      o.graph = atoi(need(a));
    else if (!strcmp(a, "--batch"))
      o.batch = true;
    else if (!strcmp(a, "--host-time"))
      o.hostTime = true;
    else if (!strcmp(a, "--plan"))
      o.plan = need(a);
    else if (!strcmp(a, "--plans"))
      o.plans = need(a);
    else if (!strcmp(a, "--classic"))
      o.classic = need(a);
    else if (!strcmp(a, "--mirror"))
      o.mirror = true;
    else if (!strcmp(a, "--write-plans"))
      o.writePlans = need(a);
    else if (!strcmp(a, "--mirror-plans"))
      o.mirrorPlans = need(a);
    else if (!strcmp(a, "--sms"))
      o.sms = atoi(need(a));
    else if (!strcmp(a, "--csv"))
      o.csv = need(a);
    else if (!strcmp(a, "--svg"))
      o.svg = need(a);
    else {
      usage(stderr);
      fprintf(stderr, "coll_bench: unexpected argument '%s'\n", a);
      exit(2);
    }
  }
  if (!anyColl)
    for (int c = 0; c < KILN_NUM_COLLS; c++) o.colls[c] = c != KILN_COLL_CUSTOM;
  if (o.graph < 0 || o.graph > 1000 || o.factor < 2 || o.iters < 1 || o.iters > 1024 || o.warmup < 0 ||
      o.minB < 1 || o.minB > o.maxB || o.timeoutMs < 1) {
    usage(stderr);
    fprintf(stderr, "coll_bench: bad --factor/--iters/--warmup/--min/--max/--timeout-ms\n");
    exit(2);
  }
  if (o.shared && (o.mp || o.window)) {
    usage(stderr);
    fprintf(stderr, "coll_bench: --shared: one process, plain buffers (not with --mp or --window)\n");
    exit(2);
  }
  if ((o.plan != nullptr) + (o.classic != nullptr) + o.mirror + o.sweep > 1) {
    usage(stderr);
    fprintf(stderr, "coll_bench: one of --plan, --classic, --mirror and --sweep\n");
    exit(2);
  }
  if (o.batch && o.graph > 0) {
    usage(stderr);
    fprintf(stderr, "coll_bench: --batch times eager calls (not with --graph)\n");
    exit(2);
  }
}

/* Sets up the ranks this process drives, NCCL and kiln communicators, buffers and events. */
static void setup(Bench& b, const std::vector<int>& myRanks, const ncclUniqueId* id) {
  const Options& o = b.o;
  const size_t es = kilnDataTypeSize(o.dtype);
  size_t maxSend = 0, maxRecv = 0;
  for (int c = 0; c < KILN_NUM_COLLS; c++) {
    if (!o.colls[c]) continue;
    size_t s, r;
    buffer_bytes((kilnColl_t)c, b.n, o.maxB, &s, &r);
    maxSend = std::max(maxSend, s + es * b.n);
    maxRecv = std::max(maxRecv, std::max(s, r) + es * b.n); /* in place, output holds input */
  }
  b.ranks.resize(myRanks.size());
  std::vector<ncclComm_t> nc(myRanks.size(), nullptr);
  if (o.shared) {
    /* no NCCL */
  } else if (!id) {
    std::vector<int> devs(myRanks.begin(), myRanks.end());
    NCCL_CHECK(ncclCommInitAll(nc.data(), (int)devs.size(), devs.data()));
  } else {
    CUDA_CHECK(cudaSetDevice(myRanks[0]));
    NCCL_CHECK(ncclCommInitRank(&nc[0], b.n, *id, myRanks[0]));
  }
  for (size_t i = 0; i < myRanks.size(); i++) {
    Rank& R = b.ranks[i];
    R.rank = myRanks[i];
    R.dev = o.shared ? myRanks[i] % o.shared : myRanks[i];
    R.nccl = nc[i];
    CUDA_CHECK(cudaSetDevice(R.dev));
    CUDA_CHECK(cudaStreamCreateWithFlags(&R.stream, cudaStreamNonBlocking));
    R.sendBytes = maxSend;
    R.recvBytes = maxRecv;
    char** slots[3] = {&R.send, &R.recvN, &R.recvK};
    for (int k = 0; k < 3; k++) {
      if (o.window)
        NCCL_CHECK(ncclMemAlloc((void**)slots[k], R.bufBytes(k)));
      else
        CUDA_CHECK(cudaMalloc((void**)slots[k], R.bufBytes(k)));
    }
    CUDA_CHECK(cudaMalloc(&R.dcount, sizeof(unsigned long long)));
    R.ev0 = (cudaEvent_t*)calloc(o.iters, sizeof(cudaEvent_t));
    R.ev1 = (cudaEvent_t*)calloc(o.iters, sizeof(cudaEvent_t));
    for (int k = 0; k < o.iters; k++) {
      CUDA_CHECK(cudaEventCreate(&R.ev0[k]));
      CUDA_CHECK(cudaEventCreate(&R.ev1[k]));
    }
  }
  kilnCommConfig cfg = KILN_COMM_CONFIG_INITIALIZER;
  cfg.timeoutMs = o.timeoutMs;
  if (o.slotBytes) cfg.slotBytes = (size_t)o.slotBytes;
  if (o.nslots) cfg.nslots = o.nslots;
  if (o.channels) cfg.maxChannels = o.channels;
  if (o.threads) cfg.threads = o.threads;
  if (o.symBytes >= 0) cfg.symBytes = (size_t)o.symBytes;
  std::vector<kilnComm_t> kc(myRanks.size(), nullptr);
  std::vector<int> devs;
  for (const Rank& R : b.ranks) devs.push_back(R.dev);
  kilnResult_t kr = o.shared              ? kilnCommCreateShared(b.n, devs.data(), &cfg, kc.data())
                    : myRanks.size() == 1 ? kilnCommCreate(nc[0], &cfg, &kc[0])
                                          : kilnCommCreateAll((int)nc.size(), nc.data(), &cfg, kc.data());
  if (kr != KILN_SUCCESS) {
    fprintf(stderr, "coll_bench: kiln communicator: %s (kiln columns stay empty)\n", kilnLastError());
    b.kilnOk = false;
  }
  for (size_t i = 0; i < myRanks.size(); i++) b.ranks[i].kc = kc[i];
  if (!o.window) return;
  /* Every buffer a symmetric window, for NCCL (grouped: one thread may drive every rank) and kiln. */
  NCCL_CHECK(ncclGroupStart());
  for (auto& R : b.ranks) {
    CUDA_CHECK(cudaSetDevice(R.dev));
    for (int k = 0; k < 3; k++)
      NCCL_CHECK(ncclCommWindowRegister(R.nccl, R.buf(k), R.bufBytes(k), &R.win[k], NCCL_WIN_COLL_SYMMETRIC));
  }
  NCCL_CHECK(ncclGroupEnd());
  for (auto& R : b.ranks)
    for (int k = 0; k < 3 && R.kc; k++)
      if (kilnCommWindowAdd(R.kc, R.win[k], R.buf(k), R.bufBytes(k)) != KILN_SUCCESS)
        die("rank %d: kilnCommWindowAdd: %s", R.rank, kilnLastError());
  if (b.ranks[0].rank == 0) printf("# buffers in symmetric windows (NCCL and kiln)\n");
}

static void teardown(Bench& b) {
  for (auto& v : b.execs)
    for (auto x : v) kilnExecFree(x);
  if (b.o.shared) { /* freed together: each rank's peers point into the others' memory */
    std::vector<kilnComm_t> kc;
    for (auto& R : b.ranks) kc.push_back(R.kc);
    kilnCommDestroyAll((int)kc.size(), kc.data());
  } else {
    for (auto& R : b.ranks) {
      CUDA_CHECK(cudaSetDevice(R.dev));
      if (R.kc) kilnCommDestroy(R.kc);
    }
  }
  if (b.o.window) {
    ncclGroupStart();
    for (auto& R : b.ranks) {
      CUDA_CHECK(cudaSetDevice(R.dev));
      for (int k = 0; k < 3; k++) ncclCommWindowDeregister(R.nccl, R.win[k]);
    }
    ncclGroupEnd();
  }
  for (auto& R : b.ranks) {
    CUDA_CHECK(cudaSetDevice(R.dev));
    if (R.nccl) ncclCommDestroy(R.nccl);
    for (int k = 0; k < 3; k++) {
      if (b.o.window)
        ncclMemFree(R.buf(k));
      else
        cudaFree(R.buf(k));
    }
    cudaFree(R.dcount);
    cudaStreamDestroy(R.stream);
  }
}

static int run_bench(Bench& b, const std::vector<int>& myRanks, const ncclUniqueId* id) {
  setup(b, myRanks, id);
  std::vector<Row> rows;
  for (int c = 0; c < KILN_NUM_COLLS; c++)
    if (b.o.colls[c]) run_coll(b, (kilnColl_t)c, rows);
  const bool lead = b.ranks[0].rank == 0;
  int bad = 0;
  for (const Row& r : rows)
    for (int v = 1; v < NV; v++) bad += r.err[v] > 0;
  if (lead && b.o.csv) write_csv(b, rows);
  if (lead && b.o.svg) write_svg(b, rows);
  if (lead) printf("# rows with errors: %d\n", bad);
  teardown(b);
  return bad ? 3 : 0;
}

int main(int argc, char** argv) {
  Bench b;
  parse_args(argc, argv, b.o);
  if (b.o.mirrorPlans) {
    const int n = b.o.nranks ? b.o.nranks : 2;
    if (n < 2 || n > MAXR || b.o.sms < 1) die("--mirror-plans: 2..%d ranks and --sms S > 0", MAXR);
    return write_mirror_plans(b.o, n);
  }
  if (b.o.plans && kilnRegistryLoadPath(b.o.plans) != KILN_SUCCESS) die("%s", kilnLastError());
  if (b.o.plan && !kilnRegistryFind(b.o.plan)) die("no plan named %s in the registry", b.o.plan);
  int ngpu = 0;
  if (!b.o.mp)
    CUDA_CHECK(cudaGetDeviceCount(&ngpu));
  else {
    /* CUDA must not be initialized before fork: ask a child. */
    int fd[2];
    if (pipe(fd)) die("pipe");
    pid_t p = fork();
    if (p == 0) {
      int n = 0;
      cudaGetDeviceCount(&n);
      if (write(fd[1], &n, sizeof n) != sizeof n) _exit(1);
      _exit(0);
    }
    if (read(fd[0], &ngpu, sizeof ngpu) != sizeof ngpu) die("cannot count GPUs");
    waitpid(p, NULL, 0);
    close(fd[0]);
    close(fd[1]);
  }
  if (b.o.shared > ngpu) die("--shared %d: %d GPU%s visible", b.o.shared, ngpu, plural(ngpu));
  b.n = b.o.nranks ? b.o.nranks : b.o.shared ? 2 : ngpu;
  if (b.n < 2 || b.n > MAXR || (!b.o.shared && b.n > ngpu))
    die("need 2..%d ranks on %d GPUs, asked %d", MAXR, b.o.shared ? b.o.shared : ngpu, b.n);
  int nreg = kilnRegistryCount();
  printf("# coll_bench: %d ranks, %s; NCCL %d; %d plans in the registry\n", b.n, model_name(b.o, false),
         NCCL_VERSION_CODE, nreg);
  fflush(stdout);
  if (!b.o.mp) {
    std::vector<int> all(b.n);
    for (int r = 0; r < b.n; r++) all[r] = r;
    return run_bench(b, all, nullptr);
  }
  shared = (Shared*)mmap(NULL, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) die("mmap");
  memset((void*)shared, 0, sizeof(Shared));
  int fd[2];
  if (pipe(fd)) die("pipe");
  std::vector<pid_t> kids;
  for (int r = 0; r < b.n; r++) {
    pid_t p = fork();
    if (p < 0) die("fork");
    if (p == 0) {
      ncclUniqueId id;
      if (r == 0) {
        NCCL_CHECK(ncclGetUniqueId(&id));
        for (int k = 1; k < b.n; k++)
          if (write(fd[1], &id, sizeof id) != sizeof id) _exit(1);
      } else if (read(fd[0], &id, sizeof id) != sizeof id) {
        _exit(1);
      }
      if (r != 0) { /* only rank 0 prints rows */
        if (!freopen("/dev/null", "w", stdout)) _exit(1);
      }
      std::vector<int> mine(1, r);
      _exit(run_bench(b, mine, &id));
    }
    kids.push_back(p);
  }
  /* The first process that fails stops the others: they would wait for it forever (at a
   * barrier, in a collective, or for the NCCL id). */
  int rc = 0;
  for (size_t left = kids.size(); left > 0;) {
    int st = 0;
    const pid_t p = waitpid(-1, &st, 0);
    if (p < 0) break;
    size_t r = kids.size();
    for (size_t i = 0; i < kids.size(); i++)
      if (kids[i] == p) r = i;
    if (r == kids.size()) continue;
    kids[r] = 0;
    left--;
    if ((WIFEXITED(st) && WEXITSTATUS(st) == 0) || rc != 0) continue;
    rc = WIFEXITED(st) ? WEXITSTATUS(st) : 1;
    fprintf(stderr, "coll_bench: rank %zu's process %s; stopping the others\n", r,
            WIFEXITED(st) ? "failed" : "was killed");
    for (pid_t q : kids)
      if (q > 0) kill(q, SIGTERM);
  }
  return rc;
}
