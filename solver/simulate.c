/*
 * α-β simulator: predicts the time of a plan (or of NCCL's ring and tree) on a topology.
 *
 * Everything becomes a task graph. A task has predecessors, a cost, and the resources it holds
 * for that cost. Tasks are placed in the order they become ready (a heap keyed by ready time):
 * each at the earliest time, not before it is ready, at which all its resources are free for
 * its whole cost. Every resource keeps a timeline of busy intervals, so a later task may fill
 * an earlier gap (without that, tasks holding two ports, as all-to-all transfers do, leave most
 * of the ports idle).
 *
 * Cost model: the links' α and β of topology.h and the TACCL paper, and a table of the runtime's
 * costs (kilnSimParams, topology.h: the topology's <costs>, else KILN_SIM_PARAMS_INIT, fitted to
 * the H200 tables of bench/baselines by bench/sim_calibrate):
 * - a transfer of b bytes in form f (a put or a get per protocol, an MSCCL send per protocol)
 *   puts b / f.efficiency bytes on the wire and arrives f.alpha_scale * α + f.alpha_us after the
 *   wire has carried them; a link's `mult` lanes multiply its bandwidth (beta / mult);
 * - a link carries one transfer at a time, for beta * wire bytes: α is latency, not occupancy,
 *   so back-to-back transfers on a link overlap their alphas as pipelined hardware does (charging
 *   alpha as occupancy would bill NCCL's 512 KiB slicing 0.74 µs per slice and put a 64 MB ring
 *   allreduce on 8 H100s at 243 GB/s bus bandwidth, far below the ~350 GB/s NCCL reaches on this
 *   NVLink generation: baselines/ has 347 GB/s on 4 H200s);
 * - the sending threadblock is busy for at least tb_us_per_mb * wire bytes (one block moves a
 *   fraction of a link): the link is held for its own time and the block goes on after the
 *   longer of the two, so many blocks share a link while one alone cannot fill it;
 * - a link through a switch holds the sender's egress port and the receiver's ingress port of
 *   that switch instead of the link itself (so two senders into one GPU serialize);
 * - an inter-node link holds the sender's NIC (egress) and the receiver's NIC (ingress), so GPUs
 *   sharing a NIC serialize;
 * - every step but sig, wait and nop costs its threadblock step_us, a Simple send or receive
 *   fifo_step_us more (its slot handshake); cpy, re and gre's reduction local_us_per_mb per MB of
 *   chunks (0: free); the local half of a receive nothing (the runtimes fuse it). TACCL's initial
 *   <copy>s (kilnGpu.copies) cost nothing and delay no step, so the simulator reads only the steps;
 * - a call adds its launch: launch_us for a plan with memory steps, fifo_launch_us for one of
 *   MSCCL's steps only, which runs in the runtime's iterations of at most a FIFO slot per step
 *   (fifo_slot_bytes; host/exec.c), each after the one before in every threadblock.
 *
 * FIFOs are unbounded here (kiln verify --fifo-depth checks that a plan fits the runtime's).
 *
 * Memory steps (plan.h), costed by a kilnSimParams table (add_memory_step): a put is a transfer
 * over the link to its peer, a get or gre one over the link from its peer, each of
 * bytes / efficiency with its form's latency; a get's data must arrive before its threadblock
 * goes on. A sig costs sig_us locally (a run of sigs one sig_us: one fence serves them all) and
 * arrives after its flight; it follows the arrival of every
 * put its threadblock made since its previous sig (the fence), and its wait follows its arrival
 * plus wait_us (a run of waits one wait_us: their flags are polled together). A step that reads
 * lines follows the arrival of the line puts that write them. One call and one iteration are
 * simulated: scratch halves and the calls around it cost nothing.
 *
 * Plans: one task per step (and iteration), after the previous step of its threadblock and its
 * dependency (depid/deps) have completed and, for a receive, the matching send's data has
 * arrived. A step that sends holds the resources of its link for beta * wire bytes and completes
 * locally then (the runtimes keep several slices in flight, so a threadblock does not wait for
 * alpha); its data arrives its form's latency later. The chunk size is the reference bytes
 * divided by the plan's reference chunk count. The predicted time is the last arrival or
 * completion, and the launch.
 *
 * Baselines (NCCL's algorithms on the same model):
 * - ring: rings in node-major order: inside a node a Hamiltonian cycle over the node's links
 *   from local GPU 0 (a path entering the next node through its first GPU if there is no
 *   cycle). On several nodes NCCL runs one ring (channel) per NIC: ring i rotates each node's
 *   cycle by i, so each ring leaves and enters nodes through other GPUs and NICs, and carries
 *   1/rings of the data. On one node of point-to-point links (NDv2, tori) NCCL builds several
 *   rings over different links: Hamiltonian cycles found greedily, each with its reverse, each
 *   directed link used at most `mult` times, up to KILN_SIM_MAX_RINGS. On one switched node a single ring (more rings
 *   share the same ports in this model). The data is cut in pipeline slices of
 *   KILN_SIM_SLICE_BYTES (NCCL's Simple protocol step, 512 KiB), at most KILN_SIM_MAX_SLICES
 *   per rank's piece.
 *   allgather/reducescatter: n-1 steps of bytes/n; allreduce: 2(n-1) steps (the classic ring
 *   plan). alltoall has no ring in NCCL: "ring" means NCCL's all-pairs send/receive.
 * - tree (allreduce only): NCCL's double binary tree, one pair per NIC of a node (chains
 *   rotated as the rings are), each tree carrying its share of the data;
 *   between nodes a binary tree (heap order over nodes; the second tree over the nodes in
 *   reverse order, so most interior nodes of one are leaves of the other), inside a node a
 *   chain along the node's path (the second tree along the reversed path, so the trees use
 *   different GPUs to enter a node). Reduce up, then broadcast down, pipelined in slices of
 *   512 KiB halved (down to 128 KiB) until there are 8 slices per tree level, as NCCL does.
 * Their steps are sends in NCCL's table (KILN_SIM_PARAMS_NCCL: its launch, and send forms per
 * protocol); each is simulated in LL, LL128 and Simple and the fastest taken, as NCCL's tuner
 * picks a protocol.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan_index.h"

#define KILN_SIM_SLICE_BYTES (512.0 * 1024.0)
#define KILN_SIM_MAX_SLICES 256
#define KILN_SIM_PATH_BUDGET 1000000 /* DFS steps when searching a ring through a node */
#define KILN_SIM_MAX_RINGS 16        /* rings searched inside a node of point-to-point links */
#define KILN_SIM_MAX_ITERS 64        /* a plan's iterations simulated one by one */

typedef struct simTask {
  double ready, end;
  double cost;   /* local completion = start + cost */
  double hold;   /* time the resources are held from the start (<= cost; a threadblock slower than its
                  * link holds the link for the link's time only, and others share the rest) */
  double lat;    /* the link's alpha: the data arrives at start + cost + lat */
  double arrive; /* start + cost + lat */
  int res[2];
  int nres;
  int remaining; /* predecessors not finished */
  bool xfer;
} simTask;

typedef struct simGraph {
  int ntasks, cap;
  simTask* t;
  int nedges, ecap;
  int* esrc;
  int* edst;
  bool* edata; /* the successor needs the data's arrival, not just local completion */
  bool oom;
} simGraph;

static int graph_task(simGraph* g) {
  if (g->ntasks == g->cap) {
    int nc = g->cap ? 2 * g->cap : 256;
    simTask* nt = realloc(g->t, sizeof(simTask) * (size_t)nc);
    if (!nt) {
      g->oom = true;
      return -1;
    }
    g->t = nt;
    g->cap = nc;
  }
  g->t[g->ntasks] = (simTask){0, 0, 0, 0, 0, 0, {-1, -1}, 0, 0, false};
  return g->ntasks++;
}

static void graph_edge(simGraph* g, int from, int to, bool data) {
  if (from < 0 || to < 0) return;
  if (g->nedges == g->ecap) {
    int nc = g->ecap ? 2 * g->ecap : 512;
    int* a = realloc(g->esrc, sizeof(int) * (size_t)nc);
    if (a) g->esrc = a;
    int* b = realloc(g->edst, sizeof(int) * (size_t)nc);
    if (b) g->edst = b;
    bool* d = realloc(g->edata, sizeof(bool) * (size_t)nc);
    if (d) g->edata = d;
    if (!a || !b || !d) {
      g->oom = true;
      return;
    }
    g->ecap = nc;
  }
  g->esrc[g->nedges] = from;
  g->edst[g->nedges] = to;
  g->edata[g->nedges] = data;
  g->nedges++;
  g->t[to].remaining++;
}

static void graph_free(simGraph* g) {
  free(g->t);
  free(g->esrc);
  free(g->edst);
  free(g->edata);
  memset(g, 0, sizeof *g);
}

/* Resource ids: links, then switch ports (egress, ingress) per switch and rank, then NICs. */
static int nresources(const kilnTopology* t) {
  return t->nlinks + 2 * t->nswitches * t->nranks + 2 * t->nnics;
}

/* Makes task x a transfer of `bytes` of payload from topology rank a to b in form fm (NULL: the
 * link's α and β alone): the link (or its switch or NIC ports) held for β * bytes / efficiency,
 * the sending threadblock busy for at least tb_us_per_mb * bytes / efficiency, the data arriving
 * alpha_scale * α + alpha_us after that. */
static kilnResult_t set_transfer(const kilnTopology* t, simTask* x, int a, int b, double bytes,
                                 const kilnSimForm* fm, double tb_us_per_mb) {
  const kilnLink* l = kilnTopologyLink(t, a, b);
  if (!l)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "topology %s has no link from rank %d to rank %d", t->name,
                        a, b);
  int mult = l->mult > 0 ? l->mult : 1;
  const double wire = fm ? bytes / fm->efficiency : bytes;
  x->lat = fm ? l->alpha_us * fm->alpha_scale + fm->alpha_us : l->alpha_us;
  x->hold = l->beta_us_per_mb / mult * wire / 1e6;
  x->cost = tb_us_per_mb * wire / 1e6 > x->hold ? tb_us_per_mb * wire / 1e6 : x->hold;
  x->xfer = true;
  int li = (int)(l - t->links);
  int swbase = t->nlinks, nicbase = t->nlinks + 2 * t->nswitches * t->nranks;
  if (l->internode) {
    int na = t->nic_of[a], nb = t->nic_of[b];
    x->res[0] = na >= 0 ? nicbase + 2 * na : li;
    x->res[1] = nb >= 0 ? nicbase + 2 * nb + 1 : -1;
  } else if (l->switch_id >= 0) {
    x->res[0] = swbase + 2 * (l->switch_id * t->nranks + a);
    x->res[1] = swbase + 2 * (l->switch_id * t->nranks + b) + 1;
  } else {
    x->res[0] = li;
    x->res[1] = -1;
  }
  x->nres = x->res[1] >= 0 ? 2 : 1;
  return KILN_SUCCESS;
}

/* Min-heap of (ready time, task id). */
typedef struct heap {
  int n;
  int* id;
  const simTask* t;
} heap;

static bool heap_less(const heap* h, int a, int b) {
  double ra = h->t[a].ready, rb = h->t[b].ready;
  return ra < rb || (ra == rb && a < b);
}

static void heap_push(heap* h, int x) {
  int i = h->n++;
  h->id[i] = x;
  while (i > 0) {
    int p = (i - 1) / 2;
    if (!heap_less(h, h->id[i], h->id[p])) break;
    int tmp = h->id[i];
    h->id[i] = h->id[p];
    h->id[p] = tmp;
    i = p;
  }
}

static int heap_pop(heap* h) {
  int top = h->id[0];
  h->id[0] = h->id[--h->n];
  int i = 0;
  for (;;) {
    int l = 2 * i + 1, r = l + 1, m = i;
    if (l < h->n && heap_less(h, h->id[l], h->id[m])) m = l;
    if (r < h->n && heap_less(h, h->id[r], h->id[m])) m = r;
    if (m == i) break;
    int tmp = h->id[i];
    h->id[i] = h->id[m];
    h->id[m] = tmp;
    i = m;
  }
  return top;
}

/* Busy intervals of one resource, sorted and disjoint (touching intervals are merged). */
typedef struct timeline {
  int n, cap;
  double* s;
  double* e;
} timeline;

/* Index of the first interval ending after t. */
static int tl_first_after(const timeline* tl, double t) {
  int lo = 0, hi = tl->n;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (tl->e[mid] <= t)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* If [t, t+len) overlaps a busy interval, returns the end of the first one; else t. */
static double tl_conflict(const timeline* tl, double t, double len) {
  int i = tl_first_after(tl, t);
  if (i < tl->n && tl->s[i] < t + len) return tl->e[i];
  return t;
}

static bool tl_insert(timeline* tl, double s, double e) {
  if (e <= s) return true;
  int i = tl_first_after(tl, s); /* intervals before i end at or before s */
  bool join_prev = i > 0 && tl->e[i - 1] == s;
  bool join_next = i < tl->n && tl->s[i] == e;
  if (join_prev && join_next) {
    tl->e[i - 1] = tl->e[i];
    memmove(&tl->s[i], &tl->s[i + 1], sizeof(double) * (size_t)(tl->n - i - 1));
    memmove(&tl->e[i], &tl->e[i + 1], sizeof(double) * (size_t)(tl->n - i - 1));
    tl->n--;
    return true;
  }
  if (join_prev) {
    tl->e[i - 1] = e;
    return true;
  }
  if (join_next) {
    tl->s[i] = s;
    return true;
  }
  if (tl->n == tl->cap) {
    int nc = tl->cap ? 2 * tl->cap : 8;
    double* ns = realloc(tl->s, sizeof(double) * (size_t)nc);
    if (ns) tl->s = ns;
    double* ne = realloc(tl->e, sizeof(double) * (size_t)nc);
    if (ne) tl->e = ne;
    if (!ns || !ne) return false;
    tl->cap = nc;
  }
  memmove(&tl->s[i + 1], &tl->s[i], sizeof(double) * (size_t)(tl->n - i));
  memmove(&tl->e[i + 1], &tl->e[i], sizeof(double) * (size_t)(tl->n - i));
  tl->s[i] = s;
  tl->e[i] = e;
  tl->n++;
  return true;
}

/* Runs the task graph; fills out. */
static kilnResult_t graph_run(simGraph* g, const kilnTopology* t, kilnSimResult* out) {
  kilnResult_t res = KILN_SUCCESS;
  int nt = g->ntasks, nr = nresources(t);
  int* off = calloc((size_t)nt + 1, sizeof(int));
  int* succ = malloc(sizeof(int) * (size_t)(g->nedges + 1));
  bool* sdata = malloc(sizeof(bool) * (size_t)(g->nedges + 1));
  timeline* tl = calloc((size_t)nr + 1, sizeof(timeline));
  double* busy = calloc((size_t)nr + 1, sizeof(double));
  heap h = {0, malloc(sizeof(int) * (size_t)(nt + 1)), g->t};
  if (!off || !succ || !sdata || !tl || !busy || !h.id) {
    res = kilnSetError(KILN_ERR_NO_MEMORY, "simulator: out of memory for %d tasks", nt);
    goto out_free;
  }
  for (int e = 0; e < g->nedges; e++) off[g->esrc[e] + 1]++;
  for (int i = 0; i < nt; i++) off[i + 1] += off[i];
  {
    int* fill = calloc((size_t)nt + 1, sizeof(int));
    if (!fill) {
      res = kilnSetError(KILN_ERR_NO_MEMORY, "simulator: out of memory");
      goto out_free;
    }
    for (int e = 0; e < g->nedges; e++) {
      int k = off[g->esrc[e]] + fill[g->esrc[e]]++;
      succ[k] = g->edst[e];
      sdata[k] = g->edata[e];
    }
    free(fill);
  }
  for (int i = 0; i < nt; i++)
    if (g->t[i].remaining == 0) heap_push(&h, i);
  int done = 0, nsends = 0;
  double finish = 0;
  while (h.n > 0) {
    int x = heap_pop(&h);
    simTask* tk = &g->t[x];
    /* Earliest start at which every resource is free for the whole cost. */
    double start = tk->ready;
    for (bool moved = true; moved;) {
      moved = false;
      for (int i = 0; i < tk->nres; i++) {
        double t2 = tl_conflict(&tl[tk->res[i]], start, tk->hold);
        if (t2 > start) {
          start = t2;
          moved = true;
        }
      }
    }
    tk->end = start + tk->cost;
    tk->arrive = tk->end + tk->lat;
    for (int i = 0; i < tk->nres; i++) {
      if (tk->hold > 0 && !tl_insert(&tl[tk->res[i]], start, start + tk->hold)) {
        res = kilnSetError(KILN_ERR_NO_MEMORY, "simulator: out of memory");
        goto out_free;
      }
      busy[tk->res[i]] += tk->hold;
    }
    if (tk->xfer) nsends++;
    if (tk->arrive > finish) finish = tk->arrive;
    done++;
    for (int e = off[x]; e < off[x + 1]; e++) {
      simTask* s = &g->t[succ[e]];
      double when = sdata[e] ? tk->arrive : tk->end;
      if (when > s->ready) s->ready = when;
      if (--s->remaining == 0) heap_push(&h, succ[e]);
    }
  }
  if (done < nt) {
    res = kilnSetError(KILN_ERR_VERIFY,
                       "simulation stalled after %d of %d steps: the plan deadlocks (kiln verify "
                       "names the blocked threadblocks)",
                       done, nt);
    goto out_free;
  }
  out->time_us = finish;
  out->nsends = nsends;
  out->busiest_link_us = 0;
  for (int i = 0; i < nr; i++)
    if (busy[i] > out->busiest_link_us) out->busiest_link_us = busy[i];
out_free:
  free(off);
  free(succ);
  free(sdata);
  if (tl)
    for (int i = 0; i < nr; i++) {
      free(tl[i].s);
      free(tl[i].e);
    }
  free(tl);
  free(busy);
  free(h.id);
  return res;
}

/* Reference chunks of a plan: the buffer `bytes` describes (see plan.h). */
static int plan_ref_chunks(const kilnPlan* p) {
  const kilnGpu* g = &p->gpus[0];
  if (p->coll == KILN_COLL_ALLGATHER) return g->o_chunks;
  return g->i_chunks > 0 ? g->i_chunks : g->o_chunks;
}

_Static_assert(KILN_NUM_PROTOS == 4, "KILN_SIM_PARAMS_INIT has a put and a send form per protocol");

/* The table's knobs by name (plan.h): the scalars, then each form's three fields (the sig form's
 * efficiency means nothing and has no name). */
enum { SIM_SCALARS = 9, SIM_FORMS = 2 * KILN_NUM_PROTOS + 2, SIM_KNOBS = SIM_SCALARS + 3 * SIM_FORMS - 1 };
static const char* const sim_scalar_names[SIM_SCALARS] = {
    "launch", "fifo_launch", "fifo_step", "fifo_slot", "step", "sig", "wait", "local_beta", "tb_beta"};
static const char* const sim_field_names[3] = {"alpha_scale", "alpha", "efficiency"};

/* Form i of the table (put per protocol, send per protocol, get, sig), and its name where name is
 * not NULL (the table's check asks for every form on every simulation: no name then). */
static kilnSimForm* sim_form(kilnSimParams* sp, int i, char* name, size_t len) {
  if (i < 2 * KILN_NUM_PROTOS) {
    if (name)
      snprintf(name, len, "%s.%s", i < KILN_NUM_PROTOS ? "put" : "send",
               kilnProtoName((kilnProto_t)(i % KILN_NUM_PROTOS)));
    return i < KILN_NUM_PROTOS ? &sp->put[i] : &sp->send[i - KILN_NUM_PROTOS];
  }
  if (name) snprintf(name, len, "%s", i == 2 * KILN_NUM_PROTOS ? "get" : "sig");
  return i == 2 * KILN_NUM_PROTOS ? &sp->get : &sp->sig;
}

int kilnSimParamCount(void) { return SIM_KNOBS; }

const char* kilnSimParamName(int i) {
  static char names[SIM_KNOBS][32];
  if (i < 0 || i >= SIM_KNOBS) return NULL;
  if (i < SIM_SCALARS) return sim_scalar_names[i];
  if (!names[i][0]) {
    kilnSimParams sp;
    char form[24];
    sim_form(&sp, (i - SIM_SCALARS) / 3, form, sizeof form);
    snprintf(names[i], sizeof names[i], "%s.%s", form, sim_field_names[(i - SIM_SCALARS) % 3]);
  }
  return names[i];
}

double* kilnSimParamRef(kilnSimParams* sp, int i) {
  if (!sp || i < 0 || i >= SIM_KNOBS) return NULL;
  double* const scalars[SIM_SCALARS] = {&sp->launch_us,       &sp->fifo_launch_us,  &sp->fifo_step_us,
                                        &sp->fifo_slot_bytes, &sp->step_us,         &sp->sig_us,
                                        &sp->wait_us,         &sp->local_us_per_mb, &sp->tb_us_per_mb};
  if (i < SIM_SCALARS) return scalars[i];
  kilnSimForm* f = sim_form(sp, (i - SIM_SCALARS) / 3, NULL, 0);
  const int field = (i - SIM_SCALARS) % 3;
  return field == 0 ? &f->alpha_scale : field == 1 ? &f->alpha_us : &f->efficiency;
}

int kilnSimParamFind(const char* name) {
  for (int i = 0; name && i < SIM_KNOBS; i++)
    if (!strcmp(name, kilnSimParamName(i))) return i;
  return -1;
}

kilnResult_t kilnSimParamsCheck(const kilnSimParams* sp) {
  if (!sp) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnSimParamsCheck: NULL table");
  kilnSimParams copy = *sp;
  for (int i = 0; i < SIM_KNOBS; i++) {
    const double v = *kilnSimParamRef(&copy, i);
    const bool eff = i >= SIM_SCALARS && (i - SIM_SCALARS) % 3 == 2;
    if (eff ? !(v > 0 && v <= 1) : !(v >= 0 && v < 1e9))
      return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "simulator parameters: %s is %g, needs %s",
                          kilnSimParamName(i), v, eff ? "an efficiency in (0, 1]" : "a value >= 0");
  }
  return KILN_SUCCESS;
}

/* Task f (base + flat step) of a memory step or a local step of a plan with memory steps (see the
 * top of the file): its cost, resources and the edges of signals and lines. */
static kilnResult_t add_memory_step(simGraph* g, const kilnPlan* p, const kilnPlanIndex* ix,
                                    const kilnTopology* t, int base, int gt, int s, double chunk,
                                    const int* map, const kilnSimParams* sp) {
  const int r = ix->tb_rank[gt], f = ix->stepbase[gt] + s;
  const kilnThreadblock* tb = &p->gpus[r].tbs[kilnPlanIndexLocal(ix, gt)];
  const kilnStep* st = &tb->steps[s];
  simTask* x = &g->t[base + f];
  const int me = map ? map[r] : r,
            peer = st->peer >= 0 && st->peer < p->ngpus ? (map ? map[st->peer] : st->peer) : -1;
  kilnResult_t res = KILN_SUCCESS;
  switch (kilnStepPeerRole(st->type)) {
    case KILN_PEER_WRITE:
    case KILN_PEER_READ: {
      const bool w = kilnStepPeerRole(st->type) == KILN_PEER_WRITE;
      const kilnSimForm* fm = w ? &sp->put[kilnStepProtocol(p, st)] : &sp->get;
      res = set_transfer(t, x, w ? me : peer, w ? peer : me, chunk * st->cnt, fm, sp->tb_us_per_mb);
      if (res != KILN_SUCCESS) return res;
      break;
    }
    case KILN_PEER_SIGNAL: {
      const kilnLink* l = kilnTopologyLink(t, me, peer);
      if (!l)
        return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "topology %s has no link from rank %d to rank %d",
                            t->name, me, peer);
      /* A run of sigs shares its first one's fence. */
      x->cost = s > 0 && kilnStepPeerRole(tb->steps[s - 1].type) == KILN_PEER_SIGNAL ? 0 : sp->sig_us;
      x->lat = l->alpha_us * sp->sig.alpha_scale + sp->sig.alpha_us;
      for (int e = s - 1; e >= 0 && kilnStepPeerRole(tb->steps[e].type) != KILN_PEER_SIGNAL; e--)
        if (tb->steps[e].type == KILN_STEP_PUT) graph_edge(g, base + f - (s - e), base + f, true);
      break;
    }
    case KILN_PEER_WAIT:
      /* A run of waits polls its flags together: the first pays. */
      x->cost = s > 0 && kilnStepPeerRole(tb->steps[s - 1].type) == KILN_PEER_WAIT ? 0 : sp->wait_us;
      graph_edge(g, base + ix->sig_match[f], base + f, true);
      break;
    default:
      if (st->type == KILN_STEP_COPY || st->type == KILN_STEP_REDUCE)
        x->cost = sp->local_us_per_mb * chunk * st->cnt / 1e6;
      break;
  }
  for (int i = ix->mem ? ix->linedep_base[f] : 0; ix->mem && i < ix->linedep_base[f + 1]; i++)
    graph_edge(g, base + ix->linedep[i], base + f, true);
  return res;
}

/* Iterations the runtime cuts a call of a plan of MSCCL's steps into (host/exec.c): every step
 * moves at most a FIFO slot of fifo_slot_bytes (its protocol's lines included) per iteration. A
 * plan with memory steps, or a table without a slot size, runs in one. */
static double plan_iterations(const kilnPlan* p, const kilnPlanIndex* ix, double chunk,
                              const kilnSimParams* sp) {
  if (ix->mem || sp->fifo_slot_bytes <= 0) return 1;
  static const double payload[KILN_NUM_PROTOS] = {1.0, 8.0 / 16.0, 120.0 / 128.0, 12.0 / 16.0};
  const double slice =
      floor(sp->fifo_slot_bytes * payload[(unsigned)p->proto < KILN_NUM_PROTOS ? p->proto : 0] /
            (ix->maxcnt > 0 ? ix->maxcnt : 1));
  const double it = slice > 0 ? ceil(chunk / slice) : 1;
  return it < 1 ? 1 : it;
}

/* Adds plan p's steps to the graph, for `bytes` of reference data, with plan rank r placed on
 * topology rank map[r] (identity if map is NULL); sp costs its steps. A plan of MSCCL's steps runs
 * in the runtime's iterations (plan_iterations; iterate false: in one, as the baselines' own
 * slices are), each after the one before in every threadblock's program order; past
 * KILN_SIM_MAX_ITERS iterations each simulated one stands for several, its steps' fixed costs
 * multiplied. *iters (may be NULL) gets the iterations simulated, each a block of nsteps tasks. */
static kilnResult_t add_plan(simGraph* g, const kilnPlan* p, const kilnTopology* t, double bytes,
                             const int* map, const kilnSimParams* sp, bool iterate, int* iters) {
  kilnPlanIndex ix;
  kilnResult_t res = kilnPlanIndexBuild(p, &ix);
  if (res != KILN_SUCCESS) return res;
  if (p->ngpus != t->nranks) {
    res = kilnSetError(KILN_ERR_INVALID_ARGUMENT, "plan %s has %d ranks but topology %s has %d", p->name,
                       p->ngpus, t->name, t->nranks);
    goto out_free;
  }
  int R = plan_ref_chunks(p);
  if (R <= 0) {
    res =
        kilnSetError(KILN_ERR_INVALID_ARGUMENT, "plan %s has no reference buffer to size chunks by", p->name);
    goto out_free;
  }
  const double real = iterate ? plan_iterations(p, &ix, bytes / R, sp) : 1;
  const int niter = real > KILN_SIM_MAX_ITERS ? KILN_SIM_MAX_ITERS : (int)real;
  const double reps = real / niter; /* real iterations per simulated one */
  const double chunk = bytes / R / niter;
  if (iters) *iters = niter;
  for (int it = 0; it < niter && res == KILN_SUCCESS; it++) {
    const int base = g->ntasks;
    for (int f = 0; f < ix.nsteps; f++)
      if (graph_task(g) < 0) break;
    if (g->oom) {
      res = kilnSetError(KILN_ERR_NO_MEMORY, "simulator: out of memory for %d steps", ix.nsteps);
      goto out_free;
    }
    for (int gt = 0; gt < ix.ntbs; gt++) {
      int r = ix.tb_rank[gt];
      const kilnThreadblock* tb = &p->gpus[r].tbs[kilnPlanIndexLocal(&ix, gt)];
      /* the threadblock's iteration after its previous one */
      if (it > 0 && tb->nsteps > 0)
        graph_edge(g, base - ix.nsteps + ix.stepbase[gt + 1] - 1, base + ix.stepbase[gt], false);
      for (int s = 0; s < tb->nsteps; s++) {
        const kilnStep* st = &tb->steps[s];
        int f = base + ix.stepbase[gt] + s;
        /* A get's data must be there before what follows it, or waits on it, goes on. */
        if (s > 0) graph_edge(g, f - 1, f, kilnStepPeerRole(tb->steps[s - 1].type) == KILN_PEER_READ);
        if (st->depid >= 0)
          graph_edge(g, base + ix.stepbase[ix.tbbase[r] + st->depid] + st->deps, f,
                     kilnStepPeerRole(p->gpus[r].tbs[st->depid].steps[st->deps].type) == KILN_PEER_READ);
        if (ix.match_tb[f - base] >= 0)
          graph_edge(g, base + ix.stepbase[ix.match_tb[f - base]] + ix.match_step[f - base], f, true);
        if (kilnStepSends(st->type)) {
          int a = map ? map[r] : r, b = map ? map[tb->send] : tb->send;
          res = set_transfer(t, &g->t[f], a, b, chunk * st->cnt, &sp->send[p->proto], sp->tb_us_per_mb);
          if (res != KILN_SUCCESS) {
            kilnPrefixError("rank %d tb %d step %d (%s): ", r, tb->id, s, kilnStepTypeName(st->type));
            goto out_free;
          }
        }
        if (ix.mem || sp->local_us_per_mb > 0) { /* a send's source may be lines too */
          res = add_memory_step(g, p, &ix, t, base, gt, s, chunk, map, sp);
          if (res != KILN_SUCCESS) {
            kilnPrefixError("rank %d tb %d step %d (%s): ", r, tb->id, s, kilnStepTypeName(st->type));
            goto out_free;
          }
        }
        /* fixed costs of the step in its threadblock; a Simple FIFO step's slot handshake (the
         * line protocols carry their flags in the lines) */
        const bool handshake =
            p->proto == KILN_PROTO_SIMPLE && (kilnStepSends(st->type) || kilnStepReceives(st->type));
        if (st->type != KILN_STEP_NOP && kilnStepPeerRole(st->type) != KILN_PEER_SIGNAL &&
            kilnStepPeerRole(st->type) != KILN_PEER_WAIT)
          g->t[f].cost += reps * (sp->step_us + (handshake ? sp->fifo_step_us : 0));
      }
    }
  }
  if (g->oom) res = kilnSetError(KILN_ERR_NO_MEMORY, "simulator: out of memory");
out_free:
  kilnPlanIndexFree(&ix);
  return res;
}

/* A call's fixed cost: the memory-step runtime's, or the FIFO runtime's for a plan of MSCCL's
 * steps only. */
static double plan_launch(const kilnPlan* p, const kilnSimParams* sp) {
  return kilnPlanHasMemorySteps(p) ? sp->launch_us : sp->fifo_launch_us;
}

kilnResult_t kilnPlanSimulate(const kilnPlan* p, const kilnTopology* t, uint64_t bytes, kilnSimResult* out) {
  return kilnPlanSimulateWith(p, t, bytes, NULL, out);
}

/* The simulation of plan p on t at `bytes` with params (NULL: the topology's costs, else
 * KILN_SIM_PARAMS_INIT), the call's launch included: its graph left in g, which the caller frees
 * (graph_free) whatever the result; *iters (may be NULL) as add_plan's. */
static kilnResult_t simulate_plan(const kilnPlan* p, const kilnTopology* t, uint64_t bytes,
                                  const kilnSimParams* params, simGraph* g, kilnSimResult* out, int* iters) {
  memset(out, 0, sizeof *out);
  memset(g, 0, sizeof *g);
  const kilnSimParams defaults = KILN_SIM_PARAMS_INIT;
  if (!params) params = t->has_costs ? &t->costs : &defaults;
  kilnResult_t res = kilnSimParamsCheck(params);
  if (res == KILN_SUCCESS) res = add_plan(g, p, t, (double)bytes, NULL, params, true, iters);
  if (res == KILN_SUCCESS) res = graph_run(g, t, out);
  if (res == KILN_SUCCESS) out->time_us += plan_launch(p, params);
  return res;
}

kilnResult_t kilnPlanSimulateWith(const kilnPlan* p, const kilnTopology* t, uint64_t bytes,
                                  const kilnSimParams* params, kilnSimResult* out) {
  if (!p || !t || !out) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnPlanSimulate: NULL argument");
  simGraph g;
  const kilnResult_t res = simulate_plan(p, t, bytes, params, &g, out, NULL);
  graph_free(&g);
  return res;
}

kilnResult_t kilnPlanSimulateTimes(const kilnPlan* p, const kilnTopology* t, uint64_t bytes,
                                   kilnSimResult* out, kilnSimStepTime** times, int* ntimes) {
  if (!p || !t || !out || !times || !ntimes)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnPlanSimulateTimes: NULL argument");
  *times = NULL;
  *ntimes = 0;
  simGraph g;
  int niter = 1;
  kilnResult_t res = simulate_plan(p, t, bytes, NULL, &g, out, &niter); /* iteration by iteration */
  if (res == KILN_SUCCESS) {
    /* add_plan makes one task per step and iteration, in kilnPlanIndex's order (rank,
     * threadblock, step): a step begins with its first iteration and ends with its last */
    const int nsteps = g.ntasks / niter, last = (niter - 1) * nsteps;
    kilnSimStepTime* tt = malloc(sizeof *tt * (size_t)(nsteps > 0 ? nsteps : 1));
    if (!tt) {
      res = kilnSetError(KILN_ERR_NO_MEMORY, "simulator: out of memory for %d step times", nsteps);
    } else {
      for (int i = 0; i < nsteps; i++) {
        const simTask* e = &g.t[last + i];
        tt[i] = (kilnSimStepTime){g.t[i].end - g.t[i].cost, e->end, e->xfer ? e->arrive : e->end};
      }
      *times = tt;
      *ntimes = nsteps;
    }
  }
  graph_free(&g);
  return res;
}

/* ---- baselines ---- */

static bool linked(const kilnTopology* t, int a, int b) { return kilnTopologyLink(t, a, b) != NULL; }

/* Path through all GPUs of node 0 starting at local 0 (global ranks = local ids on node 0),
 * over links with cap[i*g+j] > 0 (cap NULL: any link). cycle: last must link back to 0;
 * otherwise (several nodes) last must link to the first GPU of node 1. Depth-first, trying
 * first the GPUs with the fewest unvisited neighbours (Warnsdorff's rule, which finds cycles
 * in grids and tori without backtracking), within a budget of steps. */
static bool node_path_search(const kilnTopology* t, const int* cap, bool cycle, int* path) {
  int g = t->gpus_per_node;
  bool* used = calloc((size_t)g, sizeof(bool));
  int* cand = malloc(sizeof(int) * (size_t)g * (size_t)g); /* candidates per depth, in order */
  int* ncand = calloc((size_t)g + 1, sizeof(int));
  int* next = calloc((size_t)g + 1, sizeof(int)); /* next candidate to try at each depth */
  int* key = malloc(sizeof(int) * (size_t)g);
  bool found = false;
  if (!used || !cand || !ncand || !next || !key) goto out_free;
#define NODE_LINK(a, b) (cap ? cap[(a)*g + (b)] > 0 : linked(t, (a), (b)))
  long budget = KILN_SIM_PATH_BUDGET;
  int depth = 1;
  path[0] = 0;
  used[0] = true;
  ncand[1] = -1; /* candidates of depth 1 not computed yet */
  if (g == 1) found = cycle || linked(t, 0, g);
  while (!found && depth > 0 && budget-- > 0) {
    if (depth == g) {
      int last = path[g - 1];
      if (cycle ? NODE_LINK(last, path[0]) : linked(t, last, g + path[0])) {
        found = true;
        break;
      }
      depth--;
      used[path[depth]] = false;
      continue;
    }
    if (ncand[depth] < 0) {
      /* Unused neighbours of the last GPU, fewest onward neighbours first. */
      int m = 0, u = path[depth - 1];
      for (int v = 0; v < g; v++) {
        if (used[v] || !NODE_LINK(u, v)) continue;
        int deg = 0;
        for (int w = 0; w < g; w++)
          if (!used[w] && w != v && NODE_LINK(v, w)) deg++;
        int i = m++;
        while (i > 0 && (key[i - 1] > deg || (key[i - 1] == deg && cand[depth * g + i - 1] > v))) {
          key[i] = key[i - 1];
          cand[depth * g + i] = cand[depth * g + i - 1];
          i--;
        }
        key[i] = deg;
        cand[depth * g + i] = v;
      }
      ncand[depth] = m;
      next[depth] = 0;
    }
    if (next[depth] >= ncand[depth]) {
      depth--;
      if (depth > 0) used[path[depth]] = false;
      continue;
    }
    int v = cand[depth * g + next[depth]++];
    path[depth] = v;
    used[v] = true;
    depth++;
    if (depth < g) ncand[depth] = -1;
  }
#undef NODE_LINK
out_free:
  free(used);
  free(cand);
  free(ncand);
  free(next);
  free(key);
  return found;
}

/* A path through node 0's GPUs; *cycle tells whether it closes (then any rotation is a path). */
static bool node_path(const kilnTopology* t, int* path, bool* cycle) {
  *cycle = node_path_search(t, NULL, true, path) && (t->gpus_per_node < 2 || linked(t, path[0], path[1]));
  if (*cycle) return true;
  return t->nodes > 1 && node_path_search(t, NULL, false, path);
}

/* True when node 0's GPUs talk only through switches (more rings share the same ports). */
static bool node_switched(const kilnTopology* t) {
  int g = t->gpus_per_node;
  for (int a = 0; a < g; a++)
    for (int b = 0; b < g; b++) {
      const kilnLink* l = a == b ? NULL : kilnTopologyLink(t, a, b);
      if (l && l->switch_id < 0) return false;
    }
  return true;
}

/* Adds the cycle pth backwards if every link's other direction has capacity left. */
static bool add_reverse(int g, int* cap, const int* pth, int* rev) {
  for (int i = 0; i < g; i++)
    if (cap[pth[(i + 1) % g] * g + pth[i]] <= 0) return false;
  rev[0] = pth[0];
  for (int i = 1; i < g; i++) rev[i] = pth[g - i];
  for (int i = 0; i < g; i++) cap[rev[i] * g + rev[(i + 1) % g]]--;
  return true;
}

/* One greedy pass: Hamiltonian cycles over links with capacity left; with eager_reverse each
 * cycle is followed by its reverse at once, otherwise the reverses come after the greedy
 * cycles, then greedy cycles again over what is left. */
static int cycles_pass(const kilnTopology* t, bool eager_reverse, int maxrings, int* paths) {
  int g = t->gpus_per_node, found = 0;
  int* cap = calloc((size_t)g * g, sizeof(int));
  if (!cap) return 0;
  for (int a = 0; a < g; a++)
    for (int b = 0; b < g; b++) {
      const kilnLink* l = a == b ? NULL : kilnTopologyLink(t, a, b);
      cap[a * g + b] = l ? (l->mult > 0 ? l->mult : 1) : 0;
    }
  for (int pass = 0; pass < 2; pass++) {
    while (found < maxrings && node_path_search(t, cap, true, &paths[found * g])) {
      const int* pth = &paths[found * g];
      for (int i = 0; i < g; i++) cap[pth[i] * g + pth[(i + 1) % g]]--;
      found++;
      if (eager_reverse && g > 2 && found < maxrings &&
          add_reverse(g, cap, &paths[(found - 1) * g], &paths[found * g]))
        found++;
    }
    if (eager_reverse || g < 3) break;
    int nfwd = found;
    for (int c = 0; c < nfwd && found < maxrings; c++)
      if (add_reverse(g, cap, &paths[c * g], &paths[found * g])) found++;
  }
  free(cap);
  return found;
}

/* Rings NCCL would build inside a node of point-to-point links: Hamiltonian cycles found
 * greedily (two orders, the one with more rings wins), each directed link used at most `mult`
 * times in all (NCCL also runs rings both ways). Returns how many (into paths[i*g ...]), at
 * most maxrings. */
static int node_cycles(const kilnTopology* t, int maxrings, int* paths) {
  int g = t->gpus_per_node;
  int* other = malloc(sizeof(int) * (size_t)g * (size_t)maxrings);
  if (!other) return 0;
  int a = cycles_pass(t, true, maxrings, paths);
  int b = cycles_pass(t, false, maxrings, other);
  if (b > a) {
    memcpy(paths, other, sizeof(int) * (size_t)g * (size_t)b);
    a = b;
  }
  free(other);
  return a;
}

/* Channels NCCL would run between nodes: one per NIC of a node (at most one per GPU). */
static int nic_channels(const kilnTopology* t) {
  if (t->nodes < 2) return 1;
  int per = t->ntnics;
  if (per > t->gpus_per_node) per = t->gpus_per_node;
  return per < 1 ? 1 : per;
}

int kilnChannelEntryGpu(const kilnTopology* t, int i) {
  const int g = t->gpus_per_node;
  if (i >= 0 && i < t->ntnics && t->tnics[i].ngpus > 0) {
    int first = t->tnics[i].gpus[0];
    for (int j = 1; j < t->tnics[i].ngpus; j++)
      if (t->tnics[i].gpus[j] < first) first = t->tnics[i].gpus[j];
    return first;
  }
  return g > 0 ? ((i % g) + g) % g : 0;
}

/* The rotation of node path `path` (g GPUs) that channel i takes: the position of the GPU it
 * enters a node through (kilnChannelEntryGpu), so that each channel has a NIC of its own. */
static int channel_rot(const kilnTopology* t, const int* path, int i) {
  const int gpu = kilnChannelEntryGpu(t, i);
  for (int p = 0; p < t->gpus_per_node; p++)
    if (path[p] == gpu) return p;
  return i % t->gpus_per_node;
}

/* Ring order (ring position -> topology rank), node-major, each node's path rotated by rot. */
static kilnResult_t ring_order(const kilnTopology* t, const int* path, int rot, int* order) {
  int g = t->gpus_per_node;
  for (int node = 0; node < t->nodes; node++)
    for (int i = 0; i < g; i++) order[node * g + i] = node * g + path[(i + rot) % g];
  for (int i = 0; i < t->nranks; i++)
    if (!linked(t, order[i], order[(i + 1) % t->nranks]))
      return kilnSetError(KILN_ERR_UNSUPPORTED, "topology %s: no link from rank %d to rank %d for the ring",
                          t->name, order[i], order[(i + 1) % t->nranks]);
  return KILN_SUCCESS;
}

/* A baseline of `bytes` cut into `slices` equal slices. */
typedef kilnResult_t (*slicedRun)(const void* setup, double bytes, int slices, kilnSimResult* out);

/* The baseline's time at `bytes`, its slices each at most `unit` bytes (unit: the bytes at which
 * one slice is full). Equal slices alone made the time drop where their count steps up (NCCL
 * cuts full slices and a partial last one): 4 MiB + 8 B took 2 slices of half the size and
 * pipelined better than 4 MiB in one (hgx-h100 ring allgather 15.1 -> 10.8 us). Between k - 1 and
 * k full slices the time is interpolated from the two, so that it never drops as bytes grow. */
static kilnResult_t sliced(slicedRun run, const void* setup, double bytes, double unit, kilnSimResult* out) {
  double sd = ceil(bytes / unit);
  const int s = sd < 1 ? 1 : sd > KILN_SIM_MAX_SLICES ? KILN_SIM_MAX_SLICES : (int)sd;
  if (s <= 1 || s >= KILN_SIM_MAX_SLICES) return run(setup, bytes, s, out);
  kilnSimResult lo, hi;
  const double blo = (s - 1) * unit, bhi = s * unit;
  kilnResult_t r = run(setup, blo, s - 1, &lo);
  if (r == KILN_SUCCESS) r = run(setup, bhi, s, &hi);
  if (r != KILN_SUCCESS) return r;
  const double f = (bytes - blo) / (bhi - blo);
  *out = hi;
  out->time_us = lo.time_us + f * (hi.time_us - lo.time_us);
  out->busiest_link_us = lo.busiest_link_us + f * (hi.busiest_link_us - lo.busiest_link_us);
  return KILN_SUCCESS;
}

/* What baseline_ring found: the rings' paths and how they are placed. */
typedef struct ringSetup {
  kilnColl_t coll;
  const kilnTopology* t;
  const int* path;
  int* order;
  int rings, distinct;
  const kilnSimParams* sp;
  kilnProto_t proto;
} ringSetup;

/* The rings carrying `bytes` in `slices` slices: the same ring plan on every ring, placed by each
 * ring's order, each with its share. */
static kilnResult_t ring_run(const void* setup, double bytes, int slices, kilnSimResult* out) {
  const ringSetup* rs = setup;
  const kilnTopology* t = rs->t;
  const int n = t->nranks, g = t->gpus_per_node;
  simGraph gr;
  memset(&gr, 0, sizeof gr);
  kilnPlan* p = NULL;
  kilnClassicOptions o = KILN_CLASSIC_OPTIONS_INIT;
  o.chunks = slices;
  kilnResult_t res = kilnClassicPlan("ring", rs->coll, n, &o, &p);
  if (res == KILN_SUCCESS) p->proto = rs->proto;
  for (int i = 0; i < rs->rings && res == KILN_SUCCESS; i++) {
    res = rs->distinct ? ring_order(t, &rs->path[i * g], 0, rs->order)
                       : ring_order(t, rs->path, channel_rot(t, rs->path, i), rs->order);
    if (res == KILN_SUCCESS) res = add_plan(&gr, p, t, bytes / rs->rings, rs->order, rs->sp, false, NULL);
  }
  kilnPlanFree(p);
  if (res == KILN_SUCCESS) res = graph_run(&gr, t, out);
  graph_free(&gr);
  return res;
}

/* NCCL's ring: one ring per NIC across nodes (each rotated inside the nodes so that every ring
 * leaves and enters a node through other GPUs and NICs: kilnChannelEntryGpu), each carrying its
 * share of the data. */
static kilnResult_t baseline_ring(kilnColl_t coll, const kilnTopology* t, uint64_t bytes,
                                  const kilnSimParams* sp, kilnProto_t proto, kilnSimResult* out) {
  int n = t->nranks, g = t->gpus_per_node;
  int* order = malloc(sizeof(int) * (size_t)n);
  int* path = malloc(sizeof(int) * (size_t)g * KILN_SIM_MAX_RINGS);
  kilnResult_t res = KILN_SUCCESS;
  if (!order || !path) {
    res = kilnSetError(KILN_ERR_NO_MEMORY, "simulator: out of memory");
    goto out_free;
  }
  bool cycle;
  if (!node_path(t, path, &cycle)) {
    res = kilnSetError(KILN_ERR_UNSUPPORTED, "topology %s: found no ring through the links of a node%s",
                       t->name, t->nodes > 1 ? " that leaves it for the next node" : "");
    goto out_free;
  }
  /* Several nodes: a ring per NIC, rotations of one cycle. One node of point-to-point links:
   * link-disjoint cycles (path[i*g...]). One switched node: one ring. */
  int rings = cycle ? nic_channels(t) : 1, distinct = 0;
  if (t->nodes == 1 && !node_switched(t)) {
    distinct = node_cycles(t, KILN_SIM_MAX_RINGS, path);
    if (distinct < 1) {
      distinct = 0;
      node_path(t, path, &cycle);
    } else {
      rings = distinct;
    }
  }
  ringSetup rs = {coll, t, path, order, rings, distinct, sp, proto};
  /* a slice holds at most KILN_SIM_SLICE_BYTES of each rank's share of a ring */
  res = sliced(ring_run, &rs, (double)bytes, (double)rings * n * KILN_SIM_SLICE_BYTES, out);
out_free:
  free(order);
  free(path);
  return res;
}

/* What baseline_alltoall simulates: the topology, the costs and the protocol. */
typedef struct pairsSetup {
  const kilnTopology* t;
  const kilnSimParams* sp;
  kilnProto_t proto;
} pairsSetup;

static kilnResult_t alltoall_run(const void* setup, double bytes, int slices, kilnSimResult* out) {
  const pairsSetup* ps = setup;
  kilnClassicOptions o = KILN_CLASSIC_OPTIONS_INIT;
  o.chunks = slices;
  kilnPlan* p = NULL;
  simGraph gr;
  memset(&gr, 0, sizeof gr);
  kilnResult_t res = kilnClassicPlan("direct", KILN_COLL_ALLTOALL, ps->t->nranks, &o, &p);
  if (res == KILN_SUCCESS) p->proto = ps->proto;
  if (res == KILN_SUCCESS) res = add_plan(&gr, p, ps->t, bytes, NULL, ps->sp, false, NULL);
  if (res == KILN_SUCCESS) res = graph_run(&gr, ps->t, out);
  graph_free(&gr);
  kilnPlanFree(p);
  return res;
}

static kilnResult_t baseline_alltoall(const kilnTopology* t, uint64_t bytes, const kilnSimParams* sp,
                                      kilnProto_t proto, kilnSimResult* out) {
  const pairsSetup ps = {t, sp, proto};
  kilnResult_t res = sliced(alltoall_run, &ps, (double)bytes, (double)t->nranks * KILN_SIM_SLICE_BYTES, out);
  if (res != KILN_SUCCESS) kilnPrefixError("alltoall baseline (NCCL's all-pairs send/receive): ");
  return res;
}

/* One tree of a double binary tree: parent[] over topology ranks (-1 at the root). The chain
 * inside each node follows the node's path rotated by rot (reversed for the mirror tree). */
static void build_tree(const kilnTopology* t, const int* path, int rot, bool mirror, int* parent) {
  int g = t->gpus_per_node, m = t->nodes;
  for (int pos = 0; pos < m; pos++) {
    int node = mirror ? m - 1 - pos : pos;
    for (int i = 0; i < g; i++) {
      int li = path[((mirror ? g - 1 - i : i) + rot) % g];
      int v = node * g + li;
      if (i > 0) {
        int prev = path[((mirror ? g - i : i - 1) + rot) % g];
        parent[v] = node * g + prev;
      } else if (pos == 0) {
        parent[v] = -1;
      } else {
        int ppos = (pos - 1) / 2;
        int pnode = mirror ? m - 1 - ppos : ppos;
        parent[v] = pnode * g + path[((mirror ? g - 1 : 0) + rot) % g];
      }
    }
  }
}

/* Adds one tree's allreduce (reduce up, broadcast down) over C slices of `slice` bytes. */
static kilnResult_t add_tree(simGraph* gr, const kilnTopology* t, const int* parent, int C, double slice,
                             const kilnSimParams* sp, kilnProto_t proto) {
  int n = t->nranks;
  int* up = malloc(sizeof(int) * (size_t)n * C);
  int* down = malloc(sizeof(int) * (size_t)n * C);
  kilnResult_t res = KILN_SUCCESS;
  if (!up || !down) {
    res = kilnSetError(KILN_ERR_NO_MEMORY, "simulator: out of memory");
    goto out_free;
  }
  int root = -1;
  for (int v = 0; v < n; v++) {
    if (parent[v] < 0) root = v;
    for (int c = 0; c < C; c++) {
      up[v * C + c] = down[v * C + c] = -1;
      if (parent[v] < 0) continue;
      up[v * C + c] = graph_task(gr);
      down[v * C + c] = graph_task(gr);
      if (gr->oom) {
        res = kilnSetError(KILN_ERR_NO_MEMORY, "simulator: out of memory");
        goto out_free;
      }
      res = set_transfer(t, &gr->t[up[v * C + c]], v, parent[v], slice, &sp->send[proto], sp->tb_us_per_mb);
      if (res == KILN_SUCCESS)
        res =
            set_transfer(t, &gr->t[down[v * C + c]], parent[v], v, slice, &sp->send[proto], sp->tb_us_per_mb);
      if (res != KILN_SUCCESS) goto out_free;
      gr->t[up[v * C + c]].cost += sp->step_us;
      gr->t[down[v * C + c]].cost += sp->step_us;
    }
  }
  for (int v = 0; v < n; v++) {
    int pv = parent[v];
    if (pv < 0) continue;
    for (int c = 0; c < C; c++) {
      /* Up: after the previous slice on this edge; the parent adds it to its own children's. */
      if (c > 0) graph_edge(gr, up[v * C + c - 1], up[v * C + c], false);
      if (c > 0) graph_edge(gr, down[v * C + c - 1], down[v * C + c], false);
      if (pv != root) {
        graph_edge(gr, up[v * C + c], up[pv * C + c], true);
        graph_edge(gr, down[pv * C + c], down[v * C + c], true);
      } else {
        /* The root broadcasts slice c once every child's slice c has arrived. */
        for (int w = 0; w < n; w++)
          if (parent[w] == root) graph_edge(gr, up[w * C + c], down[v * C + c], true);
      }
    }
  }
out_free:
  free(up);
  free(down);
  return res;
}

/* What baseline_tree found: the node's chain, the tree pairs, a parent array to fill. */
typedef struct treeSetup {
  const kilnTopology* t;
  const int* path;
  int* parent;
  int pairs;
  const kilnSimParams* sp;
  kilnProto_t proto;
} treeSetup;

/* The 2 x pairs trees carrying `bytes` in `slices` slices each. */
static kilnResult_t tree_run(const void* setup, double bytes, int slices, kilnSimResult* out) {
  const treeSetup* ts = setup;
  simGraph gr;
  memset(&gr, 0, sizeof gr);
  const double part = bytes / (2 * ts->pairs);
  kilnResult_t res = KILN_SUCCESS;
  for (int tree = 0; tree < 2 * ts->pairs && res == KILN_SUCCESS; tree++) {
    build_tree(ts->t, ts->path, channel_rot(ts->t, ts->path, tree / 2), tree % 2 == 1, ts->parent);
    res = add_tree(&gr, ts->t, ts->parent, slices, part / slices, ts->sp, ts->proto);
  }
  if (res == KILN_SUCCESS && gr.oom) res = kilnSetError(KILN_ERR_NO_MEMORY, "simulator: out of memory");
  if (res == KILN_SUCCESS) res = graph_run(&gr, ts->t, out);
  graph_free(&gr);
  return res;
}

/* The double binary tree's shape on t for an allreduce of `bytes`: the node's chain (path, g
 * entries), the tree pairs and the slice (bytes of a tree's share). */
static kilnResult_t tree_shape(const kilnTopology* t, uint64_t bytes, int* path, int* pairs, double* slice) {
  const int g = t->gpus_per_node;
  bool cycle;
  if (!node_path(t, path, &cycle))
    return kilnSetError(KILN_ERR_UNSUPPORTED, "topology %s: found no chain through the links of a node",
                        t->name);
  /* Tree pairs: one per NIC of a node. Pair k enters a node through GPU path[r] (first tree)
   * and path[r-1] (mirror tree), r the rotation of channel k (kilnChannelEntryGpu), so every NIC
   * carries one tree where its node is interior and one where it is a leaf: the NICs are evenly
   * loaded, as in NCCL. */
  *pairs = cycle ? nic_channels(t) : 1;
  /* Slices as NCCL cuts them for trees: halve the 512 KiB slice (down to 128 KiB) until the
   * pipeline holds at least 8 slices per level of the tree. */
  const double part = (double)bytes / (2 * *pairs);
  const int depth = g + (int)ceil(log2((double)t->nodes + 1));
  *slice = KILN_SIM_SLICE_BYTES;
  while (part / *slice < depth * 8.0 && *slice > KILN_SIM_SLICE_BYTES / 4) *slice /= 2;
  return KILN_SUCCESS;
}

static kilnResult_t baseline_tree(const kilnTopology* t, uint64_t bytes, const kilnSimParams* sp,
                                  kilnProto_t proto, kilnSimResult* out) {
  int n = t->nranks, g = t->gpus_per_node;
  int* path = malloc(sizeof(int) * (size_t)g);
  int* parent = malloc(sizeof(int) * (size_t)n);
  kilnResult_t res = KILN_SUCCESS;
  if (!path || !parent) {
    res = kilnSetError(KILN_ERR_NO_MEMORY, "simulator: out of memory");
    goto out_free;
  }
  int pairs;
  double slice;
  res = tree_shape(t, bytes, path, &pairs, &slice);
  if (res != KILN_SUCCESS) goto out_free;
  treeSetup ts = {t, path, parent, pairs, sp, proto};
  res = sliced(tree_run, &ts, (double)bytes, 2.0 * pairs * slice, out);
out_free:
  free(path);
  free(parent);
  return res;
}

kilnResult_t kilnBaselineTrees(const kilnTopology* t, uint64_t bytes, int* ntrees, int* slices,
                               int** parents) {
  *parents = NULL;
  *ntrees = *slices = 0;
  const int n = t->nranks, g = t->gpus_per_node;
  int* path = malloc(sizeof(int) * (size_t)g);
  if (!path) return kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
  int pairs;
  double slice;
  kilnResult_t res = tree_shape(t, bytes, path, &pairs, &slice);
  int* par = res == KILN_SUCCESS ? malloc(sizeof(int) * (size_t)n * 2 * (size_t)pairs) : NULL;
  if (res == KILN_SUCCESS && !par) res = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
  if (res == KILN_SUCCESS) {
    for (int tree = 0; tree < 2 * pairs; tree++)
      build_tree(t, path, channel_rot(t, path, tree / 2), tree % 2 == 1, &par[(size_t)tree * n]);
    const double sd = ceil((double)bytes / (2.0 * pairs * slice));
    *slices = sd < 1 ? 1 : sd > KILN_SIM_MAX_SLICES ? KILN_SIM_MAX_SLICES : (int)sd;
    *ntrees = 2 * pairs;
    *parents = par;
  }
  free(path);
  return res;
}

/* NCCL's algorithm b in protocol proto. */
static kilnResult_t baseline_proto(kilnBaseline_t b, kilnColl_t coll, const kilnTopology* t, uint64_t bytes,
                                   const kilnSimParams* sp, kilnProto_t proto, kilnSimResult* out) {
  if (b == KILN_BASELINE_TREE) return baseline_tree(t, bytes, sp, proto, out);
  if (coll == KILN_COLL_ALLTOALL) return baseline_alltoall(t, bytes, sp, proto, out);
  return baseline_ring(coll, t, bytes, sp, proto, out);
}

kilnResult_t kilnBaselineSimulate(kilnBaseline_t b, kilnColl_t coll, const kilnTopology* t, uint64_t bytes,
                                  kilnSimResult* out) {
  return kilnBaselineSimulateWith(b, coll, t, bytes, NULL, out);
}

kilnResult_t kilnBaselineSimulateWith(kilnBaseline_t b, kilnColl_t coll, const kilnTopology* t,
                                      uint64_t bytes, const kilnSimParams* params, kilnSimResult* out) {
  if (!t || !out) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnBaselineSimulate: NULL argument");
  memset(out, 0, sizeof *out);
  if (t->nranks < 2)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "topology %s has %d rank: baselines need at least 2",
                        t->name, t->nranks);
  if (coll == KILN_COLL_CUSTOM || (unsigned)coll >= KILN_NUM_COLLS)
    return kilnSetError(KILN_ERR_UNSUPPORTED, "no NCCL baseline for collective %s", kilnCollName(coll));
  if (b != KILN_BASELINE_RING && b != KILN_BASELINE_TREE)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "unknown baseline %d", (int)b);
  if (b == KILN_BASELINE_TREE && coll != KILN_COLL_ALLREDUCE)
    return kilnSetError(KILN_ERR_UNSUPPORTED,
                        "NCCL's tree algorithm implements only allreduce, not %s (use ring)",
                        kilnCollName(coll));
  const kilnSimParams nccl = KILN_SIM_PARAMS_NCCL;
  if (!params) params = &nccl;
  kilnResult_t res = kilnSimParamsCheck(params);
  /* NCCL's tuner picks the protocol it predicts fastest: so does the baseline. */
  static const kilnProto_t protos[] = {KILN_PROTO_LL, KILN_PROTO_LL128, KILN_PROTO_SIMPLE};
  for (int i = 0; i < 3 && res == KILN_SUCCESS; i++) {
    kilnSimResult r;
    res = baseline_proto(b, coll, t, bytes, params, protos[i], &r);
    if (res == KILN_SUCCESS && (i == 0 || r.time_us < out->time_us)) *out = r;
  }
  if (res == KILN_SUCCESS) out->time_us += params->fifo_launch_us;
  return res;
}
