/*
 * A plan cut at node boundaries: what each rank runs when some of its peers are on other nodes.
 *
 * Between nodes there is no load/store, so kiln's runtime (host/internode.c) runs a plan there as
 * a sequence of phases, the same numbering on every rank: kernel phases, each a plan of its own
 * (the sub-plan: the steps whose peers share a node, run by kiln's kernels over peer memory), and
 * point-to-point phases, each one group of NCCL sends and receives (ncclGroupStart, ncclSend /
 * ncclRecv, ncclGroupEnd) with peers on other nodes. All go on the call's stream in phase order,
 * so a call stays one stream's work (CUDA-graph capturable). A rank runs only the phases it has
 * work in.
 *
 * The cut (kilnPhasesBuild):
 * - A step whose peer is on another node becomes a send or receive of the whole chunk range (every
 *   slice at once). A fused step across the boundary is split: a receive into place (r, rcs) or
 *   into fresh scratch (the reducing ones: rrc, rrs, rrcs), a local step (re, cpy) and a send
 *   (of the stored result, or of the scratch that holds the sum for rrs).
 * - Each operation gets the first phase that its predecessors allow (program order, dependencies,
 *   the matching send): a kernel step after a receive waits for the next kernel phase; sends and
 *   receives that belong together (the two ends of a message) share a phase; two sends of a rank
 *   may share a group, anything else that follows an NCCL call waits for the next group.
 * - Where that has no solution (the receiver of a message needs, before it, something that comes
 *   after its sender: the plan relied on FIFO buffering), the message is received apart from its
 *   step: into fresh scratch, in the group of its send, and copied or reduced into place at the
 *   step (a message between ranks of one node then goes through NCCL too). A plan whose
 *   dependencies form a cycle is refused.
 * - Messages between nodes carry whole chunks; a chunk of a user buffer holds fewer elements when
 *   the call's count does not divide into k chunks (the last positions of a block), so each
 *   message records the position (0..k-1) of every chunk it carries, which both ends use to size
 *   their calls (kilnPhasesP2pCalls). A plan that mixes positions in a message is refused.
 *
 * Steps with memory semantics (put/get/signal/wait, where the vocabulary has them) need load/store
 * and stay within a node; a plan that uses one towards another node is refused.
 *
 * Ownership: kilnPhasesBuild's result belongs to the caller (kilnPhasesFree); it copies what it
 * needs from the plan.
 *
 * Internal to kiln: not a public header; its functions leave libkiln for the CLI and the tests
 * (KILN_INTERNAL).
 */
#ifndef KILN_PHASES_H
#define KILN_PHASES_H

#include "kiln/plan.h"
#include "kiln_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One NCCL send or receive of a point-to-point phase: cnt chunks of buf from chunk off, to or from
 * peer. Both ends of a message hold the same cls (its chunks' positions) and issue in the same
 * order: by peer, then channel and message number of the plan's connection (chan, seq). */
typedef struct kilnP2pOp {
  bool send; /* else a receive */
  int peer;  /* a rank of another node (or of this one, for a message received apart) */
  kilnBuffer_t buf;
  int off, cnt;   /* chunks of buf */
  int chan, seq;  /* the plan's connection (this rank -> peer or back) and the message's number on it */
  const int* cls; /* [cnt]: position of each chunk in its block (0..k-1), -1: a whole chunk */
} kilnP2pOp;

typedef struct kilnPhase {
  bool p2p;        /* a group of sends and receives; else a kernel phase */
  kilnPlan* plan;  /* kernel phase: its sub-plan (every rank; a rank without work here has no
                        * threadblocks). Same collective, chunk counts and in-place forms as the
                        * plan; scratch as kilnPhases.scratch */
  int* nops;       /* p2p: [nranks] */
  kilnP2pOp** ops; /* p2p: [nranks], each in issue order */
} kilnPhase;

typedef struct kilnPhases {
  int nranks, nnodes;
  int* node; /* [nranks]: each rank's node */
  kilnColl_t coll;
  int k;        /* chunks per block of a user buffer (plan.h's chunk size) */
  int* scratch; /* [nranks]: scratch chunks of each rank (the plan's, then received pieces) */
  int nphases;
  kilnPhase* phases;
  kilnPlan* split; /* the plan with the steps between nodes cut (sends and receives only, in
                        * program order), every rank's work of every phase: kilnPlanVerify checks it */
  int nmessages;   /* messages sent through NCCL */
  int napart;      /* of them, received apart from their step (the cycles above) */
  int* pool;       /* storage of the ops' cls */
} kilnPhases;

/* Cuts p (copies lowered, kilnPlanLowerCopies, on a copy) for ranks on nodes node[0..ngpus); node
 * NULL: nnodes nodes of ngpus/nnodes consecutive ranks each. Checks the plan's structure (as the
 * verifier's index does). KILN_ERR_UNSUPPORTED where the plan cannot be cut (memory-semantic steps
 * across nodes, positions mixed in a message), KILN_ERR_VERIFY for a malformed plan or a cycle;
 * the message names rank, threadblock and step. */
KILN_INTERNAL kilnResult_t kilnPhasesBuild(const kilnPlan* p, int nnodes, const int* node, kilnPhases** out);
KILN_INTERNAL void kilnPhasesFree(kilnPhases* ph);

/* Whether rank has work in phase i (a threadblock of the sub-plan, or an op of the group). */
KILN_INTERNAL bool kilnPhasesRankHas(const kilnPhases* ph, int i, int rank);

/* The elements of chunk `chunk` of buf for a call of count elements (per block, as kilnRun's
 * count; chunks of L = ceil(count / k) elements): *off from the buffer's start, *n elements (the
 * position cls sizes a scratch chunk; a user buffer's chunk has its own). */
KILN_INTERNAL void kilnPhasesChunkSpan(const kilnPhases* ph, uint64_t count, kilnBuffer_t buf, int chunk,
                                       int cls, uint64_t* off, uint64_t* n);

/* The NCCL calls of rank's part of point-to-point phase i for a call of count elements, in issue
 * order: fn(ctx, send, peer, buf, element offset, elements) each. One call per op when count
 * divides into k chunks (then every chunk is whole and an op's chunks are contiguous), else one
 * per chunk of at least one element (both ends of a message cut it alike). Stops at the first
 * non-zero return of fn and returns it; 0 when every call was made. */
typedef int (*kilnP2pCallFn)(void* ctx, bool send, int peer, kilnBuffer_t buf, uint64_t off, uint64_t n);
KILN_INTERNAL int kilnPhasesP2pCalls(const kilnPhases* ph, int i, int rank, uint64_t count, kilnP2pCallFn fn,
                                     void* ctx);

/* Runs the phases of every rank on host memory, as the runtime runs them, and checks the result:
 * kernel phases as the sub-plans' steps (FIFOs of fifoDepth messages per connection, 0 unbounded),
 * point-to-point phases as the calls of kilnPhasesP2pCalls, a send completing once its receive is
 * posted (NCCL's rendezvous), a group once all its calls have. Random integer inputs (from seed)
 * and op; plan is the one that was cut (its buffers' form: in place when inplace). Finds a
 * deadlock (which rank waits in which phase for what), a send and a receive that disagree (count,
 * order), a message that crosses kernel phases, two calls of one group on the same memory where
 * one writes, and a wrong result (rank, buffer, element). KILN_SUCCESS, or KILN_ERR_VERIFY with
 * the first of those. op: sum, prod, max or min. Phases with memory steps are not run
 * (KILN_ERR_UNSUPPORTED): kilnPlanVerify judges those plans. */
KILN_INTERNAL kilnResult_t kilnPhasesCheck(const kilnPhases* ph, const kilnPlan* plan, uint64_t count,
                                           bool inplace, kilnRedOp_t op, int fifoDepth, uint64_t seed);

/* KILN_EMULATE_NODES (the settings' table, params.h): K >= 1 splits every communicator's
 * ranks into K nodes of consecutive ranks (kilnCommConfig.nodes); 0 where unset or empty; -1 where
 * it holds anything but a positive integer. */
KILN_INTERNAL int kilnEmulateNodesSetting(void);

#ifdef __cplusplus
}
#endif
#endif /* KILN_PHASES_H */
