/*
 * The synthesizer (TACCL, paper sections 5-6 and Appendix B): a topology, a communication sketch
 * and a collective in; a verified plan out.
 *
 * Stages: (1) routing MILP over shortest paths of the sketch's logical topology with relaxed
 * bandwidth, switch-hyperedge policies and the sketch's symmetry (one variable per orbit);
 * (2) greedy ordering of chunks per link and per switch / NIC port; (3) contiguity and exact
 * scheduling MILP, warm-started from the greedy schedule; then lowering to a plan (buffers,
 * instructions, dependencies, threadblocks, fused instructions, instances). Reducescatter is the
 * ordered inverse of an allgather; allreduce is reducescatter followed by allgather.
 *
 * Stages 1-2 run under two cost models: the paper's, where a transfer occupies its link or port
 * for α + β·size, and kiln's simulator's, where only β·size occupies it and α is latency that
 * back-to-back transfers overlap. Each routing is ordered with both heuristics (and with and
 * without a window in which the heuristic outranks the earliest start), each ordering is lowered
 * with and without fused instructions and port-order dependencies, and the plan that
 * kilnPlanSimulate predicts fastest at the sketch's input size is kept (only it, and plans that
 * would beat it, are verified). Stage 3 runs on the paper-model routing.
 *
 * Node-level synthesis (kilnSynthOptions.nodes_mode; by default on KILN_SYNTH_NODES_AUTO nodes or
 * more): the routing MILP runs on two nodes that stand for all of them (a chunk's own node and any
 * other), with each load counted as often as the N nodes repeat it, and its routes are copied onto
 * every node; a list scheduler orders the transfers (linear-logarithmic in their number). The
 * MILP's size does not grow with the nodes; the sketch's knobs keep their meaning (its node-level
 * symmetries become permutations of whole nodes). See solver/synth/nodes.c.
 *
 * Forms (kilnSynthOptions.forms, kilnSynthStats.form). Besides the sketch's plan (the stages above,
 * lowered to MSCCL's send and receive steps through FIFOs), a collective has forms that move every
 * chunk straight to the ranks that need it: where the sketch's logical topology links every pair
 * of ranks of one node (an NVLink domain: a switch, or all-to-all links), every shortest-path
 * route is that direct one, so the routing has nothing to choose, and the forms are written with
 * kiln's memory steps (kiln/plan.h: puts into the peers' scratch, line protocols or Simple puts
 * with signals), as kilnClassicPlan writes them (solver/classic.c):
 * - one-flight (allreduce, reducescatter): every rank puts its input's chunks into the scratch of
 *   the ranks that reduce them, and each reduces in rank order; one flight, n-1 times the data;
 * - two-shot (allreduce): TACCL's combining with direct routes, a reducescatter whose every rank
 *   reduces its share as one-flight does, then an allgather of the reduced shares by puts;
 * - direct (allgather, alltoall): puts of every piece into the peers' scratch, then local copies.
 * Each is lowered in every protocol (LL, LL12, LL128, Simple) and in 1, 2, 4 ... 32 instances (a
 * threadblock each; at most max_tbs), and the one kilnPlanSimulate predicts fastest at the input
 * size is kept: the line protocols and the one-flight form at small sizes (a flight's latency and
 * a call's fixed costs), Simple in many instances at large ones (a threadblock's rate and the
 * links'). By default (forms 0) an NVLink domain takes these forms and any other topology the
 * sketch's plan; plans across nodes keep send and receive steps (the runtime runs those between
 * nodes as NCCL's point-to-point calls: docs/INTERNODE.md).
 *
 * The floor (kilnSynthOptions.floor): kilnSynthesize also lowers NCCL's own algorithms as the
 * simulator's baselines model them - its ring (on nodes joined by switches: one ring per NIC, in
 * slices), its double binary tree for allreduce (solver/synth/tree.c) and, for an alltoall of up
 * to 181 ranks, its all-pairs (the direct plan) - and returns one where it simulates faster than
 * every plan of the sketch (stats->form names it; ring_floor, tree_floor, direct_floor), so that a
 * plan is never slower than NCCL's ring, tree or all-pairs alltoall in the simulator. TACCL's
 * shortest-path routes can be: two HGX H100 nodes at 1 GB, where the rings put more of every GPU's
 * traffic on its NIC (solver/synth/ring.c); a sketch's alltoall relays at 1 KB, where every hop
 * adds its latency; allreduce on nodes whose GPUs share one NIC, where the tree pipelines its
 * reduction and broadcast through the NIC. Without the floor the plan always follows the sketch.
 *
 * Every MILP solve has a time limit; reaching it is not a failure (the incumbent, or the greedy
 * schedule, is kept). GLPK never aborts the process: its errors come back as KILN_ERR_SOLVER.
 * Library code never prints: progress goes to the callback in the options.
 *
 * Ownership: the plan returned by kilnSynthesize is owned by the caller (kilnPlanFree).
 * The topology and sketch are only read.
 */
#ifndef KILN_SYNTH_H
#define KILN_SYNTH_H

#include <signal.h>

#include "kiln/plan.h"
#include "kiln/sketch.h"

#ifdef __cplusplus
extern "C" {
#endif

/* X(enum, name) — stages reported through the progress callback. */
#define KILN_SYNTH_STAGES(X)               \
  X(KILN_SYNTH_STAGE_VALIDATE, "validate") \
  X(KILN_SYNTH_STAGE_ROUTE, "route")       \
  X(KILN_SYNTH_STAGE_ORDER, "order")       \
  X(KILN_SYNTH_STAGE_SCHEDULE, "schedule") \
  X(KILN_SYNTH_STAGE_LOWER, "lower")       \
  X(KILN_SYNTH_STAGE_VERIFY, "verify")

typedef enum {
#define KILN_X_ENUM(e, n) e,
  KILN_SYNTH_STAGES(KILN_X_ENUM)
#undef KILN_X_ENUM
      KILN_SYNTH_NUM_STAGES
} kilnSynthStage_t;

KILN_API const char* kilnSynthStageName(kilnSynthStage_t s);

/* X(enum, name) - the forms of a synthesized plan (see above). The first four are chosen among
 * (kilnSynthOptions.forms, a bit per form); the last three are the floor's, NCCL's algorithms. */
#define KILN_SYNTH_FORMS(X)                 \
  X(KILN_SYNTH_FORM_SKETCH, "sketch")       \
  X(KILN_SYNTH_FORM_ONEFLIGHT, "oneflight") \
  X(KILN_SYNTH_FORM_TWOSHOT, "twoshot")     \
  X(KILN_SYNTH_FORM_DIRECT, "direct")       \
  X(KILN_SYNTH_FORM_RING, "ring")           \
  X(KILN_SYNTH_FORM_TREE, "tree")           \
  X(KILN_SYNTH_FORM_ALLPAIRS, "allpairs")

typedef enum {
#define KILN_X_ENUM(e, n) e,
  KILN_SYNTH_FORMS(KILN_X_ENUM)
#undef KILN_X_ENUM
      KILN_SYNTH_NUM_FORMS
} kilnSynthForm_t;

KILN_API const char* kilnSynthFormName(kilnSynthForm_t f);
KILN_API bool kilnSynthFormParse(const char* s, kilnSynthForm_t* out);
/* The bit of form f in kilnSynthOptions.forms. */
#define KILN_SYNTH_FORM_BIT(f) (1u << (f))
/* The forms chosen among (the floor's are not: kilnSynthOptions.floor). */
#define KILN_SYNTH_FORMS_CHOSEN                                                                   \
  (KILN_SYNTH_FORM_BIT(KILN_SYNTH_FORM_SKETCH) | KILN_SYNTH_FORM_BIT(KILN_SYNTH_FORM_ONEFLIGHT) | \
   KILN_SYNTH_FORM_BIT(KILN_SYNTH_FORM_TWOSHOT) | KILN_SYNTH_FORM_BIT(KILN_SYNTH_FORM_DIRECT))
/* kilnSynthOptions.proto: each form in the protocol kilnPlanSimulate predicts fastest. */
#define KILN_SYNTH_PROTO_AUTO ((kilnProto_t)KILN_NUM_PROTOS)

/* One progress report. Fields that do not apply are -1 (counts) or NaN (values). */
typedef struct kilnSynthProgress {
  kilnSynthStage_t stage;
  const char* message;                /* short human-readable line, e.g. "model built", "new incumbent" */
  int rows, cols, nonzeros, integers; /* model size (MILP stages) */
  double incumbent;                   /* best objective found (µs) */
  double bound;                       /* best bound (µs) */
  double gap;                         /* relative gap, 0..1 */
  double elapsed_s;                   /* since the stage began */
  int step, nsteps;   /* the synthesis' steps (routing solves, orderings, lowerings, verifications):
                            the one running (1-based) and how many are now planned in all */
  double remaining_s; /* estimate of the time left, from the steps measured so far and the time
                            limit of a solve that runs (NaN until a step has been measured) */
  double total_s;     /* since the synthesis began */
} kilnSynthProgress;

typedef void (*kilnSynthProgressFn)(const kilnSynthProgress* p, void* user);

typedef struct kilnSynthOptions {
  size_t size;                  /* sizeof(kilnSynthOptions): guards against a stale layout */
  double time_limit_s;          /* per MILP solve (> 0), and for the greedy ordering's variants of a
                               routing round (past it the best so far stands); default 60 */
  double mip_gap;               /* relative gap at which a MILP stops; default 1e-2 */
  double stall_s;               /* a MILP with an incumbent stops after this long without improving
                               it by more than mip_gap (0: never); default 5 */
  int instances;                /* parallel copies over channels (>= 1), or 0 (the default): the memory
                               forms in the count kilnPlanSimulate predicts fastest (1, 2, 4 .. 32);
                               the sketch's plan and the floor's lowered in 1, then copied into 2,
                               4 .. while each doubling predicts faster by more than 3% (up to 32
                               channels) */
  kilnProto_t proto;            /* the plan's protocol (its sends', or its puts'), or KILN_SYNTH_PROTO_AUTO
                               (the default): the memory forms in the protocol kilnPlanSimulate
                               predicts fastest, the sketch's plan and the floor's in Simple or LL,
                               whichever it predicts faster */
  bool use_symmetry;            /* quotient by the sketch's symmetry; default true */
  bool contiguity;              /* run the contiguity / exact scheduling MILP; default true */
  bool fuse;                    /* fused instructions (rcs, rrs, rrcs) in the lowering; default true
                               (node-level synthesis lowers without them) */
  bool inplace;                 /* write the in-place form (allgather, reducescatter, allreduce) */
  int max_tbs;                  /* > 0: at most this many threadblocks per rank (a runtime runs one per
                               SM): lowerings above it pair each peer's sends and receives in one
                               threadblock, and are dropped if still above; default 0 (no limit) */
  int ordering;                 /* -1: the sketch's; else a kilnOrdering_t */
  uint64_t input_size;          /* 0: the sketch's input_size (bytes per rank's input) */
  int nodes_mode;               /* node-level synthesis (routes on two nodes standing for all, see
                               below): -1 on topologies of KILN_SYNTH_NODES_AUTO nodes or more,
                               0 never, 1 on every topology of 2 nodes or more; default -1 */
  kilnSynthProgressFn progress; /* may be NULL */
  void* progress_user;
  /* Stopping early (a caller's Ctrl-C): when *stop becomes non-zero (e.g. from a signal handler),
   * running MILP solves end with their incumbents and no further variant is tried. With
   * keep_on_stop the best plan verified so far is returned (stats->interrupted; if none is yet,
   * the variant under way is finished and its plan returned); without it, kilnSynthesize returns
   * KILN_ERR_TIMEOUT ("interrupted") and no plan at its next step. NULL: never stops early. */
  const volatile sig_atomic_t* stop;
  bool keep_on_stop;
  bool floor;     /* also try NCCL's ring, tree and all-pairs alltoall, and return one where
                               it simulates faster (see above; single instance only); default true */
  unsigned forms; /* the forms to choose among (KILN_SYNTH_FORM_BIT of SKETCH, ONEFLIGHT,
                               TWOSHOT, DIRECT), or 0 (the default): in an NVLink domain the memory
                               forms, elsewhere the sketch's plan. Forms the collective or the
                               topology does not have are left out; KILN_ERR_UNSUPPORTED, naming
                               why, when none is left */
} kilnSynthOptions;
#define KILN_SYNTH_OPTIONS_INIT                                                                             \
  {                                                                                                         \
    sizeof(kilnSynthOptions), 60.0, 1e-2, 5.0, 0, KILN_SYNTH_PROTO_AUTO, true, true, true, false, 0, -1, 0, \
        -1, NULL, NULL, NULL, false, true, 0                                                                \
  }
/* Node counts from which nodes_mode -1 synthesizes at node level. */
#define KILN_SYNTH_NODES_AUTO 3

/* What a synthesis did, for summaries and benchmarks. */
typedef struct kilnSynthStats {
  double stage_s[KILN_SYNTH_NUM_STAGES]; /* wall seconds per stage */
  double total_s;
  int route_solves; /* routing MILPs solved (2 cost models; x2 for allreduce) */
  int route_rows, route_cols, route_nonzeros, route_integers; /* largest routing model */
  bool route_optimal; /* every routing MILP proved optimal (within mip_gap) */
  int sched_rows, sched_cols, sched_integers;
  bool sched_optimal;      /* contiguity MILP proved optimal (false: incumbent or greedy) */
  bool sched_used_greedy;  /* the greedy schedule was kept */
  kilnOrdering_t ordering; /* heuristic kept */
  bool pipelined_model;    /* the kept orders came from the cost model where α overlaps */
  double route_bound_us;   /* routing objective: its model (chunks overlap freely, each occupies a link
                                for α + β) is no bound on the plan's predicted time, which may be lower */
  double greedy_us;        /* makespan of the greedy schedule */
  double schedule_us;      /* makespan of the final schedule on the synthesizer's model */
  double predicted_us;     /* kilnPlanSimulate of the plan at the sketch's input size */
  int transfers;           /* chunk transfers scheduled */
  int chunks;              /* chunks per rank's reference buffer */
  bool fused;              /* the plan uses fused instructions */
  bool orderings_cut;      /* the time limit cut the greedy ordering's variants short: the plan
                                then depends on how fast the machine is */
  bool node_level;         /* routed on the two-node representative (nodes_mode) */
  bool interrupted;        /* *stop ended the synthesis early; the plan is the best found by then */
  bool ring_floor;         /* the plan is NCCL's ring (see below): it simulated faster than every
                                plan of the sketch's routes */
  bool direct_floor;       /* the plan is NCCL's all-pairs alltoall (kilnClassicPlan "direct"), for
                                the same reason */
  bool tree_floor;         /* the plan is NCCL's double binary tree (allreduce), for the same reason */
  kilnSynthForm_t form;    /* the plan's form */
  kilnProto_t proto;       /* its protocol */
  int instances;           /* its instances (channels) */
  bool nvlink_domain;      /* the topology is one node whose every pair of ranks the sketch links */
  int candidates;          /* memory forms lowered and simulated (form x protocol x instances) */
} kilnSynthStats;

/* Synthesizes coll on topology t guided by sketch s, lowers it, and verifies it with
 * kilnPlanVerify. On success *out holds a verified plan. The sketch is checked first
 * (kilnSketchValidate and the synthesizer's own checks: chunk count, symmetry as an automorphism
 * of the logical topology, every destination reachable), so a bad sketch fails with
 * KILN_ERR_INVALID_ARGUMENT or KILN_ERR_INFEASIBLE naming the reason before any solve.
 * Blocks for up to (routing solves + 1) time limits; stats may be NULL. The plan is named
 * kiln-SKETCH-COLL, then -FORM for a memory form, -PROTO where the protocol is not Simple and -iN
 * where the instances are more than one (kiln-switch4-allreduce-oneflight-LL-i2,
 * kiln-switch2-allreduce-LL-i4); a long sketch name is cut, never the suffix. A plan for a
 * topology of several nodes names them (kilnPlan.nnodes). */
KILN_API kilnResult_t kilnSynthesize(const kilnTopology* t, const kilnSketch* s, kilnColl_t coll,
                                     const kilnSynthOptions* opts, kilnPlan** out, kilnSynthStats* stats);

/* Bytes of the collective's reference buffer (the size kilnPlanSimulate takes) when each rank's
 * input holds input_size bytes: allgather: nranks * input_size; others: input_size. */
KILN_API uint64_t kilnSynthReferenceBytes(kilnColl_t coll, int nranks, uint64_t input_size);

/* ---- TACCL's input files ----
 * microsoft/taccl's JSON topology profiles (taccl solve --topology-file) and communication
 * sketches (--sketch-file), read into kiln's topology and sketch (docs/taccl.md has the mapping
 * and what is not supported). Errors (KILN_ERR_PARSE; KILN_ERR_UNSUPPORTED for TACCL features
 * kiln does not have) name the file, line and column, the key and what is wrong there.
 *
 * A TACCL topology describes one node: the result has nodes = 1 (set nodes and call
 * kilnTopologyExpand for more). A TACCL sketch names no node size, so the reader takes the
 * topology's gpus_per_node to check its GPU ids, and returns TACCL's nnodes beside it (nnodes may
 * be NULL); the sketch is named after its file (without the .json ending). The caller frees what
 * the readers return (kilnTopologyFree, kilnSketchFree). */
KILN_API kilnResult_t kilnTopologyReadTacclFile(const char* path, kilnTopology** out);
KILN_API kilnResult_t kilnTopologyReadTacclMemory(const char* json, size_t len, const char* name,
                                                  kilnTopology** out);
KILN_API kilnResult_t kilnSketchReadTacclFile(const char* path, int gpus_per_node, kilnSketch** out,
                                              int* nnodes);
KILN_API kilnResult_t kilnSketchReadTacclMemory(const char* json, size_t len, const char* name,
                                                int gpus_per_node, kilnSketch** out, int* nnodes);

#ifdef __cplusplus
}
#endif
#endif /* KILN_SYNTH_H */
