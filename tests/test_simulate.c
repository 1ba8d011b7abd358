/* α-β simulator: closed forms on small topologies, contention on ports and NICs, baselines. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <criterion/parameterized.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_run.h"
#include "kiln/plan.h"
#include "kiln_internal.h" /* kilnChannelEntryGpu */
#include "test_util.h"

#define EPS 1e-6

static kilnTopology* topo_xml(const char* xml) {
  kilnTopology* t = NULL;
  cr_assert(eq(int, kilnTopologyReadMemory(xml, strlen(xml), "t.xml", &t), KILN_SUCCESS), "%s",
            kilnLastError());
  return t;
}

static kilnTopology* builtin(const char* name, int nodes) {
  kilnTopology* t = NULL;
  cr_assert(eq(int, kilnTopologyBuiltin(name, nodes, &t), KILN_SUCCESS), "%s", kilnLastError());
  return t;
}

/* A plan of n ranks where each (src, dst) pair in the list sends `cnt` chunks once; every
 * rank's output buffer has `chunks` chunks (the reference buffer of an allgather). */
static kilnPlan* sends_plan(int n, int chunks, const int (*pairs)[2], int npairs, int cnt) {
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnPlanCreate("sends", KILN_COLL_ALLGATHER, n, &p), KILN_SUCCESS));
  p->nchannels = npairs;
  for (int r = 0; r < n; r++) p->gpus[r].o_chunks = chunks;
  for (int i = 0; i < npairs; i++) {
    int a = pairs[i][0], b = pairs[i][1];
    kilnThreadblock* tb = kilnPlanAddThreadblock(p, a, b, -1, i);
    kilnPlanAddStep(tb, KILN_STEP_SEND, KILN_BUF_OUTPUT, 0, KILN_BUF_OUTPUT, 0, cnt);
    tb = kilnPlanAddThreadblock(p, b, -1, a, i);
    kilnPlanAddStep(tb, KILN_STEP_RECV, KILN_BUF_OUTPUT, 0, KILN_BUF_OUTPUT, 0, cnt);
  }
  return p;
}

/* The closed forms below are the α-β model's: the table before calibration. */
static const kilnSimParams alpha_beta = KILN_SIM_PARAMS_ALPHA_BETA;

static double simulate(const kilnPlan* p, const kilnTopology* t, uint64_t bytes) {
  kilnSimResult r;
  cr_assert(eq(int, kilnPlanSimulateWith(p, t, bytes, &alpha_beta, &r), KILN_SUCCESS), "%s", kilnLastError());
  return r.time_us;
}

static kilnResult_t baseline(kilnBaseline_t b, kilnColl_t coll, const kilnTopology* t, uint64_t bytes,
                             kilnSimResult* r) {
  return kilnBaselineSimulateWith(b, coll, t, bytes, &alpha_beta, r);
}

static const char* two_gpus_xml =
    "<topology name=\"two\" nodes=\"1\" gpus_per_node=\"2\"><node>"
    "<link src=\"0\" dst=\"1\" alpha=\"2\" beta=\"10\" mult=\"1\" kind=\"nvlink\"/>"
    "<link src=\"1\" dst=\"0\" alpha=\"2\" beta=\"10\" mult=\"1\" kind=\"nvlink\"/>"
    "</node></topology>";

/* One send of B bytes between two GPUs costs alpha + beta * B. */
Test(simulate, two_rank_send) {
  kilnTopology* t = topo_xml(two_gpus_xml);
  static const int pairs[][2] = {{0, 1}};
  kilnPlan* p = sends_plan(2, 2, pairs, 1, 2); /* the send carries the whole 2-chunk buffer */
  kilnSimResult r;
  cr_assert(eq(int, kilnPlanSimulateWith(p, t, 1000000, &alpha_beta, &r), KILN_SUCCESS), "%s",
            kilnLastError());
  cr_expect(ieee_ulp_eq(dbl, r.time_us, 2.0 + 10.0, 64), "%f", r.time_us);
  cr_expect(eq(int, r.nsends, 1));
  cr_expect(ieee_ulp_eq(dbl, r.busiest_link_us, 10.0, 64), "%f", r.busiest_link_us);
  kilnPlanFree(p);
  kilnTopologyFree(t);
}

/* A link with two lanes has twice the bandwidth. */
Test(simulate, lanes_multiply_bandwidth) {
  kilnTopology* t = topo_xml(
      "<topology name=\"two2\" nodes=\"1\" gpus_per_node=\"2\"><node>"
      "<link src=\"0\" dst=\"1\" alpha=\"2\" beta=\"10\" mult=\"2\" kind=\"nvlink\"/>"
      "</node></topology>");
  static const int pairs[][2] = {{0, 1}};
  kilnPlan* p = sends_plan(2, 2, pairs, 1, 2);
  cr_expect(fabs(simulate(p, t, 1000000) - (2.0 + 5.0)) < EPS);
  kilnPlanFree(p);
  kilnTopologyFree(t);
}

/* Unpipelined ring allgather on switchN: (n-1)(alpha + beta * B/n). */
ParameterizedTestParameters(simulate, ring_allgather_closed_form) {
  static int ns[] = {2, 4, 8, 16};
  return cr_make_param_array(int, ns, sizeof ns / sizeof ns[0]);
}

ParameterizedTest(int* n, simulate, ring_allgather_closed_form) {
  char name[32];
  snprintf(name, sizeof name, "switch%d", *n);
  kilnTopology* t = builtin(name, 1);
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnClassicPlan("ring", KILN_COLL_ALLGATHER, *n, NULL, &p), KILN_SUCCESS));
  const kilnLink* l = kilnTopologyLink(t, 0, 1);
  cr_assert(not(eq(ptr, (void*)l, NULL)));
  uint64_t B = 8u << 20;
  double want = (*n - 1) * (l->alpha_us + l->beta_us_per_mb * ((double)B / *n) / 1e6);
  double got = simulate(p, t, B);
  cr_expect(fabs(got - want) < EPS * want, "n=%d got %f want %f", *n, got, want);
  kilnPlanFree(p);
  kilnTopologyFree(t);
}

/* Cutting the pieces in chunks pipelines the ring: faster for large buffers. */
Test(simulate, chunks_pipeline_the_ring) {
  kilnTopology* t = builtin("switch8", 1);
  kilnClassicOptions o = KILN_CLASSIC_OPTIONS_INIT;
  kilnPlan *p1 = NULL, *p4 = NULL;
  cr_assert(eq(int, kilnClassicPlan("ring", KILN_COLL_ALLREDUCE, 8, &o, &p1), KILN_SUCCESS));
  o.chunks = 4;
  cr_assert(eq(int, kilnClassicPlan("ring", KILN_COLL_ALLREDUCE, 8, &o, &p4), KILN_SUCCESS));
  double t1 = simulate(p1, t, 64u << 20), t4 = simulate(p4, t, 64u << 20);
  cr_expect(lt(dbl, t4, t1), "1 chunk %f, 4 chunks %f", t1, t4);
  kilnPlanFree(p1);
  kilnPlanFree(p4);
  kilnTopologyFree(t);
}

/* Two senders into one GPU through a switch share its ingress port; into two GPUs they don't. */
Test(simulate, switch_port_contention) {
  kilnTopology* t = builtin("switch4", 1);
  const kilnLink* l = kilnTopologyLink(t, 0, 2);
  double a = l->alpha_us, bB = l->beta_us_per_mb * 1.0; /* B = 1e6 bytes */
  static const int one[][2] = {{0, 2}};
  static const int shared[][2] = {{0, 2}, {1, 2}};
  static const int apart[][2] = {{0, 2}, {1, 3}};
  kilnPlan* p = sends_plan(4, 1, one, 1, 1);
  cr_expect(fabs(simulate(p, t, 1000000) - (a + bB)) < EPS);
  kilnPlanFree(p);
  p = sends_plan(4, 1, shared, 2, 1);
  cr_expect(fabs(simulate(p, t, 1000000) - (a + 2 * bB)) < EPS, "%f", simulate(p, t, 1000000));
  kilnPlanFree(p);
  p = sends_plan(4, 1, apart, 2, 1);
  cr_expect(fabs(simulate(p, t, 1000000) - (a + bB)) < EPS);
  kilnPlanFree(p);
  kilnTopologyFree(t);
}

/* GPUs sharing a NIC serialize their inter-node sends; with a NIC each they overlap. */
Test(simulate, nic_contention) {
  const char* shared =
      "<topology name=\"nic1\" nodes=\"2\" gpus_per_node=\"2\"><node>"
      "<switch name=\"sw\" gpus=\"0 1\" alpha=\"1\" beta=\"1\" kind=\"nvlink\"/>"
      "<nic id=\"0\" gpus=\"0 1\"/></node>"
      "<internode alpha=\"3\" beta=\"20\" kind=\"ib\"/></topology>";
  const char* own =
      "<topology name=\"nic2\" nodes=\"2\" gpus_per_node=\"2\"><node>"
      "<switch name=\"sw\" gpus=\"0 1\" alpha=\"1\" beta=\"1\" kind=\"nvlink\"/>"
      "<nic id=\"0\" gpus=\"0\"/><nic id=\"1\" gpus=\"1\"/></node>"
      "<internode alpha=\"3\" beta=\"20\" kind=\"ib\"/></topology>";
  static const int pairs[][2] = {{0, 2}, {1, 3}};
  kilnPlan* p = sends_plan(4, 1, pairs, 2, 1);
  kilnTopology* t = topo_xml(shared);
  cr_expect(fabs(simulate(p, t, 1000000) - (3 + 2 * 20)) < EPS, "%f", simulate(p, t, 1000000));
  kilnTopologyFree(t);
  t = topo_xml(own);
  cr_expect(fabs(simulate(p, t, 1000000) - (3 + 20)) < EPS, "%f", simulate(p, t, 1000000));
  kilnTopologyFree(t);
  kilnPlanFree(p);
}

/* NCCL ring baselines on switchN for small buffers (one slice per piece). */
Test(simulate, ring_baselines_closed_form) {
  kilnTopology* t = builtin("switch8", 1);
  const kilnLink* l = kilnTopologyLink(t, 0, 1);
  uint64_t B = 1u << 20;
  double step = l->alpha_us + l->beta_us_per_mb * ((double)B / 8) / 1e6;
  kilnSimResult r;
  cr_assert(eq(int, baseline(KILN_BASELINE_RING, KILN_COLL_ALLGATHER, t, B, &r), KILN_SUCCESS));
  cr_expect(fabs(r.time_us - 7 * step) < EPS, "%f", r.time_us);
  cr_assert(eq(int, baseline(KILN_BASELINE_RING, KILN_COLL_REDUCESCATTER, t, B, &r), KILN_SUCCESS));
  cr_expect(fabs(r.time_us - 7 * step) < EPS, "%f", r.time_us);
  cr_assert(eq(int, baseline(KILN_BASELINE_RING, KILN_COLL_ALLREDUCE, t, B, &r), KILN_SUCCESS));
  cr_expect(fabs(r.time_us - 14 * step) < EPS, "%f", r.time_us);
  kilnTopologyFree(t);
}

/* The baselines never get faster as the size grows: where their slices step from k to k + 1
 * (hgx-h100 ring allgather at 4 MiB, all-pairs alltoall at 4 MiB, the tree at 1 MiB), equal
 * slices of the larger count pipelined better, and the time dropped (15.1 -> 10.8 us). */
Test(simulate, baselines_monotone_across_slice_counts) {
  kilnTopology* t = builtin("hgx-h100", 1);
  static const struct {
    kilnBaseline_t b;
    kilnColl_t coll;
    uint64_t at;
  } cases[] = {{KILN_BASELINE_RING, KILN_COLL_ALLGATHER, 4u << 20},
               {KILN_BASELINE_RING, KILN_COLL_ALLREDUCE, 4u << 20},
               {KILN_BASELINE_RING, KILN_COLL_ALLTOALL, 4u << 20},
               {KILN_BASELINE_TREE, KILN_COLL_ALLREDUCE, 1u << 20}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    double prev = 0;
    for (uint64_t b = cases[i].at / 2; b <= 3 * cases[i].at; b += cases[i].at / 8 + 8) {
      kilnSimResult r;
      cr_assert(eq(int, baseline(cases[i].b, cases[i].coll, t, b, &r), KILN_SUCCESS), "%s", kilnLastError());
      cr_expect(r.time_us >= prev - 1e-9,
                "%s %s: %" PRIu64 " bytes %.3f us, less than the size before (%.3f)",
                cases[i].b == KILN_BASELINE_RING ? "ring" : "tree", kilnCollName(cases[i].coll), b, r.time_us,
                prev);
      prev = r.time_us;
    }
  }
  kilnTopologyFree(t);
}

/* NCCL's alltoall (all pairs) is bound by each GPU's switch port: alpha + (n-1) beta B/n. */
Test(simulate, alltoall_baseline_port_bound) {
  kilnTopology* t = builtin("switch8", 1);
  const kilnLink* l = kilnTopologyLink(t, 0, 1);
  uint64_t B = 1u << 20;
  double want = l->alpha_us + 7 * l->beta_us_per_mb * ((double)B / 8) / 1e6;
  kilnSimResult r;
  cr_assert(eq(int, baseline(KILN_BASELINE_RING, KILN_COLL_ALLTOALL, t, B, &r), KILN_SUCCESS));
  cr_expect(fabs(r.time_us - want) < EPS, "%f want %f", r.time_us, want);
  kilnTopologyFree(t);
}

/* Tree allreduce on two GPUs: two half-size trees in opposite directions, up then down. */
Test(simulate, tree_baseline_two_ranks) {
  kilnTopology* t = topo_xml(two_gpus_xml);
  kilnSimResult r;
  cr_assert(eq(int, baseline(KILN_BASELINE_TREE, KILN_COLL_ALLREDUCE, t, 100000, &r), KILN_SUCCESS), "%s",
            kilnLastError());
  cr_expect(fabs(r.time_us - (2 * 2.0 + 10.0 * 0.1)) < EPS, "%f", r.time_us);
  kilnTopologyFree(t);
}

/* Across nodes the double binary tree's log depth beats the ring's 2(n-1) steps for small
 * allreduces, and the ring's bandwidth wins for large ones (hgx-h100, 8 nodes). */
Test(simulate, tree_for_small_ring_for_large_across_nodes) {
  kilnTopology* t = builtin("hgx-h100", 8);
  kilnSimResult ring, tree;
  cr_assert(eq(int, kilnBaselineSimulate(KILN_BASELINE_RING, KILN_COLL_ALLREDUCE, t, 1u << 20, &ring),
               KILN_SUCCESS),
            "%s", kilnLastError());
  cr_assert(eq(int, kilnBaselineSimulate(KILN_BASELINE_TREE, KILN_COLL_ALLREDUCE, t, 1u << 20, &tree),
               KILN_SUCCESS),
            "%s", kilnLastError());
  cr_expect(lt(dbl, tree.time_us, ring.time_us), "1 MiB: tree %f ring %f", tree.time_us, ring.time_us);
  cr_assert(eq(int, kilnBaselineSimulate(KILN_BASELINE_RING, KILN_COLL_ALLREDUCE, t, 256u << 20, &ring),
               KILN_SUCCESS));
  cr_assert(eq(int, kilnBaselineSimulate(KILN_BASELINE_TREE, KILN_COLL_ALLREDUCE, t, 256u << 20, &tree),
               KILN_SUCCESS));
  cr_expect(lt(dbl, ring.time_us, tree.time_us), "256 MiB: tree %f ring %f", tree.time_us, ring.time_us);
  kilnTopologyFree(t);
}

/* NCCL runs a ring per NIC between nodes: a large ring allreduce on 2 hgx-h100 nodes reaches
 * the bound of all eight NICs, 2(n-1)/n * B * beta_ib / 8. */
Test(simulate, ring_uses_every_nic) {
  kilnTopology* t = builtin("hgx-h100", 2);
  const kilnLink* l = kilnTopologyLink(t, 0, 8);
  cr_assert(not(eq(ptr, (void*)l, NULL)));
  cr_assert(l->internode);
  uint64_t B = 1u << 30;
  double bound = 2.0 * 15 / 16 * ((double)B / 1e6) * l->beta_us_per_mb / 8;
  kilnSimResult r;
  cr_assert(eq(int, baseline(KILN_BASELINE_RING, KILN_COLL_ALLREDUCE, t, B, &r), KILN_SUCCESS));
  cr_expect(ge(dbl, r.time_us, bound * (1 - EPS)), "%f vs bound %f", r.time_us, bound);
  cr_expect(lt(dbl, r.time_us, bound * 1.02), "%f vs bound %f", r.time_us, bound);
  kilnTopologyFree(t);
}

/* A DGX-2 NIC serves two GPUs: NCCL gives each of its 8 channels a NIC of its own (channel i enters
 * a node through GPU 2i, the first of NIC i's), so across two nodes the ring and the tree reach the
 * bound of all eight NICs, where channels entering through GPUs 0-7 would share NICs 0-3 and take
 * twice as long. */
Test(simulate, dgx2_channels_use_every_nic) {
  kilnTopology* t = builtin("dgx2", 2);
  for (int i = 0; i < 8; i++) cr_expect(eq(int, kilnChannelEntryGpu(t, i), 2 * i), "channel %d", i);
  const kilnLink* l = kilnTopologyLink(t, 0, 16);
  cr_assert(not(eq(ptr, (void*)l, NULL)));
  cr_assert(l->internode);
  const uint64_t B = 1u << 30;
  const double nic8 = ((double)B / 1e6) * l->beta_us_per_mb / 8; /* B over 8 NICs, one way */
  kilnSimResult r;
  cr_assert(eq(int, baseline(KILN_BASELINE_RING, KILN_COLL_ALLGATHER, t, B, &r), KILN_SUCCESS));
  cr_expect(ge(dbl, r.time_us, 31.0 / 32 * nic8 * (1 - EPS)), "allgather %f vs bound %f", r.time_us,
            31.0 / 32 * nic8);
  cr_expect(lt(dbl, r.time_us, 31.0 / 32 * nic8 * 1.02), "allgather %f vs bound %f", r.time_us,
            31.0 / 32 * nic8);
  cr_assert(eq(int, baseline(KILN_BASELINE_RING, KILN_COLL_ALLREDUCE, t, B, &r), KILN_SUCCESS));
  cr_expect(lt(dbl, r.time_us, 2 * 31.0 / 32 * nic8 * 1.02), "allreduce %f vs bound %f", r.time_us,
            2 * 31.0 / 32 * nic8);
  /* the tree: every byte up through one NIC and down through another, each tree pair on its own NIC */
  cr_assert(eq(int, baseline(KILN_BASELINE_TREE, KILN_COLL_ALLREDUCE, t, B, &r), KILN_SUCCESS));
  cr_expect(ge(dbl, r.time_us, nic8 * (1 - EPS)), "tree %f vs bound %f", r.time_us, nic8);
  cr_expect(lt(dbl, r.time_us, nic8 * 1.2), "tree %f vs bound %f", r.time_us, nic8);
  kilnTopologyFree(t);
  /* a NIC per GPU: channel i enters through GPU i; no NICs: GPU i modulo the node's */
  t = builtin("hgx-h100", 2);
  for (int i = 0; i < 8; i++) cr_expect(eq(int, kilnChannelEntryGpu(t, i), i), "channel %d", i);
  kilnTopologyFree(t);
  t = builtin("switch4", 1);
  cr_expect(eq(int, kilnChannelEntryGpu(t, 5), 1));
  kilnTopologyFree(t);
}

/* The ring follows the links: NDv2's hybrid cube-mesh has no link 3->4, yet a ring exists. */
Test(simulate, ring_baseline_finds_ring_on_ndv2) {
  kilnTopology* t = builtin("ndv2", 2);
  kilnSimResult r;
  cr_expect(
      eq(int, kilnBaselineSimulate(KILN_BASELINE_RING, KILN_COLL_ALLREDUCE, t, 1u << 20, &r), KILN_SUCCESS),
      "%s", kilnLastError());
  cr_expect(gt(dbl, r.time_us, 0.0));
  kilnTopologyFree(t);
}

/* Inside an NDv2 node NCCL's rings use more NVLinks than one ring of double links can. */
Test(simulate, ndv2_rings_use_more_links) {
  kilnTopology* t = builtin("ndv2", 1);
  const kilnLink* l = kilnTopologyLink(t, 0, 1); /* a double link */
  cr_assert(not(eq(ptr, (void*)l, NULL)));
  uint64_t B = 256u << 20;
  double one_ring = 7.0 / 8 * ((double)B / 1e6) * l->beta_us_per_mb / 2;
  kilnSimResult r;
  cr_assert(eq(int, baseline(KILN_BASELINE_RING, KILN_COLL_ALLGATHER, t, B, &r), KILN_SUCCESS), "%s",
            kilnLastError());
  cr_expect(lt(dbl, r.time_us, one_ring), "%f vs one ring %f", r.time_us, one_ring);
  kilnTopologyFree(t);
}

Test(simulate, baseline_errors) {
  kilnTopology* t = builtin("switch4", 1);
  kilnSimResult r;
  cr_expect(eq(int, kilnBaselineSimulate(KILN_BASELINE_TREE, KILN_COLL_ALLGATHER, t, 1024, &r),
               KILN_ERR_UNSUPPORTED));
  cr_expect(contains(kilnLastError(), "allgather"), "%s", kilnLastError());
  cr_expect(
      eq(int, kilnBaselineSimulate(KILN_BASELINE_RING, KILN_COLL_CUSTOM, t, 1024, &r), KILN_ERR_UNSUPPORTED));
  kilnTopologyFree(t);
  t = builtin("ndv2", 1);
  cr_expect(eq(int, kilnBaselineSimulate(KILN_BASELINE_RING, KILN_COLL_ALLTOALL, t, 1024, &r),
               KILN_ERR_INVALID_ARGUMENT));
  cr_expect(contains(kilnLastError(), "no link from rank 0 to rank 5"), "%s", kilnLastError());
  kilnTopologyFree(t);
}

/* A send over a missing link names the step; a plan of more or fewer ranks than the topology is
 * refused. */
Test(simulate, plan_errors) {
  kilnTopology* t = builtin("ndv2", 1);
  static const int pairs[][2] = {{0, 5}};
  kilnPlan* p = sends_plan(8, 8, pairs, 1, 1);
  kilnSimResult r;
  cr_expect(eq(int, kilnPlanSimulate(p, t, 1024, &r), KILN_ERR_INVALID_ARGUMENT));
  cr_expect(contains(kilnLastError(), "rank 0 tb 0 step 0 (s)"), "%s", kilnLastError());
  cr_expect(contains(kilnLastError(), "no link from rank 0 to rank 5"), "%s", kilnLastError());
  kilnPlanFree(p);
  kilnClassicOptions o = KILN_CLASSIC_OPTIONS_INIT;
  cr_assert(eq(int, kilnClassicPlan("ring", KILN_COLL_ALLGATHER, 16, &o, &p), KILN_SUCCESS));
  cr_expect(eq(int, kilnPlanSimulate(p, t, 1024, &r), KILN_ERR_INVALID_ARGUMENT));
  cr_expect(contains(kilnLastError(), "16 ranks"), "%s", kilnLastError());
  kilnPlanFree(p);
  cr_assert(eq(int, kilnClassicPlan("ring", KILN_COLL_ALLGATHER, 4, &o, &p), KILN_SUCCESS));
  cr_expect(eq(int, kilnPlanSimulate(p, t, 1024, &r), KILN_ERR_INVALID_ARGUMENT));
  cr_expect(contains(kilnLastError(), "has 4 ranks but topology ndv2 has 8"), "%s", kilnLastError());
  kilnPlanFree(p);
  kilnTopologyFree(t);
}

/* A plan that deadlocks cannot be timed. */
Test(simulate, deadlock_is_an_error) {
  kilnTopology* t = builtin("switch2", 1);
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnPlanCreate("dl", KILN_COLL_ALLGATHER, 2, &p), KILN_SUCCESS));
  for (int r = 0; r < 2; r++) {
    p->gpus[r].o_chunks = 2;
    kilnThreadblock* tb = kilnPlanAddThreadblock(p, r, 1 - r, 1 - r, 0);
    kilnPlanAddStep(tb, KILN_STEP_RECV, KILN_BUF_OUTPUT, 1 - r, KILN_BUF_OUTPUT, 1 - r, 1);
    kilnPlanAddStep(tb, KILN_STEP_SEND, KILN_BUF_OUTPUT, r, KILN_BUF_OUTPUT, r, 1);
  }
  kilnSimResult r;
  cr_expect(eq(int, kilnPlanSimulate(p, t, 1024, &r), KILN_ERR_VERIFY));
  cr_expect(contains(kilnLastError(), "deadlock"), "%s", kilnLastError());
  kilnPlanFree(p);
  kilnTopologyFree(t);
}

/* ---- the CLI (build/kiln) ---- */

/* kiln simulate prints time and bandwidths for plans and baselines; bad usage exits 2. */
Test(simulate, cli_plans_and_baselines) {
  char dir[64], out[8192], args[1024], path[256];
  int rc = run_kiln("simulate --topo switch4 --bytes 1M --baseline ring --coll allgather", out, sizeof out);
  if (rc < 0) cr_skip_test("kiln CLI not built");
  cr_expect(eq(int, rc, 0), "%s", out);
  cr_expect(contains(out, "NCCL ring allgather on switch4 (4 ranks): "), "%s", out);
  cr_expect(contains(out, " us, algbw "), "%s", out);
  make_tmpdir(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/ag4.xml", dir);
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnClassicPlan("ring", KILN_COLL_ALLGATHER, 4, NULL, &p), KILN_SUCCESS));
  cr_assert(eq(int, kilnPlanWriteFile(p, path), KILN_SUCCESS), "%s", kilnLastError());
  kilnPlanFree(p);
  expect_kiln(out, sizeof out, 0, "ag4.xml: ", "simulate --topo switch4 --bytes 1M %s", path);
  cr_expect(contains(out, "busbw"), "%s", out);
  snprintf(args, sizeof args, "simulate --topo switch2 --bytes 1M %s", path); /* 4 ranks > 2 */
  cr_expect(eq(int, run_kiln(args, out, sizeof out), 1), "%s", out);
  cr_expect(contains(out, "has 4 ranks but topology switch2 has 2"), "%s", out);
  snprintf(args, sizeof args, "simulate --topo switch4 --bytes 1M --coll allreduce %s", path);
  cr_expect(eq(int, run_kiln(args, out, sizeof out), 2), "%s", out); /* the plan names its collective */
  cr_expect(contains(out, "--coll goes with --baseline"), "%s", out);
  cr_expect(
      eq(int, run_kiln("simulate --topo switch4 --baseline ring --coll allgather", out, sizeof out), 2));
  cr_expect(eq(
      int, run_kiln("simulate --topo switch4 --bytes 1Q --baseline ring --coll allgather", out, sizeof out),
      2));
  cr_expect(contains(out, "'1Q'"), "%s", out);
  /* NCCL has no tree allgather: the arguments' fault (2), not a failure (1) */
  cr_expect(
      eq(int,
         run_kiln("simulate --topo switch4 --bytes 1M --baseline tree --coll allgather", out, sizeof out), 2),
      "%s", out);
  cr_expect(contains(out, "only allreduce"), "%s", out);
  expect_kiln(out, sizeof out, 0, "usage: kiln simulate", "help simulate");
  expect_kiln(out, sizeof out, 2, "unknown command 'no-such-command'", "help no-such-command");
  cr_expect(eq(int, run_kiln("simulate --help", out, sizeof out), 0));
  unlink(path);
  rmdir(dir);
}

/* ---- memory steps ---- */

static kilnPlan* classic_plan(const char* algo, kilnColl_t coll, int n, kilnProto_t proto) {
  kilnClassicOptions o = KILN_CLASSIC_OPTIONS_INIT;
  o.proto = proto;
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnClassicPlan(algo, coll, n, &o, &p), KILN_SUCCESS), "%s", kilnLastError());
  return p;
}

/* A 2-rank staged allgather on two_gpus_xml (alpha 2, beta 10 us/MB): each rank puts its piece
 * into the other's scratch and, Simple, signals; the peer waits, then copies. */
Test(simulate, put_sig_wait_closed_form) {
  kilnTopology* t = topo_xml(two_gpus_xml);
  kilnPlan* p = classic_plan("staged", KILN_COLL_ALLGATHER, 2, KILN_PROTO_SIMPLE);
  kilnSimParams sp = KILN_SIM_PARAMS_ALPHA_BETA;
  sp.sig_us = 0.5;
  sp.wait_us = 0.25;
  kilnSimResult r;
  /* 2 MB in all: each piece 1 MB, 10 us on the link, arriving 2 us later; the sig leaves after
   * that arrival (12), costs 0.5 and lands 2 later (14.5); the wait takes 0.25. */
  cr_assert(eq(int, kilnPlanSimulateWith(p, t, 2000000, &sp, &r), KILN_SUCCESS), "%s", kilnLastError());
  cr_expect(ieee_ulp_eq(dbl, r.time_us, 14.75, 64), "%f", r.time_us);
  cr_expect(eq(int, r.nsends, 2), "two puts");
  cr_expect(ieee_ulp_eq(dbl, r.busiest_link_us, 10.0, 64), "%f", r.busiest_link_us);
  /* With LL lines the piece takes twice the link time and needs no signal: 20 + 2. */
  p->proto = KILN_PROTO_LL;
  for (int q = 0; q < 2; q++) p->gpus[q].tbs[0].nsteps = 2; /* put, own copy */
  kilnThreadblock* tb;
  for (int q = 0; q < 2; q++) {
    tb = &p->gpus[q].tbs[0];
    kilnPlanAddStep(tb, KILN_STEP_COPY, KILN_BUF_SCRATCH, 0, KILN_BUF_OUTPUT, 1 - q, 1);
  }
  cr_assert(eq(int, kilnPlanVerify(p, NULL), KILN_SUCCESS), "%s", kilnLastError());
  cr_assert(eq(int, kilnPlanSimulateWith(p, t, 2000000, &sp, &r), KILN_SUCCESS), "%s", kilnLastError());
  cr_expect(ieee_ulp_eq(dbl, r.time_us, 22.0, 64), "%f", r.time_us);
  kilnPlanFree(p);
  kilnTopologyFree(t);
}

/* Each line protocol holds the link for the bytes it moves: LL 16/8, LL12 16/12, LL128 128/120 of
 * Simple's. */
Test(simulate, line_protocols_move_more_bytes) {
  kilnTopology* t = builtin("switch4", 1);
  double busiest[KILN_NUM_PROTOS];
  for (int pr = 0; pr < KILN_NUM_PROTOS; pr++) {
    kilnPlan* p = classic_plan("oneshot", KILN_COLL_ALLREDUCE, 4, (kilnProto_t)pr);
    kilnSimResult r;
    cr_assert(eq(int, kilnPlanSimulateWith(p, t, 64 << 20, &alpha_beta, &r), KILN_SUCCESS), "%s",
              kilnLastError());
    busiest[pr] = r.busiest_link_us;
    kilnPlanFree(p);
  }
  cr_expect(ieee_ulp_eq(dbl, busiest[KILN_PROTO_LL], 2.0 * busiest[KILN_PROTO_SIMPLE], 256));
  cr_expect(ieee_ulp_eq(dbl, busiest[KILN_PROTO_LL12], 16.0 / 12.0 * busiest[KILN_PROTO_SIMPLE], 256));
  cr_expect(ieee_ulp_eq(dbl, busiest[KILN_PROTO_LL128], 128.0 / 120.0 * busiest[KILN_PROTO_SIMPLE], 256));
  kilnTopologyFree(t);
}

/* A get waits for its data: a request and the data back, two alphas, then beta's time. */
Test(simulate, get_costs_a_round_trip) {
  kilnTopology* t = topo_xml(two_gpus_xml);
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnPlanCreate("get", KILN_COLL_ALLGATHER, 2, &p), KILN_SUCCESS));
  for (int r = 0; r < 2; r++) {
    p->gpus[r].i_chunks = 1;
    p->gpus[r].o_chunks = 2;
    kilnThreadblock* tb = kilnPlanAddThreadblock(p, r, -1, -1, 0);
    kilnPlanAddStep(tb, KILN_STEP_GET, KILN_BUF_INPUT, 0, KILN_BUF_OUTPUT, 1 - r, 1)->peer = 1 - r;
    kilnPlanAddStep(tb, KILN_STEP_NOP, KILN_BUF_INPUT, 0, KILN_BUF_INPUT, 0, 0);
  }
  kilnSimResult r;
  cr_assert(eq(int, kilnPlanSimulateWith(p, t, 2000000, &alpha_beta, &r), KILN_SUCCESS), "%s",
            kilnLastError());
  cr_expect(ieee_ulp_eq(dbl, r.time_us, 10.0 + 2 * 2.0, 64), "%f", r.time_us);
  kilnPlanFree(p);
  kilnTopologyFree(t);
}

/* On switch topologies a one-shot allreduce of LL puts beats a ring (kiln's and NCCL's) at small
 * sizes, and loses to it at large ones, where every rank moves n-1 copies of its input. */
Test(simulate, oneshot_beats_ring_small_loses_large_on_switches) {
  const char* topos[] = {"switch4", "switch8", "hgx-h100"};
  for (size_t i = 0; i < sizeof topos / sizeof topos[0]; i++) {
    kilnTopology* t = builtin(topos[i], 1);
    kilnPlan* one = classic_plan("oneshot", KILN_COLL_ALLREDUCE, t->nranks, KILN_PROTO_LL);
    kilnPlan* ring = classic_plan("ring", KILN_COLL_ALLREDUCE, t->nranks, KILN_PROTO_SIMPLE);
    kilnSimResult nccl;
    cr_assert(
        eq(int, kilnBaselineSimulate(KILN_BASELINE_RING, KILN_COLL_ALLREDUCE, t, 1024, &nccl), KILN_SUCCESS));
    const double o = simulate(one, t, 1024), g = simulate(ring, t, 1024);
    cr_expect(lt(dbl, o, g), "%s 1 KiB: oneshot %.2f us, ring plan %.2f", topos[i], o, g);
    cr_expect(lt(dbl, o, nccl.time_us), "%s 1 KiB: oneshot %.2f us, NCCL ring %.2f", topos[i], o,
              nccl.time_us);
    const double ob = simulate(one, t, 256 << 20), gb = simulate(ring, t, 256 << 20);
    cr_expect(gt(dbl, ob, gb), "%s 256 MiB: oneshot %.2f us, ring plan %.2f", topos[i], ob, gb);
    kilnPlanFree(one);
    kilnPlanFree(ring);
    kilnTopologyFree(t);
  }
}

/* Bad parameters are refused; NULL takes the defaults. */
Test(simulate, memory_parameters_checked) {
  kilnTopology* t = builtin("switch2", 1);
  kilnPlan* p = classic_plan("twoshot", KILN_COLL_ALLREDUCE, 2, KILN_PROTO_LL12);
  kilnSimResult a, b;
  cr_assert(eq(int, kilnPlanSimulateWith(p, t, 4096, NULL, &a), KILN_SUCCESS), "%s", kilnLastError());
  cr_assert(eq(int, kilnPlanSimulate(p, t, 4096, &b), KILN_SUCCESS), "%s", kilnLastError());
  cr_expect(ieee_ulp_eq(dbl, a.time_us, b.time_us, 4));
  kilnSimParams sp = KILN_SIM_PARAMS_INIT;
  sp.put[KILN_PROTO_LL12].efficiency = 0;
  cr_expect(eq(int, kilnPlanSimulateWith(p, t, 4096, &sp, &a), KILN_ERR_INVALID_ARGUMENT));
  cr_expect(contains(kilnLastError(), "put.LL12.efficiency is 0"), "%s", kilnLastError());
  sp = (kilnSimParams)KILN_SIM_PARAMS_INIT;
  sp.wait_us = -1;
  cr_expect(eq(int, kilnPlanSimulateWith(p, t, 4096, &sp, &a), KILN_ERR_INVALID_ARGUMENT));
  kilnPlanFree(p);
  kilnTopologyFree(t);
}

/* Local work at memory speed, when the table gives one, costs in any plan: a direct allreduce of
 * MSCCL's steps (reductions of received chunks) takes longer with it. */
Test(simulate, local_work_costs_when_asked) {
  kilnTopology* t = builtin("switch4", 1);
  kilnPlan* p = classic_plan("direct", KILN_COLL_ALLREDUCE, 4, KILN_PROTO_SIMPLE);
  kilnSimParams sp = KILN_SIM_PARAMS_ALPHA_BETA;
  kilnSimResult free_, paid;
  cr_assert(eq(int, kilnPlanSimulateWith(p, t, 1 << 20, &sp, &free_), KILN_SUCCESS), "%s", kilnLastError());
  sp.local_us_per_mb = 1.0;
  cr_assert(eq(int, kilnPlanSimulateWith(p, t, 1 << 20, &sp, &paid), KILN_SUCCESS), "%s", kilnLastError());
  cr_expect(gt(dbl, paid.time_us, free_.time_us), "%f vs %f", paid.time_us, free_.time_us);
  kilnPlanFree(p);
  kilnTopologyFree(t);
}

/* ---- the calibrated defaults, the table's knobs, a topology's costs ---- */

/* At 1 KiB on switch4 an allreduce of MSCCL's steps through FIFOs in two flights (a reduce-scatter
 * and an allgather, as the synthesizer's plans run) is predicted several times slower than the
 * one-flight plan of LL puts, as on the GPUs (bench/baselines/h200x4-2026-11-29: 2.4 µs for the
 * one-flight form, 6.9-11.7 µs for plans through FIFOs); the α-β table alone makes it two flights
 * against one. */
Test(simulate, fifo_plans_cost_their_runtime) {
  kilnTopology* t = builtin("switch4", 1);
  kilnPlan* one = classic_plan("oneshot", KILN_COLL_ALLREDUCE, 4, KILN_PROTO_LL);
  kilnPlan* two = classic_plan("direct", KILN_COLL_ALLREDUCE, 4, KILN_PROTO_SIMPLE);
  kilnSimResult o, g;
  cr_assert(eq(int, kilnPlanSimulate(one, t, 1024, &o), KILN_SUCCESS), "%s", kilnLastError());
  cr_assert(eq(int, kilnPlanSimulate(two, t, 1024, &g), KILN_SUCCESS), "%s", kilnLastError());
  cr_expect(gt(dbl, g.time_us, 2.5 * o.time_us), "two flights through FIFOs %.2f us, one flight %.2f us",
            g.time_us, o.time_us);
  cr_expect(lt(dbl, simulate(two, t, 1024), 2.2 * simulate(one, t, 1024)));
  kilnPlanFree(one);
  kilnPlanFree(two);
  kilnTopologyFree(t);
}

/* Every knob has a name that finds it, and no two names reach the same field. */
Test(simulate, knobs_by_name) {
  kilnSimParams sp;
  memset(&sp, 0, sizeof sp);
  const int n = kilnSimParamCount();
  cr_assert(gt(int, n, 10));
  for (int i = 0; i < n; i++) {
    const char* name = kilnSimParamName(i);
    cr_assert(not(eq(ptr, (void*)name, NULL)), "knob %d", i);
    cr_expect(eq(int, kilnSimParamFind(name), i), "%s", name);
    *kilnSimParamRef(&sp, i) = i + 1;
  }
  for (int i = 0; i < n; i++)
    cr_expect(eq(dbl, *kilnSimParamRef(&sp, i), i + 1.0), "%s", kilnSimParamName(i));
  cr_expect(eq(ptr, (void*)kilnSimParamName(n), NULL));
  cr_expect(eq(int, kilnSimParamFind("lunch"), -1));
  cr_expect(eq(ptr, (void*)&sp.put[KILN_PROTO_LL128].efficiency,
               (void*)kilnSimParamRef(&sp, kilnSimParamFind("put.LL128.efficiency"))));
  cr_expect(eq(ptr, (void*)&sp.launch_us, (void*)kilnSimParamRef(&sp, kilnSimParamFind("launch"))));
}

/* One threadblock moves at most its own rate: a send of 1 MB over a link of 10 µs/MB by a block of
 * 40 µs/MB arrives after 40 + α. */
Test(simulate, threadblock_rate_limits_one_block) {
  kilnTopology* t = topo_xml(two_gpus_xml);
  static const int pairs[][2] = {{0, 1}};
  kilnPlan* p = sends_plan(2, 2, pairs, 1, 2);
  kilnSimParams sp = KILN_SIM_PARAMS_ALPHA_BETA;
  sp.tb_us_per_mb = 40;
  kilnSimResult r;
  cr_assert(eq(int, kilnPlanSimulateWith(p, t, 1000000, &sp, &r), KILN_SUCCESS), "%s", kilnLastError());
  cr_expect(ieee_ulp_eq(dbl, r.time_us, 42.0, 64), "%f", r.time_us);
  cr_expect(ieee_ulp_eq(dbl, r.busiest_link_us, 10.0, 64), "the link is busy for its own time: %f",
            r.busiest_link_us);
  kilnPlanFree(p);
  kilnTopologyFree(t);
}

/* A plan of MSCCL's steps runs in iterations of a FIFO slot, each step paying its handshake each
 * time: 1 MB through slots of 100 kB is 10 sends of 1 + 1 µs and 10 receives of 1 µs, the last
 * one after the last send's arrival (20 + 2 + 1); in one iteration 11 + 2 + 1. */
Test(simulate, fifo_iterations_pay_each_handshake) {
  kilnTopology* t = topo_xml(two_gpus_xml);
  static const int pairs[][2] = {{0, 1}};
  kilnPlan* p = sends_plan(2, 2, pairs, 1, 2);
  kilnSimParams sp = KILN_SIM_PARAMS_ALPHA_BETA;
  sp.fifo_step_us = 1;
  kilnSimResult r;
  cr_assert(eq(int, kilnPlanSimulateWith(p, t, 1000000, &sp, &r), KILN_SUCCESS), "%s", kilnLastError());
  cr_expect(ieee_ulp_eq(dbl, r.time_us, 14.0, 64), "%f", r.time_us);
  sp.fifo_slot_bytes = 100000;
  cr_assert(eq(int, kilnPlanSimulateWith(p, t, 1000000, &sp, &r), KILN_SUCCESS), "%s", kilnLastError());
  cr_expect(ieee_ulp_eq(dbl, r.time_us, 23.0, 64), "%f", r.time_us);
  cr_expect(eq(int, r.nsends, 10));
  kilnPlanFree(p);
  kilnTopologyFree(t);
}

/* NCCL's baseline takes the fastest of its protocols: with LL's and LL128's steps 100 µs late it
 * is the Simple ring's time; with Simple's late too, a small call still finishes far sooner. */
Test(simulate, baseline_takes_the_fastest_protocol) {
  kilnTopology* t = builtin("switch4", 1);
  kilnSimParams sp = KILN_SIM_PARAMS_ALPHA_BETA;
  kilnSimResult simple, slow;
  cr_assert(eq(int, kilnBaselineSimulateWith(KILN_BASELINE_RING, KILN_COLL_ALLGATHER, t, 4096, &sp, &simple),
               KILN_SUCCESS));
  sp.send[KILN_PROTO_LL].alpha_us = sp.send[KILN_PROTO_LL128].alpha_us = 100;
  kilnSimResult r;
  cr_assert(eq(int, kilnBaselineSimulateWith(KILN_BASELINE_RING, KILN_COLL_ALLGATHER, t, 4096, &sp, &r),
               KILN_SUCCESS));
  cr_expect(ieee_ulp_eq(dbl, r.time_us, simple.time_us, 16), "%f vs %f", r.time_us, simple.time_us);
  sp.send[KILN_PROTO_LL].alpha_us = 0;
  sp.send[KILN_PROTO_SIMPLE].alpha_us = 100;
  cr_assert(eq(int, kilnBaselineSimulateWith(KILN_BASELINE_RING, KILN_COLL_ALLGATHER, t, 4096, &sp, &slow),
               KILN_SUCCESS));
  cr_expect(lt(dbl, slow.time_us, 100.0), "%f: LL was not taken", slow.time_us);
  kilnTopologyFree(t);
}

/* A topology with <costs> is simulated with them; one without, with the defaults. */
Test(simulate, topology_costs_are_taken) {
  kilnTopology* t = topo_xml(
      "<topology name=\"c\" nodes=\"1\" gpus_per_node=\"4\"><node>"
      "<switch name=\"sw\" gpus=\"0 1 2 3\" alpha=\"0.74\" beta=\"2.7\" kind=\"nvlink\"/></node>"
      "<costs launch=\"10\" put.LL.efficiency=\"0.25\"/></topology>");
  kilnTopology* b = builtin("switch4", 1);
  kilnPlan* p = classic_plan("oneshot", KILN_COLL_ALLREDUCE, 4, KILN_PROTO_LL);
  kilnSimResult with, given, dflt, init;
  cr_assert(eq(int, kilnPlanSimulate(p, t, 1 << 20, &with), KILN_SUCCESS), "%s", kilnLastError());
  cr_assert(eq(int, kilnPlanSimulateWith(p, t, 1 << 20, &t->costs, &given), KILN_SUCCESS), "%s",
            kilnLastError());
  cr_expect(eq(dbl, with.time_us, given.time_us));
  cr_assert(eq(int, kilnPlanSimulate(p, b, 1 << 20, &dflt), KILN_SUCCESS), "%s", kilnLastError());
  const kilnSimParams sp = KILN_SIM_PARAMS_INIT;
  cr_assert(eq(int, kilnPlanSimulateWith(p, b, 1 << 20, &sp, &init), KILN_SUCCESS), "%s", kilnLastError());
  cr_expect(eq(dbl, dflt.time_us, init.time_us));
  cr_expect(gt(dbl, with.time_us, dflt.time_us + 9.0), "%f vs %f", with.time_us, dflt.time_us);
  kilnPlanFree(p);
  kilnTopologyFree(t);
  kilnTopologyFree(b);
}
