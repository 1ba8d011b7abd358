/*
 * Plans on the GPU: kilnPlanLoad checks this rank's part of a plan and uploads it with its
 * connections resolved to window addresses; kilnRun maps the call's buffers and count onto the
 * plan's chunks and launches the interpreter once.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../solver/params.h"
#include "kiln/registry.h"
#include "kiln_dev.h"
#include "launch.h"
#include "memplan.h"
#include "runtime_internal.h"
#include "runtime_test.h"

struct kilnExec {
  struct kilnComm* comm;
  kilnColl_t coll;
  int proto; /* KILN_DEV_PROTO_* */
  int ntbs;
  int chunksPerBlock; /* k */
  int scratchChunks;
  int maxcnt;         /* largest step cnt over the whole plan (same on every rank) */
  int maxTbSteps;     /* most steps of one threadblock over the whole plan (same on every rank) */
  bool inplaceForm;   /* the plan leaves out a buffer (kilnPlanInPlaceOnly) */
  bool serves[2];     /* [inplace]: whether it serves that form (kilnPlanServes) */
  kilnDevTb* tbs;     /* device */
  kilnDevStep* steps; /* device */
  uint64_t* progress;
  uint64_t* callSeq;
  unsigned long long* done;
  kilnScratch scratch;
  const kilnRegistryEntry* baked; /* gen/: baked plan of the same shape, or NULL */
  bool useBaked;
  struct kilnPhased* phased; /* a communicator of several nodes: the plan cut into phases
                              * (internode.c), whose kernel phases are execs of their own */
  struct kilnMemPlan* mem;   /* a plan with memory steps: all of it there (memplan.c) */
};

#define CUDA_TRY(call, label)                                                                    \
  do {                                                                                           \
    cudaError_t e_ = (call);                                                                     \
    if (e_ != cudaSuccess) {                                                                     \
      res = kilnSetError(KILN_ERR_CUDA, "rank %d: %s: %s", rank, #call, cudaGetErrorString(e_)); \
      goto label;                                                                                \
    }                                                                                            \
  } while (0)

/* Chunk counts of input and output as the call sees them (a missing in-place buffer aliases
 * part of the other) and k, the chunks per block of a user buffer. */
/* quiet: no error text (kilnPlanSupports asks on every call the drop-in library sees). */
static kilnResult_t plan_geometry(const kilnPlan* p, int* inN, int* outN, int* k, bool quiet) {
#define GEOMETRY_FAIL(...) \
  return quiet ? KILN_ERR_UNSUPPORTED : kilnSetError(KILN_ERR_UNSUPPORTED, __VA_ARGS__)
  const int n = p->ngpus;
  const kilnGpu* g = &p->gpus[0];
  int i = g->i_chunks, o = g->o_chunks;
  switch (p->coll) {
    case KILN_COLL_ALLREDUCE:
      if (o == 0) o = i;
      *k = i;
      if (o != i) goto bad;
      break;
    case KILN_COLL_ALLGATHER:
      if (o % n) goto bad;
      *k = o / n;
      if (i == 0) i = *k;
      if (i != *k) goto bad;
      break;
    case KILN_COLL_REDUCESCATTER:
      if (i % n) goto bad;
      *k = i / n;
      if (o == 0) o = *k;
      if (o != *k) goto bad;
      break;
    case KILN_COLL_ALLTOALL:
      if (i % n || o != i) goto bad;
      *k = i / n;
      break;
    default: GEOMETRY_FAIL("plan %s: collective %s has no runtime mapping", p->name, kilnCollName(p->coll));
  }
  if (*k < 1) goto bad;
  for (int r = 1; r < n; r++)
    if (p->gpus[r].i_chunks != p->gpus[0].i_chunks || p->gpus[r].o_chunks != p->gpus[0].o_chunks)
      GEOMETRY_FAIL("plan %s: gpu %d has other chunk counts than gpu 0", p->name, r);
  *inN = i;
  *outN = o;
  return KILN_SUCCESS;
bad:
  GEOMETRY_FAIL("plan %s: i_chunks=%d o_chunks=%d do not fit %s on %d ranks", p->name, g->i_chunks,
                g->o_chunks, kilnCollName(p->coll), n);
#undef GEOMETRY_FAIL
}

static int buf_chunks(int buf, int inN, int outN, int sN) {
  return buf == KILN_BUF_INPUT ? inN : buf == KILN_BUF_OUTPUT ? outN : sN;
}

/* Checks this rank's threadblocks: peers, unique connections, steps, dependencies, offsets. */
static kilnResult_t check_rank(const kilnPlan* p, const struct kilnComm* c, int inN, int outN) {
  const kilnGpu* g = &p->gpus[c->rank];
  const int rank = c->rank;
  if (g->ntbs > c->nsm)
    return kilnSetError(KILN_ERR_UNSUPPORTED,
                        "plan %s: rank %d has %d threadblocks, the GPU %d SMs (a kernel's blocks must all be "
                        "resident: synthesize with kiln synth --max-tbs %d, or with fewer instances)",
                        p->name, rank, g->ntbs, c->nsm, c->nsm);
  for (int t = 0; t < g->ntbs; t++) {
    const kilnThreadblock* tb = &g->tbs[t];
    if (tb->send >= p->ngpus || tb->recv >= p->ngpus || tb->send == rank || tb->recv == rank ||
        tb->chan < 0 || tb->chan >= c->cfg.maxChannels)
      return kilnSetError(KILN_ERR_UNSUPPORTED,
                          "plan %s: rank %d tb %d: send=%d recv=%d chan=%d out of range (channels < %d)",
                          p->name, rank, t, tb->send, tb->recv, tb->chan, c->cfg.maxChannels);
    for (int u = 0; u < t; u++) {
      const kilnThreadblock* o = &g->tbs[u];
      if ((tb->send >= 0 && o->send == tb->send && o->chan == tb->chan) ||
          (tb->recv >= 0 && o->recv == tb->recv && o->chan == tb->chan))
        return kilnSetError(KILN_ERR_UNSUPPORTED,
                            "plan %s: rank %d tbs %d and %d share a connection (chan %d)", p->name, rank, u,
                            t, tb->chan);
    }
    for (int s = 0; s < tb->nsteps; s++) {
      const kilnStep* st = &tb->steps[s];
      if ((int)st->type < 0 || st->type >= KILN_NUM_STEP_TYPES || st->cnt < 0 ||
          (kilnStepSends(st->type) && tb->send < 0) || (kilnStepReceives(st->type) && tb->recv < 0))
        return kilnSetError(KILN_ERR_UNSUPPORTED, "plan %s: rank %d tb %d step %d: type or peer does not fit",
                            p->name, rank, t, s);
      /* A memory step's src (get, gre) or dst (put) is its peer's, in the peer's scratch. */
      const kilnStepPeer_t role = kilnStepPeerRole(st->type);
      if (role != KILN_PEER_NONE && (st->peer < 0 || st->peer >= p->ngpus || st->peer == rank))
        return kilnSetError(KILN_ERR_UNSUPPORTED, "plan %s: rank %d tb %d step %d: peer %d out of range",
                            p->name, rank, t, s, st->peer);
      const int srcS = role == KILN_PEER_READ ? p->gpus[st->peer].s_chunks : g->s_chunks;
      const int dstS = role == KILN_PEER_WRITE ? p->gpus[st->peer].s_chunks : g->s_chunks;
      if (role == KILN_PEER_SIGNAL || role == KILN_PEER_WAIT) continue;
      if (kilnStepReadsSrc(st->type) || st->type == KILN_STEP_REDUCE) {
        int nb = buf_chunks(st->srcbuf, inN, outN, srcS);
        if ((int)st->srcbuf < 0 || st->srcbuf >= KILN_NUM_BUFFERS || st->srcoff < 0 ||
            st->srcoff + st->cnt > nb)
          return kilnSetError(KILN_ERR_UNSUPPORTED,
                              "plan %s: rank %d tb %d step %d: source chunks %d+%d outside %s (%d)", p->name,
                              rank, t, s, st->srcoff, st->cnt, kilnBufferName(st->srcbuf), nb);
      }
      if (kilnStepWritesDst(st->type)) {
        int nb = buf_chunks(st->dstbuf, inN, outN, dstS);
        if ((int)st->dstbuf < 0 || st->dstbuf >= KILN_NUM_BUFFERS || st->dstoff < 0 ||
            st->dstoff + st->cnt > nb)
          return kilnSetError(KILN_ERR_UNSUPPORTED,
                              "plan %s: rank %d tb %d step %d: destination chunks %d+%d outside %s (%d)",
                              p->name, rank, t, s, st->dstoff, st->cnt, kilnBufferName(st->dstbuf), nb);
      }
      if (st->depid >= 0 &&
          (st->depid >= g->ntbs || st->deps < 0 || st->deps >= g->tbs[st->depid].nsteps || st->depid == t))
        return kilnSetError(KILN_ERR_UNSUPPORTED,
                            "plan %s: rank %d tb %d step %d: dependency (%d, %d) does not exist", p->name,
                            rank, t, s, st->depid, st->deps);
    }
  }
  return KILN_SUCCESS;
}

/* The kernel protocol of a plan's protocol (kernels/kiln_dev.h): what a baked kernel of the plan
 * was generated for. */
static int kernel_proto(kilnProto_t p) {
  return p == KILN_PROTO_LL      ? KILN_DEV_PROTO_LL
         : p == KILN_PROTO_LL128 ? KILN_DEV_PROTO_LL128
                                 : KILN_DEV_PROTO_SIMPLE;
}

/* The protocol a plan runs with. LL128 plans run as Simple unless KILN_LL128=1: the first LL128
 * kernels returned a stale element 3 times in 7 runs of gpu_plans/classic_plans_2gpus on 2x
 * H200 (reducing plans, int8, one element, on rank 0, whose kernel polls its peer's line). The
 * likely cause, data taken from the poll that saw the flag, is fixed in primitives.cuh (the data
 * is loaded again after the flags, as NCCL does); with the fix the suite passed 3 runs of 3 on 4x
 * H100, but LL128 won in no plan (kernels/README.md), so it stays off until it both wins and has
 * passed many more runs. */
static int dev_proto(kilnProto_t p) {
  if (p == KILN_PROTO_LL128) {
    if (!kilnParam(KILN_PARAM_LL128)) return KILN_DEV_PROTO_SIMPLE;
  }
  return kernel_proto(p);
}

/* Elements of `es` bytes a piece may hold when a step of `maxcnt` chunks fills one slot. */
static size_t slice_cap(int proto, size_t slotBytes, int maxcnt, size_t es) {
  return (size_t)kilnDevPieceElems(proto, slotBytes / (size_t)maxcnt, es);
}

void kilnExecFree(kilnExec_t x) {
  if (!x) return;
  if (x->phased) {
    kilnPhasedFree(x->phased);
    free(x);
    return;
  }
  if (x->mem) {
    kilnMemPlanFree(x->mem);
    free(x);
    return;
  }
  const int save = kilnEnterDeviceIdle(x->comm);
  cudaFree(x->tbs);
  cudaFree(x->steps);
  cudaFree(x->progress);
  cudaFree(x->callSeq);
  cudaFree(x->done);
  /* The caller waited for the communicator's last call (and must not replay graphs of this exec
   * any more): no kernel uses them. */
  kilnScratchFree(&x->scratch);
  kilnLeaveDevice(x->comm, save);
  free(x);
}

void kilnScratchFree(kilnScratch* s) {
  cudaFree(s->p);
  for (int i = 0; i < s->nretired; i++) cudaFree(s->retired[i]);
  free(s->retired);
  memset(s, 0, sizeof *s);
}

kilnResult_t kilnScratchGrow(kilnScratch* s, size_t need, int rank) {
  if (need <= s->bytes) return KILN_SUCCESS;
  /* The buffer a growth replaces is kept until the exec is freed, never freed here: a CUDA graph
   * captured before may replay on it, launches queued in an open group may still use it, and
   * cudaFree waits for every kernel on the GPU, among them kernels that wait for launches this
   * thread has yet to make (8 ranks on 4 GPUs: the same call's kernel of the other rank there,
   * so every rank would time out). The size at least doubles where memory allows, so the kept
   * buffers together stay under the current one. (A stream-ordered free after the
   * communicator's last call would miss the captured graphs: their launches are not in that
   * chain.) */
  if (s->p) { /* room to keep it, before anything is allocated */
    char** r = (char**)realloc(s->retired, (size_t)(s->nretired + 1) * sizeof(char*));
    if (!r) return kilnSetError(KILN_ERR_NO_MEMORY, "rank %d: keeping a replaced scratch buffer", rank);
    s->retired = r;
  }
  size_t want = s->bytes > need / 2 ? 2 * s->bytes : need;
  /* Inside a stream capture cudaMalloc is an unsafe call that would end it (global or
   * thread-local mode): relaxed for the allocation, as allocators do. The graph keeps the new
   * buffer as any later call does. */
  enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  cudaThreadExchangeStreamCaptureMode(&mode);
  char* grown = NULL;
  if (want > need && cudaMalloc((void**)&grown, want) != cudaSuccess) {
    cudaGetLastError(); /* out of memory for the double: the need alone, then */
    grown = NULL;
    want = need;
  }
  const cudaError_t ge = grown ? cudaSuccess : cudaMalloc((void**)&grown, want);
  cudaThreadExchangeStreamCaptureMode(&mode);
  if (ge != cudaSuccess) {
    cudaGetLastError();
    return kilnSetError(KILN_ERR_CUDA, "rank %d: %zu bytes of scratch for the plan: cudaMalloc: %s", rank,
                        want, cudaGetErrorString(ge));
  }
  if (s->p) s->retired[s->nretired++] = s->p;
  s->p = grown;
  s->bytes = want;
  return KILN_SUCCESS;
}

/* kilnPlanLoad of a plan with memory steps (memplan.c holds it). */
static kilnResult_t mem_load(kilnComm_t c, const kilnPlan* p, int k, kilnExec_t* out) {
  struct kilnExec* x = calloc(1, sizeof(*x));
  if (!x) return kilnSetError(KILN_ERR_NO_MEMORY, "out of memory loading plan %s", p->name);
  x->comm = c;
  x->coll = p->coll;
  const kilnResult_t res = kilnMemPlanLoad(c, p, k, &x->mem);
  if (res != KILN_SUCCESS) {
    free(x);
    return res;
  }
  *out = x;
  return KILN_SUCCESS;
}

kilnResult_t kilnPlanLoad(kilnComm_t c, const kilnPlan* p, kilnExec_t* out) {
  if (!c || !p || !out) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnPlanLoad: NULL argument");
  if (__atomic_load_n(&c->aborted, __ATOMIC_ACQUIRE))
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "rank %d: kilnPlanLoad on an aborted communicator",
                        c->rank);
  if (kilnPlanHasCopies(p)) {
    /* TACCL's <copy>s run as the cpy threadblock kilnPlanLowerCopies makes of them (as gen
     * bakes them), so a baked kernel of the lowered plan is found too. */
    kilnPlan* lowered = NULL;
    kilnResult_t lr = kilnPlanClone(p, &lowered);
    if (lr == KILN_SUCCESS) lr = kilnPlanLowerCopies(lowered);
    if (lr == KILN_SUCCESS) lr = kilnPlanLoad(c, lowered, out);
    kilnPlanFree(lowered);
    return lr;
  }
  if (p->ngpus != c->nranks)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "plan %s is for %d ranks, the communicator has %d",
                        p->name, p->ngpus, c->nranks);
  kilnResult_t cr = kilnPlanCheckRuntime(p);
  if (cr != KILN_SUCCESS) return cr;
  if (c->nnodes <= 1) return kilnExecLoadPart(c, p, out);
  /* Several nodes: the plan cut into phases, each kernel phase an exec of its own. */
  struct kilnExec* x = calloc(1, sizeof(*x));
  if (!x) return kilnSetError(KILN_ERR_NO_MEMORY, "out of memory loading plan %s", p->name);
  x->comm = c;
  x->coll = p->coll;
  const kilnResult_t res = kilnPhasedLoad(c, p, &x->phased);
  if (res != KILN_SUCCESS) {
    free(x);
    return res;
  }
  *out = x;
  return KILN_SUCCESS;
}

kilnResult_t kilnExecLoadPart(kilnComm_t c, const kilnPlan* p, kilnExec_t* out) {
  const int rank = c->rank;
  int inN = 0, outN = 0, k = 0;
  kilnResult_t res = plan_geometry(p, &inN, &outN, &k, false);
  if (res != KILN_SUCCESS) return res;
  if ((res = check_rank(p, c, inN, outN)) != KILN_SUCCESS) return res;
  if (kilnPlanHasMemorySteps(p)) return mem_load(c, p, k, out);
  int maxcnt = 1, maxTbSteps = 1; /* over every rank: each rank then refuses the same calls */
  for (int r = 0; r < p->ngpus; r++)
    for (int t = 0; t < p->gpus[r].ntbs; t++) {
      if (p->gpus[r].tbs[t].nsteps > maxTbSteps) maxTbSteps = p->gpus[r].tbs[t].nsteps;
      for (int s = 0; s < p->gpus[r].tbs[t].nsteps; s++)
        if (p->gpus[r].tbs[t].steps[s].cnt > maxcnt) maxcnt = p->gpus[r].tbs[t].steps[s].cnt;
    }
  const int proto = dev_proto(p->proto);
  if (slice_cap(proto, c->cfg.slotBytes, maxcnt, 1) < 16)
    return kilnSetError(KILN_ERR_UNSUPPORTED, "plan %s: a step of %d chunks does not fit a %zu-byte slot",
                        p->name, maxcnt, c->cfg.slotBytes);

  const kilnGpu* g = &p->gpus[rank];
  int nsteps = 0;
  for (int t = 0; t < g->ntbs; t++) nsteps += g->tbs[t].nsteps;
  kilnDevTb* htbs = calloc((size_t)g->ntbs + 1, sizeof(kilnDevTb));
  kilnDevStep* hsteps = calloc((size_t)nsteps + 1, sizeof(kilnDevStep));
  struct kilnExec* x = calloc(1, sizeof(*x));
  if (!htbs || !hsteps || !x) {
    res = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory loading plan %s", p->name);
    goto out_free_host;
  }
  x->comm = c;
  x->coll = p->coll;
  x->proto = proto;
  x->ntbs = g->ntbs;
  x->chunksPerBlock = k;
  x->scratchChunks = g->s_chunks;
  for (int r = 0; r < p->ngpus; r++) x->scratch.any |= p->gpus[r].s_chunks > 0;
  x->maxcnt = maxcnt;
  x->maxTbSteps = maxTbSteps;
  x->inplaceForm = kilnPlanInPlaceOnly(p);
  x->serves[0] = kilnPlanServes(p, false);
  x->serves[1] = kilnPlanServes(p, true);
  /* A baked kernel runs the protocol it was generated for (the registry matches protocols): none
   * when the plan runs as another. */
  x->baked = kernel_proto(p->proto) == proto ? kilnRegistryBakedFor(p) : NULL;
  /* By default a baked kernel runs when gen/ inlined its steps (kilnRegistryEntry.inlined: LL
   * plans up to 256 steps, Simple up to 96). The others call one body per step type, and the
   * interpreter (512 threads, 8 loads in flight, steps in shared memory) beat them on 4x H200 in
   * CUDA graphs: one-shot LL i4 reducescatter 128 KiB 12.6 vs 17.4 us called (9.3 inlined),
   * direct Simple i4 allgather 512 KiB 13.3 vs 16.7, ring allreduce 8 MiB 70 vs 103. Inlined
   * Simple plans win too: 2-rank one-shot Simple i4 allreduce 512 KiB 12.8 vs 18.5 us.
   * kilnExecUseBaked(x, true) selects any baked kernel anyway. */
  x->useBaked = x->baked != NULL && x->baked->inlined;
  const size_t nconn = (size_t)c->nranks * c->cfg.maxChannels;
  int first = 0;
  for (int t = 0; t < g->ntbs; t++) {
    const kilnThreadblock* tb = &g->tbs[t];
    kilnDevTb* d = &htbs[t];
    d->firstStep = first;
    d->nsteps = tb->nsteps;
    d->sendPeer = tb->send;
    d->recvPeer = tb->recv;
    if (tb->send >= 0) {
      d->sendFifo = c->peers[tb->send] + kilnFifoOff(c, rank, tb->chan);
      d->sendHead = (uint64_t*)(c->peers[tb->send] + kilnHeadOff(c, rank, tb->chan));
      d->sendTail = (uint64_t*)(c->win + kilnTailOff(c, tb->send, tb->chan));
      d->sendCount = c->state + (size_t)tb->send * c->cfg.maxChannels + tb->chan;
    }
    if (tb->recv >= 0) {
      d->recvFifo = c->win + kilnFifoOff(c, tb->recv, tb->chan);
      d->recvHead = (uint64_t*)(c->win + kilnHeadOff(c, tb->recv, tb->chan));
      d->recvTail = (uint64_t*)(c->peers[tb->recv] + kilnTailOff(c, rank, tb->chan));
      d->recvCount = c->state + nconn + (size_t)tb->recv * c->cfg.maxChannels + tb->chan;
    }
    for (int s = 0; s < tb->nsteps; s++) {
      const kilnStep* st = &tb->steps[s];
      kilnDevStep* ds = &hsteps[first + s];
      ds->type = (uint8_t)st->type;
      ds->srcbuf = (uint8_t)st->srcbuf;
      ds->dstbuf = (uint8_t)st->dstbuf;
      ds->cnt = st->cnt;
      ds->srcoff = st->srcoff;
      ds->dstoff = st->dstoff;
      ds->depid = st->depid >= 0 ? st->depid : -1;
      ds->deps = st->depid >= 0 ? st->deps : -1;
      ds->depNsteps = st->depid >= 0 ? g->tbs[st->depid].nsteps : 0;
    }
    first += tb->nsteps;
  }
  /* What each step publishes (a step others wait on does, whatever hasdep says) and the folded
   * runs: the same decisions gen/ bakes into the kernels (kilnPlanRankSteps). */
  _Static_assert(KILN_DEV_FOLD_MAX == KILN_FUSE_MAX, "folded runs: one bound for host and device");
  {
    bool* publishes = malloc((size_t)(nsteps + 1) * sizeof(bool));
    int* fold = malloc((size_t)(nsteps + 1) * sizeof(int));
    res = publishes && fold ? kilnPlanRankSteps(p, rank, publishes, fold)
                            : kilnSetError(KILN_ERR_NO_MEMORY, "out of memory loading plan %s", p->name);
    for (int i = 0; i < nsteps && res == KILN_SUCCESS; i++) {
      hsteps[i].hasdep = publishes[i] ? 1 : 0;
      hsteps[i].fold = fold[i] > 0 ? fold[i] : 0;
    }
    free(publishes);
    free(fold);
    if (res != KILN_SUCCESS) goto out_free_host;
  }

  int save = 0;
  cudaGetDevice(&save);
  cudaSetDevice(c->dev);
  /* Baked kernels load now, not lazily at a first launch (see kiln/registry.h). */
  for (int t = 0; x->baked && t < KILN_NUM_DTYPES; t++)
    if (x->baked->launch[t]) CUDA_TRY((cudaError_t)x->baked->launch[t](NULL, 0, NULL), out_free_dev);
  const size_t ntb = (size_t)g->ntbs + 1;
  CUDA_TRY(cudaMalloc((void**)&x->tbs, ntb * sizeof(kilnDevTb)), out_free_dev);
  CUDA_TRY(cudaMalloc((void**)&x->steps, ((size_t)nsteps + 1) * sizeof(kilnDevStep)), out_free_dev);
  CUDA_TRY(cudaMalloc((void**)&x->progress, ntb * sizeof(uint64_t)), out_free_dev);
  CUDA_TRY(cudaMalloc((void**)&x->callSeq, ntb * sizeof(uint64_t)), out_free_dev);
  CUDA_TRY(cudaMalloc((void**)&x->done, sizeof(unsigned long long)), out_free_dev);
  CUDA_TRY(cudaMemcpy(x->tbs, htbs, ntb * sizeof(kilnDevTb), cudaMemcpyHostToDevice), out_free_dev);
  CUDA_TRY(cudaMemcpy(x->steps, hsteps, ((size_t)nsteps + 1) * sizeof(kilnDevStep), cudaMemcpyHostToDevice),
           out_free_dev);
  CUDA_TRY(cudaMemset(x->progress, 0, ntb * sizeof(uint64_t)), out_free_dev);
  CUDA_TRY(cudaMemset(x->callSeq, 0, ntb * sizeof(uint64_t)), out_free_dev);
  CUDA_TRY(cudaMemset(x->done, 0, sizeof(unsigned long long)), out_free_dev);
  CUDA_TRY(cudaDeviceSynchronize(), out_free_dev);
  cudaSetDevice(save);
  free(htbs);
  free(hsteps);
  *out = x;
  return KILN_SUCCESS;
out_free_dev:
  cudaSetDevice(save);
  kilnExecFree(x);
  x = NULL;
out_free_host:
  free(htbs);
  free(hsteps);
  free(x);
  return res;
}

bool kilnPlanSupports(const kilnPlan* p, size_t count, kilnDataType_t dtype, kilnRedOp_t op, bool inplace) {
  if (!p || (int)dtype < 0 || dtype >= KILN_NUM_DTYPES || (int)op < 0 || op >= KILN_NUM_REDOPS) return false;
  if (p->ngpus < 1 || !p->gpus) return false;
  if (count > KILN_MAX_CALL_COUNT) return false;
  int inN, outN, k;
  if (plan_geometry(p, &inN, &outN, &k, true) != KILN_SUCCESS) return false;
  return kilnPlanServes(p, inplace);
}

/* kilnRun's checks and the launch's arguments, scratch aside: *need the scratch bytes the call
 * takes; *none when there is nothing to launch (no elements, or no threadblock on this rank). */
static kilnResult_t call_args(kilnExec_t x, const void* sendbuf, void* recvbuf, size_t count,
                              kilnDataType_t dtype, kilnRedOp_t op, kilnDevArgs* out, size_t* need,
                              bool* none) {
  struct kilnComm* c = x->comm;
  const int rank = c->rank, n = c->nranks;
  const size_t es = kilnDataTypeSize(dtype);
  *none = true;
  kilnResult_t checked = kilnCommCallCheck(c, count, sendbuf, recvbuf, dtype, op);
  if (checked != KILN_SUCCESS) return checked;
  if (count == 0 || x->ntbs == 0) return KILN_SUCCESS;
  const char* sb = (const char*)sendbuf;
  char* rb = (char*)recvbuf;
  const bool inplace = kilnRegistryCallInPlace(x->coll, rank, sb, rb, count, dtype);
  if ((checked = kilnPlanFormCheck(x->coll, rank, inplace, x->inplaceForm, x->serves, false)) != KILN_SUCCESS)
    return checked;

  kilnDevArgs a;
  memset(&a, 0, sizeof(a));
  const size_t k = (size_t)x->chunksPerBlock;
  const size_t L = (count + k - 1) / k;
  const size_t vec = 16 / es;
  size_t S = slice_cap(x->proto, c->cfg.slotBytes, x->maxcnt, es);
  S -= S % vec;
  const size_t Lr = (L + vec - 1) / vec * vec;
  if (S > Lr) S = Lr;
  a.tbs = x->tbs;
  a.steps = x->steps;
  a.progress = x->progress;
  a.callSeq = x->callSeq;
  a.done = x->done;
  a.abortFlag = c->abortFlag;
  a.errWord = c->errDev;
  a.bufs[KILN_DEV_BUF_INPUT] = (char*)sb;
  a.bufs[KILN_DEV_BUF_OUTPUT] = rb;
  if (x->inplaceForm && x->coll == KILN_COLL_ALLREDUCE) a.bufs[KILN_DEV_BUF_OUTPUT] = (char*)sb;
  a.count = count;
  a.chunkElems = L;
  a.sliceElems = S;
  a.timeoutNs = (uint64_t)c->cfg.timeoutMs * 1000000ull;
  a.slotBytes = c->cfg.slotBytes;
  a.nslots = c->cfg.nslots;
  a.chunksPerBlock = (int)k;
  /* A block's progress word counts the steps of a call below its number (kernels/interp.cuh
   * progressWord): fewer than 2^31. Only slots far smaller than the default reach it. */
  const size_t niter = (L + S - 1) / S;
  if (niter > (size_t)INT32_MAX / (size_t)x->maxTbSteps)
    return kilnSetError(KILN_ERR_UNSUPPORTED,
                        "rank %d: a call of %zu elements takes %zu iterations of up to %d steps a block, "
                        "more than 2^31 steps (larger slots: kilnCommConfig.slotBytes)",
                        rank, count, niter, x->maxTbSteps);
  a.niter = (int)niter;
  a.op = (int)op;
  a.nranks = n;
  a.rank = rank;
  a.proto = x->proto;
  a.ntbs = x->ntbs;
  if (op == KILN_AVG && (x->coll == KILN_COLL_ALLREDUCE || x->coll == KILN_COLL_REDUCESCATTER)) {
    a.avgBuf = a.bufs[KILN_DEV_BUF_OUTPUT];
    a.avgElems = count;
  }
  *out = a;
  *need = x->scratchChunks > 0 ? (size_t)x->scratchChunks * Lr * es : 0;
  *none = false;
  return KILN_SUCCESS;
}

/* The launch of x's kernel for a call (l->capturing left to the caller). */
static void launch_of(kilnExec_t x, kilnDataType_t dtype, kilnRedOp_t op, cudaStream_t stream,
                      const kilnDevArgs* a, kilnLaunch* l) {
  memset(l, 0, sizeof *l);
  l->comm = x->comm;
  l->stream = stream;
  l->baked = x->useBaked ? kilnRegistryKernel(x->baked, dtype, op) : NULL;
  l->dtype = (int)dtype;
  l->threads = x->comm->cfg.threads;
  l->sym = false;
  l->args = *a;
}

kilnResult_t kilnExecPartLaunch(kilnExec_t x, const void* sendbuf, void* recvbuf, size_t count,
                                kilnDataType_t dtype, kilnRedOp_t op, cudaStream_t stream, char* scratch,
                                kilnLaunch* l, bool* none) {
  if (x->mem)
    return kilnSetError(KILN_ERR_UNSUPPORTED, "rank %d: a phase of memory steps of a plan across nodes",
                        x->comm->rank);
  kilnDevArgs a;
  size_t need = 0;
  const kilnResult_t res = call_args(x, sendbuf, recvbuf, count, dtype, op, &a, &need, none);
  if (res != KILN_SUCCESS || *none) return res;
  if (x->scratchChunks > 0) a.bufs[KILN_DEV_BUF_SCRATCH] = scratch;
  launch_of(x, dtype, op, stream, &a, l);
  return KILN_SUCCESS;
}

static kilnResult_t run_call(kilnExec_t x, const void* sendbuf, void* recvbuf, size_t count,
                             kilnDataType_t dtype, kilnRedOp_t op, cudaStream_t stream) {
  if (!x) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnRun: NULL exec");
  if (x->phased) return kilnPhasedRun(x->phased, sendbuf, recvbuf, count, dtype, op, stream);
  if (x->mem) return kilnMemPlanRun(x->mem, sendbuf, recvbuf, count, dtype, op, stream);
  struct kilnComm* c = x->comm;
  kilnDevArgs a;
  size_t need = 0;
  bool none = true;
  kilnResult_t res = call_args(x, sendbuf, recvbuf, count, dtype, op, &a, &need, &none);
  /* Noted on every rank, also one without a threadblock of the plan (kilnExecScratchHolds). */
  if (res == KILN_SUCCESS && count > 0)
    kilnScratchNote(&x->scratch, kilnScratchPiece(count, (size_t)x->chunksPerBlock, kilnDataTypeSize(dtype)));
  if (res != KILN_SUCCESS || none) return res;
  /* Per call: no allocation (except growing scratch), no copy, no sync; device switches only when
   * the caller's current device is another one, and not for a launch queued in a group (its end
   * switches, also for the default-stream handles, which name the current device's stream). */
  const int save = kilnEnterDevice(c, need > x->scratch.bytes);
  if ((res = kilnScratchGrow(&x->scratch, need, c->rank)) == KILN_SUCCESS) {
    if (x->scratchChunks > 0) a.bufs[KILN_DEV_BUF_SCRATCH] = x->scratch.p;
    kilnLaunch l;
    launch_of(x, dtype, op, stream, &a, &l);
    res = kilnLaunchSubmit(&l);
  }
  kilnLeaveDevice(c, save);
  return res;
}

kilnResult_t kilnRun(kilnExec_t x, const void* sendbuf, void* recvbuf, size_t count, kilnDataType_t dtype,
                     kilnRedOp_t op, cudaStream_t stream) {
  kilnResult_t res = run_call(x, sendbuf, recvbuf, count, dtype, op, stream);
  /* A failed call fails its group: kilnGroupEnd then launches nothing of it (as NCCL). */
  if (res != KILN_SUCCESS) kilnGroupFail(res);
  return res;
}

int kilnEnterDevice(const struct kilnComm* c, bool also) {
  int save = c->dev;
  if (!kilnGroupActive() || also) {
    cudaGetDevice(&save);
    if (save != c->dev) cudaSetDevice(c->dev);
  }
  return save;
}

void kilnLeaveDevice(const struct kilnComm* c, int save) {
  if (save != c->dev) cudaSetDevice(save);
}

kilnResult_t kilnPlanFormCheck(kilnColl_t coll, int rank, bool inplace, bool inplaceForm,
                               const bool serves[2], bool quiet) {
  if (coll == KILN_COLL_ALLTOALL && inplace)
    return quiet ? KILN_ERR_UNSUPPORTED
                 : kilnSetError(KILN_ERR_UNSUPPORTED, "rank %d: in-place alltoall", rank);
  if (serves[inplace]) return KILN_SUCCESS;
  if (quiet) return KILN_ERR_UNSUPPORTED;
  if (inplaceForm)
    return kilnSetError(KILN_ERR_UNSUPPORTED, "rank %d: an in-place plan called out of place", rank);
  return kilnSetError(KILN_ERR_UNSUPPORTED, "rank %d: the plan serves %s calls only, this one is %s", rank,
                      inplace ? "out-of-place" : "in-place", inplace ? "in place" : "out of place");
}

int kilnEnterDeviceIdle(const struct kilnComm* c) {
  const int save = kilnEnterDevice(c, true);
  if (c->haveLast) cudaEventSynchronize(c->last);
  return save;
}

kilnResult_t kilnLaunchCapture(kilnLaunch* l) {
  enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
  const cudaError_t e = cudaStreamIsCapturing(l->stream, &cs);
  if (e != cudaSuccess)
    return kilnSetError(KILN_ERR_CUDA, "rank %d: cudaStreamIsCapturing: %s", l->comm->rank,
                        cudaGetErrorString(e));
  l->capturing = cs != cudaStreamCaptureStatusNone;
  return KILN_SUCCESS;
}

kilnResult_t kilnLaunchSubmit(kilnLaunch* l) {
  if (kilnGroupActive()) return kilnGroupQueue(l);
  const kilnResult_t res = kilnLaunchCapture(l);
  return res != KILN_SUCCESS ? res : kilnLaunchIssue(l);
}

kilnResult_t kilnLaunchIssue(kilnLaunch* l) {
  struct kilnComm* c = l->comm;
  const int rank = c->rank;
  kilnResult_t res = KILN_SUCCESS;
  /* A call queued in a group before kilnCommAbort, issued after it: its kernel would store to the
   * peers, whose memory NCCL's abort may have unmapped by the time it starts. */
  if (__atomic_load_n(&c->aborted, __ATOMIC_ACQUIRE))
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT,
                        "rank %d: the communicator was aborted (kilnCommAbort) before "
                        "the group's end: its call is not launched",
                        rank);
  /* Calls on one communicator run in issue order, also across streams: a call on another stream
   * than the previous call's waits for its end. Streams are told apart by their unique id, not
   * their handle (a stream destroyed with work pending and created again can get the same one). */
  unsigned long long sid = 0;
  if (!l->capturing) {
    CUDA_TRY(cudaStreamGetId(l->stream, &sid), out);
    if (c->haveLast && sid != c->lastStream) CUDA_TRY(cudaStreamWaitEvent(l->stream, c->last, 0), out);
  }
  {
    int e = l->sym     ? kilnSymIssue(l)
            : l->baked ? l->baked(&l->args, l->threads, (void*)l->stream)
            : l->mem   ? kilnMemLaunch(l->dtype, l->args.proto, &l->args, l->threads, (void*)l->stream,
                                       l->args.mem.pdl)
                       : kilnInterpLaunch(l->dtype, &l->args, l->threads, (void*)l->stream);
    if (e != 0) {
      res = kilnSetError(KILN_ERR_CUDA, "rank %d: launching the %s kernel: %s", rank,
                         l->sym     ? "symmetric-memory"
                         : l->baked ? "baked"
                                    : "interpreter",
                         cudaGetErrorString((cudaError_t)e));
      goto out;
    }
  }
  if (!l->capturing) {
    CUDA_TRY(cudaEventRecord(c->last, l->stream), out);
    c->haveLast = true;
    c->lastStream = sid;
  }
out:
  return res;
}

bool kilnExecServes(kilnExec_t x, const void* sendbuf, const void* recvbuf, size_t count,
                    kilnDataType_t dtype, kilnRedOp_t op) {
  if (!x || (int)dtype < 0 || dtype >= KILN_NUM_DTYPES || (int)op < 0 || op >= KILN_NUM_REDOPS ||
      count > KILN_MAX_CALL_COUNT)
    return false;
  if (x->mem) return kilnMemPlanServes(x->mem, sendbuf, recvbuf, count, dtype);
  if (x->phased || count == 0) return true;
  const bool inplace = kilnRegistryCallInPlace(x->coll, x->comm->rank, sendbuf, recvbuf, count, dtype);
  return kilnPlanFormCheck(x->coll, x->comm->rank, inplace, x->inplaceForm, x->serves, true) == KILN_SUCCESS;
}

bool kilnExecUseBaked(kilnExec_t x, bool on) {
  if (!x || x->phased) return false;
  if (x->mem) return kilnMemPlanUseBaked(x->mem, on);
  x->useBaked = on && x->baked != NULL;
  return x->baked != NULL;
}

kilnResult_t kilnExecSetCalls(kilnExec_t x, uint64_t calls) {
  if (!x) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnExecSetCalls: NULL exec");
  if (x->phased) return kilnSetError(KILN_ERR_UNSUPPORTED, "kilnExecSetCalls: a plan cut into phases");
  if (x->mem)
    return kilnSetError(KILN_ERR_UNSUPPORTED,
                        "kilnExecSetCalls: a plan with memory steps counts epochs, not calls");
  struct kilnComm* c = x->comm;
  const int rank = c->rank;
  const size_t ntb = (size_t)x->ntbs + 1;
  kilnResult_t res = KILN_SUCCESS;
  uint64_t* seq = (uint64_t*)malloc(ntb * sizeof(uint64_t));
  uint64_t* progress = (uint64_t*)malloc(ntb * sizeof(uint64_t));
  const unsigned long long done = (unsigned long long)calls * (unsigned long long)x->ntbs;
  int save = 0;
  cudaGetDevice(&save);
  cudaSetDevice(c->dev);
  if (!seq || !progress) {
    res = kilnSetError(KILN_ERR_NO_MEMORY, "kilnExecSetCalls: out of memory");
    goto out;
  }
  for (size_t i = 0; i < ntb; i++) {
    seq[i] = calls;
    progress[i] = calls << 32;
  }
  if (c->haveLast) CUDA_TRY(cudaEventSynchronize(c->last), out);
  CUDA_TRY(cudaMemcpy(x->callSeq, seq, ntb * sizeof(uint64_t), cudaMemcpyHostToDevice), out);
  CUDA_TRY(cudaMemcpy(x->progress, progress, ntb * sizeof(uint64_t), cudaMemcpyHostToDevice), out);
  CUDA_TRY(cudaMemcpy(x->done, &done, sizeof(done), cudaMemcpyHostToDevice), out);
out:
  cudaSetDevice(save);
  free(seq);
  free(progress);
  return res;
}

bool kilnExecScratchHolds(kilnExec_t x, size_t count, kilnDataType_t dtype) {
  const size_t es = kilnDataTypeSize(dtype);
  if (!x || es == 0) return false;
  if (x->phased) return kilnPhasedScratchHolds(x->phased, count, dtype);
  return kilnScratchHolds(&x->scratch, kilnScratchPiece(count, (size_t)x->chunksPerBlock, es));
}
