/*
 * Plan index: the static checks every judge of a plan needs (field ranges, peers, 1:1
 * connections, send/receive pairing and counts, dependency indices) and flat tables built from
 * them, shared by the verifier and the simulator.
 *
 * Threadblocks are numbered globally, g = tbbase[rank] + local id; steps are flattened,
 * f = stepbase[g] + step. The k-th send of a connection (rank A tb with send=B chan=c) is
 * received by the k-th receive of its receiver (rank B tb with recv=A chan=c).
 *
 * Internal to kiln_core: not a public header.
 */
#ifndef KILN_PLAN_INDEX_H
#define KILN_PLAN_INDEX_H

#include "kiln/plan.h"
#include "kiln_internal.h"

typedef struct kilnPlanIndex {
  int n;           /* ranks */
  int ntbs;        /* threadblocks of all ranks */
  int nsteps;      /* steps of all threadblocks */
  int* tbbase;     /* [n+1] */
  int* tb_rank;    /* [ntbs] */
  int* stepbase;   /* [ntbs+1] */
  int* match_tb;   /* [nsteps] receives: global tb of the matching send; else -1 */
  int* match_step; /* [nsteps] receives: that send's step index; else -1 */
  int* msgbase;    /* [nsteps] sends: first of cnt message slots (0..nmsg-1); else -1 */
  int* send_ord;   /* [nsteps] sends: how many sends its tb makes before it; else -1 */
  int* sendbase;   /* [ntbs+1] sends of tb g are sendstep[sendbase[g] ..] (step indices) */
  int* sendstep;
  int* rmatch_tb; /* [nsteps] sends: global tb of the matching receive; else -1 */
  int* rmatch_step;
  int nmsg;   /* chunks sent in all */
  int maxcnt; /* largest cnt of any step (>= 1) */

  /* Memory steps (plan.h), built only for a plan that has one (mem true; the arrays NULL else).
   * Signal streams: sig_match[f] is, for a wait, the sig it pairs with in the same epoch, for a
   * sig its wait (flat step indices; -1 for other steps); sig_ord[f] its place in its stream's
   * steps of an epoch and sig_per[f] their count (-1 for other steps). Line chunks: rank r's
   * scratch chunk c is line_writer[line_base[r] + c] (the flat step of the line put that writes
   * it, or -1 for a plain chunk); a step reads the lines of the line puts
   * linedep[linedep_base[f] .. linedep_base[f+1]) (distinct), and line_readers[f] of a line put
   * counts the steps that read its lines. */
  bool mem;
  int* sig_match;
  int* sig_ord;
  int* sig_per;
  int* line_base;    /* [n+1] */
  int* line_writer;  /* [line_base[n]] */
  int* linedep_base; /* [nsteps+1] */
  int* linedep;
  int* line_readers; /* [nsteps] */
} kilnPlanIndex;

/* Checks the plan's structure and builds the index. On failure returns KILN_ERR_VERIFY (or
 * KILN_ERR_NO_MEMORY) with a message naming rank/tb/step, and leaves *ix freed. */
kilnResult_t kilnPlanIndexBuild(const kilnPlan* p, kilnPlanIndex* ix);
void kilnPlanIndexFree(kilnPlanIndex* ix);

/* Local threadblock id of global tb g. */
static inline int kilnPlanIndexLocal(const kilnPlanIndex* ix, int g) {
  return g - ix->tbbase[ix->tb_rank[g]];
}

/* A verification failure with its message (the verifier's and the index's checks). */
#define verr(...) kilnSetError(KILN_ERR_VERIFY, __VA_ARGS__)

/* The step at flat index f (f = stepbase[g] + s). */
const kilnStep* kilnPlanIndexStep(const kilnPlan* p, const kilnPlanIndex* ix, int f, int* g, int* s);
/* Whether a step type reads its dst as well (re, gre: dst <- dst ⊕ src). */
static inline bool kilnStepReadsDst(kilnStepType_t t) {
  return t == KILN_STEP_REDUCE || t == KILN_STEP_GET_REDUCE;
}
/* Whether a put writes lines (its protocol is LL, LL12 or LL128). */
static inline bool kilnStepIsLinePut(const kilnPlan* p, const kilnStep* st) {
  return st->type == KILN_STEP_PUT && kilnStepProtocol(p, st) != KILN_PROTO_SIMPLE;
}

/* Checks that every rank's input and output chunk counts fit the plan's collective and that its
 * copies lie inside them; sets *k (chunks of a rank's piece) and *R (chunks of the reference
 * buffer: the per-rank input of a reduction, the output of an allgather, pieces times k). */
kilnResult_t kilnPlanIndexLayout(const kilnPlan* p, int* k, int* R);

/* "input", "output", "scratch". */
const char* kilnPlanBufferLabel(kilnBuffer_t b);
/* Declared chunks of buffer b on a GPU. */
int kilnPlanBufferChunks(const kilnGpu* gpu, kilnBuffer_t b);

#endif
