/*
 * The synthesized plans the GPU suite runs (test_gpu_plans.c, synthesized_plans_*) and the CPU
 * suite verifies with the runtime's FIFO depth (test_synth.c), made by one function so that both
 * check the same plans: kilnSynthesize on the built-in topology switchN (one node) with the
 * sketch plans/sketches/switchN.xml, short MILP limits (these models solve in milliseconds), the
 * given protocol and form, and at most max_tbs threadblocks per rank (the runtime runs one
 * threadblock per SM, so the GPU suite passes its SM count). Needs kiln_synth; includes no CUDA
 * header.
 */
#ifndef KILN_TESTS_GPU_SYNTH_PLANS_H
#define KILN_TESTS_GPU_SYNTH_PLANS_H

#include <stdbool.h>
#include <stdio.h>

#include "kiln/plan.h"
#include "kiln/sketch.h"
#include "kiln/synth.h"
#include "kiln/topology.h"

/* kilnCommConfig.nslots of KILN_COMM_CONFIG_INITIALIZER (include/kiln/runtime.h, which needs CUDA):
 * the FIFO depth the GPU suite runs these plans with and the CPU suite verifies them at.
 * test_gpu_plans.c checks that the two agree. */
#define SYNTH_PLANS_RUNTIME_NSLOTS KILN_FIFO_DEPTH_DEFAULT

/* Synthesizes coll for n ranks (a sketch plans/sketches/switchN.xml must exist under plans_dir, the
 * plans folder: 2, 4 and 8 do) into *out (caller frees). The library's error stays in
 * kilnLastError() on failure. */
static inline kilnResult_t synth_switch_plan(const char* plans_dir, int n, kilnColl_t coll, kilnProto_t proto,
                                             bool inplace, int max_tbs, kilnPlan** out) {
  char name[32], path[1024];
  snprintf(name, sizeof name, "switch%d", n);
  snprintf(path, sizeof path, "%s/sketches/%s.xml", plans_dir, name);
  kilnTopology* t = NULL;
  kilnSketch* s = NULL;
  *out = NULL;
  kilnResult_t r = kilnTopologyBuiltin(name, 1, &t);
  if (r == KILN_SUCCESS) r = kilnSketchReadFile(path, &s);
  if (r == KILN_SUCCESS) {
    kilnSynthOptions o = KILN_SYNTH_OPTIONS_INIT;
    o.time_limit_s = 5;
    o.stall_s = 0.3;
    o.proto = proto;
    o.inplace = inplace;
    o.max_tbs = max_tbs;
    r = kilnSynthesize(t, s, coll, &o, out, NULL);
  }
  kilnSketchFree(s);
  kilnTopologyFree(t);
  return r;
}

#endif
