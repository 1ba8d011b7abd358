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
  int* rmatch_tb;  /* [nsteps] sends: global tb of the matching receive; else -1 */
  int* rmatch_step;
  int nmsg;        /* chunks sent in all */
  int maxcnt;      /* largest cnt of any step (>= 1) */
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

/* "input", "output", "scratch". */
const char* kilnPlanBufferLabel(kilnBuffer_t b);
/* Declared chunks of buffer b on a GPU. */
int kilnPlanBufferChunks(const kilnGpu* gpu, kilnBuffer_t b);

#endif
