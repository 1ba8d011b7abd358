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

/* Checks one step's fields (types, buffers, ranges, peers, dependency indices). */
static kilnResult_t check_step(const kilnPlan* p, int r, int t, int s) {
  const kilnGpu* gpu = &p->gpus[r];
  const kilnThreadblock* tb = &gpu->tbs[t];
  const kilnStep* st = &tb->steps[s];
  if ((unsigned)st->type >= KILN_NUM_STEP_TYPES)
    return verr("rank %d tb %d step %d: unknown step type %d", r, t, s, (int)st->type);
  const char* tn = kilnStepTypeName(st->type);
  if (st->s != s)
    return verr("rank %d tb %d step %d (%s): step number s=%d, expected %d", r, t, s, tn, st->s, s);
  if (kilnStepReceives(st->type) && tb->recv < 0)
    return verr("rank %d tb %d step %d (%s): receives, but the threadblock has no recv peer", r,
                t, s, tn);
  if (kilnStepSends(st->type) && tb->send < 0)
    return verr("rank %d tb %d step %d (%s): sends, but the threadblock has no send peer", r, t,
                s, tn);
  if (st->type != KILN_STEP_NOP && st->cnt < 1)
    return verr("rank %d tb %d step %d (%s): cnt %d must be at least 1", r, t, s, tn, st->cnt);
  if (kilnStepReadsSrc(st->type)) {
    if ((unsigned)st->srcbuf >= KILN_NUM_BUFFERS)
      return verr("rank %d tb %d step %d (%s): unknown source buffer", r, t, s, tn);
    int len = kilnPlanBufferChunks(gpu, st->srcbuf);
    if (st->srcoff < 0 || (int64_t)st->srcoff + st->cnt > len)
      return verr("rank %d tb %d step %d (%s): srcoff %d + cnt %d exceeds %s buffer of %d chunks",
                  r, t, s, tn, st->srcoff, st->cnt, kilnPlanBufferLabel(st->srcbuf), len);
  }
  if (kilnStepWritesDst(st->type) || st->type == KILN_STEP_REDUCE) {
    if ((unsigned)st->dstbuf >= KILN_NUM_BUFFERS)
      return verr("rank %d tb %d step %d (%s): unknown destination buffer", r, t, s, tn);
    int len = kilnPlanBufferChunks(gpu, st->dstbuf);
    if (st->dstoff < 0 || (int64_t)st->dstoff + st->cnt > len)
      return verr("rank %d tb %d step %d (%s): dstoff %d + cnt %d exceeds %s buffer of %d chunks",
                  r, t, s, tn, st->dstoff, st->cnt, kilnPlanBufferLabel(st->dstbuf), len);
  }
  if (st->depid >= 0) {
    if (st->depid >= gpu->ntbs)
      return verr("rank %d tb %d step %d (%s): depid %d out of range (rank %d has %d threadblocks)",
                  r, t, s, tn, st->depid, r, gpu->ntbs);
    const kilnThreadblock* dtb = &gpu->tbs[st->depid];
    if (st->deps < 0 || st->deps >= dtb->nsteps)
      return verr("rank %d tb %d step %d (%s): deps %d points past the end of tb %d (%d steps)", r,
                  t, s, tn, st->deps, st->depid, dtb->nsteps);
    if (st->depid == t && st->deps >= s)
      return verr("rank %d tb %d step %d (%s): dependency cycle: waits on its own step %d", r, t,
                  s, tn, st->deps);
    bool signalled = false;
    for (int e = st->deps; e < dtb->nsteps && !signalled; e++) signalled = dtb->steps[e].hasdep;
    if (!signalled && st->depid != t)
      return verr("rank %d tb %d step %d (%s): waits on tb %d step %d, but neither it nor a later "
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
      if (tb->nsteps < 0 || (tb->nsteps > 0 && !tb->steps))
        return verr("rank %d tb %d: bad step list", r, t);
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
          res = kilnSetError(KILN_ERR_INVALID_ARGUMENT,
                             "plan %s: its steps send more than %d chunks in all (rank %d tb %d step %d passes it)",
                             p->name, KILN_PLAN_MAX_MESSAGE_CHUNKS, r, tb->id, s);
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
                 kilnPlanIndexLocal(c, sends[i - 1].g), kilnPlanIndexLocal(c, sends[i].g), sends[i].peer, sends[i].chan);
      goto out_free;
    }
  for (int i = 1; i < nrecv; i++)
    if (recvs[i].rank == recvs[i - 1].rank && recvs[i].peer == recvs[i - 1].peer &&
        recvs[i].chan == recvs[i - 1].chan) {
      res = verr("rank %d: tb %d and tb %d both receive from rank %d on channel %d", recvs[i].rank,
                 kilnPlanIndexLocal(c, recvs[i - 1].g), kilnPlanIndexLocal(c, recvs[i].g), recvs[i].peer, recvs[i].chan);
      goto out_free;
    }
  /* Each receiving tb: find its sender (rank peer, send=rank, chan) and pair the k-th receive
   * with the k-th send. */
  for (int i = 0; i < nrecv; i++) {
    conn key = {recvs[i].peer, recvs[i].rank, recvs[i].chan, -1};
    int lo = 0, hi = nsend;
    while (lo < hi) {
      int mid = (lo + hi) / 2;
      if (conn_cmp(&sends[mid], &key) < 0) lo = mid + 1; else hi = mid;
    }
    int gr = recvs[i].g;
    const kilnThreadblock* rtb = &p->gpus[recvs[i].rank].tbs[kilnPlanIndexLocal(c, gr)];
    bool found = lo < nsend && sends[lo].rank == key.rank && sends[lo].peer == key.peer &&
                 sends[lo].chan == key.chan;
    if (!found) {
      for (int s = 0; s < rtb->nsteps; s++)
        if (kilnStepReceives(rtb->steps[s].type)) {
          res = verr("rank %d tb %d step %d (%s): unmatched receive: rank %d has no threadblock "
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
        res = verr("rank %d tb %d step %d (%s): receive %d from rank %d on channel %d has no "
                   "matching send: rank %d tb %d sends only %d times",
                   recvs[i].rank, kilnPlanIndexLocal(c, gr), s, kilnStepTypeName(rtb->steps[s].type), kth + 1,
                   sr, recvs[i].chan, sr, kilnPlanIndexLocal(c, gs), ns);
        goto out_free;
      }
      const kilnStep* ss = &stb->steps[sendlist[kth]];
      if (ss->cnt != rtb->steps[s].cnt) {
        res = verr("rank %d tb %d step %d (%s) sends %d chunks, but its receiver rank %d tb %d "
                   "step %d (%s) receives %d",
                   sr, kilnPlanIndexLocal(c, gs), sendlist[kth], kilnStepTypeName(ss->type), ss->cnt,
                   recvs[i].rank, kilnPlanIndexLocal(c, gr), s, kilnStepTypeName(rtb->steps[s].type),
                   rtb->steps[s].cnt);
        goto out_free;
      }
      c->match_tb[c->stepbase[gr] + s] = gs;
      c->match_step[c->stepbase[gr] + s] = sendlist[kth];
      c->rmatch_tb[c->stepbase[gs] + sendlist[kth]] = gr;
      c->rmatch_step[c->stepbase[gs] + sendlist[kth]] = s;
      kth++;
    }
    if (kth < ns) {
      res = verr("rank %d tb %d step %d (%s): send %d to rank %d on channel %d is never received "
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
        res = verr("rank %d tb %d step %d (%s): unmatched send: rank %d has no threadblock with "
                   "recv=%d chan=%d",
                   sends[i].rank, kilnPlanIndexLocal(c, gs), s, kilnStepTypeName(stb->steps[s].type),
                   sends[i].peer, sends[i].rank, sends[i].chan);
        goto out_free;
      }
  }
out_free:
  free(sends);
  free(recvs);
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
  memset(ix, 0, sizeof *ix);
}

kilnResult_t kilnPlanIndexBuild(const kilnPlan* p, kilnPlanIndex* ix) {
  memset(ix, 0, sizeof *ix);
  if (!p) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "no plan");
  if (p->ngpus < 1 || p->ngpus > KILN_MAX_RANKS || !p->gpus)
    return verr("plan has %d GPUs (expected 1..%d)", p->ngpus, KILN_MAX_RANKS);
  ix->n = p->ngpus;
  kilnResult_t res = build(p, ix);
  if (res != KILN_SUCCESS) kilnPlanIndexFree(ix);
  return res;
}
