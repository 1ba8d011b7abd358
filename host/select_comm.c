/*
 * kilnSelect (kiln/runtime.h): the selector's rule (host/select.c) asked about a kiln
 * communicator. Each answer given here is one every rank gives alike for the same call
 * (host/select.h says why of each).
 */
#include <stdlib.h>

#include "kiln/registry.h"
#include "runtime_internal.h"
#include "select.h"

/* The question's context: the communicator, the call, the candidates. */
typedef struct {
  struct kilnComm* c;
  const kilnCall* call;
  const kilnPlanSet* set;
  bool inplace;
} asked;

static bool sym_fits(void* ctx, kilnSymAlgo_t a) {
  const asked* q = ctx;
  return kilnSymFits(q->c, a, q->call->count, q->call->dtype, q->inplace);
}

static bool zero_copy(void* ctx) {
  const asked* q = ctx;
  return kilnSymIsDirect(q->c, KILN_SYM_ALLREDUCE_TWOSHOT, q->call->sendbuf, q->call->recvbuf, q->call->count,
                         q->call->dtype);
}

static bool plan_runs(void* ctx, int i) {
  const asked* q = ctx;
  const kilnPlan* p = q->set->plans ? q->set->plans[i] : NULL;
  if (!p && kilnRegistryPlan(q->set->entries[i], &p) != KILN_SUCCESS) return false;
  if (!kilnPlanSupports(p, q->call->count, q->call->dtype, q->call->op, q->inplace)) return false;
  if (!q->set->execs) return true;
  /* What the exec needs of the buffers too (a plan reaching the peers' buffers needs them in
   * added windows): alike on every rank that added the same windows. */
  return q->set->execs[i] && kilnExecServes(q->set->execs[i], q->call->sendbuf, q->call->recvbuf,
                                            q->call->count, q->call->dtype, q->call->op);
}

static bool plan_holds(void* ctx, int i) {
  const asked* q = ctx;
  return !q->set->execs || kilnExecScratchHolds(q->set->execs[i], q->call->count, q->call->dtype);
}

/* Every registry entry of c's rank count whose plan is made for c's nodes (the candidates when the
 * caller names none); *n of them, NULL when there are none or no memory (free the array). */
static const kilnRegistryEntry** registry_for(const struct kilnComm* c, int* n) {
  const int total = kilnRegistryCount();
  const kilnRegistryEntry** v = total > 0 ? calloc((size_t)total, sizeof *v) : NULL;
  *n = 0;
  for (int i = 0; v && i < total; i++) {
    const kilnRegistryEntry* e = kilnRegistryAt(i);
    const kilnPlan* p = NULL;
    if (!e || e->nranks != c->nranks || kilnRegistryPlan(e, &p) != KILN_SUCCESS) continue;
    if ((p->nnodes > 0 ? p->nnodes : 1) == c->nnodes) v[(*n)++] = e;
  }
  return v;
}

kilnChoice kilnSelect(kilnComm_t c, const kilnPlanSet* plans, const kilnCall* call) {
  kilnChoice none = {KILN_SERVE_NCCL, -1, NULL, KILN_SYM_NONE, KILN_SELECT_NO_KILN};
  if (!c || !call) return none;
  kilnPlanSet all = {0, NULL, NULL, NULL};
  const kilnRegistryEntry** mine = NULL;
  if (!plans) {
    mine = registry_for(c, &all.n);
    all.entries = mine;
    plans = &all;
  }
  asked q = {c, call, plans, false};
  if ((unsigned)call->coll < KILN_NUM_COLLS && (unsigned)call->dtype < KILN_NUM_DTYPES)
    q.inplace =
        kilnRegistryCallInPlace(call->coll, c->rank, call->sendbuf, call->recvbuf, call->count, call->dtype);
  kilnSelectView v = {
      .nranks = c->nranks,
      .rank = c->rank,
      .symOn = c->symHalf > 0 && !c->symOff && c->nnodes == 1,
      .alone = !c->wholeInProcess,
      .ctx = &q,
      .symFits = sym_fits,
      .zeroCopy = zero_copy,
      .planRuns = plan_runs,
      .planHolds = plan_holds,
  };
  const kilnChoice out = kilnSelectRule(&v, plans->entries, plans->n, call);
  free(mine);
  return out;
}
