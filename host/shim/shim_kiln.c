/*
 * kiln's side of the drop-in libnccl.so.2: a kiln communicator (include/kiln/runtime.h) for each
 * NCCL communicator the application creates, the plans it can run, and the choice per call.
 *
 * Plans: the registry's (include/kiln/registry.h): the plans baked into the library, plus those
 * KILN_PLANS names (a ':'-separated list of plan files and folders), loaded once per process.
 *
 * Shape: a communicator is nodes x GPUs per node, from KILN_EMULATE_NODES where set, else from
 * NCCL's view (its load/store team: the ranks that share memory with this one form a node). A
 * communicator of several nodes gets only plans made for that many nodes (the plan's nnodes),
 * which kiln runs cut into phases (kernels within a node, NCCL's point-to-point calls between
 * nodes: host/internode.c); one node only plans that name no more than one. KILN_DEBUG=INFO says
 * the shape, where it came from and which plans fit.
 *
 * Setup (at init, every rank of the communicator in the same order): skip when the communicator
 * has fewer than 2 ranks or no registry entry has its rank count and shape; else kilnCommCreate and
 * kilnPlanLoad of each such entry's plan, then the ranks agree through the real NCCL (an
 * allreduce-min of "this rank could load entry i" flags, slot 0 being "kiln communicator
 * created"), so every rank keeps exactly the same plans, or none.
 *
 * Choice per call: the selector's (kilnSelect, kiln/registry.h "The selector") over the
 * communicator's agreed plans and its symmetric kernels, from facts that are the same on every
 * rank; this file holds no policy of its own. KILN_DEBUG=INFO names what served each distinct
 * kind of call and why.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "../../solver/params.h"
#include "../../solver/phases.h" /* kilnEmulateNodesSetting */
#include "kiln/kiln.h"
#include "kiln/plan.h"
#include "kiln_internal.h"
#include "shim.h"

#ifdef KILN_SHIM_HAVE_RUNTIME
#include "kiln/registry.h"
#include "kiln/runtime.h"
#include "runtime_internal.h" /* kilnNcclAgree */
#include "select.h"           /* kilnSelectSymServes */
#endif

struct shimComm {
  ncclComm_t nccl;
  int nranks, rank;
  int nodes; /* nodes x nranks/nodes GPUs (the plans kept are for that shape) */
#ifdef KILN_SHIM_HAVE_RUNTIME
  kilnComm_t kc;
  struct shimSet* set; /* communicators set up together in this process, or NULL */
  int nexec;
  const kilnRegistryEntry** ents; /* the agreed plans' registry entries */
  const kilnPlan** plans;
  kilnExec_t* execs;
  uint64_t logged[32]; /* decisions already logged on this communicator (signatures) */
  int nlogged;
#endif
  /* Under commsLock: threads issuing or holding queued kiln launches of it (shimTryKiln's held
   * reference, given back by shimCommUnref), and whether it was aborted and its NCCL
   * communicator is gone (shimCommGone): freed when both say so. */
  int refs;
  bool gone;
};

/* ---- plans ---- */

#ifdef KILN_SHIM_HAVE_RUNTIME
static pthread_once_t plansOnce = PTHREAD_ONCE_INIT;

static void load_plans(void) {
  const char* list = shimConfigGet()->plansDir;
  if (list && kilnRegistryLoadPath(list) != KILN_SUCCESS)
    shimLog(SHIM_LOG_WARN, "KILN_PLANS=%s: %s (plans after it not loaded)", list, kilnLastError());
  int n = kilnRegistryCount();
  for (int i = 0; i < n; i++) {
    const kilnRegistryEntry* e = kilnRegistryAt(i);
    const kilnPlan* plan = NULL;
    const int nodes = shimConfigGet()->log >= SHIM_LOG_INFO && kilnRegistryPlan(e, &plan) == KILN_SUCCESS
                          ? plan->nnodes
                          : 0;
    shimLog(SHIM_LOG_INFO, "plan %s (%s): %s, %d ranks%s%.0d%s, %s%s%s, bytes [%llu, %llu], %s", e->name,
            e->xml ? "baked" : e->ident, kilnCollName(e->coll), e->nranks, nodes > 1 ? " on " : "",
            nodes > 1 ? nodes : 0, nodes > 1 ? " nodes" : "", e->inplace ? "in-place" : "",
            e->inplace && e->outofplace ? "/" : "", e->outofplace ? "out-of-place" : "",
            (unsigned long long)e->minBytes, (unsigned long long)e->maxBytes, kilnProtoName(e->proto));
  }
}

/* The registry's entries for nranks ranks on `nodes` nodes, in registry order (*n of them; free
 * the array): plans that name that many nodes, or for one node those that name none. *other: how
 * many of nranks ranks are for another shape. */
static const kilnRegistryEntry** entries_for(int nranks, int nodes, int* n, int* other) {
  pthread_once(&plansOnce, load_plans);
  int total = kilnRegistryCount();
  const kilnRegistryEntry** v = calloc((size_t)(total > 0 ? total : 1), sizeof *v);
  *n = *other = 0;
  for (int i = 0; v && i < total; i++) {
    const kilnRegistryEntry* e = kilnRegistryAt(i);
    if (!e || e->nranks != nranks) continue;
    const kilnPlan* plan = NULL;
    if (kilnRegistryPlan(e, &plan) != KILN_SUCCESS) continue;
    const int pn = plan->nnodes > 0 ? plan->nnodes : 1;
    if (pn == nodes)
      v[(*n)++] = e;
    else
      (*other)++;
  }
  return v;
}

/* The communicator's nodes (shimComm.nodes): KILN_EMULATE_NODES where set, else NCCL's load/store
 * team (ranks that share memory form a node; 1 where the real NCCL has no team API). 0, with the
 * reason in why, when the ranks form no nodes of equal size kiln runs. */
static int comm_nodes(const shimReal* r, ncclComm_t comm, int nranks, char* why, size_t len) {
  const int emulated = kilnEmulateNodesSetting();
  if (emulated < 0) {
    snprintf(why, len, "KILN_EMULATE_NODES=%s is not a positive integer",
             kilnParamRaw(KILN_PARAM_EmulateNodes));
    return 0;
  }
  if (emulated > 0) {
    if (nranks % emulated == 0) {
      snprintf(why, len, "KILN_EMULATE_NODES");
      return emulated;
    }
    snprintf(why, len, "KILN_EMULATE_NODES=%d does not divide %d ranks", emulated, nranks);
    return 0;
  }
  if (!r->ncclTeamLsa) {
    snprintf(why, len, "one node: this NCCL has no ncclTeamLsa");
    return 1;
  }
  const ncclTeam_t t = r->ncclTeamLsa(comm);
  if (t.nRanks < 1 || nranks % t.nRanks != 0 || t.stride != 1) {
    snprintf(why, len,
             "NCCL's load/store team of this rank (%d ranks, stride %d) does not cut %d ranks into nodes "
             "of consecutive ranks",
             t.nRanks, t.stride, nranks);
    return 0;
  }
  snprintf(why, len, "NCCL's load/store team");
  return nranks / t.nRanks;
}
#endif

/* ---- the communicator table ---- */

static shimComm** comms;
static int ncomms, capComms;
static pthread_mutex_t commsLock = PTHREAD_MUTEX_INITIALIZER;

/* Caller holds commsLock. */
static int find_index(ncclComm_t c) {
  for (int i = 0; i < ncomms; i++)
    if (comms[i]->nccl == c) return i;
  return -1;
}

static __attribute__((unused)) bool insertComm(shimComm* sc) {
  bool ok = true;
  pthread_mutex_lock(&commsLock);
  if (ncomms == capComms) {
    int cap = capComms ? 2 * capComms : 16;
    shimComm** grown = realloc(comms, (size_t)cap * sizeof *comms);
    if (!grown) {
      ok = false;
      goto out_unlock;
    }
    comms = grown;
    capComms = cap;
  }
  comms[ncomms++] = sc;
out_unlock:
  pthread_mutex_unlock(&commsLock);
  return ok;
}

/* Signalled when a communicator's last reference is given back (shimCommUnref), for wait_idle. */
static pthread_cond_t idleCv = PTHREAD_COND_INITIALIZER;

/* Caller holds commsLock: until no thread is issuing or holding queued kiln launches of sc (a
 * launch runs without the lock), so that its kiln part can be changed or freed. */
static void wait_idle(const shimComm* sc) {
  while (sc->refs > 0) pthread_cond_wait(&idleCv, &commsLock);
}

/* Caller holds commsLock: the index of c's entry once no launch of it is under way (-1 if none). */
static int find_idle_index(ncclComm_t c) {
  for (;;) {
    const int i = find_index(c);
    if (i < 0 || comms[i]->refs == 0) return i;
    pthread_cond_wait(&idleCv, &commsLock);
  }
}

/* Removes and returns the entry of c (NULL if none); with `idle`, once no launch of it is under
 * way (no new one can start once it is out of the table). An abort does not wait: a launch may be
 * blocked until the abort lets the GPU's queue drain. */
static shimComm* take_comm(ncclComm_t c, bool idle) {
  shimComm* sc = NULL;
  pthread_mutex_lock(&commsLock);
  int i = find_index(c);
  if (i >= 0) {
    sc = comms[i];
    comms[i] = comms[--ncomms];
    if (idle) wait_idle(sc);
  }
  pthread_mutex_unlock(&commsLock);
  return sc;
}

/* ---- setup and teardown ---- */

#ifdef KILN_SHIM_HAVE_RUNTIME

/* The communicators of one process set up together (kilnCommCreateAll): their kiln parts are torn
 * down together (kilnCommDestroyAll groups the teardown's collective NCCL calls, which one thread
 * could not otherwise make for several ranks). Each member holds a reference. */
typedef struct shimSet {
  int refs;
  int n;
  ncclComm_t nccl[];
} shimSet;

static void set_unref(shimSet* set) {
  if (set && __atomic_sub_fetch(&set->refs, 1, __ATOMIC_ACQ_REL) == 0) free(set);
}

static void free_arrays(shimComm* sc) {
  free(sc->ents);
  free(sc->plans);
  free(sc->execs);
  set_unref(sc->set);
  sc->set = NULL;
}

/* Releases kiln on sc and on the other members of its set still known (taken out of the table
 * first), with one kilnCommDestroyAll. */
static void release_set(shimComm* sc) {
  shimSet* set = sc->set;
  shimComm** members = calloc((size_t)set->n, sizeof *members);
  kilnComm_t* kcs = calloc((size_t)set->n, sizeof *kcs);
  if (!members || !kcs) {
    free(members);
    free(kcs);
    return; /* out of memory: leave kiln's resources to the end of the process */
  }
  int k = 0;
  members[k++] = sc;
  for (int i = 0; i < set->n; i++) {
    if (set->nccl[i] == sc->nccl) continue;
    shimComm* m = take_comm(set->nccl[i], true);
    if (m) members[k++] = m;
  }
  shimPassthrough++;
  for (int j = 0; j < k; j++) {
    for (int i = 0; i < members[j]->nexec; i++)
      if (members[j]->execs[i]) kilnExecFree(members[j]->execs[i]);
    kcs[j] = members[j]->kc;
  }
  kilnCommDestroyAll(k, kcs);
  shimPassthrough--;
  if (k < set->n)
    shimLogOnce(SHIM_LOG_INFO,
                "kiln released on %d communicators created together (%d had gone "
                "already)",
                k, set->n - k);
  for (int j = 0; j < k; j++) {
    free_arrays(members[j]);
    free(members[j]);
  }
  free(members);
  free(kcs);
}

/* Frees what setup made (after waiting for kiln's work on it; an aborted communicator's kiln part
 * makes no NCCL call, kilnCommAbort). */
static void free_comm(shimComm* sc) {
  if (!sc) return;
  shimPassthrough++;
  for (int i = 0; i < sc->nexec; i++)
    if (sc->execs[i]) kilnExecFree(sc->execs[i]);
  if (sc->kc) kilnCommDestroy(sc->kc);
  shimPassthrough--;
  free_arrays(sc);
  free(sc);
}

/* Communicators whose kiln part was aborted (ncclCommAbort, ncclCommRevoke, ncclCommShrink with
 * NCCL_SHRINK_ABORT): kept until the NCCL communicator is aborted or destroyed, then freed
 * (shimCommGone): kiln's kernels on it may wait behind NCCL's until NCCL's abort stops those. */
static shimComm** aborted;
static int naborted, capAborted;

/* The reaper: a thread that frees aborted communicators' kiln parts (free_comm), so that neither
 * the thread aborting them nor a thread giving back the last reference waits for the GPU there
 * (the frees wait for the whole device: kernels of other communicators stuck on a dead peer until
 * their own abort would hold up the abort of this one, as in a loop aborting every communicator).
 * Its CUDA calls run in relaxed capture mode, so another thread's capture goes on. Started at the
 * first abort. */
static pthread_mutex_t reapLock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t reapCv = PTHREAD_COND_INITIALIZER;
static shimComm** reapQueue;
static int nreap, capReap;
static bool reaperStarted;

/* Aborted communicators whose kiln part the reaper freed (exported for tests). */
SHIM_EXPORT uint64_t kilnShimAbortedFreed;

static void* reaper(void* arg) {
  (void)arg;
  enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  cudaThreadExchangeStreamCaptureMode(&mode);
  for (;;) {
    pthread_mutex_lock(&reapLock);
    while (nreap == 0) pthread_cond_wait(&reapCv, &reapLock);
    shimComm* sc = reapQueue[--nreap];
    pthread_mutex_unlock(&reapLock);
    free_comm(sc);
    __atomic_fetch_add(&kilnShimAbortedFreed, 1, __ATOMIC_RELAXED);
  }
  return NULL;
}

/* Hands sc to the reaper (out of memory or without a thread: left to the end of the process). */
static void reap(shimComm* sc) {
  bool queued = false;
  pthread_mutex_lock(&reapLock);
  if (!reaperStarted) {
    pthread_t t;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    reaperStarted = pthread_create(&t, &at, reaper, NULL) == 0;
    pthread_attr_destroy(&at);
  }
  if (reaperStarted && nreap == capReap) {
    const int cap = capReap ? 2 * capReap : 8;
    shimComm** grown = realloc(reapQueue, (size_t)cap * sizeof *reapQueue);
    if (grown) {
      reapQueue = grown;
      capReap = cap;
    }
  }
  if (reaperStarted && nreap < capReap) {
    reapQueue[nreap++] = sc;
    queued = true;
    pthread_cond_signal(&reapCv);
  }
  pthread_mutex_unlock(&reapLock);
  if (!queued)
    shimLogOnce(SHIM_LOG_WARN,
                "an aborted communicator's kiln memory stays to the end of the process "
                "(no thread to free it)");
}

/* Deregisters sc's kiln window from its NCCL communicator, still there, once kiln's kernels on it
 * left (kilnCommAbortRelease, waiting up to KILN_ABORT_WAIT_MS), so that freeing sc gives the
 * window's memory back. Else the window stays registered and NCCL keeps it mapped to the end of
 * the process. sc is out of the table (no new launch takes it); the caller saw under commsLock
 * that no thread was still issuing a call of it (refs 0), and does not hold the lock. */
static void release_window(shimComm* sc) {
  if (!sc->kc) return;
  shimPassthrough++;
  const kilnResult_t r = kilnCommAbortRelease(sc->kc, (int)kilnParam(KILN_PARAM_AbortWaitMs));
  shimPassthrough--;
  if (r != KILN_SUCCESS)
    shimLog(SHIM_LOG_WARN, "rank %d: kiln's window stays to the end of the process: %s", sc->rank,
            kilnLastError());
}

/* Stops kiln on sc at once and keeps it for shimCommGone (or, out of memory, leaves it to the end
 * of the process); `release`: also deregisters its window now (before the real ncclCommAbort). */
static void abort_comm(shimComm* sc, bool release) {
  if (!sc) return;
  shimPassthrough++;
  if (sc->kc) kilnCommAbort(sc->kc);
  shimPassthrough--;
  if (release) {
    pthread_mutex_lock(&commsLock);
    release = sc->refs == 0;
    pthread_mutex_unlock(&commsLock);
    if (release) release_window(sc);
  }
  pthread_mutex_lock(&commsLock);
  if (naborted == capAborted) {
    const int cap = capAborted ? 2 * capAborted : 8;
    shimComm** grown = realloc(aborted, (size_t)cap * sizeof *aborted);
    if (grown) {
      aborted = grown;
      capAborted = cap;
    }
  }
  const bool kept = naborted < capAborted;
  if (kept) aborted[naborted++] = sc;
  pthread_mutex_unlock(&commsLock);
  if (!kept)
    shimLogOnce(SHIM_LOG_WARN,
                "out of memory: an aborted communicator's kiln memory stays to the end of the process");
}

/* Agreement through the real NCCL (kilnNcclAgree): flags[c][0..m) become their minimum over the
 * ranks of ncomm[c], for n communicators at once (grouped). False when it could not be done. */
static bool agree(ncclComm_t* ncomm, int n, int** flags, int m) {
  shimPassthrough++;
  const bool ok = kilnNcclAgree(n, ncomm, flags, m) == KILN_SUCCESS;
  shimPassthrough--;
  return ok;
}

/* This process's part of a set-up: whether it goes ahead with kiln on the n communicators of
 * nranks ranks (saying why not at INFO or WARN), and then their *nodes and the registry's entries
 * for that shape (*ents, *np of them; free the array). Decided alone, from what this process
 * sees: setup agrees on it with the other ranks before anything collective. */
static bool setup_planned(const shimReal* r, ncclComm_t* ncomm, int n, int nranks, int rank0, int* nodes,
                          const kilnRegistryEntry*** ents, int* np) {
  if (n > 1 && n != nranks) {
    /* kilnCommCreateAll wants every rank of one communicator in this process. */
    shimLogKeyed(SHIM_LOG_WARN, "partialset",
                 "%d communicators created together but they have %d "
                 "ranks: kiln runs one process per GPU or one process for all ranks; NCCL runs "
                 "these",
                 n, nranks);
    return false;
  }
  if (kilnFaultAt("setup", rank0)) {
    shimLog(SHIM_LOG_WARN, "rank %d: KILN_FAULT=%s: this rank does not set kiln up", rank0,
            kilnParamString(KILN_PARAM_Fault));
    return false;
  }
  char how[256];
  *nodes = comm_nodes(r, ncomm[0], nranks, how, sizeof how);
  if (*nodes < 1) {
    shimLogKeyed(SHIM_LOG_INFO, "noshape", "communicator of %d ranks: %s: NCCL runs it", nranks, how);
    return false;
  }
  int otherShape = 0;
  *ents = entries_for(nranks, *nodes, np, &otherShape);
  /* The symmetric kernels need no plan, on one node of a rank count they serve. */
  const bool sym = *nodes == 1 && kilnParam(KILN_PARAM_Sym) && kilnSelectSymServes(nranks);
  if (*nodes > 1) {
    char key[64];
    snprintf(key, sizeof key, "shape/%d/%d", nranks, *nodes);
    shimLogKeyed(
        SHIM_LOG_INFO, key, "communicator of %d ranks: %d nodes x %d GPUs (%s): %d plan%s for that shape%s",
        nranks, *nodes, nranks / *nodes, how, *np, *np == 1 ? "" : "s",
        *np > 0 ? ", run in phases: kernels within a node, NCCL's point-to-point calls between nodes" : "");
  }
  if (*np > 0 || sym) return true;
  if (*nodes > 1)
    shimLogKeyed(SHIM_LOG_INFO, "noplans",
                 "no plan for %d nodes x %d GPUs (%d plans of %d ranks for other shapes): "
                 "kiln is not set up on this communicator, NCCL runs it",
                 *nodes, nranks / *nodes, otherShape, nranks);
  else
    shimLogKeyed(SHIM_LOG_INFO, "noplans",
                 "no plan for %d ranks: kiln is not set up on this "
                 "communicator, NCCL runs it",
                 nranks);
  return false;
}

/* Sets up kiln on n communicators of this process that were created together (n == 1 for one
 * process per GPU). On any failure every communicator concerned stays on NCCL. Every rank of a
 * communicator of 2 ranks or more first tells the others through NCCL whether it can go ahead
 * (shape, plans, memory, its own settings: they may differ between processes), and only when all
 * can does any make a kiln communicator, so none waits in the creation for a rank that stopped
 * before it. */
static void setup(ncclComm_t* ncomm, int n) {
  const shimReal* r = shimRealGet();
  int nranks = 0, np = 0, nodes = 0, rank0 = -1;
  const kilnRegistryEntry** ents = NULL;
  shimComm** sc = calloc((size_t)n, sizeof *sc);
  int** flags = calloc((size_t)n, sizeof *flags);
  kilnComm_t* kcs = calloc((size_t)n, sizeof *kcs);
  int* goes = calloc((size_t)n, sizeof *goes);
  int** goFlags = calloc((size_t)n, sizeof *goFlags);
  if (!r->ncclCommCount || r->ncclCommCount(ncomm[0], &nranks) != ncclSuccess || nranks < 2) goto out_free;
  if (r->ncclCommUserRank) r->ncclCommUserRank(ncomm[0], &rank0);
  if (!sc || !flags || !kcs || !goes || !goFlags) {
    shimLog(SHIM_LOG_WARN, "out of memory setting kiln up: this rank stops (the others wait for it)");
    goto out_free;
  }
  bool go = setup_planned(r, ncomm, n, nranks, rank0, &nodes, &ents, &np), fits = true;
  for (int c = 0; go && fits && c < n; c++) {
    sc[c] = calloc(1, sizeof **sc);
    flags[c] = calloc((size_t)np + 1, sizeof(int));
    if (!sc[c] || !flags[c]) {
      fits = false;
      break;
    }
    sc[c]->nccl = ncomm[c];
    sc[c]->nranks = nranks;
    sc[c]->nodes = nodes;
    r->ncclCommUserRank(ncomm[c], &sc[c]->rank);
    sc[c]->ents = calloc((size_t)(np > 0 ? np : 1), sizeof *sc[c]->ents);
    sc[c]->plans = calloc((size_t)(np > 0 ? np : 1), sizeof *sc[c]->plans);
    sc[c]->execs = calloc((size_t)(np > 0 ? np : 1), sizeof *sc[c]->execs);
    fits = sc[c]->ents && sc[c]->plans && sc[c]->execs;
  }
  if (!fits) shimLog(SHIM_LOG_WARN, "rank %d: out of memory setting kiln up", rank0);
  go = go && fits;
  /* Every rank says whether it goes ahead; kiln only where all do. */
  for (int c = 0; c < n; c++) {
    goes[c] = go;
    goFlags[c] = &goes[c];
  }
  if (!agree(ncomm, n, goFlags, 1)) {
    shimLog(SHIM_LOG_WARN,
            "rank %d: the ranks could not agree on setting kiln up (through NCCL: %s): NCCL runs this "
            "communicator",
            rank0, kilnLastError());
    goto out_free;
  }
  if (!goes[0]) {
    if (go)
      shimLogKeyed(SHIM_LOG_INFO, "othersetup",
                   "rank %d: another rank of the communicator of %d ranks does not set "
                   "kiln up (its log says why): NCCL runs it",
                   rank0, nranks);
    goto out_free;
  }

  /* kiln communicators: one call for the whole set. */
  kilnCommConfig kcfg = KILN_COMM_CONFIG_INITIALIZER;
  kcfg.timeoutMs = shimConfigGet()->timeoutMs;
  kcfg.nodes = nodes; /* the shape the plans were chosen for (kiln checks it against NCCL's teams) */
  shimPassthrough++;
  kilnResult_t kr =
      n == 1 ? kilnCommCreate(ncomm[0], &kcfg, &kcs[0]) : kilnCommCreateAll(n, ncomm, &kcfg, kcs);
  shimPassthrough--;
  if (kr != KILN_SUCCESS) {
    shimLog(kr == KILN_ERR_UNSUPPORTED ? SHIM_LOG_INFO : SHIM_LOG_WARN,
            "kiln communicator not created (%d ranks), NCCL runs it: %s", nranks, kilnLastError());
    memset(kcs, 0, (size_t)n * sizeof *kcs);
  }
  for (int c = 0; c < n; c++) {
    sc[c]->kc = kcs[c];
    flags[c][0] = kcs[c] != NULL;
    for (int i = 0; i < np && kcs[c]; i++) {
      const kilnPlan* plan = NULL;
      kilnExec_t ex = NULL;
      shimPassthrough++;
      kilnResult_t lr = kilnRegistryPlan(ents[i], &plan);
      if (lr == KILN_SUCCESS) lr = kilnPlanLoad(kcs[c], plan, &ex);
      shimPassthrough--;
      if (lr != KILN_SUCCESS)
        shimLog(SHIM_LOG_WARN, "rank %d: plan %s not loaded: %s", sc[c]->rank, ents[i]->name,
                kilnLastError());
      sc[c]->ents[i] = ents[i];
      sc[c]->plans[i] = plan;
      sc[c]->execs[i] = ex;
      flags[c][1 + i] = ex != NULL;
    }
    sc[c]->nexec = kcs[c] ? np : 0;
  }

  /* Every rank keeps the same plans, or none. */
  if (!agree(ncomm, n, flags, np + 1)) {
    shimLog(SHIM_LOG_WARN, "ranks could not agree on kiln's plans: NCCL runs this communicator");
    for (int c = 0; c < n; c++) flags[c][0] = 0;
  }
  if (n > 1 && !flags[0][0]) {
    /* One process, several ranks: their kiln parts go together (kilnCommDestroyAll). */
    shimPassthrough++;
    for (int c = 0; c < n; c++)
      for (int i = 0; i < sc[c]->nexec; i++)
        if (sc[c]->execs[i]) kilnExecFree(sc[c]->execs[i]);
    kilnCommDestroyAll(n, kcs);
    shimPassthrough--;
    for (int c = 0; c < n; c++) {
      sc[c]->kc = NULL;
      sc[c]->nexec = 0;
    }
  }
  shimSet* set = NULL;
  if (n > 1 && flags[0][0]) {
    set = malloc(sizeof *set + (size_t)n * sizeof(ncclComm_t));
    if (set) {
      set->refs = 0;
      set->n = n;
      memcpy(set->nccl, ncomm, (size_t)n * sizeof(ncclComm_t));
    }
  }
  for (int c = 0; c < n; c++) {
    if (flags[c][0] && set) {
      sc[c]->set = set;
      set->refs++;
    }
    if (!flags[c][0]) {
      if (kcs[c])
        shimLog(SHIM_LOG_WARN,
                "rank %d: kiln is off on this communicator: a rank could not set "
                "it up",
                sc[c]->rank);
      free_comm(sc[c]);
      sc[c] = NULL;
      continue;
    }
    int kept = 0;
    for (int i = 0; i < sc[c]->nexec; i++) {
      if (flags[c][1 + i]) {
        sc[c]->ents[kept] = sc[c]->ents[i];
        sc[c]->plans[kept] = sc[c]->plans[i];
        sc[c]->execs[kept] = sc[c]->execs[i];
        kept++;
      } else if (sc[c]->execs[i]) {
        shimPassthrough++;
        kilnExecFree(sc[c]->execs[i]);
        shimPassthrough--;
      }
    }
    sc[c]->nexec = kept;
    shimLogKeyed(SHIM_LOG_INFO, "setup",
                 "kiln set up on a communicator of %d ranks (%d node%s) with %d of %d "
                 "plans",
                 nranks, nodes, nodes > 1 ? "s" : "", kept, np);
    if (!insertComm(sc[c])) free_comm(sc[c]);
    sc[c] = NULL;
  }

out_free:
  /* Only reached with sc[c] != NULL before any kiln communicator exists. */
  for (int c = 0; sc && flags && c < n; c++) {
    if (sc[c]) {
      free_arrays(sc[c]);
      free(sc[c]);
    }
    free(flags[c]);
  }
  free(ents);
  free(sc);
  free(flags);
  free(kcs);
  free(goes);
  free(goFlags);
}

void shimKilnGroupStart(void) { kilnGroupStart(); }

ncclResult_t shimKilnGroupEnd(bool failed) {
  if (failed) kilnGroupFail(kilnSetError(KILN_ERR_INVALID_ARGUMENT, "%s", shimKilnError));
  /* Plans across nodes issue NCCL's point-to-point calls at the group's end: straight to NCCL. */
  shimPassthrough++;
  kilnResult_t kr = kilnGroupEnd();
  shimPassthrough--;
  if (kr == KILN_SUCCESS) return ncclSuccess;
  if (!failed) {
    snprintf(shimKilnError, sizeof shimKilnError, "kiln: issuing a group's kiln launches failed: %s",
             kilnLastError());
    shimLog(SHIM_LOG_ERROR, "%s", shimKilnError + 6);
  }
  return kr == KILN_ERR_CUDA ? ncclUnhandledCudaError : ncclInternalError;
}

#else /* !KILN_SHIM_HAVE_RUNTIME: a forward-only build */

static void free_comm(shimComm* sc) { free(sc); }
static void abort_comm(shimComm* sc, bool release) {
  (void)release;
  free(sc);
}

static void setup(ncclComm_t* ncomm, int n) {
  const shimReal* r = shimRealGet();
  int nranks = 0;
  (void)n;
  if (!r->ncclCommCount || r->ncclCommCount(ncomm[0], &nranks) != ncclSuccess) return;
  shimLogKeyed(SHIM_LOG_WARN, "noruntime",
               "this libnccl.so.2 was built without kiln's GPU "
               "runtime: NCCL runs every collective (%d ranks)",
               nranks);
}

void shimKilnGroupStart(void) {}
ncclResult_t shimKilnGroupEnd(bool failed) {
  (void)failed;
  return ncclSuccess;
}

#endif

void shimCommCreated(ncclComm_t comm) {
  if (comm) setup(&comm, 1);
}

void shimCommsCreated(ncclComm_t* c, int n) {
  if (n > 0) setup(c, n);
}

void shimCommRelease(ncclComm_t comm) {
  shimComm* sc = take_comm(comm, true);
#ifdef KILN_SHIM_HAVE_RUNTIME
  if (sc && sc->set && sc->set->n > 1) {
    release_set(sc);
    return;
  }
#endif
  free_comm(sc);
}

void shimCommAbort(ncclComm_t comm, bool release) { abort_comm(take_comm(comm, false), release); }

void shimCommAbortedRelease(ncclComm_t comm) {
#ifdef KILN_SHIM_HAVE_RUNTIME
  shimComm* sc = NULL;
  pthread_mutex_lock(&commsLock);
  for (int i = 0; i < naborted && !sc; i++)
    if (aborted[i]->nccl == comm && aborted[i]->refs == 0) sc = aborted[i];
  pthread_mutex_unlock(&commsLock);
  if (sc) release_window(sc);
#else
  (void)comm;
#endif
}

void shimCommGone(ncclComm_t comm) {
#ifdef KILN_SHIM_HAVE_RUNTIME
  shimComm* sc = NULL;
  bool now = false;
  pthread_mutex_lock(&commsLock);
  for (int i = 0; i < naborted && !sc; i++)
    if (aborted[i]->nccl == comm) {
      sc = aborted[i];
      aborted[i] = aborted[--naborted];
      sc->gone = true;
      now = sc->refs == 0; /* else the last shimCommUnref hands it on */
    }
  pthread_mutex_unlock(&commsLock);
  if (now) reap(sc);
#else
  (void)comm;
#endif
}

void shimCommUnref(shimComm* sc) {
#ifdef KILN_SHIM_HAVE_RUNTIME
  if (!sc) return;
  pthread_mutex_lock(&commsLock);
  const bool idle = --sc->refs == 0, now = idle && sc->gone;
  if (idle) pthread_cond_broadcast(&idleCv);
  pthread_mutex_unlock(&commsLock);
  if (now) reap(sc);
#else
  (void)sc;
#endif
}

/* Windows kiln has added and not removed (exported for tests). */
SHIM_EXPORT int64_t kilnShimWindows;

void shimWindowsAdded(int n, const shimWindow* w) {
#ifdef KILN_SHIM_HAVE_RUNTIME
  if (n <= 0) return;
  int* ok = calloc((size_t)n, sizeof *ok);
  int* idx = calloc((size_t)n, sizeof *idx);
  int** flags = calloc((size_t)n, sizeof *flags);
  ncclComm_t* agreeOn = calloc((size_t)n, sizeof *agreeOn);
  if (!ok || !idx || !flags || !agreeOn) {
    shimLogOnce(SHIM_LOG_WARN, "out of memory: symmetric windows stay with kiln's staging");
    goto out_free;
  }
  int m = 0;
  pthread_mutex_lock(&commsLock);
  for (int i = 0; i < n; i++) {
    const int ci = find_idle_index(w[i].comm); /* its window table must not change under a launch */
    /* Across nodes there are no symmetric-memory kernels to use a window. */
    if (ci < 0 || !comms[ci]->kc || !w[i].win || comms[ci]->nodes > 1) continue;
    shimPassthrough++;
    ok[i] = kilnCommWindowAdd(comms[ci]->kc, w[i].win, w[i].buff, w[i].size) == KILN_SUCCESS;
    shimPassthrough--;
    if (!ok[i])
      shimLogOnce(SHIM_LOG_WARN, "rank %d: kilnCommWindowAdd: %s", comms[ci]->rank, kilnLastError());
    agreeOn[m] = w[i].comm;
    flags[m] = &ok[i];
    idx[m++] = i;
  }
  pthread_mutex_unlock(&commsLock);
  if (m == 0) goto out_free;
  /* Every rank must take the same form for a call on the window (direct or staged), so a window
   * that any rank could not add is removed on all (through NCCL, as the registration itself is
   * collective). */
  const bool agreed = agree(agreeOn, m, flags, 1);
  pthread_mutex_lock(&commsLock);
  for (int k = 0; k < m; k++) {
    const int i = idx[k], ci = find_idle_index(w[i].comm);
    if (ci < 0 || !comms[ci]->kc) continue;
    if (agreed && ok[i]) {
      __atomic_fetch_add(&kilnShimWindows, 1, __ATOMIC_RELAXED);
      shimLogOnce(SHIM_LOG_INFO,
                  "rank %d: symmetric windows added: calls whose output is in one go zero copy "
                  "from KILN_SYM_DIRECT_BYTES",
                  comms[ci]->rank);
      continue;
    }
    shimPassthrough++;
    (void)kilnCommWindowRemove(comms[ci]->kc, w[i].win); /* fails where it was never added */
    shimPassthrough--;
    shimLogOnce(SHIM_LOG_WARN, "rank %d: a symmetric window %s: calls on it stay on kiln's staging",
                comms[ci]->rank,
                agreed ? "could not be added on every rank" : "could not be agreed on through NCCL");
  }
  pthread_mutex_unlock(&commsLock);
out_free:
  free(ok);
  free(idx);
  free(flags);
  free(agreeOn);
#else
  (void)n;
  (void)w;
#endif
}

void shimWindowRemoved(ncclComm_t comm, ncclWindow_t win) {
#ifdef KILN_SHIM_HAVE_RUNTIME
  pthread_mutex_lock(&commsLock);
  int i = find_idle_index(comm);
  if (i >= 0 && comms[i]->kc && win) {
    shimPassthrough++;
    /* Not added (registered without the symmetric flag, or kiln refused it): nothing to forget. */
    if (kilnCommWindowRemove(comms[i]->kc, win) == KILN_SUCCESS)
      __atomic_fetch_sub(&kilnShimWindows, 1, __ATOMIC_RELAXED);
    shimPassthrough--;
  }
  pthread_mutex_unlock(&commsLock);
#else
  (void)comm;
  (void)win;
#endif
}

/* The application's live ncclMemAlloc allocations (address, size), for shimMemFreeing; one entry
 * per address (an address allocated again replaces its entry, should a free have bypassed us). */
#ifdef KILN_SHIM_HAVE_RUNTIME
static struct {
  void* ptr;
  size_t size;
} * allocs;
static int nallocs, capallocs;
static pthread_mutex_t allocsLock = PTHREAD_MUTEX_INITIALIZER;
#endif

void shimMemAllocated(void* ptr, size_t size) {
#ifdef KILN_SHIM_HAVE_RUNTIME
  pthread_mutex_lock(&allocsLock);
  int i = 0;
  while (i < nallocs && allocs[i].ptr != ptr) i++;
  if (i == nallocs && nallocs == capallocs) {
    const int cap = capallocs ? 2 * capallocs : 64;
    void* a = realloc(allocs, (size_t)cap * sizeof(*allocs));
    if (!a) {
      pthread_mutex_unlock(&allocsLock);
      /* Unknown extent at its free: the windows over its first byte are forgotten then. */
      shimLogOnce(SHIM_LOG_WARN, "out of memory for the allocation table");
      return;
    }
    allocs = a;
    capallocs = cap;
  }
  if (i == nallocs) nallocs++;
  allocs[i].ptr = ptr;
  allocs[i].size = size;
  pthread_mutex_unlock(&allocsLock);
#else
  (void)ptr;
  (void)size;
#endif
}

void shimMemFreeing(void* ptr) {
#ifdef KILN_SHIM_HAVE_RUNTIME
  size_t size = 1; /* not allocated through here: the windows over its first byte */
  pthread_mutex_lock(&allocsLock);
  for (int i = 0; i < nallocs; i++)
    if (allocs[i].ptr == ptr) {
      size = allocs[i].size;
      allocs[i] = allocs[--nallocs];
      break;
    }
  pthread_mutex_unlock(&allocsLock);
  pthread_mutex_lock(&commsLock);
  for (int i = 0; i < ncomms; i++) {
    if (!comms[i]->kc) continue;
    if (comms[i]->refs > 0) { /* a launch reads its window table: after it */
      pthread_cond_wait(&idleCv, &commsLock);
      i = -1; /* again from the start (the table may have changed): forgetting twice forgets nothing more */
      continue;
    }
    shimPassthrough++;
    const int gone = kilnCommWindowForget(comms[i]->kc, ptr, size);
    shimPassthrough--;
    if (gone > 0) {
      __atomic_fetch_sub(&kilnShimWindows, gone, __ATOMIC_RELAXED);
      shimLogOnce(SHIM_LOG_INFO,
                  "rank %d: memory freed under symmetric windows not deregistered: kiln "
                  "forgets them",
                  comms[i]->rank);
    }
  }
  pthread_mutex_unlock(&commsLock);
#else
  (void)ptr;
#endif
}

ncclResult_t shimCommAsyncError(ncclComm_t comm) {
  ncclResult_t res = ncclSuccess;
#ifdef KILN_SHIM_HAVE_RUNTIME
  pthread_mutex_lock(&commsLock);
  int i = find_index(comm);
  if (i >= 0 && comms[i]->kc) {
    kilnResult_t e = KILN_SUCCESS;
    shimPassthrough++;
    kilnResult_t q = kilnCommGetAsyncError(comms[i]->kc, &e);
    shimPassthrough--;
    if (q == KILN_SUCCESS && e != KILN_SUCCESS) {
      res = e == KILN_ERR_TIMEOUT ? ncclRemoteError
            : e == KILN_ERR_CUDA  ? ncclUnhandledCudaError
                                  : ncclInternalError;
      shimLogOnce(SHIM_LOG_WARN, "rank %d: kiln asynchronous error: %s", comms[i]->rank, kilnResultString(e));
    }
  }
  pthread_mutex_unlock(&commsLock);
#else
  (void)comm;
#endif
  return res;
}

/* ---- the choice per call ---- */

#ifdef KILN_SHIM_HAVE_RUNTIME
/* Whether a call's stream is capturing a CUDA graph (kilnCall.captured). A stream whose state
 * cannot be read counts as capturing: the selector then only passes over plans whose scratch
 * would grow. */
static bool stream_capturing(cudaStream_t st) {
  enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(st, &cs) != cudaSuccess) {
    cudaGetLastError();
    return true;
  }
  return cs != cudaStreamCaptureStatusNone;
}

/* KILN_DEBUG=INFO: one line per distinct decision on sc (caller holds commsLock), naming what
 * serves the call and why. */
static void log_choice(shimComm* sc, const kilnCall* kc, const kilnChoice* ch, bool inplace, uint64_t bytes) {
  const bool zeroCopy = ch->serve == KILN_SERVE_SYM &&
                        kilnSymIsDirect(sc->kc, ch->sym, kc->sendbuf, kc->recvbuf, kc->count, kc->dtype);
  const bool reduces = kc->coll == KILN_COLL_ALLREDUCE || kc->coll == KILN_COLL_REDUCESCATTER;
  const uint64_t sig = ((uint64_t)kc->coll << 56) ^ ((uint64_t)kc->dtype << 48) ^ ((uint64_t)kc->op << 40) ^
                       ((uint64_t)inplace << 39) ^ ((uint64_t)kc->captured << 38) ^
                       ((uint64_t)(ch->plan + 1) << 8) ^ ((uint64_t)(ch->sym + 1) << 24) ^
                       ((uint64_t)ch->reason << 32) ^ (uint64_t)ch->serve << 4 ^ (uint64_t)zeroCopy << 2 ^ 1;
  for (int i = 0; i < sc->nlogged; i++)
    if (sc->logged[i] == sig) return;
  if (sc->nlogged < (int)(sizeof sc->logged / sizeof sc->logged[0])) sc->logged[sc->nlogged++] = sig;
  char key[200], shape[48] = "";
  snprintf(key, sizeof key, "%llx/%d", (unsigned long long)sig, sc->nranks);
  if (sc->nodes > 1) snprintf(shape, sizeof shape, " (%d nodes x %d)", sc->nodes, sc->nranks / sc->nodes);
  shimLogKeyed(SHIM_LOG_INFO, key, "%s %d ranks%s %s %s %s%s (first: %llu B) → %s%s%s%s: %s",
               kilnCollName(kc->coll), sc->nranks, shape, kilnDataTypeName(kc->dtype),
               reduces ? kilnRedOpName(kc->op) : "-", inplace ? "in-place" : "out-of-place",
               kc->captured ? ", captured" : "", (unsigned long long)bytes,
               ch->serve == KILN_SERVE_NCCL  ? "NCCL"
               : ch->serve == KILN_SERVE_SYM ? "kiln "
                                             : "kiln plan ",
               ch->serve == KILN_SERVE_NCCL ? "" : kilnChoiceName(ch), zeroCopy ? " (zero copy)" : "",
               ch->serve == KILN_SERVE_PLAN && sc->nodes > 1 ? ", in phases across nodes" : "",
               kilnSelectReasonText(ch->reason));
}
#endif

/* Collectives kiln launched in this process (for tests and debugging; exported). */
SHIM_EXPORT uint64_t kilnShimKilnCalls;

bool shimTryKiln(const shimCall* call, bool launch, ncclResult_t* res, shimComm** held) {
#ifdef KILN_SHIM_HAVE_RUNTIME
  static const kilnColl_t collKiln[] = {KILN_COLL_ALLREDUCE, KILN_COLL_ALLGATHER, KILN_COLL_REDUCESCATTER,
                                        KILN_COLL_ALLTOALL};
  bool taken = false;
  /* NCCL's ops and types past kiln's (PreMulSum ops) stay out of kiln's range: the selector sends
   * them to NCCL. */
  const kilnCall kc = {collKiln[call->coll],           call->sendbuff,        call->recvbuff, call->count,
                       (kilnDataType_t)call->datatype, (kilnRedOp_t)call->op, false};
  pthread_mutex_lock(&commsLock);
  int ci = find_index(call->comm);
  if (ci < 0) goto out_unlock;
  shimComm* sc = comms[ci];
  kilnCall k = kc;
  /* The capture state matters only where a plan's scratch would grow: asked only then. */
  bool grows = false;
  for (int i = 0; i < sc->nexec && !grows && (unsigned)k.dtype < KILN_NUM_DTYPES; i++)
    grows = !kilnExecScratchHolds(sc->execs[i], k.count, k.dtype);
  if (grows) k.captured = stream_capturing(call->stream);
  const kilnPlanSet set = {sc->nexec, sc->ents, sc->plans, sc->execs};
  const kilnChoice ch = kilnSelect(sc->kc, &set, &k);
  if (shimConfigGet()->log >= SHIM_LOG_INFO && (unsigned)k.dtype < KILN_NUM_DTYPES) {
    const bool inplace = kilnRegistryCallInPlace(k.coll, sc->rank, k.sendbuf, k.recvbuf, k.count, k.dtype);
    log_choice(sc, &k, &ch, inplace, kilnRegistryCallBytes(k.coll, sc->nranks, k.count, k.dtype));
  }
  if (ch.serve == KILN_SERVE_NCCL) goto out_unlock;
  taken = true;
  *res = ncclSuccess;
  if (!launch) goto out_unlock;
  /* The launch runs without commsLock (a launch can block while the GPU's queue is full: an abort
   * or an error query of another thread must not wait behind it), under a reference the caller
   * gives back once the launch is issued (shimCommUnref; for a group's calls, after its end). */
  sc->refs++;
  *held = sc;
  pthread_mutex_unlock(&commsLock);
  shimPassthrough++; /* kilnRun / kilnSymRun switch to the communicator's device and back */
  kilnResult_t kr =
      ch.serve == KILN_SERVE_SYM
          ? kilnSymRun(sc->kc, ch.sym, k.sendbuf, call->recvbuff, k.count, k.dtype, k.op, call->stream)
          : kilnRun(sc->execs[ch.plan], k.sendbuf, call->recvbuff, k.count, k.dtype, k.op, call->stream);
  shimPassthrough--;
  if (kr == KILN_SUCCESS) __atomic_fetch_add(&kilnShimKilnCalls, 1, __ATOMIC_RELAXED);
  /* The peers are already in their kiln kernels: NCCL cannot stand in for this call now. */
  if (kr != KILN_SUCCESS) {
    snprintf(shimKilnError, sizeof shimKilnError, "kiln: rank %d: %s with %s failed: %s", sc->rank,
             kilnCollName(k.coll), kilnChoiceName(&ch), kilnLastError());
    shimLog(SHIM_LOG_ERROR, "%s", shimKilnError + 6);
  }
  *res = kr == KILN_SUCCESS                ? ncclSuccess
         : kr == KILN_ERR_TIMEOUT          ? ncclRemoteError
         : kr == KILN_ERR_CUDA             ? ncclUnhandledCudaError
         : kr == KILN_ERR_INVALID_ARGUMENT ? ncclInvalidArgument
                                           : ncclInternalError;
  return true;
out_unlock:
  pthread_mutex_unlock(&commsLock);
  return taken;
#else
  (void)call;
  (void)launch;
  (void)res;
  (void)held;
  return false;
#endif
}
