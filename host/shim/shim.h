/*
 * Internals of kiln's drop-in libnccl.so.2, shared by its three parts:
 *   shim_loader.c   settings, the "kiln:" logger, finding and loading the real NCCL
 *   shim_exports.c  every exported ncclXxx/pncclXxx: forwarders and the hooked functions
 *   shim_kiln.c     kiln's side: communicators over the real ncclComm_t, plan choice, launch
 *
 * Recursion rule: a thread that is inside the real NCCL (called by a hooked function) or inside
 * kiln's runtime has shimPassthrough > 0; every exported function then goes straight to the real
 * NCCL. So the real NCCL calling its own exported API, and kiln's runtime calling ncclMemAlloc,
 * ncclCommWindowRegister or even ncclAllReduce, never come back into kiln's decisions.
 */
#ifndef KILN_SHIM_H
#define KILN_SHIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shim_api.h"

#define SHIM_EXPORT __attribute__((visibility("default")))

/* ---- the real NCCL ---- */

typedef struct shimReal {
#define SHIM_X_PTR(ret, name, params, args, missing) ret(*name) params;
  KILN_SHIM_ALL(SHIM_X_PTR)
#undef SHIM_X_PTR
#define SHIM_X_VOID_PTR(name) void (*name)(void);
  KILN_SHIM_VOID(SHIM_X_VOID_PTR)
#undef SHIM_X_VOID_PTR
  void* handle;    /* dlopen handle, NULL when no real NCCL could be loaded */
  char path[4096]; /* full path it was loaded from */
  int version;     /* its ncclGetVersion, 0 if unknown */
} shimReal;

/* Loads the real NCCL once (thread-safe) and returns the table; its handle is NULL on failure,
 * with the reason in shimLoadError(). Never fails otherwise. */
const shimReal* shimRealGet(void);
const char* shimLoadError(void);

/* What a function returns when the real NCCL or that function in it is missing: logs the cause
 * once and returns ncclSystemError (no library) or ncclInvalidUsage (function absent). */
ncclResult_t shimMissing(const char* fn);
/* ncclGetErrorString / ncclGetLastError when there is no real NCCL. */
const char* shimErrorString(ncclResult_t r);
const char* shimLastError(void);

/* ---- settings (from kiln's table of settings, solver/params.h) ---- */

typedef enum { SHIM_LOG_NONE, SHIM_LOG_ERROR, SHIM_LOG_WARN, SHIM_LOG_INFO } shimLogLevel;

typedef struct shimConfig {
  bool disable;         /* KILN_DISABLE=1: forward everything */
  shimLogLevel log;     /* KILN_DEBUG=NONE|ERROR|WARN|INFO (default ERROR) */
  const char* ncclPath; /* KILN_NCCL_PATH or NULL */
  const char* plansDir; /* KILN_PLANS or NULL */
  int timeoutMs;        /* KILN_TIMEOUT_MS (1..INT_MAX): how long a kiln kernel waits for a
                             * peer; default INT_MAX (about 25 days): as NCCL, a wait ends when
                             * the peer comes or the communicator is aborted (PyTorch's watchdog
                             * aborts it after the process group's timeout) */
} shimConfig;

const shimConfig* shimConfigGet(void);

/* "kiln: <message>" on stderr when level is enabled. */
void shimLog(shimLogLevel level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
/* Same, but only the first time this exact message is produced (one line per decision kind). */
void shimLogOnce(shimLogLevel level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
/* Same, but only the first time for this key (the message may carry details of the first call). */
void shimLogKeyed(shimLogLevel level, const char* key, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The message of kiln's last failed call on this thread ("" if none since this thread's last
 * collective); ncclGetLastError returns it before the real NCCL's. */
extern _Thread_local char shimKilnError[512];

/* ---- recursion guard ---- */

extern _Thread_local int shimPassthrough;
/* Depth of ncclGroupStart on this thread (not counting the real NCCL's own nested groups). */
extern _Thread_local int shimGroupDepth;

/* ---- kiln's side (shim_kiln.c) ---- */

typedef struct shimComm shimComm;

/* The collectives kiln may take; the rest always go to NCCL. */
typedef enum {
  SHIM_ALLREDUCE,
  SHIM_ALLGATHER,
  SHIM_REDUCESCATTER,
  SHIM_ALLTOALL,
} shimColl;

typedef struct shimCall {
  shimColl coll;
  const void* sendbuff;
  void* recvbuff;
  size_t count; /* as NCCL counts it: allgather sendcount, reducescatter recvcount */
  ncclDataType_t datatype;
  ncclRedOp_t op; /* ncclSum for allgather and alltoall */
  ncclComm_t comm;
  cudaStream_t stream;
} shimCall;

/* Sets up kiln on a communicator that the real NCCL just created (all ranks call this in the same
 * order, as they called the init). Failure is not an error for the caller: the communicator then
 * simply runs on NCCL, and the reason is logged at WARN. */
void shimCommCreated(ncclComm_t comm);
/* For ncclCommInitAll: the ndev communicators of one process, set up together. */
void shimCommsCreated(ncclComm_t* comms, int n);
/* Tears kiln down before the real finalize/destroy (collective: every rank calls it). */
void shimCommRelease(ncclComm_t comm);
/* Before the real abort, revoke or aborting shrink: stops kiln's kernels waiting on peers at once
 * (kilnCommAbort: no NCCL call) and keeps kiln's part of the communicator for shimCommGone.
 * `release` (before ncclCommAbort, after which NCCL allows no deregistration): also deregisters
 * kiln's window once kiln's kernels left (kilnCommAbortRelease, up to KILN_ABORT_WAIT_MS), so that
 * its memory comes back when kiln's part is freed. */
void shimCommAbort(ncclComm_t comm, bool release);
/* Before the real ncclCommDestroy of a communicator whose kiln part was aborted (after
 * ncclCommRevoke or an aborting ncclCommShrink, which leave the NCCL communicator to destroy):
 * deregisters kiln's window as shimCommAbort's `release` does. */
void shimCommAbortedRelease(ncclComm_t comm);
/* After the real ncclCommAbort or ncclCommDestroy returned: frees kiln's part of an aborted
 * communicator (its window and buffers; once NCCL's abort has stopped NCCL's kernels, kiln's,
 * which may have waited behind them, can leave). */
void shimCommGone(ncclComm_t comm);
/* A window registered on comm with NCCL_WIN_COLL_SYMMETRIC over [buff, buff + size). */
typedef struct shimWindow {
  ncclComm_t comm;
  ncclWindow_t win;
  void* buff;
  size_t size;
} shimWindow;
/* Windows whose registration is complete (after their group): kiln's communicators add them
 * (kilnCommWindowAdd), so calls whose output is in one go zero copy; then the ranks agree through
 * NCCL (collective, as the registration was), and a window that any rank could not add is removed
 * on all, logged at WARN: its calls stay on kiln's staging. */
void shimWindowsAdded(int n, const shimWindow* w);
/* Before the real deregistration: kiln forgets the window. */
void shimWindowRemoved(ncclComm_t comm, ncclWindow_t win);
/* After a successful ncclMemAlloc by the application: remembers the allocation's extent. */
void shimMemAllocated(void* ptr, size_t size);
/* Before the application's ncclMemFree: kiln forgets every window over that allocation (memory
 * freed without deregistering its windows first; a later allocation at the same address must not
 * be taken for one of them). */
void shimMemFreeing(void* ptr);
/* kiln's own asynchronous error on this communicator (ncclSuccess if none or unknown comm). */
ncclResult_t shimCommAsyncError(ncclComm_t comm);
/* Decides the call: true when kiln takes it (a plan matches; then, with launch, it is run on the
 * call's stream and *res is the result, and *held a reference to give back), false when it must
 * go to NCCL (the reason logged once at INFO). Without launch only decides (*res = ncclSuccess):
 * the same decision again later, with launch, runs it. */
bool shimTryKiln(const shimCall* call, bool launch, ncclResult_t* res, shimComm** held);
/* Gives back the reference shimTryKiln took when it launched (or queued, in a kiln group) a call:
 * *held, set then and only then; NULL is a no-op. An aborted communicator's kiln part is freed
 * once its NCCL communicator is gone and no reference is left. */
void shimCommUnref(shimComm* sc);
/* Around the launches of a group's deferred calls: kiln queues them and issues them together at
 * the end, GPUs in parallel (kilnGroupStart/End). `failed`: a call of the group failed or was
 * dropped: none of the group launches (kilnGroupFail), and the caller's earlier error stays the
 * one reported. Otherwise the end returns its own failure and reports it (error text, log). */
void shimKilnGroupStart(void);
ncclResult_t shimKilnGroupEnd(bool failed);

#endif /* KILN_SHIM_H */
