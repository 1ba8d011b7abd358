/* kilnGroupStart/End: launches queued per thread, issued at the outermost kilnGroupEnd with the
 * GPUs in parallel.
 *
 * Why: one thread driving N GPUs (nccl-tests' -g, NCCL's ncclCommInitAll model) pays a kernel
 * launch's host time (~3 µs, bench/host_bench) once per GPU, in a row, per collective: 4 GPUs
 * cost ~13 µs before the last GPU starts, longer than the kernel. At kilnGroupEnd each GPU's
 * launches go to a launcher thread of that GPU (started at the first group that spans several
 * GPUs), which issues them in call order while the calling thread issues the first GPU's; the
 * host time becomes about one GPU's.
 *
 * A launcher spins for KILN_GROUP_SPIN_US (default 200) after its last work, then sleeps. The
 * calling thread hands work only to a launcher that is awake (spinning) and free, so a group never
 * waits for a thread to be scheduled; a sleeping launcher's GPU is issued by the calling thread.
 * A sleeping launcher is woken for the next group only when groups come close together (this one
 * ended within the spin time of the one before): when they come further apart (a training step's
 * collectives between long kernels), waking would cost the caller a system call per GPU for a
 * launcher that falls asleep again before the next group, so there the calling thread issues
 * every GPU itself, as with KILN_GROUP_THREADS=0. Stream capture and the
 * default-stream handles (0, cudaStreamLegacy, cudaStreamPerThread: they mean the calling
 * thread's stream) put a GPU's launches on the calling thread; a group of one GPU, fewer than two
 * CPUs to run on and KILN_GROUP_THREADS=0 issue everything from it, in call order.
 *
 * A call that fails inside a group fails the group: kilnGroupEnd launches none of it and returns
 * that call's error (as NCCL: peers that were queued would otherwise wait for the missing rank
 * until kiln's timeout).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../solver/params.h"
#include "launch.h"
#include "runtime_internal.h"

#define KILN_GROUP_MAX_DEVS 64
#define KILN_GROUP_MSG 1024

typedef struct {
  kilnLaunch* v;
  size_t n, cap;
} launchList;

static _Thread_local int depth;
static _Thread_local launchList queued, byDev, phased;
static _Thread_local kilnResult_t groupErr; /* first failed call of the open group */
static _Thread_local char groupErrMsg[KILN_GROUP_MSG];

typedef struct {
  pthread_t th;
  int dev;
  atomic_int started, busy, sleeping;
  atomic_uint_fast64_t posted, done;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  uint_fast64_t seen0; /* `posted` when the thread was started */
  kilnLaunch* items;   /* written by the poster before `posted` */
  size_t n;
  kilnResult_t res; /* written by the launcher before `done` */
  char msg[KILN_GROUP_MSG];
} launcher;

static launcher launchers[KILN_GROUP_MAX_DEVS];
static pthread_mutex_t startLock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int stopping;
static pthread_once_t cfgOnce = PTHREAD_ONCE_INIT;
static bool threadsOn = true;
static uint64_t spinNs = 200000;
static _Atomic uint64_t lastGroupNs; /* when the last multi-GPU group was issued (any thread) */

static void read_config(void) {
  threadsOn = kilnParam(KILN_PARAM_GroupThreads) != 0;
  /* Spinning launchers would take turns with the caller on a single CPU. */
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) < 2) threadsOn = false;
  const int64_t us = kilnParam(KILN_PARAM_GroupSpinUs);
  if (us <= 10000000) spinNs = (uint64_t)us * 1000ull;
}

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* Thread-local scratch (the lists here, sym.c's group index) is freed when its thread ends: a key
 * whose destructor runs at a thread's end once the thread has grown any of it. Without a key (its
 * creation failed) the scratch stays until the process ends, as it would anyway for the main
 * thread. */
static pthread_key_t scratchKey;
static bool scratchKeyMade;
static pthread_once_t scratchOnce = PTHREAD_ONCE_INIT;

static void free_thread_scratch(void* unused) {
  (void)unused;
  free(queued.v);
  free(byDev.v);
  free(phased.v);
  memset(&queued, 0, sizeof queued);
  memset(&byDev, 0, sizeof byDev);
  memset(&phased, 0, sizeof phased);
  kilnSymFreeThreadScratch();
}

static void make_scratch_key(void) {
  scratchKeyMade = pthread_key_create(&scratchKey, free_thread_scratch) == 0;
}

/* A library unloaded (dlclose) leaves no destructor behind for threads that end later (their
 * scratch then stays, as the main thread's does). */
__attribute__((destructor)) static void deleteScratchKey(void) {
  if (scratchKeyMade) pthread_key_delete(scratchKey);
  scratchKeyMade = false;
}

void kilnThreadScratchUsed(void) {
  pthread_once(&scratchOnce, make_scratch_key);
  if (scratchKeyMade) pthread_setspecific(scratchKey, (void*)1);
}

static bool list_push(launchList* l, const kilnLaunch* x) {
  if (l->n == l->cap) {
    kilnThreadScratchUsed();
    size_t cap = l->cap ? l->cap * 2 : 16;
    kilnLaunch* v = (kilnLaunch*)realloc(l->v, cap * sizeof(*v));
    if (!v) return false;
    l->v = v;
    l->cap = cap;
  }
  l->v[l->n++] = *x;
  return true;
}

/* Keeps the first failure: *first and its text in msg (KILN_GROUP_MSG bytes). */
static void keep_first(kilnResult_t r, const char* text, kilnResult_t* first, char* msg) {
  if (r == KILN_SUCCESS || *first != KILN_SUCCESS) return;
  *first = r;
  snprintf(msg, KILN_GROUP_MSG, "%s", text);
}

/* Issues n launches in order from this thread, switching to a launch's device when it is not the
 * current one (a launcher's are all on its own). All are issued; returns the first failure, its
 * text in msg. */
static kilnResult_t issue_all(kilnLaunch* v, size_t n, char* msg) {
  kilnResult_t first = KILN_SUCCESS;
  int dev = -1;
  cudaGetDevice(&dev);
  for (size_t i = 0; i < n; i++) {
    if (v[i].comm->dev != dev) cudaSetDevice(dev = v[i].comm->dev);
    keep_first(kilnLaunchIssue(&v[i]), kilnLastError(), &first, msg);
  }
  return first;
}

static void* launcher_main(void* arg) {
  launcher* w = (launcher*)arg;
  cudaSetDevice(w->dev);
  uint_fast64_t seen = w->seen0;
  for (;;) {
    uint_fast64_t p;
    uint64_t t0 = now_ns();
    unsigned k = 0;
    while ((p = atomic_load(&w->posted)) == seen) {
      if (atomic_load(&stopping)) return NULL;
      if ((++k & 255) == 0 && now_ns() - t0 > spinNs) {
        pthread_mutex_lock(&w->mu);
        atomic_store(&w->sleeping, 1);
        if (atomic_load(&w->posted) == seen && !atomic_load(&stopping)) pthread_cond_wait(&w->cv, &w->mu);
        atomic_store(&w->sleeping, 0);
        pthread_mutex_unlock(&w->mu);
        t0 = now_ns();
      }
      cpu_relax();
    }
    seen = p;
    w->res = issue_all(w->items, w->n, w->msg);
    atomic_store_explicit(&w->done, p, memory_order_release);
  }
}

static void wake(launcher* w) {
  pthread_mutex_lock(&w->mu);
  pthread_cond_signal(&w->cv);
  pthread_mutex_unlock(&w->mu);
}

/* At exit: every launcher is claimed first (a group in flight finishes, no later group can hand
 * it work), then stopped and joined. */
static void stop_launchers(void) {
  pthread_mutex_lock(&startLock);
  for (int d = 0; d < KILN_GROUP_MAX_DEVS; d++) {
    launcher* w = &launchers[d];
    if (!atomic_load(&w->started)) continue;
    for (;;) {
      int freeNow = 0;
      if (atomic_compare_exchange_strong(&w->busy, &freeNow, 1)) break;
      sched_yield();
    }
  }
  atomic_store(&stopping, 1);
  for (int d = 0; d < KILN_GROUP_MAX_DEVS; d++) {
    launcher* w = &launchers[d];
    if (!atomic_load(&w->started)) continue;
    wake(w);
    pthread_join(w->th, NULL);
  }
  pthread_mutex_unlock(&startLock);
}

/* A forked child has none of the parent's threads: it starts its own if it needs them. */
static void forget_launchers(void) {
  for (int d = 0; d < KILN_GROUP_MAX_DEVS; d++) {
    atomic_store(&launchers[d].started, 0);
    atomic_store(&launchers[d].busy, 0);
    atomic_store(&launchers[d].sleeping, 0);
  }
}

/* The launcher of `dev`, started on first use; NULL when it cannot be. */
static launcher* launcher_for(int dev) {
  if (dev < 0 || dev >= KILN_GROUP_MAX_DEVS) return NULL;
  launcher* w = &launchers[dev];
  if (atomic_load_explicit(&w->started, memory_order_acquire)) return w;
  pthread_mutex_lock(&startLock);
  static bool exitHook = false;
  if (!atomic_load(&w->started) && !atomic_load(&stopping)) {
    w->dev = dev;
    w->seen0 = atomic_load(&w->posted);
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    if (pthread_create(&w->th, NULL, launcher_main, w) == 0) {
      atomic_store_explicit(&w->started, 1, memory_order_release);
      if (!exitHook) {
        exitHook = atexit(stop_launchers) == 0;
        pthread_atfork(NULL, NULL, forget_launchers);
      }
    }
  }
  pthread_mutex_unlock(&startLock);
  return atomic_load(&w->started) ? w : NULL;
}

bool kilnGroupActive(void) { return depth > 0; }

kilnResult_t kilnGroupStart(void) {
  if (depth == 0) groupErr = KILN_SUCCESS;
  depth++;
  return KILN_SUCCESS;
}

kilnResult_t kilnGroupQueue(const kilnLaunch* l) {
  if (!list_push(&queued, l))
    return kilnSetError(KILN_ERR_NO_MEMORY, "kilnRun: queueing a launch in a group");
  return KILN_SUCCESS;
}

void kilnGroupFail(kilnResult_t r) {
  if (depth <= 0 || groupErr != KILN_SUCCESS || r == KILN_SUCCESS) return;
  groupErr = r;
  snprintf(groupErrMsg, sizeof groupErrMsg, "%s", kilnLastError());
}

kilnResult_t kilnGroupEnd(void) {
  if (depth <= 0) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnGroupEnd without kilnGroupStart");
  if (--depth > 0) return KILN_SUCCESS;
  if (groupErr != KILN_SUCCESS) {
    const kilnResult_t e = groupErr;
    groupErr = KILN_SUCCESS;
    queued.n = 0;
    return kilnSetError(e, "a call in the group failed, none of the group was launched: %s", groupErrMsg);
  }
  if (queued.n == 0) return KILN_SUCCESS;
  pthread_once(&cfgOnce, read_config);
  int save = -1;
  cudaGetDevice(&save);
  /* Each call's capture state as its stream has it now, when the launches go (NCCL reads it at
   * the group's end too): a capture begun after a call was queued takes that call, one ended
   * before the group's end does not. A default-stream handle names the stream of the call's
   * device. A failed query fails the group before anything is launched. */
  int cur = save;
  for (size_t i = 0; i < queued.n; i++) {
    kilnLaunch* l = &queued.v[i];
    if (kilnStreamIsSpecial(l->stream) && cur != l->comm->dev) cudaSetDevice(cur = l->comm->dev);
    const kilnResult_t e = kilnLaunchCapture(l);
    if (e != KILN_SUCCESS) {
      char why[KILN_GROUP_MSG];
      snprintf(why, sizeof why, "%s", kilnLastError());
      if (save >= 0) cudaSetDevice(save);
      queued.n = 0;
      return kilnSetError(e, "none of the group was launched: %s", why);
    }
  }
  /* Calls of plans cut into phases (communicators of several nodes) go after the others, together
   * (internode.c). */
  phased.n = 0;
  size_t kept = 0;
  for (size_t i = 0; i < queued.n; i++) {
    if (!queued.v[i].phased) {
      queued.v[kept++] = queued.v[i];
    } else if (!list_push(&phased, &queued.v[i])) {
      if (save >= 0) cudaSetDevice(save);
      queued.n = 0;
      return kilnSetError(KILN_ERR_NO_MEMORY, "none of the group was launched: out of memory");
    }
  }
  queued.n = kept;
  /* Calls of every rank of a clique go direct into each other's buffers where they can. */
  kilnSymGroupPeers(queued.v, queued.n, kilnPeerAccess);

  /* Each GPU's launches together, in call order, GPUs in order of first appearance. A GPU with
   * a launch on a default-stream handle or in capture is issued by this thread. */
  int devs[KILN_GROUP_MAX_DEVS];
  bool callerOnly[KILN_GROUP_MAX_DEVS] = {false};
  size_t start[KILN_GROUP_MAX_DEVS + 1];
  int ndev = 0;
  bool degenerate = false;
  for (size_t i = 0; i < queued.n && !degenerate; i++) {
    const int d = queued.v[i].comm->dev;
    int j = 0;
    while (j < ndev && devs[j] != d) j++;
    if (j == ndev) {
      if (ndev == KILN_GROUP_MAX_DEVS) {
        degenerate = true;
        break;
      }
      devs[ndev++] = d;
    }
    if (queued.v[i].capturing || kilnStreamIsSpecial(queued.v[i].stream)) callerOnly[j] = true;
  }
  kilnResult_t first = KILN_SUCCESS;
  char msg[KILN_GROUP_MSG] = "";
  /* One GPU, no launcher threads, or more GPUs than launchers: call order, from this thread. */
  bool serial = degenerate || ndev == 1 || !threadsOn;
  byDev.n = 0;
  for (int j = 0; j < ndev && !serial; j++) {
    start[j] = byDev.n;
    for (size_t i = 0; i < queued.n && !serial; i++)
      if (queued.v[i].comm->dev == devs[j] && !list_push(&byDev, &queued.v[i])) serial = true; /* no memory */
  }
  if (serial) {
    first = issue_all(queued.v, queued.n, msg);
  } else {
    start[ndev] = byDev.n;
    launcher* given[KILN_GROUP_MAX_DEVS] = {0};
    uint_fast64_t ticket[KILN_GROUP_MAX_DEVS] = {0};
    const uint64_t now = now_ns();
    const bool close = now - atomic_exchange(&lastGroupNs, now) < spinNs;
    /* GPUs after the first go to their launchers when those are awake and free. The launchers
     * are looked up (and started, under startLock) before any is claimed: a thread holding a
     * claim while it waits for startLock would deadlock with stop_launchers at exit, which holds
     * startLock while it waits for every claim to end. */
    launcher* found[KILN_GROUP_MAX_DEVS] = {0};
    for (int j = 1; j < ndev; j++)
      if (!callerOnly[j]) found[j] = launcher_for(devs[j]);
    for (int j = 1; j < ndev; j++) {
      launcher* w = found[j];
      if (!w) continue;
      if (atomic_load(&w->sleeping)) {
        if (close) wake(w); /* for the next group; this one issues GPU j itself */
        continue;
      }
      int freeNow = 0;
      if (!atomic_compare_exchange_strong(&w->busy, &freeNow, 1)) continue;
      w->items = byDev.v + start[j];
      w->n = start[j + 1] - start[j];
      ticket[j] = atomic_load(&w->posted) + 1;
      atomic_store(&w->posted, ticket[j]);
      if (atomic_load(&w->sleeping)) wake(w);
      given[j] = w;
    }
    char m[KILN_GROUP_MSG];
    for (int j = 0; j < ndev; j++)
      if (!given[j]) keep_first(issue_all(byDev.v + start[j], start[j + 1] - start[j], m), m, &first, msg);
    for (int j = 1; j < ndev; j++) {
      launcher* w = given[j];
      if (!w) continue;
      for (unsigned k = 1; atomic_load_explicit(&w->done, memory_order_acquire) != ticket[j]; k++) {
        cpu_relax();
        if ((k & 1023) == 0) sched_yield();
      }
      keep_first(w->res, w->msg, &first, msg);
      atomic_store(&w->busy, 0);
    }
  }
  if (phased.n > 0) {
    const kilnResult_t r = kilnPhasedIssue(phased.v, phased.n);
    keep_first(r, kilnLastError(), &first, msg);
  }
  if (save >= 0) cudaSetDevice(save);
  queued.n = 0;
  byDev.n = 0;
  phased.n = 0;
  if (first != KILN_SUCCESS) return kilnSetError(first, "%s", msg[0] ? msg : kilnResultString(first));
  return KILN_SUCCESS;
}
