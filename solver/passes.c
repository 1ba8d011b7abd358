/* Plans with memory steps as passes (kiln/passes.h). */
#include "kiln/passes.h"
#include "kiln_internal.h"

#include <stdlib.h>
#include <string.h>

/* Every rank's scratch chunks by kind (0 plain, 1 16-byte lines, 2 LL128 lines) and their index
 * among the rank's chunks of that kind. */
typedef struct layout {
  int n;
  int** cls;
  int** idx;
  int** proto; /* kilnPlanLineChunks: the line protocol of each chunk, or -1 */
  int (*count)[3];
} layout;

static void layout_free(layout* L) {
  for (int q = 0; q < L->n; q++) {
    if (L->cls) free(L->cls[q]);
    if (L->idx) free(L->idx[q]);
    if (L->proto) free(L->proto[q]);
  }
  free(L->cls);
  free(L->idx);
  free(L->proto);
  free(L->count);
  memset(L, 0, sizeof *L);
}

static int line_class(int proto) { return proto == KILN_PROTO_LL128 ? 2 : 1; }

static kilnResult_t layout_build(const kilnPlan* p, layout* L, int* lineProtos) {
  memset(L, 0, sizeof *L);
  L->n = p->ngpus;
  L->cls = calloc((size_t)p->ngpus, sizeof(int*));
  L->idx = calloc((size_t)p->ngpus, sizeof(int*));
  L->proto = calloc((size_t)p->ngpus, sizeof(int*));
  L->count = calloc((size_t)p->ngpus, sizeof(*L->count));
  if (!L->cls || !L->idx || !L->proto || !L->count) goto oom;
  *lineProtos = 0;
  for (int q = 0; q < p->ngpus; q++) {
    const int ns = p->gpus[q].s_chunks;
    L->cls[q] = malloc(sizeof(int) * (size_t)(ns + 1));
    L->idx[q] = malloc(sizeof(int) * (size_t)(ns + 1));
    L->proto[q] = malloc(sizeof(int) * (size_t)(ns + 1));
    if (!L->cls[q] || !L->idx[q] || !L->proto[q]) goto oom;
    kilnResult_t res = kilnPlanLineChunks(p, q, L->proto[q]);
    if (res != KILN_SUCCESS) {
      layout_free(L);
      return res;
    }
    for (int c = 0; c < ns; c++) {
      const int k = L->proto[q][c] < 0 ? 0 : line_class(L->proto[q][c]);
      if (k) *lineProtos |= 1 << L->proto[q][c];
      L->cls[q][c] = k;
      L->idx[q][c] = L->count[q][k]++;
    }
  }
  return KILN_SUCCESS;
oom:
  layout_free(L);
  return kilnSetError(KILN_ERR_NO_MEMORY, "plan %s: out of memory laying out its scratch", p->name);
}

/* The operand for cnt chunks of buffer b at off on rank q (a scratch range is of one kind:
 * kilnPlanVerify's rules for line chunks); *proto the line protocol it holds (-1: plain). */
static kilnPassOperand operand_of(const layout* L, int q, kilnBuffer_t b, int off, int* proto) {
  kilnPassOperand o = {KILN_OPND_USER, q, (int)b, off};
  *proto = -1;
  if (b != KILN_BUF_SCRATCH) return o;
  const int k = L->cls[q][off];
  o.off = L->idx[q][off];
  if (k == 0) {
    o.kind = KILN_OPND_SCRATCH;
    o.buf = 0;
  } else {
    o.kind = KILN_OPND_LINES;
    o.buf = k == 2 ? KILN_LINES_128 : KILN_LINES_16;
    *proto = L->proto[q][off];
  }
  return o;
}

/* A pass's accesses to plain data (user buffers and plain scratch of any rank), for the barrier
 * analysis: a range of chunks read or written. */
typedef struct access {
  int kind, rank, buf, lo, hi;
  bool write;
} access;

static bool conflicts(const access* a, const access* b, bool inPlace) {
  if (a->rank != b->rank || a->kind != b->kind || !(a->write || b->write)) return false;
  if (a->kind == KILN_OPND_USER && a->buf != b->buf) return inPlace; /* input and output may be one buffer */
  return a->lo < b->hi && b->lo < a->hi;
}

typedef struct builder {
  const kilnPlan* p;
  int r;
  kilnRankPasses* out;
  int capPasses, capOps;
} builder;

static kilnPassOperand* add_ops(builder* b, int n) {
  kilnRankPasses* o = b->out;
  if (o->nops + n > b->capOps) {
    int cap = b->capOps ? b->capOps * 2 : 64;
    while (cap < o->nops + n) cap *= 2;
    kilnPassOperand* v = realloc(o->ops, sizeof *v * (size_t)cap);
    if (!v) return NULL;
    o->ops = v;
    b->capOps = cap;
  }
  kilnPassOperand* at = &o->ops[o->nops];
  o->nops += n;
  return at;
}

static kilnPass* add_pass(builder* b) {
  kilnRankPasses* o = b->out;
  if (o->npasses == b->capPasses) {
    const int cap = b->capPasses ? b->capPasses * 2 : 32;
    kilnPass* v = realloc(o->passes, sizeof *v * (size_t)cap);
    if (!v) return NULL;
    o->passes = v;
    b->capPasses = cap;
  }
  kilnPass* ps = &o->passes[o->npasses++];
  memset(ps, 0, sizeof *ps);
  ps->firstOp = o->nops;
  ps->depid = ps->deps = -1;
  return ps;
}

static bool same_operand(const kilnPassOperand* a, const kilnPassOperand* b) {
  return a->kind == b->kind && a->rank == b->rank && a->buf == b->buf && a->off == b->off;
}

/* Whether two operands of cnt chunks (plain memory) may overlap. */
static bool overlaps(const kilnPassOperand* a, const kilnPassOperand* b, int cnt, bool inPlace) {
  if (a->kind == KILN_OPND_LINES || b->kind == KILN_OPND_LINES)
    return false; /* lines: one writer, read only */
  if (a->kind != b->kind || a->rank != b->rank) return false;
  if (a->kind == KILN_OPND_USER && a->buf != b->buf) return inPlace;
  return a->off < b->off + cnt && b->off < a->off + cnt;
}

static uint64_t fnv(uint64_t h, int64_t v) {
  for (int k = 0; k < 8; k++) {
    h ^= (uint64_t)(v >> (8 * k)) & 0xff;
    h *= 0x100000001b3ull;
  }
  return h;
}

static uint64_t plan_hash(const kilnPlan* p) {
  uint64_t h = 0xcbf29ce484222325ull;
  h = fnv(h, p->ngpus);
  h = fnv(h, p->coll);
  h = fnv(h, p->proto);
  for (int r = 0; r < p->ngpus; r++) {
    const kilnGpu* g = &p->gpus[r];
    h = fnv(h, g->i_chunks);
    h = fnv(h, g->o_chunks);
    h = fnv(h, g->s_chunks);
    h = fnv(h, g->ntbs);
    for (int t = 0; t < g->ntbs; t++) {
      const kilnThreadblock* tb = &g->tbs[t];
      h = fnv(h, tb->send);
      h = fnv(h, tb->recv);
      h = fnv(h, tb->chan);
      h = fnv(h, tb->nsteps);
      for (int s = 0; s < tb->nsteps; s++) {
        const kilnStep* st = &tb->steps[s];
        const int64_t f[] = {st->type, st->srcbuf, st->srcoff, st->dstbuf, st->dstoff,
                             st->cnt,  st->depid,  st->deps,   st->peer,   st->proto};
        for (size_t k = 0; k < sizeof f / sizeof f[0]; k++) h = fnv(h, f[k]);
      }
    }
  }
  return h ? h : 1;
}

static kilnResult_t unsupported(const kilnPlan* p, int r, int t, int s, const char* why) {
  return kilnSetError(KILN_ERR_UNSUPPORTED, "plan %s rank %d tb %d step %d: %s", p->name, r, t, s, why);
}

/* The accesses of pass ps into acc (at most 2 per operand). */
static int pass_accesses(const kilnRankPasses* o, const kilnPass* ps, access* acc) {
  int n = 0;
  for (int k = 0; k < ps->nops; k++) {
    const kilnPassOperand* op = &o->ops[ps->firstOp + k];
    if (op->kind != KILN_OPND_USER && op->kind != KILN_OPND_SCRATCH) continue;
    bool write;
    switch (ps->kind) {
      case KILN_PASS_PUT:
      case KILN_PASS_COPY: write = k % 2 == 0; break;
      case KILN_PASS_REDUCE: write = k == 0; break;
      default: write = false; break;
    }
    acc[n++] = (access){op->kind, op->rank,          op->kind == KILN_OPND_USER ? op->buf : 0,
                        op->off,  op->off + ps->cnt, write};
  }
  return n;
}

/* Steps a wait may move ahead of: local steps (cpy, re, get, gre) and Simple puts; none of them
 * raises anything a peer waits for (a Simple put's data reaches a peer only through a sig after
 * it, which stays after it). */
static bool passable(const kilnPlan* p, const kilnStep* st) {
  const kilnStepType_t t = st->type;
  return t == KILN_STEP_COPY || t == KILN_STEP_REDUCE || t == KILN_STEP_GET || t == KILN_STEP_GET_REDUCE ||
         (t == KILN_STEP_PUT && kilnStepProtocol(p, st) == KILN_PROTO_SIMPLE);
}

/* The order the runtime runs a threadblock's steps in (ord[position] = step index): the plan's,
 * but in every run of waits and steps a wait may pass (passable) without dependencies, published
 * only at its end, the waits that come before the run's last other step move to the run's front
 * (keeping their order), so that the run's waits are one pass and its other steps fold. A wait
 * only moves earlier, past steps that raise nothing a peer waits for (no sig, no line put): no
 * peer can be left waiting for this threadblock. The run's last step stays last (its publication
 * counts it). */
static void hoist_waits(const kilnPlan* p, const kilnThreadblock* tb, const bool* publishes, int* ord) {
  for (int s = 0; s < tb->nsteps; s++) ord[s] = s;
  for (int a = 0; a < tb->nsteps;) {
    const kilnStep* s0 = &tb->steps[a];
    if ((s0->type != KILN_STEP_WAIT && !passable(p, s0)) || s0->depid >= 0) {
      a++;
      continue;
    }
    int b = a; /* the run: a..b */
    while (b + 1 < tb->nsteps && !publishes[b] && tb->steps[b + 1].depid < 0 &&
           (tb->steps[b + 1].type == KILN_STEP_WAIT || passable(p, &tb->steps[b + 1])))
      b++;
    int last = -1; /* the run's last step other than a wait */
    for (int x = a; x <= b; x++)
      if (tb->steps[x].type != KILN_STEP_WAIT) last = x;
    /* Waits up to that step first, then the other steps, then the waits after it. */
    int at = a;
    for (int x = a; x <= last; x++)
      if (tb->steps[x].type == KILN_STEP_WAIT) ord[at++] = x;
    for (int x = a; x <= last; x++)
      if (tb->steps[x].type != KILN_STEP_WAIT) ord[at++] = x;
    for (int x = last < a ? a : last + 1; x <= b; x++) ord[at++] = x;
    a = b + 1;
  }
}

/* The error of a pass list that ran out of memory. */
static kilnResult_t out_of_memory(const kilnPlan* p) {
  return kilnSetError(KILN_ERR_NO_MEMORY, "plan %s: out of memory", p->name);
}

/* The rank whose buffer a local step (cpy, re, get, gre) on rank r reads its source from: the
 * peer for get and gre, else r. */
static int src_rank(const kilnStep* st, int r) {
  return kilnStepPeerRole(st->type) == KILN_PEER_READ ? st->peer : r;
}

kilnResult_t kilnPlanMemPasses(const kilnPlan* p, int r, kilnRankPasses* out) {
  if (!p || !out || r < 0 || r >= p->ngpus || !p->gpus)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnPlanMemPasses: no plan or no rank %d", r);
  memset(out, 0, sizeof *out);
  if (p->ngpus > KILN_PASS_MAX_RANKS)
    return kilnSetError(KILN_ERR_UNSUPPORTED,
                        "plan %s: %d ranks; kiln's runtime runs memory steps on up to %d", p->name, p->ngpus,
                        KILN_PASS_MAX_RANKS);
  const kilnGpu* g = &p->gpus[r];
  const bool inPlace = p->inplace || g->o_chunks == 0 || kilnPlanInPlaceOnly(p);
  int nsteps = 0;
  for (int t = 0; t < g->ntbs; t++) nsteps += g->tbs[t].nsteps;
  layout L;
  kilnResult_t res = layout_build(p, &L, &out->lineProtos);
  if (res != KILN_SUCCESS) return res;
  bool* publishes = malloc(sizeof(bool) * (size_t)(nsteps + 1));
  int* sigk = malloc(sizeof(int) * (size_t)(nsteps + 1));
  int* order = malloc(sizeof(int) * (size_t)(nsteps + 1));
  int* per = malloc(sizeof(int) * (size_t)(nsteps + 1));
  access* acc = NULL;
  int nacc = 0, capacc = 0;
  bool ranSinceMeet = false;
  builder b = {p, r, out, 0, 0};
  if (!publishes || !sigk || !per || !order) {
    res = out_of_memory(p);
    goto out;
  }
  if ((res = kilnPlanRankSteps(p, r, publishes, NULL)) != KILN_SUCCESS) goto out;
  if ((res = kilnPlanSignalOrdinals(p, r, sigk, per)) != KILN_SUCCESS) goto out;
  memcpy(out->scratch, L.count[r], sizeof out->scratch);
  out->hash = plan_hash(p);
  for (int t = 0, base = 0; t < g->ntbs && res == KILN_SUCCESS; base += g->tbs[t].nsteps, t++) {
    const kilnThreadblock* tb = &g->tbs[t];
    int* ord = order + base;
    hoist_waits(p, tb, publishes + base, ord);
    nacc = 0;
    ranSinceMeet = false; /* a call's start, or a new iteration's: the kernel meets there */
    for (int s = 0; s < tb->nsteps && res == KILN_SUCCESS;) {
      const kilnStep* h = &tb->steps[ord[s]];
/* Whether the step at position j may join a pass that began before it: no dependency of its
       * own, nobody waits on the step before it, the pass's count. */
#define JOINS(j)                                                                       \
  ((j) < tb->nsteps && tb->steps[ord[j]].depid < 0 && !publishes[base + ord[(j)-1]] && \
   tb->steps[ord[j]].cnt == h->cnt)
      kilnPass* ps = add_pass(&b);
      if (!ps) {
        res = out_of_memory(p);
        break;
      }
      ps->tb = t;
      ps->first = s;
      ps->cnt = h->cnt;
      ps->proto = KILN_PROTO_SIMPLE;
      if (h->depid >= 0) {
        ps->depid = h->depid;
        ps->deps = h->deps;
      }
      int k = 1;
      switch (h->type) {
        case KILN_STEP_PUT: {
          ps->kind = KILN_PASS_PUT;
          ps->proto = kilnStepProtocol(p, h);
          ps->sameSrc = true;
          for (k = 0; k < KILN_PASS_MAX_PAIRS && (k == 0 || JOINS(s + k)); k++) {
            const kilnStep* st = &tb->steps[ord[s + k]];
            if (st->type != KILN_STEP_PUT || kilnStepProtocol(p, st) != ps->proto) break;
            kilnPassOperand* two = add_ops(&b, 2);
            if (!two) {
              res = out_of_memory(p);
              break;
            }
            int tp, sp;
            two[0] = operand_of(&L, st->peer, st->dstbuf, st->dstoff, &tp);
            two[1] = operand_of(&L, r, st->srcbuf, st->srcoff, &sp);
            if (sp >= 0 && sp != (int)ps->proto) {
              res = unsupported(p, r, t, ord[s + k],
                                "a put whose source holds lines of another protocol than it writes");
              break;
            }
            if (sp >= 0) ps->polls = true;
            if (k > 0 && !same_operand(&two[1], &out->ops[ps->firstOp + 1])) ps->sameSrc = false;
            ps->nops += 2;
          }
          break;
        }
        case KILN_STEP_SIGNAL:
        case KILN_STEP_WAIT: {
          ps->kind = h->type == KILN_STEP_SIGNAL ? KILN_PASS_SIGNAL : KILN_PASS_WAIT;
          ps->polls = h->type == KILN_STEP_WAIT;
          for (k = 0;
               k < KILN_PASS_MAX_PAIRS && (k == 0 || (s + k < tb->nsteps && tb->steps[ord[s + k]].depid < 0 &&
                                                      !publishes[base + ord[s + k - 1]]));
               k++) {
            const kilnStep* st = &tb->steps[ord[s + k]];
            if (st->type != h->type) break;
            /* two signals of one stream in one pass would store their values from two lanes at
             * once, and the lower could land last: each signal of a stream its own pass */
            bool again = false;
            for (int q = 0; q < k && h->type == KILN_STEP_SIGNAL; q++)
              again = again || out->ops[ps->firstOp + q].rank == st->peer;
            if (again) break;
            if (per[base + ord[s + k]] >= (1 << KILN_PASS_SIG_BITS)) {
              res = unsupported(p, r, t, ord[s + k], "more than 2^20 - 1 signals of one stream an epoch");
              break;
            }
            kilnPassOperand* one = add_ops(&b, 1);
            if (!one) {
              res = out_of_memory(p);
              break;
            }
            *one = (kilnPassOperand){KILN_OPND_SIGNAL, st->peer, tb->chan, sigk[base + ord[s + k]]};
            ps->nops++;
          }
          ps->cnt = 0;
          break;
        }
        case KILN_STEP_COPY:
        case KILN_STEP_GET:
        case KILN_STEP_REDUCE:
        case KILN_STEP_GET_REDUCE: {
          const bool readsDst = kilnStepReduces(h->type);
          int dp, hp, lp = -1;
          const kilnPassOperand dst = operand_of(&L, r, h->dstbuf, h->dstoff, &dp);
          const kilnPassOperand src = operand_of(&L, src_rank(h, r), h->srcbuf, h->srcoff, &hp);
          if (hp >= 0) lp = hp;
          /* The operands of a reduction: dst (when the head reads it), the head's source, then the
           * source of each re or gre after it into the same chunks. */
          kilnPassOperand opv[KILN_PASS_MAX_OPS];
          int nop = 0;
          if (readsDst) opv[nop++] = dst;
          opv[nop++] = src;
          int j = s + 1;
          for (; nop < KILN_PASS_MAX_OPS && JOINS(j); j++) {
            const kilnStep* f = &tb->steps[ord[j]];
            if ((f->type != KILN_STEP_REDUCE && f->type != KILN_STEP_GET_REDUCE) || f->dstbuf != h->dstbuf ||
                f->dstoff != h->dstoff)
              break;
            int fp;
            const kilnPassOperand fo = operand_of(&L, src_rank(f, r), f->srcbuf, f->srcoff, &fp);
            if ((fp >= 0 && lp >= 0 && fp != lp) || overlaps(&fo, &dst, h->cnt, inPlace)) break;
            if (fp >= 0) lp = fp;
            opv[nop++] = fo;
          }
          /* The head's own source must not overlap what the pass writes (a single copy or reduce
           * runs in one sweep too). */
          const bool headApart = !overlaps(&src, &dst, h->cnt, inPlace) || same_operand(&src, &dst);
          if (readsDst || (j > s + 1 && headApart)) {
            ps->kind = KILN_PASS_REDUCE;
            k = j - s;
            if (!headApart) k = 1, nop = readsDst ? 2 : 1;
            kilnPassOperand* v = add_ops(&b, nop + 1);
            if (!v) {
              res = out_of_memory(p);
              break;
            }
            v[0] = dst;
            memcpy(v + 1, opv, sizeof opv[0] * (size_t)nop);
            ps->nops = nop + 1;
          } else {
            /* Copies into chunks apart from each other and from every source of the pass. */
            ps->kind = KILN_PASS_COPY;
            kilnPassOperand dv[KILN_PASS_MAX_PAIRS], sv[KILN_PASS_MAX_PAIRS];
            dv[0] = dst;
            sv[0] = src;
            for (k = 1; k < KILN_PASS_MAX_PAIRS && JOINS(s + k); k++) {
              const kilnStep* f = &tb->steps[ord[s + k]];
              if (f->type != KILN_STEP_COPY && f->type != KILN_STEP_GET) break;
              int fdp, fsp;
              const kilnPassOperand fd = operand_of(&L, r, f->dstbuf, f->dstoff, &fdp);
              const kilnPassOperand fs = operand_of(&L, src_rank(f, r), f->srcbuf, f->srcoff, &fsp);
              if (fsp >= 0 && lp >= 0 && fsp != lp) break;
              bool apart = !overlaps(&fd, &fs, h->cnt, inPlace);
              for (int q = 0; q < k && apart; q++)
                apart = !overlaps(&fd, &dv[q], h->cnt, inPlace) && !overlaps(&fd, &sv[q], h->cnt, inPlace) &&
                        !overlaps(&fs, &dv[q], h->cnt, inPlace);
              if (!apart) break;
              if (fsp >= 0) lp = fsp;
              dv[k] = fd;
              sv[k] = fs;
            }
            kilnPassOperand* v = add_ops(&b, 2 * k);
            if (!v) {
              res = out_of_memory(p);
              break;
            }
            for (int q = 0; q < k; q++) v[2 * q] = dv[q], v[2 * q + 1] = sv[q];
            ps->nops = 2 * k;
          }
          if (lp >= 0) {
            ps->proto = (kilnProto_t)lp;
            ps->polls = true;
          }
          break;
        }
        case KILN_STEP_NOP:
          ps->kind = KILN_PASS_NOP;
          ps->cnt = 0;
          break;
        default:
          res =
              unsupported(p, r, t, ord[s],
                          "a send or receive step in a plan with memory steps (kiln's runtime runs a plan's "
                          "FIFO steps or its memory steps, not both)");
          break;
      }
#undef JOINS
      if (res != KILN_SUCCESS) break;
      ps->nsteps = k;
      ps->last = ord[s + k - 1];
      ps->publishes = publishes[base + ps->last];
      /* The meeting before it: where it touches what an earlier pass since the last meeting
       * touched in another way. sig and wait passes meet anyway, and so does a dependency's wait;
       * a publication meets after the pass. */
      if (capacc < nacc + 2 * KILN_PASS_MAX_OPS + 2) {
        capacc = (nacc + 2 * KILN_PASS_MAX_OPS + 2) * 2;
        access* v = realloc(acc, sizeof *v * (size_t)capacc);
        if (!v) {
          res = out_of_memory(p);
          break;
        }
        acc = v;
      }
      access* mine = acc + nacc;
      const int nm = pass_accesses(out, ps, mine);
      /* A put of lines tells its peer that this block is done with what it read before (the
       * verifier's rule), but its lanes store on their own: the block meets first where any pass
       * ran since the last meeting, so that every thread's reads are complete. */
      if (ps->kind == KILN_PASS_PUT && ps->proto != KILN_PROTO_SIMPLE && ranSinceMeet) ps->barrier = true;
      if (ps->kind == KILN_PASS_SIGNAL || ps->kind == KILN_PASS_WAIT || ps->depid >= 0) {
        memmove(acc, mine, sizeof *mine * (size_t)nm);
        nacc = nm;
      } else {
        bool meet = false;
        for (int x = 0; x < nacc && !meet; x++)
          for (int y = 0; y < nm && !meet; y++) meet = conflicts(&acc[x], &mine[y], inPlace);
        if (meet || ps->barrier) {
          ps->barrier = true;
          memmove(acc, mine, sizeof *mine * (size_t)nm);
          nacc = nm;
        } else {
          nacc += nm;
        }
      }
      if (ps->publishes) nacc = 0;
      ranSinceMeet = !(ps->publishes || ps->kind == KILN_PASS_SIGNAL || ps->kind == KILN_PASS_WAIT);
      s += k;
    }
  }
out:
  free(publishes);
  free(sigk);
  free(order);
  free(per);
  free(acc);
  layout_free(&L);
  if (res != KILN_SUCCESS) kilnRankPassesFree(out);
  return res;
}

void kilnRankPassesFree(kilnRankPasses* rp) {
  if (!rp) return;
  free(rp->passes);
  free(rp->ops);
  memset(rp, 0, sizeof *rp);
}

/* Whether threadblock t's passes are t0's with every operand offset moved by the same amount (a
 * signal's channel by one of its own); the amounts into *shift, *chanShift. */
static bool same_but_shifted(const kilnRankPasses* rp, int t0, int f0, int t, int f, int n, int* shift,
                             int* chanShift) {
  bool haveShift = false, haveChan = false;
  *shift = *chanShift = 0;
  for (int i = 0; i < n; i++) {
    const kilnPass *a = &rp->passes[f0 + i], *b = &rp->passes[f + i];
    if (a->tb != t0 || b->tb != t || a->kind != b->kind || a->proto != b->proto || a->first != b->first ||
        a->nsteps != b->nsteps || a->last != b->last || a->cnt != b->cnt || a->nops != b->nops ||
        a->depid != b->depid || a->deps != b->deps || a->publishes != b->publishes ||
        a->barrier != b->barrier || a->sameSrc != b->sameSrc || a->polls != b->polls)
      return false;
    for (int k = 0; k < a->nops; k++) {
      const kilnPassOperand *x = &rp->ops[a->firstOp + k], *y = &rp->ops[b->firstOp + k];
      if (x->kind != y->kind || x->rank != y->rank) return false;
      if (x->kind == KILN_OPND_SIGNAL) {
        if (x->off != y->off) return false;
        if (!haveChan) *chanShift = y->buf - x->buf, haveChan = true;
        if (y->buf - x->buf != *chanShift) return false;
      } else {
        if (x->buf != y->buf) return false;
        if (!haveShift) *shift = y->off - x->off, haveShift = true;
        if (y->off - x->off != *shift) return false;
      }
    }
  }
  return true;
}

void kilnPlanMemRowClasses(const kilnRankPasses* rp, int ntbs, int* tmpl, int* shift, int* chanShift) {
  for (int t = 0; t < ntbs; t++) {
    tmpl[t] = t;
    shift[t] = chanShift[t] = 0;
  }
  /* Each threadblock's first pass and count (the passes are in threadblock order). */
  int* first = malloc(sizeof(int) * (size_t)(ntbs + 1));
  int* count = calloc((size_t)(ntbs + 1), sizeof(int));
  if (!first || !count) { /* no classes: every threadblock its own, always right */
    free(first);
    free(count);
    return;
  }
  for (int t = 0; t < ntbs; t++) first[t] = rp->npasses;
  for (int i = rp->npasses - 1; i >= 0; i--) {
    const int t = rp->passes[i].tb;
    if (t < 0 || t >= ntbs) continue;
    first[t] = i;
    count[t]++;
  }
  for (int t = 1; t < ntbs; t++)
    for (int t0 = 0; t0 < t; t0++) {
      if (tmpl[t0] != t0 || count[t0] != count[t]) continue;
      int sh, ch;
      if (same_but_shifted(rp, t0, first[t0], t, first[t], count[t], &sh, &ch)) {
        tmpl[t] = t0;
        shift[t] = sh;
        chanShift[t] = ch;
        break;
      }
    }
  free(first);
  free(count);
}
