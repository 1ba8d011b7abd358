/*
 * Settings, the "kiln:" logger and the loader of the real NCCL for kiln's libnccl.so.2.
 *
 * The real NCCL is opened by full path with dlopen(RTLD_NOW | RTLD_LOCAL), so its symbols never
 * enter the global scope (where kiln's own ncclXxx are), and every function is taken from that
 * handle with dlsym. Search order (the first that loads and is not kiln wins):
 *   1. KILN_NCCL_PATH, when set (then nothing else is tried: an explicit path that fails is an error)
 *   2. <site-packages>/nvidia/nccl/lib/libnccl.so.2 next to any loaded Python package (PyTorch's
 *      wheel NCCL, found from libtorch's own location; dist-packages too)
 *   3. $CUDA_HOME/lib64, $CUDA_HOME/lib, /usr/local/cuda/lib64, /usr/local/cuda/lib,
 *      /usr/local/cuda/targets/x86_64-linux/lib, /usr/lib/x86_64-linux-gnu, /usr/lib64,
 *      /usr/local/lib, /usr/lib (each + /libnccl.so.2)
 * A candidate is kiln itself when its real path is this library's, or when it exports
 * kilnShimMarker (another kiln build); such candidates are skipped.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "../../solver/params.h"
#include "kiln/kiln.h"
#include "shim.h"

/* Marks a kiln shim: the loader skips any library that exports it. */
SHIM_EXPORT const char kilnShimMarker[] = "kiln libnccl.so.2 shim";

_Thread_local int shimPassthrough;
_Thread_local char shimKilnError[512];
_Thread_local int shimGroupDepth;

static shimConfig config;
static pthread_once_t configOnce = PTHREAD_ONCE_INIT;

static shimReal real;
static pthread_once_t realOnce = PTHREAD_ONCE_INIT;
static char loadError[8192];

/* ---- settings ---- */

static void config_init(void) {
  config.log = (shimLogLevel)kilnDebugLevel();
  config.disable = kilnParam(KILN_PARAM_Disable) != 0;
  const char* p = kilnParamString(KILN_PARAM_NcclPath);
  config.ncclPath = (p && *p) ? p : NULL;
  p = kilnParamString(KILN_PARAM_Plans);
  config.plansDir = (p && *p) ? p : NULL;
  /* kiln's own default (5 s) would end a wait that NCCL keeps up: a rank that comes late (saving a
   * checkpoint, evaluating) would fail the others' calls. Out of range: the default. */
  config.timeoutMs = INT_MAX;
  const int64_t t = kilnParam(KILN_PARAM_TimeoutMs);
  if (kilnParamIsSet(KILN_PARAM_TimeoutMs) && t >= 1 && t <= INT_MAX) config.timeoutMs = (int)t;
}

const shimConfig* shimConfigGet(void) {
  pthread_once(&configOnce, config_init);
  return &config;
}

/* ---- logging ---- */

static const char* levelName[] = {"", "ERROR", "WARN", "INFO"};

static void logv(shimLogLevel level, const char* fmt, va_list ap) {
  char msg[1024];
  vsnprintf(msg, sizeof msg, fmt, ap);
  /* One write per line, so lines of several ranks and threads do not interleave. */
  char line[1200];
  int n = snprintf(line, sizeof line, "kiln: %s pid %d: %s\n", levelName[level], (int)getpid(), msg);
  if (n > (int)sizeof line - 1) n = (int)sizeof line - 1;
  ssize_t w = write(STDERR_FILENO, line, (size_t)n);
  (void)w;
}

void shimLog(shimLogLevel level, const char* fmt, ...) {
  if (level > shimConfigGet()->log || level == SHIM_LOG_NONE) return;
  va_list ap;
  va_start(ap, fmt);
  logv(level, fmt, ap);
  va_end(ap);
}

/* The set of messages already logged: FNV-1a hashes in a small open table. Past 1024 distinct
 * messages, later ones are logged every time rather than lost. */
#define SEEN_SLOTS 1024
static uint64_t seen[SEEN_SLOTS];
static pthread_mutex_t seenLock = PTHREAD_MUTEX_INITIALIZER;

static bool first_time(const char* msg) {
  uint64_t h = 1469598103934665603ull;
  for (const char* c = msg; *c; c++) h = (h ^ (unsigned char)*c) * 1099511628211ull;
  if (h == 0) h = 1;
  bool first = true;
  pthread_mutex_lock(&seenLock);
  for (int i = 0; i < SEEN_SLOTS; i++) {
    uint64_t* s = &seen[(h + (uint64_t)i) % SEEN_SLOTS];
    if (*s == h) {
      first = false;
      break;
    }
    if (*s == 0) {
      *s = h;
      break;
    }
  }
  pthread_mutex_unlock(&seenLock);
  return first;
}

void shimLogKeyed(shimLogLevel level, const char* key, const char* fmt, ...) {
  if (level > shimConfigGet()->log || level == SHIM_LOG_NONE || !first_time(key)) return;
  va_list ap;
  va_start(ap, fmt);
  logv(level, fmt, ap);
  va_end(ap);
}

void shimLogOnce(shimLogLevel level, const char* fmt, ...) {
  if (level > shimConfigGet()->log || level == SHIM_LOG_NONE) return;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (first_time(msg)) shimLog(level, "%s", msg);
}

/* ---- finding the real NCCL ---- */

static char selfPath[PATH_MAX];

/* The real path of this library (through the marker's address). */
static void find_self(void) {
  Dl_info info;
  if (dladdr((const void*)kilnShimMarker, &info) && info.dli_fname) {
    if (!realpath(info.dli_fname, selfPath)) snprintf(selfPath, sizeof selfPath, "%s", info.dli_fname);
  }
}

static void append_error(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
static void append_error(const char* fmt, ...) {
  size_t used = strlen(loadError);
  if (used + 2 >= sizeof loadError) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(loadError + used, sizeof loadError - used, fmt, ap);
  va_end(ap);
}

/* Tries one candidate; true when it is a usable real NCCL (then real.handle is set). */
static bool try_candidate(const char* path) {
  char resolved[PATH_MAX];
  if (!realpath(path, resolved)) {
    append_error("\n  %s: not found", path);
    return false;
  }
  if (selfPath[0] && strcmp(resolved, selfPath) == 0) {
    append_error("\n  %s: is kiln itself, skipped", path);
    return false;
  }
  void* h = dlopen(resolved, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    append_error("\n  %s: dlopen failed: %s", path, e ? e : "?");
    return false;
  }
  if (dlsym(h, "kilnShimMarker")) {
    append_error("\n  %s: is a kiln shim, skipped", path);
    dlclose(h);
    return false;
  }
  if (!dlsym(h, "ncclCommInitRank") || !dlsym(h, "ncclAllReduce")) {
    append_error("\n  %s: lacks ncclCommInitRank/ncclAllReduce, not an NCCL", path);
    dlclose(h);
    return false;
  }
  real.handle = h;
  snprintf(real.path, sizeof real.path, "%s", resolved);
  return true;
}

typedef struct {
  char paths[16][PATH_MAX];
  int n;
} candidateList;

static void add_candidate(candidateList* l, const char* dir, const char* file) {
  if (l->n >= 16 || !dir || !*dir) return;
  char p[PATH_MAX];
  const int len = snprintf(p, sizeof p, "%s/%s", dir, file);
  if (len < 0 || (size_t)len >= sizeof p) return; /* a cut path would name another file */
  for (int i = 0; i < l->n; i++)
    if (strcmp(l->paths[i], p) == 0) return;
  snprintf(l->paths[l->n++], PATH_MAX, "%s", p);
}

/* dl_iterate_phdr callback: for each loaded object under a site-packages (or Debian's
 * dist-packages) folder, the NCCL wheel's library in that folder. */
static int add_site_packages(struct dl_phdr_info* info, size_t size, void* data) {
  (void)size;
  const char* name = info->dlpi_name;
  const char* marker = "/site-packages/";
  const char* sp = name ? strstr(name, marker) : NULL;
  if (!sp && name) {
    marker = "/dist-packages/";
    sp = strstr(name, marker);
  }
  if (!sp) return 0;
  char dir[PATH_MAX];
  int len = (int)(sp - name) + (int)strlen(marker) - 1;
  if (len >= (int)sizeof dir) return 0;
  memcpy(dir, name, (size_t)len);
  dir[len] = '\0';
  add_candidate((candidateList*)data, dir, "nvidia/nccl/lib/libnccl.so.2");
  return 0;
}

#define SHIM_SYSTEM_DIRS(X)                     \
  X("/usr/local/cuda/lib64")                    \
  X("/usr/local/cuda/lib")                      \
  X("/usr/local/cuda/targets/x86_64-linux/lib") \
  X("/usr/lib/x86_64-linux-gnu")                \
  X("/usr/lib64")                               \
  X("/usr/local/lib")                           \
  X("/usr/lib")

static void resolve_all(void) {
#define SHIM_X_DLSYM(ret, fname, params, args, missing) *(void**)&real.fname = dlsym(real.handle, #fname);
  KILN_SHIM_ALL(SHIM_X_DLSYM)
#undef SHIM_X_DLSYM
#define SHIM_X_DLSYM_VOID(fname) *(void**)&real.fname = dlsym(real.handle, #fname);
  KILN_SHIM_VOID(SHIM_X_DLSYM_VOID)
#undef SHIM_X_DLSYM_VOID
  real.version = 0;
  if (real.ncclGetVersion) {
    int v = 0;
    shimPassthrough++;
    if (real.ncclGetVersion(&v) == ncclSuccess) real.version = v;
    shimPassthrough--;
  }
}

static void load_real(void) {
  const shimConfig* cfg = shimConfigGet();
  find_self();
  loadError[0] = '\0';
  bool ok = false;
  if (cfg->ncclPath) {
    ok = try_candidate(cfg->ncclPath);
  } else {
    candidateList l = {.n = 0};
    dl_iterate_phdr(add_site_packages, &l);
    const char* cuda = kilnParamString(KILN_PARAM_CudaHome);
    if (cuda && *cuda) {
      char d[PATH_MAX];
      snprintf(d, sizeof d, "%s/lib64", cuda);
      add_candidate(&l, d, "libnccl.so.2");
      snprintf(d, sizeof d, "%s/lib", cuda);
      add_candidate(&l, d, "libnccl.so.2");
    }
#define SHIM_X_DIR(d) add_candidate(&l, d, "libnccl.so.2");
    SHIM_SYSTEM_DIRS(SHIM_X_DIR)
#undef SHIM_X_DIR
    for (int i = 0; i < l.n && !ok; i++) ok = try_candidate(l.paths[i]);
  }
  if (!ok) {
    char tried[sizeof loadError];
    snprintf(tried, sizeof tried, "%s", loadError);
    snprintf(loadError, sizeof loadError,
             "cannot load the real NCCL (set KILN_NCCL_PATH to the full path of the real "
             "libnccl.so.2); tried:%.7000s",
             tried);
    shimLog(SHIM_LOG_ERROR, "%s", loadError);
    return;
  }
  resolve_all();
  shimLog(SHIM_LOG_INFO, "real NCCL %d.%d.%d loaded from %s%s", real.version / 10000,
          real.version / 100 % 100, real.version % 100, real.path,
          cfg->disable ? " (KILN_DISABLE: forwarding everything)" : "");
}

const shimReal* shimRealGet(void) {
  pthread_once(&realOnce, load_real);
  return &real;
}

const char* shimLoadError(void) {
  shimRealGet();
  return loadError;
}

/* ---- answers without a real NCCL ---- */

ncclResult_t shimMissing(const char* fn) {
  const shimReal* r = shimRealGet();
  if (!r->handle) {
    shimLogOnce(SHIM_LOG_ERROR, "%s: no real NCCL loaded (the first kiln error says why)", fn);
    return ncclSystemError;
  }
  shimLogOnce(SHIM_LOG_ERROR, "%s: not exported by the real NCCL at %s (version %d)", fn, r->path,
              r->version);
  return ncclInvalidUsage;
}

const char* shimErrorString(ncclResult_t r) {
  switch (r) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error";
    case ncclSystemError: return "unhandled system error (kiln: real NCCL not loaded)";
    case ncclInternalError: return "internal error";
    case ncclInvalidArgument: return "invalid argument";
    case ncclInvalidUsage: return "invalid usage";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}

const char* shimLastError(void) { return shimLoadError(); }
