/*
 * GPU suite of the symmetric-memory kernels (kilnSymRun, kernels/sym.cuh): every algorithm, dtype
 * and op, in place and out of place, as flags and as LL, LL12 and LL128 lines, in rounds past the
 * staging, chained with programmatic dependent launch, direct (zero copy) into symmetric windows
 * and into a clique's plain buffers, against a CPU reference on fresh data (seed printed); and,
 * with no GPU needed (they run in CI), the host's choices: the algorithm and form of a call, the
 * calls that go direct, a kernel for every call the host can make, windows forgotten. A test that needs more GPUs than are visible skips; the binary prints "skipped: no GPU" and
 * exits 0 where there is none.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <dirent.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpu_common.h"
#include "params.h" /* kilnParamsReload: the library reads the environment once; tests that change it
                     * between their communicators read it again */
#include "../test_util.h"
#include "kiln/registry.h"
#include "launch.h" /* kilnSymGroupPeers over launches made by hand, the symmetric kernels' host choices */
#include "sym_ce.h"
#ifdef KILN_HAVE_SYNTH
#include "synth_plans.h"
#endif
static bool world_init_env(world* w, int n, const kilnCommConfig* cfg, const char* const* env) {
  return world_init_env_as(w, n, false, cfg, env);
}

/* The cases the symmetric-memory suites sweep, in order: every algorithm of kSymAlgos, out of place
 * then in place (not alltoall), every data type, every count of the caller's list:
 *   for (symCases it = SYM_CASES(counts); sym_cases_next(&it);) ... it.a, it.coll, it.inplace,
 *   it.dtype, it.count
 * it.last: the last case of its algorithm and placement (where a suite adds its own calls for
 * those). */
typedef struct symCases {
  const size_t* counts;
  size_t ncounts;
  size_t ai, ci;
  int inplace, dt;
  bool started, last;
  kilnSymAlgo_t a;
  kilnColl_t coll;
  kilnDataType_t dtype;
  size_t count;
} symCases;
#define SYM_CASES(list) ((symCases){.counts = (list), .ncounts = sizeof(list) / sizeof((list)[0])})

static bool sym_cases_next(symCases* it) {
  if (it->started && ++it->ci == it->ncounts) {
    it->ci = 0;
    if (++it->dt == ALL_DTYPES) {
      it->dt = 0;
      if (++it->inplace > (sym_coll(kSymAlgos[it->ai]) == KILN_COLL_ALLTOALL ? 0 : 1)) {
        it->inplace = 0;
        it->ai++;
      }
    }
  }
  it->started = true;
  if (it->ai >= sizeof(kSymAlgos) / sizeof(kSymAlgos[0])) return false;
  it->a = kSymAlgos[it->ai];
  it->coll = sym_coll(it->a);
  it->dtype = (kilnDataType_t)it->dt;
  it->count = it->counts[it->ci];
  it->last = it->ci + 1 == it->ncounts && it->dt + 1 == ALL_DTYPES;
  return true;
}

/* Every algorithm, every data type and op, in and out of place, at counts of one element, odd
 * counts (element tails, shares that start off 16 bytes, in-place allgather pieces off 16 bytes)
 * and counts that spread over many blocks (as LL lines up to 128 KiB per rank or two-shot share,
 * staged data with flags above); a few typed ops at larger counts. Calls follow each
 * other on the same staging halves, so the halves alternate and the flags grow across calls.
 * Then the same communicators run a plan between symmetric calls, and an in-place alltoall is
 * refused with an error (calls in rounds: sym_rounds, large_buffers). */
static void sym_sweep(int n, const char* const* env, bool shared) {
  world w;
  sweep_world(&w, n, shared, NULL, env);
  uint64_t rng = g_seed ^ 0x5157;
  /* 8191: LL lines over 16 blocks (4-byte types and up). */
  static const size_t small[] = {1, 3, 1003, 8191, 70001};
  static const typedOp big[] = {
      {KILN_FLOAT32, KILN_SUM}, {KILN_INT8, KILN_MAX}, {KILN_FLOAT16, KILN_AVG}, {KILN_BFLOAT16, KILN_SUM}};
  static const size_t bigCounts[] = {262147, 1048576};
  int ncalls = 0;
  for (symCases it = SYM_CASES(small); sym_cases_next(&it);) {
    call c;
    cr_assert(call_alloc(&c, &w, it.coll, it.count, it.dtype));
    const int nops = gpu_reduces(it.coll) ? KILN_NUM_REDOPS : 1;
    for (int op = 0; op < nops; op++, ncalls++)
      sym_run_check(&w, &c, it.a, (kilnRedOp_t)op, it.inplace, &rng);
    call_free(&c, &w);
    if (!it.last) continue;
    for (size_t ti = 0; ti < sizeof(big) / sizeof(big[0]); ti++)
      for (size_t ci = 0; ci < sizeof(bigCounts) / sizeof(bigCounts[0]); ci++) {
        cr_assert(call_alloc(&c, &w, it.coll, bigCounts[ci], big[ti].dt));
        if (kilnSymFits(w.kc[0], it.a, c.count, c.dt, it.inplace)) {
          sym_run_check(&w, &c, it.a, gpu_reduces(it.coll) ? big[ti].op : KILN_SUM, it.inplace, &rng);
          ncalls++;
        }
        call_free(&c, &w);
      }
  }
  /* A plan between symmetric calls on the same communicators. */
  loaded l;
  load(&l, &w, "ring", KILN_COLL_ALLREDUCE, 1, 2, KILN_PROTO_SIMPLE, false);
  call c;
  cr_assert(call_alloc(&c, &w, KILN_COLL_ALLREDUCE, 5003, KILN_INT32));
  for (int it = 0; it < 6; it++) {
    if (it % 3 == 2)
      run_check(&l, &w, &c, KILN_SUM, false, &rng);
    else
      sym_run_check(&w, &c, it % 3 ? KILN_SYM_ALLREDUCE_TWOSHOT : KILN_SYM_ALLREDUCE_ONESHOT, KILN_SUM, false,
                    &rng);
  }
  /* In-place alltoall is refused, naming the algorithm; nothing launched. */
  cr_assert(not(kilnSymFits(w.kc[0], KILN_SYM_ALLTOALL, 16, KILN_FLOAT32, true)));
  kilnResult_t r =
      kilnSymRun(w.kc[0], KILN_SYM_ALLTOALL, c.recvp[0], c.recvp[0], 16, KILN_FLOAT32, KILN_SUM, w.st[0]);
  cr_assert(eq(int, r, KILN_ERR_UNSUPPORTED));
  cr_assert(strstr(kilnLastError(), "sym-alltoall") != NULL, "%s", kilnLastError());
  call_free(&c, &w);
  unload(&l, &w);
  fprintf(stderr, "  %d ranks: %d symmetric-memory calls checked\n", n, ncalls);
  world_fini(&w);
}

/* The communicator's settings read again with name set to value, which is then unset again (the
 * library reads the environment once: kilnParamsReload). */
static void configure_with(kilnComm_t c, const char* name, const char* value) {
  setenv(name, value, 1);
  kilnParamsReload();
  kilnTestCommConfigure(c);
  unsetenv(name);
  kilnParamsReload();
}

Test(gpu_sym, sym_kernels_2gpus, .init = gpu_init, .timeout = 600) { sym_sweep(2, kNoEnv, false); }
Test(gpu_sym, sym_kernels_4gpus, .init = gpu_init, .timeout = 600) { sym_sweep(4, kNoEnv, false); }
Test(gpu_sym, sym_kernels_8gpus, .init = gpu_init, .timeout = 900) { sym_sweep(8, kNoEnv, false); }
/* The kernels' 8-rank code (sym.cuh's loops sized for any rank count, 8 regions per half) where
 * there are fewer GPUs. */
Test(gpu_sym, sym_kernels_8ranks_shared, .init = gpu_init_shared, .timeout = 900) {
  sym_sweep(8, kNoEnv, true);
}
/* The kernels' 2- and 4-rank code (sym.cuh's staged form has a kernel of its own for them, its
 * loops sized at compile time) where there are fewer GPUs than ranks. */
Test(gpu_sym, sym_kernels_2ranks_shared, .init = gpu_init_shared, .timeout = 600) {
  sym_sweep(2, kNoEnv, true);
}
Test(gpu_sym, sym_kernels_4ranks_shared, .init = gpu_init_shared, .timeout = 600) {
  sym_sweep(4, kNoEnv, true);
}

/* The same sweep with every segment and two-shot share past 1 byte as LL128 lines
 * (kernels/sym.cuh bodyLL128, bodyLL128x2; by default only mid sizes): partial lines and words of
 * every data type, shares whose last line reaches past them, a line or a few per block, every op,
 * in and out of place, back to back on alternating halves with the flag form of the largest
 * calls between them. */
static const char* const kAllLL128[] = {"KILN_SYM_LL128_BYTES",
                                        "1",
                                        "KILN_SYM_LL128_MAX_BYTES",
                                        "1073741824",
                                        "KILN_SYM_LL2_128_BYTES",
                                        "1",
                                        "KILN_SYM_LL2_128_MAX_BYTES",
                                        "1073741824",
                                        NULL};
Test(gpu_sym, sym_ll128_2gpus, .init = gpu_init, .timeout = 600) { sym_sweep(2, kAllLL128, false); }
Test(gpu_sym, sym_ll128_4gpus, .init = gpu_init, .timeout = 600) { sym_sweep(4, kAllLL128, false); }
Test(gpu_sym, sym_ll128_8gpus, .init = gpu_init, .timeout = 900) { sym_sweep(8, kAllLL128, false); }
Test(gpu_sym, sym_ll128_8ranks_shared, .init = gpu_init_shared, .timeout = 900) {
  sym_sweep(8, kAllLL128, true);
}

/* The same sweep with every one-shot segment that fits the LL lines' staging as LL12 lines
 * (kernels/sym.cuh bodyLL of form LL12; by default one-shot LL segments of elements of at most 4 bytes):
 * partial lines of 1-, 2- and 4-byte elements (12, 6 or 3 to a line), unaligned tails, blocks of
 * whole lines (the last ones short or empty), every op, in and out of place; 8-byte types and
 * two-shot shares as LL lines. */
static const char* const kAllLL12[] = {"KILN_SYM_LL_BYTES",
                                       "1073741824",
                                       "KILN_SYM_LL128_BYTES",
                                       "0",
                                       "KILN_SYM_LL2_128_BYTES",
                                       "0",
                                       "KILN_SYM_LL12_BYTES",
                                       "0",
                                       NULL};
Test(gpu_sym, sym_ll12_2gpus, .init = gpu_init, .timeout = 600) { sym_sweep(2, kAllLL12, false); }
Test(gpu_sym, sym_ll12_4gpus, .init = gpu_init, .timeout = 600) { sym_sweep(4, kAllLL12, false); }
Test(gpu_sym, sym_ll12_8gpus, .init = gpu_init, .timeout = 900) { sym_sweep(8, kAllLL12, false); }
Test(gpu_sym, sym_ll12_8ranks_shared, .init = gpu_init_shared, .timeout = 900) {
  sym_sweep(8, kAllLL12, true);
}

/* The flag form in rounds: 64 KiB of staging per GPU (32 KiB a half), 1 KiB per block and no LL
 * lines, so a call of a few thousand elements takes many rounds (odd and even numbers of them,
 * windows cut among several blocks, the last ranges empty). Every algorithm, data type and op, in
 * and out of place, calls back to back on the same halves; then each algorithm captured in a CUDA
 * graph (an odd number of rounds, so replays start on alternate halves) and replayed on fresh
 * data. */
static void sym_rounds_run(int n, bool shared) {
  kilnCommConfig cfg = KILN_COMM_CONFIG_INITIALIZER;
  cfg.symBytes = 64 << 10;
  static const char* const env[] = {
      "KILN_SYM_LL_BYTES", "0", "KILN_SYM_LL2_BYTES", "0", "KILN_SYM_BLOCK_BYTES", "1024", NULL};
  world w;
  sweep_world(&w, n, shared, &cfg, env);
  uint64_t rng = g_seed ^ 0x7011;
  static const size_t counts[] = {3, 5003, 70001};
  int ncalls = 0;
  for (symCases it = SYM_CASES(counts); sym_cases_next(&it);) {
    call c;
    cr_assert(call_alloc(&c, &w, it.coll, it.count, it.dtype));
    cr_assert(kilnSymFits(w.kc[0], it.a, c.count, c.dt, it.inplace));
    const int nops = gpu_reduces(it.coll) ? KILN_NUM_REDOPS : 1;
    for (int op = 0; op < nops; op++, ncalls++)
      sym_run_check(&w, &c, it.a, (kilnRedOp_t)op, it.inplace, &rng);
    call_free(&c, &w);
  }
  for (size_t ai = 0; ai < sizeof(kSymAlgos) / sizeof(kSymAlgos[0]); ai++)
    sym_graph_check(&w, kSymAlgos[ai], 9001, 8, &rng);
  fprintf(stderr, "  %d ranks: %d symmetric-memory calls in rounds checked\n", n, ncalls);
  world_fini(&w);
}
Test(gpu_sym, sym_rounds, .init = gpu_init, .timeout = 600) { sym_rounds_run(suite_gpus(), false); }
/* The same with 2, 4 and 8 ranks sharing fewer GPUs: the staged form's kernels for 2 and 4 ranks
 * and for any count. */
Test(gpu_sym, sym_rounds_2ranks_shared, .init = gpu_init_shared, .timeout = 600) { sym_rounds_run(2, true); }
Test(gpu_sym, sym_rounds_4ranks_shared, .init = gpu_init_shared, .timeout = 600) { sym_rounds_run(4, true); }
Test(gpu_sym, sym_rounds_8ranks_shared, .init = gpu_init_shared, .timeout = 600) { sym_rounds_run(8, true); }

/* Programmatic dependent launch (KILN_SYM_PDL): allreduces back to back, each on the one before's
 * output (sym_pdl_chain); and a kernel right before each symmetric call writes
 * its input and a kernel right after reads its output (kilnTestSymCopy copies the call's fresh
 * data in from a buffer filled beforehand, and the output out into that call's own buffer), four
 * calls back to back per stream with no synchronization between them, eagerly and captured in a
 * CUDA graph per rank (replayed on fresh data); every algorithm, as LL lines and with flags; with
 * the launches overlapped (the default) and without (KILN_SYM_PDL=0). Each call's output, as the
 * kernel after it copied it, against the CPU. */
static void sym_pdl_calls(const world* w, kilnSymAlgo_t a, size_t count, bool graph, uint64_t* rng) {
  enum { K = 4 };
  const kilnColl_t coll = sym_coll(a);
  call c[K];
  for (int k = 0; k < K; k++) cr_assert(call_alloc(&c[k], w, coll, count, KILN_INT32));
  const size_t inBytes = c[0].inElems * 4, outBytes = c[0].outElems * 4;
  void* in[GPU_MAX];
  void* out[GPU_MAX];
  for (int r = 0; r < w->n; r++) {
    cudaSetDevice(r);
    cr_assert(eq(int, cudaMalloc(&in[r], inBytes), cudaSuccess));
    cr_assert(eq(int, cudaMalloc(&out[r], outBytes), cudaSuccess));
  }
  cudaGraphExec_t ge[GPU_MAX];
  const int passes = graph ? 3 : 1;
  for (int pass = 0; pass < passes; pass++) {
    for (int k = 0; k < K; k++) call_prepare(&c[k], w, KILN_SUM, false, rng);
    if (!graph || pass == 0) {
      for (int r = 0; r < w->n; r++) {
        if (graph)
          capture_begin(w, r);
        else
          cudaSetDevice(r);
        for (int k = 0; k < K; k++) {
          cr_assert(eq(int, kilnTestSymCopy(in[r], c[k].sendp[r], inBytes, 4, w->st[r]), cudaSuccess));
          kilnResult_t res = kilnSymRun(w->kc[r], a, in[r], out[r], count, KILN_INT32, KILN_SUM, w->st[r]);
          cr_assert(eq(int, res, KILN_SUCCESS), "%s", kilnLastError());
          cr_assert(eq(int, kilnTestSymCopy(c[k].recvp[r], out[r], outBytes, 4, w->st[r]), cudaSuccess));
        }
        if (graph) capture_end(w, r, &ge[r]);
      }
    }
    if (graph) replay_all(w, ge);
    for (int k = 0; k < K; k++) {
      char msg[512];
      cr_assert(call_check(&c[k], w, msg, sizeof msg),
                "%s count %zu%s pass %d, call %d of %d: %s (seed %llu)", kilnSymAlgoName(a), count,
                graph ? " (graph)" : "", pass, k, K, msg, (unsigned long long)g_seed);
    }
  }
  assert_no_async_error(w);
  for (int r = 0; r < w->n; r++) {
    if (graph) cudaGraphExecDestroy(ge[r]);
    cudaFree(in[r]);
    cudaFree(out[r]);
  }
  for (int k = 0; k < K; k++) call_free(&c[k], w);
}

/* K in-place allreduces back to back with nothing between them, each reading the output of the one
 * before (so a kernel that started before the one before it ended would read a stale input and
 * sequence number), eagerly or captured in a graph per rank and replayed once: every rank's result
 * is n^(K-1) times the sum of the inputs. */
static void sym_pdl_chain(const world* w, kilnSymAlgo_t a, size_t count, bool graph, uint64_t* rng) {
  enum { K = 4 };
  call c;
  cr_assert(call_alloc(&c, w, KILN_COLL_ALLREDUCE, count, KILN_INT32));
  call_prepare(&c, w, KILN_SUM, true, rng);
  cudaGraphExec_t ge[GPU_MAX];
  for (int r = 0; r < w->n; r++) {
    if (graph)
      capture_begin(w, r);
    else
      cudaSetDevice(r);
    for (int k = 0; k < K; k++) {
      kilnResult_t res =
          kilnSymRun(w->kc[r], a, c.sendp[r], c.recvp[r], count, KILN_INT32, KILN_SUM, w->st[r]);
      cr_assert(eq(int, res, KILN_SUCCESS), "%s", kilnLastError());
    }
    if (graph) capture_end(w, r, &ge[r]);
  }
  if (graph) replay_all(w, ge);
  for (int r = 0; r < w->n; r++) {
    cudaSetDevice(r);
    cr_assert(eq(int, cudaStreamSynchronize(w->st[r]), cudaSuccess));
    if (graph) cudaGraphExecDestroy(ge[r]);
  }
  int64_t mul = 1;
  for (int k = 1; k < K; k++) mul *= w->n;
  char what[96];
  snprintf(what, sizeof what, "%s%s", kilnSymAlgoName(a), graph ? " (graph)" : "");
  assert_times_sum(w, c.recvp, c.vals, count, mul, what);
  assert_no_async_error(w);
  call_free(&c, w);
}

Test(gpu_sym, sym_pdl, .init = gpu_init, .timeout = 600) {
  const int n = suite_gpus();
  uint64_t rng = g_seed ^ 0x9d1;
  for (int pdl = 1; pdl >= 0; pdl--) {
    kilnCommConfig cfg = KILN_COMM_CONFIG_INITIALIZER;
    cfg.symBytes = 1 << 20; /* 70004 elements in rounds */
    static const char* const off[] = {"KILN_SYM_PDL", "0", NULL};
    static const char* const on[] = {"KILN_SYM_PDL", "1", NULL};
    world w;
    cr_assert(world_init_env(&w, n, &cfg, pdl ? on : off));
    for (int r = 0; r < n; r++) cr_assert(eq(int, comm_view(w.kc[r]).symPdl, pdl), "rank %d", r);
    /* Multiples of 4 elements: the copy kernel moves whole 16-byte packs. 1004: LL lines; 70004:
     * flags, in rounds of the 512 KiB halves. */
    static const size_t counts[] = {1004, 70004};
    for (size_t ai = 0; ai < sizeof(kSymAlgos) / sizeof(kSymAlgos[0]); ai++)
      for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++)
        for (int graph = 0; graph <= 1; graph++) {
          sym_pdl_calls(&w, kSymAlgos[ai], counts[ci], graph, &rng);
          if (sym_coll(kSymAlgos[ai]) == KILN_COLL_ALLREDUCE)
            sym_pdl_chain(&w, kSymAlgos[ai], counts[ci], graph, &rng);
        }
    world_fini(&w);
  }
}

/* Zero copy: outputs in symmetric windows the caller registered (ncclMemAlloc +
 * ncclCommWindowRegister(NCCL_WIN_COLL_SYMMETRIC)) and added (kilnCommWindowAdd) go direct:
 * allgather and alltoall store into the peers' outputs (kernels/sym.cuh bodyDirect), allreduce
 * (two-shot, in rounds through 1 MiB of staging) stores its reduced shares there; reducescatter
 * stays staged. KILN_SYM_DIRECT_BYTES=0 and no LL two-shot, so every size goes direct: every
 * algorithm, data type and op, in and out of place, at counts from one element to many blocks and
 * rounds, each call asserted direct or not (kilnSymIsDirect) and checked; staged calls (plain
 * buffers) between direct ones on the same communicators; each algorithm captured in a CUDA graph
 * and replayed on fresh data; what is not direct (a buffer outside the windows) and
 * kilnCommWindowAdd/Remove's refusals. */
/* ce: allgather and alltoall in the copy-engine form at every size (KILN_SYM_CE_BYTES=0), else
 * never (KILN_SYM_CE=0): each form meets the other's data layout and the staged calls between. */
static void sym_direct_run(bool ce) {
  const int n = suite_gpus();
  if (g_ngpus < n) cr_skip_test("skipped: %d GPUs needed, %d visible", n, g_ngpus);
  const char* const env[] = {"KILN_SYM_DIRECT_BYTES",
                             "0",
                             "KILN_SYM_LL2_BYTES",
                             "0",
                             ce ? "KILN_SYM_CE_BYTES" : "KILN_SYM_CE",
                             "0",
                             ce ? "KILN_SYM_AR_CE_BYTES" : "KILN_SYM_AR_CE",
                             "0",
                             NULL};
  /* The launcher threads stay awake between this test's groups (read once per process: Criterion
   * runs each test in a process of its own), so grouped calls are issued by a thread per GPU. */
  setenv("KILN_GROUP_SPIN_US", "1000000", 1);
  kilnParamsReload();
  kilnCommConfig cfg = KILN_COMM_CONFIG_INITIALIZER;
  cfg.symBytes = 1 << 20;
  world w;
  cr_assert(world_init_env(&w, n, &cfg, env));
  /* The form every direct allgather and alltoall takes (allreduce: reduce-then-copy where its
   * shares are equal and whole packs). */
  const int copyForm = ce ? KILN_SYM_DIRECT_ARRIVE : KILN_SYM_DIRECT_SM;
  const size_t poolBytes = 64u << 20, half = poolBytes / 2;
  char* pool[GPU_MAX];
  ncclWindow_t win[GPU_MAX];
  window_pools(&w, poolBytes, pool, win);
  for (int r = 0; r < n; r++) cr_assert(eq(int, kilnCommWindowCount(w.kc[r]), 1));
  /* Refusals: NULLs, the same window twice, removing what was not added. */
  cr_assert(eq(int, kilnCommWindowAdd(w.kc[0], NULL, pool[0], poolBytes), KILN_ERR_INVALID_ARGUMENT));
  cr_assert(eq(int, kilnCommWindowAdd(w.kc[0], win[0], pool[0], poolBytes), KILN_ERR_INVALID_ARGUMENT));
  cr_assert(strstr(kilnLastError(), "already added") != NULL, "%s", kilnLastError());
  cr_assert(eq(int, kilnCommWindowRemove(w.kc[0], (ncclWindow_t)pool[0]), KILN_ERR_INVALID_ARGUMENT));
  /* A second window inside the first (PyTorch registers one per tensor of a segment): accepted;
   * the calls below whose buffers lie in both run through the newer (kilnUserWindowPeers). */
  ncclWindow_t inner[GPU_MAX];
  ncclGroupStart();
  for (int r = 0; r < n; r++) {
    cudaSetDevice(r);
    cr_assert(eq(
        int, ncclCommWindowRegister(w.nccl[r], pool[r] + half, half / 2, &inner[r], NCCL_WIN_COLL_SYMMETRIC),
        ncclSuccess));
  }
  cr_assert(eq(int, ncclGroupEnd(), ncclSuccess));
  for (int r = 0; r < n; r++) {
    cr_assert(eq(int, kilnCommWindowAdd(w.kc[r], inner[r], pool[r] + half, half / 2), KILN_SUCCESS), "%s",
              kilnLastError());
    cr_assert(eq(int, kilnCommWindowCount(w.kc[r]), 2));
  }

  uint64_t rng = g_seed ^ 0xd1ec7;
  char* sendAt[GPU_MAX];
  char* recvAt[GPU_MAX];
  for (int r = 0; r < n; r++) sendAt[r] = pool[r], recvAt[r] = pool[r] + half;
  /* 4096: pieces of whole 16-byte packs for every type (the copy-engine form's local copy by
   * kernel; the others copy it with the engine). */
  static const size_t counts[] = {1, 3, 1003, 4096, 70001};
  static const typedOp big[] = {{KILN_FLOAT32, KILN_SUM}, {KILN_BFLOAT16, KILN_SUM}, {KILN_INT8, KILN_MAX}};
  int ncalls = 0;
  call plain;
  cr_assert(call_alloc(&plain, &w, KILN_COLL_ALLREDUCE, 5003, KILN_INT32));
  for (symCases it = SYM_CASES(counts); sym_cases_next(&it);) {
    const kilnSymAlgo_t a = it.a;
    call c;
    cr_assert(call_alloc_at(&c, &w, it.coll, it.count, it.dtype, sendAt, recvAt));
    const int nops = gpu_reduces(it.coll) ? KILN_NUM_REDOPS : 1;
    for (int op = 0; op < nops; op++, ncalls++) {
      sym_run_check(&w, &c, a, (kilnRedOp_t)op, it.inplace, &rng); /* sets c's pointers */
      const bool even = c.count % n == 0 && c.count / n * kilnDataTypeSize(c.dt) % 16 == 0;
      const int form = a == KILN_SYM_REDUCESCATTER ? 0
                       : it.coll == KILN_COLL_ALLREDUCE
                           ? (ce && even ? KILN_SYM_DIRECT_REDUCE_CE : KILN_SYM_DIRECT_SM)
                           : copyForm;
      cr_assert(eq(int, kilnSymDirectForm(w.kc[0], a, c.sendp[0], c.recvp[0], c.count, c.dt), form),
                "%s %s count %zu%s: direct or not, and which form", kilnSymAlgoName(a),
                kilnDataTypeName(c.dt), c.count, it.inplace ? " in place" : "");
    }
    call_free(&c, &w);
    if (!it.last) continue;
    /* Large pieces: of whole 16-byte packs (2 MiB and more: the local copy's unrolled loop) and
     * not; an alltoall's input (n pieces) fits half the pool. */
    const size_t bigCount = n <= 2 ? 1u << 21 : 1u << 20;
    for (size_t ti = 0; ti < sizeof(big) / sizeof(big[0]); ti++)
      for (size_t extra = 0; extra <= 5; extra += 5) {
        cr_assert(call_alloc_at(&c, &w, it.coll, bigCount + extra, big[ti].dt, sendAt, recvAt));
        sym_run_check(&w, &c, a, gpu_reduces(it.coll) ? big[ti].op : KILN_SUM, it.inplace, &rng);
        call_free(&c, &w);
        ncalls++;
      }
    /* A staged call in between: the flags and the staging halves stay consistent. */
    cr_assert(not(kilnSymIsDirect(w.kc[0], KILN_SYM_ALLREDUCE_TWOSHOT, plain.dsend[0], plain.drecv[0],
                                  plain.count, plain.dt)));
    sym_run_check(&w, &plain, it.ai % 2 ? KILN_SYM_ALLREDUCE_TWOSHOT : KILN_SYM_ALLREDUCE_ONESHOT, KILN_SUM,
                  false, &rng);
  }
  for (size_t ai = 0; ai < sizeof(kSymAlgos) / sizeof(kSymAlgos[0]); ai++)
    for (size_t count = 8192; count <= 9001; count += 809) { /* whole packs and not */
      call c;
      cr_assert(call_alloc_at(&c, &w, sym_coll(kSymAlgos[ai]), count, KILN_INT32, sendAt, recvAt));
      sym_graph_check_call(&w, kSymAlgos[ai], &c, 1, 6, &rng);
      /* Grouped: the GPUs' launches issued at once, from a thread each. */
      for (int k = 0; k < 4; k++, ncalls++)
        sym_run_check_as(&w, &c, kSymAlgos[ai], KILN_SUM, false, &rng, true);
      call_free(&c, &w);
    }
  /* Only the output counts: in a window, direct; outside, not. */
  cr_assert(
      kilnSymIsDirect(w.kc[0], KILN_SYM_ALLREDUCE_TWOSHOT, plain.dsend[0], recvAt[0], 64, KILN_FLOAT32));
  cr_assert(
      not(kilnSymIsDirect(w.kc[0], KILN_SYM_ALLREDUCE_TWOSHOT, sendAt[0], plain.drecv[0], 64, KILN_FLOAT32)));
  cr_assert(kilnSymIsDirect(w.kc[0], KILN_SYM_ALLGATHER, plain.dsend[0], recvAt[0], 64, KILN_FLOAT32));
  cr_assert(not(kilnSymIsDirect(w.kc[0], KILN_SYM_ALLGATHER, recvAt[0], plain.drecv[0], 64, KILN_FLOAT32)));
  /* Past the window's end: not direct. */
  cr_assert(not(kilnSymIsDirect(w.kc[0], KILN_SYM_ALLREDUCE_TWOSHOT, sendAt[0], recvAt[0], half / 4 + 1,
                                KILN_FLOAT32)));
  call_free(&plain, &w);
  /* With the outer window gone, the inner one still serves what it holds. */
  for (int r = 0; r < n; r++) {
    cr_assert(eq(int, kilnCommWindowRemove(w.kc[r], win[r]), KILN_SUCCESS));
    cr_assert(eq(int, kilnCommWindowCount(w.kc[r]), 1));
  }
  cr_assert(kilnSymIsDirect(w.kc[0], KILN_SYM_ALLGATHER, sendAt[0], recvAt[0], 64, KILN_FLOAT32));
  cr_assert(not(kilnSymIsDirect(w.kc[0], KILN_SYM_ALLGATHER, recvAt[0], sendAt[0], 64, KILN_FLOAT32)));
  {
    call c;
    cr_assert(call_alloc_at(&c, &w, KILN_COLL_ALLGATHER, 70001, KILN_FLOAT32, sendAt, recvAt));
    sym_run_check(&w, &c, KILN_SYM_ALLGATHER, KILN_SUM, false, &rng);
    call_free(&c, &w);
  }
  for (int r = 0; r < n; r++) {
    cr_assert(eq(int, kilnCommWindowRemove(w.kc[r], inner[r]), KILN_SUCCESS));
    cr_assert(eq(int, kilnCommWindowCount(w.kc[r]), 0));
  }
  cr_assert(not(kilnSymIsDirect(w.kc[0], KILN_SYM_ALLGATHER, sendAt[0], recvAt[0], 64, KILN_FLOAT32)));
  ncclGroupStart();
  for (int r = 0; r < n; r++) {
    cudaSetDevice(r);
    ncclCommWindowDeregister(w.nccl[r], inner[r]);
    ncclCommWindowDeregister(w.nccl[r], win[r]);
  }
  ncclGroupEnd();
  for (int r = 0; r < n; r++) {
    cudaSetDevice(r);
    ncclMemFree(pool[r]);
  }
  fprintf(stderr, "  %d GPUs: %d direct (zero-copy) calls checked, copies by %s\n", n, ncalls,
          ce ? "the copy engine" : "SM stores");
  world_fini(&w);
}

Test(gpu_sym, sym_direct, .init = gpu_init, .timeout = 600) { sym_direct_run(false); }

Test(gpu_sym, sym_direct_copy_engine, .init = gpu_init, .timeout = 600) { sym_direct_run(true); }

/* Whether a grouped call of every rank goes direct into the peers' plain buffers with the
 * settings of sym_group_peers (KILN_SYM_DIRECT_BYTES=4096). */
static bool group_direct(const world* w, kilnSymAlgo_t a, size_t count, kilnDataType_t dt, bool inplace) {
  const kilnColl_t coll = sym_coll(a);
  return a != KILN_SYM_REDUCESCATTER && !(coll == KILN_COLL_ALLTOALL && inplace) &&
         kilnRegistryCallBytes(coll, w->n, count, dt) >= 4096;
}

/* The form a grouped call that goes direct takes with sym_group_peers' settings: allreduce as
 * reduce-then-copy from 16 KiB where its shares are equal and whole 16-byte packs, else two-shot
 * with SM stores; allgather and alltoall with the copy engine from 1 MiB. */
static int group_form(const world* w, kilnSymAlgo_t a, size_t count, kilnDataType_t dt) {
  const kilnColl_t coll = sym_coll(a);
  const size_t es = kilnDataTypeSize(dt);
  const uint64_t ref = kilnRegistryCallBytes(coll, w->n, count, dt);
  if (coll == KILN_COLL_ALLREDUCE)
    return ref >= 16384 && count % w->n == 0 && count / w->n * es % 16 == 0 ? KILN_SYM_DIRECT_REDUCE_CE
                                                                            : KILN_SYM_DIRECT_SM;
  return ref >= 1048576 ? KILN_SYM_DIRECT_ARRIVE : KILN_SYM_DIRECT_SM;
}

/* One process driving every GPU, plain cudaMalloc buffers: a group holding a call of every rank
 * goes direct into the peers' outputs (kilnCommCreateAll's clique, peer access; KILN_SYM_DIRECT_BYTES
 * set low so that small calls do too, the copy-engine form from 1 MiB, allreduce as
 * reduce-then-copy from 16 KiB): every algorithm, type and
 * op, in place and not, each checked against the CPU and counted (symPeerCalls grows by one per
 * call that goes direct, none for the others). Then what must stay staged, and still be right:
 * calls outside a group, a group holding only some ranks, outputs in stream-ordered pools the
 * peers have no access to; and grouped calls captured in CUDA graphs and replayed. */
Test(gpu_sym, sym_group_peers, .init = gpu_init, .timeout = 600) {
  const int n = suite_gpus();
  if (g_ngpus < n) cr_skip_test("skipped: %d GPUs needed, %d visible", n, g_ngpus);
  /* Two-shot shares as lines never go direct (KILN_SYM_LL2_BYTES=0). */
  static const char* const env[] = {"KILN_SYM_DIRECT_BYTES",
                                    "4096",
                                    "KILN_SYM_CE_BYTES",
                                    "1048576",
                                    "KILN_SYM_LL2_BYTES",
                                    "0",
                                    "KILN_SYM_AR_CE_BYTES",
                                    "16384",
                                    NULL};
  kilnCommConfig cfg = KILN_COMM_CONFIG_INITIALIZER;
  cfg.symBytes = 1 << 20;
  world w;
  cr_assert(world_init_env(&w, n, &cfg, env));
  for (int r = 0; r < n; r++) cr_assert(comm_view(w.kc[r]).inClique, "rank %d: no clique", r);
  uint64_t rng = g_seed ^ 0x9ee75;
  /* 1: too small to go direct; 70001 float: 1.1 MiB of reference bytes on 4 GPUs, the
   * copy-engine form for allgather and alltoall; 24576: allreduce as reduce-then-copy (equal
   * shares of whole packs, from 16 KiB here). */
  static const size_t counts[] = {1, 1003, 24576, 70001};
  int ndirect = 0, nstaged = 0;
  for (symCases it = SYM_CASES(counts); sym_cases_next(&it);) {
    const kilnSymAlgo_t a = it.a;
    call c;
    cr_assert(call_alloc(&c, &w, it.coll, it.count, it.dtype));
    const int nops = gpu_reduces(it.coll) ? KILN_NUM_REDOPS : 1;
    const bool d = group_direct(&w, a, c.count, c.dt, it.inplace);
    for (int op = 0; op < nops; op++) {
      const uint64_t before = peer_calls(&w);
      sym_run_check_as(&w, &c, a, (kilnRedOp_t)op, it.inplace, &rng, true);
      cr_assert(eq(u64, peer_calls(&w) - before, d ? 1 : 0), "%s %s count %zu%s: direct or not",
                kilnSymAlgoName(a), kilnDataTypeName(c.dt), c.count, it.inplace ? " in place" : "");
      if (d)
        cr_assert(eq(int, comm_view(w.kc[0]).symPeerForm, group_form(&w, a, c.count, c.dt)),
                  "%s %s count %zu: form", kilnSymAlgoName(a), kilnDataTypeName(c.dt), c.count);
      d ? ndirect++ : nstaged++;
    }
    call_free(&c, &w);
  }
  for (size_t ai = 0; ai < sizeof(kSymAlgos) / sizeof(kSymAlgos[0]); ai++) {
    const kilnSymAlgo_t a = kSymAlgos[ai];
    call c;
    cr_assert(call_alloc(&c, &w, sym_coll(a), 70001, KILN_FLOAT32));
    const uint64_t before = peer_calls(&w);
    /* Outside a group; then two groups of half the ranks each. */
    sym_run_check(&w, &c, a, KILN_SUM, false, &rng);
    call_prepare(&c, &w, KILN_SUM, false, &rng);
    sym_issue(&w, &c, a, KILN_SUM, 0, n / 2, true);
    sym_issue(&w, &c, a, KILN_SUM, n / 2, n, true);
    char msg[512];
    cr_assert(call_check(&c, &w, msg, sizeof msg), "%s in two groups: %s (seed %llu)", kilnSymAlgoName(a),
              msg, (unsigned long long)g_seed);
    cr_assert(eq(u64, peer_calls(&w), before));
    /* Captured grouped, replayed on fresh data. Every stream is synchronized before the first
     * capture begins (capture_begin's synchronize during this thread's thread-local capture of
     * another stream would end that capture, as would instantiating a graph). */
    cudaGraphExec_t ge[GPU_MAX];
    call_prepare(&c, &w, KILN_SUM, false, &rng);
    capture_begin_all(&w);
    sym_issue(&w, &c, a, KILN_SUM, 0, n, true);
    capture_end_all(&w, ge); /* likewise */
    cr_assert(eq(u64, peer_calls(&w) - before, a == KILN_SYM_REDUCESCATTER ? 0 : 1));
    for (int it = 0; it < 4; it++) {
      call_prepare(&c, &w, KILN_SUM, false, &rng);
      replay_all(&w, ge);
      cr_assert(call_check(&c, &w, msg, sizeof msg), "%s graph replay %d: %s (seed %llu)", kilnSymAlgoName(a),
                it, msg, (unsigned long long)g_seed);
    }
    for (int r = 0; r < n; r++) cudaGraphExecDestroy(ge[r]);
    call_free(&c, &w);
  }
  /* Outputs in each GPU's default stream-ordered pool: the peers have no access to it. */
  {
    const size_t count = 70001;
    char* sendAt[GPU_MAX];
    char* recvAt[GPU_MAX];
    for (int r = 0; r < n; r++) {
      cudaSetDevice(r);
      cr_assert(eq(int, cudaMalloc((void**)&sendAt[r], count * 4 * n), cudaSuccess));
      cr_assert(eq(int, cudaMallocAsync((void**)&recvAt[r], count * 4 * n, w.st[r]), cudaSuccess));
      cr_assert(eq(int, cudaStreamSynchronize(w.st[r]), cudaSuccess));
    }
    for (size_t ai = 0; ai < sizeof(kSymAlgos) / sizeof(kSymAlgos[0]); ai++) {
      call c;
      cr_assert(call_alloc_at(&c, &w, sym_coll(kSymAlgos[ai]), count, KILN_FLOAT32, sendAt, recvAt));
      const uint64_t before = peer_calls(&w);
      sym_run_check_as(&w, &c, kSymAlgos[ai], KILN_SUM, false, &rng, true);
      cr_assert(eq(u64, peer_calls(&w), before), "%s into pool memory went direct",
                kilnSymAlgoName(kSymAlgos[ai]));
      call_free(&c, &w);
    }
    for (int r = 0; r < n; r++) {
      cudaSetDevice(r);
      cudaFreeAsync(recvAt[r], w.st[r]);
      cudaStreamSynchronize(w.st[r]);
      cudaFree(sendAt[r]);
    }
  }
  fprintf(stderr, "  %d GPUs: %d grouped calls direct into the peers' buffers, %d staged, checked\n", n,
          ndirect, nstaged);
  world_fini(&w);
}

/* kilnSymGroupPeers on the host (no GPU needed: runs in CI): communicators of a clique made by
 * hand, launches as kilnSymRun queues them (staged candidates), an access check that says yes
 * except where told. Direct only where the group holds the k-th call of every rank, all alike and
 * reachable: then every one of them, with each rank's output as its peers' target. */
static int g_noAccessDev = -1;
/* What fake_access was asked, in order. */
typedef struct {
  int devs[8], ndevs;
  const void* p;
  size_t bytes;
} accessAsk;
static accessAsk g_asks[64];
static int g_nasks;
static bool fake_access(const int* devs, int ndevs, const void* p, size_t bytes) {
  if (g_nasks < 64) {
    accessAsk* a = &g_asks[g_nasks++];
    memcpy(a->devs, devs, (size_t)ndevs * sizeof(int));
    a->ndevs = ndevs;
    a->p = p;
    a->bytes = bytes;
  }
  for (int i = 0; i < ndevs; i++)
    if (devs[i] == g_noAccessDev) return false;
  return true;
}

/* Whether the asks include rank q's output (out, bytes) for the GPUs of every other rank (rank r on
 * GPU r) and not q's. */
static bool asked_for(int n, int q, const void* out, size_t bytes) {
  for (int k = 0; k < g_nasks; k++) {
    const accessAsk* a = &g_asks[k];
    if (a->p != out || a->bytes != bytes || a->ndevs != n - 1) continue;
    bool right = true;
    for (int i = 0; i < a->ndevs; i++) right = right && a->devs[i] != q && a->devs[i] >= 0 && a->devs[i] < n;
    for (int r = 0; r < n && right; r++) {
      bool there = r == q;
      for (int i = 0; i < a->ndevs; i++) there = there || a->devs[i] == r;
      right = there;
    }
    if (right) return true;
  }
  return false;
}

static kilnLaunch fake_launch(kilnComm_t c, kilnSymAlgo_t a, size_t count) {
  kilnLaunch l;
  memset(&l, 0, sizeof l);
  l.comm = c;
  l.sym = true;
  l.peerCand = true;
  l.symAlgo = (int)a;
  l.dtype = KILN_FLOAT32;
  l.symArgs.algo = (int)a;
  l.symArgs.count = count;
  l.symArgs.in = (const char*)(uintptr_t)(0x100000000ull * (kilnCommRank(c) + 1));
  l.symArgs.out = (char*)(uintptr_t)(0x100000000ull * (kilnCommRank(c) + 1) + 0x40000000ull);
  l.symArgs.rounds = 7; /* staged geometry, replaced where it goes direct */
  return l;
}

Test(gpu_sym, sym_group_peers_choice) {
  enum { N = 4 };
  kilnComm_t cs[N];
  unsetenv("KILN_SYM_DIRECT");
  unsetenv("KILN_SYM_DIRECT_BYTES");
  unsetenv("KILN_SYM_DIRECT_A2A_BYTES");
  unsetenv("KILN_SYM_CE");
  unsetenv("KILN_SYM_CE_BYTES");
  unsetenv("KILN_SYM_AR_CE");
  unsetenv("KILN_SYM_AR_CE_BYTES");
  kilnParamsReload();
  static char* wins[N]; /* each rank's window as every rank maps it (never dereferenced) */
  for (int r = 0; r < N; r++) wins[r] = (char*)(uintptr_t)(0x7000000000ull + 0x100000000ull * (uint64_t)r);
  cr_assert(eq(int, kilnTestCliqueHost(N, wins, 1 << 20, (size_t)64 << 20, cs), KILN_SUCCESS));
  /* Direct calls counted per rank before the current step (the steps below check their own). */
  uint64_t skipped[N] = {0};
  const size_t mib = (size_t)1 << 18; /* 1 MiB of float */
  kilnLaunch v[2 * N];
  /* Two calls per rank, queued rank by rank: an allgather of 1 MiB pieces (4 MiB of reference
   * bytes: SM stores) and an allreduce of 16 MiB (two-shot). Every rank's output is asked about
   * for the other ranks' GPUs. */
  for (int r = 0; r < N; r++) {
    v[2 * r] = fake_launch(cs[r], KILN_SYM_ALLGATHER, mib);
    v[2 * r + 1] = fake_launch(cs[r], KILN_SYM_ALLREDUCE_ONESHOT, 16 * mib);
  }
  g_nasks = 0;
  kilnSymGroupPeers(v, 2 * N, fake_access);
  cr_assert(eq(int, g_nasks, 2 * N));
  for (int q = 0; q < N; q++) {
    cr_assert(asked_for(N, q, v[2 * q].symArgs.out, (size_t)mib * 4 * N), "allgather output of rank %d", q);
    cr_assert(asked_for(N, q, v[2 * q + 1].symArgs.out, (size_t)16 * mib * 4), "allreduce output of rank %d",
              q);
  }
  for (int r = 0; r < N; r++) {
    const kilnSymArgs* ag = &v[2 * r].symArgs;
    const kilnSymArgs* ar = &v[2 * r + 1].symArgs;
    cr_assert(eq(int, ag->direct, KILN_SYM_DIRECT_SM));
    cr_assert(eq(int, ag->rounds, 1));
    cr_assert(eq(int, ar->direct, KILN_SYM_DIRECT_SM));
    cr_assert(eq(int, ar->algo, KILN_SYM_AR_TWOSHOT));
    cr_assert(ar->nblocks > 0);
    /* Two-shot with flags: the flag form's staging, whatever the call had before. */
    cr_assert(eq(int, ar->ll, 0));
    cr_assert(eq(u64, ar->halfBytes, comm_view(cs[r]).symHalf));
    for (int q = 0; q < N; q++)
      cr_assert(eq(ptr, (void*)ar->stage[q], (void*)(wins[q] + comm_view(cs[r]).symStageBase)));
    for (int q = 0; q < N; q++) {
      cr_assert(eq(ptr, ag->peerOut[q], v[2 * q].symArgs.out));
      cr_assert(eq(ptr, ar->peerOut[q], v[2 * q + 1].symArgs.out));
    }
    cr_assert(not(v[2 * r].peerCand));
    cr_assert(eq(u64, comm_view(cs[r]).symPeerCalls - skipped[r], 2));
  }
  /* The same calls queued call by call, and 64 calls per rank (the scratch grows): each pairs with
   * the calls of the same ordinal on the other ranks. (Two-shot allreduce of 4 MiB and more: 1
   * MiB shares; smaller ones go as LL128 lines, staged.) */
  enum { M = 64 };
  static kilnLaunch w[M * N];
  for (int j = 0; j < M; j++)
    for (int r = 0; r < N; r++)
      w[j * N + r] = fake_launch(cs[r], j % 2 ? KILN_SYM_ALLREDUCE_TWOSHOT : KILN_SYM_ALLGATHER,
                                 (j % 2 ? 4 * mib : mib) + 4 * (size_t)j);
  kilnSymGroupPeers(w, M * N, fake_access);
  for (int j = 0; j < M; j++)
    for (int r = 0; r < N; r++) {
      const kilnSymArgs* a = &w[j * N + r].symArgs;
      cr_assert(eq(int, a->direct, KILN_SYM_DIRECT_SM), "call %d rank %d", j, r);
      for (int q = 0; q < N; q++) cr_assert(eq(ptr, a->peerOut[q], w[j * N + q].symArgs.out));
    }
  for (int r = 0; r < N; r++) skipped[r] += M;
  /* 128 MiB of reference bytes: the copy engine for allgather and alltoall; reducescatter is
   * never a candidate (kilnSymRun), and a lone one is left alone. */
  for (int r = 0; r < N; r++)
    v[r] = fake_launch(cs[r], r == 2 ? KILN_SYM_ALLGATHER : KILN_SYM_ALLTOALL, 32 * mib);
  v[N] = fake_launch(cs[0], KILN_SYM_REDUCESCATTER, mib);
  v[N].peerCand = false;
  kilnSymGroupPeers(v, N + 1, fake_access);
  for (int r = 0; r < N; r++) cr_assert(eq(int, v[r].symArgs.direct, 0), "algorithms differ: none direct");
  for (int r = 0; r < N; r++) v[r] = fake_launch(cs[r], KILN_SYM_ALLTOALL, 32 * mib);
  kilnSymGroupPeers(v, N, fake_access);
  for (int r = 0; r < N; r++) cr_assert(eq(int, v[r].symArgs.direct, KILN_SYM_DIRECT_ARRIVE));
  /* 512 MiB of allreduce (equal shares of whole packs): reduce-then-copy, a reducescatter of the
   * shares; one more element: two-shot. */
  for (int r = 0; r < N; r++) v[r] = fake_launch(cs[r], KILN_SYM_ALLREDUCE_TWOSHOT, 512 * mib);
  for (int r = 0; r < N; r++) v[N + r] = fake_launch(cs[r], KILN_SYM_ALLREDUCE_TWOSHOT, 512 * mib + 1);
  kilnSymGroupPeers(v, 2 * N, fake_access);
  for (int r = 0; r < N; r++) {
    cr_assert(eq(int, v[r].symArgs.direct, KILN_SYM_DIRECT_REDUCE_CE));
    cr_assert(eq(int, v[r].symArgs.algo, KILN_SYM_RS));
    cr_assert(eq(u64, v[r].symArgs.count, (uint64_t)512 * mib)); /* the allreduce's, divided at issue */
    cr_assert(eq(ptr, v[r].symArgs.peerOut[(r + 1) % N], v[(r + 1) % N].symArgs.out));
    cr_assert(eq(int, v[N + r].symArgs.direct, KILN_SYM_DIRECT_SM));
    cr_assert(eq(int, v[N + r].symArgs.algo, KILN_SYM_AR_TWOSHOT));
  }
  for (int r = 0; r < N; r++) skipped[r] += 2;
  /* None direct: a rank missing, a count that differs, an op that differs, a GPU that cannot
   * reach the others, a member of the clique freed. */
  for (int r = 0; r < N; r++) v[r] = fake_launch(cs[r], KILN_SYM_ALLGATHER, mib);
  kilnSymGroupPeers(v, N - 1, fake_access);
  for (int r = 0; r < N - 1; r++) cr_assert(eq(int, v[r].symArgs.direct, 0));
  for (int r = 0; r < N; r++) v[r] = fake_launch(cs[r], KILN_SYM_ALLGATHER, r == 3 ? mib + 4 : mib);
  kilnSymGroupPeers(v, N, fake_access);
  for (int r = 0; r < N; r++) cr_assert(eq(int, v[r].symArgs.direct, 0));
  for (int r = 0; r < N; r++) {
    v[r] = fake_launch(cs[r], KILN_SYM_ALLREDUCE_TWOSHOT, mib);
    v[r].symArgs.op = r == 1 ? KILN_MAX : KILN_SUM;
  }
  kilnSymGroupPeers(v, N, fake_access);
  for (int r = 0; r < N; r++) cr_assert(eq(int, v[r].symArgs.direct, 0));
  for (int r = 0; r < N; r++) v[r] = fake_launch(cs[r], KILN_SYM_ALLGATHER, mib);
  g_noAccessDev = 2;
  kilnSymGroupPeers(v, N, fake_access);
  g_noAccessDev = -1;
  for (int r = 0; r < N; r++) cr_assert(eq(int, v[r].symArgs.direct, 0));
  for (int r = 0; r < N; r++) v[r] = fake_launch(cs[r], KILN_SYM_ALLGATHER, mib);
  kilnTestCliqueMember(cs[1], false); /* rank 1's communicator freed */
  kilnSymGroupPeers(v, N, fake_access);
  kilnTestCliqueMember(cs[1], true);
  for (int r = 0; r < N; r++) cr_assert(eq(int, v[r].symArgs.direct, 0));
  for (int r = 0; r < N; r++) cr_assert(eq(u64, comm_view(cs[r]).symPeerCalls - skipped[r], 3));
  for (int r = 0; r < N; r++) kilnTestCommFree(cs[r]);
}

/* The symmetric kernels' choice and limits on the host (no GPU needed: runs in CI): the measured
 * ranges per rank count, rounds past the staging half, KILN_SYM=0, and kilnSymRun's refusal of
 * an in-place alltoall, before anything touches the GPU. */
Test(gpu_sym, sym_choice) {
  kilnComm_t c = kilnTestCommHost(4, 0, (size_t)16 << 20);
  cr_assert(c != NULL);
  unsetenv("KILN_SYM");
  unsetenv("KILN_SYM_LL12");
  unsetenv("KILN_SYM_LL12_BYTES");
  kilnParamsReload();
  kilnTestCommConfigure(c);
  /* The line forms' staging after the flag form's two halves (sym_line_areas), each as large as its
   * thresholds let a call take: LL 4 regions of 512 KiB (256 KiB one-shot reductions) or 8 of 256
   * KiB (128 KiB two-shot shares); LL128 8 regions of 4370 lines (512 KiB two-shot shares). */
  kilnTestCommView v = comm_view(c);
  cr_assert(eq(u64, v.symLLHalf, (size_t)2 << 20));
  cr_assert(eq(u64, v.symLL128Half, (size_t)4476928));
  cr_assert(eq(u64, v.symLLBase, v.symStageBase + 2 * v.symHalf));
  cr_assert(eq(u64, v.symLL128Base, v.symLLBase + 2 * v.symLLHalf));
  kilnTestCommSet(c, 16, comm_view(c).symHalf); /* no symmetric call can run: no line areas */
  kilnTestCommConfigure(c);
  cr_assert(eq(u64, comm_view(c).symLLHalf + comm_view(c).symLL128Half, 0));
  kilnTestCommSet(c, 4, comm_view(c).symHalf);
  kilnTestCommConfigure(c);
  const kilnDataType_t f = KILN_FLOAT32;
  /* allreduce counts are elements per rank; the others' are per peer piece (reference bytes =
   * count x 4 B x ranks). */
  cr_assert(eq(int, kilnSymSelect(c, KILN_COLL_ALLREDUCE, 2, f, false), KILN_SYM_ALLREDUCE_ONESHOT));
  cr_assert(eq(int, kilnSymSelect(c, KILN_COLL_ALLREDUCE, 32768, f, true),
               KILN_SYM_ALLREDUCE_ONESHOT)); /* 128 KiB */
  cr_assert(eq(int, kilnSymSelect(c, KILN_COLL_ALLREDUCE, 65536, f, true),
               KILN_SYM_ALLREDUCE_ONESHOT)); /* 256 KiB */
  cr_assert(eq(int, kilnSymSelect(c, KILN_COLL_ALLREDUCE, 65540, f, true), KILN_SYM_ALLREDUCE_TWOSHOT));
  cr_assert(eq(int, kilnSymSelect(c, KILN_COLL_ALLREDUCE, 262144, f, false), KILN_SYM_ALLREDUCE_TWOSHOT));
  cr_assert(eq(int, kilnSymSelect(c, KILN_COLL_ALLREDUCE, 4u << 20, f, false),
               KILN_SYM_ALLREDUCE_TWOSHOT)); /* 16 MiB */
  cr_assert(eq(int, kilnSymSelect(c, KILN_COLL_ALLREDUCE, 1u << 28, f, true),
               KILN_SYM_ALLREDUCE_TWOSHOT)); /* 1 GiB */
  cr_assert(eq(int, kilnSymSelect(c, KILN_COLL_REDUCESCATTER, 1, f, false), KILN_SYM_REDUCESCATTER));
  cr_assert(
      eq(int, kilnSymSelect(c, KILN_COLL_ALLGATHER, 1u << 20, f, true), KILN_SYM_ALLGATHER)); /* 16 MiB */
  cr_assert(
      eq(int, kilnSymSelect(c, KILN_COLL_ALLGATHER, 1u << 26, f, false), KILN_SYM_ALLGATHER)); /* 1 GiB */
  cr_assert(eq(int, kilnSymSelect(c, KILN_COLL_REDUCESCATTER, 1u << 26, f, true), KILN_SYM_REDUCESCATTER));
  cr_assert(eq(int, kilnSymSelect(c, KILN_COLL_ALLTOALL, 1024, f, true), KILN_SYM_NONE));
  cr_assert(eq(int, kilnSymSelect(c, KILN_COLL_ALLTOALL, 1024, f, false), KILN_SYM_ALLTOALL));
  /* Two ranks: allreduce one-shot to 4 MiB, allgather and alltoall at every size (512 KiB too). */
  kilnTestCommSet(c, 2, comm_view(c).symHalf);
  cr_assert(eq(int, kilnSymSelect(c, KILN_COLL_ALLREDUCE, 1u << 20, f, false), KILN_SYM_ALLREDUCE_ONESHOT));
  cr_assert(eq(int, kilnSymSelect(c, KILN_COLL_ALLREDUCE, 2u << 20, f, false), KILN_SYM_ALLREDUCE_TWOSHOT));
  cr_assert(eq(int, kilnSymSelect(c, KILN_COLL_ALLGATHER, 65536, f, false), KILN_SYM_ALLGATHER));
  cr_assert(eq(int, kilnSymSelect(c, KILN_COLL_ALLTOALL, 65536, f, false), KILN_SYM_ALLTOALL));
  cr_assert(eq(int, kilnSymSelect(c, KILN_COLL_ALLGATHER, 131072, f, false), KILN_SYM_ALLGATHER));
  cr_assert(eq(int, kilnSymSelect(c, KILN_COLL_ALLTOALL, 1u << 27, f, false), KILN_SYM_ALLTOALL)); /* 1 GiB */
  /* No ranges for 8 ranks (not measured): plans. */
  kilnTestCommSet(c, 8, comm_view(c).symHalf);
  cr_assert(eq(int, kilnSymSelect(c, KILN_COLL_ALLREDUCE, 2, f, false), KILN_SYM_NONE));
  cr_assert(kilnSymFits(c, KILN_SYM_ALLREDUCE_ONESHOT, 2, f, false));
  /* Past a staging half the flag form goes in rounds: any size fits. */
  kilnTestCommSet(c, 4, comm_view(c).symHalf);
  cr_assert(kilnSymFits(c, KILN_SYM_ALLREDUCE_ONESHOT, 1u << 20, f, false));
  cr_assert(kilnSymFits(c, KILN_SYM_ALLREDUCE_ONESHOT, (1u << 20) + 64, f, false));
  cr_assert(kilnSymFits(c, KILN_SYM_ALLREDUCE_TWOSHOT, (size_t)1 << 30, f, true));
  cr_assert(not(kilnSymFits(c, KILN_SYM_ALLTOALL, 16, f, true)));
  cr_assert(not(kilnSymFits(c, (kilnSymAlgo_t)7, 16, f, false)));
  /* A segment under the LL limit whose lines overflow its region goes as flags: halves of 512 KiB
   * on 4 ranks hold 128 KiB per region, 70001 bytes take 140 KiB as lines (this was refused). */
  const size_t half16 = comm_view(c).symHalf;
  kilnTestCommSet(c, comm_view(c).nranks, 512u << 10);
  kilnTestCommConfigure(c);
  cr_assert(eq(u64, comm_view(c).symLLHalf, (size_t)512 << 10)); /* at most a half */
  cr_assert(kilnSymFits(c, KILN_SYM_REDUCESCATTER, 70001, KILN_INT8, false));
  cr_assert(kilnSymFits(c, KILN_SYM_ALLTOALL, 70001, KILN_INT8, false));
  kilnSymArgs small;
  cr_assert(kilnSymStagedGeometry(c, KILN_SYM_ALLTOALL, 70001, KILN_INT8, false, &small));
  cr_assert(eq(int, small.ll, 0));
  kilnTestCommSet(c, comm_view(c).nranks, half16);
  kilnTestCommConfigure(c);
  kilnResult_t r = kilnSymRun(c, KILN_SYM_ALLTOALL, (void*)16, (void*)16, 1024, f, KILN_SUM, 0);
  cr_assert(eq(int, r, KILN_ERR_UNSUPPORTED));
  cr_assert(strstr(kilnLastError(), "sym-alltoall") != NULL, "%s", kilnLastError());
  cr_assert(strstr(kilnLastError(), "in place") != NULL, "%s", kilnLastError());
  cr_assert(eq(int, kilnSymRun(NULL, KILN_SYM_ALLGATHER, NULL, NULL, 1, f, KILN_SUM, 0),
               KILN_ERR_INVALID_ARGUMENT));
  cr_assert(eq(int, kilnSymRun(c, (kilnSymAlgo_t)9, (void*)16, (void*)32, 1, f, KILN_SUM, 0),
               KILN_ERR_INVALID_ARGUMENT));
  cr_assert(eq(str, (char*)kilnSymAlgoName(KILN_SYM_REDUCESCATTER), "sym-reducescatter"));
  /* The staged geometry on 4 ranks with no LL128 or LL12 lines (KILN_SYM_LL128_BYTES=0,
   * KILN_SYM_LL12=0): LL lines to 128 KiB of segment (one-shot allreduce and reducescatter: to
   * 256 KiB; two-shot: of share), a block per 2 KiB up to 64 (KILN_SYM_BLOCKS); flags past that. */
  setenv("KILN_SYM_LL128_BYTES", "0", 1);
  setenv("KILN_SYM_LL12", "0", 1);
  kilnParamsReload();
  kilnTestCommConfigure(c);
  kilnSymArgs g;
  cr_assert(kilnSymStagedGeometry(c, KILN_SYM_ALLREDUCE_ONESHOT, 4096, f, false, &g)); /* 16 KiB */
  cr_assert(eq(int, g.ll, 1));
  cr_assert(eq(int, g.nblocks, 8));
  cr_assert(kilnSymStagedGeometry(c, KILN_SYM_REDUCESCATTER, 1, f, false, &g));
  cr_assert(eq(int, g.ll, 1));
  cr_assert(eq(int, g.nblocks, 1));
  cr_assert(kilnSymStagedGeometry(c, KILN_SYM_ALLREDUCE_ONESHOT, 32768, f, false, &g)); /* 128 KiB */
  cr_assert(eq(int, g.ll, 1));
  cr_assert(eq(int, g.nblocks, 64));
  cr_assert(kilnSymStagedGeometry(c, KILN_SYM_ALLREDUCE_ONESHOT, 65536, f, false, &g)); /* 256 KiB */
  cr_assert(eq(int, g.ll, 1));
  cr_assert(kilnSymStagedGeometry(c, KILN_SYM_ALLREDUCE_ONESHOT, 65540, f, false, &g));
  cr_assert(eq(int, g.ll, 0));
  cr_assert(kilnSymStagedGeometry(c, KILN_SYM_REDUCESCATTER, 65536, f, false, &g));
  cr_assert(eq(int, g.ll, 1));
  cr_assert(kilnSymStagedGeometry(c, KILN_SYM_ALLGATHER, 32768, f, false, &g));
  cr_assert(eq(int, g.ll, 1));
  cr_assert(kilnSymStagedGeometry(c, KILN_SYM_ALLGATHER, 32772, f, false, &g));
  cr_assert(eq(int, g.ll, 0));
  cr_assert(kilnSymStagedGeometry(c, KILN_SYM_ALLREDUCE_TWOSHOT, 65536, f, false, &g)); /* 64 KiB shares */
  cr_assert(eq(int, g.ll, 1));
  cr_assert(kilnSymStagedGeometry(c, KILN_SYM_ALLGATHER, 1u << 20, f, false, &g));
  cr_assert(eq(int, g.ll, 0));
  /* KILN_SYM_LL_BYTES set: the reductions follow it unless KILN_SYM_LL_REDUCE_BYTES is set too;
   * 2 ranks: 512 KiB for all. */
  setenv("KILN_SYM_LL_BYTES", "131072", 1);
  kilnParamsReload();
  kilnTestCommConfigure(c);
  cr_assert(kilnSymStagedGeometry(c, KILN_SYM_ALLREDUCE_ONESHOT, 32772, f, false, &g));
  cr_assert(eq(int, g.ll, 0));
  setenv("KILN_SYM_LL_REDUCE_BYTES", "262144", 1);
  kilnParamsReload();
  kilnTestCommConfigure(c);
  cr_assert(kilnSymStagedGeometry(c, KILN_SYM_ALLREDUCE_ONESHOT, 65536, f, false, &g));
  cr_assert(eq(int, g.ll, 1));
  cr_assert(kilnSymStagedGeometry(c, KILN_SYM_ALLGATHER, 32772, f, false, &g));
  cr_assert(eq(int, g.ll, 0));
  unsetenv("KILN_SYM_LL_BYTES");
  unsetenv("KILN_SYM_LL_REDUCE_BYTES");
  kilnParamsReload();
  /* The LL forms trigger the next kernel once their lines are out, at their end with
   * KILN_SYM_PDL_TRIGGER=end. */
  kilnTestCommConfigure(c);
  cr_assert(comm_view(c).symEarlyTrigger);
  setenv("KILN_SYM_PDL_TRIGGER", "end", 1);
  kilnParamsReload();
  kilnTestCommConfigure(c);
  cr_assert(not(comm_view(c).symEarlyTrigger));
  unsetenv("KILN_SYM_PDL_TRIGGER");
  kilnParamsReload();
  kilnTestCommSet(c, 2, comm_view(c).symHalf);
  kilnTestCommConfigure(c);
  cr_assert(comm_view(c).symEarlyTrigger);
  cr_assert(kilnSymStagedGeometry(c, KILN_SYM_ALLGATHER, 131072, f, false, &g)); /* 512 KiB */
  cr_assert(eq(int, g.ll, 1));
  cr_assert(kilnSymStagedGeometry(c, KILN_SYM_REDUCESCATTER, 131076, f, false, &g));
  cr_assert(eq(int, g.ll, 0));
  /* LL128 lines by default: one-shot segments past 128 KiB, to 256 KiB on 4 ranks and 1 MiB on
   * 2; KILN_SYM_LL128_MAX_BYTES moves the top. */
  unsetenv("KILN_SYM_LL128_BYTES");
  kilnParamsReload();
  kilnTestCommConfigure(c);
  cr_assert(kilnSymStagedGeometry(c, KILN_SYM_ALLGATHER, 262144, f, false, &g)); /* 1 MiB */
  cr_assert(eq(int, g.ll, KILN_SYM_LINES_LL128));
  cr_assert(kilnSymStagedGeometry(c, KILN_SYM_ALLGATHER, 262148, f, false, &g));
  cr_assert(eq(int, g.ll, 0));
  cr_assert(kilnSymStagedGeometry(c, KILN_SYM_ALLREDUCE_ONESHOT, 32768, f, false, &g)); /* 128 KiB */
  cr_assert(eq(int, g.ll, KILN_SYM_LINES_LL));
  kilnTestCommSet(c, 4, comm_view(c).symHalf);
  kilnTestCommConfigure(c);
  cr_assert(kilnSymStagedGeometry(c, KILN_SYM_ALLREDUCE_ONESHOT, 32772, f, false, &g));
  cr_assert(eq(int, g.ll, KILN_SYM_LINES_LL128));
  cr_assert(eq(int, g.nblocks, 64));
  cr_assert(eq(u64, g.region, 140032)); /* 1093 lines of 128 bytes for 131088, to 256 bytes */
  cr_assert(kilnSymStagedGeometry(c, KILN_SYM_ALLREDUCE_ONESHOT, 65536, f, false, &g)); /* 256 KiB */
  cr_assert(eq(int, g.ll, KILN_SYM_LINES_LL128));
  cr_assert(kilnSymStagedGeometry(c, KILN_SYM_ALLREDUCE_ONESHOT, 65540, f, false, &g));
  cr_assert(eq(int, g.ll, 0));
  cr_assert(kilnSymStagedGeometry(c, KILN_SYM_REDUCESCATTER, 65536, f, false, &g));
  cr_assert(eq(int, g.ll, KILN_SYM_LINES_LL128));
  cr_assert(kilnSymStagedGeometry(c, KILN_SYM_ALLTOALL, 32772, f, false, &g));
  cr_assert(eq(int, g.ll, KILN_SYM_LINES_LL128));
  cr_assert(kilnSymStagedGeometry(c, KILN_SYM_ALLGATHER, 32768, f, false, &g));
  cr_assert(eq(int, g.ll, KILN_SYM_LINES_LL));
  cr_assert(kilnSymStagedGeometry(c, KILN_SYM_ALLREDUCE_TWOSHOT, 65536, f, false, &g));
  cr_assert(eq(int, g.ll, KILN_SYM_LINES_LL));
  /* Two-shot shares past 128 KiB (the LL lines' top) to 512 KiB go as LL128 too. */
  cr_assert(kilnSymStagedGeometry(c, KILN_SYM_ALLREDUCE_TWOSHOT, 262144, f, false, &g)); /* 256 KiB shares */
  cr_assert(eq(int, g.ll, KILN_SYM_LINES_LL128));
  cr_assert(kilnSymStagedGeometry(c, KILN_SYM_ALLREDUCE_TWOSHOT, 524288, f, false, &g)); /* 512 KiB */
  cr_assert(eq(int, g.ll, KILN_SYM_LINES_LL128));
  cr_assert(kilnSymStagedGeometry(c, KILN_SYM_ALLREDUCE_TWOSHOT, 524292, f, false, &g));
  cr_assert(eq(int, g.ll, 0));
  configure_with(c, "KILN_SYM_LL2_128_BYTES", "0");
  cr_assert(kilnSymStagedGeometry(c, KILN_SYM_ALLREDUCE_TWOSHOT, 262144, f, false, &g));
  cr_assert(eq(int, g.ll, 0));
  configure_with(c, "KILN_SYM_LL128_MAX_BYTES", "524288");
  cr_assert(kilnSymStagedGeometry(c, KILN_SYM_ALLREDUCE_ONESHOT, 65540, f, false, &g));
  cr_assert(eq(int, g.ll, KILN_SYM_LINES_LL128));
  kilnTestCommConfigure(c);
  configure_with(c, "KILN_SYM_BLOCKS", "8");
  cr_assert(kilnSymStagedGeometry(c, KILN_SYM_ALLREDUCE_ONESHOT, 32768, f, false, &g));
  cr_assert(eq(int, g.nblocks, 8));
  /* LL12 lines by default for one-shot segments past 8 KiB that would go as LL lines, of
   * elements of at most 4 bytes, a 16-byte line per 12 bytes; 8-byte elements and two-shot shares
   * stay LL lines, LL128's range LL128; KILN_SYM_LL12_BYTES moves the bottom. */
  unsetenv("KILN_SYM_LL12");
  kilnParamsReload();
  kilnTestCommConfigure(c);
  cr_assert(kilnSymStagedGeometry(c, KILN_SYM_ALLREDUCE_ONESHOT, 2048, f, false, &g)); /* 8 KiB */
  cr_assert(eq(int, g.ll, KILN_SYM_LINES_LL));
  cr_assert(kilnSymStagedGeometry(c, KILN_SYM_ALLREDUCE_ONESHOT, 2049, f, false, &g));
  cr_assert(eq(int, g.ll, KILN_SYM_LINES_LL12));
  cr_assert(eq(u64, g.region, 11008)); /* 683 lines of 16 bytes, to 256 */
  cr_assert(eq(int, g.nblocks, 5));
  cr_assert(kilnSymStagedGeometry(c, KILN_SYM_ALLREDUCE_ONESHOT, 8193, f, false, &g));
  cr_assert(eq(int, g.ll, KILN_SYM_LINES_LL12));
  cr_assert(eq(u64, g.region, 43776)); /* 2731 lines of 16 bytes, to 256 */
  cr_assert(eq(int, g.nblocks, 17));
  cr_assert(kilnSymStagedGeometry(c, KILN_SYM_ALLTOALL, 32769, KILN_INT8, false, &g));
  cr_assert(eq(int, g.ll, KILN_SYM_LINES_LL12));
  cr_assert(kilnSymStagedGeometry(c, KILN_SYM_ALLGATHER, 4097, KILN_FLOAT64, false, &g));
  cr_assert(eq(int, g.ll, KILN_SYM_LINES_LL));
  cr_assert(kilnSymStagedGeometry(c, KILN_SYM_ALLREDUCE_TWOSHOT, 65536, f, false, &g));
  cr_assert(eq(int, g.ll, KILN_SYM_LINES_LL));
  cr_assert(kilnSymStagedGeometry(c, KILN_SYM_ALLREDUCE_ONESHOT, 32772, f, false, &g));
  cr_assert(eq(int, g.ll, KILN_SYM_LINES_LL128));
  configure_with(c, "KILN_SYM_LL12_BYTES", "0");
  cr_assert(kilnSymStagedGeometry(c, KILN_SYM_ALLREDUCE_ONESHOT, 1, f, false, &g));
  cr_assert(eq(int, g.ll, KILN_SYM_LINES_LL12));
  kilnTestCommConfigure(c);
  /* Off: KILN_SYM=0 at creation, or no staging. */
  configure_with(c, "KILN_SYM", "0");
  cr_assert(eq(int, kilnSymSelect(c, KILN_COLL_ALLREDUCE, 2, f, false), KILN_SYM_NONE));
  kilnTestCommConfigure(c);
  kilnTestCommSet(c, comm_view(c).nranks, 0);
  cr_assert(eq(int, kilnSymSelect(c, KILN_COLL_ALLREDUCE, 2, f, false), KILN_SYM_NONE));
  cr_assert(not(kilnSymFits(c, KILN_SYM_ALLGATHER, 1, f, false)));
  kilnTestCommFree(c);
}

/* Every call the symmetric kernels' host geometry gives has a kernel (kernels/sym.cuh kernelIndexOf
 * against kernelOf, whose null entries are for forms the host never picks: LL12 of 8-byte elements,
 * the op fixed in a form without lines): 2, 4 and 8 ranks, every dtype, op and algorithm, sizes
 * across every line form and the staged one, staged and direct. No GPU needed: runs in CI. */
Test(gpu_sym, sym_kernels_exist) {
  static const size_t bytes[] = {16, 1000, 8200, 40000, 200000, 600000, 2u << 20, 64u << 20};
  static const int nranks[] = {2, 4, 8};
  int calls = 0, forms = 0;
  unsigned seen = 0;
  for (int r = 0; r < 3; r++) {
    kilnComm_t c = kilnTestCommHost(nranks[r], 0, (size_t)16 << 20);
    cr_assert(c != NULL);
    kilnTestCommConfigure(c);
    for (int d = 0; d < KILN_NUM_DTYPES; d++)
      for (int a = KILN_SYM_ALLREDUCE_ONESHOT; a <= KILN_SYM_ALLTOALL; a++)
        for (size_t b = 0; b < sizeof bytes / sizeof bytes[0]; b++) {
          kilnSymArgs g;
          const size_t count = bytes[b] / kilnDataTypeSize((kilnDataType_t)d);
          if (!kilnSymStagedGeometry(c, (kilnSymAlgo_t)a, count, (kilnDataType_t)d, false, &g)) continue;
          seen |= 1u << (g.ll * 2 + (a == KILN_SYM_ALLREDUCE_TWOSHOT));
          for (int op = 0; op < KILN_NUM_REDOPS; op++)
            for (int direct = 0; direct < 2; direct++) {
              g.op = op;
              g.direct = direct;
              cr_assert(kilnTestSymHasKernel(d, &g),
                        "%d ranks, %s, algorithm %d, %zu elements, op %d, lines %d%s: no kernel", nranks[r],
                        kilnDataTypeName((kilnDataType_t)d), a, count, op, g.ll, direct ? ", direct" : "");
              calls++;
            }
        }
    kilnTestCommFree(c);
  }
  /* The sizes reach the staged form and every line form, one-shot and two-shot. */
  for (int ll = KILN_SYM_LINES_NONE; ll <= KILN_SYM_LINES_LL12; ll++) forms += seen >> (ll * 2) & 1;
  cr_assert(eq(int, forms, KILN_SYM_LINES_LL12 - KILN_SYM_LINES_NONE + 1), "line forms reached: %x", seen);
  cr_assert(eq(u32, seen >> (KILN_SYM_LINES_LL * 2 + 1) & 1, 1), "no two-shot LL share: %x", seen);
  cr_assert(eq(u32, seen >> (KILN_SYM_LINES_LL128 * 2 + 1) & 1, 1), "no two-shot LL128 share: %x", seen);
  cr_assert(gt(int, calls, 1000));
}

/* Which calls go direct (zero copy) on the host (no GPU needed: runs in CI): a window added by
 * hand (host addresses, never touched), the output in it or not, past its end, the thresholds
 * per rank count (16 MiB on 2 ranks, 1 MiB on 4, off on 8, KILN_SYM_DIRECT_BYTES for any),
 * KILN_SYM_DIRECT=0, reducescatter and in-place alltoall never, no staging never. */
Test(gpu_sym, sym_direct_choice) {
  kilnComm_t c = kilnTestCommHost(2, 1, (size_t)64 << 20);
  cr_assert(c != NULL);
  unsetenv("KILN_SYM_DIRECT");
  unsetenv("KILN_SYM_DIRECT_BYTES");
  unsetenv("KILN_SYM_CE");
  unsetenv("KILN_SYM_CE_BYTES");
  kilnParamsReload();
  kilnTestCommConfigure(c);
  static char* peers[8] = {(char*)0x100000000000ull, (char*)0x200000000000ull, (char*)0x300000000000ull,
                           (char*)0x400000000000ull};
  /* A second window over the first's second GiB (windows may overlap). */
  static char* peers2[8] = {(char*)0x140000000000ull, (char*)0x240000000000ull, (char*)0x340000000000ull,
                            (char*)0x440000000000ull};
  const struct {
    char* base;
    size_t bytes;
  } w = {(char*)0x7f0000000000ull, (size_t)4 << 30};
  cr_assert(eq(int, kilnTestCommWindowAdd(c, (ncclWindow_t)0x1, w.base, w.bytes, peers), KILN_SUCCESS));
  cr_assert(eq(int,
               kilnTestCommWindowAdd(c, (ncclWindow_t)0x2, (char*)0x7f0040000000ull, (size_t)1 << 30, peers2),
               KILN_SUCCESS));
  const kilnDataType_t f = KILN_FLOAT32;
  char* in = w.base;                      /* the window's start */
  char* out = w.base + ((size_t)2 << 30); /* 2 GiB into it */
  char* plain = (char*)0x10000;           /* not in any window */
  const size_t mib4 = (size_t)1 << 20;    /* 4 MiB of float */
  /* 2 ranks: from 16 MiB of reference bytes (allgather: count x 4 B x 2). */
  cr_assert(kilnSymIsDirect(c, KILN_SYM_ALLGATHER, plain, out, 2 * mib4, f));
  cr_assert(not(kilnSymIsDirect(c, KILN_SYM_ALLGATHER, plain, out, 2 * mib4 - 1, f)));
  cr_assert(not(kilnSymIsDirect(c, KILN_SYM_ALLGATHER, out, plain, 2 * mib4, f)));
  cr_assert(kilnSymIsDirect(c, KILN_SYM_ALLTOALL, in, out, 2 * mib4, f));
  cr_assert(not(kilnSymIsDirect(c, KILN_SYM_ALLTOALL, out, out, 2 * mib4, f)));
  cr_assert(not(kilnSymIsDirect(c, KILN_SYM_REDUCESCATTER, in, out, 2 * mib4, f)));
  cr_assert(kilnSymIsDirect(c, KILN_SYM_ALLREDUCE_ONESHOT, plain, out, 4 * mib4, f));
  cr_assert(kilnSymIsDirect(c, KILN_SYM_ALLREDUCE_TWOSHOT, out, out, 4 * mib4, f));
  /* Exactly to the window's end, and one element past it. */
  cr_assert(kilnSymIsDirect(c, KILN_SYM_ALLREDUCE_TWOSHOT, in, out, (size_t)1 << 29, f));
  cr_assert(not(kilnSymIsDirect(c, KILN_SYM_ALLREDUCE_TWOSHOT, in, out, ((size_t)1 << 29) + 1, f)));
  cr_assert(kilnSymIsDirect(c, KILN_SYM_ALLGATHER, plain, out, (size_t)1 << 28, f));
  cr_assert(
      kilnSymIsDirect(c, KILN_SYM_ALLGATHER, plain, w.base + ((size_t)1 << 30), 2 * mib4, f)); /* in both */
  cr_assert(not(kilnSymIsDirect(c, KILN_SYM_ALLGATHER, plain, out, ((size_t)1 << 28) + 1, f)));
  /* Where windows overlap the newest maps the buffer (an older one may describe memory since
   * freed and allocated again). */
  char* got[8];
  cr_assert(kilnUserWindowPeers(c, w.base + ((size_t)1 << 30) + 64, 64, got));
  cr_assert(eq(ptr, got[0], peers2[0] + 64));
  cr_assert(eq(ptr, got[1], w.base + ((size_t)1 << 30) + 64)); /* this rank's own */
  cr_assert(kilnUserWindowPeers(c, w.base + 64, 64, got));     /* only in the first */
  cr_assert(eq(ptr, got[0], peers[0] + 64));
  /* Allgather and alltoall copy with the copy engine from 128 MiB of reference bytes on 2 ranks;
   * allreduce never; KILN_SYM_CE=0 never, KILN_SYM_CE_BYTES from where it says. */
  cr_assert(
      eq(int, kilnSymDirectForm(c, KILN_SYM_ALLGATHER, plain, out, 16 * mib4, f), KILN_SYM_DIRECT_ARRIVE));
  cr_assert(
      eq(int, kilnSymDirectForm(c, KILN_SYM_ALLGATHER, plain, out, 16 * mib4 - 1, f), KILN_SYM_DIRECT_SM));
  cr_assert(eq(int, kilnSymDirectForm(c, KILN_SYM_ALLTOALL, in, out, 16 * mib4, f), KILN_SYM_DIRECT_ARRIVE));
  cr_assert(eq(int, kilnSymDirectForm(c, KILN_SYM_ALLTOALL, in, out, 16 * mib4 - 1, f), KILN_SYM_DIRECT_SM));
  cr_assert(
      eq(int, kilnSymDirectForm(c, KILN_SYM_ALLREDUCE_TWOSHOT, in, out, 64 * mib4, f), KILN_SYM_DIRECT_SM));
  cr_assert(eq(int, kilnSymDirectForm(c, KILN_SYM_REDUCESCATTER, in, out, 32 * mib4, f), 0));
  cr_assert(eq(int, kilnSymDirectForm(c, KILN_SYM_ALLGATHER, out, plain, 16 * mib4, f), 0));
  configure_with(c, "KILN_SYM_CE", "0");
  cr_assert(eq(int, kilnSymDirectForm(c, KILN_SYM_ALLGATHER, plain, out, 64 * mib4, f), KILN_SYM_DIRECT_SM));
  configure_with(c, "KILN_SYM_CE_BYTES", "33554432");
  cr_assert(
      eq(int, kilnSymDirectForm(c, KILN_SYM_ALLGATHER, plain, out, 4 * mib4, f), KILN_SYM_DIRECT_ARRIVE));
  cr_assert(
      eq(int, kilnSymDirectForm(c, KILN_SYM_ALLGATHER, plain, out, 4 * mib4 - 1, f), KILN_SYM_DIRECT_SM));
  /* 4 ranks: from 1 MiB of reference bytes (count x 4 B x 4), the copy engine from 128 MiB,
   * KILN_SYM_CE_BYTES moves it; 8 ranks: off by default, from where KILN_SYM_DIRECT_BYTES says. */
  kilnTestCommSet(c, 8, comm_view(c).symHalf);
  kilnTestCommConfigure(c);
  cr_assert(not(kilnSymIsDirect(c, KILN_SYM_ALLGATHER, plain, out, 8 * mib4, f)));
  configure_with(c, "KILN_SYM_DIRECT_BYTES", "2097152");
  cr_assert(kilnSymIsDirect(c, KILN_SYM_ALLGATHER, plain, out, 65536, f));
  cr_assert(not(kilnSymIsDirect(c, KILN_SYM_ALLGATHER, plain, out, 65535, f)));
  kilnTestCommSet(c, 4, comm_view(c).symHalf);
  kilnTestCommConfigure(c);
  cr_assert(kilnSymIsDirect(c, KILN_SYM_ALLGATHER, plain, out, 65536, f));
  /* A direct copy takes a block per 8 KiB of a piece (KILN_SYM_DIRECT_BLOCK_BYTES), per 16 KiB
   * from pieces of 1 MiB (KILN_SYM_DIRECT_BIG_BLOCK_BYTES), up to 128 (KILN_SYM_DIRECT_BLOCKS):
   * allgather 1 MiB 32 blocks, 2 MiB 64, 4 MiB 64, 8 MiB and more 128. */
  cr_assert(eq(int, kilnSymDirectBlocks(c, KILN_SYM_ALLGATHER, plain, out, 65536, f), 32));
  cr_assert(eq(int, kilnSymDirectBlocks(c, KILN_SYM_ALLGATHER, plain, out, 65536 + 4, f), 33));
  cr_assert(eq(int, kilnSymDirectBlocks(c, KILN_SYM_ALLGATHER, plain, out, 131072, f), 64));
  cr_assert(eq(int, kilnSymDirectBlocks(c, KILN_SYM_ALLGATHER, plain, out, 262144 - 4, f), 128));
  cr_assert(eq(int, kilnSymDirectBlocks(c, KILN_SYM_ALLGATHER, plain, out, 262144, f), 64));
  cr_assert(eq(int, kilnSymDirectBlocks(c, KILN_SYM_ALLGATHER, plain, out, 262144 + 4, f), 65));
  cr_assert(eq(int, kilnSymDirectBlocks(c, KILN_SYM_ALLGATHER, plain, out, 524288, f), 128));
  cr_assert(eq(int, kilnSymDirectBlocks(c, KILN_SYM_ALLTOALL, in, out, mib4 / 4, f), 64)); /* 1 MiB pieces */
  cr_assert(eq(int, kilnSymDirectBlocks(c, KILN_SYM_ALLTOALL, in, out, 4 * mib4, f), 128));
  cr_assert(eq(int, kilnSymDirectBlocks(c, KILN_SYM_ALLGATHER, plain, out, 65535, f), 0)); /* staged */
  configure_with(c, "KILN_SYM_DIRECT_BLOCK_BYTES", "2048");
  cr_assert(eq(int, kilnSymDirectBlocks(c, KILN_SYM_ALLGATHER, plain, out, 65536, f), 128));
  cr_assert(eq(int, kilnSymDirectBlocks(c, KILN_SYM_ALLGATHER, plain, out, 262144, f), 64));
  configure_with(c, "KILN_SYM_DIRECT_BIG_BLOCK_BYTES", "8192");
  cr_assert(eq(int, kilnSymDirectBlocks(c, KILN_SYM_ALLGATHER, plain, out, 262144, f), 128));
  configure_with(c, "KILN_SYM_DIRECT_BLOCKS", "16");
  cr_assert(eq(int, kilnSymDirectBlocks(c, KILN_SYM_ALLGATHER, plain, out, 65536, f), 16));
  kilnTestCommConfigure(c);
  /* Allreduce from 512 MiB on 4 ranks as reduce-then-copy where its shares are equal and whole
   * 16-byte packs, else two-shot; KILN_SYM_AR_CE=0 never. */
  const size_t ar512 = (size_t)1 << 27; /* floats */
  cr_assert(eq(int, kilnSymDirectForm(c, KILN_SYM_ALLREDUCE_TWOSHOT, in, out, ar512, f),
               KILN_SYM_DIRECT_REDUCE_CE));
  cr_assert(eq(int, kilnSymDirectForm(c, KILN_SYM_ALLREDUCE_TWOSHOT, out, out, 2 * ar512, f),
               KILN_SYM_DIRECT_REDUCE_CE));
  cr_assert(
      eq(int, kilnSymDirectForm(c, KILN_SYM_ALLREDUCE_TWOSHOT, in, out, ar512 + 4, f), KILN_SYM_DIRECT_SM));
  cr_assert(
      eq(int, kilnSymDirectForm(c, KILN_SYM_ALLREDUCE_TWOSHOT, in, out, ar512 / 2, f), KILN_SYM_DIRECT_SM));
  configure_with(c, "KILN_SYM_AR_CE", "0");
  cr_assert(eq(int, kilnSymDirectForm(c, KILN_SYM_ALLREDUCE_TWOSHOT, in, out, ar512, f), KILN_SYM_DIRECT_SM));
  kilnTestCommConfigure(c);
  /* Alltoall from 4 MiB on 4 ranks (KILN_SYM_DIRECT_A2A_BYTES). */
  cr_assert(not(kilnSymIsDirect(c, KILN_SYM_ALLTOALL, in, out, 262143, f)));
  cr_assert(kilnSymIsDirect(c, KILN_SYM_ALLTOALL, in, out, 262144, f));
  configure_with(c, "KILN_SYM_DIRECT_A2A_BYTES", "1048576");
  cr_assert(kilnSymIsDirect(c, KILN_SYM_ALLTOALL, in, out, 65536, f));
  kilnTestCommConfigure(c);
  cr_assert(not(kilnSymIsDirect(c, KILN_SYM_ALLGATHER, plain, out, 65535, f)));
  cr_assert(
      eq(int, kilnSymDirectForm(c, KILN_SYM_ALLGATHER, plain, out, 8 * mib4, f), KILN_SYM_DIRECT_ARRIVE));
  cr_assert(eq(int, kilnSymDirectForm(c, KILN_SYM_ALLTOALL, in, out, 8 * mib4 - 1, f), KILN_SYM_DIRECT_SM));
  setenv("KILN_SYM_CE_BYTES", "12ab", 1); /* not a number: the default (128 MiB) */
  kilnParamsReload();
  kilnTestCommConfigure(c);
  cr_assert(
      eq(int, kilnSymDirectForm(c, KILN_SYM_ALLGATHER, plain, out, 8 * mib4, f), KILN_SYM_DIRECT_ARRIVE));
  cr_assert(
      eq(int, kilnSymDirectForm(c, KILN_SYM_ALLGATHER, plain, out, 8 * mib4 - 1, f), KILN_SYM_DIRECT_SM));
  configure_with(c, "KILN_SYM_CE_BYTES", "4194304");
  cr_assert(eq(int, kilnSymDirectForm(c, KILN_SYM_ALLTOALL, in, out, 262144, f), KILN_SYM_DIRECT_ARRIVE));
  setenv("KILN_SYM_DIRECT", "0", 1);
  kilnParamsReload();
  kilnTestCommConfigure(c);
  cr_assert(not(kilnSymIsDirect(c, KILN_SYM_ALLGATHER, plain, out, 8 * mib4, f)));
  unsetenv("KILN_SYM_DIRECT");
  unsetenv("KILN_SYM_DIRECT_BYTES");
  unsetenv("KILN_SYM_CE");
  unsetenv("KILN_SYM_CE_BYTES");
  kilnParamsReload();
  kilnTestCommConfigure(c);
  kilnTestCommSet(c, comm_view(c).nranks, 0);
  cr_assert(not(kilnSymIsDirect(c, KILN_SYM_ALLGATHER, plain, out, 8 * mib4, f)));
  kilnTestCommFree(c);
}

/* kilnCommWindowForget (the drop-in calls it before the application's ncclMemFree): every window
 * that overlaps the freed range goes, the others stay in the order they were added (no GPU
 * needed: windows made by hand, host addresses never touched). */
Test(gpu_sym, window_forget) {
  kilnComm_t c = kilnTestCommHost(2, 0, 0);
  cr_assert(c != NULL);
  char* base = (char*)0x7f0000000000ull;
  const size_t gib = (size_t)1 << 30;
  const struct {
    size_t off, bytes;
  } w[] = {{0, gib}, {gib, 64u << 20}, {2 * gib, 1u << 20}, {gib + (32u << 20), 1u << 20}};
  for (int i = 0; i < 4; i++)
    cr_assert(
        eq(int, kilnTestCommWindowAdd(c, (ncclWindow_t)(uintptr_t)(i + 1), base + w[i].off, w[i].bytes, NULL),
           KILN_SUCCESS));
  /* The second allocation, [1 GiB, 1 GiB + 64 MiB): windows 2 and 4 (inside it). */
  cr_assert(eq(int, kilnCommWindowForget(c, base + gib, 64u << 20), 2));
  cr_assert(eq(int, kilnCommWindowCount(c), 2));
  cr_assert(eq(ptr, (void*)kilnTestCommWindowAt(c, 0), (void*)1));
  cr_assert(eq(ptr, (void*)kilnTestCommWindowAt(c, 1), (void*)3));
  /* A range that only touches window 1's last byte; one past window 3; nothing; bad arguments. */
  cr_assert(eq(int, kilnCommWindowForget(c, base + gib - 1, 1), 1));
  cr_assert(eq(int, kilnCommWindowForget(c, base + 2 * gib + (1u << 20), 4096), 0));
  cr_assert(eq(int, kilnCommWindowForget(c, base + 3 * gib, gib), 0));
  cr_assert(eq(int, kilnCommWindowForget(c, NULL, 5), 0));
  cr_assert(eq(int, kilnCommWindowForget(NULL, base, 5), 0));
  cr_assert(eq(int, kilnCommWindowForget(c, base + 2 * gib, 0), 0));
  cr_assert(eq(int, kilnCommWindowCount(c), 1));
  cr_assert(eq(int, kilnCommWindowForget(c, (char*)UINTPTR_MAX - 15, 4096), 0)); /* past the address space */
  cr_assert(eq(int, kilnCommWindowForget(c, base, 3 * gib), 1));
  cr_assert(eq(int, kilnCommWindowCount(c), 0));
  kilnTestCommFree(c);
}

/* A block with an empty range must not touch the last partial LL line (it once did: in place, it
 * could reduce an already reduced element again). With 128 blocks of 1 KiB and LL lines up to
 * 1 MiB, an int8 segment of 131073 bytes leaves block 127 empty on a GPU of 128 SMs or more. The
 * settings are read at communicator creation. */
Test(gpu_sym, sym_empty_blocks, .init = gpu_init, .timeout = 300) {
  int n = suite_gpus();
  setenv("KILN_SYM_BLOCKS", "128", 1);
  setenv("KILN_SYM_BLOCK_BYTES", "1024", 1);
  setenv("KILN_SYM_LL_BYTES", "1048576", 1);
  kilnParamsReload();
  world w;
  const bool made = world_init(&w, n, NULL);
  unsetenv("KILN_SYM_BLOCKS");
  unsetenv("KILN_SYM_BLOCK_BYTES");
  unsetenv("KILN_SYM_LL_BYTES");
  kilnParamsReload();
  cr_assert(made);
  uint64_t rng = g_seed ^ 0xE3;
  static const kilnSymAlgo_t algos[] = {KILN_SYM_ALLREDUCE_ONESHOT, KILN_SYM_REDUCESCATTER};
  for (size_t ai = 0; ai < 2; ai++) {
    call c;
    cr_assert(call_alloc(&c, &w, sym_coll(algos[ai]), 131073, KILN_INT8));
    for (int it = 0; it < 20; it++) sym_run_check(&w, &c, algos[ai], KILN_SUM, true, &rng);
    call_free(&c, &w);
  }
  world_fini(&w);
}

/* Reducescatter from an aligned input into an output one element past the lines' alignment
 * (float 4 bytes past 8, half 2 bytes past 4: LL and LL12 lines), 8 ranks sharing the GPUs, counts
 * a rank as LL lines, LL12 lines and past them: bodyLL sends whole lines (they read only the
 * input) and stores the results element-wise, every op. */
Test(gpu_sym, sym_rs_output_off_alignment_8ranks_shared, .init = gpu_init_shared, .timeout = 300) {
  world w;
  sweep_world(&w, 8, true, NULL, kNoEnv);
  uint64_t rng = g_seed ^ 0x0FF5;
  static const kilnDataType_t types[] = {KILN_FLOAT32, KILN_FLOAT16};
  static const size_t counts[] = {1000, 8192, 30002};
  for (size_t ti = 0; ti < 2; ti++)
    for (size_t ci = 0; ci < 3; ci++) {
      const size_t es = kilnDataTypeSize(types[ti]), count = counts[ci];
      char* send[GPU_MAX];
      char* recv[GPU_MAX];
      char* at[GPU_MAX];
      for (int r = 0; r < w.n; r++) {
        cudaSetDevice(w.dev[r]);
        cr_assert(eq(int, cudaMalloc((void**)&send[r], (size_t)w.n * count * es), cudaSuccess));
        cr_assert(eq(int, cudaMalloc((void**)&recv[r], (count + 1) * es), cudaSuccess));
        at[r] = recv[r] + es;
      }
      call c;
      cr_assert(call_alloc_at(&c, &w, KILN_COLL_REDUCESCATTER, count, types[ti], send, at));
      for (int op = 0; op < KILN_NUM_REDOPS; op++)
        sym_run_check(&w, &c, KILN_SYM_REDUCESCATTER, (kilnRedOp_t)op, false, &rng);
      call_free(&c, &w);
      for (int r = 0; r < w.n; r++) {
        cudaSetDevice(w.dev[r]);
        cudaFree(send[r]);
        cudaFree(recv[r]);
      }
    }
  world_fini(&w);
}

/* The sequence number the next symmetric call of rank r's communicator takes. */
static uint64_t sym_next_seq(const world* w, int r) {
  uint64_t s = 0;
  cudaSetDevice(r);
  cr_assert(eq(int, cudaStreamSynchronize(w->st[r]), cudaSuccess));
  cr_assert(
      eq(int, cudaMemcpy(&s, comm_view(w->kc[r]).symState, sizeof s, cudaMemcpyDeviceToHost), cudaSuccess));
  return s + 1;
}

/* A call in lines never takes for its own what another form left in the staging: 2 GPUs, an
 * allgather of 16 KiB per rank (the flag form, or LL128 lines) whose every word is the flag of
 * the call two after it, which is in lines (an allgather as LL or LL128 lines, a two-shot
 * allreduce as LL lines) and reads the same half: rank 1 issues it alone, rank 0 100 ms later, so rank 1 polls its staging long
 * before rank 0's lines come. A poll that passes on what the first call left returns that
 * call's data. (It did until the line forms got staging of their own, apart from the flag form's
 * and from each other's: LL lines take two 32-bit words of a 16-byte line for their flags, LL128
 * lines one 64-bit word of 128 bytes, and data of the right value in those places passed.) LL12
 * lines share LL's staging: an LL12 call's data in LL's second word must not pass for LL lines
 * (the other way round an LL line's fourth word is always a flag). */
Test(gpu_sym, sym_lines_apart, .init = gpu_init, .timeout = 120) {
  if (g_ngpus < 2) cr_skip_test("skipped: 2 GPUs needed, %d visible", g_ngpus);
  static const struct {
    const char* what;
    const char* llBytes;  /* KILN_SYM_LL_BYTES */
    const char* ll128Max; /* KILN_SYM_LL128_MAX_BYTES; "0": no LL128 lines */
    const char* ll12;     /* KILN_SYM_LL12_BYTES; NULL: no LL12 lines */
    size_t first, last;   /* int32 elements per rank (of the allgather; of the later calls) */
    kilnSymAlgo_t later;  /* the two later calls' algorithm */
  } cases[] = {
      {"flag form, then LL lines", "256", "0", NULL, 4096, 16, KILN_SYM_ALLGATHER},
      {"LL128 lines, then LL lines", "256", "1048576", NULL, 4096, 16, KILN_SYM_ALLGATHER},
      {"flag form, then LL128 lines", "256", "8192", NULL, 4096, 1024, KILN_SYM_ALLGATHER},
      {"flag form, then two-shot LL lines", "256", "0", NULL, 4096, 64, KILN_SYM_ALLREDUCE_TWOSHOT},
      {"flag form, then LL12 lines", "256", "0", "0", 4096, 16, KILN_SYM_ALLGATHER},
      {"LL128 lines, then LL12 lines", "256", "1048576", "0", 4096, 16, KILN_SYM_ALLGATHER},
      {"LL12 lines, then LL lines", "65536", "0", "1024", 4096, 16, KILN_SYM_ALLGATHER},
  };
  uint64_t rng = g_seed ^ 0x5a1e;
  for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
    const char* const env[] = {"KILN_SYM_LL_BYTES",
                               cases[k].llBytes,
                               "KILN_SYM_LL128_BYTES",
                               "256",
                               "KILN_SYM_LL128_MAX_BYTES",
                               cases[k].ll128Max,
                               cases[k].ll12 ? "KILN_SYM_LL12_BYTES" : "KILN_SYM_LL12",
                               cases[k].ll12 ? cases[k].ll12 : "0",
                               NULL};
    world w;
    cr_assert(world_init_env(&w, 2, NULL, env));
    const uint64_t s0 = sym_next_seq(&w, 0);
    const uint32_t flag = kilnDevSymFlag(s0 + 2);
    call big, small;
    cr_assert(call_alloc(&big, &w, KILN_COLL_ALLGATHER, cases[k].first, KILN_INT32));
    cr_assert(call_alloc(&small, &w, sym_coll(cases[k].later), cases[k].last, KILN_INT32));
    call_prepare(&big, &w, KILN_SUM, false, &rng); /* buffers and pointers; the input replaced below */
    int32_t* words = (int32_t*)malloc(cases[k].first * sizeof(int32_t));
    cr_assert(words != NULL);
    for (size_t i = 0; i < cases[k].first; i++) words[i] = (int32_t)flag;
    for (int r = 0; r < 2; r++) {
      cudaSetDevice(r);
      cr_assert(eq(int,
                   cudaMemcpyAsync(big.dsend[r], words, cases[k].first * sizeof(int32_t),
                                   cudaMemcpyHostToDevice, w.st[r]),
                   cudaSuccess));
      cr_assert(eq(int, cudaStreamSynchronize(w.st[r]), cudaSuccess));
    }
    free(words);
    sym_issue(&w, &big, KILN_SYM_ALLGATHER, KILN_SUM, 0, 2, false);
    cr_assert(eq(long, (long)sym_next_seq(&w, 0), (long)(s0 + 1)), "%s: the first call took one round",
              cases[k].what);
    sym_run_check(&w, &small, cases[k].later, KILN_SUM, false, &rng); /* the other half */
    call_prepare(&small, &w, KILN_SUM, false, &rng);
    sym_issue(&w, &small, cases[k].later, KILN_SUM, 1, 2, false);
    usleep(100000);
    sym_issue(&w, &small, cases[k].later, KILN_SUM, 0, 1, false);
    char msg[512];
    cr_assert(call_check(&small, &w, msg, sizeof msg), "%s: %s (seed %llu)", cases[k].what, msg,
              (unsigned long long)g_seed);
    assert_no_async_error(&w);
    call_free(&big, &w);
    call_free(&small, &w);
    world_fini(&w);
  }
}

GPU_SUITE_HOOK("test_gpu_sym")
