/* kilnRun's launches and the groups that queue them: what exec.c and group.c share. */
#ifndef KILN_HOST_LAUNCH_H
#define KILN_HOST_LAUNCH_H

#include "kiln/registry.h"
#include "kiln_dev.h"
#include "runtime_internal.h"

/* A call of a plan cut into phases (internode.c): what kilnPhasedRun was given. */
typedef struct kilnPhasedCall {
  struct kilnPhased* px;
  const void* sendbuf;
  void* recvbuf;
  size_t count;
  int op;
} kilnPhasedCall;

/* One kernel launch of kilnRun, prepared on the calling thread and issued now or, inside a
 * kilnGroupStart/End pair, at the outermost kilnGroupEnd (group.c). */
typedef struct kilnLaunch {
  struct kilnComm* comm;
  cudaStream_t stream;
  kilnBakedLaunch_t baked; /* the plan's generated kernel, NULL: the interpreter for dtype */
  int dtype, threads;
  bool capturing; /* stream capture: no ordering event; issued by the calling thread (read
                            * when issued alone, at the group's end in a group) */
  bool sym;       /* the symmetric-memory kernel with symArgs, else a plan with args */
  bool phased;    /* a call of a plan cut into phases (call): its kernels and NCCL groups,
                            * issued at the group's end after the other launches (kilnPhasedIssue) */
  bool mem;       /* a plan with memory steps (kernels/mem.cuh): baked, or the interpreter of
                            * lines args.proto (KILN_DEV_PROTO_*) */
  bool peerCand;  /* sym, staged: may go direct into the clique's buffers at the group's
                            * end (kilnSymGroupPeers) */
  int symAlgo;    /* sym: the caller's algorithm */
  union {
    kilnDevArgs args;
    kilnSymArgs symArgs;
    kilnPhasedCall call;
  };
} kilnLaunch;

/* A plan's scratch buffer: grown on demand (kilnScratchGrow: to need bytes, at least doubling
 * where memory allows), the buffers it replaced kept until kilnScratchFree (a captured graph or a
 * queued launch may still use them). Zeroed: empty. */
typedef struct kilnScratch {
  char* p;
  size_t bytes;
  char** retired;
  int nretired;
  /* What every rank tracks alike, whatever its own share of the plan's scratch (the selector's
   * kilnExecScratchHolds): whether the plan has scratch on any rank, and the largest piece (a
   * chunk's bytes of a call, kilnScratchPiece) of the calls made so far. */
  bool any;
  size_t piece;
} kilnScratch;
kilnResult_t kilnScratchGrow(kilnScratch* s, size_t need, int rank);
void kilnScratchFree(kilnScratch* s);
/* A chunk's bytes in a call of count elements of es bytes over k chunks per buffer block: the
 * elements of a chunk rounded up to whole 16-byte packs. Scratch takes a plan's chunks of it. */
static inline size_t kilnScratchPiece(size_t count, size_t k, size_t es) {
  const size_t L = (count + k - 1) / k, vec = 16 / es;
  return (L + vec - 1) / vec * vec * es;
}
/* Notes a call's piece (after its scratch grew to hold it); whether s already holds a call's
 * piece on every rank (no rank's scratch must grow: see kilnScratch.piece). */
static inline void kilnScratchNote(kilnScratch* s, size_t piece) {
  if (piece > s->piece) s->piece = piece;
}
static inline bool kilnScratchHolds(const kilnScratch* s, size_t piece) {
  return !s->any || piece <= s->piece;
}

/* exec.c: loads p as one kernel on c, whatever c's nodes (kilnPlanLoad's work for a communicator
 * of one node; internode.c loads each kernel phase with it). */
kilnResult_t kilnExecLoadPart(kilnComm_t c, const kilnPlan* p, kilnExec_t* out);
/* exec.c: kilnRun's checks and launch for x with the scratch buffer given (sized by the caller),
 * not issued; *none when there is nothing to launch on this rank. l->capturing is the caller's. */
kilnResult_t kilnExecPartLaunch(kilnExec_t x, const void* sendbuf, void* recvbuf, size_t count,
                                kilnDataType_t dtype, kilnRedOp_t op, cudaStream_t stream, char* scratch,
                                kilnLaunch* l, bool* none);

/* internode.c: a plan cut into phases on a communicator of several nodes (solver/phases.h).
 * kilnPhasedLoad cuts it for c's nodes and loads this rank's kernel phases; kilnPhasedRun is
 * kilnRun for it: issued now (kernels and ncclGroupStart/ncclSend/ncclRecv/ncclGroupEnd on the
 * stream, in phase order), or queued in this thread's kiln group; kilnPhasedIssue issues a group's
 * queued calls (v[0..n), in call order), the k-th call of every communicator together phase by
 * phase, each group of NCCL calls of all of them in one ncclGroupStart/End (one thread may drive
 * several ranks). */
struct kilnPhased;
kilnResult_t kilnPhasedLoad(struct kilnComm* c, const kilnPlan* p, struct kilnPhased** out);
void kilnPhasedFree(struct kilnPhased* px);
kilnResult_t kilnPhasedRun(struct kilnPhased* px, const void* sendbuf, void* recvbuf, size_t count,
                           kilnDataType_t dtype, kilnRedOp_t op, cudaStream_t stream);
kilnResult_t kilnPhasedIssue(kilnLaunch* v, size_t n);
/* kilnExecScratchHolds for a plan cut into phases (its one scratch for every phase). */
bool kilnPhasedScratchHolds(const struct kilnPhased* px, size_t count, kilnDataType_t dtype);

/* exec.c: issues l on its stream: waits for the communicator's previous call, launches, records
 * the call's end. The current device must be l->comm's. */
kilnResult_t kilnLaunchIssue(kilnLaunch* l);
/* sym.c: issues a symmetric-memory call (l->sym): its kernel, or for the copy-engine form of a
 * direct call (l->symArgs.direct == KILN_SYM_DIRECT_ARRIVE, kernels/sym_ce.h) two kernels and the
 * copies between them, or for reduce-then-copy (KILN_SYM_DIRECT_REDUCE_CE)
 * the reducescatter kernel, the copies and the DONE meeting. Returns a cudaError_t value. */
int kilnSymIssue(kilnLaunch* l);
/* What kilnRun and kilnSymRun share around a launch (exec.c). kilnEnterDevice makes c's device
 * current where the call needs it (issued now, not queued in a group, or `also`, e.g. an
 * allocation) and returns the device kilnLeaveDevice restores. kilnLaunchCapture sets
 * l->capturing from l's stream (a default-stream handle: that of the current device).
 * kilnLaunchSubmit queues l in this thread's group, whose end makes each call's device current
 * where its stream is a default-stream handle and reads the capture state (group.c: a capture
 * begun or ended between a call and the group's end counts, as NCCL's does), or reads it and
 * issues l now. */
int kilnEnterDevice(const struct kilnComm* c, bool also);
void kilnLeaveDevice(const struct kilnComm* c, int save);
/* Before freeing what c's calls use (an exec's tables, a plan's scratch): makes c's device
 * current and waits for c's last call; returns the device kilnLeaveDevice restores. */
int kilnEnterDeviceIdle(const struct kilnComm* c);
/* Whether a plan of collective coll that serves serves[inplace] (kilnPlanServes; inplaceForm:
 * kilnPlanInPlaceOnly) takes rank's call of that form: KILN_SUCCESS, or KILN_ERR_UNSUPPORTED with
 * the reason (none with quiet). */
kilnResult_t kilnPlanFormCheck(kilnColl_t coll, int rank, bool inplace, bool inplaceForm,
                               const bool serves[2], bool quiet);
kilnResult_t kilnLaunchCapture(kilnLaunch* l);
kilnResult_t kilnLaunchSubmit(kilnLaunch* l);
/* sym.c, at the outermost kilnGroupEnd before anything is issued: where a group holds the k-th
 * call of every rank of a clique (runtime_internal.h), all candidates (peerCand) of the same
 * algorithm, count, type and op, and every rank's GPU can reach every peer's output (`access`),
 * those calls go direct (zero copy) into each other's outputs, all of them or none, as on windows
 * (kernels/sym.cuh bodyDirect and body, the copy-engine form from KILN_SYM_CE_BYTES, allreduce as
 * reduce-then-copy from KILN_SYM_AR_CE_BYTES). */
KILN_INTERNAL void kilnSymGroupPeers(kilnLaunch* v, size_t n, kilnPeerAccessFn access);
/* sym.c: the geometry kilnSymRun gives a staged call of algorithm a (seg, total, rounds, ll,
 * region, nblocks of g); false where the call does not fit (kilnSymFits). */
KILN_INTERNAL bool kilnSymStagedGeometry(kilnComm_t c, kilnSymAlgo_t a, size_t count, kilnDataType_t dtype,
                                         bool inplace, kilnSymArgs* g);
/* Frees this thread's index of kilnSymGroupPeers (sym.c); group.c calls it when the thread ends. */
void kilnSymFreeThreadScratch(void);
/* Marks this thread as holding scratch of the group machinery (group.c's lists, sym.c's index),
 * so that it is freed when the thread ends. */
void kilnThreadScratchUsed(void);
/* kernels/launch_driver.cu: whether the symmetric kernels may launch through the driver's
 * cuLaunchKernelEx (1) or only through the runtime (0); process-wide. */
void kilnLaunchDriverUse(int on);
/* group.c: whether this thread is inside kilnGroupStart/End; queues l for kilnGroupEnd (a
 * failed call of the group: kilnGroupFail, kiln/runtime.h). */
bool kilnGroupActive(void);
kilnResult_t kilnGroupQueue(const kilnLaunch* l);
/* The default-stream handles (0, cudaStreamLegacy, cudaStreamPerThread) name a stream through
 * the calling thread's current device (and thread): their launches are issued by the thread that
 * called kilnRun, never by a launcher thread. */
static inline bool kilnStreamIsSpecial(cudaStream_t s) {
  return s == 0 || s == cudaStreamLegacy || s == cudaStreamPerThread;
}

#endif
