/*
 * GPU suite of kiln tune (host/tune_gpu.h with solver/tune.h): a tiny tune of 2 ranks sharing one
 * GPU (a rehearsal) over a few sizes, its folder loaded as KILN_PLANS names it and every range's
 * plan run by the runtime and checked; a plan with a wrong result refused by the tuner's check.
 * The binary prints "skipped: no GPU" and exits 0 where there is none.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../test_util.h"
#include "gpu_common.h"
#include "kiln/registry.h"
#include "params.h" /* kilnParamsReload, kilnParamString */
#include "tune_gpu.h"

GPU_SUITE_HOOK("gpu_tune")

#define NSIZES 4
static const uint64_t kSizes[NSIZES] = {64, 1024, 16384, 262144};

/* The candidates of the tiny tune: ring and direct allreduce on 2 ranks, Simple and LL, 1 and 2
 * instances. */
static void tiny_set(kilnTuneSet* set) {
  kilnTuneSpace sp = KILN_TUNE_SPACE_INIT;
  sp.forms = 1u << KILN_TUNE_FORM_RING | 1u << KILN_TUNE_FORM_DIRECT;
  sp.protos = 1u << KILN_PROTO_SIMPLE | 1u << KILN_PROTO_LL;
  sp.ninstances = 2;
  sp.instances[0] = 1;
  sp.instances[1] = 2;
  int added = 0;
  cr_assert(eq(int, kilnTuneClassic(set, KILN_COLL_ALLREDUCE, 2, &sp, NULL, NULL, &added), KILN_SUCCESS));
  cr_assert(eq(int, added, 8));
}

/* Tunes allreduce on 2 ranks of one GPU, writes the folder, loads it through KILN_PLANS (as the
 * drop-in reads it) and runs, at every tuned size, the plan the selector then takes, checked. */
Test(gpu_tune, tiny_tune_loads_as_kiln_plans, .init = gpu_init_shared, .timeout = 600) {
  kilnTuneSet set = {0};
  tiny_set(&set);
  kilnTuneGpu* g = NULL;
  kilnTuneMachine m;
  cr_assert(eq(int, kilnTuneGpuOpen(2, 1, &m, &g), KILN_SUCCESS), "%s", kilnLastError());
  cr_expect(m.rehearsal);
  cr_expect(eq(int, m.nranks, 2));
  cr_expect(eq(int, m.ngpus, 1));
  cr_expect(not(kilnTuneGpuHasNccl(g)));
  double us[8 * NSIZES];
  const kilnTuneTiming tm = {1, 4, 3};
  for (int k = 0; k < NSIZES; k++) {
    size_t count = 0;
    cr_assert(
        eq(int, kilnTuneGpuPrepare(g, KILN_COLL_ALLREDUCE, kSizes[k], false, g_seed + (uint64_t)k, &count),
           KILN_SUCCESS),
        "%s", kilnLastError());
    cr_expect(eq(sz, count, (size_t)kSizes[k] / 4));
    double nccl = 0;
    cr_expect(eq(int, kilnTuneGpuRun(g, NULL, &tm, &nccl), KILN_ERR_UNSUPPORTED), "NCCL in a rehearsal");
    for (int c = 0; c < set.n; c++) {
      const kilnResult_t r = kilnTuneGpuRun(g, set.c[c].plan, &tm, &us[c * NSIZES + k]);
      cr_expect(r == KILN_SUCCESS || r == KILN_ERR_UNSUPPORTED, "%s at %llu bytes: %s", set.c[c].plan->name,
                (unsigned long long)kSizes[k], kilnLastError());
      if (r != KILN_SUCCESS)
        us[c * NSIZES + k] = KILN_TUNE_NOT_RUN;
      else
        cr_expect(gt(dbl, us[c * NSIZES + k], 0.0));
    }
  }
  kilnTuneGpuClose(g);
  kilnTuneRange ranges[NSIZES];
  int nr = 0;
  cr_assert(eq(int, kilnTuneChoose(kSizes, NSIZES, us, set.n, NULL, 0.03, ranges, &nr), KILN_SUCCESS));
  for (int i = 0; i < nr; i++)
    cr_expect(ge(int, ranges[i].cand, 0), "range %d left to NCCL in a rehearsal", i);
  char tmp[64], dir[128];
  snprintf(tmp, sizeof tmp, "/tmp/kiln-gpu-tune-XXXXXX");
  cr_assert(not(eq(ptr, mkdtemp(tmp), NULL)));
  snprintf(dir, sizeof dir, "%s/plans", tmp);
  const kilnTuneResult res = {KILN_COLL_ALLREDUCE, &set, NSIZES, kSizes, us, NULL, nr, ranges};
  cr_assert(eq(int, kilnTuneWriteDir(dir, &m, &res, 1, "test_gpu_tune"), KILN_SUCCESS), "%s",
            kilnLastError());

  /* What the drop-in does with KILN_PLANS (host/shim/shim_kiln.c): the setting's list, loaded. */
  setenv("KILN_PLANS", dir, 1);
  kilnParamsReload();
  const char* plans = kilnParamString(KILN_PARAM_Plans);
  cr_assert(plans != NULL && !strcmp(plans, dir));
  kilnRegistryReset();
  cr_assert(eq(int, kilnRegistryLoadPath(plans), KILN_SUCCESS), "%s", kilnLastError());

  world w;
  cr_assert(world_init_shared(&w, 2, 1, NULL, NULL));
  uint64_t rng = g_seed;
  for (int k = 0; k < NSIZES; k++) {
    const size_t count = (size_t)kSizes[k] / 4;
    call c;
    cr_assert(call_alloc(&c, &w, KILN_COLL_ALLREDUCE, count, KILN_FLOAT32));
    /* The call's own buffers: the tuned plans are out of place (equal pointers are an in-place call). */
    const kilnCall cl = {KILN_COLL_ALLREDUCE, c.dsend[0], c.drecv[0], count, KILN_FLOAT32, KILN_SUM, false};
    const kilnChoice ch = kilnSelect(w.kc[0], NULL, &cl);
    cr_assert(eq(int, ch.serve, KILN_SERVE_PLAN), "%llu bytes: %s", (unsigned long long)kSizes[k],
              kilnChoiceName(&ch));
    cr_expect(eq(int, ch.reason, KILN_SELECT_LOADED));
    cr_expect(kilnRegistryIsLoaded(ch.entry));
    cr_expect(contains(ch.entry->name, "-r"), "%s", ch.entry->name);
    loaded l;
    load_entry(&l, &w, ch.entry);
    run_check(&l, &w, &c, KILN_SUM, false, &rng);
    call_free(&c, &w);
    unload(&l, &w);
  }
  assert_no_async_error(&w);
  world_fini(&w);
  kilnRegistryReset();
  unsetenv("KILN_PLANS");
  kilnParamsReload();
  kilnTuneSetFree(&set);
  rm_tree(tmp);
}

/* An "allreduce" that only copies each rank's input to its output runs, and the tuner's check
 * refuses it (KILN_ERR_VERIFY naming the wrong element); the world takes calls after it. */
Test(gpu_tune, refuses_a_wrong_plan, .init = gpu_init_shared, .timeout = 300) {
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnPlanCreate("copy-only", KILN_COLL_ALLREDUCE, 2, &p), KILN_SUCCESS));
  p->nchannels = 1;
  p->nchunksperloop = 1;
  for (int r = 0; r < 2; r++) {
    p->gpus[r].i_chunks = p->gpus[r].o_chunks = 1;
    kilnThreadblock* tb = kilnPlanAddThreadblock(p, r, -1, -1, 0);
    cr_assert(tb != NULL);
    cr_assert(kilnPlanAddStep(tb, KILN_STEP_COPY, KILN_BUF_INPUT, 0, KILN_BUF_OUTPUT, 0, 1) != NULL);
  }
  const kilnVerifyOptions vo = KILN_VERIFY_OPTIONS_INIT;
  cr_assert(eq(int, kilnPlanVerify(p, &vo), KILN_ERR_VERIFY), "the copy passes the CPU verifier");
  kilnTuneGpu* g = NULL;
  kilnTuneMachine m;
  cr_assert(eq(int, kilnTuneGpuOpen(2, 1, &m, &g), KILN_SUCCESS), "%s", kilnLastError());
  cr_assert(eq(int, kilnTuneGpuPrepare(g, KILN_COLL_ALLREDUCE, 4096, false, g_seed, NULL), KILN_SUCCESS));
  double us = 0;
  cr_expect(eq(int, kilnTuneGpuRun(g, p, NULL, &us), KILN_ERR_VERIFY), "%s", kilnLastError());
  cr_expect(contains(kilnLastError(), "wrong result"), "%s", kilnLastError());
  kilnPlan* ring = NULL;
  kilnClassicOptions o = KILN_CLASSIC_OPTIONS_INIT;
  cr_assert(eq(int, kilnClassicPlan("ring", KILN_COLL_ALLREDUCE, 2, &o, &ring), KILN_SUCCESS));
  cr_expect(eq(int, kilnTuneGpuRun(g, ring, NULL, &us), KILN_SUCCESS), "%s", kilnLastError());
  kilnTuneGpuClose(g);
  kilnPlanFree(ring);
  kilnPlanFree(p);
}

/* The tuner's check of every collective, out of place and in place (no in-place alltoall): a
 * classic plan of each, on 2 ranks of one GPU at a size of many chunks, passes it. */
Test(gpu_tune, checks_every_collective, .init = gpu_init_shared, .timeout = 300) {
  static const struct {
    const char* algo;
    kilnColl_t coll;
  } cases[] = {{"ring", KILN_COLL_ALLREDUCE},
               {"ring", KILN_COLL_REDUCESCATTER},
               {"ring", KILN_COLL_ALLGATHER},
               {"direct", KILN_COLL_ALLTOALL}};
  kilnTuneGpu* g = NULL;
  kilnTuneMachine m;
  cr_assert(eq(int, kilnTuneGpuOpen(2, 1, &m, &g), KILN_SUCCESS), "%s", kilnLastError());
  const kilnTuneTiming tm = {1, 2, 2};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    for (int ip = 0; ip < 2; ip++) {
      if (ip && cases[i].coll == KILN_COLL_ALLTOALL) continue;
      kilnClassicOptions o = KILN_CLASSIC_OPTIONS_INIT;
      o.instances = 2;
      o.inplace = ip == 1;
      kilnPlan* p = NULL;
      cr_assert(eq(int, kilnClassicPlan(cases[i].algo, cases[i].coll, 2, &o, &p), KILN_SUCCESS));
      size_t count = 0;
      cr_assert(
          eq(int, kilnTuneGpuPrepare(g, cases[i].coll, 65536, ip == 1, g_seed + i, &count), KILN_SUCCESS),
          "%s", kilnLastError());
      cr_expect(eq(sz, count, cases[i].coll == KILN_COLL_ALLREDUCE ? (size_t)16384 : (size_t)8192));
      double us = 0;
      cr_expect(eq(int, kilnTuneGpuRun(g, p, &tm, &us), KILN_SUCCESS), "%s: %s", p->name, kilnLastError());
      kilnPlanFree(p);
    }
  cr_expect(eq(int, kilnTuneGpuPrepare(g, KILN_COLL_ALLTOALL, 65536, true, g_seed, NULL),
               KILN_ERR_INVALID_ARGUMENT));
  cr_expect(
      eq(int, kilnTuneGpuPrepare(g, KILN_COLL_ALLGATHER, 4, false, g_seed, NULL), KILN_ERR_INVALID_ARGUMENT));
  kilnTuneGpuClose(g);
}
