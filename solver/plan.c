/* Plan model: step-type and buffer tables, builders (create, add threadblock, add step), deep
 * copy, free, reference chunk count, and the lowering of TACCL's copies into steps. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/plan.h"
#include "plan_model.h"

static const struct {
  const char* name;
  bool receives, sends, reduces, reads_src, writes_dst, runtime;
  kilnStepPeer_t peer;
} step_types[] = {
#define KILN_X_ROW(e, n, rv, sd, rd, rs, wd, rt, pe) {n, rv, sd, rd, rs, wd, rt, pe},
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
  if (!s || !out) return false;
  for (int i = 0; i < KILN_NUM_STEP_TYPES; i++)
    if (!strcmp(s, step_types[i].name)) {
      *out = (kilnStepType_t)i;
      return true;
    }
  return false;
}

bool kilnStepReceives(kilnStepType_t t) {
  return (unsigned)t < KILN_NUM_STEP_TYPES && step_types[t].receives;
}
bool kilnStepSends(kilnStepType_t t) { return (unsigned)t < KILN_NUM_STEP_TYPES && step_types[t].sends; }
bool kilnStepReduces(kilnStepType_t t) { return (unsigned)t < KILN_NUM_STEP_TYPES && step_types[t].reduces; }
bool kilnStepReadsSrc(kilnStepType_t t) {
  return (unsigned)t < KILN_NUM_STEP_TYPES && step_types[t].reads_src;
}
bool kilnStepWritesDst(kilnStepType_t t) {
  return (unsigned)t < KILN_NUM_STEP_TYPES && step_types[t].writes_dst;
}
bool kilnStepRuntimeRuns(kilnStepType_t t) {
  return (unsigned)t < KILN_NUM_STEP_TYPES && step_types[t].runtime;
}
kilnStepPeer_t kilnStepPeerRole(kilnStepType_t t) {
  return (unsigned)t < KILN_NUM_STEP_TYPES ? step_types[t].peer : KILN_PEER_NONE;
}

const char* kilnBufferName(kilnBuffer_t b) {
  return (unsigned)b < KILN_NUM_BUFFERS ? buffer_names[b] : "unknown";
}

void kilnPlanFree(kilnPlan* p) {
  if (!p) return;
  for (int r = 0; p->gpus && r < p->ngpus; r++) {
    kilnGpu* g = &p->gpus[r];
    for (int i = 0; g->tbs && i < g->ntbs; i++) free(g->tbs[i].steps);
    free(g->tbs);
    free(g->copies);
  }
  free(p->gpus);
  free(p);
}

kilnResult_t kilnPlanCreate(const char* name, kilnColl_t coll, int ngpus, kilnPlan** out) {
  if (!out) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnPlanCreate: NULL out");
  *out = NULL;
  if (ngpus < 1 || ngpus > KILN_MAX_RANKS)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "plan %s: ngpus must be in 1..%d, not %d",
                        name ? name : "", KILN_MAX_RANKS, ngpus);
  if ((unsigned)coll >= KILN_NUM_COLLS)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "plan %s: unknown collective %d", name ? name : "",
                        (int)coll);
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

kilnStep* kilnPlanStepsAlloc(int n) {
  size_t cap = 1;
  while (cap < (size_t)n) cap *= 2;
  return calloc(cap, sizeof(kilnStep));
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
  *s = (kilnStep){n, type, srcbuf, dstbuf, srcoff, dstoff, cnt, -1, -1, false, -1, -1};
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
    d->copies = NULL;
    d->ncopies = 0;
    if (g->ncopies > 0) {
      d->copies = malloc((size_t)g->ncopies * sizeof *d->copies);
      if (!d->copies) goto out_nomem;
      memcpy(d->copies, g->copies, (size_t)g->ncopies * sizeof *d->copies);
      d->ncopies = g->ncopies;
    }
    if (g->ntbs == 0) continue;
    d->tbs = calloc((size_t)g->ntbs, sizeof *d->tbs);
    if (!d->tbs) goto out_nomem;
    d->ntbs = g->ntbs;
    for (int i = 0; i < g->ntbs; i++) {
      d->tbs[i] = g->tbs[i];
      d->tbs[i].steps = NULL;
      if (g->tbs[i].nsteps == 0) continue;
      d->tbs[i].steps = kilnPlanStepsAlloc(g->tbs[i].nsteps);
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

bool kilnPlanInPlaceOnly(const kilnPlan* p) {
  if (!p || p->ngpus < 1 || !p->gpus) return false;
  const int i = p->gpus[0].i_chunks, o = p->gpus[0].o_chunks;
  switch (p->coll) {
    case KILN_COLL_ALLGATHER: return i == 0;
    case KILN_COLL_REDUCESCATTER: return o == 0;
    case KILN_COLL_ALLTOALL:
    case KILN_COLL_ALLREDUCE: return i == 0 || o == 0;
    default: return false;
  }
}

bool kilnPlanServes(const kilnPlan* p, bool inplace) {
  if (!p || p->ngpus < 1 || !p->gpus) return false;
  if (p->coll == KILN_COLL_ALLTOALL && inplace) return false;
  if (kilnPlanInPlaceOnly(p)) return inplace;
  return inplace ? p->inplace : p->outofplace;
}

bool kilnPlanHasCopies(const kilnPlan* p) {
  for (int r = 0; p && p->gpus && r < p->ngpus; r++)
    if (p->gpus[r].ncopies > 0) return true;
  return false;
}

/* True when chunks [off, off+cnt) of buffer b on rank g may be a chunk that one of g's copies
 * reads or writes (any input or output chunk when the plan may run in place, where the two
 * buffers alias). */
static bool touches_copied(const kilnPlan* p, const kilnGpu* g, kilnBuffer_t b, int off, int cnt) {
  if (b == KILN_BUF_SCRATCH) return false;
  if (p->inplace) return true;
  for (int i = 0; i < g->ncopies; i++) {
    const kilnCopy* cp = &g->copies[i];
    int lo = b == KILN_BUF_INPUT ? cp->i_off : cp->o_off;
    if (off < lo + cp->cnt && lo < off + cnt) return true;
  }
  return false;
}

/* Index of the first step of tb that touches a copied chunk, or -1. */
static int first_copied_access(const kilnPlan* p, const kilnGpu* g, const kilnThreadblock* tb) {
  for (int s = 0; s < tb->nsteps; s++) {
    const kilnStep* st = &tb->steps[s];
    int cnt = st->cnt > 0 ? st->cnt : 1;
    if (kilnStepReadsSrc(st->type) && touches_copied(p, g, st->srcbuf, st->srcoff, cnt)) return s;
    if ((kilnStepWritesDst(st->type) || st->type == KILN_STEP_REDUCE) &&
        touches_copied(p, g, st->dstbuf, st->dstoff, cnt))
      return s;
  }
  return -1;
}

/* Lowers rank r's copies (see kilnPlanLowerCopies). On failure the GPU is unchanged. */
static kilnResult_t lower_gpu_copies(kilnPlan* p, int r) {
  kilnGpu* g = &p->gpus[r];
  for (int i = 0; i < g->ncopies; i++) {
    const kilnCopy* cp = &g->copies[i];
    if (cp->i_off < 0 || cp->o_off < 0 || cp->cnt < 1 || cp->i_off > g->i_chunks - cp->cnt ||
        cp->o_off > g->o_chunks - cp->cnt)
      return kilnSetError(KILN_ERR_INVALID_ARGUMENT,
                          "plan %s rank %d copy %d: i_off=%d o_off=%d cnt=%d is outside i_chunks=%d "
                          "o_chunks=%d",
                          p->name, r, i, cp->i_off, cp->o_off, cp->cnt, g->i_chunks, g->o_chunks);
  }
  const int ntbs = g->ntbs + 1, last = g->ncopies - 1;
  kilnThreadblock* tbs = calloc((size_t)ntbs, sizeof *tbs);
  int* ins = malloc((size_t)ntbs * sizeof *ins); /* [new tb] step index of the inserted nop, or -1 */
  if (!tbs || !ins) goto out_nomem;
  tbs[0] = (kilnThreadblock){0, -1, -1, 0, 0, NULL};
  for (int i = 0; i < g->ncopies; i++)
    if (!kilnPlanAddStep(&tbs[0], KILN_STEP_COPY, KILN_BUF_INPUT, g->copies[i].i_off, KILN_BUF_OUTPUT,
                         g->copies[i].o_off, g->copies[i].cnt))
      goto out_nomem;
  ins[0] = -1;
  bool waited = false;
  for (int t = 0; t < g->ntbs; t++) {
    const kilnThreadblock* old = &g->tbs[t];
    kilnThreadblock* tb = &tbs[t + 1];
    *tb = *old;
    tb->id = t + 1;
    tb->steps = NULL;
    tb->nsteps = 0;
    int at = first_copied_access(p, g, old);
    bool nop = at >= 0 && old->steps[at].depid >= 0;
    ins[t + 1] = nop ? at : -1;
    int n = old->nsteps + (nop ? 1 : 0);
    if (n == 0) continue;
    tb->steps = kilnPlanStepsAlloc(n);
    if (!tb->steps) goto out_nomem;
    for (int s = 0, d = 0; s < old->nsteps; s++) {
      if (nop && s == at)
        tb->steps[d++] =
            (kilnStep){0, KILN_STEP_NOP, KILN_BUF_INPUT, KILN_BUF_INPUT, 0, 0, 0, 0, last, false, -1, -1};
      kilnStep st = old->steps[s];
      if (st.depid >= 0) st.depid++;
      if (!nop && s == at) {
        st.depid = 0;
        st.deps = last;
      }
      tb->steps[d++] = st;
    }
    tb->nsteps = n;
    for (int s = 0; s < n; s++) tb->steps[s].s = s;
    waited = waited || at >= 0;
  }
  /* Dependencies on a threadblock that got a nop point one step further from it on. */
  for (int t = 1; t < ntbs; t++)
    for (int s = 0; s < tbs[t].nsteps; s++) {
      kilnStep* st = &tbs[t].steps[s];
      if (st->depid >= 1 && st->depid < ntbs && ins[st->depid] >= 0 && st->deps >= ins[st->depid]) st->deps++;
    }
  tbs[0].steps[last].hasdep = waited;
  for (int t = 0; t < g->ntbs; t++) free(g->tbs[t].steps);
  free(g->tbs);
  free(g->copies);
  g->tbs = tbs;
  g->ntbs = ntbs;
  g->copies = NULL;
  g->ncopies = 0;
  free(ins);
  return KILN_SUCCESS;
out_nomem:
  for (int t = 0; tbs && t < ntbs; t++) free(tbs[t].steps);
  free(tbs);
  free(ins);
  return kilnSetError(KILN_ERR_NO_MEMORY, "out of memory lowering the copies of plan %s rank %d", p->name, r);
}

kilnResult_t kilnPlanLowerCopies(kilnPlan* p) {
  if (!p) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnPlanLowerCopies: NULL plan");
  if (!kilnPlanHasCopies(p)) return KILN_SUCCESS;
  /* Work on a copy and swap it in, so that a failure leaves p as it was. */
  kilnPlan* c = NULL;
  kilnResult_t res = kilnPlanClone(p, &c);
  if (res != KILN_SUCCESS) return res;
  for (int r = 0; r < c->ngpus; r++)
    if (c->gpus[r].ncopies > 0 && (res = lower_gpu_copies(c, r)) != KILN_SUCCESS) goto out_free_copy;
  kilnPlan old = *p;
  *p = *c;
  *c = old;
out_free_copy:
  kilnPlanFree(c);
  return res;
}

/* Whether chunk ranges [a, a+n) of buffer ab and [b, b+m) of buffer bb share a chunk. */
static bool ranges_overlap(kilnBuffer_t ab, int a, int n, kilnBuffer_t bb, int b, int m) {
  return ab == bb && a < b + m && b < a + n;
}

/* The step of g that st waits on, or NULL (none, or one outside g's steps). */
static kilnStep* awaited_step(const kilnGpu* g, const kilnStep* st) {
  if (st->depid < 0 || st->depid >= g->ntbs || st->deps < 0 || st->deps >= g->tbs[st->depid].nsteps)
    return NULL;
  return &g->tbs[st->depid].steps[st->deps];
}

/* awaited[first[t] + s]: some step of g waits on step s of threadblock t (first[t]: threadblock
 * t's first step in g's threadblock-major order; first has ntbs + 1 entries). */
static void steps_awaited(const kilnGpu* g, const int* first, bool* awaited) {
  for (int i = 0; i < first[g->ntbs]; i++) awaited[i] = false;
  for (int t = 0; t < g->ntbs; t++)
    for (int s = 0; s < g->tbs[t].nsteps; s++) {
      const kilnStep* st = &g->tbs[t].steps[s];
      if (awaited_step(g, st)) awaited[first[st->depid] + st->deps] = true;
    }
}

/* kilnStepFoldable with rank r's awaited steps known. */
static int foldable(const kilnPlan* p, int r, int t, int s, const int* first, const bool* awaited) {
  const kilnGpu* g = &p->gpus[r];
  const bool mayBeInPlace = p->inplace || g->o_chunks == 0;
  const kilnThreadblock* tb = &g->tbs[t];
  const kilnStep* h = &tb->steps[s];
  if (h->type != KILN_STEP_COPY && h->type != KILN_STEP_REDUCE) return 0;
  /* The head's own source: a user buffer may alias the destination in an in-place call. */
  const bool headUser = h->srcbuf != KILN_BUF_SCRATCH && h->dstbuf != KILN_BUF_SCRATCH;
  if (ranges_overlap(h->srcbuf, h->srcoff, h->cnt, h->dstbuf, h->dstoff, h->cnt) ||
      (headUser && mayBeInPlace && h->srcbuf != h->dstbuf))
    return 0;
  int k = 0;
  for (int j = s + 1; j < tb->nsteps && k < KILN_FUSE_MAX - 1; j++) {
    const kilnStep* f = &tb->steps[j];
    if (f->type != KILN_STEP_REDUCE || f->dstbuf != h->dstbuf || f->dstoff != h->dstoff || f->cnt != h->cnt ||
        f->depid >= 0)
      break;
    if (ranges_overlap(f->srcbuf, f->srcoff, f->cnt, h->dstbuf, h->dstoff, h->cnt)) break;
    /* Input and output are one buffer in an in-place call. */
    if (mayBeInPlace && f->srcbuf != KILN_BUF_SCRATCH && f->dstbuf != KILN_BUF_SCRATCH &&
        f->srcbuf != f->dstbuf)
      break;
    /* The step before j publishes nothing once folded: nobody may wait on it. */
    if (awaited[first[t] + j - 1]) break;
    k++;
  }
  return k;
}

/* first[t] (threadblock t's first step, threadblock-major) for t = 0..ntbs and the awaited flags
 * of rank r's steps, in one allocation (free first); NULL when out of memory. */
static int* rank_index(const kilnGpu* g, bool** awaited) {
  int n = 0;
  for (int t = 0; t < g->ntbs; t++) n += g->tbs[t].nsteps;
  int* first = malloc((size_t)(g->ntbs + 1) * sizeof(int) + (size_t)(n > 0 ? n : 1) * sizeof(bool));
  if (!first) return NULL;
  first[0] = 0;
  for (int t = 0; t < g->ntbs; t++) first[t + 1] = first[t] + g->tbs[t].nsteps;
  *awaited = (bool*)(first + g->ntbs + 1);
  steps_awaited(g, first, *awaited);
  return first;
}

int kilnStepFoldable(const kilnPlan* p, int r, int t, int s) {
  if (!p || r < 0 || r >= p->ngpus) return 0;
  const kilnGpu* g = &p->gpus[r];
  if (t < 0 || t >= g->ntbs || s < 0 || s >= g->tbs[t].nsteps) return 0;
  bool* awaited = NULL;
  int* first = rank_index(g, &awaited);
  if (!first) return 0; /* folding nothing is always right */
  const int k = foldable(p, r, t, s, first, awaited);
  free(first);
  return k;
}

kilnResult_t kilnPlanRankSteps(const kilnPlan* p, int r, bool* publishes, int* fold) {
  if (!p || r < 0 || r >= p->ngpus)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnPlanRankSteps: no rank %d", r);
  const kilnGpu* g = &p->gpus[r];
  bool* awaited = NULL;
  int* first = rank_index(g, &awaited);
  if (!first) return kilnSetError(KILN_ERR_NO_MEMORY, "out of memory indexing plan %s rank %d", p->name, r);
  for (int t = 0; t < g->ntbs; t++)
    for (int s = 0; s < g->tbs[t].nsteps; s++) {
      const int i = first[t] + s;
      if (publishes) publishes[i] = g->tbs[t].steps[s].hasdep || awaited[i];
    }
  for (int t = 0; fold && t < g->ntbs; t++)
    for (int s = 0; s < g->tbs[t].nsteps; s++) {
      const int i = first[t] + s, k = foldable(p, r, t, s, first, awaited);
      fold[i] = k;
      for (int j = 1; j <= k; j++) fold[i + j] = -1;
      s += k;
    }
  free(first);
  return KILN_SUCCESS;
}

void kilnPlanMarkHasdep(kilnPlan* p) {
  for (int r = 0; p && r < p->ngpus; r++) {
    kilnGpu* g = &p->gpus[r];
    for (int t = 0; t < g->ntbs; t++)
      for (int s = 0; s < g->tbs[t].nsteps; s++) {
        kilnStep* w = awaited_step(g, &g->tbs[t].steps[s]);
        if (w) w->hasdep = true;
      }
  }
}

bool kilnPlanHasMemorySteps(const kilnPlan* p) {
  for (int r = 0; p && p->gpus && r < p->ngpus; r++)
    for (int t = 0; p->gpus[r].tbs && t < p->gpus[r].ntbs; t++)
      for (int s = 0; s < p->gpus[r].tbs[t].nsteps; s++)
        if (kilnStepPeerRole(p->gpus[r].tbs[t].steps[s].type) != KILN_PEER_NONE) return true;
  return false;
}

int kilnPlanMaxTbs(const kilnPlan* p) {
  int m = 0;
  for (int r = 0; r < p->ngpus; r++)
    if (p->gpus[r].ntbs > m) m = p->gpus[r].ntbs;
  return m;
}

kilnProto_t kilnStepProtocol(const kilnPlan* p, const kilnStep* st) {
  if (st && st->proto >= 0 && st->proto < KILN_NUM_PROTOS) return (kilnProto_t)st->proto;
  return p ? p->proto : KILN_PROTO_SIMPLE;
}

kilnResult_t kilnPlanCheckRuntime(const kilnPlan* p) {
  if (!p) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnPlanCheckRuntime: NULL plan");
  /* LL12 is a protocol of put steps (lines in the peer's scratch): a plan of LL12 with send or
   * receive steps would need FIFO lines of it. The first such step is reported after the loop, so
   * that a step the runtime does not run anywhere in the plan is reported first. */
  int ll12_r = -1, ll12_t = -1, ll12_s = -1;
  for (int r = 0; p->gpus && r < p->ngpus; r++)
    for (int t = 0; p->gpus[r].tbs && t < p->gpus[r].ntbs; t++)
      for (int s = 0; s < p->gpus[r].tbs[t].nsteps; s++) {
        const kilnStepType_t ty = p->gpus[r].tbs[t].steps[s].type;
        if ((unsigned)ty >= KILN_NUM_STEP_TYPES) continue;
        if (!kilnStepRuntimeRuns(ty))
          return kilnSetError(KILN_ERR_UNSUPPORTED,
                              "plan %s rank %d tb %d step %d: kiln's GPU runtime does not run %s steps",
                              p->name, r, t, s, kilnStepTypeName(ty));
        if (p->proto == KILN_PROTO_LL12 && ll12_r < 0 && (kilnStepSends(ty) || kilnStepReceives(ty)))
          ll12_r = r, ll12_t = t, ll12_s = s;
      }
  if (ll12_r >= 0)
    return kilnSetError(KILN_ERR_UNSUPPORTED,
                        "plan %s rank %d tb %d step %d: kiln's GPU runtime has no LL12 protocol for send and "
                        "receive steps (LL12 is a protocol of put steps)",
                        p->name, ll12_r, ll12_t, ll12_s);
  return KILN_SUCCESS;
}
