/*
 * Plans with memory steps on the GPU: kilnPlanLoad uploads a rank's passes (kiln/passes.h) with
 * their operands; kilnRun sizes the call's slices so that every rank's scratch chunks fit the
 * window's plan areas, finds the peers' buffers the plan reaches, and launches one kernel
 * (kernels/mem.cuh: the interpreter, or the plan's baked kernel) through the driver with
 * programmatic stream serialization where the communicator launches its symmetric kernels so.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/passes.h"
#include "kiln/registry.h"
#include "kiln_dev.h"
#include "launch.h"
#include "memplan.h"
#include "runtime_internal.h"

_Static_assert(KILN_PASS_MAX_RANKS == KILN_DEV_MEM_MAX_RANKS, "one rank bound for passes and kernels");
_Static_assert(KILN_PASS_SIG_BITS == KILN_DEV_SIG_SHIFT, "one signal value for passes and kernels");
_Static_assert(2 * KILN_PASS_MAX_PAIRS <= KILN_DEV_PASS_MAX_OPS &&
                   KILN_PASS_MAX_OPS + 1 <= KILN_DEV_PASS_MAX_OPS,
               "a pass's operands fit the kernels' bound");
_Static_assert((int)KILN_PASS_PUT == KILN_DEV_PASS_PUT && (int)KILN_PASS_REDUCE == KILN_DEV_PASS_REDUCE &&
                   (int)KILN_PASS_COPY == KILN_DEV_PASS_COPY &&
                   (int)KILN_PASS_SIGNAL == KILN_DEV_PASS_SIGNAL &&
                   (int)KILN_PASS_WAIT == KILN_DEV_PASS_WAIT && (int)KILN_PASS_NOP == KILN_DEV_PASS_NOP,
               "pass kinds numbered alike");
_Static_assert((int)KILN_OPND_USER == KILN_DEV_OPND_USER && (int)KILN_OPND_SCRATCH == KILN_DEV_OPND_SCRATCH &&
                   (int)KILN_OPND_LINES == KILN_DEV_OPND_LINES &&
                   (int)KILN_OPND_SIGNAL == KILN_DEV_OPND_SIGNAL && (int)KILN_LINES_16 == KILN_DEV_LINES16 &&
                   (int)KILN_LINES_128 == KILN_DEV_LINES128,
               "operands numbered alike");
_Static_assert((int)KILN_PROTO_LL12 == KILN_DEV_PROTO_LL12 && (int)KILN_PROTO_LL128 == KILN_DEV_PROTO_LL128 &&
                   (int)KILN_PROTO_LL == KILN_DEV_PROTO_LL && (int)KILN_PROTO_SIMPLE == KILN_DEV_PROTO_SIMPLE,
               "protocols numbered alike");

/* The plans' line areas: a half of 16-byte lines and a half of LL128 lines each this large, at
 * most a plain half (kilnCommConfig.symBytes / 2): room for the lines of every chunk of a call up
 * to 2 MiB of data per peer at 4 ranks (16-byte lines: LL's 2 bytes per data byte), more in
 * slices. */
#define KILN_MEM_LINE_HALF ((size_t)8 << 20)

struct kilnMemPlan {
  struct kilnComm* comm;
  kilnColl_t coll;
  int ntbs, chunksPerBlock;
  bool inplaceForm, serves[2];
  int scratch[3];  /* the most chunks of each kind (plain, 16-byte lines, LL128) of any rank */
  int maxCnt[4];   /* the most chunks a pass covers, by its protocol (KILN_DEV_PROTO_*) */
  int lines;       /* the line protocol of the plan (Simple: none): the interpreter's kernel */
  bool linesOnly;  /* every pass that moves data between ranks moves lines */
  bool reaches[2]; /* some pass reaches a peer's input / output */
  bool hasDeps;
  int maxTbSteps;
  uint64_t hash;
  kilnDevTb* tbs; /* device */
  kilnDevPass* passes;
  kilnDevOpnd* opnds;
  uint64_t* progress;
  uint64_t* callSeq;
  unsigned long long* done;
  const kilnRegistryEntry* baked;
  bool useBaked;
};

#define CUDA_TRY(call, label)                                                                    \
  do {                                                                                           \
    cudaError_t e_ = (call);                                                                     \
    if (e_ != cudaSuccess) {                                                                     \
      res = kilnSetError(KILN_ERR_CUDA, "rank %d: %s: %s", rank, #call, cudaGetErrorString(e_)); \
      goto label;                                                                                \
    }                                                                                            \
  } while (0)

void kilnMemPlanAreas(struct kilnComm* c, size_t at) {
  const size_t half = c->nranks <= KILN_DEV_MEM_MAX_RANKS ? c->symHalf : 0;
  const size_t lines = half < KILN_MEM_LINE_HALF ? half : KILN_MEM_LINE_HALF;
  c->memHalf = half;
  c->memPlainBase = (at + 4095) & ~(size_t)4095;
  c->memLineHalf[0] = c->memLineHalf[1] = lines;
  c->memLineBase[0] = c->memPlainBase + 2 * half;
  c->memLineBase[1] = c->memLineBase[0] + 2 * lines;
  c->memSigBase = c->memLineBase[1] + 2 * lines;
  c->memArriveBase = c->memSigBase + (size_t)c->nranks * (size_t)c->cfg.maxChannels * sizeof(uint64_t);
}

void kilnMemPlanFree(struct kilnMemPlan* m) {
  if (!m) return;
  const int save = kilnEnterDeviceIdle(m->comm);
  cudaFree(m->tbs);
  cudaFree(m->passes);
  cudaFree(m->opnds);
  cudaFree(m->progress);
  cudaFree(m->callSeq);
  cudaFree(m->done);
  kilnLeaveDevice(m->comm, save);
  free(m);
}

bool kilnMemPlanUseBaked(struct kilnMemPlan* m, bool on) {
  if (!m) return false;
  m->useBaked = on && m->baked != NULL;
  return m->baked != NULL;
}

/* A pass's protocol class for maxCnt: the line protocol it polls or writes, else Simple. */
static int pass_class(const kilnPass* ps) {
  if (ps->kind == KILN_PASS_SIGNAL || ps->kind == KILN_PASS_WAIT || ps->kind == KILN_PASS_NOP) return -1;
  return ps->proto == KILN_PROTO_SIMPLE ? KILN_DEV_PROTO_SIMPLE : (int)ps->proto;
}

_Static_assert(KILN_DEV_PASS_BARRIER == 1 && KILN_DEV_PASS_PUBLISH == 2 && KILN_DEV_PASS_SAME_SRC == 4 &&
                   KILN_DEV_PASS_POLLS == 8,
               "kilnPassFlags (kiln/passes.h) writes the kernels' pass flags");

kilnResult_t kilnMemPlanLoad(struct kilnComm* c, const kilnPlan* p, int k, struct kilnMemPlan** out) {
  const int rank = c->rank;
  kilnResult_t res = KILN_SUCCESS;
  if (c->memHalf == 0)
    return kilnSetError(KILN_ERR_UNSUPPORTED,
                        "plan %s: rank %d: the communicator has no staging for plans with memory steps "
                        "(kilnCommConfig.symBytes 0, or more than %d ranks)",
                        p->name, rank, KILN_DEV_MEM_MAX_RANKS);
  const kilnGpu* g = &p->gpus[rank];
  if (g->ntbs > KILN_DEV_MEM_SLOTS || g->ntbs > c->nsm)
    return kilnSetError(
        KILN_ERR_UNSUPPORTED,
        "plan %s: rank %d has %d threadblocks; a plan with memory steps takes at most %d here (its "
        "blocks must all be resident)",
        p->name, rank, g->ntbs, c->nsm < KILN_DEV_MEM_SLOTS ? c->nsm : KILN_DEV_MEM_SLOTS);
  struct kilnMemPlan* m = calloc(1, sizeof *m);
  kilnRankPasses mine;
  memset(&mine, 0, sizeof mine);
  kilnDevTb* htbs = NULL;
  kilnDevPass* hpasses = NULL;
  kilnDevOpnd* hops = NULL;
  int save = 0;
  cudaGetDevice(&save);
  if (!m) return kilnSetError(KILN_ERR_NO_MEMORY, "out of memory loading plan %s", p->name);
  m->comm = c;
  m->coll = p->coll;
  m->ntbs = g->ntbs;
  m->chunksPerBlock = k;
  m->inplaceForm = kilnPlanInPlaceOnly(p);
  m->serves[0] = kilnPlanServes(p, false);
  m->serves[1] = kilnPlanServes(p, true);
  m->lines = KILN_DEV_PROTO_SIMPLE;
  m->linesOnly = true;
  /* Every rank's passes: the scratch of the largest rank sizes the slices (every rank must cut the
   * call alike), this rank's are uploaded. */
  for (int r = 0; r < p->ngpus && res == KILN_SUCCESS; r++) {
    kilnRankPasses rp;
    if ((res = kilnPlanMemPasses(p, r, &rp)) != KILN_SUCCESS) break;
    for (int x = 0; x < 3; x++)
      if (rp.scratch[x] > m->scratch[x]) m->scratch[x] = rp.scratch[x];
    for (int i = 0; i < rp.npasses; i++) {
      const kilnPass* ps = &rp.passes[i];
      const int cls = pass_class(ps);
      if (cls >= 0 && ps->cnt > m->maxCnt[cls]) m->maxCnt[cls] = ps->cnt;
      if ((ps->kind == KILN_PASS_PUT && ps->proto == KILN_PROTO_SIMPLE) ||
          (ps->kind != KILN_PASS_PUT && ps->kind < KILN_PASS_SIGNAL && !ps->polls)) {
        for (int o = 0; o < ps->nops; o++)
          if (rp.ops[ps->firstOp + o].rank != r && rp.ops[ps->firstOp + o].kind != KILN_OPND_SIGNAL)
            m->linesOnly = false; /* plain data moved between ranks */
      }
    }
    /* a buffer any rank reaches on a peer: every rank asks for it alike (kilnMemPlanServes), so
     * that no rank runs a call that another refuses */
    for (int i = 0; i < rp.nops; i++) {
      const kilnPassOperand* o = &rp.ops[i];
      if (o->kind == KILN_OPND_USER && o->rank != r) m->reaches[o->buf == KILN_BUF_OUTPUT] = true;
    }
    m->hash = rp.hash;
    if (r == rank)
      mine = rp;
    else
      kilnRankPassesFree(&rp);
  }
  if (res != KILN_SUCCESS) goto out_free;
  if (mine.lineProtos & (mine.lineProtos - 1)) {
    res = kilnSetError(KILN_ERR_UNSUPPORTED,
                       "plan %s: its puts write lines of two protocols; kiln's interpreter runs "
                       "one line protocol a plan",
                       p->name);
    goto out_free;
  }
  for (int q = KILN_PROTO_LL; q < KILN_NUM_PROTOS; q++)
    if (mine.lineProtos >> q & 1) m->lines = q;
  for (int r = 0; r < p->ngpus; r++)
    for (int t = 0; t < p->gpus[r].ntbs; t++) {
      const kilnThreadblock* tb = &p->gpus[r].tbs[t];
      if (tb->nsteps > m->maxTbSteps) m->maxTbSteps = tb->nsteps;
      for (int s = 0; s < tb->nsteps; s++) m->hasDeps = m->hasDeps || tb->steps[s].depid >= 0;
    }
  if (m->maxTbSteps < 1) m->maxTbSteps = 1;
  /* The tables. */
  htbs = calloc((size_t)g->ntbs + 1, sizeof *htbs);
  hpasses = calloc((size_t)mine.npasses + 1, sizeof *hpasses);
  hops = calloc((size_t)mine.nops + 1, sizeof *hops);
  if (!htbs || !hpasses || !hops) {
    res = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory loading plan %s", p->name);
    goto out_free;
  }
  for (int t = 0; t < g->ntbs; t++) {
    htbs[t].nsteps = g->tbs[t].nsteps;
    htbs[t].sendPeer = htbs[t].recvPeer = -1;
    htbs[t].firstPass = mine.npasses;
  }
  for (int i = mine.npasses - 1; i >= 0; i--) {
    const kilnPass* ps = &mine.passes[i];
    htbs[ps->tb].firstPass = i;
    htbs[ps->tb].npasses++;
  }
  {
    int* cls = malloc(sizeof(int) * 3 * (size_t)(g->ntbs + 1));
    if (!cls) {
      res = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory loading plan %s", p->name);
      goto out_free;
    }
    kilnPlanMemRowClasses(&mine, g->ntbs, cls, cls + g->ntbs + 1, cls + 2 * (g->ntbs + 1));
    for (int t = 0; t < g->ntbs; t++) {
      htbs[t].tmpl = cls[t];
      htbs[t].shift = cls[g->ntbs + 1 + t];
      htbs[t].chanShift = cls[2 * (g->ntbs + 1) + t];
    }
    free(cls);
  }
  for (int t = 0; t < g->ntbs; t++) {
    const int f = htbs[t].firstPass, n = htbs[t].npasses;
    htbs[t].firstOp = n ? mine.passes[f].firstOp : 0;
    htbs[t].nops = n ? mine.passes[f + n - 1].firstOp + mine.passes[f + n - 1].nops - htbs[t].firstOp : 0;
  }
  for (int i = 0; i < mine.npasses; i++) {
    const kilnPass* ps = &mine.passes[i];
    kilnDevPass* d = &hpasses[i];
    d->kind = (uint8_t)ps->kind;
    d->proto = (uint8_t)ps->proto;
    d->nops = (uint8_t)ps->nops;
    d->flags = (uint8_t)kilnPassFlags(ps);
    d->cnt = ps->cnt;
    d->firstOp = ps->firstOp;
    d->lastStep = ps->last;
    d->depid = ps->depid;
    d->deps = ps->deps;
    d->depNsteps = ps->depid >= 0 ? g->tbs[ps->depid].nsteps : 0;
    d->lineMask = kilnPassLineMask(&mine, ps);
  }
  for (int i = 0; i < mine.nops; i++) {
    const kilnPassOperand* o = &mine.ops[i];
    hops[i].kind = (uint8_t)o->kind;
    hops[i].rank = (uint8_t)o->rank;
    hops[i].buf = (uint8_t)o->buf;
    hops[i].off = o->off;
  }
  /* A baked kernel of the same plan (gen/ bakes plans with memory steps from these passes). */
  m->baked = kilnRegistryBakedFor(p);
  m->useBaked = m->baked != NULL && m->baked->inlined;
  cudaSetDevice(c->dev);
  for (int t = 0; m->baked && t < KILN_NUM_DTYPES; t++)
    if (m->baked->launch[t]) CUDA_TRY((cudaError_t)m->baked->launch[t](NULL, 0, NULL), out_free);
  {
    const size_t ntb = (size_t)g->ntbs + 1;
    CUDA_TRY(cudaMalloc((void**)&m->tbs, ntb * sizeof(kilnDevTb)), out_free);
    CUDA_TRY(cudaMalloc((void**)&m->passes, ((size_t)mine.npasses + 1) * sizeof(kilnDevPass)), out_free);
    CUDA_TRY(cudaMalloc((void**)&m->opnds, ((size_t)mine.nops + 1) * sizeof(kilnDevOpnd)), out_free);
    CUDA_TRY(cudaMalloc((void**)&m->progress, ntb * sizeof(uint64_t)), out_free);
    CUDA_TRY(cudaMalloc((void**)&m->callSeq, ntb * sizeof(uint64_t)), out_free);
    CUDA_TRY(cudaMalloc((void**)&m->done, sizeof(unsigned long long)), out_free);
    CUDA_TRY(cudaMemcpy(m->tbs, htbs, ntb * sizeof(kilnDevTb), cudaMemcpyHostToDevice), out_free);
    CUDA_TRY(cudaMemcpy(m->passes, hpasses, ((size_t)mine.npasses + 1) * sizeof(kilnDevPass),
                        cudaMemcpyHostToDevice),
             out_free);
    CUDA_TRY(
        cudaMemcpy(m->opnds, hops, ((size_t)mine.nops + 1) * sizeof(kilnDevOpnd), cudaMemcpyHostToDevice),
        out_free);
    CUDA_TRY(cudaMemset(m->progress, 0, ntb * sizeof(uint64_t)), out_free);
    CUDA_TRY(cudaMemset(m->callSeq, 0, ntb * sizeof(uint64_t)), out_free);
    CUDA_TRY(cudaMemset(m->done, 0, sizeof(unsigned long long)), out_free);
    CUDA_TRY(cudaDeviceSynchronize(), out_free);
  }
  cudaSetDevice(save);
  free(htbs);
  free(hpasses);
  free(hops);
  kilnRankPassesFree(&mine);
  *out = m;
  return KILN_SUCCESS;
out_free:
  cudaSetDevice(save);
  free(htbs);
  free(hpasses);
  free(hops);
  kilnRankPassesFree(&mine);
  kilnMemPlanFree(m);
  return res;
}

/* The bytes of a rank's input (b = 0) or output (1) of a call of `count` (NCCL's count). */
static uint64_t user_bytes(kilnColl_t coll, int n, size_t count, size_t es, int b) {
  const bool whole = b == 0 ? coll == KILN_COLL_ALLREDUCE || coll == KILN_COLL_ALLGATHER
                            : coll == KILN_COLL_ALLREDUCE || coll == KILN_COLL_REDUCESCATTER;
  return (uint64_t)count * es * (whole ? 1 : (uint64_t)n);
}

/* The largest slice (elements of a chunk an iteration, a multiple of vec, at most lr) whose
 * scratch chunks fit the plan areas: every rank's plain chunks a half of memHalf, its 16-byte line
 * chunks (LL's two bytes per data byte, LL12's too) and LL128 line chunks a half of their area. */
static uint64_t slice_for(const struct kilnMemPlan* m, size_t es, uint64_t vec, uint64_t lr) {
  const struct kilnComm* c = m->comm;
  uint64_t s = lr;
  if (m->scratch[0] > 0) {
    const uint64_t cap = c->memHalf / ((uint64_t)m->scratch[0] * es);
    if (cap < s) s = cap;
  }
  if (m->scratch[1] > 0) {
    const uint64_t lines = c->memLineHalf[0] / (uint64_t)m->scratch[1] / KILN_DEV_LL_LINE_BYTES;
    const uint64_t cap = lines * KILN_DEV_LL_DATA_BYTES / es;
    if (cap < s) s = cap;
  }
  if (m->scratch[2] > 0) {
    const uint64_t lines = c->memLineHalf[1] / (uint64_t)m->scratch[2] / KILN_DEV_LL128_LINE_BYTES;
    const uint64_t cap = lines * KILN_DEV_LL128_DATA_BYTES / es;
    if (cap < s) s = cap;
  }
  return s / vec * vec;
}

/* Threads a block of the call takes: what its widest pass needs for slices of s elements (LL and
 * LL12 a thread per line, LL128 8 per line in whole warps of 4 lines, Simple a thread per 16-byte
 * pack), in whole warps, at most the communicator's threads: a small call's block needs no more
 * warps than it has lines (as the symmetric kernels' LL blocks); a plan with lines at most
 * KILN_DEV_MEM_LINE_THREADS (its interpreter's bound). */
static int threads_for(const struct kilnMemPlan* m, size_t es, uint64_t s) {
  const uint64_t bytes = s * es;
  uint64_t t = 32;
  const uint64_t need[4] = {
      (uint64_t)m->maxCnt[KILN_DEV_PROTO_SIMPLE] * ((bytes + 15) / 16),
      (uint64_t)m->maxCnt[KILN_DEV_PROTO_LL] *
          ((bytes + KILN_DEV_LL_DATA_BYTES - 1) / KILN_DEV_LL_DATA_BYTES),
      (uint64_t)m->maxCnt[KILN_DEV_PROTO_LL128] *
          (((bytes + KILN_DEV_LL128_DATA_BYTES - 1) / KILN_DEV_LL128_DATA_BYTES + 3) / 4 * 32),
      (uint64_t)m->maxCnt[KILN_DEV_PROTO_LL12] *
          ((bytes + KILN_DEV_LL12_DATA_BYTES - 1) / KILN_DEV_LL12_DATA_BYTES)};
  for (int i = 0; i < 4; i++)
    if (need[i] > t) t = need[i];
  t = (t + 31) / 32 * 32;
  uint64_t cap = (uint64_t)m->comm->cfg.threads;
  if (m->lines != KILN_DEV_PROTO_SIMPLE && cap > KILN_DEV_MEM_LINE_THREADS) cap = KILN_DEV_MEM_LINE_THREADS;
  return t < cap ? (int)t : (int)cap;
}

/* What a call needs beyond the communicator's checks, decided alike on every rank: its form, its
 * type, slices of S elements (niter of them) whose scratch fits the plan areas, and the peers'
 * buffers the plan reaches (in windows every rank added, at the same offsets) into user. quiet: no
 * error text (kilnMemPlanServes). */
static kilnResult_t call_plan(const struct kilnMemPlan* m, const char* sb, char* rb, size_t count,
                              kilnDataType_t dtype, bool quiet, uint64_t* L, uint64_t* S, uint64_t* niter,
                              char* user[KILN_DEV_MEM_MAX_RANKS][2]) {
#define REFUSE(...) return quiet ? KILN_ERR_UNSUPPORTED : kilnSetError(KILN_ERR_UNSUPPORTED, __VA_ARGS__)
  const struct kilnComm* c = m->comm;
  const int rank = c->rank, n = c->nranks;
  const size_t es = kilnDataTypeSize(dtype);
  const bool inplace = kilnRegistryCallInPlace(m->coll, rank, sb, rb, count, dtype);
  const kilnResult_t form = kilnPlanFormCheck(m->coll, rank, inplace, m->inplaceForm, m->serves, quiet);
  if (form != KILN_SUCCESS) return form;
  if (m->lines == KILN_DEV_PROTO_LL12 && es > 4)
    REFUSE("rank %d: LL12 lines hold elements of at most 4 bytes, not %s", rank, kilnDataTypeName(dtype));
  const size_t k = (size_t)m->chunksPerBlock;
  *L = (count + k - 1) / k;
  const uint64_t vec = 16 / es, lr = (*L + vec - 1) / vec * vec;
  *S = slice_for(m, es, vec, lr);
  if (*S == 0)
    REFUSE("rank %d: the plan's scratch chunks do not fit the communicator's plan areas (%zu bytes a half)",
           rank, c->memHalf);
  *niter = (*L + *S - 1) / *S;
  if (*niter > (uint64_t)INT32_MAX / (uint64_t)m->maxTbSteps)
    REFUSE("rank %d: a call of %zu elements takes %llu iterations of up to %d steps", rank, count,
           (unsigned long long)*niter, m->maxTbSteps);
  user[rank][0] = (char*)sb;
  user[rank][1] = m->inplaceForm && m->coll == KILN_COLL_ALLREDUCE ? (char*)sb : rb;
  for (int b = 0; b < 2; b++) {
    if (!m->reaches[b]) continue;
    char* peers[KILN_DEV_MEM_MAX_RANKS] = {0};
    if (!kilnUserWindowPeers(c, user[rank][b], user_bytes(m->coll, n, count, es, b), peers))
      REFUSE(
          "rank %d: the plan reaches the peers' %s buffers, and this call's %s buffer is not in a symmetric "
          "window added to the communicator (kilnCommWindowAdd)",
          rank, b ? "output" : "input", b ? "output" : "input");
    for (int q = 0; q < n; q++)
      if (q != rank) user[q][b] = peers[q];
  }
  return KILN_SUCCESS;
#undef REFUSE
}

bool kilnMemPlanServes(const struct kilnMemPlan* m, const void* sendbuf, const void* recvbuf, size_t count,
                       kilnDataType_t dtype) {
  uint64_t L, S, niter;
  char* user[KILN_DEV_MEM_MAX_RANKS][2];
  if (!m || kilnDataTypeSize(dtype) == 0) return false;
  return count == 0 || call_plan(m, (const char*)sendbuf, (char*)recvbuf, count, dtype, true, &L, &S, &niter,
                                 user) == KILN_SUCCESS;
}

static kilnResult_t run_call(struct kilnMemPlan* m, const void* sendbuf, void* recvbuf, size_t count,
                             kilnDataType_t dtype, kilnRedOp_t op, cudaStream_t stream) {
  struct kilnComm* c = m->comm;
  const int rank = c->rank, n = c->nranks;
  const size_t es = kilnDataTypeSize(dtype);
  kilnResult_t res = kilnCommCallCheck(c, count, sendbuf, recvbuf, dtype, op);
  if (res != KILN_SUCCESS) return res;
  if (count == 0 || m->ntbs == 0) return KILN_SUCCESS;
  const char* sb = (const char*)sendbuf;
  char* rb = (char*)recvbuf;
  kilnLaunch l;
  memset(&l, 0, sizeof l);
  kilnDevArgs* a = &l.args;
  uint64_t L = 0, S = 0, niter = 0;
  if ((res = call_plan(m, sb, rb, count, dtype, false, &L, &S, &niter, a->mem.user)) != KILN_SUCCESS)
    return res;
  a->tbs = m->tbs;
  a->passes = m->passes;
  a->opnds = m->opnds;
  a->progress = m->progress;
  a->callSeq = m->callSeq;
  a->done = m->done;
  a->abortFlag = c->abortFlag;
  a->errWord = c->errDev;
  /* This rank's buffers as call_plan set them (the in-place form's output is its input). */
  a->bufs[KILN_DEV_BUF_INPUT] = a->mem.user[rank][0];
  a->bufs[KILN_DEV_BUF_OUTPUT] = a->mem.user[rank][1];
  a->count = count;
  a->chunkElems = L;
  a->sliceElems = S;
  a->timeoutNs = (uint64_t)c->cfg.timeoutMs * 1000000ull;
  a->chunksPerBlock = m->chunksPerBlock;
  a->niter = (int)niter;
  a->op = (int)op;
  a->nranks = n;
  a->rank = rank;
  a->proto = m->lines;
  a->ntbs = m->ntbs;
  if (op == KILN_AVG && (m->coll == KILN_COLL_ALLREDUCE || m->coll == KILN_COLL_REDUCESCATTER)) {
    a->avgBuf = a->bufs[KILN_DEV_BUF_OUTPUT];
    a->avgElems = count;
  }
  kilnDevMem* mem = &a->mem;
  for (int q = 0; q < n; q++) mem->win[q] = q == rank ? c->win : c->peers[q];
  mem->slots = c->memSlots;
  mem->plainOff = c->memPlainBase;
  mem->plainHalf = c->memHalf;
  for (int x = 0; x < KILN_DEV_NLINEAREAS; x++) {
    mem->lineOff[x] = c->memLineBase[x];
    mem->lineHalf[x] = c->memLineHalf[x];
  }
  mem->lineChunk[KILN_DEV_LINES16] =
      (S * es + KILN_DEV_LL_DATA_BYTES - 1) / KILN_DEV_LL_DATA_BYTES * KILN_DEV_LL_LINE_BYTES;
  mem->lineChunk[KILN_DEV_LINES128] =
      (S * es + KILN_DEV_LL128_DATA_BYTES - 1) / KILN_DEV_LL128_DATA_BYTES * KILN_DEV_LL128_LINE_BYTES;
  mem->sigOff = c->memSigBase;
  mem->arriveOff = c->memArriveBase;
  mem->planHash = m->hash;
  mem->maxChannels = c->cfg.maxChannels;
  /* The next kernel may launch once this one first waits for a peer, as the symmetric kernels' LL
   * forms do (host/sym.c KILN_SYM_PDL_TRIGGER), where everything that leaves the rank goes as
   * lines (a small call); a plan that stores plain data at a peer triggers at its end. */
  mem->earlyTrigger = c->symEarlyTrigger && m->linesOnly;
  mem->hasDeps = m->hasDeps;
  mem->pdl = c->symPdl;
  l.comm = c;
  l.stream = stream;
  l.dtype = (int)dtype;
  l.threads = threads_for(m, es, S);
  l.mem = true;
  l.baked = m->useBaked ? kilnRegistryKernel(m->baked, dtype, op) : NULL;
  const int save = kilnEnterDevice(c, false);
  res = kilnLaunchSubmit(&l);
  kilnLeaveDevice(c, save);
  return res;
}

kilnResult_t kilnMemPlanRun(struct kilnMemPlan* m, const void* sendbuf, void* recvbuf, size_t count,
                            kilnDataType_t dtype, kilnRedOp_t op, cudaStream_t stream) {
  if (!m) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnRun: NULL exec");
  return run_call(m, sendbuf, recvbuf, count, dtype, op, stream);
}
