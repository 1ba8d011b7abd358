/*
 * GPU suite of kiln's libnccl.so.2 (host/shim/): one process drives 2 or 4 GPUs through the
 * shim's NCCL API (dlopen'ed, KILN_NCCL_PATH = the real NCCL), with classic plans written to a
 * temporary KILN_PLANS folder. ncclCommInitAll sets kiln up; grouped ncclAllReduce (in place and
 * out of place), ncclAllGather, ncclReduceScatter and ncclAlltoAll then run as kiln plans (the
 * shim's kilnShimKilnCalls counts them) and give exactly NCCL's results; a call no plan supports
 * and every call under KILN_DISABLE=1 run on NCCL, with the same results; ncclCommAbort stops a kiln
 * kernel that waits for a peer that never comes, and ncclCommGetAsyncError answers meanwhile.
 *
 * Paths: the shim is KILN_SHIM (environment) or the build's; the real NCCL is KILN_TEST_REAL_NCCL,
 * else PyTorch's copy on the GPU machines, else the build's NCCL_LIBRARY. Prints "skipped: no GPU"
 * and exits 0 where fewer than 2 GPUs are visible.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "gpu_count.h"
#include "gpu_fork.h"
#include "kiln/plan.h"

#ifndef KILN_SHIM_PATH
#define KILN_SHIM_PATH ""
#endif
#ifndef KILN_NCCL_LIBRARY
#define KILN_NCCL_LIBRARY ""
#endif
#define TORCH_NCCL "/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2"
#define MAXG 8

static int ngpus;

/* The shim's API, taken with dlsym. */
static struct {
  void* h;
  ncclResult_t (*initAll)(ncclComm_t*, int, const int*);
  ncclResult_t (*getUniqueId)(ncclUniqueId*);
  ncclResult_t (*initRank)(ncclComm_t*, int, ncclUniqueId, int);
  ncclResult_t (*destroy)(ncclComm_t);
  ncclResult_t (*groupStart)(void);
  ncclResult_t (*groupEnd)(void);
  ncclResult_t (*allReduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                            cudaStream_t);
  ncclResult_t (*allGather)(const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t);
  ncclResult_t (*reduceScatter)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                                cudaStream_t);
  ncclResult_t (*alltoAll)(const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t);
  ncclResult_t (*broadcast)(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
  ncclResult_t (*redOpCreatePreMulSum)(ncclRedOp_t*, void*, ncclDataType_t, ncclScalarResidence_t,
                                       ncclComm_t);
  ncclResult_t (*redOpDestroy)(ncclRedOp_t, ncclComm_t);
  ncclResult_t (*commAbort)(ncclComm_t);
  ncclResult_t (*commRevoke)(ncclComm_t, int);
  ncclResult_t (*commGetAsyncError)(ncclComm_t, ncclResult_t*);
  ncclResult_t (*memAlloc)(void**, size_t);
  ncclResult_t (*memFree)(void*);
  ncclResult_t (*winRegister)(ncclComm_t, void*, size_t, ncclWindow_t*, int);
  ncclResult_t (*winDeregister)(ncclComm_t, ncclWindow_t);
  uint64_t* kilnCalls;
  int64_t* kilnWindows;
  uint64_t* kilnAbortedFreed;
} api;

/* The reduction op of the allreduce calls in run_check (a PreMulSum by 1.0 gives the sum). */
static ncclRedOp_t arOp[MAXG]; /* zero-initialized: ncclSum is 0 */

static void* need(const char* name) {
  void* p = dlsym(api.h, name);
  cr_assert(p != NULL, "the shim lacks %s", name);
  return p;
}

static const char* real_nccl(void) {
  const char* e = getenv("KILN_TEST_REAL_NCCL");
  if (e && *e) return e;
  if (access(TORCH_NCCL, R_OK) == 0) return TORCH_NCCL;
  return KILN_NCCL_LIBRARY;
}

/* Writes classic direct plans for n ranks into a new folder; returns its path (static). */
static const char* write_plans(int n) {
  static char dir[] = "/tmp/kiln-shim-plans-XXXXXX";
  cr_assert(mkdtemp(dir) != NULL);
  static const struct {
    kilnColl_t coll;
    bool inplace;
    const char* file;
  } rows[] = {
      {KILN_COLL_ALLREDUCE, true, "ar-in.xml"}, {KILN_COLL_ALLREDUCE, false, "ar-out.xml"},
      {KILN_COLL_ALLGATHER, false, "ag.xml"},   {KILN_COLL_REDUCESCATTER, false, "rs.xml"},
      {KILN_COLL_ALLTOALL, false, "a2a.xml"},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    kilnClassicOptions o = KILN_CLASSIC_OPTIONS_INIT;
    o.inplace = rows[i].inplace;
    kilnPlan* p = NULL;
    cr_assert(eq(int, kilnClassicPlan("direct", rows[i].coll, n, &o, &p), KILN_SUCCESS), "%s",
              kilnLastError());
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, rows[i].file);
    cr_assert(eq(int, kilnPlanWriteFile(p, path), KILN_SUCCESS), "%s", kilnLastError());
    kilnPlanFree(p);
  }
  return dir;
}

/* Tests of the defaults (the symmetric kernels, the baked plans) load no plans: loaded plans come
 * first wherever their ranges take a call. */
static bool noPlans;

/* Loads the shim with the given settings (each test is its own process). */
static void load_shim(int n, bool disable) {
  const char* shim = getenv("KILN_SHIM");
  if (!shim || !*shim) shim = KILN_SHIM_PATH;
  if (access(shim, R_OK) != 0) cr_skip_test("no kiln libnccl.so.2 at '%s' (set KILN_SHIM)", shim);
  const char* real = real_nccl();
  if (access(real, R_OK) != 0) cr_skip_test("no real NCCL at '%s' (set KILN_TEST_REAL_NCCL)", real);
  setenv("KILN_NCCL_PATH", real, 1);
  if (noPlans)
    unsetenv("KILN_PLANS");
  else
    setenv("KILN_PLANS", write_plans(n), 1);
  setenv("KILN_DEBUG", "INFO", 1);
  if (disable) setenv("KILN_DISABLE", "1", 1);
  api.h = dlopen(shim, RTLD_NOW | RTLD_LOCAL);
  cr_assert(api.h != NULL, "dlopen %s: %s", shim, dlerror());
  api.initAll = need("ncclCommInitAll");
  api.getUniqueId = need("ncclGetUniqueId");
  api.initRank = need("ncclCommInitRank");
  api.destroy = need("ncclCommDestroy");
  api.groupStart = need("ncclGroupStart");
  api.groupEnd = need("ncclGroupEnd");
  api.allReduce = need("ncclAllReduce");
  api.allGather = need("ncclAllGather");
  api.reduceScatter = need("ncclReduceScatter");
  api.alltoAll = need("ncclAlltoAll");
  api.broadcast = need("ncclBroadcast");
  api.redOpCreatePreMulSum = need("ncclRedOpCreatePreMulSum");
  api.redOpDestroy = need("ncclRedOpDestroy");
  api.commAbort = need("ncclCommAbort");
  api.commRevoke = need("ncclCommRevoke");
  api.commGetAsyncError = need("ncclCommGetAsyncError");
  api.memAlloc = need("ncclMemAlloc");
  api.memFree = need("ncclMemFree");
  api.winRegister = need("ncclCommWindowRegister");
  api.winDeregister = need("ncclCommWindowDeregister");
  api.kilnCalls = need("kilnShimKilnCalls");
  api.kilnWindows = need("kilnShimWindows");
  api.kilnAbortedFreed = need("kilnShimAbortedFreed");
}

typedef struct {
  int n;
  ncclComm_t comm[MAXG];
  cudaStream_t st[MAXG];
  float* send[MAXG];
  float* recv[MAXG];
  ncclWindow_t win[MAXG][2]; /* world_init_windows: send and recv registered */
  bool windows;
} world;

/* Buffers from cudaMalloc, or (windows) from ncclMemAlloc registered as symmetric windows in one
 * group through the shim. */
static void world_init_any(world* w, int n, size_t elems, bool windows) {
  memset(w, 0, sizeof *w);
  w->n = n;
  w->windows = windows;
  int devs[MAXG];
  for (int i = 0; i < n; i++) devs[i] = i;
  cr_assert(eq(int, api.initAll(w->comm, n, devs), ncclSuccess));
  for (int i = 0; i < n; i++) {
    cr_assert(eq(int, cudaSetDevice(i), cudaSuccess));
    cr_assert(eq(int, cudaStreamCreateWithFlags(&w->st[i], cudaStreamNonBlocking), cudaSuccess));
    float** bufs[2] = {&w->send[i], &w->recv[i]};
    for (int k = 0; k < 2; k++)
      if (windows)
        cr_assert(eq(int, api.memAlloc((void**)bufs[k], elems * sizeof(float)), ncclSuccess));
      else
        cr_assert(eq(int, cudaMalloc((void**)bufs[k], elems * sizeof(float)), cudaSuccess));
  }
  if (!windows) return;
  cr_assert(eq(int, api.groupStart(), ncclSuccess));
  for (int i = 0; i < n; i++) {
    cr_assert(eq(int, cudaSetDevice(i), cudaSuccess));
    cr_assert(eq(int,
                 api.winRegister(w->comm[i], w->send[i], elems * sizeof(float), &w->win[i][0],
                                 NCCL_WIN_COLL_SYMMETRIC),
                 ncclSuccess));
    cr_assert(eq(int,
                 api.winRegister(w->comm[i], w->recv[i], elems * sizeof(float), &w->win[i][1],
                                 NCCL_WIN_COLL_SYMMETRIC),
                 ncclSuccess));
  }
  cr_assert(eq(int, api.groupEnd(), ncclSuccess));
}

static void world_init(world* w, int n, size_t elems) { world_init_any(w, n, elems, false); }
static void world_init_windows(world* w, int n, size_t elems) { world_init_any(w, n, elems, true); }

static void world_fini(world* w) {
  if (w->windows) {
    api.groupStart();
    for (int i = 0; i < w->n; i++) {
      cudaSetDevice(i);
      api.winDeregister(w->comm[i], w->win[i][0]);
      api.winDeregister(w->comm[i], w->win[i][1]);
    }
    api.groupEnd();
  }
  for (int i = 0; i < w->n; i++) {
    cudaSetDevice(i);
    if (w->windows) {
      api.memFree(w->send[i]);
      api.memFree(w->recv[i]);
    } else {
      cudaFree(w->send[i]);
      cudaFree(w->recv[i]);
    }
    cudaStreamDestroy(w->st[i]);
    api.destroy(w->comm[i]);
  }
}

/* Rank r's input element i: a small integer, exact in float. */
static float input(int r, size_t i) { return (float)((r + 1) * 3 + (int)(i % 13)); }

typedef enum { AR_IN, AR_OUT, AG, RS, A2A } op_t;

/* Input and output elements of one rank's call of op with NCCL's count. */
static size_t in_elems_of(const world* w, op_t op, size_t count) {
  return op == AG ? count : (op == RS || op == A2A) ? count * (size_t)w->n : count;
}
static size_t out_elems_of(const world* w, op_t op, size_t count) {
  return op == AG || op == A2A ? count * (size_t)w->n : count;
}

/* Every rank's input of op (input()) in its send buffer, its output buffer filled with 0xff. */
static void fill_buffers(world* w, op_t op, size_t count) {
  const size_t inElems = in_elems_of(w, op, count), outElems = out_elems_of(w, op, count);
  float* h = malloc(inElems * sizeof(float));
  cr_assert(h != NULL);
  for (int r = 0; r < w->n; r++) {
    for (size_t i = 0; i < inElems; i++) h[i] = input(r, i);
    cudaSetDevice(r);
    cr_assert(
        eq(int, cudaMemcpy(w->send[r], h, inElems * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess));
    cr_assert(eq(int, cudaMemset(w->recv[r], 0xff, outElems * sizeof(float)), cudaSuccess));
  }
  free(h);
}

/* One call of op on every rank, in one group (not waited for). */
static void call_all(world* w, op_t op, size_t count) {
  cr_assert(eq(int, api.groupStart(), ncclSuccess));
  for (int r = 0; r < w->n; r++) {
    ncclResult_t res = ncclSuccess;
    switch (op) {
      case AR_IN:
        res = api.allReduce(w->send[r], w->send[r], count, ncclFloat, arOp[r], w->comm[r], w->st[r]);
        break;
      case AR_OUT:
        res = api.allReduce(w->send[r], w->recv[r], count, ncclFloat, arOp[r], w->comm[r], w->st[r]);
        break;
      case AG: res = api.allGather(w->send[r], w->recv[r], count, ncclFloat, w->comm[r], w->st[r]); break;
      case RS:
        res = api.reduceScatter(w->send[r], w->recv[r], count, ncclFloat, ncclSum, w->comm[r], w->st[r]);
        break;
      case A2A: res = api.alltoAll(w->send[r], w->recv[r], count, ncclFloat, w->comm[r], w->st[r]); break;
    }
    cr_assert(eq(int, res, ncclSuccess), "rank %d: call failed", r);
  }
  cr_assert(eq(int, api.groupEnd(), ncclSuccess));
}

/* Waits for every rank's stream and checks its output of op against the CPU. */
static void check_outputs(world* w, op_t op, size_t count) {
  const int n = w->n;
  const size_t outElems = out_elems_of(w, op, count);
  float* h = malloc(outElems * sizeof(float));
  cr_assert(h != NULL);
  for (int r = 0; r < n; r++) {
    cudaSetDevice(r);
    cr_assert(eq(int, cudaStreamSynchronize(w->st[r]), cudaSuccess), "rank %d", r);
    float* out = op == AR_IN ? w->send[r] : w->recv[r];
    cr_assert(eq(int, cudaMemcpy(h, out, outElems * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess));
    for (size_t i = 0; i < outElems; i++) {
      float want = 0;
      if (op == AR_IN || op == AR_OUT) {
        for (int s = 0; s < n; s++) want += input(s, i);
      } else if (op == AG) {
        want = input((int)(i / count), i % count);
      } else if (op == RS) {
        for (int s = 0; s < n; s++) want += input(s, (size_t)r * count + i);
      } else {
        want = input((int)(i / count), (size_t)r * count + i % count);
      }
      cr_assert(eq(flt, h[i], want), "op %d count %zu rank %d element %zu: got %g, want %g", (int)op, count,
                r, i, (double)h[i], (double)want);
    }
  }
  free(h);
}

/* Runs one collective of `count` (NCCL's count) on every rank in one group and checks every
 * rank's result against the CPU. */
static void run_check(world* w, op_t op, size_t count) {
  fill_buffers(w, op, count);
  call_all(w, op, count);
  check_outputs(w, op, count);
}

/* The same call captured in a CUDA graph on every rank's stream (relaxed capture mode), then the
 * graphs launched once on fresh buffers and the outputs checked. */
static void run_captured(world* w, op_t op, size_t count) {
  cudaGraph_t g[MAXG];
  cudaGraphExec_t x[MAXG];
  for (int r = 0; r < w->n; r++) {
    cr_assert(eq(int, cudaSetDevice(r), cudaSuccess));
    cr_assert(eq(int, cudaStreamBeginCapture(w->st[r], cudaStreamCaptureModeRelaxed), cudaSuccess));
  }
  call_all(w, op, count);
  for (int r = 0; r < w->n; r++) {
    cr_assert(eq(int, cudaSetDevice(r), cudaSuccess));
    cr_assert(eq(int, cudaStreamEndCapture(w->st[r], &g[r]), cudaSuccess), "rank %d: capture", r);
    cr_assert(eq(int, cudaGraphInstantiate(&x[r], g[r], 0), cudaSuccess));
  }
  fill_buffers(w, op, count);
  for (int r = 0; r < w->n; r++) {
    cr_assert(eq(int, cudaSetDevice(r), cudaSuccess));
    cr_assert(eq(int, cudaGraphLaunch(x[r], w->st[r]), cudaSuccess));
  }
  check_outputs(w, op, count);
  for (int r = 0; r < w->n; r++) {
    cudaSetDevice(r);
    cudaGraphExecDestroy(x[r]);
    cudaGraphDestroy(g[r]);
  }
}

/* Loads the shim for the suite's rank count (4 when there are 4 GPUs, else 2; KILN_DISABLE when
 * `off`) and returns it. */
static int load_shim_for_suite(bool off) {
  int n = ngpus >= 4 ? 4 : 2;
  load_shim(n, off);
  return n;
}

/* Collectives the shim ran on kiln so far. */
static uint64_t kiln_calls(void) { return __atomic_load_n(api.kilnCalls, __ATOMIC_RELAXED); }

static void gpu_init(void) {
  const char* n = getenv("KILN_TEST_GPUS");
  ngpus = n ? atoi(n) : 0;
  if (ngpus < 2) cr_skip_test("skipped: no GPU");
}

Test(gpu_shim, grouped_collectives_run_on_kiln_and_match_nccl, .init = gpu_init, .timeout = 120) {
  int n = load_shim_for_suite(false);
  world w;
  world_init(&w, n, (size_t)n * 4096);
  uint64_t before = kiln_calls();
  const op_t ops[] = {AR_IN, AR_OUT, AG, RS, A2A};
  for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) run_check(&w, ops[k], 4096);
  uint64_t ran = kiln_calls() - before;
  cr_assert(eq(u64, ran, (uint64_t)(5 * n)), "kiln ran %llu of %d calls", (unsigned long long)ran, 5 * n);
  world_fini(&w);
}

/* Buffers in symmetric windows registered through the shim (in a group): kiln adds every window
 * at the group's end and removes it at deregistration; calls on them from 1 MiB (here;
 * KILN_SYM_DIRECT_BYTES) run on kiln zero copy and give the CPU's results, as do small ones
 * (staged). */
Test(gpu_shim, symmetric_windows_run_zero_copy, .init = gpu_init, .timeout = 120) {
  setenv("KILN_SYM_DIRECT_BYTES", "1048576", 1);
  noPlans = true; /* the symmetric kernels serve */
  int n = load_shim_for_suite(false);
  const size_t count = (size_t)1 << 19; /* 2 MiB of float per rank piece */
  world w;
  const int64_t w0 = __atomic_load_n(api.kilnWindows, __ATOMIC_RELAXED);
  world_init_windows(&w, n, (size_t)n * count);
  cr_assert(eq(i64, __atomic_load_n(api.kilnWindows, __ATOMIC_RELAXED), w0 + 2 * n),
            "kiln did not add the windows");
  uint64_t before = kiln_calls();
  const op_t ops[] = {AR_IN, AR_OUT, AG, RS, A2A};
  for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
    run_check(&w, ops[k], count);
    run_check(&w, ops[k], 1000);
  }
  uint64_t ran = kiln_calls() - before;
  cr_assert(eq(u64, ran, (uint64_t)(10 * n)), "kiln ran %llu of %d calls", (unsigned long long)ran, 10 * n);
  world_fini(&w);
  cr_assert(eq(i64, __atomic_load_n(api.kilnWindows, __ATOMIC_RELAXED), w0),
            "kiln did not remove the windows");
}

/* A count that the plan's chunking does not divide still runs on kiln, and right. */
Test(gpu_shim, odd_count_runs_on_kiln, .init = gpu_init, .timeout = 120) {
  int n = load_shim_for_suite(false);
  world w;
  world_init(&w, n, 64);
  uint64_t before = kiln_calls();
  run_check(&w, AR_OUT, 1);
  cr_assert(gt(u64, kiln_calls(), before));
  world_fini(&w);
}

/* A PreMulSum op has no kiln plan: NCCL runs it (scalar 1.0, so the result is the sum). */
Test(gpu_shim, premulsum_goes_to_nccl, .init = gpu_init, .timeout = 120) {
  int n = load_shim_for_suite(false);
  world w;
  world_init(&w, n, 4096);
  float one = 1.0f;
  for (int r = 0; r < n; r++)
    cr_assert(eq(int, api.redOpCreatePreMulSum(&arOp[r], &one, ncclFloat, ncclScalarHostImmediate, w.comm[r]),
                 ncclSuccess));
  uint64_t before = kiln_calls();
  run_check(&w, AR_OUT, 4096);
  cr_assert(eq(u64, kiln_calls(), before));
  for (int r = 0; r < n; r++) {
    cr_assert(eq(int, api.redOpDestroy(arOp[r], w.comm[r]), ncclSuccess));
    arOp[r] = ncclSum;
  }
  world_fini(&w);
}

Test(gpu_shim, kiln_disable_runs_everything_on_nccl, .init = gpu_init, .timeout = 120) {
  int n = load_shim_for_suite(true);
  world w;
  world_init(&w, n, (size_t)n * 4096);
  const op_t ops[] = {AR_IN, AR_OUT, AG, RS, A2A};
  for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) run_check(&w, ops[k], 4096);
  cr_assert(eq(u64, kiln_calls(), 0));
  world_fini(&w);
}

/* Rank `rank` of a process per GPU (gpu_fork_ranks; the NCCL id made through the shim): with
 * KILN_STAGED_AR_MAX_BYTES at 1 MiB, allreduce of 1 MiB runs on kiln and
 * allreduce of 8 MiB (out of place and in place: through kiln's staging, the peers' plain buffers
 * being out of its reach) on NCCL, an allgather of 8 MiB of output on kiln; every result is the
 * CPU's. Returns 0, or a code naming the step that failed (the parent asserts 0). */
static int staged_rank(int rank, int n, const ncclUniqueId* idp, void* ctx) {
  (void)ctx;
  const ncclUniqueId id = *idp;
  if (cudaSetDevice(rank) != cudaSuccess) return 13;
  ncclComm_t comm;
  if (api.initRank(&comm, n, id, rank) != ncclSuccess) return 14;
  cudaStream_t st;
  const size_t big = (size_t)1 << 21, small = (size_t)1 << 18; /* floats: 8 MiB, 1 MiB */
  float *send = NULL, *recv = NULL, *h = malloc(big * sizeof(float));
  if (!h || cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) != cudaSuccess ||
      cudaMalloc((void**)&send, big * sizeof(float)) != cudaSuccess ||
      cudaMalloc((void**)&recv, big * sizeof(float)) != cudaSuccess)
    return 15;
  const struct {
    op_t op;
    size_t count;
    bool kiln;
  } cases[] = {{AR_OUT, small, true}, {AR_OUT, big, false}, {AR_IN, big, false}, {AG, big / (size_t)n, true}};
  int rc = 0;
  for (size_t k = 0; k < sizeof cases / sizeof cases[0] && rc == 0; k++) {
    const op_t op = cases[k].op;
    const size_t count = cases[k].count, outE = op == AG ? count * (size_t)n : count;
    for (size_t i = 0; i < count; i++) h[i] = input(rank, i);
    if (cudaMemcpy(send, h, count * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess ||
        cudaMemset(recv, 0xff, outE * sizeof(float)) != cudaSuccess)
      return 16;
    const uint64_t before = kiln_calls();
    float* out = op == AR_IN ? send : recv;
    const ncclResult_t r = op == AG ? api.allGather(send, recv, count, ncclFloat, comm, st)
                                    : api.allReduce(send, out, count, ncclFloat, ncclSum, comm, st);
    if (r != ncclSuccess || cudaStreamSynchronize(st) != cudaSuccess) return 17;
    if ((kiln_calls() - before == 1) != cases[k].kiln) {
      fprintf(stderr, "rank %d case %zu: ran on %s, want %s\n", rank, k, cases[k].kiln ? "NCCL" : "kiln",
              cases[k].kiln ? "kiln" : "NCCL");
      rc = 18;
    }
    if (cudaMemcpy(h, out, outE * sizeof(float), cudaMemcpyDeviceToHost) != cudaSuccess) return 19;
    for (size_t i = 0; i < outE && rc == 0; i++) {
      float want = 0;
      if (op == AG) {
        want = input((int)(i / count), i % count);
      } else {
        for (int s = 0; s < n; s++) want += input(s, i);
      }
      if (h[i] != want) {
        fprintf(stderr, "rank %d case %zu element %zu: got %g, want %g\n", rank, k, i, (double)h[i],
                (double)want);
        rc = 20;
      }
    }
  }
  cudaFree(send);
  cudaFree(recv);
  cudaStreamDestroy(st);
  api.destroy(comm);
  free(h);
  return rc;
}

Test(gpu_shim, one_rank_per_process_large_staged_allreduce_goes_to_nccl, .init = gpu_init, .timeout = 120) {
  setenv("KILN_STAGED_AR_MAX_BYTES", "1048576", 1);
  noPlans = true; /* the defaults: a loaded plan for those sizes would serve them */
  const int n = load_shim_for_suite(false);
  char msg[160];
  cr_assert(gpu_fork_ranks(n, api.getUniqueId, staged_rank, NULL, msg, sizeof msg), "%s", msg);
}

static double now_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Host functions in streams: one sleeps (and notes when it ended), one notes when it ran. */
static volatile double sleepEnded, bRan; /* read after the streams are synchronized */
static void CUDART_CB sleep_in_stream(void* ms) {
  usleep((useconds_t)(uintptr_t)ms * 1000);
  sleepEnded = now_seconds();
}
static void CUDART_CB note_in_stream(void* arg) {
  (void)arg;
  bRan = now_seconds();
}

/* A group mixing a call kiln takes (allreduce, stream A) with one NCCL runs (broadcast, stream B)
 * on the same communicator: as NCCL does for a group on several streams, B's part waits for A's
 * earlier work (here a host function sleeping 300 ms on A, on rank 0) and A's later work for B's
 * part; without the shim's join the broadcast was done long before. Results checked. */
Test(gpu_shim, group_on_two_streams_joins_them, .init = gpu_init, .timeout = 120) {
  load_shim(2, false);
  world w;
  const size_t count = 4096;
  world_init(&w, 2, count);
  cudaStream_t b[MAXG];
  float* bc[MAXG];
  float h[4096];
  for (int r = 0; r < 2; r++) {
    cr_assert(eq(int, cudaSetDevice(r), cudaSuccess));
    cr_assert(eq(int, cudaStreamCreateWithFlags(&b[r], cudaStreamNonBlocking), cudaSuccess));
    cr_assert(eq(int, cudaMalloc((void**)&bc[r], count * sizeof(float)), cudaSuccess));
    for (size_t i = 0; i < count; i++) h[i] = r == 0 ? (float)(i % 97) : -1.0f;
    cr_assert(eq(int, cudaMemcpy(bc[r], h, sizeof h, cudaMemcpyHostToDevice), cudaSuccess));
    for (size_t i = 0; i < count; i++) h[i] = input(r, i);
    cr_assert(eq(int, cudaMemcpy(w.send[r], h, sizeof h, cudaMemcpyHostToDevice), cudaSuccess));
  }
  const uint64_t before = kiln_calls();
  cr_assert(eq(int, cudaSetDevice(0), cudaSuccess));
  cr_assert(eq(int, cudaLaunchHostFunc(w.st[0], sleep_in_stream, (void*)(uintptr_t)300), cudaSuccess));
  const double t0 = now_seconds();
  cr_assert(eq(int, api.groupStart(), ncclSuccess));
  for (int r = 0; r < 2; r++) {
    cudaSetDevice(r);
    cr_assert(eq(int, api.allReduce(w.send[r], w.recv[r], count, ncclFloat, ncclSum, w.comm[r], w.st[r]),
                 ncclSuccess));
    cr_assert(eq(int, api.broadcast(bc[r], bc[r], count, ncclFloat, 0, w.comm[r], b[r]), ncclSuccess));
  }
  cr_assert(eq(int, api.groupEnd(), ncclSuccess));
  cr_assert(eq(u64, kiln_calls(), before + 2), "the allreduce did not go to kiln");
  /* B's next work (a host function noting the time) runs only after the broadcast, which waits
   * for A's earlier work: the sleep must have ended first. (NCCL's group end may itself wait for
   * that, so the time the group took says nothing either way.) */
  cr_assert(eq(int, cudaSetDevice(0), cudaSuccess));
  cr_assert(eq(int, cudaLaunchHostFunc(b[0], note_in_stream, NULL), cudaSuccess));
  cr_assert(eq(int, cudaStreamSynchronize(b[0]), cudaSuccess));
  const double slept = sleepEnded, ran = bRan;
  cr_assert(
      slept > 0 && ran >= slept,
      "the broadcast's stream went on %.0f ms into the group, before the allreduce stream's earlier work "
      "(which ended at %.0f ms)",
      1e3 * (ran - t0), slept > 0 ? 1e3 * (slept - t0) : -1.0);
  for (int r = 0; r < 2; r++) {
    cudaSetDevice(r);
    cr_assert(eq(int, cudaStreamSynchronize(b[r]), cudaSuccess));
    cr_assert(eq(int, cudaStreamSynchronize(w.st[r]), cudaSuccess));
    cr_assert(eq(int, cudaMemcpy(h, bc[r], sizeof h, cudaMemcpyDeviceToHost), cudaSuccess));
    for (size_t i = 0; i < count; i++)
      cr_assert(eq(flt, h[i], (float)(i % 97)), "rank %d broadcast [%zu]", r, i);
    cr_assert(eq(int, cudaMemcpy(h, w.recv[r], sizeof h, cudaMemcpyDeviceToHost), cudaSuccess));
    for (size_t i = 0; i < count; i++)
      cr_assert(eq(flt, h[i], input(0, i) + input(1, i)), "rank %d allreduce [%zu]", r, i);
    cudaFree(bc[r]);
    cudaStreamDestroy(b[r]);
  }
  world_fini(&w);
}

/* Whether the drop-in's reaper thread has freed `n` aborted communicators' kiln parts within 10 s. */
static bool wait_freed(uint64_t n) {
  for (int i = 0; i < 1000; i++) {
    if (__atomic_load_n(api.kilnAbortedFreed, __ATOMIC_RELAXED) >= n) return true;
    usleep(10 * 1000);
  }
  return false;
}

/* Rank 0 starts a kiln allreduce that rank 1 never joins, so its kernel waits for a peer. While
 * it waits, ncclCommGetAsyncError answers at once (no error yet); ncclCommAbort then stops the
 * kernel: the stream drains at once (the drop-in's kernels wait without a limit, as NCCL's, unless
 * KILN_TIMEOUT_MS is set), and kiln's memory of the communicator is freed once NCCL's abort
 * returned, by the drop-in's reaper thread, its window deregistered before NCCL's abort: with both
 * ranks aborted, GPU 0 has within 320 MiB as much free memory as before the communicators (kiln's
 * window alone is 0.65-1.2 GiB; modules loaded since take some). */
Test(gpu_shim, abort_stops_a_kernel_waiting_for_a_peer, .init = gpu_init, .timeout = 120) {
  load_shim(2, false);
  size_t freeAtStart = 0, total0 = 0;
  cr_assert(eq(int, cudaSetDevice(0), cudaSuccess));
  cr_assert(eq(int, cudaMemGetInfo(&freeAtStart, &total0), cudaSuccess));
  world w;
  world_init(&w, 2, 4096);
  uint64_t before = kiln_calls();
  cr_assert(eq(int, cudaSetDevice(0), cudaSuccess));
  const double t0 = now_seconds();
  cr_assert(eq(int, api.allReduce(w.send[0], w.recv[0], 4096, ncclFloat, ncclSum, w.comm[0], w.st[0]),
               ncclSuccess));
  cr_assert(eq(u64, kiln_calls(), before + 1), "the call did not go to kiln");
  usleep(300 * 1000);
  cr_assert(eq(int, cudaStreamQuery(w.st[0]), cudaErrorNotReady), "the kernel did not wait for its peer");
  ncclResult_t async = ncclInternalError;
  const double q0 = now_seconds();
  cr_assert(eq(int, api.commGetAsyncError(w.comm[0], &async), ncclSuccess));
  cr_assert(lt(dbl, now_seconds() - q0, 0.5), "ncclCommGetAsyncError blocked");
  cr_assert(eq(int, async, ncclSuccess), "an error before the timeout: %d", (int)async);
  cr_assert(eq(int, api.commAbort(w.comm[0]), ncclSuccess));
  cr_assert(eq(int, cudaSetDevice(0), cudaSuccess));
  cudaError_t e = cudaStreamSynchronize(w.st[0]);
  const double took = now_seconds() - t0;
  cr_assert(eq(int, e, cudaSuccess), "stream after abort: %s", cudaGetErrorString(e));
  cr_assert(lt(dbl, took, 3.0), "the waiting kernel ended after %.2f s: by the timeout, not the abort", took);
  cr_assert(wait_freed(1), "kiln's memory of the aborted communicator was not freed within 10 s");
  cr_assert(eq(int, api.commAbort(w.comm[1]), ncclSuccess));
  cr_assert(wait_freed(2), "kiln's memory of the second aborted communicator was not freed within 10 s");
  /* Both aborted: kiln's windows (every rank's mapping of them gone) and NCCL's memory came back. */
  size_t freeNow = 0, total = 0;
  cr_assert(eq(int, cudaSetDevice(0), cudaSuccess));
  cr_assert(eq(int, cudaMemGetInfo(&freeNow, &total), cudaSuccess));
  const long long lessMiB = ((long long)freeAtStart - (long long)freeNow) / (1 << 20);
  /* NCCL 2.28.9 keeps its mapping of a window still registered at ncclCommAbort: the drop-in
   * deregisters kiln's before it (kilnCommAbortRelease), or 0.65-1.2 GiB would stay. */
  fprintf(stderr, "  GPU 0 after both aborts: %lld MiB less free than before the communicators\n", lessMiB);
  cr_assert(lt(i64, lessMiB, 320), "kiln's window did not come back after the aborts: %lld MiB less free",
            lessMiB);
  for (int i = 0; i < 2; i++) {
    cudaSetDevice(i);
    cudaFree(w.send[i]);
    cudaFree(w.recv[i]);
    cudaStreamDestroy(w.st[i]);
  }
}

/* ncclCommRevoke stops the communicators' work and leaves them to destroy: the drop-in stops kiln
 * on them at the revoke and, at the ncclCommDestroy that follows, deregisters kiln's window before
 * NCCL's destroy and frees kiln's part after it: GPU 0 then has within 320 MiB as much free memory
 * as before the communicators. */
Test(gpu_shim, revoke_then_destroy_frees_kilns_window, .init = gpu_init, .timeout = 120) {
  load_shim(2, false);
  size_t freeAtStart = 0, total = 0;
  cr_assert(eq(int, cudaSetDevice(0), cudaSuccess));
  cr_assert(eq(int, cudaMemGetInfo(&freeAtStart, &total), cudaSuccess));
  world w;
  world_init(&w, 2, 4096);
  const uint64_t before = kiln_calls();
  run_check(&w, AR_OUT, 4096);
  cr_assert(eq(u64, kiln_calls(), before + 2), "the calls did not go to kiln");
  for (int r = 0; r < 2; r++) cr_assert(eq(int, api.commRevoke(w.comm[r], NCCL_REVOKE_DEFAULT), ncclSuccess));
  for (int r = 0; r < 2; r++) {
    ncclResult_t st = ncclInProgress;
    for (int i = 0; i < 10000 && st == ncclInProgress; i++) {
      cr_assert(eq(int, api.commGetAsyncError(w.comm[r], &st), ncclSuccess));
      if (st == ncclInProgress) usleep(1000);
    }
    cr_assert(not(eq(int, st, ncclInProgress)), "rank %d: the revoke did not settle within 10 s", r);
  }
  for (int r = 0; r < 2; r++) {
    cudaSetDevice(r);
    cudaFree(w.send[r]);
    cudaFree(w.recv[r]);
    cudaStreamDestroy(w.st[r]);
    cr_assert(eq(int, api.destroy(w.comm[r]), ncclSuccess));
  }
  cr_assert(wait_freed(2), "kiln's memory of the revoked communicators was not freed within 10 s");
  size_t freeNow = 0;
  cr_assert(eq(int, cudaSetDevice(0), cudaSuccess));
  cr_assert(eq(int, cudaMemGetInfo(&freeNow, &total), cudaSuccess));
  const long long lessMiB = ((long long)freeAtStart - (long long)freeNow) / (1 << 20);
  fprintf(stderr, "  GPU 0 after revoke and destroy: %lld MiB less free than before the communicators\n",
          lessMiB);
  cr_assert(lt(i64, lessMiB, 320), "kiln's window did not come back: %lld MiB less free", lessMiB);
}

/* Rank `rank` of a process per GPU whose collective must run on NCCL on every rank (a set-up that
 * failed on one rank): initRank through the drop-in, then an allreduce of 1 MiB and an allgather,
 * each the CPU's result and none on kiln. Returns 0, or a code naming the step that failed. */
static int nccl_only_rank(int rank, int n, const ncclUniqueId* idp, void* ctx) {
  (void)ctx;
  const ncclUniqueId id = *idp;
  if (cudaSetDevice(rank) != cudaSuccess) return 13;
  ncclComm_t comm;
  if (api.initRank(&comm, n, id, rank) != ncclSuccess) return 14;
  cudaStream_t st;
  const size_t count = (size_t)1 << 18;
  float *send = NULL, *recv = NULL, *h = malloc(count * (size_t)n * sizeof(float));
  if (!h || cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) != cudaSuccess ||
      cudaMalloc((void**)&send, count * sizeof(float)) != cudaSuccess ||
      cudaMalloc((void**)&recv, count * (size_t)n * sizeof(float)) != cudaSuccess)
    return 15;
  for (size_t i = 0; i < count; i++) h[i] = input(rank, i);
  if (cudaMemcpy(send, h, count * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess) return 16;
  const uint64_t before = kiln_calls();
  int rc = 0;
  for (int k = 0; k < 2 && rc == 0; k++) {
    const ncclResult_t r = k == 0 ? api.allReduce(send, recv, count, ncclFloat, ncclSum, comm, st)
                                  : api.allGather(send, recv, count, ncclFloat, comm, st);
    if (r != ncclSuccess || cudaStreamSynchronize(st) != cudaSuccess) return 17;
    const size_t outE = k == 0 ? count : count * (size_t)n;
    if (cudaMemcpy(h, recv, outE * sizeof(float), cudaMemcpyDeviceToHost) != cudaSuccess) return 19;
    for (size_t i = 0; i < outE && rc == 0; i++) {
      float want = 0;
      if (k == 0)
        for (int s = 0; s < n; s++) want += input(s, i);
      else
        want = input((int)(i / count), i % count);
      if (h[i] != want) {
        fprintf(stderr, "rank %d call %d element %zu: got %g, want %g\n", rank, k, i, (double)h[i],
                (double)want);
        rc = 20;
      }
    }
  }
  if (rc == 0 && kiln_calls() != before) {
    fprintf(stderr, "rank %d: %llu calls ran on kiln\n", rank, (unsigned long long)(kiln_calls() - before));
    rc = 18;
  }
  cudaFree(send);
  cudaFree(recv);
  cudaStreamDestroy(st);
  api.destroy(comm);
  free(h);
  return rc;
}

/* A rank whose drop-in stops before making its kiln communicator (KILN_FAULT=setup@1: as when its
 * KILN_PLANS or KILN_EMULATE_NODES differ, or it is out of memory): every rank learns it through
 * NCCL before any makes one, and all run on NCCL. Without that agreement rank 0 waited in the
 * creation's first agreement, which rank 1's first collective then met with another count. */
Test(gpu_shim, a_rank_that_stops_before_setting_kiln_up_leaves_every_rank_on_nccl, .init = gpu_init,
     .timeout = 120) {
  setenv("KILN_FAULT", "setup@1", 1);
  const int n = load_shim_for_suite(false);
  char msg[160];
  cr_assert(gpu_fork_ranks(n, api.getUniqueId, nccl_only_rank, NULL, msg, sizeof msg), "%s", msg);
}

/* A rank whose kiln window cannot be allocated (KILN_FAULT=window@1: ncclMemAlloc failing) stops
 * every rank's creation at its first agreement, before the window's registration: all run on NCCL. */
Test(gpu_shim, a_window_that_fails_on_one_rank_leaves_every_rank_on_nccl, .init = gpu_init, .timeout = 120) {
  setenv("KILN_FAULT", "window@1", 1);
  const int n = load_shim_for_suite(false);
  char msg[160];
  cr_assert(gpu_fork_ranks(n, api.getUniqueId, nccl_only_rank, NULL, msg, sizeof msg), "%s", msg);
}

/* What the drop-in wrote on stderr (KILN_DEBUG=INFO) while `fn` ran. */
static char* stderr_of(void (*fn)(world*), world* w) {
  char path[] = "/tmp/kiln-gpu-shim-log-XXXXXX";
  const int fd = mkstemp(path);
  cr_assert(fd >= 0);
  fflush(stderr);
  const int saved = dup(2);
  cr_assert(dup2(fd, 2) == 2);
  fn(w);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  FILE* f = fopen(path, "rb");
  cr_assert(f != NULL);
  char* log = calloc(1, 1 << 20);
  cr_assert(log != NULL);
  const size_t got = fread(log, 1, (1 << 20) - 1, f);
  log[got] = '\0';
  fclose(f);
  close(fd);
  unlink(path);
  fprintf(stderr, "%s", log);
  return log;
}

/* The allreduce whose plan has scratch (classic direct: each rank reduces its peers' pieces in
 * scratch) at 4 MiB, captured, replayed and checked. */
#define BIG_COUNT ((size_t)1 << 20)
static void captured_big(world* w) { run_captured(w, AR_OUT, BIG_COUNT); }

/* The line the drop-in logged for the captured out-of-place allreduce of float, from its arrow on. */
static const char* captured_choice(const char* log) {
  const char* l = strstr(log, "allreduce 2 ranks float sum out-of-place, captured");
  return l ? strstr(l, "→") : NULL;
}

/* A call made during a CUDA graph capture whose plan would have to grow its scratch there (an
 * allocation inside the capture, which could fail on one rank alone) passes that plan over: the
 * loaded direct plan (which reduces in scratch), sized by an eager call of 64 KiB, does not run a
 * captured call of 4 MiB, which runs elsewhere (the next candidate or NCCL) and right. After an
 * eager call of 4 MiB grew the scratch, the same captured call runs the plan. */
Test(gpu_shim, a_captured_call_that_would_grow_a_plans_scratch_passes_the_plan_over, .init = gpu_init,
     .timeout = 120) {
  load_shim(2, false);
  world w;
  world_init(&w, 2, BIG_COUNT);
  run_check(&w, AR_OUT, (size_t)1 << 14);
  char* log = stderr_of(captured_big, &w);
  const char* c = captured_choice(log);
  cr_assert(c != NULL, "no line for the captured allreduce in:\n%s", log);
  cr_assert(
      not(eq(int, strncmp(c, "→ kiln plan direct-allreduce", strlen("→ kiln plan direct-allreduce")), 0)),
      "the captured call ran the plan whose scratch had to grow: %.200s", c);
  free(log);
  run_check(&w, AR_OUT, BIG_COUNT);
  log = stderr_of(captured_big, &w);
  c = captured_choice(log);
  cr_assert(c != NULL && !strncmp(c, "→ kiln plan direct-allreduce", strlen("→ kiln plan direct-allreduce")),
            "once its scratch held the call, the captured call did not run the plan:\n%s", log);
  free(log);
  world_fini(&w);
}

ReportHook(PRE_ALL)(struct criterion_test_set* set) {
  (void)set;
  char buf[32];
  int n = gpu_count_for_suite("test_gpu_shim", 2);
  snprintf(buf, sizeof buf, "%d", n);
  setenv("KILN_TEST_GPUS", buf, 1);
  if (n < 2) printf("skipped: no GPU (%d visible, 2 needed)\n", n);
  fflush(stdout);
}
