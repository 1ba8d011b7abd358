/*
 * CPU verifier: runs a plan for all ranks on host memory and checks the collective's
 * postcondition.
 *
 * Model. Each rank owns input/output/scratch buffers of i/o/s chunks (aliased as the in-place
 * form of the collective says). Threadblock (A, send=B, chan=c) feeds threadblock
 * (B, recv=A, chan=c) through a FIFO; the k-th send of a connection is received by the k-th
 * receive, so matching (and count agreement) is checked statically before anything runs
 * (plan_index.c). A step is runnable when its threadblock reached it, its dependency
 * (depid/deps) has finished, and, for a receive, the matching send has run. Since every
 * receive names its FIFO, whether a plan deadlocks does not depend on the interleaving; what
 * does is the outcome of unsynchronised accesses to shared buffers. Those are found exactly by
 * a happens-before check with vector clocks (plans within KILN_VERIFY_RACE_MAX_CLOCKS),
 * and their effects by running several interleavings (round-robin, run-to-block, and seeded
 * random ones) and checking each result.
 *
 * Copies (TACCL's <copy>): before the first step, every rank copies its copied input chunks to
 * their output chunks (value and writer -1, as if the output started with them), in both the
 * symbolic and the numeric lanes; the postcondition is the same.
 *
 * In-place forms: a plan that claims inplace runs with aliased buffers (allgather: input =
 * output + r*k; reducescatter: output = input + r*k; allreduce, alltoall: one buffer), and a
 * plan that claims outofplace (or claims nothing) with separate ones; a plan whose buffers only
 * make sense in place (allgather without input, allreduce without output...) runs in place.
 *
 * Values. Every chunk slot carries a symbolic value (origin chunk + set of contributing ranks,
 * so a reduction of chunks of different origin or counting a rank twice is caught exactly) and
 * four numeric lanes (sum, prod, max, min on 32-bit integers mod 2^32 filled with seeded
 * random values), compared with a reference computed directly from the inputs.
 *
 * FIFOs are unbounded unless opts->fifo_depth > 0: then a sending step also waits until the
 * receiver has received the send fifo_depth sends back on that connection (kiln's runtime
 * gives each connection kilnCommConfig.nslots slots, one per step). Deadlock freedom then
 * depends on the depth, and a plan that needs more slots than the runtime has is reported.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan_index.h"
#include "verify_internal.h"

#define VERIFY_MAX_POISON 64
#define VERIFY_REASON_MAX 256
#define VERIFY_DEADLOCK_LINES 8

enum { LANE_SUM, LANE_PROD, LANE_MAX, LANE_MIN, NUM_LANES };
static const char* const lane_names[NUM_LANES] = {"sum", "prod", "max", "min"};

/* A chunk slot. origin >= 0: a value; -1: never written; <= -2: invalid, reason -origin-2. */
typedef struct vslot {
  int32_t origin;
  int32_t wtb, wstep; /* last writer (local tb id, step), -1 for the initial value */
  uint32_t num[NUM_LANES];
} vslot;

typedef struct vctx {
  const kilnPlan* p;
  int n;
  bool reduces; /* allreduce / reducescatter: values carry rank sets */
  int W;        /* 64-bit words per rank set (0 when !reduces) */
  int k;        /* chunks per rank piece */
  int R;        /* reference chunks (per-rank input of the reduction, or pieces*k) */
  uint64_t seed;

  /* Threadblocks, globally numbered g = tbbase[r] + t (views into ix). */
  kilnPlanIndex ix;
  int ntbs;
  int* tbbase;
  int* tb_rank;
  int* stepbase;
  int* match_tb;
  int* match_step;
  int* msgbase;
  int maxcnt;

  /* Slots: per-rank storage then messages. */
  int nstore, nmsg, nslots;
  int* bufbase; /* [n*KILN_NUM_BUFFERS] slot index of chunk 0 of each buffer */
  vslot* slots;
  uint64_t* bits; /* [nslots*W] */
  vslot* tmp;
  uint64_t* tmpbits;

  /* Run state. */
  int* pc;    /* [ntbs] next step */
  int* ready; /* [ntbs] deque of runnable tbs */
  int rhead, rcount;
  bool* inready; /* [ntbs] */
  int** waiters; /* [ntbs] tbs blocked on this tb's progress */
  int* nwait;
  int* capwait;

  /* Data-race detection (first interleaving of each form): vector clocks over threadblocks. */
  bool race_on;
  int32_t* clk;     /* [ntbs*ntbs] clk[g*ntbs+u]: steps of tb u that happen before g's next */
  int32_t** snap;   /* [nsteps] clock after a step others wait on or receive from */
  bool* target;     /* [nsteps] some step depends on it */
  int32_t* race_wg; /* [nstore] last writer tb (-1 none) */
  int32_t* race_ws; /* [nstore] its step */
  int32_t* rd_head; /* [nstore] reads since the last write: list into rpool, -1 empty */
  struct rnode {
    int32_t g, s, next;
  } * rpool;
  int nrpool, caprpool;

  uint32_t* ref; /* [R*NUM_LANES] expected reduction results */

  char poison[VERIFY_MAX_POISON][VERIFY_REASON_MAX];
  int npoison;
  const char* mode_name;
  int fifo_depth; /* 0: unbounded FIFOs */
} vctx;

static uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* Initial numeric value of input (origin) o on rank r for a lane. */
static uint32_t initial_value(const vctx* c, int r, int o, int lane) {
  uint64_t h =
      splitmix64(c->seed * 0x100000001b3ull ^ ((uint64_t)r << 32) ^ (uint64_t)o ^ ((uint64_t)lane << 60));
  uint32_t v = (uint32_t)(h >> 16);
  if (lane == LANE_PROD) v |= 1u; /* odd: products never collapse to 0 mod 2^32 */
  return v;
}

static const kilnStep* step_of(const vctx* c, int g, int s) {
  int r = c->tb_rank[g];
  return &c->p->gpus[r].tbs[g - c->tbbase[r]].steps[s];
}

static int local_tb(const vctx* c, int g) { return kilnPlanIndexLocal(&c->ix, g); }

/* ---- layout: which buffers hold what, and the aliasing of in-place forms ---- */

/* Checks that every rank's i/o chunk counts fit the collective; sets k and R. */
static kilnResult_t check_layout(vctx* c) { return kilnPlanIndexLayout(c->p, &c->k, &c->R); }

/* Lays out storage for one mode (aliased or separate buffers). KILN_ERR_INVALID_ARGUMENT past
 * KILN_VERIFY_MAX_SLOTS chunk slots (buffers and messages): the slot count is an int (it wrapped,
 * and the verifier wrote past its slots), and the slots take ~30 bytes each. */
static kilnResult_t setup_layout(vctx* c, bool inplace) {
  const kilnPlan* p = c->p;
  int n = c->n;
  int64_t total = c->nmsg;
  for (int r = 0; r < n; r++)
    total += (int64_t)p->gpus[r].i_chunks + p->gpus[r].o_chunks + p->gpus[r].s_chunks;
  if (total > KILN_VERIFY_MAX_SLOTS)
    return kilnSetError(
        KILN_ERR_INVALID_ARGUMENT,
        "plan %s: %lld chunk slots (every rank's buffers and messages) are more than the verifier "
        "checks (%d)",
        p->name, (long long)total, KILN_VERIFY_MAX_SLOTS);
  int pos = 0;
  for (int r = 0; r < n; r++) {
    const kilnGpu* gpu = &p->gpus[r];
    int* base = &c->bufbase[r * KILN_NUM_BUFFERS];
    bool both = gpu->i_chunks > 0 && gpu->o_chunks > 0;
    if (inplace && both && p->coll == KILN_COLL_ALLGATHER) {
      base[KILN_BUF_OUTPUT] = pos;
      base[KILN_BUF_INPUT] = pos + r * c->k;
      pos += gpu->o_chunks;
    } else if (inplace && both && p->coll == KILN_COLL_REDUCESCATTER) {
      base[KILN_BUF_INPUT] = pos;
      base[KILN_BUF_OUTPUT] = pos + r * c->k;
      pos += gpu->i_chunks;
    } else if (inplace && both && (p->coll == KILN_COLL_ALLREDUCE || p->coll == KILN_COLL_ALLTOALL)) {
      base[KILN_BUF_INPUT] = base[KILN_BUF_OUTPUT] = pos;
      pos += gpu->i_chunks;
    } else {
      base[KILN_BUF_INPUT] = pos;
      pos += gpu->i_chunks;
      base[KILN_BUF_OUTPUT] = pos;
      pos += gpu->o_chunks;
    }
    base[KILN_BUF_SCRATCH] = pos;
    pos += gpu->s_chunks;
  }
  c->nstore = pos;
  c->nslots = pos + c->nmsg;
  return KILN_SUCCESS;
}

static int slot_of(const vctx* c, int r, kilnBuffer_t b, int off) {
  return c->bufbase[r * KILN_NUM_BUFFERS + b] + off;
}

/* Where rank r's input chunk j starts (before the plan runs). */
static int input_slot(const vctx* c, int r, int j) {
  const kilnGpu* gpu = &c->p->gpus[r];
  if (c->p->coll == KILN_COLL_ALLGATHER && gpu->i_chunks == 0)
    return slot_of(c, r, KILN_BUF_OUTPUT, r * c->k + j);
  if (gpu->i_chunks == 0) return slot_of(c, r, KILN_BUF_OUTPUT, j);
  return slot_of(c, r, KILN_BUF_INPUT, j);
}

/* Where rank r's result chunk j ends (allgather/alltoall/allreduce: output index j;
 * reducescatter: result chunk j of rank r's piece). */
static int result_slot(const vctx* c, int r, int j, kilnBuffer_t* buf, int* off) {
  const kilnGpu* gpu = &c->p->gpus[r];
  if (c->p->coll == KILN_COLL_REDUCESCATTER) {
    if (gpu->o_chunks > 0) {
      *buf = KILN_BUF_OUTPUT;
      *off = j;
    } else {
      *buf = KILN_BUF_INPUT;
      *off = r * c->k + j;
    }
  } else {
    if (gpu->o_chunks > 0) {
      *buf = KILN_BUF_OUTPUT;
      *off = j;
    } else {
      *buf = KILN_BUF_INPUT;
      *off = j;
    }
  }
  return slot_of(c, r, *buf, *off);
}

/* Number of origins per rank for non-reducing collectives. */
static int inputs_per_rank(const vctx* c) { return c->p->coll == KILN_COLL_ALLGATHER ? c->k : c->R; }

/* TACCL's copies: input chunks to output chunks on every rank, before any step. Element by
 * element in order, as the runtime's cpy steps of the lowered form do. */
static void apply_copies(vctx* c) {
  int W = c->W;
  for (int r = 0; r < c->n; r++) {
    const kilnGpu* g = &c->p->gpus[r];
    for (int i = 0; i < g->ncopies; i++)
      for (int e = 0; e < g->copies[i].cnt; e++) {
        int from = slot_of(c, r, KILN_BUF_INPUT, g->copies[i].i_off + e);
        int to = slot_of(c, r, KILN_BUF_OUTPUT, g->copies[i].o_off + e);
        c->slots[to] = c->slots[from];
        if (W) memcpy(&c->bits[(size_t)to * W], &c->bits[(size_t)from * W], sizeof(uint64_t) * W);
      }
  }
}

static void init_values(vctx* c) {
  int W = c->W;
  for (int i = 0; i < c->nslots; i++) {
    c->slots[i] = (vslot){-1, -1, -1, {0, 0, 0, 0}};
  }
  if (W) memset(c->bits, 0, sizeof(uint64_t) * (size_t)c->nslots * (size_t)W);
  c->npoison = 0;
  int per = c->reduces ? c->R : inputs_per_rank(c);
  for (int r = 0; r < c->n; r++) {
    for (int j = 0; j < per; j++) {
      int sl = input_slot(c, r, j);
      vslot* v = &c->slots[sl];
      if (c->reduces) {
        v->origin = j;
        c->bits[(size_t)sl * W + r / 64] |= 1ull << (r % 64);
        for (int l = 0; l < NUM_LANES; l++) v->num[l] = initial_value(c, r, j, l);
      } else {
        v->origin = r * per + j;
        for (int l = 0; l < NUM_LANES; l++) v->num[l] = initial_value(c, 0, v->origin, l);
      }
    }
  }
  apply_copies(c);
}

/* ---- execution ---- */

static int add_poison(vctx* c, const char* fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static int add_poison(vctx* c, const char* fmt, ...) {
  int idx = c->npoison < VERIFY_MAX_POISON ? c->npoison++ : VERIFY_MAX_POISON - 1;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->poison[idx], VERIFY_REASON_MAX, fmt, ap);
  va_end(ap);
  return -2 - idx;
}

/* out = a ⊕ b (symbolic and numeric); out may alias a. */
static void reduce_into(vctx* c, vslot* out, uint64_t* obits, const vslot* a, const uint64_t* abits,
                        const vslot* b, const uint64_t* bbits, int r, int t, int s, kilnStepType_t type) {
  int W = c->W;
  const char* tn = kilnStepTypeName(type);
  vslot res = *a;
  for (int l = 0; l < NUM_LANES; l++) {
    uint32_t x = a->num[l], y = b->num[l];
    switch (l) {
      case LANE_SUM: res.num[l] = x + y; break;
      case LANE_PROD: res.num[l] = x * y; break;
      case LANE_MAX: res.num[l] = x > y ? x : y; break;
      default: res.num[l] = x < y ? x : y; break;
    }
  }
  if (a->origin <= -2) {
    res.origin = a->origin;
  } else if (b->origin <= -2) {
    res.origin = b->origin;
  } else if (!c->reduces) {
    res.origin = add_poison(c, "rank %d tb %d step %d (%s) reduces, but %s has no reduction", r, t, s, tn,
                            kilnCollName(c->p->coll));
  } else if (a->origin == -1 || b->origin == -1) {
    res.origin = add_poison(c,
                            "rank %d tb %d step %d (%s) reduces with a chunk that was never "
                            "written",
                            r, t, s, tn);
  } else if (a->origin != b->origin) {
    res.origin = add_poison(c,
                            "rank %d tb %d step %d (%s) reduces input chunk %d with input chunk "
                            "%d",
                            r, t, s, tn, a->origin, b->origin);
  } else {
    int dup = -1;
    for (int w = 0; w < W && dup < 0; w++) {
      uint64_t both = abits[w] & bbits[w];
      if (both) dup = w * 64 + __builtin_ctzll(both);
    }
    if (dup >= 0) {
      res.origin = add_poison(c,
                              "rank %d tb %d step %d (%s) counts rank %d's contribution to "
                              "input chunk %d twice",
                              r, t, s, tn, dup, a->origin);
    } else {
      for (int w = 0; w < W; w++) obits[w] = abits[w] | bbits[w];
    }
  }
  *out = res;
}

/* Runs step pc[g] of tb g (which must be runnable). */
static void exec_step(vctx* c, int g) {
  int r = c->tb_rank[g];
  int t = local_tb(c, g);
  int s = c->pc[g];
  const kilnStep* st = step_of(c, g, s);
  int W = c->W;
  kilnStepType_t type = st->type;
  if (type == KILN_STEP_NOP) return;
  int f = c->stepbase[g] + s;
  int cnt = st->cnt;
  int src = kilnStepReadsSrc(type) ? slot_of(c, r, st->srcbuf, st->srcoff) : -1;
  int dst =
      (kilnStepWritesDst(type) || type == KILN_STEP_REDUCE) ? slot_of(c, r, st->dstbuf, st->dstoff) : -1;
  int msg_in = -1;
  if (kilnStepReceives(type)) {
    int gs = c->match_tb[f];
    msg_in = c->nstore + c->msgbase[c->stepbase[gs] + c->match_step[f]];
  }
  for (int e = 0; e < cnt; e++) {
    vslot* out = &c->tmp[e];
    uint64_t* ob = &c->tmpbits[(size_t)e * W];
    const vslot* a;
    const uint64_t* ab;
    switch (type) {
      case KILN_STEP_SEND:
      case KILN_STEP_COPY:
        a = &c->slots[src + e];
        ab = &c->bits[(size_t)(src + e) * W];
        *out = *a;
        if (W) memcpy(ob, ab, sizeof(uint64_t) * W);
        break;
      case KILN_STEP_RECV:
      case KILN_STEP_RECV_COPY_SEND:
        a = &c->slots[msg_in + e];
        ab = &c->bits[(size_t)(msg_in + e) * W];
        *out = *a;
        if (W) memcpy(ob, ab, sizeof(uint64_t) * W);
        break;
      case KILN_STEP_REDUCE:
        reduce_into(c, out, ob, &c->slots[dst + e], &c->bits[(size_t)(dst + e) * W], &c->slots[src + e],
                    &c->bits[(size_t)(src + e) * W], r, t, s, type);
        break;
      default: /* rrs, rrc, rrcs: src ⊕ received */
        reduce_into(c, out, ob, &c->slots[src + e], &c->bits[(size_t)(src + e) * W], &c->slots[msg_in + e],
                    &c->bits[(size_t)(msg_in + e) * W], r, t, s, type);
        break;
    }
    out->wtb = t;
    out->wstep = s;
  }
  if (dst >= 0)
    for (int e = 0; e < cnt; e++) {
      c->slots[dst + e] = c->tmp[e];
      if (W) memcpy(&c->bits[(size_t)(dst + e) * W], &c->tmpbits[(size_t)e * W], sizeof(uint64_t) * W);
    }
  if (kilnStepSends(type)) {
    int mo = c->nstore + c->msgbase[f];
    for (int e = 0; e < cnt; e++) {
      c->slots[mo + e] = c->tmp[e];
      if (W) memcpy(&c->bits[(size_t)(mo + e) * W], &c->tmpbits[(size_t)e * W], sizeof(uint64_t) * W);
    }
  }
}

/* The tb that g waits on (or -1 if g can run its next step). Finished tbs return -1 too. */
enum { WAIT_NONE, WAIT_DEP, WAIT_RECV, WAIT_FIFO };

/* Why tb g cannot run its next step (WAIT_NONE if it can, or is finished); *on = the tb whose
 * progress it waits for. Checked in the order a runtime checks: dependency, data, FIFO space. */
static int wait_kind(const vctx* c, int g, int* on) {
  int r = c->tb_rank[g];
  const kilnThreadblock* tb = &c->p->gpus[r].tbs[local_tb(c, g)];
  int s = c->pc[g];
  *on = -1;
  if (s >= tb->nsteps) return WAIT_NONE;
  const kilnStep* st = &tb->steps[s];
  if (st->depid >= 0) {
    int gd = c->tbbase[r] + st->depid;
    if (c->pc[gd] <= st->deps) {
      *on = gd;
      return WAIT_DEP;
    }
  }
  int f = c->stepbase[g] + s;
  if (c->match_tb[f] >= 0 && c->pc[c->match_tb[f]] <= c->match_step[f]) {
    *on = c->match_tb[f];
    return WAIT_RECV;
  }
  int k = c->ix.send_ord[f];
  if (c->fifo_depth > 0 && k >= c->fifo_depth) {
    /* The send fifo_depth sends back must have been received to free its slot. */
    int f2 = c->stepbase[g] + c->ix.sendstep[c->ix.sendbase[g] + k - c->fifo_depth];
    int gr = c->ix.rmatch_tb[f2];
    if (gr >= 0 && c->pc[gr] <= c->ix.rmatch_step[f2]) {
      *on = gr;
      return WAIT_FIFO;
    }
  }
  return WAIT_NONE;
}

/* The tb that g waits on (or -1 if g can run its next step). Finished tbs return -1 too. */
static int blocked_on(const vctx* c, int g) {
  int on;
  wait_kind(c, g, &on);
  return on;
}

static bool tb_done(const vctx* c, int g) {
  int r = c->tb_rank[g];
  return c->pc[g] >= c->p->gpus[r].tbs[local_tb(c, g)].nsteps;
}

static kilnResult_t add_waiter(vctx* c, int on, int g) {
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

static void ready_push(vctx* c, int g) {
  c->ready[(c->rhead + c->rcount) % c->ntbs] = g;
  c->rcount++;
  c->inready[g] = true;
}

/* Puts g in the ready deque or on the waiter list of what blocks it. */
static kilnResult_t place(vctx* c, int g) {
  if (tb_done(c, g) || c->inready[g]) return KILN_SUCCESS;
  int on = blocked_on(c, g);
  if (on < 0) {
    ready_push(c, g);
    return KILN_SUCCESS;
  }
  return add_waiter(c, on, g);
}

/* Describes what blocked tb g waits for. */
static int describe_wait(const vctx* c, int g, char* buf, size_t len) {
  int r = c->tb_rank[g];
  int t = local_tb(c, g);
  const kilnThreadblock* tb = &c->p->gpus[r].tbs[t];
  int s = c->pc[g];
  const kilnStep* st = &tb->steps[s];
  const char* tn = kilnStepTypeName(st->type);
  int on, f = c->stepbase[g] + s;
  switch (wait_kind(c, g, &on)) {
    case WAIT_DEP:
      return snprintf(buf, len, "rank %d tb %d step %d (%s) waits for its dependency tb %d step %d", r, t, s,
                      tn, st->depid, st->deps);
    case WAIT_RECV:
      return snprintf(buf, len, "rank %d tb %d step %d (%s) waits to receive from rank %d tb %d step %d", r,
                      t, s, tn, c->tb_rank[on], local_tb(c, on), c->match_step[f]);
    case WAIT_FIFO:
      return snprintf(buf, len,
                      "rank %d tb %d step %d (%s) waits for a free slot in the FIFO to "
                      "rank %d tb %d (all %d hold sends it has not received)",
                      r, t, s, tn, c->tb_rank[on], local_tb(c, on), c->fifo_depth);
    default: return snprintf(buf, len, "rank %d tb %d step %d (%s) is runnable", r, t, s, tn);
  }
}

/* Deadlock report: the wait-for cycle reached from the first blocked tb, then other blocked tbs. */
static kilnResult_t report_deadlock(vctx* c) {
  char msg[2048];
  size_t used = 0;
  int start = -1, nblocked = 0;
  for (int g = 0; g < c->ntbs; g++)
    if (!tb_done(c, g)) {
      if (start < 0) start = g;
      nblocked++;
    }
  /* Walk the wait-for pointers: every blocked tb waits on another blocked tb, so this loops. */
  int* seen = calloc((size_t)c->ntbs, sizeof(int));
  if (!seen) return kilnSetError(KILN_ERR_NO_MEMORY, "verifier: out of memory");
  int g = start, stepno = 1;
  while (g >= 0 && !seen[g]) {
    seen[g] = stepno++;
    g = blocked_on(c, g);
  }
  bool all_deps = true;
  int cyc = g;
  if (cyc >= 0) {
    int h = cyc;
    do {
      int on;
      if (wait_kind(c, h, &on) != WAIT_DEP) all_deps = false;
      h = on;
    } while (h != cyc && h >= 0);
  }
  used += (size_t)snprintf(msg + used, sizeof msg - used, "%s (%d threadblocks blocked): ",
                           (cyc >= 0 && all_deps) ? "dependency cycle" : "deadlock", nblocked);
  int lines = 0;
  if (cyc >= 0) {
    int h = cyc;
    do {
      if (used < sizeof msg) used += (size_t)describe_wait(c, h, msg + used, sizeof msg - used);
      if (used < sizeof msg) used += (size_t)snprintf(msg + used, sizeof msg - used, "; ");
      lines++;
      h = blocked_on(c, h);
    } while (h != cyc && h >= 0 && lines < VERIFY_DEADLOCK_LINES);
  }
  free(seen);
  if (used >= 2 && used < sizeof msg) msg[used - 2] = '\0';
  return kilnSetError(KILN_ERR_VERIFY, "%s", msg);
}

/* ---- data races ----
 * Happens-before is the order of the step graph: program order, dependencies, and send before
 * its receive. A step's clock says, for every threadblock, how many of its steps happen before
 * it. Two accesses to one chunk slot of a rank, one a write, whose steps are not ordered that
 * way form a race: some real interleaving gives another result, even if none of the ones run
 * here does. Checked exactly on the first interleaving (the relation does not depend on it). */

static void race_free(vctx* c) {
  if (c->snap)
    for (int f = 0; f < c->ix.nsteps; f++) free(c->snap[f]);
  free(c->snap);
  free(c->clk);
  free(c->target);
  free(c->race_wg);
  free(c->race_ws);
  free(c->rd_head);
  free(c->rpool);
  c->snap = NULL;
  c->clk = NULL;
  c->target = NULL;
  c->race_wg = c->race_ws = c->rd_head = NULL;
  c->rpool = NULL;
  c->nrpool = c->caprpool = 0;
  c->race_on = false;
}

/* Prepares race detection for one run; leaves it off for plans too large for the clocks, or where
 * memory for them cannot be had. */
static kilnResult_t race_init(vctx* c) {
  race_free(c);
  if (c->ntbs == 0 || !KILN_VERIFY_CHECKS_ALL_RACES(c->ntbs, c->ix.nsteps)) return KILN_SUCCESS;
  size_t T = (size_t)c->ntbs;
  c->clk = calloc(T * T, sizeof(int32_t));
  c->snap = calloc((size_t)c->ix.nsteps + 1, sizeof(int32_t*));
  c->target = calloc((size_t)c->ix.nsteps + 1, sizeof(bool));
  c->race_wg = malloc(sizeof(int32_t) * ((size_t)c->nstore + 1));
  c->race_ws = malloc(sizeof(int32_t) * ((size_t)c->nstore + 1));
  c->rd_head = malloc(sizeof(int32_t) * ((size_t)c->nstore + 1));
  if (!c->clk || !c->snap || !c->target || !c->race_wg || !c->race_ws || !c->rd_head) {
    race_free(c); /* no memory for the clocks: the interleavings alone, as for a larger plan */
    return KILN_SUCCESS;
  }
  for (int i = 0; i < c->nstore; i++) c->race_wg[i] = c->race_ws[i] = c->rd_head[i] = -1;
  for (int g = 0; g < c->ntbs; g++) {
    int r = c->tb_rank[g];
    const kilnThreadblock* tb = &c->p->gpus[r].tbs[local_tb(c, g)];
    for (int s = 0; s < tb->nsteps; s++)
      if (tb->steps[s].depid >= 0)
        c->target[c->stepbase[c->tbbase[r] + tb->steps[s].depid] + tb->steps[s].deps] = true;
  }
  c->nrpool = 0;
  c->race_on = true;
  return KILN_SUCCESS;
}

static void clock_join(int32_t* dst, const int32_t* src, int T) {
  for (int u = 0; u < T; u++)
    if (src[u] > dst[u]) dst[u] = src[u];
}

static kilnResult_t race_report(vctx* c, int r, int sl_buf, int sl_off, int g1, int s1, bool w1, int g2,
                                int s2, bool w2) {
  const kilnStep* a = step_of(c, g1, s1);
  const kilnStep* b = step_of(c, g2, s2);
  return verr(
      "data race on rank %d %s chunk %d: tb %d step %d (%s) %s it and tb %d step %d (%s) "
      "%s it, and no dependency orders the two [%s]",
      r, kilnPlanBufferLabel((kilnBuffer_t)sl_buf), sl_off, local_tb(c, g1), s1, kilnStepTypeName(a->type),
      w1 ? "writes" : "reads", local_tb(c, g2), s2, kilnStepTypeName(b->type), w2 ? "writes" : "reads",
      c->mode_name);
}

/* True when step s2 of tb g2 happens before the step that tb g runs next. */
static bool ordered(const vctx* c, int g, int g2, int s2) {
  return g2 == g || c->clk[(size_t)g * c->ntbs + g2] > s2;
}

static kilnResult_t race_access(vctx* c, int g, int s, kilnBuffer_t buf, int off, int cnt, bool write) {
  int r = c->tb_rank[g];
  int base = slot_of(c, r, buf, off);
  for (int e = 0; e < cnt; e++) {
    int sl = base + e;
    if (c->race_wg[sl] >= 0 && !ordered(c, g, c->race_wg[sl], c->race_ws[sl]))
      return race_report(c, r, buf, off + e, c->race_wg[sl], c->race_ws[sl], true, g, s, write);
    if (write) {
      for (int i = c->rd_head[sl]; i >= 0; i = c->rpool[i].next)
        if (!ordered(c, g, c->rpool[i].g, c->rpool[i].s))
          return race_report(c, r, buf, off + e, c->rpool[i].g, c->rpool[i].s, false, g, s, true);
      c->race_wg[sl] = g;
      c->race_ws[sl] = s;
      c->rd_head[sl] = -1;
    } else {
      int i = c->rd_head[sl];
      while (i >= 0 && c->rpool[i].g != g) i = c->rpool[i].next;
      if (i >= 0) {
        c->rpool[i].s = s; /* a later read of the same tb covers the earlier one */
        continue;
      }
      if (c->nrpool == c->caprpool) {
        int nc = c->caprpool ? 2 * c->caprpool : 1024;
        struct rnode* np = realloc(c->rpool, sizeof(struct rnode) * (size_t)nc);
        if (!np) return kilnSetError(KILN_ERR_NO_MEMORY, "verifier: out of memory for race detection");
        c->rpool = np;
        c->caprpool = nc;
      }
      c->rpool[c->nrpool] = (struct rnode){g, s, c->rd_head[sl]};
      c->rd_head[sl] = c->nrpool++;
    }
  }
  return KILN_SUCCESS;
}

/* Before tb g runs its next step: joins the clocks it waits on, checks its accesses, then
 * records its completion (and snapshots the clock for steps others wait on or receive). */
static kilnResult_t race_step(vctx* c, int g) {
  int T = c->ntbs;
  int s = c->pc[g];
  int r = c->tb_rank[g];
  const kilnStep* st = step_of(c, g, s);
  int f = c->stepbase[g] + s;
  int32_t* my = &c->clk[(size_t)g * T];
  if (st->depid >= 0) {
    int fd = c->stepbase[c->tbbase[r] + st->depid] + st->deps;
    if (c->snap[fd]) clock_join(my, c->snap[fd], T);
  }
  if (c->match_tb[f] >= 0) {
    int fs = c->stepbase[c->match_tb[f]] + c->match_step[f];
    if (c->snap[fs]) {
      clock_join(my, c->snap[fs], T);
      if (!c->target[fs]) {
        free(c->snap[fs]);
        c->snap[fs] = NULL;
      }
    }
  }
  kilnResult_t res = KILN_SUCCESS;
  if (kilnStepReadsSrc(st->type)) res = race_access(c, g, s, st->srcbuf, st->srcoff, st->cnt, false);
  if (res == KILN_SUCCESS && st->type == KILN_STEP_REDUCE)
    res = race_access(c, g, s, st->dstbuf, st->dstoff, st->cnt, false);
  if (res == KILN_SUCCESS && kilnStepWritesDst(st->type))
    res = race_access(c, g, s, st->dstbuf, st->dstoff, st->cnt, true);
  if (res != KILN_SUCCESS) return res;
  my[g] = s + 1;
  if (c->target[f] || kilnStepSends(st->type)) {
    c->snap[f] = malloc(sizeof(int32_t) * (size_t)T);
    if (!c->snap[f]) return kilnSetError(KILN_ERR_NO_MEMORY, "verifier: out of memory for race detection");
    memcpy(c->snap[f], my, sizeof(int32_t) * (size_t)T);
  }
  return KILN_SUCCESS;
}

/* ---- races rank by rank, for plans past the clocks' limit ----
 * Where the whole plan's clocks do not fit (KILN_VERIFY_CHECKS_ALL_RACES), every rank's accesses are
 * checked against the order of that rank's own steps: program order and dependencies, each rank's
 * steps visited in an order that keeps both. Two accesses to one chunk of a rank, one a write, that
 * the rank's own order does not settle are reported, whether or not sends and receives through
 * other ranks would have ordered them: the check proves more than race freedom (a plan it passes
 * has no data race under any interleaving), and costs each rank's threadblocks times its steps
 * instead of the plan's threadblocks times all. kiln's lowering orders every such pair by a
 * dependency of the rank, so its plans pass at any size. */
static kilnResult_t local_races(vctx* c) {
  kilnResult_t res = KILN_SUCCESS;
  const char* mode = c->mode_name;
  char local_mode[96];
  snprintf(local_mode, sizeof local_mode, "%s; rank by rank: the rank's program order and dependencies",
           mode);
  c->mode_name = local_mode;
  c->race_wg = malloc(sizeof(int32_t) * ((size_t)c->nstore + 1));
  c->race_ws = malloc(sizeof(int32_t) * ((size_t)c->nstore + 1));
  c->rd_head = malloc(sizeof(int32_t) * ((size_t)c->nstore + 1));
  int nsteps = c->ix.nsteps;
  int* indeg = calloc((size_t)nsteps + 1, sizeof(int));
  int* queue = malloc(sizeof(int) * ((size_t)nsteps + 1));
  int* dependents = NULL; /* CSR: the steps that wait on each step */
  int* dstart = calloc((size_t)nsteps + 2, sizeof(int));
  int32_t** snap = calloc((size_t)nsteps + 1, sizeof(int32_t*));
  int32_t* clk = NULL;
  int* gof = malloc(sizeof(int) * ((size_t)nsteps + 1)); /* the threadblock of each flat step */
  if (!c->race_wg || !c->race_ws || !c->rd_head || !indeg || !queue || !dstart || !snap || !gof) {
    res = kilnSetError(KILN_ERR_NO_MEMORY, "verifier: out of memory for the rank-by-rank race check");
    goto out_free;
  }
  for (int i = 0; i < c->nstore; i++) c->race_wg[i] = c->race_ws[i] = c->rd_head[i] = -1;
  for (int g = 0; g < c->ntbs; g++)
    for (int f = c->stepbase[g]; f < c->stepbase[g + 1]; f++) gof[f] = g;
  for (int g = 0; g < c->ntbs; g++) {
    const int r = c->tb_rank[g];
    const kilnThreadblock* tb = &c->p->gpus[r].tbs[local_tb(c, g)];
    for (int s = 0; s < tb->nsteps; s++)
      if (tb->steps[s].depid >= 0 && tb->steps[s].depid < c->p->gpus[r].ntbs) {
        const int gd = c->tbbase[r] + tb->steps[s].depid;
        if (tb->steps[s].deps >= 0 && tb->steps[s].deps < c->stepbase[gd + 1] - c->stepbase[gd])
          dstart[c->stepbase[gd] + tb->steps[s].deps + 1]++;
      }
  }
  for (int f = 0; f < nsteps; f++) dstart[f + 1] += dstart[f];
  dependents = malloc(sizeof(int) * ((size_t)dstart[nsteps] + 1));
  if (!dependents) {
    res = kilnSetError(KILN_ERR_NO_MEMORY, "verifier: out of memory for the rank-by-rank race check");
    goto out_free;
  }
  {
    int* fill = malloc(sizeof(int) * ((size_t)nsteps + 1));
    if (!fill) {
      res = kilnSetError(KILN_ERR_NO_MEMORY, "verifier: out of memory for the rank-by-rank race check");
      goto out_free;
    }
    memcpy(fill, dstart, sizeof(int) * (size_t)nsteps);
    for (int g = 0; g < c->ntbs; g++) {
      const int r = c->tb_rank[g];
      const kilnThreadblock* tb = &c->p->gpus[r].tbs[local_tb(c, g)];
      for (int s = 0; s < tb->nsteps; s++) {
        const int f = c->stepbase[g] + s;
        if (s > 0) indeg[f]++;
        if (tb->steps[s].depid >= 0 && tb->steps[s].depid < c->p->gpus[r].ntbs) {
          const int gd = c->tbbase[r] + tb->steps[s].depid;
          if (tb->steps[s].deps >= 0 && tb->steps[s].deps < c->stepbase[gd + 1] - c->stepbase[gd]) {
            dependents[fill[c->stepbase[gd] + tb->steps[s].deps]++] = f;
            indeg[f]++;
          }
        }
      }
    }
    free(fill);
  }
  for (int r = 0; r < c->n && res == KILN_SUCCESS; r++) {
    const int g0 = c->tbbase[r], T = c->tbbase[r + 1] - g0;
    if (T == 0) continue;
    free(clk);
    clk = calloc((size_t)T * (size_t)T, sizeof(int32_t)); /* clk[i*T+u]: steps of tb u before tb i's next */
    if (!clk) {
      res = kilnSetError(KILN_ERR_NO_MEMORY, "verifier: out of memory for the rank-by-rank race check");
      break;
    }
    c->nrpool = 0;
    int h = 0, tl = 0;
    for (int f = c->stepbase[g0]; f < c->stepbase[g0 + T]; f++)
      if (indeg[f] == 0) queue[tl++] = f;
    int visited = 0;
    while (h < tl && res == KILN_SUCCESS) {
      const int f = queue[h++], g = gof[f], i = g - g0, s = f - c->stepbase[g];
      visited++;
      int32_t* my = &clk[(size_t)i * T];
      const kilnStep* st = step_of(c, g, s);
      if (st->depid >= 0 && st->depid < T) {
        const int fd = c->stepbase[g0 + st->depid] + st->deps;
        if (st->deps >= 0 && fd < c->stepbase[g0 + st->depid + 1] && snap[fd])
          for (int u = 0; u < T; u++)
            if (snap[fd][u] > my[u]) my[u] = snap[fd][u];
      }
      /* race_access's bookkeeping, on this rank's clocks (ordered(): the same test on them) */
      const int nacc = 3;
      const bool acc[3] = {kilnStepReadsSrc(st->type), st->type == KILN_STEP_REDUCE,
                           kilnStepWritesDst(st->type)};
      const kilnBuffer_t abuf[3] = {st->srcbuf, st->dstbuf, st->dstbuf};
      const int aoff[3] = {st->srcoff, st->dstoff, st->dstoff};
      for (int a = 0; a < nacc && res == KILN_SUCCESS; a++) {
        if (!acc[a]) continue;
        const bool write = a == 2;
        const int base = slot_of(c, r, abuf[a], aoff[a]);
        for (int e = 0; e < st->cnt && res == KILN_SUCCESS; e++) {
          const int sl = base + e;
          const int wg = c->race_wg[sl];
          if (wg >= 0 && wg != g && !(my[wg - g0] > c->race_ws[sl])) {
            res = race_report(c, r, abuf[a], aoff[a] + e, wg, c->race_ws[sl], true, g, s, write);
            break;
          }
          if (write) {
            for (int k = c->rd_head[sl]; k >= 0 && res == KILN_SUCCESS; k = c->rpool[k].next)
              if (c->rpool[k].g != g && !(my[c->rpool[k].g - g0] > c->rpool[k].s))
                res =
                    race_report(c, r, abuf[a], aoff[a] + e, c->rpool[k].g, c->rpool[k].s, false, g, s, true);
            c->race_wg[sl] = g;
            c->race_ws[sl] = s;
            c->rd_head[sl] = -1;
          } else {
            int k = c->rd_head[sl];
            while (k >= 0 && c->rpool[k].g != g) k = c->rpool[k].next;
            if (k >= 0) {
              c->rpool[k].s = s;
              continue;
            }
            if (c->nrpool == c->caprpool) {
              int nc = c->caprpool ? 2 * c->caprpool : 1024;
              struct rnode* np = realloc(c->rpool, sizeof(struct rnode) * (size_t)nc);
              if (!np) {
                res = kilnSetError(KILN_ERR_NO_MEMORY,
                                   "verifier: out of memory for the rank-by-rank race check");
                break;
              }
              c->rpool = np;
              c->caprpool = nc;
            }
            c->rpool[c->nrpool] = (struct rnode){g, s, c->rd_head[sl]};
            c->rd_head[sl] = c->nrpool++;
          }
        }
      }
      if (res != KILN_SUCCESS) break;
      my[i] = s + 1;
      if (dstart[f + 1] > dstart[f]) { /* others wait on this step: keep its clock */
        snap[f] = malloc(sizeof(int32_t) * (size_t)T);
        if (!snap[f]) {
          res = kilnSetError(KILN_ERR_NO_MEMORY, "verifier: out of memory for the rank-by-rank race check");
          break;
        }
        memcpy(snap[f], my, sizeof(int32_t) * (size_t)T);
      }
      if (f + 1 < c->stepbase[g + 1] && --indeg[f + 1] == 0) queue[tl++] = f + 1;
      for (int k = dstart[f]; k < dstart[f + 1]; k++)
        if (--indeg[dependents[k]] == 0) queue[tl++] = dependents[k];
    }
    for (int f = c->stepbase[g0]; f < c->stepbase[g0 + T]; f++) {
      free(snap[f]);
      snap[f] = NULL;
    }
    /* steps left unvisited wait on each other: a dependency cycle, which the runs report */
    (void)visited;
  }
out_free:
  if (snap)
    for (int f = 0; f < nsteps; f++) free(snap[f]);
  free(snap);
  free(clk);
  free(indeg);
  free(queue);
  free(dependents);
  free(dstart);
  free(gof);
  race_free(c);
  c->mode_name = mode;
  return res;
}

/* Policies: 0 round-robin (one step each, FIFO order); 1 run-to-block, last readied first;
 * odd >= 3: random tb runs to block; even >= 2: random tb runs one step. */
static kilnResult_t run_schedule(vctx* c, int sched) {
  kilnResult_t res = KILN_SUCCESS;
  uint64_t rng = splitmix64(c->seed ^ (0x5eed0000ull + (uint64_t)sched));
  for (int g = 0; g < c->ntbs; g++) {
    c->pc[g] = 0;
    c->nwait[g] = 0;
    c->inready[g] = false;
  }
  c->rhead = c->rcount = 0;
  int order_dir = sched == 1 ? -1 : 1;
  for (int i = 0; i < c->ntbs; i++) {
    int g = order_dir > 0 ? i : c->ntbs - 1 - i;
    res = place(c, g);
    if (res != KILN_SUCCESS) return res;
  }
  bool to_block = sched == 1 || (sched >= 3 && sched % 2 == 1);
  while (c->rcount > 0) {
    int pick;
    if (sched == 0) {
      pick = 0;
    } else if (sched == 1) {
      pick = c->rcount - 1;
    } else {
      rng = splitmix64(rng);
      pick = (int)(rng % (uint64_t)c->rcount);
    }
    /* Remove the pick from the deque (swap with the front). */
    int pos = (c->rhead + pick) % c->ntbs;
    int g = c->ready[pos];
    c->ready[pos] = c->ready[c->rhead];
    c->rhead = (c->rhead + 1) % c->ntbs;
    c->rcount--;
    c->inready[g] = false;
    do {
      if (c->race_on) {
        res = race_step(c, g);
        if (res != KILN_SUCCESS) return res;
      }
      exec_step(c, g);
      c->pc[g]++;
      /* Wake whatever waited on g. */
      int nw = c->nwait[g];
      c->nwait[g] = 0;
      for (int i = 0; i < nw; i++) {
        int w = c->waiters[g][i];
        int on = blocked_on(c, w);
        if (on == g && !tb_done(c, w)) {
          /* still waiting on g: keep it here (re-add after loop) */
          c->waiters[g][c->nwait[g]++] = w;
        } else {
          res = place(c, w);
          if (res != KILN_SUCCESS) return res;
        }
      }
    } while (to_block && !tb_done(c, g) && blocked_on(c, g) < 0);
    res = place(c, g);
    if (res != KILN_SUCCESS) return res;
  }
  for (int g = 0; g < c->ntbs; g++)
    if (!tb_done(c, g)) return report_deadlock(c);
  return KILN_SUCCESS;
}

/* ---- postcondition ---- */

static void describe_value(const vctx* c, int sl, char* buf, size_t len) {
  const vslot* v = &c->slots[sl];
  if (v->origin == -1) {
    snprintf(buf, len, "a chunk that was never written");
  } else if (v->origin <= -2) {
    snprintf(buf, len, "an invalid value: %s", c->poison[-v->origin - 2]);
  } else if (c->reduces) {
    const uint64_t* b = &c->bits[(size_t)sl * c->W];
    int count = 0, missing = -1;
    for (int r = 0; r < c->n; r++) {
      if (b[r / 64] >> (r % 64) & 1)
        count++;
      else if (missing < 0)
        missing = r;
    }
    if (missing >= 0)
      snprintf(buf, len, "input chunk %d reduced over %d of %d ranks (rank %d missing)", v->origin, count,
               c->n, missing);
    else
      snprintf(buf, len, "input chunk %d reduced over all ranks", v->origin);
  } else {
    int per = inputs_per_rank(c);
    snprintf(buf, len, "input chunk %d of rank %d", v->origin % per, v->origin / per);
  }
}

/* The run a result came from, for messages: the form and the interleaving. */
static void run_context(const vctx* c, int sched, char* buf, size_t n) {
  if (sched == 0)
    snprintf(buf, n, "%s, round-robin order", c->mode_name);
  else
    snprintf(buf, n, "%s, interleaving %d with seed %" PRIu64, c->mode_name, sched, c->seed);
}

static kilnResult_t check_result(vctx* c, int sched, const kilnVerifyOptions* opts) {
  int n = c->n;
  char got[VERIFY_REASON_MAX + 64], where[96], ctxs[96];
  run_context(c, sched, ctxs, sizeof ctxs);
  int nres = c->p->coll == KILN_COLL_REDUCESCATTER ? c->k : c->R;
  int per = inputs_per_rank(c);
  for (int d = 0; d < n; d++) {
    for (int j = 0; j < nres; j++) {
      kilnBuffer_t buf;
      int off;
      int sl = result_slot(c, d, j, &buf, &off);
      const vslot* v = &c->slots[sl];
      int want; /* expected origin */
      int src_rank = 0, src_chunk = 0;
      switch (c->p->coll) {
        case KILN_COLL_ALLGATHER:
          want = j;
          src_rank = j / c->k;
          src_chunk = j % c->k;
          break;
        case KILN_COLL_ALLTOALL:
          src_rank = j / c->k;
          src_chunk = d * c->k + j % c->k;
          want = src_rank * per + src_chunk;
          break;
        case KILN_COLL_REDUCESCATTER: want = d * c->k + j; break;
        default: want = j; break;
      }
      bool ok = v->origin == want;
      if (ok && c->reduces) {
        const uint64_t* b = &c->bits[(size_t)sl * c->W];
        for (int r = 0; r < n && ok; r++) ok = b[r / 64] >> (r % 64) & 1;
      }
      if (v->wtb >= 0)
        snprintf(where, sizeof where, " (last written by tb %d step %d)", v->wtb, v->wstep);
      else
        where[0] = '\0';
      if (!ok) {
        describe_value(c, sl, got, sizeof got);
        if (c->reduces)
          return verr(
              "rank %d %s chunk %d%s: expected input chunk %d reduced over all %d ranks, "
              "got %s [%s]",
              d, kilnPlanBufferLabel(buf), off, where, want, n, got, ctxs);
        return verr("rank %d %s chunk %d%s: expected input chunk %d of rank %d, got %s [%s]", d,
                    kilnPlanBufferLabel(buf), off, where, src_chunk, src_rank, got, ctxs);
      }
      /* Numeric check against a reference computed from the inputs. */
      int lanes = opts->all_ops ? NUM_LANES : 1;
      if (!c->reduces) lanes = 1;
      for (int l = 0; l < lanes; l++) {
        uint32_t ref = c->reduces ? c->ref[(size_t)want * NUM_LANES + l] : initial_value(c, 0, want, l);
        if (v->num[l] != ref)
          return verr("rank %d %s chunk %d%s: numeric check with op %s failed: got %" PRIu32
                      ", expected %" PRIu32 " [%s]",
                      d, kilnPlanBufferLabel(buf), off, where, lane_names[l], v->num[l], ref, ctxs);
      }
    }
  }
  return KILN_SUCCESS;
}

/* Out of place, the input is the caller's send buffer, which a collective only reads (NCCL's
 * sendbuff is const; the runtime binds it as it is): a step that wrote into it is an error, even
 * where the result comes out right (a ring that accumulates partial sums in the input). */
static kilnResult_t check_input_kept(vctx* c, int sched) {
  for (int r = 0; r < c->n; r++) {
    const kilnGpu* g = &c->p->gpus[r];
    for (int j = 0; j < g->i_chunks; j++) {
      const vslot* v = &c->slots[slot_of(c, r, KILN_BUF_INPUT, j)];
      if (v->wtb >= 0) {
        char ctxs[96];
        run_context(c, sched, ctxs, sizeof ctxs);
        return verr(
            "rank %d input chunk %d written by tb %d step %d out of place: the input is the caller's "
            "send buffer, read only [%s]",
            r, j, v->wtb, v->wstep, ctxs);
      }
    }
  }
  return KILN_SUCCESS;
}

/* Reference results of a reduction: every input chunk reduced over all ranks, per op. */
static kilnResult_t compute_reference(vctx* c) {
  if (!c->reduces) return KILN_SUCCESS;
  c->ref = malloc(sizeof(uint32_t) * (size_t)c->R * NUM_LANES + 1);
  if (!c->ref) return kilnSetError(KILN_ERR_NO_MEMORY, "verifier: out of memory");
  for (int j = 0; j < c->R; j++)
    for (int l = 0; l < NUM_LANES; l++) {
      uint32_t ref = initial_value(c, 0, j, l);
      for (int r = 1; r < c->n; r++) {
        uint32_t x = initial_value(c, r, j, l);
        switch (l) {
          case LANE_SUM: ref += x; break;
          case LANE_PROD: ref *= x; break;
          case LANE_MAX: ref = ref > x ? ref : x; break;
          default: ref = ref < x ? ref : x; break;
        }
      }
      c->ref[(size_t)j * NUM_LANES + l] = ref;
    }
  return KILN_SUCCESS;
}

static void free_ctx(vctx* c) {
  race_free(c);
  free(c->ref);
  kilnPlanIndexFree(&c->ix);
  free(c->bufbase);
  free(c->slots);
  free(c->bits);
  free(c->tmp);
  free(c->tmpbits);
  free(c->pc);
  free(c->ready);
  free(c->inready);
  if (c->waiters)
    for (int g = 0; g < c->ntbs; g++) free(c->waiters[g]);
  free(c->waiters);
  free(c->nwait);
  free(c->capwait);
}

kilnResult_t kilnPlanVerify(const kilnPlan* p, const kilnVerifyOptions* opts) {
  kilnVerifyOptions defaults = KILN_VERIFY_OPTIONS_INIT;
  if (!opts) opts = &defaults;
  if (!p) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnPlanVerify: no plan");
  if (opts->fifo_depth < 0)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnPlanVerify: fifo_depth must be >= 0 (got %d)",
                        opts->fifo_depth);
  if (opts->schedules < 1)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnPlanVerify: schedules must be >= 1 (got %d)",
                        opts->schedules);
  if (p->ngpus < 1 || p->ngpus > KILN_MAX_RANKS || !p->gpus)
    return verr("plan has %d GPUs (expected 1..%d)", p->ngpus, KILN_MAX_RANKS);
  if ((unsigned)p->coll >= KILN_NUM_COLLS) return verr("plan has an unknown collective");
  if (kilnPlanHasMemorySteps(p)) return kilnVerifyMemoryPlan(p, opts);

  vctx c;
  memset(&c, 0, sizeof c);
  c.p = p;
  c.n = p->ngpus;
  c.seed = opts->seed;
  c.fifo_depth = opts->fifo_depth;
  c.reduces = p->coll == KILN_COLL_ALLREDUCE || p->coll == KILN_COLL_REDUCESCATTER;
  c.W = c.reduces ? (c.n + 63) / 64 : 0;
  kilnResult_t res = kilnPlanIndexBuild(p, &c.ix);
  if (res != KILN_SUCCESS) goto out;
  c.ntbs = c.ix.ntbs;
  c.tbbase = c.ix.tbbase;
  c.tb_rank = c.ix.tb_rank;
  c.stepbase = c.ix.stepbase;
  c.match_tb = c.ix.match_tb;
  c.match_step = c.ix.match_step;
  c.msgbase = c.ix.msgbase;
  c.nmsg = c.ix.nmsg;
  c.maxcnt = c.ix.maxcnt;
  res = check_layout(&c);
  if (res != KILN_SUCCESS) goto out;
  res = compute_reference(&c);
  if (res != KILN_SUCCESS) goto out;

  c.bufbase = malloc(sizeof(int) * (size_t)c.n * KILN_NUM_BUFFERS);
  c.pc = calloc((size_t)c.ntbs + 1, sizeof(int));
  c.ready = malloc(sizeof(int) * (size_t)(c.ntbs + 1));
  c.inready = calloc((size_t)c.ntbs + 1, sizeof(bool));
  c.waiters = calloc((size_t)c.ntbs + 1, sizeof(int*));
  c.nwait = calloc((size_t)c.ntbs + 1, sizeof(int));
  c.capwait = calloc((size_t)c.ntbs + 1, sizeof(int));
  c.tmp = malloc(sizeof(vslot) * (size_t)c.maxcnt);
  c.tmpbits = calloc((size_t)c.maxcnt * (size_t)(c.W ? c.W : 1), sizeof(uint64_t));
  if (!c.bufbase || !c.pc || !c.ready || !c.inready || !c.waiters || !c.nwait || !c.capwait || !c.tmp ||
      !c.tmpbits) {
    res = kilnSetError(KILN_ERR_NO_MEMORY, "verifier: out of memory");
    goto out;
  }

  /* Which forms to check: the in-place one when the plan claims it (or has no other reading),
   * the out-of-place one when it claims that (or claims nothing). */
  bool modes[2]; /* [0] out of place, [1] in place */
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
    if ((res = setup_layout(&c, m == 1)) != KILN_SUCCESS) goto out;
    free(c.slots);
    free(c.bits);
    c.slots = malloc(sizeof(vslot) * (size_t)(c.nslots + 1));
    /* Without rank sets (W = 0) one word, so that &bits[i * W] is a valid pointer too. */
    c.bits = malloc(sizeof(uint64_t) * (c.W ? (size_t)(c.nslots + 1) * (size_t)c.W : 1));
    if (!c.slots || !c.bits) {
      res = kilnSetError(KILN_ERR_NO_MEMORY, "verifier: out of memory for %d chunk slots", c.nslots);
      goto out;
    }
    /* a plan past the clocks' limit: its races rank by rank, before the runs */
    if (!KILN_VERIFY_CHECKS_ALL_RACES(c.ntbs, c.ix.nsteps) && (res = local_races(&c)) != KILN_SUCCESS)
      goto out;
    for (int sched = 0; sched < opts->schedules; sched++) {
      init_values(&c);
      if (sched == 0)
        res = race_init(&c);
      else
        race_free(&c);
      if (res != KILN_SUCCESS) goto out;
      res = run_schedule(&c, sched);
      if (res != KILN_SUCCESS) goto out;
      if (p->coll == KILN_COLL_CUSTOM) continue;
      res = check_result(&c, sched, opts);
      if (res == KILN_SUCCESS && m == 0) res = check_input_kept(&c, sched);
      if (res != KILN_SUCCESS) goto out;
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
