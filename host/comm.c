/*
 * kiln communicators over NCCL communicators: FIFOs, counters and flags in one symmetric NCCL
 * window per rank (ncclMemAlloc + ncclCommWindowRegister(..., NCCL_WIN_COLL_SYMMETRIC)), a
 * device communicator to confirm support, and every peer's window address read once.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../solver/params.h"
#include "../solver/phases.h" /* kilnEmulateNodesSetting */
#include "kiln_dev.h"
#include "memplan.h"
#include "runtime_internal.h"

#define CUDA_TRY(call, label)                                                                       \
  do {                                                                                              \
    cudaError_t e_ = (call);                                                                        \
    if (e_ != cudaSuccess) {                                                                        \
      res = kilnSetError(KILN_ERR_CUDA, "rank %d: %s: %s", c->rank, #call, cudaGetErrorString(e_)); \
      goto label;                                                                                   \
    }                                                                                               \
  } while (0)

int kilnCommRank(kilnComm_t comm) { return comm ? comm->rank : -1; }
int kilnCommSize(kilnComm_t comm) { return comm ? comm->nranks : -1; }
int kilnCommNodes(kilnComm_t comm) { return comm ? comm->nnodes : -1; }

/* The nodes asked for (kilnCommConfig.nodes, else KILN_EMULATE_NODES): *k >= 1, or 0 to take
 * NCCL's view at step 4. A split that does not divide the ranks is refused. */
static kilnResult_t asked_nodes(const kilnCommConfig* cfg, int rank, int nranks, int* k) {
  *k = cfg->nodes;
  if (*k == 0) {
    *k = kilnEmulateNodesSetting();
    if (*k < 0)
      return kilnSetError(KILN_ERR_INVALID_ARGUMENT,
                          "rank %d: KILN_EMULATE_NODES=%s is not a positive integer", rank,
                          kilnParamRaw(KILN_PARAM_EmulateNodes));
  }
  if (*k > 0 && nranks % *k != 0)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT,
                        "rank %d: %d ranks do not split into %d nodes of equal size "
                        "(kilnCommConfig.nodes or KILN_EMULATE_NODES)",
                        rank, nranks, *k);
  return KILN_SUCCESS;
}

/* The device API of NCCL has no stable ABI: only the NCCL these headers come from will do. */
static kilnResult_t check_nccl_version(void) {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) return kilnSetError(KILN_ERR_UNSUPPORTED, "ncclGetVersion failed");
  if (v != NCCL_VERSION_CODE)
    return kilnSetError(KILN_ERR_UNSUPPORTED,
                        "NCCL at run time is %d but kiln was built against %d: the device API "
                        "has no stable ABI, use NCCL instead",
                        v, NCCL_VERSION_CODE);
  return KILN_SUCCESS;
}

/* Range checks. threads <= 512: the interpreter kernel is compiled for blocks of at most 512
 * threads (__launch_bounds__(512): up to 128 registers, so its copy loops do not spill). */
static kilnResult_t check_config(const kilnCommConfig* cfg) {
  if (cfg->size != sizeof(kilnCommConfig) || cfg->magic != KILN_COMM_CONFIG_MAGIC)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT,
                        "kilnCommConfig not initialized with KILN_COMM_CONFIG_INITIALIZER");
  if (cfg->maxChannels < 1 || cfg->maxChannels > 64 || cfg->nslots < 2 || cfg->nslots > 64 ||
      cfg->slotBytes < 4096 || cfg->slotBytes > ((size_t)64 << 20) || cfg->slotBytes % 4096 != 0 ||
      cfg->threads < 64 || cfg->threads > 512 || cfg->threads % 32 != 0 || cfg->timeoutMs < 1 ||
      cfg->symBytes > ((size_t)64 << 30) || cfg->symBytes % 8192 != 0 || cfg->nodes < 0)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT,
                        "kilnCommConfig out of range (maxChannels 1..64, nslots 2..64, slotBytes a "
                        "multiple of 4096 up to 64 MiB, threads 64..512 by 32, timeoutMs >= 1, symBytes a "
                        "multiple of 8192 up to 64 GiB, nodes >= 0)");
  return KILN_SUCCESS;
}

/* Frees whatever part of the communicator exists (not collective). */
static void comm_free(struct kilnComm* c) {
  if (!c) return;
  if (c->dev >= 0) cudaSetDevice(c->dev);
  if (c->haveLast) cudaEventSynchronize(c->last);
  cudaDeviceSynchronize();
  /* After kilnCommAbort the NCCL communicator may be gone (ncclCommAbort freed the device
   * communicator and the window's registration with it): no NCCL call. */
  if (c->devComm && !c->aborted) kilnNcclDevCommDestroy(c->nccl, c->devComm);
  if (c->registered && !c->aborted) ncclCommWindowDeregister(c->nccl, c->window);
  if (c->win && c->sharedWin)
    cudaFree(c->win);
  else if (c->win)
    ncclMemFree(c->win);
  if (c->state) cudaFree(c->state);
  if (c->symState) cudaFree(c->symState);
  if (c->memSlots) cudaFree(c->memSlots);
  if (c->peerScratch) cudaFree(c->peerScratch);
  if (c->abortFlag) cudaFree(c->abortFlag);
  if (c->errHost) cudaFreeHost(c->errHost);
  if (c->last) cudaEventDestroy(c->last);
  if (c->ceFork) cudaEventDestroy(c->ceFork);
  if (c->ceJoin) cudaEventDestroy(c->ceJoin);
  if (c->ceSide) cudaStreamDestroy(c->ceSide);
  if (c->ceSideCapture) cudaStreamDestroy(c->ceSideCapture);
  for (int i = 0; i < c->nuwins; i++) free(c->uwins[i].peers);
  free(c->uwins);
  free(c->peers);
  struct kilnClique* k = c->clique;
  if (k) {
    __atomic_store_n(&k->members[c->rank], NULL, __ATOMIC_RELEASE); /* kilnSymGroupPeers reads it */
    if (__atomic_sub_fetch(&k->refs, 1, __ATOMIC_ACQ_REL) == 0) free(k);
  }
  free(c);
}

/* Step 1 (local): buffers and zeroed counters of c, whose rank, size and device are set; the
 * window from NCCL's allocator (ncclMemAlloc), or from cudaMalloc for a communicator of
 * kilnCommCreateShared (c->sharedWin). */
static kilnResult_t comm_alloc(struct kilnComm* c, const kilnCommConfig* cfg) {
  kilnResult_t res = KILN_SUCCESS;
  c->cfg = *cfg;
  CUDA_TRY(cudaSetDevice(c->dev), out);
  if (!c->nsm) CUDA_TRY(cudaDeviceGetAttribute(&c->nsm, cudaDevAttrMultiProcessorCount, c->dev), out);
  CUDA_TRY((cudaError_t)kilnInterpPreload(), out);
  const size_t nconn = (size_t)c->nranks * cfg->maxChannels;
  c->fifoBytes = (size_t)cfg->nslots * cfg->slotBytes;
  c->headBase = nconn * c->fifoBytes;
  c->tailBase = c->headBase + nconn * 128;
  c->symFlagBase = c->tailBase + nconn * 128;
  c->symStageBase = (c->symFlagBase + KILN_SYM_FLAG_WORDS * sizeof(uint64_t) + 4095) & ~(size_t)4095;
  c->symHalf = cfg->symBytes / 2;
  kilnSymConfigure(c); /* also the line forms' staging after the flag form's (host/sym.c sym_line_areas) */
  kilnMemPlanAreas(c, c->symLL128Base + 2 * c->symLL128Half); /* the plans' areas after them (memplan.c) */
  c->winBytes =
      (c->memArriveBase + (size_t)c->nranks * sizeof(uint64_t) + (1u << 21) - 1) & ~(size_t)((1u << 21) - 1);
  if (c->sharedWin) {
    CUDA_TRY(cudaMalloc((void**)&c->win, c->winBytes), out);
  } else if (kilnFaultAt("window", c->rank) || ncclMemAlloc((void**)&c->win, c->winBytes) != ncclSuccess) {
    c->win = NULL;
    return kilnSetError(KILN_ERR_UNSUPPORTED, "rank %d: ncclMemAlloc(%zu) failed%s", c->rank, c->winBytes,
                        kilnFaultAt("window", c->rank) ? " (KILN_FAULT)" : "");
  }
  CUDA_TRY(cudaMemset(c->win, 0, c->winBytes), out);
  CUDA_TRY(cudaMalloc((void**)&c->state, 2 * nconn * sizeof(uint64_t)), out);
  CUDA_TRY(cudaMemset(c->state, 0, 2 * nconn * sizeof(uint64_t)), out);
  CUDA_TRY(cudaMalloc((void**)&c->peerScratch, (size_t)c->nranks * sizeof(void*)), out);
  CUDA_TRY(cudaMalloc((void**)&c->symState, KILN_SYM_MAX_BLOCKS * sizeof(uint64_t)), out);
  CUDA_TRY(cudaMemset(c->symState, 0, KILN_SYM_MAX_BLOCKS * sizeof(uint64_t)), out);
  CUDA_TRY(cudaMalloc((void**)&c->memSlots, 2 * KILN_DEV_MEM_SLOTS * sizeof(uint64_t)), out);
  CUDA_TRY(cudaMemset(c->memSlots, 0, 2 * KILN_DEV_MEM_SLOTS * sizeof(uint64_t)), out);
  CUDA_TRY(cudaMalloc((void**)&c->abortFlag, sizeof(int)), out);
  CUDA_TRY(cudaMemset(c->abortFlag, 0, sizeof(int)), out);
  CUDA_TRY(cudaHostAlloc((void**)&c->errHost, sizeof(int), cudaHostAllocMapped | cudaHostAllocPortable), out);
  *(volatile int*)c->errHost = 0;
  CUDA_TRY(cudaHostGetDevicePointer((void**)&c->errDev, c->errHost, 0), out);
  CUDA_TRY(cudaEventCreateWithFlags(&c->last, cudaEventDisableTiming), out);
  CUDA_TRY(cudaEventCreateWithFlags(&c->ceFork, cudaEventDisableTiming), out);
  CUDA_TRY(cudaEventCreateWithFlags(&c->ceJoin, cudaEventDisableTiming), out);
  CUDA_TRY(cudaStreamCreateWithFlags(&c->ceSide, cudaStreamNonBlocking), out);
  CUDA_TRY(cudaStreamCreateWithFlags(&c->ceSideCapture, cudaStreamNonBlocking), out);
  CUDA_TRY(cudaDeviceSynchronize(), out);
  c->peers = calloc((size_t)c->nranks, sizeof(char*));
  if (!c->peers) res = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory for peer addresses");
out:
  return res;
}

/* Step 1 (local): queries, buffers, zeroed counters. */
static kilnResult_t comm_begin(ncclComm_t nccl, const kilnCommConfig* cfg, struct kilnComm** out) {
  kilnResult_t res = check_nccl_version();
  if (res != KILN_SUCCESS) return res;
  kilnCommConfig def = KILN_COMM_CONFIG_INITIALIZER;
  if (!cfg) cfg = &def;
  if ((res = check_config(cfg)) != KILN_SUCCESS) return res;
  struct kilnComm* c = calloc(1, sizeof(*c));
  if (!c) return kilnSetError(KILN_ERR_NO_MEMORY, "out of memory for a communicator");
  c->dev = -1;
  c->nccl = nccl;
  int k = 0;
  if (ncclCommUserRank(nccl, &c->rank) != ncclSuccess || ncclCommCount(nccl, &c->nranks) != ncclSuccess ||
      ncclCommCuDevice(nccl, &c->dev) != ncclSuccess) {
    res = kilnSetError(KILN_ERR_NCCL, "cannot query the NCCL communicator (rank, size, device)");
  } else if ((res = asked_nodes(cfg, c->rank, c->nranks, &k)) == KILN_SUCCESS) {
    c->emulatedNodes = k > 0;
    c->nnodes = k > 0 ? k : 1;
    c->nodeSize = c->nranks / c->nnodes;
    res = comm_alloc(c, cfg);
  }
  if (res != KILN_SUCCESS) {
    comm_free(c);
    return res;
  }
  *out = c;
  return KILN_SUCCESS;
}

/* Step 2 (collective, may be grouped). */
static kilnResult_t comm_register(struct kilnComm* c) {
  cudaSetDevice(c->dev);
  ncclResult_t r = ncclCommWindowRegister(c->nccl, c->win, c->winBytes, &c->window, NCCL_WIN_COLL_SYMMETRIC);
  if (r != ncclSuccess && r != ncclInProgress)
    return kilnSetError(KILN_ERR_UNSUPPORTED, "rank %d: ncclCommWindowRegister failed: %s", c->rank,
                        ncclGetErrorString(r));
  c->registered = true;
  return KILN_SUCCESS;
}

/* Step 3 (collective, may be grouped). */
static kilnResult_t comm_dev_comm(struct kilnComm* c) {
  cudaSetDevice(c->dev);
  int r = kilnNcclDevCommCreate(c->nccl, &c->devComm);
  if (r != ncclSuccess)
    return kilnSetError(KILN_ERR_UNSUPPORTED,
                        "rank %d: ncclDevCommCreate failed (%s): no symmetric memory support", c->rank,
                        ncclGetErrorString((ncclResult_t)r));
  return KILN_SUCCESS;
}

/* Waits for a non-blocking communicator's pending operation (ncclInProgress) to end. */
static ncclResult_t nccl_settle(ncclComm_t comm, ncclResult_t r) {
  while (r == ncclInProgress)
    if (ncclCommGetAsyncError(comm, &r) != ncclSuccess) return ncclInternalError;
  return r;
}

/* After a collective step's group: a non-blocking NCCL communicator's operation done (a blocking
 * one's at once), or its error. */
static kilnResult_t comm_settle(struct kilnComm* c, const char* what) {
  const ncclResult_t r = nccl_settle(c->nccl, ncclInProgress);
  if (r != ncclSuccess)
    return kilnSetError(KILN_ERR_UNSUPPORTED, "rank %d: %s: %s", c->rank, what, ncclGetErrorString(r));
  return KILN_SUCCESS;
}

/* The nodes of a communicator whose ranks do not all share memory, or that asked for a split:
 * those of more than one node run plans in phases (internode.c) and have no symmetric-memory
 * kernels (their staging stays unused), no plans with memory steps and no clique. */
static void comm_nodes_settled(struct kilnComm* c) {
  if (c->nnodes > 1) c->symHalf = c->memHalf = 0;
  if (kilnDebugLevel() >= KILN_DEBUG_INFO)
    fprintf(
        stderr, "kiln: rank %d: %d node%s of %d ranks (%s)%s\n", c->rank, c->nnodes, c->nnodes > 1 ? "s" : "",
        c->nodeSize,
        c->emulatedNodes ? "emulated: kilnCommConfig.nodes or KILN_EMULATE_NODES" : "NCCL's load/store teams",
        c->nnodes > 1 ? ": steps between nodes go through NCCL's point-to-point calls" : "");
}

/* Step 4 (local): the nodes (NCCL's load/store team, or the split asked for, which must lie
 * within it), and the addresses of the peers of this rank's node. */
static kilnResult_t comm_finish(struct kilnComm* c) {
  cudaSetDevice(c->dev);
  int lsaRank = 0, lsaSize = 0;
  kilnNcclDevCommTeam(c->devComm, &lsaRank, &lsaSize, &c->ginContexts);
  const int lsaFirst = c->rank - lsaRank;
  if (!c->emulatedNodes) {
    if (lsaSize < 1 || c->nranks % lsaSize != 0 || lsaFirst != c->rank / lsaSize * lsaSize)
      return kilnSetError(
          KILN_ERR_UNSUPPORTED,
          "rank %d: NCCL's load/store team of this rank is ranks %d..%d of %d: kiln needs nodes of "
          "consecutive ranks, as many on each",
          c->rank, lsaFirst, lsaFirst + lsaSize - 1, c->nranks);
    c->nnodes = c->nranks / lsaSize;
    c->nodeSize = lsaSize;
  }
  const int first = c->rank / c->nodeSize * c->nodeSize;
  if (first < lsaFirst || first + c->nodeSize > lsaFirst + lsaSize)
    return kilnSetError(
        KILN_ERR_UNSUPPORTED,
        "rank %d: its node of ranks %d..%d (%d nodes asked for) reaches past NCCL's load/store team "
        "(ranks %d..%d): ranks of a node must share memory",
        c->rank, first, first + c->nodeSize - 1, c->nnodes, lsaFirst, lsaFirst + lsaSize - 1);
  int e = kilnNcclPeerPointers(c->window, c->nranks, c->peerScratch, (void**)c->peers);
  if (e != 0)
    return kilnSetError(KILN_ERR_CUDA, "rank %d: reading peer addresses: %s", c->rank,
                        cudaGetErrorString((cudaError_t)e));
  /* Outside the load/store team the device API's address is arithmetic on the team's, not a
   * mapping: only the node's peers keep one. */
  for (int p = 0; p < c->nranks; p++)
    if (!kilnCommSameNode(c, p)) c->peers[p] = NULL;
  if (kilnDebugLevel() >= KILN_DEBUG_INFO)
    for (int p = 0; p < c->nranks; p++)
      fprintf(stderr, "kiln: rank %d window %p (%zu bytes) peer %d at %p\n", c->rank, (void*)c->win,
              c->winBytes, p, (void*)c->peers[p]);
  for (int p = 0; p < c->nranks; p++)
    if (kilnCommSameNode(c, p) && !c->peers[p])
      return kilnSetError(KILN_ERR_UNSUPPORTED, "rank %d: no address for peer %d", c->rank, p);
  comm_nodes_settled(c);
  return KILN_SUCCESS;
}

void kilnAgreeClose(kilnAgreement* g) {
  if (!g) return;
  int save = 0;
  cudaGetDevice(&save);
  for (int i = 0; g->buf && g->dev && g->st && i < g->n; i++) {
    if (!g->buf[i] && !g->st[i]) continue;
    cudaSetDevice(g->dev[i]);
    if (g->buf[i]) cudaFree(g->buf[i]);
    if (g->st[i]) cudaStreamDestroy(g->st[i]);
  }
  free(g->buf);
  free(g->dev);
  free(g->st);
  memset(g, 0, sizeof *g);
  cudaSetDevice(save);
}

kilnResult_t kilnAgreeOpen(kilnAgreement* g, int n, const ncclComm_t* nccls, int m) {
  memset(g, 0, sizeof *g);
  g->n = n;
  g->m = m;
  g->nccls = nccls;
  g->buf = calloc((size_t)n, sizeof *g->buf);
  g->dev = calloc((size_t)n, sizeof *g->dev);
  g->st = calloc((size_t)n, sizeof *g->st);
  if (!g->buf || !g->dev || !g->st) {
    kilnAgreeClose(g);
    return kilnSetError(KILN_ERR_NO_MEMORY, "agreeing through NCCL: out of memory");
  }
  int save = 0;
  cudaGetDevice(&save);
  cudaError_t e = cudaSuccess;
  for (int i = 0; i < n && e == cudaSuccess; i++) {
    e = ncclCommCuDevice(nccls[i], &g->dev[i]) == ncclSuccess ? cudaSetDevice(g->dev[i])
                                                              : cudaErrorInvalidDevice;
    if (e == cudaSuccess) e = cudaMalloc((void**)&g->buf[i], (size_t)m * sizeof(int));
    if (e == cudaSuccess)
      e = cudaMemset(g->buf[i], 0, (size_t)m * sizeof(int)); /* what a failed upload sends */
    if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&g->st[i], cudaStreamNonBlocking);
  }
  cudaSetDevice(save);
  if (e != cudaSuccess) {
    cudaGetLastError();
    kilnAgreeClose(g);
    return kilnSetError(KILN_ERR_CUDA, "agreeing through NCCL: %s", cudaGetErrorString(e));
  }
  return KILN_SUCCESS;
}

kilnResult_t kilnAgreeRun(kilnAgreement* g, int* const* flags) {
  kilnResult_t res = KILN_SUCCESS;
  int save = 0;
  cudaGetDevice(&save);
  const size_t bytes = (size_t)g->m * sizeof(int);
  /* The uploads are ordered before the allreduce on its stream; one that fails still joins the
   * allreduce with the zeros the buffer holds (kilnAgreeOpen and every round leave it zeroed), so
   * the peers never wait for a rank that dropped out. */
  bool local = true;
  for (int i = 0; i < g->n; i++) {
    cudaSetDevice(g->dev[i]);
    if (cudaMemcpyAsync(g->buf[i], flags[i], bytes, cudaMemcpyHostToDevice, g->st[i]) != cudaSuccess) {
      cudaGetLastError();
      local = false;
    }
  }
  ncclResult_t r = ncclGroupStart();
  for (int i = 0; i < g->n && r == ncclSuccess; i++)
    r = ncclAllReduce(g->buf[i], g->buf[i], (size_t)g->m, ncclInt32, ncclMin, g->nccls[i], g->st[i]);
  ncclResult_t end = ncclGroupEnd();
  /* Each communicator settled on its own (non-blocking ones return ncclInProgress). */
  for (int i = 0; i < g->n && (end == ncclSuccess || end == ncclInProgress); i++) {
    const ncclResult_t e = nccl_settle(g->nccls[i], ncclInProgress);
    if (e != ncclSuccess) end = e;
  }
  if (end == ncclInProgress) end = ncclSuccess;
  if (r != ncclSuccess || end != ncclSuccess) {
    res = kilnSetError(KILN_ERR_NCCL, "agreeing through NCCL: ncclAllReduce: %s",
                       ncclGetErrorString(r != ncclSuccess ? r : end));
  }
  for (int i = 0; i < g->n && res == KILN_SUCCESS; i++) {
    cudaSetDevice(g->dev[i]);
    cudaError_t e = cudaMemcpyAsync(flags[i], g->buf[i], bytes, cudaMemcpyDeviceToHost, g->st[i]);
    /* Zeros again: what the next round sends should its upload fail. */
    if (e == cudaSuccess) e = cudaMemsetAsync(g->buf[i], 0, bytes, g->st[i]);
    if (e == cudaSuccess) e = cudaStreamSynchronize(g->st[i]);
    if (e != cudaSuccess) {
      cudaGetLastError();
      res = kilnSetError(KILN_ERR_CUDA, "agreeing through NCCL: %s", cudaGetErrorString(e));
    }
  }
  if (res == KILN_SUCCESS && !local)
    for (int i = 0; i < g->n; i++) memset(flags[i], 0, bytes); /* what this rank sent */
  cudaSetDevice(save);
  return res;
}

kilnResult_t kilnNcclAgree(int n, const ncclComm_t* nccls, int* const* flags, int m) {
  kilnAgreement g;
  kilnResult_t res = kilnAgreeOpen(&g, n, nccls, m);
  if (res != KILN_SUCCESS) return res;
  res = kilnAgreeRun(&g, flags);
  kilnAgreeClose(&g);
  return res;
}

/* A step's outcome agreed on by every rank of g's communicators (this process's ranks: own), after
 * every step of the creation: after step 1 (local) before any rank enters the collective steps,
 * so that no rank waits in them for one that failed alone (out of memory for the window, say);
 * after each collective step and step 4, so that every rank goes on, returns and tears down alike.
 * KILN_SUCCESS only when every rank of every communicator succeeded; a rank that did not keeps
 * its own error, the others name the step. */
static kilnResult_t comm_agreed(kilnAgreement* g, kilnResult_t own, const char* step) {
  int* ok = calloc((size_t)g->n, sizeof *ok);
  int** flags = calloc((size_t)g->n, sizeof *flags);
  kilnResult_t res = KILN_SUCCESS;
  char mine[512];
  snprintf(mine, sizeof mine, "%s", kilnLastError());
  if (!ok || !flags) {
    res = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
  } else {
    for (int i = 0; i < g->n; i++) {
      ok[i] = own == KILN_SUCCESS;
      flags[i] = &ok[i];
    }
    res = kilnAgreeRun(g, flags);
    bool all = res == KILN_SUCCESS;
    for (int i = 0; i < g->n && all; i++) all = ok[i] != 0;
    if (own != KILN_SUCCESS) {
      res = kilnSetError(own, "%s", mine);
    } else if (res == KILN_SUCCESS && !all) {
      int rank = -1;
      ncclCommUserRank(g->nccls[0], &rank);
      res = kilnSetError(KILN_ERR_UNSUPPORTED,
                         "rank %d: another rank could not %s (its own error says why): "
                         "no rank has a kiln communicator",
                         rank, step);
    }
  }
  free(ok);
  free(flags);
  return res;
}

/* One collective step of a creation (comm_register, comm_dev_comm) for every rank of g, grouped,
 * each rank's operation settled, the outcome agreed on (comm_agreed; agreed: what another rank
 * could not do). call names the NCCL call in the errors. Failed somewhere: no rank makes an NCCL
 * call at the teardown (as after an abort: a deregistration may be collective, and not every rank
 * has a registration or a device communicator; NCCL frees them with its communicator). */
static kilnResult_t comm_collective(kilnAgreement* g, struct kilnComm** cs,
                                    kilnResult_t (*step)(struct kilnComm*), const char* call,
                                    const char* agreed) {
  const int n = g->n;
  kilnResult_t res = KILN_SUCCESS;
  ncclGroupStart();
  for (int i = 0; i < n && res == KILN_SUCCESS; i++) res = step(cs[i]);
  const ncclResult_t ge = ncclGroupEnd();
  if (ge != ncclSuccess && ge != ncclInProgress && res == KILN_SUCCESS)
    res = kilnSetError(KILN_ERR_UNSUPPORTED, "%s (grouped) failed: %s", call, ncclGetErrorString(ge));
  for (int i = 0; i < n && res == KILN_SUCCESS; i++) res = comm_settle(cs[i], call);
  if ((res = comm_agreed(g, res, agreed)) != KILN_SUCCESS)
    for (int i = 0; i < n; i++)
      if (cs[i]) cs[i]->aborted = true;
  return res;
}

/* The steps of a creation, each agreed on (comm_agreed), for one rank (kilnCommCreate) or several
 * of one process (kilnCommCreateAll: collective steps grouped, so that one thread can drive every
 * rank's half). cs[i] made by step 1 on success; on failure every rank of every communicator has
 * failed, and what exists is left for the caller to free. */
static kilnResult_t comm_steps(kilnAgreement* g, const ncclComm_t* nccls, const kilnCommConfig* cfg,
                               struct kilnComm** cs) {
  const int n = g->n;
  kilnResult_t res = KILN_SUCCESS;
  for (int i = 0; i < n && res == KILN_SUCCESS; i++) res = comm_begin(nccls[i], cfg, &cs[i]);
  if ((res = comm_agreed(g, res, "set up its part (buffers, window)")) != KILN_SUCCESS) return res;
  if ((res = comm_collective(g, cs, comm_register, "ncclCommWindowRegister", "register its window")) !=
      KILN_SUCCESS)
    return res;
  if ((res = comm_collective(g, cs, comm_dev_comm, "ncclDevCommCreate", "create its device communicator")) !=
      KILN_SUCCESS)
    return res;
  for (int i = 0; i < n && res == KILN_SUCCESS; i++) res = comm_finish(cs[i]);
  return comm_agreed(g, res, "reach its peers' memory");
}

kilnResult_t kilnCommCreate(ncclComm_t nccl, const kilnCommConfig* cfg, kilnComm_t* out) {
  if (!nccl || !out) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnCommCreate: NULL argument");
  int saveDev = 0;
  cudaGetDevice(&saveDev);
  struct kilnComm* c = NULL;
  kilnAgreement g;
  /* The agreement's buffer first, before the window can take the memory it needs. */
  kilnResult_t res = kilnAgreeOpen(&g, 1, &nccl, 1);
  if (res == KILN_SUCCESS) {
    res = comm_steps(&g, &nccl, cfg, &c);
    kilnAgreeClose(&g);
  }
  if (res == KILN_SUCCESS)
    *out = c;
  else
    comm_free(c);
  cudaSetDevice(saveDev);
  return res;
}

/* Turns on GPU `from`'s access to GPU `to`'s memory (it stays on): cudaSuccess when it is on,
 * cudaErrorPeerAccessUnsupported when the pair cannot have it, else the failure; the error is not
 * left for the caller's next CUDA call. The current device is `from` afterwards. */
static cudaError_t peer_access_on(int from, int to) {
  int can = 0;
  cudaError_t e = cudaDeviceCanAccessPeer(&can, from, to);
  if (e == cudaSuccess && !can) e = cudaErrorPeerAccessUnsupported;
  if (e == cudaSuccess) {
    cudaSetDevice(from);
    e = cudaDeviceEnablePeerAccess(to, 0);
    if (e == cudaErrorPeerAccessAlreadyEnabled) e = cudaSuccess;
  }
  cudaGetLastError(); /* cudaErrorPeerAccessAlreadyEnabled is recorded too */
  return e;
}

/* The clique of cs[0..n) (runtime_internal.h) when they are every rank of their communicator, each
 * on its own GPU, and every GPU can have peer access to every other: enables it (it stays on after
 * the communicators go, as NCCL's own in one process). KILN_SYM_PEERS=0, or settings under which
 * no call goes direct (KILN_SYM=0, KILN_SYM_DIRECT=0, no staging, rank counts without a
 * threshold): no clique. Not an error when there can be none: grouped calls then stay staged (or
 * on the caller's windows). */
static void comm_clique(int n, struct kilnComm** cs) {
  if (!kilnParam(KILN_PARAM_SymPeers) || n < 2 || n > KILN_SYM_MAX_RANKS || n != cs[0]->nranks) return;
  const struct kilnComm* c0 = cs[0];
  if (c0->symOff || c0->symHalf == 0 ||
      (c0->symDirectBytes >= (uint64_t)LLONG_MAX && c0->symDirectA2ABytes >= (uint64_t)LLONG_MAX))
    return;
  struct kilnComm* byRank[KILN_SYM_MAX_RANKS] = {0};
  for (int i = 0; i < n; i++) {
    if (cs[i]->nranks != n || cs[i]->rank < 0 || cs[i]->rank >= n || byRank[cs[i]->rank]) return;
    byRank[cs[i]->rank] = cs[i];
  }
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++)
      if (i != j && (cs[i]->dev == cs[j]->dev || peer_access_on(cs[i]->dev, cs[j]->dev) != cudaSuccess))
        return;
  struct kilnClique* k = calloc(1, sizeof(*k));
  if (!k) return;
  k->n = k->refs = n;
  for (int p = 0; p < n; p++) {
    k->members[p] = byRank[p];
    byRank[p]->clique = k;
  }
  if (kilnDebugLevel() >= KILN_DEBUG_INFO)
    fprintf(stderr,
            "kiln: ranks 0-%d in one process with peer access: grouped calls of all of them may go "
            "zero copy\n",
            n - 1);
}

kilnResult_t kilnCommCreateAll(int n, const ncclComm_t* nccls, const kilnCommConfig* cfg, kilnComm_t* out) {
  if (n < 1 || !nccls || !out)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnCommCreateAll: bad arguments");
  int saveDev = 0;
  cudaGetDevice(&saveDev);
  struct kilnComm** cs = calloc((size_t)n, sizeof(*cs));
  if (!cs) return kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
  /* Agreed on step by step: where the n are not every rank (others in other processes), those
   * must not wait in the collective steps for these. */
  kilnAgreement g;
  kilnResult_t res = kilnAgreeOpen(&g, n, nccls, 1);
  if (res == KILN_SUCCESS) {
    res = comm_steps(&g, nccls, cfg, cs);
    kilnAgreeClose(&g);
  }
  if (res == KILN_SUCCESS) {
    comm_clique(n, cs);
    for (int i = 0; i < n; i++) {
      cs[i]->wholeInProcess = n == cs[i]->nranks;
      out[i] = cs[i];
    }
  } else {
    kilnCommDestroyAll(n, cs);
  }
  free(cs);
  cudaSetDevice(saveDev);
  return res;
}

/* n ranks of one process, rank i on GPU devs[i], over memory CUDA maps between the GPUs (peer
 * access), without NCCL: each window from cudaMalloc, every rank's peers[] the other ranks' window
 * bases. Several ranks may share a GPU, each taking an equal share of its SMs (nsm: the block
 * caps of kilnPlanLoad and the symmetric kernels), so that the kernels of one call on that GPU,
 * each on its own stream, can all be resident at once (they wait for each other). For the GPU
 * suites: rank counts beyond the GPUs at hand (8 ranks on 4 or 2 GPUs) run the same kernels and
 * host code as on a GPU each. Not a public interface: kiln/runtime.h's communicators wrap NCCL's.
 * They have no NCCL windows (kilnCommWindowAdd refuses them) and are freed together
 * (kilnCommDestroyAll): each rank's peers[] points into the others' windows. */
kilnResult_t kilnCommCreateShared(int n, const int* devs, const kilnCommConfig* cfg, kilnComm_t* out) {
  if (n < 1 || n > KILN_SYM_MAX_RANKS || !devs || !out)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT,
                        "kilnCommCreateShared: bad arguments (%d ranks, at most %d)", n, KILN_SYM_MAX_RANKS);
  kilnCommConfig def = KILN_COMM_CONFIG_INITIALIZER;
  if (!cfg) cfg = &def;
  kilnResult_t res = check_config(cfg);
  int k = 0;
  if (res == KILN_SUCCESS) res = asked_nodes(cfg, 0, n, &k);
  if (res != KILN_SUCCESS) return res;
  int saveDev = 0;
  cudaGetDevice(&saveDev);
  struct kilnComm* cs[KILN_SYM_MAX_RANKS] = {0};
  for (int i = 0; i < n && res == KILN_SUCCESS; i++) {
    int sms = 0, here = 0;
    for (int j = 0; j < n; j++) here += devs[j] == devs[i];
    if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, devs[i]) != cudaSuccess ||
        sms / here < 1) {
      cudaGetLastError();
      res = kilnSetError(KILN_ERR_CUDA, "kilnCommCreateShared: rank %d: GPU %d unusable (or %d ranks on it)",
                         i, devs[i], here);
      break;
    }
    for (int j = 0; j < n && res == KILN_SUCCESS; j++) {
      const cudaError_t e = devs[j] == devs[i] ? cudaSuccess : peer_access_on(devs[i], devs[j]);
      if (e != cudaSuccess)
        res = kilnSetError(e == cudaErrorPeerAccessUnsupported ? KILN_ERR_UNSUPPORTED : KILN_ERR_CUDA,
                           "kilnCommCreateShared: peer access GPU %d -> %d: %s", devs[i], devs[j],
                           cudaGetErrorString(e));
    }
    if (res != KILN_SUCCESS) break;
    struct kilnComm* c = calloc(1, sizeof(*c));
    if (!c) {
      res = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory for a communicator");
      break;
    }
    c->rank = i;
    c->nranks = n;
    c->dev = devs[i];
    c->nsm = sms / here;
    c->sharedWin = true;
    c->wholeInProcess = true;
    c->emulatedNodes = k > 0;
    c->nnodes = k > 0 ? k : 1;
    c->nodeSize = n / c->nnodes;
    cs[i] = c;
    res = comm_alloc(c, cfg);
    /* Ranks that share a GPU launch their symmetric kernels without programmatic serialization:
     * with it a rank's next kernel may take SMs while its current one runs, and the kernels of
     * the current call on its GPU-mates' streams may then find none (4 ranks on one H200, 33
     * blocks each, allgather 512 KiB in CUDA graphs of 20 calls, time out with it). */
    if (here > 1) c->symPdl = false;
  }
  for (int i = 0; i < n && res == KILN_SUCCESS; i++) {
    for (int p = 0; p < n; p++) cs[i]->peers[p] = kilnCommSameNode(cs[i], p) ? cs[p]->win : NULL;
    if (i == 0 || cs[i]->nnodes > 1) comm_nodes_settled(cs[i]);
  }
  for (int i = 0; i < n; i++) {
    if (res == KILN_SUCCESS)
      out[i] = cs[i];
    else
      comm_free(cs[i]);
  }
  cudaSetDevice(saveDev);
  return res;
}

kilnResult_t kilnCommDestroy(kilnComm_t comm) {
  if (!comm) return KILN_SUCCESS;
  int saveDev = 0;
  cudaGetDevice(&saveDev);
  comm_free(comm);
  cudaSetDevice(saveDev);
  return KILN_SUCCESS;
}

kilnResult_t kilnCommAbort(kilnComm_t comm) {
  if (!comm) return KILN_SUCCESS;
  struct kilnComm* c = comm;
  __atomic_store_n(&c->aborted, true, __ATOMIC_RELEASE);
  /* The device abort word, which every kernel waiting on a peer polls (kernels/primitives.cuh,
   * Spin), raised by the copy engine from a private stream while those kernels spin: this waits
   * for that copy only, never for a kernel. The communicator's own streams are not used: a
   * captured graph may hold them. */
  static const int one = 1;
  int save = 0;
  cudaGetDevice(&save);
  cudaSetDevice(c->dev);
  /* Relaxed capture mode: an abort may come while another thread captures. */
  enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  cudaThreadExchangeStreamCaptureMode(&mode);
  cudaStream_t s = NULL;
  cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  if (e == cudaSuccess) e = cudaMemcpyAsync(c->abortFlag, &one, sizeof one, cudaMemcpyHostToDevice, s);
  if (e == cudaSuccess) e = cudaStreamSynchronize(s);
  if (s) cudaStreamDestroy(s);
  cudaThreadExchangeStreamCaptureMode(&mode);
  cudaSetDevice(save);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return kilnSetError(KILN_ERR_CUDA,
                        "rank %d: raising the abort word: %s (calls on the communicator are "
                        "refused; kernels waiting for a peer wait out their timeout)",
                        c->rank, cudaGetErrorString(e));
  }
  return KILN_SUCCESS;
}

kilnResult_t kilnCommAbortRelease(kilnComm_t c, int waitMs) {
  if (!c) return KILN_SUCCESS;
  if (!__atomic_load_n(&c->aborted, __ATOMIC_ACQUIRE))
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "rank %d: kilnCommAbortRelease before kilnCommAbort",
                        c->rank);
  if (!c->registered || c->sharedWin) return KILN_SUCCESS;
  kilnResult_t res = KILN_SUCCESS;
  int save = 0;
  cudaGetDevice(&save);
  cudaSetDevice(c->dev);
  enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  cudaThreadExchangeStreamCaptureMode(&mode);
  /* Its kernels leave at their next wait for a peer (kilnCommAbort): the end of its last call, in
   * steps of a millisecond, unless one is queued behind work that waits on (NCCL's kernels stuck
   * on a dead peer until NCCL's own abort). */
  cudaError_t e = c->haveLast ? cudaEventQuery(c->last) : cudaSuccess;
  for (int ms = 0; e == cudaErrorNotReady && ms < waitMs; ms++) {
    const struct timespec t = {0, 1000000};
    nanosleep(&t, NULL);
    e = cudaEventQuery(c->last);
  }
  if (e != cudaSuccess) {
    cudaGetLastError();
    res = kilnSetError(KILN_ERR_TIMEOUT,
                       "rank %d: kiln's kernels on the aborted communicator are still on the GPU "
                       "after %d ms (%s): its window stays registered",
                       c->rank, waitMs, cudaGetErrorString(e));
    goto out;
  }
  /* Local in NCCL 2.28 (this rank's mappings and its reference to the memory; no peer takes part). */
  const ncclResult_t r = ncclCommWindowDeregister(c->nccl, c->window);
  if (r != ncclSuccess) {
    res = kilnSetError(KILN_ERR_NCCL, "rank %d: ncclCommWindowDeregister of kiln's window: %s", c->rank,
                       ncclGetErrorString(r));
    goto out;
  }
  c->registered = false;
out:
  cudaThreadExchangeStreamCaptureMode(&mode);
  cudaSetDevice(save);
  return res;
}

kilnResult_t kilnCommDestroyAll(int n, kilnComm_t* comms) {
  if (n < 1 || !comms) return KILN_SUCCESS;
  int saveDev = 0;
  cudaGetDevice(&saveDev);
  for (int i = 0; i < n; i++)
    if (comms[i]) {
      cudaSetDevice(comms[i]->dev);
      if (comms[i]->haveLast) cudaEventSynchronize(comms[i]->last);
      cudaDeviceSynchronize();
    }
  /* Deregistration and the device communicator's teardown may be collective: group them. */
  ncclGroupStart();
  for (int i = 0; i < n; i++)
    if (comms[i] && comms[i]->devComm && !comms[i]->aborted) {
      cudaSetDevice(comms[i]->dev);
      kilnNcclDevCommDestroy(comms[i]->nccl, comms[i]->devComm);
      comms[i]->devComm = NULL;
    }
  ncclGroupEnd();
  ncclGroupStart();
  for (int i = 0; i < n; i++)
    if (comms[i] && comms[i]->registered && !comms[i]->aborted) {
      cudaSetDevice(comms[i]->dev);
      ncclCommWindowDeregister(comms[i]->nccl, comms[i]->window);
      comms[i]->registered = false;
    }
  ncclGroupEnd();
  for (int i = 0; i < n; i++) {
    comm_free(comms[i]);
    comms[i] = NULL;
  }
  cudaSetDevice(saveDev);
  return KILN_SUCCESS;
}

kilnResult_t kilnCommCallCheck(const struct kilnComm* c, size_t count, const void* sendbuf,
                               const void* recvbuf, kilnDataType_t dtype, kilnRedOp_t op) {
  if (kilnDataTypeSize(dtype) == 0 || (int)op < 0 || op >= KILN_NUM_REDOPS)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "rank %d: data type %d or op %d unknown", c->rank,
                        (int)dtype, (int)op);
  if (count > KILN_MAX_CALL_COUNT)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "rank %d: a call of %zu elements, more than 2^40", c->rank,
                        count);
  if (count > 0 && (!sendbuf || !recvbuf))
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "rank %d: a call of %zu elements with a NULL %s buffer",
                        c->rank, count, !sendbuf ? "send" : "receive");
  if (__atomic_load_n(&c->aborted, __ATOMIC_ACQUIRE))
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT,
                        "rank %d: the communicator was aborted (kilnCommAbort): no call runs on it any more; "
                        "destroy it",
                        c->rank);
  if (c->errHost && *(volatile int*)c->errHost != 0) /* a host-only communicator (tests) has none */
    return kilnSetError(KILN_ERR_TIMEOUT,
                        "rank %d: the communicator failed before (a kiln kernel gave up waiting for a peer): "
                        "no call runs on it any more; destroy it",
                        c->rank);
  return KILN_SUCCESS;
}

kilnResult_t kilnCommGetAsyncError(kilnComm_t comm, kilnResult_t* asyncError) {
  if (!comm || !asyncError)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnCommGetAsyncError: NULL argument");
  int e = *(volatile int*)comm->errHost;
  *asyncError = e == 0 ? KILN_SUCCESS : KILN_ERR_TIMEOUT;
  if (e != 0) {
    kilnSetError(KILN_ERR_TIMEOUT, "rank %d: a kiln kernel gave up waiting for a peer", comm->rank);
    return KILN_SUCCESS;
  }
  /* Between nodes kiln's calls are NCCL's own (a peer of another node that died or never came):
   * NCCL's asynchronous error is the communicator's. */
  if (comm->nnodes > 1 && !comm->sharedWin && !__atomic_load_n(&comm->aborted, __ATOMIC_ACQUIRE)) {
    ncclResult_t ne = ncclSuccess;
    if (ncclCommGetAsyncError(comm->nccl, &ne) == ncclSuccess && ne != ncclSuccess && ne != ncclInProgress) {
      *asyncError = KILN_ERR_NCCL;
      kilnSetError(KILN_ERR_NCCL, "rank %d: NCCL's asynchronous error between nodes: %s", comm->rank,
                   ncclGetErrorString(ne));
    }
  }
  return KILN_SUCCESS;
}

/* ---- the caller's symmetric windows ---- */

kilnResult_t kilnCommWindowAdd(kilnComm_t c, ncclWindow_t win, void* base, size_t bytes) {
  if (!c || !win || !base || bytes == 0 || (uintptr_t)base > UINTPTR_MAX - bytes)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT,
                        "kilnCommWindowAdd: NULL communicator, window or "
                        "buffer, 0 bytes, or a range past the address space");
  if (__atomic_load_n(&c->aborted, __ATOMIC_ACQUIRE))
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "rank %d: kilnCommWindowAdd on an aborted communicator",
                        c->rank);
  if (c->sharedWin)
    return kilnSetError(KILN_ERR_UNSUPPORTED,
                        "rank %d: kilnCommWindowAdd: a communicator made without NCCL "
                        "(kilnCommCreateShared) has no NCCL windows",
                        c->rank);
  if (c->nnodes > 1)
    return kilnSetError(KILN_ERR_UNSUPPORTED,
                        "rank %d: kilnCommWindowAdd: a communicator of %d nodes has no "
                        "symmetric-memory kernels to use the window",
                        c->rank, c->nnodes);
  /* Windows may overlap (PyTorch's symmetric memory registers one per tensor, several in one
   * segment): a call takes the newest that holds its buffer (kilnUserWindowPeers). */
  for (int i = 0; i < c->nuwins; i++)
    if (c->uwins[i].win == win)
      return kilnSetError(KILN_ERR_INVALID_ARGUMENT,
                          "rank %d: kilnCommWindowAdd: window %p already "
                          "added",
                          c->rank, (void*)win);
  if (c->nuwins == c->capuwins) {
    const int cap = c->capuwins ? 2 * c->capuwins : 8;
    struct kilnUserWindow* w = realloc(c->uwins, (size_t)cap * sizeof(*w));
    if (!w) return kilnSetError(KILN_ERR_NO_MEMORY, "out of memory for a window");
    c->uwins = w;
    c->capuwins = cap;
  }
  char** peers = calloc((size_t)c->nranks, sizeof(char*));
  if (!peers) return kilnSetError(KILN_ERR_NO_MEMORY, "out of memory for a window");
  int saveDev = 0;
  cudaGetDevice(&saveDev);
  cudaSetDevice(c->dev);
  const int e = kilnNcclPeerPointers(win, c->nranks, c->peerScratch, (void**)peers);
  cudaSetDevice(saveDev);
  kilnResult_t res = KILN_SUCCESS;
  if (e != 0)
    res = kilnSetError(KILN_ERR_CUDA,
                       "rank %d: kilnCommWindowAdd: reading the peers' addresses of window "
                       "%p: %s",
                       c->rank, (void*)win, cudaGetErrorString((cudaError_t)e));
  for (int p = 0; p < c->nranks && res == KILN_SUCCESS; p++)
    if (!peers[p])
      res = kilnSetError(KILN_ERR_UNSUPPORTED,
                         "rank %d: kilnCommWindowAdd: window %p has no address for "
                         "rank %d (registered without NCCL_WIN_COLL_SYMMETRIC, or on another communicator?)",
                         c->rank, (void*)win, p);
  if (res != KILN_SUCCESS) {
    free(peers);
    return res;
  }
  struct kilnUserWindow* u = &c->uwins[c->nuwins++];
  u->win = win;
  u->base = (char*)base;
  u->bytes = bytes;
  u->peers = peers;
  return KILN_SUCCESS;
}

/* Drops window i, keeping the others in the order they were added (kilnUserWindowPeers looks from
 * the newest). */
static void window_remove_at(struct kilnComm* c, int i) {
  free(c->uwins[i].peers);
  memmove(&c->uwins[i], &c->uwins[i + 1], (size_t)(c->nuwins - i - 1) * sizeof(c->uwins[0]));
  c->nuwins--;
}

kilnResult_t kilnCommWindowRemove(kilnComm_t c, ncclWindow_t win) {
  if (!c || !win) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnCommWindowRemove: NULL argument");
  for (int i = 0; i < c->nuwins; i++)
    if (c->uwins[i].win == win) {
      window_remove_at(c, i);
      return KILN_SUCCESS;
    }
  return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "rank %d: kilnCommWindowRemove: window %p was not added",
                      c->rank, (void*)win);
}

int kilnCommWindowForget(kilnComm_t c, const void* base, size_t bytes) {
  if (!c || !base || bytes == 0) return 0;
  const char* lo = (const char*)base;
  const char* hi = (uintptr_t)lo > UINTPTR_MAX - bytes ? (const char*)UINTPTR_MAX : lo + bytes;
  int gone = 0;
  for (int i = 0; i < c->nuwins;) {
    const struct kilnUserWindow* u = &c->uwins[i];
    if (u->base < hi && lo < u->base + u->bytes) {
      window_remove_at(c, i);
      gone++;
    } else {
      i++;
    }
  }
  return gone;
}

int kilnCommWindowCount(kilnComm_t c) { return c ? c->nuwins : 0; }

/* The newest window that holds the range: where windows overlap, the latest registration
 * describes the memory as it is now (an older one may be a registration of memory since freed and
 * allocated again at the same address, whose peers' addresses no longer lead to the peers' buffers
 * of this call: PyTorch's symmetric memory does that). */
bool kilnUserWindowPeers(const struct kilnComm* c, const void* p, size_t bytes, char** peers) {
  const char* q = (const char*)p;
  for (int i = c->nuwins - 1; i >= 0; i--) {
    const struct kilnUserWindow* u = &c->uwins[i];
    if (q < u->base || (size_t)(q - u->base) > u->bytes || bytes > u->bytes - (size_t)(q - u->base)) continue;
    const size_t off = (size_t)(q - u->base);
    for (int r = 0; r < c->nranks; r++) peers[r] = u->peers[r] + off;
    peers[c->rank] = (char*)q;
    return true;
  }
  return false;
}
