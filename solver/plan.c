/* Plan model: step-type and buffer tables, builders (create, add threadblock, add step), deep
 * copy, free, reference chunk count. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/plan.h"

static const struct {
  const char* name;
  bool receives, sends, reduces, reads_src, writes_dst;
} step_types[] = {
#define KILN_X_ROW(e, n, rv, sd, rd, rs, wd) {n, rv, sd, rd, rs, wd},
    KILN_STEP_TYPES(KILN_X_ROW)
#undef KILN_X_ROW
};

static const char* const buffer_names[] = {
#define KILN_X_NAME(e, n) n,
    KILN_BUFFERS(KILN_X_NAME)
#undef KILN_X_NAME
};

const char* kilnStepTypeName(kilnStepType_t t) {
  return (unsigned)t < KILN_NUM_STEP_TYPES ? step_types[t].name : "unknown";
}

bool kilnStepTypeParse(const char* s, kilnStepType_t* out) {
  if (!s) return false;
  for (int i = 0; i < KILN_NUM_STEP_TYPES; i++)
    if (!strcmp(s, step_types[i].name)) {
      *out = (kilnStepType_t)i;
      return true;
    }
  return false;
}

bool kilnStepReceives(kilnStepType_t t) { return (unsigned)t < KILN_NUM_STEP_TYPES && step_types[t].receives; }
bool kilnStepSends(kilnStepType_t t) { return (unsigned)t < KILN_NUM_STEP_TYPES && step_types[t].sends; }
bool kilnStepReduces(kilnStepType_t t) { return (unsigned)t < KILN_NUM_STEP_TYPES && step_types[t].reduces; }
bool kilnStepReadsSrc(kilnStepType_t t) { return (unsigned)t < KILN_NUM_STEP_TYPES && step_types[t].reads_src; }
bool kilnStepWritesDst(kilnStepType_t t) { return (unsigned)t < KILN_NUM_STEP_TYPES && step_types[t].writes_dst; }

const char* kilnBufferName(kilnBuffer_t b) {
  return (unsigned)b < KILN_NUM_BUFFERS ? buffer_names[b] : "unknown";
}

void kilnPlanFree(kilnPlan* p) {
  if (!p) return;
  for (int r = 0; p->gpus && r < p->ngpus; r++) {
    kilnGpu* g = &p->gpus[r];
    for (int i = 0; g->tbs && i < g->ntbs; i++) free(g->tbs[i].steps);
    free(g->tbs);
  }
  free(p->gpus);
  free(p);
}

kilnResult_t kilnPlanCreate(const char* name, kilnColl_t coll, int ngpus, kilnPlan** out) {
  if (!out) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnPlanCreate: NULL out");
  *out = NULL;
  if (ngpus < 1 || ngpus > KILN_MAX_RANKS)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "plan %s: ngpus must be in 1..%d, not %d", name ? name : "",
                        KILN_MAX_RANKS, ngpus);
  if ((unsigned)coll >= KILN_NUM_COLLS)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "plan %s: unknown collective %d", name ? name : "", (int)coll);
  kilnPlan* p = calloc(1, sizeof *p);
  if (!p) return kilnSetError(KILN_ERR_NO_MEMORY, "out of memory creating a plan");
  p->gpus = calloc((size_t)ngpus, sizeof *p->gpus);
  if (!p->gpus) {
    free(p);
    return kilnSetError(KILN_ERR_NO_MEMORY, "out of memory creating a plan of %d GPUs", ngpus);
  }
  snprintf(p->name, sizeof p->name, "%s", name ? name : "");
  p->coll = coll;
  p->proto = KILN_PROTO_SIMPLE;
  p->ngpus = ngpus;
  p->nchannels = 1;
  p->nchunksperloop = 1;
  p->outofplace = true;
  p->min_bytes = 0;
  p->max_bytes = UINT64_MAX;
  p->has_coll = p->has_inplace = p->has_outofplace = p->has_minmax = p->has_ngpus = true;
  p->has_redop = false;
  for (int r = 0; r < ngpus; r++) p->gpus[r].id = r;
  *out = p;
  return KILN_SUCCESS;
}

kilnThreadblock* kilnPlanAddThreadblock(kilnPlan* p, int rank, int send, int recv, int chan) {
  if (!p || rank < 0 || rank >= p->ngpus) return NULL;
  kilnGpu* g = &p->gpus[rank];
  kilnThreadblock* tbs = realloc(g->tbs, (size_t)(g->ntbs + 1) * sizeof *tbs);
  if (!tbs) return NULL;
  g->tbs = tbs;
  kilnThreadblock* tb = &tbs[g->ntbs];
  *tb = (kilnThreadblock){g->ntbs, send, recv, chan, 0, NULL};
  g->ntbs++;
  return tb;
}

kilnStep* kilnPlanAddStep(kilnThreadblock* tb, kilnStepType_t type, kilnBuffer_t srcbuf, int srcoff,
                          kilnBuffer_t dstbuf, int dstoff, int cnt) {
  if (!tb) return NULL;
  /* Grow by doubling: capacity is the next power of two at or above nsteps. */
  int n = tb->nsteps;
  if ((n & (n - 1)) == 0) {
    int cap = n ? 2 * n : 1;
    kilnStep* s = realloc(tb->steps, (size_t)cap * sizeof *s);
    if (!s) return NULL;
    tb->steps = s;
  }
  kilnStep* s = &tb->steps[n];
  *s = (kilnStep){n, type, srcbuf, dstbuf, srcoff, dstoff, cnt, -1, -1, false};
  tb->nsteps++;
  return s;
}

kilnResult_t kilnPlanClone(const kilnPlan* p, kilnPlan** out) {
  if (!p || !out) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnPlanClone: NULL argument");
  *out = NULL;
  kilnPlan* c = calloc(1, sizeof *c);
  if (!c) goto out_nomem;
  *c = *p;
  c->gpus = calloc((size_t)(p->ngpus > 0 ? p->ngpus : 1), sizeof *c->gpus);
  if (!c->gpus) {
    c->ngpus = 0;
    goto out_nomem;
  }
  for (int r = 0; r < p->ngpus; r++) {
    const kilnGpu* g = &p->gpus[r];
    kilnGpu* d = &c->gpus[r];
    *d = *g;
    d->tbs = NULL;
    d->ntbs = 0;
    if (g->ntbs == 0) continue;
    d->tbs = calloc((size_t)g->ntbs, sizeof *d->tbs);
    if (!d->tbs) goto out_nomem;
    d->ntbs = g->ntbs;
    for (int i = 0; i < g->ntbs; i++) {
      d->tbs[i] = g->tbs[i];
      d->tbs[i].steps = NULL;
      if (g->tbs[i].nsteps == 0) continue;
      /* Power-of-two capacity keeps kilnPlanAddStep's growth rule valid on the copy. */
      size_t cap = 1;
      while (cap < (size_t)g->tbs[i].nsteps) cap *= 2;
      d->tbs[i].steps = malloc(cap * sizeof *d->tbs[i].steps);
      if (!d->tbs[i].steps) {
        d->tbs[i].nsteps = 0;
        goto out_nomem;
      }
      memcpy(d->tbs[i].steps, g->tbs[i].steps, (size_t)g->tbs[i].nsteps * sizeof *d->tbs[i].steps);
    }
  }
  *out = c;
  return KILN_SUCCESS;
out_nomem:
  kilnPlanFree(c);
  return kilnSetError(KILN_ERR_NO_MEMORY, "out of memory copying plan %s", p->name);
}

int kilnPlanRefChunks(const kilnPlan* p) {
  if (!p || p->ngpus < 1 || !p->gpus) return 0;
  const kilnGpu* g = &p->gpus[0];
  switch (p->coll) {
    case KILN_COLL_ALLGATHER: return g->o_chunks;
    case KILN_COLL_ALLREDUCE:
    case KILN_COLL_REDUCESCATTER:
    case KILN_COLL_ALLTOALL:
    default: return g->i_chunks;
  }
}
