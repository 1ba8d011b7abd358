/* Helpers shared by the GPU suites (see gpu_common.h). */
#include "gpu_common.h"
#include "params.h"           /* kilnParamsReload: the library reads the environment once; world_init_env_as
                     * reads it again around the communicators it makes */
#include "runtime_internal.h" /* kilnCommCreateShared */

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <time.h>

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

int g_ngpus = 0;
uint64_t g_seed = 0;

uint64_t gpu_rand(uint64_t* s) {
  uint64_t x = (*s += 0x9e3779b97f4a7c15ull);
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

static bool is_dir(const char* path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

const char* gpu_plans_dir(void) {
  static char dir[PATH_MAX];
  const char* env = getenv("KILN_TEST_PLANS_DIR");
  if (env && env[0]) return env;
  if (dir[0]) return dir;
  char exe[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = '\0';
    char* slash = strrchr(exe, '/');
    if (slash) *slash = '\0';
    static const char* const rel[] = {"plans", "../plans"};
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++)
      if (snprintf(dir, sizeof dir, "%s/%s", exe, rel[i]) < (int)sizeof dir && is_dir(dir)) return dir;
  }
  snprintf(dir, sizeof dir, "%s/plans", KILN_SOURCE_DIR);
  return dir;
}

bool gpu_reduces(kilnColl_t c) { return c == KILN_COLL_ALLREDUCE || c == KILN_COLL_REDUCESCATTER; }

bool world_init(world* w, int n, const kilnCommConfig* cfg) {
  memset(w, 0, sizeof(*w));
  w->n = n;
  int devs[GPU_MAX] = {0}; /* initialized: gcc -O2 warns (maybe-uninitialized) otherwise */
  for (int i = 0; i < n; i++) devs[i] = w->dev[i] = i;
  ncclResult_t nr = ncclCommInitAll(w->nccl, n, devs);
  if (nr != ncclSuccess) {
    fprintf(stderr, "ncclCommInitAll(%d): %s\n", n, ncclGetErrorString(nr));
    return false;
  }
  for (int i = 0; i < n; i++) {
    cudaSetDevice(i);
    cudaStreamCreateWithFlags(&w->st[i], cudaStreamNonBlocking);
  }
  kilnResult_t r = kilnCommCreateAll(n, w->nccl, cfg, w->kc);
  if (r != KILN_SUCCESS) {
    fprintf(stderr, "kilnCommCreateAll(%d): %s: %s\n", n, kilnResultName(r), kilnLastError());
    return false;
  }
  return true;
}

bool world_init_shared(world* w, int n, int ngpus, const int* devs, const kilnCommConfig* cfg) {
  memset(w, 0, sizeof(*w));
  w->n = n;
  for (int i = 0; i < n; i++) {
    w->dev[i] = devs ? devs[i] : i % ngpus;
    cudaSetDevice(w->dev[i]);
    cudaStreamCreateWithFlags(&w->st[i], cudaStreamNonBlocking);
  }
  kilnResult_t r = kilnCommCreateShared(n, w->dev, cfg, w->kc);
  if (r != KILN_SUCCESS) {
    fprintf(stderr, "kilnCommCreateShared(%d ranks on %d GPUs): %s: %s\n", n, ngpus, kilnResultName(r),
            kilnLastError());
    world_fini(w);
    return false;
  }
  return true;
}

void world_fini(world* w) {
  kilnCommDestroyAll(w->n, w->kc);
  for (int i = 0; i < w->n; i++) {
    cudaSetDevice(w->dev[i]);
    if (w->st[i]) cudaStreamDestroy(w->st[i]);
    if (w->nccl[i]) ncclCommDestroy(w->nccl[i]);
  }
}

/* Exactly representable values only (normal numbers or zero). */
static uint32_t enc_float(double v, int eb, int mb, int bias) {
  if (v == 0) return 0;
  uint32_t s = v < 0;
  int e;
  double m = frexp(fabs(v), &e); /* |v| = m 2^e, m in [0.5, 1) */
  uint32_t E = (uint32_t)(e - 1 + bias);
  uint32_t F = (uint32_t)ldexp(m * 2 - 1, mb);
  return (s << (eb + mb)) | (E << mb) | F;
}

static double dec_float(uint32_t x, int eb, int mb, int bias) {
  uint32_t s = (x >> (eb + mb)) & 1, E = (x >> mb) & ((1u << eb) - 1), F = x & ((1u << mb) - 1);
  double v = E == 0 ? ldexp((double)F, 1 - bias - mb) : ldexp(1 + ldexp((double)F, -mb), (int)E - bias);
  return s ? -v : v;
}

void gpu_encode(kilnDataType_t t, void* p, size_t i, double v) {
  switch (t) {
    case KILN_INT8: ((int8_t*)p)[i] = (int8_t)v; break;
    case KILN_UINT8: ((uint8_t*)p)[i] = (uint8_t)v; break;
    case KILN_INT32: ((int32_t*)p)[i] = (int32_t)v; break;
    case KILN_UINT32: ((uint32_t*)p)[i] = (uint32_t)v; break;
    case KILN_INT64: ((int64_t*)p)[i] = (int64_t)v; break;
    case KILN_UINT64: ((uint64_t*)p)[i] = (uint64_t)v; break;
    case KILN_FLOAT16: ((uint16_t*)p)[i] = (uint16_t)enc_float(v, 5, 10, 15); break;
    case KILN_FLOAT32: ((float*)p)[i] = (float)v; break;
    case KILN_FLOAT64: ((double*)p)[i] = v; break;
    case KILN_BFLOAT16: ((uint16_t*)p)[i] = (uint16_t)enc_float(v, 8, 7, 127); break;
    case KILN_FLOAT8E4M3: ((uint8_t*)p)[i] = (uint8_t)enc_float(v, 4, 3, 7); break;
    case KILN_FLOAT8E5M2: ((uint8_t*)p)[i] = (uint8_t)enc_float(v, 5, 2, 15); break;
    default: break;
  }
}

double gpu_decode(kilnDataType_t t, const void* p, size_t i) {
  switch (t) {
    case KILN_INT8: return ((const int8_t*)p)[i];
    case KILN_UINT8: return ((const uint8_t*)p)[i];
    case KILN_INT32: return ((const int32_t*)p)[i];
    case KILN_UINT32: return ((const uint32_t*)p)[i];
    case KILN_INT64: return (double)((const int64_t*)p)[i];
    case KILN_UINT64: return (double)((const uint64_t*)p)[i];
    case KILN_FLOAT16: return dec_float(((const uint16_t*)p)[i], 5, 10, 15);
    case KILN_FLOAT32: return ((const float*)p)[i];
    case KILN_FLOAT64: return ((const double*)p)[i];
    case KILN_BFLOAT16: return dec_float(((const uint16_t*)p)[i], 8, 7, 127);
    case KILN_FLOAT8E4M3: return dec_float(((const uint8_t*)p)[i], 4, 3, 7);
    case KILN_FLOAT8E5M2: return dec_float(((const uint8_t*)p)[i], 5, 2, 15);
    default: return NAN;
  }
}

static bool is_unsigned(kilnDataType_t t) { return t == KILN_UINT8 || t == KILN_UINT32 || t == KILN_UINT64; }
static bool is_int(kilnDataType_t t) { return t <= KILN_UINT64; }

void call_elems(kilnColl_t coll, int n, size_t count, size_t* inElems, size_t* outElems) {
  const size_t all = (size_t)n * count;
  *inElems = coll == KILN_COLL_ALLREDUCE || coll == KILN_COLL_ALLGATHER ? count : all;
  *outElems = coll == KILN_COLL_ALLREDUCE || coll == KILN_COLL_REDUCESCATTER ? count : all;
}

size_t chunks_per_block(const kilnPlan* p) {
  const int n = p->ngpus;
  return p->coll == KILN_COLL_ALLREDUCE   ? (size_t)p->gpus[0].i_chunks
         : p->coll == KILN_COLL_ALLGATHER ? (size_t)p->gpus[0].o_chunks / (size_t)n
                                          : (size_t)p->gpus[0].i_chunks / (size_t)n;
}

int gpu_rank_sms(int nranks) {
  int sms = 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) != cudaSuccess || nranks < 1) return 0;
  return sms / nranks;
}

void window_pools(const world* w, size_t bytes, char** pool, ncclWindow_t* win) {
  for (int r = 0; r < w->n; r++) {
    cudaSetDevice(w->dev[r]);
    cr_assert(eq(int, ncclMemAlloc((void**)&pool[r], bytes), ncclSuccess));
  }
  ncclGroupStart();
  for (int r = 0; r < w->n; r++) {
    cudaSetDevice(w->dev[r]);
    cr_assert(eq(int, ncclCommWindowRegister(w->nccl[r], pool[r], bytes, &win[r], NCCL_WIN_COLL_SYMMETRIC),
                 ncclSuccess));
  }
  cr_assert(eq(int, ncclGroupEnd(), ncclSuccess));
  for (int r = 0; r < w->n; r++)
    cr_assert(eq(int, kilnCommWindowAdd(w->kc[r], win[r], pool[r], bytes), KILN_SUCCESS), "%s",
              kilnLastError());
}

static bool call_alloc_any(call* c, const world* w, kilnColl_t coll, size_t count, kilnDataType_t dt,
                           char* const* sendAt, char* const* recvAt) {
  memset(c, 0, sizeof(*c));
  c->borrowed = sendAt != NULL;
  c->coll = coll;
  c->n = w->n;
  c->count = count;
  c->dt = dt;
  call_elems(coll, w->n, count, &c->inElems, &c->outElems);
  const size_t es = kilnDataTypeSize(dt);
  const size_t maxe = c->inElems > c->outElems ? c->inElems : c->outElems;
  for (int r = 0; r < w->n; r++) {
    cudaSetDevice(w->dev[r]);
    if (c->borrowed) {
      c->dsend[r] = sendAt[r];
      c->drecv[r] = recvAt[r];
    } else if (cudaMalloc(&c->dsend[r], c->inElems * es) != cudaSuccess ||
               cudaMalloc(&c->drecv[r], c->outElems * es) != cudaSuccess) {
      return false;
    }
    c->hin[r] = malloc(c->inElems * es);
    c->vals[r] = malloc(c->inElems * sizeof(int64_t));
    if (!c->hin[r] || !c->vals[r]) return false;
  }
  c->hout = malloc(maxe * es);
  return c->hout != NULL;
}

bool call_alloc(call* c, const world* w, kilnColl_t coll, size_t count, kilnDataType_t dt) {
  return call_alloc_any(c, w, coll, count, dt, NULL, NULL);
}

bool call_alloc_at(call* c, const world* w, kilnColl_t coll, size_t count, kilnDataType_t dt,
                   char* const* sendAt, char* const* recvAt) {
  return sendAt && recvAt && call_alloc_any(c, w, coll, count, dt, sendAt, recvAt);
}

void call_free(call* c, const world* w) {
  for (int r = 0; r < w->n; r++) {
    cudaSetDevice(w->dev[r]);
    if (!c->borrowed) {
      cudaFree(c->dsend[r]);
      cudaFree(c->drecv[r]);
    }
    free(c->hin[r]);
    free(c->vals[r]);
  }
  free(c->hout);
}

void call_prepare(call* c, const world* w, kilnRedOp_t op, bool inplace, uint64_t* rng) {
  const size_t es = kilnDataTypeSize(c->dt);
  c->op = op;
  c->inplace = inplace;
  const bool uns = is_unsigned(c->dt);
  /* Results exact in every type: up to 4 ranks, sums within 8 (float8 e5m2's exact integers)
   * and products within 16. On more ranks, the two that would leave that: 8-bit integer products
   * (256 at 8 ranks) take factors of 2 from the first four ranks only, and float8 e5m2 sums (and
   * averages) values of at most 1, so 8 ranks stay within 16 and 8. */
  const bool prod = gpu_reduces(c->coll) && op == KILN_PROD;
  const bool narrow = c->n > 4 && gpu_reduces(c->coll) &&
                      ((prod && (c->dt == KILN_INT8 || c->dt == KILN_UINT8)) ||
                       (c->dt == KILN_FLOAT8E5M2 && (op == KILN_SUM || op == KILN_AVG)));
  for (int r = 0; r < w->n; r++) {
    const bool wide = !narrow || (prod && r < 4);
    for (size_t i = 0; i < c->inElems; i++) {
      uint64_t x = gpu_rand(rng);
      int64_t v;
      if (prod && wide)
        v = uns ? (int64_t)(1 + x % 2) : (int64_t[]){-2, -1, 1, 2}[x % 4];
      else if (prod)
        v = uns ? 1 : (x & 1 ? 1 : -1);
      else if (wide)
        v = uns ? (int64_t)(x % 5) : (int64_t)(x % 5) - 2;
      else
        v = uns ? (int64_t)(x % 2) : (int64_t)(x % 3) - 1;
      c->vals[r][i] = v;
      gpu_encode(c->dt, c->hin[r], i, (double)v);
    }
    cudaSetDevice(w->dev[r]);
    char* in = c->dsend[r];
    char* out = c->drecv[r];
    cudaMemsetAsync(out, 0x7B, c->outElems * es, w->st[r]);
    if (!inplace) {
      c->sendp[r] = in;
      c->recvp[r] = out;
    } else if (c->coll == KILN_COLL_ALLREDUCE) {
      c->sendp[r] = out;
      c->recvp[r] = out;
    } else if (c->coll == KILN_COLL_ALLGATHER) {
      c->sendp[r] = out + (size_t)r * c->count * es;
      c->recvp[r] = out;
    } else { /* reducescatter: the result lands in the input's block r */
      c->sendp[r] = in;
      c->recvp[r] = in + (size_t)r * c->count * es;
    }
    cudaMemcpyAsync((void*)c->sendp[r], c->hin[r], c->inElems * es, cudaMemcpyHostToDevice, w->st[r]);
  }
}

static double ref_reduce(const call* c, int64_t* vs, int n) {
  double acc = (double)vs[0];
  for (int q = 1; q < n; q++) {
    double v = (double)vs[q];
    switch (c->op) {
      case KILN_PROD: acc *= v; break;
      case KILN_MAX: acc = v > acc ? v : acc; break;
      case KILN_MIN: acc = v < acc ? v : acc; break;
      default: acc += v; break;
    }
  }
  if (c->op == KILN_AVG) acc = is_int(c->dt) ? (double)((int64_t)acc / n) : acc / n;
  return acc;
}

bool call_check(call* c, const world* w, char* msg, size_t msglen) {
  const size_t es = kilnDataTypeSize(c->dt);
  const size_t n = (size_t)w->n;
  for (int r = 0; r < w->n; r++) {
    cudaSetDevice(w->dev[r]);
    cudaError_t e = cudaStreamSynchronize(w->st[r]);
    if (e != cudaSuccess) {
      snprintf(msg, msglen, "rank %d: %s", r, cudaGetErrorString(e));
      return false;
    }
  }
  for (int r = 0; r < w->n; r++) {
    cudaSetDevice(w->dev[r]);
    cudaMemcpy(c->hout, c->recvp[r], c->outElems * es, cudaMemcpyDeviceToHost);
    for (size_t i = 0; i < c->outElems; i++) {
      double want;
      int64_t vs[GPU_MAX];
      switch (c->coll) {
        case KILN_COLL_ALLREDUCE:
          for (size_t q = 0; q < n; q++) vs[q] = c->vals[q][i];
          want = ref_reduce(c, vs, (int)n);
          break;
        case KILN_COLL_REDUCESCATTER:
          for (size_t q = 0; q < n; q++) vs[q] = c->vals[q][(size_t)r * c->count + i];
          want = ref_reduce(c, vs, (int)n);
          break;
        case KILN_COLL_ALLGATHER: want = (double)c->vals[i / c->count][i % c->count]; break;
        default: /* alltoall: block b of rank r's output is block r of rank b's input */
          want = (double)c->vals[i / c->count][(size_t)r * c->count + i % c->count];
          break;
      }
      double got = gpu_decode(c->dt, c->hout, i);
      if (!(got == want)) {
        snprintf(msg, msglen, "%s %s %s count=%zu %s: rank %d element %zu of %zu: want %g got %g",
                 kilnCollName(c->coll), kilnDataTypeName(c->dt), kilnRedOpName(c->op), c->count,
                 c->inplace ? "in-place" : "out-of-place", r, i, c->outElems, want, got);
        return false;
      }
    }
  }
  return true;
}

static char g_countProblem[200];

const char* gpu_count_problem(void) { return g_countProblem; }

int gpu_count_in_child(void) {
  g_countProblem[0] = '\0';
  int fds[2];
  if (pipe(fds) != 0) {
    snprintf(g_countProblem, sizeof g_countProblem, "pipe failed");
    return 0;
  }
  pid_t p = fork();
  if (p == 0) {
    close(fds[0]);
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    char line[160];
    int len = snprintf(line, sizeof line, "%d %d %s", e == cudaSuccess ? n : 0, (int)e, cudaGetErrorName(e));
    if (write(fds[1], line, (size_t)len) < 0) _exit(1);
    _exit(0);
  }
  close(fds[1]);
  char line[160] = "";
  ssize_t got = p < 0 ? -1 : read(fds[0], line, sizeof line - 1);
  close(fds[0]);
  int st = 0;
  if (p > 0) waitpid(p, &st, 0);
  int n = 0, err = 0;
  char name[100] = "?";
  if (got <= 0 || sscanf(line, "%d %d %99s", &n, &err, name) < 2) {
    snprintf(g_countProblem, sizeof g_countProblem, "the GPU-counting child gave no answer");
    return 0;
  }
  /* No driver or no device: a machine without GPUs. Anything else is a broken GPU setup. */
  if (err != cudaSuccess && err != cudaErrorNoDevice && err != cudaErrorInsufficientDriver)
    snprintf(g_countProblem, sizeof g_countProblem, "cudaGetDeviceCount failed: %s (%d)", name, err);
  return n > 100 ? 100 : n;
}

int gpu_count_for_suite(const char* suite, int need) {
  int n = gpu_count_in_child();
  const char* problem = gpu_count_problem();
  if (problem[0]) printf("%s: %s\n", suite, problem);
  const char* req = getenv("KILN_TEST_REQUIRE_GPUS");
  if (req && req[0] && strcmp(req, "0") != 0 && (n < need || problem[0])) {
    printf(
        "%s: KILN_TEST_REQUIRE_GPUS is set and %d GPUs are usable (%d needed): failing instead "
        "of skipping\n",
        suite, n, need);
    fflush(stdout);
    exit(1);
  }
  return n;
}

/* Rank `rank` of gpu_fork_ranks: the id from rank 0 (made there) through the pipes, then body. */
static int fork_rank(int rank, int n, int (*const fds)[2], ncclResult_t (*getId)(ncclUniqueId*),
                     gpu_rank_body body, void* ctx) {
  ncclUniqueId id;
  if (rank == 0) {
    if (getId(&id) != ncclSuccess) return GPU_RANK_NO_ID;
    for (int i = 1; i < n; i++)
      if (write(fds[i][1], &id, sizeof id) != (ssize_t)sizeof id) return GPU_RANK_NO_ID;
  }
  /* Only rank 0 keeps the write ends: should it exit before writing, the others read end of file
   * instead of waiting for ever. */
  for (int i = 0; i < n; i++) close(fds[i][1]);
  if (rank != 0 && read(fds[rank][0], &id, sizeof id) != (ssize_t)sizeof id) return GPU_RANK_NO_ID;
  return body(rank, n, &id, ctx);
}

bool gpu_fork_ranks(int n, ncclResult_t (*getId)(ncclUniqueId*), gpu_rank_body body, void* ctx, char* msg,
                    size_t msglen) {
  msg[0] = 0;
  if (n < 1 || n > GPU_MAX) {
    snprintf(msg, msglen, "gpu_fork_ranks: %d ranks (1 to %d)", n, GPU_MAX);
    return false;
  }
  int fds[GPU_MAX][2];
  for (int i = 0; i < n; i++)
    if (pipe(fds[i]) != 0) {
      snprintf(msg, msglen, "gpu_fork_ranks: pipe failed");
      for (int j = 0; j < i; j++) close(fds[j][0]), close(fds[j][1]);
      return false;
    }
  fflush(stdout);
  fflush(stderr);
  pid_t pids[GPU_MAX];
  int forked = 0;
  for (; forked < n; forked++) {
    pids[forked] = fork();
    if (pids[forked] < 0) break;
    if (pids[forked] == 0) {
      const int rc = fork_rank(forked, n, fds, getId, body, ctx);
      fflush(stdout);
      fflush(stderr);
      _exit(rc);
    }
  }
  for (int i = 0; i < n; i++) close(fds[i][0]), close(fds[i][1]);
  if (forked < n) snprintf(msg, msglen, "gpu_fork_ranks: fork failed for rank %d", forked);
  bool ok = forked == n;
  for (int i = 0; i < forked; i++) {
    int st = 0;
    waitpid(pids[i], &st, 0);
    if (ok && !(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
      ok = false;
      if (WIFEXITED(st))
        snprintf(msg, msglen, "rank %d exited with %d", i, WEXITSTATUS(st));
      else
        snprintf(msg, msglen, "rank %d ended by signal %d", i, WIFSIGNALED(st) ? WTERMSIG(st) : -1);
    }
  }
  return ok;
}

/* ---- the runtime suites' shared steps ---- */

void gpu_suite_start(const char* suite) {
  char buf[32];
  const char* fake = getenv("KILN_TEST_FAKE_GPUS");
  int n = fake ? atoi(fake) : gpu_count_for_suite(suite, 1);
  snprintf(buf, sizeof buf, "%d", n);
  setenv("KILN_TEST_GPUS", buf, 1);
  if (!getenv("KILN_TEST_SEED")) {
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)time(NULL));
    setenv("KILN_TEST_SEED", buf, 1);
  }
  if (n < 1)
    printf("skipped: no GPU\n");
  else
    printf("%s: %d GPU%s, seed %s (KILN_TEST_SEED to repeat)%s\n", suite, n, plural(n),
           getenv("KILN_TEST_SEED"), n < 2 ? ": only the suites of ranks sharing a GPU run" : "");
  fflush(stdout);
}

const char* plural(int n) { return n == 1 ? "" : "s"; }
void gpu_env(void) {
  const char* n = getenv("KILN_TEST_GPUS");
  const char* s = getenv("KILN_TEST_SEED");
  g_ngpus = n ? atoi(n) : 0;
  g_seed = s ? strtoull(s, NULL, 0) : 1;
}
void gpu_init(void) {
  gpu_env();
  if (g_ngpus < 2) cr_skip_test("skipped: %d GPUs visible, 2 needed", g_ngpus);
}
void gpu_init_shared(void) {
  gpu_env();
  if (g_ngpus < 1) cr_skip_test("skipped: no GPU");
}
int suite_gpus(void) { return g_ngpus >= 8 ? 8 : g_ngpus >= 4 ? 4 : 2; }
void load_plan(loaded* l, const world* w, kilnPlan* plan) {
  l->plan = plan;
  for (int i = 0; i < w->n; i++) {
    kilnResult_t r = kilnPlanLoad(w->kc[i], l->plan, &l->ex[i]);
    cr_assert(eq(int, r, KILN_SUCCESS), "load %s on rank %d: %s", l->plan->name, i, kilnLastError());
  }
}
void load_verified(loaded* l, const world* w, kilnPlan* plan) {
  cr_assert(eq(int, kilnPlanVerify(plan, NULL), KILN_SUCCESS), "plan %s: %s", plan->name, kilnLastError());
  load_plan(l, w, plan);
}
kilnPlan* classic_plan(const char* algo, kilnColl_t coll, int n, int chunks, int instances, kilnProto_t proto,
                       bool inplace) {
  kilnClassicOptions o = KILN_CLASSIC_OPTIONS_INIT;
  o.chunks = chunks;
  o.instances = instances;
  o.proto = proto;
  o.inplace = inplace;
  kilnPlan* plan = NULL;
  kilnResult_t r = kilnClassicPlan(algo, coll, n, &o, &plan);
  cr_assert(eq(int, r, KILN_SUCCESS), "classic %s %s: %s", algo, kilnCollName(coll), kilnLastError());
  return plan;
}
void load(loaded* l, const world* w, const char* algo, kilnColl_t coll, int chunks, int instances,
          kilnProto_t proto, bool inplace) {
  load_plan(l, w, classic_plan(algo, coll, w->n, chunks, instances, proto, inplace));
}
void unload(loaded* l, const world* w) {
  for (int i = 0; i < w->n; i++) kilnExecFree(l->ex[i]);
  kilnPlanFree(l->plan);
}
void assert_no_async_error_at(const world* w, const char* what) {
  for (int r = 0; r < w->n; r++) {
    kilnResult_t ae = KILN_SUCCESS;
    kilnCommGetAsyncError(w->kc[r], &ae);
    cr_assert(eq(int, ae, KILN_SUCCESS), "%s: rank %d failed on the GPU: %s", what, r, kilnLastError());
  }
}
void assert_no_async_error(const world* w) { assert_no_async_error_at(w, "async error"); }
void capture_begin(const world* w, int r) {
  cudaSetDevice(w->dev[r]);
  cudaStreamSynchronize(w->st[r]);
  cr_assert(eq(int, cudaStreamBeginCapture(w->st[r], cudaStreamCaptureModeThreadLocal), cudaSuccess));
}
void capture_begin_all(const world* w) {
  for (int r = 0; r < w->n; r++) {
    cudaSetDevice(w->dev[r]);
    cudaStreamSynchronize(w->st[r]);
  }
  for (int r = 0; r < w->n; r++) {
    cudaSetDevice(w->dev[r]);
    cr_assert(eq(int, cudaStreamBeginCapture(w->st[r], cudaStreamCaptureModeThreadLocal), cudaSuccess));
  }
}
void capture_end(const world* w, int r, cudaGraphExec_t* ge) {
  cudaGraph_t g;
  cr_assert(eq(int, cudaStreamEndCapture(w->st[r], &g), cudaSuccess));
  cr_assert(eq(int, cudaGraphInstantiate(ge, g, 0), cudaSuccess));
  cudaGraphDestroy(g);
}
void capture_end_all(const world* w, cudaGraphExec_t* ge) {
  cudaGraph_t g[GPU_MAX];
  for (int r = 0; r < w->n; r++)
    cr_assert(eq(int, cudaStreamEndCapture(w->st[r], &g[r]), cudaSuccess), "rank %d", r);
  for (int r = 0; r < w->n; r++) {
    cr_assert(eq(int, cudaGraphInstantiate(&ge[r], g[r], 0), cudaSuccess), "rank %d", r);
    cudaGraphDestroy(g[r]);
  }
}
void replay_all(const world* w, cudaGraphExec_t* ge) {
  for (int r = 0; r < w->n; r++) {
    cudaSetDevice(w->dev[r]);
    cr_assert(eq(int, cudaGraphLaunch(ge[r], w->st[r]), cudaSuccess));
  }
}
const char* const kNoEnv[] = {NULL};
bool world_init_env_as(world* w, int n, bool shared, const kilnCommConfig* cfg, const char* const* env) {
  for (const char* const* e = env; e[0]; e += 2) setenv(e[0], e[1], 1);
  kilnParamsReload();
  const bool made = shared ? world_init_shared(w, n, g_ngpus, NULL, cfg) : world_init(w, n, cfg);
  for (const char* const* e = env; e[0]; e += 2) unsetenv(e[0]);
  kilnParamsReload();
  return made;
}
void sweep_world(world* w, int n, bool shared, const kilnCommConfig* cfg, const char* const* env) {
  if (shared && g_ngpus >= n)
    cr_skip_test("skipped: %d GPUs visible: the %d-GPU suite runs this", g_ngpus, n);
  if (!shared && g_ngpus < n) cr_skip_test("skipped: %d GPUs needed, %d visible", n, g_ngpus);
  cr_assert(world_init_env_as(w, n, shared, cfg, env));
  if (shared) fprintf(stderr, "  %d ranks on %d GPU%s (kilnCommCreateShared)\n", n, g_ngpus, plural(g_ngpus));
}
void run_check(const loaded* l, const world* w, call* c, kilnRedOp_t op, bool inplace, uint64_t* rng) {
  call_prepare(c, w, op, inplace, rng);
  for (int r = 0; r < w->n; r++) {
    kilnResult_t res = kilnRun(l->ex[r], c->sendp[r], c->recvp[r], c->count, c->dt, op, w->st[r]);
    cr_assert(eq(int, res, KILN_SUCCESS), "%s rank %d: %s", l->plan->name, r, kilnLastError());
  }
  char msg[512];
  bool ok = call_check(c, w, msg, sizeof(msg));
  cr_assert(ok, "plan %s: %s (seed %llu)", l->plan->name, msg, (unsigned long long)g_seed);
  assert_no_async_error(w);
}
void load_entry(loaded* l, const world* w, const kilnRegistryEntry* e) {
  kilnPlan* plan = NULL;
  cr_assert(eq(int, kilnPlanReadMemory(e->xml, strlen(e->xml), e->name, &plan), KILN_SUCCESS), "%s: %s",
            e->name, kilnLastError());
  load_plan(l, w, plan);
}
const kilnSymAlgo_t kSymAlgos[] = {KILN_SYM_ALLREDUCE_ONESHOT, KILN_SYM_ALLREDUCE_TWOSHOT,
                                   KILN_SYM_REDUCESCATTER, KILN_SYM_ALLGATHER, KILN_SYM_ALLTOALL};
kilnColl_t sym_coll(kilnSymAlgo_t a) {
  return a <= KILN_SYM_ALLREDUCE_TWOSHOT ? KILN_COLL_ALLREDUCE
         : a == KILN_SYM_REDUCESCATTER   ? KILN_COLL_REDUCESCATTER
         : a == KILN_SYM_ALLGATHER       ? KILN_COLL_ALLGATHER
                                         : KILN_COLL_ALLTOALL;
}
void sym_issue(const world* w, const call* c, kilnSymAlgo_t a, kilnRedOp_t op, int r0, int r1, bool grouped) {
  if (grouped) kilnGroupStart();
  for (int r = r0; r < r1; r++) {
    kilnResult_t res = kilnSymRun(w->kc[r], a, c->sendp[r], c->recvp[r], c->count, c->dt, op, w->st[r]);
    cr_assert(eq(int, res, KILN_SUCCESS), "%s rank %d: %s", kilnSymAlgoName(a), r, kilnLastError());
  }
  if (grouped) cr_assert(eq(int, kilnGroupEnd(), KILN_SUCCESS), "%s", kilnLastError());
}
void sym_run_check_as(const world* w, call* c, kilnSymAlgo_t a, kilnRedOp_t op, bool inplace, uint64_t* rng,
                      bool grouped) {
  call_prepare(c, w, op, inplace, rng);
  sym_issue(w, c, a, op, 0, w->n, grouped);
  char msg[512];
  bool ok = call_check(c, w, msg, sizeof(msg));
  cr_assert(ok, "%s %s %s count %zu%s: %s (seed %llu)", kilnSymAlgoName(a), kilnDataTypeName(c->dt),
            kilnRedOpName(op), c->count, inplace ? " in place" : "", msg, (unsigned long long)g_seed);
  assert_no_async_error(w);
}
void sym_run_check(const world* w, call* c, kilnSymAlgo_t a, kilnRedOp_t op, bool inplace, uint64_t* rng) {
  sym_run_check_as(w, c, a, op, inplace, rng, false);
}
void sym_graph_check_call(const world* w, kilnSymAlgo_t a, call* cp, int calls, int replays, uint64_t* rng) {
  call c = *cp;
  cudaGraphExec_t ge[GPU_MAX];
  call_prepare(&c, w, KILN_SUM, false, rng);
  for (int r = 0; r < w->n; r++) {
    capture_begin(w, r);
    for (int i = 0; i < calls; i++) {
      kilnResult_t res = kilnSymRun(w->kc[r], a, c.sendp[r], c.recvp[r], c.count, c.dt, KILN_SUM, w->st[r]);
      cr_assert(eq(int, res, KILN_SUCCESS), "%s", kilnLastError());
    }
    capture_end(w, r, &ge[r]);
  }
  for (int it = 0; it < replays; it++) {
    call_prepare(&c, w, KILN_SUM, false, rng);
    replay_all(w, ge);
    char msg[512];
    cr_assert(call_check(&c, w, msg, sizeof msg), "%s count %zu replay %d: %s (seed %llu)",
              kilnSymAlgoName(a), c.count, it, msg, (unsigned long long)g_seed);
  }
  for (int r = 0; r < w->n; r++) cudaGraphExecDestroy(ge[r]);
}
void sym_graph_check(const world* w, kilnSymAlgo_t a, size_t count, int replays, uint64_t* rng) {
  call c;
  cr_assert(call_alloc(&c, w, sym_coll(a), count, KILN_INT32));
  sym_graph_check_call(w, a, &c, 1, replays, rng);
  call_free(&c, w);
}
void assert_times_sum(const world* w, void* const* buf, int64_t* const* vals, size_t count, int64_t mul,
                      const char* what) {
  int32_t* got = (int32_t*)malloc(count * sizeof(int32_t));
  cr_assert(got != NULL);
  for (int r = 0; r < w->n; r++) {
    cudaSetDevice(r);
    cr_assert(eq(int, cudaMemcpy(got, buf[r], count * sizeof(int32_t), cudaMemcpyDeviceToHost), cudaSuccess));
    size_t bad = count;
    int64_t want = 0;
    for (size_t i = 0; i < count && bad == count; i++) {
      int64_t sum = 0;
      for (int q = 0; q < w->n; q++) sum += vals[q][i];
      want = mul * sum;
      if ((int64_t)got[i] != want) bad = i;
    }
    cr_assert(bad == count, "%s, count %zu: rank %d element %zu is %d, not %lld (seed %llu)", what, count, r,
              bad, bad < count ? got[bad] : 0, (long long)want, (unsigned long long)g_seed);
  }
  free(got);
}
uint64_t peer_calls(const world* w) { return comm_view(w->kc[0]).symPeerCalls; }
void replay_check(const world* w, call* c, cudaGraphExec_t* ge, int times, const char* when, uint64_t* rng) {
  for (int it = 0; it < times; it++) {
    call_prepare(c, w, KILN_SUM, false, rng);
    replay_all(w, ge);
    char msg[512];
    cr_assert(call_check(c, w, msg, sizeof msg), "replay %d%s: %s (seed %llu)", it, when, msg,
              (unsigned long long)g_seed);
  }
}
