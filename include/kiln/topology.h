/*
 * Topologies: GPUs, directed α-β links, switches and NICs.
 *
 * A topology is a node template (links, switches and NICs among the node's local GPUs)
 * replicated `nodes` times, plus inter-node connectivity. The template is what the XML holds;
 * the expanded arrays (global ranks r = node * gpus_per_node + local) are derived from it by
 * kilnTopologyExpand(), which every constructor calls.
 *
 * Cost model: sending s bytes over a link costs alpha_us + beta_us_per_mb * s / 1e6 µs.
 * A link's `mult` parallel lanes multiply its bandwidth (β is per lane).
 * Links through a switch serialize at the sender's and the receiver's switch port.
 * Inter-node traffic goes through the sender's and receiver's NICs, which serialize too.
 *
 * Ownership: a kilnTopology returned by any constructor is owned by the caller and freed with
 * kilnTopologyFree(); everything it points to is owned by it.
 *
 * XML (element and attribute names in topology.c's table):
 *   <topology name="hgx-h100" nodes="1" gpus_per_node="8">
 *     <node>
 *       <link src="0" dst="1" alpha="0.7" beta="46" mult="2" kind="nvlink"/>
 *       <switch name="nvswitch" gpus="0 1 2 3 4 5 6 7" alpha="0.74" beta="2.7" kind="nvlink"/>
 *       <nic id="0" gpus="0 1"/>
 *     </node>
 *     <internode alpha="1.7" beta="106" kind="ib"/>
 *     <costs launch="1.1" sig="0.65" put.LL128.efficiency="0.68" .../>
 *   </topology>
 * <costs> is optional: the simulator's table of costs measured on the machine, one attribute per
 * knob (kilnSimParamName); a knob it does not name keeps KILN_SIM_PARAMS_INIT's value.
 */
#ifndef KILN_TOPOLOGY_H
#define KILN_TOPOLOGY_H

#include "kiln/kiln.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_NAME_MAX 64
#define KILN_MAX_RANKS 1024

#define KILN_LINK_KINDS(X)      \
  X(KILN_LINK_NVLINK, "nvlink") \
  X(KILN_LINK_PCIE, "pcie")     \
  X(KILN_LINK_IB, "ib")         \
  X(KILN_LINK_OTHER, "other")

typedef enum {
#define KILN_X_ENUM(e, n) e,
  KILN_LINK_KINDS(KILN_X_ENUM)
#undef KILN_X_ENUM
      KILN_NUM_LINK_KINDS
} kilnLinkKind_t;

KILN_API const char* kilnLinkKindName(kilnLinkKind_t k);
KILN_API bool kilnLinkKindParse(const char* s, kilnLinkKind_t* out);

/* A directed link. In the template, src/dst are node-local; in the expansion, global ranks. */
typedef struct kilnLink {
  int src, dst;
  double alpha_us;       /* latency per send */
  double beta_us_per_mb; /* inverse bandwidth per lane, µs per MB (1e6 bytes) */
  int mult;              /* parallel lanes, >= 1 */
  kilnLinkKind_t kind;
  int switch_id;  /* expansion: index into switches[] if the link crosses a switch, else -1 */
  bool internode; /* expansion: true if src and dst are on different nodes */
} kilnLink;

/* GPUs joined by a switch: every ordered pair of members is linked at (alpha, beta). */
typedef struct kilnSwitch {
  char name[KILN_NAME_MAX];
  int ngpus;
  int* gpus; /* template: node-local ids; expansion: global ranks */
  double alpha_us, beta_us_per_mb;
  kilnLinkKind_t kind;
} kilnSwitch;

/* A NIC and the GPUs that share it (template: local ids; expansion: global ranks). */
typedef struct kilnNic {
  int id;
  int ngpus;
  int* gpus;
} kilnNic;

/* ---- the simulator's costs of kiln's steps (kiln/plan.h kilnPlanSimulate) ---- */

/* How the simulator costs one form of moving data between GPUs: the data arrives
 * alpha_scale * α + alpha_us after the link has carried it, and the link is held for
 * β * bytes / efficiency (α, β: the link's, topology.h). */
typedef struct kilnSimForm {
  double alpha_scale; /* times the link's α */
  double alpha_us;    /* added latency, µs */
  double efficiency;  /* payload bytes per byte the link carries, in (0, 1] */
} kilnSimForm;

/* The simulator's costs beyond the links' α and β: how each kind of step moves data, what a
 * signal and local work cost, a threadblock's own rate and a call's fixed cost. Every field one
 * knob; KILN_SIM_PARAMS_INIT holds the defaults kilnPlanSimulate takes, and
 * KILN_SIM_PARAMS_ALPHA_BETA the paper's model alone (every transfer α + β·bytes, nothing else
 * costs). */
typedef struct kilnSimParams {
  kilnSimForm put[KILN_NUM_PROTOS];  /* a put per protocol (kilnProto_t order), over the link to the peer */
  kilnSimForm send[KILN_NUM_PROTOS]; /* an MSCCL send through a FIFO, per protocol (the plan's) */
  kilnSimForm get;                   /* get and gre: the peer's data over the link from the peer */
  kilnSimForm sig;                   /* a signal's flight to the peer (efficiency unused) */
  double sig_us;                     /* a sig's own cost before it leaves: barrier, fence, store (a
                                      * sig right after another costs nothing: one fence serves a run) */
  double wait_us;                    /* a wait's cost once its signal arrived: poll and barrier */
  double local_us_per_mb;            /* cpy, re and gre's reduction: a threadblock's µs per MB of
                                      * chunks it works through (0: free) */
  double tb_us_per_mb;               /* a threadblock's own rate moving data to or from a peer: µs per
                                      * MB it puts on the wire (line bytes included; 0: only the
                                      * links limit) */
  double step_us;                    /* every step but sig, wait and nop: its own fixed cost in its
                                      * threadblock (issue, loop, barrier) */
  double launch_us;                  /* a call's fixed cost: its kernel's start and end */
  double fifo_launch_us;             /* the same for a plan without memory steps (MSCCL's steps,
                                      * through FIFOs: a runtime of its own) */
  double fifo_step_us;               /* a Simple send's or receive's slot handshake in its
                                      * threadblock (head and tail counters; line protocols carry
                                      * their flags in the lines) */
  double fifo_slot_bytes;            /* a FIFO slot: a call of a plan of MSCCL's steps runs in
                                      * iterations of at most a slot per step (0: in one) */
} kilnSimParams;
/* kilnPlanSimulate's defaults: kiln's runtime on H200s over NVSwitch, on switchN's and hgx-h100's
 * links (α 0.74 µs one way, β 2.7 µs/MB a port), fitted by bench/sim_calibrate --fit (least
 * squares of log(predicted / measured)) to the CUDA-graph tables of bench/baselines/
 * h200x2-2026-11-29, h200x4-2026-11-29 and h200x4-2026-11-28 ("h200x*" below): the memory steps'
 * knobs to the symmetric kernels' column (the forms the memory-step plans write), the FIFO knobs
 * to the plans' columns. One line per knob, in kilnSimParams' order. */
#define KILN_SIM_PARAMS_INIT                                                                                \
  {                                                                                                         \
    {{1.0, 0.0, 1.0},   /* put Simple: SM stores at the port's rate (fitted 1.00; h200x*, 4 MiB-1 GiB) */   \
     {1.0, 0.0, 0.5},   /* put LL: 8 data bytes a 16-byte line (fitted 0.51; h200x*, 16 B-512 KiB) */       \
     {1.0, 0.27, 0.68}, /* put LL128: 0.27 µs more, 0.68 payload (fitted; nominal 120/128; h200x*) */      \
     {1.0, 0.0, 0.48}}, /* put LL12: no more payload than LL (fitted 0.48; nominal 12/16; h200x*) */        \
        {{1.0, 2.05,                                                                                        \
          0.84}, /* send Simple: a FIFO step 2.05 µs later, 0.84 payload (fitted; h200x*, plans) */        \
         {1.0, 0.49,                                                                                        \
          0.40}, /* send LL: one-way hop 1.23 µs (kernels/PERF.md) less α; 0.40 payload (fitted) */       \
         {1.0, 0.0, 120.0 / 128.0}, /* send LL128: nominal (LL128 plans run as Simple, KILN_LL128) */       \
         {1.0, 0.0, 12.0 / 16.0}},  /* send LL12: nominal (no FIFO carries it) */                           \
        {2.0, 0.0, 1.0}, /* get, gre: a load's request and its data, two flights (no default form loads) */ \
        {1.0, 0.0, 1.0}, /* sig: one flight */                                                              \
        0.69,  /* sig_us: barrier and system-scope fence (fitted; h200x*, flag and direct forms) */         \
        0.72,  /* wait_us: poll and barrier (fitted; h200x*, flag and direct forms) */                      \
        7.0,   /* local_us_per_mb: a block's copy or reduction, 140 GB/s (fitted; h200x*) */                \
        26.0,  /* tb_us_per_mb: one block moves 38.5 GB/s (kiln profile, 2x H200, 2026-11-29) */            \
        0.043, /* step_us: a step's issue in its block (fitted; h200x*) */                                  \
        0.92,  /* launch_us: a call in a CUDA graph, PDL-chained (fitted; h200x*, 16 B: 2.1 µs) */         \
        4.0,   /* fifo_launch_us: a plan kernel's call (baked LL plans at 16 B: 5.8-6.4 µs, h200x*) */     \
        1.26,  /* fifo_step_us: a Simple step's handshake (fitted; kiln profile: 1.69 one block) */         \
        524288.0                                                                                            \
  } /* fifo_slot_bytes: kilnCommConfig.slotBytes' default */

/* The table before calibration, which the closed forms of tests/test_simulate.c assume: the
 * links' α and β, the line protocols' nominal formats, a sig 1 µs and a wait 0.2 µs, nothing else. */
#define KILN_SIM_PARAMS_ALPHA_BETA                                                                 \
  {                                                                                                \
    {{1.0, 0.0, 1.0}, {1.0, 0.0, 8.0 / 16.0}, {1.0, 0.0, 120.0 / 128.0}, {1.0, 0.0, 12.0 / 16.0}}, \
        {{1.0, 0.0, 1.0}, {1.0, 0.0, 1.0}, {1.0, 0.0, 1.0}, {1.0, 0.0, 1.0}}, {2.0, 0.0, 1.0},     \
        {1.0, 0.0, 1.0}, 1.0, 0.2, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0                               \
  }

/* kilnBaselineSimulate's defaults: NCCL 2.28.9 on the same machines, its ring, tree and
 * all-pairs steps as sends through FIFOs in each protocol (the baseline takes the protocol it
 * predicts fastest, as NCCL's tuner does), fitted by bench/sim_calibrate --fit-to nccl to the NCCL
 * column of the h200x* graph tables (one process and a process per GPU; 258 of 280 rows within
 * 25%), a Simple step's latency held at kiln's (fitted free, 13 µs, it stood for the mid sizes'
 * protocol changes and made rings across nodes slower than trees at 256 MiB). The knobs of memory
 * steps do not apply to NCCL: they keep the α-β table's values. */
#define KILN_SIM_PARAMS_NCCL                                                                            \
  {                                                                                                     \
    {{1.0, 0.0, 1.0}, {1.0, 0.0, 8.0 / 16.0}, {1.0, 0.0, 120.0 / 128.0}, {1.0, 0.0, 12.0 / 16.0}},      \
        {{1.0, 2.05,                                                                                    \
          0.79}, /* send Simple: a step 2.05 µs later (kiln's), 0.79 payload (fitted; 4 MiB-1 GiB) */  \
         {1.0, 0.0, 0.5},   /* send LL: the link's flight, 8 bytes a 16-byte line (fitted α 0) */      \
         {1.0, 0.47, 0.30}, /* send LL128: 0.47 µs more, 0.30 payload (fitted; 64 KiB-4 MiB) */        \
         {1.0, 0.0, 0.75}}, /* send LL12: NCCL has none */                                              \
        {2.0, 0.0, 1.0}, {1.0, 0.0, 1.0}, 1.0, 0.2, 0.0, 0.0, 0.0, 0.0,                                 \
        5.18, /* fifo_launch_us: a call of NCCL's kernel in a CUDA graph (fitted; 16 B: 5.2-9.1 µs) */ \
        0.24, /* fifo_step_us: a Simple step's handshake (fitted) */                                    \
        0.0                                                                                             \
  } /* fifo_slot_bytes: NCCL's slices are the baseline's own (512 KiB) */

/* The table's knobs by name, for files and command lines (a topology's <costs>, kiln profile,
 * bench/sim_calibrate --set): "launch", "fifo_launch", "fifo_step", "fifo_slot", "step", "sig", "wait",
 * "local_beta", "tb_beta" (launch_us, fifo_launch_us, fifo_step_us, fifo_slot_bytes, step_us, sig_us,
 * wait_us, local_us_per_mb, tb_us_per_mb), then FORM.alpha_scale, FORM.alpha and FORM.efficiency
 * for each form put.PROTO, send.PROTO (kilnProtoName), get and sig (no sig.efficiency).
 * kilnSimParamName(i) for 0 <= i < kilnSimParamCount() (else NULL), kilnSimParamRef the field of
 * sp it names, kilnSimParamFind the index of a name (-1: none). */
KILN_API int kilnSimParamCount(void);
KILN_API const char* kilnSimParamName(int i);
KILN_API double* kilnSimParamRef(kilnSimParams* sp, int i);
KILN_API int kilnSimParamFind(const char* name);
/* KILN_SUCCESS, or KILN_ERR_INVALID_ARGUMENT naming the first knob out of its range (an
 * efficiency outside (0, 1], any other value negative or past 1e9). */
KILN_API kilnResult_t kilnSimParamsCheck(const kilnSimParams* sp);

typedef struct kilnTopology {
  char name[KILN_NAME_MAX];
  int nodes;         /* >= 1 */
  int gpus_per_node; /* >= 1 */
  int nranks;        /* nodes * gpus_per_node */

  /* Template (what the XML holds). */
  int ntlinks;
  kilnLink* tlinks;
  int ntswitches;
  kilnSwitch* tswitches;
  int ntnics;
  kilnNic* tnics;
  bool has_internode; /* every GPU with a NIC reaches every GPU of other nodes */
  double inter_alpha_us, inter_beta_us_per_mb;
  kilnLinkKind_t inter_kind;
  bool has_costs; /* the XML's <costs> (kiln profile writes them): kilnPlanSimulate takes
                             * costs in place of KILN_SIM_PARAMS_INIT */
  kilnSimParams costs;

  /* Expansion (derived; global ranks). */
  int nlinks;
  kilnLink* links; /* at most one link per ordered (src, dst) pair */
  int nswitches;
  kilnSwitch* switches;
  int nnics;
  kilnNic* nics;
  int* nic_of;     /* [nranks]: index into nics[] of the rank's NIC, -1 if none */
  int* link_index; /* [nranks * nranks]: index into links[] for (src, dst), -1 if none */
} kilnTopology;

/* Built-in topologies by name: "ndv2", "dgx2", "hgx-h100", "switchN" (N in 2..KILN_MAX_RANKS),
 * "torusRxC" (R, C >= 2), with `nodes` copies (>= 1). Unknown names fail with
 * KILN_ERR_INVALID_ARGUMENT and a message listing the known ones. */
KILN_API kilnResult_t kilnTopologyBuiltin(const char* name, int nodes, kilnTopology** out);
/* Space-separated list of the built-in names, for help texts. */
KILN_API const char* kilnTopologyBuiltinNames(void);

/* Reads a topology from an XML file / memory. Errors name the file and line. */
KILN_API kilnResult_t kilnTopologyReadFile(const char* path, kilnTopology** out);
KILN_API kilnResult_t kilnTopologyReadMemory(const char* xml, size_t len, const char* name,
                                             kilnTopology** out);
/* Writes the XML form. The file is written to a temporary beside it and renamed, so a
 * failure never leaves a partial file. path "-" writes to stdout. */
KILN_API kilnResult_t kilnTopologyWriteFile(const kilnTopology* t, const char* path);
/* Writes into a malloc'ed NUL-terminated string the caller frees. */
KILN_API kilnResult_t kilnTopologyWriteMemory(const kilnTopology* t, char** out);

/* (Re)computes the expansion from the template and validates it (ids in range, α, β >= 0,
 * mult >= 1, no self links). Called by every constructor; call it after editing a template. */
KILN_API kilnResult_t kilnTopologyExpand(kilnTopology* t);

/* Link from src to dst (global ranks), or NULL. */
KILN_API const kilnLink* kilnTopologyLink(const kilnTopology* t, int src, int dst);

KILN_API void kilnTopologyFree(kilnTopology* t);

#ifdef __cplusplus
}
#endif
#endif /* KILN_TOPOLOGY_H */
