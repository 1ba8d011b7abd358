/*
 * Every function kiln's libnccl.so.2 exports: the NCCL 2.28 API of nccl.h, the device API's host
 * functions, and each one's pnccl twin (an alias of the same body, so a profiler that wraps
 * ncclXxx and calls pncclXxx still reaches kiln's decisions).
 *
 * Forwarded functions call the real NCCL's function with the same arguments and return its
 * result unchanged. Hooked functions add kiln's part around the real call:
 *   - every init path (InitRank, InitRankConfig, InitAll, InitRankScalable, Split, Shrink) sets up
 *     kiln on the new communicator once the real one is ready (after the outermost ncclGroupEnd
 *     when the init was grouped; never for non-blocking inits still in progress);
 *   - Finalize/Destroy release kiln's resources first, Abort/Revoke stop kiln's kernels first
 *     (and free kiln's memory once the real Abort, or the Destroy after a Revoke, returned; kiln's
 *     window is deregistered before the real Abort, or before that Destroy);
 *   - GetAsyncError also reports kiln's own errors (a peer that never answered);
 *   - WindowRegister with NCCL_WIN_COLL_SYMMETRIC adds the window to kiln's communicator (at the
 *     outermost ncclGroupEnd when grouped), WindowDeregister removes it first: large calls on
 *     buffers in such windows go zero copy (kiln/runtime.h, kilnCommWindowAdd); MemAlloc
 *     remembers an allocation's extent and MemFree first forgets any window left over it;
 *   - AllReduce/AllGather/ReduceScatter/AlltoAll may run as a kiln plan. Inside a group, the
 *     decision is made at the call (so a call kiln does not take joins NCCL's group as usual) but
 *     kiln's calls are launched only at the outermost ncclGroupEnd, after the real one, as NCCL
 *     launches nothing before it either (ncclGroupSimulateEnd drops them, launching nothing);
 *   - GroupStart/End/SimulateEnd count this thread's group depth.
 * With KILN_DISABLE=1, or on a thread that is inside the real NCCL or kiln's runtime
 * (shimPassthrough), hooked functions only forward.
 */
#include <pthread.h>
#include <stdio.h>

#include "shim.h"

/* Calls the real function with shimPassthrough raised, so that whatever the real NCCL calls of
 * its own exported API on this thread goes straight back to it. */
#define SHIM_REAL(res, fn, args, missing) \
  do {                                    \
    const shimReal* r_ = shimRealGet();   \
    if (!r_->fn) {                        \
      (res) = (missing);                  \
      break;                              \
    }                                     \
    shimPassthrough++;                    \
    (res) = r_->fn args;                  \
    shimPassthrough--;                    \
  } while (0)

#define SHIM_TWIN(ret, name, params) SHIM_EXPORT ret p##name params __attribute__((alias(#name)));

/* ---- forwarders ---- */

/* A forwarder that does `before` first. Also raises shimPassthrough: whatever the real function
 * calls of the exported API on this thread (a hooked collective, say) must not reach kiln's
 * decisions. */
#define SHIM_FORWARDER(ret, name, params, args, missing, before) \
  SHIM_EXPORT ret name params {                                  \
    const shimReal* r = shimRealGet();                           \
    if (!r->name) return missing;                                \
    before;                                                      \
    shimPassthrough++;                                           \
    ret v = r->name args;                                        \
    shimPassthrough--;                                           \
    return v;                                                    \
  }                                                              \
  SHIM_TWIN(ret, name, params)
#define SHIM_X_FORWARD(ret, name, params, args, missing) \
  SHIM_FORWARDER(ret, name, params, args, missing, (void)0)
KILN_SHIM_FORWARDED(SHIM_X_FORWARD)
#undef SHIM_X_FORWARD

/* ---- the streams of a group ---- */

/* NCCL runs a group's calls on several streams as one operation posted on every one of them: all
 * of the streams' earlier work before it starts, none of their later work before it ends (the
 * NCCL guide, "Mixing Multiple Streams within the same ncclGroupStart/End() group"). It joins the
 * streams of its own calls; where kiln took some of a communicator's calls, the shim joins that
 * communicator's streams (kiln's calls' and NCCL's) around the group the same way (group_join).
 * The calls of the open outermost group on this thread, by communicator and stream: */
#define SHIM_MAX_GROUP_STREAMS 64
static _Thread_local struct {
  ncclComm_t comm;
  cudaStream_t stream;
} groupStreams[SHIM_MAX_GROUP_STREAMS];
static _Thread_local int ngroupStreams;
static _Thread_local bool groupStreamsFull;

static void group_note(ncclComm_t comm, cudaStream_t stream) {
  if (shimGroupDepth == 0 || shimPassthrough > 0) return;
  for (int i = 0; i < ngroupStreams; i++)
    if (groupStreams[i].comm == comm && groupStreams[i].stream == stream) return;
  if (ngroupStreams == SHIM_MAX_GROUP_STREAMS) {
    groupStreamsFull = true;
    return;
  }
  groupStreams[ngroupStreams].comm = comm;
  groupStreams[ngroupStreams++].stream = stream;
}

#define SHIM_X_STREAMED(ret, name, params, args, missing) \
  SHIM_FORWARDER(ret, name, params, args, missing, group_note(comm, stream))
KILN_SHIM_STREAMED(SHIM_X_STREAMED)
#undef SHIM_X_STREAMED

SHIM_EXPORT void ncclResetDebugInit(void) {
  const shimReal* r = shimRealGet();
  if (r->ncclResetDebugInit) r->ncclResetDebugInit();
}
SHIM_TWIN(void, ncclResetDebugInit, (void))

SHIM_EXPORT void ncclResetDebugInitInternal(void) {
  const shimReal* r = shimRealGet();
  if (r->ncclResetDebugInitInternal) r->ncclResetDebugInitInternal();
}

SHIM_EXPORT const char* ncclGetLastError(ncclComm_t comm) {
  if (shimKilnError[0] && shimPassthrough == 0) return shimKilnError;
  const char* res;
  SHIM_REAL(res, ncclGetLastError, (comm), shimLastError());
  return res;
}
SHIM_TWIN(const char*, ncclGetLastError, (ncclComm_t comm))

/* ---- communicator lifetime ---- */

static bool kiln_off(void) { return shimPassthrough > 0 || shimConfigGet()->disable; }

/* Communicators created inside a group on this thread, set up at the outermost ncclGroupEnd. */
#define SHIM_MAX_PENDING 64
static _Thread_local ncclComm_t pending[SHIM_MAX_PENDING];
static _Thread_local ncclComm_t* pendingSlot[SHIM_MAX_PENDING];
static _Thread_local int npending;

/* Non-blocking communicators (config.blocking = 0, or split from one): kiln's setup makes
 * blocking calls, so kiln stays off them; remembered so that their splits stay off too. */
#define SHIM_MAX_NONBLOCKING 256
static ncclComm_t nonblocking[SHIM_MAX_NONBLOCKING];
static int nnonblocking;
static pthread_mutex_t nonblockingLock = PTHREAD_MUTEX_INITIALIZER;

static bool is_nonblocking(ncclComm_t c) {
  bool found = false;
  pthread_mutex_lock(&nonblockingLock);
  for (int i = 0; i < nnonblocking && !found; i++) found = nonblocking[i] == c;
  pthread_mutex_unlock(&nonblockingLock);
  return found;
}

static void set_nonblocking(ncclComm_t c, bool on) {
  pthread_mutex_lock(&nonblockingLock);
  int i = 0;
  while (i < nnonblocking && nonblocking[i] != c) i++;
  if (on && i == nnonblocking && nnonblocking < SHIM_MAX_NONBLOCKING) nonblocking[nnonblocking++] = c;
  if (!on && i < nnonblocking) nonblocking[i] = nonblocking[--nnonblocking];
  pthread_mutex_unlock(&nonblockingLock);
}

/* Whether a communicator made with `config` (NULL or blocking undefined: like `parent`, when
 * there is one) is non-blocking. */
static bool wants_nonblocking(const ncclConfig_t* config, ncclComm_t parent) {
  if (config && config->blocking != NCCL_CONFIG_UNDEF_INT) return config->blocking == 0;
  return parent && is_nonblocking(parent);
}

/* After a real init returned res for *slot: set up kiln now, later (grouped), or never. */
static void after_init(ncclResult_t res, ncclComm_t* slot, bool nonblock, const char* fn) {
  if (nonblock || res == ncclInProgress) {
    if ((res == ncclSuccess || res == ncclInProgress) && slot && *slot) set_nonblocking(*slot, true);
    shimLogOnce(SHIM_LOG_WARN,
                "%s: non-blocking communicator: kiln is not set up on it, NCCL runs "
                "all its collectives",
                fn);
    return;
  }
  if (res != ncclSuccess || !slot) return;
  if (shimGroupDepth > 0) {
    /* The communicator is only usable after ncclGroupEnd; remember where it will be. */
    if (npending < SHIM_MAX_PENDING) {
      pendingSlot[npending++] = slot;
    } else {
      shimLogOnce(SHIM_LOG_WARN,
                  "%s: more than %d communicators created in one group: kiln is "
                  "not set up on the rest",
                  fn, SHIM_MAX_PENDING);
    }
    return;
  }
  if (*slot) shimCommCreated(*slot);
}

SHIM_EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                                ncclConfig_t* config) {
  bool off = kiln_off();
  ncclResult_t res;
  SHIM_REAL(res, ncclCommInitRankConfig, (comm, nranks, commId, rank, config),
            shimMissing("ncclCommInitRankConfig"));
  if (!off) after_init(res, comm, wants_nonblocking(config, NULL), "ncclCommInitRankConfig");
  return res;
}
SHIM_TWIN(ncclResult_t, ncclCommInitRankConfig,
          (ncclComm_t * comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t* config))

SHIM_EXPORT ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  bool off = kiln_off();
  ncclResult_t res;
  SHIM_REAL(res, ncclCommInitRank, (comm, nranks, commId, rank), shimMissing("ncclCommInitRank"));
  if (!off) after_init(res, comm, false, "ncclCommInitRank");
  return res;
}
SHIM_TWIN(ncclResult_t, ncclCommInitRank, (ncclComm_t * comm, int nranks, ncclUniqueId commId, int rank))

SHIM_EXPORT ncclResult_t ncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist) {
  bool off = kiln_off();
  ncclResult_t res;
  SHIM_REAL(res, ncclCommInitAll, (comm, ndev, devlist), shimMissing("ncclCommInitAll"));
  if (!off && res == ncclSuccess && comm && ndev > 0) {
    if (shimGroupDepth > 0) {
      for (int i = 0; i < ndev; i++) after_init(res, &comm[i], false, "ncclCommInitAll");
    } else {
      shimCommsCreated(comm, ndev);
    }
  }
  return res;
}
SHIM_TWIN(ncclResult_t, ncclCommInitAll, (ncclComm_t * comm, int ndev, const int* devlist))

SHIM_EXPORT ncclResult_t ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId,
                                                  ncclUniqueId* commIds, ncclConfig_t* config) {
  bool off = kiln_off();
  ncclResult_t res;
  SHIM_REAL(res, ncclCommInitRankScalable, (newcomm, nranks, myrank, nId, commIds, config),
            shimMissing("ncclCommInitRankScalable"));
  if (!off) after_init(res, newcomm, wants_nonblocking(config, NULL), "ncclCommInitRankScalable");
  return res;
}
SHIM_TWIN(ncclResult_t, ncclCommInitRankScalable,
          (ncclComm_t * newcomm, int nranks, int myrank, int nId, ncclUniqueId* commIds,
           ncclConfig_t* config))

SHIM_EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                                       ncclConfig_t* config) {
  bool off = kiln_off();
  ncclResult_t res;
  SHIM_REAL(res, ncclCommSplit, (comm, color, key, newcomm, config), shimMissing("ncclCommSplit"));
  if (!off) after_init(res, newcomm, wants_nonblocking(config, comm), "ncclCommSplit");
  return res;
}
SHIM_TWIN(ncclResult_t, ncclCommSplit,
          (ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config))

SHIM_EXPORT ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
                                        ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags) {
  bool off = kiln_off();
  ncclResult_t res;
  /* NCCL_SHRINK_ABORT first terminates the parent's operations: stop kiln's on it too. */
  if (!off && (shrinkFlags & NCCL_SHRINK_ABORT)) shimCommAbort(comm, false);
  SHIM_REAL(res, ncclCommShrink, (comm, excludeRanksList, excludeRanksCount, newcomm, config, shrinkFlags),
            shimMissing("ncclCommShrink"));
  if (!off) after_init(res, newcomm, wants_nonblocking(config, comm), "ncclCommShrink");
  return res;
}
SHIM_TWIN(ncclResult_t, ncclCommShrink,
          (ncclComm_t comm, int* excludeRanksList, int excludeRanksCount, ncclComm_t* newcomm,
           ncclConfig_t* config, int shrinkFlags))

SHIM_EXPORT ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  if (!kiln_off()) shimCommRelease(comm);
  ncclResult_t res;
  SHIM_REAL(res, ncclCommFinalize, (comm), shimMissing("ncclCommFinalize"));
  return res;
}
SHIM_TWIN(ncclResult_t, ncclCommFinalize, (ncclComm_t comm))

SHIM_EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (!kiln_off()) shimCommRelease(comm);
  if (shimPassthrough == 0) shimCommAbortedRelease(comm); /* revoked: kiln's window, while NCCL has it */
  if (shimPassthrough == 0) set_nonblocking(comm, false);
  ncclResult_t res;
  SHIM_REAL(res, ncclCommDestroy, (comm), shimMissing("ncclCommDestroy"));
  if (shimPassthrough == 0) shimCommGone(comm); /* a revoked communicator's kiln part */
  return res;
}
SHIM_TWIN(ncclResult_t, ncclCommDestroy, (ncclComm_t comm))

SHIM_EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) {
  /* Even with KILN_DISABLE a kiln communicator cannot exist, so this is only skipped when nested. */
  if (shimPassthrough == 0) {
    shimCommAbort(comm, true);
    set_nonblocking(comm, false);
  }
  ncclResult_t res;
  SHIM_REAL(res, ncclCommAbort, (comm), shimMissing("ncclCommAbort"));
  if (shimPassthrough == 0) shimCommGone(comm);
  return res;
}
SHIM_TWIN(ncclResult_t, ncclCommAbort, (ncclComm_t comm))

SHIM_EXPORT ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags) {
  if (shimPassthrough == 0) shimCommAbort(comm, false); /* NCCL's kernels are stopped by the revoke */
  ncclResult_t res;
  SHIM_REAL(res, ncclCommRevoke, (comm, revokeFlags), shimMissing("ncclCommRevoke"));
  return res;
}
SHIM_TWIN(ncclResult_t, ncclCommRevoke, (ncclComm_t comm, int revokeFlags))

SHIM_EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  ncclResult_t res;
  SHIM_REAL(res, ncclCommGetAsyncError, (comm, asyncError), shimMissing("ncclCommGetAsyncError"));
  if (res == ncclSuccess && asyncError && *asyncError == ncclSuccess && shimPassthrough == 0) {
    ncclResult_t k = shimCommAsyncError(comm);
    if (k != ncclSuccess) *asyncError = k;
  }
  return res;
}
SHIM_TWIN(ncclResult_t, ncclCommGetAsyncError, (ncclComm_t comm, ncclResult_t* asyncError))

/* ---- collectives kiln may run ---- */

/* Calls kiln took inside the current group on this thread, launched at its outermost end. Past
 * SHIM_MAX_DEFERRED, calls go to NCCL (the same on every rank: they issue the same calls). */
#define SHIM_MAX_DEFERRED 256
static _Thread_local shimCall deferred[SHIM_MAX_DEFERRED];
static _Thread_local shimComm* heldDeferred[SHIM_MAX_DEFERRED]; /* launch_deferred's references */
static _Thread_local int ndeferred;

/* Offers the call to kiln; true when kiln took it (its result in *res; inside a group, success
 * now and the launch at ncclGroupEnd). */
static bool offer(shimColl coll, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                  ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream, ncclResult_t* res) {
  if (kiln_off()) return false;
  shimKilnError[0] = '\0';
  shimCall c = {coll, sendbuff, recvbuff, count, datatype, op, comm, stream};
  if (shimGroupDepth == 0) {
    shimComm* held = NULL;
    const bool taken = shimTryKiln(&c, true, res, &held);
    shimCommUnref(held);
    return taken;
  }
  group_note(comm, stream);
  if (ndeferred >= SHIM_MAX_DEFERRED) {
    shimLogOnce(SHIM_LOG_WARN, "more than %d kiln calls in one group: the rest go to NCCL",
                SHIM_MAX_DEFERRED);
    return false;
  }
  if (!shimTryKiln(&c, false, res, NULL)) return false;
  deferred[ndeferred++] = c;
  return true;
}

/* Every stream of `st` waits for the work issued to every other so far (one event recorded on
 * each, on the communicators' device; events of this thread, made once per device). Streams in
 * different capture states (some captured, some not, or two captures) are left alone: a wait
 * across them is not allowed. Returns JOINED, or NOT_JOINED (left alone), or JOIN_FAILED (a CUDA
 * call failed: some waits may be missing). */
enum { NOT_JOINED, JOINED, JOIN_FAILED };
#define SHIM_JOIN_MAX_DEVS 64
static _Thread_local cudaEvent_t joinEvents[SHIM_JOIN_MAX_DEVS][SHIM_MAX_GROUP_STREAMS];

static int join_streams(int dev, const cudaStream_t* st, int n) {
  if (dev < 0 || dev >= SHIM_JOIN_MAX_DEVS || n < 2) return NOT_JOINED;
  int prev = -1;
  cudaGetDevice(&prev);
  if (prev != dev) cudaSetDevice(dev);
  unsigned long long id0 = 0;
  bool alike = true;
  for (int i = 0; i < n && alike; i++) {
    enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    unsigned long long id = 0;
    alike = cudaStreamGetCaptureInfo(st[i], &cs, &id, NULL, NULL, NULL, NULL) == cudaSuccess &&
            cs != cudaStreamCaptureStatusInvalidated;
    if (cs != cudaStreamCaptureStatusActive) id = 0;
    if (i == 0) id0 = id;
    alike = alike && id == id0;
  }
  cudaError_t e = cudaSuccess;
  for (int i = 0; i < n && alike && e == cudaSuccess; i++) {
    cudaEvent_t* ev = &joinEvents[dev][i];
    if (!*ev) e = cudaEventCreateWithFlags(ev, cudaEventDisableTiming);
    if (e == cudaSuccess) e = cudaEventRecord(*ev, st[i]);
  }
  for (int i = 0; i < n && alike && e == cudaSuccess; i++)
    for (int j = 0; j < n && e == cudaSuccess; j++)
      if (j != i) e = cudaStreamWaitEvent(st[j], joinEvents[dev][i], 0);
  if (!alike) {
    cudaGetLastError();
    shimLogOnce(SHIM_LOG_WARN,
                "a group's calls on streams in different capture states: their streams are not "
                "joined around kiln's calls");
  } else if (e != cudaSuccess) {
    cudaGetLastError();
    snprintf(shimKilnError, sizeof shimKilnError,
             "kiln: joining the streams of a group's calls on one "
             "communicator (device %d) failed: %s",
             dev, cudaGetErrorString(e));
    shimLog(SHIM_LOG_ERROR, "%s", shimKilnError + 6);
  }
  if (prev >= 0 && prev != dev) cudaSetDevice(prev);
  return !alike ? NOT_JOINED : e == cudaSuccess ? JOINED : JOIN_FAILED;
}

/* Joins the streams of each communicator on which kiln took a call of the group (deferred[0..nd)),
 * where it has more than one among all its calls of the group. Before the launches (`before`),
 * a joined communicator's kiln calls are then all issued on the first of its streams: its streams
 * are alike by then, and kiln's calls of one communicator must not run side by side (under
 * capture kiln does not order them across streams itself); the join after the launches hands
 * their completion to every stream. false: a join failed in CUDA (join_streams), so some stream
 * may not wait for work NCCL's group semantics say it waits for (after the launches: kiln's calls
 * moved to another stream); ncclGroupEnd then fails. */
static bool group_join(int nd, bool before) {
  if (groupStreamsFull) {
    shimLogOnce(SHIM_LOG_WARN, "more than %d streams and communicators in one group: kiln does not join them",
                SHIM_MAX_GROUP_STREAMS);
    return true;
  }
  bool ok = true;
  ncclComm_t done[SHIM_MAX_GROUP_STREAMS];
  int ndone = 0;
  for (int k = 0; k < nd; k++) {
    const ncclComm_t comm = deferred[k].comm;
    bool seen = false;
    for (int i = 0; i < ndone && !seen; i++) seen = done[i] == comm;
    if (seen || ndone == SHIM_MAX_GROUP_STREAMS) continue;
    done[ndone++] = comm;
    cudaStream_t st[SHIM_MAX_GROUP_STREAMS];
    int n = 0;
    for (int i = 0; i < ngroupStreams; i++)
      if (groupStreams[i].comm == comm) st[n++] = groupStreams[i].stream;
    if (n < 2) continue;
    const shimReal* r = shimRealGet();
    int dev = -1;
    shimPassthrough++;
    const bool known = r->ncclCommCuDevice && r->ncclCommCuDevice(comm, &dev) == ncclSuccess;
    shimPassthrough--;
    const int j = known ? join_streams(dev, st, n) : NOT_JOINED;
    ok = ok && j != JOIN_FAILED;
    if (j == JOINED && before)
      for (int i = k; i < nd; i++)
        if (deferred[i].comm == comm) deferred[i].stream = st[0];
  }
  return ok;
}

/* Launches the calls deferred in the group just ended; the first failure is the result. */
static ncclResult_t launch_deferred(void) {
  ncclResult_t first = ncclSuccess;
  int n = ndeferred;
  ndeferred = 0;
  shimKilnGroupStart();
  for (int i = 0; i < n; i++) {
    ncclResult_t r = ncclSuccess;
    heldDeferred[i] = NULL;
    if (!shimTryKiln(&deferred[i], true, &r, &heldDeferred[i])) {
      /* Its communicator lost kiln inside the group (aborted): nothing can run it now. */
      r = ncclInvalidUsage;
      snprintf(shimKilnError, sizeof shimKilnError,
               "kiln: a collective kiln took inside a group "
               "could not be launched at ncclGroupEnd: its communicator was aborted or destroyed "
               "in the group");
      shimLog(SHIM_LOG_ERROR, "%s", shimKilnError + 6);
    }
    if (first == ncclSuccess) first = r;
  }
  /* A failed call fails the whole kiln group (nothing of it launches); its own error text, set
   * above, stays the one ncclGetLastError reports. */
  ncclResult_t issued = shimKilnGroupEnd(first != ncclSuccess);
  for (int i = 0; i < n; i++) shimCommUnref(heldDeferred[i]); /* issued (or dropped): given back */
  return first != ncclSuccess ? first : issued;
}

SHIM_EXPORT ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                                       ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                       cudaStream_t stream) {
  ncclResult_t res;
  if (offer(SHIM_ALLREDUCE, sendbuff, recvbuff, count, datatype, op, comm, stream, &res)) return res;
  SHIM_REAL(res, ncclAllReduce, (sendbuff, recvbuff, count, datatype, op, comm, stream),
            shimMissing("ncclAllReduce"));
  return res;
}
SHIM_TWIN(ncclResult_t, ncclAllReduce,
          (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
           ncclComm_t comm, cudaStream_t stream))

SHIM_EXPORT ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                           cudaStream_t stream) {
  ncclResult_t res;
  if (offer(SHIM_REDUCESCATTER, sendbuff, recvbuff, recvcount, datatype, op, comm, stream, &res)) return res;
  SHIM_REAL(res, ncclReduceScatter, (sendbuff, recvbuff, recvcount, datatype, op, comm, stream),
            shimMissing("ncclReduceScatter"));
  return res;
}
SHIM_TWIN(ncclResult_t, ncclReduceScatter,
          (const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op,
           ncclComm_t comm, cudaStream_t stream))

SHIM_EXPORT ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                       ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  ncclResult_t res;
  if (offer(SHIM_ALLGATHER, sendbuff, recvbuff, sendcount, datatype, ncclSum, comm, stream, &res)) return res;
  SHIM_REAL(res, ncclAllGather, (sendbuff, recvbuff, sendcount, datatype, comm, stream),
            shimMissing("ncclAllGather"));
  return res;
}
SHIM_TWIN(ncclResult_t, ncclAllGather,
          (const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype, ncclComm_t comm,
           cudaStream_t stream))

SHIM_EXPORT ncclResult_t ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                                      ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  ncclResult_t res;
  if (offer(SHIM_ALLTOALL, sendbuff, recvbuff, count, datatype, ncclSum, comm, stream, &res)) return res;
  SHIM_REAL(res, ncclAlltoAll, (sendbuff, recvbuff, count, datatype, comm, stream),
            shimMissing("ncclAlltoAll"));
  return res;
}
SHIM_TWIN(ncclResult_t, ncclAlltoAll,
          (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm,
           cudaStream_t stream))

/* ---- groups ---- */

SHIM_EXPORT ncclResult_t ncclGroupStart(void) {
  ncclResult_t res;
  bool nested = shimPassthrough > 0;
  SHIM_REAL(res, ncclGroupStart, (), shimMissing("ncclGroupStart"));
  if (!nested && res == ncclSuccess) shimGroupDepth++;
  return res;
}
SHIM_TWIN(ncclResult_t, ncclGroupStart, (void))

/* Closes one group level; at the outermost, sets up kiln on the communicators the group created
 * (only when the group really completed them: `ready`). */
static void group_closed(bool ready) {
  if (shimGroupDepth > 0) shimGroupDepth--;
  if (shimGroupDepth > 0 || npending == 0) return;
  /* A group creating communicators holds no collectives (NCCL forbids mixing them). */
  int n = 0;
  for (int i = 0; i < npending; i++)
    if (*pendingSlot[i]) pending[n++] = *pendingSlot[i];
  npending = 0;
  if (!ready) {
    if (n > 0)
      shimLogOnce(SHIM_LOG_WARN,
                  "communicators created in a group that did not complete at "
                  "ncclGroupEnd (non-blocking or failed): kiln is not set up on them");
    return;
  }
  if (n > 0 && !kiln_off()) shimCommsCreated(pending, n);
}

/* ---- symmetric windows ---- */

/* Windows registered inside a group on this thread: their handles are only filled at the
 * outermost ncclGroupEnd, where kiln adds them. */
#define SHIM_MAX_PENDING_WINDOWS 256
static _Thread_local shimWindow pendingWins[SHIM_MAX_PENDING_WINDOWS];
static _Thread_local ncclWindow_t* pendingSlots[SHIM_MAX_PENDING_WINDOWS]; /* where win will be */
static _Thread_local int npendingWins;

SHIM_EXPORT ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
                                                int winFlags) {
  ncclResult_t res;
  SHIM_REAL(res, ncclCommWindowRegister, (comm, buff, size, win, winFlags),
            shimMissing("ncclCommWindowRegister"));
  if (res != ncclSuccess || kiln_off() || !win || !(winFlags & NCCL_WIN_COLL_SYMMETRIC)) return res;
  if (shimGroupDepth == 0) {
    const shimWindow w = {comm, *win, buff, size};
    shimWindowsAdded(1, &w);
  } else if (npendingWins < SHIM_MAX_PENDING_WINDOWS) {
    pendingSlots[npendingWins] = win;
    pendingWins[npendingWins++] = (shimWindow){comm, NULL, buff, size};
  } else {
    shimLogOnce(SHIM_LOG_WARN,
                "ncclCommWindowRegister: more than %d windows registered in one group: "
                "the rest stay with kiln's staging",
                SHIM_MAX_PENDING_WINDOWS);
  }
  return res;
}
SHIM_TWIN(ncclResult_t, ncclCommWindowRegister,
          (ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win, int winFlags))

SHIM_EXPORT ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) {
  if (!kiln_off()) shimWindowRemoved(comm, win);
  ncclResult_t res;
  SHIM_REAL(res, ncclCommWindowDeregister, (comm, win), shimMissing("ncclCommWindowDeregister"));
  return res;
}
SHIM_TWIN(ncclResult_t, ncclCommWindowDeregister, (ncclComm_t comm, ncclWindow_t win))

/* The application's symmetric memory: its extent is remembered at allocation, so that a window
 * left registered over it is forgotten when it is freed (kiln's own calls pass straight through). */
SHIM_EXPORT ncclResult_t ncclMemAlloc(void** ptr, size_t size) {
  ncclResult_t res;
  SHIM_REAL(res, ncclMemAlloc, (ptr, size), shimMissing("ncclMemAlloc"));
  if (res == ncclSuccess && ptr && *ptr && shimPassthrough == 0 && !kiln_off()) shimMemAllocated(*ptr, size);
  return res;
}
SHIM_TWIN(ncclResult_t, ncclMemAlloc, (void** ptr, size_t size))

SHIM_EXPORT ncclResult_t ncclMemFree(void* ptr) {
  if (ptr && shimPassthrough == 0 && !kiln_off()) shimMemFreeing(ptr);
  ncclResult_t res;
  SHIM_REAL(res, ncclMemFree, (ptr), shimMissing("ncclMemFree"));
  return res;
}
SHIM_TWIN(ncclResult_t, ncclMemFree, (void* ptr))

/* At the outermost group end: adds the group's windows once their registration completed (all
 * at once: the ranks agree on them in one grouped call). */
static void windows_closed(bool ready) {
  const int n = npendingWins;
  npendingWins = 0;
  if (!ready || kiln_off() || n == 0) return;
  int m = 0;
  for (int i = 0; i < n; i++)
    if (*pendingSlots[i]) {
      pendingWins[m] = pendingWins[i];
      pendingWins[m++].win = *pendingSlots[i];
    }
  shimWindowsAdded(m, pendingWins);
}

SHIM_EXPORT ncclResult_t ncclGroupEnd(void) {
  ncclResult_t res;
  bool nested = shimPassthrough > 0;
  /* The outermost end of a group in which kiln took calls: each communicator's streams wait for
   * each other's earlier work before NCCL's and kiln's launches, and again after them. */
  const int nd = !nested && shimGroupDepth == 1 ? ndeferred : 0;
  const bool joinedBefore = nd == 0 || group_join(nd, true);
  SHIM_REAL(res, ncclGroupEnd, (), shimMissing("ncclGroupEnd"));
  if (nested) return res;
  group_closed(res == ncclSuccess);
  if (shimGroupDepth == 0) windows_closed(res == ncclSuccess);
  /* kiln's calls run whatever became of NCCL's part: the peers run theirs too. */
  if (shimGroupDepth == 0 && ndeferred > 0) {
    ncclResult_t k = launch_deferred();
    if (res == ncclSuccess) res = k;
  }
  /* launch_deferred reset ndeferred; deferred[0..nd) are as they were. A failed join leaves streams
   * that may not wait for the group's calls: the group fails (its launches went, the peers need
   * them), as a CUDA error in NCCL's own end would. */
  const bool joinedAfter = nd == 0 || group_join(nd, false);
  if (res == ncclSuccess && !(joinedBefore && joinedAfter)) res = ncclUnhandledCudaError;
  if (shimGroupDepth == 0) {
    ngroupStreams = 0;
    groupStreamsFull = false;
  }
  return res;
}
SHIM_TWIN(ncclResult_t, ncclGroupEnd, (void))

SHIM_EXPORT ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t* simInfo) {
  ncclResult_t res;
  bool nested = shimPassthrough > 0;
  SHIM_REAL(res, ncclGroupSimulateEnd, (simInfo), shimMissing("ncclGroupSimulateEnd"));
  /* A simulated end closes the group without running it. */
  if (!nested) {
    group_closed(false);
    if (shimGroupDepth == 0) {
      ndeferred = 0;
      ngroupStreams = 0;
      groupStreamsFull = false;
      windows_closed(false);
    }
  }
  return res;
}
SHIM_TWIN(ncclResult_t, ncclGroupSimulateEnd, (ncclSimInfo_t * simInfo))
