/* Stage 2, ordering (paper Appendix B.2): a greedy list schedule over the routed transfers.
 * (Link and port occupancy as in synScheduleAsap: α + β, or β alone with X->pipelined.)
 * Each round takes, among transfers whose chunk has arrived at the link's source, the one that
 * can start earliest (link and switch / NIC ports free); ties go by the heuristic:
 *   shortest-path-first: the chunk that travelled the fewest hops so far, then the longest path
 *                        still ahead;
 *   longest-path-first:  the chunk with the longest (latency) path still ahead, then fewest hops.
 * The rounds give each link's chunk order and each port's send / receive order, and the greedy
 * schedule, which stage 3 starts from (and falls back to). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "synth_internal.h"

static double xlat(const synLogical* L, const synXfer* x, double chunk_mb, int cnt) {
  const synLink* l = &L->links[x->link];
  return l->alpha + l->beta * chunk_mb * cnt;
}

/* Each transfer's successors (the transfers that name it a predecessor) as CSR: those of i are
 * (*succ)[(*start)[i] .. (*start)[i + 1]), in increasing order. The caller frees both. */
static kilnResult_t successors(const synXfers* X, int** start, int** succ) {
  const int n = X->n;
  int* st = calloc((size_t)n + 2, sizeof(int));
  int* sc = malloc(((size_t)X->npreds + 1) * sizeof(int));
  if (!st || !sc) {
    free(st);
    free(sc);
    *start = *succ = NULL;
    return kilnSetError(KILN_ERR_NO_MEMORY, "out of memory for the successors of %d transfers", n);
  }
  for (int i = 0; i < n; i++)
    for (int q = 0; q < X->x[i].npred; q++) st[X->preds[X->x[i].pred0 + q] + 1]++;
  for (int i = 0; i < n; i++) st[i + 1] += st[i];
  for (int i = 0; i < n; i++)
    for (int q = 0; q < X->x[i].npred; q++) sc[st[X->preds[X->x[i].pred0 + q]]++] = i;
  for (int i = n; i > 0; i--) st[i] = st[i - 1]; /* the fill moved each start to the next one's */
  st[0] = 0;
  *start = st;
  *succ = sc;
  return KILN_SUCCESS;
}

/* X's orders (CSR over links and ports), in place of those it had: each link's and port's
 * transfers in the order seq lists them (NULL: 0 .. n - 1). */
static kilnResult_t fill_orders(const synLogical* L, synXfers* X, const int* seq) {
  const int n = X->n, nl = L->nlinks, np = L->nports;
  free(X->link_order);
  free(X->link_start);
  free(X->port_order);
  free(X->port_start);
  X->link_order = malloc(((size_t)n + 1) * sizeof(int));
  X->link_start = calloc((size_t)nl + 2, sizeof(int));
  X->port_order = malloc((2 * (size_t)n + 1) * sizeof(int));
  X->port_start = calloc((size_t)np + 2, sizeof(int));
  int* lfill = calloc((size_t)nl + 1, sizeof(int));
  int* pfill = calloc((size_t)np + 1, sizeof(int));
  kilnResult_t r = KILN_SUCCESS;
  if (!X->link_order || !X->link_start || !X->port_order || !X->port_start || !lfill || !pfill) {
    r = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory for the orders of %d transfers", n);
    goto out_free;
  }
  for (int i = 0; i < n; i++) { /* the counts: in any order */
    const synLink* l = &L->links[X->x[i].link];
    X->link_start[X->x[i].link + 1]++;
    if (l->send_port >= 0) X->port_start[l->send_port + 1]++;
    if (l->recv_port >= 0) X->port_start[l->recv_port + 1]++;
  }
  for (int e = 0; e < nl; e++) X->link_start[e + 1] += X->link_start[e];
  for (int p = 0; p < np; p++) X->port_start[p + 1] += X->port_start[p];
  for (int k = 0; k < n; k++) {
    const int i = seq ? seq[k] : k;
    const synLink* l = &L->links[X->x[i].link];
    X->link_order[X->link_start[X->x[i].link] + lfill[X->x[i].link]++] = i;
    if (l->send_port >= 0) X->port_order[X->port_start[l->send_port] + pfill[l->send_port]++] = i;
    if (l->recv_port >= 0) X->port_order[X->port_start[l->recv_port] + pfill[l->recv_port]++] = i;
  }
out_free:
  free(lfill);
  free(pfill);
  return r;
}

/* Longest-path (latency) from each transfer to the end, and hops before it; nsucc and succ are the
 * transfers' successors as successors() lists them. */
static kilnResult_t path_metrics(const synLogical* L, const synXfers* X, const int* nsucc, const int* succ,
                                 double chunk_mb, double* height, int* depth) {
  int n = X->n;
  int* topo = malloc(((size_t)n + 1) * sizeof(int));
  int* indeg = malloc(((size_t)n + 1) * sizeof(int));
  if (!topo || !indeg) {
    free(topo);
    free(indeg);
    return kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
  }
  int h = 0, t = 0;
  for (int i = 0; i < n; i++) {
    indeg[i] = X->x[i].npred;
    if (!indeg[i]) topo[t++] = i;
  }
  while (h < t) {
    int i = topo[h++];
    depth[i] = 0;
    for (int k = 0; k < X->x[i].npred; k++) {
      int p = X->preds[X->x[i].pred0 + k];
      if (depth[p] + 1 > depth[i]) depth[i] = depth[p] + 1;
    }
    for (int k = nsucc[i]; k < nsucc[i + 1]; k++)
      if (--indeg[succ[k]] == 0) topo[t++] = succ[k];
  }
  for (int a = t - 1; a >= 0; a--) {
    int i = topo[a];
    double best = 0;
    for (int k = nsucc[i]; k < nsucc[i + 1]; k++)
      if (height[succ[k]] > best) best = height[succ[k]];
    height[i] = xlat(L, &X->x[i], chunk_mb, 1) + best;
  }
  free(topo);
  free(indeg);
  if (t != n) return kilnSetError(KILN_ERR_INTERNAL, "transfer dependencies form a cycle");
  return KILN_SUCCESS;
}

kilnResult_t synOrder(const synLogical* L, synXfers* X, kilnOrdering_t hz, double chunk_mb) {
  int n = X->n, nl = L->nlinks, np = L->nports;
  kilnResult_t r = KILN_SUCCESS;
  double* height = calloc((size_t)n + 1, sizeof(double));
  int* depth = calloc((size_t)n + 1, sizeof(int));
  int* waiting = malloc(((size_t)n + 1) * sizeof(int));
  double* lfree = calloc((size_t)nl + 1, sizeof(double));
  double* pfree = calloc((size_t)np + 1, sizeof(double));
  int* ready = malloc(((size_t)n + 1) * sizeof(int));
  double* esv = malloc(((size_t)n + 1) * sizeof(double));
  int* seq = malloc(((size_t)n + 1) * sizeof(int));
  int* sstart = NULL;
  int* succ = NULL;
  if (!height || !depth || !waiting || !lfree || !pfree || !ready || !esv || !seq) {
    r = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
    goto out_free;
  }
  r = successors(X, &sstart, &succ);
  if (r == KILN_SUCCESS) r = path_metrics(L, X, sstart, succ, chunk_mb, height, depth);
  if (r != KILN_SUCCESS) goto out_free;
  int nready = 0;
  for (int i = 0; i < n; i++) {
    waiting[i] = X->x[i].npred;
    X->x[i].batch_next = 0;
    if (!waiting[i]) ready[nready++] = i;
  }
  bool lpf = hz == KILN_ORDER_LONGEST_PATH_FIRST;
  double makespan = 0;
  for (int round = 0; round < n; round++) {
    if (nready == 0) {
      r = kilnSetError(KILN_ERR_INTERNAL, "ordering stalled");
      goto out_free;
    }
    /* earliest start of every ready transfer; the heuristic decides among those that can start
     * within the window of the earliest */
    double mines = INFINITY;
    for (int k = 0; k < nready; k++) {
      const synXfer* x = &X->x[ready[k]];
      const synLink* l = &L->links[x->link];
      double es = lfree[x->link];
      for (int q = 0; q < x->npred; q++) {
        double a = X->x[X->preds[x->pred0 + q]].arr_t;
        if (a > es) es = a;
      }
      if (l->send_port >= 0 && pfree[l->send_port] > es) es = pfree[l->send_port];
      if (l->recv_port >= 0 && pfree[l->recv_port] > es) es = pfree[l->recv_port];
      esv[k] = es;
      if (es < mines) mines = es;
    }
    int bi = -1;
    double bes = INFINITY;
    for (int k = 0; k < nready; k++) {
      double es = esv[k];
      if (es > mines + X->window_us + 1e-9) continue;
      bool better;
      if (bi < 0)
        better = true;
      else {
        int i = ready[k], j = ready[bi];
        double dh = height[i] - height[j];
        int dd = depth[i] - depth[j];
        int cmp; /* > 0: i first */
        if (lpf)
          cmp = dh > 1e-9 ? 1 : dh < -1e-9 ? -1 : dd < 0 ? 1 : dd > 0 ? -1 : 0;
        else
          cmp = dd < 0 ? 1 : dd > 0 ? -1 : dh > 1e-9 ? 1 : dh < -1e-9 ? -1 : 0;
        if (cmp == 0) cmp = es < bes - 1e-9 ? 1 : es > bes + 1e-9 ? -1 : (i < j ? 1 : -1);
        if (X->window_us <= 0 && fabs(es - bes) > 1e-9) cmp = es < bes ? 1 : -1;
        better = cmp > 0;
      }
      if (better) {
        bi = k;
        bes = es;
      }
    }
    int i = ready[bi];
    ready[bi] = ready[--nready];
    synXfer* x = &X->x[i];
    const synLink* l = &L->links[x->link];
    x->send_t = bes;
    x->arr_t = bes + xlat(L, x, chunk_mb, 1);
    x->order = round;
    seq[round] = i;
    double busy = X->pipelined ? bes + l->beta * chunk_mb : x->arr_t; /* end of occupancy */
    lfree[x->link] = busy;
    if (l->send_port >= 0) pfree[l->send_port] = busy;
    if (l->recv_port >= 0) pfree[l->recv_port] = busy;
    if (x->arr_t > makespan) makespan = x->arr_t;
    /* newly ready transfers */
    for (int q = sstart[i]; q < sstart[i + 1]; q++)
      if (--waiting[succ[q]] == 0) ready[nready++] = succ[q];
  }
  r = fill_orders(L, X, seq); /* in the greedy sequence */
  if (r != KILN_SUCCESS) goto out_free;
  X->makespan = makespan;
out_free:
  free(height);
  free(depth);
  free(waiting);
  free(lfree);
  free(pfree);
  free(ready);
  free(esv);
  free(seq);
  free(sstart);
  free(succ);
  return r;
}

/* Earliest times given the orders and batch flags (a longest-path fixpoint over the constraint
 * graph: predecessors' arrivals, the previous batch on the link, the previous transfer on each
 * port). Batches share one send time and arrive together after α + m·β. A link or port is busy
 * until the arrival (the paper's model) or, with X->pipelined, only for the β part (α is
 * latency that back-to-back transfers overlap, as kiln's simulator models it). */
double synScheduleAsap(const synLogical* L, synXfers* X, double chunk_mb) {
  int n = X->n;
  int* port_prev = malloc((2 * (size_t)n + 2) * sizeof(int)); /* [2*i], [2*i+1] */
  if (!port_prev) return INFINITY;
  for (int i = 0; i < 2 * n; i++) port_prev[i] = -1;
  for (int p = 0; p < L->nports; p++)
    for (int k = X->port_start[p] + 1; k < X->port_start[p + 1]; k++) {
      int i = X->port_order[k];
      int slot = L->links[X->x[i].link].send_port == p ? 0 : 1;
      port_prev[2 * i + slot] = X->port_order[k - 1];
    }
  for (int i = 0; i < n; i++) X->x[i].send_t = X->x[i].arr_t = 0;
  double makespan = 0;
  for (int pass = 0; pass <= n; pass++) {
    bool changed = false;
    makespan = 0;
    for (int e = 0; e < L->nlinks; e++) {
      int k = X->link_start[e];
      double prev_arr = 0; /* when the link is free again */
      while (k < X->link_start[e + 1]) {
        int k2 = k;
        while (k2 + 1 < X->link_start[e + 1] && X->x[X->link_order[k2]].batch_next) k2++;
        double s = prev_arr;
        for (int b = k; b <= k2; b++) {
          const synXfer* x = &X->x[X->link_order[b]];
          for (int q = 0; q < x->npred; q++) {
            double a = X->x[X->preds[x->pred0 + q]].arr_t;
            if (a > s) s = a;
          }
          int self = X->link_order[b];
          for (int slot = 0; slot < 2; slot++) {
            int pp = port_prev[2 * self + slot];
            if (pp < 0 || X->x[pp].link == e) continue; /* same link: covered by prev_arr */
            double free_at = X->pipelined ? X->x[pp].arr_t - L->links[X->x[pp].link].alpha : X->x[pp].arr_t;
            if (free_at > s) s = free_at;
          }
        }
        double a = s + xlat(L, &X->x[X->link_order[k]], chunk_mb, k2 - k + 1);
        for (int b = k; b <= k2; b++) {
          synXfer* x = &X->x[X->link_order[b]];
          if (x->send_t != s || x->arr_t != a) {
            x->send_t = s;
            x->arr_t = a;
            changed = true;
          }
        }
        if (a > makespan) makespan = a;
        prev_arr = X->pipelined ? a - L->links[e].alpha : a;
        k = k2 + 1;
      }
    }
    if (!changed) break;
  }
  free(port_prev);
  X->makespan = makespan;
  return makespan;
}

/* ---- list scheduling at scale ---- */

/* Busy intervals of one link or port: sorted, disjoint, touching ones merged. */
typedef struct busyLine {
  int n, cap;
  double* s;
  double* e;
} busyLine;

/* Index of the first interval ending after t. */
static int busy_first_after(const busyLine* b, double t) {
  int lo = 0, hi = b->n;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (b->e[mid] <= t)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* The end of the first busy interval [t, t+len) overlaps, or t when it overlaps none. */
static double busy_conflict(const busyLine* b, double t, double len) {
  int i = busy_first_after(b, t);
  return i < b->n && b->s[i] < t + len ? b->e[i] : t;
}

static bool busy_insert(busyLine* b, double s, double e) {
  if (e <= s) return true;
  int i = busy_first_after(b, s);
  bool prev = i > 0 && b->e[i - 1] >= s, next = i < b->n && b->s[i] <= e;
  if (prev && next) {
    b->e[i - 1] = b->e[i];
    memmove(&b->s[i], &b->s[i + 1], sizeof(double) * (size_t)(b->n - i - 1));
    memmove(&b->e[i], &b->e[i + 1], sizeof(double) * (size_t)(b->n - i - 1));
    b->n--;
    return true;
  }
  if (prev) {
    b->e[i - 1] = e;
    return true;
  }
  if (next) {
    b->s[i] = s;
    return true;
  }
  if (b->n == b->cap) {
    int cap = b->cap ? 2 * b->cap : 8;
    double* ns = realloc(b->s, sizeof(double) * (size_t)cap);
    if (ns) b->s = ns;
    double* ne = realloc(b->e, sizeof(double) * (size_t)cap);
    if (ne) b->e = ne;
    if (!ns || !ne) return false;
    b->cap = cap;
  }
  memmove(&b->s[i + 1], &b->s[i], sizeof(double) * (size_t)(b->n - i));
  memmove(&b->e[i + 1], &b->e[i], sizeof(double) * (size_t)(b->n - i));
  b->s[i] = s;
  b->e[i] = e;
  b->n++;
  return true;
}

/* The ready queue: transfers by ready time, then the heuristic, then index. */
typedef struct readyHeap {
  int n;
  int* id;
  const double* rt;
  const double* height;
  const int* depth;
  const int* tie;
  bool lpf;
} readyHeap;

static bool ready_before(const readyHeap* h, int a, int b) {
  if (h->rt[a] != h->rt[b]) return h->rt[a] < h->rt[b];
  double dh = h->height[a] - h->height[b];
  int dd = h->depth[a] - h->depth[b];
  if (h->lpf) {
    if (fabs(dh) > 1e-9) return dh > 0;
    if (dd) return dd < 0;
  } else {
    if (dd) return dd < 0;
    if (fabs(dh) > 1e-9) return dh > 0;
  }
  if (h->tie[a] != h->tie[b]) return h->tie[a] < h->tie[b];
  return a < b;
}

static void ready_push(readyHeap* h, int x) {
  int i = h->n++;
  h->id[i] = x;
  while (i > 0) {
    int p = (i - 1) / 2;
    if (!ready_before(h, h->id[i], h->id[p])) break;
    int t = h->id[i];
    h->id[i] = h->id[p];
    h->id[p] = t;
    i = p;
  }
}

static int ready_pop(readyHeap* h) {
  int top = h->id[0];
  h->id[0] = h->id[--h->n];
  for (int i = 0;;) {
    int l = 2 * i + 1, r = l + 1, m = i;
    if (l < h->n && ready_before(h, h->id[l], h->id[m])) m = l;
    if (r < h->n && ready_before(h, h->id[r], h->id[m])) m = r;
    if (m == i) break;
    int t = h->id[i];
    h->id[i] = h->id[m];
    h->id[m] = t;
    i = m;
  }
  return top;
}

/* qsort has no context argument; ordering runs one at a time per thread */
static _Thread_local const synXfers* g_order_X;
static int cmp_by_send(const void* a, const void* b) {
  const synXfer* x = &g_order_X->x[*(const int*)a];
  const synXfer* y = &g_order_X->x[*(const int*)b];
  if (x->send_t != y->send_t) return x->send_t < y->send_t ? -1 : 1;
  return x->order < y->order ? -1 : x->order > y->order;
}

kilnResult_t synOrderList(const synLogical* L, synXfers* X, kilnOrdering_t hz, double chunk_mb) {
  int n = X->n, nl = L->nlinks, np = L->nports;
  kilnResult_t r = KILN_SUCCESS;
  double* height = calloc((size_t)n + 1, sizeof(double));
  int* depth = calloc((size_t)n + 1, sizeof(int));
  double* rt = calloc((size_t)n + 1, sizeof(double));
  int* waiting = malloc(((size_t)n + 1) * sizeof(int));
  int* sstart = NULL;
  int* succ = NULL;
  busyLine* lines = calloc((size_t)nl + (size_t)np + 1, sizeof(busyLine));
  int* tie = malloc(((size_t)n + 1) * sizeof(int));
  readyHeap h = {0,   malloc(((size_t)n + 1) * sizeof(int)), rt, height, depth,
                 tie, hz == KILN_ORDER_LONGEST_PATH_FIRST};
  if (!height || !depth || !rt || !waiting || !lines || !h.id || !tie) {
    r = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory ordering %d transfers", n);
    goto out_free;
  }
  r = successors(X, &sstart, &succ);
  if (r == KILN_SUCCESS) r = path_metrics(L, X, sstart, succ, chunk_mb, height, depth);
  if (r != KILN_SUCCESS) goto out_free;
  for (int i = 0; i < n; i++) tie[i] = X->x[i].tie;
  for (int i = 0; i < n; i++) {
    waiting[i] = X->x[i].npred;
    X->x[i].batch_next = 0;
    if (!waiting[i]) ready_push(&h, i);
  }
  double makespan = 0;
  for (int round = 0; round < n; round++) {
    if (h.n == 0) {
      r = kilnSetError(KILN_ERR_INTERNAL, "ordering stalled");
      goto out_free;
    }
    int i = ready_pop(&h);
    synXfer* x = &X->x[i];
    const synLink* l = &L->links[x->link];
    double hold = (X->pipelined ? 0 : l->alpha) + l->beta * chunk_mb;
    int res[3] = {x->link, l->send_port >= 0 ? nl + l->send_port : -1,
                  l->recv_port >= 0 ? nl + l->recv_port : -1};
    double start = rt[i];
    for (bool moved = true; moved;) {
      moved = false;
      for (int k = 0; k < 3; k++) {
        if (res[k] < 0) continue;
        double t2 = busy_conflict(&lines[res[k]], start, hold);
        if (t2 > start) {
          start = t2;
          moved = true;
        }
      }
    }
    for (int k = 0; k < 3; k++)
      if (res[k] >= 0 && !busy_insert(&lines[res[k]], start, start + hold)) {
        r = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory ordering %d transfers", n);
        goto out_free;
      }
    x->send_t = start;
    x->arr_t = start + l->alpha + l->beta * chunk_mb;
    x->order = round;
    if (x->arr_t > makespan) makespan = x->arr_t;
    for (int q = sstart[i]; q < sstart[i + 1]; q++) {
      int sx = succ[q];
      if (x->arr_t > rt[sx]) rt[sx] = x->arr_t;
      if (--waiting[sx] == 0) ready_push(&h, sx);
    }
  }
  /* orders (CSR), each link's and port's transfers by send time */
  r = fill_orders(L, X, NULL);
  if (r != KILN_SUCCESS) goto out_free;
  g_order_X = X;
  for (int e = 0; e < nl; e++)
    qsort(X->link_order + X->link_start[e], (size_t)(X->link_start[e + 1] - X->link_start[e]), sizeof(int),
          cmp_by_send);
  for (int p = 0; p < np; p++)
    qsort(X->port_order + X->port_start[p], (size_t)(X->port_start[p + 1] - X->port_start[p]), sizeof(int),
          cmp_by_send);
  X->makespan = makespan;
out_free:
  for (int k = 0; lines && k < nl + np; k++) {
    free(lines[k].s);
    free(lines[k].e);
  }
  free(lines);
  free(height);
  free(depth);
  free(rt);
  free(waiting);
  free(sstart);
  free(succ);
  free(h.id);
  free(tie);
  return r;
}
