/* The synthesizer's private model: the logical topology a sketch leaves, the chunks of a
 * collective, routed trees, and chunk transfers with their schedule. */
#ifndef KILN_SYNTH_INTERNAL_H
#define KILN_SYNTH_INTERNAL_H

#include "kiln/synth.h"
#include "kiln_internal.h"
#include "milp.h"

/* A link of the logical topology. */
typedef struct synLink {
  int src, dst;
  double alpha, beta; /* µs, µs/MB per lane (β already divided by the lanes) */
  double beta_route;  /* β for the routing stage (sketch's beta_split applied) */
  bool internode;
  int hyper;                /* sketch switch-hyperedge index, -1 if none */
  int send_port, recv_port; /* serialization ports (switch or NIC), -1 if none */
} synLink;

typedef struct synLogical {
  int n;   /* ranks */
  int gpn; /* GPUs per node */
  int nlinks;
  synLink* links;
  int* link_of; /* [n*n] -> link index or -1 */
  int nports;
  int nhyper;
  kilnHyperPolicy_t* hyper_policy; /* [nhyper] */
  bool has_relay_map;
  int relay_r1, relay_r2;
  int nsym;
  int (*sym)[KILN_MAX_RANKS]; /* [nsym][n] rank permutations */
  bool transposed;            /* links reversed (for the reducescatter route) */
} synLogical;

/* Builds the logical topology of sketch s on topology t (transposed: every link reversed, for the
 * reducescatter's route; a chunk-to-relay map then names the GPU whose partial sums enter the
 * chunk's node, see route.c). Reports unknown links, disconnection, non-automorphic symmetry. */
kilnResult_t synLogicalBuild(const kilnTopology* t, const kilnSketch* s, bool transposed, synLogical* out);
void synLogicalFree(synLogical* L);

/* Non-combining routing problem: chunk c starts at pre[c] and must reach every rank of its
 * destination set (allgather: all; alltoall: one). */
typedef struct synChunks {
  int nchunks;
  int k;          /* chunks per rank's piece */
  bool multicast; /* allgather (true) or alltoall (false) */
  int* pre;       /* [nchunks] */
  int* dst;       /* [nchunks] alltoall: the destination; allgather: -1 */
} synChunks;

kilnResult_t synChunksMake(kilnColl_t coll, int n, int k, synChunks* out);
void synChunksFree(synChunks* c);
/* Image of chunk c under rank permutation perm. */
int synChunkImage(const synChunks* c, int n, const int* perm, int chunk);

/* Routing result: for each chunk, parent link into each rank (-1: not on the tree / root). */
typedef struct synRoute {
  int nchunks, n;
  int* parent; /* [nchunks * n] link index */
  double bound_us;
  bool optimal;
  int rows, cols, nnz, ints;
} synRoute;

typedef struct synRouteParams {
  double chunk_mb;
  bool use_symmetry;
  double time_limit_s, mip_gap, stall_s;
  kilnSynthProgressFn progress;
  void* user;
  bool pipelined; /* link and port loads count β only (α overlapped), not α + β */
  /* > 1: the logical topology is the two-node representative of a topology of remote_copies + 1
   * nodes (nodes.c): a chunk's load on links and ports outside its origin node (alltoall: of a
   * chunk between nodes, everywhere) counts remote_copies times, except on the inter-node link
   * itself, which each copy crosses towards another node. 1 (or 0): every load counts once. */
  int remote_copies;
  const volatile sig_atomic_t* stop; /* milpParams.stop */
} synRouteParams;

kilnResult_t synRouteSolve(const synLogical* L, const synChunks* C, const synRouteParams* p, synRoute* out);
void synRouteFree(synRoute* r);

/* A chunk transfer over a logical link. */
typedef enum { SYN_COPY, SYN_REDUCE } synKind;

typedef struct synXfer {
  int chunk;
  int link, src, dst;
  int phase;        /* 0: first (reducescatter part of allreduce, or the only phase), 1: allgather part */
  synKind kind;     /* SYN_REDUCE: dst reduces what it receives into its partial result */
  int pred0, npred; /* preds[pred0 .. pred0+npred) in synXfers.preds */
  int tie;          /* synOrderList: among transfers alike to the heuristic, lower first (node-level
                   synthesis: how many nodes on the transfer's node is from the chunk's origin) */
  /* schedule */
  double send_t, arr_t;
  int batch_next; /* 1: sent together with the next transfer on its link */
  int order;      /* position in the global order */
} synXfer;

typedef struct synXfers {
  int n, cap;
  synXfer* x;
  int npreds, cappreds;
  int* preds;
  /* per-link and per-port orders (transfer indices), filled by the ordering stage */
  int* link_order;
  int* link_start; /* CSR over links */
  int* port_order;
  int* port_start; /* CSR over ports */
  double makespan;
  bool pipelined;   /* cost model of the ordering: α occupies links and ports (paper) or not */
  double window_us; /* ordering: the heuristic chooses among transfers that can start within
                       this long of the earliest one (0: earliest first, heuristic on ties) */
} synXfers;

void synXfersFree(synXfers* X);
/* Appends a transfer of chunk over link from src to dst (its other fields 0) and returns its
 * index; -1 when out of memory. */
int synXfersAdd(synXfers* X, int chunk, int link, int src, int dst, int phase, synKind kind);
/* Appends transfer p to the predecessor list (synXfer.pred0, npred); false when out of memory. */
bool synXfersAddPred(synXfers* X, int p);
/* Builds the transfers of coll from routes: ag, the allgather (or alltoall) route on L (NULL for
 * reducescatter); rs, the allgather route on the transposed topology Lt, reversed into a
 * reducescatter (reducescatter and allreduce; NULL otherwise). */
kilnResult_t synXfersBuild(kilnColl_t coll, const synLogical* L, const synLogical* Lt, const synChunks* C,
                           const synRoute* ag, const synRoute* rs, synXfers* out);

/* Greedy ordering (B.2) with heuristic h; fills orders and the greedy (ASAP) schedule. */
kilnResult_t synOrder(const synLogical* L, synXfers* X, kilnOrdering_t h, double chunk_mb);
/* List scheduling for large problems (linear-logarithmic in the transfers, where synOrder's
 * rounds scan every ready transfer): transfers are placed in the order they become ready (their
 * chunk arrived; ties by heuristic h, then synXfer.tie, then index), each at the earliest time its link and ports
 * are free for its occupancy, filling gaps that earlier placements left. Fills the orders (each
 * link's and port's transfers by send time), the schedule and the makespan; no batches. */
kilnResult_t synOrderList(const synLogical* L, synXfers* X, kilnOrdering_t h, double chunk_mb);
/* ASAP times given the orders and batch flags; returns the makespan. */
double synScheduleAsap(const synLogical* L, synXfers* X, double chunk_mb);

typedef struct synSchedParams {
  double chunk_mb;
  double time_limit_s, mip_gap, stall_s;
  kilnSynthProgressFn progress;
  void* user;
  const volatile sig_atomic_t* stop; /* milpParams.stop */
} synSchedParams;

typedef struct synSchedInfo {
  int rows, cols, ints;
  bool optimal, used_greedy;
} synSchedInfo;

/* Contiguity + exact scheduling MILP (B.3) over the orders; keeps the greedy schedule when the
 * MILP finds nothing better. */
kilnResult_t synSchedule(const synLogical* L, synXfers* X, const synSchedParams* p, synSchedInfo* info);

typedef struct synLowerParams {
  kilnColl_t coll;
  int k; /* chunks per rank's piece */
  int instances;
  kilnProto_t proto;
  bool fuse;
  bool port_deps;  /* sends keep the schedule's order on their switch port (dependencies) */
  bool inplace;    /* MSCCL's in-place form (not for alltoall) */
  bool pair_peers; /* receives from and sends to a peer share a threadblock (fewer blocks) */
  const char* name;
} synLowerParams;

/* Lowers scheduled transfers to a plan (not yet verified). */
kilnResult_t synLower(const synLogical* L, const synXfers* X, const synLowerParams* p, kilnPlan** out,
                      bool* fused);

/* Node-quotient synthesis (nodes.c). The representative of topology t (N >= 2 nodes) and sketch s:
 * t2, the same template on two nodes, and s2, the sketch with its symmetries within a node kept
 * and its node-level ones replaced by the swap of the two nodes; sn, the sketch for the N nodes,
 * with the symmetries within a node only (a symmetry that spans nodes without permuting them:
 * KILN_ERR_UNSUPPORTED). The caller frees all three. */
kilnResult_t synNodeRepresentative(const kilnTopology* t, const kilnSketch* s, kilnTopology** t2,
                                   kilnSketch** s2, kilnSketch** sn);
/* The transfers of coll on the N-node logical topology L (k chunks per rank's piece) from the
 * representative's routes: ag2 on L2 (allgather, alltoall, allreduce), rs2 on the transposed Lt2
 * (reducescatter, allreduce), C2 the representative's chunks. */
kilnResult_t synXfersExpand(kilnColl_t coll, int N, const synLogical* L2, const synLogical* Lt2,
                            const synChunks* C2, const synRoute* ag2, const synRoute* rs2,
                            const synLogical* L, int k, synXfers* out);

/* NCCL's ring as the simulator's baseline models it on topology t (nodes joined by switches, one
 * ring per NIC, 512 KiB slices of a rank's share at reference size ref), as a plan of coll named
 * name (ring.c). *out NULL without an error where the baseline has no such ring (alltoall, nodes
 * not joined by switches) or the plan would be larger than synthesized plans ever need. large:
 * only the plans past 9 million steps (rings x ranks x ranks x slices, twice for allreduce), up to
 * 17 million, which the floor tries where the tree floor has already beaten the synthesized plan;
 * not large: those up to 9 million. */
kilnResult_t synRingPlan(const kilnTopology* t, kilnColl_t coll, uint64_t ref, bool inplace, bool large,
                         const char* name, kilnPlan** out);

/* NCCL's double binary tree as the simulator's baseline models it for an allreduce of ref bytes on
 * t (kilnBaselineTrees), in the baseline's slices plus slice_delta (fewer where the plan would
 * pass 4 million steps: dgx2 from 16 nodes at 1 GB), as a plan named name (tree.c). *out NULL
 * without an error on one node and where the baseline has no tree. */
kilnResult_t synTreePlan(const kilnTopology* t, uint64_t ref, int slice_delta, bool inplace, const char* name,
                         kilnPlan** out);

/* Plan p (through FIFOs, without copies) in k instances: every threadblock copied k times, copy i on
 * channels of its own moving its k-th of each rank's piece of every buffer (instances.c). *out
 * NULL without an error where a step's chunks would not stay together, the plan has copies, or
 * the channels would pass KILN_PLAN_MAX_CHANNELS. */
kilnResult_t synReplicate(const kilnPlan* p, int k, kilnPlan** out);

/* Whether topology t and the sketch's logical topology L form an NVLink domain: one node, every
 * ordered pair of ranks linked in L (every shortest path then one hop). */
bool synNvlinkDomain(const kilnTopology* t, const synLogical* L);
/* Whether form f implements coll (the sketch's plan implements every collective). */
bool synFormHas(kilnSynthForm_t f, kilnColl_t coll);
/* Memory form f (one-flight, two-shot, direct) of coll for n ranks: k chunks per rank's piece,
 * the instances and the puts' protocol, in place or not, named name (forms.c). */
kilnResult_t synFormPlan(kilnSynthForm_t f, kilnColl_t coll, int n, int k, int instances, kilnProto_t proto,
                         bool inplace, const char* name, kilnPlan** out);

#endif
