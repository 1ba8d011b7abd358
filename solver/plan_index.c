/* Plan index: static checks and flat tables shared by the verifier and the simulator
 * (see plan_index.h). */
#include "plan_index.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char* kilnPlanBufferLabel(kilnBuffer_t b) {
  switch (b) {
    case KILN_BUF_INPUT: return "input";
    case KILN_BUF_OUTPUT: return "output";
    case KILN_BUF_SCRATCH: return "scratch";
    default: return "unknown";
  }
}

int kilnPlanBufferChunks(const kilnGpu* gpu, kilnBuffer_t b) {
  switch (b) {
    case KILN_BUF_INPUT: return gpu->i_chunks;
    case KILN_BUF_OUTPUT: return gpu->o_chunks;
    case KILN_BUF_SCRATCH: return gpu->s_chunks;
    default: return 0;
  }
}

typedef struct conn {
  int rank, peer, chan, g;
} conn;

static int conn_cmp(const void* a, const void* b) {
  const conn* x = a;
  const conn* y = b;
  if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
  if (x->peer != y->peer) return x->peer < y->peer ? -1 : 1;
  if (x->chan != y->chan) return x->chan < y->chan ? -1 : 1;
  return x->g < y->g ? -1 : x->g > y->g;
}

/* Checks that [off, off + cnt) lies in buffer b of rank owner (the step's own rank r, or its peer
 * for the remote side of a memory step); which: "src" or "dst". */
static kilnResult_t check_range(const kilnPlan* p, int r, int t, int s, int owner, const char* which,
                                kilnBuffer_t b, int off) {
  const kilnStep* st = &p->gpus[r].tbs[t].steps[s];
  const char* tn = kilnStepTypeName(st->type);
  if ((unsigned)b >= KILN_NUM_BUFFERS)
    return verr("rank %d tb %d step %d (%s): unknown %s buffer", r, t, s, tn,
                which[0] == 's' ? "source" : "destination");
  int len = kilnPlanBufferChunks(&p->gpus[owner], b);
  if (off < 0 || (int64_t)off + st->cnt > len) {
    if (owner == r)
      return verr("rank %d tb %d step %d (%s): %soff %d + cnt %d exceeds %s buffer of %d chunks", r, t, s, tn,
                  which, off, st->cnt, kilnPlanBufferLabel(b), len);
    return verr("rank %d tb %d step %d (%s): %soff %d + cnt %d exceeds rank %d's %s buffer of %d chunks", r,
                t, s, tn, which, off, st->cnt, owner, kilnPlanBufferLabel(b), len);
  }
  return KILN_SUCCESS;
}

/* Checks one step's fields (types, buffers, ranges, peers, dependency indices). */
static kilnResult_t check_step(const kilnPlan* p, int r, int t, int s) {
  const kilnGpu* gpu = &p->gpus[r];
  const kilnThreadblock* tb = &gpu->tbs[t];
  const kilnStep* st = &tb->steps[s];
  if ((unsigned)st->type >= KILN_NUM_STEP_TYPES)
    return verr("rank %d tb %d step %d: unknown step type %d", r, t, s, (int)st->type);
  const char* tn = kilnStepTypeName(st->type);
  const kilnStepPeer_t role = kilnStepPeerRole(st->type);
  if (st->s != s)
    return verr("rank %d tb %d step %d (%s): step number s=%d, expected %d", r, t, s, tn, st->s, s);
  if (kilnStepReceives(st->type) && tb->recv < 0)
    return verr("rank %d tb %d step %d (%s): receives, but the threadblock has no recv peer", r, t, s, tn);
  if (kilnStepSends(st->type) && tb->send < 0)
    return verr("rank %d tb %d step %d (%s): sends, but the threadblock has no send peer", r, t, s, tn);
  if (role != KILN_PEER_NONE && (st->peer < 0 || st->peer >= p->ngpus || st->peer == r))
    return verr("rank %d tb %d step %d (%s): peer %d is not another rank of 0..%d", r, t, s, tn, st->peer,
                p->ngpus - 1);
  if (st->type == KILN_STEP_PUT && (st->proto < -1 || st->proto >= KILN_NUM_PROTOS))
    return verr("rank %d tb %d step %d (%s): unknown protocol %d", r, t, s, tn, st->proto);
  const bool bufferless = st->type == KILN_STEP_NOP || role == KILN_PEER_SIGNAL || role == KILN_PEER_WAIT;
  if (!bufferless && st->cnt < 1)
    return verr("rank %d tb %d step %d (%s): cnt %d must be at least 1", r, t, s, tn, st->cnt);
  kilnResult_t res;
  if (kilnStepReadsSrc(st->type) &&
      (res = check_range(p, r, t, s, role == KILN_PEER_READ ? st->peer : r, "src", st->srcbuf, st->srcoff)))
    return res;
  if ((kilnStepWritesDst(st->type) || st->type == KILN_STEP_REDUCE) &&
      (res = check_range(p, r, t, s, role == KILN_PEER_WRITE ? st->peer : r, "dst", st->dstbuf, st->dstoff)))
    return res;
  if (st->depid >= 0) {
    if (st->depid >= gpu->ntbs)
      return verr("rank %d tb %d step %d (%s): depid %d out of range (rank %d has %d threadblocks)", r, t, s,
                  tn, st->depid, r, gpu->ntbs);
    const kilnThreadblock* dtb = &gpu->tbs[st->depid];
    if (st->deps < 0 || st->deps >= dtb->nsteps)
      return verr("rank %d tb %d step %d (%s): deps %d points past the end of tb %d (%d steps)", r, t, s, tn,
                  st->deps, st->depid, dtb->nsteps);
    if (st->depid == t && st->deps >= s)
      return verr("rank %d tb %d step %d (%s): dependency cycle: waits on its own step %d", r, t, s, tn,
                  st->deps);
    bool signalled = false;
    for (int e = st->deps; e < dtb->nsteps && !signalled; e++) signalled = dtb->steps[e].hasdep;
    if (!signalled && st->depid != t)
      return verr(
          "rank %d tb %d step %d (%s): waits on tb %d step %d, but neither it nor a later "
          "step of tb %d sets hasdep=1, so a runtime would never signal it",
          r, t, s, tn, st->depid, st->deps, st->depid);
  } else if (st->depid < -1) {
    return verr("rank %d tb %d step %d (%s): depid %d out of range", r, t, s, tn, st->depid);
  }
  return KILN_SUCCESS;
}

/* Structure, connections (1:1, counts, sizes), and the flattened indexes used to run. */
static kilnResult_t build(const kilnPlan* p, kilnPlanIndex* c) {
  int n = c->n;
  kilnResult_t res = KILN_SUCCESS;
  conn* sends = NULL;
  conn* recvs = NULL;

  c->tbbase = calloc((size_t)n + 1, sizeof(int));
  if (!c->tbbase) return kilnSetError(KILN_ERR_NO_MEMORY, "plan index: out of memory");
  for (int r = 0; r < n; r++) {
    const kilnGpu* gpu = &p->gpus[r];
    if (gpu->id != r) return verr("gpu %d: id %d, expected %d", r, gpu->id, r);
    if (gpu->i_chunks < 0 || gpu->o_chunks < 0 || gpu->s_chunks < 0)
      return verr("rank %d: negative chunk count", r);
    if (gpu->ntbs < 0 || (gpu->ntbs > 0 && !gpu->tbs)) return verr("rank %d: bad threadblock list", r);
    c->tbbase[r + 1] = c->tbbase[r] + gpu->ntbs;
  }
  c->ntbs = c->tbbase[n];
  c->tb_rank = malloc(sizeof(int) * (size_t)(c->ntbs + 1));
  c->stepbase = calloc((size_t)c->ntbs + 1, sizeof(int));
  if (!c->tb_rank || !c->stepbase) return kilnSetError(KILN_ERR_NO_MEMORY, "plan index: out of memory");
  int nsend = 0, nrecv = 0;
  c->maxcnt = 1;
  for (int r = 0; r < n; r++) {
    const kilnGpu* gpu = &p->gpus[r];
    for (int t = 0; t < gpu->ntbs; t++) {
      const kilnThreadblock* tb = &gpu->tbs[t];
      int g = c->tbbase[r] + t;
      c->tb_rank[g] = r;
      if (tb->id != t) return verr("rank %d tb %d: id %d, expected %d", r, t, tb->id, t);
      if (tb->send < -1 || tb->send >= n || tb->send == r)
        return verr("rank %d tb %d: send peer %d is not another rank of 0..%d", r, t, tb->send, n - 1);
      if (tb->recv < -1 || tb->recv >= n || tb->recv == r)
        return verr("rank %d tb %d: recv peer %d is not another rank of 0..%d", r, t, tb->recv, n - 1);
      if (tb->chan < 0) return verr("rank %d tb %d: negative channel %d", r, t, tb->chan);
      if (p->nchannels > 0 && tb->chan >= p->nchannels)
        return verr("rank %d tb %d: chan %d but the plan declares nchannels=%d", r, t, tb->chan,
                    p->nchannels);
      if (tb->nsteps < 0 || (tb->nsteps > 0 && !tb->steps)) return verr("rank %d tb %d: bad step list", r, t);
      c->stepbase[g + 1] = c->stepbase[g] + tb->nsteps;
      for (int s = 0; s < tb->nsteps; s++) {
        res = check_step(p, r, t, s);
        if (res != KILN_SUCCESS) return res;
        if (tb->steps[s].cnt > c->maxcnt) c->maxcnt = tb->steps[s].cnt;
      }
      if (tb->send >= 0) nsend++;
      if (tb->recv >= 0) nrecv++;
    }
  }
  c->nsteps = c->stepbase[c->ntbs];
  c->match_tb = malloc(sizeof(int) * (size_t)(c->nsteps + 1));
  c->match_step = malloc(sizeof(int) * (size_t)(c->nsteps + 1));
  c->msgbase = malloc(sizeof(int) * (size_t)(c->nsteps + 1));
  c->send_ord = malloc(sizeof(int) * (size_t)(c->nsteps + 1));
  c->sendstep = malloc(sizeof(int) * (size_t)(c->nsteps + 1));
  c->sendbase = calloc((size_t)c->ntbs + 1, sizeof(int));
  c->rmatch_tb = malloc(sizeof(int) * (size_t)(c->nsteps + 1));
  c->rmatch_step = malloc(sizeof(int) * (size_t)(c->nsteps + 1));
  sends = malloc(sizeof(conn) * (size_t)(nsend + 1));
  recvs = malloc(sizeof(conn) * (size_t)(nrecv + 1));
  if (!c->match_tb || !c->match_step || !c->msgbase || !c->send_ord || !c->sendstep || !c->sendbase ||
      !c->rmatch_tb || !c->rmatch_step || !sends || !recvs) {
    res = kilnSetError(KILN_ERR_NO_MEMORY, "plan index: out of memory");
    goto out_free;
  }
  /* Message slots for every sending step, in step order. */
  c->nmsg = 0;
  int nsendsteps = 0;
  for (int g = 0; g < c->ntbs; g++) {
    int r = c->tb_rank[g];
    const kilnThreadblock* tb = &p->gpus[r].tbs[kilnPlanIndexLocal(c, g)];
    for (int s = 0; s < tb->nsteps; s++) {
      int f = c->stepbase[g] + s;
      c->match_tb[f] = -1;
      c->match_step[f] = -1;
      c->msgbase[f] = -1;
      c->send_ord[f] = -1;
      c->rmatch_tb[f] = -1;
      c->rmatch_step[f] = -1;
      if (kilnStepSends(tb->steps[s].type)) {
        /* Every chunk a step sends is a message slot of the verifier and the simulator: their
         * count must stay an int (it wrapped, and the verifier wrote past its slots). */
        if (tb->steps[s].cnt > KILN_PLAN_MAX_MESSAGE_CHUNKS - c->nmsg) {
          res = kilnSetError(
              KILN_ERR_INVALID_ARGUMENT,
              "plan %s: its steps send more than %d chunks in all (rank %d tb %d step %d passes it)", p->name,
              KILN_PLAN_MAX_MESSAGE_CHUNKS, r, tb->id, s);
          goto out_free;
        }
        c->msgbase[f] = c->nmsg;
        c->nmsg += tb->steps[s].cnt;
        c->send_ord[f] = nsendsteps - c->sendbase[g];
        c->sendstep[nsendsteps++] = s;
      }
    }
    c->sendbase[g + 1] = nsendsteps;
  }
  /* Connections must be 1:1 per (rank, peer, channel). */
  nsend = nrecv = 0;
  for (int g = 0; g < c->ntbs; g++) {
    int r = c->tb_rank[g];
    const kilnThreadblock* tb = &p->gpus[r].tbs[kilnPlanIndexLocal(c, g)];
    if (tb->send >= 0) sends[nsend++] = (conn){r, tb->send, tb->chan, g};
    if (tb->recv >= 0) recvs[nrecv++] = (conn){r, tb->recv, tb->chan, g};
  }
  qsort(sends, (size_t)nsend, sizeof(conn), conn_cmp);
  qsort(recvs, (size_t)nrecv, sizeof(conn), conn_cmp);
  for (int i = 1; i < nsend; i++)
    if (sends[i].rank == sends[i - 1].rank && sends[i].peer == sends[i - 1].peer &&
        sends[i].chan == sends[i - 1].chan) {
      res = verr("rank %d: tb %d and tb %d both send to rank %d on channel %d", sends[i].rank,
                 kilnPlanIndexLocal(c, sends[i - 1].g), kilnPlanIndexLocal(c, sends[i].g), sends[i].peer,
                 sends[i].chan);
      goto out_free;
    }
  for (int i = 1; i < nrecv; i++)
    if (recvs[i].rank == recvs[i - 1].rank && recvs[i].peer == recvs[i - 1].peer &&
        recvs[i].chan == recvs[i - 1].chan) {
      res = verr("rank %d: tb %d and tb %d both receive from rank %d on channel %d", recvs[i].rank,
                 kilnPlanIndexLocal(c, recvs[i - 1].g), kilnPlanIndexLocal(c, recvs[i].g), recvs[i].peer,
                 recvs[i].chan);
      goto out_free;
    }
  /* Each receiving tb: find its sender (rank peer, send=rank, chan) and pair the k-th receive
   * with the k-th send. */
  for (int i = 0; i < nrecv; i++) {
    conn key = {recvs[i].peer, recvs[i].rank, recvs[i].chan, -1};
    int lo = 0, hi = nsend;
    while (lo < hi) {
      int mid = (lo + hi) / 2;
      if (conn_cmp(&sends[mid], &key) < 0)
        lo = mid + 1;
      else
        hi = mid;
    }
    int gr = recvs[i].g;
    const kilnThreadblock* rtb = &p->gpus[recvs[i].rank].tbs[kilnPlanIndexLocal(c, gr)];
    bool found =
        lo < nsend && sends[lo].rank == key.rank && sends[lo].peer == key.peer && sends[lo].chan == key.chan;
    if (!found) {
      for (int s = 0; s < rtb->nsteps; s++)
        if (kilnStepReceives(rtb->steps[s].type)) {
          res = verr(
              "rank %d tb %d step %d (%s): unmatched receive: rank %d has no threadblock "
              "with send=%d chan=%d",
              recvs[i].rank, kilnPlanIndexLocal(c, gr), s, kilnStepTypeName(rtb->steps[s].type),
              recvs[i].peer, recvs[i].rank, recvs[i].chan);
          goto out_free;
        }
      continue;
    }
    sends[lo].g = -2 - sends[lo].g; /* mark matched (decoded below) */
    int gs = -2 - sends[lo].g;
    int sr = c->tb_rank[gs];
    const kilnThreadblock* stb = &p->gpus[sr].tbs[kilnPlanIndexLocal(c, gs)];
    /* Its sending steps, in order (listed above). */
    const int* sendlist = &c->sendstep[c->sendbase[gs]];
    const int ns = c->sendbase[gs + 1] - c->sendbase[gs];
    int kth = 0;
    for (int s = 0; s < rtb->nsteps; s++) {
      if (!kilnStepReceives(rtb->steps[s].type)) continue;
      if (kth >= ns) {
        res = verr(
            "rank %d tb %d step %d (%s): receive %d from rank %d on channel %d has no "
            "matching send: rank %d tb %d sends only %d times",
            recvs[i].rank, kilnPlanIndexLocal(c, gr), s, kilnStepTypeName(rtb->steps[s].type), kth + 1, sr,
            recvs[i].chan, sr, kilnPlanIndexLocal(c, gs), ns);
        goto out_free;
      }
      const kilnStep* ss = &stb->steps[sendlist[kth]];
      if (ss->cnt != rtb->steps[s].cnt) {
        res = verr(
            "rank %d tb %d step %d (%s) sends %d chunks, but its receiver rank %d tb %d "
            "step %d (%s) receives %d",
            sr, kilnPlanIndexLocal(c, gs), sendlist[kth], kilnStepTypeName(ss->type), ss->cnt, recvs[i].rank,
            kilnPlanIndexLocal(c, gr), s, kilnStepTypeName(rtb->steps[s].type), rtb->steps[s].cnt);
        goto out_free;
      }
      c->match_tb[c->stepbase[gr] + s] = gs;
      c->match_step[c->stepbase[gr] + s] = sendlist[kth];
      c->rmatch_tb[c->stepbase[gs] + sendlist[kth]] = gr;
      c->rmatch_step[c->stepbase[gs] + sendlist[kth]] = s;
      kth++;
    }
    if (kth < ns) {
      res = verr(
          "rank %d tb %d step %d (%s): send %d to rank %d on channel %d is never received "
          "(rank %d tb %d receives only %d times); it would stay unconsumed",
          sr, kilnPlanIndexLocal(c, gs), sendlist[kth], kilnStepTypeName(stb->steps[sendlist[kth]].type),
          kth + 1, recvs[i].rank, recvs[i].chan, recvs[i].rank, kilnPlanIndexLocal(c, gr), kth);
      goto out_free;
    }
  }
  for (int i = 0; i < nsend; i++) {
    if (sends[i].g < -1) continue; /* matched */
    int gs = sends[i].g;
    const kilnThreadblock* stb = &p->gpus[sends[i].rank].tbs[kilnPlanIndexLocal(c, gs)];
    for (int s = 0; s < stb->nsteps; s++)
      if (kilnStepSends(stb->steps[s].type)) {
        res = verr(
            "rank %d tb %d step %d (%s): unmatched send: rank %d has no threadblock with "
            "recv=%d chan=%d",
            sends[i].rank, kilnPlanIndexLocal(c, gs), s, kilnStepTypeName(stb->steps[s].type), sends[i].peer,
            sends[i].rank, sends[i].chan);
        goto out_free;
      }
  }
out_free:
  free(sends);
  free(recvs);
  return res;
}

/* ---- memory steps ---- */

/* A sig or wait of a signal stream: key (from, to, chan), then its threadblock and step. */
typedef struct sigent {
  int from, to, chan, g, s;
} sigent;

static int sigent_cmp(const void* a, const void* b) {
  const sigent* x = a;
  const sigent* y = b;
  if (x->from != y->from) return x->from < y->from ? -1 : 1;
  if (x->to != y->to) return x->to < y->to ? -1 : 1;
  if (x->chan != y->chan) return x->chan < y->chan ? -1 : 1;
  if (x->g != y->g) return x->g < y->g ? -1 : 1;
  return x->s < y->s ? -1 : x->s > y->s;
}

static bool same_stream(const sigent* a, const sigent* b) {
  return a->from == b->from && a->to == b->to && a->chan == b->chan;
}

const kilnStep* kilnPlanIndexStep(const kilnPlan* p, const kilnPlanIndex* ix, int f, int* g, int* s) {
  int lo = 0, hi = ix->ntbs - 1;
  while (lo < hi) { /* the last threadblock whose first step is at or before f: the one that holds it */
    int mid = (lo + hi + 1) / 2;
    if (ix->stepbase[mid] <= f)
      lo = mid;
    else
      hi = mid - 1;
  }
  if (g) *g = lo;
  if (s) *s = f - ix->stepbase[lo];
  return &p->gpus[ix->tb_rank[lo]].tbs[kilnPlanIndexLocal(ix, lo)].steps[f - ix->stepbase[lo]];
}

/* Pairs every signal stream's sigs with its waits (plan.h: one threadblock per side, equal counts). */
static kilnResult_t build_signals(const kilnPlan* p, kilnPlanIndex* c) {
  int nsig = 0, nwait = 0;
  for (int f = 0; f < c->nsteps; f++) c->sig_match[f] = c->sig_ord[f] = c->sig_per[f] = -1;
  for (int g = 0; g < c->ntbs; g++) {
    const kilnThreadblock* tb = &p->gpus[c->tb_rank[g]].tbs[kilnPlanIndexLocal(c, g)];
    for (int s = 0; s < tb->nsteps; s++) {
      kilnStepPeer_t role = kilnStepPeerRole(tb->steps[s].type);
      nsig += role == KILN_PEER_SIGNAL;
      nwait += role == KILN_PEER_WAIT;
    }
  }
  kilnResult_t res = KILN_SUCCESS;
  sigent* sigs = malloc(sizeof(sigent) * (size_t)(nsig + 1));
  sigent* waits = malloc(sizeof(sigent) * (size_t)(nwait + 1));
  if (!sigs || !waits) {
    res = kilnSetError(KILN_ERR_NO_MEMORY, "plan index: out of memory");
    goto out_free;
  }
  nsig = nwait = 0;
  for (int g = 0; g < c->ntbs; g++) {
    const int r = c->tb_rank[g];
    const kilnThreadblock* tb = &p->gpus[r].tbs[kilnPlanIndexLocal(c, g)];
    for (int s = 0; s < tb->nsteps; s++) {
      const kilnStep* st = &tb->steps[s];
      kilnStepPeer_t role = kilnStepPeerRole(st->type);
      if (role == KILN_PEER_SIGNAL) sigs[nsig++] = (sigent){r, st->peer, tb->chan, g, s};
      if (role == KILN_PEER_WAIT) waits[nwait++] = (sigent){st->peer, r, tb->chan, g, s};
    }
  }
  qsort(sigs, (size_t)nsig, sizeof *sigs, sigent_cmp);
  qsort(waits, (size_t)nwait, sizeof *waits, sigent_cmp);
  for (int side = 0; side < 2; side++) {
    const sigent* a = side ? waits : sigs;
    const int na = side ? nwait : nsig;
    for (int i = 1; i < na; i++)
      if (same_stream(&a[i], &a[i - 1]) && a[i].g != a[i - 1].g) {
        const sigent* x = &a[i];
        const int xr = c->tb_rank[x->g];
        res = side ? verr(
                         "rank %d tb %d step %d (wait): rank %d tb %d also waits for rank %d on channel %d: "
                         "the waits of "
                         "one rank for another on a channel are steps of one threadblock",
                         xr, kilnPlanIndexLocal(c, x->g), x->s, xr, kilnPlanIndexLocal(c, a[i - 1].g),
                         x->from, x->chan)
                   : verr(
                         "rank %d tb %d step %d (sig): rank %d tb %d also signals rank %d on channel %d: the "
                         "signals "
                         "from one rank to another on a channel are steps of one threadblock",
                         xr, kilnPlanIndexLocal(c, x->g), x->s, xr, kilnPlanIndexLocal(c, a[i - 1].g), x->to,
                         x->chan);
        goto out_free;
      }
  }
  /* Walk both sorted lists stream by stream. */
  for (int i = 0, j = 0; i < nsig || j < nwait;) {
    int cmp = i >= nsig ? 1 : j >= nwait ? -1 : 0;
    if (cmp == 0) {
      sigent ki = sigs[i], kj = waits[j];
      ki.g = kj.g = ki.s = kj.s = 0;
      cmp = sigent_cmp(&ki, &kj);
    }
    int i1 = i, j1 = j;
    if (cmp <= 0)
      while (i1 < nsig && same_stream(&sigs[i1], &sigs[i])) i1++;
    if (cmp >= 0)
      while (j1 < nwait && same_stream(&waits[j1], &waits[j])) j1++;
    const int ns = i1 - i, nw = j1 - j;
    if (nw > ns) {
      const sigent* w = &waits[j + ns];
      const int wr = c->tb_rank[w->g];
      res = verr(
          "rank %d tb %d step %d (wait): unmatched wait: wait %d for rank %d on channel %d, but rank %d "
          "signals "
          "rank %d on channel %d only %d times an epoch",
          wr, kilnPlanIndexLocal(c, w->g), w->s, ns + 1, w->from, w->chan, w->from, wr, w->chan, ns);
      goto out_free;
    }
    if (ns > nw) {
      const sigent* x = &sigs[i + nw];
      const int xr = c->tb_rank[x->g];
      res = verr(
          "rank %d tb %d step %d (sig): unmatched sig: sig %d to rank %d on channel %d, but rank %d waits "
          "for "
          "rank %d on channel %d only %d times an epoch",
          xr, kilnPlanIndexLocal(c, x->g), x->s, nw + 1, x->to, x->chan, x->to, xr, x->chan, nw);
      goto out_free;
    }
    for (int k = 0; k < ns; k++) {
      const int fs = c->stepbase[sigs[i + k].g] + sigs[i + k].s,
                fw = c->stepbase[waits[j + k].g] + waits[j + k].s;
      c->sig_match[fs] = fw;
      c->sig_match[fw] = fs;
      c->sig_ord[fs] = c->sig_ord[fw] = k;
      c->sig_per[fs] = c->sig_per[fw] = ns;
    }
    i = i1;
    j = j1;
  }
out_free:
  free(sigs);
  free(waits);
  return res;
}

/* The local chunks step st of rank r reads: *nrange ranges (buffer, offset) of st->cnt chunks. */
static int local_reads(const kilnStep* st, kilnBuffer_t* buf, int* off) {
  int n = 0;
  if (kilnStepReadsSrc(st->type) && kilnStepPeerRole(st->type) != KILN_PEER_READ) {
    buf[n] = st->srcbuf;
    off[n++] = st->srcoff;
  }
  if (kilnStepReadsDst(st->type)) {
    buf[n] = st->dstbuf;
    off[n++] = st->dstoff;
  }
  return n;
}

/* Line puts: each writes the peer's scratch only, a chunk is written by one line put and nothing
 * else, only its own rank reads it, and a step reads lines of one protocol or plain chunks. Fills
 * line_writer, linedep and line_readers. */
static kilnResult_t build_lines(const kilnPlan* p, kilnPlanIndex* c) {
  int* lw = c->line_writer;
  for (int i = 0; i < c->line_base[c->n]; i++) lw[i] = -1;
  for (int f = 0; f < c->nsteps; f++) c->line_readers[f] = 0;
  /* The line puts and their chunks. */
  for (int g = 0; g < c->ntbs; g++) {
    const int r = c->tb_rank[g], t = kilnPlanIndexLocal(c, g);
    const kilnThreadblock* tb = &p->gpus[r].tbs[t];
    for (int s = 0; s < tb->nsteps; s++) {
      const kilnStep* st = &tb->steps[s];
      if (!kilnStepIsLinePut(p, st)) continue;
      const char* pn = kilnProtoName(kilnStepProtocol(p, st));
      if (st->dstbuf != KILN_BUF_SCRATCH)
        return verr(
            "rank %d tb %d step %d (put): an %s put writes rank %d's %s buffer; line puts (LL, LL12, LL128) "
            "write only the peer's scratch",
            r, t, s, pn, st->peer, kilnPlanBufferLabel(st->dstbuf));
      for (int e = 0; e < st->cnt; e++) {
        int* w = &lw[c->line_base[st->peer] + st->dstoff + e];
        if (*w >= 0) {
          int g2, s2;
          kilnPlanIndexStep(p, c, *w, &g2, &s2);
          return verr(
              "rank %d scratch chunk %d is written by two line puts, rank %d tb %d step %d and rank %d tb %d "
              "step %d: a reader could not tell whose lines it holds",
              st->peer, st->dstoff + e, c->tb_rank[g2], kilnPlanIndexLocal(c, g2), s2, r, t, s);
        }
        *w = c->stepbase[g] + s;
      }
    }
  }
  /* Other writers of line chunks, remote reads of them, and each step's line puts. */
  int nd = 0;
  for (int g = 0; g < c->ntbs; g++) {
    const int r = c->tb_rank[g], t = kilnPlanIndexLocal(c, g);
    const kilnThreadblock* tb = &p->gpus[r].tbs[t];
    for (int s = 0; s < tb->nsteps; s++) {
      const int f = c->stepbase[g] + s;
      const kilnStep* st = &tb->steps[s];
      const kilnStepPeer_t role = kilnStepPeerRole(st->type);
      c->linedep_base[f] = nd;
      if (kilnStepWritesDst(st->type) && st->dstbuf == KILN_BUF_SCRATCH && !kilnStepIsLinePut(p, st)) {
        const int owner = role == KILN_PEER_WRITE ? st->peer : r;
        for (int e = 0; e < st->cnt; e++) {
          const int w = lw[c->line_base[owner] + st->dstoff + e];
          if (w < 0) continue;
          int g2, s2;
          const kilnStep* put = kilnPlanIndexStep(p, c, w, &g2, &s2);
          return verr(
              "rank %d tb %d step %d (%s) writes rank %d scratch chunk %d, which rank %d tb %d step %d's %s "
              "put "
              "writes as lines: a line chunk has no other writer",
              r, t, s, kilnStepTypeName(st->type), owner, st->dstoff + e, c->tb_rank[g2],
              kilnPlanIndexLocal(c, g2), s2, kilnProtoName(kilnStepProtocol(p, put)));
        }
      }
      if (role == KILN_PEER_READ && st->srcbuf == KILN_BUF_SCRATCH)
        for (int e = 0; e < st->cnt; e++) {
          const int w = lw[c->line_base[st->peer] + st->srcoff + e];
          if (w < 0) continue;
          int g2, s2;
          const kilnStep* put = kilnPlanIndexStep(p, c, w, &g2, &s2);
          return verr(
              "rank %d tb %d step %d (%s) reads rank %d scratch chunk %d, which holds %s lines (rank %d tb "
              "%d "
              "step %d's put): lines are read only by the rank that holds them",
              r, t, s, kilnStepTypeName(st->type), st->peer, st->srcoff + e,
              kilnProtoName(kilnStepProtocol(p, put)), c->tb_rank[g2], kilnPlanIndexLocal(c, g2), s2);
        }
      kilnBuffer_t bufs[2];
      int offs[2];
      const int nr = local_reads(st, bufs, offs);
      for (int k = 0; k < nr; k++) {
        if (bufs[k] != KILN_BUF_SCRATCH) continue;
        int lines = 0, proto = -1;
        bool mixed = false;
        for (int e = 0; e < st->cnt; e++) {
          const int w = lw[c->line_base[r] + offs[k] + e];
          if (w < 0) continue;
          const int pr = (int)kilnStepProtocol(p, kilnPlanIndexStep(p, c, w, NULL, NULL));
          mixed = mixed || (proto >= 0 && pr != proto);
          proto = pr;
          lines++;
          bool seen = false;
          for (int i = c->linedep_base[f]; i < nd && !seen; i++) seen = c->linedep[i] == w;
          if (seen) continue;
          if (nd > 0 && (nd & (nd - 1)) == 0) {
            int* grown = realloc(c->linedep, sizeof(int) * (size_t)nd * 2);
            if (!grown) return kilnSetError(KILN_ERR_NO_MEMORY, "plan index: out of memory");
            c->linedep = grown;
          }
          c->linedep[nd++] = w;
          c->line_readers[w]++;
        }
        if (lines > 0 && (lines < st->cnt || mixed))
          return verr(
              "rank %d tb %d step %d (%s) reads scratch chunks %d..%d, some of them lines and some not, or "
              "lines of two protocols: a step reads lines of one protocol or plain chunks",
              r, t, s, kilnStepTypeName(st->type), offs[k], offs[k] + st->cnt - 1);
      }
    }
  }
  c->linedep_base[c->nsteps] = nd;
  return KILN_SUCCESS;
}

/* The memory-step part of the index (see plan_index.h). */
static kilnResult_t build_memory(const kilnPlan* p, kilnPlanIndex* c) {
  c->mem = true;
  const size_t ns = (size_t)c->nsteps + 1;
  c->sig_match = malloc(sizeof(int) * ns);
  c->sig_ord = malloc(sizeof(int) * ns);
  c->sig_per = malloc(sizeof(int) * ns);
  c->line_base = calloc((size_t)c->n + 1, sizeof(int));
  c->linedep_base = calloc(ns, sizeof(int));
  c->line_readers = calloc(ns, sizeof(int));
  c->linedep = malloc(sizeof(int));
  if (!c->sig_match || !c->sig_ord || !c->sig_per || !c->line_base || !c->linedep_base || !c->line_readers ||
      !c->linedep)
    return kilnSetError(KILN_ERR_NO_MEMORY, "plan index: out of memory");
  for (int r = 0; r < c->n; r++) c->line_base[r + 1] = c->line_base[r] + p->gpus[r].s_chunks;
  c->line_writer = malloc(sizeof(int) * ((size_t)c->line_base[c->n] + 1));
  if (!c->line_writer) return kilnSetError(KILN_ERR_NO_MEMORY, "plan index: out of memory");
  kilnResult_t res = build_signals(p, c);
  if (res == KILN_SUCCESS) res = build_lines(p, c);
  return res;
}

void kilnPlanIndexFree(kilnPlanIndex* ix) {
  if (!ix) return;
  free(ix->tbbase);
  free(ix->tb_rank);
  free(ix->stepbase);
  free(ix->match_tb);
  free(ix->match_step);
  free(ix->msgbase);
  free(ix->send_ord);
  free(ix->sendbase);
  free(ix->sendstep);
  free(ix->rmatch_tb);
  free(ix->rmatch_step);
  free(ix->sig_match);
  free(ix->sig_ord);
  free(ix->sig_per);
  free(ix->line_base);
  free(ix->line_writer);
  free(ix->linedep_base);
  free(ix->linedep);
  free(ix->line_readers);
  memset(ix, 0, sizeof *ix);
}

kilnResult_t kilnPlanIndexBuild(const kilnPlan* p, kilnPlanIndex* ix) {
  memset(ix, 0, sizeof *ix);
  if (!p) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "no plan");
  if (p->ngpus < 1 || p->ngpus > KILN_MAX_RANKS || !p->gpus)
    return verr("plan has %d GPUs (expected 1..%d)", p->ngpus, KILN_MAX_RANKS);
  ix->n = p->ngpus;
  kilnResult_t res = build(p, ix);
  if (res == KILN_SUCCESS && kilnPlanHasMemorySteps(p)) res = build_memory(p, ix);
  if (res != KILN_SUCCESS) kilnPlanIndexFree(ix);
  return res;
}

/* ---- the tables a runtime reads (plan.h) ---- */

kilnResult_t kilnPlanSignalOrdinals(const kilnPlan* p, int r, int* ordinal, int* per_epoch) {
  if (!p || r < 0 || r >= p->ngpus || !p->gpus)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnPlanSignalOrdinals: no rank %d", r);
  kilnPlanIndex ix;
  kilnResult_t res = kilnPlanIndexBuild(p, &ix);
  if (res != KILN_SUCCESS) return res;
  const int first = ix.stepbase[ix.tbbase[r]], last = ix.stepbase[ix.tbbase[r + 1]];
  for (int f = first; f < last; f++) {
    if (ordinal) ordinal[f - first] = ix.mem ? ix.sig_ord[f] : -1;
    if (per_epoch) per_epoch[f - first] = ix.mem ? ix.sig_per[f] : -1;
  }
  kilnPlanIndexFree(&ix);
  return KILN_SUCCESS;
}

kilnResult_t kilnPlanLineChunks(const kilnPlan* p, int r, int* proto) {
  if (!p || r < 0 || r >= p->ngpus || !p->gpus)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnPlanLineChunks: no rank %d", r);
  kilnPlanIndex ix;
  kilnResult_t res = kilnPlanIndexBuild(p, &ix);
  if (res != KILN_SUCCESS) return res;
  for (int ch = 0; proto && ch < p->gpus[r].s_chunks; ch++) {
    const int w = ix.mem ? ix.line_writer[ix.line_base[r] + ch] : -1;
    proto[ch] = w < 0 ? -1 : (int)kilnStepProtocol(p, kilnPlanIndexStep(p, &ix, w, NULL, NULL));
  }
  kilnPlanIndexFree(&ix);
  return KILN_SUCCESS;
}

kilnResult_t kilnPlanIndexLayout(const kilnPlan* p, int* k, int* R) {
  int n = p->ngpus;
  const kilnGpu* g0 = &p->gpus[0];
  for (int r = 1; r < n; r++)
    if (p->gpus[r].i_chunks != g0->i_chunks || p->gpus[r].o_chunks != g0->o_chunks)
      return verr("rank %d has i_chunks=%d o_chunks=%d but rank 0 has %d and %d", r, p->gpus[r].i_chunks,
                  p->gpus[r].o_chunks, g0->i_chunks, g0->o_chunks);
  for (int r = 0; r < n; r++) {
    const kilnGpu* g = &p->gpus[r];
    if (g->ncopies > 0 && !g->copies) return verr("rank %d has %d copies but no copy array", r, g->ncopies);
    for (int j = 0; j < g->ncopies; j++) {
      const kilnCopy* cp = &g->copies[j];
      if (cp->i_off < 0 || cp->o_off < 0 || cp->cnt < 1 || cp->i_off > g->i_chunks - cp->cnt ||
          cp->o_off > g->o_chunks - cp->cnt)
        return verr("rank %d copy %d: i_off=%d o_off=%d cnt=%d is outside i_chunks=%d o_chunks=%d", r, j,
                    cp->i_off, cp->o_off, cp->cnt, g->i_chunks, g->o_chunks);
    }
  }
  int i = g0->i_chunks, o = g0->o_chunks;
  const char* cn = kilnCollName(p->coll);
  switch (p->coll) {
    case KILN_COLL_ALLGATHER:
      if (o <= 0 || o % n) return verr("%s: o_chunks %d is not a positive multiple of %d ranks", cn, o, n);
      *k = o / n;
      if (i != 0 && i != *k)
        return verr("%s: i_chunks %d, expected o_chunks/ngpus = %d (or 0 in place)", cn, i, *k);
      *R = o;
      break;
    case KILN_COLL_REDUCESCATTER:
      if (i <= 0 || i % n) return verr("%s: i_chunks %d is not a positive multiple of %d ranks", cn, i, n);
      *k = i / n;
      if (o != 0 && o != *k)
        return verr("%s: o_chunks %d, expected i_chunks/ngpus = %d (or 0 in place)", cn, o, *k);
      *R = i;
      break;
    case KILN_COLL_ALLTOALL:
    case KILN_COLL_ALLREDUCE: {
      int m = i > o ? i : o;
      if (m <= 0) return verr("%s: no input or output chunks", cn);
      if (i && o && i != o) return verr("%s: i_chunks %d and o_chunks %d differ", cn, i, o);
      if (p->coll == KILN_COLL_ALLTOALL && m % n)
        return verr("%s: %d chunks is not a multiple of %d ranks", cn, m, n);
      *R = m;
      *k = p->coll == KILN_COLL_ALLTOALL ? m / n : m;
      break;
    }
    default:
      *R = 0;
      *k = 0;
      break;
  }
  return KILN_SUCCESS;
}
