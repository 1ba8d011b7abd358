/*
 * Classic plans: ring and direct (all-pairs) algorithms written as MSCCL plans.
 *
 * Layout shared by all of them: with k chunks per rank piece and I instances, a piece has
 * K = k*I chunks; instance i runs on channel i and owns chunks i*k .. i*k+k-1 of every piece
 * (blocked, so each instance's chunks are contiguous). Every step moves one chunk, so the k
 * chunks of a piece pipeline through the algorithm.
 *
 * ring:   one threadblock per rank and instance, send to r+1, receive from r-1.
 *         allgather: s, rcs x (n-2), r; reducescatter: s, rrs x (n-2), rrc;
 *         allreduce: s, rrs x (n-2), rrcs, rcs x (n-2), r (reduce-scatter then allgather).
 * direct: one threadblock per peer and instance (send=recv=peer): each rank sends every peer
 *         its piece directly. Reductions receive into scratch (one slot per peer) and a local
 *         threadblock (no peers) reduces them into the result, each `re` waiting on the receive
 *         that filled its slot; allreduce then sends the reduced piece to every peer.
 *
 * FIFO depth: a threadblock sends its k chunks before its first receive, so a connection needs
 * k slots in a direct plan and k+1 in a ring, whose fused receive-and-send steps (rcs, rrs, rrcs)
 * need a free slot while the peer's k sends are still queued; a ring of 2 ranks has such steps
 * only in its allreduce, so its allgather and reducescatter need k (kilnVerifyOptions.fifo_depth,
 * the runtime's nslots, default 8); use instances rather than chunks to cut pieces finer.
 */
#include <stdio.h>
#include <string.h>

#include "kiln/plan.h"
#include "plan_model.h"

typedef struct builder {
  kilnPlan* p;
  bool oom;
} builder;

/* Appends a step to tb t of rank r (re-fetching the tb, since appends may move it). */
static kilnStep* add(builder* b, int r, int t, kilnStepType_t type, kilnBuffer_t sb, int so,
                     kilnBuffer_t db, int dof, int cnt) {
  kilnStep* s = kilnPlanAddStep(&b->p->gpus[r].tbs[t], type, sb, so, db, dof, cnt);
  if (!s) b->oom = true;
  return s;
}

static void dep(kilnStep* s, int depid, int deps) {
  if (!s) return;
  s->depid = depid;
  s->deps = deps;
}

static int new_tb(builder* b, int r, int send, int recv, int chan) {
  int id = b->p->gpus[r].ntbs;
  kilnThreadblock* tb = kilnPlanAddThreadblock(b->p, r, send, recv, chan);
  if (!tb) {
    b->oom = true;
    return -1;
  }
  return id;
}

static void set_buffers(kilnPlan* p, int i, int o, int s) {
  for (int r = 0; r < p->ngpus; r++) {
    p->gpus[r].i_chunks = i;
    p->gpus[r].o_chunks = o;
    p->gpus[r].s_chunks = s;
  }
  p->nchunksperloop = i > o ? i : o;
}

/* ---- ring ---- */

static void ring_allgather(builder* b, int n, int k, int I, bool inplace) {
  int K = k * I;
  set_buffers(b->p, inplace ? 0 : K, n * K, 0);
  for (int ins = 0; ins < I; ins++)
    for (int r = 0; r < n; r++) {
      int t = new_tb(b, r, (r + 1) % n, (r - 1 + n) % n, ins);
      if (t < 0) return;
      for (int j = 0; j < k; j++) {
        int jj = ins * k + j;
        if (inplace) add(b, r, t, KILN_STEP_SEND, KILN_BUF_OUTPUT, r * K + jj, KILN_BUF_OUTPUT, r * K + jj, 1);
        else add(b, r, t, KILN_STEP_SEND, KILN_BUF_INPUT, jj, KILN_BUF_OUTPUT, r * K + jj, 1);
      }
      for (int s = 1; s < n; s++) {
        int piece = (r - s + n) % n;
        kilnStepType_t ty = s < n - 1 ? KILN_STEP_RECV_COPY_SEND : KILN_STEP_RECV;
        for (int j = 0; j < k; j++) {
          int off = piece * K + ins * k + j;
          add(b, r, t, ty, KILN_BUF_OUTPUT, off, KILN_BUF_OUTPUT, off, 1);
        }
      }
      if (!inplace)
        for (int j = 0; j < k; j++) {
          int jj = ins * k + j;
          add(b, r, t, KILN_STEP_COPY, KILN_BUF_INPUT, jj, KILN_BUF_OUTPUT, r * K + jj, 1);
        }
    }
}

/* Reduce-scatter along the ring; with allgather, continues into the allgather phase. */
static void ring_reduce(builder* b, int n, int k, int I, bool inplace, bool allgather) {
  int K = k * I;
  kilnBuffer_t D = inplace ? KILN_BUF_INPUT : KILN_BUF_OUTPUT;
  if (allgather) set_buffers(b->p, n * K, inplace ? 0 : n * K, 0);
  else set_buffers(b->p, n * K, inplace ? 0 : K, 0);
  for (int ins = 0; ins < I; ins++)
    for (int r = 0; r < n; r++) {
      int t = new_tb(b, r, (r + 1) % n, (r - 1 + n) % n, ins);
      if (t < 0) return;
      for (int s = 0; s < n; s++) {
        int piece = ((r - 1 - s) % n + 2 * n) % n;
        for (int j = 0; j < k; j++) {
          int off = piece * K + ins * k + j;
          if (s == 0) {
            add(b, r, t, KILN_STEP_SEND, KILN_BUF_INPUT, off, KILN_BUF_INPUT, off, 1);
          } else if (s < n - 1) {
            add(b, r, t, KILN_STEP_RECV_REDUCE_SEND, KILN_BUF_INPUT, off, KILN_BUF_INPUT, off, 1);
          } else if (allgather) {
            add(b, r, t, KILN_STEP_RECV_REDUCE_COPY_SEND, KILN_BUF_INPUT, off, D, off, 1);
          } else {
            int doff = inplace ? off : ins * k + j;
            add(b, r, t, KILN_STEP_RECV_REDUCE_COPY, KILN_BUF_INPUT, off, D, doff, 1);
          }
        }
      }
      if (!allgather) continue;
      for (int s = 1; s < n; s++) {
        int piece = (r - s + n) % n;
        kilnStepType_t ty = s < n - 1 ? KILN_STEP_RECV_COPY_SEND : KILN_STEP_RECV;
        for (int j = 0; j < k; j++) {
          int off = piece * K + ins * k + j;
          add(b, r, t, ty, D, off, D, off, 1);
        }
      }
    }
}

/* ---- direct ---- */

static void direct_allgather(builder* b, int n, int k, int I, bool inplace) {
  int K = k * I;
  set_buffers(b->p, inplace ? 0 : K, n * K, 0);
  for (int ins = 0; ins < I; ins++)
    for (int r = 0; r < n; r++)
      for (int m = 0; m < n - 1; m++) {
        int d = (r + 1 + m) % n;
        int t = new_tb(b, r, d, d, ins);
        if (t < 0) return;
        for (int j = 0; j < k; j++) {
          int jj = ins * k + j;
          if (inplace) add(b, r, t, KILN_STEP_SEND, KILN_BUF_OUTPUT, r * K + jj, KILN_BUF_OUTPUT, r * K + jj, 1);
          else add(b, r, t, KILN_STEP_SEND, KILN_BUF_INPUT, jj, KILN_BUF_OUTPUT, r * K + jj, 1);
        }
        /* The local copy between the sends and the receives: it runs while the peer's data is
         * on its way instead of after it arrived. */
        if (!inplace && m == 0)
          for (int j = 0; j < k; j++) {
            int jj = ins * k + j;
            add(b, r, t, KILN_STEP_COPY, KILN_BUF_INPUT, jj, KILN_BUF_OUTPUT, r * K + jj, 1);
          }
        for (int j = 0; j < k; j++) {
          int off = d * K + ins * k + j;
          add(b, r, t, KILN_STEP_RECV, KILN_BUF_OUTPUT, off, KILN_BUF_OUTPUT, off, 1);
        }
      }
}

/* In place the input and output are one buffer (both declared, aliased by the runtime). */
static void direct_alltoall(builder* b, int n, int k, int I, bool inplace) {
  int K = k * I;
  set_buffers(b->p, n * K, n * K, 0);
  for (int ins = 0; ins < I; ins++)
    for (int r = 0; r < n; r++)
      for (int m = 0; m < n - 1; m++) {
        int d = (r + 1 + m) % n;
        int t = new_tb(b, r, d, d, ins);
        if (t < 0) return;
        for (int j = 0; j < k; j++) {
          int jj = ins * k + j;
          add(b, r, t, KILN_STEP_SEND, KILN_BUF_INPUT, d * K + jj, KILN_BUF_OUTPUT, r * K + jj, 1);
        }
        if (!inplace && m == 0) /* as in direct_allgather: copy while the peer's data travels */
          for (int j = 0; j < k; j++) {
            int off = r * K + ins * k + j;
            add(b, r, t, KILN_STEP_COPY, KILN_BUF_INPUT, off, KILN_BUF_OUTPUT, off, 1);
          }
        for (int j = 0; j < k; j++) {
          int off = d * K + ins * k + j;
          add(b, r, t, KILN_STEP_RECV, KILN_BUF_OUTPUT, off, KILN_BUF_OUTPUT, off, 1);
        }
      }
}

/* Direct reduce-scatter, and with allgather the direct allreduce. Per rank and instance:
 * tbs base+m (m = 0..n-2) talk to peer (r+1+m)%n; tb base+n-1 reduces. */
static void direct_reduce(builder* b, int n, int k, int I, bool inplace, bool allgather) {
  int K = k * I;
  kilnBuffer_t D = inplace ? KILN_BUF_INPUT : KILN_BUF_OUTPUT;
  if (allgather) set_buffers(b->p, n * K, inplace ? 0 : n * K, (n - 1) * K);
  else set_buffers(b->p, n * K, inplace ? 0 : K, (n - 1) * K);
  int per_j = (inplace ? 0 : 1) + (n - 1); /* reduction tb steps per chunk */
  for (int ins = 0; ins < I; ins++)
    for (int r = 0; r < n; r++) {
      int base = b->p->gpus[r].ntbs;
      for (int m = 0; m < n - 1; m++) {
        int d = (r + 1 + m) % n;
        int t = new_tb(b, r, d, d, ins);
        if (t < 0) return;
        for (int j = 0; j < k; j++) {
          int off = d * K + ins * k + j;
          add(b, r, t, KILN_STEP_SEND, KILN_BUF_INPUT, off, KILN_BUF_SCRATCH, off, 1);
        }
        for (int j = 0; j < k; j++) {
          int so = m * K + ins * k + j;
          add(b, r, t, KILN_STEP_RECV, KILN_BUF_SCRATCH, so, KILN_BUF_SCRATCH, so, 1);
        }
        if (!allgather) continue;
        for (int j = 0; j < k; j++) {
          int off = r * K + ins * k + j;
          kilnStep* s = add(b, r, t, KILN_STEP_SEND, D, off, D, off, 1);
          dep(s, base + n - 1, (j + 1) * per_j - 1);
        }
        for (int j = 0; j < k; j++) {
          int off = d * K + ins * k + j;
          add(b, r, t, KILN_STEP_RECV, D, off, D, off, 1);
        }
      }
      int t = new_tb(b, r, -1, -1, ins);
      if (t < 0) return;
      for (int j = 0; j < k; j++) {
        int in = r * K + ins * k + j;
        int out = allgather || inplace ? in : ins * k + j;
        if (!inplace) add(b, r, t, KILN_STEP_COPY, KILN_BUF_INPUT, in, D, out, 1);
        for (int m = 0; m < n - 1; m++) {
          kilnStep* s = add(b, r, t, KILN_STEP_REDUCE, KILN_BUF_SCRATCH, m * K + ins * k + j, D, out, 1);
          dep(s, base + m, k + j);
        }
      }
    }
}

kilnResult_t kilnClassicPlan(const char* algo, kilnColl_t coll, int nranks,
                             const kilnClassicOptions* opts, kilnPlan** out) {
  kilnClassicOptions defaults = KILN_CLASSIC_OPTIONS_INIT;
  if (!out) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnClassicPlan: NULL out");
  *out = NULL;
  if (!opts) opts = &defaults;
  if (!algo) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnClassicPlan: no algorithm named");
  bool ring = !strcmp(algo, "ring"), direct = !strcmp(algo, "direct");
  if (!ring && !direct)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT,
                        "unknown classic algorithm '%s' (known: ring, direct)", algo);
  if ((unsigned)coll >= KILN_NUM_COLLS)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnClassicPlan: unknown collective %d", (int)coll);
  if ((ring && (coll == KILN_COLL_ALLTOALL || coll == KILN_COLL_CUSTOM)) ||
      (direct && coll == KILN_COLL_CUSTOM))
    return kilnSetError(KILN_ERR_UNSUPPORTED,
                        "classic algorithm '%s' does not implement %s (ring: allgather, "
                        "reducescatter, allreduce; direct: allgather, alltoall, reducescatter, "
                        "allreduce)", algo, kilnCollName(coll));
  if (nranks < 2 || nranks > KILN_MAX_RANKS)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "classic plans need 2..%d ranks, not %d",
                        KILN_MAX_RANKS, nranks);
  if (opts->chunks < 1 || opts->instances < 1)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT,
                        "chunks (%d) and instances (%d) must be at least 1", opts->chunks,
                        opts->instances);
  if (opts->instances > KILN_PLAN_MAX_CHANNELS)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "instances (%d): a plan holds at most %d channels",
                        opts->instances, KILN_PLAN_MAX_CHANNELS);
  if ((unsigned)opts->proto >= KILN_NUM_PROTOS)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnClassicPlan: unknown protocol %d", (int)opts->proto);
  /* Keep the plan a sane size: chunks per buffer and threadblocks per rank. */
  int64_t pieces_chunks = (int64_t)nranks * opts->chunks * opts->instances;
  if (pieces_chunks > (1 << 20) || (int64_t)opts->instances * nranks > (1 << 16))
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT,
                        "classic plan too large: %d ranks x %d chunks x %d instances", nranks,
                        opts->chunks, opts->instances);

  char name[KILN_NAME_MAX];
  snprintf(name, sizeof name, "%s-%s-n%d-c%d-i%d%s%s%s", algo, kilnCollName(coll), nranks,
           opts->chunks, opts->instances, opts->inplace ? "-inplace" : "",
           opts->proto != KILN_PROTO_SIMPLE ? "-" : "",
           opts->proto != KILN_PROTO_SIMPLE ? kilnProtoName(opts->proto) : "");
  /* Threadblocks of each rank: a ring has one per instance, direct one per peer and instance, and
   * its reductions one more (the reducer). More than a plan file holds is refused here, not after
   * building and verifying a plan that could not be written. */
  const int64_t tbs = (int64_t)opts->instances *
                      (ring ? 1 : coll == KILN_COLL_ALLGATHER || coll == KILN_COLL_ALLTOALL ? nranks - 1 : nranks);
  if (tbs > KILN_PLAN_FILE_MAX_TBS)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT,
                        "plan %s: each gpu would have %lld threadblocks, a plan file holds %d (use fewer instances)",
                        name, (long long)tbs, KILN_PLAN_FILE_MAX_TBS);
  kilnPlan* p = NULL;
  kilnResult_t res = kilnPlanCreate(name, coll, nranks, &p);
  if (res != KILN_SUCCESS) return res;
  p->proto = opts->proto;
  p->nchannels = opts->instances;
  p->inplace = opts->inplace;
  p->outofplace = !opts->inplace;
  /* Open byte range and no redop (the op comes with each call): kilnPlanCreate's defaults. */

  builder b = {p, false};
  int n = nranks, k = opts->chunks, I = opts->instances;
  bool ip = opts->inplace;
  switch (coll) {
    case KILN_COLL_ALLGATHER:
      if (ring) ring_allgather(&b, n, k, I, ip);
      else direct_allgather(&b, n, k, I, ip);
      break;
    case KILN_COLL_REDUCESCATTER:
      if (ring) ring_reduce(&b, n, k, I, ip, false);
      else direct_reduce(&b, n, k, I, ip, false);
      break;
    case KILN_COLL_ALLREDUCE:
      if (ring) ring_reduce(&b, n, k, I, ip, true);
      else direct_reduce(&b, n, k, I, ip, true);
      break;
    default:
      direct_alltoall(&b, n, k, I, ip);
      break;
  }
  if (b.oom) {
    kilnPlanFree(p);
    return kilnSetError(KILN_ERR_NO_MEMORY, "out of memory building classic plan %s", name);
  }
  kilnPlanMarkHasdep(p);
  *out = p;
  return KILN_SUCCESS;
}
