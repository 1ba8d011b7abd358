/* NCCL's ring as a plan, the floor under the synthesized ones.
 *
 * TACCL's routes follow shortest paths, and a chunk crosses between nodes once; on some machines
 * and sizes that leaves the NICs less of the traffic than NCCL's rings give them (two HGX H100
 * nodes at 1 GB: each GPU takes one remote piece in 15 through its NIC, where 8 rings, one per
 * NIC, take 1/8 of everything; the NVLink ports then bound the rails sketch's plans 7-11% above
 * the rings: docs/synthesis.md). So that a synthesized plan is never slower than NCCL's ring in the
 * simulator, kilnSynthesize also lowers the ring the simulator's baseline models - on nodes joined
 * by switches, one ring per NIC, ring i entering every node through a GPU of NIC i, each carrying
 * 1/rings of the data in slices of 512 KiB of a rank's share - and keeps it where it is faster. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "synth_internal.h"

#define RING_SLICE_BYTES (512.0 * 1024.0) /* NCCL's Simple step, as the simulator's baseline cuts */
#define RING_MAX_SLICES 256
/* ring plans' size, counted as rings x ranks x ranks x slices, twice for allreduce: up to
 * RING_MAX_STEPS, and past it up to RING_LARGE_MAX_STEPS only where asked (dgx2 x 64's allreduce
 * ring at 1 GB: 16.8 million, a minute to lower, simulate and verify, 7.4 GiB at peak in the
 * synthesis: docs/synthesis.md) */
#define RING_MAX_STEPS 9000000.0
#define RING_LARGE_MAX_STEPS 17000000.0

/* Whether every pair of a node's GPUs talks through a switch (the baseline's ring is then the
 * node's GPUs in order, rotated per ring). */
static bool switched(const kilnTopology* t) {
  const int g = t->gpus_per_node;
  for (int a = 0; a < g; a++)
    for (int b = 0; b < g; b++) {
      if (a == b) continue;
      const kilnLink* l = kilnTopologyLink(t, a, b);
      if (!l || l->switch_id < 0) return false;
    }
  return true;
}

kilnResult_t synRingPlan(const kilnTopology* t, kilnColl_t coll, uint64_t ref, bool inplace, bool large,
                         const char* name, kilnPlan** out) {
  *out = NULL;
  const int n = t->nranks, g = t->gpus_per_node;
  if (coll != KILN_COLL_ALLGATHER && coll != KILN_COLL_REDUCESCATTER && coll != KILN_COLL_ALLREDUCE)
    return KILN_SUCCESS;
  if (n < 2 || (g > 1 && !switched(t)) || (t->nodes > 1 && t->ntnics < 1)) return KILN_SUCCESS;
  int R = t->nodes > 1 ? (t->ntnics < g ? t->ntnics : g) : 1;
  double sd = ceil((double)ref / ((double)R * n * RING_SLICE_BYTES));
  const int C = sd < 1 ? 1 : sd > RING_MAX_SLICES ? RING_MAX_SLICES : (int)sd, K = R * C;
  const double steps = (double)R * n * n * C * (coll == KILN_COLL_ALLREDUCE ? 2 : 1);
  if ((large ? steps <= RING_MAX_STEPS || steps > RING_LARGE_MAX_STEPS : steps > RING_MAX_STEPS) ||
      (double)ref < (double)n * K)
    return KILN_SUCCESS;
  kilnPlan* p = NULL;
  kilnResult_t r = kilnPlanCreate(name, coll, n, &p);
  if (r != KILN_SUCCESS) return r;
  p->nchannels = R;
  p->inplace = inplace;
  p->outofplace = !inplace;
  const bool ag = coll == KILN_COLL_ALLGATHER, rs = coll == KILN_COLL_REDUCESCATTER;
  const int ic = ag ? (inplace ? 0 : K) : n * K, oc = ag ? n * K : inplace ? 0 : rs ? K : n * K;
  for (int q = 0; q < n; q++) {
    p->gpus[q].i_chunks = ic;
    p->gpus[q].o_chunks = oc;
    p->gpus[q].s_chunks = ag || inplace ? 0 : K;
  }
  p->nchunksperloop = ic > oc ? ic : oc;
  int* order = malloc(sizeof(int) * (size_t)n);
  if (!order) {
    r = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
    goto out_free;
  }
  const kilnBuffer_t D = inplace ? KILN_BUF_INPUT : KILN_BUF_OUTPUT;
  for (int i = 0; i < R && r == KILN_SUCCESS; i++) {
    /* ring i: node by node, each node's GPUs from the one it enters through on (kilnChannelEntryGpu:
     * NIC i's first GPU), as the baseline's ring i */
    const int rot = kilnChannelEntryGpu(t, i);
    for (int node = 0; node < t->nodes; node++)
      for (int j = 0; j < g; j++) order[node * g + j] = node * g + (j + rot) % g;
    for (int j = 0; j < n && r == KILN_SUCCESS; j++) {
      const int me = order[j], next = order[(j + 1) % n], prev = order[(j - 1 + n) % n];
      kilnThreadblock* tb = kilnPlanAddThreadblock(p, me, next, prev, i);
      if (!tb) {
        r = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
        break;
      }
      bool ok = true;
#define STEP(ty, sb, so, db, dof) ok = ok && kilnPlanAddStep(tb, ty, sb, so, db, dof, 1) != NULL
      /* slice by slice (each slice around the ring before the next), every receive a step of its
       * own before the send that forwards it: a connection then needs one FIFO slot, as kiln's
       * synthesized plans (the simulator runs a receive and its send as it runs them fused) */
      for (int c = 0; c < C && ok; c++) {
        const int sub = i * C + c;
        if (ag) {
          if (inplace)
            STEP(KILN_STEP_SEND, KILN_BUF_OUTPUT, me * K + sub, KILN_BUF_OUTPUT, me * K + sub);
          else
            STEP(KILN_STEP_SEND, KILN_BUF_INPUT, sub, KILN_BUF_OUTPUT, me * K + sub);
          for (int s = 1; s < n; s++) {
            const int off = order[(j - s + n) % n] * K + sub;
            STEP(KILN_STEP_RECV, KILN_BUF_OUTPUT, off, KILN_BUF_OUTPUT, off);
            if (s < n - 1) STEP(KILN_STEP_SEND, KILN_BUF_OUTPUT, off, KILN_BUF_OUTPUT, off);
          }
          if (!inplace) STEP(KILN_STEP_COPY, KILN_BUF_INPUT, sub, KILN_BUF_OUTPUT, me * K + sub);
          continue;
        }
        for (int s = 0; s < n; s++) {
          const int off = order[((j - 1 - s) % n + 2 * n) % n] * K + sub;
          if (s == 0) {
            STEP(KILN_STEP_SEND, KILN_BUF_INPUT, off, KILN_BUF_INPUT, off);
          } else if (s <
                     n - 1) { /* a partial sum: in place in the input, else in scratch (the input stays) */
            const kilnBuffer_t pb = inplace ? KILN_BUF_INPUT : KILN_BUF_SCRATCH;
            const int po = inplace ? off : sub;
            STEP(KILN_STEP_RECV_REDUCE_COPY, KILN_BUF_INPUT, off, pb, po);
            STEP(KILN_STEP_SEND, pb, po, pb, po);
          } else {
            const int doff = rs && !inplace ? sub : off;
            STEP(KILN_STEP_RECV_REDUCE_COPY, KILN_BUF_INPUT, off, D, doff);
            if (!rs) STEP(KILN_STEP_SEND, D, off, D, off);
          }
        }
        if (!rs)
          for (int s = 1; s < n; s++) {
            const int off = order[(j - s + n) % n] * K + sub;
            STEP(KILN_STEP_RECV, D, off, D, off);
            if (s < n - 1) STEP(KILN_STEP_SEND, D, off, D, off);
          }
      }
#undef STEP
      if (!ok) r = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
    }
  }
out_free:
  free(order);
  if (r != KILN_SUCCESS) {
    kilnPlanFree(p);
    return r;
  }
  *out = p;
  return KILN_SUCCESS;
}
