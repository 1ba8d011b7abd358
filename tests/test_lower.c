/* Lowering: fused instructions where a receive feeds a send, multi-chunk steps for chunks sent
 * together, instances over channels, and the structural rules of a plan (one send and one
 * receive peer per threadblock and channel, dependencies that point at existing earlier steps). */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../solver/synth/synth_internal.h"
#include "kiln/plan.h"
#include "kiln/sketch.h"
#include "kiln/synth.h"
#include "test_files.h"

/* Routed, ordered transfers of coll for a built-in topology and a sketch of plans/sketches. */
typedef struct fixture {
  kilnTopology* t;
  kilnSketch* s;
  synLogical L, Lt;
  synChunks C;
  synRoute ra, rr;
  synXfers X;
  double chunk_mb;
} fixture;

static void setup(fixture* f, const char* topo, const char* sketch, kilnColl_t coll, int k) {
  memset(f, 0, sizeof *f);
  cr_assert(eq(int, kilnTopologyBuiltin(topo, 1, &f->t), KILN_SUCCESS));
  f->s = load_sketch(sketch);
  if (k > 0) f->s->input_chunkup = k;
  int n = f->t->nranks;
  bool ag = coll != KILN_COLL_REDUCESCATTER,
       rs = coll == KILN_COLL_REDUCESCATTER || coll == KILN_COLL_ALLREDUCE;
  f->chunk_mb = 0.01;
  cr_assert(eq(int, synLogicalBuild(f->t, f->s, false, &f->L), KILN_SUCCESS), "%s", kilnLastError());
  if (rs) cr_assert(eq(int, synLogicalBuild(f->t, f->s, true, &f->Lt), KILN_SUCCESS));
  cr_assert(eq(
      int,
      synChunksMake(coll == KILN_COLL_ALLTOALL ? coll : KILN_COLL_ALLGATHER, n, f->s->input_chunkup, &f->C),
      KILN_SUCCESS));
  synRouteParams rp = {f->chunk_mb, true, 5, 1e-4, 0.3, NULL, NULL, false, 1, NULL};
  if (ag) cr_assert(eq(int, synRouteSolve(&f->L, &f->C, &rp, &f->ra), KILN_SUCCESS), "%s", kilnLastError());
  if (rs) cr_assert(eq(int, synRouteSolve(&f->Lt, &f->C, &rp, &f->rr), KILN_SUCCESS), "%s", kilnLastError());
  cr_assert(eq(int, synXfersBuild(coll, &f->L, &f->Lt, &f->C, ag ? &f->ra : NULL, rs ? &f->rr : NULL, &f->X),
               KILN_SUCCESS));
  cr_assert(eq(int, synOrder(&f->L, &f->X, KILN_ORDER_SHORTEST_PATH_FIRST, f->chunk_mb), KILN_SUCCESS));
  synScheduleAsap(&f->L, &f->X, f->chunk_mb);
}

static void teardown(fixture* f) {
  synXfersFree(&f->X);
  synRouteFree(&f->ra);
  synRouteFree(&f->rr);
  synChunksFree(&f->C);
  synLogicalFree(&f->L);
  synLogicalFree(&f->Lt);
  kilnSketchFree(f->s);
  kilnTopologyFree(f->t);
}

static kilnPlan* lower(fixture* f, kilnColl_t coll, int instances, bool fuse, bool* fused) {
  synLowerParams lp = {coll,  f->s->input_chunkup, instances, KILN_PROTO_SIMPLE, fuse, false, false, false,
                       "test"};
  kilnPlan* p = NULL;
  cr_assert(eq(int, synLower(&f->L, &f->X, &lp, &p, fused), KILN_SUCCESS), "%s", kilnLastError());
  kilnVerifyOptions vo = KILN_VERIFY_OPTIONS_INIT;
  vo.seed = 777; /* fixed, visible seed */
  cr_assert(eq(int, kilnPlanVerify(p, &vo), KILN_SUCCESS), "%s", kilnLastError());
  return p;
}

static int count_steps(const kilnPlan* p, kilnStepType_t type) {
  int n = 0;
  for (int r = 0; r < p->ngpus; r++)
    for (int t = 0; t < p->gpus[r].ntbs; t++)
      for (int s = 0; s < p->gpus[r].tbs[t].nsteps; s++) n += p->gpus[r].tbs[t].steps[s].type == type;
  return n;
}

/* One threadblock per (send peer, channel) and per (recv peer, channel) on a rank; every
 * dependency names an existing step of another threadblock, which is marked hasdep. */
static void check_structure(const kilnPlan* p) {
  for (int r = 0; r < p->ngpus; r++) {
    const kilnGpu* g = &p->gpus[r];
    for (int a = 0; a < g->ntbs; a++) {
      const kilnThreadblock* ta = &g->tbs[a];
      cr_assert(eq(int, ta->id, a));
      for (int b = a + 1; b < g->ntbs; b++) {
        const kilnThreadblock* tb = &g->tbs[b];
        if (ta->chan != tb->chan) continue;
        cr_assert(ta->send < 0 || ta->send != tb->send, "rank %d tbs %d,%d both send to %d", r, a, b,
                  ta->send);
        cr_assert(ta->recv < 0 || ta->recv != tb->recv, "rank %d tbs %d,%d both receive from %d", r, a, b,
                  ta->recv);
      }
      for (int s = 0; s < ta->nsteps; s++) {
        const kilnStep* st = &ta->steps[s];
        cr_assert(eq(int, st->s, s));
        if (st->depid < 0) continue;
        cr_assert(ne(int, st->depid, a));
        cr_assert(lt(int, st->depid, g->ntbs));
        cr_assert(lt(int, st->deps, g->tbs[st->depid].nsteps));
        cr_assert(g->tbs[st->depid].steps[st->deps].hasdep);
      }
    }
  }
}

Test(lower, relays_fuse_receive_and_send) {
  fixture f;
  setup(&f, "torus4x4", "torus4x4", KILN_COLL_ALLGATHER, 0);
  bool fused = false;
  kilnPlan* p = lower(&f, KILN_COLL_ALLGATHER, 1, true, &fused);
  cr_assert(fused);
  cr_assert(gt(int, count_steps(p, KILN_STEP_RECV_COPY_SEND), 0));
  check_structure(p);
  kilnPlanFree(p);
  p = lower(&f, KILN_COLL_ALLGATHER, 1, false, &fused);
  cr_assert(not(fused));
  cr_assert(eq(int, count_steps(p, KILN_STEP_RECV_COPY_SEND), 0));
  check_structure(p);
  kilnPlanFree(p);
  teardown(&f);
}

Test(lower, allreduce_fuses_reductions) {
  fixture f;
  setup(&f, "switch4", "switch4", KILN_COLL_ALLREDUCE, 0);
  bool fused = false;
  kilnPlan* p = lower(&f, KILN_COLL_ALLREDUCE, 1, true, &fused);
  cr_assert(fused);
  cr_assert(gt(int, count_steps(p, KILN_STEP_RECV_REDUCE_COPY_SEND), 0));
  check_structure(p);
  kilnPlanFree(p);
  teardown(&f);
}

Test(lower, reducescatter_through_relays_verifies) {
  fixture f;
  setup(&f, "torus4x4", "torus4x4", KILN_COLL_REDUCESCATTER, 0);
  bool fused = false;
  kilnPlan* p = lower(&f, KILN_COLL_REDUCESCATTER, 1, true, &fused);
  cr_assert(
      gt(int, count_steps(p, KILN_STEP_RECV_REDUCE_SEND) + count_steps(p, KILN_STEP_RECV_REDUCE_COPY), 0));
  cr_assert(eq(int, p->gpus[0].o_chunks, 1));
  cr_assert(eq(int, p->gpus[0].i_chunks, 16));
  check_structure(p);
  kilnPlanFree(p);
  teardown(&f);
}

Test(lower, instances_copy_threadblocks_over_channels) {
  fixture f;
  setup(&f, "switch4", "switch4", KILN_COLL_ALLGATHER, 0);
  bool fused;
  kilnPlan* one = lower(&f, KILN_COLL_ALLGATHER, 1, true, &fused);
  kilnPlan* three = lower(&f, KILN_COLL_ALLGATHER, 3, true, &fused);
  cr_assert(eq(int, three->nchannels, 3));
  for (int r = 0; r < 4; r++) {
    cr_assert(eq(int, three->gpus[r].ntbs, 3 * one->gpus[r].ntbs));
    cr_assert(eq(int, three->gpus[r].o_chunks, 3 * one->gpus[r].o_chunks));
    cr_assert(eq(int, three->gpus[r].i_chunks, 3 * one->gpus[r].i_chunks));
  }
  check_structure(three);
  kilnPlanFree(one);
  kilnPlanFree(three);
  teardown(&f);
}

Test(lower, chunks_sent_together_become_one_step) {
  fixture f;
  setup(&f, "switch4", "switch4", KILN_COLL_ALLGATHER, 2);
  /* rank 0's two chunks go over link 0->1 back to back: mark them as sent together, in chunk order */
  int e = f.L.link_of[0 * 4 + 1];
  cr_assert(eq(int, f.X.link_start[e + 1] - f.X.link_start[e], 2));
  int* lo = &f.X.link_order[f.X.link_start[e]];
  if (f.X.x[lo[0]].chunk > f.X.x[lo[1]].chunk) {
    int tmp = lo[0];
    lo[0] = lo[1];
    lo[1] = tmp;
  }
  f.X.x[lo[0]].batch_next = 1;
  synScheduleAsap(&f.L, &f.X, f.chunk_mb);
  cr_assert(eq(dbl, f.X.x[lo[0]].send_t, f.X.x[lo[1]].send_t));
  bool fused;
  kilnPlan* p = lower(&f, KILN_COLL_ALLGATHER, 1, false, &fused);
  bool found = false;
  for (int t = 0; t < p->gpus[0].ntbs; t++)
    if (p->gpus[0].tbs[t].send == 1)
      for (int s = 0; s < p->gpus[0].tbs[t].nsteps; s++)
        found |= p->gpus[0].tbs[t].steps[s].type == KILN_STEP_SEND && p->gpus[0].tbs[t].steps[s].cnt == 2;
  cr_assert(found, "no two-chunk send from rank 0 to rank 1");
  check_structure(p);
  kilnPlanFree(p);
  teardown(&f);
}

Test(lower, alltoall_relays_use_scratch) {
  fixture f;
  setup(&f, "torus4x4", "torus4x4", KILN_COLL_ALLTOALL, 0);
  bool fused;
  kilnPlan* p = lower(&f, KILN_COLL_ALLTOALL, 1, true, &fused);
  int scratch = 0;
  for (int r = 0; r < p->ngpus; r++) scratch += p->gpus[r].s_chunks;
  cr_assert(gt(int, scratch, 0));
  check_structure(p);
  kilnPlanFree(p);
  teardown(&f);
}

Test(lower, paired_peers_halve_threadblocks) {
  fixture f;
  setup(&f, "switch8", "switch8", KILN_COLL_ALLTOALL, 0);
  synLowerParams lp = {
      KILN_COLL_ALLTOALL, f.s->input_chunkup, 1, KILN_PROTO_SIMPLE, false, false, false, false, "t"};
  kilnPlan *apart = NULL, *paired = NULL;
  bool fused;
  cr_assert(eq(int, synLower(&f.L, &f.X, &lp, &apart, &fused), KILN_SUCCESS));
  lp.pair_peers = true;
  cr_assert(eq(int, synLower(&f.L, &f.X, &lp, &paired, &fused), KILN_SUCCESS));
  for (int r = 0; r < 8; r++) {
    cr_assert(eq(int, apart->gpus[r].ntbs, 14));
    cr_assert(eq(int, paired->gpus[r].ntbs, 7));
  }
  kilnVerifyOptions vo = KILN_VERIFY_OPTIONS_INIT;
  vo.fifo_depth = 1;
  cr_assert(eq(int, kilnPlanVerify(paired, &vo), KILN_SUCCESS), "%s", kilnLastError());
  check_structure(paired);
  kilnPlanFree(apart);
  kilnPlanFree(paired);
  teardown(&f);
}

/* The floor's ring copies the baseline's: on two DGX-2 nodes (a NIC per GPU pair) ring i enters
 * every node through GPU 2i, the first GPU of NIC i, so the 8 rings cross between nodes on 8
 * different NICs both ways and the plan simulates as NCCL's ring does, at the 8 NICs' bound. */
Test(lower, ring_floor_gives_each_ring_a_nic) {
  kilnTopology* t = NULL;
  cr_assert(eq(int, kilnTopologyBuiltin("dgx2", 2, &t), KILN_SUCCESS));
  const uint64_t B = 1u << 30;
  kilnPlan* p = NULL;
  cr_assert(eq(int, synRingPlan(t, KILN_COLL_ALLGATHER, B, false, false, "ring", &p), KILN_SUCCESS), "%s",
            kilnLastError());
  cr_assert(not(eq(ptr, p, NULL)));
  cr_expect(eq(int, p->nchannels, 8));
  /* the NICs that each channel's cross-node sends leave through */
  unsigned used[8] = {0};
  for (int r = 0; r < p->ngpus; r++)
    for (int b = 0; b < p->gpus[r].ntbs; b++) {
      const kilnThreadblock* tb = &p->gpus[r].tbs[b];
      if (tb->send < 0 || tb->send / 16 == r / 16) continue;
      cr_assert(lt(int, tb->chan, 8));
      used[tb->chan] |= 1u << (t->nic_of[r] % t->ntnics);
    }
  unsigned all = 0;
  for (int c = 0; c < 8; c++) {
    cr_expect(eq(int, __builtin_popcount(used[c]), 1), "channel %d leaves through NICs 0x%x", c, used[c]);
    cr_expect(not(all & used[c]), "channel %d shares a NIC with another", c);
    all |= used[c];
  }
  cr_expect(eq(u32, all, 0xffu));
  /* on the α-β table, where the plan's steps and NCCL's cost alike */
  const kilnSimParams ab = KILN_SIM_PARAMS_ALPHA_BETA;
  kilnSimResult ks, ring;
  cr_assert(eq(int, kilnPlanSimulateWith(p, t, B, &ab, &ks), KILN_SUCCESS), "%s", kilnLastError());
  cr_assert(eq(int, kilnBaselineSimulateWith(KILN_BASELINE_RING, KILN_COLL_ALLGATHER, t, B, &ab, &ring),
               KILN_SUCCESS));
  cr_expect(lt(dbl, fabs(ks.time_us - ring.time_us), ring.time_us * 0.005),
            "the plan %.1f us, the ring %.1f us", ks.time_us, ring.time_us);
  kilnPlanFree(p);
  kilnTopologyFree(t);
}

/* The floor's tree copies the baseline's trees: at a size whose slices divide it evenly the plan
 * simulates as NCCL's tree does - exactly on NDv2 (one tree pair, the node's chain along its
 * NVLinks), and no slower on HGX H100 with a tree pair per NIC, where the simulator serves the 16
 * trees' transfers on the shared ports in another order than the baseline's (4 nodes, 16 MiB:
 * 101.7 against 110.4 us) - in place and not, and it verifies; on one node there is no tree plan. */
Test(lower, tree_floor_is_the_baseline_tree) {
  static const struct {
    const char* topo;
    int nodes;
    uint64_t bytes;
  } cases[] = {{"ndv2", 2, 64u << 20}, {"hgx-h100", 4, 16u << 20}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    for (int inplace = 0; inplace < 2; inplace++) {
      kilnTopology* t = NULL;
      cr_assert(eq(int, kilnTopologyBuiltin(cases[i].topo, cases[i].nodes, &t), KILN_SUCCESS));
      kilnPlan* p = NULL;
      cr_assert(eq(int, synTreePlan(t, cases[i].bytes, 0, inplace, "tree", &p), KILN_SUCCESS), "%s",
                kilnLastError());
      cr_assert(not(eq(ptr, p, NULL)), "%s", cases[i].topo);
      /* on the α-β table, where the plan's steps and NCCL's cost alike */
      const kilnSimParams ab = KILN_SIM_PARAMS_ALPHA_BETA;
      kilnSimResult ks, tree;
      cr_assert(eq(int, kilnPlanSimulateWith(p, t, cases[i].bytes, &ab, &ks), KILN_SUCCESS), "%s",
                kilnLastError());
      cr_assert(
          eq(int,
             kilnBaselineSimulateWith(KILN_BASELINE_TREE, KILN_COLL_ALLREDUCE, t, cases[i].bytes, &ab, &tree),
             KILN_SUCCESS));
      cr_expect(le(dbl, ks.time_us, tree.time_us * (1 + 1e-6)), "%s: the plan %.2f us, the tree %.2f us",
                cases[i].topo, ks.time_us, tree.time_us);
      cr_expect(ge(dbl, ks.time_us, tree.time_us * (i == 0 ? 1 - 1e-6 : 0.85)),
                "%s: the plan %.2f us, the tree %.2f us", cases[i].topo, ks.time_us, tree.time_us);
      kilnVerifyOptions vo = KILN_VERIFY_OPTIONS_INIT;
      vo.fifo_depth = 1;
      cr_expect(eq(int, kilnPlanVerify(p, &vo), KILN_SUCCESS), "%s in place %d: %s", cases[i].topo, inplace,
                kilnLastError());
      kilnPlanFree(p);
      kilnTopologyFree(t);
    }
  kilnTopology* t = NULL;
  cr_assert(eq(int, kilnTopologyBuiltin("switch4", 1, &t), KILN_SUCCESS));
  kilnPlan* p = NULL;
  cr_expect(eq(int, synTreePlan(t, 1u << 20, 0, false, "tree", &p), KILN_SUCCESS));
  cr_expect(eq(ptr, p, NULL));
  kilnTopologyFree(t);
}

/* A plan through FIFOs in instances: the rails' allgather on two HGX H100 nodes in 4 instances has
 * 4 times the channels and chunks, verifies, and on the calibrated costs, where one threadblock
 * moves 38.5 GB/s, runs faster at 1 GB; a step whose chunks span two ranks' pieces of the output
 * cannot be copied into instances, and the plan is left alone. */
Test(lower, plans_through_fifos_in_instances) {
  kilnTopology* t = NULL;
  cr_assert(eq(int, kilnTopologyBuiltin("hgx-h100", 2, &t), KILN_SUCCESS));
  kilnSketch* s = load_sketch("hgx-h100-rails");
  kilnSynthOptions o = KILN_SYNTH_OPTIONS_INIT;
  o.instances = 1;
  o.floor = false;
  o.input_size = (1u << 30) / 16;
  kilnPlan *p = NULL, *q = NULL;
  cr_assert(eq(int, kilnSynthesize(t, s, KILN_COLL_ALLGATHER, &o, &p, NULL), KILN_SUCCESS), "%s",
            kilnLastError());
  cr_assert(eq(int, synReplicate(p, 4, &q), KILN_SUCCESS), "%s", kilnLastError());
  cr_assert(not(eq(ptr, q, NULL)));
  cr_expect(eq(int, q->nchannels, 4 * p->nchannels));
  cr_expect(eq(int, q->gpus[3].o_chunks, 4 * p->gpus[3].o_chunks));
  cr_expect(eq(int, q->gpus[3].ntbs, 4 * p->gpus[3].ntbs));
  kilnVerifyOptions vo = KILN_VERIFY_OPTIONS_INIT;
  vo.fifo_depth = 1;
  cr_expect(eq(int, kilnPlanVerify(q, &vo), KILN_SUCCESS), "%s", kilnLastError());
  kilnSimResult a, b;
  cr_assert(eq(int, kilnPlanSimulate(p, t, 1u << 30, &a), KILN_SUCCESS));
  cr_assert(eq(int, kilnPlanSimulate(q, t, 1u << 30, &b), KILN_SUCCESS));
  cr_expect(lt(dbl, b.time_us, a.time_us * 0.8), "4 instances %.1f us, 1 instance %.1f us", b.time_us,
            a.time_us);
  kilnPlanFree(p);
  kilnPlanFree(q);
  /* two ranks' output chunks in one step */
  cr_assert(eq(int, kilnPlanCreate("span", KILN_COLL_ALLGATHER, 2, &p), KILN_SUCCESS));
  for (int r = 0; r < 2; r++) {
    p->gpus[r].i_chunks = 1;
    p->gpus[r].o_chunks = 2;
  }
  p->nchunksperloop = 2;
  kilnThreadblock* tb = kilnPlanAddThreadblock(p, 0, -1, -1, 0);
  cr_assert(
      not(eq(ptr, kilnPlanAddStep(tb, KILN_STEP_COPY, KILN_BUF_OUTPUT, 0, KILN_BUF_OUTPUT, 0, 2), NULL)));
  q = (kilnPlan*)1;
  cr_expect(eq(int, synReplicate(p, 2, &q), KILN_SUCCESS));
  cr_expect(eq(ptr, q, NULL));
  kilnPlanFree(p);
  kilnSketchFree(s);
  kilnTopologyFree(t);
}
