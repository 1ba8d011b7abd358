/* Lowering (paper section 6): scheduled chunk transfers -> a plan in the MSCCL format.
 *
 * 1. Buffer allocation: a chunk lives in the input buffer where the collective puts it, in the
 *    output buffer where the collective wants it, and in scratch at relays and at ranks that
 *    accumulate partial sums of a reducescatter. In-place plans (MSCCL's form: allgather without
 *    an input buffer, allreduce and reducescatter without an output buffer) keep contributions
 *    and results where the in-place collective has them.
 * 2. Instruction generation: each transfer becomes a send on its source and a receive (copy or
 *    reduce) on its destination; transfers sent together (stage 3) with contiguous buffers become
 *    one instruction of several chunks.
 * 3. Threadblock allocation: a rank's receives from peer X share one threadblock, its sends to
 *    peer Y another (or, with pair_peers, receives from and sends to one peer share one, halving
 *    the threadblocks); where a receive feeds a send (relays, reductions on their way up), the two
 *    threadblocks are merged into one (recv=X, send=Y) and the pair becomes one fused instruction
 *    (rcs, rrs, rrcs). Steps run in schedule order, so pairs of threadblocks see sends and
 *    receives in the same order.
 * 4. Dependency insertion: per buffer slot, a step waits for the last writer and (when it writes)
 *    for the readers since, when they run on another threadblock; optionally (port_deps) a send
 *    also waits for the rank's previous send on the same switch port, so that threadblocks keep
 *    the schedule's port order instead of all starting at once. A step has one dependency, so
 *    extra ones become nop steps in front of it.
 * 5. Instances: every threadblock is copied n times over channels; chunk c becomes sub-chunks
 *    c*n .. c*n+n-1, instance i working on c*n+i. */
#include <stdlib.h>
#include <string.h>

#include "synth_internal.h"

#define SLOT(buf, off) ((int)(buf) * (1 << 24) + (off))
#define SLOT_BUF(s) ((kilnBuffer_t)((s) >> 24))
#define SLOT_OFF(s) ((s) & ((1 << 24) - 1))

typedef struct lop {
  kilnStepType_t type;
  int rank, tb, key;
  int src, dst, cnt; /* slots */
  int xin, xout;     /* transfers received / sent by this op, -1 if none */
  int dep0, ndeps;   /* in the dependency array */
  int step;          /* final step index */
} lop;

/* A map of 64-bit keys to ints (open addressing, linear probing), for what is keyed by (rank,
 * chunk): dense tables of every pair grow with the cube of the ranks in an alltoall. */
typedef struct intMap {
  size_t cap; /* a power of two */
  size_t n;
  int64_t* key; /* -1: empty */
  int* val;
} intMap;

static bool map_init(intMap* m, size_t expect) {
  m->cap = 16;
  while (m->cap < 2 * expect + 16) m->cap *= 2;
  m->n = 0;
  m->key = malloc(m->cap * sizeof *m->key);
  m->val = malloc(m->cap * sizeof *m->val);
  if (!m->key || !m->val) return false;
  for (size_t i = 0; i < m->cap; i++) m->key[i] = -1;
  return true;
}

static void map_free(intMap* m) {
  free(m->key);
  free(m->val);
  memset(m, 0, sizeof *m);
}

static size_t map_slot(const intMap* m, int64_t k) {
  uint64_t h = (uint64_t)k * 0x9e3779b97f4a7c15ull;
  size_t i = (size_t)(h >> 17) & (m->cap - 1);
  while (m->key[i] != -1 && m->key[i] != k) i = (i + 1) & (m->cap - 1);
  return i;
}

/* The value of k, or -1 when absent. */
static int map_get(const intMap* m, int64_t k) {
  size_t i = map_slot(m, k);
  return m->key[i] == k ? m->val[i] : -1;
}

/* Sets k to v; false when out of memory. */
static bool map_put(intMap* m, int64_t k, int v) {
  if (2 * (m->n + 1) > m->cap) {
    intMap g;
    if (!map_init(&g, m->cap)) {
      map_free(&g);
      return false;
    }
    for (size_t i = 0; i < m->cap; i++)
      if (m->key[i] != -1) {
        size_t j = map_slot(&g, m->key[i]);
        g.key[j] = m->key[i];
        g.val[j] = m->val[i];
        g.n++;
      }
    map_free(m);
    *m = g;
  }
  size_t i = map_slot(m, k);
  if (m->key[i] != k) {
    m->key[i] = k;
    m->n++;
  }
  m->val[i] = v;
  return true;
}

typedef struct lowerCtx {
  const synLogical* L;
  const synXfers* X;
  const synLowerParams* p;
  int n, k, nc;
  int* key;       /* [nx] global order position */
  int* sslot;     /* [nx] slot the sender reads */
  int* dslot;     /* [nx] slot the receiver writes (copy) or accumulates into (reduce) */
  int* rslot;     /* [nx] reduce: slot the receiver reduces with */
  int* absorbed;  /* [nx] 1: lowered as part of an earlier transfer's multi-chunk step */
  int* cnt;       /* [nx] chunks in the step (batch head) */
  intMap scratch; /* rank * nc + chunk -> scratch index */
  int* nscratch;  /* [n] */
  bool oom;       /* a map grew out of memory */
} lowerCtx;

static int scratch_of(lowerCtx* c, int rank, int chunk) {
  const int64_t key = (int64_t)rank * c->nc + chunk;
  int s = map_get(&c->scratch, key);
  if (s < 0) {
    s = c->nscratch[rank]++;
    if (!map_put(&c->scratch, key, s)) c->oom = true;
  }
  return SLOT(KILN_BUF_SCRATCH, s);
}

/* qsort has no context argument; lowering runs one at a time per thread */
static _Thread_local const synXfers* g_sort_X;
static int cmp_xfer_time(const void* a, const void* b) {
  const synXfer* x = &g_sort_X->x[*(const int*)a];
  const synXfer* y = &g_sort_X->x[*(const int*)b];
  if (x->send_t < y->send_t - 1e-9) return -1;
  if (x->send_t > y->send_t + 1e-9) return 1;
  return x->order < y->order ? -1 : x->order > y->order;
}

/* Where each transfer reads and writes (step 1), visiting transfers in `order` (their send
 * order, c->key's inverse). */
static void allocate_slots(lowerCtx* c, const int* order) {
  const synXfers* X = c->X;
  int n = c->n, k = c->k;
  kilnColl_t coll = c->p->coll;
  /* where results go: the output buffer, or in place the input (allreduce, reducescatter) */
  kilnBuffer_t result = c->p->inplace && coll != KILN_COLL_ALLGATHER ? KILN_BUF_INPUT : KILN_BUF_OUTPUT;
  intMap first; /* (rank, chunk) -> its first reduce receive */
  if (!map_init(&first, (size_t)X->n / 2 + 1)) {
    map_free(&first);
    c->oom = true;
    return;
  }
  for (int a = 0; a < X->n; a++) {
    int i = order[a];
    const synXfer* x = &X->x[i];
    int ch = x->chunk;
    if (coll == KILN_COLL_ALLTOALL) {
      int p = ch / (n * k), d = (ch / k) % n, j = ch % k;
      c->sslot[i] = x->src == p ? SLOT(KILN_BUF_INPUT, d * k + j) : scratch_of(c, x->src, ch);
      c->dslot[i] = x->dst == d ? SLOT(KILN_BUF_OUTPUT, p * k + j) : scratch_of(c, x->dst, ch);
      continue;
    }
    int q = ch / k, j = ch % k;
    if (x->kind == SYN_COPY) {
      if (coll == KILN_COLL_ALLGATHER)
        c->sslot[i] = x->src == q && !c->p->inplace ? SLOT(KILN_BUF_INPUT, j) : SLOT(KILN_BUF_OUTPUT, ch);
      else
        c->sslot[i] = SLOT(result, ch);
      c->dslot[i] = SLOT(coll == KILN_COLL_ALLGATHER ? KILN_BUF_OUTPUT : result, ch);
      continue;
    }
    /* reduce: accumulate at the destination */
    int acc;
    if (x->dst == q)
      acc = coll == KILN_COLL_REDUCESCATTER && !c->p->inplace ? SLOT(KILN_BUF_OUTPUT, j) : SLOT(result, ch);
    else
      acc = scratch_of(c, x->dst, ch);
    c->dslot[i] = acc;
    const int64_t fk = (int64_t)x->dst * c->nc + ch;
    const bool firstrecv = map_get(&first, fk) < 0;
    c->rslot[i] = firstrecv ? SLOT(KILN_BUF_INPUT, ch) : acc;
    if (firstrecv && !map_put(&first, fk, i)) c->oom = true;
  }
  /* sources of reduce transfers: the partial sum if the rank received any, else its input */
  for (int a = 0; a < X->n; a++) {
    int i = order[a];
    const synXfer* x = &X->x[i];
    if (x->kind != SYN_REDUCE) continue;
    c->sslot[i] = x->npred > 0 ? c->dslot[X->preds[x->pred0]] : SLOT(KILN_BUF_INPUT, x->chunk);
  }
  map_free(&first);
}

/* Gives rank `rank` a threadblock for its side of a transfer with `peer` (mine: the rank-by-peer
 * threadblock table of this side, other: of the opposite side; mine_peer / other_peer: each
 * threadblock's peer on this / the opposite side, -1 none), once per (rank, peer): a new one, or
 * with pair_peers the threadblock that already serves the peer on the opposite side if its slot on
 * this side is free. */
static void assign_tb(int n, int* ntb, int rank, int peer, int* mine, const int* other, int* mine_peer,
                      int* other_peer, bool pair_peers) {
  if (mine[rank * n + peer] >= 0) return;
  int t = other[rank * n + peer];
  if (!(pair_peers && t >= 0 && mine_peer[rank * 2 * n + t] < 0)) {
    t = ntb[rank]++;
    other_peer[rank * 2 * n + t] = -1;
  }
  mine[rank * n + peer] = t;
  mine_peer[rank * 2 * n + t] = peer;
}

/* Transfers sent together whose buffers are contiguous at both ends become one step. */
static void merge_batches(lowerCtx* c) {
  const synXfers* X = c->X;
  for (int i = 0; i < X->n; i++) c->cnt[i] = 1;
  if (c->p->instances > 1) return;
  for (int e = 0; e < c->L->nlinks; e++) {
    int k = X->link_start[e];
    while (k < X->link_start[e + 1]) {
      int head = X->link_order[k];
      int k2 = k;
      while (k2 + 1 < X->link_start[e + 1] && X->x[X->link_order[k2]].batch_next) {
        int a = X->link_order[k2], b = X->link_order[k2 + 1];
        if (X->x[a].kind != SYN_COPY || X->x[b].kind != SYN_COPY) break;
        int m = c->cnt[head];
        if (c->sslot[b] != c->sslot[head] + m || c->dslot[b] != c->dslot[head] + m) break;
        if (SLOT_BUF(c->sslot[b]) != SLOT_BUF(c->sslot[head]) ||
            SLOT_BUF(c->dslot[b]) != SLOT_BUF(c->dslot[head]))
          break;
        c->cnt[head]++;
        c->absorbed[b] = 1;
        k2++;
      }
      k = k2 + 1;
    }
  }
}

static int cmp_i64(const void* a, const void* b) {
  int64_t x = *(const int64_t*)a, y = *(const int64_t*)b;
  return x < y ? -1 : x > y;
}

/* (key, count) pairs: larger count first, then smaller key. */
static int cmp_run(const void* a, const void* b) {
  const int64_t* x = a;
  const int64_t* y = b;
  if (x[1] != y[1]) return x[1] > y[1] ? -1 : 1;
  return x[0] < y[0] ? -1 : x[0] > y[0];
}

typedef struct vec {
  int n, cap;
  int* v;
} vec;
static bool vpush(vec* a, int x) {
  if (a->n == a->cap) {
    int cap = a->cap ? 2 * a->cap : 8;
    int* nv = realloc(a->v, (size_t)cap * sizeof(int));
    if (!nv) return false;
    a->v = nv;
    a->cap = cap;
  }
  a->v[a->n++] = x;
  return true;
}

kilnResult_t synLower(const synLogical* L, const synXfers* X, const synLowerParams* p, kilnPlan** out,
                      bool* fused_out) {
  *out = NULL;
  if (fused_out) *fused_out = false;
  if (p->inplace && p->coll == KILN_COLL_ALLTOALL)
    return kilnSetError(KILN_ERR_UNSUPPORTED, "in-place alltoall plans are not supported (use out-of-place)");
  kilnResult_t r = KILN_SUCCESS;
  int n = L->n, k = p->k, nx = X->n;
  int nc = p->coll == KILN_COLL_ALLTOALL ? n * n * k : n * k;
  lowerCtx c;
  memset(&c, 0, sizeof c);
  c.L = L;
  c.X = X;
  c.p = p;
  c.n = n;
  c.k = k;
  c.nc = nc;
  lop* ops = NULL;
  int nops = 0;
  vec deps = {0};
  kilnPlan* plan = NULL;
  int* order = malloc(((size_t)nx + 1) * sizeof(int));
  c.key = malloc(((size_t)nx + 1) * sizeof(int));
  c.sslot = malloc(((size_t)nx + 1) * sizeof(int));
  c.dslot = malloc(((size_t)nx + 1) * sizeof(int));
  c.rslot = malloc(((size_t)nx + 1) * sizeof(int));
  c.absorbed = calloc((size_t)nx + 1, sizeof(int));
  c.cnt = malloc(((size_t)nx + 1) * sizeof(int));
  bool mapped = map_init(&c.scratch, (size_t)nx / 2 + 1);
  c.nscratch = calloc((size_t)n, sizeof(int));
  /* per rank: tb of receives from X and of sends to Y */
  int* rtb = malloc((size_t)n * n * sizeof(int));
  int* stb = malloc((size_t)n * n * sizeof(int));
  int* ntb = calloc((size_t)n, sizeof(int));
  int* tbsend = malloc((size_t)n * 2 * n * sizeof(int));
  int* tbrecv = malloc((size_t)n * 2 * n * sizeof(int));
  int* fusewith = malloc(((size_t)nx + 1) * sizeof(int));           /* xin -> xout fused, or -1 */
  int* fusedin = malloc(((size_t)nx + 1) * sizeof(int));            /* xout -> xin, or -1 */
  ops = malloc((2 * (size_t)nx + (size_t)n * k + 1) * sizeof(lop)); /* sends, receives, local copies */
  if (!order || !c.key || !c.sslot || !c.dslot || !c.rslot || !c.absorbed || !c.cnt || !mapped ||
      !c.nscratch || !rtb || !stb || !ntb || !tbsend || !tbrecv || !fusewith || !fusedin || !ops) {
    r = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
    goto out_free;
  }
  for (int i = 0; i < nx; i++) order[i] = i;
  g_sort_X = X;
  qsort(order, (size_t)nx, sizeof(int), cmp_xfer_time);
  for (int a = 0; a < nx; a++) c.key[order[a]] = a;
  for (int i = 0; i < nx; i++) {
    for (int q = 0; q < X->x[i].npred; q++)
      if (c.key[X->preds[X->x[i].pred0 + q]] >= c.key[i]) {
        r = kilnSetError(KILN_ERR_INTERNAL, "schedule sends a chunk before it arrives (transfer %d)", i);
        goto out_free;
      }
  }
  allocate_slots(&c, order);
  if (c.oom) {
    r = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
    goto out_free;
  }
  merge_batches(&c);

  /* fusion candidates: the receive that completes a chunk at a rank, and a send of it onward */
  for (int i = 0; i < nx; i++) fusewith[i] = fusedin[i] = -1;
  if (p->fuse) {
    for (int a = 0; a < nx; a++) {
      int o = order[a];
      const synXfer* x = &X->x[o];
      if (x->npred == 0 || c.absorbed[o] || c.cnt[o] > 1) continue;
      int last = -1;
      for (int q = 0; q < x->npred; q++) {
        int pi = X->preds[x->pred0 + q];
        if (last < 0 || c.key[pi] > c.key[last]) last = pi;
      }
      if (last < 0 || c.cnt[last] > 1 || c.absorbed[last] || fusewith[last] >= 0) continue;
      if (X->x[last].dst != x->src) continue;
      fusewith[last] = o;
      fusedin[o] = last;
    }
  }
  /* threadblocks: greedily merge recv-from-X with send-to-Y where most fusions sit (per rank, the
   * pairs (X, Y) by their fused transfers, most first, then by X * n + Y) */
  {
    int64_t* pk = malloc(((size_t)nx + 1) * sizeof *pk); /* (rank, X * n + Y) of each fusion */
    int64_t* runs = malloc(((size_t)nx + 1) * 2 * sizeof *runs);
    if (!pk || !runs) {
      free(pk);
      free(runs);
      r = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
      goto out_free;
    }
    size_t np = 0, nr = 0;
    for (int i = 0; i < nx; i++)
      if (fusewith[i] >= 0)
        pk[np++] = (int64_t)X->x[i].dst * n * n + (int64_t)X->x[i].src * n + X->x[fusewith[i]].dst;
    qsort(pk, np, sizeof *pk, cmp_i64);
    for (size_t a = 0; a < np;) { /* runs: (rank, count, pair) as (key, -count) pairs */
      size_t b = a;
      while (b < np && pk[b] == pk[a]) b++;
      runs[2 * nr] = pk[a];
      runs[2 * nr + 1] = (int64_t)(b - a);
      nr++;
      a = b;
    }
    for (int i = 0; i < n * n; i++) rtb[i] = stb[i] = -1;
    for (size_t a = 0; a < nr;) {
      const int rk = (int)(runs[2 * a] / ((int64_t)n * n));
      size_t b = a;
      while (b < nr && runs[2 * b] / ((int64_t)n * n) == rk) b++;
      qsort(runs + 2 * a, b - a, 2 * sizeof *runs, cmp_run); /* most fusions first, then by pair */
      for (size_t q = a; q < b; q++) {
        const int pair = (int)(runs[2 * q] % ((int64_t)n * n)), xs = pair / n, yd = pair % n;
        if (rtb[rk * n + xs] >= 0 || stb[rk * n + yd] >= 0) continue;
        int t = ntb[rk]++;
        rtb[rk * n + xs] = stb[rk * n + yd] = t;
        tbrecv[rk * 2 * n + t] = xs;
        tbsend[rk * 2 * n + t] = yd;
      }
      a = b;
    }
    free(pk);
    free(runs);
  }
  /* the rest: a threadblock per peer and direction, or (pair_peers) one per peer for both */
  for (int a = 0; a < nx; a++) {
    const synXfer* x = &X->x[order[a]];
    assign_tb(n, ntb, x->dst, x->src, rtb, stb, tbrecv, tbsend, p->pair_peers); /* receiving side */
    assign_tb(n, ntb, x->src, x->dst, stb, rtb, tbsend, tbrecv, p->pair_peers); /* sending side */
  }
  /* keep a fusion only where both halves share a threadblock and nothing else of that
   * threadblock falls between the receive and the send: the peer's receive order must not change,
   * and the fused step must not hold up other receives while it waits to send */
  for (int i = 0; i < nx; i++) {
    int o = fusewith[i];
    if (o < 0) continue;
    const synXfer* xi = &X->x[i];
    const synXfer* xo = &X->x[o];
    bool ok = rtb[xi->dst * n + xi->src] == stb[xo->src * n + xo->dst];
    for (int a = c.key[i] + 1; ok && a < c.key[o]; a++) {
      const synXfer* y = &X->x[order[a]];
      if ((y->src == xo->src && y->dst == xo->dst) || (y->src == xi->src && y->dst == xi->dst)) ok = false;
    }
    if (!ok) {
      fusewith[i] = -1;
      fusedin[o] = -1;
    }
  }

  /* ops, in global order; local copies first */
  for (int rk = 0; rk < n; rk++) {
    if (ntb[rk] == 0) {
      r = kilnSetError(KILN_ERR_INTERNAL, "rank %d takes part in no transfer", rk);
      goto out_free;
    }
    for (int j = 0; j < k; j++) {
      int src = -1, dst = -1;
      if (p->coll == KILN_COLL_ALLGATHER && !p->inplace) {
        src = SLOT(KILN_BUF_INPUT, j);
        dst = SLOT(KILN_BUF_OUTPUT, rk * k + j);
      }
      if (p->coll == KILN_COLL_ALLTOALL) {
        src = SLOT(KILN_BUF_INPUT, rk * k + j);
        dst = SLOT(KILN_BUF_OUTPUT, rk * k + j);
      }
      if (src < 0) continue;
      lop* op = &ops[nops++];
      *op = (lop){KILN_STEP_COPY, rk, 0, -1, src, dst, 1, -1, -1, 0, 0, 0};
    }
  }
  for (int a = 0; a < nx; a++) {
    int i = order[a];
    const synXfer* x = &X->x[i];
    if (c.absorbed[i]) continue;
    /* receive (possibly fused with its onward send) */
    lop* op = &ops[nops++];
    int o = fusewith[i];
    if (x->kind == SYN_COPY) {
      *op = (lop){o >= 0 ? KILN_STEP_RECV_COPY_SEND : KILN_STEP_RECV,
                  x->dst,
                  rtb[x->dst * n + x->src],
                  a,
                  c.dslot[i],
                  c.dslot[i],
                  c.cnt[i],
                  i,
                  o,
                  0,
                  0,
                  0};
    } else if (o >= 0 && X->x[o].kind == SYN_REDUCE) {
      *op = (lop){KILN_STEP_RECV_REDUCE_SEND,
                  x->dst,
                  rtb[x->dst * n + x->src],
                  a,
                  c.rslot[i],
                  c.rslot[i],
                  1,
                  i,
                  o,
                  0,
                  0,
                  0};
    } else {
      *op = (lop){o >= 0 ? KILN_STEP_RECV_REDUCE_COPY_SEND : KILN_STEP_RECV_REDUCE_COPY,
                  x->dst,
                  rtb[x->dst * n + x->src],
                  a,
                  c.rslot[i],
                  c.dslot[i],
                  1,
                  i,
                  o,
                  0,
                  0,
                  0};
    }
    if (o >= 0 && fused_out) *fused_out = true;
    /* send, unless fused into the receive that brought the chunk */
    if (fusedin[i] >= 0) continue;
    op = &ops[nops++];
    *op = (lop){KILN_STEP_SEND,
                x->src,
                stb[x->src * n + x->dst],
                a,
                c.sslot[i],
                c.sslot[i],
                c.cnt[i],
                -1,
                i,
                0,
                0,
                0};
  }
  /* sort ops per rank by key (stable: local copies, key -1, first) */
  {
    lop* sorted = malloc(((size_t)nops + 1) * sizeof(lop));
    int* rstart = calloc((size_t)n + 1, sizeof(int));
    if (!sorted || !rstart) {
      free(sorted);
      free(rstart);
      r = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
      goto out_free;
    }
    for (int i = 0; i < nops; i++) rstart[ops[i].rank + 1]++;
    for (int rk = 0; rk < n; rk++) rstart[rk + 1] += rstart[rk];
    for (int i = 0; i < nops; i++) sorted[rstart[ops[i].rank]++] = ops[i];
    free(rstart);
    free(ops);
    ops = sorted; /* ops appended in key order, so each rank's run is already sorted */
  }

  /* dependencies per rank (step 4) */
  {
    int nslot = 0;
    int maxoff = nc + 1;
    for (int rk = 0; rk < n; rk++)
      if (c.nscratch[rk] + 1 > maxoff) maxoff = c.nscratch[rk] + 1;
    nslot = 3 * maxoff;
    int* lastw = malloc((size_t)nslot * sizeof(int));
    vec* readers = calloc((size_t)nslot, sizeof(vec));
    int* tbpos = malloc((size_t)2 * n * sizeof(int));
    int* cand = malloc((size_t)2 * n * sizeof(int));
    if (!lastw || !readers || !tbpos || !cand) {
      free(lastw);
      free(readers);
      free(tbpos);
      free(cand);
      r = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
      goto out_free;
    }
    /* port order: the op that sends each transfer, and each transfer's predecessor on its
     * sender's switch port (same rank only: other ranks cannot be waited for) */
    int* sendop = malloc(((size_t)nx + 1) * sizeof(int));
    int* portprev = malloc(((size_t)nx + 1) * sizeof(int));
    if (!sendop || !portprev) {
      free(sendop);
      free(portprev);
      free(lastw);
      free(readers);
      free(tbpos);
      free(cand);
      r = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
      goto out_free;
    }
    for (int i = 0; i < nx; i++) sendop[i] = portprev[i] = -1;
    for (int i = 0; i < nops; i++)
      if (ops[i].xout >= 0) sendop[ops[i].xout] = i;
    if (p->port_deps)
      for (int pt = 0; pt < L->nports; pt++)
        for (int k = X->port_start[pt] + 1; k < X->port_start[pt + 1]; k++) {
          int a = X->port_order[k - 1], b = X->port_order[k];
          if (L->links[X->x[b].link].send_port == pt && X->x[a].src == X->x[b].src) portprev[b] = a;
        }
    /* per rank: the slots it touched (to reset lastw and readers), the threadblocks an op depends
     * on (cand, listed in cl), and w2: (t * T + u) -> the latest step of threadblock u that
     * threadblock t already waited for */
    vec touched = {0};
    int* cl = malloc((size_t)2 * n * sizeof(int));
    for (int s = 0; s < nslot; s++) lastw[s] = -1;
    for (int t = 0; t < 2 * n; t++) cand[t] = -1;
    int i0 = 0;
    for (int rk = 0; rk < n && cl; rk++) {
      int i1 = i0;
      while (i1 < nops && ops[i1].rank == rk) i1++;
      for (int q = 0; q < touched.n; q++) {
        lastw[touched.v[q]] = -1;
        readers[touched.v[q]].n = 0;
      }
      touched.n = 0;
      const int64_t T = ntb[rk];
      intMap w2;
      if (!map_init(&w2, (size_t)(i1 - i0) + 1)) {
        map_free(&w2);
        r = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
        break;
      }
      for (int t = 0; t < T; t++) tbpos[t] = 0;
      for (int i = i0; i < i1 && r == KILN_SUCCESS; i++) {
        lop* op = &ops[i];
        int ncl = 0; /* threadblocks with cand[t] set: the latest op index of t depended on */
#define DEPEND_ON(w)                                                \
  do {                                                              \
    const int w_ = (w);                                             \
    if (w_ >= 0 && ops[w_].tb != op->tb && w_ > cand[ops[w_].tb]) { \
      if (cand[ops[w_].tb] < 0) cl[ncl++] = ops[w_].tb;             \
      cand[ops[w_].tb] = w_;                                        \
    }                                                               \
  } while (0)
        bool rd = kilnStepReadsSrc(op->type), wr = kilnStepWritesDst(op->type);
        if (op->type == KILN_STEP_SEND) rd = true;
        for (int m = 0; m < op->cnt; m++) {
          int so = SLOT_BUF(op->src) * maxoff + SLOT_OFF(op->src) + m;
          int dO = SLOT_BUF(op->dst) * maxoff + SLOT_OFF(op->dst) + m;
          if (rd) DEPEND_ON(lastw[so]);
          if (wr) {
            DEPEND_ON(lastw[dO]);
            for (int q = 0; q < readers[dO].n; q++) DEPEND_ON(readers[dO].v[q]);
          }
        }
        if (op->xout >= 0 && portprev[op->xout] >= 0) {
          int w = sendop[portprev[op->xout]];
          if (w < i) DEPEND_ON(w);
        }
#undef DEPEND_ON
        for (int a = 1; a < ncl; a++) /* by threadblock, as the steps' dependencies come */
          for (int b = a; b > 0 && cl[b - 1] > cl[b]; b--) {
            int tmp = cl[b];
            cl[b] = cl[b - 1];
            cl[b - 1] = tmp;
          }
        op->dep0 = deps.n;
        op->ndeps = 0;
        for (int a = 0; a < ncl; a++) {
          const int t = cl[a];
          const int64_t key = (int64_t)op->tb * T + t;
          const int seen = map_get(&w2, key);
          if (seen < 0 || seen < cand[t]) {
            if (!map_put(&w2, key, cand[t]) || !vpush(&deps, cand[t])) {
              r = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
              break;
            }
            op->ndeps++;
          }
        }
        for (int a = 0; a < ncl; a++) cand[cl[a]] = -1;
        for (int m = 0; m < op->cnt; m++) {
          int so = SLOT_BUF(op->src) * maxoff + SLOT_OFF(op->src) + m;
          int dO = SLOT_BUF(op->dst) * maxoff + SLOT_OFF(op->dst) + m;
          bool ok = true;
          if (rd && !(wr && so == dO)) {
            if (lastw[so] < 0 && readers[so].n == 0) ok = ok && vpush(&touched, so);
            ok = ok && vpush(&readers[so], i);
          }
          if (wr) {
            if (lastw[dO] < 0 && readers[dO].n == 0) ok = ok && vpush(&touched, dO);
            lastw[dO] = i;
            readers[dO].n = 0;
          }
          if (!ok) r = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
        }
        /* step index: nops for all dependencies but one, then the op */
        int extra = op->ndeps > 1 ? op->ndeps - 1 : 0;
        tbpos[op->tb] += extra;
        op->step = tbpos[op->tb]++;
      }
      map_free(&w2);
      i0 = i1;
    }
    if (!cl && r == KILN_SUCCESS) r = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
    free(cl);
    free(touched.v);
    for (int s = 0; s < nslot; s++) free(readers[s].v);
    free(lastw);
    free(readers);
    free(tbpos);
    free(cand);
    free(sendop);
    free(portprev);
    if (r != KILN_SUCCESS) goto out_free;
  }

  /* emit (step 5 folded in: instance i of threadblock t is t*N+i on channel i) */
  {
    int N = p->instances;
    r = kilnPlanCreate(p->name, p->coll, n, &plan);
    if (r != KILN_SUCCESS) goto out_free;
    plan->proto = p->proto;
    plan->nchannels = N;
    plan->inplace = p->inplace;
    plan->outofplace = !p->inplace;
    int ic = 0, oc = 0;
    switch (p->coll) {
      case KILN_COLL_ALLGATHER:
        ic = p->inplace ? 0 : k;
        oc = n * k;
        break;
      case KILN_COLL_ALLTOALL: ic = oc = n * k; break;
      case KILN_COLL_REDUCESCATTER:
        ic = n * k;
        oc = p->inplace ? 0 : k;
        break;
      default:
        ic = n * k;
        oc = p->inplace ? 0 : n * k;
        break;
    }
    plan->nchunksperloop = (p->coll == KILN_COLL_ALLGATHER ? oc : ic) * N;
    /* each rank's ops grouped by threadblock, in op order within one (a counting sort) */
    int* bytb = malloc(((size_t)nops + 1) * sizeof(int));
    int* tstart = malloc(((size_t)2 * n + 2) * sizeof(int));
    if (!bytb || !tstart) {
      free(bytb);
      free(tstart);
      r = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
      goto out_free;
    }
    int i0 = 0;
    for (int rk = 0; rk < n && r == KILN_SUCCESS; rk++) {
      plan->gpus[rk].i_chunks = ic * N;
      plan->gpus[rk].o_chunks = oc * N;
      plan->gpus[rk].s_chunks = c.nscratch[rk] * N;
      int i1 = i0;
      while (i1 < nops && ops[i1].rank == rk) i1++;
      memset(tstart, 0, ((size_t)ntb[rk] + 1) * sizeof(int));
      for (int i = i0; i < i1; i++) tstart[ops[i].tb + 1]++;
      for (int t = 0; t < ntb[rk]; t++) tstart[t + 1] += tstart[t];
      for (int i = i0; i < i1; i++) bytb[i0 + tstart[ops[i].tb]++] = i;
      for (int t = ntb[rk]; t > 0; t--) tstart[t] = tstart[t - 1];
      tstart[0] = 0;
      for (int t = 0; t < ntb[rk] && r == KILN_SUCCESS; t++)
        for (int inst = 0; inst < N; inst++) {
          kilnThreadblock* tb =
              kilnPlanAddThreadblock(plan, rk, tbsend[rk * 2 * n + t], tbrecv[rk * 2 * n + t], inst);
          if (!tb) {
            r = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
            break;
          }
          for (int a = tstart[t]; a < tstart[t + 1]; a++) {
            const lop* op = &ops[bytb[i0 + a]];
            for (int d = 0; d < op->ndeps; d++) {
              const lop* tg = &ops[deps.v[op->dep0 + d]];
              kilnStep* st = d + 1 < op->ndeps
                                 ? kilnPlanAddStep(tb, KILN_STEP_NOP, KILN_BUF_INPUT, 0, KILN_BUF_INPUT, 0, 0)
                                 : NULL;
              if (d + 1 < op->ndeps) {
                if (!st) {
                  r = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
                  break;
                }
                st->depid = tg->tb * N + inst;
                st->deps = tg->step;
              }
            }
            int so = SLOT_OFF(op->src), dof = SLOT_OFF(op->dst);
            kilnStep* st = kilnPlanAddStep(tb, op->type, SLOT_BUF(op->src), so * N + inst * (op->cnt == 1),
                                           SLOT_BUF(op->dst), dof * N + inst * (op->cnt == 1), op->cnt);
            if (!st) {
              r = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
              break;
            }
            if (op->ndeps > 0) {
              const lop* tg = &ops[deps.v[op->dep0 + op->ndeps - 1]];
              st->depid = tg->tb * N + inst;
              st->deps = tg->step;
            }
          }
        }
      i0 = i1;
    }
    free(bytb);
    free(tstart);
    if (r != KILN_SUCCESS) goto out_free;
    kilnPlanMarkHasdep(plan); /* hasdep on every step another waits for */
  }
  *out = plan;
  plan = NULL;
out_free:
  if (plan) kilnPlanFree(plan);
  free(deps.v);
  free(ops);
  free(order);
  free(c.key);
  free(c.sslot);
  free(c.dslot);
  free(c.rslot);
  free(c.absorbed);
  free(c.cnt);
  map_free(&c.scratch);
  free(c.nscratch);
  free(rtb);
  free(stb);
  free(ntb);
  free(tbsend);
  free(tbrecv);
  free(fusewith);
  free(fusedin);
  return r;
}
