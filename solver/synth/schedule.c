/* Stage 3, contiguity and exact scheduling (paper Appendix B.3): with each link's and port's
 * order fixed by stage 2, a MILP decides which consecutive chunks on a high-α link travel
 * together as one send, and gives exact send and arrival times. "High α" is relative to the chunk:
 * α at least 2% of the chunk's β cost (the paper merges on InfiniBand only; at small chunks an
 * NVLink's α matters as much). Without such pairs the problem is an LP whose optimum is the
 * earliest-time schedule, computed directly.
 *
 * Variables: send[x], arr[x] per transfer, together[a] per candidate pair (a, b) (consecutive
 * on a high-α link, b ready when a is sent), and the makespan T. With M the greedy makespan (an upper bound on every time
 * of an optimal schedule, so all times are bounded by it):
 *   arr[x] >= send[x] + α + β                      (one chunk; NVLink)
 *   send[x] >= arr[p]                              (p a predecessor of x)
 *   transfers of candidate pairs also have done[x], the time the batch up to x is through:
 *   done[x] >= send[x] + α + β, arr[x] >= done[x]
 *   pair (a, b) on a link:  together -> send[b] = send[a], done[b] >= done[a] + β, arr[a] >= arr[b]
 *                          !together -> send[b] >= arr[a]
 *   consecutive (a, b) on a port, other links: send[b] >= arr[a]
 *   T >= arr[x]
 * The greedy schedule (no pair together) is handed to GLPK as the first incumbent. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "synth_internal.h"

typedef struct schedProgress {
  const synSchedParams* p;
  int rows, cols, ints;
} schedProgress;

static void sched_progress(void* user, double inc, double bound, double gap, double el) {
  schedProgress* c = user;
  kilnSynthProgress pr = {
      KILN_SYNTH_STAGE_SCHEDULE, "solving", c->rows, c->cols, -1, c->ints, inc, bound, gap, el, 0, 0, NAN, 0};
  c->p->progress(&pr, c->p->user);
}

/* Greedy contiguity: merges each candidate pair in turn and keeps the merge if the earliest-time
 * makespan drops; stops at the time budget. Returns the makespan. */
static double greedy_merge(const synLogical* L, synXfers* X, const char* pc, double chunk_mb, double cur,
                           double budget_s) {
  double t0 = synNow();
  for (int i = 0; i < X->n; i++) {
    if (!pc[i]) continue;
    if (synNow() - t0 > budget_s) break;
    X->x[i].batch_next = 1;
    double t = synScheduleAsap(L, X, chunk_mb);
    if (t < cur - 1e-9)
      cur = t;
    else
      X->x[i].batch_next = 0;
  }
  return synScheduleAsap(L, X, chunk_mb);
}

/* Time windows from precedence alone (valid with or without merges, which only lengthen
 * transfers): es[x], the earliest send; tail[x], the least time from x's send to the end. */
static bool windows(const synLogical* L, const synXfers* X, double chunk_mb, double* es, double* tail) {
  int n = X->n;
  int* indeg = malloc(((size_t)n + 1) * sizeof(int));
  int* topo = malloc(((size_t)n + 1) * sizeof(int));
  int* sstart = calloc((size_t)n + 2, sizeof(int));
  int* succ = malloc(((size_t)X->npreds + 1) * sizeof(int));
  int* fill = malloc(((size_t)n + 1) * sizeof(int));
  bool ok = indeg && topo && sstart && succ && fill;
  if (ok) {
    for (int i = 0; i < n; i++)
      for (int q = 0; q < X->x[i].npred; q++) sstart[X->preds[X->x[i].pred0 + q] + 1]++;
    for (int i = 0; i < n; i++) sstart[i + 1] += sstart[i];
    memcpy(fill, sstart, (size_t)n * sizeof(int));
    for (int i = 0; i < n; i++)
      for (int q = 0; q < X->x[i].npred; q++) succ[fill[X->preds[X->x[i].pred0 + q]]++] = i;
    int h = 0, t = 0;
    for (int i = 0; i < n; i++)
      if (!(indeg[i] = X->x[i].npred)) topo[t++] = i;
    while (h < t) {
      int i = topo[h++];
      es[i] = 0;
      for (int q = 0; q < X->x[i].npred; q++) {
        int pi = X->preds[X->x[i].pred0 + q];
        const synLink* l = &L->links[X->x[pi].link];
        double v = es[pi] + l->alpha + l->beta * chunk_mb;
        if (v > es[i]) es[i] = v;
      }
      for (int k = sstart[i]; k < sstart[i + 1]; k++)
        if (--indeg[succ[k]] == 0) topo[t++] = succ[k];
    }
    ok = t == n;
    for (int a = n - 1; ok && a >= 0; a--) {
      int i = topo[a];
      double best = 0;
      for (int k = sstart[i]; k < sstart[i + 1]; k++)
        if (tail[succ[k]] > best) best = tail[succ[k]];
      const synLink* l = &L->links[X->x[i].link];
      tail[i] = l->alpha + l->beta * chunk_mb + best;
    }
  }
  free(indeg);
  free(topo);
  free(sstart);
  free(succ);
  free(fill);
  return ok;
}

/* Larger contiguity problems stop at the greedy merging: GLPK's LPs over tens of thousands of
 * rows take seconds per node. */
#define SCHED_MILP_MAX_PAIRS 400
#define SCHED_MILP_MAX_TRANSFERS 1500

kilnResult_t synSchedule(const synLogical* L, synXfers* X, const synSchedParams* p, synSchedInfo* info) {
  memset(info, 0, sizeof *info);
  int n = X->n;
  double greedy = synScheduleAsap(L, X, p->chunk_mb);
  info->used_greedy = true;
  /* candidate pairs: consecutive on a high-α link (α at least 2% of a chunk's β cost) where the
   * second chunk is ready by the time the first one is sent in the greedy schedule, so that
   * merging them cannot delay the first */
  char* pc = calloc((size_t)n + 1, 1);
  char* needdone = calloc((size_t)n + 1, 1);
  if (!pc || !needdone) {
    free(pc);
    free(needdone);
    return kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
  }
  int npairs = 0;
  for (int e = 0; e < L->nlinks; e++) {
    const synLink* l = &L->links[e];
    if (l->alpha < 0.02 * l->beta * p->chunk_mb) continue;
    for (int k = X->link_start[e]; k + 1 < X->link_start[e + 1]; k++) {
      int a = X->link_order[k], b = X->link_order[k + 1];
      double avail = 0;
      for (int q = 0; q < X->x[b].npred; q++) {
        double t = X->x[X->preds[X->x[b].pred0 + q]].arr_t;
        if (t > avail) avail = t;
      }
      /* b ready when a starts, and the link busy back to back (else nothing to save) */
      if (avail > X->x[a].send_t + l->alpha + 1e-9) continue;
      if (X->x[b].send_t > X->x[a].arr_t + 1e-9) continue;
      pc[a] = 1;
      needdone[a] = needdone[b] = 1;
      npairs++;
    }
  }
  if (npairs == 0 || n == 0) {
    free(pc);
    free(needdone);
    info->optimal = true;
    return KILN_SUCCESS;
  }
  double tm = synNow();
  double merged =
      greedy_merge(L, X, pc, p->chunk_mb, greedy,
                   p->time_limit_s < p->stall_s || p->stall_s <= 0 ? p->time_limit_s : p->stall_s);
  tm = synNow() - tm;
  if (merged < greedy - 1e-9) info->used_greedy = false;
  if (p->progress) {
    kilnSynthProgress pr = {
        KILN_SYNTH_STAGE_SCHEDULE, "greedy merging", -1, -1, -1, npairs, merged, NAN, NAN, tm, 0, 0, NAN, 0};
    p->progress(&pr, p->user);
  }
  /* The MILP searches combinations of merges; where no merge on its own shortens the schedule it
   * found none that did on the paper's cases either (all nine of Table 2 kept the greedy schedule,
   * bench/synth_bench.c), so it is not run: it would take its stall time for nothing. */
  if (npairs > SCHED_MILP_MAX_PAIRS || n > SCHED_MILP_MAX_TRANSFERS || !(merged < greedy - 1e-9)) {
    free(pc);
    free(needdone);
    info->ints = npairs;
    return KILN_SUCCESS;
  }

  kilnResult_t r = KILN_SUCCESS;
  milpModel m;
  milpInit(&m);
  milpResult res = {0};
  double *slo = NULL, *shi = NULL, *alo = NULL, *ahi = NULL; /* time windows */
  int* pairvar = malloc(((size_t)n + 1) * sizeof(int));      /* column of together(a, next) or -1 */
  int* donecol = malloc(((size_t)n + 1) * sizeof(int));
  double* warm = NULL;
  if (!pairvar || !donecol) {
    r = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
    goto out_free;
  }
  /* every time lies in a window from precedence and the horizon H (the greedy makespan); each
   * big-M is the widest gap its two windows allow */
  double H = greedy * (1 + 1e-7) + 1e-6;
  slo = malloc(((size_t)n + 1) * sizeof(double));
  shi = malloc(((size_t)n + 1) * sizeof(double));
  alo = malloc(((size_t)n + 1) * sizeof(double));
  ahi = malloc(((size_t)n + 1) * sizeof(double));
  if (!slo || !shi || !alo || !ahi || !windows(L, X, p->chunk_mb, slo, shi)) {
    r = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
    goto out_free;
  }
  const double* tail = shi; /* shi[i] holds tail[i] until it becomes H - tail[i] below */
  for (int i = 0; i < n; i++) {
    const synLink* l = &L->links[X->x[i].link];
    double lat = l->alpha + l->beta * p->chunk_mb;
    double ti = tail[i];
    alo[i] = slo[i] + lat;
    ahi[i] = H - (ti - lat);
    shi[i] = H - ti;
    if (shi[i] < slo[i]) shi[i] = slo[i];
    if (ahi[i] < alo[i]) ahi[i] = alo[i];
  }
  int T = milpAddCol(&m, 0, H, 1.0, false);
  int s0 = m.ncols;
  for (int i = 0; i < n; i++) milpAddCol(&m, slo[i] - 1e-6, shi[i] + 1e-6, 0, false); /* send */
  int a0 = m.ncols;
  for (int i = 0; i < n; i++) milpAddCol(&m, alo[i] - 1e-6, ahi[i] + 1e-6, 0, false); /* arr */
  for (int i = 0; i < n; i++) pairvar[i] = -1;
  for (int i = 0; i < n; i++) donecol[i] = -1;
  for (int i = 0; i < n; i++) {
    const synXfer* x = &X->x[i];
    const synLink* l = &L->links[x->link];
    double lat = l->alpha + l->beta * p->chunk_mb;
    int row = milpAddRow(&m, lat, MILP_INF);
    if (needdone[i]) {
      donecol[i] = milpAddCol(&m, alo[i] - 1e-6, ahi[i] + 1e-6, 0, false);
      milpAdd(&m, row, donecol[i], 1);
      milpAdd(&m, row, s0 + i, -1);
      row = milpAddRow(&m, 0, MILP_INF);
      milpAdd(&m, row, a0 + i, 1);
      milpAdd(&m, row, donecol[i], -1);
    } else {
      milpAdd(&m, row, a0 + i, 1);
      milpAdd(&m, row, s0 + i, -1);
    }
    for (int q = 0; q < x->npred; q++) {
      row = milpAddRow(&m, 0, MILP_INF);
      milpAdd(&m, row, s0 + i, 1);
      milpAdd(&m, row, a0 + X->preds[x->pred0 + q], -1);
    }
    row = milpAddRow(&m, 0, MILP_INF);
    milpAdd(&m, row, T, 1);
    milpAdd(&m, row, a0 + i, -1);
  }
  for (int e = 0; e < L->nlinks; e++) {
    const synLink* l = &L->links[e];
    double bw = l->beta * p->chunk_mb;
    for (int k = X->link_start[e]; k + 1 < X->link_start[e + 1]; k++) {
      int a = X->link_order[k], b = X->link_order[k + 1];
      int row;
      if (!pc[a]) {
        row = milpAddRow(&m, 0, MILP_INF);
        milpAdd(&m, row, s0 + b, 1);
        milpAdd(&m, row, a0 + a, -1);
        continue;
      }
      int t = milpAddCol(&m, 0, 1, 0, true);
      pairvar[a] = t;
      double M1 = ahi[a] - slo[b] + 1e-5, M3 = shi[b] - slo[a] + 1e-5;
      double M4 = bw + ahi[a] - alo[b] + 1e-5, M5 = ahi[b] - alo[a] + 1e-5;
      if (M1 < 0) M1 = 0;
      if (M3 < 0) M3 = 0;
      if (M4 < bw) M4 = bw;
      if (M5 < 0) M5 = 0;
      row = milpAddRow(&m, 0, MILP_INF); /* send[b] - arr[a] + M t >= 0 */
      milpAdd(&m, row, s0 + b, 1);
      milpAdd(&m, row, a0 + a, -1);
      milpAdd(&m, row, t, M1);
      row = milpAddRow(&m, 0, MILP_INF); /* send[b] >= send[a] */
      milpAdd(&m, row, s0 + b, 1);
      milpAdd(&m, row, s0 + a, -1);
      row = milpAddRow(&m, -MILP_INF, M3); /* send[b] - send[a] + M t <= M */
      milpAdd(&m, row, s0 + b, 1);
      milpAdd(&m, row, s0 + a, -1);
      milpAdd(&m, row, t, M3);
      row = milpAddRow(&m, bw - M4, MILP_INF); /* done[b] - done[a] - M t >= β - M */
      milpAdd(&m, row, donecol[b], 1);
      milpAdd(&m, row, donecol[a], -1);
      milpAdd(&m, row, t, -M4);
      row = milpAddRow(&m, -M5, MILP_INF); /* arr[a] - arr[b] - M t >= -M */
      milpAdd(&m, row, a0 + a, 1);
      milpAdd(&m, row, a0 + b, -1);
      milpAdd(&m, row, t, -M5);
    }
  }
  for (int pt = 0; pt < L->nports; pt++)
    for (int k = X->port_start[pt]; k + 1 < X->port_start[pt + 1]; k++) {
      int a = X->port_order[k], b = X->port_order[k + 1];
      if (X->x[a].link == X->x[b].link) continue; /* consecutive on the link too */
      int row = milpAddRow(&m, 0, MILP_INF);
      milpAdd(&m, row, s0 + b, 1);
      milpAdd(&m, row, a0 + a, -1);
    }
  info->rows = m.nrows;
  info->cols = m.ncols;
  info->ints = milpIntegers(&m);
  warm = calloc((size_t)m.ncols, sizeof(double));
  if (!warm) {
    r = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
    goto out_free;
  }
  /* warm start: the greedy-merged schedule */
  warm[T] = merged;
  for (int i = 0; i < n; i++) {
    warm[s0 + i] = X->x[i].send_t;
    warm[a0 + i] = X->x[i].arr_t;
    if (pairvar[i] >= 0) warm[pairvar[i]] = X->x[i].batch_next;
  }
  for (int e = 0; e < L->nlinks; e++) {
    const synLink* l = &L->links[e];
    int q = 0;
    for (int k = X->link_start[e]; k < X->link_start[e + 1]; k++) {
      int i = X->link_order[k];
      if (donecol[i] >= 0) warm[donecol[i]] = X->x[i].send_t + l->alpha + l->beta * p->chunk_mb * (q + 1);
      q = X->x[i].batch_next ? q + 1 : 0;
    }
  }
  if (p->progress) {
    kilnSynthProgress pr = {KILN_SYNTH_STAGE_SCHEDULE,
                            "model built",
                            m.nrows,
                            m.ncols,
                            m.nnz,
                            info->ints,
                            greedy,
                            NAN,
                            NAN,
                            0,
                            0,
                            0,
                            NAN,
                            0};
    p->progress(&pr, p->user);
  }
  schedProgress sp = {p, m.nrows, m.ncols, info->ints};
  milpParams mp = {
      p->time_limit_s, p->mip_gap, false, false, p->stall_s, warm, p->progress ? sched_progress : NULL, &sp,
      p->stop};
  r = milpGlpk.solve(&m, &mp, &res);
  if (r != KILN_SUCCESS) goto out_free;
  info->optimal = res.status == MILP_OPTIMAL;
  if (res.x) {
    char* keep = malloc((size_t)n + 1);
    if (!keep) {
      r = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
      goto out_free;
    }
    for (int i = 0; i < n; i++) keep[i] = (char)X->x[i].batch_next;
    for (int i = 0; i < n; i++) X->x[i].batch_next = pairvar[i] >= 0 && res.x[pairvar[i]] > 0.5;
    double t = synScheduleAsap(L, X, p->chunk_mb);
    if (t < merged - 1e-9) {
      info->used_greedy = false;
    } else {
      for (int i = 0; i < n; i++) X->x[i].batch_next = keep[i];
      synScheduleAsap(L, X, p->chunk_mb);
    }
    free(keep);
  }
out_free:
  free(res.x);
  free(warm);
  free(pairvar);
  free(donecol);
  free(pc);
  free(needdone);
  free(slo);
  free(shi);
  free(alo);
  free(ahi);
  milpFree(&m);
  return r;
}
