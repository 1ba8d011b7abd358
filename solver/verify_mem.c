/*
 * CPU verifier of plans with memory steps (put, get, gre, sig, wait; plan.h says what they mean).
 *
 * Model. The plan runs for KILN_VERIFY_CALLS calls of KILN_VERIFY_ITERATIONS iterations on every
 * rank: epoch e = call * ITERS + it. Every threadblock runs its steps once per epoch in program
 * order (its instance i is step i % ns of epoch i / ns); a step waits as a runtime's does: for its
 * dependency's, its matching send's, its matching sig's and the line puts' instances of the same
 * epoch, and for a free FIFO slot. Each rank also has a caller, a pseudo-threadblock with one
 * step per call boundary: step c (c = 0..CALLS) waits until the rank's threadblocks have ended call
 * c - 1, reads the results (checking those of call c - 1) and, before another call, writes the
 * next call's inputs; the rank's threadblocks start call c after it (the kernel boundary).
 *
 * Buffers: user buffers hold a slice per iteration, the same memory in every call (aliased as the
 * in-place form says, as in verify.c); scratch has two halves, half = epoch & 1; messages a slot
 * per chunk sent and epoch. Values are verify.c's (an origin, a set of contributing ranks and
 * four numeric lanes), with origins numbered per epoch, so that a chunk another epoch left behind
 * is caught as surely as a wrong one.
 *
 * Races. Two vector clocks per threadblock (callers included): clk orders what a read must see and
 * what a write must follow when it overwrites a write (program order, dependencies, send before
 * receive, sig before wait, the kernel boundary); clkw, which also orders a line put before every
 * step that reads its lines, orders what a write must follow when it overwrites a read (plan.h:
 * a line read passes on no write of the putting threadblock, but every read it made before the
 * put has returned). A read of a line chunk sees its epoch's line put by the wait that precedes
 * it. Checked exactly on the first interleaving of each form, for plans whose clocks fit
 * (KILN_VERIFY_MEMORY_CHECKS_ALL_RACES); the results on every interleaving.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan_index.h"
#include "verify_internal.h"

#define CALLS KILN_VERIFY_CALLS
#define ITERS KILN_VERIFY_ITERATIONS
#define EPOCHS (CALLS * ITERS)
#define MAX_POISON 64
#define REASON_MAX 320
#define DEADLOCK_LINES 8

enum { LANE_SUM, LANE_PROD, LANE_MAX, LANE_MIN, NUM_LANES };
static const char* const lane_names[NUM_LANES] = {"sum", "prod", "max", "min"};

/* A chunk slot. origin >= 0: a value; -1: never written; <= -2: invalid, reason -origin-2. */
typedef struct mslot {
  int32_t origin;
  int32_t wg, winst; /* last writer (threadblock or caller, its instance), -1 for none */
  uint32_t num[NUM_LANES];
} mslot;

/* What blocks a threadblock's next instance. */
enum { BLK_NONE, BLK_CALL, BLK_DEP, BLK_RECV, BLK_FIFO, BLK_WAIT, BLK_LINE, BLK_END };

typedef struct rnode {
  int32_t g, inst, next;
} rnode;

typedef struct mctx {
  const kilnPlan* p;
  const kilnVerifyOptions* opts;
  kilnPlanIndex ix;
  int n, ntbs, T, nsteps;
  int* ftb;  /* [nsteps] threadblock of flat step f */
  int* ns;   /* [T] steps of a threadblock (callers: 1) */
  int* len;  /* [T] instances in all */
  int* cons; /* [nsteps] how many step kinds consume a snapshot of f (0: none taken) */
  bool reduces;
  int W, k, R, per;
  uint64_t seed;
  const char* mode_name;
  bool inplace;

  /* Storage. */
  int* ubase; /* [(r * ITERS + it) * 2 + (buf == output)] slot of chunk 0 */
  int* sbase; /* [r * 2 + half] */
  int nstore, nslots;
  mslot* slots;
  uint64_t* bits;
  mslot* tmp;
  uint64_t* tmpbits;

  /* Run state. */
  int* pc;
  int* ready;
  int rhead, rcount;
  bool* inready;
  int** waiters;
  int* nwait;
  int* capwait;

  /* Races. */
  bool race_on;
  int32_t* clk;   /* [T*T] */
  int32_t* clkw;  /* [T*T] */
  int32_t** snap; /* [EPOCHS*nsteps] both clocks after an instance others wait on (2*T) */
  int* snapref;   /* [EPOCHS*nsteps] consumers still to come */
  int32_t* wg;    /* [nstore] last writer */
  int32_t* winst;
  int32_t* rhead_; /* [nstore] reads since the last write */
  rnode* rpool;
  int nrpool, caprpool;

  char poison[MAX_POISON][REASON_MAX];
  int npoison;
} mctx;

static uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* Numeric value of input chunk j of rank r in epoch e (non-reductions: r = 0, j = the origin). */
static uint32_t initial_value(const mctx* c, int e, int r, int j, int lane) {
  uint64_t h = splitmix64(c->seed * 0x100000001b3ull ^ ((uint64_t)(e + 1) << 40) ^ ((uint64_t)r << 24) ^
                          (uint64_t)j ^ ((uint64_t)lane << 60));
  uint32_t v = (uint32_t)(h >> 16);
  if (lane == LANE_PROD) v |= 1u;
  return v;
}

static uint32_t lane_op(int lane, uint32_t x, uint32_t y) {
  switch (lane) {
    case LANE_SUM: return x + y;
    case LANE_PROD: return x * y;
    case LANE_MAX: return x > y ? x : y;
    default: return x < y ? x : y;
  }
}

static bool is_caller(const mctx* c, int g) { return g >= c->ntbs; }
static int rank_of(const mctx* c, int g) { return is_caller(c, g) ? g - c->ntbs : c->ix.tb_rank[g]; }
static int local_tb(const mctx* c, int g) { return kilnPlanIndexLocal(&c->ix, g); }
static const kilnStep* step_at(const mctx* c, int g, int s) {
  return &c->p->gpus[c->ix.tb_rank[g]].tbs[local_tb(c, g)].steps[s];
}

/* "rank 1 tb 0 step 3 (put) in call 0 iteration 2", or "rank 1's caller before call 1". */
static const char* who(const mctx* c, int g, int inst, char* buf, size_t cap) {
  const int r = rank_of(c, g);
  if (is_caller(c, g)) {
    if (inst == 0)
      snprintf(buf, cap, "rank %d's caller before call 0", r);
    else if (inst >= CALLS)
      snprintf(buf, cap, "rank %d's caller after call %d", r, inst - 1);
    else
      snprintf(buf, cap, "rank %d's caller between calls %d and %d", r, inst - 1, inst);
    return buf;
  }
  const int s = inst % c->ns[g], e = inst / c->ns[g];
  snprintf(buf, cap, "rank %d tb %d step %d (%s) in call %d iteration %d", r, local_tb(c, g), s,
           kilnStepTypeName(step_at(c, g, s)->type), e / ITERS, e % ITERS);
  return buf;
}

/* "rank 1's scratch chunk 2 (half 0)", "rank 0's output chunk 3". */
static const char* where(int r, kilnBuffer_t b, int off, int epoch, char* buf, size_t cap) {
  if (b == KILN_BUF_SCRATCH)
    snprintf(buf, cap, "rank %d's scratch chunk %d (half %d)", r, off, epoch & 1);
  else
    snprintf(buf, cap, "rank %d's %s chunk %d", r, kilnPlanBufferLabel(b), off);
  return buf;
}

/* ---- layout ---- */

static kilnResult_t setup_layout(mctx* c, bool inplace) {
  const kilnPlan* p = c->p;
  int64_t total = (int64_t)EPOCHS * c->ix.nmsg;
  for (int r = 0; r < c->n; r++)
    total += (int64_t)ITERS * (p->gpus[r].i_chunks + p->gpus[r].o_chunks) + 2 * (int64_t)p->gpus[r].s_chunks;
  if (total > KILN_VERIFY_MAX_SLOTS)
    return kilnSetError(
        KILN_ERR_INVALID_ARGUMENT,
        "plan %s: %lld chunk slots (every rank's buffers and messages over %d epochs) are more than "
        "the verifier checks (%d)",
        p->name, (long long)total, EPOCHS, KILN_VERIFY_MAX_SLOTS);
  int pos = 0;
  for (int r = 0; r < c->n; r++) {
    const kilnGpu* g = &p->gpus[r];
    const bool both = g->i_chunks > 0 && g->o_chunks > 0;
    for (int it = 0; it < ITERS; it++) {
      int* b = &c->ubase[(r * ITERS + it) * 2];
      if (inplace && both && p->coll == KILN_COLL_ALLGATHER) {
        b[1] = pos;
        b[0] = pos + r * c->k;
        pos += g->o_chunks;
      } else if (inplace && both && p->coll == KILN_COLL_REDUCESCATTER) {
        b[0] = pos;
        b[1] = pos + r * c->k;
        pos += g->i_chunks;
      } else if (inplace && both && (p->coll == KILN_COLL_ALLREDUCE || p->coll == KILN_COLL_ALLTOALL)) {
        b[0] = b[1] = pos;
        pos += g->i_chunks;
      } else {
        b[0] = pos;
        pos += g->i_chunks;
        b[1] = pos;
        pos += g->o_chunks;
      }
    }
    c->sbase[r * 2] = pos;
    c->sbase[r * 2 + 1] = pos + g->s_chunks;
    pos += 2 * g->s_chunks;
  }
  c->nstore = pos;
  c->nslots = pos + EPOCHS * c->ix.nmsg;
  return KILN_SUCCESS;
}

static int slot_of(const mctx* c, int r, kilnBuffer_t b, int off, int epoch) {
  if (b == KILN_BUF_SCRATCH) return c->sbase[r * 2 + (epoch & 1)] + off;
  return c->ubase[(r * ITERS + epoch % ITERS) * 2 + (b == KILN_BUF_OUTPUT)] + off;
}

/* Where rank r's input chunk j starts, and where its result chunk j ends (verify.c's rules). */
static int input_slot(const mctx* c, int r, int j, int epoch, kilnBuffer_t* buf, int* off) {
  const kilnGpu* g = &c->p->gpus[r];
  if (c->p->coll == KILN_COLL_ALLGATHER && g->i_chunks == 0) {
    *buf = KILN_BUF_OUTPUT;
    *off = r * c->k + j;
  } else if (g->i_chunks == 0) {
    *buf = KILN_BUF_OUTPUT;
    *off = j;
  } else {
    *buf = KILN_BUF_INPUT;
    *off = j;
  }
  return slot_of(c, r, *buf, *off, epoch);
}

static int result_slot(const mctx* c, int r, int j, int epoch, kilnBuffer_t* buf, int* off) {
  const kilnGpu* g = &c->p->gpus[r];
  if (g->o_chunks > 0) {
    *buf = KILN_BUF_OUTPUT;
    *off = j;
  } else {
    *buf = KILN_BUF_INPUT;
    *off = c->p->coll == KILN_COLL_REDUCESCATTER ? r * c->k + j : j;
  }
  return slot_of(c, r, *buf, *off, epoch);
}

static int nresults(const mctx* c) { return c->p->coll == KILN_COLL_REDUCESCATTER ? c->k : c->R; }

/* Origins: reductions e * R + j (input chunk j of epoch e, over a set of ranks); the others
 * (e * n + r) * per + j (input chunk j of rank r in epoch e). */
static void describe_origin(const mctx* c, int o, char* buf, size_t cap) {
  if (c->reduces) {
    snprintf(buf, cap, "input chunk %d of call %d iteration %d", o % c->R, o / c->R / ITERS,
             o / c->R % ITERS);
  } else {
    const int j = o % c->per, r = o / c->per % c->n, e = o / c->per / c->n;
    snprintf(buf, cap, "input chunk %d of rank %d in call %d iteration %d", j, r, e / ITERS, e % ITERS);
  }
}

/* ---- values ---- */

static int add_poison(mctx* c, const char* fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static int add_poison(mctx* c, const char* fmt, ...) {
  int idx = c->npoison < MAX_POISON ? c->npoison++ : MAX_POISON - 1;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->poison[idx], REASON_MAX, fmt, ap);
  va_end(ap);
  return -2 - idx;
}

/* out = a ⊕ b, symbolic and numeric, for instance inst of threadblock g. */
static void reduce_into(mctx* c, mslot* out, uint64_t* obits, const mslot* a, const uint64_t* abits,
                        const mslot* b, const uint64_t* bbits, int g, int inst) {
  char w[160], oa[96], ob[96];
  mslot res = *a;
  for (int l = 0; l < NUM_LANES; l++) res.num[l] = lane_op(l, a->num[l], b->num[l]);
  if (a->origin <= -2) {
    res.origin = a->origin;
  } else if (b->origin <= -2) {
    res.origin = b->origin;
  } else if (!c->reduces) {
    res.origin = add_poison(c, "%s reduces, but %s has no reduction", who(c, g, inst, w, sizeof w),
                            kilnCollName(c->p->coll));
  } else if (a->origin == -1 || b->origin == -1) {
    res.origin =
        add_poison(c, "%s reduces with a chunk that was never written", who(c, g, inst, w, sizeof w));
  } else if (a->origin != b->origin) {
    describe_origin(c, a->origin, oa, sizeof oa);
    describe_origin(c, b->origin, ob, sizeof ob);
    res.origin = add_poison(c, "%s reduces %s with %s", who(c, g, inst, w, sizeof w), oa, ob);
  } else {
    int dup = -1;
    for (int i = 0; i < c->W && dup < 0; i++)
      if (abits[i] & bbits[i]) dup = i * 64 + __builtin_ctzll(abits[i] & bbits[i]);
    if (dup >= 0) {
      describe_origin(c, a->origin, oa, sizeof oa);
      res.origin = add_poison(c, "%s counts rank %d's contribution to %s twice", who(c, g, inst, w, sizeof w),
                              dup, oa);
    } else {
      for (int i = 0; i < c->W; i++) obits[i] = abits[i] | bbits[i];
    }
  }
  *out = res;
}

static void describe_value(const mctx* c, int sl, char* buf, size_t cap) {
  const mslot* v = &c->slots[sl];
  char o[96];
  if (v->origin == -1) {
    snprintf(buf, cap, "a chunk that was never written");
  } else if (v->origin <= -2) {
    snprintf(buf, cap, "an invalid value: %s", c->poison[-v->origin - 2]);
  } else if (c->reduces) {
    const uint64_t* b = &c->bits[(size_t)sl * c->W];
    int count = 0, missing = -1;
    for (int r = 0; r < c->n; r++) {
      if (b[r / 64] >> (r % 64) & 1)
        count++;
      else if (missing < 0)
        missing = r;
    }
    describe_origin(c, v->origin, o, sizeof o);
    if (missing >= 0)
      snprintf(buf, cap, "%s reduced over %d of %d ranks (rank %d missing)", o, count, c->n, missing);
    else
      snprintf(buf, cap, "%s reduced over all ranks", o);
  } else {
    describe_origin(c, v->origin, o, sizeof o);
    snprintf(buf, cap, "%s", o);
  }
}

static void run_context(const mctx* c, int sched, char* buf, size_t cap) {
  if (sched == 0)
    snprintf(buf, cap, "%s, round-robin order", c->mode_name);
  else
    snprintf(buf, cap, "%s, interleaving %d with seed %" PRIu64, c->mode_name, sched, c->seed);
}

/* Rank d's results of call `call`, every iteration. */
static kilnResult_t check_results(mctx* c, int d, int call, int sched) {
  if (c->p->coll == KILN_COLL_CUSTOM) return KILN_SUCCESS;
  char got[REASON_MAX + 96], wr[160], ctxs[96], wh[200];
  for (int it = 0; it < ITERS; it++) {
    const int e = call * ITERS + it;
    for (int j = 0; j < nresults(c); j++) {
      kilnBuffer_t buf;
      int off;
      const int sl = result_slot(c, d, j, e, &buf, &off);
      const mslot* v = &c->slots[sl];
      int want, src_rank = 0, src_chunk = 0;
      switch (c->p->coll) {
        case KILN_COLL_ALLGATHER:
          src_rank = j / c->k;
          src_chunk = j % c->k;
          want = (e * c->n + src_rank) * c->per + src_chunk;
          break;
        case KILN_COLL_ALLTOALL:
          src_rank = j / c->k;
          src_chunk = d * c->k + j % c->k;
          want = (e * c->n + src_rank) * c->per + src_chunk;
          break;
        case KILN_COLL_REDUCESCATTER: want = e * c->R + d * c->k + j; break;
        default: want = e * c->R + j; break;
      }
      bool ok = v->origin == want;
      if (ok && c->reduces)
        for (int r = 0; r < c->n && ok; r++) ok = c->bits[(size_t)sl * c->W + r / 64] >> (r % 64) & 1;
      if (v->wg >= 0)
        snprintf(wh, sizeof wh, " (last written by %s)", who(c, v->wg, v->winst, wr, sizeof wr));
      else
        wh[0] = '\0';
      if (!ok) {
        describe_value(c, sl, got, sizeof got);
        run_context(c, sched, ctxs, sizeof ctxs);
        if (c->reduces)
          return verr(
              "rank %d %s chunk %d after call %d iteration %d%s: expected input chunk %d reduced over all %d "
              "ranks, got %s [%s]",
              d, kilnPlanBufferLabel(buf), off, call, it, wh, want % c->R, c->n, got, ctxs);
        return verr(
            "rank %d %s chunk %d after call %d iteration %d%s: expected input chunk %d of rank %d, got %s "
            "[%s]",
            d, kilnPlanBufferLabel(buf), off, call, it, wh, src_chunk, src_rank, got, ctxs);
      }
      const int lanes = c->reduces && c->opts->all_ops ? NUM_LANES : 1;
      for (int l = 0; l < lanes; l++) {
        uint32_t ref;
        if (c->reduces) {
          const int jj = want % c->R;
          ref = initial_value(c, e, 0, jj, l);
          for (int r = 1; r < c->n; r++) ref = lane_op(l, ref, initial_value(c, e, r, jj, l));
        } else {
          ref = initial_value(c, e, 0, want, l);
        }
        if (v->num[l] != ref) {
          run_context(c, sched, ctxs, sizeof ctxs);
          return verr(
              "rank %d %s chunk %d after call %d iteration %d%s: numeric check with op %s failed: got "
              "%" PRIu32 ", expected %" PRIu32 " [%s]",
              d, kilnPlanBufferLabel(buf), off, call, it, wh, lane_names[l], v->num[l], ref, ctxs);
        }
      }
    }
  }
  return KILN_SUCCESS;
}

/* The caller writes rank r's inputs of call `call` (every iteration's slice). */
static void write_inputs(mctx* c, int r, int call) {
  const int g = c->ntbs + r;
  const int per = c->reduces ? c->R : c->per;
  for (int it = 0; it < ITERS; it++) {
    const int e = call * ITERS + it;
    for (int j = 0; j < per; j++) {
      kilnBuffer_t buf;
      int off;
      const int sl = input_slot(c, r, j, e, &buf, &off);
      mslot* v = &c->slots[sl];
      *v = (mslot){-1, g, call, {0, 0, 0, 0}};
      if (c->reduces) {
        v->origin = e * c->R + j;
        memset(&c->bits[(size_t)sl * c->W], 0, sizeof(uint64_t) * (size_t)c->W);
        c->bits[(size_t)sl * c->W + r / 64] |= 1ull << (r % 64);
        for (int l = 0; l < NUM_LANES; l++) v->num[l] = initial_value(c, e, r, j, l);
      } else {
        v->origin = (e * c->n + r) * c->per + j;
        for (int l = 0; l < NUM_LANES; l++) v->num[l] = initial_value(c, e, 0, v->origin, l);
      }
    }
  }
}

/* ---- races ---- */

static void race_free(mctx* c) {
  if (c->snap)
    for (int i = 0; i < EPOCHS * c->nsteps; i++) free(c->snap[i]);
  free(c->snap);
  free(c->snapref);
  free(c->clk);
  free(c->clkw);
  free(c->wg);
  free(c->winst);
  free(c->rhead_);
  free(c->rpool);
  c->snap = NULL;
  c->snapref = NULL;
  c->clk = c->clkw = NULL;
  c->wg = c->winst = c->rhead_ = NULL;
  c->rpool = NULL;
  c->nrpool = c->caprpool = 0;
  c->race_on = false;
}

static void race_init(mctx* c) {
  race_free(c);
  if (!KILN_VERIFY_MEMORY_CHECKS_ALL_RACES(c->ntbs, c->n, c->nsteps)) return;
  const size_t T = (size_t)c->T, ns = (size_t)EPOCHS * (size_t)c->nsteps + 1;
  c->clk = calloc(T * T, sizeof(int32_t));
  c->clkw = calloc(T * T, sizeof(int32_t));
  c->snap = calloc(ns, sizeof(int32_t*));
  c->snapref = calloc(ns, sizeof(int));
  c->wg = malloc(sizeof(int32_t) * ((size_t)c->nstore + 1));
  c->winst = malloc(sizeof(int32_t) * ((size_t)c->nstore + 1));
  c->rhead_ = malloc(sizeof(int32_t) * ((size_t)c->nstore + 1));
  if (!c->clk || !c->clkw || !c->snap || !c->snapref || !c->wg || !c->winst || !c->rhead_) {
    race_free(c); /* no memory for the clocks: the interleavings alone */
    return;
  }
  for (int i = 0; i < c->nstore; i++) c->wg[i] = c->winst[i] = c->rhead_[i] = -1;
  c->race_on = true;
}

static void join(int32_t* dst, const int32_t* src, int T) {
  for (int u = 0; u < T; u++)
    if (src[u] > dst[u]) dst[u] = src[u];
}

/* Joins the snapshot of instance (f, e) into g's clocks (clkw only for a line read). */
static void join_snapshot(mctx* c, int g, int f, int e, bool whole) {
  const size_t i = (size_t)e * c->nsteps + f;
  int32_t* sn = c->snap[i];
  if (!sn) return;
  const int T = c->T;
  if (whole) join(&c->clk[(size_t)g * T], sn, T);
  join(&c->clkw[(size_t)g * T], sn + T, T);
  if (--c->snapref[i] <= 0) {
    free(sn);
    c->snap[i] = NULL;
  }
}

static bool ordered_by(const mctx* c, const int32_t* clk, int g, int u, int inst) {
  return u == g || clk[(size_t)g * c->T + u] > inst;
}

/* The race between access (g, inst) and an earlier one (u, uinst) of chunk (r, b, off) of epoch
 * `epoch` (the chunk's, for naming a scratch half); write/uwrite: whether each writes. */
static kilnResult_t race_report(mctx* c, int r, kilnBuffer_t b, int off, int epoch, int g, int inst,
                                bool write, int u, int uinst, bool uwrite) {
  char a[160], x[160], ch[96];
  who(c, g, inst, a, sizeof a);
  who(c, u, uinst, x, sizeof x);
  where(r, b, off, epoch, ch, sizeof ch);
  const int gr = rank_of(c, g), ur = rank_of(c, u);
  const char* mode = c->mode_name;
  if (!write && is_caller(c, u))
    return verr(
        "%s reads %s before rank %d signalled that its call %d began: wait for a signal rank %d raises in "
        "that call first [%s]",
        a, ch, r, uinst, r, mode);
  if (!write && is_caller(c, g))
    return verr(
        "rank %d's call %d ends before %s, which writes %s, is ordered before its end: rank %d must wait on "
        "a signal rank %d raises after that write [%s]",
        gr, inst - 1, x, ch, gr, ur, mode);
  if (write && !uwrite && is_caller(c, u))
    return verr(
        "%s writes %s before rank %d's call %d began (its caller may still read what the call before left "
        "there): wait for a signal rank %d raises in that call first [%s]",
        a, ch, r, uinst, r, mode);
  if (write && !uwrite && is_caller(c, g))
    return verr(
        "%s may still read %s when rank %d's call %d ends and its caller writes the next call's input: rank "
        "%d must wait on a signal rank %d raises after that read [%s]",
        x, ch, gr, inst - 1, gr, ur, mode);
  if (write && !uwrite)
    return verr(
        "%s writes %s while %s may still read what it held: nothing orders that read before the write (a "
        "sig raised after the read and its wait, or lines the reader writes after it) [%s]",
        a, ch, x, mode);
  if (!write) {
    const kilnStep* ws = is_caller(c, u) ? NULL : step_at(c, u, uinst % c->ns[u]);
    const bool simple_put = ws && ws->type == KILN_STEP_PUT && !kilnStepIsLinePut(c->p, ws);
    return verr("%s reads %s, written by %s, but nothing orders the write before the read%s [%s]", a, ch, x,
                simple_put
                    ? " (a Simple put is seen only through a sig its threadblock raises after it, and the "
                      "matching wait)"
                    : " (program order, a dependency, a receive, a sig and its wait, the "
                      "lines of a line put, or the end of a call)",
                mode);
  }
  return verr("%s and %s both write %s, and nothing orders the two writes [%s]", x, a, ch, mode);
}

/* Checks and records an access by (g, inst) to cnt chunks of buffer b of rank r in epoch e. */
static kilnResult_t race_access(mctx* c, int g, int inst, int r, kilnBuffer_t b, int off, int cnt, int e,
                                bool write) {
  for (int k = 0; k < cnt; k++) {
    const int sl = slot_of(c, r, b, off + k, e);
    const int u = c->wg[sl], ui = c->winst[sl];
    if (u >= 0 && !ordered_by(c, c->clk, g, u, ui)) {
      /* A read of a line chunk waited for its epoch's line put. */
      bool line_ok = false;
      if (!write && b == KILN_BUF_SCRATCH && !is_caller(c, u) && !is_caller(c, g)) {
        const int w = c->ix.line_writer[c->ix.line_base[r] + off + k];
        line_ok = w >= 0 && c->ftb[w] == u && ui == e * c->ns[u] + (w - c->ix.stepbase[u]);
      }
      if (!line_ok) return race_report(c, r, b, off + k, e, g, inst, write, u, ui, true);
    }
    if (write) {
      for (int i = c->rhead_[sl]; i >= 0; i = c->rpool[i].next)
        if (!ordered_by(c, c->clkw, g, c->rpool[i].g, c->rpool[i].inst))
          return race_report(c, r, b, off + k, e, g, inst, true, c->rpool[i].g, c->rpool[i].inst, false);
      c->wg[sl] = g;
      c->winst[sl] = inst;
      c->rhead_[sl] = -1;
      continue;
    }
    int i = c->rhead_[sl];
    while (i >= 0 && c->rpool[i].g != g) i = c->rpool[i].next;
    if (i >= 0) {
      c->rpool[i].inst = inst; /* a later read of the same threadblock covers the earlier one */
      continue;
    }
    if (c->nrpool == c->caprpool) {
      int nc = c->caprpool ? 2 * c->caprpool : 1024;
      rnode* np = realloc(c->rpool, sizeof(rnode) * (size_t)nc);
      if (!np) return kilnSetError(KILN_ERR_NO_MEMORY, "verifier: out of memory for race detection");
      c->rpool = np;
      c->caprpool = nc;
    }
    c->rpool[c->nrpool] = (rnode){g, inst, c->rhead_[sl]};
    c->rhead_[sl] = c->nrpool++;
  }
  return KILN_SUCCESS;
}

/* Records instance `inst` of g as done in its clocks and snapshots them when others consume it. */
static kilnResult_t race_done(mctx* c, int g, int inst, int f, int e) {
  const int T = c->T;
  c->clk[(size_t)g * T + g] = c->clkw[(size_t)g * T + g] = inst + 1;
  if (f < 0 || c->cons[f] == 0) return KILN_SUCCESS;
  const size_t i = (size_t)e * c->nsteps + f;
  int32_t* sn = malloc(sizeof(int32_t) * 2 * (size_t)T);
  if (!sn) return kilnSetError(KILN_ERR_NO_MEMORY, "verifier: out of memory for race detection");
  memcpy(sn, &c->clk[(size_t)g * T], sizeof(int32_t) * (size_t)T);
  memcpy(sn + T, &c->clkw[(size_t)g * T], sizeof(int32_t) * (size_t)T);
  c->snap[i] = sn;
  c->snapref[i] = c->cons[f];
  return KILN_SUCCESS;
}

/* ---- blocking ---- */

/* Why g cannot run its next instance (BLK_NONE: it can; BLK_END: it is done); *on: the
 * threadblock it waits for, *detail: the flat step of a sig or line put waited for. */
static int blocker(const mctx* c, int g, int* on, int* detail) {
  *on = *detail = -1;
  const int inst = c->pc[g];
  if (inst >= c->len[g]) return BLK_END;
  if (is_caller(c, g)) {
    const int r = g - c->ntbs;
    if (inst == 0) return BLK_NONE;
    for (int u = c->ix.tbbase[r]; u < c->ix.tbbase[r + 1]; u++)
      if (c->pc[u] < inst * ITERS * c->ns[u]) {
        *on = u;
        return BLK_CALL;
      }
    return BLK_NONE;
  }
  const int ns = c->ns[g], e = inst / ns, s = inst % ns, r = c->ix.tb_rank[g];
  const int f = c->ix.stepbase[g] + s;
  const kilnStep* st = step_at(c, g, s);
  if (s == 0 && e % ITERS == 0 && c->pc[c->ntbs + r] <= e / ITERS) {
    *on = c->ntbs + r;
    return BLK_CALL;
  }
  if (st->depid >= 0) {
    const int gd = c->ix.tbbase[r] + st->depid;
    if (c->pc[gd] <= e * c->ns[gd] + st->deps) {
      *on = gd;
      return BLK_DEP;
    }
  }
  const int gs = c->ix.match_tb[f];
  if (gs >= 0 && c->pc[gs] <= e * c->ns[gs] + c->ix.match_step[f]) {
    *on = gs;
    return BLK_RECV;
  }
  const int depth = c->opts->fifo_depth;
  if (depth > 0 && c->ix.send_ord[f] >= 0) {
    const int S = c->ix.sendbase[g + 1] - c->ix.sendbase[g];
    const int m = e * S + c->ix.send_ord[f] - depth;
    if (m >= 0) {
      const int f2 = c->ix.stepbase[g] + c->ix.sendstep[c->ix.sendbase[g] + m % S];
      const int gr = c->ix.rmatch_tb[f2];
      if (gr >= 0 && c->pc[gr] <= (m / S) * c->ns[gr] + c->ix.rmatch_step[f2]) {
        *on = gr;
        return BLK_FIFO;
      }
    }
  }
  if (kilnStepPeerRole(st->type) == KILN_PEER_WAIT) {
    const int fs = c->ix.sig_match[f], u = c->ftb[fs];
    if (c->pc[u] <= e * c->ns[u] + (fs - c->ix.stepbase[u])) {
      *on = u;
      *detail = fs;
      return BLK_WAIT;
    }
  }
  for (int i = c->ix.linedep_base[f]; i < c->ix.linedep_base[f + 1]; i++) {
    const int w = c->ix.linedep[i], u = c->ftb[w];
    if (c->pc[u] <= e * c->ns[u] + (w - c->ix.stepbase[u])) {
      *on = u;
      *detail = w;
      return BLK_LINE;
    }
  }
  return BLK_NONE;
}

static int blocked_on(const mctx* c, int g) {
  int on, d;
  blocker(c, g, &on, &d);
  return on;
}

static int describe_wait(const mctx* c, int g, char* buf, size_t cap) {
  int on, d;
  char a[160], b[160];
  const int kind = blocker(c, g, &on, &d);
  who(c, g, c->pc[g], a, sizeof a);
  if (is_caller(c, g))
    return snprintf(buf, cap, "%s waits for rank %d tb %d to end call %d", a, rank_of(c, on), local_tb(c, on),
                    c->pc[g] - 1);
  const kilnStep* st = step_at(c, g, c->pc[g] % c->ns[g]);
  switch (kind) {
    case BLK_CALL:
      return snprintf(buf, cap, "%s waits for rank %d's call %d to begin", a, rank_of(c, g),
                      c->pc[g] / c->ns[g] / ITERS);
    case BLK_DEP:
      return snprintf(buf, cap, "%s waits for its dependency tb %d step %d", a, st->depid, st->deps);
    case BLK_RECV:
      return snprintf(buf, cap, "%s waits to receive from rank %d tb %d step %d", a, rank_of(c, on),
                      local_tb(c, on), c->ix.match_step[c->ix.stepbase[g] + c->pc[g] % c->ns[g]]);
    case BLK_FIFO:
      return snprintf(buf, cap,
                      "%s waits for a free slot in the FIFO to rank %d tb %d (all %d hold sends it has "
                      "not received)",
                      a, rank_of(c, on), local_tb(c, on), c->opts->fifo_depth);
    case BLK_WAIT: {
      const int e = c->pc[g] / c->ns[g];
      who(c, on, e * c->ns[on] + d - c->ix.stepbase[on], b, sizeof b);
      return snprintf(buf, cap, "%s waits for rank %d's signal on channel %d (%s)", a, st->peer,
                      c->p->gpus[rank_of(c, g)].tbs[local_tb(c, g)].chan, b);
    }
    case BLK_LINE: {
      const int e = c->pc[g] / c->ns[g];
      who(c, on, e * c->ns[on] + d - c->ix.stepbase[on], b, sizeof b);
      return snprintf(buf, cap, "%s waits for the lines of %s", a, b);
    }
    default: return snprintf(buf, cap, "%s is runnable", a);
  }
}

static kilnResult_t report_deadlock(mctx* c) {
  char msg[2048];
  size_t used = 0;
  int start = -1, nblocked = 0;
  for (int g = 0; g < c->T; g++)
    if (c->pc[g] < c->len[g]) {
      if (start < 0) start = g;
      nblocked++;
    }
  int* seen = calloc((size_t)c->T, sizeof(int));
  if (!seen) return kilnSetError(KILN_ERR_NO_MEMORY, "verifier: out of memory");
  int g = start;
  while (g >= 0 && !seen[g]) {
    seen[g] = 1;
    g = blocked_on(c, g);
  }
  free(seen);
  used += (size_t)snprintf(msg, sizeof msg, "deadlock (%d threadblocks blocked): ", nblocked);
  for (int h = g, lines = 0; h >= 0 && lines < DEADLOCK_LINES; lines++) {
    if (used < sizeof msg) used += (size_t)describe_wait(c, h, msg + used, sizeof msg - used);
    if (used < sizeof msg) used += (size_t)snprintf(msg + used, sizeof msg - used, "; ");
    h = blocked_on(c, h);
    if (h == g) break;
  }
  if (used >= 2 && used < sizeof msg) msg[used - 2] = '\0';
  return kilnSetError(KILN_ERR_VERIFY, "%s [%s]", msg, c->mode_name);
}

/* ---- execution ---- */

/* Runs caller instance `call` of rank r: results of the call before, then the next inputs. */
static kilnResult_t run_caller(mctx* c, int r, int sched) {
  const int g = c->ntbs + r, call = c->pc[g];
  kilnResult_t res = KILN_SUCCESS;
  if (c->race_on) {
    for (int u = c->ix.tbbase[r]; u < c->ix.tbbase[r + 1]; u++) {
      join(&c->clk[(size_t)g * c->T], &c->clk[(size_t)u * c->T], c->T);
      join(&c->clkw[(size_t)g * c->T], &c->clkw[(size_t)u * c->T], c->T);
    }
    for (int it = 0; it < ITERS && res == KILN_SUCCESS; it++)
      for (int j = 0; j < nresults(c) && res == KILN_SUCCESS; j++) {
        kilnBuffer_t buf;
        int off;
        const int e = (call > 0 ? call - 1 : 0) * ITERS + it;
        result_slot(c, r, j, e, &buf, &off);
        res = race_access(c, g, call, r, buf, off, 1, e, false);
      }
  }
  if (res == KILN_SUCCESS && call > 0) res = check_results(c, r, call - 1, sched);
  if (res == KILN_SUCCESS && call < CALLS && c->race_on) {
    const int per = c->reduces ? c->R : c->per;
    for (int it = 0; it < ITERS && res == KILN_SUCCESS; it++)
      for (int j = 0; j < per && res == KILN_SUCCESS; j++) {
        kilnBuffer_t buf;
        int off;
        const int e = call * ITERS + it;
        input_slot(c, r, j, e, &buf, &off);
        res = race_access(c, g, call, r, buf, off, 1, e, true);
      }
  }
  if (res != KILN_SUCCESS) return res;
  if (call < CALLS) write_inputs(c, r, call);
  if (c->race_on) return race_done(c, g, call, -1, 0);
  return KILN_SUCCESS;
}

/* Runs threadblock g's next instance: joins what it waited for, checks its accesses, moves the
 * data. */
static kilnResult_t run_instance(mctx* c, int g) {
  const int inst = c->pc[g], ns = c->ns[g], e = inst / ns, s = inst % ns, r = c->ix.tb_rank[g];
  const int f = c->ix.stepbase[g] + s, W = c->W, T = c->T;
  const kilnStep* st = step_at(c, g, s);
  const kilnStepType_t type = st->type;
  const kilnStepPeer_t role = kilnStepPeerRole(type);
  const int srank = role == KILN_PEER_READ ? st->peer : r, drank = role == KILN_PEER_WRITE ? st->peer : r;
  kilnResult_t res = KILN_SUCCESS;
  if (c->race_on) {
    if (s == 0 && e % ITERS == 0) {
      const int cg = c->ntbs + r;
      join(&c->clk[(size_t)g * T], &c->clk[(size_t)cg * T], T);
      join(&c->clkw[(size_t)g * T], &c->clkw[(size_t)cg * T], T);
    }
    if (st->depid >= 0) join_snapshot(c, g, c->ix.stepbase[c->ix.tbbase[r] + st->depid] + st->deps, e, true);
    if (c->ix.match_tb[f] >= 0)
      join_snapshot(c, g, c->ix.stepbase[c->ix.match_tb[f]] + c->ix.match_step[f], e, true);
    if (role == KILN_PEER_WAIT) join_snapshot(c, g, c->ix.sig_match[f], e, true);
    for (int i = c->ix.linedep_base[f]; i < c->ix.linedep_base[f + 1]; i++)
      join_snapshot(c, g, c->ix.linedep[i], e, false);
    if (kilnStepReadsSrc(type))
      res = race_access(c, g, inst, srank, st->srcbuf, st->srcoff, st->cnt, e, false);
    if (res == KILN_SUCCESS && kilnStepReadsDst(type))
      res = race_access(c, g, inst, r, st->dstbuf, st->dstoff, st->cnt, e, false);
    if (res == KILN_SUCCESS && kilnStepWritesDst(type))
      res = race_access(c, g, inst, drank, st->dstbuf, st->dstoff, st->cnt, e, true);
    if (res != KILN_SUCCESS) return res;
  }
  if (kilnStepWritesDst(type) && st->dstbuf == KILN_BUF_INPUT && !c->inplace) {
    char a[160];
    return verr(
        "rank %d input chunk %d written by %s out of place: the input is the caller's send buffer, read only "
        "[%s]",
        drank, st->dstoff, who(c, g, inst, a, sizeof a), c->mode_name);
  }
  if (type != KILN_STEP_NOP && role != KILN_PEER_SIGNAL && role != KILN_PEER_WAIT) {
    const int src = kilnStepReadsSrc(type) ? slot_of(c, srank, st->srcbuf, st->srcoff, e) : -1;
    const int dst = kilnStepWritesDst(type) ? slot_of(c, drank, st->dstbuf, st->dstoff, e) : -1;
    int msg_in = -1;
    if (kilnStepReceives(type)) {
      const int gs = c->ix.match_tb[f];
      msg_in = c->nstore + e * c->ix.nmsg + c->ix.msgbase[c->ix.stepbase[gs] + c->ix.match_step[f]];
    }
    for (int k = 0; k < st->cnt; k++) {
      mslot* out = &c->tmp[k];
      uint64_t* ob = &c->tmpbits[(size_t)k * W];
      const int from = type == KILN_STEP_RECV || type == KILN_STEP_RECV_COPY_SEND ? msg_in + k : src + k;
      if (kilnStepReadsDst(type)) {
        reduce_into(c, out, ob, &c->slots[dst + k], &c->bits[(size_t)(dst + k) * W], &c->slots[src + k],
                    &c->bits[(size_t)(src + k) * W], g, inst);
      } else if (kilnStepReduces(type)) { /* rrs, rrc, rrcs: src ⊕ received */
        reduce_into(c, out, ob, &c->slots[src + k], &c->bits[(size_t)(src + k) * W], &c->slots[msg_in + k],
                    &c->bits[(size_t)(msg_in + k) * W], g, inst);
      } else {
        *out = c->slots[from];
        if (W) memcpy(ob, &c->bits[(size_t)from * W], sizeof(uint64_t) * W);
      }
      out->wg = g;
      out->winst = inst;
    }
    if (dst >= 0)
      for (int k = 0; k < st->cnt; k++) {
        c->slots[dst + k] = c->tmp[k];
        if (W) memcpy(&c->bits[(size_t)(dst + k) * W], &c->tmpbits[(size_t)k * W], sizeof(uint64_t) * W);
      }
    if (kilnStepSends(type)) {
      const int mo = c->nstore + e * c->ix.nmsg + c->ix.msgbase[f];
      for (int k = 0; k < st->cnt; k++) {
        c->slots[mo + k] = c->tmp[k];
        if (W) memcpy(&c->bits[(size_t)(mo + k) * W], &c->tmpbits[(size_t)k * W], sizeof(uint64_t) * W);
      }
    }
  }
  if (c->race_on) return race_done(c, g, inst, f, e);
  return KILN_SUCCESS;
}

static kilnResult_t add_waiter(mctx* c, int on, int g) {
  if (c->nwait[on] == c->capwait[on]) {
    int nc = c->capwait[on] ? 2 * c->capwait[on] : 4;
    int* nw = realloc(c->waiters[on], sizeof(int) * (size_t)nc);
    if (!nw) return kilnSetError(KILN_ERR_NO_MEMORY, "verifier: out of memory");
    c->waiters[on] = nw;
    c->capwait[on] = nc;
  }
  c->waiters[on][c->nwait[on]++] = g;
  return KILN_SUCCESS;
}

static kilnResult_t place(mctx* c, int g) {
  if (c->pc[g] >= c->len[g] || c->inready[g]) return KILN_SUCCESS;
  const int on = blocked_on(c, g);
  if (on >= 0) return add_waiter(c, on, g);
  c->ready[(c->rhead + c->rcount) % c->T] = g;
  c->rcount++;
  c->inready[g] = true;
  return KILN_SUCCESS;
}

/* One interleaving: verify.c's policies (0 round-robin, 1 run-to-block last readied first, odd >= 3
 * random run-to-block, even >= 2 random single steps). */
static kilnResult_t run_schedule(mctx* c, int sched) {
  kilnResult_t res = KILN_SUCCESS;
  uint64_t rng = splitmix64(c->seed ^ (0x5eed0000ull + (uint64_t)sched));
  for (int g = 0; g < c->T; g++) {
    c->pc[g] = 0;
    c->nwait[g] = 0;
    c->inready[g] = false;
  }
  c->rhead = c->rcount = 0;
  for (int i = 0; i < c->T; i++)
    if ((res = place(c, sched == 1 ? c->T - 1 - i : i)) != KILN_SUCCESS) return res;
  const bool to_block = sched == 1 || (sched >= 3 && sched % 2 == 1);
  while (c->rcount > 0) {
    int pick = 0;
    if (sched == 1) {
      pick = c->rcount - 1;
    } else if (sched >= 2) {
      rng = splitmix64(rng);
      pick = (int)(rng % (uint64_t)c->rcount);
    }
    const int pos = (c->rhead + pick) % c->T, g = c->ready[pos];
    c->ready[pos] = c->ready[c->rhead];
    c->rhead = (c->rhead + 1) % c->T;
    c->rcount--;
    c->inready[g] = false;
    do {
      res = is_caller(c, g) ? run_caller(c, g - c->ntbs, sched) : run_instance(c, g);
      if (res != KILN_SUCCESS) return res;
      c->pc[g]++;
      const int nw = c->nwait[g];
      c->nwait[g] = 0;
      for (int i = 0; i < nw; i++) {
        const int w = c->waiters[g][i];
        if (blocked_on(c, w) == g && c->pc[w] < c->len[w])
          c->waiters[g][c->nwait[g]++] = w;
        else if ((res = place(c, w)) != KILN_SUCCESS)
          return res;
      }
    } while (to_block && c->pc[g] < c->len[g] && blocked_on(c, g) < 0);
    if ((res = place(c, g)) != KILN_SUCCESS) return res;
  }
  for (int g = 0; g < c->T; g++)
    if (c->pc[g] < c->len[g]) return report_deadlock(c);
  return KILN_SUCCESS;
}

/* ---- set-up ---- */

static void free_ctx(mctx* c) {
  race_free(c);
  kilnPlanIndexFree(&c->ix);
  free(c->ftb);
  free(c->ns);
  free(c->len);
  free(c->cons);
  free(c->ubase);
  free(c->sbase);
  free(c->slots);
  free(c->bits);
  free(c->tmp);
  free(c->tmpbits);
  free(c->pc);
  free(c->ready);
  free(c->inready);
  if (c->waiters)
    for (int g = 0; g < c->T; g++) free(c->waiters[g]);
  free(c->waiters);
  free(c->nwait);
  free(c->capwait);
}

/* The index, the flat tables and the run state. */
static kilnResult_t setup(mctx* c) {
  kilnResult_t res = kilnPlanIndexBuild(c->p, &c->ix);
  if (res != KILN_SUCCESS) return res;
  if ((res = kilnPlanIndexLayout(c->p, &c->k, &c->R)) != KILN_SUCCESS) return res;
  c->ntbs = c->ix.ntbs;
  c->T = c->ntbs + c->n;
  c->nsteps = c->ix.nsteps;
  c->per = c->p->coll == KILN_COLL_ALLGATHER ? c->k : c->R;
  const size_t T = (size_t)c->T, S = (size_t)c->nsteps + 1;
  c->ftb = malloc(sizeof(int) * S);
  c->cons = calloc(S, sizeof(int));
  c->ns = malloc(sizeof(int) * T);
  c->len = malloc(sizeof(int) * T);
  c->ubase = malloc(sizeof(int) * (size_t)c->n * ITERS * 2);
  c->sbase = malloc(sizeof(int) * (size_t)c->n * 2);
  c->tmp = malloc(sizeof(mslot) * (size_t)c->ix.maxcnt);
  c->tmpbits = calloc((size_t)c->ix.maxcnt * (size_t)(c->W ? c->W : 1), sizeof(uint64_t));
  c->pc = calloc(T, sizeof(int));
  c->ready = malloc(sizeof(int) * T);
  c->inready = calloc(T, sizeof(bool));
  c->waiters = calloc(T, sizeof(int*));
  c->nwait = calloc(T, sizeof(int));
  c->capwait = calloc(T, sizeof(int));
  if (!c->ftb || !c->cons || !c->ns || !c->len || !c->ubase || !c->sbase || !c->tmp || !c->tmpbits ||
      !c->pc || !c->ready || !c->inready || !c->waiters || !c->nwait || !c->capwait)
    return kilnSetError(KILN_ERR_NO_MEMORY, "verifier: out of memory");
  for (int g = 0; g < c->ntbs; g++) {
    c->ns[g] = c->ix.stepbase[g + 1] - c->ix.stepbase[g];
    if ((int64_t)c->ns[g] * EPOCHS > INT32_MAX)
      return kilnSetError(KILN_ERR_INVALID_ARGUMENT,
                          "plan %s: rank %d tb %d has too many steps to run for %d epochs", c->p->name,
                          c->ix.tb_rank[g], local_tb(c, g), EPOCHS);
    c->len[g] = c->ns[g] * EPOCHS;
    for (int f = c->ix.stepbase[g]; f < c->ix.stepbase[g + 1]; f++) c->ftb[f] = g;
  }
  for (int r = 0; r < c->n; r++) {
    c->ns[c->ntbs + r] = 1;
    c->len[c->ntbs + r] = CALLS + 1;
  }
  /* Who consumes each step's snapshot: its receive, its wait, the steps that depend on it and the
   * steps that read its lines. */
  for (int f = 0; f < c->nsteps; f++) {
    const int g = c->ftb[f], r = c->ix.tb_rank[g];
    const kilnStep* st = step_at(c, g, f - c->ix.stepbase[g]);
    if (c->ix.rmatch_tb[f] >= 0) c->cons[f]++;
    if (kilnStepPeerRole(st->type) == KILN_PEER_SIGNAL) c->cons[f]++;
    if (st->depid >= 0) c->cons[c->ix.stepbase[c->ix.tbbase[r] + st->depid] + st->deps]++;
    c->cons[f] += c->ix.line_readers[f];
  }
  return KILN_SUCCESS;
}

kilnResult_t kilnVerifyMemoryPlan(const kilnPlan* p, const kilnVerifyOptions* opts) {
  if (kilnPlanHasCopies(p)) {
    kilnPlan* lowered = NULL;
    kilnResult_t res = kilnPlanClone(p, &lowered);
    if (res == KILN_SUCCESS) res = kilnPlanLowerCopies(lowered);
    if (res == KILN_SUCCESS) res = kilnVerifyMemoryPlan(lowered, opts);
    kilnPlanFree(lowered);
    return res;
  }
  mctx c;
  memset(&c, 0, sizeof c);
  c.p = p;
  c.opts = opts;
  c.n = p->ngpus;
  c.seed = opts->seed;
  c.reduces = p->coll == KILN_COLL_ALLREDUCE || p->coll == KILN_COLL_REDUCESCATTER;
  c.W = c.reduces ? (c.n + 63) / 64 : 0;
  kilnResult_t res = setup(&c);
  if (res != KILN_SUCCESS) goto out;
  bool modes[2]; /* [0] out of place, [1] in place: as verify.c chooses them */
  if (kilnPlanInPlaceOnly(p)) {
    modes[0] = false;
    modes[1] = true;
  } else {
    modes[1] = p->has_inplace && p->inplace;
    modes[0] = p->has_outofplace ? p->outofplace : !modes[1];
    if (!modes[0] && !modes[1]) modes[0] = true;
  }
  for (int m = 0; m < 2; m++) {
    if (!modes[m]) continue;
    c.mode_name = m ? "in place" : "out of place";
    c.inplace = m == 1;
    if ((res = setup_layout(&c, m == 1)) != KILN_SUCCESS) goto out;
    free(c.slots);
    free(c.bits);
    c.slots = malloc(sizeof(mslot) * ((size_t)c.nslots + 1));
    /* Without rank sets (W = 0) one word, so that &bits[i * W] is a valid pointer too. */
    c.bits = calloc(c.W ? ((size_t)c.nslots + 1) * (size_t)c.W : 1, sizeof(uint64_t));
    if (!c.slots || !c.bits) {
      res = kilnSetError(KILN_ERR_NO_MEMORY, "verifier: out of memory for %d chunk slots", c.nslots);
      goto out;
    }
    for (int sched = 0; sched < opts->schedules; sched++) {
      for (int i = 0; i < c.nslots; i++) c.slots[i] = (mslot){-1, -1, -1, {0, 0, 0, 0}};
      if (c.W) memset(c.bits, 0, sizeof(uint64_t) * (size_t)c.nslots * (size_t)c.W);
      c.npoison = 0;
      if (sched == 0)
        race_init(&c);
      else
        race_free(&c);
      if ((res = run_schedule(&c, sched)) != KILN_SUCCESS) goto out;
    }
  }
  if (p->coll == KILN_COLL_CUSTOM)
    res = kilnSetError(KILN_ERR_UNSUPPORTED,
                       "custom collective: structure and deadlock freedom checked, but there is no "
                       "postcondition to check the result against");
out:
  free_ctx(&c);
  return res;
}
