/* Synthesizer: every plan it returns verifies, for every collective on small topologies with and
 * without symmetry; bad sketches are rejected before solving with a named reason; MILP time
 * limits keep an incumbent; GLPK errors come back as errors instead of aborting; the plans the GPU
 * suite synthesizes and runs verify at the runtime's FIFO depth. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <criterion/parameterized.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../solver/synth/milp.h"
#include "cli_run.h"
#include "test_files.h"
#include "test_util.h"
#include "gpu/synth_plans.h"
#include "kiln/plan.h"
#include "kiln/sketch.h"
#include "kiln/synth.h"

typedef struct synthCase {
  char topo[16];
  int nodes;
  char sketch[24];
  kilnColl_t coll;
  bool symmetry;
} synthCase;

static kilnSynthOptions fast_options(void) {
  kilnSynthOptions o = KILN_SYNTH_OPTIONS_INIT;
  o.time_limit_s = 5;
  o.stall_s = 0.3;
  return o;
}

static synthCase* all_cases(size_t* n) {
  static const struct {
    const char* topo;
    int nodes;
    const char* sketch;
  } setups[] = {
      {"switch4", 1, "switch4"}, {"switch8", 1, "switch8"},   {"ndv2", 1, "ndv2"},
      {"ndv2", 2, "ndv2-sk-1"},  {"torus4x4", 1, "torus4x4"},
  };
  static const kilnColl_t colls[] = {KILN_COLL_ALLGATHER, KILN_COLL_ALLTOALL, KILN_COLL_REDUCESCATTER,
                                     KILN_COLL_ALLREDUCE};
  size_t total = sizeof setups / sizeof setups[0] * 4 * 2;
  synthCase* cs = cr_malloc(total * sizeof *cs);
  size_t k = 0;
  for (size_t i = 0; i < sizeof setups / sizeof setups[0]; i++)
    for (int c = 0; c < 4; c++)
      for (int sym = 0; sym < 2; sym++) {
        memset(&cs[k], 0, sizeof cs[k]);
        snprintf(cs[k].topo, sizeof cs[k].topo, "%s", setups[i].topo);
        cs[k].nodes = setups[i].nodes;
        snprintf(cs[k].sketch, sizeof cs[k].sketch, "%s", setups[i].sketch);
        cs[k].coll = colls[c];
        cs[k].symmetry = sym;
        k++;
      }
  *n = k;
  return cs;
}

ParameterizedTestParameters(synth, plan_verifies) {
  size_t n;
  synthCase* cs = all_cases(&n);
  return cr_make_param_array(synthCase, cs, n);
}

ParameterizedTest(synthCase* c, synth, plan_verifies, .timeout = 120) {
  kilnTopology* t = NULL;
  cr_assert(eq(int, kilnTopologyBuiltin(c->topo, c->nodes, &t), KILN_SUCCESS));
  kilnSketch* s = load_sketch(c->sketch);
  kilnSynthOptions o = fast_options();
  o.use_symmetry = c->symmetry;
  /* The 16-GPU torus's MILPs do not close quickly (alltoall without symmetry ran three 5 s
   * solves); the incumbent after 1 s is what this test needs: a plan that verifies. */
  if (!strcmp(c->topo, "torus4x4")) o.time_limit_s = 1;
  kilnPlan* p = NULL;
  kilnSynthStats st;
  kilnResult_t r = kilnSynthesize(t, s, c->coll, &o, &p, &st);
  cr_assert(eq(int, r, KILN_SUCCESS), "%s x%d %s %s sym=%d: %s", c->topo, c->nodes, c->sketch,
            kilnCollName(c->coll), c->symmetry, kilnLastError());
  cr_assert(eq(int, p->ngpus, t->nranks));
  cr_assert(eq(int, (int)p->coll, (int)c->coll));
  kilnVerifyOptions vo = KILN_VERIFY_OPTIONS_INIT;
  vo.seed = 12345; /* fixed, visible seed for the random interleavings */
  cr_assert(eq(int, kilnPlanVerify(p, &vo), KILN_SUCCESS), "%s", kilnLastError());
  vo.fifo_depth = 1; /* no deadlock with a single FIFO slot per connection either */
  cr_assert(eq(int, kilnPlanVerify(p, &vo), KILN_SUCCESS), "%s", kilnLastError());
  kilnSimResult sim;
  cr_assert(eq(int, kilnPlanSimulate(p, t, 1 << 20, &sim), KILN_SUCCESS), "%s", kilnLastError());
  cr_assert(gt(dbl, sim.time_us, 0.0));
  kilnPlanFree(p);
  kilnSketchFree(s);
  kilnTopologyFree(t);
}

static kilnResult_t synth_xml(const char* topo, const char* xml, kilnColl_t coll, kilnPlan** p) {
  kilnTopology* t = NULL;
  cr_assert(eq(int, kilnTopologyBuiltin(topo, 1, &t), KILN_SUCCESS));
  kilnSketch* s = NULL;
  cr_assert(eq(int, kilnSketchReadMemory(xml, strlen(xml), "inline.xml", &s), KILN_SUCCESS), "%s",
            kilnLastError());
  kilnSynthOptions o = fast_options();
  kilnResult_t r = kilnSynthesize(t, s, coll, &o, p, NULL);
  kilnSketchFree(s);
  kilnTopologyFree(t);
  return r;
}

Test(synth, disconnected_sketch_rejected_with_reason) {
  static const char xml[] =
      "<sketch name=\"cut\"><intranode strategy=\"links\">"
      "<link src=\"0\" dst=\"1\"/><link src=\"1\" dst=\"0\"/>"
      "<link src=\"2\" dst=\"3\"/><link src=\"3\" dst=\"2\"/>"
      "</intranode><internode strategy=\"none\"/></sketch>";
  kilnPlan* p = (kilnPlan*)1; /* must come back NULL */
  kilnResult_t r = synth_xml("switch4", xml, KILN_COLL_ALLGATHER, &p);
  cr_assert(ne(int, r, KILN_SUCCESS));
  cr_assert(eq(ptr, p, NULL));
  cr_assert(not(eq(ptr, strstr(kilnLastError(), "not connected"), NULL)), "%s", kilnLastError());
}

Test(synth, non_automorphic_symmetry_rejected_with_reason) {
  /* a ring 0->1->2->3->0 plus the chord 0->2: rotating by one maps the chord to 1->3, absent */
  static const char xml[] =
      "<sketch name=\"chord\"><intranode strategy=\"links\">"
      "<link src=\"0\" dst=\"1\"/><link src=\"1\" dst=\"2\"/><link src=\"2\" dst=\"3\"/>"
      "<link src=\"3\" dst=\"0\"/><link src=\"0\" dst=\"2\"/>"
      "</intranode><internode strategy=\"none\"/><symmetry offset=\"1\" group=\"4\"/></sketch>";
  kilnPlan* p = (kilnPlan*)1; /* must come back NULL */
  kilnResult_t r = synth_xml("switch4", xml, KILN_COLL_ALLGATHER, &p);
  cr_assert(ne(int, r, KILN_SUCCESS));
  cr_assert(eq(ptr, p, NULL));
  cr_assert(not(eq(ptr, strstr(kilnLastError(), "symmetry"), NULL)), "%s", kilnLastError());
  cr_assert(not(eq(ptr, strstr(kilnLastError(), "0->2"), NULL)), "%s", kilnLastError());
}

/* A plan's name says its sketch and collective, and its protocol and instances where they are not
 * the defaults, so plans of one sketch for different sizes tell apart (quickstart loads two). */
Test(synth, plan_name_says_protocol_and_instances) {
  kilnTopology* t = NULL;
  cr_assert(eq(int, kilnTopologyBuiltin("switch2", 1, &t), KILN_SUCCESS));
  kilnSketch* s = load_sketch("switch2");
  static const struct {
    kilnSynthForm_t form;
    kilnProto_t proto;
    int instances;
    const char* name;
  } cases[] = {{KILN_SYNTH_FORM_SKETCH, KILN_PROTO_SIMPLE, 1, "kiln-switch2-allreduce"},
               {KILN_SYNTH_FORM_SKETCH, KILN_PROTO_LL, 4, "kiln-switch2-allreduce-LL-i4"},
               {KILN_SYNTH_FORM_SKETCH, KILN_PROTO_LL128, 1, "kiln-switch2-allreduce-LL128"},
               {KILN_SYNTH_FORM_SKETCH, KILN_PROTO_SIMPLE, 32, "kiln-switch2-allreduce-i32"},
               {KILN_SYNTH_FORM_ONEFLIGHT, KILN_PROTO_LL, 4, "kiln-switch2-allreduce-oneflight-LL-i4"},
               {KILN_SYNTH_FORM_TWOSHOT, KILN_PROTO_SIMPLE, 1, "kiln-switch2-allreduce-twoshot"}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    kilnSynthOptions o = fast_options();
    o.forms = KILN_SYNTH_FORM_BIT(cases[i].form);
    o.floor = false;
    o.proto = cases[i].proto;
    o.instances = cases[i].instances;
    kilnPlan* p = NULL;
    cr_assert(eq(int, kilnSynthesize(t, s, KILN_COLL_ALLREDUCE, &o, &p, NULL), KILN_SUCCESS), "%s",
              kilnLastError());
    cr_expect(eq(str, p->name, (char*)cases[i].name));
    cr_expect(eq(int, p->nchannels, cases[i].instances), "%s", p->name);
    kilnPlanFree(p);
  }
  /* A sketch name as long as names go: the sketch's part is cut, the suffix kept. */
  memset(s->name, 'x', sizeof s->name - 1);
  s->name[sizeof s->name - 1] = '\0';
  kilnSynthOptions o = fast_options();
  o.forms = KILN_SYNTH_FORM_BIT(KILN_SYNTH_FORM_ONEFLIGHT);
  o.proto = KILN_PROTO_LL128;
  o.instances = 1024;
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnSynthesize(t, s, KILN_COLL_ALLREDUCE, &o, &p, NULL), KILN_SUCCESS), "%s",
            kilnLastError());
  const size_t len = strlen(p->name), tail = strlen("-allreduce-oneflight-LL128-i1024");
  cr_expect(len < sizeof p->name && len > tail &&
                !strcmp(p->name + len - tail, "-allreduce-oneflight-LL128-i1024") &&
                !strncmp(p->name, "kiln-xxx", 8),
            "%s", p->name);
  kilnPlanFree(p);
  kilnSketchFree(s);
  kilnTopologyFree(t);
}

Test(synth, bad_options_rejected) {
  kilnTopology* t = NULL;
  cr_assert(eq(int, kilnTopologyBuiltin("switch4", 1, &t), KILN_SUCCESS));
  kilnSketch* s = load_sketch("switch4");
  kilnSynthOptions o = fast_options();
  o.instances = -1;
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnSynthesize(t, s, KILN_COLL_ALLGATHER, &o, &p, NULL), KILN_ERR_INVALID_ARGUMENT));
  o = fast_options();
  o.forms = KILN_SYNTH_FORM_BIT(KILN_SYNTH_FORM_RING); /* a floor's form, not one chosen among */
  cr_assert(eq(int, kilnSynthesize(t, s, KILN_COLL_ALLGATHER, &o, &p, NULL), KILN_ERR_INVALID_ARGUMENT));
  cr_expect(strstr(kilnLastError(), "forms") != NULL, "%s", kilnLastError());
  o = fast_options();
  cr_assert(eq(int, kilnSynthesize(t, s, KILN_COLL_CUSTOM, &o, &p, NULL), KILN_ERR_UNSUPPORTED));
  /* Values outside their enums: refused before a plan naming them is written (such a plan's
   * proto="unknown" could not be read back). */
  o = fast_options();
  o.proto = (kilnProto_t)(KILN_NUM_PROTOS + 1);
  cr_assert(eq(int, kilnSynthesize(t, s, KILN_COLL_ALLGATHER, &o, &p, NULL), KILN_ERR_INVALID_ARGUMENT));
  cr_expect(strstr(kilnLastError(), "proto") != NULL, "%s", kilnLastError());
  o = fast_options();
  o.ordering = KILN_NUM_ORDERINGS;
  cr_assert(eq(int, kilnSynthesize(t, s, KILN_COLL_ALLGATHER, &o, &p, NULL), KILN_ERR_INVALID_ARGUMENT));
  o.ordering = -2;
  cr_assert(eq(int, kilnSynthesize(t, s, KILN_COLL_ALLGATHER, &o, &p, NULL), KILN_ERR_INVALID_ARGUMENT));
  o = fast_options();
  o.stall_s = -1;
  cr_assert(eq(int, kilnSynthesize(t, s, KILN_COLL_ALLGATHER, &o, &p, NULL), KILN_ERR_INVALID_ARGUMENT));
  /* input sizes whose 4 ranks overflow 64 bits (the plan was ranked at the wrapped size), or
   * below a byte a chunk (plans of fractional chunks) */
  o = fast_options();
  o.input_size = (uint64_t)1 << 62;
  cr_assert(eq(int, kilnSynthesize(t, s, KILN_COLL_ALLGATHER, &o, &p, NULL), KILN_ERR_INVALID_ARGUMENT));
  cr_expect(strstr(kilnLastError(), "64 bits") != NULL, "%s", kilnLastError());
  o.input_size = 3;
  cr_assert(eq(int, kilnSynthesize(t, s, KILN_COLL_ALLREDUCE, &o, &p, NULL), KILN_ERR_INVALID_ARGUMENT));
  cr_expect(strstr(kilnLastError(), "less than a byte for each of its 4 chunks") != NULL, "%s",
            kilnLastError());
  o.input_size = 4;
  cr_assert(eq(int, kilnSynthesize(t, s, KILN_COLL_ALLREDUCE, &o, &p, NULL), KILN_SUCCESS), "%s",
            kilnLastError());
  kilnPlanFree(p);
  p = NULL;
  kilnSketchFree(s);
  kilnTopologyFree(t);
}

Test(synth, route_time_limit_still_gives_verified_plan) {
  /* the torus allgather routing does not prove optimality quickly (no gap allowed); a tiny limit
   * must still produce a plan (the incumbent, or least-loaded routes when there is none), and it
   * cuts the greedy ordering's variants short, which the stats say */
  kilnTopology* t = NULL;
  cr_assert(eq(int, kilnTopologyBuiltin("torus4x4", 1, &t), KILN_SUCCESS));
  kilnSketch* s = load_sketch("torus4x4");
  kilnSynthOptions o = fast_options();
  o.time_limit_s = 0.001;
  o.stall_s = 0;
  o.mip_gap = 0;
  kilnPlan* p = NULL;
  kilnSynthStats st;
  cr_assert(eq(int, kilnSynthesize(t, s, KILN_COLL_ALLGATHER, &o, &p, &st), KILN_SUCCESS), "%s",
            kilnLastError());
  cr_assert(not(st.route_optimal));
  cr_assert(st.orderings_cut);
  kilnVerifyOptions vo = KILN_VERIFY_OPTIONS_INIT;
  cr_assert(eq(int, kilnPlanVerify(p, &vo), KILN_SUCCESS), "%s", kilnLastError());
  kilnPlanFree(p);
  kilnSketchFree(s);
  kilnTopologyFree(t);
}

/* A 0-1 multi-knapsack GLPK cannot close in a few milliseconds (seeded LCG, seed printed). */
static void knapsack(milpModel* m, int items, unsigned seed) {
  milpInit(m);
  unsigned x = seed;
  for (int i = 0; i < items; i++) {
    x = x * 1103515245u + 12345u;
    milpAddCol(m, 0, 1, -(double)(1 + (x >> 16) % 97), true);
  }
  for (int k = 0; k < 8; k++) {
    int row = milpAddRow(m, -MILP_INF, items * 25.0);
    for (int i = 0; i < items; i++) {
      x = x * 1103515245u + 12345u;
      milpAdd(m, row, i, (double)(1 + (x >> 16) % 97));
    }
  }
}

Test(milp, time_limit_keeps_incumbent) {
  unsigned seed = 20260101u;
  cr_log_info("knapsack seed %u", seed);
  milpModel m;
  knapsack(&m, 400, seed);
  double* warm = calloc((size_t)m.ncols, sizeof(double)); /* all zero: feasible, objective 0 */
  milpParams mp = {0.02, 0.0, false, false, 0, warm, NULL, NULL, NULL};
  milpResult res;
  cr_assert(eq(int, milpGlpk.solve(&m, &mp, &res), KILN_SUCCESS), "%s", kilnLastError());
  cr_assert(res.status == MILP_FEASIBLE || res.status == MILP_OPTIMAL);
  cr_assert(not(eq(ptr, res.x, NULL)));
  cr_assert(le(dbl, res.obj, 0.0));
  free(res.x);
  free(warm);
  milpFree(&m);
}

Test(milp, glpk_error_is_returned_not_fatal) {
  /* a repeated (row, col) entry makes glp_load_matrix raise a GLPK error */
  milpModel m;
  milpInit(&m);
  int c = milpAddCol(&m, 0, 1, 1, true);
  int r = milpAddRow(&m, 1, MILP_INF);
  milpAdd(&m, r, c, 1);
  milpAdd(&m, r, c, 1);
  milpParams mp = {1, 0, true, false, 0, NULL, NULL, NULL, NULL};
  milpResult res;
  cr_assert(eq(int, milpGlpk.solve(&m, &mp, &res), KILN_ERR_SOLVER));
  /* GLPK still works afterwards, and compaction merges the entries */
  milpCompact(&m);
  cr_assert(eq(int, m.nnz, 1));
  cr_assert(eq(int, milpGlpk.solve(&m, &mp, &res), KILN_SUCCESS), "%s", kilnLastError());
  cr_assert(eq(int, res.status, MILP_OPTIMAL));
  cr_assert(eq(dbl, res.obj, 1.0));
  free(res.x);
  milpFree(&m);
}

Test(milp, compaction_drops_duplicate_rows) {
  milpModel m;
  milpInit(&m);
  int a = milpAddCol(&m, 0, 10, 1, false), b = milpAddCol(&m, 0, 10, 1, false);
  for (int k = 0; k < 3; k++) {
    int r = milpAddRow(&m, 2, MILP_INF);
    milpAdd(&m, r, a, 1);
    milpAdd(&m, r, b, 1);
  }
  int r = milpAddRow(&m, 1, MILP_INF);
  milpAdd(&m, r, a, 1);
  milpCompact(&m);
  cr_assert(eq(int, m.nrows, 2));
  cr_assert(eq(int, m.nnz, 3));
  milpFree(&m);
}

typedef struct inplaceCase {
  char topo[16];
  int nodes;
  char sketch[24];
  kilnColl_t coll;
} inplaceCase;

ParameterizedTestParameters(synth, inplace_plan_verifies) {
  static inplaceCase cases[] = {
      {"switch4", 1, "switch4", KILN_COLL_ALLGATHER},    {"switch4", 1, "switch4", KILN_COLL_REDUCESCATTER},
      {"switch4", 1, "switch4", KILN_COLL_ALLREDUCE},    {"ndv2", 2, "ndv2-sk-1", KILN_COLL_ALLGATHER},
      {"ndv2", 2, "ndv2-sk-1", KILN_COLL_REDUCESCATTER}, {"ndv2", 2, "ndv2-sk-1", KILN_COLL_ALLREDUCE},
      {"torus4x4", 1, "torus4x4", KILN_COLL_ALLREDUCE},
  };
  return cr_make_param_array(inplaceCase, cases, sizeof cases / sizeof cases[0]);
}

ParameterizedTest(inplaceCase* c, synth, inplace_plan_verifies, .timeout = 60) {
  kilnTopology* t = NULL;
  cr_assert(eq(int, kilnTopologyBuiltin(c->topo, c->nodes, &t), KILN_SUCCESS));
  kilnSketch* s = load_sketch(c->sketch);
  kilnSynthOptions o = fast_options();
  o.inplace = true;
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnSynthesize(t, s, c->coll, &o, &p, NULL), KILN_SUCCESS), "%s", kilnLastError());
  cr_assert(p->inplace);
  cr_assert(not(p->outofplace));
  if (c->coll == KILN_COLL_ALLGATHER)
    cr_assert(eq(int, p->gpus[0].i_chunks, 0));
  else
    cr_assert(eq(int, p->gpus[0].o_chunks, 0));
  kilnVerifyOptions vo = KILN_VERIFY_OPTIONS_INIT;
  vo.seed = 4242; /* fixed, visible seed */
  cr_assert(eq(int, kilnPlanVerify(p, &vo), KILN_SUCCESS), "%s", kilnLastError());
  kilnPlanFree(p);
  kilnSketchFree(s);
  kilnTopologyFree(t);
}

Test(synth, inplace_alltoall_unsupported) {
  kilnTopology* t = NULL;
  cr_assert(eq(int, kilnTopologyBuiltin("switch4", 1, &t), KILN_SUCCESS));
  kilnSketch* s = load_sketch("switch4");
  kilnSynthOptions o = fast_options();
  o.inplace = true;
  kilnPlan* p = (kilnPlan*)1; /* must come back NULL */
  cr_assert(eq(int, kilnSynthesize(t, s, KILN_COLL_ALLTOALL, &o, &p, NULL), KILN_ERR_UNSUPPORTED));
  cr_assert(eq(ptr, p, NULL));
  kilnSketchFree(s);
  kilnTopologyFree(t);
}

Test(synth, max_tbs_respected) {
  kilnTopology* t = NULL;
  cr_assert(eq(int, kilnTopologyBuiltin("switch8", 1, &t), KILN_SUCCESS));
  kilnSketch* s = load_sketch("switch8");
  kilnSynthOptions o = fast_options();
  o.forms = KILN_SYNTH_FORM_BIT(KILN_SYNTH_FORM_SKETCH); /* through FIFOs: a threadblock per peer */
  o.max_tbs = 8;
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnSynthesize(t, s, KILN_COLL_ALLTOALL, &o, &p, NULL), KILN_SUCCESS), "%s",
            kilnLastError());
  for (int r = 0; r < 8; r++) cr_assert(le(int, p->gpus[r].ntbs, 8));
  kilnPlanFree(p);
  o.max_tbs = 3; /* 7 peers cannot fit in 3 threadblocks */
  cr_assert(eq(int, kilnSynthesize(t, s, KILN_COLL_ALLTOALL, &o, &p, NULL), KILN_ERR_UNSUPPORTED));
  cr_assert(not(eq(ptr, strstr(kilnLastError(), "threadblocks"), NULL)), "%s", kilnLastError());
  /* the memory forms: a threadblock per instance, so at most 3 instances (2 of the ladder) */
  o = fast_options();
  o.max_tbs = 3;
  o.input_size = 256u << 20;
  kilnSynthStats st;
  cr_assert(eq(int, kilnSynthesize(t, s, KILN_COLL_ALLTOALL, &o, &p, &st), KILN_SUCCESS), "%s",
            kilnLastError());
  cr_expect(eq(int, (int)st.form, (int)KILN_SYNTH_FORM_DIRECT));
  for (int r = 0; r < 8; r++) cr_assert(le(int, p->gpus[r].ntbs, 3));
  kilnPlanFree(p);
  kilnSketchFree(s);
  kilnTopologyFree(t);
}

/* In an NVLink domain the simulator picks the allreduce's form by size, on its default costs (the
 * calibrated table, KILN_SIM_PARAMS_INIT): the one-flight form for small calls, where a flight's
 * latency and a call's fixed costs decide, and a bandwidth form (two-shot) at 1 MiB and 256 MiB,
 * where one-flight moves and reduces every peer's whole input on each rank. On switch2 and switch4
 * one-flight holds to 64 KiB; on 8 GPUs (switch8, one hgx-h100 node) to 32 KiB, and two-shot wins
 * from 64 KiB (switch8: 3.96 against 4.32 us). With the sketch of the node and the synthesizer's
 * defaults (every form, protocol and instance count). */
Test(synth, oneflight_small_bandwidth_form_large, .timeout = 120) {
  static const struct {
    const char* topo;
    uint64_t oneflight_to; /* the largest size tried that takes one-flight */
  } cases[] = {
      {"switch2", 64u << 10}, {"switch4", 64u << 10}, {"switch8", 32u << 10}, {"hgx-h100", 32u << 10}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    kilnTopology* t = NULL;
    cr_assert(eq(int, kilnTopologyBuiltin(cases[i].topo, 1, &t), KILN_SUCCESS));
    kilnSketch* s = load_sketch(cases[i].topo);
    const uint64_t sizes[] = {1024, cases[i].oneflight_to, 1u << 20, 256u << 20};
    for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
      kilnSynthOptions o = KILN_SYNTH_OPTIONS_INIT;
      o.input_size = sizes[z];
      kilnPlan* p = NULL;
      kilnSynthStats st;
      cr_assert(eq(int, kilnSynthesize(t, s, KILN_COLL_ALLREDUCE, &o, &p, &st), KILN_SUCCESS), "%s",
                kilnLastError());
      cr_expect(st.nvlink_domain, "%s", cases[i].topo);
      if (sizes[z] <= cases[i].oneflight_to)
        cr_expect(eq(int, (int)st.form, (int)KILN_SYNTH_FORM_ONEFLIGHT), "%s at %llu bytes: %s",
                  cases[i].topo, (unsigned long long)sizes[z], kilnSynthFormName(st.form));
      else
        cr_expect(eq(int, (int)st.form, (int)KILN_SYNTH_FORM_TWOSHOT),
                  "%s at %llu bytes: %s in %s, %d instances", cases[i].topo, (unsigned long long)sizes[z],
                  kilnSynthFormName(st.form), kilnProtoName(st.proto), st.instances);
      kilnPlanFree(p);
    }
    kilnSketchFree(s);
    kilnTopologyFree(t);
  }
}

/* The plans the GPU suite synthesizes and runs (tests/gpu/synth_plans.h: switch2 / switch4, every
 * collective, Simple and LL, out of place and in place) verify with the runtime's default FIFO
 * depth, so the GPU test cannot deadlock on it, and fit the runtime's default channels and an
 * H100's / H200's 132 SMs (the cap the GPU suite passes is the GPUs' SM count). */
typedef struct gpuSynthCase {
  int n;
  kilnColl_t coll;
  kilnProto_t proto;
  bool inplace;
} gpuSynthCase;

ParameterizedTestParameters(synth, gpu_suite_plans_verify_at_runtime_fifo_depth) {
  static gpuSynthCase cases[3 * 4 * 2 * 2];
  static const kilnColl_t colls[] = {KILN_COLL_ALLGATHER, KILN_COLL_REDUCESCATTER, KILN_COLL_ALLREDUCE,
                                     KILN_COLL_ALLTOALL};
  size_t k = 0;
  for (int n = 2; n <= 8; n *= 2)
    for (int c = 0; c < 4; c++)
      for (int proto = 0; proto < 2; proto++)
        for (int inplace = 0; inplace < 2; inplace++) {
          if (inplace && colls[c] == KILN_COLL_ALLTOALL) continue;
          cases[k++] = (gpuSynthCase){n, colls[c], proto ? KILN_PROTO_LL : KILN_PROTO_SIMPLE, inplace};
        }
  return cr_make_param_array(gpuSynthCase, cases, k);
}

ParameterizedTest(gpuSynthCase* c, synth, gpu_suite_plans_verify_at_runtime_fifo_depth, .timeout = 60) {
  enum { H100_SMS = 132, RUNTIME_MAX_CHANNELS = 32 }; /* kilnCommConfig.maxChannels default */
  kilnPlan* p = NULL;
  kilnResult_t r =
      synth_switch_plan(KILN_SOURCE_DIR "/plans", c->n, c->coll, c->proto, c->inplace, H100_SMS, &p);
  cr_assert(eq(int, r, KILN_SUCCESS), "switch%d %s %s inplace=%d: %s", c->n, kilnCollName(c->coll),
            kilnProtoName(c->proto), c->inplace, kilnLastError());
  cr_assert(eq(int, (int)p->proto, (int)c->proto));
  cr_assert(eq(int, p->inplace || p->outofplace, 1));
  for (int g = 0; g < p->ngpus; g++) {
    cr_assert(le(int, p->gpus[g].ntbs, H100_SMS));
    for (int t = 0; t < p->gpus[g].ntbs; t++)
      cr_assert(lt(int, p->gpus[g].tbs[t].chan, RUNTIME_MAX_CHANNELS));
  }
  kilnVerifyOptions vo = KILN_VERIFY_OPTIONS_INIT;
  vo.seed = 2024; /* fixed, visible seed for the random interleavings */
  vo.schedules = 8;
  vo.fifo_depth = SYNTH_PLANS_RUNTIME_NSLOTS;
  cr_assert(eq(int, kilnPlanVerify(p, &vo), KILN_SUCCESS), "switch%d %s %s inplace=%d at %d slots: %s", c->n,
            kilnCollName(c->coll), kilnProtoName(c->proto), c->inplace, vo.fifo_depth, kilnLastError());
  kilnPlanFree(p);
}

/* kiln synth: a sketch by the name kiln ships it under; an output that cannot be written is
 * refused before any solve (it was found only once the synthesis was over). */
Test(synth, cli_sketch_names_and_output_checked_first) {
  char dir[64], out[8192], args[512];
  make_tmpdir(dir, sizeof dir);
  snprintf(args, sizeof args, "synth --topo switch4 --sketch switch4 --coll allgather -o %s/a.xml --quiet",
           dir);
  int rc = run_kiln(args, out, sizeof out);
  if (rc < 0) cr_skip_test("kiln CLI not built");
  cr_expect(eq(int, rc, 0), "%s", out);
  snprintf(args, sizeof args, "%s/a.xml", dir);
  cr_expect(eq(int, access(args, F_OK), 0));
  unlink(args);
  expect_kiln(out, sizeof out, 2, "no folder",
              "synth --topo switch4 --sketch switch4 --coll allgather -o %s/no/a.xml", dir);
  cr_expect(not(contains(out, "stages:")), "refused before solving: %s", out);
  expect_kiln(out, sizeof out, 2, "is a folder",
              "synth --topo switch4 --sketch switch4 --coll allgather -o %s", dir);
  /* an unknown sketch name is a bad argument (2) as an unknown --topo name is (it exited 1) */
  cr_expect(
      eq(int,
         run_kiln("synth --topo switch4 --sketch no-such-sketch --coll allgather -o x.xml", out, sizeof out),
         2),
      "%s", out);
  cr_expect(contains(out, "unknown sketch 'no-such-sketch'"), "%s", out);
  snprintf(args, sizeof args, "synth --topo switch4 --sketch %s/no-such.xml --coll allgather -o x.xml", dir);
  cr_expect(eq(int, run_kiln(args, out, sizeof out), 1), "%s", out); /* a file that cannot be read */
  cr_expect(contains(out, "no-such.xml: cannot open"), "%s", out);
  /* a collective or form synthesis does not serve: 2, as classic and simulate exit for theirs (it exited 1) */
  cr_expect(
      eq(int, run_kiln("synth --topo switch4 --sketch switch4 --coll custom -o x.xml", out, sizeof out), 2),
      "%s", out);
  cr_expect(contains(out, "--coll is allgather, alltoall, reducescatter or allreduce"), "%s", out);
  cr_expect(eq(int,
               run_kiln("synth --topo switch4 --sketch switch4 --coll alltoall --inplace -o x.xml", out,
                        sizeof out),
               2),
            "%s", out);
  cr_expect(contains(out, "in-place alltoall plans are not supported"), "%s", out);
  rmdir(dir);
}

/* kilnSketchDefault (every intra-node link kept, the topology's switches as uc-max hyperedges under
 * strategy "all") synthesizes plans that verify: switch4 (one switch) and ndv2 (NVLink links, no
 * switch) allgather and alltoall on one node. */
Test(synth, default_sketch_synthesizes, .timeout = 120) {
  static const char* const topos[] = {"switch4", "ndv2"};
  static const kilnColl_t colls[] = {KILN_COLL_ALLGATHER, KILN_COLL_ALLTOALL};
  for (size_t i = 0; i < sizeof topos / sizeof topos[0]; i++)
    for (size_t c = 0; c < sizeof colls / sizeof colls[0]; c++) {
      kilnTopology* t = NULL;
      cr_assert(eq(int, kilnTopologyBuiltin(topos[i], 1, &t), KILN_SUCCESS));
      kilnSketch* s = NULL;
      cr_assert(eq(int, kilnSketchDefault(t, &s), KILN_SUCCESS), "%s", kilnLastError());
      cr_assert(eq(int, s->nswitches, t->ntswitches));
      kilnSynthOptions o = fast_options();
      kilnPlan* p = NULL;
      cr_assert(eq(int, kilnSynthesize(t, s, colls[c], &o, &p, NULL), KILN_SUCCESS), "%s %s: %s", topos[i],
                kilnCollName(colls[c]), kilnLastError());
      kilnVerifyOptions vo = KILN_VERIFY_OPTIONS_INIT;
      cr_assert(eq(int, kilnPlanVerify(p, &vo), KILN_SUCCESS), "%s %s: %s", topos[i], kilnCollName(colls[c]),
                kilnLastError());
      kilnPlanFree(p);
      kilnSketchFree(s);
      kilnTopologyFree(t);
    }
}

/* Node-level synthesis: on 3 and 4 nodes (and on 2 when asked) every collective's plan verifies,
 * the stats say the routes came from the two-node representative, and the routing model is the
 * same size whatever the node count. */
typedef struct nodeCase {
  const char* topo;
  int nodes;
  const char* sketch;
} nodeCase;

static const nodeCase node_cases[] = {
    {"hgx-h100", 3, "hgx-h100"}, {"hgx-h100", 4, "hgx-h100"}, {"ndv2", 3, "ndv2-sk-1"},
    {"dgx2", 3, "dgx2-sk-1"},    {"hgx-h100", 2, "hgx-h100"}, {"hgx-h100", 3, "hgx-h100-direct"},
};
#define NODE_CASES (sizeof node_cases / sizeof node_cases[0])
KILN_INDEX_PARAMS(synth, node_level_plans_verify, NODE_CASES * 4)

ParameterizedTest(int* idx, synth, node_level_plans_verify, .timeout = 120) {
  static const kilnColl_t colls[] = {KILN_COLL_ALLGATHER, KILN_COLL_ALLTOALL, KILN_COLL_REDUCESCATTER,
                                     KILN_COLL_ALLREDUCE};
  const nodeCase* c = &node_cases[*idx / 4];
  const kilnColl_t coll = colls[*idx % 4];
  kilnTopology* t = NULL;
  cr_assert(eq(int, kilnTopologyBuiltin(c->topo, c->nodes, &t), KILN_SUCCESS));
  kilnSketch* s = load_sketch(c->sketch);
  kilnSynthOptions o = fast_options();
  o.nodes_mode = 1;
  kilnPlan* p = NULL;
  kilnSynthStats st;
  cr_assert(eq(int, kilnSynthesize(t, s, coll, &o, &p, &st), KILN_SUCCESS), "%s x%d %s %s: %s", c->topo,
            c->nodes, c->sketch, kilnCollName(coll), kilnLastError());
  cr_assert(st.node_level);
  cr_assert(eq(int, p->ngpus, t->nranks));
  kilnVerifyOptions vo = KILN_VERIFY_OPTIONS_INIT;
  vo.seed = 777;
  cr_assert(eq(int, kilnPlanVerify(p, &vo), KILN_SUCCESS), "%s", kilnLastError());
  /* the same sketch on one more node: a routing model of the same size */
  kilnTopology* t2 = NULL;
  kilnPlan* p2 = NULL;
  kilnSynthStats st2;
  cr_assert(eq(int, kilnTopologyBuiltin(c->topo, c->nodes + 1, &t2), KILN_SUCCESS));
  cr_assert(eq(int, kilnSynthesize(t2, s, coll, &o, &p2, &st2), KILN_SUCCESS), "%s", kilnLastError());
  cr_expect(eq(int, st2.route_cols, st.route_cols));
  cr_expect(
      le(int, abs(st2.route_rows - st.route_rows), st.route_rows / 20 + 1)); /* compaction may merge a row */
  kilnPlanFree(p2);
  kilnTopologyFree(t2);
  kilnPlanFree(p);
  kilnSketchFree(s);
  kilnTopologyFree(t);
}

/* A symmetry that spans nodes without permuting whole nodes has no meaning on other node counts:
 * node-level synthesis refuses it by name. */
Test(synth, node_level_refuses_symmetry_across_node_boundaries) {
  static const char xml[] =
      "<sketch name=\"spans\"><intranode strategy=\"switch\"><switch gpus=\"0 1 2 3 4 5 6 7\" "
      "policy=\"uc-max\"/>"
      "</intranode><internode strategy=\"direct\"/><symmetry offset=\"4\" group=\"16\"/></sketch>";
  kilnTopology* t = NULL;
  cr_assert(eq(int, kilnTopologyBuiltin("hgx-h100", 2, &t), KILN_SUCCESS));
  kilnSketch* s = NULL;
  cr_assert(eq(int, kilnSketchReadMemory(xml, strlen(xml), "spans.xml", &s), KILN_SUCCESS), "%s",
            kilnLastError());
  kilnSynthOptions o = fast_options();
  o.nodes_mode = 1;
  kilnPlan* p = (kilnPlan*)1;
  cr_assert(eq(int, kilnSynthesize(t, s, KILN_COLL_ALLGATHER, &o, &p, NULL), KILN_ERR_UNSUPPORTED));
  cr_assert(eq(ptr, p, NULL));
  cr_expect(contains(kilnLastError(), "symmetry (offset 4, group 16)"), "%s", kilnLastError());
  kilnSketchFree(s);
  kilnTopologyFree(t);
}

/* With a chunk-to-relay map, a reducescatter's partial sums leave a node through the relay the map
 * names: on two DGX-2s (dgx2-sk-1: 2 chunks per rank) every chunk crosses between the nodes once,
 * 64 sends in all, each from an odd GPU (the relays) to an even one (their connections). */
Test(synth, reducescatter_partials_cross_nodes_once_through_the_relay, .timeout = 120) {
  kilnTopology* t = NULL;
  cr_assert(eq(int, kilnTopologyBuiltin("dgx2", 2, &t), KILN_SUCCESS));
  kilnSketch* s = load_sketch("dgx2-sk-1");
  kilnSynthOptions o = fast_options();
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnSynthesize(t, s, KILN_COLL_REDUCESCATTER, &o, &p, NULL), KILN_SUCCESS), "%s",
            kilnLastError());
  int crossings = 0;
  for (int r = 0; r < p->ngpus; r++)
    for (int b = 0; b < p->gpus[r].ntbs; b++) {
      const kilnThreadblock* tb = &p->gpus[r].tbs[b];
      if (tb->send < 0 || tb->send / 16 == r / 16) continue;
      cr_expect(eq(int, r % 2, 1), "rank %d sends to rank %d of the other node", r, tb->send);
      cr_expect(eq(int, tb->send % 2, 0), "rank %d sends to rank %d of the other node", r, tb->send);
      for (int i = 0; i < tb->nsteps; i++)
        crossings += kilnStepSends(tb->steps[i].type) ? tb->steps[i].cnt : 0;
    }
  cr_expect(eq(int, crossings, 64));
  kilnPlanFree(p);
  kilnSketchFree(s);
  kilnTopologyFree(t);
}

/* Progress reports count the synthesis' steps (never past those planned), say the time since the
 * start (never decreasing) and, once steps were measured, an estimate of what remains. */
typedef struct progressLog {
  int reports, bad_steps, estimates, milp_sizes;
  double last_total;
  bool total_backwards;
} progressLog;

static void log_progress(const kilnSynthProgress* p, void* user) {
  progressLog* l = user;
  l->reports++;
  if (p->step < 0 || p->step > p->nsteps) l->bad_steps++;
  if (!isnan(p->remaining_s) && p->remaining_s >= 0) l->estimates++;
  if (p->stage == KILN_SYNTH_STAGE_ROUTE && p->rows > 0) l->milp_sizes++;
  if (p->total_s < l->last_total) l->total_backwards = true;
  l->last_total = p->total_s;
}

Test(synth, progress_counts_steps_and_estimates_what_remains) {
  static const struct {
    const char* topo;
    int nodes;
    const char* sketch;
  } cases[] = {{"switch4", 1, "switch4"}, {"hgx-h100", 4, "hgx-h100"}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    kilnTopology* t = NULL;
    cr_assert(eq(int, kilnTopologyBuiltin(cases[i].topo, cases[i].nodes, &t), KILN_SUCCESS));
    kilnSketch* s = load_sketch(cases[i].sketch);
    progressLog log = {0};
    kilnSynthOptions o = fast_options();
    o.progress = log_progress;
    o.progress_user = &log;
    kilnPlan* p = NULL;
    cr_assert(eq(int, kilnSynthesize(t, s, KILN_COLL_ALLREDUCE, &o, &p, NULL), KILN_SUCCESS), "%s",
              kilnLastError());
    cr_expect(gt(int, log.reports, 3), "%s", cases[i].topo);
    cr_expect(eq(int, log.bad_steps, 0), "%s", cases[i].topo);
    cr_expect(gt(int, log.estimates, 0), "%s", cases[i].topo);
    cr_expect(gt(int, log.milp_sizes, 0), "%s", cases[i].topo);
    cr_expect(not(log.total_backwards), "%s", cases[i].topo);
    kilnPlanFree(p);
    kilnSketchFree(s);
    kilnTopologyFree(t);
  }
}

/* A stop asked before the synthesis starts: with keep_on_stop the first variant's plan comes back,
 * verified and marked interrupted; without it no plan, KILN_ERR_TIMEOUT saying "interrupted". */
Test(synth, stop_keeps_the_best_plan_only_when_asked) {
  static const struct {
    const char* topo;
    int nodes;
    const char* sketch;
  } cases[] = {{"switch8", 1, "switch8"}, {"dgx2", 2, "dgx2-sk-1"}, {"hgx-h100", 4, "hgx-h100"}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    kilnTopology* t = NULL;
    cr_assert(eq(int, kilnTopologyBuiltin(cases[i].topo, cases[i].nodes, &t), KILN_SUCCESS));
    kilnSketch* s = load_sketch(cases[i].sketch);
    static volatile sig_atomic_t stop = 1;
    kilnSynthOptions o = fast_options();
    o.stop = &stop;
    o.keep_on_stop = true;
    kilnPlan* p = NULL;
    kilnSynthStats st;
    cr_assert(eq(int, kilnSynthesize(t, s, KILN_COLL_ALLREDUCE, &o, &p, &st), KILN_SUCCESS), "%s: %s",
              cases[i].topo, kilnLastError());
    cr_expect(st.interrupted, "%s", cases[i].topo);
    kilnVerifyOptions vo = KILN_VERIFY_OPTIONS_INIT;
    cr_expect(eq(int, kilnPlanVerify(p, &vo), KILN_SUCCESS), "%s", kilnLastError());
    kilnPlanFree(p);
    p = (kilnPlan*)1;
    o.keep_on_stop = false;
    cr_expect(eq(int, kilnSynthesize(t, s, KILN_COLL_ALLREDUCE, &o, &p, &st), KILN_ERR_TIMEOUT), "%s",
              cases[i].topo);
    cr_expect(eq(ptr, p, NULL));
    cr_expect(contains(kilnLastError(), "interrupted"), "%s", kilnLastError());
    kilnSketchFree(s);
    kilnTopologyFree(t);
  }
}

/* kiln synth's progress lines say the step and, once measured, the time left; --node-level takes
 * auto, on or off and nothing else; --keep-on-interrupt runs as a plain synthesis when no Ctrl-C
 * comes. */
Test(synth, cli_progress_node_level_and_keep_on_interrupt) {
  char dir[64], out[16384], args[512];
  make_tmpdir(dir, sizeof dir);
  snprintf(
      args, sizeof args,
      "synth --topo hgx-h100 --nodes 3 --sketch hgx-h100 --coll allgather -o %s/a.xml --keep-on-interrupt",
      dir);
  int rc = run_kiln(args, out, sizeof out);
  if (rc < 0) cr_skip_test("kiln CLI not built");
  cr_expect(eq(int, rc, 0), "%s", out);
  cr_expect(contains(out, "(step 1/"), "%s", out);
  cr_expect(contains(out, " left)"), "%s", out);
  cr_expect(contains(out, "node-level: routes on 16 ranks (2 nodes) stand for 3 nodes"), "%s", out);
  snprintf(args, sizeof args, "%s/a.xml", dir);
  cr_expect(eq(int, access(args, F_OK), 0));
  unlink(args);
  snprintf(args, sizeof args,
           "synth --topo hgx-h100 --nodes 3 --sketch hgx-h100 --coll allgather -o %s/b.xml "
           "--node-level off -q",
           dir);
  cr_expect(eq(int, run_kiln(args, out, sizeof out), 0), "%s", out);
  snprintf(args, sizeof args, "%s/b.xml", dir);
  unlink(args);
  expect_kiln(out, sizeof out, 2, "--node-level is auto, on or off, not 'maybe'",
              "synth --topo switch4 --sketch switch4 --coll allgather -o %s/c.xml --node-level maybe", dir);
  rmdir(dir);
}

/* The plans of plans/multinode (the paper's multi-node sketches scaled down to nodes of 1, 2 and 4
 * GPUs) name their nodes and verify at the runtime's FIFO depth; a plan synthesized for several
 * nodes names them. */
Test(synth, multinode_plans_name_their_nodes_and_verify, .timeout = 120) {
  static const char* const files[] = {"switch1-allreduce-4x1",       "switch1-alltoall-2x1",
                                      "switch2-rails-allgather-2x2", "switch2-sk-1-reducescatter-2x2",
                                      "switch4-sk-1-allreduce-2x4",  "switch4-sk-ndv2-alltoall-2x4"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    char path[1024];
    snprintf(path, sizeof path, "%s/plans/multinode/%s.xml", KILN_SOURCE_DIR, files[i]);
    kilnPlan* p = NULL;
    cr_assert(eq(int, kilnPlanReadFile(path, &p), KILN_SUCCESS), "%s", kilnLastError());
    cr_expect(gt(int, p->nnodes, 1), "%s", files[i]);
    kilnVerifyOptions vo = KILN_VERIFY_OPTIONS_INIT;
    cr_expect(eq(int, kilnPlanVerify(p, &vo), KILN_SUCCESS), "%s: %s", files[i], kilnLastError());
    kilnPlanFree(p);
  }
  kilnTopology* t = NULL;
  cr_assert(eq(int, kilnTopologyBuiltin("switch2", 3, &t), KILN_SUCCESS));
  kilnSketch* s = load_sketch("switch2-rails");
  kilnSynthOptions o = fast_options();
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnSynthesize(t, s, KILN_COLL_ALLREDUCE, &o, &p, NULL), KILN_SUCCESS), "%s",
            kilnLastError());
  cr_expect(eq(int, p->nnodes, 3));
  kilnPlanFree(p);
  kilnSketchFree(s);
  kilnTopologyFree(t);
}

/* The floor's tests run on the α-β model (the topology's costs: KILN_SIM_PARAMS_ALPHA_BETA), where
 * the floor's plans simulate as NCCL's baselines do: with the calibrated costs kiln's runtime and
 * NCCL's differ, and a floor plan is kiln's. */
static const kilnSimParams alpha_beta = KILN_SIM_PARAMS_ALPHA_BETA;

static void on_alpha_beta(kilnTopology* t) {
  t->has_costs = true;
  t->costs = alpha_beta;
}

/* The floor: on two HGX H100 nodes at 1 GB the sketch's rails simulate slower than NCCL's rings
 * (which put more of every GPU's traffic on its NIC); the synthesizer then returns the ring, which
 * verifies and simulates as the baseline does - and at 1 MB, where the rails are faster, not. */
Test(synth, ring_floor_where_the_routes_are_slower, .timeout = 120) {
  kilnTopology* t = NULL;
  cr_assert(eq(int, kilnTopologyBuiltin("hgx-h100", 2, &t), KILN_SUCCESS));
  on_alpha_beta(t);
  kilnSketch* s = load_sketch("hgx-h100-rails");
  static const kilnColl_t colls[] = {KILN_COLL_ALLGATHER, KILN_COLL_REDUCESCATTER, KILN_COLL_ALLREDUCE};
  for (size_t c = 0; c < 3; c++)
    for (int big = 0; big < 2; big++) {
      kilnSynthOptions o = fast_options();
      const uint64_t ref = big ? 1ull << 30 : 1ull << 20;
      o.input_size = colls[c] == KILN_COLL_ALLGATHER ? ref / 16 : ref;
      kilnPlan* p = NULL;
      kilnSynthStats st;
      cr_assert(eq(int, kilnSynthesize(t, s, colls[c], &o, &p, &st), KILN_SUCCESS), "%s", kilnLastError());
      cr_expect(eq(int, (int)st.ring_floor, big), "%s at %llu bytes", kilnCollName(colls[c]),
                (unsigned long long)ref);
      kilnSimResult ks, ring;
      cr_assert(eq(int, kilnPlanSimulate(p, t, ref, &ks), KILN_SUCCESS), "%s", kilnLastError());
      cr_assert(eq(int, kilnBaselineSimulateWith(KILN_BASELINE_RING, colls[c], t, ref, &alpha_beta, &ring),
                   KILN_SUCCESS));
      cr_expect(le(dbl, ks.time_us, ring.time_us * 1.001), "%s: %.2f us, the ring %.2f us",
                kilnCollName(colls[c]), ks.time_us, ring.time_us);
      kilnVerifyOptions vo = KILN_VERIFY_OPTIONS_INIT;
      vo.fifo_depth = 1;
      cr_expect(eq(int, kilnPlanVerify(p, &vo), KILN_SUCCESS), "%s", kilnLastError());
      kilnPlanFree(p);
    }
  kilnSketchFree(s);
  kilnTopologyFree(t);
}

/* The floor's tree: on two nodes of two GPUs sharing one NIC, the sketch's allreduce (a
 * reduce-scatter and then an allgather, each through the NIC's GPU) simulates slower than NCCL's
 * double binary tree at 1 GB; the synthesizer then returns the tree, which verifies and simulates
 * as the baseline does - and at 1 MB, where the sketch's plan is faster, not. Without the floor
 * the sketch's plan at 1 GB, slower than the tree. */
Test(synth, tree_floor_where_the_composition_is_slower, .timeout = 120) {
  char path[1024];
  snprintf(path, sizeof path, "%s/plans/topologies/switch2-1nic.xml", KILN_SOURCE_DIR);
  kilnTopology* t = NULL;
  cr_assert(eq(int, kilnTopologyReadFile(path, &t), KILN_SUCCESS), "%s", kilnLastError());
  t->nodes = 2;
  cr_assert(eq(int, kilnTopologyExpand(t), KILN_SUCCESS), "%s", kilnLastError());
  /* the α-β table for the plans and for NCCL alike, so that the floor's tree is the baseline's */
  const kilnSimParams ab = KILN_SIM_PARAMS_ALPHA_BETA;
  t->has_costs = true;
  t->costs = ab;
  kilnSketch* s = load_sketch("switch2-sk-1");
  for (int c = 0; c < 3; c++) {
    kilnSynthOptions o = fast_options();
    o.input_size = c == 1 ? 1u << 20 : 1u << 30;
    o.floor = c != 2;
    kilnPlan* p = NULL;
    kilnSynthStats st;
    cr_assert(eq(int, kilnSynthesize(t, s, KILN_COLL_ALLREDUCE, &o, &p, &st), KILN_SUCCESS), "%s",
              kilnLastError());
    cr_expect(eq(int, (int)st.tree_floor, c == 0), "case %d", c);
    cr_expect(eq(int, (int)st.form, c == 0 ? KILN_SYNTH_FORM_TREE : KILN_SYNTH_FORM_SKETCH), "case %d", c);
    kilnSimResult ks, tree;
    cr_assert(eq(int, kilnPlanSimulate(p, t, o.input_size, &ks), KILN_SUCCESS), "%s", kilnLastError());
    cr_assert(eq(
        int, kilnBaselineSimulateWith(KILN_BASELINE_TREE, KILN_COLL_ALLREDUCE, t, o.input_size, &ab, &tree),
        KILN_SUCCESS));
    if (c == 2)
      cr_expect(gt(dbl, ks.time_us, tree.time_us * 1.02), "the sketch's: %.2f us, the tree %.2f us",
                ks.time_us, tree.time_us);
    else
      cr_expect(le(dbl, ks.time_us, tree.time_us * 1.001), "case %d: %.2f us, the tree %.2f us", c,
                ks.time_us, tree.time_us);
    kilnVerifyOptions vo = KILN_VERIFY_OPTIONS_INIT;
    vo.fifo_depth = 1;
    cr_expect(eq(int, kilnPlanVerify(p, &vo), KILN_SUCCESS), "%s", kilnLastError());
    kilnPlanFree(p);
  }
  kilnSketchFree(s);
  kilnTopologyFree(t);
}

/* Plans through FIFOs take the protocol and instances the calibrated simulator predicts fastest
 * where the caller leaves them open (the default): on two HGX H100 nodes the rails' allreduce at 1
 * KB in LL, whose lines skip a Simple step's slot handshake, faster than the same plan in Simple and
 * than NCCL's ring and tree; at 1 GB in Simple, whose bandwidth wins (the floor's tree there); the
 * allgather at 1 GB in several instances (one threadblock moves 38.5 GB/s a connection: the
 * floor's ring in 4), faster than in one and than NCCL's ring. */
Test(synth, fifo_plans_take_the_fastest_protocol, .timeout = 120) {
  kilnTopology* t = NULL;
  cr_assert(eq(int, kilnTopologyBuiltin("hgx-h100", 2, &t), KILN_SUCCESS));
  kilnSketch* s = load_sketch("hgx-h100-rails");
  for (int big = 0; big < 2; big++) {
    const uint64_t ref = big ? 1ull << 30 : 1024;
    kilnSynthOptions o = fast_options();
    o.input_size = ref;
    kilnPlan *p = NULL, *simple = NULL;
    kilnSynthStats st;
    cr_assert(eq(int, kilnSynthesize(t, s, KILN_COLL_ALLREDUCE, &o, &p, &st), KILN_SUCCESS), "%s",
              kilnLastError());
    cr_expect(eq(int, (int)p->proto, big ? KILN_PROTO_SIMPLE : KILN_PROTO_LL), "%llu bytes: %s",
              (unsigned long long)ref, kilnProtoName(p->proto));
    cr_expect(eq(int, (int)st.proto, (int)p->proto));
    o.proto = KILN_PROTO_SIMPLE;
    cr_assert(eq(int, kilnSynthesize(t, s, KILN_COLL_ALLREDUCE, &o, &simple, NULL), KILN_SUCCESS), "%s",
              kilnLastError());
    kilnSimResult a, b, ring, tree;
    cr_assert(eq(int, kilnPlanSimulate(p, t, ref, &a), KILN_SUCCESS));
    cr_assert(eq(int, kilnPlanSimulate(simple, t, ref, &b), KILN_SUCCESS));
    cr_assert(
        eq(int, kilnBaselineSimulate(KILN_BASELINE_RING, KILN_COLL_ALLREDUCE, t, ref, &ring), KILN_SUCCESS));
    cr_assert(
        eq(int, kilnBaselineSimulate(KILN_BASELINE_TREE, KILN_COLL_ALLREDUCE, t, ref, &tree), KILN_SUCCESS));
    if (!big)
      cr_expect(lt(dbl, a.time_us, b.time_us * 0.5), "LL %.2f us, Simple %.2f us", a.time_us, b.time_us);
    cr_expect(le(dbl, a.time_us, b.time_us * (1 + 1e-9)));
    cr_expect(lt(dbl, a.time_us, fmin(ring.time_us, tree.time_us)), "%.2f us; ring %.2f, tree %.2f",
              a.time_us, ring.time_us, tree.time_us);
    kilnVerifyOptions vo = KILN_VERIFY_OPTIONS_INIT;
    vo.fifo_depth = 1;
    cr_expect(eq(int, kilnPlanVerify(p, &vo), KILN_SUCCESS), "%s", kilnLastError());
    kilnPlanFree(p);
    kilnPlanFree(simple);
  }
  kilnSynthOptions o = fast_options();
  o.input_size = (1u << 30) / 16;
  kilnPlan *p = NULL, *one = NULL;
  kilnSynthStats st;
  cr_assert(eq(int, kilnSynthesize(t, s, KILN_COLL_ALLGATHER, &o, &p, &st), KILN_SUCCESS), "%s",
            kilnLastError());
  cr_expect(gt(int, st.instances, 1));
  cr_expect(eq(int, p->nchannels % st.instances, 0), "%d channels, %d instances", p->nchannels, st.instances);
  o.instances = 1;
  cr_assert(eq(int, kilnSynthesize(t, s, KILN_COLL_ALLGATHER, &o, &one, NULL), KILN_SUCCESS), "%s",
            kilnLastError());
  kilnSimResult a, b, ring;
  cr_assert(eq(int, kilnPlanSimulate(p, t, 1u << 30, &a), KILN_SUCCESS));
  cr_assert(eq(int, kilnPlanSimulate(one, t, 1u << 30, &b), KILN_SUCCESS));
  cr_assert(eq(int, kilnBaselineSimulate(KILN_BASELINE_RING, KILN_COLL_ALLGATHER, t, 1u << 30, &ring),
               KILN_SUCCESS));
  cr_expect(lt(dbl, a.time_us, b.time_us), "%d instances %.1f us, one %.1f us", st.instances, a.time_us,
            b.time_us);
  cr_expect(lt(dbl, a.time_us, ring.time_us), "%.1f us, NCCL's ring %.1f us", a.time_us, ring.time_us);
  kilnPlanFree(p);
  kilnPlanFree(one);
  kilnSketchFree(s);
  kilnTopologyFree(t);
}

/* The floor's all-pairs alltoall: the relay sketch dgx2-sk-2 sends alltoall chunks through relay
 * GPUs, whose extra hops cost latency at 1 KB; NCCL's all-pairs (the direct plan) is returned
 * there, and at 1 MB, where the relays tie with it, the sketch's plan. Without the floor the
 * sketch's at 1 KB. */
Test(synth, direct_floor_where_relays_cost_latency, .timeout = 120) {
  kilnTopology* t = NULL;
  cr_assert(eq(int, kilnTopologyBuiltin("dgx2", 2, &t), KILN_SUCCESS));
  on_alpha_beta(t);
  kilnSketch* s = load_sketch("dgx2-sk-2");
  for (int c = 0; c < 3; c++) {
    kilnSynthOptions o = fast_options();
    o.input_size = c == 1 ? 1u << 20 : 1024;
    o.floor = c != 2;
    kilnPlan* p = NULL;
    kilnSynthStats st;
    cr_assert(eq(int, kilnSynthesize(t, s, KILN_COLL_ALLTOALL, &o, &p, &st), KILN_SUCCESS), "%s",
              kilnLastError());
    cr_expect(eq(int, (int)st.direct_floor, c == 0), "case %d", c);
    cr_expect(not(st.ring_floor));
    kilnSimResult ks, a2a;
    cr_assert(eq(int, kilnPlanSimulate(p, t, o.input_size, &ks), KILN_SUCCESS), "%s", kilnLastError());
    cr_assert(eq(
        int,
        kilnBaselineSimulateWith(KILN_BASELINE_RING, KILN_COLL_ALLTOALL, t, o.input_size, &alpha_beta, &a2a),
        KILN_SUCCESS));
    if (c == 2)
      cr_expect(gt(dbl, ks.time_us, a2a.time_us * 1.1), "the sketch's relays: %.2f us, all-pairs %.2f us",
                ks.time_us, a2a.time_us);
    else
      cr_expect(le(dbl, ks.time_us, a2a.time_us * 1.001), "%.2f us, all-pairs %.2f us", ks.time_us,
                a2a.time_us);
    cr_expect(eq(int, p->nnodes, 2));
    cr_expect(eq(str, p->name, "kiln-dgx2-sk-2-alltoall"));
    kilnVerifyOptions vo = KILN_VERIFY_OPTIONS_INIT;
    vo.fifo_depth = 1;
    cr_expect(eq(int, kilnPlanVerify(p, &vo), KILN_SUCCESS), "%s", kilnLastError());
    kilnPlanFree(p);
  }
  kilnSketchFree(s);
  kilnTopologyFree(t);
}
