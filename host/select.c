/*
 * The selector's rule (kiln/registry.h, "The selector"): which of kiln's candidates, or NCCL,
 * serves a collective call. Pure: what it needs to know of a communicator it asks through
 * host/select.h's view, so the CPU tests run it on tables of their own, and the drop-in and the
 * benchmarks on kiln communicators (kilnSelect, host/select_comm.c).
 */
#include "select.h"

#include <stddef.h>

#include "../solver/params.h"

const char* kilnSymAlgoName(kilnSymAlgo_t a) {
  switch (a) {
    case KILN_SYM_ALLREDUCE_ONESHOT: return "sym-allreduce-oneshot";
    case KILN_SYM_ALLREDUCE_TWOSHOT: return "sym-allreduce-twoshot";
    case KILN_SYM_REDUCESCATTER: return "sym-reducescatter";
    case KILN_SYM_ALLGATHER: return "sym-allgather";
    case KILN_SYM_ALLTOALL: return "sym-alltoall";
    default: return "none";
  }
}

kilnColl_t kilnSymAlgoColl(kilnSymAlgo_t a) {
  switch (a) {
    case KILN_SYM_ALLREDUCE_ONESHOT:
    case KILN_SYM_ALLREDUCE_TWOSHOT: return KILN_COLL_ALLREDUCE;
    case KILN_SYM_REDUCESCATTER: return KILN_COLL_REDUCESCATTER;
    case KILN_SYM_ALLGATHER: return KILN_COLL_ALLGATHER;
    default: return KILN_COLL_ALLTOALL;
  }
}

const char* kilnSelectReasonText(kilnSelectReason_t r) {
  static const char* const text[] = {
#define KILN_X_REASON_TEXT(name, t) t,
      KILN_SELECT_REASONS(KILN_X_REASON_TEXT)
#undef KILN_X_REASON_TEXT
  };
  return (unsigned)r < KILN_NUM_SELECT_REASONS ? text[r] : "unknown reason";
}

const char* kilnChoiceName(const kilnChoice* c) {
  if (!c) return "nccl";
  if (c->serve == KILN_SERVE_PLAN && c->entry && c->entry->name) return c->entry->name;
  if (c->serve == KILN_SERVE_SYM) return kilnSymAlgoName(c->sym);
  return "nccl";
}

/* Where the symmetric kernels serve by default: reference bytes (kiln/registry.h) per collective
 * and rank count; outside these ranges (8 ranks: not measured) the plans serve. On 2 and 4 ranks
 * they beat the baked plans and NCCL at every size but for allreduce, which is one-shot up to a
 * size and two-shot above it; with two ranks one-shot moves no more than two-shot and has one
 * phase less, so it goes further there.
 * 4x H200, graphs: allreduce 256 KiB one-shot 6.10 us, two-shot 6.47; 512 KiB 10.30 vs 8.32 (2026-11-27).
 * 2x H200, graphs: allgather, alltoall 512 KiB 3.59, 3.63 us, the plans 7.30, 6.92 (2026-11-27).
 * 2x and 4x H200, graphs: 56/56 rows 16 B-1 GiB at or above NCCL (bench/baselines/h200x[24]-2026-11-29). */
typedef struct {
  int nranks;
  kilnSymAlgo_t algo;
  bool inplace, outofplace;
  uint64_t minBytes, maxBytes;
} symRange;
#define KIB(x) ((uint64_t)(x) << 10)
#define MIB(x) ((uint64_t)(x) << 20)
#define ANY UINT64_MAX
static const symRange kSymRanges[] = {
    {4, KILN_SYM_ALLREDUCE_ONESHOT, true, true, 0, KIB(256)},       /* one-shot to 256 KiB */
    {4, KILN_SYM_ALLREDUCE_TWOSHOT, true, true, KIB(256) + 1, ANY}, /* two-shot above */
    {4, KILN_SYM_REDUCESCATTER, true, true, 0, ANY},                /* every size */
    {4, KILN_SYM_ALLGATHER, true, true, 0, ANY},                    /* every size */
    {4, KILN_SYM_ALLTOALL, false, true, 0, ANY},                    /* every size, out of place */
    {2, KILN_SYM_ALLREDUCE_ONESHOT, true, true, 0, MIB(4)},         /* one-shot to 4 MiB */
    {2, KILN_SYM_ALLREDUCE_TWOSHOT, true, true, MIB(4) + 1, ANY},   /* two-shot above */
    {2, KILN_SYM_REDUCESCATTER, true, true, 0, ANY},                /* every size */
    {2, KILN_SYM_ALLGATHER, true, true, 0, ANY},                    /* every size */
    {2, KILN_SYM_ALLTOALL, false, true, 0, ANY},                    /* every size, out of place */
};

kilnSymAlgo_t kilnSelectSymRange(kilnColl_t coll, int nranks, uint64_t bytes, bool inplace) {
  for (size_t i = 0; i < sizeof kSymRanges / sizeof kSymRanges[0]; i++) {
    const symRange* r = &kSymRanges[i];
    if (r->nranks != nranks || kilnSymAlgoColl(r->algo) != coll) continue;
    if (bytes < r->minBytes || bytes > r->maxBytes || !(inplace ? r->inplace : r->outofplace)) continue;
    return r->algo;
  }
  return KILN_SYM_NONE;
}

/* A rank alone in its process takes an allreduce through kiln's staging unless its output is in a
 * window (the peers' plain buffers are out of its reach); above this size NCCL's ring is faster:
 * 512 MiB on 4 ranks, no limit on others (on 2 ranks kiln's staged 1 GiB is 1.13x NCCL).
 * 4x H200, a process per GPU, graphs: allreduce 1 GiB 0.98-0.99x NCCL, 512 MiB 1.003-1.005x (2026-11-28). */
uint64_t kilnSelectStagedARMax(int nranks) {
  if (kilnParamIsSet(KILN_PARAM_StagedARMaxBytes)) return (uint64_t)kilnParam(KILN_PARAM_StagedARMaxBytes);
  return nranks == 4 ? MIB(512) : UINT64_MAX;
}

/* The kinds of default candidates (rule 4), tried in this order after the loaded plans: the first
 * kind with a candidate that takes and can run the call serves it. Retiring the symmetric kernels
 * is taking out their line. */
typedef enum { DEFAULT_SYM, DEFAULT_BAKED } defaultKind;
static const defaultKind kDefaults[] = {
    DEFAULT_SYM,   /* the symmetric-memory kernels in their measured ranges (kSymRanges) */
    DEFAULT_BAKED, /* the plans baked into the library */
};

bool kilnSelectSymServes(int nranks) {
  bool listed = false;
  for (size_t k = 0; k < sizeof kDefaults / sizeof kDefaults[0]; k++) listed |= kDefaults[k] == DEFAULT_SYM;
  for (size_t i = 0; listed && i < sizeof kSymRanges / sizeof kSymRanges[0]; i++)
    if (kSymRanges[i].nranks == nranks) return true;
  return false;
}

/* The first by kilnRegistryPrefer of plans[0..n) that are loaded (or baked), take the call and can
 * run it; -1 when none, with *why the most telling reason none could (left alone when none took
 * the call at all). */
static int pick_plans(const kilnSelectView* v, const kilnRegistryEntry* const* plans, int n,
                      const kilnCall* call, uint64_t bytes, bool inplace, bool loaded,
                      kilnSelectReason_t* why) {
  int best = -1;
  for (int i = 0; i < n; i++) {
    const kilnRegistryEntry* e = plans[i];
    if (!kilnRegistryFits(e, call->coll, v->nranks, bytes, inplace) || kilnRegistryIsLoaded(e) != loaded)
      continue;
    if (v->planRuns && !v->planRuns(v->ctx, i)) {
      if (*why != KILN_SELECT_CAPTURE_GROW) *why = KILN_SELECT_CANNOT_RUN;
      continue;
    }
    if (call->captured && v->planHolds && !v->planHolds(v->ctx, i)) {
      *why = KILN_SELECT_CAPTURE_GROW;
      continue;
    }
    if (best < 0 || kilnRegistryPrefer(e, plans[best], call->dtype, call->op)) best = i;
  }
  return best;
}

static kilnChoice choice(kilnServe_t serve, int plan, const kilnRegistryEntry* e, kilnSymAlgo_t sym,
                         kilnSelectReason_t why) {
  kilnChoice c = {serve, plan, e, sym, why};
  return c;
}

kilnChoice kilnSelectRule(const kilnSelectView* v, const kilnRegistryEntry* const* plans, int nplans,
                          const kilnCall* call) {
  const kilnChoice nccl = choice(KILN_SERVE_NCCL, -1, NULL, KILN_SYM_NONE, KILN_SELECT_NO_PLAN);
  /* 1. What kiln does not have. */
  if ((int)call->op < 0 || call->op >= KILN_NUM_REDOPS || (int)call->dtype < 0 ||
      call->dtype >= KILN_NUM_DTYPES || (int)call->coll < 0 || call->coll >= KILN_NUM_COLLS) {
    kilnChoice c = nccl;
    c.reason = KILN_SELECT_OP_UNKNOWN;
    return c;
  }
  const uint64_t bytes = kilnRegistryCallBytes(call->coll, v->nranks, call->count, call->dtype);
  const bool inplace =
      kilnRegistryCallInPlace(call->coll, v->rank, call->sendbuf, call->recvbuf, call->count, call->dtype);
  kilnSelectReason_t why = KILN_SELECT_NO_PLAN;
  /* 2. Loaded plans first: the user asked for them. */
  int i = pick_plans(v, plans, nplans, call, bytes, inplace, true, &why);
  if (i >= 0) return choice(KILN_SERVE_PLAN, i, plans[i], KILN_SYM_NONE, KILN_SELECT_LOADED);
  /* 3. A large allreduce through kiln's staging, where NCCL is faster. */
  if (call->coll == KILN_COLL_ALLREDUCE && v->alone && bytes > kilnSelectStagedARMax(v->nranks) &&
      !(v->zeroCopy && v->zeroCopy(v->ctx))) {
    kilnChoice c = nccl;
    c.reason = KILN_SELECT_STAGED_AR;
    return c;
  }
  /* 4. The defaults, kind by kind. */
  for (size_t k = 0; k < sizeof kDefaults / sizeof kDefaults[0]; k++) {
    if (kDefaults[k] == DEFAULT_SYM) {
      const kilnSymAlgo_t a =
          v->symOn ? kilnSelectSymRange(call->coll, v->nranks, bytes, inplace) : KILN_SYM_NONE;
      if (a != KILN_SYM_NONE && (!v->symFits || v->symFits(v->ctx, a)))
        return choice(KILN_SERVE_SYM, -1, NULL, a, KILN_SELECT_SYM_RANGE);
    } else {
      i = pick_plans(v, plans, nplans, call, bytes, inplace, false, &why);
      if (i >= 0) return choice(KILN_SERVE_PLAN, i, plans[i], KILN_SYM_NONE, KILN_SELECT_BAKED);
    }
  }
  /* 5. NCCL. */
  kilnChoice c = nccl;
  c.reason = why;
  return c;
}
