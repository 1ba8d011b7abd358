/* kiln tune's GPU side (tune_gpu.h): the world of ranks, a thread per rank, calls timed in CUDA
 * graphs and checked against the CPU. */
#define _GNU_SOURCE
#include "tune_gpu.h"

#include <cuda_runtime_api.h>
#include <nccl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/runtime.h"
#include "runtime_internal.h" /* kilnCommCreateShared */

#define TUNE_MAX_RANKS 64 /* ranks of one process, sharing GPUs or not */
#define TUNE_MAX_REPS 64

struct kilnTuneGpu {
  int n, ngpus;
  bool shared; /* ranks share GPUs: kiln's communicators without NCCL */
  int dev[TUNE_MAX_RANKS];
  ncclComm_t nccl[TUNE_MAX_RANKS];
  kilnComm_t kc[TUNE_MAX_RANKS];
  kilnCommConfig cfg;
  cudaStream_t st[TUNE_MAX_RANKS];
  cudaEvent_t ev0[TUNE_MAX_RANKS][TUNE_MAX_REPS], ev1[TUNE_MAX_RANKS][TUNE_MAX_REPS];
  pthread_barrier_t bar;
  /* The prepared call. */
  kilnColl_t coll;
  bool inplace, prepared;
  size_t count, sendElems, recvElems;
  float* dsend[TUNE_MAX_RANKS];
  float* drecv[TUNE_MAX_RANKS];
  size_t sendCap, recvCap;     /* elements each rank's device buffers hold */
  float* hin;                  /* [n * sendElems]: every rank's input */
  float* ref;                  /* [sendElems]: the sum of the inputs (allreduce, reducescatter) */
  float* hout[TUNE_MAX_RANKS]; /* [recvElems]: an output read back */
  size_t hinCap, refCap, houtCap;
  uint64_t seed;
  /* The job the rank threads run. */
  const kilnPlan* plan;
  kilnTuneTiming t;
  kilnExec_t ex[TUNE_MAX_RANKS];
  kilnResult_t res[TUNE_MAX_RANKS];
  char msg[TUNE_MAX_RANKS][320];
  bool ok[TUNE_MAX_RANKS];
  float ms[TUNE_MAX_RANKS][TUNE_MAX_REPS];
};

/* Records rank r's first failure. */
__attribute__((format(printf, 4, 5))) static void fail(kilnTuneGpu* g, int r, kilnResult_t res,
                                                       const char* fmt, ...) {
  if (g->res[r] != KILN_SUCCESS) return;
  g->res[r] = res;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g->msg[r], sizeof g->msg[r], fmt, ap);
  va_end(ap);
}

static bool cuda_ok(kilnTuneGpu* g, int r, cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  fail(g, r, KILN_ERR_CUDA, "%s: %s", what, cudaGetErrorString(e));
  return false;
}

typedef void (*rankJob)(kilnTuneGpu* g, int r);
/* The threads of one job: each waits at the gate until every one has started, then runs the job,
 * or returns at once when some thread could not be started (the job's meetings need them all). */
typedef struct jobGate {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int state; /* 0: starting, 1: run, -1: give up */
} jobGate;
typedef struct jobArg {
  kilnTuneGpu* g;
  int r;
  rankJob fn;
  jobGate* gate;
} jobArg;

static void* job_main(void* p) {
  jobArg* a = p;
  pthread_mutex_lock(&a->gate->mu);
  while (a->gate->state == 0) pthread_cond_wait(&a->gate->cv, &a->gate->mu);
  const bool run = a->gate->state > 0;
  pthread_mutex_unlock(&a->gate->mu);
  if (run) a->fn(a->g, a->r);
  return NULL;
}

/* Runs fn for every rank, each on a thread of its own, and waits for them; the first failure (by
 * rank) becomes the thread's error. */
static kilnResult_t for_ranks(kilnTuneGpu* g, rankJob fn) {
  pthread_t th[TUNE_MAX_RANKS];
  jobArg args[TUNE_MAX_RANKS];
  jobGate gate = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
  for (int r = 0; r < g->n; r++) {
    g->res[r] = KILN_SUCCESS;
    g->msg[r][0] = '\0';
    args[r] = (jobArg){g, r, fn, &gate};
  }
  int started = 0;
  for (; started < g->n; started++)
    if (pthread_create(&th[started], NULL, job_main, &args[started]) != 0) break;
  pthread_mutex_lock(&gate.mu);
  gate.state = started == g->n ? 1 : -1;
  pthread_cond_broadcast(&gate.cv);
  pthread_mutex_unlock(&gate.mu);
  for (int r = 0; r < started; r++) pthread_join(th[r], NULL);
  if (started < g->n) return kilnSetError(KILN_ERR_NO_MEMORY, "cannot start a thread for rank %d", started);
  for (int r = 0; r < g->n; r++)
    if (g->res[r] != KILN_SUCCESS) return kilnSetError(g->res[r], "rank %d: %s", r, g->msg[r]);
  return KILN_SUCCESS;
}

/* Every rank's verdict: true when all succeeded so far. A meeting of all rank threads. */
static bool agree(kilnTuneGpu* g, int r) {
  g->ok[r] = g->res[r] == KILN_SUCCESS;
  pthread_barrier_wait(&g->bar);
  bool all = true;
  for (int q = 0; q < g->n; q++) all = all && g->ok[q];
  pthread_barrier_wait(&g->bar);
  return all;
}

/* ---- the world ---- */

static void describe(kilnTuneGpu* g, kilnTuneMachine* m) {
  memset(m, 0, sizeof *m);
  struct cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, g->dev[0]) == cudaSuccess)
    snprintf(m->gpu, sizeof m->gpu, "%.127s", prop.name);
  else
    snprintf(m->gpu, sizeof m->gpu, "unknown GPU");
  m->ngpus = g->ngpus;
  m->nranks = g->n;
  m->rehearsal = g->shared;
  FILE* f = fopen("/proc/driver/nvidia/version", "r");
  char line[256];
  if (f && fgets(line, sizeof line, f)) kilnTuneDriverVersion(line, m->driver, sizeof m->driver);
  if (f) fclose(f);
  int v = 0;
  if (!m->driver[0] && cudaDriverGetVersion(&v) == cudaSuccess)
    snprintf(m->driver, sizeof m->driver, "CUDA %d.%d", v / 1000, v % 1000 / 10);
  if (ncclGetVersion(&v) == ncclSuccess)
    snprintf(m->nccl, sizeof m->nccl, "%d.%d.%d", v / 10000, v % 10000 / 100, v % 100);
  else
    snprintf(m->nccl, sizeof m->nccl, "unknown");
}

static kilnResult_t make_kiln(kilnTuneGpu* g) {
  kilnResult_t r = g->shared ? kilnCommCreateShared(g->n, g->dev, &g->cfg, g->kc)
                             : kilnCommCreateAll(g->n, g->nccl, &g->cfg, g->kc);
  if (r != KILN_SUCCESS) {
    memset(g->kc, 0, sizeof g->kc);
    kilnPrefixError("kiln's communicators over %d ranks: ", g->n);
  }
  return r;
}

kilnResult_t kilnTuneGpuOpen(int nranks, int ngpus, kilnTuneMachine* m, kilnTuneGpu** out) {
  *out = NULL;
  int visible = 0;
  const cudaError_t ce = cudaGetDeviceCount(&visible);
  if (ce != cudaSuccess) return kilnSetError(KILN_ERR_CUDA, "no CUDA device: %s", cudaGetErrorString(ce));
  if (visible < 1) return kilnSetError(KILN_ERR_CUDA, "no CUDA device: none visible");
  if (nranks < 2 || nranks > TUNE_MAX_RANKS)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "%d ranks: a tune takes 2..%d", nranks, TUNE_MAX_RANKS);
  if (ngpus < 0 || ngpus > visible)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "%d GPUs asked for, %d visible", ngpus, visible);
  if (ngpus > 0) visible = ngpus;
  kilnTuneGpu* g = calloc(1, sizeof *g);
  if (!g) return kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
  g->n = nranks;
  g->shared = nranks > visible;
  g->ngpus = g->shared ? visible : nranks;
  for (int r = 0; r < nranks; r++) g->dev[r] = r % g->ngpus;
  g->cfg = (kilnCommConfig)KILN_COMM_CONFIG_INITIALIZER;
  g->cfg.symBytes = 0; /* plans only: no staging for the symmetric kernels */
  g->cfg.nodes = 1;    /* the GPUs of this machine, whatever KILN_EMULATE_NODES says */
  kilnResult_t res = KILN_SUCCESS;
  if (pthread_barrier_init(&g->bar, NULL, (unsigned)nranks) != 0) {
    free(g);
    return kilnSetError(KILN_ERR_NO_MEMORY, "cannot make a barrier of %d threads", nranks);
  }
  for (int r = 0; r < nranks && res == KILN_SUCCESS; r++) {
    cudaError_t e = cudaSetDevice(g->dev[r]);
    if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&g->st[r], cudaStreamNonBlocking);
    for (int i = 0; i < TUNE_MAX_REPS && e == cudaSuccess; i++) {
      e = cudaEventCreate(&g->ev0[r][i]);
      if (e == cudaSuccess) e = cudaEventCreate(&g->ev1[r][i]);
    }
    if (e != cudaSuccess)
      res = kilnSetError(KILN_ERR_CUDA, "no CUDA device: GPU %d: %s", g->dev[r], cudaGetErrorString(e));
  }
  if (res == KILN_SUCCESS && !g->shared) {
    const ncclResult_t nr = ncclCommInitAll(g->nccl, nranks, g->dev);
    if (nr != ncclSuccess) {
      memset(g->nccl, 0, sizeof g->nccl);
      res = kilnSetError(KILN_ERR_NCCL, "ncclCommInitAll over %d GPUs: %s", nranks, ncclGetErrorString(nr));
    }
  }
  if (res == KILN_SUCCESS) res = make_kiln(g);
  if (res != KILN_SUCCESS) {
    char why[512];
    snprintf(why, sizeof why, "%s", kilnLastError());
    kilnTuneGpuClose(g);
    return kilnSetError(res, "%s", why);
  }
  describe(g, m);
  *out = g;
  return KILN_SUCCESS;
}

bool kilnTuneGpuHasNccl(const kilnTuneGpu* g) { return g && !g->shared; }

static void free_buffers(kilnTuneGpu* g) {
  for (int r = 0; r < g->n; r++) {
    cudaSetDevice(g->dev[r]);
    if (g->dsend[r]) cudaFree(g->dsend[r]);
    if (g->drecv[r]) cudaFree(g->drecv[r]);
    g->dsend[r] = g->drecv[r] = NULL;
    free(g->hout[r]);
    g->hout[r] = NULL;
  }
  free(g->hin);
  free(g->ref);
  g->hin = g->ref = NULL;
  g->sendCap = g->recvCap = g->hinCap = g->refCap = g->houtCap = 0;
  g->prepared = false;
}

void kilnTuneGpuClose(kilnTuneGpu* g) {
  if (!g) return;
  for (int r = 0; r < g->n; r++)
    if (g->st[r]) {
      cudaSetDevice(g->dev[r]);
      cudaStreamSynchronize(g->st[r]);
    }
  if (g->kc[0]) kilnCommDestroyAll(g->n, g->kc);
  for (int r = 0; r < g->n; r++) {
    cudaSetDevice(g->dev[r]);
    if (g->nccl[r]) ncclCommDestroy(g->nccl[r]);
    for (int i = 0; i < TUNE_MAX_REPS; i++) {
      if (g->ev0[r][i]) cudaEventDestroy(g->ev0[r][i]);
      if (g->ev1[r][i]) cudaEventDestroy(g->ev1[r][i]);
    }
    if (g->st[r]) cudaStreamDestroy(g->st[r]);
  }
  free_buffers(g);
  pthread_barrier_destroy(&g->bar);
  free(g);
}

/* ---- the call ---- */

/* Input element i of rank q: a multiple of 1/8 in [-8, 8] from a hash of (seed, q, i). */
static float input_value(uint64_t seed, int q, size_t i) {
  uint64_t z = seed ^ ((uint64_t)q << 48) ^ (i * 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return (float)((int)(z % 129) - 64) / 8.0f;
}

static bool reduces(kilnColl_t c) { return c == KILN_COLL_ALLREDUCE || c == KILN_COLL_REDUCESCATTER; }

/* Where rank r's call reads and writes, and which part of which buffer holds its output. */
static void call_buffers(const kilnTuneGpu* g, int r, const void** sendp, void** recvp, float** outp,
                         size_t* outElems) {
  const size_t cnt = g->count;
  *sendp = g->dsend[r];
  *recvp = g->drecv[r];
  *outp = g->drecv[r];
  *outElems = g->recvElems;
  if (!g->inplace) return;
  switch (g->coll) {
    case KILN_COLL_ALLREDUCE: *sendp = g->drecv[r]; break;
    case KILN_COLL_ALLGATHER: *sendp = g->drecv[r] + (size_t)r * cnt; break;
    default: /* reducescatter: the input buffer holds the output at the rank's share */
      *recvp = g->dsend[r] + (size_t)r * cnt;
      *outp = g->dsend[r] + (size_t)r * cnt;
      break;
  }
}

/* Where rank r's input goes: its send buffer, or in place the part of the buffer the call reads. */
static float* input_at(const kilnTuneGpu* g, int r) {
  if (!g->inplace || g->coll == KILN_COLL_REDUCESCATTER) return g->dsend[r];
  return g->coll == KILN_COLL_ALLREDUCE ? g->drecv[r] : g->drecv[r] + (size_t)r * g->count;
}

static void fill_rank(kilnTuneGpu* g, int r) {
  float* in = g->hin + (size_t)r * g->sendElems;
  for (size_t i = 0; i < g->sendElems; i++) in[i] = input_value(g->seed, r, i);
}

static void ref_rank(kilnTuneGpu* g, int r) {
  const size_t lo = g->sendElems * (size_t)r / (size_t)g->n,
               hi = g->sendElems * (size_t)(r + 1) / (size_t)g->n;
  for (size_t i = lo; i < hi; i++) {
    float s = 0;
    for (int q = 0; q < g->n; q++) s += g->hin[(size_t)q * g->sendElems + i];
    g->ref[i] = s;
  }
}

static bool upload(kilnTuneGpu* g, int r) {
  return cuda_ok(g, r,
                 cudaMemcpyAsync(input_at(g, r), g->hin + (size_t)r * g->sendElems,
                                 g->sendElems * sizeof(float), cudaMemcpyHostToDevice, g->st[r]),
                 "copying the input") &&
         cuda_ok(g, r, cudaStreamSynchronize(g->st[r]), "copying the input");
}

static void upload_rank(kilnTuneGpu* g, int r) {
  if (cuda_ok(g, r, cudaSetDevice(g->dev[r]), "cudaSetDevice")) upload(g, r);
}

static bool grow(void** p, size_t* cap, size_t need) {
  if (need <= *cap) return true;
  void* q = realloc(*p, need);
  if (!q) return false;
  *p = q;
  *cap = need;
  return true;
}

kilnResult_t kilnTuneGpuPrepare(kilnTuneGpu* g, kilnColl_t coll, uint64_t bytes, bool inplace, uint64_t seed,
                                size_t* count) {
  const int n = g->n;
  const size_t cnt = (size_t)kilnTuneCount(coll, bytes, n);
  g->prepared = false;
  if (cnt == 0)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "%s of %llu bytes on %d ranks: no element of float",
                        kilnCollName(coll), (unsigned long long)bytes, n);
  if (inplace && coll == KILN_COLL_ALLTOALL)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "an in-place alltoall: kiln's plans serve none");
  g->coll = coll;
  g->inplace = inplace;
  g->count = cnt;
  g->seed = seed;
  g->sendElems = coll == KILN_COLL_ALLREDUCE || coll == KILN_COLL_ALLGATHER ? cnt : (size_t)n * cnt;
  g->recvElems = coll == KILN_COLL_ALLREDUCE || coll == KILN_COLL_REDUCESCATTER ? cnt : (size_t)n * cnt;
  if (count) *count = cnt;
  /* Device buffers: grown, never shrunk. */
  const size_t sendNeed = g->sendElems, recvNeed = g->recvElems;
  for (int r = 0; r < n; r++) {
    cudaSetDevice(g->dev[r]);
    if (sendNeed > g->sendCap) {
      if (g->dsend[r]) cudaFree(g->dsend[r]);
      g->dsend[r] = NULL;
      if (cudaMalloc((void**)&g->dsend[r], sendNeed * sizeof(float)) != cudaSuccess) goto out_no_memory;
    }
    if (recvNeed > g->recvCap) {
      if (g->drecv[r]) cudaFree(g->drecv[r]);
      g->drecv[r] = NULL;
      if (cudaMalloc((void**)&g->drecv[r], recvNeed * sizeof(float)) != cudaSuccess) goto out_no_memory;
    }
  }
  if (sendNeed > g->sendCap) g->sendCap = sendNeed;
  if (recvNeed > g->recvCap) g->recvCap = recvNeed;
  if (!grow((void**)&g->hin, &g->hinCap, (size_t)n * g->sendElems * sizeof(float)) ||
      (reduces(coll) && !grow((void**)&g->ref, &g->refCap, g->sendElems * sizeof(float))))
    goto out_no_memory;
  for (int r = 0; r < n; r++) {
    size_t cap = g->houtCap;
    if (!grow((void**)&g->hout[r], &cap, g->recvElems * sizeof(float))) goto out_no_memory;
  }
  if (g->recvElems * sizeof(float) > g->houtCap) g->houtCap = g->recvElems * sizeof(float);
  kilnResult_t res = for_ranks(g, fill_rank);
  if (res == KILN_SUCCESS && reduces(coll)) res = for_ranks(g, ref_rank);
  if (res == KILN_SUCCESS && !inplace) res = for_ranks(g, upload_rank);
  if (res != KILN_SUCCESS) return res;
  g->prepared = true;
  return KILN_SUCCESS;
out_no_memory:
  cudaGetLastError();
  free_buffers(g);
  return kilnSetError(KILN_ERR_NO_MEMORY, "no memory for a %s of %llu bytes on %d ranks (GPU or host)",
                      kilnCollName(coll), (unsigned long long)bytes, n);
}

/* Issues rank r's call on its stream. */
static bool issue(kilnTuneGpu* g, int r) {
  const void* sendp;
  void* recvp;
  float* outp;
  size_t outElems;
  call_buffers(g, r, &sendp, &recvp, &outp, &outElems);
  if (g->plan) {
    const kilnResult_t x = kilnRun(g->ex[r], sendp, recvp, g->count, KILN_FLOAT32, KILN_SUM, g->st[r]);
    if (x != KILN_SUCCESS) fail(g, r, x, "kilnRun: %s", kilnLastError());
    return x == KILN_SUCCESS;
  }
  ncclResult_t nr;
  switch (g->coll) {
    case KILN_COLL_ALLREDUCE:
      nr = ncclAllReduce(sendp, recvp, g->count, ncclFloat32, ncclSum, g->nccl[r], g->st[r]);
      break;
    case KILN_COLL_ALLGATHER:
      nr = ncclAllGather(sendp, recvp, g->count, ncclFloat32, g->nccl[r], g->st[r]);
      break;
    case KILN_COLL_REDUCESCATTER:
      nr = ncclReduceScatter(sendp, recvp, g->count, ncclFloat32, ncclSum, g->nccl[r], g->st[r]);
      break;
    default: nr = ncclAlltoAll(sendp, recvp, g->count, ncclFloat32, g->nccl[r], g->st[r]); break;
  }
  if (nr != ncclSuccess) fail(g, r, KILN_ERR_NCCL, "NCCL: %s", ncclGetErrorString(nr));
  return nr == ncclSuccess;
}

/* Waits for rank r's stream; false (failed) when CUDA or kiln's communicator reports an error. */
static bool finish(kilnTuneGpu* g, int r) {
  if (!cuda_ok(g, r, cudaStreamSynchronize(g->st[r]), "waiting for the call")) return false;
  kilnResult_t ae = KILN_SUCCESS;
  if (g->plan && kilnCommGetAsyncError(g->kc[r], &ae) == KILN_SUCCESS && ae != KILN_SUCCESS) {
    fail(g, r, ae, "failed on the GPU: %s", kilnResultString(ae));
    return false;
  }
  return true;
}

/* Compares rank r's output with the reference. */
static bool check(kilnTuneGpu* g, int r) {
  const void* sendp;
  void* recvp;
  float* outp;
  size_t outElems;
  call_buffers(g, r, &sendp, &recvp, &outp, &outElems);
  float* h = g->hout[r];
  if (!cuda_ok(g, r, cudaMemcpy(h, outp, outElems * sizeof(float), cudaMemcpyDeviceToHost),
               "reading the output"))
    return false;
  const size_t cnt = g->count;
  for (size_t i = 0; i < outElems; i++) {
    float want;
    switch (g->coll) {
      case KILN_COLL_ALLREDUCE: want = g->ref[i]; break;
      case KILN_COLL_REDUCESCATTER: want = g->ref[(size_t)r * cnt + i]; break;
      case KILN_COLL_ALLGATHER: want = g->hin[(i / cnt) * g->sendElems + i % cnt]; break;
      default: want = g->hin[(i / cnt) * g->sendElems + (size_t)r * cnt + i % cnt]; break;
    }
    if (memcmp(&want, &h[i], sizeof want) != 0) {
      fail(g, r, KILN_ERR_VERIFY, "wrong result: output element %zu of %zu is %g, the CPU reference says %g",
           i, outElems, (double)h[i], (double)want);
      return false;
    }
  }
  return true;
}

/* Poisons rank r's output (NaNs) and, in place, writes its input again. */
static bool reset(kilnTuneGpu* g, int r) {
  const void* sendp;
  void* recvp;
  float* outp;
  size_t outElems;
  call_buffers(g, r, &sendp, &recvp, &outp, &outElems);
  if (!cuda_ok(g, r, cudaMemsetAsync(outp, 0xff, outElems * sizeof(float), g->st[r]), "poisoning the output"))
    return false;
  return !g->inplace || upload(g, r);
}

/* Rank r's part of kilnTuneGpuRun: load, a checked call, the timed graph, a checked launch. Every
 * rank passes every meeting (agree, the barriers) whatever fails, and all leave at the same one
 * (agree gives every rank the same answer), so none waits for ever. */
static void run_rank(kilnTuneGpu* g, int r) {
  cudaGraph_t graph = NULL;
  cudaGraphExec_t exec = NULL;
  const kilnTuneTiming* t = &g->t;
  g->ex[r] = NULL;
  if (cuda_ok(g, r, cudaSetDevice(g->dev[r]), "cudaSetDevice") && g->plan &&
      kilnPlanLoad(g->kc[r], g->plan, &g->ex[r]) != KILN_SUCCESS) {
    g->ex[r] = NULL;
    fail(g, r, KILN_ERR_UNSUPPORTED, "the runtime cannot load it: %s", kilnLastError());
  }
  if (!agree(g, r)) goto out_free;
  if (reset(g, r) && issue(g, r) && finish(g, r)) check(g, r);
  if (!agree(g, r)) goto out_free;
  for (int w = 0; w < t->warmup && g->res[r] == KILN_SUCCESS; w++) issue(g, r);
  finish(g, r);
  if (cuda_ok(g, r, cudaStreamBeginCapture(g->st[r], cudaStreamCaptureModeThreadLocal),
              "capturing a graph")) {
    for (int k = 0; k < t->graph_calls && g->res[r] == KILN_SUCCESS; k++) issue(g, r);
    const cudaError_t e = cudaStreamEndCapture(g->st[r], &graph);
    if (cuda_ok(g, r, e, "capturing a graph") && g->res[r] == KILN_SUCCESS)
      cuda_ok(g, r, cudaGraphInstantiate(&exec, graph, 0), "instantiating the graph");
  }
  if (!agree(g, r)) goto out_free;
  cuda_ok(g, r, cudaGraphLaunch(exec, g->st[r]), "launching the graph");
  finish(g, r);
  for (int it = 0; it < t->reps; it++) {
    pthread_barrier_wait(&g->bar);
    if (g->res[r] != KILN_SUCCESS) continue;
    cuda_ok(g, r, cudaEventRecord(g->ev0[r][it], g->st[r]), "recording an event");
    cuda_ok(g, r, cudaGraphLaunch(exec, g->st[r]), "launching the graph");
    cuda_ok(g, r, cudaEventRecord(g->ev1[r][it], g->st[r]), "recording an event");
  }
  if (finish(g, r))
    for (int it = 0; it < t->reps; it++)
      if (!cuda_ok(g, r, cudaEventElapsedTime(&g->ms[r][it], g->ev0[r][it], g->ev1[r][it]),
                   "reading an event"))
        break;
  if (!agree(g, r)) goto out_free;
  if (!g->inplace && reset(g, r) && cuda_ok(g, r, cudaGraphLaunch(exec, g->st[r]), "launching the graph") &&
      finish(g, r))
    check(g, r);
out_free:
  cudaStreamSynchronize(g->st[r]);
  if (exec) cudaGraphExecDestroy(exec);
  if (graph) cudaGraphDestroy(graph);
  pthread_barrier_wait(&g->bar); /* no peer's kernel still reads this rank's exec */
  if (g->ex[r]) kilnExecFree(g->ex[r]);
  g->ex[r] = NULL;
}

static int cmp_float(const void* a, const void* b) {
  const float x = *(const float*)a, y = *(const float*)b;
  return x < y ? -1 : x > y;
}

kilnResult_t kilnTuneGpuRun(kilnTuneGpu* g, const kilnPlan* plan, const kilnTuneTiming* t, double* us) {
  *us = -1;
  if (!g || !g->prepared) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnTuneGpuRun: no call prepared");
  g->t = t ? *t : (kilnTuneTiming)KILN_TUNE_TIMING_INIT;
  if (g->t.warmup < 0 || g->t.graph_calls < 1 || g->t.reps < 1 || g->t.reps > TUNE_MAX_REPS)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT,
                        "timing: %d warmup calls, %d calls a graph, %d launches (1..%d)", g->t.warmup,
                        g->t.graph_calls, g->t.reps, TUNE_MAX_REPS);
  if (!plan && g->shared)
    return kilnSetError(KILN_ERR_UNSUPPORTED, "no NCCL: %d ranks share %d GPU%s", g->n, g->ngpus,
                        g->ngpus == 1 ? "" : "s");
  if (plan && !kilnPlanSupports(plan, g->count, KILN_FLOAT32, KILN_SUM, g->inplace))
    return kilnSetError(KILN_ERR_UNSUPPORTED, "%s does not take a%s %s of %zu floats", plan->name,
                        g->inplace ? "n in-place" : "n out-of-place", kilnCollName(g->coll), g->count);
  g->plan = plan;
  kilnResult_t res = for_ranks(g, run_rank);
  g->plan = NULL;
  /* A communicator that failed on the GPU takes no more calls: make kiln's again. */
  bool broken = false;
  for (int r = 0; r < g->n && g->kc[r]; r++) {
    kilnResult_t ae = KILN_SUCCESS;
    broken = broken || kilnCommGetAsyncError(g->kc[r], &ae) != KILN_SUCCESS || ae != KILN_SUCCESS;
  }
  if (broken) {
    char why[512];
    snprintf(why, sizeof why, "%s", kilnLastError());
    kilnCommDestroyAll(g->n, g->kc);
    memset(g->kc, 0, sizeof g->kc);
    const kilnResult_t mk = make_kiln(g);
    if (mk != KILN_SUCCESS) return mk;
    if (res == KILN_SUCCESS) res = KILN_ERR_INTERNAL;
    kilnSetError(res, "%s", why);
  }
  if (res != KILN_SUCCESS) return res;
  float slow[TUNE_MAX_REPS];
  for (int it = 0; it < g->t.reps; it++) {
    slow[it] = 0;
    for (int r = 0; r < g->n; r++)
      if (g->ms[r][it] > slow[it]) slow[it] = g->ms[r][it];
  }
  qsort(slow, (size_t)g->t.reps, sizeof slow[0], cmp_float);
  *us = 1000.0 * slow[g->t.reps / 2] / g->t.graph_calls;
  return KILN_SUCCESS;
}
