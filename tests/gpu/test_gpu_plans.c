/*
 * GPU suite of the runtime's plans: classic plans (ring, direct) for all four collectives on 2, 4
 * and 8 GPUs, every data type and op, sizes from one element up, in place and out of place,
 * against a CPU reference on fresh data (seed printed); synthesized plans (kiln's synthesizer on
 * switchN with plans/sketches/switchN.xml, threadblocks capped at the SM count) for all four
 * collectives, Simple and LL, synthesized out of place and in place, every dtype and op at counts
 * 1 and 1003 and three typed ops up to 4 MB, the same checks (skipped where kiln was built without
 * the synthesizer); every plan baked into the build, the same way; the plans kiln ships for 8
 * GPUs and the plan files KILN_TEST_PLAN_FILES names; 1 GiB buffers; LL slots a call before left;
 * a loaded plan's calls across 2^32 (on one GPU too); the loader's checks; the
 * one-process-per-GPU model (on every GPU there is: 8, 4 or 2); 8 ranks sharing fewer GPUs, one
 * GPU too (the *_8ranks_shared tests). A test that needs more GPUs than are visible skips; the binary prints "skipped: no GPU" and
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
#include "../test_util.h"
#include "kiln/registry.h"
#include "kiln_dev.h" /* kilnDevLLFlag */
#ifdef KILN_HAVE_SYNTH
#include "synth_plans.h"
#endif

typedef struct planCase {
  const char* algo;
  kilnColl_t coll;
} planCase;

static const planCase kPlans[] = {
    {"ring", KILN_COLL_ALLREDUCE},   {"direct", KILN_COLL_ALLREDUCE},   {"ring", KILN_COLL_ALLGATHER},
    {"direct", KILN_COLL_ALLGATHER}, {"ring", KILN_COLL_REDUCESCATTER}, {"direct", KILN_COLL_REDUCESCATTER},
    {"direct", KILN_COLL_ALLTOALL},
};

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
        fprintf(stderr, "  %d ranks: %s%s done at %.1fs\n", n, l.plan->name,
                baked ? " (baked + interpreted)" : "", (double)(clock() - t0) / CLOCKS_PER_SEC);
        unload(&l, &w);
      }
  world_fini(&w);
}

Test(gpu_plans, classic_plans_2gpus, .init = gpu_init, .timeout = 600) { sweep(2, false); }
Test(gpu_plans, classic_plans_4gpus, .init = gpu_init, .timeout = 900) { sweep(4, false); }
Test(gpu_plans, classic_plans_8gpus, .init = gpu_init, .timeout = 1800) { sweep(8, false); }
/* 8 ranks where there are fewer GPUs: the plans' 8-rank code (connections, FIFOs, flags of 7
 * peers) runs as it will on 8 GPUs, some peers on the same GPU. */
Test(gpu_plans, classic_plans_8ranks_shared, .init = gpu_init_shared, .timeout = 1800) { sweep(8, true); }

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
  static const typedOp sweepTypes[] = {
      {KILN_FLOAT32, KILN_SUM}, {KILN_BFLOAT16, KILN_MAX}, {KILN_INT32, KILN_PROD}};
  const checkSet cs = {kSmallCounts, 2, sweepTypes, 3, sweepCounts, 3, 2u << 20};
  static const kilnColl_t colls[] = {KILN_COLL_ALLGATHER, KILN_COLL_REDUCESCATTER, KILN_COLL_ALLREDUCE,
                                     KILN_COLL_ALLTOALL};
  for (int proto = 0; proto < NPROTOS; proto++)
    for (int ci = 0; ci < 4; ci++)
      for (int planInplace = 0; planInplace < 2; planInplace++) {
        if (planInplace && colls[ci] == KILN_COLL_ALLTOALL) continue;
        kilnPlan* plan = NULL;
        kilnResult_t r =
            synth_switch_plan(gpu_plans_dir(), n, colls[ci], kProtos[proto], planInplace, maxTbs, &plan);
        cr_assert(eq(int, r, KILN_SUCCESS), "synthesize %s on switch%d (%s, %s): %s", kilnCollName(colls[ci]),
                  n, kilnProtoName(kProtos[proto]), planInplace ? "in place" : "out of place",
                  kilnLastError());
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
        fprintf(stderr, "  %d ranks: synthesized %s (%s, %s plan, %d form%s)%s done at %.1fs\n", n,
                plan->name, kilnProtoName(kProtos[proto]), planInplace ? "in-place" : "out-of-place", forms,
                plural(forms), baked ? " (baked + interpreted)" : "",
                (double)(clock() - t0) / CLOCKS_PER_SEC);
        unload(&l, &w);
      }
  world_fini(&w);
#endif
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
    fprintf(stderr, "  %d GPUs: baked %s done at %.1fs\n", n, e->name,
            (double)(clock() - t0) / CLOCKS_PER_SEC);
    unload(&l, &w);
    nplans++;
  }
  fprintf(stderr, "  %d GPUs: %d baked plans checked\n", n, nplans);
  world_fini(&w);
  if (nplans == 0) cr_skip_test("skipped: no plan for %d ranks is baked into this build", n);
}

Test(gpu_plans, baked_plans_2gpus, .init = gpu_init, .timeout = 600) { baked_sweep(2); }
Test(gpu_plans, baked_plans_4gpus, .init = gpu_init, .timeout = 600) { baked_sweep(4); }
Test(gpu_plans, baked_plans_8gpus, .init = gpu_init, .timeout = 900) { baked_sweep(8); }

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
  char dirs[2][1024];
  snprintf(dirs[0], sizeof dirs[0], "%s/n8", gpu_plans_dir());
  snprintf(dirs[1], sizeof dirs[1], "%s/n8/synth", gpu_plans_dir());
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
      char path[2304];
      snprintf(path, sizeof path, "%s/%s", dirs[di], e->d_name);
      kilnPlan* plan = NULL;
      cr_assert(eq(int, kilnPlanReadFile(path, &plan), KILN_SUCCESS), "%s: %s", path, kilnLastError());
      cr_assert(eq(int, plan->ngpus, 8), "%s: %d ranks", path, plan->ngpus);
      const int tbs = plan_max_tbs(plan);
      if (tbs > share) {
        fprintf(stderr,
                "  8 ranks: %s left out: %d threadblocks per rank, a rank's share of its GPU is %d SMs\n",
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

Test(gpu_plans, n8_plans_8gpus, .init = gpu_init, .timeout = 900) { n8_plans_sweep(false); }
Test(gpu_plans, n8_plans_8ranks_shared, .init = gpu_init_shared, .timeout = 900) { n8_plans_sweep(true); }

/* The plan files named in KILN_TEST_PLAN_FILES (paths separated by ':'; scripts/quickstart.sh
 * names the plan it synthesized), each on as many ranks as it has: a GPU each where there are
 * enough GPUs, else sharing them (a rank's share of its GPU's SMs must hold the plan's blocks, or
 * the test fails naming the plan). Checked as plans/n8's are. Skips when the variable is unset. */
Test(gpu_plans, plan_files, .init = gpu_init_shared, .timeout = 900) {
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
      cr_fatal("%s: %d threadblocks per rank, but a rank's share of its GPU is %d SMs (%d ranks on %d GPU%s)",
               path, tbs, share, n, g_ngpus, plural(g_ngpus));
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

/* test_synth.c verifies the synthesized plans at SYNTH_PLANS_RUNTIME_NSLOTS FIFO slots: that must
 * be the depth the runtime gives them (no GPU needed). */
Test(gpu_plans, synthesized_plans_verified_at_runtime_fifo_depth) {
#ifdef KILN_HAVE_SYNTH
  const kilnCommConfig cfg = KILN_COMM_CONFIG_INITIALIZER;
  cr_assert(eq(int, cfg.nslots, SYNTH_PLANS_RUNTIME_NSLOTS));
#else
  cr_skip_test("skipped: built without the synthesizer (kiln_synth needs GLPK)");
#endif
}

Test(gpu_plans, synthesized_plans_2gpus, .init = gpu_init, .timeout = 300) { synth_sweep(2, false); }
Test(gpu_plans, synthesized_plans_4gpus, .init = gpu_init, .timeout = 300) { synth_sweep(4, false); }
Test(gpu_plans, synthesized_plans_8gpus, .init = gpu_init, .timeout = 600) { synth_sweep(8, false); }
Test(gpu_plans, synthesized_plans_8ranks_shared, .init = gpu_init_shared, .timeout = 600) {
  synth_sweep(8, true);
}

/* 1 GiB per rank, every collective, plans and symmetric kernels, on every GPU there is (8, 4 or
 * 2). */
Test(gpu_plans, large_buffers, .init = gpu_init, .timeout = 900) {
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

/* A plan's LL receive never takes for its lines what a Simple piece left in a slot: 2 GPUs, every
 * slot rank 1 receives from rank 0 in holds constant data equal to the flag of the use that slot
 * comes to next (kilnDevLLFlag: a Simple piece of that constant leaves exactly this), then a ring allreduce as LL lines, which rank 1 issues 100 ms before rank 0. (With the
 * same flag in both of a line's flag words such slots passed for lines; the second word now
 * carries it ^ KILN_DEV_LL_FLAG_PAIR.) */
Test(gpu_plans, plan_ll_stale_slots, .init = gpu_init, .timeout = 120) {
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
  const kilnTestCommView k = comm_view(w.kc[1]);
  const size_t nconn = (size_t)k.nranks * (size_t)k.cfg.maxChannels;
  const int nslots = k.cfg.nslots;
  uint64_t* counts = (uint64_t*)malloc(2 * nconn * sizeof(uint64_t));
  uint32_t* words = (uint32_t*)malloc(k.cfg.slotBytes);
  cr_assert(counts != NULL && words != NULL);
  cudaSetDevice(1);
  cr_assert(eq(int, cudaMemcpy(counts, k.counts, 2 * nconn * sizeof(uint64_t), cudaMemcpyDeviceToHost),
               cudaSuccess));
  for (int ch = 0; ch < k.cfg.maxChannels; ch++) {
    const uint64_t rcvd = counts[nconn + (size_t)ch]; /* rank 1's count of slots received from rank 0 */
    for (int j = 0; j < nslots; j++) {
      const uint64_t use = rcvd + 1 + (uint64_t)j;
      const uint32_t flag = kilnDevLLFlag(use);
      for (size_t i = 0; i < k.cfg.slotBytes / 4; i++) words[i] = flag;
      char* slot =
          kilnTestCommFifo(w.kc[1], 0, ch) + (size_t)((use - 1) % (uint64_t)nslots) * k.cfg.slotBytes;
      cr_assert(eq(int, cudaMemcpy(slot, words, k.cfg.slotBytes, cudaMemcpyHostToDevice), cudaSuccess));
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
Test(gpu_plans, calls_of_a_form_the_plan_does_not_claim_refused, .init = gpu_init_shared, .timeout = 120) {
  world w;
  cr_assert(world_init_shared(&w, 2, g_ngpus >= 2 ? 2 : 1, NULL, NULL));
  uint64_t rng = g_seed ^ 0xF0F0;
  kilnClassicOptions o = KILN_CLASSIC_OPTIONS_INIT;
  kilnPlan* plan = NULL;
  cr_assert(eq(int, kilnClassicPlan("ring", KILN_COLL_ALLREDUCE, 2, &o, &plan), KILN_SUCCESS), "%s",
            kilnLastError());
  plan->inplace = true;
  plan->outofplace = false;
  loaded l;
  load_verified(&l, &w, plan);
  call c;
  cr_assert(call_alloc(&c, &w, KILN_COLL_ALLREDUCE, 1003, KILN_FLOAT32));
  cr_assert(not(kilnPlanSupports(plan, c.count, c.dt, KILN_SUM, false)));
  cr_assert(kilnPlanSupports(plan, c.count, c.dt, KILN_SUM, true));
  call_prepare(&c, &w, KILN_SUM, false, &rng);
  for (int r = 0; r < w.n; r++) {
    cr_assert(eq(int, kilnRun(l.ex[r], c.sendp[r], c.recvp[r], c.count, c.dt, KILN_SUM, w.st[r]),
                 KILN_ERR_UNSUPPORTED));
    cr_assert(contains(kilnLastError(), "serves in-place calls only"), "%s", kilnLastError());
  }
  run_check(&l, &w, &c, KILN_SUM, true, &rng);
  unload(&l, &w);
  load(&l, &w, "ring", KILN_COLL_ALLREDUCE, 1, 1, KILN_PROTO_SIMPLE, false);
  call_prepare(&c, &w, KILN_SUM, true, &rng);
  cr_assert(eq(int, kilnRun(l.ex[0], c.recvp[0], c.recvp[0], c.count, c.dt, KILN_SUM, w.st[0]),
               KILN_ERR_UNSUPPORTED));
  cr_assert(contains(kilnLastError(), "serves out-of-place calls only"), "%s", kilnLastError());
  run_check(&l, &w, &c, KILN_SUM, false, &rng);
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
Test(gpu_plans, plan_calls_past_2pow32, .init = gpu_init_shared, .timeout = 300) {
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
          cr_assert(eq(int, kilnExecSetCalls(l.ex[r], (1ull << 32) - 2), KILN_SUCCESS), "%s",
                    kilnLastError());
        }
        call c;
        cr_assert(call_alloc(&c, &w, pc->coll, (1u << 20) + 5, KILN_FLOAT32));
        for (int k = 0; k < 4; k++)
          run_check(&l, &w, &c, gpu_reduces(pc->coll) && k % 2 ? KILN_AVG : KILN_SUM, false, &rng);
        call_free(&c, &w);
      }
      fprintf(stderr, "  %s: 4 calls across 2^32%s: pass\n", l.plan->name,
              baked ? " (baked + interpreted)" : "");
      unload(&l, &w);
    }
  world_fini(&w);
}

/* The predicate and the loader's checks. */
Test(gpu_plans, supports_and_load_errors, .init = gpu_init, .timeout = 120) {
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
  const kilnColl_t colls[] = {KILN_COLL_ALLREDUCE, KILN_COLL_ALLGATHER, KILN_COLL_REDUCESCATTER,
                              KILN_COLL_ALLTOALL};
  for (int ci = 0; ci < 4 && rc == 0; ci++) {
    kilnPlan* p = NULL;
    kilnClassicOptions o = KILN_CLASSIC_OPTIONS_INIT;
    o.chunks = 2;
    o.instances = 2;
    if (kilnClassicPlan(colls[ci] == KILN_COLL_ALLTOALL ? "direct" : "ring", colls[ci], n, &o, &p) !=
        KILN_SUCCESS)
      return 15;
    kilnExec_t x;
    if (kilnPlanLoad(kc, p, &x) != KILN_SUCCESS) return 16;
    const kilnDataType_t dts[] = {KILN_FLOAT32, KILN_BFLOAT16, KILN_INT8, KILN_FLOAT8E4M3};
    for (int di = 0; di < 4 && rc == 0; di++) {
      const size_t count = 12345;
      const size_t es = kilnDataTypeSize(dts[di]);
      size_t inE, outE;
      call_elems(colls[ci], n, count, &inE, &outE);
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
          case KILN_COLL_ALLREDUCE:
            for (int q = 0; q < n; q++) want += vals[q * inE + i];
            break;
          case KILN_COLL_REDUCESCATTER:
            for (int q = 0; q < n; q++) want += vals[q * inE + rank * count + i];
            break;
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

Test(gpu_plans, one_process_per_gpu, .init = gpu_init, .timeout = 300) {
  char msg[160];
  cr_assert(gpu_fork_ranks(suite_gpus(), ncclGetUniqueId, child, NULL, msg, sizeof msg), "%s", msg);
}

GPU_SUITE_HOOK("test_gpu_plans")
