/* libFuzzer harness for the judges of a plan: any plan that reads, within a size the harness can
 * run quickly, goes through the plan index's tables, the verifier (memory steps' several calls
 * included), the simulator on a switch of its rank count, and the GPU runtime's check; each must
 * return one of its documented results with a message, and never crash, hang or leak. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/plan.h"

/* Plans past these are only read (the verifier's time grows with ranks x threadblocks x steps). */
#define FUZZ_MAX_RANKS 16
#define FUZZ_MAX_TBS 64
#define FUZZ_MAX_STEPS 2048
#define FUZZ_MAX_CHUNKS 4096

static bool small(const kilnPlan* p) {
  if (p->ngpus > FUZZ_MAX_RANKS) return false;
  int tbs = 0, steps = 0;
  for (int r = 0; r < p->ngpus; r++) {
    const kilnGpu* g = &p->gpus[r];
    if (g->i_chunks > FUZZ_MAX_CHUNKS || g->o_chunks > FUZZ_MAX_CHUNKS || g->s_chunks > FUZZ_MAX_CHUNKS)
      return false;
    tbs += g->ntbs;
    for (int t = 0; t < g->ntbs; t++) {
      steps += g->tbs[t].nsteps;
      for (int s = 0; s < g->tbs[t].nsteps; s++)
        if (g->tbs[t].steps[s].cnt > FUZZ_MAX_CHUNKS) return false;
    }
  }
  return tbs <= FUZZ_MAX_TBS && steps <= FUZZ_MAX_STEPS;
}

/* A failure must say what failed. */
static void expect(kilnResult_t r, kilnResult_t a, kilnResult_t b, kilnResult_t c) {
  if (r != KILN_SUCCESS && r != a && r != b && r != c) __builtin_trap();
  if (r != KILN_SUCCESS && !kilnLastError()[0]) __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kilnPlan* p = NULL;
  if (kilnPlanReadMemory((const char*)data, size, "fuzz.xml", &p) != KILN_SUCCESS) return 0;
  if (!small(p)) {
    kilnPlanFree(p);
    return 0;
  }
  kilnVerifyOptions vo = KILN_VERIFY_OPTIONS_INIT;
  vo.schedules = 2;
  expect(kilnPlanVerify(p, &vo), KILN_ERR_VERIFY, KILN_ERR_UNSUPPORTED, KILN_ERR_INVALID_ARGUMENT);
  vo.fifo_depth = 0;
  expect(kilnPlanVerify(p, &vo), KILN_ERR_VERIFY, KILN_ERR_UNSUPPORTED, KILN_ERR_INVALID_ARGUMENT);
  expect(kilnPlanCheckRuntime(p), KILN_ERR_UNSUPPORTED, KILN_ERR_UNSUPPORTED, KILN_ERR_UNSUPPORTED);
  int steps = 0;
  for (int r = 0; r < p->ngpus; r++)
    for (int t = 0; t < p->gpus[r].ntbs; t++) steps += p->gpus[r].tbs[t].nsteps;
  int* a = malloc(sizeof(int) * (size_t)(steps + FUZZ_MAX_CHUNKS + 1));
  int* b = malloc(sizeof(int) * (size_t)(steps + 1));
  if (a && b)
    for (int r = 0; r < p->ngpus; r++) {
      expect(kilnPlanSignalOrdinals(p, r, a, b), KILN_ERR_VERIFY, KILN_ERR_INVALID_ARGUMENT, KILN_ERR_VERIFY);
      expect(kilnPlanLineChunks(p, r, a), KILN_ERR_VERIFY, KILN_ERR_INVALID_ARGUMENT, KILN_ERR_VERIFY);
      if (kilnPlanRankSteps(p, r, NULL, b) != KILN_SUCCESS) __builtin_trap();
    }
  free(a);
  free(b);
  char name[32];
  kilnTopology* t = NULL;
  snprintf(name, sizeof name, "switch%d", p->ngpus);
  if (p->ngpus >= 2 && kilnTopologyBuiltin(name, 1, &t) == KILN_SUCCESS) {
    kilnSimResult sr;
    expect(kilnPlanSimulate(p, t, 1 << 20, &sr), KILN_ERR_VERIFY, KILN_ERR_INVALID_ARGUMENT,
           KILN_ERR_NO_MEMORY);
    kilnSimParams sp = KILN_SIM_PARAMS_INIT;
    sp.local_us_per_mb = 1.0; /* the local-work path too */
    expect(kilnPlanSimulateWith(p, t, 1 << 20, &sp, &sr), KILN_ERR_VERIFY, KILN_ERR_INVALID_ARGUMENT,
           KILN_ERR_NO_MEMORY);
    kilnTopologyFree(t);
  }
  kilnPlanFree(p);
  return 0;
}
