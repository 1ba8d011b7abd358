/*
 * The cut of a plan at node boundaries (phases.h): operations per rank, their phases as longest
 * paths over the plan's order, the sub-plans and the point-to-point groups.
 *
 * The order is a graph over operations: program order within a threadblock, dependencies, and
 * both directions of every message (its two ends share a phase). An edge's weight is the phase
 * distance it forces (kernel -> NCCL call 1, NCCL call -> kernel 1, NCCL call -> NCCL call 2 unless
 * both are sends, kernel -> kernel 0). Phases exist where no cycle of the graph has weight: a
 * strongly connected component with a weighted edge inside is a message whose receiver waits, before
 * it, for something after its sender; its receive is then taken apart from its step (received
 * into scratch with no predecessor, copied or reduced into place at the step), which removes the
 * cycle, and the graph is built again. Phases are then longest paths over the components, kernel
 * phases even and groups odd, renumbered densely.
 */
#define _GNU_SOURCE
#include "phases.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "params.h"
#include "plan_index.h"
#include "plan_model.h"

/* How a message travels: in a kernel (same node), through NCCL into place, or through NCCL into
 * scratch apart from its receiving step. */
enum { MODE_KERNEL = 0, MODE_P2P = 1, MODE_APART = 2 };
enum { OP_KERNEL = 0, OP_SEND = 1, OP_RECV = 2 };

typedef struct {
  int rank, tb;  /* the plan's threadblock */
  int step;      /* the plan step it comes from (flat index) */
  int kind;      /* OP_* */
  kilnStep st;   /* kernel: the step (type, operands); send: srcbuf/srcoff; recv: dstbuf/dstoff */
  bool apart;    /* a receive with no predecessor (MODE_APART) */
  bool fresh;    /* a receive into scratch of its own (a reduction's, or apart) */
  int dep;       /* the op it waits on, -1 */
  int sendTo;    /* ops that send (kernel steps too): the op receiving the message, -1 */
  int recvFrom;  /* ops that receive: the op that sent it, -1 */
  int chan, seq; /* its message: connection's channel and number */
  int level;
  int msg;            /* ops that send: offset of the message's positions in the pool, -1 */
  int subTb, subStep; /* where it lands in its phase's sub-plan */
} pop;

typedef struct {
  int u, v, w;
} pedge;

typedef struct {
  const kilnPlan* p;
  kilnPlanIndex ix;
  const int* node;
  int k;
  unsigned char* mode; /* [nsteps]: sends' message mode */
  pop* ops;
  int nops, capOps;
  int* first;   /* [nsteps]: first op of each step, -1 */
  int* last;    /* [nsteps]: last op */
  int* carrier; /* [nsteps]: the op that takes the step's dependency */
  int* sendOp;  /* [nsteps]: the op that sends the step's message */
  int* recvOp;  /* [nsteps]: the op that receives it */
  int* tmpNext; /* [nranks]: next free scratch chunk */
  int curStep;  /* the step expand_step is cutting */
  pedge* edges;
  int nedges, capEdges;
} builder;

static bool remote(const builder* b, int r, int peer) { return peer >= 0 && b->node[peer] != b->node[r]; }

/* The message a receiving step takes: its matching send step (flat index). */
static int msg_of_recv(const builder* b, int f) {
  const int g = b->ix.match_tb[f];
  return g < 0 ? -1 : b->ix.stepbase[g] + b->ix.match_step[f];
}

static int emit(builder* b, int rank, int tb, int kind, kilnStepType_t type, kilnBuffer_t sb, int so,
                kilnBuffer_t db, int dof, int cnt, bool apart) {
  if (b->nops == b->capOps) {
    const int cap = b->capOps ? 2 * b->capOps : 256;
    pop* v = realloc(b->ops, (size_t)cap * sizeof *v);
    if (!v) return -1;
    b->ops = v;
    b->capOps = cap;
  }
  pop* o = &b->ops[b->nops];
  memset(o, 0, sizeof *o);
  o->rank = rank;
  o->tb = tb;
  o->step = b->curStep;
  o->kind = kind;
  o->st = (kilnStep){0, type, sb, db, so, dof, cnt, -1, -1, false, -1, -1};
  o->apart = apart;
  o->dep = o->sendTo = o->recvFrom = o->msg = -1;
  o->subTb = o->subStep = -1;
  return b->nops++;
}

#define EMIT(kind, type, sb, so, db, dof, cnt, apart)                                                    \
  do {                                                                                                   \
    last = emit(b, r, t, (kind), (type), (sb), (so), (db), (dof), (cnt), (apart));                       \
    if (last < 0) return kilnSetError(KILN_ERR_NO_MEMORY, "cutting plan %s: out of memory", b->p->name); \
    if (first < 0) first = last;                                                                         \
  } while (0)

/* The ops of step s of threadblock t of rank r (flat index f), as phases.h's cut says. */
static kilnResult_t expand_step(builder* b, int r, int t, int s, int f) {
  const kilnThreadblock* tb = &b->p->gpus[r].tbs[t];
  const kilnStep* st = &tb->steps[s];
  const kilnStepType_t ty = st->type;
  const bool rv = (unsigned)ty < KILN_NUM_STEP_TYPES && kilnStepReceives(ty);
  const bool sd = (unsigned)ty < KILN_NUM_STEP_TYPES && kilnStepSends(ty);
  const int rmsg = rv ? msg_of_recv(b, f) : -1;
  const int rmode = rv ? b->mode[rmsg] : MODE_KERNEL, smode = sd ? b->mode[f] : MODE_KERNEL;
  const bool rK = rmode == MODE_KERNEL, sK = smode == MODE_KERNEL;
  const kilnBuffer_t SB = st->srcbuf, DB = st->dstbuf;
  const int so = st->srcoff, dof = st->dstoff, cnt = st->cnt;
  int first = -1, last = -1, sendAt = -1, recvAt = -1;
  /* A receive into [buf, off): into place (MODE_P2P) or apart into fresh scratch and copied. */
#define RECV_INTO(buf, off)                                                                 \
  do {                                                                                      \
    if (rmode == MODE_APART) {                                                              \
      const int tmp = b->tmpNext[r];                                                        \
      b->tmpNext[r] += cnt;                                                                 \
      EMIT(OP_RECV, KILN_STEP_RECV, KILN_BUF_SCRATCH, 0, KILN_BUF_SCRATCH, tmp, cnt, true); \
      b->ops[last].fresh = true;                                                            \
      recvAt = last;                                                                        \
      EMIT(OP_KERNEL, KILN_STEP_COPY, KILN_BUF_SCRATCH, tmp, (buf), (off), cnt, false);     \
    } else {                                                                                \
      EMIT(OP_RECV, KILN_STEP_RECV, (buf), (off), (buf), (off), cnt, false);                \
      recvAt = last;                                                                        \
    }                                                                                       \
  } while (0)
  /* A receive into fresh scratch (tmp), for the reducing steps. */
#define RECV_TMP(tmp)                                                                                      \
  do {                                                                                                     \
    tmp = b->tmpNext[r];                                                                                   \
    b->tmpNext[r] += cnt;                                                                                  \
    EMIT(OP_RECV, KILN_STEP_RECV, KILN_BUF_SCRATCH, tmp, KILN_BUF_SCRATCH, tmp, cnt, rmode == MODE_APART); \
    b->ops[last].fresh = true;                                                                             \
    recvAt = last;                                                                                         \
  } while (0)
  /* dst <- src (+) tmp: in place where dst is src, else through tmp. */
#define REDUCE_INTO(tmp)                                                             \
  do {                                                                               \
    if (SB == DB && so == dof) {                                                     \
      EMIT(OP_KERNEL, KILN_STEP_REDUCE, KILN_BUF_SCRATCH, tmp, DB, dof, cnt, false); \
    } else {                                                                         \
      EMIT(OP_KERNEL, KILN_STEP_REDUCE, SB, so, KILN_BUF_SCRATCH, tmp, cnt, false);  \
      EMIT(OP_KERNEL, KILN_STEP_COPY, KILN_BUF_SCRATCH, tmp, DB, dof, cnt, false);   \
    }                                                                                \
  } while (0)

  int tmp = -1;
  b->curStep = f;
  if ((unsigned)ty >= KILN_NUM_STEP_TYPES)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "plan %s: rank %d tb %d step %d: step type %d unknown",
                        b->p->name, r, t, s, (int)ty);
  if (kilnStepPeerRole(ty) != KILN_PEER_NONE) {
    /* Memory steps (put, get, gre, sig, wait) reach their peer by load/store: within a node only. */
    if (remote(b, r, st->peer))
      return kilnSetError(
          KILN_ERR_UNSUPPORTED,
          "plan %s: rank %d tb %d step %d (%s) reaches rank %d on another node: memory steps need "
          "load/store, which only ranks of one node have; between nodes a plan sends and receives",
          b->p->name, r, t, s, kilnStepTypeName(ty), st->peer);
    EMIT(OP_KERNEL, ty, SB, so, DB, dof, cnt, false);
    b->ops[last].st.peer = st->peer;
    b->ops[last].st.proto = st->proto;
  } else if (!rv && !sd) {
    EMIT(OP_KERNEL, ty, SB, so, DB, dof, cnt, false);
  } else {
    switch (ty) {
      case KILN_STEP_SEND:
        if (sK)
          EMIT(OP_KERNEL, ty, SB, so, DB, dof, cnt, false);
        else
          EMIT(OP_SEND, KILN_STEP_SEND, SB, so, SB, so, cnt, false);
        sendAt = last;
        break;
      case KILN_STEP_RECV:
        if (rK) {
          EMIT(OP_KERNEL, ty, SB, so, DB, dof, cnt, false);
          recvAt = last;
        } else {
          RECV_INTO(DB, dof);
        }
        break;
      case KILN_STEP_RECV_COPY_SEND:
        if (rK && sK) {
          EMIT(OP_KERNEL, ty, SB, so, DB, dof, cnt, false);
          recvAt = sendAt = last;
          break;
        }
        if (rK) {
          EMIT(OP_KERNEL, KILN_STEP_RECV, DB, dof, DB, dof, cnt, false);
          recvAt = last;
        } else {
          RECV_INTO(DB, dof);
        }
        if (sK)
          EMIT(OP_KERNEL, KILN_STEP_SEND, DB, dof, DB, dof, cnt, false);
        else
          EMIT(OP_SEND, KILN_STEP_SEND, DB, dof, DB, dof, cnt, false);
        sendAt = last;
        break;
      case KILN_STEP_RECV_REDUCE_COPY:
        if (rK) {
          EMIT(OP_KERNEL, ty, SB, so, DB, dof, cnt, false);
          recvAt = last;
          break;
        }
        RECV_TMP(tmp);
        REDUCE_INTO(tmp);
        break;
      case KILN_STEP_RECV_REDUCE_SEND:
        if (rK && sK) {
          EMIT(OP_KERNEL, ty, SB, so, DB, dof, cnt, false);
          recvAt = sendAt = last;
          break;
        }
        if (rK) {
          tmp = b->tmpNext[r];
          b->tmpNext[r] += cnt;
          EMIT(OP_KERNEL, KILN_STEP_RECV_REDUCE_COPY, SB, so, KILN_BUF_SCRATCH, tmp, cnt, false);
          recvAt = last;
        } else {
          RECV_TMP(tmp);
          EMIT(OP_KERNEL, KILN_STEP_REDUCE, SB, so, KILN_BUF_SCRATCH, tmp, cnt, false);
        }
        if (sK)
          EMIT(OP_KERNEL, KILN_STEP_SEND, KILN_BUF_SCRATCH, tmp, KILN_BUF_SCRATCH, tmp, cnt, false);
        else
          EMIT(OP_SEND, KILN_STEP_SEND, KILN_BUF_SCRATCH, tmp, KILN_BUF_SCRATCH, tmp, cnt, false);
        sendAt = last;
        break;
      case KILN_STEP_RECV_REDUCE_COPY_SEND:
        if (rK && sK) {
          EMIT(OP_KERNEL, ty, SB, so, DB, dof, cnt, false);
          recvAt = sendAt = last;
          break;
        }
        if (rK) {
          EMIT(OP_KERNEL, KILN_STEP_RECV_REDUCE_COPY, SB, so, DB, dof, cnt, false);
          recvAt = last;
        } else {
          RECV_TMP(tmp);
          REDUCE_INTO(tmp);
        }
        if (sK)
          EMIT(OP_KERNEL, KILN_STEP_SEND, DB, dof, DB, dof, cnt, false);
        else
          EMIT(OP_SEND, KILN_STEP_SEND, DB, dof, DB, dof, cnt, false);
        sendAt = last;
        break;
      default:
        return kilnSetError(KILN_ERR_INTERNAL, "plan %s: rank %d tb %d step %d: step type %s not cut",
                            b->p->name, r, t, s, kilnStepTypeName(ty));
    }
  }
#undef RECV_INTO
#undef RECV_TMP
#undef REDUCE_INTO
  b->first[f] = first;
  b->last[f] = last;
  b->sendOp[f] = sendAt;
  b->recvOp[f] = recvAt;
  /* The step's dependency goes to its first op that is not received apart. */
  int c = first;
  while (c <= last && b->ops[c].apart) c++;
  b->carrier[f] = c;
  return KILN_SUCCESS;
}
#undef EMIT

static bool add_edge(builder* b, int u, int v, int w) {
  if (b->nedges == b->capEdges) {
    const int cap = b->capEdges ? 2 * b->capEdges : 512;
    pedge* e = realloc(b->edges, (size_t)cap * sizeof *e);
    if (!e) return false;
    b->edges = e;
    b->capEdges = cap;
  }
  b->edges[b->nedges++] = (pedge){u, v, w};
  return true;
}

/* The phase distance an order edge u -> v forces (header comment): NCCL calls share a group
 * unless the later one sends what an earlier receive brought (a receive, then a send); calls of
 * one group that touch the same memory are found after the levels (group_conflicts). */
static int weight(const pop* u, const pop* v) {
  const bool pu = u->kind != OP_KERNEL, pv = v->kind != OP_KERNEL;
  if (!pu && !pv) return 0;
  if (pu != pv) return 1;
  return u->kind == OP_RECV && v->kind == OP_SEND ? 2 : 0;
}

/* Every op of the plan in the current modes, with their order edges (the forward ones first,
 * nfwd of them, then each message's backward edge). */
static kilnResult_t build_ops(builder* b, int* nfwd) {
  const kilnPlan* p = b->p;
  b->nops = 0;
  b->nedges = 0;
  for (int r = 0; r < p->ngpus; r++) {
    b->tmpNext[r] = p->gpus[r].s_chunks;
    for (int t = 0; t < p->gpus[r].ntbs; t++) {
      const int g = b->ix.tbbase[r] + t;
      for (int s = 0; s < p->gpus[r].tbs[t].nsteps; s++) {
        kilnResult_t res = expand_step(b, r, t, s, b->ix.stepbase[g] + s);
        if (res != KILN_SUCCESS) return res;
      }
    }
  }
  /* Program order: each op after the last op of its threadblock that was not received apart, and
   * after the receive (apart) right before it, whose copy or reduction it is. */
  for (int r = 0; r < p->ngpus; r++)
    for (int t = 0; t < p->gpus[r].ntbs; t++) {
      const int g = b->ix.tbbase[r] + t;
      const int ns = p->gpus[r].tbs[t].nsteps;
      if (ns == 0) continue;
      const int lo = b->first[b->ix.stepbase[g]], hi = b->last[b->ix.stepbase[g] + ns - 1];
      int prev = -1;
      for (int v = lo; v <= hi; v++) {
        if (b->ops[v].apart) continue;
        if (prev >= 0 && !add_edge(b, prev, v, weight(&b->ops[prev], &b->ops[v]))) goto nomem;
        if (v > lo && b->ops[v - 1].apart && !add_edge(b, v - 1, v, weight(&b->ops[v - 1], &b->ops[v])))
          goto nomem;
        prev = v;
      }
    }
  /* Dependencies. */
  for (int r = 0; r < p->ngpus; r++)
    for (int t = 0; t < p->gpus[r].ntbs; t++) {
      const int g = b->ix.tbbase[r] + t;
      for (int s = 0; s < p->gpus[r].tbs[t].nsteps; s++) {
        const kilnStep* st = &p->gpus[r].tbs[t].steps[s];
        if (st->depid < 0 || st->depid == t) continue;
        const int f = b->ix.stepbase[g] + s;
        const int target = b->ix.stepbase[b->ix.tbbase[r] + st->depid] + st->deps;
        const int u = b->last[target], v = b->carrier[f];
        b->ops[v].dep = u;
        if (!add_edge(b, u, v, weight(&b->ops[u], &b->ops[v]))) goto nomem;
      }
    }
  /* Messages: the two ends, forward (send -> receive), then each one backward. */
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 1) *nfwd = b->nedges;
    for (int f = 0; f < b->ix.nsteps; f++) {
      if (b->ix.rmatch_tb[f] < 0 || b->sendOp[f] < 0) continue;
      const int rf = b->ix.stepbase[b->ix.rmatch_tb[f]] + b->ix.rmatch_step[f];
      const int u = b->sendOp[f], v = b->recvOp[rf];
      if (pass == 0) {
        b->ops[u].sendTo = v;
        b->ops[v].recvFrom = u;
        b->ops[u].seq = b->ops[v].seq = b->ix.send_ord[f];
        b->ops[u].chan = b->ops[v].chan = p->gpus[b->ops[u].rank].tbs[b->ops[u].tb].chan;
      }
      if (!add_edge(b, pass == 0 ? u : v, pass == 0 ? v : u, 0)) goto nomem;
    }
    /* A signal and its wait (memory steps within a node) share a kernel phase too. */
    for (int f = 0; b->ix.mem && f < b->ix.nsteps; f++) {
      const int g = b->ix.sig_match[f];
      if (g < 0 || kilnStepPeerRole(b->ops[b->first[f]].st.type) != KILN_PEER_SIGNAL) continue;
      if (!add_edge(b, pass == 0 ? b->first[f] : b->first[g], pass == 0 ? b->first[g] : b->first[f], 0))
        goto nomem;
    }
  }
  return KILN_SUCCESS;
nomem:
  return kilnSetError(KILN_ERR_NO_MEMORY, "cutting plan %s: out of memory", p->name);
}

/* Strongly connected components (Tarjan, iterative) of the ops under the edges; comp[v], *ncomp,
 * numbered in reverse topological order (a component's successors come first). */
static kilnResult_t components(const builder* b, int* comp, int* ncomp) {
  const int n = b->nops, m = b->nedges;
  int* start = calloc((size_t)n + 1, sizeof *start);
  int* adj = malloc((size_t)(m > 0 ? m : 1) * sizeof *adj);
  int* index = malloc((size_t)(n > 0 ? n : 1) * sizeof *index);
  int* low = malloc((size_t)(n > 0 ? n : 1) * sizeof *low);
  int* stack = malloc((size_t)(n > 0 ? n : 1) * sizeof *stack);
  int* call = malloc((size_t)(n > 0 ? n : 1) * sizeof *call);
  int* edge = malloc((size_t)(n > 0 ? n : 1) * sizeof *edge);
  bool* on = calloc((size_t)(n > 0 ? n : 1), sizeof *on);
  kilnResult_t res = KILN_SUCCESS;
  if (!start || !adj || !index || !low || !stack || !call || !edge || !on) {
    res = kilnSetError(KILN_ERR_NO_MEMORY, "cutting a plan: out of memory");
    goto out;
  }
  for (int i = 0; i < m; i++) start[b->edges[i].u + 1]++;
  for (int v = 0; v < n; v++) start[v + 1] += start[v];
  for (int v = 0; v < n; v++) edge[v] = start[v];
  for (int i = 0; i < m; i++) adj[edge[b->edges[i].u]++] = b->edges[i].v;
  for (int v = 0; v < n; v++) index[v] = -1;
  int counter = 0, sp = 0, nc = 0;
  for (int root = 0; root < n; root++) {
    if (index[root] >= 0) continue;
    int depth = 0;
    call[depth] = root;
    edge[root] = start[root];
    index[root] = low[root] = counter++;
    stack[sp++] = root;
    on[root] = true;
    while (depth >= 0) {
      const int v = call[depth];
      if (edge[v] < start[v + 1]) {
        const int w = adj[edge[v]++];
        if (index[w] < 0) {
          index[w] = low[w] = counter++;
          stack[sp++] = w;
          on[w] = true;
          edge[w] = start[w];
          call[++depth] = w;
        } else if (on[w] && index[w] < low[v]) {
          low[v] = index[w];
        }
        continue;
      }
      if (low[v] == index[v]) {
        int w;
        do {
          w = stack[--sp];
          on[w] = false;
          comp[w] = nc;
        } while (w != v);
        nc++;
      }
      depth--;
      if (depth >= 0 && low[v] < low[call[depth]]) low[call[depth]] = low[v];
    }
  }
  *ncomp = nc;
out:
  free(start);
  free(adj);
  free(index);
  free(low);
  free(stack);
  free(call);
  free(edge);
  free(on);
  return res;
}

/* Phase levels of the ops: longest paths over the components (no weighted edge inside any) in
 * topological order, the highest component number first; kernel levels even, groups odd. */
static kilnResult_t assign_levels(builder* b, const int* comp, int ncomp) {
  const int n = b->nops, m = b->nedges;
  int* start = calloc((size_t)ncomp + 1, sizeof *start);
  int* members = malloc((size_t)(n > 0 ? n : 1) * sizeof *members);
  int* fill = malloc((size_t)(ncomp > n ? ncomp : n) * sizeof *fill + sizeof *fill);
  int* estart = calloc((size_t)n + 1, sizeof *estart);
  int* eadj = malloc((size_t)(m > 0 ? m : 1) * sizeof *eadj);
  int* lv = malloc((size_t)(ncomp > 0 ? ncomp : 1) * sizeof *lv);
  kilnResult_t res = KILN_SUCCESS;
  if (!start || !members || !fill || !estart || !eadj || !lv) {
    res = kilnSetError(KILN_ERR_NO_MEMORY, "cutting plan %s: out of memory", b->p->name);
    goto out;
  }
  for (int v = 0; v < n; v++) start[comp[v] + 1]++;
  for (int c = 0; c < ncomp; c++) start[c + 1] += start[c];
  memcpy(fill, start, (size_t)ncomp * sizeof *fill);
  for (int v = 0; v < n; v++) members[fill[comp[v]]++] = v;
  for (int i = 0; i < m; i++) estart[b->edges[i].u + 1]++;
  for (int v = 0; v < n; v++) estart[v + 1] += estart[v];
  memcpy(fill, estart, (size_t)n * sizeof *fill);
  for (int i = 0; i < m; i++) eadj[fill[b->edges[i].u]++] = i;
  for (int c = 0; c < ncomp; c++) lv[c] = 0;
  for (int c = ncomp - 1; c >= 0; c--) {
    const bool p2p = b->ops[members[start[c]]].kind != OP_KERNEL;
    if ((lv[c] & 1) != (p2p ? 1 : 0)) lv[c]++;
    for (int j = start[c]; j < start[c + 1]; j++) {
      const int u = members[j];
      b->ops[u].level = lv[c];
      for (int e = estart[u]; e < estart[u + 1]; e++) {
        const pedge ed = b->edges[eadj[e]];
        const int cv = comp[ed.v];
        if (cv != c && lv[cv] < lv[c] + ed.w) lv[cv] = lv[c] + ed.w;
      }
    }
  }
out:
  free(start);
  free(members);
  free(fill);
  free(estart);
  free(eadj);
  free(lv);
  return res;
}

/* Finds the weighted cycles (components with a weighted edge inside) and takes apart the messages
 * whose receive such a component enters through program order or a dependency (a cycle through a
 * receive that comes in by its own send is only that message's two ends); *moved of them. With
 * none, assigns the levels. */
static kilnResult_t break_cycles(builder* b, int nfwd, int* moved) {
  *moved = 0;
  const int n = b->nops;
  int ncomp = 0;
  int* comp = malloc((size_t)(n > 0 ? n : 1) * sizeof *comp);
  bool* positive = NULL;
  bool* entered = calloc((size_t)(n > 0 ? n : 1), sizeof *entered);
  kilnResult_t res = comp && entered
                         ? components(b, comp, &ncomp)
                         : kilnSetError(KILN_ERR_NO_MEMORY, "cutting plan %s: out of memory", b->p->name);
  if (res != KILN_SUCCESS) goto out;
  positive = calloc((size_t)(ncomp > 0 ? ncomp : 1), sizeof *positive);
  if (!positive) {
    res = kilnSetError(KILN_ERR_NO_MEMORY, "cutting plan %s: out of memory", b->p->name);
    goto out;
  }
  bool any = false;
  for (int i = 0; i < b->nedges; i++) {
    const pedge e = b->edges[i];
    if (e.w > 0 && comp[e.u] == comp[e.v]) any = positive[comp[e.u]] = true;
  }
  if (!any) {
    res = assign_levels(b, comp, ncomp);
    goto out;
  }
  for (int i = 0; i < nfwd; i++) {
    const pedge e = b->edges[i];
    if (b->ops[e.u].rank == b->ops[e.v].rank && comp[e.u] == comp[e.v] && positive[comp[e.v]])
      entered[e.v] = true;
  }
  /* Cheapest first: messages between nodes received into scratch anyway (a reduction's), then
   * the other messages between nodes (a copy more), then messages within a node (through NCCL
   * instead of a kernel): all candidates of the first kind that has any. */
  for (int tier = 0; tier < 3 && *moved == 0; tier++)
    for (int i = nfwd; i < b->nedges; i++) {
      const pedge e = b->edges[i]; /* a message's receive -> its send (or a wait -> its signal) */
      if (!positive[comp[e.u]] || comp[e.u] != comp[e.v] || !entered[e.u] || b->ops[e.v].sendTo < 0) continue;
      const int f = b->ops[e.v].step; /* the message's send step */
      const pop* rv = &b->ops[e.u];
      const int t = b->mode[f] == MODE_KERNEL ? 2 : rv->fresh ? 0 : 1;
      if (t == tier && b->mode[f] != MODE_APART) {
        b->mode[f] = MODE_APART;
        (*moved)++;
      }
    }
  if (*moved == 0)
    res = kilnSetError(KILN_ERR_VERIFY, "plan %s: its steps' dependencies form a cycle (it deadlocks)",
                       b->p->name);
out:
  free(comp);
  free(positive);
  free(entered);
  return res;
}

/* The chunk range [off, off + cnt) of buf on rank r as memory: in-place calls alias the input
 * and output (allreduce: output j is input j; allgather: input j is output r*k + j;
 * reducescatter: output j is input r*k + j), so a plan that serves them is judged in that view. */
static void mem_range(const builder* b, int r, kilnBuffer_t buf, int off, int* mbuf, int* moff) {
  *mbuf = (int)buf;
  *moff = off;
  if (!kilnPlanServes(b->p, true)) return;
  const kilnColl_t c = b->p->coll;
  if (c == KILN_COLL_ALLREDUCE && buf == KILN_BUF_OUTPUT) *mbuf = KILN_BUF_INPUT;
  if (c == KILN_COLL_ALLGATHER && buf == KILN_BUF_INPUT) {
    *mbuf = KILN_BUF_OUTPUT;
    *moff = r * b->k + off;
  }
  if (c == KILN_COLL_REDUCESCATTER && buf == KILN_BUF_OUTPUT) {
    *mbuf = KILN_BUF_INPUT;
    *moff = r * b->k + off;
  }
}

/* The memory an NCCL call of op v reads (send) or writes (receive). */
static void op_range(const builder* b, int v, int* mbuf, int* moff) {
  const pop* o = &b->ops[v];
  if (o->kind == OP_SEND)
    mem_range(b, o->rank, o->st.srcbuf, o->st.srcoff, mbuf, moff);
  else
    mem_range(b, o->rank, o->st.dstbuf, o->st.dstoff, mbuf, moff);
}

static int cmp_by_rank_level(const void* x, const void* y, void* ctx) {
  const builder* b = ctx;
  const pop* u = &b->ops[*(const int*)x];
  const pop* v = &b->ops[*(const int*)y];
  if (u->rank != v->rank) return u->rank < v->rank ? -1 : 1;
  return u->level < v->level ? -1 : u->level > v->level;
}

/* Two NCCL calls of one rank's group on the same memory, one of them a receive: the group runs
 * them at once. The receive is then taken apart (into fresh scratch, copied at its step);
 * *moved of them. */
static kilnResult_t group_conflicts(builder* b, int* moved) {
  *moved = 0;
  int np = 0;
  for (int v = 0; v < b->nops; v++) np += b->ops[v].kind != OP_KERNEL;
  int* v = malloc((size_t)(np > 0 ? np : 1) * sizeof *v);
  if (!v) return kilnSetError(KILN_ERR_NO_MEMORY, "cutting plan %s: out of memory", b->p->name);
  np = 0;
  for (int i = 0; i < b->nops; i++)
    if (b->ops[i].kind != OP_KERNEL) v[np++] = i;
  qsort_r(v, (size_t)np, sizeof *v, cmp_by_rank_level, b);
  for (int lo = 0; lo < np;) {
    int hi = lo;
    while (hi < np && b->ops[v[hi]].rank == b->ops[v[lo]].rank && b->ops[v[hi]].level == b->ops[v[lo]].level)
      hi++;
    for (int x = lo; x < hi; x++)
      for (int y = lo; y < hi; y++) {
        const pop* ox = &b->ops[v[x]];
        const pop* oy = &b->ops[v[y]];
        if (x == y || ox->kind != OP_RECV || ox->apart || (oy->kind == OP_RECV && y < x)) continue;
        int bx, fx, by, fy;
        op_range(b, v[x], &bx, &fx);
        op_range(b, v[y], &by, &fy);
        if (bx != by || fx + ox->st.cnt <= fy || fy + oy->st.cnt <= fx) continue;
        const int f = b->ops[ox->recvFrom].step;
        if (b->mode[f] != MODE_APART) {
          b->mode[f] = MODE_APART;
          (*moved)++;
        }
      }
    lo = hi;
  }
  free(v);
  return KILN_SUCCESS;
}

/* Positions of the chunks a message carries, and of scratch chunks as the plan fills them, over a
 * topological order of the forward edges: user buffers' chunks have their own (off % k), scratch
 * takes what is written into it, a reduction what its operands agree on (-1 unknown, -2 mixed). */
static int combine(int a, int c) { return a == c || c == -1 ? a : a == -1 ? c : -2; }

static kilnResult_t positions(builder* b, int nfwd, int** poolOut, int* npool) {
  const kilnPlan* p = b->p;
  const int n = b->nops, R = p->ngpus, k = b->k;
  kilnResult_t res = KILN_SUCCESS;
  int* indeg = calloc((size_t)n + 1, sizeof *indeg);
  int* start = calloc((size_t)n + 1, sizeof *start);
  int* adj = malloc((size_t)(nfwd > 0 ? nfwd : 1) * sizeof *adj);
  int* queue = malloc((size_t)(n > 0 ? n : 1) * sizeof *queue);
  int* fill = malloc((size_t)(n > 0 ? n : 1) * sizeof *fill);
  int** scr = calloc((size_t)R, sizeof *scr);
  int total = 0;
  for (int v = 0; v < n; v++)
    if (b->ops[v].sendTo >= 0) total += b->ops[v].st.cnt;
  int* pool = malloc((size_t)(total > 0 ? total : 1) * sizeof *pool);
  if (!indeg || !start || !adj || !queue || !fill || !scr || !pool) goto nomem;
  for (int r = 0; r < R; r++) {
    const int ns = b->tmpNext[r];
    scr[r] = malloc((size_t)(ns > 0 ? ns : 1) * sizeof **scr);
    if (!scr[r]) goto nomem;
    for (int i = 0; i < ns; i++) scr[r][i] = -1;
  }
  for (int i = 0; i < nfwd; i++) {
    start[b->edges[i].u + 1]++;
    indeg[b->edges[i].v]++;
  }
  for (int v = 0; v < n; v++) start[v + 1] += start[v];
  for (int v = 0; v < n; v++) fill[v] = start[v];
  for (int i = 0; i < nfwd; i++) adj[fill[b->edges[i].u]++] = b->edges[i].v;
  int head = 0, tail = 0, used = 0;
  for (int v = 0; v < n; v++)
    if (indeg[v] == 0) queue[tail++] = v;
#define POS(r, buf, off) ((buf) == KILN_BUF_SCRATCH ? scr[r][off] : (off) % k)
  while (head < tail) {
    const int v = queue[head++];
    pop* o = &b->ops[v];
    const kilnStepType_t ty = o->st.type;
    const bool sends = o->kind == OP_SEND ||
                       (o->kind == OP_KERNEL && (unsigned)ty < KILN_NUM_STEP_TYPES && kilnStepSends(ty));
    const bool recvs = o->kind == OP_RECV ||
                       (o->kind == OP_KERNEL && (unsigned)ty < KILN_NUM_STEP_TYPES && kilnStepReceives(ty));
    const int* in = recvs && o->recvFrom >= 0 ? pool + b->ops[o->recvFrom].msg : NULL;
    if (sends && o->sendTo >= 0) {
      o->msg = used;
      used += o->st.cnt;
    }
    for (int c = 0; c < o->st.cnt; c++) {
      const kilnBuffer_t sb = o->st.srcbuf, db = o->st.dstbuf;
      const int so = o->st.srcoff + c, dof = o->st.dstoff + c;
      const int m = in ? in[c] : -1;
      int out = -1, w = -3; /* w: what dst gets (-3: not written) */
      if (o->kind == OP_SEND)
        out = POS(o->rank, sb, so);
      else if (o->kind == OP_RECV)
        w = m;
      else
        switch (ty) {
          case KILN_STEP_SEND: out = POS(o->rank, sb, so); break;
          case KILN_STEP_RECV: w = m; break;
          case KILN_STEP_RECV_COPY_SEND: w = out = m; break;
          case KILN_STEP_RECV_REDUCE_SEND: out = combine(POS(o->rank, sb, so), m); break;
          case KILN_STEP_RECV_REDUCE_COPY: w = combine(POS(o->rank, sb, so), m); break;
          case KILN_STEP_RECV_REDUCE_COPY_SEND: w = out = combine(POS(o->rank, sb, so), m); break;
          case KILN_STEP_COPY: w = POS(o->rank, sb, so); break;
          case KILN_STEP_REDUCE: w = combine(POS(o->rank, db, dof), POS(o->rank, sb, so)); break;
          case KILN_STEP_GET: w = POS(o->st.peer, sb, so); break;
          case KILN_STEP_GET_REDUCE: w = combine(POS(o->rank, db, dof), POS(o->st.peer, sb, so)); break;
          default: break;
        }
      if (w != -3 && db == KILN_BUF_SCRATCH) scr[o->rank][dof] = w;
      if (o->kind == OP_KERNEL && ty == KILN_STEP_PUT && db == KILN_BUF_SCRATCH) /* the peer's chunk */
        scr[o->st.peer][dof] = POS(o->rank, sb, so);
      if (o->msg >= 0) pool[o->msg + c] = out;
    }
    for (int e = start[v]; e < start[v + 1]; e++)
      if (--indeg[adj[e]] == 0) queue[tail++] = adj[e];
  }
#undef POS
  if (tail != n) {
    res = kilnSetError(KILN_ERR_VERIFY, "plan %s: its steps' dependencies form a cycle (it deadlocks)",
                       p->name);
    goto out;
  }
  /* Messages through NCCL: a chunk of unknown position (scratch never written) received into a
   * user buffer takes that chunk's; the two ends must agree with the user buffers they touch. */
  for (int v = 0; v < n; v++) {
    const pop* o = &b->ops[v];
    if (o->kind != OP_RECV) continue;
    const pop* s = &b->ops[o->recvFrom];
    int* m = pool + s->msg;
    for (int c = 0; c < o->st.cnt; c++) {
      if (o->st.dstbuf != KILN_BUF_SCRATCH) {
        const int own = (o->st.dstoff + c) % k;
        if (m[c] == -1) m[c] = own;
        if (m[c] != own) m[c] = -2;
      }
      if (m[c] == -2) {
        res = kilnSetError(
            KILN_ERR_UNSUPPORTED,
            "plan %s: rank %d tb %d sends rank %d tb %d a chunk that mixes positions of a block (or "
            "lands at another position): between nodes each chunk is sized by its position, so the "
            "plan cannot be cut",
            p->name, s->rank, s->tb, o->rank, o->tb);
        goto out;
      }
    }
  }
  *poolOut = pool;
  *npool = used;
  pool = NULL;
  goto out;
nomem:
  res = kilnSetError(KILN_ERR_NO_MEMORY, "cutting plan %s: out of memory", p->name);
out:
  for (int r = 0; scr && r < R; r++) free(scr[r]);
  free(scr);
  free(indeg);
  free(start);
  free(adj);
  free(queue);
  free(fill);
  free(pool);
  return res;
}

/* Chunks per block of a user buffer (plan.h's chunk size), or 0 when the buffers do not fit the
 * collective. */
static int block_chunks(const kilnPlan* p) {
  const int n = p->ngpus, i = p->gpus[0].i_chunks, o = p->gpus[0].o_chunks;
  switch (p->coll) {
    case KILN_COLL_ALLREDUCE: return i > 0 && (o == 0 || o == i) ? i : 0;
    case KILN_COLL_ALLGATHER: return o > 0 && o % n == 0 && (i == 0 || i == o / n) ? o / n : 0;
    case KILN_COLL_REDUCESCATTER: return i > 0 && i % n == 0 && (o == 0 || o == i / n) ? i / n : 0;
    case KILN_COLL_ALLTOALL: return i > 0 && i % n == 0 && o == i ? i / n : 0;
    default: return 0;
  }
}

void kilnPhasesFree(kilnPhases* ph) {
  if (!ph) return;
  for (int i = 0; ph->phases && i < ph->nphases; i++) {
    kilnPhase* q = &ph->phases[i];
    kilnPlanFree(q->plan);
    for (int r = 0; q->ops && r < ph->nranks; r++) free(q->ops[r]);
    free(q->ops);
    free(q->nops);
  }
  free(ph->phases);
  kilnPlanFree(ph->split);
  free(ph->node);
  free(ph->scratch);
  free(ph->pool);
  free(ph);
}

/* A plan with p's header and buffers, no threadblocks; scratch per rank as given. */
static kilnResult_t empty_like(const kilnPlan* p, const char* suffix, const int* scratch, kilnPlan** out) {
  char name[KILN_NAME_MAX];
  snprintf(name, sizeof name, "%.*s%s", (int)(sizeof name - strlen(suffix) - 1), p->name, suffix);
  kilnResult_t res = kilnPlanCreate(name, p->coll, p->ngpus, out);
  if (res != KILN_SUCCESS) return res;
  kilnPlan* q = *out;
  kilnGpu* gpus = q->gpus;
  const int ng = q->ngpus;
  char keep[KILN_NAME_MAX];
  memcpy(keep, q->name, sizeof keep);
  *q = *p;
  memcpy(q->name, keep, sizeof keep);
  q->gpus = gpus;
  q->ngpus = ng;
  for (int r = 0; r < ng; r++) {
    q->gpus[r].id = r;
    q->gpus[r].i_chunks = p->gpus[r].i_chunks;
    q->gpus[r].o_chunks = p->gpus[r].o_chunks;
    q->gpus[r].s_chunks = scratch[r];
  }
  return KILN_SUCCESS;
}

static int cmp_ops(const void* a, const void* b) {
  const kilnP2pOp* x = a;
  const kilnP2pOp* y = b;
  if (x->peer != y->peer) return x->peer < y->peer ? -1 : 1;
  if (x->send != y->send) return x->send ? -1 : 1;
  if (x->chan != y->chan) return x->chan < y->chan ? -1 : 1;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static bool op_sends(const pop* o) {
  return o->kind == OP_SEND ||
         (o->kind == OP_KERNEL && (unsigned)o->st.type < KILN_NUM_STEP_TYPES && kilnStepSends(o->st.type));
}
static bool op_recvs(const pop* o) {
  return o->kind == OP_RECV ||
         (o->kind == OP_KERNEL && (unsigned)o->st.type < KILN_NUM_STEP_TYPES && kilnStepReceives(o->st.type));
}

/* The sub-plan of kernel phase `level` (the ops of that level), and the split plan's steps. */
static kilnResult_t build_sub_plan(builder* b, kilnPhases* ph, int level, int idx, kilnPlan** out) {
  char suffix[32];
  snprintf(suffix, sizeof suffix, "#phase%d", idx);
  kilnResult_t res = empty_like(b->p, suffix, ph->scratch, out);
  if (res != KILN_SUCCESS) return res;
  kilnPlan* q = *out;
  for (int r = 0; r < b->p->ngpus; r++)
    for (int t = 0; t < b->p->gpus[r].ntbs; t++) {
      const kilnThreadblock* otb = &b->p->gpus[r].tbs[t];
      const int g = b->ix.tbbase[r] + t;
      if (otb->nsteps == 0) continue;
      const int lo = b->first[b->ix.stepbase[g]], hi = b->last[b->ix.stepbase[g] + otb->nsteps - 1];
      bool any = false, sends = false, recvs = false;
      for (int v = lo; v <= hi; v++)
        if (b->ops[v].kind == OP_KERNEL && b->ops[v].level == level) {
          any = true;
          sends |= op_sends(&b->ops[v]);
          recvs |= op_recvs(&b->ops[v]);
        }
      if (!any) continue;
      const int sub = q->gpus[r].ntbs;
      kilnThreadblock* tb =
          kilnPlanAddThreadblock(q, r, sends ? otb->send : -1, recvs ? otb->recv : -1, otb->chan);
      if (!tb) return kilnSetError(KILN_ERR_NO_MEMORY, "cutting plan %s: out of memory", b->p->name);
      for (int v = lo; v <= hi; v++) {
        pop* o = &b->ops[v];
        if (o->kind != OP_KERNEL || o->level != level) continue;
        tb = &q->gpus[r].tbs[sub];
        kilnStep* ns = kilnPlanAddStep(tb, o->st.type, o->st.srcbuf, o->st.srcoff, o->st.dstbuf, o->st.dstoff,
                                       o->st.cnt);
        if (!ns) return kilnSetError(KILN_ERR_NO_MEMORY, "cutting plan %s: out of memory", b->p->name);
        ns->peer = o->st.peer;
        ns->proto = o->st.proto;
        o->subTb = sub;
        o->subStep = tb->nsteps - 1;
      }
    }
  /* Dependencies on ops of the same phase (earlier phases are done when it starts). */
  for (int v = 0; v < b->nops; v++) {
    const pop* o = &b->ops[v];
    if (o->kind != OP_KERNEL || o->level != level || o->dep < 0) continue;
    const pop* u = &b->ops[o->dep];
    if (u->level != level || u->tb == o->tb) continue;
    kilnStep* st = &q->gpus[o->rank].tbs[o->subTb].steps[o->subStep];
    st->depid = u->subTb;
    st->deps = u->subStep;
  }
  kilnPlanMarkHasdep(q);
  return KILN_SUCCESS;
}

/* The split plan: every op as a step of its plan threadblock (sends and receives through NCCL as
 * s and r), in program order, dependencies carried over. */
static kilnResult_t build_split(builder* b, kilnPhases* ph) {
  kilnResult_t res = empty_like(b->p, "#split", ph->scratch, &ph->split);
  if (res != KILN_SUCCESS) return res;
  kilnPlan* q = ph->split;
  int* pos = malloc((size_t)(b->nops > 0 ? b->nops : 1) * sizeof *pos);
  if (!pos) return kilnSetError(KILN_ERR_NO_MEMORY, "cutting plan %s: out of memory", b->p->name);
  for (int r = 0; r < b->p->ngpus && res == KILN_SUCCESS; r++)
    for (int t = 0; t < b->p->gpus[r].ntbs && res == KILN_SUCCESS; t++) {
      const kilnThreadblock* otb = &b->p->gpus[r].tbs[t];
      const int g = b->ix.tbbase[r] + t;
      kilnThreadblock* tb = kilnPlanAddThreadblock(q, r, otb->send, otb->recv, otb->chan);
      if (!tb) res = kilnSetError(KILN_ERR_NO_MEMORY, "cutting plan %s: out of memory", b->p->name);
      if (!tb || otb->nsteps == 0) continue;
      const int lo = b->first[b->ix.stepbase[g]], hi = b->last[b->ix.stepbase[g] + otb->nsteps - 1];
      for (int v = lo; v <= hi && res == KILN_SUCCESS; v++) {
        const pop* o = &b->ops[v];
        tb = &q->gpus[r].tbs[t];
        kilnStep* ns = kilnPlanAddStep(tb, o->st.type, o->st.srcbuf, o->st.srcoff, o->st.dstbuf, o->st.dstoff,
                                       o->st.cnt);
        if (!ns) {
          res = kilnSetError(KILN_ERR_NO_MEMORY, "cutting plan %s: out of memory", b->p->name);
          break;
        }
        ns->peer = o->st.peer;
        ns->proto = o->st.proto;
        pos[v] = tb->nsteps - 1;
      }
    }
  for (int v = 0; v < b->nops && res == KILN_SUCCESS; v++) {
    const pop* o = &b->ops[v];
    if (o->dep < 0) continue;
    kilnStep* st = &q->gpus[o->rank].tbs[o->tb].steps[pos[v]];
    st->depid = b->ops[o->dep].tb;
    st->deps = pos[o->dep];
  }
  free(pos);
  if (res == KILN_SUCCESS) kilnPlanMarkHasdep(q);
  return res;
}

static kilnResult_t build_p2p(builder* b, kilnPhases* ph, kilnPhase* q, int level, const int* pool) {
  const int R = ph->nranks;
  q->nops = calloc((size_t)R, sizeof *q->nops);
  q->ops = calloc((size_t)R, sizeof *q->ops);
  if (!q->nops || !q->ops) return kilnSetError(KILN_ERR_NO_MEMORY, "cutting a plan: out of memory");
  for (int v = 0; v < b->nops; v++)
    if (b->ops[v].kind != OP_KERNEL && b->ops[v].level == level) q->nops[b->ops[v].rank]++;
  for (int r = 0; r < R; r++) {
    q->ops[r] = calloc((size_t)(q->nops[r] > 0 ? q->nops[r] : 1), sizeof **q->ops);
    if (!q->ops[r]) return kilnSetError(KILN_ERR_NO_MEMORY, "cutting a plan: out of memory");
    q->nops[r] = 0;
  }
  for (int v = 0; v < b->nops; v++) {
    const pop* o = &b->ops[v];
    if (o->kind == OP_KERNEL || o->level != level) continue;
    const bool send = o->kind == OP_SEND;
    const pop* s = send ? o : &b->ops[o->recvFrom];
    kilnP2pOp* x = &q->ops[o->rank][q->nops[o->rank]++];
    x->send = send;
    x->peer = b->ops[send ? o->sendTo : o->recvFrom].rank;
    x->buf = send ? o->st.srcbuf : o->st.dstbuf;
    x->off = send ? o->st.srcoff : o->st.dstoff;
    x->cnt = o->st.cnt;
    x->chan = o->chan;
    x->seq = o->seq;
    x->cls = ph->pool + s->msg;
    (void)pool;
  }
  for (int r = 0; r < R; r++) qsort(q->ops[r], (size_t)q->nops[r], sizeof **q->ops, cmp_ops);
  return KILN_SUCCESS;
}

static int cmp_int(const void* a, const void* b) {
  const int x = *(const int*)a, y = *(const int*)b;
  return x < y ? -1 : x > y;
}

kilnResult_t kilnPhasesBuild(const kilnPlan* p, int nnodes, const int* node, kilnPhases** out) {
  if (!p || !out) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnPhasesBuild: NULL argument");
  *out = NULL;
  if (p->ngpus < 1 || !p->gpus)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "plan %s has no ranks", p->name);
  if (nnodes < 1 || nnodes > p->ngpus || (!node && p->ngpus % nnodes != 0))
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "plan %s: %d ranks do not split into %d nodes", p->name,
                        p->ngpus, nnodes);
  if (kilnPlanHasCopies(p))
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "plan %s: lower its copies first (kilnPlanLowerCopies)",
                        p->name);
  const int k = block_chunks(p);
  if (k < 1)
    return kilnSetError(KILN_ERR_UNSUPPORTED, "plan %s: i_chunks=%d o_chunks=%d do not fit %s on %d ranks",
                        p->name, p->gpus[0].i_chunks, p->gpus[0].o_chunks, kilnCollName(p->coll), p->ngpus);
  for (int r = 1; r < p->ngpus; r++)
    if (p->gpus[r].i_chunks != p->gpus[0].i_chunks || p->gpus[r].o_chunks != p->gpus[0].o_chunks)
      return kilnSetError(KILN_ERR_UNSUPPORTED, "plan %s: gpu %d has other chunk counts than gpu 0", p->name,
                          r);
  const int R = p->ngpus;
  builder b;
  memset(&b, 0, sizeof b);
  b.p = p;
  b.k = k;
  kilnResult_t res = kilnPlanIndexBuild(p, &b.ix);
  if (res != KILN_SUCCESS) return res;
  kilnPhases* ph = calloc(1, sizeof *ph);
  int* nodeMap = malloc((size_t)R * sizeof *nodeMap);
  const int ns = b.ix.nsteps > 0 ? b.ix.nsteps : 1;
  b.mode = calloc((size_t)ns, 1);
  b.first = malloc((size_t)ns * sizeof(int));
  b.last = malloc((size_t)ns * sizeof(int));
  b.carrier = malloc((size_t)ns * sizeof(int));
  b.sendOp = malloc((size_t)ns * sizeof(int));
  b.recvOp = malloc((size_t)ns * sizeof(int));
  b.tmpNext = calloc((size_t)R, sizeof(int));
  int* levels = NULL;
  if (!ph || !nodeMap || !b.mode || !b.first || !b.last || !b.carrier || !b.sendOp || !b.recvOp ||
      !b.tmpNext) {
    res = kilnSetError(KILN_ERR_NO_MEMORY, "cutting plan %s: out of memory", p->name);
    goto out;
  }
  for (int r = 0; r < R; r++) {
    nodeMap[r] = node ? node[r] : r / (R / nnodes);
    if (nodeMap[r] < 0 || nodeMap[r] >= nnodes) {
      res = kilnSetError(KILN_ERR_INVALID_ARGUMENT, "plan %s: rank %d on node %d of %d", p->name, r,
                         nodeMap[r], nnodes);
      goto out;
    }
  }
  ph->node = nodeMap;
  nodeMap = NULL;
  b.node = ph->node;
  ph->nranks = R;
  ph->nnodes = nnodes;
  ph->coll = p->coll;
  ph->k = k;
  for (int g = 0; g < b.ix.ntbs; g++)
    for (int f = b.ix.stepbase[g]; f < b.ix.stepbase[g + 1]; f++) {
      const int h = b.ix.rmatch_tb[f]; /* a send's receiving threadblock */
      b.mode[f] = h >= 0 && ph->node[b.ix.tb_rank[g]] != ph->node[b.ix.tb_rank[h]] ? MODE_P2P : MODE_KERNEL;
    }
  /* Cut, take apart the messages of weighted cycles and of groups that touch their own memory,
   * until there are none. */
  int nfwd = 0;
  for (;;) {
    if ((res = build_ops(&b, &nfwd)) != KILN_SUCCESS) goto out;
    int moved = 0;
    if ((res = break_cycles(&b, nfwd, &moved)) != KILN_SUCCESS) goto out;
    if (moved > 0) continue;
    if ((res = group_conflicts(&b, &moved)) != KILN_SUCCESS) goto out;
    if (moved == 0) break;
  }
  int npool = 0;
  if ((res = positions(&b, nfwd, &ph->pool, &npool)) != KILN_SUCCESS) goto out;
  ph->scratch = malloc((size_t)R * sizeof *ph->scratch);
  if (!ph->scratch) {
    res = kilnSetError(KILN_ERR_NO_MEMORY, "cutting plan %s: out of memory", p->name);
    goto out;
  }
  for (int r = 0; r < R; r++) ph->scratch[r] = b.tmpNext[r];
  /* Phases: the levels in use, renumbered densely. */
  levels = malloc((size_t)(b.nops > 0 ? b.nops : 1) * sizeof *levels);
  if (!levels) {
    res = kilnSetError(KILN_ERR_NO_MEMORY, "cutting plan %s: out of memory", p->name);
    goto out;
  }
  for (int v = 0; v < b.nops; v++) levels[v] = b.ops[v].level;
  qsort(levels, (size_t)b.nops, sizeof *levels, cmp_int);
  int nl = 0;
  for (int v = 0; v < b.nops; v++)
    if (nl == 0 || levels[nl - 1] != levels[v]) levels[nl++] = levels[v];
  ph->phases = calloc((size_t)(nl > 0 ? nl : 1), sizeof *ph->phases);
  if (!ph->phases) {
    res = kilnSetError(KILN_ERR_NO_MEMORY, "cutting plan %s: out of memory", p->name);
    goto out;
  }
  ph->nphases = nl;
  for (int i = 0; i < nl && res == KILN_SUCCESS; i++) {
    kilnPhase* q = &ph->phases[i];
    q->p2p = (levels[i] & 1) != 0;
    res = q->p2p ? build_p2p(&b, ph, q, levels[i], ph->pool) : build_sub_plan(&b, ph, levels[i], i, &q->plan);
  }
  if (res != KILN_SUCCESS) goto out;
  if ((res = build_split(&b, ph)) != KILN_SUCCESS) goto out;
  for (int v = 0; v < b.nops; v++)
    if (b.ops[v].kind == OP_SEND) {
      ph->nmessages++;
      if (b.ops[b.ops[v].sendTo].apart) ph->napart++;
    }
  *out = ph;
  ph = NULL;
out:
  kilnPlanIndexFree(&b.ix);
  kilnPhasesFree(ph);
  free(nodeMap);
  free(b.mode);
  free(b.first);
  free(b.last);
  free(b.carrier);
  free(b.sendOp);
  free(b.recvOp);
  free(b.tmpNext);
  free(b.ops);
  free(b.edges);
  free(levels);
  return res;
}

bool kilnPhasesRankHas(const kilnPhases* ph, int i, int rank) {
  if (!ph || i < 0 || i >= ph->nphases || rank < 0 || rank >= ph->nranks) return false;
  const kilnPhase* q = &ph->phases[i];
  return q->p2p ? q->nops[rank] > 0 : q->plan->gpus[rank].ntbs > 0;
}

/* Elements of position c of a block for a call of count elements: chunk c of L. */
static uint64_t pos_elems(uint64_t count, uint64_t L, int c) {
  const uint64_t lo = (uint64_t)c * L;
  return lo >= count ? 0 : (count - lo < L ? count - lo : L);
}

void kilnPhasesChunkSpan(const kilnPhases* ph, uint64_t count, kilnBuffer_t buf, int chunk, int cls,
                         uint64_t* off, uint64_t* n) {
  const uint64_t k = (uint64_t)ph->k, L = (count + k - 1) / k;
  if (buf == KILN_BUF_SCRATCH) {
    *off = (uint64_t)chunk * L;
    *n = cls >= 0 ? pos_elems(count, L, cls) : L;
    return;
  }
  const uint64_t blk = (uint64_t)chunk / k, c = (uint64_t)chunk % k;
  *off = blk * count + c * L;
  *n = pos_elems(count, L, (int)c);
}

int kilnPhasesP2pCalls(const kilnPhases* ph, int i, int rank, uint64_t count, kilnP2pCallFn fn, void* ctx) {
  if (!ph || i < 0 || i >= ph->nphases || !ph->phases[i].p2p || rank < 0 || rank >= ph->nranks) return -1;
  const kilnPhase* q = &ph->phases[i];
  const bool whole = count % (uint64_t)ph->k == 0;
  for (int j = 0; j < q->nops[rank]; j++) {
    const kilnP2pOp* o = &q->ops[rank][j];
    uint64_t off = 0, n = 0;
    if (whole) {
      kilnPhasesChunkSpan(ph, count, o->buf, o->off, o->cls[0], &off, &n);
      n *= (uint64_t)o->cnt;
      if (n == 0) continue;
      const int e = fn(ctx, o->send, o->peer, o->buf, off, n);
      if (e != 0) return e;
      continue;
    }
    for (int c = 0; c < o->cnt; c++) {
      kilnPhasesChunkSpan(ph, count, o->buf, o->off + c, o->cls[c], &off, &n);
      if (n == 0) continue;
      const int e = fn(ctx, o->send, o->peer, o->buf, off, n);
      if (e != 0) return e;
    }
  }
  return 0;
}

int kilnEmulateNodesSetting(void) {
  const char* raw = kilnParamRaw(KILN_PARAM_EmulateNodes);
  if (!raw || !*raw) return 0;
  const int64_t v = kilnParam(KILN_PARAM_EmulateNodes);
  return kilnParamIsSet(KILN_PARAM_EmulateNodes) && v >= 1 && v <= KILN_MAX_RANKS ? (int)v : -1;
}
