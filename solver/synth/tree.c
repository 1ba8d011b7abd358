/* NCCL's double binary tree as a plan, the floor under synthesized allreduces.
 *
 * A synthesized allreduce across nodes is TACCL's composition, a reduce-scatter and then an
 * allgather, each phase waiting on the NVLink hops to and from the GPUs with NICs; on nodes whose
 * GPUs share one NIC, and on small nodes, NCCL's tree, which pipelines its reduction and broadcast
 * through the NICs at once, simulates faster (docs/synthesis.md). So that a synthesized allreduce
 * is never slower than NCCL's tree in the simulator, kilnSynthesize also lowers the trees the
 * simulator's baseline models (kilnBaselineTrees: two mirrored trees per NIC, each a chain inside
 * the nodes and a binary tree over them, each carrying its share in slices) and keeps them where
 * they are faster.
 *
 * On each tree a rank reduces its children's slices into its own (one threadblock per child but
 * the last, chained by dependencies), reduces the last child's with them as it sends the sum to
 * its parent (rrs), takes the result back from its parent and forwards it to its last child (rcs),
 * and sends it to the other children; the root sends its sum down. A threadblock carries one
 * direction of one edge, so slices pipeline up and down the tree as in the baseline. */
#include <math.h>
#include <stdlib.h>

#include "kiln_internal.h"
#include "synth_internal.h"

#define TREE_MAX_STEPS 4000000.0 /* larger trees are cut in fewer slices */

/* Appends threadblock (send, recv, chan) to rank v; its id, or -1 when out of memory. */
static int add_tb(kilnPlan* p, int v, int send, int recv, int chan) {
  kilnThreadblock* tb = kilnPlanAddThreadblock(p, v, send, recv, chan);
  return tb ? tb->id : -1;
}

/* Appends a step to threadblock id of rank v waiting on step c of threadblock dep (-1: none). */
static bool add_step(kilnPlan* p, int v, int id, kilnStepType_t ty, kilnBuffer_t sb, int so, kilnBuffer_t db,
                     int dof, int dep, int c) {
  kilnStep* st = kilnPlanAddStep(&p->gpus[v].tbs[id], ty, sb, so, db, dof, 1);
  if (!st) return false;
  if (dep >= 0) {
    st->depid = dep;
    st->deps = c;
  }
  return true;
}

kilnResult_t synTreePlan(const kilnTopology* t, uint64_t ref, int slice_delta, bool inplace, const char* name,
                         kilnPlan** out) {
  *out = NULL;
  const int n = t->nranks;
  if (n < 2 || t->nodes < 2) return KILN_SUCCESS;
  int T = 0, C = 0, *par = NULL;
  kilnResult_t r = kilnBaselineTrees(t, ref, &T, &C, &par);
  if (r == KILN_ERR_UNSUPPORTED) return KILN_SUCCESS; /* no baseline tree: no floor */
  if (r != KILN_SUCCESS) return r;
  /* about 4 steps per rank, tree and slice; past TREE_MAX_STEPS fewer, larger slices */
  const double cap = floor(TREE_MAX_STEPS / (4.0 * T * n));
  C += slice_delta;
  if (C > cap) C = (int)cap + slice_delta;
  const int K = T * C;
  if (C < 1 || ref < (uint64_t)K) {
    free(par);
    return KILN_SUCCESS;
  }
  kilnPlan* p = NULL;
  int *kids = malloc(sizeof(int) * (size_t)n), *first = malloc(sizeof(int) * ((size_t)n + 1));
  int *U = malloc(sizeof(int) * (size_t)n), *Dn = malloc(sizeof(int) * (size_t)n);
  if (!kids || !first || !U || !Dn) {
    r = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
    goto out_free;
  }
  r = kilnPlanCreate(name, KILN_COLL_ALLREDUCE, n, &p);
  if (r != KILN_SUCCESS) goto out_free;
  p->nchannels = T;
  p->inplace = inplace;
  p->outofplace = !inplace;
  p->nchunksperloop = K;
  for (int q = 0; q < n; q++) {
    p->gpus[q].i_chunks = K;
    p->gpus[q].o_chunks = inplace ? 0 : K;
    p->gpus[q].s_chunks = 0;
  }
  const kilnBuffer_t I = KILN_BUF_INPUT, D = inplace ? KILN_BUF_INPUT : KILN_BUF_OUTPUT;
  bool ok = true;
  for (int tree = 0; tree < T && ok; tree++) {
    const int* pa = &par[(size_t)tree * n];
    /* children of each rank, in rank order: kids[first[v] .. first[v + 1]) */
    for (int v = 0; v <= n; v++) first[v] = 0;
    for (int v = 0; v < n; v++)
      if (pa[v] >= 0) first[pa[v] + 1]++;
    for (int v = 0; v < n; v++) first[v + 1] += first[v];
    for (int v = 0; v < n; v++) U[v] = first[v]; /* where v's next child goes */
    for (int v = 0; v < n; v++)
      if (pa[v] >= 0) kids[U[pa[v]]++] = v;
    for (int v = 0; v < n && ok; v++) {
      const int pv = pa[v], k = first[v + 1] - first[v];
      const int* ch = &kids[first[v]];
      /* the children reduced in threadblocks of their own: all of them at the root, all but the
       * last elsewhere (the last one's reduction goes with the send to the parent) */
      const int own = pv < 0 ? k : k - 1;
      for (int j = 0; j < own && ok; j++) {
        U[j] = add_tb(p, v, -1, ch[j], tree);
        ok = U[j] >= 0;
        for (int c = 0; c < C && ok; c++) {
          const int x = tree * C + c;
          ok = add_step(p, v, U[j], KILN_STEP_RECV_REDUCE_COPY, j == 0 ? I : D, x, D, x,
                        j > 0 ? U[j - 1] : -1, c);
        }
      }
      const int sum = own > 0 ? U[own - 1] : -1; /* where the children's sum so far is complete */
      int down = -1;                             /* where the result is in D */
      if (pv >= 0) {
        const int A = add_tb(p, v, pv, k > 0 ? ch[k - 1] : -1, tree);
        ok = ok && A >= 0;
        for (int c = 0; c < C && ok; c++) {
          const int x = tree * C + c;
          if (k > 0)
            ok =
                add_step(p, v, A, KILN_STEP_RECV_REDUCE_SEND, own > 0 ? D : I, x, own > 0 ? D : I, x, sum, c);
          else
            ok = add_step(p, v, A, KILN_STEP_SEND, I, x, I, x, -1, c);
        }
        const int B = ok ? add_tb(p, v, k > 0 ? ch[k - 1] : -1, pv, tree) : -1;
        ok = ok && B >= 0;
        for (int c = 0; c < C && ok; c++) {
          const int x = tree * C + c;
          ok = add_step(p, v, B, k > 0 ? KILN_STEP_RECV_COPY_SEND : KILN_STEP_RECV, D, x, D, x, A, c);
        }
        down = B;
      } else {
        down = sum;
      }
      for (int j = 0; j < own && ok; j++) { /* the result down to the children not served above */
        Dn[j] = add_tb(p, v, ch[j], -1, tree);
        ok = Dn[j] >= 0;
        for (int c = 0; c < C && ok; c++) {
          const int x = tree * C + c;
          ok = add_step(p, v, Dn[j], KILN_STEP_SEND, D, x, D, x, down, c);
        }
      }
    }
  }
  if (!ok) r = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
  if (r == KILN_SUCCESS) kilnPlanMarkHasdep(p);
out_free:
  free(par);
  free(kids);
  free(first);
  free(U);
  free(Dn);
  if (r != KILN_SUCCESS) {
    kilnPlanFree(p);
    return r;
  }
  *out = p;
  return KILN_SUCCESS;
}
