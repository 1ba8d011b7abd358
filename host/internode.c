/*
 * Plans across nodes through NCCL: on a communicator of several nodes, a plan runs cut into
 * phases (solver/phases.h), each rank's in phase order on the call's stream: a kernel phase is a
 * launch of kiln's interpreter on that phase's sub-plan (the steps whose peers share this rank's
 * node, over peer memory as any plan), a point-to-point phase is one group of NCCL calls
 * (ncclGroupStart, ncclSend / ncclRecv with the peers of other nodes, ncclGroupEnd). NCCL's calls
 * are enqueued on the same stream, so a call is one stream's work and a CUDA graph can capture
 * it; NCCL carries them over whatever network it has (InfiniBand, RoCE, sockets). Why this path
 * and not NCCL's GPU-initiated networking: docs/INTERNODE.md.
 *
 * Every phase of a call shares one scratch buffer (the plan's scratch, then the pieces received
 * from other nodes, kilnPhases.scratch); avg runs as a sum and the rank's last kernel divides (a
 * kernel of one nop step where the rank's last phase is a group of NCCL calls).
 *
 * Inside a kiln group (kilnGroupStart/End) calls are queued and issued at its end: the k-th call of
 * each communicator together, phase by phase, a phase's NCCL calls of all of them in one NCCL
 * group, so that one thread can drive several ranks (NCCL wants a process's ranks' point-to-point
 * calls of one exchange in one group).
 *
 * Communicators made without NCCL (kilnCommCreateShared, for the GPU suites: several ranks on one
 * GPU) have no NCCL to carry the phases between nodes: there the queued calls of a group, which
 * must then hold the call of every rank, exchange them with cudaMemcpyAsync between the ranks'
 * buffers, ordered by events (the receiver's stream waits for the sender's, the sender's for the
 * copies), in the order NCCL would match them.
 *
 * Failures: a kernel phase waits for the peers of its node as any kiln kernel (kilnCommConfig
 * timeoutMs, the abort word); a group waits in NCCL, whose errors (a peer of another node that died
 * or never came) NCCL reports (ncclGroupEnd's result, ncclCommGetAsyncError, which
 * kilnCommGetAsyncError passes on). After kilnCommAbort and ncclCommAbort kiln's queued kernels
 * leave at once (the abort word) and NCCL's are gone: nothing waits.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../solver/params.h"
#include "../solver/phases.h"
#include "internode_nccl.h"
#include "kiln/registry.h"
#include "launch.h"
#include "runtime_internal.h"

struct kilnPhased {
  struct kilnComm* comm;
  kilnPhases* ph;
  kilnColl_t coll;
  bool inplaceForm;  /* the plan leaves out a buffer (kilnPlanInPlaceOnly) */
  bool serves[2];    /* [inplace] (kilnPlanServes) */
  kilnExec_t* execs; /* [nphases]: this rank's kernel phases (NULL: a group, or no work here) */
  int* mine;         /* this rank's phases, in order */
  int nmine;
  kilnExec_t divide; /* reducing collectives whose rank ends on a group: a kernel of a nop step,
                       * for avg's division */
  kilnScratch scratch;
  cudaEvent_t event; /* the copy transport's (communicators made without NCCL) */
};

void kilnPhasedFree(struct kilnPhased* px) {
  if (!px) return;
  for (int i = 0; px->execs && i < px->ph->nphases; i++) kilnExecFree(px->execs[i]);
  kilnExecFree(px->divide);
  const int save = kilnEnterDeviceIdle(px->comm);
  kilnScratchFree(&px->scratch);
  if (px->event) cudaEventDestroy(px->event);
  kilnLeaveDevice(px->comm, save);
  free(px->execs);
  free(px->mine);
  kilnPhasesFree(px->ph);
  free(px);
}

/* A plan of p's buffers whose every rank has one threadblock of one nop step. */
static kilnResult_t nop_plan(const kilnPlan* p, kilnPlan** out) {
  char name[KILN_NAME_MAX];
  snprintf(name, sizeof name, "%.*s#divide", KILN_NAME_MAX - 8, p->name);
  kilnResult_t res = kilnPlanCreate(name, p->coll, p->ngpus, out);
  if (res != KILN_SUCCESS) return res;
  kilnPlan* q = *out;
  q->inplace = p->inplace;
  q->outofplace = p->outofplace;
  q->nchunksperloop = p->nchunksperloop;
  for (int r = 0; r < p->ngpus; r++) {
    q->gpus[r].i_chunks = p->gpus[r].i_chunks;
    q->gpus[r].o_chunks = p->gpus[r].o_chunks;
    kilnThreadblock* tb = kilnPlanAddThreadblock(q, r, -1, -1, 0);
    if (!tb || !kilnPlanAddStep(tb, KILN_STEP_NOP, KILN_BUF_INPUT, 0, KILN_BUF_INPUT, 0, 0)) {
      kilnPlanFree(q);
      *out = NULL;
      return kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
    }
  }
  return KILN_SUCCESS;
}

kilnResult_t kilnPhasedLoad(struct kilnComm* c, const kilnPlan* p, struct kilnPhased** out) {
  const int rank = c->rank;
  struct kilnPhased* px = calloc(1, sizeof *px);
  if (!px) return kilnSetError(KILN_ERR_NO_MEMORY, "out of memory loading plan %s", p->name);
  px->comm = c;
  px->coll = p->coll;
  px->inplaceForm = kilnPlanInPlaceOnly(p);
  px->serves[0] = kilnPlanServes(p, false);
  px->serves[1] = kilnPlanServes(p, true);
  kilnResult_t res = kilnPhasesBuild(p, c->nnodes, NULL, &px->ph);
  if (res != KILN_SUCCESS) {
    kilnPrefixError("rank %d: plan %s on %d nodes of %d ranks: ", rank, p->name, c->nnodes, c->nodeSize);
    free(px);
    return res;
  }
  const kilnPhases* ph = px->ph;
  for (int r = 0; r < c->nranks; r++) px->scratch.any |= ph->scratch[r] > 0;
  px->execs = calloc((size_t)ph->nphases + 1, sizeof *px->execs);
  px->mine = calloc((size_t)ph->nphases + 1, sizeof *px->mine);
  if (!px->execs || !px->mine) {
    res = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory loading plan %s", p->name);
    goto fail;
  }
  for (int i = 0; i < ph->nphases; i++) {
    if (!kilnPhasesRankHas(ph, i, rank)) continue;
    px->mine[px->nmine++] = i;
    if (ph->phases[i].p2p) continue;
    if ((res = kilnExecLoadPart(c, ph->phases[i].plan, &px->execs[i])) != KILN_SUCCESS) {
      kilnPrefixError("rank %d: plan %s, kernel phase %d of %d: ", rank, p->name, i, ph->nphases);
      goto fail;
    }
  }
  if ((p->coll == KILN_COLL_ALLREDUCE || p->coll == KILN_COLL_REDUCESCATTER) && px->nmine > 0 &&
      ph->phases[px->mine[px->nmine - 1]].p2p) {
    kilnPlan* q = NULL;
    res = nop_plan(p, &q);
    if (res == KILN_SUCCESS) res = kilnExecLoadPart(c, q, &px->divide);
    kilnPlanFree(q);
    if (res != KILN_SUCCESS) goto fail;
  }
  if (kilnDebugLevel() >= KILN_DEBUG_INFO) {
    int groups = 0, mineGroups = 0;
    for (int i = 0; i < ph->nphases; i++) groups += ph->phases[i].p2p;
    for (int j = 0; j < px->nmine; j++) mineGroups += ph->phases[px->mine[j]].p2p;
    fprintf(stderr,
            "kiln: rank %d: plan %s on %d nodes of %d ranks: %d phases (%d groups of NCCL calls), this rank "
            "in %d (%d groups); %d messages between nodes or through NCCL (%d received apart)\n",
            rank, p->name, c->nnodes, c->nodeSize, ph->nphases, groups, px->nmine, mineGroups, ph->nmessages,
            ph->napart);
  }
  *out = px;
  return KILN_SUCCESS;
fail:
  kilnPhasedFree(px);
  return res;
}

/* The memory of plan buffer buf for a call (as exec.c maps the kernel's buffers). */
static char* buf_base(const kilnPhasedCall* call, kilnBuffer_t buf) {
  const struct kilnPhased* px = call->px;
  if (buf == KILN_BUF_SCRATCH) return px->scratch.p;
  if (buf == KILN_BUF_OUTPUT && !(px->inplaceForm && px->coll == KILN_COLL_ALLREDUCE))
    return (char*)call->recvbuf;
  return (char*)call->sendbuf;
}

/* The checks kilnRun makes of a call, once for all its phases; *none for a call of no elements. */
static kilnResult_t call_check(struct kilnPhased* px, const void* sendbuf, void* recvbuf, size_t count,
                               kilnDataType_t dtype, kilnRedOp_t op, bool* none) {
  const struct kilnComm* c = px->comm;
  *none = true;
  kilnResult_t res = kilnCommCallCheck(c, count, sendbuf, recvbuf, dtype, op);
  if (res != KILN_SUCCESS || count == 0) return res;
  const bool inplace = kilnRegistryCallInPlace(px->coll, c->rank, sendbuf, recvbuf, count, dtype);
  if (px->coll == KILN_COLL_ALLTOALL && inplace)
    return kilnSetError(KILN_ERR_UNSUPPORTED, "rank %d: in-place alltoall", c->rank);
  if (!px->serves[inplace])
    return kilnSetError(KILN_ERR_UNSUPPORTED, "rank %d: the plan serves %s calls only, this one is %s",
                        c->rank, inplace ? "out-of-place" : "in-place",
                        inplace ? "in place" : "out of place");
  *none = false;
  return KILN_SUCCESS;
}

/* Grows the call's scratch to what count elements of dtype take (on c's device, current). */
static kilnResult_t scratch_for(struct kilnPhased* px, size_t count, kilnDataType_t dtype) {
  const size_t piece = kilnScratchPiece(count, (size_t)px->ph->k, kilnDataTypeSize(dtype));
  const size_t chunks = (size_t)px->ph->scratch[px->comm->rank];
  return kilnScratchGrow(&px->scratch, chunks * piece, px->comm->rank);
}

bool kilnPhasedScratchHolds(const struct kilnPhased* px, size_t count, kilnDataType_t dtype) {
  return kilnScratchHolds(&px->scratch, kilnScratchPiece(count, (size_t)px->ph->k, kilnDataTypeSize(dtype)));
}

kilnResult_t kilnPhasedRun(struct kilnPhased* px, const void* sendbuf, void* recvbuf, size_t count,
                           kilnDataType_t dtype, kilnRedOp_t op, cudaStream_t stream) {
  bool none = true;
  kilnResult_t res = call_check(px, sendbuf, recvbuf, count, dtype, op, &none);
  /* Noted on every rank, also one with no phase of the plan (kilnExecScratchHolds). */
  if (res == KILN_SUCCESS && !none)
    kilnScratchNote(&px->scratch, kilnScratchPiece(count, (size_t)px->ph->k, kilnDataTypeSize(dtype)));
  if (res != KILN_SUCCESS || none || px->nmine == 0) return res;
  struct kilnComm* c = px->comm;
  const int save = kilnEnterDevice(c, true);
  res = scratch_for(px, count, dtype);
  kilnLaunch l;
  memset(&l, 0, sizeof l);
  l.comm = c;
  l.stream = stream;
  l.dtype = (int)dtype;
  l.phased = true;
  l.call = (kilnPhasedCall){px, sendbuf, recvbuf, count, (int)op};
  if (res == KILN_SUCCESS) {
    if (kilnGroupActive()) {
      res = kilnGroupQueue(&l);
    } else if (c->sharedWin) {
      res = kilnSetError(KILN_ERR_UNSUPPORTED,
                         "rank %d: a communicator made without NCCL runs a plan across nodes "
                         "only in a kiln group that holds every rank's call",
                         c->rank);
    } else if ((res = kilnLaunchCapture(&l)) == KILN_SUCCESS) {
      res = kilnPhasedIssue(&l, 1);
    }
  }
  kilnLeaveDevice(c, save);
  return res;
}

/* ---- issuing ---- */

typedef struct {
  kilnLaunch* l;
  int round; /* its place among the calls of its communicator */
  int next;  /* next of its phases (index into px->mine) */
} callState;

/* Rank's NCCL calls of phase i, recorded (the copy transport pairs them as NCCL would). */
typedef struct {
  bool send;
  int peer;
  char* p;
  uint64_t n;
} rec;
typedef struct {
  const kilnLaunch* l;
  size_t es;
  rec* v;
  int n, cap;
} recList;

static int record(void* ctx, bool send, int peer, kilnBuffer_t buf, uint64_t off, uint64_t n) {
  recList* r = ctx;
  if (r->n == r->cap) {
    const int cap = r->cap ? 2 * r->cap : 16;
    rec* v = realloc(r->v, (size_t)cap * sizeof *v);
    if (!v) return -1;
    r->v = v;
    r->cap = cap;
  }
  r->v[r->n++] = (rec){send, peer, buf_base(&r->l->call, buf) + off * r->es, n};
  return 0;
}

/* The copy transport for calls cs[0..m) of communicators made without NCCL, all in phase i
 * (rank of each: its communicator's): receivers wait for their senders' streams, copy, and the
 * senders wait for those copies. */
static kilnResult_t copy_phase(callState* const* cs, int m, int i) {
  kilnResult_t res = KILN_SUCCESS;
  recList* lists = calloc((size_t)m, sizeof *lists);
  if (!lists) return kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
  for (int a = 0; a < m && res == KILN_SUCCESS; a++) {
    lists[a].l = cs[a]->l;
    lists[a].es = kilnDataTypeSize((kilnDataType_t)cs[a]->l->dtype);
    const kilnPhasedCall* call = &cs[a]->l->call;
    if (kilnPhasesP2pCalls(call->px->ph, i, call->px->comm->rank, call->count, record, &lists[a]) != 0)
      res = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
  }
  /* Every sender's stream as it stands now. */
  for (int a = 0; a < m && res == KILN_SUCCESS; a++) {
    struct kilnPhased* px = cs[a]->l->call.px;
    cudaSetDevice(px->comm->dev);
    if (!px->event && cudaEventCreateWithFlags(&px->event, cudaEventDisableTiming) != cudaSuccess)
      res = kilnSetError(KILN_ERR_CUDA, "rank %d: cudaEventCreate failed", px->comm->rank);
    else if (cudaEventRecord(px->event, cs[a]->l->stream) != cudaSuccess)
      res = kilnSetError(KILN_ERR_CUDA, "rank %d: cudaEventRecord failed", px->comm->rank);
  }
  /* Each receiver: its k-th receive from rank q takes q's k-th send to it. */
  for (int b = 0; b < m && res == KILN_SUCCESS; b++) {
    const struct kilnComm* cb = cs[b]->l->call.px->comm;
    cudaSetDevice(cb->dev);
    for (int j = 0; j < lists[b].n && res == KILN_SUCCESS; j++) {
      const rec* r = &lists[b].v[j];
      if (r->send) continue;
      int a = 0;
      while (a < m && cs[a]->l->call.px->comm->rank != r->peer) a++;
      if (a == m) {
        res =
            kilnSetError(KILN_ERR_UNSUPPORTED,
                         "rank %d: its peer %d of another node has no call in the group", cb->rank, r->peer);
        break;
      }
      int k = 0; /* which receive from that peer this is */
      for (int t = 0; t < j; t++) k += !lists[b].v[t].send && lists[b].v[t].peer == r->peer;
      const rec* s = NULL;
      for (int t = 0; t < lists[a].n && !s; t++)
        if (lists[a].v[t].send && lists[a].v[t].peer == cb->rank && k-- == 0) s = &lists[a].v[t];
      if (!s || s->n != r->n) {
        res = kilnSetError(KILN_ERR_INTERNAL,
                           "rank %d: receive %d of phase %d from rank %d has no send of its size", cb->rank,
                           j, i, r->peer);
        break;
      }
      if (cudaStreamWaitEvent(cs[b]->l->stream, cs[a]->l->call.px->event, 0) != cudaSuccess ||
          cudaMemcpyAsync(r->p, s->p, r->n * lists[b].es, cudaMemcpyDefault, cs[b]->l->stream) != cudaSuccess)
        res = kilnSetError(KILN_ERR_CUDA, "rank %d: copying phase %d's piece from rank %d failed", cb->rank,
                           i, r->peer);
    }
  }
  /* Each sender waits for its receivers' copies. */
  for (int b = 0; b < m && res == KILN_SUCCESS; b++) {
    cudaSetDevice(cs[b]->l->call.px->comm->dev);
    if (cudaEventRecord(cs[b]->l->call.px->event, cs[b]->l->stream) != cudaSuccess)
      res = kilnSetError(KILN_ERR_CUDA, "cudaEventRecord failed");
  }
  for (int a = 0; a < m && res == KILN_SUCCESS; a++) {
    cudaSetDevice(cs[a]->l->call.px->comm->dev);
    for (int j = 0; j < lists[a].n && res == KILN_SUCCESS; j++) {
      if (!lists[a].v[j].send) continue;
      for (int b = 0; b < m; b++)
        if (cs[b]->l->call.px->comm->rank == lists[a].v[j].peer &&
            cudaStreamWaitEvent(cs[a]->l->stream, cs[b]->l->call.px->event, 0) != cudaSuccess)
          res = kilnSetError(KILN_ERR_CUDA, "cudaStreamWaitEvent failed");
    }
  }
  for (int a = 0; a < m; a++) free(lists[a].v);
  free(lists);
  if (res != KILN_SUCCESS) cudaGetLastError();
  return res;
}

/* Issues kernel phase i of a call (or its division kernel, exec given), op as given. */
static kilnResult_t kernel_phase(const kilnLaunch* l, kilnExec_t x, kilnRedOp_t op) {
  const kilnPhasedCall* call = &l->call;
  kilnLaunch k;
  bool none = true;
  cudaSetDevice(call->px->comm->dev);
  kilnResult_t res =
      kilnExecPartLaunch(x, call->sendbuf, call->recvbuf, call->count, (kilnDataType_t)l->dtype, op,
                         l->stream, call->px->scratch.p, &k, &none);
  if (res != KILN_SUCCESS || none) return res;
  k.capturing = l->capturing;
  return kilnLaunchIssue(&k);
}

static void keep_first(kilnResult_t r, kilnResult_t* first, char* msg, size_t len) {
  if (r == KILN_SUCCESS || *first != KILN_SUCCESS) return;
  *first = r;
  snprintf(msg, len, "%s", kilnLastError());
}

/* One round: the k-th call of each communicator, phase by phase. */
static kilnResult_t issue_round(callState* const* cs, int m, kilnResult_t* first, char* msg, size_t len) {
  callState** part = calloc((size_t)m + 1, sizeof *part);
  if (!part) return kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
  int maxPhases = 0;
  for (int a = 0; a < m; a++) {
    const kilnLaunch* l = cs[a]->l;
    struct kilnComm* c = l->call.px->comm;
    if (l->call.px->ph->nphases > maxPhases) maxPhases = l->call.px->ph->nphases;
    /* Calls on one communicator run in issue order, across streams too (exec.c's rule). */
    cudaSetDevice(c->dev);
    unsigned long long sid = 0;
    if (!l->capturing && c->haveLast && cudaStreamGetId(l->stream, &sid) == cudaSuccess &&
        sid != c->lastStream && cudaStreamWaitEvent(l->stream, c->last, 0) != cudaSuccess)
      keep_first(kilnSetError(KILN_ERR_CUDA, "rank %d: cudaStreamWaitEvent failed", c->rank), first, msg,
                 len);
  }
  for (int i = 0; i < maxPhases; i++) {
    int npCopy = 0;
    bool anyGroup = false;
    for (int a = 0; a < m; a++) {
      callState* s = cs[a];
      const struct kilnPhased* px = s->l->call.px;
      if (s->next >= px->nmine || px->mine[s->next] != i) continue;
      if (!px->ph->phases[i].p2p) {
        const kilnRedOp_t op = (kilnRedOp_t)s->l->call.op;
        /* avg: a sum until the rank's last kernel, which divides. */
        const bool last = s->next == px->nmine - 1;
        keep_first(kernel_phase(s->l, px->execs[i], op == KILN_AVG && !last ? KILN_SUM : op), first, msg,
                   len);
        s->next++;
      } else {
        anyGroup = true;
      }
    }
    if (!anyGroup) continue;
    /* NCCL's calls of the phase, every communicator's in one group. */
    bool open = false;
    for (int a = 0; a < m; a++) {
      callState* s = cs[a];
      const struct kilnPhased* px = s->l->call.px;
      if (s->next >= px->nmine || px->mine[s->next] != i) continue;
      s->next++;
      if (px->comm->sharedWin) {
        part[npCopy++] = s;
        continue;
      }
      if (!open) {
        ncclResult_t g = ncclGroupStart();
        if (g != ncclSuccess)
          keep_first(kilnSetError(KILN_ERR_NCCL, "ncclGroupStart: %s", ncclGetErrorString(g)), first, msg,
                     len);
        open = true;
      }
      cudaSetDevice(px->comm->dev);
      kilnNcclIssue x;
      for (int b = 0; b < KILN_NUM_BUFFERS; b++) x.bases[b] = buf_base(&s->l->call, (kilnBuffer_t)b);
      x.esize = kilnDataTypeSize((kilnDataType_t)s->l->dtype);
      x.dtype = (ncclDataType_t)s->l->dtype;
      x.comm = px->comm->nccl;
      x.stream = s->l->stream;
      const ncclResult_t e = kilnPhasesNcclCalls(px->ph, i, px->comm->rank, s->l->call.count, &x);
      if (e != ncclSuccess)
        keep_first(kilnSetError(KILN_ERR_NCCL, "rank %d: phase %d: ncclSend/ncclRecv: %s", px->comm->rank, i,
                                ncclGetErrorString(e)),
                   first, msg, len);
    }
    if (open) {
      const ncclResult_t g = ncclGroupEnd();
      if (g != ncclSuccess && g != ncclInProgress)
        keep_first(kilnSetError(KILN_ERR_NCCL, "phase %d: ncclGroupEnd: %s", i, ncclGetErrorString(g)), first,
                   msg, len);
    }
    if (npCopy > 0) keep_first(copy_phase(part, npCopy, i), first, msg, len);
  }
  /* The division of avg where a rank ends on a group, then the call's end for the next call. */
  for (int a = 0; a < m; a++) {
    const kilnLaunch* l = cs[a]->l;
    struct kilnPhased* px = l->call.px;
    struct kilnComm* c = px->comm;
    if (px->divide && l->call.op == KILN_AVG)
      keep_first(kernel_phase(l, px->divide, KILN_AVG), first, msg, len);
    cudaSetDevice(c->dev);
    unsigned long long sid = 0;
    if (!l->capturing && cudaStreamGetId(l->stream, &sid) == cudaSuccess &&
        cudaEventRecord(c->last, l->stream) == cudaSuccess) {
      c->haveLast = true;
      c->lastStream = sid;
    }
  }
  free(part);
  return KILN_SUCCESS;
}

kilnResult_t kilnPhasedIssue(kilnLaunch* v, size_t n) {
  if (n == 0) return KILN_SUCCESS;
  int save = 0;
  cudaGetDevice(&save);
  kilnResult_t first = KILN_SUCCESS;
  char msg[1024] = "";
  callState* st = calloc(n, sizeof *st);
  callState** cs = calloc(n, sizeof *cs);
  if (!st || !cs) {
    free(st);
    free(cs);
    return kilnSetError(KILN_ERR_NO_MEMORY, "out of memory issuing a group's calls across nodes");
  }
  int rounds = 0;
  for (size_t j = 0; j < n; j++) {
    st[j].l = &v[j];
    for (size_t t = 0; t < j; t++) st[j].round += v[t].comm == v[j].comm;
    if (st[j].round + 1 > rounds) rounds = st[j].round + 1;
  }
  for (int r = 0; r < rounds; r++) {
    int m = 0;
    for (size_t j = 0; j < n; j++)
      if (st[j].round == r) {
        /* A call queued before the communicator was aborted is not issued (exec.c's rule). */
        if (__atomic_load_n(&v[j].comm->aborted, __ATOMIC_ACQUIRE)) {
          keep_first(kilnSetError(KILN_ERR_INVALID_ARGUMENT,
                                  "rank %d: the communicator was aborted (kilnCommAbort) "
                                  "before the group's end: its call is not launched",
                                  v[j].comm->rank),
                     &first, msg, sizeof msg);
          continue;
        }
        cs[m++] = &st[j];
      }
    issue_round(cs, m, &first, msg, sizeof msg);
  }
  free(st);
  free(cs);
  cudaSetDevice(save);
  return first == KILN_SUCCESS ? KILN_SUCCESS : kilnSetError(first, "%s", msg);
}
