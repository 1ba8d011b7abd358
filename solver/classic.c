/*
 * Classic plans: ring and direct (all-pairs) algorithms written as MSCCL plans, and the forms of
 * the fast symmetric-memory kernels written with memory steps (plan.h).
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
 *
 * Memory-step forms (no FIFOs): one threadblock per rank and instance (channel i), talking to every
 * peer, the peers taken in the order r+1, r+2, ... Rank P's scratch holds a region of K chunks per
 * other rank q, region q < P ? q : q-1 (the sources in rank order, P skipped); puts carry the
 * plan's protocol, and Simple puts are followed by one sig per peer, whose wait comes right before
 * the first step that reads that peer's region. In place, the reductions first copy this rank's
 * own operand into a last scratch region, since the result overwrites it.
 * oneshot:  allreduce, reducescatter: every rank puts the chunks each peer reduces into that peer's
 *           scratch, then reduces its result in rank order 0..n-1 (copy of rank 0's operand, then
 *           re of the others), so every rank gets bitwise the same sums.
 * twoshot:  allreduce: rank q reduces piece q as oneshot does, then puts the reduced piece into
 *           a second set of regions of every peer's scratch, and copies the pieces it receives
 *           into place (a second sig per peer when Simple).
 * staged:   allgather, alltoall: each rank puts its pieces into the peers' scratch and copies what
 *           it receives into its output (its own piece copied locally).
 * zerocopy: allgather, alltoall (Simple; alltoall out of place only): an arrival sig to every
 *           peer, a wait for each peer's before putting straight into that peer's output, then a
 *           done sig to every peer and a wait for every peer's before the call ends.
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
static kilnStep* add(builder* b, int r, int t, kilnStepType_t type, kilnBuffer_t sb, int so, kilnBuffer_t db,
                     int dof, int cnt) {
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
        if (inplace)
          add(b, r, t, KILN_STEP_SEND, KILN_BUF_OUTPUT, r * K + jj, KILN_BUF_OUTPUT, r * K + jj, 1);
        else
          add(b, r, t, KILN_STEP_SEND, KILN_BUF_INPUT, jj, KILN_BUF_OUTPUT, r * K + jj, 1);
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
  if (allgather)
    set_buffers(b->p, n * K, inplace ? 0 : n * K, 0);
  else
    set_buffers(b->p, n * K, inplace ? 0 : K, 0);
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
          if (inplace)
            add(b, r, t, KILN_STEP_SEND, KILN_BUF_OUTPUT, r * K + jj, KILN_BUF_OUTPUT, r * K + jj, 1);
          else
            add(b, r, t, KILN_STEP_SEND, KILN_BUF_INPUT, jj, KILN_BUF_OUTPUT, r * K + jj, 1);
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
  if (allgather)
    set_buffers(b->p, n * K, inplace ? 0 : n * K, (n - 1) * K);
  else
    set_buffers(b->p, n * K, inplace ? 0 : K, (n - 1) * K);
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

/* ---- memory-step forms ---- */

/* Region of source rank q in rank p's scratch. */
static int region(int p, int q) { return q < p ? q : q - 1; }

static kilnStep* put(builder* b, int r, int t, int peer, kilnBuffer_t sb, int so, kilnBuffer_t db, int dof) {
  kilnStep* s = add(b, r, t, KILN_STEP_PUT, sb, so, db, dof, 1);
  if (s) s->peer = peer;
  return s;
}

static void signal(builder* b, int r, int t, kilnStepType_t type, int peer) {
  kilnStep* s = add(b, r, t, type, KILN_BUF_INPUT, -1, KILN_BUF_INPUT, -1, 0);
  if (s) s->peer = peer;
}

/* Rank r's reduction of chunk c of a piece into dst (buffer D, offset doff), in rank order: rank
 * q's operand is its region of this rank's scratch, or this rank's own (own buffer and offset).
 * With waits, each peer's wait (for its first signal of the epoch) comes before its first use. */
static void reduce_in_rank_order(builder* b, int n, int r, int t, int K, int c, kilnBuffer_t ob, int ooff,
                                 kilnBuffer_t D, int doff, bool waits) {
  for (int q = 0; q < n; q++) {
    if (waits && q != r) signal(b, r, t, KILN_STEP_WAIT, q);
    kilnBuffer_t sb = q == r ? ob : KILN_BUF_SCRATCH;
    int so = q == r ? ooff : region(r, q) * K + c;
    add(b, r, t, q == 0 ? KILN_STEP_COPY : KILN_STEP_REDUCE, sb, so, D, doff, 1);
  }
}

/* oneshot (allreduce, reducescatter) and, with twoshot, the two-shot allreduce. */
static void mem_reduce(builder* b, int n, int k, int I, bool inplace, bool line, kilnColl_t coll,
                       bool twoshot) {
  const int K = k * I;
  const bool ar = coll == KILN_COLL_ALLREDUCE;
  const int pieces = ar && !twoshot ? 1 : n;       /* pieces of the input */
  const int regions = (n - 1) * (twoshot ? 2 : 1); /* scratch regions before the own copy */
  const kilnBuffer_t D = inplace ? KILN_BUF_INPUT : KILN_BUF_OUTPUT;
  set_buffers(b->p, pieces * K, inplace ? 0 : ar ? pieces * K : K, regions * K + (inplace ? K : 0));
  for (int ins = 0; ins < I; ins++)
    for (int r = 0; r < n; r++) {
      const int t = new_tb(b, r, -1, -1, ins);
      if (t < 0) return;
      const int own = pieces == 1 ? 0 : r * K; /* this rank's piece of the input */
      for (int m = 0; m < n - 1; m++) {
        const int P = (r + 1 + m) % n;
        for (int j = 0; j < k; j++) {
          const int c = ins * k + j;
          put(b, r, t, P, KILN_BUF_INPUT, (pieces == 1 ? 0 : P * K) + c, KILN_BUF_SCRATCH,
              region(P, r) * K + c);
        }
      }
      if (inplace)
        for (int j = 0; j < k; j++)
          add(b, r, t, KILN_STEP_COPY, KILN_BUF_INPUT, own + ins * k + j, KILN_BUF_SCRATCH,
              regions * K + ins * k + j, 1);
      if (!line)
        for (int m = 0; m < n - 1; m++) signal(b, r, t, KILN_STEP_SIGNAL, (r + 1 + m) % n);
      for (int j = 0; j < k; j++) {
        const int c = ins * k + j;
        const kilnBuffer_t ob = inplace ? KILN_BUF_SCRATCH : KILN_BUF_INPUT;
        const int ooff = inplace ? regions * K + c : own + c;
        /* allreduce: the piece in place of the input's; reducescatter: the output's chunk c, or
         * in place the input's. */
        const int doff = ar || inplace ? own + c : c;
        reduce_in_rank_order(b, n, r, t, K, c, ob, ooff, D, doff, !line && j == 0);
      }
      if (!twoshot) continue;
      for (int m = 0; m < n - 1; m++) {
        const int P = (r + 1 + m) % n;
        for (int j = 0; j < k; j++) {
          const int c = ins * k + j;
          put(b, r, t, P, D, own + c, KILN_BUF_SCRATCH, (n - 1 + region(P, r)) * K + c);
        }
      }
      if (!line)
        for (int m = 0; m < n - 1; m++) signal(b, r, t, KILN_STEP_SIGNAL, (r + 1 + m) % n);
      for (int m = 0; m < n - 1; m++) {
        const int q = (r + 1 + m) % n;
        if (!line) signal(b, r, t, KILN_STEP_WAIT, q);
        for (int j = 0; j < k; j++) {
          const int c = ins * k + j;
          add(b, r, t, KILN_STEP_COPY, KILN_BUF_SCRATCH, (n - 1 + region(r, q)) * K + c, D, q * K + c, 1);
        }
      }
    }
}

/* staged (allgather, alltoall): pieces into the peers' scratch, then copies into the output. */
static void mem_staged(builder* b, int n, int k, int I, bool inplace, bool line, kilnColl_t coll) {
  const int K = k * I;
  const bool ag = coll == KILN_COLL_ALLGATHER;
  set_buffers(b->p, ag ? (inplace ? 0 : K) : n * K, n * K, (n - 1) * K);
  for (int ins = 0; ins < I; ins++)
    for (int r = 0; r < n; r++) {
      const int t = new_tb(b, r, -1, -1, ins);
      if (t < 0) return;
      for (int m = 0; m < n - 1; m++) {
        const int P = (r + 1 + m) % n;
        for (int j = 0; j < k; j++) {
          const int c = ins * k + j;
          if (ag)
            put(b, r, t, P, inplace ? KILN_BUF_OUTPUT : KILN_BUF_INPUT, (inplace ? r * K : 0) + c,
                KILN_BUF_SCRATCH, region(P, r) * K + c);
          else
            put(b, r, t, P, KILN_BUF_INPUT, P * K + c, KILN_BUF_SCRATCH, region(P, r) * K + c);
        }
      }
      if (!inplace) /* this rank's own piece, while the peers' travel */
        for (int j = 0; j < k; j++)
          add(b, r, t, KILN_STEP_COPY, KILN_BUF_INPUT, (ag ? 0 : r * K) + ins * k + j, KILN_BUF_OUTPUT,
              r * K + ins * k + j, 1);
      if (!line)
        for (int m = 0; m < n - 1; m++) signal(b, r, t, KILN_STEP_SIGNAL, (r + 1 + m) % n);
      for (int m = 0; m < n - 1; m++) {
        const int q = (r + 1 + m) % n;
        if (!line) signal(b, r, t, KILN_STEP_WAIT, q);
        for (int j = 0; j < k; j++) {
          const int c = ins * k + j;
          add(b, r, t, KILN_STEP_COPY, KILN_BUF_SCRATCH, region(r, q) * K + c, KILN_BUF_OUTPUT, q * K + c, 1);
        }
      }
    }
}

/* zerocopy (allgather, alltoall): arrival, puts into the peers' outputs, done. */
static void mem_zerocopy(builder* b, int n, int k, int I, bool inplace, kilnColl_t coll) {
  const int K = k * I;
  const bool ag = coll == KILN_COLL_ALLGATHER;
  set_buffers(b->p, ag ? (inplace ? 0 : K) : n * K, n * K, 0);
  for (int ins = 0; ins < I; ins++)
    for (int r = 0; r < n; r++) {
      const int t = new_tb(b, r, -1, -1, ins);
      if (t < 0) return;
      for (int m = 0; m < n - 1; m++) signal(b, r, t, KILN_STEP_SIGNAL, (r + 1 + m) % n);
      if (!inplace) /* this rank's own piece, while the peers arrive */
        for (int j = 0; j < k; j++)
          add(b, r, t, KILN_STEP_COPY, KILN_BUF_INPUT, (ag ? 0 : r * K) + ins * k + j, KILN_BUF_OUTPUT,
              r * K + ins * k + j, 1);
      for (int m = 0; m < n - 1; m++) {
        const int P = (r + 1 + m) % n;
        signal(b, r, t, KILN_STEP_WAIT, P);
        for (int j = 0; j < k; j++) {
          const int c = ins * k + j;
          if (ag)
            put(b, r, t, P, inplace ? KILN_BUF_OUTPUT : KILN_BUF_INPUT, (inplace ? r * K : 0) + c,
                KILN_BUF_OUTPUT, r * K + c);
          else
            put(b, r, t, P, KILN_BUF_INPUT, P * K + c, KILN_BUF_OUTPUT, r * K + c);
        }
      }
      for (int m = 0; m < n - 1; m++) signal(b, r, t, KILN_STEP_SIGNAL, (r + 1 + m) % n);
      for (int m = 0; m < n - 1; m++) signal(b, r, t, KILN_STEP_WAIT, (r + 1 + m) % n);
    }
}

/* The algorithms and the collectives each implements (a bit per kilnColl_t). */
static const struct {
  const char* name;
  unsigned colls;
  bool memory; /* written with memory steps */
} algos[] = {
    {"ring", 1u << KILN_COLL_ALLGATHER | 1u << KILN_COLL_REDUCESCATTER | 1u << KILN_COLL_ALLREDUCE, false},
    {"direct",
     1u << KILN_COLL_ALLGATHER | 1u << KILN_COLL_ALLTOALL | 1u << KILN_COLL_REDUCESCATTER |
         1u << KILN_COLL_ALLREDUCE,
     false},
    {"oneshot", 1u << KILN_COLL_REDUCESCATTER | 1u << KILN_COLL_ALLREDUCE, true},
    {"twoshot", 1u << KILN_COLL_ALLREDUCE, true},
    {"staged", 1u << KILN_COLL_ALLGATHER | 1u << KILN_COLL_ALLTOALL, true},
    {"zerocopy", 1u << KILN_COLL_ALLGATHER | 1u << KILN_COLL_ALLTOALL, true},
};
#define NUM_ALGOS (int)(sizeof algos / sizeof algos[0])

kilnResult_t kilnClassicPlan(const char* algo, kilnColl_t coll, int nranks, const kilnClassicOptions* opts,
                             kilnPlan** out) {
  kilnClassicOptions defaults = KILN_CLASSIC_OPTIONS_INIT;
  if (!out) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnClassicPlan: NULL out");
  *out = NULL;
  if (!opts) opts = &defaults;
  if (!algo) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnClassicPlan: no algorithm named");
  int a = 0;
  while (a < NUM_ALGOS && strcmp(algo, algos[a].name)) a++;
  if (a == NUM_ALGOS)
    return kilnSetError(
        KILN_ERR_INVALID_ARGUMENT,
        "unknown classic algorithm '%s' (known: ring, direct, oneshot, twoshot, staged, zerocopy)", algo);
  const bool ring = a == 0, memory = algos[a].memory;
  if ((unsigned)coll >= KILN_NUM_COLLS)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnClassicPlan: unknown collective %d", (int)coll);
  if (!(algos[a].colls >> coll & 1u))
    return kilnSetError(
        KILN_ERR_UNSUPPORTED,
        "classic algorithm '%s' does not implement %s (ring: allgather, reducescatter, allreduce; "
        "direct: allgather, alltoall, reducescatter, allreduce; oneshot: reducescatter, allreduce; "
        "twoshot: allreduce; staged and zerocopy: allgather, alltoall)",
        algo, kilnCollName(coll));
  if (nranks < 2 || nranks > KILN_MAX_RANKS)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "classic plans need 2..%d ranks, not %d", KILN_MAX_RANKS,
                        nranks);
  if (opts->chunks < 1 || opts->instances < 1)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "chunks (%d) and instances (%d) must be at least 1",
                        opts->chunks, opts->instances);
  if (opts->instances > KILN_PLAN_MAX_CHANNELS)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "instances (%d): a plan holds at most %d channels",
                        opts->instances, KILN_PLAN_MAX_CHANNELS);
  if ((unsigned)opts->proto >= KILN_NUM_PROTOS)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnClassicPlan: unknown protocol %d", (int)opts->proto);
  if (!memory && opts->proto == KILN_PROTO_LL12)
    return kilnSetError(KILN_ERR_UNSUPPORTED,
                        "classic algorithm '%s' sends through FIFOs (Simple, LL, LL128); LL12 "
                        "is a protocol of put steps (oneshot, twoshot, staged)",
                        algo);
  if (!strcmp(algo, "zerocopy") && opts->proto != KILN_PROTO_SIMPLE)
    return kilnSetError(KILN_ERR_UNSUPPORTED,
                        "classic algorithm 'zerocopy' puts into the peers' outputs, and %s puts "
                        "write only the peers' scratch: zerocopy is Simple",
                        kilnProtoName(opts->proto));
  if (!strcmp(algo, "zerocopy") && coll == KILN_COLL_ALLTOALL && opts->inplace)
    return kilnSetError(KILN_ERR_UNSUPPORTED,
                        "classic algorithm 'zerocopy' has no in-place alltoall: a peer's put "
                        "would overwrite the piece that rank still has to send");
  /* Keep the plan a sane size: chunks per buffer and threadblocks per rank. */
  int64_t pieces_chunks = (int64_t)nranks * opts->chunks * opts->instances;
  if (pieces_chunks > (1 << 20) || (int64_t)opts->instances * nranks > (1 << 16))
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT,
                        "classic plan too large: %d ranks x %d chunks x %d instances", nranks, opts->chunks,
                        opts->instances);

  char name[KILN_NAME_MAX];
  snprintf(name, sizeof name, "%s-%s-n%d-c%d-i%d%s%s%s", algo, kilnCollName(coll), nranks, opts->chunks,
           opts->instances, opts->inplace ? "-inplace" : "", opts->proto != KILN_PROTO_SIMPLE ? "-" : "",
           opts->proto != KILN_PROTO_SIMPLE ? kilnProtoName(opts->proto) : "");
  /* Threadblocks of each rank: a ring and the memory-step forms have one per instance, direct one
   * per peer and instance, and its reductions one more (the reducer). More than a plan file holds
   * is refused here, not after building and verifying a plan that could not be written. */
  const int64_t tbs =
      (int64_t)opts->instances * (ring || memory                                              ? 1
                                  : coll == KILN_COLL_ALLGATHER || coll == KILN_COLL_ALLTOALL ? nranks - 1
                                                                                              : nranks);
  if (tbs > KILN_PLAN_FILE_MAX_TBS)
    return kilnSetError(
        KILN_ERR_INVALID_ARGUMENT,
        "plan %s: each gpu would have %lld threadblocks, a plan file holds %d (use fewer instances)", name,
        (long long)tbs, KILN_PLAN_FILE_MAX_TBS);
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
  bool ip = opts->inplace, line = opts->proto != KILN_PROTO_SIMPLE;
  switch (a) {
    case 2: mem_reduce(&b, n, k, I, ip, line, coll, false); break;
    case 3: mem_reduce(&b, n, k, I, ip, line, coll, true); break;
    case 4: mem_staged(&b, n, k, I, ip, line, coll); break;
    case 5: mem_zerocopy(&b, n, k, I, ip, coll); break;
    default:
      switch (coll) {
        case KILN_COLL_ALLGATHER:
          if (ring)
            ring_allgather(&b, n, k, I, ip);
          else
            direct_allgather(&b, n, k, I, ip);
          break;
        case KILN_COLL_REDUCESCATTER:
          if (ring)
            ring_reduce(&b, n, k, I, ip, false);
          else
            direct_reduce(&b, n, k, I, ip, false);
          break;
        case KILN_COLL_ALLREDUCE:
          if (ring)
            ring_reduce(&b, n, k, I, ip, true);
          else
            direct_reduce(&b, n, k, I, ip, true);
          break;
        default: direct_alltoall(&b, n, k, I, ip); break;
      }
  }
  if (b.oom) {
    kilnPlanFree(p);
    return kilnSetError(KILN_ERR_NO_MEMORY, "out of memory building classic plan %s", name);
  }
  kilnPlanMarkHasdep(p);
  *out = p;
  return KILN_SUCCESS;
}
