/*
 * GPU suite of the runtime: classic plans (ring, direct) for all four collectives on 2, 4 and 8
 * GPUs, every data type and op, sizes from one element up, in place and out of place, against a
 * CPU reference on fresh data (seed printed); synthesized plans (kiln's synthesizer on switchN
 * with plans/sketches/switchN.xml, threadblocks capped at the SM count) for all four collectives,
 * Simple and LL, synthesized out of place and in place, every dtype and op at counts 1 and 1003
 * and three typed ops up to 4 MB, the same checks (skipped where kiln was built without the
 * synthesizer); every plan baked into the build, the same way; 1 GiB buffers; CUDA graph
 * replays; several streams; two communicators at once; a peer that never arrives; the
 * symmetric-memory kernels (every algorithm, dtype and op, in and out of place, graph replays); a
 * loaded plan's calls across 2^32 (plan_calls_past_2pow32, on one GPU too); the
 * one-process-per-GPU model (those on every GPU there is: 8, 4 or 2); 8 ranks sharing fewer GPUs,
 * one GPU too (the *_8ranks_shared tests). A test that needs more GPUs than are visible skips; the
 * binary prints "skipped: no GPU" and exits 0 where there is none.
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
#include "launch.h"            /* kilnSymGroupPeers over launches made by hand */
#include "runtime_internal.h" /* sym_choice builds a communicator's host part by hand */
#include "sym_ce.h"
#ifdef KILN_HAVE_SYNTH
#include "synth_plans.h"
#endif

#define ALL_DTYPES 12

/* "s" after a count of n things but one. */
static const char* plural(int n) { return n == 1 ? "" : "s"; }

/* The GPU count and seed the PRE_ALL hook left in the environment (test workers are separate
 * processes). */
static void gpu_env(void) {
  const char* n = getenv("KILN_TEST_GPUS");
  const char* s = getenv("KILN_TEST_SEED");
  g_ngpus = n ? atoi(n) : 0;
  g_seed = s ? strtoull(s, NULL, 0) : 1;
}

/* Every test's .init but the shared suites': skips without 2 GPUs. */
static void gpu_init(void) {
  gpu_env();
  if (g_ngpus < 2) cr_skip_test("skipped: %d GPUs visible, 2 needed", g_ngpus);
}

/* The suites of 8 ranks sharing fewer GPUs (sweep_world): they run where there is one GPU too. */
static void gpu_init_shared(void) {
  gpu_env();
  if (g_ngpus < 1) cr_skip_test("skipped: no GPU");
}

/* GPUs the single-size tests use: every GPU there is, as 8, 4 or 2. */
static int suite_gpus(void) { return g_ngpus >= 8 ? 8 : g_ngpus >= 4 ? 4 : 2; }

typedef struct planCase {
  const char* algo;
  kilnColl_t coll;
} planCase;

static const planCase kPlans[] = {
    {"ring", KILN_COLL_ALLREDUCE},     {"direct", KILN_COLL_ALLREDUCE},
    {"ring", KILN_COLL_ALLGATHER},     {"direct", KILN_COLL_ALLGATHER},
    {"ring", KILN_COLL_REDUCESCATTER}, {"direct", KILN_COLL_REDUCESCATTER},
    {"direct", KILN_COLL_ALLTOALL},
};

typedef struct loaded {
  kilnPlan* plan;
  kilnExec_t ex[GPU_MAX];
} loaded;

/* Loads plan (which l then owns) on every rank of w. */
static void load_plan(loaded* l, const world* w, kilnPlan* plan) {
  l->plan = plan;
  for (int i = 0; i < w->n; i++) {
    kilnResult_t r = kilnPlanLoad(w->kc[i], l->plan, &l->ex[i]);
    cr_assert(eq(int, r, KILN_SUCCESS), "load %s on rank %d: %s", l->plan->name, i, kilnLastError());
  }
}

static void load(loaded* l, const world* w, const char* algo, kilnColl_t coll, int chunks,
                 int instances, kilnProto_t proto, bool inplace) {
  kilnClassicOptions o = KILN_CLASSIC_OPTIONS_INIT;
  o.chunks = chunks;
  o.instances = instances;
  o.proto = proto;
  o.inplace = inplace;
  kilnPlan* plan = NULL;
  kilnResult_t r = kilnClassicPlan(algo, coll, w->n, &o, &plan);
  cr_assert(eq(int, r, KILN_SUCCESS), "classic %s %s: %s", algo, kilnCollName(coll), kilnLastError());
  load_plan(l, w, plan);
}

static void unload(loaded* l, const world* w) {
  for (int i = 0; i < w->n; i++) kilnExecFree(l->ex[i]);
  kilnPlanFree(l->plan);
}

/* No rank's communicator recorded an error on the GPU. */
static void assert_no_async_error(const world* w) {
  for (int r = 0; r < w->n; r++) {
    kilnResult_t ae;
    kilnCommGetAsyncError(w->kc[r], &ae);
    cr_assert(eq(int, ae, KILN_SUCCESS), "rank %d async error", r);
  }
}

/* CUDA graphs of one call per rank: capture_begin (after the stream's pending work) and
 * capture_end around the rank's call, replay_all launches every rank's graph. */
static void capture_begin(const world* w, int r) {
  cudaSetDevice(w->dev[r]);
  cudaStreamSynchronize(w->st[r]);
  cr_assert(eq(int, cudaStreamBeginCapture(w->st[r], cudaStreamCaptureModeThreadLocal), cudaSuccess));
}

/* Captures begun on every rank's stream at once (capture_begin's synchronization, an unsafe call
 * while this thread captures, would end the captures begun before it). */
static void capture_begin_all(const world* w) {
  for (int r = 0; r < w->n; r++) {
    cudaSetDevice(w->dev[r]);
    cudaStreamSynchronize(w->st[r]);
  }
  for (int r = 0; r < w->n; r++) {
    cudaSetDevice(w->dev[r]);
    cr_assert(eq(int, cudaStreamBeginCapture(w->st[r], cudaStreamCaptureModeThreadLocal), cudaSuccess));
  }
}

static void capture_end(const world* w, int r, cudaGraphExec_t* ge) {
  cudaGraph_t g;
  cr_assert(eq(int, cudaStreamEndCapture(w->st[r], &g), cudaSuccess));
  cr_assert(eq(int, cudaGraphInstantiate(ge, g, 0), cudaSuccess));
  cudaGraphDestroy(g);
}

/* Every rank's capture ended, then each graph instantiated: instantiating one while this thread
 * still captures another stream (thread-local mode) is refused (cudaErrorStreamCaptureUnsupported). */
static void capture_end_all(const world* w, cudaGraphExec_t* ge) {
  cudaGraph_t g[GPU_MAX];
  for (int r = 0; r < w->n; r++) cr_assert(eq(int, cudaStreamEndCapture(w->st[r], &g[r]), cudaSuccess), "rank %d", r);
  for (int r = 0; r < w->n; r++) {
    cr_assert(eq(int, cudaGraphInstantiate(&ge[r], g[r], 0), cudaSuccess), "rank %d", r);
    cudaGraphDestroy(g[r]);
  }
}

static void replay_all(const world* w, cudaGraphExec_t* ge) {
  for (int r = 0; r < w->n; r++) {
    cudaSetDevice(w->dev[r]);
    cr_assert(eq(int, cudaGraphLaunch(ge[r], w->st[r]), cudaSuccess));
  }
}

static const char* const kNoEnv[] = {NULL};

/* world_init with settings from the environment: env holds name, value pairs, NULL-terminated,
 * each set while the communicators are created (which read them) and removed after. */
static bool world_init_env_as(world* w, int n, bool shared, const kilnCommConfig* cfg, const char* const* env) {
  for (const char* const* e = env; e[0]; e += 2) setenv(e[0], e[1], 1);
  kilnParamsReload();
  const bool made = shared ? world_init_shared(w, n, g_ngpus, NULL, cfg) : world_init(w, n, cfg);
  for (const char* const* e = env; e[0]; e += 2) unsetenv(e[0]);
  kilnParamsReload();
  return made;
}
static bool world_init_env(world* w, int n, const kilnCommConfig* cfg, const char* const* env) {
  return world_init_env_as(w, n, false, cfg, env);
}

/* The world of a sweep of n ranks: n GPUs, or (shared) n ranks over the fewer GPUs there are
 * (world_init_shared: kilnCommCreateShared, no NCCL; where there are n GPUs the n-GPU suite runs
 * and the shared one skips). Skips when neither fits this machine. */
static void sweep_world(world* w, int n, bool shared, const kilnCommConfig* cfg, const char* const* env) {
  if (shared && g_ngpus >= n) cr_skip_test("skipped: %d GPUs visible: the %d-GPU suite runs this", g_ngpus, n);
  if (!shared && g_ngpus < n) cr_skip_test("skipped: %d GPUs needed, %d visible", n, g_ngpus);
  cr_assert(world_init_env_as(w, n, shared, cfg, env));
  if (shared) fprintf(stderr, "  %d ranks on %d GPU%s (kilnCommCreateShared)\n", n, g_ngpus, plural(g_ngpus));
}

/* The fewest SMs a rank of w has to itself: its GPU's, divided among the ranks there. */
static int rank_sm_share(const world* w) {
  int share = INT_MAX;
  for (int r = 0; r < w->n; r++) {
    int sms = 0, here = 0;
    cr_assert(eq(int, cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, w->dev[r]), cudaSuccess));
    for (int q = 0; q < w->n; q++) here += w->dev[q] == w->dev[r];
    if (sms / here < share) share = sms / here;
  }
  return share;
}

/* Runs the loaded plan on every rank and checks the result. */
static void run_check(const loaded* l, const world* w, call* c, kilnRedOp_t op, bool inplace, uint64_t* rng) {
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

/* A (data type, op) pair of a size sweep. */
typedef struct typedOp {
  kilnDataType_t dt;
  kilnRedOp_t op;
} typedOp;

/* What check_plan runs on a loaded plan: every data type and op at each small count, and each
 * typed op of the sweep at each sweep count (LL plans skip sweep counts above llMaxCount). */
typedef struct checkSet {
  const size_t* smallCounts;
  size_t nsmall;
  const typedOp* sweepTypes;
  size_t ntypes;
  const size_t* sweepCounts;
  size_t nsweep;
  size_t llMaxCount;
} checkSet;

/* Runs the check set on the loaded plan of collective coll, in place (form) or out of place.
 * A plan of a baked shape runs its generated kernel where one exists (gen/): the small cases
 * are checked on the interpreter as well. Returns whether it had a baked kernel. */
static bool check_plan(const loaded* l, const world* w, kilnColl_t coll, bool form, const checkSet* cs,
                       uint64_t* rng) {
  const bool baked = kilnExecUseBaked(l->ex[0], true);
  for (int interp = baked ? 1 : 0; interp >= 0; interp--) {
    for (int r = 0; r < w->n; r++) kilnExecUseBaked(l->ex[r], !interp);
    for (int dt = 0; dt < ALL_DTYPES; dt++)
      for (size_t ci = 0; ci < cs->nsmall; ci++) {
        call c;
        cr_assert(call_alloc(&c, w, coll, cs->smallCounts[ci], (kilnDataType_t)dt));
        const int nops = gpu_reduces(coll) ? KILN_NUM_REDOPS : 1;
        for (int op = 0; op < nops; op++) run_check(l, w, &c, (kilnRedOp_t)op, form, rng);
        call_free(&c, w);
      }
  }
  for (size_t ti = 0; ti < cs->ntypes; ti++)
    for (size_t ci = 0; ci < cs->nsweep; ci++) {
      if (l->plan->proto == KILN_PROTO_LL && cs->sweepCounts[ci] > cs->llMaxCount) continue;
      call c;
      cr_assert(call_alloc(&c, w, coll, cs->sweepCounts[ci], cs->sweepTypes[ti].dt));
      run_check(l, w, &c, gpu_reduces(coll) ? cs->sweepTypes[ti].op : KILN_SUM, form, rng);
      call_free(&c, w);
    }
  return baked;
}

static const size_t kSmallCounts[] = {1, 1003};

/* The protocols the sweeps cover. */
static const kilnProto_t kProtos[] = {KILN_PROTO_SIMPLE, KILN_PROTO_LL, KILN_PROTO_LL128};
#define NPROTOS ((int)(sizeof(kProtos) / sizeof(kProtos[0])))

/* Every classic plan, every protocol and form, every dtype and op at a few odd sizes, and a
 * size sweep for some of them (shared: sweep_world; the sweep to 1 Mi elements). */
static void sweep(int n, bool shared) {
  world w;
  sweep_world(&w, n, shared, NULL, kNoEnv);
  uint64_t rng = g_seed + (uint64_t)n;
  const clock_t t0 = clock();
  static const size_t sweepCounts[] = {7, 65536 + 13, (1u << 20) + 5, (8u << 20) + 3};
  static const typedOp sweepTypes[] = {
      {KILN_FLOAT32, KILN_SUM}, {KILN_BFLOAT16, KILN_AVG}, {KILN_INT8, KILN_MIN}, {KILN_UINT64, KILN_PROD}};
  const checkSet cs = {kSmallCounts, 2, sweepTypes, 4, sweepCounts, shared ? 3 : 4, 2u << 20};
  for (size_t pi = 0; pi < sizeof(kPlans) / sizeof(kPlans[0]); pi++)
    for (int proto = 0; proto < NPROTOS; proto++)
      for (int form = 0; form < 2; form++) {
        const planCase* pc = &kPlans[pi];
        if (form && pc->coll == KILN_COLL_ALLTOALL) continue;
        loaded l;
        load(&l, &w, pc->algo, pc->coll, 2, 2, kProtos[proto], form);
        const bool baked = check_plan(&l, &w, pc->coll, form, &cs, &rng);
        fprintf(stderr, "  %d ranks: %s%s done at %.1fs\n", n, l.plan->name, baked ? " (baked + interpreted)" : "",
                (double)(clock() - t0) / CLOCKS_PER_SEC);
        unload(&l, &w);
      }
  world_fini(&w);
}

Test(gpu_runtime, classic_plans_2gpus, .init = gpu_init, .timeout = 600) { sweep(2, false); }
Test(gpu_runtime, classic_plans_4gpus, .init = gpu_init, .timeout = 900) { sweep(4, false); }
Test(gpu_runtime, classic_plans_8gpus, .init = gpu_init, .timeout = 1800) { sweep(8, false); }
/* 8 ranks where there are fewer GPUs: the plans' 8-rank code (connections, FIFOs, flags of 7
 * peers) runs as it will on 8 GPUs, some peers on the same GPU. */
Test(gpu_runtime, classic_plans_8ranks_shared, .init = gpu_init_shared, .timeout = 1800) { sweep(8, true); }

/* Synthesized plans (kilnSynthesize on switchN with plans/sketches/switchN.xml, threadblocks
 * capped at the GPUs' SM count; tests/gpu/synth_plans.h): allgather, reducescatter, allreduce
 * and alltoall, Simple and LL, each synthesized out of place and (but alltoall) in place, run in
 * every form kilnPlanSupports grants (each synthesized plan has one); every dtype and op at counts
 * 1 and 1003, and float32 sum, bfloat16 max and int32 prod at 7, 65549 and 1048581 elements (4 MB
 * of float32). 14 plans per GPU count, kept small: the CPU reference is most of the time. */
static void synth_sweep(int n, bool shared) {
#ifndef KILN_HAVE_SYNTH
  (void)n;
  (void)shared;
  cr_skip_test("skipped: built without the synthesizer (kiln_synth needs GLPK)");
#else
  world w;
  sweep_world(&w, n, shared, NULL, kNoEnv);
  /* Threadblocks: at most a rank's share of its GPU's SMs (all of them, one rank per GPU). */
  const int maxTbs = rank_sm_share(&w);
  uint64_t rng = g_seed + 100 + (uint64_t)n;
  const clock_t t0 = clock();
  static const size_t sweepCounts[] = {7, 65536 + 13, (1u << 20) + 5};
  static const typedOp sweepTypes[] = {{KILN_FLOAT32, KILN_SUM}, {KILN_BFLOAT16, KILN_MAX}, {KILN_INT32, KILN_PROD}};
  const checkSet cs = {kSmallCounts, 2, sweepTypes, 3, sweepCounts, 3, 2u << 20};
  static const kilnColl_t colls[] = {KILN_COLL_ALLGATHER, KILN_COLL_REDUCESCATTER, KILN_COLL_ALLREDUCE,
                                     KILN_COLL_ALLTOALL};
  for (int proto = 0; proto < NPROTOS; proto++)
    for (int ci = 0; ci < 4; ci++)
      for (int planInplace = 0; planInplace < 2; planInplace++) {
        if (planInplace && colls[ci] == KILN_COLL_ALLTOALL) continue;
        kilnPlan* plan = NULL;
        kilnResult_t r = synth_switch_plan(n, colls[ci], kProtos[proto], planInplace, maxTbs, &plan);
        cr_assert(eq(int, r, KILN_SUCCESS), "synthesize %s on switch%d (%s, %s): %s", kilnCollName(colls[ci]), n,
                  kilnProtoName(kProtos[proto]), planInplace ? "in place" : "out of place", kilnLastError());
        loaded l;
        load_plan(&l, &w, plan);
        int forms = 0;
        bool baked = false;
        for (int form = 0; form < 2; form++) {
          if (!kilnPlanSupports(plan, 1, KILN_FLOAT32, KILN_SUM, form)) continue;
          baked |= check_plan(&l, &w, colls[ci], form, &cs, &rng);
          forms++;
        }
        cr_assert(gt(int, forms, 0), "plan %s supports neither form", plan->name);
        fprintf(stderr, "  %d ranks: synthesized %s (%s, %s plan, %d form%s)%s done at %.1fs\n", n, plan->name,
                kilnProtoName(kProtos[proto]), planInplace ? "in-place" : "out-of-place", forms, plural(forms),
                baked ? " (baked + interpreted)" : "", (double)(clock() - t0) / CLOCKS_PER_SEC);
        unload(&l, &w);
      }
  world_fini(&w);
#endif
}

/* Loads a registry entry's plan (its XML) on every rank. */
static void load_entry(loaded* l, const world* w, const kilnRegistryEntry* e) {
  kilnPlan* plan = NULL;
  cr_assert(eq(int, kilnPlanReadMemory(e->xml, strlen(e->xml), e->name, &plan), KILN_SUCCESS), "%s: %s",
            e->name, kilnLastError());
  load_plan(l, w, plan);
}

/* Every plan baked into this build for n ranks (plans/baked: the plans the registry picks by
 * default), in each form it serves: every dtype and op at counts 1 and 1003 (the baked kernel and
 * the interpreter), float32 sum, bfloat16 avg, int8 min and uint64 prod at 7, 65549 and 1048581
 * elements, whatever the plan's byte range. */
static void baked_sweep(int n) {
  if (g_ngpus < n) {
    cr_skip_test("skipped: %d GPUs needed, %d visible", n, g_ngpus);
  }
  world w;
  cr_assert(world_init(&w, n, NULL));
  uint64_t rng = g_seed + 200 + (uint64_t)n;
  const clock_t t0 = clock();
  static const size_t sweepCounts[] = {7, 65536 + 13, (1u << 20) + 5};
  static const typedOp sweepTypes[] = {
      {KILN_FLOAT32, KILN_SUM}, {KILN_BFLOAT16, KILN_AVG}, {KILN_INT8, KILN_MIN}, {KILN_UINT64, KILN_PROD}};
  const checkSet cs = {kSmallCounts, 2, sweepTypes, 4, sweepCounts, 3, 2u << 20};
  int nplans = 0;
  for (int i = 0; i < kilnRegistryCount(); i++) {
    const kilnRegistryEntry* e = kilnRegistryAt(i);
    if (!e || !e->xml || e->nranks != n) continue;
    loaded l;
    load_entry(&l, &w, e);
    bool baked = false;
    for (int form = 0; form < 2; form++)
      if (form ? e->inplace : e->outofplace) baked |= check_plan(&l, &w, e->coll, form, &cs, &rng);
    cr_assert(baked, "plan %s was baked but its kernel did not run", e->name);
    fprintf(stderr, "  %d GPUs: baked %s done at %.1fs\n", n, e->name, (double)(clock() - t0) / CLOCKS_PER_SEC);
    unload(&l, &w);
    nplans++;
  }
  fprintf(stderr, "  %d GPUs: %d baked plans checked\n", n, nplans);
  world_fini(&w);
  if (nplans == 0) cr_skip_test("skipped: no plan for %d ranks is baked into this build", n);
}

Test(gpu_runtime, baked_plans_2gpus, .init = gpu_init, .timeout = 600) { baked_sweep(2); }
Test(gpu_runtime, baked_plans_4gpus, .init = gpu_init, .timeout = 600) { baked_sweep(4); }
Test(gpu_runtime, baked_plans_8gpus, .init = gpu_init, .timeout = 900) { baked_sweep(8); }

/* A plan read from a file checked as n8_plans_sweep and plan_files check it: every dtype and op at
 * counts 1 and 1003, float32 sum, bfloat16 avg, int8 min and uint64 prod at 7 and 65549 elements. */
static const size_t kFileCounts[] = {7, 65536 + 13};
static const typedOp kFileTypes[] = {
    {KILN_FLOAT32, KILN_SUM}, {KILN_BFLOAT16, KILN_AVG}, {KILN_INT8, KILN_MIN}, {KILN_UINT64, KILN_PROD}};
static const checkSet kFileChecks = {kSmallCounts, 2, kFileTypes, 4, kFileCounts, 2, 2u << 20};

/* The most threadblocks any rank of plan p has. */
static int plan_max_tbs(const kilnPlan* p) {
  int tbs = 0;
  for (int r = 0; r < p->ngpus; r++)
    if (p->gpus[r].ntbs > tbs) tbs = p->gpus[r].ntbs;
  return tbs;
}

/* Loads plan (taking it) on w's ranks and checks it in every form it serves (kFileChecks).
 * Returns whether a baked kernel of its shape ran too (check_plan). */
static bool check_plan_file(kilnPlan* plan, const world* w, uint64_t* rng) {
  loaded l;
  load_plan(&l, w, plan);
  const kilnColl_t coll = plan->coll;
  bool baked = false;
  for (int form = 0; form < 2; form++)
    if (form ? plan->inplace : plan->outofplace) baked |= check_plan(&l, w, coll, form, &kFileChecks, rng);
  unload(&l, w);
  return baked;
}

/* The plans kiln ships for 8 GPUs (plans/n8 and the synthesized plans/n8/synth, read from their
 * XML as KILN_PLANS would read them; not baked by default: interpreted), each in every form it
 * serves: every dtype and op at counts 1 and 1003, float32 sum, bfloat16 avg, int8 min and uint64
 * prod at 7 and 65549 elements. Shared: a plan with more threadblocks than a rank's share of its
 * GPU cannot have every block resident (kilnPlanLoad refuses it) and is left out, named. */
static void n8_plans_sweep(bool shared) {
  world w;
  sweep_world(&w, 8, shared, NULL, kNoEnv);
  uint64_t rng = g_seed + 300;
  const clock_t t0 = clock();
  const int share = rank_sm_share(&w);
  static const char* const dirs[] = {KILN_SOURCE_DIR "/plans/n8", KILN_SOURCE_DIR "/plans/n8/synth"};
  int ran = 0, left = 0;
  for (size_t di = 0; di < sizeof(dirs) / sizeof(dirs[0]); di++) {
    /* In name order: the inputs each plan draws from the seed do not depend on the filesystem. */
    struct dirent** names = NULL;
    const int nnames = scandir(dirs[di], &names, NULL, alphasort);
    cr_assert(nnames >= 0, "cannot read %s", dirs[di]);
    for (int ni = 0; ni < nnames; ni++) {
      const struct dirent* e = names[ni];
      const size_t len = strlen(e->d_name);
      if (len < 5 || strcmp(e->d_name + len - 4, ".xml") != 0) continue;
      char path[1024];
      snprintf(path, sizeof path, "%s/%s", dirs[di], e->d_name);
      kilnPlan* plan = NULL;
      cr_assert(eq(int, kilnPlanReadFile(path, &plan), KILN_SUCCESS), "%s: %s", path, kilnLastError());
      cr_assert(eq(int, plan->ngpus, 8), "%s: %d ranks", path, plan->ngpus);
      const int tbs = plan_max_tbs(plan);
      if (tbs > share) {
        fprintf(stderr, "  8 ranks: %s left out: %d threadblocks per rank, a rank's share of its GPU is %d SMs\n",
                e->d_name, tbs, share);
        kilnPlanFree(plan);
        left++;
        continue;
      }
      const bool baked = check_plan_file(plan, &w, &rng);
      fprintf(stderr, "  8 ranks: %s%s done at %.1fs\n", e->d_name, baked ? " (baked + interpreted)" : "",
              (double)(clock() - t0) / CLOCKS_PER_SEC);
      ran++;
    }
    for (int ni = 0; ni < nnames; ni++) free(names[ni]);
    free(names);
  }
  fprintf(stderr, "  8 ranks: %d plans of plans/n8 checked, %d left out\n", ran, left);
  cr_assert(gt(int, ran, 0), "no plan of plans/n8 could run here");
  world_fini(&w);
}

Test(gpu_runtime, n8_plans_8gpus, .init = gpu_init, .timeout = 900) { n8_plans_sweep(false); }
Test(gpu_runtime, n8_plans_8ranks_shared, .init = gpu_init_shared, .timeout = 900) { n8_plans_sweep(true); }

/* The plan files named in KILN_TEST_PLAN_FILES (paths separated by ':'; scripts/quickstart.sh
 * names the plan it synthesized), each on as many ranks as it has: a GPU each where there are
 * enough GPUs, else sharing them (a rank's share of its GPU's SMs must hold the plan's blocks, or
 * the test fails naming the plan). Checked as plans/n8's are. Skips when the variable is unset. */
Test(gpu_runtime, plan_files, .init = gpu_init_shared, .timeout = 900) {
  const char* env = getenv("KILN_TEST_PLAN_FILES");
  if (!env || !env[0]) cr_skip_test("skipped: KILN_TEST_PLAN_FILES names no plan");
  char* list = strdup(env);
  cr_assert(list != NULL);
  uint64_t rng = g_seed + 400;
  int ran = 0;
  for (char *save = NULL, *path = strtok_r(list, ":", &save); path; path = strtok_r(NULL, ":", &save)) {
    kilnPlan* plan = NULL;
    cr_assert(eq(int, kilnPlanReadFile(path, &plan), KILN_SUCCESS), "%s: %s", path, kilnLastError());
    const int n = plan->ngpus;
    cr_assert(n >= 2 && n <= GPU_MAX, "%s: %d ranks (2 to %d run here)", path, n, GPU_MAX);
    const bool shared = g_ngpus < n;
    world w;
    sweep_world(&w, n, shared, NULL, kNoEnv);
    const int tbs = plan_max_tbs(plan), share = rank_sm_share(&w);
    if (tbs > share) {
      kilnPlanFree(plan);
      world_fini(&w);
      cr_fatal("%s: %d threadblocks per rank, but a rank's share of its GPU is %d SMs (%d ranks on %d GPU%s)", path,
               tbs, share, n, g_ngpus, plural(g_ngpus));
    }
    const clock_t t0 = clock();
    const bool baked = check_plan_file(plan, &w, &rng);
    const int gpus = shared ? g_ngpus : n;
    fprintf(stderr, "  %s: %d ranks on %d GPU%s, every form it serves checked%s in %.1fs\n", path, n, gpus,
            plural(gpus), baked ? " (baked + interpreted)" : "", (double)(clock() - t0) / CLOCKS_PER_SEC);
    world_fini(&w);
    ran++;
  }
  free(list);
  cr_assert(gt(int, ran, 0), "KILN_TEST_PLAN_FILES=%s names no plan", env);
}

/* ---- symmetric-memory kernels (kilnSymRun, kernels/sym.cuh) ---- */

static const kilnSymAlgo_t kSymAlgos[] = {KILN_SYM_ALLREDUCE_ONESHOT, KILN_SYM_ALLREDUCE_TWOSHOT,
                                          KILN_SYM_REDUCESCATTER, KILN_SYM_ALLGATHER, KILN_SYM_ALLTOALL};

static kilnColl_t sym_coll(kilnSymAlgo_t a) {
  return a <= KILN_SYM_ALLREDUCE_TWOSHOT ? KILN_COLL_ALLREDUCE
       : a == KILN_SYM_REDUCESCATTER    ? KILN_COLL_REDUCESCATTER
       : a == KILN_SYM_ALLGATHER        ? KILN_COLL_ALLGATHER
                                        : KILN_COLL_ALLTOALL;
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

/* One call of algorithm a on every rank (no synchronization; grouped: in one kilnGroupStart/End,
 * each GPU's launches issued by its own launcher thread), then the check. */
/* Issues one call of algorithm a on ranks [r0, r1) of w, inside one group when grouped. */
static void sym_issue(const world* w, const call* c, kilnSymAlgo_t a, kilnRedOp_t op, int r0, int r1, bool grouped) {
  if (grouped) kilnGroupStart();
  for (int r = r0; r < r1; r++) {
    kilnResult_t res = kilnSymRun(w->kc[r], a, c->sendp[r], c->recvp[r], c->count, c->dt, op, w->st[r]);
    cr_assert(eq(int, res, KILN_SUCCESS), "%s rank %d: %s", kilnSymAlgoName(a), r, kilnLastError());
  }
  if (grouped) cr_assert(eq(int, kilnGroupEnd(), KILN_SUCCESS), "%s", kilnLastError());
}

static void sym_run_check_as(const world* w, call* c, kilnSymAlgo_t a, kilnRedOp_t op, bool inplace, uint64_t* rng,
                             bool grouped) {
  call_prepare(c, w, op, inplace, rng);
  sym_issue(w, c, a, op, 0, w->n, grouped);
  char msg[512];
  bool ok = call_check(c, w, msg, sizeof(msg));
  cr_assert(ok, "%s %s %s count %zu%s: %s (seed %llu)", kilnSymAlgoName(a), kilnDataTypeName(c->dt),
            kilnRedOpName(op), c->count, inplace ? " in place" : "", msg, (unsigned long long)g_seed);
  assert_no_async_error(w);
}

static void sym_run_check(const world* w, call* c, kilnSymAlgo_t a, kilnRedOp_t op, bool inplace, uint64_t* rng) {
  sym_run_check_as(w, c, a, op, inplace, rng, false);
}

/* `calls` int32 sums of `count` elements with algorithm a captured in a CUDA graph per rank, then
 * replayed `replays` times, each on fresh data and checked. */
static void sym_graph_check_call(const world* w, kilnSymAlgo_t a, call* cp, int calls, int replays, uint64_t* rng) {
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

static void sym_graph_check(const world* w, kilnSymAlgo_t a, size_t count, int replays, uint64_t* rng) {
  call c;
  cr_assert(call_alloc(&c, w, sym_coll(a), count, KILN_INT32));
  sym_graph_check_call(w, a, &c, 1, replays, rng);
  call_free(&c, w);
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
  static const typedOp big[] = {{KILN_FLOAT32, KILN_SUM}, {KILN_INT8, KILN_MAX}, {KILN_FLOAT16, KILN_AVG},
                                {KILN_BFLOAT16, KILN_SUM}};
  static const size_t bigCounts[] = {262147, 1048576};
  int ncalls = 0;
  for (symCases it = SYM_CASES(small); sym_cases_next(&it);) {
    call c;
    cr_assert(call_alloc(&c, &w, it.coll, it.count, it.dtype));
    const int nops = gpu_reduces(it.coll) ? KILN_NUM_REDOPS : 1;
    for (int op = 0; op < nops; op++, ncalls++) sym_run_check(&w, &c, it.a, (kilnRedOp_t)op, it.inplace, &rng);
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
    if (it % 3 == 2) run_check(&l, &w, &c, KILN_SUM, false, &rng);
    else sym_run_check(&w, &c, it % 3 ? KILN_SYM_ALLREDUCE_TWOSHOT : KILN_SYM_ALLREDUCE_ONESHOT, KILN_SUM, false, &rng);
  }
  /* In-place alltoall is refused, naming the algorithm; nothing launched. */
  cr_assert(not(kilnSymFits(w.kc[0], KILN_SYM_ALLTOALL, 16, KILN_FLOAT32, true)));
  kilnResult_t r = kilnSymRun(w.kc[0], KILN_SYM_ALLTOALL, c.recvp[0], c.recvp[0], 16, KILN_FLOAT32, KILN_SUM, w.st[0]);
  cr_assert(eq(int, r, KILN_ERR_UNSUPPORTED));
  cr_assert(strstr(kilnLastError(), "sym-alltoall") != NULL, "%s", kilnLastError());
  call_free(&c, &w);
  unload(&l, &w);
  fprintf(stderr, "  %d ranks: %d symmetric-memory calls checked\n", n, ncalls);
  world_fini(&w);
}

Test(gpu_runtime, sym_kernels_2gpus, .init = gpu_init, .timeout = 600) { sym_sweep(2, kNoEnv, false); }
Test(gpu_runtime, sym_kernels_4gpus, .init = gpu_init, .timeout = 600) { sym_sweep(4, kNoEnv, false); }
Test(gpu_runtime, sym_kernels_8gpus, .init = gpu_init, .timeout = 900) { sym_sweep(8, kNoEnv, false); }
/* The kernels' 8-rank code (sym.cuh's loops sized for any rank count, 8 regions per half) where
 * there are fewer GPUs. */
Test(gpu_runtime, sym_kernels_8ranks_shared, .init = gpu_init_shared, .timeout = 900) { sym_sweep(8, kNoEnv, true); }
/* The kernels' 2- and 4-rank code (sym.cuh's staged form has a kernel of its own for them, its
 * loops sized at compile time) where there are fewer GPUs than ranks. */
Test(gpu_runtime, sym_kernels_2ranks_shared, .init = gpu_init_shared, .timeout = 600) { sym_sweep(2, kNoEnv, true); }
Test(gpu_runtime, sym_kernels_4ranks_shared, .init = gpu_init_shared, .timeout = 600) { sym_sweep(4, kNoEnv, true); }

/* The same sweep with every segment and two-shot share past 1 byte as LL128 lines
 * (kernels/sym.cuh bodyLL128, bodyLL128x2; by default only mid sizes): partial lines and words of
 * every data type, shares whose last line reaches past them, a line or a few per block, every op,
 * in and out of place, back to back on alternating halves with the flag form of the largest
 * calls between them. */
static const char* const kAllLL128[] = {"KILN_SYM_LL128_BYTES",    "1", "KILN_SYM_LL128_MAX_BYTES",    "1073741824",
                                        "KILN_SYM_LL2_128_BYTES", "1", "KILN_SYM_LL2_128_MAX_BYTES", "1073741824",
                                        NULL};
Test(gpu_runtime, sym_ll128_2gpus, .init = gpu_init, .timeout = 600) { sym_sweep(2, kAllLL128, false); }
Test(gpu_runtime, sym_ll128_4gpus, .init = gpu_init, .timeout = 600) { sym_sweep(4, kAllLL128, false); }
Test(gpu_runtime, sym_ll128_8gpus, .init = gpu_init, .timeout = 900) { sym_sweep(8, kAllLL128, false); }
Test(gpu_runtime, sym_ll128_8ranks_shared, .init = gpu_init_shared, .timeout = 900) { sym_sweep(8, kAllLL128, true); }

/* The same sweep with every one-shot segment that fits the LL lines' staging as LL12 lines
 * (kernels/sym.cuh bodyLL of form LL12; by default one-shot LL segments of elements of at most 4 bytes):
 * partial lines of 1-, 2- and 4-byte elements (12, 6 or 3 to a line), unaligned tails, blocks of
 * whole lines (the last ones short or empty), every op, in and out of place; 8-byte types and
 * two-shot shares as LL lines. */
static const char* const kAllLL12[] = {"KILN_SYM_LL_BYTES", "1073741824", "KILN_SYM_LL128_BYTES", "0",
                                       "KILN_SYM_LL2_128_BYTES", "0", "KILN_SYM_LL12_BYTES", "0", NULL};
Test(gpu_runtime, sym_ll12_2gpus, .init = gpu_init, .timeout = 600) { sym_sweep(2, kAllLL12, false); }
Test(gpu_runtime, sym_ll12_4gpus, .init = gpu_init, .timeout = 600) { sym_sweep(4, kAllLL12, false); }
Test(gpu_runtime, sym_ll12_8gpus, .init = gpu_init, .timeout = 900) { sym_sweep(8, kAllLL12, false); }
Test(gpu_runtime, sym_ll12_8ranks_shared, .init = gpu_init_shared, .timeout = 900) { sym_sweep(8, kAllLL12, true); }

/* The flag form in rounds: 64 KiB of staging per GPU (32 KiB a half), 1 KiB per block and no LL
 * lines, so a call of a few thousand elements takes many rounds (odd and even numbers of them,
 * windows cut among several blocks, the last ranges empty). Every algorithm, data type and op, in
 * and out of place, calls back to back on the same halves; then each algorithm captured in a CUDA
 * graph (an odd number of rounds, so replays start on alternate halves) and replayed on fresh
 * data. */
static void sym_rounds_run(int n, bool shared) {
  kilnCommConfig cfg = KILN_COMM_CONFIG_INITIALIZER;
  cfg.symBytes = 64 << 10;
  static const char* const env[] = {"KILN_SYM_LL_BYTES", "0", "KILN_SYM_LL2_BYTES", "0",
                                    "KILN_SYM_BLOCK_BYTES", "1024", NULL};
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
    for (int op = 0; op < nops; op++, ncalls++) sym_run_check(&w, &c, it.a, (kilnRedOp_t)op, it.inplace, &rng);
    call_free(&c, &w);
  }
  for (size_t ai = 0; ai < sizeof(kSymAlgos) / sizeof(kSymAlgos[0]); ai++)
    sym_graph_check(&w, kSymAlgos[ai], 9001, 8, &rng);
  fprintf(stderr, "  %d ranks: %d symmetric-memory calls in rounds checked\n", n, ncalls);
  world_fini(&w);
}
Test(gpu_runtime, sym_rounds, .init = gpu_init, .timeout = 600) { sym_rounds_run(suite_gpus(), false); }
/* The same with 2, 4 and 8 ranks sharing fewer GPUs: the staged form's kernels for 2 and 4 ranks
 * and for any count. */
Test(gpu_runtime, sym_rounds_2ranks_shared, .init = gpu_init_shared, .timeout = 600) { sym_rounds_run(2, true); }
Test(gpu_runtime, sym_rounds_4ranks_shared, .init = gpu_init_shared, .timeout = 600) { sym_rounds_run(4, true); }
Test(gpu_runtime, sym_rounds_8ranks_shared, .init = gpu_init_shared, .timeout = 600) { sym_rounds_run(8, true); }

/* Programmatic dependent launch (KILN_SYM_PDL): allreduces back to back, each on the one before's
 * output (sym_pdl_chain); and a kernel right before each symmetric call writes
 * its input and a kernel right after reads its output (kilnSymCopyLaunch copies the call's fresh
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
        if (graph) capture_begin(w, r);
        else cudaSetDevice(r);
        for (int k = 0; k < K; k++) {
          cr_assert(eq(int, kilnSymCopyLaunch(in[r], c[k].sendp[r], inBytes, 4, w->st[r]), cudaSuccess));
          kilnResult_t res = kilnSymRun(w->kc[r], a, in[r], out[r], count, KILN_INT32, KILN_SUM, w->st[r]);
          cr_assert(eq(int, res, KILN_SUCCESS), "%s", kilnLastError());
          cr_assert(eq(int, kilnSymCopyLaunch(c[k].recvp[r], out[r], outBytes, 4, w->st[r]), cudaSuccess));
        }
        if (graph) capture_end(w, r, &ge[r]);
      }
    }
    if (graph) replay_all(w, ge);
    for (int k = 0; k < K; k++) {
      char msg[512];
      cr_assert(call_check(&c[k], w, msg, sizeof msg), "%s count %zu%s pass %d, call %d of %d: %s (seed %llu)",
                kilnSymAlgoName(a), count, graph ? " (graph)" : "", pass, k, K, msg, (unsigned long long)g_seed);
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

/* Every rank's `count` int32 elements at buf[r] are `mul` times the sum of vals over the ranks. */
static void assert_times_sum(const world* w, void* const* buf, int64_t* const* vals, size_t count, int64_t mul,
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
    cr_assert(bad == count, "%s, count %zu: rank %d element %zu is %d, not %lld (seed %llu)", what, count, r, bad,
              bad < count ? got[bad] : 0, (long long)want, (unsigned long long)g_seed);
  }
  free(got);
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
    if (graph) capture_begin(w, r);
    else cudaSetDevice(r);
    for (int k = 0; k < K; k++) {
      kilnResult_t res = kilnSymRun(w->kc[r], a, c.sendp[r], c.recvp[r], count, KILN_INT32, KILN_SUM, w->st[r]);
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

Test(gpu_runtime, sym_pdl, .init = gpu_init, .timeout = 600) {
  const int n = suite_gpus();
  uint64_t rng = g_seed ^ 0x9d1;
  for (int pdl = 1; pdl >= 0; pdl--) {
    kilnCommConfig cfg = KILN_COMM_CONFIG_INITIALIZER;
    cfg.symBytes = 1 << 20; /* 70004 elements in rounds */
    static const char* const off[] = {"KILN_SYM_PDL", "0", NULL};
    static const char* const on[] = {"KILN_SYM_PDL", "1", NULL};
    world w;
    cr_assert(world_init_env(&w, n, &cfg, pdl ? on : off));
    for (int r = 0; r < n; r++) cr_assert(eq(int, w.kc[r]->symPdl, pdl), "rank %d", r);
    /* Multiples of 4 elements: the copy kernel moves whole 16-byte packs. 1004: LL lines; 70004:
     * flags, in rounds of the 512 KiB halves. */
    static const size_t counts[] = {1004, 70004};
    for (size_t ai = 0; ai < sizeof(kSymAlgos) / sizeof(kSymAlgos[0]); ai++)
      for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++)
        for (int graph = 0; graph <= 1; graph++) {
          sym_pdl_calls(&w, kSymAlgos[ai], counts[ci], graph, &rng);
          if (sym_coll(kSymAlgos[ai]) == KILN_COLL_ALLREDUCE) sym_pdl_chain(&w, kSymAlgos[ai], counts[ci], graph, &rng);
        }
    world_fini(&w);
  }
}

/* Eager calls of one communicator on different streams run in issue order (host/exec.c: a call
 * on another stream than the last call's waits for that call's event). Per count (LL lines, flags
 * in rounds, a longer call): K in-place allreduces chained on one buffer, one-shot and two-shot by
 * turns, each on the next of three streams per rank, the second on a stream destroyed right after
 * it is issued; after the fourth, a plan allreduce on a stream of its own reads the chain's buffer
 * into another (the fifth, in place, must wait for it). The chain ends at n^(K-1) times the
 * inputs' sum, the plan's output at n^4 times. */
Test(gpu_runtime, sym_streams, .init = gpu_init, .timeout = 600) {
  const int n = suite_gpus();
  uint64_t rng = g_seed ^ 0x5e7;
  enum { K = 6, PLAN_AFTER = 3 };
  kilnCommConfig cfg = KILN_COMM_CONFIG_INITIALIZER;
  cfg.symBytes = 1 << 20;
  world w;
  cr_assert(world_init(&w, n, &cfg));
  loaded l;
  load(&l, &w, "ring", KILN_COLL_ALLREDUCE, 2, 2, KILN_PROTO_SIMPLE, false);
  cudaStream_t st[GPU_MAX][4];
  for (int r = 0; r < n; r++) {
    cudaSetDevice(r);
    st[r][0] = w.st[r];
    for (int s = 1; s < 4; s++) cr_assert(eq(int, cudaStreamCreateWithFlags(&st[r][s], cudaStreamNonBlocking), cudaSuccess));
  }
  static const size_t counts[] = {1004, 70004, 400004};
  for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++) {
    const size_t count = counts[ci];
    call c, p; /* p: only its output buffers (drecv), for the plan */
    cr_assert(call_alloc(&c, &w, KILN_COLL_ALLREDUCE, count, KILN_INT32));
    cr_assert(call_alloc(&p, &w, KILN_COLL_ALLREDUCE, count, KILN_INT32));
    call_prepare(&c, &w, KILN_SUM, true, &rng);
    for (int k = 0; k < K; k++)
      for (int r = 0; r < n; r++) {
        cudaSetDevice(r);
        cudaStream_t s = st[r][k % 3];
        if (k == 1) cr_assert(eq(int, cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess));
        const kilnSymAlgo_t a = k % 2 ? KILN_SYM_ALLREDUCE_TWOSHOT : KILN_SYM_ALLREDUCE_ONESHOT;
        kilnResult_t res = kilnSymRun(w.kc[r], a, c.recvp[r], c.recvp[r], count, KILN_INT32, KILN_SUM, s);
        cr_assert(eq(int, res, KILN_SUCCESS), "count %zu call %d rank %d: %s", count, k, r, kilnLastError());
        if (k == 1) cr_assert(eq(int, cudaStreamDestroy(s), cudaSuccess));
        if (k == PLAN_AFTER) {
          res = kilnRun(l.ex[r], c.recvp[r], p.drecv[r], count, KILN_INT32, KILN_SUM, st[r][3]);
          cr_assert(eq(int, res, KILN_SUCCESS), "count %zu plan rank %d: %s", count, r, kilnLastError());
        }
      }
    for (int r = 0; r < n; r++) {
      cudaSetDevice(r);
      for (int s = 0; s < 4; s++)
        cr_assert(eq(int, cudaStreamSynchronize(st[r][s]), cudaSuccess), "count %zu rank %d stream %d: %s", count, r,
                  s, cudaGetErrorString(cudaGetLastError()));
    }
    int64_t mul = 1;
    for (int k = 1; k < K; k++) mul *= n;
    assert_times_sum(&w, c.recvp, c.vals, count, mul, "the chain's end");
    assert_times_sum(&w, p.drecv, c.vals, count, (int64_t)n * n * n * n, "the plan's output");
    call_free(&p, &w);
    call_free(&c, &w);
  }
  assert_no_async_error(&w);
  for (int r = 0; r < n; r++)
    for (int s = 1; s < 4; s++) cudaStreamDestroy(st[r][s]);
  unload(&l, &w);
  world_fini(&w);
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
  const char* const env[] = {"KILN_SYM_DIRECT_BYTES", "0", "KILN_SYM_LL2_BYTES", "0",
                             ce ? "KILN_SYM_CE_BYTES" : "KILN_SYM_CE", "0",
                             ce ? "KILN_SYM_AR_CE_BYTES" : "KILN_SYM_AR_CE", "0", NULL};
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
  for (int r = 0; r < n; r++) {
    cudaSetDevice(r);
    cr_assert(eq(int, ncclMemAlloc((void**)&pool[r], poolBytes), ncclSuccess));
  }
  ncclGroupStart();
  for (int r = 0; r < n; r++) {
    cudaSetDevice(r);
    cr_assert(eq(int, ncclCommWindowRegister(w.nccl[r], pool[r], poolBytes, &win[r], NCCL_WIN_COLL_SYMMETRIC),
                 ncclSuccess));
  }
  cr_assert(eq(int, ncclGroupEnd(), ncclSuccess));
  for (int r = 0; r < n; r++) {
    cr_assert(eq(int, kilnCommWindowAdd(w.kc[r], win[r], pool[r], poolBytes), KILN_SUCCESS), "%s", kilnLastError());
    cr_assert(eq(int, kilnCommWindowCount(w.kc[r]), 1));
  }
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
    cr_assert(eq(int, ncclCommWindowRegister(w.nccl[r], pool[r] + half, half / 2, &inner[r], NCCL_WIN_COLL_SYMMETRIC),
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
                     : it.coll == KILN_COLL_ALLREDUCE ? (ce && even ? KILN_SYM_DIRECT_REDUCE_CE : KILN_SYM_DIRECT_SM)
                                                      : copyForm;
      cr_assert(eq(int, kilnSymDirectForm(w.kc[0], a, c.sendp[0], c.recvp[0], c.count, c.dt), form),
                "%s %s count %zu%s: direct or not, and which form", kilnSymAlgoName(a), kilnDataTypeName(c.dt),
                c.count, it.inplace ? " in place" : "");
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
    cr_assert(not(kilnSymIsDirect(w.kc[0], KILN_SYM_ALLREDUCE_TWOSHOT, plain.dsend[0], plain.drecv[0], plain.count,
                                  plain.dt)));
    sym_run_check(&w, &plain, it.ai % 2 ? KILN_SYM_ALLREDUCE_TWOSHOT : KILN_SYM_ALLREDUCE_ONESHOT, KILN_SUM, false,
                  &rng);
  }
  for (size_t ai = 0; ai < sizeof(kSymAlgos) / sizeof(kSymAlgos[0]); ai++)
    for (size_t count = 8192; count <= 9001; count += 809) { /* whole packs and not */
      call c;
      cr_assert(call_alloc_at(&c, &w, sym_coll(kSymAlgos[ai]), count, KILN_INT32, sendAt, recvAt));
      sym_graph_check_call(&w, kSymAlgos[ai], &c, 1, 6, &rng);
      /* Grouped: the GPUs' launches issued at once, from a thread each. */
      for (int k = 0; k < 4; k++, ncalls++) sym_run_check_as(&w, &c, kSymAlgos[ai], KILN_SUM, false, &rng, true);
      call_free(&c, &w);
    }
  /* Only the output counts: in a window, direct; outside, not. */
  cr_assert(kilnSymIsDirect(w.kc[0], KILN_SYM_ALLREDUCE_TWOSHOT, plain.dsend[0], recvAt[0], 64, KILN_FLOAT32));
  cr_assert(not(kilnSymIsDirect(w.kc[0], KILN_SYM_ALLREDUCE_TWOSHOT, sendAt[0], plain.drecv[0], 64, KILN_FLOAT32)));
  cr_assert(kilnSymIsDirect(w.kc[0], KILN_SYM_ALLGATHER, plain.dsend[0], recvAt[0], 64, KILN_FLOAT32));
  cr_assert(not(kilnSymIsDirect(w.kc[0], KILN_SYM_ALLGATHER, recvAt[0], plain.drecv[0], 64, KILN_FLOAT32)));
  /* Past the window's end: not direct. */
  cr_assert(not(kilnSymIsDirect(w.kc[0], KILN_SYM_ALLREDUCE_TWOSHOT, sendAt[0], recvAt[0], half / 4 + 1, KILN_FLOAT32)));
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

Test(gpu_runtime, sym_direct, .init = gpu_init, .timeout = 600) {
  sym_direct_run(false);
}

Test(gpu_runtime, sym_direct_copy_engine, .init = gpu_init, .timeout = 600) {
  sym_direct_run(true);
}

/* Whether a grouped call of every rank goes direct into the peers' plain buffers with the
 * settings of sym_group_peers (KILN_SYM_DIRECT_BYTES=4096). */
static bool group_direct(const world* w, kilnSymAlgo_t a, size_t count, kilnDataType_t dt, bool inplace) {
  const kilnColl_t coll = sym_coll(a);
  return a != KILN_SYM_REDUCESCATTER && !(coll == KILN_COLL_ALLTOALL && inplace) &&
         kilnRegistryCallBytes(coll, w->n, count, dt) >= 4096;
}

/* Rank 0's count of calls that went direct into the clique's buffers. */
static uint64_t peer_calls(const world* w) { return w->kc[0]->symPeerCalls; }

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
Test(gpu_runtime, sym_group_peers, .init = gpu_init, .timeout = 600) {
  const int n = suite_gpus();
  if (g_ngpus < n) cr_skip_test("skipped: %d GPUs needed, %d visible", n, g_ngpus);
  /* Two-shot shares as lines never go direct (KILN_SYM_LL2_BYTES=0). */
  static const char* const env[] = {"KILN_SYM_DIRECT_BYTES", "4096", "KILN_SYM_CE_BYTES", "1048576",
                                    "KILN_SYM_LL2_BYTES", "0", "KILN_SYM_AR_CE_BYTES", "16384", NULL};
  kilnCommConfig cfg = KILN_COMM_CONFIG_INITIALIZER;
  cfg.symBytes = 1 << 20;
  world w;
  cr_assert(world_init_env(&w, n, &cfg, env));
  for (int r = 0; r < n; r++) cr_assert(w.kc[r]->clique != NULL, "rank %d: no clique", r);
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
      cr_assert(eq(u64, peer_calls(&w) - before, d ? 1 : 0), "%s %s count %zu%s: direct or not", kilnSymAlgoName(a),
                kilnDataTypeName(c.dt), c.count, it.inplace ? " in place" : "");
      if (d)
        cr_assert(eq(int, w.kc[0]->symPeerForm, group_form(&w, a, c.count, c.dt)), "%s %s count %zu: form",
                  kilnSymAlgoName(a), kilnDataTypeName(c.dt), c.count);
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
    cr_assert(call_check(&c, &w, msg, sizeof msg), "%s in two groups: %s (seed %llu)", kilnSymAlgoName(a), msg,
              (unsigned long long)g_seed);
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
      cr_assert(call_check(&c, &w, msg, sizeof msg), "%s graph replay %d: %s (seed %llu)", kilnSymAlgoName(a), it,
                msg, (unsigned long long)g_seed);
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
      cr_assert(eq(u64, peer_calls(&w), before), "%s into pool memory went direct", kilnSymAlgoName(kSymAlgos[ai]));
      call_free(&c, &w);
    }
    for (int r = 0; r < n; r++) {
      cudaSetDevice(r);
      cudaFreeAsync(recvAt[r], w.st[r]);
      cudaStreamSynchronize(w.st[r]);
      cudaFree(sendAt[r]);
    }
  }
  fprintf(stderr, "  %d GPUs: %d grouped calls direct into the peers' buffers, %d staged, checked\n", n, ndirect,
          nstaged);
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

static kilnLaunch fake_launch(struct kilnComm* c, kilnSymAlgo_t a, size_t count) {
  kilnLaunch l;
  memset(&l, 0, sizeof l);
  l.comm = c;
  l.sym = true;
  l.peerCand = true;
  l.symAlgo = (int)a;
  l.dtype = KILN_FLOAT32;
  l.symArgs.algo = (int)a;
  l.symArgs.count = count;
  l.symArgs.in = (const char*)(uintptr_t)(0x100000000ull * (c->rank + 1));
  l.symArgs.out = (char*)(uintptr_t)(0x100000000ull * (c->rank + 1) + 0x40000000ull);
  l.symArgs.rounds = 7; /* staged geometry, replaced where it goes direct */
  return l;
}

Test(gpu_runtime, sym_group_peers_choice) {
  enum { N = 4 };
  struct kilnComm cs[N];
  struct kilnClique k;
  memset(cs, 0, sizeof cs);
  memset(&k, 0, sizeof k);
  unsetenv("KILN_SYM_DIRECT");
  unsetenv("KILN_SYM_DIRECT_BYTES");
  unsetenv("KILN_SYM_DIRECT_A2A_BYTES");
  unsetenv("KILN_SYM_CE");
  unsetenv("KILN_SYM_CE_BYTES");
  unsetenv("KILN_SYM_AR_CE");
  unsetenv("KILN_SYM_AR_CE_BYTES");
  kilnParamsReload();
  k.n = k.refs = N;
  static char* wins[N]; /* each rank's window as every rank maps it (never dereferenced) */
  for (int r = 0; r < N; r++) wins[r] = (char*)(uintptr_t)(0x7000000000ull + 0x100000000ull * (uint64_t)r);
  for (int r = 0; r < N; r++) {
    cs[r].nranks = N;
    cs[r].rank = r;
    cs[r].dev = r;
    cs[r].nsm = 132;
    cs[r].win = wins[r];
    cs[r].peers = wins;
    cs[r].symStageBase = 1 << 20;
    cs[r].symHalf = (size_t)64 << 20;
    cs[r].clique = &k;
    kilnSymConfigure(&cs[r]);
    k.members[r] = &cs[r];
  }
  const size_t mib = (size_t)1 << 18; /* 1 MiB of float */
  kilnLaunch v[2 * N];
  /* Two calls per rank, queued rank by rank: an allgather of 1 MiB pieces (4 MiB of reference
   * bytes: SM stores) and an allreduce of 16 MiB (two-shot). Every rank's output is asked about
   * for the other ranks' GPUs. */
  for (int r = 0; r < N; r++) {
    v[2 * r] = fake_launch(&cs[r], KILN_SYM_ALLGATHER, mib);
    v[2 * r + 1] = fake_launch(&cs[r], KILN_SYM_ALLREDUCE_ONESHOT, 16 * mib);
  }
  g_nasks = 0;
  kilnSymGroupPeers(v, 2 * N, fake_access);
  cr_assert(eq(int, g_nasks, 2 * N));
  for (int q = 0; q < N; q++) {
    cr_assert(asked_for(N, q, v[2 * q].symArgs.out, (size_t)mib * 4 * N), "allgather output of rank %d", q);
    cr_assert(asked_for(N, q, v[2 * q + 1].symArgs.out, (size_t)16 * mib * 4), "allreduce output of rank %d", q);
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
    cr_assert(eq(u64, ar->halfBytes, cs[r].symHalf));
    for (int q = 0; q < N; q++) cr_assert(eq(ptr, (void*)ar->stage[q], (void*)(wins[q] + cs[r].symStageBase)));
    for (int q = 0; q < N; q++) {
      cr_assert(eq(ptr, ag->peerOut[q], v[2 * q].symArgs.out));
      cr_assert(eq(ptr, ar->peerOut[q], v[2 * q + 1].symArgs.out));
    }
    cr_assert(not(v[2 * r].peerCand));
    cr_assert(eq(u64, cs[r].symPeerCalls, 2));
  }
  /* The same calls queued call by call, and 64 calls per rank (the scratch grows): each pairs with
   * the calls of the same ordinal on the other ranks. (Two-shot allreduce of 4 MiB and more: 1
   * MiB shares; smaller ones go as LL128 lines, staged.) */
  enum { M = 64 };
  static kilnLaunch w[M * N];
  for (int j = 0; j < M; j++)
    for (int r = 0; r < N; r++)
      w[j * N + r] = fake_launch(&cs[r], j % 2 ? KILN_SYM_ALLREDUCE_TWOSHOT : KILN_SYM_ALLGATHER,
                                 (j % 2 ? 4 * mib : mib) + 4 * (size_t)j);
  kilnSymGroupPeers(w, M * N, fake_access);
  for (int j = 0; j < M; j++)
    for (int r = 0; r < N; r++) {
      const kilnSymArgs* a = &w[j * N + r].symArgs;
      cr_assert(eq(int, a->direct, KILN_SYM_DIRECT_SM), "call %d rank %d", j, r);
      for (int q = 0; q < N; q++) cr_assert(eq(ptr, a->peerOut[q], w[j * N + q].symArgs.out));
    }
  for (int r = 0; r < N; r++) cs[r].symPeerCalls -= M;
  /* 128 MiB of reference bytes: the copy engine for allgather and alltoall; reducescatter is
   * never a candidate (kilnSymRun), and a lone one is left alone. */
  for (int r = 0; r < N; r++) v[r] = fake_launch(&cs[r], r == 2 ? KILN_SYM_ALLGATHER : KILN_SYM_ALLTOALL, 32 * mib);
  v[N] = fake_launch(&cs[0], KILN_SYM_REDUCESCATTER, mib);
  v[N].peerCand = false;
  kilnSymGroupPeers(v, N + 1, fake_access);
  for (int r = 0; r < N; r++) cr_assert(eq(int, v[r].symArgs.direct, 0), "algorithms differ: none direct");
  for (int r = 0; r < N; r++) v[r] = fake_launch(&cs[r], KILN_SYM_ALLTOALL, 32 * mib);
  kilnSymGroupPeers(v, N, fake_access);
  for (int r = 0; r < N; r++) cr_assert(eq(int, v[r].symArgs.direct, KILN_SYM_DIRECT_ARRIVE));
  /* 512 MiB of allreduce (equal shares of whole packs): reduce-then-copy, a reducescatter of the
   * shares; one more element: two-shot. */
  for (int r = 0; r < N; r++) v[r] = fake_launch(&cs[r], KILN_SYM_ALLREDUCE_TWOSHOT, 512 * mib);
  for (int r = 0; r < N; r++) v[N + r] = fake_launch(&cs[r], KILN_SYM_ALLREDUCE_TWOSHOT, 512 * mib + 1);
  kilnSymGroupPeers(v, 2 * N, fake_access);
  for (int r = 0; r < N; r++) {
    cr_assert(eq(int, v[r].symArgs.direct, KILN_SYM_DIRECT_REDUCE_CE));
    cr_assert(eq(int, v[r].symArgs.algo, KILN_SYM_RS));
    cr_assert(eq(u64, v[r].symArgs.count, (uint64_t)512 * mib)); /* the allreduce's, divided at issue */
    cr_assert(eq(ptr, v[r].symArgs.peerOut[(r + 1) % N], v[(r + 1) % N].symArgs.out));
    cr_assert(eq(int, v[N + r].symArgs.direct, KILN_SYM_DIRECT_SM));
    cr_assert(eq(int, v[N + r].symArgs.algo, KILN_SYM_AR_TWOSHOT));
  }
  for (int r = 0; r < N; r++) cs[r].symPeerCalls -= 2;
  /* None direct: a rank missing, a count that differs, an op that differs, a GPU that cannot
   * reach the others, a member of the clique freed. */
  for (int r = 0; r < N; r++) v[r] = fake_launch(&cs[r], KILN_SYM_ALLGATHER, mib);
  kilnSymGroupPeers(v, N - 1, fake_access);
  for (int r = 0; r < N - 1; r++) cr_assert(eq(int, v[r].symArgs.direct, 0));
  for (int r = 0; r < N; r++) v[r] = fake_launch(&cs[r], KILN_SYM_ALLGATHER, r == 3 ? mib + 4 : mib);
  kilnSymGroupPeers(v, N, fake_access);
  for (int r = 0; r < N; r++) cr_assert(eq(int, v[r].symArgs.direct, 0));
  for (int r = 0; r < N; r++) {
    v[r] = fake_launch(&cs[r], KILN_SYM_ALLREDUCE_TWOSHOT, mib);
    v[r].symArgs.op = r == 1 ? KILN_MAX : KILN_SUM;
  }
  kilnSymGroupPeers(v, N, fake_access);
  for (int r = 0; r < N; r++) cr_assert(eq(int, v[r].symArgs.direct, 0));
  for (int r = 0; r < N; r++) v[r] = fake_launch(&cs[r], KILN_SYM_ALLGATHER, mib);
  g_noAccessDev = 2;
  kilnSymGroupPeers(v, N, fake_access);
  g_noAccessDev = -1;
  for (int r = 0; r < N; r++) cr_assert(eq(int, v[r].symArgs.direct, 0));
  for (int r = 0; r < N; r++) v[r] = fake_launch(&cs[r], KILN_SYM_ALLGATHER, mib);
  k.members[1] = NULL; /* rank 1's communicator freed */
  kilnSymGroupPeers(v, N, fake_access);
  k.members[1] = &cs[1];
  for (int r = 0; r < N; r++) cr_assert(eq(int, v[r].symArgs.direct, 0));
  for (int r = 0; r < N; r++) cr_assert(eq(u64, cs[r].symPeerCalls, 3));
}

/* A communicator's host part for the host-only tests below: nranks ranks on GPUs of 132 SMs, a
 * staging half of symHalf bytes (the caller sets its environment, then kilnSymConfigure). */
static void host_comm(struct kilnComm* c, int nranks, size_t symHalf) {
  memset(c, 0, sizeof *c);
  c->nranks = nranks;
  c->nsm = 132;
  c->symHalf = symHalf;
}

/* The symmetric kernels' choice and limits on the host (no GPU needed: runs in CI): the measured
 * ranges per rank count, rounds past the staging half, KILN_SYM=0, and kilnSymRun's refusal of
 * an in-place alltoall, before anything touches the GPU. */
Test(gpu_runtime, sym_choice) {
  struct kilnComm c;
  host_comm(&c, 4, (size_t)16 << 20);
  unsetenv("KILN_SYM");
  unsetenv("KILN_SYM_LL12");
  unsetenv("KILN_SYM_LL12_BYTES");
  kilnParamsReload();
  kilnSymConfigure(&c);
  /* The line forms' staging after the flag form's two halves (symLineAreas), each as large as its
   * thresholds let a call take: LL 4 regions of 512 KiB (256 KiB one-shot reductions) or 8 of 256
   * KiB (128 KiB two-shot shares); LL128 8 regions of 4370 lines (512 KiB two-shot shares). */
  cr_assert(eq(u64, c.symLLHalf, (size_t)2 << 20));
  cr_assert(eq(u64, c.symLL128Half, (size_t)4476928));
  cr_assert(eq(u64, c.symLLBase, c.symStageBase + 2 * c.symHalf));
  cr_assert(eq(u64, c.symLL128Base, c.symLLBase + 2 * c.symLLHalf));
  c.nranks = 16; /* no symmetric call can run: no line areas */
  kilnSymConfigure(&c);
  cr_assert(eq(u64, c.symLLHalf + c.symLL128Half, 0));
  c.nranks = 4;
  kilnSymConfigure(&c);
  const kilnDataType_t f = KILN_FLOAT32;
  /* allreduce counts are elements per rank; the others' are per peer piece (reference bytes =
   * count x 4 B x ranks). */
  cr_assert(eq(int, kilnSymSelect(&c, KILN_COLL_ALLREDUCE, 2, f, false), KILN_SYM_ALLREDUCE_ONESHOT));
  cr_assert(eq(int, kilnSymSelect(&c, KILN_COLL_ALLREDUCE, 32768, f, true), KILN_SYM_ALLREDUCE_ONESHOT)); /* 128 KiB */
  cr_assert(eq(int, kilnSymSelect(&c, KILN_COLL_ALLREDUCE, 65536, f, true), KILN_SYM_ALLREDUCE_ONESHOT)); /* 256 KiB */
  cr_assert(eq(int, kilnSymSelect(&c, KILN_COLL_ALLREDUCE, 65540, f, true), KILN_SYM_ALLREDUCE_TWOSHOT));
  cr_assert(eq(int, kilnSymSelect(&c, KILN_COLL_ALLREDUCE, 262144, f, false), KILN_SYM_ALLREDUCE_TWOSHOT));
  cr_assert(eq(int, kilnSymSelect(&c, KILN_COLL_ALLREDUCE, 4u << 20, f, false), KILN_SYM_ALLREDUCE_TWOSHOT)); /* 16 MiB */
  cr_assert(eq(int, kilnSymSelect(&c, KILN_COLL_ALLREDUCE, 1u << 28, f, true), KILN_SYM_ALLREDUCE_TWOSHOT)); /* 1 GiB */
  cr_assert(eq(int, kilnSymSelect(&c, KILN_COLL_REDUCESCATTER, 1, f, false), KILN_SYM_REDUCESCATTER));
  cr_assert(eq(int, kilnSymSelect(&c, KILN_COLL_ALLGATHER, 1u << 20, f, true), KILN_SYM_ALLGATHER)); /* 16 MiB */
  cr_assert(eq(int, kilnSymSelect(&c, KILN_COLL_ALLGATHER, 1u << 26, f, false), KILN_SYM_ALLGATHER)); /* 1 GiB */
  cr_assert(eq(int, kilnSymSelect(&c, KILN_COLL_REDUCESCATTER, 1u << 26, f, true), KILN_SYM_REDUCESCATTER));
  cr_assert(eq(int, kilnSymSelect(&c, KILN_COLL_ALLTOALL, 1024, f, true), KILN_SYM_NONE));
  cr_assert(eq(int, kilnSymSelect(&c, KILN_COLL_ALLTOALL, 1024, f, false), KILN_SYM_ALLTOALL));
  /* Two ranks: allreduce one-shot to 4 MiB, allgather and alltoall at every size (512 KiB too). */
  c.nranks = 2;
  cr_assert(eq(int, kilnSymSelect(&c, KILN_COLL_ALLREDUCE, 1u << 20, f, false), KILN_SYM_ALLREDUCE_ONESHOT));
  cr_assert(eq(int, kilnSymSelect(&c, KILN_COLL_ALLREDUCE, 2u << 20, f, false), KILN_SYM_ALLREDUCE_TWOSHOT));
  cr_assert(eq(int, kilnSymSelect(&c, KILN_COLL_ALLGATHER, 65536, f, false), KILN_SYM_ALLGATHER));
  cr_assert(eq(int, kilnSymSelect(&c, KILN_COLL_ALLTOALL, 65536, f, false), KILN_SYM_ALLTOALL));
  cr_assert(eq(int, kilnSymSelect(&c, KILN_COLL_ALLGATHER, 131072, f, false), KILN_SYM_ALLGATHER));
  cr_assert(eq(int, kilnSymSelect(&c, KILN_COLL_ALLTOALL, 1u << 27, f, false), KILN_SYM_ALLTOALL)); /* 1 GiB */
  /* No ranges for 8 ranks (not measured): plans. */
  c.nranks = 8;
  cr_assert(eq(int, kilnSymSelect(&c, KILN_COLL_ALLREDUCE, 2, f, false), KILN_SYM_NONE));
  cr_assert(kilnSymFits(&c, KILN_SYM_ALLREDUCE_ONESHOT, 2, f, false));
  /* Past a staging half the flag form goes in rounds: any size fits. */
  c.nranks = 4;
  cr_assert(kilnSymFits(&c, KILN_SYM_ALLREDUCE_ONESHOT, 1u << 20, f, false));
  cr_assert(kilnSymFits(&c, KILN_SYM_ALLREDUCE_ONESHOT, (1u << 20) + 64, f, false));
  cr_assert(kilnSymFits(&c, KILN_SYM_ALLREDUCE_TWOSHOT, (size_t)1 << 30, f, true));
  cr_assert(not(kilnSymFits(&c, KILN_SYM_ALLTOALL, 16, f, true)));
  cr_assert(not(kilnSymFits(&c, (kilnSymAlgo_t)7, 16, f, false)));
  /* A segment under the LL limit whose lines overflow its region goes as flags: halves of 512 KiB
   * on 4 ranks hold 128 KiB per region, 70001 bytes take 140 KiB as lines (this was refused). */
  const size_t half16 = c.symHalf;
  c.symHalf = 512u << 10;
  kilnSymConfigure(&c);
  cr_assert(eq(u64, c.symLLHalf, (size_t)512 << 10)); /* at most a half */
  cr_assert(kilnSymFits(&c, KILN_SYM_REDUCESCATTER, 70001, KILN_INT8, false));
  cr_assert(kilnSymFits(&c, KILN_SYM_ALLTOALL, 70001, KILN_INT8, false));
  kilnSymArgs small;
  cr_assert(kilnSymStagedGeometry(&c, KILN_SYM_ALLTOALL, 70001, KILN_INT8, false, &small));
  cr_assert(eq(int, small.ll, 0));
  c.symHalf = half16;
  kilnSymConfigure(&c);
  kilnResult_t r = kilnSymRun(&c, KILN_SYM_ALLTOALL, (void*)16, (void*)16, 1024, f, KILN_SUM, 0);
  cr_assert(eq(int, r, KILN_ERR_UNSUPPORTED));
  cr_assert(strstr(kilnLastError(), "sym-alltoall") != NULL, "%s", kilnLastError());
  cr_assert(strstr(kilnLastError(), "in place") != NULL, "%s", kilnLastError());
  cr_assert(eq(int, kilnSymRun(NULL, KILN_SYM_ALLGATHER, NULL, NULL, 1, f, KILN_SUM, 0), KILN_ERR_INVALID_ARGUMENT));
  cr_assert(eq(int, kilnSymRun(&c, (kilnSymAlgo_t)9, (void*)16, (void*)32, 1, f, KILN_SUM, 0),
               KILN_ERR_INVALID_ARGUMENT));
  cr_assert(eq(str, (char*)kilnSymAlgoName(KILN_SYM_REDUCESCATTER), "sym-reducescatter"));
  /* The staged geometry on 4 ranks with no LL128 or LL12 lines (KILN_SYM_LL128_BYTES=0,
   * KILN_SYM_LL12=0): LL lines to 128 KiB of segment (one-shot allreduce and reducescatter: to
   * 256 KiB; two-shot: of share), a block per 2 KiB up to 64 (KILN_SYM_BLOCKS); flags past that. */
  setenv("KILN_SYM_LL128_BYTES", "0", 1);
  setenv("KILN_SYM_LL12", "0", 1);
  kilnParamsReload();
  kilnSymConfigure(&c);
  kilnSymArgs g;
  cr_assert(kilnSymStagedGeometry(&c, KILN_SYM_ALLREDUCE_ONESHOT, 4096, f, false, &g)); /* 16 KiB */
  cr_assert(eq(int, g.ll, 1));
  cr_assert(eq(int, g.nblocks, 8));
  cr_assert(kilnSymStagedGeometry(&c, KILN_SYM_REDUCESCATTER, 1, f, false, &g));
  cr_assert(eq(int, g.ll, 1));
  cr_assert(eq(int, g.nblocks, 1));
  cr_assert(kilnSymStagedGeometry(&c, KILN_SYM_ALLREDUCE_ONESHOT, 32768, f, false, &g)); /* 128 KiB */
  cr_assert(eq(int, g.ll, 1));
  cr_assert(eq(int, g.nblocks, 64));
  cr_assert(kilnSymStagedGeometry(&c, KILN_SYM_ALLREDUCE_ONESHOT, 65536, f, false, &g)); /* 256 KiB */
  cr_assert(eq(int, g.ll, 1));
  cr_assert(kilnSymStagedGeometry(&c, KILN_SYM_ALLREDUCE_ONESHOT, 65540, f, false, &g));
  cr_assert(eq(int, g.ll, 0));
  cr_assert(kilnSymStagedGeometry(&c, KILN_SYM_REDUCESCATTER, 65536, f, false, &g));
  cr_assert(eq(int, g.ll, 1));
  cr_assert(kilnSymStagedGeometry(&c, KILN_SYM_ALLGATHER, 32768, f, false, &g));
  cr_assert(eq(int, g.ll, 1));
  cr_assert(kilnSymStagedGeometry(&c, KILN_SYM_ALLGATHER, 32772, f, false, &g));
  cr_assert(eq(int, g.ll, 0));
  cr_assert(kilnSymStagedGeometry(&c, KILN_SYM_ALLREDUCE_TWOSHOT, 65536, f, false, &g)); /* 64 KiB shares */
  cr_assert(eq(int, g.ll, 1));
  cr_assert(kilnSymStagedGeometry(&c, KILN_SYM_ALLGATHER, 1u << 20, f, false, &g));
  cr_assert(eq(int, g.ll, 0));
  /* KILN_SYM_LL_BYTES set: the reductions follow it unless KILN_SYM_LL_REDUCE_BYTES is set too;
   * 2 ranks: 512 KiB for all. */
  setenv("KILN_SYM_LL_BYTES", "131072", 1);
  kilnParamsReload();
  kilnSymConfigure(&c);
  cr_assert(kilnSymStagedGeometry(&c, KILN_SYM_ALLREDUCE_ONESHOT, 32772, f, false, &g));
  cr_assert(eq(int, g.ll, 0));
  setenv("KILN_SYM_LL_REDUCE_BYTES", "262144", 1);
  kilnParamsReload();
  kilnSymConfigure(&c);
  cr_assert(kilnSymStagedGeometry(&c, KILN_SYM_ALLREDUCE_ONESHOT, 65536, f, false, &g));
  cr_assert(eq(int, g.ll, 1));
  cr_assert(kilnSymStagedGeometry(&c, KILN_SYM_ALLGATHER, 32772, f, false, &g));
  cr_assert(eq(int, g.ll, 0));
  unsetenv("KILN_SYM_LL_BYTES");
  unsetenv("KILN_SYM_LL_REDUCE_BYTES");
  kilnParamsReload();
  /* The LL forms trigger the next kernel once their lines are out, at their end with
   * KILN_SYM_PDL_TRIGGER=end. */
  kilnSymConfigure(&c);
  cr_assert(c.symEarlyTrigger);
  setenv("KILN_SYM_PDL_TRIGGER", "end", 1);
  kilnParamsReload();
  kilnSymConfigure(&c);
  cr_assert(not(c.symEarlyTrigger));
  unsetenv("KILN_SYM_PDL_TRIGGER");
  kilnParamsReload();
  c.nranks = 2;
  kilnSymConfigure(&c);
  cr_assert(c.symEarlyTrigger);
  cr_assert(kilnSymStagedGeometry(&c, KILN_SYM_ALLGATHER, 131072, f, false, &g)); /* 512 KiB */
  cr_assert(eq(int, g.ll, 1));
  cr_assert(kilnSymStagedGeometry(&c, KILN_SYM_REDUCESCATTER, 131076, f, false, &g));
  cr_assert(eq(int, g.ll, 0));
  /* LL128 lines by default: one-shot segments past 128 KiB, to 256 KiB on 4 ranks and 1 MiB on
   * 2; KILN_SYM_LL128_MAX_BYTES moves the top. */
  unsetenv("KILN_SYM_LL128_BYTES");
  kilnParamsReload();
  kilnSymConfigure(&c);
  cr_assert(kilnSymStagedGeometry(&c, KILN_SYM_ALLGATHER, 262144, f, false, &g)); /* 1 MiB */
  cr_assert(eq(int, g.ll, KILN_SYM_LINES_LL128));
  cr_assert(kilnSymStagedGeometry(&c, KILN_SYM_ALLGATHER, 262148, f, false, &g));
  cr_assert(eq(int, g.ll, 0));
  cr_assert(kilnSymStagedGeometry(&c, KILN_SYM_ALLREDUCE_ONESHOT, 32768, f, false, &g)); /* 128 KiB */
  cr_assert(eq(int, g.ll, KILN_SYM_LINES_LL));
  c.nranks = 4;
  kilnSymConfigure(&c);
  cr_assert(kilnSymStagedGeometry(&c, KILN_SYM_ALLREDUCE_ONESHOT, 32772, f, false, &g));
  cr_assert(eq(int, g.ll, KILN_SYM_LINES_LL128));
  cr_assert(eq(int, g.nblocks, 64));
  cr_assert(eq(u64, g.region, 140032)); /* 1093 lines of 128 bytes for 131088, to 256 bytes */
  cr_assert(kilnSymStagedGeometry(&c, KILN_SYM_ALLREDUCE_ONESHOT, 65536, f, false, &g)); /* 256 KiB */
  cr_assert(eq(int, g.ll, KILN_SYM_LINES_LL128));
  cr_assert(kilnSymStagedGeometry(&c, KILN_SYM_ALLREDUCE_ONESHOT, 65540, f, false, &g));
  cr_assert(eq(int, g.ll, 0));
  cr_assert(kilnSymStagedGeometry(&c, KILN_SYM_REDUCESCATTER, 65536, f, false, &g));
  cr_assert(eq(int, g.ll, KILN_SYM_LINES_LL128));
  cr_assert(kilnSymStagedGeometry(&c, KILN_SYM_ALLTOALL, 32772, f, false, &g));
  cr_assert(eq(int, g.ll, KILN_SYM_LINES_LL128));
  cr_assert(kilnSymStagedGeometry(&c, KILN_SYM_ALLGATHER, 32768, f, false, &g));
  cr_assert(eq(int, g.ll, KILN_SYM_LINES_LL));
  cr_assert(kilnSymStagedGeometry(&c, KILN_SYM_ALLREDUCE_TWOSHOT, 65536, f, false, &g));
  cr_assert(eq(int, g.ll, KILN_SYM_LINES_LL));
  /* Two-shot shares past 128 KiB (the LL lines' top) to 512 KiB go as LL128 too. */
  cr_assert(kilnSymStagedGeometry(&c, KILN_SYM_ALLREDUCE_TWOSHOT, 262144, f, false, &g)); /* 256 KiB shares */
  cr_assert(eq(int, g.ll, KILN_SYM_LINES_LL128));
  cr_assert(kilnSymStagedGeometry(&c, KILN_SYM_ALLREDUCE_TWOSHOT, 524288, f, false, &g)); /* 512 KiB */
  cr_assert(eq(int, g.ll, KILN_SYM_LINES_LL128));
  cr_assert(kilnSymStagedGeometry(&c, KILN_SYM_ALLREDUCE_TWOSHOT, 524292, f, false, &g));
  cr_assert(eq(int, g.ll, 0));
  setenv("KILN_SYM_LL2_128_BYTES", "0", 1);
  kilnParamsReload();
  kilnSymConfigure(&c);
  unsetenv("KILN_SYM_LL2_128_BYTES");
  kilnParamsReload();
  cr_assert(kilnSymStagedGeometry(&c, KILN_SYM_ALLREDUCE_TWOSHOT, 262144, f, false, &g));
  cr_assert(eq(int, g.ll, 0));
  setenv("KILN_SYM_LL128_MAX_BYTES", "524288", 1);
  kilnParamsReload();
  kilnSymConfigure(&c);
  unsetenv("KILN_SYM_LL128_MAX_BYTES");
  kilnParamsReload();
  cr_assert(kilnSymStagedGeometry(&c, KILN_SYM_ALLREDUCE_ONESHOT, 65540, f, false, &g));
  cr_assert(eq(int, g.ll, KILN_SYM_LINES_LL128));
  kilnSymConfigure(&c);
  setenv("KILN_SYM_BLOCKS", "8", 1);
  kilnParamsReload();
  kilnSymConfigure(&c);
  unsetenv("KILN_SYM_BLOCKS");
  kilnParamsReload();
  cr_assert(kilnSymStagedGeometry(&c, KILN_SYM_ALLREDUCE_ONESHOT, 32768, f, false, &g));
  cr_assert(eq(int, g.nblocks, 8));
  /* LL12 lines by default for one-shot segments past 8 KiB that would go as LL lines, of
   * elements of at most 4 bytes, a 16-byte line per 12 bytes; 8-byte elements and two-shot shares
   * stay LL lines, LL128's range LL128; KILN_SYM_LL12_BYTES moves the bottom. */
  unsetenv("KILN_SYM_LL12");
  kilnParamsReload();
  kilnSymConfigure(&c);
  cr_assert(kilnSymStagedGeometry(&c, KILN_SYM_ALLREDUCE_ONESHOT, 2048, f, false, &g)); /* 8 KiB */
  cr_assert(eq(int, g.ll, KILN_SYM_LINES_LL));
  cr_assert(kilnSymStagedGeometry(&c, KILN_SYM_ALLREDUCE_ONESHOT, 2049, f, false, &g));
  cr_assert(eq(int, g.ll, KILN_SYM_LINES_LL12));
  cr_assert(eq(u64, g.region, 11008)); /* 683 lines of 16 bytes, to 256 */
  cr_assert(eq(int, g.nblocks, 5));
  cr_assert(kilnSymStagedGeometry(&c, KILN_SYM_ALLREDUCE_ONESHOT, 8193, f, false, &g));
  cr_assert(eq(int, g.ll, KILN_SYM_LINES_LL12));
  cr_assert(eq(u64, g.region, 43776)); /* 2731 lines of 16 bytes, to 256 */
  cr_assert(eq(int, g.nblocks, 17));
  cr_assert(kilnSymStagedGeometry(&c, KILN_SYM_ALLTOALL, 32769, KILN_INT8, false, &g));
  cr_assert(eq(int, g.ll, KILN_SYM_LINES_LL12));
  cr_assert(kilnSymStagedGeometry(&c, KILN_SYM_ALLGATHER, 4097, KILN_FLOAT64, false, &g));
  cr_assert(eq(int, g.ll, KILN_SYM_LINES_LL));
  cr_assert(kilnSymStagedGeometry(&c, KILN_SYM_ALLREDUCE_TWOSHOT, 65536, f, false, &g));
  cr_assert(eq(int, g.ll, KILN_SYM_LINES_LL));
  cr_assert(kilnSymStagedGeometry(&c, KILN_SYM_ALLREDUCE_ONESHOT, 32772, f, false, &g));
  cr_assert(eq(int, g.ll, KILN_SYM_LINES_LL128));
  setenv("KILN_SYM_LL12_BYTES", "0", 1);
  kilnParamsReload();
  kilnSymConfigure(&c);
  unsetenv("KILN_SYM_LL12_BYTES");
  kilnParamsReload();
  cr_assert(kilnSymStagedGeometry(&c, KILN_SYM_ALLREDUCE_ONESHOT, 1, f, false, &g));
  cr_assert(eq(int, g.ll, KILN_SYM_LINES_LL12));
  kilnSymConfigure(&c);
  /* Off: KILN_SYM=0 at creation, or no staging. */
  setenv("KILN_SYM", "0", 1);
  kilnParamsReload();
  kilnSymConfigure(&c);
  unsetenv("KILN_SYM");
  kilnParamsReload();
  cr_assert(eq(int, kilnSymSelect(&c, KILN_COLL_ALLREDUCE, 2, f, false), KILN_SYM_NONE));
  kilnSymConfigure(&c);
  c.symHalf = 0;
  cr_assert(eq(int, kilnSymSelect(&c, KILN_COLL_ALLREDUCE, 2, f, false), KILN_SYM_NONE));
  cr_assert(not(kilnSymFits(&c, KILN_SYM_ALLGATHER, 1, f, false)));
}

/* Every call the symmetric kernels' host geometry gives has a kernel (kernels/sym.cuh kernelIndexOf
 * against kernelOf, whose null entries are for forms the host never picks: LL12 of 8-byte elements,
 * the op fixed in a form without lines): 2, 4 and 8 ranks, every dtype, op and algorithm, sizes
 * across every line form and the staged one, staged and direct. No GPU needed: runs in CI. */
Test(gpu_runtime, sym_kernels_exist) {
  static const size_t bytes[] = {16, 1000, 8200, 40000, 200000, 600000, 2u << 20, 64u << 20};
  static const int nranks[] = {2, 4, 8};
  int calls = 0, forms = 0;
  unsigned seen = 0;
  for (int r = 0; r < 3; r++) {
    struct kilnComm c;
    host_comm(&c, nranks[r], (size_t)16 << 20);
    kilnSymConfigure(&c);
    for (int d = 0; d < KILN_NUM_DTYPES; d++)
      for (int a = KILN_SYM_ALLREDUCE_ONESHOT; a <= KILN_SYM_ALLTOALL; a++)
        for (size_t b = 0; b < sizeof bytes / sizeof bytes[0]; b++) {
          kilnSymArgs g;
          const size_t count = bytes[b] / kilnDataTypeSize((kilnDataType_t)d);
          if (!kilnSymStagedGeometry(&c, (kilnSymAlgo_t)a, count, (kilnDataType_t)d, false, &g)) continue;
          seen |= 1u << (g.ll * 2 + (a == KILN_SYM_ALLREDUCE_TWOSHOT));
          for (int op = 0; op < KILN_NUM_REDOPS; op++)
            for (int direct = 0; direct < 2; direct++) {
              g.op = op;
              g.direct = direct;
              cr_assert(kilnSymHasKernel(d, &g), "%d ranks, %s, algorithm %d, %zu elements, op %d, lines %d%s: no kernel",
                        c.nranks, kilnDataTypeName((kilnDataType_t)d), a, count, op, g.ll, direct ? ", direct" : "");
              calls++;
            }
        }
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
Test(gpu_runtime, sym_direct_choice) {
  struct kilnComm c;
  host_comm(&c, 2, (size_t)64 << 20);
  c.rank = 1;
  unsetenv("KILN_SYM_DIRECT");
  unsetenv("KILN_SYM_DIRECT_BYTES");
  unsetenv("KILN_SYM_CE");
  unsetenv("KILN_SYM_CE_BYTES");
  kilnParamsReload();
  kilnSymConfigure(&c);
  static char* peers[8] = {(char*)0x100000000000ull, (char*)0x200000000000ull, (char*)0x300000000000ull,
                           (char*)0x400000000000ull};
  /* A second window over the first's second GiB (windows may overlap). */
  static char* peers2[8] = {(char*)0x140000000000ull, (char*)0x240000000000ull, (char*)0x340000000000ull,
                            (char*)0x440000000000ull};
  struct kilnUserWindow ws[2] = {{(ncclWindow_t)0x1, (char*)0x7f0000000000ull, (size_t)4 << 30, peers},
                                 {(ncclWindow_t)0x2, (char*)0x7f0040000000ull, (size_t)1 << 30, peers2}};
  struct kilnUserWindow w = ws[0];
  c.uwins = ws;
  c.nuwins = 2;
  const kilnDataType_t f = KILN_FLOAT32;
  char* in = w.base;                       /* the window's start */
  char* out = w.base + ((size_t)2 << 30);  /* 2 GiB into it */
  char* plain = (char*)0x10000;            /* not in any window */
  const size_t mib4 = (size_t)1 << 20;     /* 4 MiB of float */
  /* 2 ranks: from 16 MiB of reference bytes (allgather: count x 4 B x 2). */
  cr_assert(kilnSymIsDirect(&c, KILN_SYM_ALLGATHER, plain, out, 2 * mib4, f));
  cr_assert(not(kilnSymIsDirect(&c, KILN_SYM_ALLGATHER, plain, out, 2 * mib4 - 1, f)));
  cr_assert(not(kilnSymIsDirect(&c, KILN_SYM_ALLGATHER, out, plain, 2 * mib4, f)));
  cr_assert(kilnSymIsDirect(&c, KILN_SYM_ALLTOALL, in, out, 2 * mib4, f));
  cr_assert(not(kilnSymIsDirect(&c, KILN_SYM_ALLTOALL, out, out, 2 * mib4, f)));
  cr_assert(not(kilnSymIsDirect(&c, KILN_SYM_REDUCESCATTER, in, out, 2 * mib4, f)));
  cr_assert(kilnSymIsDirect(&c, KILN_SYM_ALLREDUCE_ONESHOT, plain, out, 4 * mib4, f));
  cr_assert(kilnSymIsDirect(&c, KILN_SYM_ALLREDUCE_TWOSHOT, out, out, 4 * mib4, f));
  /* Exactly to the window's end, and one element past it. */
  cr_assert(kilnSymIsDirect(&c, KILN_SYM_ALLREDUCE_TWOSHOT, in, out, (size_t)1 << 29, f));
  cr_assert(not(kilnSymIsDirect(&c, KILN_SYM_ALLREDUCE_TWOSHOT, in, out, ((size_t)1 << 29) + 1, f)));
  cr_assert(kilnSymIsDirect(&c, KILN_SYM_ALLGATHER, plain, out, (size_t)1 << 28, f));
  cr_assert(kilnSymIsDirect(&c, KILN_SYM_ALLGATHER, plain, w.base + ((size_t)1 << 30), 2 * mib4, f)); /* in both */
  cr_assert(not(kilnSymIsDirect(&c, KILN_SYM_ALLGATHER, plain, out, ((size_t)1 << 28) + 1, f)));
  /* Where windows overlap the newest maps the buffer (an older one may describe memory since
   * freed and allocated again). */
  char* got[8];
  cr_assert(kilnUserWindowPeers(&c, w.base + ((size_t)1 << 30) + 64, 64, got));
  cr_assert(eq(ptr, got[0], peers2[0] + 64));
  cr_assert(eq(ptr, got[1], w.base + ((size_t)1 << 30) + 64)); /* this rank's own */
  cr_assert(kilnUserWindowPeers(&c, w.base + 64, 64, got)); /* only in the first */
  cr_assert(eq(ptr, got[0], peers[0] + 64));
  /* Allgather and alltoall copy with the copy engine from 128 MiB of reference bytes on 2 ranks;
   * allreduce never; KILN_SYM_CE=0 never, KILN_SYM_CE_BYTES from where it says. */
  cr_assert(eq(int, kilnSymDirectForm(&c, KILN_SYM_ALLGATHER, plain, out, 16 * mib4, f), KILN_SYM_DIRECT_ARRIVE));
  cr_assert(eq(int, kilnSymDirectForm(&c, KILN_SYM_ALLGATHER, plain, out, 16 * mib4 - 1, f), KILN_SYM_DIRECT_SM));
  cr_assert(eq(int, kilnSymDirectForm(&c, KILN_SYM_ALLTOALL, in, out, 16 * mib4, f), KILN_SYM_DIRECT_ARRIVE));
  cr_assert(eq(int, kilnSymDirectForm(&c, KILN_SYM_ALLTOALL, in, out, 16 * mib4 - 1, f), KILN_SYM_DIRECT_SM));
  cr_assert(eq(int, kilnSymDirectForm(&c, KILN_SYM_ALLREDUCE_TWOSHOT, in, out, 64 * mib4, f), KILN_SYM_DIRECT_SM));
  cr_assert(eq(int, kilnSymDirectForm(&c, KILN_SYM_REDUCESCATTER, in, out, 32 * mib4, f), 0));
  cr_assert(eq(int, kilnSymDirectForm(&c, KILN_SYM_ALLGATHER, out, plain, 16 * mib4, f), 0));
  setenv("KILN_SYM_CE", "0", 1);
  kilnParamsReload();
  kilnSymConfigure(&c);
  unsetenv("KILN_SYM_CE");
  kilnParamsReload();
  cr_assert(eq(int, kilnSymDirectForm(&c, KILN_SYM_ALLGATHER, plain, out, 64 * mib4, f), KILN_SYM_DIRECT_SM));
  setenv("KILN_SYM_CE_BYTES", "33554432", 1);
  kilnParamsReload();
  kilnSymConfigure(&c);
  unsetenv("KILN_SYM_CE_BYTES");
  kilnParamsReload();
  cr_assert(eq(int, kilnSymDirectForm(&c, KILN_SYM_ALLGATHER, plain, out, 4 * mib4, f), KILN_SYM_DIRECT_ARRIVE));
  cr_assert(eq(int, kilnSymDirectForm(&c, KILN_SYM_ALLGATHER, plain, out, 4 * mib4 - 1, f), KILN_SYM_DIRECT_SM));
  /* 4 ranks: from 1 MiB of reference bytes (count x 4 B x 4), the copy engine from 128 MiB,
   * KILN_SYM_CE_BYTES moves it; 8 ranks: off by default, from where KILN_SYM_DIRECT_BYTES says. */
  c.nranks = 8;
  kilnSymConfigure(&c);
  cr_assert(not(kilnSymIsDirect(&c, KILN_SYM_ALLGATHER, plain, out, 8 * mib4, f)));
  setenv("KILN_SYM_DIRECT_BYTES", "2097152", 1);
  kilnParamsReload();
  kilnSymConfigure(&c);
  unsetenv("KILN_SYM_DIRECT_BYTES");
  kilnParamsReload();
  cr_assert(kilnSymIsDirect(&c, KILN_SYM_ALLGATHER, plain, out, 65536, f));
  cr_assert(not(kilnSymIsDirect(&c, KILN_SYM_ALLGATHER, plain, out, 65535, f)));
  c.nranks = 4;
  kilnSymConfigure(&c);
  cr_assert(kilnSymIsDirect(&c, KILN_SYM_ALLGATHER, plain, out, 65536, f));
  /* A direct copy takes a block per 8 KiB of a piece (KILN_SYM_DIRECT_BLOCK_BYTES), per 16 KiB
   * from pieces of 1 MiB (KILN_SYM_DIRECT_BIG_BLOCK_BYTES), up to 128 (KILN_SYM_DIRECT_BLOCKS):
   * allgather 1 MiB 32 blocks, 2 MiB 64, 4 MiB 64, 8 MiB and more 128. */
  cr_assert(eq(int, kilnSymDirectBlocks(&c, KILN_SYM_ALLGATHER, plain, out, 65536, f), 32));
  cr_assert(eq(int, kilnSymDirectBlocks(&c, KILN_SYM_ALLGATHER, plain, out, 65536 + 4, f), 33));
  cr_assert(eq(int, kilnSymDirectBlocks(&c, KILN_SYM_ALLGATHER, plain, out, 131072, f), 64));
  cr_assert(eq(int, kilnSymDirectBlocks(&c, KILN_SYM_ALLGATHER, plain, out, 262144 - 4, f), 128));
  cr_assert(eq(int, kilnSymDirectBlocks(&c, KILN_SYM_ALLGATHER, plain, out, 262144, f), 64));
  cr_assert(eq(int, kilnSymDirectBlocks(&c, KILN_SYM_ALLGATHER, plain, out, 262144 + 4, f), 65));
  cr_assert(eq(int, kilnSymDirectBlocks(&c, KILN_SYM_ALLGATHER, plain, out, 524288, f), 128));
  cr_assert(eq(int, kilnSymDirectBlocks(&c, KILN_SYM_ALLTOALL, in, out, mib4 / 4, f), 64)); /* 1 MiB pieces */
  cr_assert(eq(int, kilnSymDirectBlocks(&c, KILN_SYM_ALLTOALL, in, out, 4 * mib4, f), 128));
  cr_assert(eq(int, kilnSymDirectBlocks(&c, KILN_SYM_ALLGATHER, plain, out, 65535, f), 0)); /* staged */
  setenv("KILN_SYM_DIRECT_BLOCK_BYTES", "2048", 1);
  kilnParamsReload();
  kilnSymConfigure(&c);
  unsetenv("KILN_SYM_DIRECT_BLOCK_BYTES");
  kilnParamsReload();
  cr_assert(eq(int, kilnSymDirectBlocks(&c, KILN_SYM_ALLGATHER, plain, out, 65536, f), 128));
  cr_assert(eq(int, kilnSymDirectBlocks(&c, KILN_SYM_ALLGATHER, plain, out, 262144, f), 64));
  setenv("KILN_SYM_DIRECT_BIG_BLOCK_BYTES", "8192", 1);
  kilnParamsReload();
  kilnSymConfigure(&c);
  unsetenv("KILN_SYM_DIRECT_BIG_BLOCK_BYTES");
  kilnParamsReload();
  cr_assert(eq(int, kilnSymDirectBlocks(&c, KILN_SYM_ALLGATHER, plain, out, 262144, f), 128));
  setenv("KILN_SYM_DIRECT_BLOCKS", "16", 1);
  kilnParamsReload();
  kilnSymConfigure(&c);
  unsetenv("KILN_SYM_DIRECT_BLOCKS");
  kilnParamsReload();
  cr_assert(eq(int, kilnSymDirectBlocks(&c, KILN_SYM_ALLGATHER, plain, out, 65536, f), 16));
  kilnSymConfigure(&c);
  /* Allreduce from 512 MiB on 4 ranks as reduce-then-copy where its shares are equal and whole
   * 16-byte packs, else two-shot; KILN_SYM_AR_CE=0 never. */
  const size_t ar512 = (size_t)1 << 27; /* floats */
  cr_assert(eq(int, kilnSymDirectForm(&c, KILN_SYM_ALLREDUCE_TWOSHOT, in, out, ar512, f), KILN_SYM_DIRECT_REDUCE_CE));
  cr_assert(eq(int, kilnSymDirectForm(&c, KILN_SYM_ALLREDUCE_TWOSHOT, out, out, 2 * ar512, f), KILN_SYM_DIRECT_REDUCE_CE));
  cr_assert(eq(int, kilnSymDirectForm(&c, KILN_SYM_ALLREDUCE_TWOSHOT, in, out, ar512 + 4, f), KILN_SYM_DIRECT_SM));
  cr_assert(eq(int, kilnSymDirectForm(&c, KILN_SYM_ALLREDUCE_TWOSHOT, in, out, ar512 / 2, f), KILN_SYM_DIRECT_SM));
  setenv("KILN_SYM_AR_CE", "0", 1);
  kilnParamsReload();
  kilnSymConfigure(&c);
  unsetenv("KILN_SYM_AR_CE");
  kilnParamsReload();
  cr_assert(eq(int, kilnSymDirectForm(&c, KILN_SYM_ALLREDUCE_TWOSHOT, in, out, ar512, f), KILN_SYM_DIRECT_SM));
  kilnSymConfigure(&c);
  /* Alltoall from 4 MiB on 4 ranks (KILN_SYM_DIRECT_A2A_BYTES). */
  cr_assert(not(kilnSymIsDirect(&c, KILN_SYM_ALLTOALL, in, out, 262143, f)));
  cr_assert(kilnSymIsDirect(&c, KILN_SYM_ALLTOALL, in, out, 262144, f));
  setenv("KILN_SYM_DIRECT_A2A_BYTES", "1048576", 1);
  kilnParamsReload();
  kilnSymConfigure(&c);
  unsetenv("KILN_SYM_DIRECT_A2A_BYTES");
  kilnParamsReload();
  cr_assert(kilnSymIsDirect(&c, KILN_SYM_ALLTOALL, in, out, 65536, f));
  kilnSymConfigure(&c);
  cr_assert(not(kilnSymIsDirect(&c, KILN_SYM_ALLGATHER, plain, out, 65535, f)));
  cr_assert(eq(int, kilnSymDirectForm(&c, KILN_SYM_ALLGATHER, plain, out, 8 * mib4, f), KILN_SYM_DIRECT_ARRIVE));
  cr_assert(eq(int, kilnSymDirectForm(&c, KILN_SYM_ALLTOALL, in, out, 8 * mib4 - 1, f), KILN_SYM_DIRECT_SM));
  setenv("KILN_SYM_CE_BYTES", "12ab", 1); /* not a number: the default (128 MiB) */
  kilnParamsReload();
  kilnSymConfigure(&c);
  cr_assert(eq(int, kilnSymDirectForm(&c, KILN_SYM_ALLGATHER, plain, out, 8 * mib4, f), KILN_SYM_DIRECT_ARRIVE));
  cr_assert(eq(int, kilnSymDirectForm(&c, KILN_SYM_ALLGATHER, plain, out, 8 * mib4 - 1, f), KILN_SYM_DIRECT_SM));
  setenv("KILN_SYM_CE_BYTES", "4194304", 1);
  kilnParamsReload();
  kilnSymConfigure(&c);
  unsetenv("KILN_SYM_CE_BYTES");
  kilnParamsReload();
  cr_assert(eq(int, kilnSymDirectForm(&c, KILN_SYM_ALLTOALL, in, out, 262144, f), KILN_SYM_DIRECT_ARRIVE));
  setenv("KILN_SYM_DIRECT", "0", 1);
  kilnParamsReload();
  kilnSymConfigure(&c);
  cr_assert(not(kilnSymIsDirect(&c, KILN_SYM_ALLGATHER, plain, out, 8 * mib4, f)));
  unsetenv("KILN_SYM_DIRECT");
  unsetenv("KILN_SYM_DIRECT_BYTES");
  unsetenv("KILN_SYM_CE");
  unsetenv("KILN_SYM_CE_BYTES");
  kilnParamsReload();
  kilnSymConfigure(&c);
  c.symHalf = 0;
  cr_assert(not(kilnSymIsDirect(&c, KILN_SYM_ALLGATHER, plain, out, 8 * mib4, f)));
}

/* kilnCommWindowForget (the drop-in calls it before the application's ncclMemFree): every window
 * that overlaps the freed range goes, the others stay in the order they were added (no GPU
 * needed: windows made by hand, host addresses never touched). */
Test(gpu_runtime, window_forget) {
  struct kilnComm c;
  memset(&c, 0, sizeof c);
  c.nranks = 2;
  c.capuwins = 4;
  c.uwins = calloc(4, sizeof(*c.uwins));
  cr_assert(c.uwins != NULL);
  char* base = (char*)0x7f0000000000ull;
  const size_t gib = (size_t)1 << 30;
  const struct {
    size_t off, bytes;
  } w[] = {{0, gib}, {gib, 64u << 20}, {2 * gib, 1u << 20}, {gib + (32u << 20), 1u << 20}};
  for (int i = 0; i < 4; i++) {
    c.uwins[i] = (struct kilnUserWindow){(ncclWindow_t)(uintptr_t)(i + 1), base + w[i].off, w[i].bytes,
                                         calloc(2, sizeof(char*))};
    cr_assert(c.uwins[i].peers != NULL);
  }
  c.nuwins = 4;
  /* The second allocation, [1 GiB, 1 GiB + 64 MiB): windows 2 and 4 (inside it). */
  cr_assert(eq(int, kilnCommWindowForget(&c, base + gib, 64u << 20), 2));
  cr_assert(eq(int, kilnCommWindowCount(&c), 2));
  cr_assert(eq(ptr, (void*)c.uwins[0].win, (void*)1));
  cr_assert(eq(ptr, (void*)c.uwins[1].win, (void*)3));
  /* A range that only touches window 1's last byte; one past window 3; nothing; bad arguments. */
  cr_assert(eq(int, kilnCommWindowForget(&c, base + gib - 1, 1), 1));
  cr_assert(eq(int, kilnCommWindowForget(&c, base + 2 * gib + (1u << 20), 4096), 0));
  cr_assert(eq(int, kilnCommWindowForget(&c, base + 3 * gib, gib), 0));
  cr_assert(eq(int, kilnCommWindowForget(&c, NULL, 5), 0));
  cr_assert(eq(int, kilnCommWindowForget(NULL, base, 5), 0));
  cr_assert(eq(int, kilnCommWindowForget(&c, base + 2 * gib, 0), 0));
  cr_assert(eq(int, kilnCommWindowCount(&c), 1));
  cr_assert(eq(int, kilnCommWindowForget(&c, (char*)UINTPTR_MAX - 15, 4096), 0)); /* past the address space */
  cr_assert(eq(int, kilnCommWindowForget(&c, base, 3 * gib), 1));
  cr_assert(eq(int, kilnCommWindowCount(&c), 0));
  free(c.uwins);
}

/* A block with an empty range must not touch the last partial LL line (it once did: in place, it
 * could reduce an already reduced element again). With 128 blocks of 1 KiB and LL lines up to
 * 1 MiB, an int8 segment of 131073 bytes leaves block 127 empty on a GPU of 128 SMs or more. The
 * settings are read at communicator creation. */
Test(gpu_runtime, sym_empty_blocks, .init = gpu_init, .timeout = 300) {
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

/* One symmetric call captured per rank (each algorithm in turn, as LL lines and as staged data
 * with flags), replayed on new data: the kernels advance their sequence number on the GPU, so
 * replays alternate the staging halves with no host help. */
Test(gpu_runtime, sym_graph_replays, .init = gpu_init, .timeout = 600) {
  int n = suite_gpus();
  world w;
  cr_assert(world_init(&w, n, NULL));
  uint64_t rng = g_seed ^ 0x99;
  /* LL lines (one-shot and two-shot), flags (one-shot from 128 KiB of segment, two-shot from
   * 128 KiB of share). */
  static const size_t counts[] = {1001, 40009, 300007};
  for (size_t k = 0; k < 3 * sizeof(kSymAlgos) / sizeof(kSymAlgos[0]); k++)
    sym_graph_check(&w, kSymAlgos[k / 3], counts[k % 3], 50, &rng);
  world_fini(&w);
}

/* 8 ranks sharing the GPUs, 20 symmetric calls a rank captured in one graph each, every
 * algorithm, at a count whose kernels take all of a rank's share of SMs: launched with
 * programmatic serialization, a rank's next kernel could take SMs while its current one ran and
 * leave a GPU-mate's kernel of the current call none (coll_bench --shared, 4 and 8 ranks on one
 * H200, allgather 512 KiB in graphs of 20 calls: timed out, bench/results/s29 run 1), so
 * kilnCommCreateShared launches without it. Each graph replayed on fresh data, checked. */
Test(gpu_runtime, sym_graphs_8ranks_shared, .init = gpu_init_shared, .timeout = 600) {
  world w;
  sweep_world(&w, 8, true, NULL, kNoEnv);
  uint64_t rng = g_seed ^ 0x5A;
  enum { CALLS = 20 };
  int ran = 0;
  for (size_t k = 0; k < sizeof(kSymAlgos) / sizeof(kSymAlgos[0]); k++) {
    const kilnSymAlgo_t a = kSymAlgos[k];
    call c;
    cr_assert(call_alloc(&c, &w, sym_coll(a), 65537, KILN_INT32));
    if (!kilnSymFits(w.kc[0], a, c.count, c.dt, false)) {
      call_free(&c, &w);
      continue;
    }
    sym_graph_check_call(&w, a, &c, CALLS, 3, &rng);
    assert_no_async_error(&w);
    call_free(&c, &w);
    fprintf(stderr, "  %s: graphs of %d calls, 3 replays: pass\n", kilnSymAlgoName(a), CALLS);
    ran++;
  }
  cr_assert(ran > 0, "no symmetric algorithm fits 65537 int32 elements");
  world_fini(&w);
}

/* ---- random streams of calls (symmetric kernels and plans) ---- */

/* A call of a random stream: what random_pick drew (a symmetric algorithm, or a loaded plan). */
typedef struct randomCall {
  call c;
  kilnSymAlgo_t a;
  const loaded* plan; /* NULL: the symmetric kernels (a) */
  kilnRedOp_t op;
  bool inplace;
} randomCall;

/* Elements a rank for a random call among n ranks: 35% 1-4096 (LL lines), 30% 4097-266240, 29%
 * 256 Ki to 4.25 Mi, and at most one call of a stream (*huge) 8-12 Mi; the two large classes
 * divided by n / 2 past 2 ranks, since the CPU's share of a call (inputs drawn, references,
 * checks) grows with the square of the ranks for every collective but allreduce. */
static size_t random_count(uint64_t* rng, bool* huge, int n) {
  const size_t shrink = n > 2 ? (size_t)n / 2 : 1;
  const uint64_t x = gpu_rand(rng) % 100;
  if (x < 35) return 1 + gpu_rand(rng) % 4096;
  if (x < 65) return 4097 + gpu_rand(rng) % (1u << 18);
  if (x < 94 || *huge) return ((1u << 18) + gpu_rand(rng) % (1u << 22)) / shrink;
  *huge = true;
  return ((1u << 23) + gpu_rand(rng) % (1u << 22)) / shrink;
}

/* Draws a call that fits the communicators: collective, data type, count, op, placement; the
 * algorithm kiln chooses by default (kilnSymSelect), or one drawn where it chooses none and, a
 * quarter of the time, anyway. false: the drawn call fits no algorithm (draw again). */
static bool random_pick(const world* w, randomCall* rc, uint64_t* rng, bool* huge) {
  rc->plan = NULL;
  const kilnSymAlgo_t drawn = kSymAlgos[gpu_rand(rng) % (sizeof(kSymAlgos) / sizeof(kSymAlgos[0]))];
  const kilnColl_t coll = sym_coll(drawn);
  const kilnDataType_t dt = (kilnDataType_t)(gpu_rand(rng) % ALL_DTYPES);
  bool h = *huge;
  const size_t count = random_count(rng, &h, w->n);
  rc->inplace = coll != KILN_COLL_ALLTOALL && gpu_rand(rng) % 3 == 0;
  rc->a = kilnSymSelect(w->kc[0], coll, count, dt, rc->inplace);
  if (rc->a == KILN_SYM_NONE || gpu_rand(rng) % 4 == 0) rc->a = drawn;
  if (!kilnSymFits(w->kc[0], rc->a, count, dt, rc->inplace)) return false;
  rc->op = gpu_reduces(coll) ? (kilnRedOp_t)(gpu_rand(rng) % KILN_NUM_REDOPS) : KILN_SUM;
  rc->c.coll = coll;
  rc->c.count = count;
  rc->c.dt = dt;
  *huge = h;
  return true;
}

/* Draws a call of one of the nplans loaded plans: its collective and placement, a data type, op
 * and count (up to 1 Mi elements: plans move their data through FIFO slots, slower) it supports.
 * false: it supports none of them (draw again). */
static bool random_pick_plan(const world* w, const loaded* plans, int nplans, randomCall* rc, uint64_t* rng) {
  rc->plan = &plans[gpu_rand(rng) % (uint64_t)nplans];
  const kilnPlan* p = rc->plan->plan;
  rc->c.coll = p->coll;
  rc->c.dt = (kilnDataType_t)(gpu_rand(rng) % ALL_DTYPES);
  bool never = true; /* no 8-12 Mi element calls */
  rc->c.count = random_count(rng, &never, w->n) % (1u << 20) + 1;
  rc->inplace = p->inplace;
  rc->op = gpu_reduces(p->coll) ? (kilnRedOp_t)(gpu_rand(rng) % KILN_NUM_REDOPS) : KILN_SUM;
  rc->a = KILN_SYM_NONE;
  return kilnPlanSupports(p, rc->c.count, rc->c.dt, rc->op, rc->inplace);
}

static const char* random_name(const randomCall* rc) {
  return rc->plan ? rc->plan->plan->name : kilnSymAlgoName(rc->a);
}

/* Issues calls [0, k) of rc on ranks [r0, r1), in call order; grouped: one to three calls of every
 * rank in each kilnGroupStart/End. */
static void random_issue(const world* w, randomCall* rc, int k, int r0, int r1, bool grouped, uint64_t* rng) {
  for (int i = 0; i < k;) {
    const int batch = grouped ? 1 + (int)(gpu_rand(rng) % 3) : 1;
    if (grouped) kilnGroupStart();
    for (int j = i; j < i + batch && j < k; j++)
      for (int r = r0; r < r1; r++) {
        const call* c = &rc[j].c;
        kilnResult_t res =
            rc[j].plan ? kilnRun(rc[j].plan->ex[r], c->sendp[r], c->recvp[r], c->count, c->dt, rc[j].op, w->st[r])
                       : kilnSymRun(w->kc[r], rc[j].a, c->sendp[r], c->recvp[r], c->count, c->dt, rc[j].op, w->st[r]);
        cr_assert(eq(int, res, KILN_SUCCESS), "call %d %s rank %d: %s", j, random_name(&rc[j]), r, kilnLastError());
      }
    if (grouped) cr_assert(eq(int, kilnGroupEnd(), KILN_SUCCESS), "%s", kilnLastError());
    i += batch;
  }
}

static const char* const kRandomModes[] = {"eager", "eager, grouped", "graph per rank", "graph, grouped"};

enum { RANDOM_CANARY = 0xA5 };

/* After a random stream: every byte of rank r's allocation (bytes at base) outside the calls'
 * buffers (their gaps, the input buffer an in-place allreduce or allgather leaves unused, the
 * tail) still holds RANDOM_CANARY, which it was filled with before the stream. */
static void random_canaries(const world* w, int r, const char* base, size_t bytes, const randomCall* rc, int k,
                            const char* what, int mode) {
  unsigned char* h = malloc(bytes);
  cr_assert(not(eq(ptr, h, NULL)));
  cudaSetDevice(w->dev[r]);
  cr_assert(eq(int, cudaMemcpy(h, base, bytes, cudaMemcpyDeviceToHost), cudaSuccess));
  for (int i = 0; i < k; i++) {
    const call* c = &rc[i].c;
    const size_t es = kilnDataTypeSize(c->dt);
    memset(h + ((const char*)c->sendp[r] - base), RANDOM_CANARY, c->inElems * es);
    memset(h + ((const char*)c->recvp[r] - base), RANDOM_CANARY, c->outElems * es);
    /* call_prepare poisons the output buffer as allocated, also where an in-place reducescatter
     * leaves it unused. */
    memset(h + ((const char*)c->drecv[r] - base), RANDOM_CANARY, c->outElems * es);
  }
  size_t at = 0;
  while (at < bytes && h[at] == RANDOM_CANARY) at++;
  size_t last = at;
  while (last < bytes && last < at + 4096 && h[last] != RANDOM_CANARY) last++;
  /* The buffer that ends nearest before the byte. */
  int near = -1;
  bool nearOut = false;
  ptrdiff_t past = PTRDIFF_MAX;
  for (int i = 0; i < k && at < bytes; i++) {
    const call* c = &rc[i].c;
    const size_t es = kilnDataTypeSize(c->dt);
    const ptrdiff_t ends[2] = {(const char*)c->sendp[r] - base + (ptrdiff_t)(c->inElems * es),
                               (const char*)c->recvp[r] - base + (ptrdiff_t)(c->outElems * es)};
    for (int o = 0; o < 2; o++)
      if (ends[o] <= (ptrdiff_t)at && (ptrdiff_t)at - ends[o] < past) {
        past = (ptrdiff_t)at - ends[o];
        near = i;
        nearOut = o == 1;
      }
  }
  char who[256] = "no buffer before it";
  if (near >= 0) {
    const call* c = &rc[near].c;
    snprintf(who, sizeof who, "%td bytes past the end of call %d's %s (%s %s %s count %zu %s, %s)", past, near,
             nearOut ? "output" : "input", kilnCollName(c->coll), kilnDataTypeName(c->dt), kilnRedOpName(c->op),
             c->count, c->inplace ? "in place" : "out of place", random_name(&rc[near]));
  }
  free(h);
  cr_assert(eq(sz, at, bytes), "%s, %s: rank %d wrote bytes %zu-%zu of its allocation, outside every call's buffers: "
            "%s (seed %llu)", what, kRandomModes[mode], r, at, last - 1, who, (unsigned long long)g_seed);
}

/* One random stream of k calls issued back to back with nothing between them (mode: eager one
 * rank after the other, eager in groups, captured per rank, captured in groups; graphs replayed
 * twice), then every output checked against the CPU. The calls' buffers lie end to end in one
 * allocation per rank, at element-aligned offsets 0-3 elements apart, filled with RANDOM_CANARY
 * first: a call that writes past its output shows in a neighbour's result or in a canary byte
 * (random_canaries), one that reads the wrong staging in its own result. Returns the calls
 * checked. */
static int random_stream(const world* w, const loaded* plans, int nplans, const char* what, int stream, int mode,
                         int k, uint64_t* rng) {
  randomCall rc[16];
  size_t inE[16], outE[16];
  cr_assert(k <= 16);
  bool huge = false;
  size_t arena = 256;
  for (int i = 0; i < k; i++) {
    /* With plans, half the calls are theirs (drawn again until one fits, on the side drawn). */
    const bool plan = nplans > 0 && gpu_rand(rng) % 2;
    while (plan ? !random_pick_plan(w, plans, nplans, &rc[i], rng) : !random_pick(w, &rc[i], rng, &huge)) {}
    call_elems(rc[i].c.coll, w->n, rc[i].c.count, &inE[i], &outE[i]);
    arena += (inE[i] + outE[i] + 8) * kilnDataTypeSize(rc[i].c.dt);
  }
  char* base[GPU_MAX];
  for (int r = 0; r < w->n; r++) {
    cudaSetDevice(w->dev[r]);
    cr_assert(eq(int, cudaMalloc((void**)&base[r], arena), cudaSuccess), "%zu bytes", arena);
    cr_assert(eq(int, cudaMemsetAsync(base[r], RANDOM_CANARY, arena, w->st[r]), cudaSuccess));
  }
  size_t at = 0;
  for (int i = 0; i < k; i++) {
    const size_t es = kilnDataTypeSize(rc[i].c.dt);
    char* send[GPU_MAX];
    char* recv[GPU_MAX];
    at = (at + es - 1) / es * es + es * (gpu_rand(rng) % 4);
    for (int r = 0; r < w->n; r++) send[r] = base[r] + at;
    at += inE[i] * es + es * (gpu_rand(rng) % 4);
    for (int r = 0; r < w->n; r++) recv[r] = base[r] + at;
    at += outE[i] * es;
    cr_assert(le(sz, at, arena));
    cr_assert(call_alloc_at(&rc[i].c, w, rc[i].c.coll, rc[i].c.count, rc[i].c.dt, send, recv));
  }
  const bool grouped = mode == 1 || mode == 3, graph = mode >= 2;
  cudaGraphExec_t ge[GPU_MAX];
  if (graph) {
    /* The buffers the graphs capture set, and the first replay's data drawn (the captures begin
     * after it is on the GPUs). */
    for (int i = 0; i < k; i++) call_prepare(&rc[i].c, w, rc[i].op, rc[i].inplace, rng);
    if (grouped) {
      capture_begin_all(w);
      random_issue(w, rc, k, 0, w->n, true, rng);
      capture_end_all(w, ge);
    } else {
      for (int r = 0; r < w->n; r++) {
        capture_begin(w, r);
        random_issue(w, rc, k, r, r + 1, false, rng);
        capture_end(w, r, &ge[r]);
      }
    }
  }
  for (int rep = 0; rep < (graph ? 2 : 1); rep++) {
    if (!graph || rep > 0)
      for (int i = 0; i < k; i++) call_prepare(&rc[i].c, w, rc[i].op, rc[i].inplace, rng);
    if (graph) replay_all(w, ge);
    else random_issue(w, rc, k, 0, w->n, grouped, rng);
    for (int i = 0; i < k; i++) {
      char msg[512];
      cr_assert(call_check(&rc[i].c, w, msg, sizeof msg), "%s, %s, stream %d, call %d of %d (%s)%s: %s (seed %llu)",
                what, kRandomModes[mode], stream, i, k, random_name(&rc[i]), graph ? (rep ? ", replay 2" : ", replay 1") : "",
                msg, (unsigned long long)g_seed);
    }
  }
  assert_no_async_error(w);
  for (int r = 0; r < w->n; r++) random_canaries(w, r, base[r], arena, rc, k, what, mode);
  if (graph)
    for (int r = 0; r < w->n; r++) cudaGraphExecDestroy(ge[r]);
  for (int i = 0; i < k; i++) call_free(&rc[i].c, w);
  for (int r = 0; r < w->n; r++) {
    cudaSetDevice(w->dev[r]);
    cudaFree(base[r]);
  }
  return graph ? 2 * k : k;
}

/* Streams of 12 random calls (every symmetric algorithm, data type, op and placement, 1 element to
 * 12 Mi; with plans, half of them the plans') back to back with nothing between them, so that
 * each form follows every other on the same staging with programmatic launches overlapping them,
 * in each of the four ways of issuing them (random_stream); KILN_TEST_RANDOM_STREAMS streams per
 * way (default 3). */
static void random_streams_run(const world* w, const loaded* plans, int nplans, const char* what, uint64_t* rng) {
  const char* e = getenv("KILN_TEST_RANDOM_STREAMS");
  const int streams = e && atoi(e) > 0 ? atoi(e) : 3;
  for (int mode = 0; mode < 4; mode++) {
    int checked = 0;
    const uint64_t direct = peer_calls(w);
    for (int s = 0; s < streams; s++) checked += random_stream(w, plans, nplans, what, s, mode, 12, rng);
    fprintf(stderr, "  %d ranks, %s, %s: %d random calls checked (%llu issued direct into the peers' buffers)\n",
            w->n, what, kRandomModes[mode], checked, (unsigned long long)(peer_calls(w) - direct));
  }
}

/* Communicators whose forms change at small sizes: 4 MiB of staging (large calls in rounds),
 * outputs of grouped calls stored direct from 64 KiB, allgather and alltoall by the copy engine
 * from 1 MiB, allreduce as a reducescatter and the engine's copies from 2 MiB. */
static const char* const kSmallForms[] = {"KILN_SYM_DIRECT_BYTES", "65536", "KILN_SYM_CE_BYTES", "1048576",
                                          "KILN_SYM_AR_CE_BYTES", "2097152", NULL};

/* The classic plans random streams mix in: every collective, Simple, LL and LL128, in place and
 * not, chunks and instances (baked kernels where kiln bakes the shape, the interpreter elsewhere). */
typedef struct randomPlan {
  const char* algo;
  kilnColl_t coll;
  int chunks, instances;
  kilnProto_t proto;
  bool inplace;
} randomPlan;
static const randomPlan kRandomPlans[] = {
    {"ring", KILN_COLL_ALLREDUCE, 2, 2, KILN_PROTO_SIMPLE, false},
    {"ring", KILN_COLL_ALLREDUCE, 1, 1, KILN_PROTO_LL128, true},
    {"direct", KILN_COLL_ALLREDUCE, 1, 1, KILN_PROTO_LL, false},
    {"ring", KILN_COLL_ALLGATHER, 1, 1, KILN_PROTO_LL, false},
    {"direct", KILN_COLL_ALLGATHER, 1, 1, KILN_PROTO_SIMPLE, true},
    {"ring", KILN_COLL_REDUCESCATTER, 1, 1, KILN_PROTO_SIMPLE, false},
    {"direct", KILN_COLL_REDUCESCATTER, 1, 1, KILN_PROTO_LL128, true},
    {"direct", KILN_COLL_ALLTOALL, 2, 1, KILN_PROTO_SIMPLE, false},
    {"direct", KILN_COLL_ALLTOALL, 1, 1, KILN_PROTO_LL, false},
};
enum { RANDOM_PLANS = sizeof(kRandomPlans) / sizeof(kRandomPlans[0]) };

/* Random streams (random_streams_run) on communicators of the default settings, on ones whose
 * forms change at small sizes (kSmallForms), so that direct calls, the copy engine's and the
 * staged halves in rounds come often among the line forms, and on default ones with the classic
 * plans of kRandomPlans between the symmetric calls. */
static void random_streams_test(int n, bool shared) {
  kilnCommConfig small = KILN_COMM_CONFIG_INITIALIZER;
  small.symBytes = 4 << 20;
  static const char* const what[] = {"default settings", "forms changing at small sizes", "plans among them"};
  for (int pass = 0; pass < 3; pass++) {
    world w;
    sweep_world(&w, n, shared, pass == 1 ? &small : NULL, pass == 1 ? kSmallForms : kNoEnv);
    uint64_t rng = g_seed ^ (0x5EED0 + (uint64_t)pass);
    loaded plans[RANDOM_PLANS];
    const int nplans = pass == 2 ? RANDOM_PLANS : 0;
    for (int i = 0; i < nplans; i++) {
      const randomPlan* p = &kRandomPlans[i];
      load(&plans[i], &w, p->algo, p->coll, p->chunks, p->instances, p->proto, p->inplace);
    }
    random_streams_run(&w, plans, nplans, what[pass], &rng);
    for (int i = 0; i < nplans; i++) unload(&plans[i], &w);
    world_fini(&w);
  }
}

Test(gpu_runtime, random_streams, .init = gpu_init, .timeout = 900) { random_streams_test(suite_gpus(), false); }
/* The same with 4 ranks sharing fewer GPUs (kilnCommCreateShared; its kernels launch without
 * programmatic serialization). */
Test(gpu_runtime, random_streams_4ranks_shared, .init = gpu_init_shared, .timeout = 900) {
  random_streams_test(4, true);
}

/* Reducescatter from an aligned input into an output one element past the lines' alignment
 * (float 4 bytes past 8, half 2 bytes past 4: LL and LL12 lines), 8 ranks sharing the GPUs, counts
 * a rank as LL lines, LL12 lines and past them: bodyLL sends whole lines (they read only the
 * input) and stores the results element-wise, every op. */
Test(gpu_runtime, sym_rs_output_off_alignment_8ranks_shared, .init = gpu_init_shared, .timeout = 300) {
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

/* test_synth.c verifies the synthesized plans at SYNTH_PLANS_RUNTIME_NSLOTS FIFO slots: that must
 * be the depth the runtime gives them (no GPU needed). */
Test(gpu_runtime, synthesized_plans_verified_at_runtime_fifo_depth) {
#ifdef KILN_HAVE_SYNTH
  const kilnCommConfig cfg = KILN_COMM_CONFIG_INITIALIZER;
  cr_assert(eq(int, cfg.nslots, SYNTH_PLANS_RUNTIME_NSLOTS));
#else
  cr_skip_test("skipped: built without the synthesizer (kiln_synth needs GLPK)");
#endif
}

Test(gpu_runtime, synthesized_plans_2gpus, .init = gpu_init, .timeout = 300) { synth_sweep(2, false); }
Test(gpu_runtime, synthesized_plans_4gpus, .init = gpu_init, .timeout = 300) { synth_sweep(4, false); }
Test(gpu_runtime, synthesized_plans_8gpus, .init = gpu_init, .timeout = 600) { synth_sweep(8, false); }
Test(gpu_runtime, synthesized_plans_8ranks_shared, .init = gpu_init_shared, .timeout = 600) { synth_sweep(8, true); }

/* 1 GiB per rank, every collective, plans and symmetric kernels, on every GPU there is (8, 4 or
 * 2). */
Test(gpu_runtime, large_buffers, .init = gpu_init, .timeout = 900) {
  int n = suite_gpus();
  world w;
  cr_assert(world_init(&w, n, NULL));
  uint64_t rng = g_seed ^ 0x1234;
  /* 1 GiB per rank (allreduce input, allgather output, reducescatter input, alltoall input), one
   * element more than a multiple of anything, so the last slice and the element tail are in. */
  const size_t gib = (size_t)1 << 28; /* floats */
  const struct {
    const char* algo;
    kilnColl_t coll;
    int instances;
    size_t count;
    bool inplace;
  } cases[] = {
      {"ring", KILN_COLL_ALLREDUCE, 8, gib + 1, false},
      {"direct", KILN_COLL_ALLGATHER, 4, gib / (size_t)n + 1, true},
      {"ring", KILN_COLL_REDUCESCATTER, 8, gib / (size_t)n + 1, false},
      {"direct", KILN_COLL_ALLTOALL, 4, gib / (size_t)n + 1, false},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    loaded l;
    load(&l, &w, cases[i].algo, cases[i].coll, 1, cases[i].instances, KILN_PROTO_SIMPLE, cases[i].inplace);
    call c;
    cr_assert(call_alloc(&c, &w, cases[i].coll, cases[i].count, KILN_FLOAT32));
    run_check(&l, &w, &c, KILN_SUM, cases[i].inplace, &rng);
    call_free(&c, &w);
    unload(&l, &w);
  }
  /* The symmetric kernels at the same sizes, in rounds (allreduce on 4 GPUs: a 256 MiB share in
   * 128 rounds of 2 MiB). */
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    const kilnSymAlgo_t a = cases[i].coll == KILN_COLL_ALLREDUCE       ? KILN_SYM_ALLREDUCE_TWOSHOT
                            : cases[i].coll == KILN_COLL_ALLGATHER     ? KILN_SYM_ALLGATHER
                            : cases[i].coll == KILN_COLL_REDUCESCATTER ? KILN_SYM_REDUCESCATTER
                                                                       : KILN_SYM_ALLTOALL;
    call c;
    cr_assert(call_alloc(&c, &w, cases[i].coll, cases[i].count, KILN_FLOAT32));
    sym_run_check(&w, &c, a, KILN_SUM, cases[i].inplace, &rng);
    call_free(&c, &w);
  }
  world_fini(&w);
}

/* The loaded plan's call on c (a sum) captured in a CUDA graph per rank (c's buffers as they are). */
static void capture_plan_call(const loaded* l, const world* w, const call* c, cudaGraphExec_t* ge) {
  for (int r = 0; r < w->n; r++) {
    capture_begin(w, r);
    kilnResult_t res = kilnRun(l->ex[r], c->sendp[r], c->recvp[r], c->count, c->dt, KILN_SUM, w->st[r]);
    cr_assert(eq(int, res, KILN_SUCCESS), "%s", kilnLastError());
    capture_end(w, r, &ge[r]);
  }
}

/* `times` replays of every rank's graph ge (capture_plan_call on c), each on fresh data, checked. */
static void replay_check(const world* w, call* c, cudaGraphExec_t* ge, int times, const char* when, uint64_t* rng) {
  for (int it = 0; it < times; it++) {
    call_prepare(c, w, KILN_SUM, false, rng);
    replay_all(w, ge);
    char msg[512];
    cr_assert(call_check(c, w, msg, sizeof msg), "replay %d%s: %s (seed %llu)", it, when, msg,
              (unsigned long long)g_seed);
  }
}

/* One call captured per rank, replayed 1000 times on new data each time. */
Test(gpu_runtime, graph_replays, .init = gpu_init, .timeout = 600) {
  int n = suite_gpus();
  world w;
  cr_assert(world_init(&w, n, NULL));
  uint64_t rng = g_seed ^ 0x77;
  loaded l;
  load(&l, &w, "ring", KILN_COLL_ALLREDUCE, 2, 2, KILN_PROTO_LL, false);
  call c;
  cr_assert(call_alloc(&c, &w, KILN_COLL_ALLREDUCE, 4099, KILN_INT32));
  cudaGraphExec_t ge[GPU_MAX];
  call_prepare(&c, &w, KILN_SUM, false, &rng);
  capture_plan_call(&l, &w, &c, ge);
  replay_check(&w, &c, ge, 1000, "", &rng);
  for (int r = 0; r < n; r++) cudaGraphExecDestroy(ge[r]);
  call_free(&c, &w);
  unload(&l, &w);
  world_fini(&w);
}

/* A plan with scratch (classic direct allreduce, Simple: each rank reduces its share from the
 * peers' pieces in scratch) captured in a CUDA graph, then an eager call large enough to grow the
 * scratch, then replays of the graph on fresh data: the graph still holds the first buffer, so the
 * growth must not have freed it (host/exec.c keeps it until kilnExecFree). Buffers allocated
 * right after the growth, of the first buffer's size and around it, filled with a pattern, catch
 * a freed buffer handed out again (the replays would write into one of them); where the
 * allocator hands out other addresses the replays' results are still checked. */
Test(gpu_runtime, graph_replays_after_scratch_growth, .init = gpu_init, .timeout = 300) {
  int n = suite_gpus();
  world w;
  cr_assert(world_init(&w, n, NULL));
  uint64_t rng = g_seed ^ 0x7E;
  loaded l;
  load(&l, &w, "direct", KILN_COLL_ALLREDUCE, 1, 1, KILN_PROTO_SIMPLE, false);
  const int sc = l.plan->gpus[0].s_chunks, k = l.plan->gpus[0].i_chunks;
  cr_assert(gt(int, sc, 0), "%s has no scratch", l.plan->name);
  /* 1 Mi int32 per rank: the first scratch is sc x (1 Mi / k) x 4 bytes (MiBs: whole pages);
   * the second call, 4x larger, grows it. */
  const size_t small = (size_t)1 << 20, first = (size_t)sc * (small / (size_t)k) * 4;
  call a, b;
  cr_assert(call_alloc(&a, &w, KILN_COLL_ALLREDUCE, small, KILN_INT32));
  cr_assert(call_alloc(&b, &w, KILN_COLL_ALLREDUCE, 4 * small, KILN_INT32));
  run_check(&l, &w, &a, KILN_SUM, false, &rng);
  cudaGraphExec_t ge[GPU_MAX];
  call_prepare(&a, &w, KILN_SUM, false, &rng);
  capture_plan_call(&l, &w, &a, ge);
  run_check(&l, &w, &b, KILN_SUM, false, &rng); /* the growth */
  enum { NTRAP = 6 };
  const size_t trapBytes[NTRAP] = {first, first, first / 2, 2 * first, first + (1u << 20), first};
  void* trap[GPU_MAX][NTRAP];
  for (int r = 0; r < n; r++) {
    cudaSetDevice(w.dev[r]);
    for (int t = 0; t < NTRAP; t++) {
      cr_assert(eq(int, cudaMalloc(&trap[r][t], trapBytes[t]), cudaSuccess));
      cr_assert(eq(int, cudaMemset(trap[r][t], 0xA5, trapBytes[t]), cudaSuccess));
    }
    cudaDeviceSynchronize();
  }
  replay_check(&w, &a, ge, 20, " after the growth", &rng);
  unsigned char* h = malloc(2 * first + (1u << 20));
  cr_assert(h != NULL);
  for (int r = 0; r < n; r++) {
    cudaSetDevice(w.dev[r]);
    for (int t = 0; t < NTRAP; t++) {
      cr_assert(eq(int, cudaMemcpy(h, trap[r][t], trapBytes[t], cudaMemcpyDeviceToHost), cudaSuccess));
      size_t bad = 0;
      for (size_t i = 0; i < trapBytes[t]; i++) bad += h[i] != 0xA5;
      cr_assert(eq(sz, bad, 0), "rank %d: %zu bytes of a buffer allocated after the growth changed while the "
                "graph replayed: it got the freed scratch", r, bad);
      cudaFree(trap[r][t]);
    }
  }
  free(h);
  for (int r = 0; r < n; r++) cudaGraphExecDestroy(ge[r]);
  call_free(&a, &w);
  call_free(&b, &w);
  unload(&l, &w);
  world_fini(&w);
}

/* A plan whose scratch must grow in a call made inside a stream capture (thread-local mode, as
 * PyTorch's graphs capture): the growth allocates there (relaxed capture mode for the allocation)
 * instead of failing the call; the graphs replay correctly on fresh data, also after later growths,
 * eager and captured (the buffers they captured are kept). 2 ranks, on 2 GPUs or sharing one. */
Test(gpu_runtime, scratch_grows_inside_a_capture, .init = gpu_init_shared, .timeout = 300) {
  world w;
  cr_assert(world_init_shared(&w, 2, g_ngpus >= 2 ? 2 : 1, NULL, NULL));
  uint64_t rng = g_seed ^ 0x5C7A;
  loaded l;
  load(&l, &w, "direct", KILN_COLL_ALLREDUCE, 1, 1, KILN_PROTO_SIMPLE, false);
  cr_assert(gt(int, l.plan->gpus[0].s_chunks, 0), "%s has no scratch", l.plan->name);
  call a, b, c;
  cr_assert(call_alloc(&a, &w, KILN_COLL_ALLREDUCE, (size_t)1 << 20, KILN_INT32));
  cr_assert(call_alloc(&b, &w, KILN_COLL_ALLREDUCE, (size_t)4 << 20, KILN_INT32));
  cr_assert(call_alloc(&c, &w, KILN_COLL_ALLREDUCE, (size_t)16 << 20, KILN_INT32));
  cudaGraphExec_t ge[GPU_MAX];
  call_prepare(&a, &w, KILN_SUM, false, &rng);
  capture_plan_call(&l, &w, &a, ge); /* the plan's first call: its scratch is allocated here */
  replay_check(&w, &a, ge, 10, " (scratch allocated in the capture)", &rng);
  run_check(&l, &w, &b, KILN_SUM, false, &rng); /* an eager growth */
  replay_check(&w, &a, ge, 10, " after an eager growth", &rng);
  cudaGraphExec_t gc[GPU_MAX];
  call_prepare(&c, &w, KILN_SUM, false, &rng);
  capture_plan_call(&l, &w, &c, gc); /* a growth in a capture, the eager call's buffer kept */
  for (int i = 0; i < 3; i++) {
    replay_check(&w, &c, gc, 2, " (scratch grown in the capture)", &rng);
    replay_check(&w, &a, ge, 2, " (the first capture's scratch)", &rng);
  }
  run_check(&l, &w, &b, KILN_SUM, false, &rng);
  assert_no_async_error(&w);
  for (int r = 0; r < w.n; r++) {
    cudaGraphExecDestroy(ge[r]);
    cudaGraphExecDestroy(gc[r]);
  }
  call_free(&a, &w);
  call_free(&b, &w);
  call_free(&c, &w);
  unload(&l, &w);
  world_fini(&w);
}

/* A group's calls take the capture state their streams have at kilnGroupEnd, as NCCL's do. Each
 * rank's first call runs eagerly on its stream; the second, on another stream, is queued in a
 * group before a capture of that stream begins, so the group's end must capture it (it used to
 * be issued as an eager call: a wait on the first call's event inside the capture, which CUDA
 * refuses); the graphs then replay on fresh data. A third group's calls are queued inside
 * captures that end before the group does: they run eagerly at its end. 2 ranks, sharing a GPU
 * where there is one. */
Test(gpu_runtime, group_takes_the_capture_state_at_its_end, .init = gpu_init_shared, .timeout = 300) {
  world w;
  cr_assert(world_init_shared(&w, 2, g_ngpus >= 2 ? 2 : 1, NULL, NULL));
  uint64_t rng = g_seed ^ 0xCA97;
  const kilnSymAlgo_t a = KILN_SYM_ALLREDUCE_ONESHOT;
  call c;
  cr_assert(call_alloc(&c, &w, sym_coll(a), 4099, KILN_FLOAT32));
  sym_run_check(&w, &c, a, KILN_SUM, false, &rng); /* eager, on w.st: the communicator's last stream */
  world v = w;
  for (int r = 0; r < w.n; r++) {
    cudaSetDevice(w.dev[r]);
    cr_assert(eq(int, cudaStreamCreateWithFlags(&v.st[r], cudaStreamNonBlocking), cudaSuccess));
  }
  cudaGraphExec_t ge[GPU_MAX];
  call_prepare(&c, &v, KILN_SUM, false, &rng);
  kilnGroupStart();
  sym_issue(&v, &c, a, KILN_SUM, 0, v.n, false); /* queued in the open group */
  capture_begin_all(&v);
  cr_assert(eq(int, kilnGroupEnd(), KILN_SUCCESS), "group's end inside the captures: %s", kilnLastError());
  cudaGraph_t gr[GPU_MAX];
  for (int r = 0; r < v.n; r++) cr_assert(eq(int, cudaStreamEndCapture(v.st[r], &gr[r]), cudaSuccess), "rank %d", r);
  for (int r = 0; r < v.n; r++) {
    cr_assert(eq(int, cudaGraphInstantiate(&ge[r], gr[r], 0), cudaSuccess));
    cudaGraphDestroy(gr[r]);
  }
  replay_check(&v, &c, ge, 3, " (a group captured at its end)", &rng);
  /* Queued inside captures that end before the group's end: eager calls. */
  call_prepare(&c, &v, KILN_SUM, false, &rng);
  capture_begin_all(&v);
  kilnGroupStart();
  sym_issue(&v, &c, a, KILN_SUM, 0, v.n, false); /* queued in the open group */
  for (int r = 0; r < v.n; r++) cr_assert(eq(int, cudaStreamEndCapture(v.st[r], &gr[r]), cudaSuccess), "rank %d", r);
  for (int r = 0; r < v.n; r++) {
    size_t nodes = 1;
    cr_assert(eq(int, cudaGraphGetNodes(gr[r], NULL, &nodes), cudaSuccess));
    cr_assert(eq(sz, nodes, 0), "rank %d: the capture took %zu nodes of a group that had not ended", r, nodes);
    cudaGraphDestroy(gr[r]);
  }
  cr_assert(eq(int, kilnGroupEnd(), KILN_SUCCESS), "group's end after the captures: %s", kilnLastError());
  char msg[512];
  cr_assert(call_check(&c, &v, msg, sizeof msg), "a group ended after its captures: %s (seed %llu)", msg,
            (unsigned long long)g_seed);
  sym_run_check(&w, &c, a, KILN_SUM, false, &rng); /* and eagerly on the first streams again */
  assert_no_async_error(&w);
  for (int r = 0; r < w.n; r++) {
    cudaGraphExecDestroy(ge[r]);
    cudaSetDevice(w.dev[r]);
    cudaStreamDestroy(v.st[r]);
  }
  call_free(&c, &w);
  world_fini(&w);
}

/* Back-to-back calls on three streams per rank, no synchronization in between. */
Test(gpu_runtime, several_streams, .init = gpu_init, .timeout = 600) {
  int n = suite_gpus();
  world w;
  cr_assert(world_init(&w, n, NULL));
  uint64_t rng = g_seed ^ 0x55;
  loaded l;
  load(&l, &w, "ring", KILN_COLL_ALLREDUCE, 2, 2, KILN_PROTO_SIMPLE, false);
  enum { NCALLS = 9 };
  call c[NCALLS];
  world views[3];
  for (int s = 0; s < 3; s++) {
    views[s] = w;
    for (int r = 0; r < n; r++) {
      cudaSetDevice(r);
      if (s > 0) cudaStreamCreateWithFlags(&views[s].st[r], cudaStreamNonBlocking);
    }
  }
  for (int i = 0; i < NCALLS; i++) {
    world* v = &views[i % 3];
    cr_assert(call_alloc(&c[i], v, KILN_COLL_ALLREDUCE, 100000 + 17 * i, KILN_FLOAT32));
    call_prepare(&c[i], v, KILN_SUM, false, &rng);
    for (int r = 0; r < n; r++)
      cr_assert(eq(int, kilnRun(l.ex[r], c[i].sendp[r], c[i].recvp[r], c[i].count, c[i].dt, KILN_SUM, v->st[r]),
                   KILN_SUCCESS));
  }
  for (int i = 0; i < NCALLS; i++) {
    char msg[512];
    cr_assert(call_check(&c[i], &views[i % 3], msg, sizeof msg), "call %d: %s", i, msg);
    call_free(&c[i], &views[i % 3]);
  }
  for (int s = 1; s < 3; s++)
    for (int r = 0; r < n; r++) cudaStreamDestroy(views[s].st[r]);
  unload(&l, &w);
  world_fini(&w);
}

/* Two kiln communicators (over two NCCL communicators) with calls in flight at once. */
Test(gpu_runtime, two_communicators, .init = gpu_init, .timeout = 600) {
  int n = suite_gpus();
  world a, b;
  cr_assert(world_init(&a, n, NULL));
  cr_assert(world_init(&b, n, NULL));
  uint64_t rng = g_seed ^ 0x99;
  loaded la, lb;
  load(&la, &a, "ring", KILN_COLL_ALLREDUCE, 2, 2, KILN_PROTO_SIMPLE, false);
  load(&lb, &b, "direct", KILN_COLL_ALLGATHER, 2, 2, KILN_PROTO_LL, false);
  call ca, cb;
  cr_assert(call_alloc(&ca, &a, KILN_COLL_ALLREDUCE, 300001, KILN_FLOAT64));
  cr_assert(call_alloc(&cb, &b, KILN_COLL_ALLGATHER, 50003, KILN_FLOAT16));
  /* it 0: both at once, first launches of both kernels included; it 1: a alone; it 2: b alone;
   * then both at once again. */
  for (int it = 0; it < 8; it++) {
    const bool runA = it != 2, runB = it != 1;
    call_prepare(&ca, &a, KILN_MAX, false, &rng);
    call_prepare(&cb, &b, KILN_SUM, false, &rng);
    for (int r = 0; r < n; r++) {
      if (runA)
        cr_assert(eq(int, kilnRun(la.ex[r], ca.sendp[r], ca.recvp[r], ca.count, ca.dt, KILN_MAX, a.st[r]), KILN_SUCCESS));
      if (runB)
        cr_assert(eq(int, kilnRun(lb.ex[r], cb.sendp[r], cb.recvp[r], cb.count, cb.dt, KILN_SUM, b.st[r]), KILN_SUCCESS));
    }
    char msg[512];
    bool okA = !runA || call_check(&ca, &a, msg, sizeof msg);
    kilnResult_t ea = KILN_SUCCESS, eb = KILN_SUCCESS;
    kilnCommGetAsyncError(a.kc[0], &ea);
    cr_assert(okA, "iteration %d, a: %s (async a %s)", it, msg, kilnResultName(ea));
    bool okB = !runB || call_check(&cb, &b, msg, sizeof msg);
    kilnCommGetAsyncError(b.kc[0], &eb);
    cr_assert(okB, "iteration %d, b: %s (async b %s)", it, msg, kilnResultName(eb));
  }
  call_free(&ca, &a);
  call_free(&cb, &b);
  unload(&la, &a);
  unload(&lb, &b);
  world_fini(&a);
  world_fini(&b);
}

/* The plan a group test runs for small allreduces: the registry's pick (a one-shot plan with a
 * scratch buffer in the default build), else a classic direct LL plan. */
static void load_small_allreduce(loaded* l, const world* w) {
  const kilnRegistryEntry* e = kilnRegistrySelect(KILN_COLL_ALLREDUCE, w->n, 4096, false, KILN_FLOAT32, KILN_SUM);
  if (!e || !e->xml) {
    load(l, w, "direct", KILN_COLL_ALLREDUCE, 1, 1, KILN_PROTO_LL, false);
    return;
  }
  load_entry(l, w, e);
}

/* kilnGroupStart/End: every rank's calls of a group are queued and issued at the outermost end
 * (GPUs in parallel from launcher threads when those are awake, from this thread when asleep:
 * the pauses put them to sleep). In one group: the small allreduce twice on the same exec, the
 * second larger (its scratch grows inside the group), and an allgather of another communicator;
 * nested in every other iteration; every third iteration calls rank after rank (all of rank 0's
 * calls, then rank 1's, ...: a growth must not wait for peers queued later), every fourth on the
 * legacy default stream (issued by this thread). Results checked on fresh data. A call that
 * fails inside a group fails the group (nothing launched, the communicators stay usable);
 * kilnGroupEnd without a start is an error. */
Test(gpu_runtime, groups, .init = gpu_init, .timeout = 600) {
  const int n = suite_gpus();
  world a, b;
  cr_assert(world_init(&a, n, NULL));
  cr_assert(world_init(&b, n, NULL));
  uint64_t rng = g_seed ^ 0x6709;
  loaded la, lb;
  load_small_allreduce(&la, &a);
  load(&lb, &b, "ring", KILN_COLL_ALLGATHER, 1, 4, KILN_PROTO_SIMPLE, false);
  cr_assert(eq(int, kilnGroupEnd(), KILN_ERR_INVALID_ARGUMENT));
  cr_assert(contains(kilnLastError(), "kilnGroupEnd"), "%s", kilnLastError());
  {
    const kilnPlan* lp = la.plan;
    fprintf(stderr, "  groups: small allreduce plan %s, %d scratch chunks\n", lp->name, lp->gpus[0].s_chunks);
  }
  for (int it = 0; it < 12; it++) {
    call c1, c2, c3;
    cr_assert(call_alloc(&c1, &a, KILN_COLL_ALLREDUCE, 1000 + 7 * (size_t)it, KILN_FLOAT32));
    cr_assert(call_alloc(&c2, &a, KILN_COLL_ALLREDUCE, 3000 + 1500 * (size_t)it, KILN_FLOAT32));
    cr_assert(call_alloc(&c3, &b, KILN_COLL_ALLGATHER, 40000 + 11 * (size_t)it, KILN_BFLOAT16));
    call_prepare(&c1, &a, KILN_SUM, false, &rng);
    call_prepare(&c2, &a, KILN_MAX, false, &rng);
    call_prepare(&c3, &b, KILN_SUM, false, &rng);
    for (int r = 0; r < n; r++) {
      cudaSetDevice(r);
      cudaStreamSynchronize(a.st[r]);
      cudaStreamSynchronize(b.st[r]);
    }
    const bool nested = it % 2 == 1, rankMajor = it % 3 == 2, legacy = it % 4 == 3;
    cudaStream_t sa[GPU_MAX], sb[GPU_MAX];
    for (int r = 0; r < n; r++) {
      sa[r] = legacy ? (cudaStream_t)0 : a.st[r];
      sb[r] = legacy ? (cudaStream_t)0 : b.st[r];
    }
    cr_assert(eq(int, kilnGroupStart(), KILN_SUCCESS));
    if (nested) kilnGroupStart();
    /* (call, rank) in operation order, or rank after rank */
    for (int k = 0; k < 3 * n; k++) {
      const int which = rankMajor ? k % 3 : k / n, r = rankMajor ? k / 3 : k % n;
      cudaSetDevice(r); /* the default stream is the current device's */
      kilnResult_t res =
          which == 0   ? kilnRun(la.ex[r], c1.sendp[r], c1.recvp[r], c1.count, c1.dt, KILN_SUM, sa[r])
          : which == 1 ? kilnRun(la.ex[r], c2.sendp[r], c2.recvp[r], c2.count, c2.dt, KILN_MAX, sa[r])
                       : kilnRun(lb.ex[r], c3.sendp[r], c3.recvp[r], c3.count, c3.dt, KILN_SUM, sb[r]);
      cr_assert(eq(int, res, KILN_SUCCESS), "iteration %d call %d rank %d: %s", it, which, r, kilnLastError());
    }
    if (nested) cr_assert(eq(int, kilnGroupEnd(), KILN_SUCCESS), "%s", kilnLastError());
    cr_assert(eq(int, kilnGroupEnd(), KILN_SUCCESS), "%s", kilnLastError());
    if (legacy) /* the test's streams do not wait for the legacy stream */
      for (int r = 0; r < n; r++) {
        cudaSetDevice(r);
        cr_assert(eq(int, cudaStreamSynchronize(0), cudaSuccess));
      }
    char msg[512];
    cr_assert(call_check(&c1, &a, msg, sizeof msg), "iteration %d, small allreduce: %s", it, msg);
    cr_assert(call_check(&c2, &a, msg, sizeof msg), "iteration %d, grown allreduce: %s", it, msg);
    cr_assert(call_check(&c3, &b, msg, sizeof msg), "iteration %d, allgather: %s", it, msg);
    for (int r = 0; r < n; r++) {
      kilnResult_t ea = KILN_SUCCESS, eb = KILN_SUCCESS;
      kilnCommGetAsyncError(a.kc[r], &ea);
      kilnCommGetAsyncError(b.kc[r], &eb);
      cr_assert(eq(int, ea, KILN_SUCCESS), "rank %d", r);
      cr_assert(eq(int, eb, KILN_SUCCESS), "rank %d", r);
    }
    call_free(&c1, &a);
    call_free(&c2, &a);
    call_free(&c3, &b);
    if (it % 4 == 3) usleep(5000); /* past the launchers' spin: they sleep */
  }
  /* A failing call (an unknown data type on the last rank) fails the group: nothing of it runs,
   * and the next group works. */
  {
    call c1;
    cr_assert(call_alloc(&c1, &a, KILN_COLL_ALLREDUCE, 777, KILN_FLOAT32));
    call_prepare(&c1, &a, KILN_SUM, false, &rng);
    kilnGroupStart();
    for (int r = 0; r < n - 1; r++)
      cr_assert(eq(int, kilnRun(la.ex[r], c1.sendp[r], c1.recvp[r], c1.count, c1.dt, KILN_SUM, a.st[r]), KILN_SUCCESS));
    cr_assert(eq(int, kilnRun(la.ex[n - 1], c1.sendp[n - 1], c1.recvp[n - 1], c1.count, (kilnDataType_t)99, KILN_SUM,
                              a.st[n - 1]),
                 KILN_ERR_INVALID_ARGUMENT));
    cr_assert(eq(int, kilnGroupEnd(), KILN_ERR_INVALID_ARGUMENT));
    cr_assert(contains(kilnLastError(), "none of the group was launched"), "%s", kilnLastError());
    kilnGroupStart();
    for (int r = 0; r < n; r++)
      cr_assert(eq(int, kilnRun(la.ex[r], c1.sendp[r], c1.recvp[r], c1.count, c1.dt, KILN_SUM, a.st[r]), KILN_SUCCESS));
    cr_assert(eq(int, kilnGroupEnd(), KILN_SUCCESS), "%s", kilnLastError());
    char msg[512];
    cr_assert(call_check(&c1, &a, msg, sizeof msg), "after a failed group: %s", msg);
    call_free(&c1, &a);
  }
  unload(&la, &a);
  unload(&lb, &b);
  world_fini(&a);
  world_fini(&b);
}

/* Only rank 0 calls: its kernel gives up after the timeout and reports it. */
Test(gpu_runtime, missing_peer_times_out, .init = gpu_init, .timeout = 120) {
  world w;
  kilnCommConfig cfg = KILN_COMM_CONFIG_INITIALIZER;
  cfg.timeoutMs = 300;
  cr_assert(world_init(&w, 2, &cfg));
  uint64_t rng = g_seed;
  loaded l;
  load(&l, &w, "ring", KILN_COLL_ALLREDUCE, 1, 1, KILN_PROTO_SIMPLE, false);
  call c;
  cr_assert(call_alloc(&c, &w, KILN_COLL_ALLREDUCE, 1000, KILN_FLOAT32));
  call_prepare(&c, &w, KILN_SUM, false, &rng);
  cr_assert(eq(int, kilnRun(l.ex[0], c.sendp[0], c.recvp[0], c.count, c.dt, KILN_SUM, w.st[0]), KILN_SUCCESS));
  cudaSetDevice(0);
  cr_assert(eq(int, cudaStreamSynchronize(w.st[0]), cudaSuccess));
  kilnResult_t ae;
  kilnCommGetAsyncError(w.kc[0], &ae);
  cr_assert(eq(int, ae, KILN_ERR_TIMEOUT));
  kilnCommGetAsyncError(w.kc[1], &ae);
  cr_assert(eq(int, ae, KILN_SUCCESS));
  call_free(&c, &w);
  unload(&l, &w);
  world_fini(&w);
}

/* One symmetric call of `a` on rank 0 alone; it must end, with KILN_ERR_TIMEOUT on rank 0, after
 * more than `minS` seconds and less than `maxS`. */
static void sym_alone(world* w, kilnSymAlgo_t a, size_t count, double minS, double maxS, uint64_t* rng) {
  call c;
  cr_assert(call_alloc(&c, w, sym_coll(a), count, KILN_FLOAT32));
  call_prepare(&c, w, KILN_SUM, false, rng);
  cudaSetDevice(0);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  cr_assert(eq(int, kilnSymRun(w->kc[0], a, c.sendp[0], c.recvp[0], count, c.dt, KILN_SUM, w->st[0]), KILN_SUCCESS),
            "%s", kilnLastError());
  cr_assert(eq(int, cudaStreamSynchronize(w->st[0]), cudaSuccess), "%s count %zu", kilnSymAlgoName(a), count);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  const double dt = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  kilnResult_t ae;
  kilnCommGetAsyncError(w->kc[0], &ae);
  cr_assert(eq(int, ae, KILN_ERR_TIMEOUT), "%s count %zu: %s", kilnSymAlgoName(a), count, kilnResultName(ae));
  cr_assert(dt > minS && dt < maxS, "%s count %zu ended after %.3f s (expected %.1f-%.1f)", kilnSymAlgoName(a),
            count, dt, minS, maxS);
  call_free(&c, w);
}

/* The symmetric kernels when a peer never comes: rank 0 alone runs a small allgather (LL lines);
 * it gives up after the communicator's timeout (300 ms) with KILN_ERR_TIMEOUT, rank 1 reports
 * nothing. Then every algorithm, as LL lines and as flags, is refused on rank 0 at once with
 * KILN_ERR_TIMEOUT, nothing launched (a failed communicator refuses calls, since session 30:
 * before, they launched kernels that ended at once, outputs unwritten), and the error stays. */
Test(gpu_runtime, sym_missing_peer_times_out, .init = gpu_init, .timeout = 120) {
  world w;
  kilnCommConfig cfg = KILN_COMM_CONFIG_INITIALIZER;
  cfg.timeoutMs = 300;
  cfg.symBytes = 1 << 20;
  cr_assert(world_init(&w, 2, &cfg));
  uint64_t rng = g_seed ^ 0x7a1;
  sym_alone(&w, KILN_SYM_ALLGATHER, 1004, 0.25, 30.0, &rng);
  static const size_t counts[] = {1004, 70004};
  for (size_t ai = 0; ai < sizeof(kSymAlgos) / sizeof(kSymAlgos[0]); ai++)
    for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++) {
      const kilnSymAlgo_t a = kSymAlgos[ai];
      call c;
      cr_assert(call_alloc(&c, &w, sym_coll(a), counts[ci], KILN_FLOAT32));
      call_prepare(&c, &w, KILN_SUM, false, &rng);
      cudaSetDevice(0);
      cr_assert(eq(int, kilnSymRun(w.kc[0], a, c.sendp[0], c.recvp[0], counts[ci], c.dt, KILN_SUM, w.st[0]),
                   KILN_ERR_TIMEOUT), "%s count %zu", kilnSymAlgoName(a), counts[ci]);
      cr_assert(contains(kilnLastError(), "failed before"), "%s", kilnLastError());
      call_free(&c, &w);
    }
  kilnResult_t ae;
  kilnCommGetAsyncError(w.kc[0], &ae);
  cr_assert(eq(int, ae, KILN_ERR_TIMEOUT), "%s", kilnResultName(ae));
  kilnCommGetAsyncError(w.kc[1], &ae);
  cr_assert(eq(int, ae, KILN_SUCCESS), "%s", kilnResultName(ae));
  world_fini(&w);
}

/* kilnCommAbort: rank 0 alone issues a symmetric allgather (LL lines) and a plan's allreduce, which
 * wait for rank 1 (the timeout is a minute away); the abort returns at once and those kernels
 * leave within seconds; later calls are refused naming the abort; kilnExecFree and
 * kilnCommDestroy then free rank 0's memory (the window among it: at least its size comes back)
 * without NCCL calls. With NCCL (2 GPUs) every rank aborts as a job would: kilnCommAbort, then
 * ncclCommAbort, then the frees; sharing one GPU, the communicators have no NCCL. */
static double seconds_since(const struct timespec* t0) {
  struct timespec t1;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  return (double)(t1.tv_sec - t0->tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0->tv_nsec);
}

static void abort_run(bool shared) {
  world w;
  kilnCommConfig cfg = KILN_COMM_CONFIG_INITIALIZER;
  cfg.timeoutMs = 60000;
  if (shared) {
    cr_assert(world_init_shared(&w, 2, 1, NULL, &cfg));
  } else {
    cr_assert(world_init(&w, 2, &cfg));
  }
  uint64_t rng = g_seed ^ 0xAB0;
  loaded l;
  load(&l, &w, "ring", KILN_COLL_ALLREDUCE, 1, 1, KILN_PROTO_SIMPLE, false);
  call ag, ar;
  cr_assert(call_alloc(&ag, &w, KILN_COLL_ALLGATHER, 1004, KILN_FLOAT32));
  cr_assert(call_alloc(&ar, &w, KILN_COLL_ALLREDUCE, 1 << 16, KILN_FLOAT32));
  call_prepare(&ag, &w, KILN_SUM, false, &rng);
  call_prepare(&ar, &w, KILN_SUM, false, &rng);
  cudaSetDevice(w.dev[0]);
  cr_assert(eq(int, kilnSymRun(w.kc[0], KILN_SYM_ALLGATHER, ag.sendp[0], ag.recvp[0], ag.count, ag.dt, KILN_SUM, w.st[0]),
               KILN_SUCCESS), "%s", kilnLastError());
  cr_assert(eq(int, kilnRun(l.ex[0], ar.sendp[0], ar.recvp[0], ar.count, ar.dt, KILN_SUM, w.st[0]), KILN_SUCCESS),
            "%s", kilnLastError());
  usleep(200 * 1000);
  cr_assert(eq(int, cudaStreamQuery(w.st[0]), cudaErrorNotReady), "rank 0's calls ended without rank 1");
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  cr_assert(eq(int, kilnCommAbort(w.kc[0]), KILN_SUCCESS), "%s", kilnLastError());
  const double took = seconds_since(&t0);
  cr_assert(lt(dbl, took, 2.0), "kilnCommAbort took %.2f s", took);
  if (!shared) {
    cr_assert(eq(int, kilnCommAbort(w.kc[1]), KILN_SUCCESS), "%s", kilnLastError());
    for (int r = 0; r < 2; r++) {
      cudaSetDevice(w.dev[r]);
      cr_assert(eq(int, ncclCommAbort(w.nccl[r]), ncclSuccess));
      w.nccl[r] = NULL;
    }
  }
  cudaSetDevice(w.dev[0]);
  cr_assert(eq(int, cudaStreamSynchronize(w.st[0]), cudaSuccess));
  const double left = seconds_since(&t0);
  cr_assert(lt(dbl, left, 10.0), "rank 0's kernels left %.2f s after the abort", left);
  fprintf(stderr, "  abort (%s): returned after %.3f s, kernels gone after %.3f s\n", shared ? "1 GPU" : "NCCL",
          took, left);
  cr_assert(eq(int, kilnSymRun(w.kc[0], KILN_SYM_ALLGATHER, ag.sendp[0], ag.recvp[0], ag.count, ag.dt, KILN_SUM, w.st[0]),
               KILN_ERR_INVALID_ARGUMENT));
  cr_assert(contains(kilnLastError(), "aborted"), "%s", kilnLastError());
  cr_assert(eq(int, kilnRun(l.ex[0], ar.sendp[0], ar.recvp[0], ar.count, ar.dt, KILN_SUM, w.st[0]),
               KILN_ERR_INVALID_ARGUMENT));
  cr_assert(contains(kilnLastError(), "aborted"), "%s", kilnLastError());
  const size_t win = w.kc[0]->winBytes;
  size_t freeBefore = 0, freeAfter = 0, total = 0;
  cr_assert(eq(int, cudaMemGetInfo(&freeBefore, &total), cudaSuccess));
  kilnExecFree(l.ex[0]);
  l.ex[0] = NULL;
  cr_assert(eq(int, kilnCommDestroy(w.kc[0]), KILN_SUCCESS));
  w.kc[0] = NULL;
  cudaSetDevice(w.dev[0]);
  cr_assert(eq(int, cudaMemGetInfo(&freeAfter, &total), cudaSuccess));
  fprintf(stderr, "  abort (%s): %zu MiB came back at the destroy (the window is %zu MiB)\n", shared ? "1 GPU" : "NCCL",
          (freeAfter - freeBefore) >> 20, win >> 20);
  /* With NCCL (2.28.9, 2x H200, session 32 run 7) none comes back: NCCL keeps its mapping of the
   * window after ncclCommAbort, so its memory stays to the end of the process whatever kiln frees. */
  if (shared)
    cr_assert(ge(sz, freeAfter, freeBefore + win), "%zu bytes came back after the destroy, the window alone is %zu",
              freeAfter - freeBefore, win);
  if (!shared) {
    kilnExecFree(l.ex[1]);
    l.ex[1] = NULL;
    cr_assert(eq(int, kilnCommDestroy(w.kc[1]), KILN_SUCCESS));
    w.kc[1] = NULL;
  }
  call_free(&ag, &w);
  call_free(&ar, &w);
  unload(&l, &w); /* the execs left (rank 1 sharing the GPU) */
  world_fini(&w);
}

Test(gpu_runtime, abort_frees_after_kernels_leave_2gpus, .init = gpu_init, .timeout = 120) { abort_run(false); }
Test(gpu_runtime, abort_frees_after_kernels_leave_shared, .init = gpu_init_shared, .timeout = 120) { abort_run(true); }

/* A call of elements with a NULL buffer is refused before anything is launched (the kernel would
 * fault and take the process's CUDA context with it), through kilnRun and kilnSymRun, naming the
 * buffer; a call of 0 elements with NULL buffers is a no-op; after an abort, a call queued in a
 * group is not launched at kilnGroupEnd. 2 ranks, on 2 GPUs or sharing one. */
Test(gpu_runtime, null_buffers_and_calls_queued_before_an_abort_refused, .init = gpu_init_shared, .timeout = 60) {
  world w;
  cr_assert(world_init_shared(&w, 2, g_ngpus >= 2 ? 2 : 1, NULL, NULL));
  loaded l;
  load(&l, &w, "ring", KILN_COLL_ALLREDUCE, 1, 1, KILN_PROTO_SIMPLE, false);
  call c;
  cr_assert(call_alloc(&c, &w, KILN_COLL_ALLREDUCE, 1024, KILN_FLOAT32));
  uint64_t rng = g_seed ^ 0x4E11;
  call_prepare(&c, &w, KILN_SUM, false, &rng); /* sets the buffers a call passes */
  cr_assert(c.sendp[0] != NULL && c.recvp[0] != NULL);
  cr_assert(eq(int, kilnRun(l.ex[0], NULL, c.recvp[0], c.count, c.dt, KILN_SUM, w.st[0]), KILN_ERR_INVALID_ARGUMENT));
  cr_assert(contains(kilnLastError(), "NULL send buffer"), "%s", kilnLastError());
  cr_assert(eq(int, kilnSymRun(w.kc[0], KILN_SYM_ALLREDUCE_ONESHOT, c.sendp[0], NULL, c.count, c.dt, KILN_SUM, w.st[0]),
               KILN_ERR_INVALID_ARGUMENT));
  cr_assert(contains(kilnLastError(), "NULL receive buffer"), "%s", kilnLastError());
  cr_assert(eq(int, kilnRun(l.ex[0], NULL, NULL, 0, c.dt, KILN_SUM, w.st[0]), KILN_SUCCESS), "%s", kilnLastError());
  kilnGroupStart();
  cr_assert(eq(int, kilnSymRun(w.kc[0], KILN_SYM_ALLREDUCE_ONESHOT, c.sendp[0], c.recvp[0], c.count, c.dt, KILN_SUM,
                               w.st[0]), KILN_SUCCESS), "%s", kilnLastError());
  cr_assert(eq(int, kilnCommAbort(w.kc[0]), KILN_SUCCESS));
  cr_assert(eq(int, kilnGroupEnd(), KILN_ERR_INVALID_ARGUMENT));
  cr_assert(contains(kilnLastError(), "aborted"), "%s", kilnLastError());
  cudaSetDevice(w.dev[0]);
  cr_assert(eq(int, cudaStreamSynchronize(w.st[0]), cudaSuccess));
  call_free(&c, &w);
  unload(&l, &w);
  world_fini(&w);
}

/* kilnCommCreate on one rank of an NCCL communicator, from a thread of its own. */
typedef struct createArgs {
  ncclComm_t nccl;
  int dev;
  kilnCommConfig cfg;
  kilnComm_t out;
  kilnResult_t res;
  char err[512];
} createArgs;

static void* create_rank(void* p) {
  createArgs* a = p;
  cudaSetDevice(a->dev);
  a->out = NULL;
  a->res = kilnCommCreate(a->nccl, &a->cfg, &a->out);
  snprintf(a->err, sizeof a->err, "%s", kilnLastError());
  return NULL;
}

/* n ranks of NCCL communicators (ncclCommInitAll over GPUs 0..n-1) each creating its kiln
 * communicator from a thread, rank r with cfg[r]; joins them. */
static void create_ranks(int n, ncclComm_t* nccl, const kilnCommConfig* cfg, createArgs* a) {
  pthread_t th[GPU_MAX];
  for (int r = 0; r < n; r++) {
    a[r].nccl = nccl[r];
    a[r].dev = r;
    a[r].cfg = cfg[r];
    cr_assert(eq(int, pthread_create(&th[r], NULL, create_rank, &a[r]), 0));
  }
  for (int r = 0; r < n; r++) pthread_join(th[r], NULL);
}

/* A rank whose own part of kilnCommCreate fails (here a configuration out of range; in the field
 * out of memory for the window, where the others waited for it in NCCL's window registration for
 * ever) fails with its own error, and the other ranks fail too, at once, naming the step; then
 * every rank creates it with a good configuration. 2 GPUs, a thread per rank. */
Test(gpu_runtime, comm_create_fails_on_every_rank_when_one_cannot, .init = gpu_init, .timeout = 120) {
  const int n = 2;
  ncclComm_t nccl[GPU_MAX];
  int devs[GPU_MAX] = {0, 1};
  cr_assert(eq(int, ncclCommInitAll(nccl, n, devs), ncclSuccess));
  kilnCommConfig cfg[GPU_MAX];
  for (int r = 0; r < n; r++) cfg[r] = (kilnCommConfig)KILN_COMM_CONFIG_INITIALIZER;
  cfg[1].nslots = 1; /* out of range on rank 1 only */
  createArgs a[GPU_MAX];
  create_ranks(n, nccl, cfg, a);
  cr_assert(eq(int, a[1].res, KILN_ERR_INVALID_ARGUMENT), "rank 1: %s: %s", kilnResultName(a[1].res), a[1].err);
  cr_assert(contains(a[1].err, "nslots"), "%s", a[1].err);
  cr_assert(eq(int, a[0].res, KILN_ERR_UNSUPPORTED), "rank 0: %s: %s", kilnResultName(a[0].res), a[0].err);
  cr_assert(contains(a[0].err, "another rank could not set up its part"), "%s", a[0].err);
  cr_assert(a[0].out == NULL && a[1].out == NULL);
  cfg[1] = cfg[0];
  create_ranks(n, nccl, cfg, a);
  for (int r = 0; r < n; r++) cr_assert(eq(int, a[r].res, KILN_SUCCESS), "rank %d: %s", r, a[r].err);
  kilnComm_t kc[GPU_MAX] = {a[0].out, a[1].out};
  cr_assert(eq(int, kilnCommDestroyAll(n, kc), KILN_SUCCESS));
  for (int r = 0; r < n; r++) {
    cudaSetDevice(r);
    ncclCommDestroy(nccl[r]);
  }
}

/* The agreement on a communicator of one rank (the only NCCL communicator one GPU can hold), by
 * kilnCommCreate and kilnCommCreateAll: a bad configuration fails with its own error (not another
 * rank's), a good one creates it. */
Test(gpu_runtime, comm_create_agrees_on_one_rank, .init = gpu_init_shared, .timeout = 60) {
  ncclComm_t nccl;
  int dev = 0;
  cr_assert(eq(int, ncclCommInitAll(&nccl, 1, &dev), ncclSuccess));
  kilnCommConfig cfg = KILN_COMM_CONFIG_INITIALIZER;
  cfg.nslots = 1;
  kilnComm_t kc = NULL;
  cr_assert(eq(int, kilnCommCreate(nccl, &cfg, &kc), KILN_ERR_INVALID_ARGUMENT));
  cr_assert(contains(kilnLastError(), "nslots"), "%s", kilnLastError());
  cr_assert(kc == NULL);
  cfg.nslots = 8;
  const kilnResult_t r = kilnCommCreate(nccl, &cfg, &kc);
  cr_assert(eq(int, r, KILN_SUCCESS), "%s: %s", kilnResultName(r), kilnLastError());
  cr_assert(eq(int, kilnCommSize(kc), 1));
  cr_assert(eq(int, kilnCommDestroy(kc), KILN_SUCCESS));
  cfg.nslots = 1; /* the same through kilnCommCreateAll */
  cr_assert(eq(int, kilnCommCreateAll(1, &nccl, &cfg, &kc), KILN_ERR_INVALID_ARGUMENT));
  cr_assert(contains(kilnLastError(), "nslots"), "%s", kilnLastError());
  cfg.nslots = 8;
  cr_assert(eq(int, kilnCommCreateAll(1, &nccl, &cfg, &kc), KILN_SUCCESS), "%s", kilnLastError());
  cr_assert(eq(int, kilnCommDestroyAll(1, &kc), KILN_SUCCESS));
  ncclCommDestroy(nccl);
}

/* The sequence number the next symmetric call of rank r's communicator takes. */
static uint64_t sym_next_seq(const world* w, int r) {
  uint64_t s = 0;
  cudaSetDevice(r);
  cr_assert(eq(int, cudaStreamSynchronize(w->st[r]), cudaSuccess));
  cr_assert(eq(int, cudaMemcpy(&s, w->kc[r]->symState, sizeof s, cudaMemcpyDeviceToHost), cudaSuccess));
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
Test(gpu_runtime, sym_lines_apart, .init = gpu_init, .timeout = 120) {
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
      cr_assert(eq(int, cudaMemcpyAsync(big.dsend[r], words, cases[k].first * sizeof(int32_t), cudaMemcpyHostToDevice,
                                        w.st[r]), cudaSuccess));
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

/* A plan's LL receive never takes for its lines what a Simple piece left in a slot: 2 GPUs, every
 * slot rank 1 receives from rank 0 in holds constant data equal to the flag of the use that slot
 * comes to next (kilnDevLLFlag: a Simple piece of that constant leaves exactly this), then a ring allreduce as LL lines, which rank 1 issues 100 ms before rank 0. (With the
 * same flag in both of a line's flag words such slots passed for lines; the second word now
 * carries it ^ KILN_DEV_LL_FLAG_PAIR.) */
Test(gpu_runtime, plan_ll_stale_slots, .init = gpu_init, .timeout = 120) {
  if (g_ngpus < 2) cr_skip_test("skipped: 2 GPUs needed, %d visible", g_ngpus);
  kilnCommConfig cfg = KILN_COMM_CONFIG_INITIALIZER;
  cfg.maxChannels = 4;
  cfg.slotBytes = 64 << 10;
  world w;
  cr_assert(world_init(&w, 2, &cfg));
  uint64_t rng = g_seed ^ 0x57a1e;
  loaded l;
  load(&l, &w, "ring", KILN_COLL_ALLREDUCE, 1, 1, KILN_PROTO_LL, false);
  call c;
  cr_assert(call_alloc(&c, &w, KILN_COLL_ALLREDUCE, 3001, KILN_INT32));
  run_check(&l, &w, &c, KILN_SUM, false, &rng); /* the connections have counts of their own now */
  const struct kilnComm* k = w.kc[1];
  const size_t nconn = (size_t)k->nranks * (size_t)k->cfg.maxChannels;
  const int nslots = k->cfg.nslots;
  uint64_t* counts = (uint64_t*)malloc(2 * nconn * sizeof(uint64_t));
  uint32_t* words = (uint32_t*)malloc(k->cfg.slotBytes);
  cr_assert(counts != NULL && words != NULL);
  cudaSetDevice(1);
  cr_assert(eq(int, cudaMemcpy(counts, k->state, 2 * nconn * sizeof(uint64_t), cudaMemcpyDeviceToHost), cudaSuccess));
  for (int ch = 0; ch < k->cfg.maxChannels; ch++) {
    const uint64_t rcvd = counts[nconn + (size_t)ch]; /* rank 1's count of slots received from rank 0 */
    for (int j = 0; j < nslots; j++) {
      const uint64_t use = rcvd + 1 + (uint64_t)j;
      const uint32_t flag = kilnDevLLFlag(use);
      for (size_t i = 0; i < k->cfg.slotBytes / 4; i++) words[i] = flag;
      char* slot = k->win + kilnFifoOff(k, 0, ch) + (size_t)((use - 1) % (uint64_t)nslots) * k->cfg.slotBytes;
      cr_assert(eq(int, cudaMemcpy(slot, words, k->cfg.slotBytes, cudaMemcpyHostToDevice), cudaSuccess));
    }
  }
  free(words);
  free(counts);
  call_prepare(&c, &w, KILN_SUM, false, &rng);
  for (int r = 1; r >= 0; r--) {
    cudaSetDevice(r);
    kilnResult_t res = kilnRun(l.ex[r], c.sendp[r], c.recvp[r], c.count, c.dt, KILN_SUM, w.st[r]);
    cr_assert(eq(int, res, KILN_SUCCESS), "rank %d: %s", r, kilnLastError());
    if (r == 1) usleep(100000);
  }
  char msg[512];
  cr_assert(call_check(&c, &w, msg, sizeof msg), "%s (seed %llu)", msg, (unsigned long long)g_seed);
  assert_no_async_error(&w);
  call_free(&c, &w);
  unload(&l, &w);
  world_fini(&w);
}

/* A plan runs only the forms it claims (the ones the verifier checked): a ring allreduce of two
 * buffers that claims only the in-place form (as TACCL writes inplace="1") runs in place, and an
 * out-of-place call is refused before anything is launched (it ran, unverified); the plain
 * out-of-place plan refuses in-place calls. 2 ranks, on 2 GPUs or sharing one. */
Test(gpu_runtime, calls_of_a_form_the_plan_does_not_claim_refused, .init = gpu_init_shared, .timeout = 120) {
  world w;
  cr_assert(world_init_shared(&w, 2, g_ngpus >= 2 ? 2 : 1, NULL, NULL));
  uint64_t rng = g_seed ^ 0xF0F0;
  kilnClassicOptions o = KILN_CLASSIC_OPTIONS_INIT;
  kilnPlan* plan = NULL;
  cr_assert(eq(int, kilnClassicPlan("ring", KILN_COLL_ALLREDUCE, 2, &o, &plan), KILN_SUCCESS), "%s", kilnLastError());
  plan->inplace = true;
  plan->outofplace = false;
  cr_assert(eq(int, kilnPlanVerify(plan, NULL), KILN_SUCCESS), "%s", kilnLastError());
  loaded l;
  load_plan(&l, &w, plan);
  call c;
  cr_assert(call_alloc(&c, &w, KILN_COLL_ALLREDUCE, 1003, KILN_FLOAT32));
  cr_assert(not(kilnPlanSupports(plan, c.count, c.dt, KILN_SUM, false)));
  cr_assert(kilnPlanSupports(plan, c.count, c.dt, KILN_SUM, true));
  call_prepare(&c, &w, KILN_SUM, false, &rng);
  for (int r = 0; r < w.n; r++) {
    cr_assert(eq(int, kilnRun(l.ex[r], c.sendp[r], c.recvp[r], c.count, c.dt, KILN_SUM, w.st[r]), KILN_ERR_UNSUPPORTED));
    cr_assert(contains(kilnLastError(), "serves in-place calls only"), "%s", kilnLastError());
  }
  run_check(&l, &w, &c, KILN_SUM, true, &rng);
  unload(&l, &w);
  load(&l, &w, "ring", KILN_COLL_ALLREDUCE, 1, 1, KILN_PROTO_SIMPLE, false);
  call_prepare(&c, &w, KILN_SUM, true, &rng);
  cr_assert(eq(int, kilnRun(l.ex[0], c.recvp[0], c.recvp[0], c.count, c.dt, KILN_SUM, w.st[0]), KILN_ERR_UNSUPPORTED));
  cr_assert(contains(kilnLastError(), "serves out-of-place calls only"), "%s", kilnLastError());
  run_check(&l, &w, &c, KILN_SUM, false, &rng);
  call_free(&c, &w);
  unload(&l, &w);
  world_fini(&w);
}

/* After a timeout the communicator is failed: every later call on it (plan or symmetric kernel)
 * returns KILN_ERR_TIMEOUT at once instead of launching kernels that would return at once and
 * leave the outputs unwritten; its peer is untouched. A count past 2^40 is refused before anything.
 * 2 ranks, on 2 GPUs or sharing one; rank 1 never calls. */
Test(gpu_runtime, failed_communicator_refuses_calls, .init = gpu_init_shared, .timeout = 120) {
  world w;
  kilnCommConfig cfg = KILN_COMM_CONFIG_INITIALIZER;
  cfg.timeoutMs = 300;
  cr_assert(world_init_shared(&w, 2, g_ngpus >= 2 ? 2 : 1, NULL, &cfg));
  uint64_t rng = g_seed ^ 0xFA11;
  loaded l;
  load(&l, &w, "ring", KILN_COLL_ALLREDUCE, 1, 1, KILN_PROTO_SIMPLE, false);
  call c;
  cr_assert(call_alloc(&c, &w, KILN_COLL_ALLREDUCE, 1000, KILN_FLOAT32));
  call_prepare(&c, &w, KILN_SUM, false, &rng);
  cr_assert(eq(int, kilnRun(l.ex[1], c.sendp[1], c.recvp[1], (size_t)1 << 41, c.dt, KILN_SUM, w.st[1]),
               KILN_ERR_INVALID_ARGUMENT));
  cr_assert(contains(kilnLastError(), "more than 2^40"), "%s", kilnLastError());
  cr_assert(eq(int, kilnRun(l.ex[0], c.sendp[0], c.recvp[0], c.count, c.dt, KILN_SUM, w.st[0]), KILN_SUCCESS));
  cudaSetDevice(w.dev[0]);
  cr_assert(eq(int, cudaStreamSynchronize(w.st[0]), cudaSuccess));
  kilnResult_t ae;
  kilnCommGetAsyncError(w.kc[0], &ae);
  cr_assert(eq(int, ae, KILN_ERR_TIMEOUT));
  cr_assert(eq(int, kilnRun(l.ex[0], c.sendp[0], c.recvp[0], c.count, c.dt, KILN_SUM, w.st[0]), KILN_ERR_TIMEOUT));
  cr_assert(contains(kilnLastError(), "failed before"), "%s", kilnLastError());
  cr_assert(eq(int, kilnSymRun(w.kc[0], KILN_SYM_ALLREDUCE_ONESHOT, c.sendp[0], c.recvp[0], c.count, c.dt, KILN_SUM,
                               w.st[0]),
               KILN_ERR_TIMEOUT));
  kilnCommGetAsyncError(w.kc[1], &ae);
  cr_assert(eq(int, ae, KILN_SUCCESS));
  call_free(&c, &w);
  unload(&l, &w);
  world_fini(&w);
}

/* A loaded plan's calls across 2^32 (kilnExecSetCalls takes every rank's exec to 2^32 - 2 calls,
 * as a long run would): the classic plans, Simple and LL, out of place, interpreted and baked
 * where a kernel exists, 4 calls each across the boundary, sum then avg (avg's division waits for
 * every block of the rank), each checked against the CPU. The direct plans' steps wait for other
 * blocks' progress words: a word of the call before must not pass for this call's. 2 ranks, on
 * 2 GPUs or sharing one. */
Test(gpu_runtime, plan_calls_past_2pow32, .init = gpu_init_shared, .timeout = 300) {
  world w;
  cr_assert(world_init_shared(&w, 2, g_ngpus >= 2 ? 2 : 1, NULL, NULL));
  uint64_t rng = g_seed ^ 0x5E9;
  static const kilnProto_t protos[] = {KILN_PROTO_SIMPLE, KILN_PROTO_LL};
  for (size_t pi = 0; pi < sizeof(kPlans) / sizeof(kPlans[0]); pi++)
    for (int proto = 0; proto < 2; proto++) {
      const planCase* pc = &kPlans[pi];
      loaded l;
      load(&l, &w, pc->algo, pc->coll, 2, 2, protos[proto], false);
      const bool baked = kilnExecUseBaked(l.ex[0], true);
      for (int interp = baked ? 1 : 0; interp >= 0; interp--) {
        for (int r = 0; r < w.n; r++) {
          kilnExecUseBaked(l.ex[r], !interp);
          cr_assert(eq(int, kilnExecSetCalls(l.ex[r], (1ull << 32) - 2), KILN_SUCCESS), "%s", kilnLastError());
        }
        call c;
        cr_assert(call_alloc(&c, &w, pc->coll, (1u << 20) + 5, KILN_FLOAT32));
        for (int k = 0; k < 4; k++)
          run_check(&l, &w, &c, gpu_reduces(pc->coll) && k % 2 ? KILN_AVG : KILN_SUM, false, &rng);
        call_free(&c, &w);
      }
      fprintf(stderr, "  %s: 4 calls across 2^32%s: pass\n", l.plan->name, baked ? " (baked + interpreted)" : "");
      unload(&l, &w);
    }
  world_fini(&w);
}

/* The predicate and the loader's checks. */
Test(gpu_runtime, supports_and_load_errors, .init = gpu_init, .timeout = 120) {
  kilnPlan* p = NULL;
  kilnClassicOptions o = KILN_CLASSIC_OPTIONS_INIT;
  cr_assert(eq(int, kilnClassicPlan("direct", KILN_COLL_ALLTOALL, 2, &o, &p), KILN_SUCCESS));
  cr_assert(kilnPlanSupports(p, 100, KILN_FLOAT32, KILN_SUM, false));
  cr_assert(not(kilnPlanSupports(p, 100, KILN_FLOAT32, KILN_SUM, true)));
  cr_assert(not(kilnPlanSupports(p, 100, (kilnDataType_t)99, KILN_SUM, false)));
  /* A plan whose chunk counts fit no form: refused, and the predicate sets no error text. */
  kilnSetError(KILN_SUCCESS, "%s", "");
  p->gpus[0].i_chunks += 1;
  cr_assert(not(kilnPlanSupports(p, 100, KILN_FLOAT32, KILN_SUM, false)));
  cr_assert(eq(str, (char*)kilnLastError(), ""), "the predicate left an error: %s", kilnLastError());
  p->gpus[0].i_chunks -= 1;
  kilnPlanFree(p);
  o.inplace = true;
  cr_assert(eq(int, kilnClassicPlan("ring", KILN_COLL_ALLREDUCE, 4, &o, &p), KILN_SUCCESS));
  cr_assert(kilnPlanSupports(p, 7, KILN_BFLOAT16, KILN_AVG, true));
  cr_assert(not(kilnPlanSupports(p, 7, KILN_BFLOAT16, KILN_AVG, false)));
  world w;
  cr_assert(world_init(&w, 2, NULL));
  kilnExec_t x = NULL;
  cr_assert(eq(int, kilnPlanLoad(w.kc[0], p, &x), KILN_ERR_INVALID_ARGUMENT)); /* 4-rank plan */
  cr_assert(strstr(kilnLastError(), "4 ranks") != NULL, "%s", kilnLastError());
  kilnPlanFree(p);
  world_fini(&w);
}

/* Rank `rank` of a process per GPU (gpu_fork_ranks): plans of every collective through kiln's C
 * API on a communicator of NCCL's, each rank checking its own output. */
static int child(int rank, int n, const ncclUniqueId* idp, void* ctx) {
  (void)ctx;
  const ncclUniqueId id = *idp;
  cudaSetDevice(rank);
  ncclComm_t nc;
  if (ncclCommInitRank(&nc, n, id, rank) != ncclSuccess) return 13;
  kilnComm_t kc;
  if (kilnCommCreate(nc, NULL, &kc) != KILN_SUCCESS) {
    fprintf(stderr, "rank %d: %s\n", rank, kilnLastError());
    return 14;
  }
  /* A world view of this one rank, so the CPU reference can be reused: every rank draws the
   * same inputs from the same seed and checks its own output. */
  int rc = 0;
  const kilnColl_t colls[] = {KILN_COLL_ALLREDUCE, KILN_COLL_ALLGATHER, KILN_COLL_REDUCESCATTER, KILN_COLL_ALLTOALL};
  for (int ci = 0; ci < 4 && rc == 0; ci++) {
    kilnPlan* p = NULL;
    kilnClassicOptions o = KILN_CLASSIC_OPTIONS_INIT;
    o.chunks = 2;
    o.instances = 2;
    if (kilnClassicPlan(colls[ci] == KILN_COLL_ALLTOALL ? "direct" : "ring", colls[ci], n, &o, &p) != KILN_SUCCESS) return 15;
    kilnExec_t x;
    if (kilnPlanLoad(kc, p, &x) != KILN_SUCCESS) return 16;
    const kilnDataType_t dts[] = {KILN_FLOAT32, KILN_BFLOAT16, KILN_INT8, KILN_FLOAT8E4M3};
    for (int di = 0; di < 4 && rc == 0; di++) {
      const size_t count = 12345;
      const size_t es = kilnDataTypeSize(dts[di]);
      const size_t inE = (colls[ci] == KILN_COLL_ALLREDUCE || colls[ci] == KILN_COLL_ALLGATHER) ? count : n * count;
      const size_t outE = (colls[ci] == KILN_COLL_ALLREDUCE || colls[ci] == KILN_COLL_REDUCESCATTER) ? count : n * count;
      int64_t* vals = malloc(sizeof(int64_t) * inE * n);
      char* hin = malloc(inE * es);
      char* hout = malloc(outE * es);
      uint64_t rng = g_seed + 1000 * ci + di;
      for (int q = 0; q < n; q++)
        for (size_t i = 0; i < inE; i++) vals[q * inE + i] = (int64_t)(gpu_rand(&rng) % 5) - 2;
      for (size_t i = 0; i < inE; i++) gpu_encode(dts[di], hin, i, (double)vals[rank * inE + i]);
      void *din, *dout;
      cudaMalloc(&din, inE * es);
      cudaMalloc(&dout, outE * es);
      cudaMemcpy(din, hin, inE * es, cudaMemcpyHostToDevice);
      cudaMemset(dout, 0x7B, outE * es);
      if (kilnRun(x, din, dout, count, dts[di], KILN_SUM, 0) != KILN_SUCCESS) rc = 17;
      if (cudaDeviceSynchronize() != cudaSuccess) rc = 18;
      cudaMemcpy(hout, dout, outE * es, cudaMemcpyDeviceToHost);
      for (size_t i = 0; i < outE && rc == 0; i++) {
        double want = 0;
        switch (colls[ci]) {
          case KILN_COLL_ALLREDUCE: for (int q = 0; q < n; q++) want += vals[q * inE + i]; break;
          case KILN_COLL_REDUCESCATTER: for (int q = 0; q < n; q++) want += vals[q * inE + rank * count + i]; break;
          case KILN_COLL_ALLGATHER: want = vals[(i / count) * inE + i % count]; break;
          default: want = vals[(i / count) * inE + rank * count + i % count]; break;
        }
        if (gpu_decode(dts[di], hout, i) != want) {
          fprintf(stderr, "rank %d %s %s: element %zu want %g got %g\n", rank, kilnCollName(colls[ci]),
                  kilnDataTypeName(dts[di]), i, want, gpu_decode(dts[di], hout, i));
          rc = 19;
        }
      }
      cudaFree(din);
      cudaFree(dout);
      free(vals);
      free(hin);
      free(hout);
    }
    kilnExecFree(x);
    kilnPlanFree(p);
  }
  kilnCommDestroy(kc);
  ncclCommDestroy(nc);
  return rc;
}

Test(gpu_runtime, one_process_per_gpu, .init = gpu_init, .timeout = 300) {
  char msg[160];
  cr_assert(gpu_fork_ranks(suite_gpus(), ncclGetUniqueId, child, NULL, msg, sizeof msg), "%s", msg);
}

/* Runs in the runner before any test: counts the GPUs once and fixes the seed; both reach the
 * test workers (separate processes) through the environment. */
ReportHook(PRE_ALL)(struct criterion_test_set* set) {
  (void)set;
  char buf[32];
  const char* fake = getenv("KILN_TEST_FAKE_GPUS");
  int n = fake ? atoi(fake) : gpu_count_for_suite("test_gpu_runtime", 1);
  snprintf(buf, sizeof buf, "%d", n);
  setenv("KILN_TEST_GPUS", buf, 1);
  if (!getenv("KILN_TEST_SEED")) {
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)time(NULL));
    setenv("KILN_TEST_SEED", buf, 1);
  }
  if (n < 1) printf("skipped: no GPU\n");
  else printf("test_gpu_runtime: %d GPU%s, seed %s (KILN_TEST_SEED to repeat)%s\n", n, plural(n),
              getenv("KILN_TEST_SEED"), n < 2 ? ": only the suites of ranks sharing a GPU run" : "");
  fflush(stdout);
}
