/*
 * kiln's side of the drop-in libnccl.so.2: a kiln communicator (include/kiln/runtime.h) for each
 * NCCL communicator the application creates, the plans it can run, and the choice per call.
 *
 * Plans: read once per process, in a fixed order, from KILN_PLANS (a folder: every *.xml in it,
 * sorted by name, read with kilnPlanReadFile; one that fails to read is skipped with a WARN).
 *
 * Setup (at init, every rank of the communicator in the same order): skip when no plan has as many
 * GPUs as the communicator has ranks; else kilnCommCreate and kilnPlanLoad of each such plan, then
 * the ranks agree through the real NCCL (an allreduce-min of "this rank could load plan i" flags,
 * slot 0 being "kiln communicator created"), so that every rank keeps exactly the same plans.
 *
 * Choice per call, only from arguments that are the same on every rank: the collective, the
 * number of ranks, the byte size of the collective's reference buffer (allreduce: the per-rank
 * input; allgather: the whole output; reducescatter and alltoall: the whole input, as in
 * include/kiln/plan.h), in-place or not, data type and op (kilnPlanSupports). The first plan in
 * load order whose [minBytes, maxBytes) holds the size wins; none → NCCL.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "kiln/kiln.h"
#include "kiln/plan.h"
#include "shim.h"

#ifdef KILN_SHIM_HAVE_RUNTIME
#include "kiln/runtime.h"
/* Not (yet) in every runtime: a non-blocking abort that makes kernels waiting on peers give up.
 * Weak, so the shim links either way and falls back to leaving the communicator alone. */
extern kilnResult_t kilnCommAbort(kilnComm_t comm) __attribute__((weak));
#endif

typedef struct shimExec {
  const kilnPlan* plan;
#ifdef KILN_SHIM_HAVE_RUNTIME
  kilnExec_t exec;
#endif
} shimExec;

struct shimComm {
  ncclComm_t nccl;
  int nranks, rank, device;
#ifdef KILN_SHIM_HAVE_RUNTIME
  kilnComm_t kc;
#endif
  int nexec;
  shimExec* execs;
};

/* ---- plans ---- */

static kilnPlan** plans;
static int nplans;
static pthread_once_t plansOnce = PTHREAD_ONCE_INIT;

static int cmpName(const void* a, const void* b) {
  return strcmp(*(char* const*)a, *(char* const*)b);
}

static bool endsWith(const char* s, const char* suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Reads every *.xml of KILN_PLANS, sorted by file name. */
static void loadPlans(void) {
  const char* dir = shimConfigGet()->plansDir;
  if (!dir) return;
  DIR* d = opendir(dir);
  if (!d) {
    shimLog(SHIM_LOG_WARN, "KILN_PLANS=%s: cannot open the folder: no plans loaded", dir);
    return;
  }
  char** names = NULL;
  int nnames = 0, cap = 0;
  struct dirent* e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.' || !endsWith(e->d_name, ".xml")) continue;
    if (nnames == cap) {
      cap = cap ? 2 * cap : 16;
      char** grown = realloc(names, (size_t)cap * sizeof *names);
      if (!grown) break;
      names = grown;
    }
    names[nnames] = strdup(e->d_name);
    if (names[nnames]) nnames++;
  }
  closedir(d);
  if (nnames > 0) qsort(names, (size_t)nnames, sizeof *names, cmpName);
  plans = calloc((size_t)(nnames > 0 ? nnames : 1), sizeof *plans);
  for (int i = 0; i < nnames; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    kilnPlan* p = NULL;
    if (plans && kilnPlanReadFile(path, &p) == KILN_SUCCESS) {
      plans[nplans++] = p;
      shimLog(SHIM_LOG_INFO, "plan %s: %s, %d GPUs, %s%s%s, bytes [%llu, %llu)", path, kilnCollName(p->coll),
              p->ngpus, p->inplace ? "in-place" : "", p->inplace && p->outofplace ? "/" : "",
              p->outofplace ? "out-of-place" : "", (unsigned long long)p->min_bytes,
              (unsigned long long)p->max_bytes);
    } else {
      shimLog(SHIM_LOG_WARN, "plan %s skipped: %s", path, kilnLastError());
    }
    free(names[i]);
  }
  free(names);
}

static int plansFor(int nranks) {
  pthread_once(&plansOnce, loadPlans);
  int n = 0;
  for (int i = 0; i < nplans; i++)
    if (plans[i]->ngpus == nranks) n++;
  return n;
}

/* ---- the communicator table ---- */

static shimComm** comms;
static int ncomms, capComms;
static pthread_mutex_t commsLock = PTHREAD_MUTEX_INITIALIZER;

/* Caller holds commsLock. */
static int findIndex(ncclComm_t c) {
  for (int i = 0; i < ncomms; i++)
    if (comms[i]->nccl == c) return i;
  return -1;
}

static __attribute__((unused)) bool insertComm(shimComm* sc) {
  bool ok = true;
  pthread_mutex_lock(&commsLock);
  if (ncomms == capComms) {
    int cap = capComms ? 2 * capComms : 16;
    shimComm** grown = realloc(comms, (size_t)cap * sizeof *comms);
    if (!grown) {
      ok = false;
      goto out_unlock;
    }
    comms = grown;
    capComms = cap;
  }
  comms[ncomms++] = sc;
out_unlock:
  pthread_mutex_unlock(&commsLock);
  return ok;
}

/* Removes and returns the entry of c (NULL if none). */
static shimComm* takeComm(ncclComm_t c) {
  shimComm* sc = NULL;
  pthread_mutex_lock(&commsLock);
  int i = findIndex(c);
  if (i >= 0) {
    sc = comms[i];
    comms[i] = comms[--ncomms];
  }
  pthread_mutex_unlock(&commsLock);
  return sc;
}

/* ---- setup and teardown ---- */

#ifdef KILN_SHIM_HAVE_RUNTIME

/* Frees what setup made; does not wait for peers. */
static void freeComm(shimComm* sc, bool abort) {
  if (!sc) return;
  shimPassthrough++;
  for (int i = 0; i < sc->nexec; i++)
    if (sc->execs[i].exec) kilnExecFree(sc->execs[i].exec);
  if (sc->kc) {
    if (!abort) kilnCommDestroy(sc->kc);
    else if (kilnCommAbort) kilnCommAbort(sc->kc);
    else shimLog(SHIM_LOG_INFO, "abort: the runtime has no kilnCommAbort; kiln's resources on this "
                 "communicator are left to the process's end");
  }
  shimPassthrough--;
  free(sc->execs);
  free(sc);
}

/* Agreement through the real NCCL: flags[c][0..m) become their minimum over the ranks of comms[c],
 * for n communicators at once (grouped). False (and flags untouched) when it could not be done. */
static bool agree(ncclComm_t* ncomm, int n, int** flags, int m) {
  const shimReal* r = shimRealGet();
  bool ok = false;
  int prev = 0;
  int** dev = calloc((size_t)n, sizeof *dev);
  cudaStream_t* st = calloc((size_t)n, sizeof *st);
  if (!dev || !st || !r->ncclAllReduce || !r->ncclGroupStart || !r->ncclGroupEnd) goto out_free;
  cudaGetDevice(&prev);
  for (int c = 0; c < n; c++) {
    int d = 0;
    if (r->ncclCommCuDevice(ncomm[c], &d) != ncclSuccess || cudaSetDevice(d) != cudaSuccess ||
        cudaMalloc((void**)&dev[c], (size_t)m * sizeof(int)) != cudaSuccess ||
        cudaStreamCreateWithFlags(&st[c], cudaStreamNonBlocking) != cudaSuccess ||
        cudaMemcpy(dev[c], flags[c], (size_t)m * sizeof(int), cudaMemcpyHostToDevice) != cudaSuccess)
      goto out_cuda;
  }
  shimPassthrough++;
  ncclResult_t res = r->ncclGroupStart();
  for (int c = 0; c < n && res == ncclSuccess; c++)
    res = r->ncclAllReduce(dev[c], dev[c], (size_t)m, ncclInt32, ncclMin, ncomm[c], st[c]);
  ncclResult_t endRes = r->ncclGroupEnd();
  shimPassthrough--;
  if (res != ncclSuccess || endRes != ncclSuccess) goto out_cuda;
  for (int c = 0; c < n; c++) {
    int d = 0;
    r->ncclCommCuDevice(ncomm[c], &d);
    if (cudaSetDevice(d) != cudaSuccess || cudaStreamSynchronize(st[c]) != cudaSuccess ||
        cudaMemcpy(flags[c], dev[c], (size_t)m * sizeof(int), cudaMemcpyDeviceToHost) != cudaSuccess)
      goto out_cuda;
  }
  ok = true;
out_cuda:
  for (int c = 0; c < n; c++) {
    int d = 0;
    if (!dev[c] && !st[c]) continue;
    r->ncclCommCuDevice(ncomm[c], &d);
    cudaSetDevice(d);
    if (dev[c]) cudaFree(dev[c]);
    if (st[c]) cudaStreamDestroy(st[c]);
  }
  cudaSetDevice(prev);
out_free:
  free(dev);
  free(st);
  return ok;
}

/* Sets up kiln on n communicators of this process that were created together (n == 1 for one
 * process per GPU). On any failure every communicator concerned stays on NCCL. */
static void setup(ncclComm_t* ncomm, int n) {
  const shimReal* r = shimRealGet();
  shimComm** sc = calloc((size_t)n, sizeof *sc);
  int** flags = calloc((size_t)n, sizeof *flags);
  kilnComm_t* kcs = calloc((size_t)n, sizeof *kcs);
  if (!sc || !flags || !kcs) goto out_free;
  int nranks = 0;
  if (r->ncclCommCount(ncomm[0], &nranks) != ncclSuccess) goto out_free;
  int np = plansFor(nranks);
  if (np == 0) {
    shimLogKeyed(SHIM_LOG_INFO, "noplans", "no plan for %d ranks: kiln is not set up on this "
                 "communicator, NCCL runs it", nranks);
    goto out_free;
  }
  for (int c = 0; c < n; c++) {
    sc[c] = calloc(1, sizeof **sc);
    flags[c] = calloc((size_t)np + 1, sizeof(int));
    if (!sc[c] || !flags[c]) goto out_free;
    sc[c]->nccl = ncomm[c];
    sc[c]->nranks = nranks;
    r->ncclCommUserRank(ncomm[c], &sc[c]->rank);
    r->ncclCommCuDevice(ncomm[c], &sc[c]->device);
    sc[c]->execs = calloc((size_t)np, sizeof(shimExec));
    if (!sc[c]->execs) goto out_free;
  }

  /* kiln communicators: one call for the whole set. */
  kilnResult_t kr;
  shimPassthrough++;
  if (n == 1) kr = kilnCommCreate(ncomm[0], NULL, &kcs[0]);
  else kr = kilnCommCreateAll(n, ncomm, NULL, kcs);
  shimPassthrough--;
  if (kr != KILN_SUCCESS) {
    shimLog(kr == KILN_ERR_UNSUPPORTED ? SHIM_LOG_INFO : SHIM_LOG_WARN,
            "kiln communicator not created (%d ranks), NCCL runs it: %s", nranks, kilnLastError());
    memset(kcs, 0, (size_t)n * sizeof *kcs);
  }
  for (int c = 0; c < n; c++) {
    sc[c]->kc = kcs[c];
    flags[c][0] = kcs[c] != NULL;
    int k = 0;
    for (int i = 0; i < nplans && kcs[c]; i++) {
      if (plans[i]->ngpus != nranks) continue;
      kilnExec_t ex = NULL;
      shimPassthrough++;
      kilnResult_t lr = kilnPlanLoad(kcs[c], plans[i], &ex);
      shimPassthrough--;
      if (lr != KILN_SUCCESS)
        shimLog(SHIM_LOG_WARN, "rank %d: plan %s not loaded: %s", sc[c]->rank, plans[i]->name,
                kilnLastError());
      sc[c]->execs[k].plan = plans[i];
      sc[c]->execs[k].exec = ex;
      flags[c][1 + k] = ex != NULL;
      k++;
    }
    sc[c]->nexec = k;
  }

  /* Every rank keeps the same plans, or none. */
  if (!agree(ncomm, n, flags, np + 1)) {
    shimLog(SHIM_LOG_WARN, "ranks could not agree on kiln's plans: NCCL runs this communicator");
    for (int c = 0; c < n; c++) flags[c][0] = 0;
  }
  for (int c = 0; c < n; c++) {
    if (!flags[c][0]) {
      if (kcs[c])
        shimLog(SHIM_LOG_WARN, "rank %d: kiln is off on this communicator: another rank could not "
                "set it up", sc[c]->rank);
      freeComm(sc[c], false);
      sc[c] = NULL;
      continue;
    }
    int kept = 0;
    for (int i = 0; i < sc[c]->nexec; i++) {
      if (flags[c][1 + i]) {
        sc[c]->execs[kept++] = sc[c]->execs[i];
      } else if (sc[c]->execs[i].exec) {
        shimPassthrough++;
        kilnExecFree(sc[c]->execs[i].exec);
        shimPassthrough--;
      }
    }
    sc[c]->nexec = kept;
    shimLogKeyed(SHIM_LOG_INFO, "setup", "kiln set up on a communicator of %d ranks with %d plans",
                 nranks, kept);
    if (!insertComm(sc[c])) {
      freeComm(sc[c], false);
    }
    sc[c] = NULL;
  }

out_free:
  for (int c = 0; sc && flags && c < n; c++) {
    if (sc[c]) {
      free(sc[c]->execs); /* only reached before any kiln communicator exists */
      free(sc[c]);
    }
    free(flags[c]);
  }
  free(sc);
  free(flags);
  free(kcs);
}

#else /* !KILN_SHIM_HAVE_RUNTIME */

static void freeComm(shimComm* sc, bool abort) {
  (void)abort;
  if (!sc) return;
  free(sc->execs);
  free(sc);
}

static void setup(ncclComm_t* ncomm, int n) {
  const shimReal* r = shimRealGet();
  int nranks = 0;
  (void)n;
  if (!r->ncclCommCount || r->ncclCommCount(ncomm[0], &nranks) != ncclSuccess) return;
  if (plansFor(nranks) == 0)
    shimLogKeyed(SHIM_LOG_INFO, "noplans", "no plan for %d ranks: kiln is not set up on this "
                 "communicator, NCCL runs it", nranks);
  else
    shimLogKeyed(SHIM_LOG_WARN, "noruntime", "this libnccl.so.2 was built without kiln's GPU "
                 "runtime: NCCL runs every collective");
}

#endif

void shimCommCreated(ncclComm_t comm) {
  if (comm) setup(&comm, 1);
}

void shimCommsCreated(ncclComm_t* c, int n) {
  if (n > 0) setup(c, n);
}

void shimCommRelease(ncclComm_t comm) {
  freeComm(takeComm(comm), false);
}

void shimCommAbort(ncclComm_t comm) {
  freeComm(takeComm(comm), true);
}

ncclResult_t shimCommAsyncError(ncclComm_t comm) {
  ncclResult_t res = ncclSuccess;
#ifdef KILN_SHIM_HAVE_RUNTIME
  pthread_mutex_lock(&commsLock);
  int i = findIndex(comm);
  if (i >= 0 && comms[i]->kc) {
    kilnResult_t e = KILN_SUCCESS;
    shimPassthrough++;
    kilnResult_t q = kilnCommGetAsyncError(comms[i]->kc, &e);
    shimPassthrough--;
    if (q == KILN_SUCCESS && e != KILN_SUCCESS) {
      res = e == KILN_ERR_TIMEOUT ? ncclRemoteError
          : e == KILN_ERR_CUDA    ? ncclUnhandledCudaError
                                  : ncclInternalError;
      shimLogOnce(SHIM_LOG_WARN, "rank %d: kiln asynchronous error: %s", comms[i]->rank,
                  kilnResultString(e));
    }
  }
  pthread_mutex_unlock(&commsLock);
#else
  (void)comm;
#endif
  return res;
}

/* ---- the choice per call ---- */

static const char* collName[] = {"allreduce", "allgather", "reducescatter", "alltoall"};
static const kilnColl_t collKiln[] = {KILN_COLL_ALLREDUCE, KILN_COLL_ALLGATHER,
                                      KILN_COLL_REDUCESCATTER, KILN_COLL_ALLTOALL};

bool shimTryKiln(const shimCall* call, ncclResult_t* res) {
  bool taken = false;
  if ((int)call->op < 0 || call->op >= ncclNumOps || (int)call->datatype < 0 ||
      call->datatype >= ncclNumTypes) {
    shimLogKeyed(SHIM_LOG_INFO, collName[call->coll], "%s: op %d / data type %d (e.g. a PreMulSum op) "
                 "→ NCCL", collName[call->coll], (int)call->op, (int)call->datatype);
    return false;
  }
  pthread_mutex_lock(&commsLock);
  int ci = findIndex(call->comm);
  if (ci < 0) goto out_unlock;
  shimComm* sc = comms[ci];
  size_t esize = kilnDataTypeSize((kilnDataType_t)call->datatype);
  size_t n = (size_t)sc->nranks;
  size_t bytes = 0;
  bool inplace = false;
  const char* sb = call->sendbuff;
  char* rb = call->recvbuff;
  switch (call->coll) {
  case SHIM_ALLREDUCE:
    bytes = call->count * esize;
    inplace = sb == rb;
    break;
  case SHIM_ALLGATHER:
    bytes = call->count * esize * n;
    inplace = sb == rb + (size_t)sc->rank * call->count * esize;
    break;
  case SHIM_REDUCESCATTER:
    bytes = call->count * esize * n;
    inplace = rb == sb + (size_t)sc->rank * call->count * esize;
    break;
  case SHIM_ALLTOALL:
    bytes = call->count * esize * n;
    inplace = sb == rb;
    break;
  }
  const kilnDataType_t dt = (kilnDataType_t)call->datatype;
  const kilnRedOp_t op = (kilnRedOp_t)call->op;
  const shimExec* pick = NULL;
  for (int i = 0; i < sc->nexec && !pick; i++) {
    const kilnPlan* p = sc->execs[i].plan;
    if (p->coll != collKiln[call->coll] || bytes < p->min_bytes || bytes >= p->max_bytes) continue;
#ifdef KILN_SHIM_HAVE_RUNTIME
    if (!kilnPlanSupports(p, call->count, dt, op, inplace)) continue;
#endif
    pick = &sc->execs[i];
  }
  char key[160];
  snprintf(key, sizeof key, "%s/%d/%s/%s/%d/%s", collName[call->coll], sc->nranks,
           kilnDataTypeName(dt), kilnRedOpName(op), inplace, pick ? pick->plan->name : "-");
  if (!pick) {
    shimLogKeyed(SHIM_LOG_INFO, key, "%s %d ranks %s %s %s (first: %zu B) → NCCL: no plan matches",
                 collName[call->coll], sc->nranks, kilnDataTypeName(dt),
                 call->coll == SHIM_ALLREDUCE || call->coll == SHIM_REDUCESCATTER ? kilnRedOpName(op) : "",
                 inplace ? "in-place" : "out-of-place", bytes);
    goto out_unlock;
  }
  shimLogKeyed(SHIM_LOG_INFO, key, "%s %d ranks %s %s %s (first: %zu B) → kiln plan %s",
               collName[call->coll], sc->nranks, kilnDataTypeName(dt),
               call->coll == SHIM_ALLREDUCE || call->coll == SHIM_REDUCESCATTER ? kilnRedOpName(op) : "",
               inplace ? "in-place" : "out-of-place", bytes, pick->plan->name);
#ifdef KILN_SHIM_HAVE_RUNTIME
  {
    int prev = -1;
    cudaGetDevice(&prev);
    if (prev != sc->device) cudaSetDevice(sc->device);
    shimPassthrough++;
    kilnResult_t kr = kilnRun(pick->exec, call->sendbuff, call->recvbuff, call->count, dt, op,
                              call->stream);
    shimPassthrough--;
    if (prev != sc->device && prev >= 0) cudaSetDevice(prev);
    /* The peers are already in their kiln kernels: NCCL cannot stand in now. */
    if (kr != KILN_SUCCESS)
      shimLog(SHIM_LOG_ERROR, "rank %d: %s with plan %s failed: %s", sc->rank,
              collName[call->coll], pick->plan->name, kilnLastError());
    *res = kr == KILN_SUCCESS ? ncclSuccess
         : kr == KILN_ERR_CUDA ? ncclUnhandledCudaError
         : kr == KILN_ERR_INVALID_ARGUMENT ? ncclInvalidArgument
                                           : ncclInternalError;
    taken = true;
  }
#endif
out_unlock:
  pthread_mutex_unlock(&commsLock);
  return taken;
}
