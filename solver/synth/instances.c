/* A plan through FIFOs in k instances: k copies of every threadblock, copy i on channels of its own,
 * each copy moving its own k-th of every rank's piece of every buffer.
 *
 * One threadblock moves a connection's data at a fraction of a link's rate (the calibrated
 * simulator's tb_us_per_mb: 38.5 GB/s on an H200, against 50 GB/s a NIC and 370 an NVLink port), so
 * a plan whose connections carry much of the data runs faster in several instances, as the memory
 * forms do. A buffer's chunks are grouped by the rank they belong to (an allgather's output and a
 * reducescatter's or alltoall's input: n groups of a rank's chunks; other buffers one group), and
 * chunk x of group g becomes chunk x of instance i's part of group g, g * k * G + i * G + x (G the
 * group's chunks), so that every chunk stays in its rank's piece. A step whose chunks run across a
 * group's end cannot be copied so; such a plan is not replicated. */
#include <stdlib.h>

#include "synth_internal.h"

/* The chunks of each group of buffer b of rank r in p (the whole buffer where it is one group). */
static int group_chunks(const kilnPlan* p, int r, kilnBuffer_t b) {
  const kilnGpu* g = &p->gpus[r];
  const int n = p->ngpus;
  switch (b) {
    case KILN_BUF_INPUT:
      return (p->coll == KILN_COLL_REDUCESCATTER || p->coll == KILN_COLL_ALLTOALL) && g->i_chunks % n == 0
                 ? g->i_chunks / n
                 : g->i_chunks;
    case KILN_BUF_OUTPUT:
      return (p->coll == KILN_COLL_ALLGATHER || p->coll == KILN_COLL_ALLTOALL) && g->o_chunks % n == 0
                 ? g->o_chunks / n
                 : g->o_chunks;
    default: return g->s_chunks;
  }
}

/* The offset of chunk off of buffer b (groups of G chunks) in instance i of k; -1 where the step's
 * cnt chunks from off cross a group's end. */
static int map_off(int G, int off, int cnt, int i, int k) {
  if (G <= 0) return off;
  const int g = off / G, x = off % G;
  if (x + cnt > G) return -1;
  return g * k * G + i * G + x;
}

kilnResult_t synReplicate(const kilnPlan* p, int k, kilnPlan** out) {
  *out = NULL;
  if (k < 2 || (long long)p->nchannels * k > KILN_PLAN_MAX_CHANNELS) return KILN_SUCCESS;
  if (kilnPlanHasCopies(p)) return KILN_SUCCESS;
  /* an in-place plan's input and output are one buffer: both must be grouped alike */
  if (p->inplace) {
    for (int r = 0; r < p->ngpus; r++) {
      const kilnGpu* g = &p->gpus[r];
      if (g->i_chunks && g->o_chunks &&
          group_chunks(p, r, KILN_BUF_INPUT) != group_chunks(p, r, KILN_BUF_OUTPUT))
        return KILN_SUCCESS;
    }
  }
  kilnPlan* q = NULL;
  kilnResult_t res = kilnPlanCreate(p->name, p->coll, p->ngpus, &q);
  if (res != KILN_SUCCESS) return res;
  q->proto = p->proto;
  q->nnodes = p->nnodes;
  q->nchannels = p->nchannels * k;
  q->nchunksperloop = p->nchunksperloop * k;
  q->inplace = p->inplace;
  q->outofplace = p->outofplace;
  q->min_bytes = p->min_bytes;
  q->max_bytes = p->max_bytes;
  bool ok = true, fits = true;
  for (int r = 0; r < p->ngpus && ok && fits; r++) {
    const kilnGpu* g = &p->gpus[r];
    q->gpus[r].i_chunks = g->i_chunks * k;
    q->gpus[r].o_chunks = g->o_chunks * k;
    q->gpus[r].s_chunks = g->s_chunks * k;
    const int G[KILN_NUM_BUFFERS] = {group_chunks(p, r, KILN_BUF_INPUT), group_chunks(p, r, KILN_BUF_OUTPUT),
                                     group_chunks(p, r, KILN_BUF_SCRATCH)};
    for (int i = 0; i < k && ok && fits; i++)
      for (int t = 0; t < g->ntbs && ok && fits; t++) {
        const kilnThreadblock* tb = &g->tbs[t];
        kilnThreadblock* nt = kilnPlanAddThreadblock(q, r, tb->send, tb->recv, tb->chan + i * p->nchannels);
        ok = nt != NULL;
        for (int s = 0; s < tb->nsteps && ok && fits; s++) {
          const kilnStep* st = &tb->steps[s];
          /* a put's destination and a get's source are the peer's buffers, laid out as this rank's */
          const int so = map_off(G[st->srcbuf], st->srcoff, st->cnt, i, k);
          const int dof = map_off(G[st->dstbuf], st->dstoff, st->cnt, i, k);
          fits = so >= 0 && dof >= 0;
          if (!fits) break;
          kilnStep* ns = kilnPlanAddStep(nt, st->type, st->srcbuf, so, st->dstbuf, dof, st->cnt);
          ok = ns != NULL;
          if (!ok) break;
          ns->depid = st->depid >= 0 ? st->depid + i * g->ntbs : -1;
          ns->deps = st->deps;
          ns->hasdep = st->hasdep;
          ns->peer = st->peer;
          ns->proto = st->proto;
        }
      }
  }
  if (!ok) res = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
  if (!ok || !fits) {
    kilnPlanFree(q);
    return res;
  }
  *out = q;
  return KILN_SUCCESS;
}
