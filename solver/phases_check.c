/*
 * kilnPhasesCheck (phases.h): the phases of every rank run on host memory as the runtime runs
 * them, interleaved until all are done or none can go on.
 *
 * Values are doubles holding small integers (exact under sum, prod, max and min). Every chunk of a
 * buffer has L elements of which a user buffer's last positions hold fewer (plan.h); scratch and
 * the output start as NaN, so a piece of the wrong size or one never written shows in the result.
 * Kernel phases run each sub-plan step on whole chunks (the kernels' slices only cut them up): a
 * message carries its chunks' valid lengths, and a step moves the shorter of its two ends, as the
 * kernels do. Groups run the calls kilnPhasesP2pCalls makes for the call's count.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "phases.h"

typedef struct msg {
  int phase;
  int cnt;
  uint64_t* valid; /* [cnt] */
  double* data;    /* [cnt * L] */
  struct msg* next;
} msg;

typedef struct {
  msg *head, *tail;
  int len;
} fifo;

typedef struct {
  bool send;
  int peer;
  double* p;
  uint64_t n;
  bool done;
} call;

typedef struct {
  call** v; /* posted, not yet matched */
  int n, cap, head;
} callQueue;

typedef struct {
  const kilnPhases* ph;
  const kilnPlan* plan;
  int R, k, nch, depth;
  uint64_t count, L;
  bool inplace;
  kilnRedOp_t op;
  double** sendBuf; /* [R] the call's buffers */
  double** recvBuf;
  double** bufs[KILN_NUM_BUFFERS]; /* [b][R]: what the plan's buffers are */
  uint64_t inElems, outElems;
  double** scr;
  int** plist; /* [R] phases with work, in order */
  int* nplist;
  int* pc;
  int** tbpc;   /* [R] current kernel phase's threadblocks' next steps */
  call** calls; /* [R] current group's calls */
  int* ncalls;
  bool* posted;
  fifo* fifos;      /* [(src * R + dst) * nch + chan] */
  callQueue* sends; /* [src * R + dst] */
  callQueue* recvs; /* [src * R + dst]: receives posted at dst from src */
} runner;

static double apply(kilnRedOp_t op, double a, double b) {
  switch (op) {
    case KILN_PROD: return a * b;
    case KILN_MAX: return a > b ? a : b;
    case KILN_MIN: return a < b ? a : b;
    default: return a + b;
  }
}

static uint64_t pos_elems(const runner* x, uint64_t c) {
  const uint64_t lo = c * x->L;
  return lo >= x->count ? 0 : (x->count - lo < x->L ? x->count - lo : x->L);
}

/* Chunk j of buffer b of rank r: its first element and its valid length. */
static double* chunk(const runner* x, int r, kilnBuffer_t b, int j, uint64_t* valid) {
  if (b == KILN_BUF_SCRATCH) {
    *valid = x->L;
    return x->scr[r] + (uint64_t)j * x->L;
  }
  const uint64_t blk = (uint64_t)j / (uint64_t)x->k, c = (uint64_t)j % (uint64_t)x->k;
  *valid = pos_elems(x, c);
  return x->bufs[b][r] + blk * x->count + c * x->L;
}

static fifo* fifo_of(runner* x, int src, int dst, int chan) {
  return &x->fifos[((size_t)src * x->R + dst) * x->nch + chan];
}

static msg* msg_new(const runner* x, int phase, int cnt) {
  msg* m = calloc(1, sizeof *m);
  if (!m) return NULL;
  m->phase = phase;
  m->cnt = cnt;
  m->valid = calloc((size_t)cnt, sizeof *m->valid);
  m->data = malloc((size_t)cnt * x->L * sizeof *m->data + 1);
  if (!m->valid || !m->data) {
    free(m->valid);
    free(m->data);
    free(m);
    return NULL;
  }
  for (uint64_t i = 0; i < (uint64_t)cnt * x->L; i++) m->data[i] = NAN;
  return m;
}

static void msg_free(msg* m) {
  if (!m) return;
  free(m->valid);
  free(m->data);
  free(m);
}

static void push(fifo* f, msg* m) {
  m->next = NULL;
  if (f->tail)
    f->tail->next = m;
  else
    f->head = m;
  f->tail = m;
  f->len++;
}

static msg* pop(fifo* f) {
  msg* m = f->head;
  f->head = m->next;
  if (!f->head) f->tail = NULL;
  f->len--;
  return m;
}

static uint64_t umin(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* Runs step st of rank r (kernel phase `phase`) with its received message (or NULL); returns the
 * message it sends (or NULL). */
static kilnResult_t run_step(runner* x, int r, int phase, const kilnStep* st, msg* in, msg** out) {
  *out = NULL;
  const kilnStepType_t ty = st->type;
  const bool sd = kilnStepSends(ty);
  msg* m = NULL;
  if (sd && !(m = msg_new(x, phase, st->cnt)))
    return kilnSetError(KILN_ERR_NO_MEMORY, "checking phases: out of memory");
  for (int c = 0; c < st->cnt; c++) {
    uint64_t vs = 0, vd = 0;
    const bool rs = kilnStepReadsSrc(ty) || ty == KILN_STEP_REDUCE;
    const double* s = rs ? chunk(x, r, st->srcbuf, st->srcoff + c, &vs) : NULL;
    double* d = kilnStepWritesDst(ty) ? chunk(x, r, st->dstbuf, st->dstoff + c, &vd) : NULL;
    const double* rcv = in ? in->data + (uint64_t)c * x->L : NULL;
    const uint64_t vr = in ? in->valid[c] : 0;
    double* o = m ? m->data + (uint64_t)c * x->L : NULL;
    uint64_t n = 0;
    switch (ty) {
      case KILN_STEP_SEND:
        n = vs;
        memcpy(o, s, n * sizeof *o);
        break;
      case KILN_STEP_RECV: memcpy(d, rcv, umin(vd, vr) * sizeof *d); break;
      case KILN_STEP_RECV_COPY_SEND:
        n = umin(vd, vr);
        memcpy(d, rcv, n * sizeof *d);
        memcpy(o, rcv, n * sizeof *o);
        break;
      case KILN_STEP_RECV_REDUCE_SEND:
        n = umin(vs, vr);
        for (uint64_t i = 0; i < n; i++) o[i] = apply(x->op, s[i], rcv[i]);
        break;
      case KILN_STEP_RECV_REDUCE_COPY:
      case KILN_STEP_RECV_REDUCE_COPY_SEND:
        n = umin(umin(vs, vd), vr);
        for (uint64_t i = 0; i < n; i++) d[i] = apply(x->op, s[i], rcv[i]);
        if (o) memcpy(o, d, n * sizeof *o);
        break;
      case KILN_STEP_COPY: memmove(d, s, umin(vs, vd) * sizeof *d); break;
      case KILN_STEP_REDUCE:
        for (uint64_t i = 0; i < umin(vs, vd); i++) d[i] = apply(x->op, d[i], s[i]);
        break;
      default: break;
    }
    if (m) m->valid[c] = n;
  }
  *out = m;
  return KILN_SUCCESS;
}

/* Tries rank r's kernel phase i: runs every step that can go. *moved when one did; *done when
 * every threadblock has finished. */
static kilnResult_t kernel_phase(runner* x, int r, int i, bool* moved, bool* done) {
  const kilnGpu* g = &x->ph->phases[i].plan->gpus[r];
  if (!x->tbpc[r]) {
    x->tbpc[r] = calloc((size_t)g->ntbs + 1, sizeof **x->tbpc);
    if (!x->tbpc[r]) return kilnSetError(KILN_ERR_NO_MEMORY, "checking phases: out of memory");
  }
  bool again = true, all = false;
  while (again) {
    again = false;
    all = true;
    for (int t = 0; t < g->ntbs; t++) {
      const kilnThreadblock* tb = &g->tbs[t];
      while (x->tbpc[r][t] < tb->nsteps) {
        const kilnStep* st = &tb->steps[x->tbpc[r][t]];
        if (st->depid >= 0 && x->tbpc[r][st->depid] <= st->deps) break;
        fifo* fin = kilnStepReceives(st->type) ? fifo_of(x, tb->recv, r, tb->chan) : NULL;
        fifo* fout = kilnStepSends(st->type) ? fifo_of(x, r, tb->send, tb->chan) : NULL;
        if (fin && fin->len == 0) break;
        if (fout && x->depth > 0 && fout->len >= x->depth) break;
        if (fin && fin->head->phase != i)
          return kilnSetError(KILN_ERR_VERIFY,
                              "rank %d phase %d tb %d step %d receives a message rank %d sent in phase %d", r,
                              i, t, x->tbpc[r][t], tb->recv, fin->head->phase);
        msg* in = fin ? pop(fin) : NULL;
        msg* out = NULL;
        kilnResult_t res = run_step(x, r, i, st, in, &out);
        msg_free(in);
        if (res != KILN_SUCCESS) return res;
        if (out) push(fout, out);
        x->tbpc[r][t]++;
        *moved = again = true;
      }
      if (x->tbpc[r][t] < tb->nsteps) all = false;
    }
  }
  *done = all;
  if (all) {
    free(x->tbpc[r]);
    x->tbpc[r] = NULL;
  }
  return KILN_SUCCESS;
}

typedef struct {
  runner* x;
  int r;
  int n, cap;
  call* v;
} callCollect;

static int collect(void* ctx, bool send, int peer, kilnBuffer_t buf, uint64_t off, uint64_t n) {
  callCollect* cc = ctx;
  if (cc->n == cc->cap) {
    const int cap = cc->cap ? 2 * cc->cap : 16;
    call* v = realloc(cc->v, (size_t)cap * sizeof *v);
    if (!v) return -1;
    cc->v = v;
    cc->cap = cap;
  }
  const runner* x = cc->x;
  double* base = buf == KILN_BUF_SCRATCH ? x->scr[cc->r] : x->bufs[buf][cc->r];
  cc->v[cc->n++] = (call){send, peer, base + off, n, false};
  return 0;
}

static bool queue_push(callQueue* q, call* c) {
  if (q->n == q->cap) {
    const int cap = q->cap ? 2 * q->cap : 16;
    call** v = realloc(q->v, (size_t)cap * sizeof *v);
    if (!v) return false;
    q->v = v;
    q->cap = cap;
  }
  q->v[q->n++] = c;
  return true;
}

/* Posts rank r's calls of group i, after checking that no two of them touch the same memory where
 * one writes. */
static kilnResult_t post(runner* x, int r, int i) {
  callCollect cc = {x, r, 0, 0, NULL};
  if (kilnPhasesP2pCalls(x->ph, i, r, x->count, collect, &cc) != 0) {
    free(cc.v);
    return kilnSetError(KILN_ERR_NO_MEMORY, "checking phases: out of memory");
  }
  for (int a = 0; a < cc.n; a++)
    for (int b = a + 1; b < cc.n; b++) {
      const call* u = &cc.v[a];
      const call* v = &cc.v[b];
      if ((u->send && v->send) || u->p + u->n <= v->p || v->p + v->n <= u->p) continue;
      free(cc.v);
      return kilnSetError(KILN_ERR_VERIFY,
                          "rank %d phase %d: calls %d (%s rank %d) and %d (%s rank %d) of one group "
                          "touch the same elements and one receives",
                          r, i, a, u->send ? "send to" : "receive from", u->peer, b,
                          v->send ? "send to" : "receive from", v->peer);
    }
  x->calls[r] = cc.v;
  x->ncalls[r] = cc.n;
  for (int a = 0; a < cc.n; a++) {
    call* c = &cc.v[a];
    callQueue* q = c->send ? &x->sends[(size_t)r * x->R + c->peer] : &x->recvs[(size_t)c->peer * x->R + r];
    if (!queue_push(q, c)) return kilnSetError(KILN_ERR_NO_MEMORY, "checking phases: out of memory");
  }
  x->posted[r] = true;
  return KILN_SUCCESS;
}

/* Matches posted sends and receives of every pair in order (NCCL's rule). */
static kilnResult_t match(runner* x, bool* moved) {
  for (int a = 0; a < x->R; a++)
    for (int b = 0; b < x->R; b++) {
      callQueue* s = &x->sends[(size_t)a * x->R + b];
      callQueue* v = &x->recvs[(size_t)a * x->R + b];
      while (s->head < s->n && v->head < v->n) {
        call* cs = s->v[s->head++];
        call* cr = v->v[v->head++];
        if (cs->n != cr->n)
          return kilnSetError(KILN_ERR_VERIFY,
                              "rank %d sends %llu elements to rank %d, whose receive in that place "
                              "takes %llu",
                              a, (unsigned long long)cs->n, b, (unsigned long long)cr->n);
        memcpy(cr->p, cs->p, cs->n * sizeof *cr->p);
        cs->done = cr->done = true;
        *moved = true;
      }
    }
  return KILN_SUCCESS;
}

static void describe_wait(const runner* x, int r, char* buf, size_t len) {
  const int i = x->plist[r][x->pc[r]];
  const kilnPhase* q = &x->ph->phases[i];
  if (q->p2p) {
    for (int j = 0; j < x->ncalls[r]; j++)
      if (!x->calls[r][j].done) {
        snprintf(buf, len, "rank %d waits in group %d: its %s rank %d (%llu elements) is not matched", r, i,
                 x->calls[r][j].send ? "send to" : "receive from", x->calls[r][j].peer,
                 (unsigned long long)x->calls[r][j].n);
        return;
      }
    snprintf(buf, len, "rank %d waits in group %d", r, i);
    return;
  }
  const kilnGpu* g = &q->plan->gpus[r];
  for (int t = 0; t < g->ntbs; t++)
    if (x->tbpc && x->tbpc[r] && x->tbpc[r][t] < g->tbs[t].nsteps) {
      const kilnStep* st = &g->tbs[t].steps[x->tbpc[r][t]];
      snprintf(buf, len, "rank %d waits in kernel phase %d: tb %d step %d (%s, send %d recv %d)", r, i, t,
               x->tbpc[r][t], kilnStepTypeName(st->type), g->tbs[t].send, g->tbs[t].recv);
      return;
    }
  snprintf(buf, len, "rank %d waits in kernel phase %d", r, i);
}

/* The collective's result at output element e of rank r, from the inputs. */
static double expected(const runner* x, const double* const* in, int r, uint64_t e) {
  const uint64_t c = x->count;
  double v = 0;
  switch (x->plan->coll) {
    case KILN_COLL_ALLREDUCE:
      v = in[0][e];
      for (int q = 1; q < x->R; q++) v = apply(x->op, v, in[q][e]);
      return v;
    case KILN_COLL_REDUCESCATTER:
      v = in[0][(uint64_t)r * c + e];
      for (int q = 1; q < x->R; q++) v = apply(x->op, v, in[q][(uint64_t)r * c + e]);
      return v;
    case KILN_COLL_ALLGATHER: return in[e / c][e % c];
    case KILN_COLL_ALLTOALL: return in[e / c][(uint64_t)r * c + e % c];
    default: return NAN;
  }
}

kilnResult_t kilnPhasesCheck(const kilnPhases* ph, const kilnPlan* plan, uint64_t count, bool inplace,
                             kilnRedOp_t op, int fifoDepth, uint64_t seed) {
  if (!ph || !plan || plan->ngpus != ph->nranks || count < 1 || count > ((uint64_t)1 << 24) ||
      (op != KILN_SUM && op != KILN_PROD && op != KILN_MAX && op != KILN_MIN))
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnPhasesCheck: bad arguments");
  if (inplace && plan->coll == KILN_COLL_ALLTOALL)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnPhasesCheck: alltoall is never in place");
  for (int i = 0; i < ph->nphases; i++)
    for (int r = 0; !ph->phases[i].p2p && r < ph->nranks; r++)
      for (int t = 0; t < ph->phases[i].plan->gpus[r].ntbs; t++)
        for (int st = 0; st < ph->phases[i].plan->gpus[r].tbs[t].nsteps; st++)
          if (kilnStepPeerRole(ph->phases[i].plan->gpus[r].tbs[t].steps[st].type) != KILN_PEER_NONE)
            return kilnSetError(KILN_ERR_UNSUPPORTED,
                                "plan %s: the phases' checker runs sends, receives and local "
                                "steps, not memory steps (rank %d, phase %d)",
                                plan->name, r, i);
  runner x;
  memset(&x, 0, sizeof x);
  x.ph = ph;
  x.plan = plan;
  x.R = ph->nranks;
  x.k = ph->k;
  x.nch = plan->nchannels > 0 ? plan->nchannels : 1;
  x.depth = fifoDepth;
  x.count = count;
  x.L = (count + (uint64_t)ph->k - 1) / (uint64_t)ph->k;
  x.inplace = inplace;
  x.op = op;
  const int R = x.R;
  const kilnColl_t coll = plan->coll;
  x.inElems = coll == KILN_COLL_ALLREDUCE || coll == KILN_COLL_ALLGATHER ? count : (uint64_t)R * count;
  x.outElems = coll == KILN_COLL_ALLREDUCE || coll == KILN_COLL_REDUCESCATTER ? count : (uint64_t)R * count;
  kilnResult_t res = KILN_SUCCESS;
  char why[512] = "";
  double** inputs = calloc((size_t)R, sizeof *inputs);
  x.sendBuf = calloc((size_t)R, sizeof *x.sendBuf);
  x.recvBuf = calloc((size_t)R, sizeof *x.recvBuf);
  for (int b = 0; b < KILN_NUM_BUFFERS; b++) x.bufs[b] = calloc((size_t)R, sizeof **x.bufs);
  x.scr = calloc((size_t)R, sizeof *x.scr);
  x.plist = calloc((size_t)R, sizeof *x.plist);
  x.nplist = calloc((size_t)R, sizeof *x.nplist);
  x.pc = calloc((size_t)R, sizeof *x.pc);
  x.tbpc = calloc((size_t)R, sizeof *x.tbpc);
  x.calls = calloc((size_t)R, sizeof *x.calls);
  x.ncalls = calloc((size_t)R, sizeof *x.ncalls);
  x.posted = calloc((size_t)R, sizeof *x.posted);
  x.fifos = calloc((size_t)R * R * x.nch, sizeof *x.fifos);
  x.sends = calloc((size_t)R * R, sizeof *x.sends);
  x.recvs = calloc((size_t)R * R, sizeof *x.recvs);
  bool ok = inputs && x.sendBuf && x.recvBuf && x.bufs[0] && x.bufs[1] && x.bufs[2] && x.scr && x.plist &&
            x.nplist && x.pc && x.tbpc && x.calls && x.ncalls && x.posted && x.fifos && x.sends && x.recvs;
  /* Buffers as the runtime maps them (host/exec.c): the call's send and receive buffers, aliased
   * as NCCL defines an in-place call; a plan that leaves the output out keeps its allreduce
   * result in the input. */
  uint64_t rng = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int r = 0; r < R && ok; r++) {
    inputs[r] = malloc(x.inElems * sizeof **inputs);
    x.scr[r] = malloc(((uint64_t)ph->scratch[r] * x.L + 1) * sizeof **x.scr);
    if (inplace) {
      x.recvBuf[r] = malloc((x.outElems > x.inElems ? x.outElems : x.inElems) * sizeof **x.recvBuf);
      if (x.recvBuf[r])
        x.sendBuf[r] = coll == KILN_COLL_ALLGATHER ? x.recvBuf[r] + (uint64_t)r * count : x.recvBuf[r];
      if (x.recvBuf[r] && coll == KILN_COLL_REDUCESCATTER) {
        x.sendBuf[r] = x.recvBuf[r];
        x.recvBuf[r] = x.sendBuf[r] + (uint64_t)r * count;
      }
    } else {
      x.sendBuf[r] = malloc(x.inElems * sizeof **x.sendBuf);
      x.recvBuf[r] = malloc(x.outElems * sizeof **x.recvBuf);
    }
    ok = inputs[r] && x.scr[r] && x.sendBuf[r] && x.recvBuf[r];
    if (!ok) break;
    for (uint64_t i = 0; i < (uint64_t)ph->scratch[r] * x.L; i++) x.scr[r][i] = NAN;
    if (!inplace)
      for (uint64_t i = 0; i < x.outElems; i++) x.recvBuf[r][i] = NAN;
    for (uint64_t i = 0; i < x.inElems; i++) {
      rng ^= rng << 13;
      rng ^= rng >> 7;
      rng ^= rng << 17;
      inputs[r][i] = (double)(1 + rng % (op == KILN_PROD ? 3 : 16));
      x.sendBuf[r][i] = inputs[r][i];
    }
    x.bufs[KILN_BUF_INPUT][r] = x.sendBuf[r];
    x.bufs[KILN_BUF_OUTPUT][r] =
        kilnPlanInPlaceOnly(plan) && coll == KILN_COLL_ALLREDUCE ? x.sendBuf[r] : x.recvBuf[r];
    x.bufs[KILN_BUF_SCRATCH][r] = x.scr[r];
  }
  /* The phases each rank has work in. */
  for (int r = 0; r < R && ok; r++) {
    x.plist[r] = malloc((size_t)(ph->nphases > 0 ? ph->nphases : 1) * sizeof **x.plist);
    ok = x.plist[r] != NULL;
    for (int i = 0; ok && i < ph->nphases; i++)
      if (kilnPhasesRankHas(ph, i, r)) x.plist[r][x.nplist[r]++] = i;
  }
  if (!ok) {
    res = kilnSetError(KILN_ERR_NO_MEMORY, "checking phases: out of memory");
    goto out;
  }
  for (;;) {
    bool moved = false, all = true;
    for (int r = 0; r < R && res == KILN_SUCCESS; r++) {
      while (x.pc[r] < x.nplist[r] && res == KILN_SUCCESS) {
        const int i = x.plist[r][x.pc[r]];
        bool done = false;
        if (ph->phases[i].p2p) {
          if (!x.posted[r]) {
            res = post(&x, r, i);
            moved = true;
          }
          if (res == KILN_SUCCESS) res = match(&x, &moved);
          done = true;
          for (int j = 0; j < x.ncalls[r] && done; j++) done = x.calls[r][j].done;
          if (done && res == KILN_SUCCESS) {
            free(x.calls[r]);
            x.calls[r] = NULL;
            x.ncalls[r] = 0;
            x.posted[r] = false;
          }
        } else {
          res = kernel_phase(&x, r, i, &moved, &done);
        }
        if (!done) break;
        x.pc[r]++;
        moved = true;
      }
      if (x.pc[r] < x.nplist[r]) all = false;
    }
    if (res != KILN_SUCCESS) goto out;
    if (all) break;
    if (!moved) {
      char w[256];
      snprintf(why, sizeof why, "deadlock:");
      for (int r = 0; r < R; r++)
        if (x.pc[r] < x.nplist[r] && strlen(why) + 4 < sizeof why) {
          describe_wait(&x, r, w, sizeof w);
          snprintf(why + strlen(why), sizeof why - strlen(why), " %s;", w);
        }
      res = kilnSetError(KILN_ERR_VERIFY, "plan %s cut into %d phases: %s", plan->name, ph->nphases, why);
      goto out;
    }
  }
  for (size_t f = 0; f < (size_t)R * R * x.nch; f++)
    if (x.fifos[f].len > 0) {
      res = kilnSetError(KILN_ERR_VERIFY,
                         "plan %s cut into phases: rank %d's message to rank %d (channel %d) is "
                         "never received",
                         plan->name, (int)(f / x.nch / R), (int)(f / x.nch % R), (int)(f % x.nch));
      goto out;
    }
  /* The result on every rank, and out of place the input kept. */
  for (int r = 0; r < R && res == KILN_SUCCESS; r++) {
    for (uint64_t e = 0;
         e < (coll == KILN_COLL_ALLREDUCE || coll == KILN_COLL_REDUCESCATTER ? count : (uint64_t)R * count);
         e++) {
      const double want = expected(&x, (const double* const*)inputs, r, e);
      const double got =
          kilnPlanInPlaceOnly(plan) && coll == KILN_COLL_ALLREDUCE ? x.sendBuf[r][e] : x.recvBuf[r][e];
      if (!(got == want)) {
        res = kilnSetError(KILN_ERR_VERIFY,
                           "plan %s cut into %d phases (%d nodes), %s of %llu elements%s: rank %d "
                           "output element %llu is %g, not %g",
                           plan->name, ph->nphases, ph->nnodes, kilnRedOpName(op), (unsigned long long)count,
                           inplace ? " in place" : "", r, (unsigned long long)e, got, want);
        break;
      }
    }
    for (uint64_t e = 0; !inplace && e < x.inElems && res == KILN_SUCCESS; e++)
      if (!(x.sendBuf[r][e] == inputs[r][e]))
        res = kilnSetError(KILN_ERR_VERIFY, "plan %s cut into phases: rank %d's input element %llu changed",
                           plan->name, r, (unsigned long long)e);
  }
out:
  for (size_t f = 0; x.fifos && f < (size_t)R * R * x.nch; f++)
    while (x.fifos[f].len > 0) msg_free(pop(&x.fifos[f]));
  for (int r = 0; r < R; r++) {
    if (inputs) free(inputs[r]);
    if (x.scr) free(x.scr[r]);
    if (x.plist) free(x.plist[r]);
    if (x.tbpc) free(x.tbpc[r]);
    if (x.calls) free(x.calls[r]);
    if (inplace) {
      if (x.recvBuf && x.sendBuf) free(coll == KILN_COLL_REDUCESCATTER ? x.sendBuf[r] : x.recvBuf[r]);
    } else {
      if (x.sendBuf) free(x.sendBuf[r]);
      if (x.recvBuf) free(x.recvBuf[r]);
    }
  }
  for (size_t q = 0; x.sends && x.recvs && q < (size_t)R * R; q++) {
    free(x.sends[q].v);
    free(x.recvs[q].v);
  }
  free(inputs);
  free(x.sendBuf);
  free(x.recvBuf);
  for (int b = 0; b < KILN_NUM_BUFFERS; b++) free(x.bufs[b]);
  free(x.scr);
  free(x.plist);
  free(x.nplist);
  free(x.pc);
  free(x.tbpc);
  free(x.calls);
  free(x.ncalls);
  free(x.posted);
  free(x.fifos);
  free(x.sends);
  free(x.recvs);
  return res;
}
