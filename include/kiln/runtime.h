/*
 * The GPU runtime: kiln communicators over NCCL communicators, plans loaded onto the GPU, and
 * collective calls that run a whole plan in one kernel launch through NCCL's transport (peer
 * memory of a symmetric NCCL window).
 *
 * Calls are asynchronous like NCCL's: kilnRun only enqueues on the stream; errors that happen on
 * the GPU later (a peer that never arrives) are read with kilnCommGetAsyncError. Calls on one
 * communicator run in the order they were issued, also across streams (outside graph capture).
 * Sequence numbers live in device memory, so a captured call replays correctly.
 *
 * Threads: as with NCCL, one communicator takes one call at a time. Calls on it (kilnRun,
 * kilnSymRun, kilnPlanLoad, kilnExecFree, the window functions, kilnCommDestroy) must not run
 * concurrently from several threads: they share its host state unlocked (the last call's stream
 * and event, an exec's scratch buffer), so the caller serializes them, and every rank must issue
 * its calls in the same order. Different communicators may be driven from different threads at
 * once. The one exception is kilnCommAbort, which may come from any thread at any time (below).
 * kilnGroupStart/End are per thread.
 *
 * The defaults below were chosen by measurement on H100/H200 machines; the figures are in
 * kernels/PERF.md and the symmetric kernels' size thresholds in host/sym.c.
 *
 * Ownership: a kilnComm_t is created by kilnCommCreate/kilnCommCreateAll and freed with
 * kilnCommDestroy (the ncclComm_t it wraps stays the caller's and must outlive it, unless
 * kilnCommAbort stopped it: below). A kilnExec_t
 * is created by kilnPlanLoad, copies what it needs from the plan (the plan may be freed right
 * after) and is freed with kilnExecFree before its communicator is destroyed.
 *
 * Every function returning kilnResult_t leaves a message in kilnLastError() on failure.
 * KILN_ERR_UNSUPPORTED means "use NCCL instead" (old/new NCCL, no symmetric memory support,
 * ranks not all reachable by NVLink peer pointers, plan shape the runtime cannot run).
 */
#ifndef KILN_RUNTIME_H
#define KILN_RUNTIME_H

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "kiln/plan.h"
#include "kiln/registry.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kilnComm* kilnComm_t;
typedef struct kilnExec* kilnExec_t;

#define KILN_COMM_CONFIG_MAGIC 0x6b696c6eu /* "kiln" */

/* Communicator settings. Start from KILN_COMM_CONFIG_INITIALIZER and change fields. */
typedef struct kilnCommConfig {
  size_t size;      /* sizeof(kilnCommConfig) */
  unsigned magic;   /* KILN_COMM_CONFIG_MAGIC */
  int maxChannels;  /* channels (plan `chan` values) per peer pair; default 32, what the
                         * large-size plans use to fill a GPU's links. FIFO memory per GPU:
                         * nranks x maxChannels x nslots x slotBytes, 128 MiB x nranks by default */
  int nslots;       /* FIFO slots per connection; default 8 */
  size_t slotBytes; /* bytes per slot (LL carries half as much data); default 512 KiB. A step
                         * of Simple moves up to one slot */
  int threads;      /* threads per block; default 512 */
  int timeoutMs;    /* a kernel thread gives up waiting for a peer after this long; default
                         * 5000. One clock per thread and call: for a plan, the time a thread
                         * waits in all of a call's steps (a peer that comes late leaves the
                         * rest of the call less). Then the communicator is failed:
                         * kilnCommGetAsyncError says so and every later call returns
                         * KILN_ERR_TIMEOUT. NCCL's waits have no limit: the drop-in library
                         * waits as long unless KILN_TIMEOUT_MS is set */
  size_t symBytes;  /* staging memory per GPU for the symmetric-memory kernels (kilnSymRun),
                         * in the same window; two halves used by alternate calls or rounds.
                         * The small calls' LL and LL128 lines take staging of their own on top
                         * (at most symBytes each, none past 8 ranks). Default 128 MiB; 0 turns
                         * those kernels off (kilnSymSelect then says none) */
  int nodes;        /* the nodes the ranks form, each of nranks/nodes consecutive ranks. 0 (the
                         * default): KILN_EMULATE_NODES from the environment where set, else NCCL's
                         * view: the ranks that share memory (NCCL's load/store team) are a node.
                         * K >= 1: K nodes, whatever NCCL sees (emulated nodes: K groups of GPUs of
                         * one machine, the steps between them through NCCL's point-to-point calls as
                         * between hosts; each node must lie within NCCL's load/store team). A
                         * communicator of several nodes runs plans cut into phases: kernel phases
                         * over peer memory within each node, groups of ncclSend/ncclRecv between
                         * nodes, on the call's stream (host/internode.c); it has no symmetric-memory
                         * kernels (kilnSymSelect says none) and takes no windows (kilnCommWindowAdd) */
} kilnCommConfig;
#define KILN_COMM_CONFIG_INITIALIZER                                                                    \
  {                                                                                                     \
    sizeof(kilnCommConfig), KILN_COMM_CONFIG_MAGIC, 32, KILN_FIFO_DEPTH_DEFAULT, 512 * 1024, 512, 5000, \
        128u << 20, 0                                                                                   \
  }

/* Wraps `nccl` (one rank, its device must be current or is made current). Collective over the
 * NCCL communicator: every rank calls it. Blocks until the peers' memory is mapped. cfg may be
 * NULL for defaults. The ranks agree through NCCL (an allreduce of one int after each of the four
 * steps: local set-up, window registration, device communicator, peer addresses), so every rank
 * gets a communicator or none does: a rank that failed alone (a configuration out of range, out
 * of memory for the window) returns its own error, the others KILN_ERR_UNSUPPORTED naming the
 * step, instead of waiting for it in NCCL. (A rank that cannot even allocate the agreement's 4
 * bytes of device memory and a stream, first of all, fails alone and leaves its peers waiting.) */
KILN_API kilnResult_t kilnCommCreate(ncclComm_t nccl, const kilnCommConfig* cfg, kilnComm_t* out);
/* The same for one process driving all n ranks: out[i] wraps nccls[i]. The collective NCCL calls
 * are grouped (ncclGroupStart/End), so one thread can do it. When the n are every rank of their
 * communicator, each on its own GPU, and the GPUs can reach each other, it also turns peer access
 * on between them (cudaDeviceEnablePeerAccess; it stays on) and makes them a clique: a group
 * (kilnGroupStart/End) that holds one kilnSymRun call of every rank, all alike, lets those calls
 * go zero copy into each other's plain buffers, as on symmetric windows (kilnCommWindowAdd, below;
 * the same thresholds), where every GPU may write every rank's output (checked per allocation:
 * cudaMalloc memory is, a stream-ordered pool or a mapping without access for the peers is not
 * and stays staged; the answer is kept per GPU and allocation, so peer access must not be turned
 * off while the communicators live). All of those calls or none. KILN_SYM_PEERS=0: no clique. */
KILN_API kilnResult_t kilnCommCreateAll(int n, const ncclComm_t* nccls, const kilnCommConfig* cfg,
                                        kilnComm_t* out);
/* Frees the communicator after waiting for its work to finish. Not collective. NULL is a no-op. */
KILN_API kilnResult_t kilnCommDestroy(kilnComm_t comm);
/* Frees all n communicators (one process driving all ranks). */
KILN_API kilnResult_t kilnCommDestroyAll(int n, kilnComm_t* comms);
/* Stops the communicator for good, as ncclCommAbort does NCCL's (a peer gone, a job torn down):
 * its kernels waiting for a peer give up at once (their outputs undefined), every later call on
 * it is refused (KILN_ERR_INVALID_ARGUMENT), and nothing waits for the GPU or calls NCCL. Not
 * collective. Then abort (or destroy) the NCCL communicator, whose own kernels may be what kiln's
 * wait behind, and free this one with kilnExecFree and kilnCommDestroy (or DestroyAll): on an
 * aborted communicator they make no NCCL call (ncclCommAbort freed NCCL's side) and free kiln's
 * memory, window included (NCCL 2.28.9 keeps its own mapping of the registered window after
 * ncclCommAbort, so the window's memory only comes back at the process's end unless
 * kilnCommAbortRelease deregistered it before; the rest does).
 * Those frees wait for the whole GPU (cudaFree does), so make them once
 * every communicator whose kernels might wait for a dead peer is aborted too, or from a thread
 * that may block (the drop-in library frees from a thread of its own). A call queued in a group
 * before the abort is not launched at kilnGroupEnd (KILN_ERR_INVALID_ARGUMENT). It may be called
 * from another thread (a watchdog) while calls on the communicator are made or queued: those are
 * refused from then on, and a kernel already issued leaves when it next waits for a peer; free the
 * communicator only once those calls have returned. NULL is a no-op. */
KILN_API kilnResult_t kilnCommAbort(kilnComm_t comm);
/* After kilnCommAbort, while the NCCL communicator still exists (before ncclCommAbort, or before
 * the ncclCommDestroy that follows ncclCommRevoke): waits up to waitMs for the communicator's
 * kernels to leave, then deregisters kiln's window from NCCL (ncclCommWindowDeregister: a local
 * call in NCCL 2.28, this rank's mappings and its reference only), so that kilnCommDestroy gives
 * its memory back (once the peers let go of theirs too) instead of leaving it mapped by NCCL to
 * the end of the process. NCCL allows no more after its abort: ncclCommAbort frees the window's
 * handle with the communicator but keeps the mapping. KILN_ERR_TIMEOUT: a kernel is still queued
 * (behind work that waits for a dead peer until NCCL's abort stops it); the window stays
 * registered, as without this call. Not collective; makes no other NCCL call. */
KILN_API kilnResult_t kilnCommAbortRelease(kilnComm_t comm, int waitMs);
KILN_API int kilnCommRank(kilnComm_t comm);
KILN_API int kilnCommSize(kilnComm_t comm);
/* The nodes the communicator's ranks form (kilnCommConfig.nodes as it was settled at creation; 1:
 * every rank reaches every other by load/store), -1 for NULL. */
KILN_API int kilnCommNodes(kilnComm_t comm);
/* KILN_SUCCESS, or the first error the GPU recorded (KILN_ERR_TIMEOUT: a peer never arrived;
 * the communicator is then unusable). Does not block. */
KILN_API kilnResult_t kilnCommGetAsyncError(kilnComm_t comm, kilnResult_t* asyncError);

/* Checks that this rank can run the plan on this communicator (ranks, channels, threadblocks,
 * steps, FIFO sizes) and uploads its part of the plan. Not collective; does not block the GPU.
 * Protocols: Simple and LL run as the plan says; LL128 plans of send and receive steps run as
 * Simple unless the environment has KILN_LL128=1 (the kernels' LL128 is experimental:
 * kernels/README.md). A plan with memory steps (plan.h: put, get, gre, sig, wait) runs in the
 * communicator's plan areas of its window (their size follows kilnCommConfig.symBytes; none on a
 * communicator of several nodes or more than 8 ranks: KILN_ERR_UNSUPPORTED), its put steps in
 * their own protocols (Simple, LL, LL12, LL128); its calls are refused (KILN_ERR_UNSUPPORTED) where
 * it reaches a peer's input or output that is not in a symmetric window every rank added
 * (kilnCommWindowAdd), and for LL12 lines of elements wider than 4 bytes. Every rank must run the
 * same calls of such plans in the same order (as NCCL's collectives): they count epochs together. */
KILN_API kilnResult_t kilnPlanLoad(kilnComm_t comm, const kilnPlan* plan, kilnExec_t* out);
KILN_API void kilnExecFree(kilnExec_t exec);

/* Baked kernels (gen/, kiln/registry.h): kilnPlanLoad binds the exec to the generated kernel of
 * a baked plan of the same shape (kilnRegistryBakedFor), whatever the plan's name or origin; calls
 * of a baked dtype (and sum/avg for plans that reduce) then launch it instead of the interpreter
 * (by default when gen/ inlined the plan's steps, kilnRegistryEntry.inlined; for the other
 * baked kernels the interpreter runs by default, being the faster there: kernels/PERF.md).
 * kilnExecUseBaked(exec, false) makes every call of this exec interpreted (benchmarks compare
 * both), true selects the baked kernel. Returns whether the exec has a baked kernel. */
KILN_API bool kilnExecUseBaked(kilnExec_t exec, bool on);

/* True when kilnRun can run `plan` for this call: the collective's count convention (see
 * kilnRun), a data type and op the runtime has, the plan's in-place/out-of-place form. A
 * predicate: sets no error. */
KILN_API bool kilnPlanSupports(const kilnPlan* plan, size_t count, kilnDataType_t dtype, kilnRedOp_t op,
                               bool inplace);

/* Whether x's scratch already holds a call of count elements of dtype, so that the call grows
 * nothing: the plan has no scratch on any rank, or an earlier call of x was at least as large per
 * chunk. The same on every rank that made the same calls of the plan (each tracks the largest of
 * them, whatever its own scratch), so the selector passes a captured call over alike everywhere
 * where the answer is no (kiln/registry.h, "The selector"). A predicate: sets no error. */
KILN_API bool kilnExecScratchHolds(kilnExec_t x, size_t count, kilnDataType_t dtype);

/* True when kilnRun would take this call on this exec: kilnPlanSupports' conditions, and what the
 * exec needs of the buffers (a plan with memory steps that reaches the peers' input or output needs
 * it in a symmetric window added to the communicator; its slices must fit the plan areas). The same
 * on every rank that added the same windows. A predicate: sets no error. */
KILN_API bool kilnExecServes(kilnExec_t exec, const void* sendbuf, const void* recvbuf, size_t count,
                             kilnDataType_t dtype, kilnRedOp_t op);

/* Runs the loaded plan on `stream`. count follows NCCL: allreduce: elements per rank;
 * allgather: sendcount; reducescatter: recvcount; alltoall: elements per peer. In place when the
 * buffers alias as NCCL defines (allreduce: sendbuf == recvbuf; allgather: sendbuf == recvbuf +
 * rank*count; reducescatter: recvbuf == sendbuf + rank*count). count 0 does nothing; a NULL
 * buffer for a call of elements is refused (KILN_ERR_INVALID_ARGUMENT), as kilnSymRun does. */
KILN_API kilnResult_t kilnRun(kilnExec_t exec, const void* sendbuf, void* recvbuf, size_t count,
                              kilnDataType_t dtype, kilnRedOp_t op, cudaStream_t stream);

/* Symmetric-memory kernels (kernels/sym.cuh): besides plans, kiln has one kernel per collective
 * that moves the whole call through a staging area in each GPU's window: every rank stores what
 * each peer needs straight into that peer's staging area, one flag per block and peer says it is
 * there, and the peer combines the staged data with its own locally (one flag round trip per
 * phase instead of one handshake per FIFO slot and step). Allreduce has two forms: one-shot
 * (every input to every peer; each rank reduces all of them) and two-shot (rank q reduces share
 * q of every input, then sends the result to every peer). They need every rank to run the same
 * calls (as NCCL does), kilnCommConfig.symBytes of staging, and the same settings on every rank:
 * KILN_SYM and the KILN_SYM_* settings are read once per communicator at its creation
 * (kernels/README.md, host/sym.c). Like plans, the calls of one communicator must not run
 * concurrently, on the host (above) or on the GPU: under stream capture, capture them in one
 * stream (kiln orders eager calls across streams itself, not captured ones). */
/* kilnSymAlgo_t and kilnSymAlgoName: kiln/registry.h (the selector's vocabulary). */

/* The selector: what serves a collective call on a communicator, by the rule kiln/registry.h
 * states ("The selector"; host/select.c). The drop-in library and the benchmarks ask it and hold no
 * policy of their own. plans: the candidate plans, n registry entries the caller can run on comm
 * (the plans it loaded and, where it has them, their plans and execs: then a captured call must
 * fit a plan's scratch, kilnExecScratchHolds); NULL: every registry entry of comm's rank count made for comm's nodes,
 * checked by kilnPlanSupports only. The answer names the entry (and its index in plans), the
 * symmetric algorithm, or NCCL, and why. comm NULL: NCCL. The same on every rank for the same
 * call where every rank gives the same candidates. A predicate: sets no error, does not block. */
typedef struct kilnPlanSet {
  int n;
  const kilnRegistryEntry* const* entries; /* [n] */
  const kilnPlan* const* plans;            /* NULL, or [n]: entries[i]'s plan (else kilnRegistryPlan) */
  const kilnExec_t* execs;                 /* NULL, or [n]: entries[i]'s exec on comm */
} kilnPlanSet;
KILN_API kilnChoice kilnSelect(kilnComm_t comm, const kilnPlanSet* plans, const kilnCall* call);
/* The symmetric-memory algorithm whose size range (the selector's table, host/select.c)
 * takes this call where the staging memory holds it, or KILN_SYM_NONE. KILN_SYM=0 makes it always
 * KILN_SYM_NONE. Whether it serves the call is kilnSelect's to say (loaded plans come first). The
 * same on every rank for the same call. A predicate: sets no error. */
KILN_API kilnSymAlgo_t kilnSymSelect(kilnComm_t comm, kilnColl_t coll, size_t count, kilnDataType_t dtype,
                                     bool inplace);
/* Whether `algo` can run this call on this communicator at all (staging memory, ranks, form),
 * whatever the default choice. A predicate: sets no error. */
KILN_API bool kilnSymFits(kilnComm_t comm, kilnSymAlgo_t algo, size_t count, kilnDataType_t dtype,
                          bool inplace);
/* Runs the call with `algo` on `stream` (one kernel launch; inside kilnGroupStart/End it is
 * queued like kilnRun's). count and the in-place forms as kilnRun's. Every rank must run the
 * same algorithm for the call. */
KILN_API kilnResult_t kilnSymRun(kilnComm_t comm, kilnSymAlgo_t algo, const void* sendbuf, void* recvbuf,
                                 size_t count, kilnDataType_t dtype, kilnRedOp_t op, cudaStream_t stream);

/* Outputs in the caller's symmetric windows: zero copy. When a call's output lies in a window the
 * caller registered with ncclCommWindowRegister(..., NCCL_WIN_COLL_SYMMETRIC) and added here,
 * kilnSymRun (from KILN_SYM_DIRECT_BYTES of reference bytes; default 16 MiB on 2 ranks, 1 MiB on
 * 4, off on 8: host/sym.c; alltoall from KILN_SYM_DIRECT_A2A_BYTES, default 4 MiB on 4 ranks) has
 * the peers store into it directly (kernels/sym.cuh): allgather and alltoall with no staging at
 * all, allreduce (as two-shot) with its reduced shares stored straight into every output instead
 * of a second staging phase and copy, and from KILN_SYM_AR_CE_BYTES (default 512 MiB on 2 and 4
 * ranks; KILN_SYM_AR_CE=0 never) as a staged reducescatter of this rank's share followed by the
 * copy engine's copies of it into the peers' outputs (counts that divide into equal shares of
 * whole 16-byte packs); reducescatter stays staged. NCCL's rule for such windows
 * holds: a call's buffers lie at the same offset in their window on every rank. kiln's libnccl.so.2 adds every window registered through
 * it this way (after the registration's group ends). KILN_SYM_DIRECT=0: never direct. From
 * KILN_SYM_CE_BYTES (default 128 MiB on 2 and 4 ranks, off on others) direct allgather
 * and alltoall copy to the peers with the copy engine, between two kernels of one block that meet
 * the peers before and after (KILN_SYM_CE=0: never); unlike the kernels' stores, those copies
 * cannot be called off: a call issued after the communicator failed skips them, but one already
 * issued, or a captured graph replayed, copies into the peers' outputs even when its meeting timed
 * out (the communicator is broken then).
 * kilnCommWindowAdd reads the peers' addresses of `win` (a small kernel on a stream of its own;
 * it blocks until that is done); `base` and `bytes` must be those given to ncclCommWindowRegister.
 * Call it on every rank after the registration completed (after ncclGroupEnd when it was
 * grouped), and every rank must succeed: ranks that disagree on whether a call goes direct wait
 * for each other until the timeout (the drop-in checks this through NCCL and removes a window
 * that any rank could not add). kilnCommWindowRemove before ncclCommWindowDeregister, once no call
 * using the window is in flight or captured in a graph that will still run. Neither may run
 * concurrently with calls on `comm`. */
KILN_API kilnResult_t kilnCommWindowAdd(kilnComm_t comm, ncclWindow_t win, void* base, size_t bytes);
KILN_API kilnResult_t kilnCommWindowRemove(kilnComm_t comm, ncclWindow_t win);
/* Forgets every added window that overlaps [base, base + bytes) (memory about to be freed: a
 * window left over it would map a later buffer at that address to the peers' old memory) and
 * returns how many. As with kilnCommWindowRemove, every rank must forget the same windows before
 * its next call on them (ranks that disagree on direct or staged wait for each other until the
 * timeout). Where windows overlap a call takes the newest that holds its output. */
KILN_API int kilnCommWindowForget(kilnComm_t comm, const void* base, size_t bytes);
/* How many windows are added to comm. */
KILN_API int kilnCommWindowCount(kilnComm_t comm);
/* Whether kilnSymRun would run this call direct (a predicate: sets no error). */
KILN_API bool kilnSymIsDirect(kilnComm_t comm, kilnSymAlgo_t algo, const void* sendbuf, const void* recvbuf,
                              size_t count, kilnDataType_t dtype);

/* Groups, as NCCL's ncclGroupStart/End: between kilnGroupStart and the matching kilnGroupEnd,
 * kilnRun checks its call and queues the launch (errors in the call's arguments return at once);
 * the outermost kilnGroupEnd issues the queued launches, each GPU's in call order, and returns
 * once every one is on its stream. GPUs are issued in parallel from one launcher thread per GPU
 * (host/group.c), so one thread driving N GPUs pays about one kernel launch of host time per
 * group instead of N. KILN_GROUP_THREADS=0: the calling thread issues every launch, in call
 * order. KILN_GROUP_SPIN_US (default 200): how long an idle launcher spins before it sleeps (a
 * sleeping one is not waited for: the calling thread issues its GPU).
 * kilnGroupEnd returns the first failure of a queued launch (the others are still issued).
 * Nothing queued may be freed (exec, communicator, buffers) before kilnGroupEnd; a stream's
 * other work issued inside the group runs before kiln's, as with NCCL. A call is captured when
 * its stream is capturing at the outermost kilnGroupEnd (NCCL's rule), whatever it was when the
 * call was queued; a stream whose capture state cannot be read there fails the group before
 * anything is launched. Groups are per thread. */
KILN_API kilnResult_t kilnGroupStart(void);
KILN_API kilnResult_t kilnGroupEnd(void);
/* Inside a group: a call of the group failed without reaching kilnRun (the caller dropped it),
 * with code r and this thread's kilnLastError as its text. As for a failing kilnRun, the
 * outermost kilnGroupEnd then launches none of the group and returns r: the peers of the
 * dropped call must not wait for it. Outside a group, or with KILN_SUCCESS, it does nothing. */
KILN_API void kilnGroupFail(kilnResult_t r);

#ifdef __cplusplus
}
#endif
#endif /* KILN_RUNTIME_H */
