/*
 * Plans cut at node boundaries (solver/phases.h): for the classic ring and direct plans of every
 * collective over node splits 2x2, 2x1 and 4x1 (and 2x4), and for every plan under plans/ that
 * names its nodes: the cut plan verifies; no kernel phase has a peer on another node; each rank's
 * NCCL calls pair up with its peers' (same count, same order, same phase); the phases run to the
 * collective's result on host memory (kilnPhasesCheck: no deadlock, every element) for counts that
 * divide into chunks and counts that do not. The exact calls of a small plan, a plan that relies
 * on FIFO buffering (a message received apart), plans that cannot be cut, and the checker catching
 * broken phases.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <criterion/parameterized.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../solver/phases.h"
#include "cli_run.h"
#include "kiln/plan.h"
#include "kiln/sketch.h"
#include "kiln/synth.h"
#include "test_files.h"
#include "test_util.h"

typedef struct split_case {
  int algo; /* 0 ring, 1 direct */
  kilnColl_t coll;
  int nodes, gpn; /* nodes x GPUs per node */
} split_case;

static const char* const algo_names[] = {"ring", "direct"};

#define NSPLITS 4
static const int splits[NSPLITS][2] = {{2, 2}, {2, 1}, {4, 1}, {2, 4}};

ParameterizedTestParameters(phases, classic) {
  static const struct {
    int algo;
    kilnColl_t coll;
  } pairs[] = {
      {0, KILN_COLL_ALLGATHER}, {0, KILN_COLL_REDUCESCATTER}, {0, KILN_COLL_ALLREDUCE},
      {1, KILN_COLL_ALLGATHER}, {1, KILN_COLL_ALLTOALL},      {1, KILN_COLL_REDUCESCATTER},
      {1, KILN_COLL_ALLREDUCE},
  };
  const size_t npairs = sizeof pairs / sizeof pairs[0];
  split_case* cases = cr_malloc(sizeof(split_case) * npairs * NSPLITS);
  size_t n = 0;
  for (size_t i = 0; i < npairs; i++)
    for (int s = 0; s < NSPLITS; s++)
      cases[n++] = (split_case){pairs[i].algo, pairs[i].coll, splits[s][0], splits[s][1]};
  return cr_make_param_array(split_case, cases, n);
}

/* Pairs each rank's sends with its peers' receives, group by group, as NCCL matches them (in
 * order per ordered pair): same count, and both in the same phase. Returns the calls made. */
typedef struct {
  int rank;
  int n, cap;
  struct pcall {
    bool send;
    int peer;
    kilnBuffer_t buf;
    uint64_t off, n;
  } * v;
} recorder;

static int record(void* ctx, bool send, int peer, kilnBuffer_t buf, uint64_t off, uint64_t n) {
  recorder* r = ctx;
  if (r->n == r->cap) {
    r->cap = r->cap ? 2 * r->cap : 16;
    r->v = realloc(r->v, (size_t)r->cap * sizeof *r->v);
    cr_assert(r->v != NULL);
  }
  r->v[r->n++] = (struct pcall){send, peer, buf, off, n};
  return 0;
}

static int assert_calls_pair_up(const kilnPhases* ph, uint64_t count) {
  const int R = ph->nranks;
  int total = 0;
  for (int i = 0; i < ph->nphases; i++) {
    if (!ph->phases[i].p2p) continue;
    recorder* rec = calloc((size_t)R, sizeof *rec);
    cr_assert(rec != NULL);
    for (int r = 0; r < R; r++) {
      rec[r].rank = r;
      cr_assert(eq(int, kilnPhasesP2pCalls(ph, i, r, count, record, &rec[r]), 0));
      for (int j = 0; j < rec[r].n; j++) {
        cr_assert(rec[r].v[j].peer != r, "rank %d calls itself in phase %d", r, i);
        cr_assert(rec[r].v[j].n > 0, "an empty call");
      }
    }
    for (int a = 0; a < R; a++)
      for (int b = 0; b < R; b++) {
        /* a's sends to b in order, b's receives from a in order. */
        int js = 0, jr = 0;
        for (;;) {
          while (js < rec[a].n && !(rec[a].v[js].send && rec[a].v[js].peer == b)) js++;
          while (jr < rec[b].n && !(!rec[b].v[jr].send && rec[b].v[jr].peer == a)) jr++;
          if (js == rec[a].n || jr == rec[b].n) {
            cr_assert(
                js == rec[a].n && jr == rec[b].n,
                "phase %d: rank %d's sends to rank %d and rank %d's receives from rank %d differ in number",
                i, a, b, b, a);
            break;
          }
          cr_assert(eq(u64, rec[a].v[js].n, rec[b].v[jr].n),
                    "phase %d: rank %d sends %llu elements to rank %d, which receives %llu in that place", i,
                    a, (unsigned long long)rec[a].v[js].n, b, (unsigned long long)rec[b].v[jr].n);
          js++;
          jr++;
          total++;
        }
      }
    for (int r = 0; r < R; r++) free(rec[r].v);
    free(rec);
  }
  return total;
}

/* No kernel phase holds a connection between nodes. */
static void assert_kernels_stay_on_nodes(const kilnPhases* ph) {
  for (int i = 0; i < ph->nphases; i++) {
    if (ph->phases[i].p2p) continue;
    const kilnPlan* q = ph->phases[i].plan;
    for (int r = 0; r < q->ngpus; r++)
      for (int t = 0; t < q->gpus[r].ntbs; t++) {
        const kilnThreadblock* tb = &q->gpus[r].tbs[t];
        cr_assert(tb->send < 0 || ph->node[tb->send] == ph->node[r],
                  "phase %d rank %d tb %d sends to rank %d of "
                  "another node",
                  i, r, t, tb->send);
        cr_assert(tb->recv < 0 || ph->node[tb->recv] == ph->node[r],
                  "phase %d rank %d tb %d receives from rank %d "
                  "of another node",
                  i, r, t, tb->recv);
      }
  }
}

/* Everything the suite checks of one plan on one split. */
static void check_plan(const kilnPlan* p, int nodes) {
  kilnPhases* ph = NULL;
  cr_assert(eq(int, kilnPhasesBuild(p, nodes, NULL, &ph), KILN_SUCCESS), "%s on %d nodes: %s", p->name, nodes,
            kilnLastError());
  cr_assert(ph->nmessages > 0 || nodes == 1, "%s: nothing crosses the %d nodes", p->name, nodes);
  kilnVerifyOptions vo = KILN_VERIFY_OPTIONS_INIT;
  vo.all_ops = false;
  cr_assert(eq(int, kilnPlanVerify(ph->split, &vo), KILN_SUCCESS), "%s cut for %d nodes: %s", p->name, nodes,
            kilnLastError());
  assert_kernels_stay_on_nodes(ph);
  const int k = ph->k;
  const uint64_t counts[] = {(uint64_t)k * 3, (uint64_t)k * 3 + 1, 1, (uint64_t)k * 2 + (k > 1 ? k - 1 : 0)};
  for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
    const int calls = assert_calls_pair_up(ph, counts[c]);
    cr_assert(calls > 0 || ph->nmessages == 0, "%s: no NCCL call for %llu elements", p->name,
              (unsigned long long)counts[c]);
    for (int inplace = 0; inplace < 2; inplace++) {
      if (!kilnPlanServes(p, inplace) || (inplace && p->coll == KILN_COLL_ALLTOALL)) continue;
      const kilnRedOp_t ops[] = {KILN_SUM, KILN_MAX};
      for (size_t o = 0; o < 2; o++) {
        if (o > 0 && (p->coll == KILN_COLL_ALLGATHER || p->coll == KILN_COLL_ALLTOALL)) break;
        cr_assert(eq(int, kilnPhasesCheck(ph, p, counts[c], inplace, ops[o], KILN_FIFO_DEPTH_DEFAULT, 7 + c),
                     KILN_SUCCESS),
                  "%s: %s", p->name, kilnLastError());
      }
    }
  }
  kilnPhasesFree(ph);
}

ParameterizedTest(split_case* sc, phases, classic) {
  const int n = sc->nodes * sc->gpn;
  for (int chunks = 1; chunks <= 2; chunks++)
    for (int inst = 1; inst <= 2; inst++)
      for (int inplace = 0; inplace < 2; inplace++) {
        kilnClassicOptions o = KILN_CLASSIC_OPTIONS_INIT;
        o.chunks = chunks;
        o.instances = inst;
        o.inplace = inplace;
        kilnPlan* p = NULL;
        const kilnResult_t r = kilnClassicPlan(algo_names[sc->algo], sc->coll, n, &o, &p);
        if (r == KILN_ERR_UNSUPPORTED) continue; /* a form the algorithm does not have */
        cr_assert(eq(int, r, KILN_SUCCESS), "%s", kilnLastError());
        p->nnodes = sc->nodes;
        check_plan(p, sc->nodes);
        kilnPlanFree(p);
      }
}

/* Every plan under plans/ that names its nodes (the synthesized multi-node plans). */
static void check_folder(const char* dir, int* found) {
  DIR* d = opendir(dir);
  if (!d) return;
  struct dirent* e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    const size_t len = strlen(e->d_name);
    if (len > 4 && !strcmp(e->d_name + len - 4, ".xml")) {
      kilnPlan* p = NULL;
      if (kilnPlanReadFile(path, &p) != KILN_SUCCESS) continue; /* a topology or sketch */
      if (p->nnodes > 1) {
        if (kilnPlanHasCopies(p)) cr_assert(eq(int, kilnPlanLowerCopies(p), KILN_SUCCESS));
        check_plan(p, p->nnodes);
        (*found)++;
      }
      kilnPlanFree(p);
    } else {
      check_folder(path, found);
    }
  }
  closedir(d);
}

Test(phases, multi_node_plans_under_plans) {
  int found = 0;
  check_folder(KILN_SOURCE_DIR "/plans", &found);
  if (found == 0) cr_skip_test("no plan under plans/ names more than one node");
}

/* Plans the synthesizer makes for several nodes (TACCL's relays: gather within a node, cross, then
 * spread), every collective: switch2 and switch4 nodes joined GPU to GPU ("direct"), two of each,
 * and the hgx-h100 sketch on two HGX nodes. */
typedef struct synthCase {
  const char* topo;
  int nodes;
  const char*
      sketch; /* a sketch file under plans/sketches, or NULL: one switch a node, direct between nodes */
  kilnColl_t coll;
} synthCase;

#define SYNTH_SHAPE(topo, nodes, sketch)                                                      \
  {topo, nodes, sketch, KILN_COLL_ALLGATHER}, {topo, nodes, sketch, KILN_COLL_REDUCESCATTER}, \
      {topo, nodes, sketch, KILN_COLL_ALLREDUCE}, {                                           \
    topo, nodes, sketch, KILN_COLL_ALLTOALL                                                   \
  }
static const synthCase kSynth[] = {SYNTH_SHAPE("switch2", 2, NULL), SYNTH_SHAPE("switch4", 2, NULL),
                                   SYNTH_SHAPE("hgx-h100", 2, "hgx-h100")};
#define NSYNTH (sizeof kSynth / sizeof kSynth[0])

KILN_INDEX_PARAMS(phases, synthesized, NSYNTH)

ParameterizedTest(int* idx, phases, synthesized, .timeout = 300) {
  const synthCase* sc = &kSynth[*idx];
  kilnTopology* t = NULL;
  cr_assert(eq(int, kilnTopologyBuiltin(sc->topo, sc->nodes, &t), KILN_SUCCESS), "%s", kilnLastError());
  kilnSketch* sk = NULL;
  if (sc->sketch) {
    sk = load_sketch(sc->sketch);
  } else {
    char xml[512], gpus[64] = "";
    for (int g = 0; g < t->gpus_per_node; g++)
      snprintf(gpus + strlen(gpus), sizeof gpus - strlen(gpus), "%s%d", g ? " " : "", g);
    snprintf(xml, sizeof xml,
             "<sketch name=\"%s-direct\"><intranode strategy=\"switch\"><switch gpus=\"%s\" "
             "policy=\"uc-max\"/></intranode><internode strategy=\"direct\"/></sketch>",
             sc->topo, gpus);
    cr_assert(eq(int, kilnSketchReadMemory(xml, strlen(xml), "sketch.xml", &sk), KILN_SUCCESS), "%s",
              kilnLastError());
  }
  kilnSynthOptions o = KILN_SYNTH_OPTIONS_INIT;
  o.time_limit_s = 5;
  o.stall_s = 0.3;
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnSynthesize(t, sk, sc->coll, &o, &p, NULL), KILN_SUCCESS), "%s", kilnLastError());
  p->nnodes = sc->nodes;
  if (kilnPlanHasCopies(p)) cr_assert(eq(int, kilnPlanLowerCopies(p), KILN_SUCCESS));
  check_plan(p, sc->nodes);
  kilnPlanFree(p);
  kilnSketchFree(sk);
  kilnTopologyFree(t);
}

/* A 2-rank ring allreduce on 2 nodes of one GPU: the exact calls of every rank. */
Test(phases, ring_allreduce_on_two_nodes_makes_these_calls) {
  kilnPlan* p = NULL;
  kilnClassicOptions o = KILN_CLASSIC_OPTIONS_INIT;
  cr_assert(eq(int, kilnClassicPlan("ring", KILN_COLL_ALLREDUCE, 2, &o, &p), KILN_SUCCESS));
  kilnPhases* ph = NULL;
  cr_assert(eq(int, kilnPhasesBuild(p, 2, NULL, &ph), KILN_SUCCESS), "%s", kilnLastError());
  /* Every step crosses: each rank sends its half, receives the other's into scratch, reduces,
   * sends the sum back and receives the peer's sum into place: two groups of one send and one
   * receive each, with a kernel phase (the reduction) between. */
  int groups = 0, kernels = 0;
  for (int i = 0; i < ph->nphases; i++) {
    if (ph->phases[i].p2p)
      groups++;
    else
      kernels++;
  }
  cr_assert(eq(int, groups, 2));
  cr_assert(ge(int, kernels, 1));
  const uint64_t count = 10; /* k = 2, L = 5 */
  cr_assert(eq(int, ph->k, 2));
  for (int r = 0; r < 2; r++) {
    recorder rec = {r, 0, 0, NULL};
    for (int i = 0; i < ph->nphases; i++)
      if (ph->phases[i].p2p) cr_assert(eq(int, kilnPhasesP2pCalls(ph, i, r, count, record, &rec), 0));
    cr_assert(eq(int, rec.n, 4), "rank %d makes %d calls", r, rec.n);
    for (int j = 0; j < 4; j++) {
      cr_assert(eq(int, rec.v[j].peer, 1 - r));
      cr_assert(eq(u64, rec.v[j].n, 5));
      cr_assert(eq(int, rec.v[j].send, j % 2 == 0), "call %d of rank %d", j, r);
    }
    /* The first send is the rank's own half of the input, the last receive lands in the output. */
    cr_assert(eq(int, rec.v[0].buf, KILN_BUF_INPUT));
    cr_assert(eq(int, rec.v[3].buf, KILN_BUF_OUTPUT));
    free(rec.v);
  }
  /* An odd count cuts the same calls into chunks of 6 and 5 elements (k = 2, L = 6). */
  for (int r = 0; r < 2; r++) {
    recorder rec = {r, 0, 0, NULL};
    for (int i = 0; i < ph->nphases; i++)
      if (ph->phases[i].p2p) cr_assert(eq(int, kilnPhasesP2pCalls(ph, i, r, 11, record, &rec), 0));
    cr_assert(eq(int, rec.n, 4));
    /* Rank 0 first sends its chunk 1 (5 elements) and receives chunk 0 (6); rank 1 the other way. */
    cr_assert(eq(u64, rec.v[0].n, r == 0 ? 5 : 6), "rank %d's first send", r);
    cr_assert(eq(u64, rec.v[1].n, r == 0 ? 6 : 5), "rank %d's first receive", r);
    free(rec.v);
  }
  kilnPhasesFree(ph);
  kilnPlanFree(p);
}

/* A 3-rank allgather (ranks 0 and 1 on node 0, rank 2 on node 1) where rank 1 takes rank 2's chunk
 * before rank 0's, while rank 0 sends to rank 1 before rank 2: it runs on FIFO buffering (rank 0's
 * send waits in rank 1's FIFO). Cut into phases, that message is received apart, through NCCL. */
static kilnPlan* buffering_plan(void) {
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnPlanCreate("buffering", KILN_COLL_ALLGATHER, 3, &p), KILN_SUCCESS));
  p->nchannels = 1;
  for (int r = 0; r < 3; r++) {
    p->gpus[r].i_chunks = 1;
    p->gpus[r].o_chunks = 3;
  }
  p->nchunksperloop = 3;
  kilnThreadblock* tb;
  kilnStep* st;
  /* rank 0: to 1, then (after it) to 2; its own chunk; receives 1's and 2's. */
  tb = kilnPlanAddThreadblock(p, 0, 1, -1, 0);
  kilnPlanAddStep(tb, KILN_STEP_SEND, KILN_BUF_INPUT, 0, KILN_BUF_OUTPUT, 0, 1);
  tb = kilnPlanAddThreadblock(p, 0, 2, -1, 0);
  st = kilnPlanAddStep(tb, KILN_STEP_SEND, KILN_BUF_INPUT, 0, KILN_BUF_OUTPUT, 0, 1);
  st->depid = 0;
  st->deps = 0;
  tb = kilnPlanAddThreadblock(p, 0, -1, -1, 0);
  kilnPlanAddStep(tb, KILN_STEP_COPY, KILN_BUF_INPUT, 0, KILN_BUF_OUTPUT, 0, 1);
  tb = kilnPlanAddThreadblock(p, 0, -1, 1, 0);
  kilnPlanAddStep(tb, KILN_STEP_RECV, KILN_BUF_OUTPUT, 1, KILN_BUF_OUTPUT, 1, 1);
  tb = kilnPlanAddThreadblock(p, 0, -1, 2, 0);
  kilnPlanAddStep(tb, KILN_STEP_RECV, KILN_BUF_OUTPUT, 2, KILN_BUF_OUTPUT, 2, 1);
  /* rank 1: receives 2's chunk, then 0's; its own; sends to 0 and 2. */
  tb = kilnPlanAddThreadblock(p, 1, -1, 2, 0);
  kilnPlanAddStep(tb, KILN_STEP_RECV, KILN_BUF_OUTPUT, 2, KILN_BUF_OUTPUT, 2, 1);
  tb = kilnPlanAddThreadblock(p, 1, -1, 0, 0);
  st = kilnPlanAddStep(tb, KILN_STEP_RECV, KILN_BUF_OUTPUT, 0, KILN_BUF_OUTPUT, 0, 1);
  st->depid = 0;
  st->deps = 0;
  tb = kilnPlanAddThreadblock(p, 1, -1, -1, 0);
  kilnPlanAddStep(tb, KILN_STEP_COPY, KILN_BUF_INPUT, 0, KILN_BUF_OUTPUT, 1, 1);
  tb = kilnPlanAddThreadblock(p, 1, 0, -1, 0);
  kilnPlanAddStep(tb, KILN_STEP_SEND, KILN_BUF_INPUT, 0, KILN_BUF_OUTPUT, 1, 1);
  tb = kilnPlanAddThreadblock(p, 1, 2, -1, 0);
  kilnPlanAddStep(tb, KILN_STEP_SEND, KILN_BUF_INPUT, 0, KILN_BUF_OUTPUT, 1, 1);
  /* rank 2: receives 0's chunk, then sends its own to 1; its own; to 0; receives 1's. */
  tb = kilnPlanAddThreadblock(p, 2, -1, 0, 0);
  kilnPlanAddStep(tb, KILN_STEP_RECV, KILN_BUF_OUTPUT, 0, KILN_BUF_OUTPUT, 0, 1);
  tb = kilnPlanAddThreadblock(p, 2, 1, -1, 0);
  st = kilnPlanAddStep(tb, KILN_STEP_SEND, KILN_BUF_INPUT, 0, KILN_BUF_OUTPUT, 2, 1);
  st->depid = 0;
  st->deps = 0;
  tb = kilnPlanAddThreadblock(p, 2, -1, -1, 0);
  kilnPlanAddStep(tb, KILN_STEP_COPY, KILN_BUF_INPUT, 0, KILN_BUF_OUTPUT, 2, 1);
  tb = kilnPlanAddThreadblock(p, 2, 0, -1, 0);
  kilnPlanAddStep(tb, KILN_STEP_SEND, KILN_BUF_INPUT, 0, KILN_BUF_OUTPUT, 2, 1);
  tb = kilnPlanAddThreadblock(p, 2, -1, 1, 0);
  kilnPlanAddStep(tb, KILN_STEP_RECV, KILN_BUF_OUTPUT, 1, KILN_BUF_OUTPUT, 1, 1);
  kilnPlanMarkHasdep(p);
  return p;
}

Test(phases, a_message_the_plan_buffers_is_received_apart) {
  kilnPlan* p = buffering_plan();
  kilnVerifyOptions vo = KILN_VERIFY_OPTIONS_INIT;
  cr_assert(eq(int, kilnPlanVerify(p, &vo), KILN_SUCCESS), "%s", kilnLastError());
  const int node[3] = {0, 0, 1};
  kilnPhases* ph = NULL;
  cr_assert(eq(int, kilnPhasesBuild(p, 2, node, &ph), KILN_SUCCESS), "%s", kilnLastError());
  cr_assert(eq(int, ph->napart, 1), "%d messages received apart", ph->napart);
  /* Rank 1 got a scratch chunk to receive rank 0's chunk into. */
  cr_assert(eq(int, ph->scratch[1], 1));
  cr_assert(eq(int, kilnPlanVerify(ph->split, &vo), KILN_SUCCESS), "%s", kilnLastError());
  for (uint64_t count = 1; count <= 5; count += 2)
    cr_assert(eq(int, kilnPhasesCheck(ph, p, count, false, KILN_SUM, 8, count), KILN_SUCCESS), "%s",
              kilnLastError());
  /* On one node nothing crosses: a single kernel phase. */
  kilnPhasesFree(ph);
  ph = NULL;
  cr_assert(eq(int, kilnPhasesBuild(p, 1, NULL, &ph), KILN_SUCCESS), "%s", kilnLastError());
  cr_assert(eq(int, ph->nphases, 1));
  cr_assert(not(ph->phases[0].p2p));
  cr_assert(eq(int, ph->nmessages, 0));
  kilnPhasesFree(ph);
  kilnPlanFree(p);
}

Test(phases, a_cycle_is_refused) {
  kilnPlan* p = buffering_plan();
  /* Rank 0's send to rank 1 now waits for rank 1's send to rank 0, which waits (program order is
   * per threadblock, so a dependency) for rank 1's receive from rank 0. */
  kilnThreadblock* tb = &p->gpus[1].tbs[3]; /* rank 1's send to 0 */
  tb->steps[0].depid = 1;
  tb->steps[0].deps = 0;
  tb = &p->gpus[0].tbs[0]; /* rank 0's send to 1 */
  tb->steps[0].depid = 3;
  tb->steps[0].deps = 0;
  kilnPlanMarkHasdep(p);
  const int node[3] = {0, 0, 1};
  kilnPhases* ph = NULL;
  cr_assert(eq(int, kilnPhasesBuild(p, 2, node, &ph), KILN_ERR_VERIFY));
  cr_assert(contains(kilnLastError(), "cycle"), "%s", kilnLastError());
  kilnPlanFree(p);
}

Test(phases, a_chunk_landing_at_another_position_is_refused) {
  /* Allreduce of 2 chunks a rank: rank 0 sends its chunk 0 into rank 1's chunk 1. Sized by their
   * positions, the two ends would disagree for counts that do not divide into 2. */
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnPlanCreate("crossed", KILN_COLL_ALLREDUCE, 2, &p), KILN_SUCCESS));
  for (int r = 0; r < 2; r++) p->gpus[r].i_chunks = p->gpus[r].o_chunks = 2;
  p->nchunksperloop = 2;
  kilnPlanAddStep(kilnPlanAddThreadblock(p, 0, 1, -1, 0), KILN_STEP_SEND, KILN_BUF_INPUT, 0, KILN_BUF_INPUT,
                  0, 1);
  kilnPlanAddStep(kilnPlanAddThreadblock(p, 1, -1, 0, 0), KILN_STEP_RECV, KILN_BUF_OUTPUT, 1, KILN_BUF_OUTPUT,
                  1, 1);
  kilnPhases* ph = NULL;
  cr_assert(eq(int, kilnPhasesBuild(p, 2, NULL, &ph), KILN_ERR_UNSUPPORTED));
  cr_assert(contains(kilnLastError(), "position"), "%s", kilnLastError());
  kilnPlanFree(p);
}

/* Memory steps (put, get, sig, wait) need load/store: a plan may use them within a node only. */
static kilnPlan* put_plan(void) {
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnPlanCreate("puts", KILN_COLL_ALLGATHER, 2, &p), KILN_SUCCESS));
  for (int r = 0; r < 2; r++) {
    p->gpus[r].i_chunks = 1;
    p->gpus[r].o_chunks = 2;
  }
  p->nchunksperloop = 2;
  for (int r = 0; r < 2; r++) {
    kilnThreadblock* tb = kilnPlanAddThreadblock(p, r, -1, -1, 0);
    kilnPlanAddStep(tb, KILN_STEP_COPY, KILN_BUF_INPUT, 0, KILN_BUF_OUTPUT, r, 1);
    kilnStep* st = kilnPlanAddStep(tb, KILN_STEP_PUT, KILN_BUF_INPUT, 0, KILN_BUF_OUTPUT, r, 1);
    st->peer = 1 - r;
    st = kilnPlanAddStep(tb, KILN_STEP_SIGNAL, KILN_BUF_INPUT, -1, KILN_BUF_INPUT, -1, 0);
    st->peer = 1 - r;
    st = kilnPlanAddStep(tb, KILN_STEP_WAIT, KILN_BUF_INPUT, -1, KILN_BUF_INPUT, -1, 0);
    st->peer = 1 - r;
  }
  return p;
}

Test(phases, memory_steps_stay_within_a_node) {
  kilnPlan* p = put_plan();
  kilnPhases* ph = NULL;
  cr_assert(eq(int, kilnPhasesBuild(p, 2, NULL, &ph), KILN_ERR_UNSUPPORTED));
  cr_assert(contains(kilnLastError(), "(put) reaches rank 1 on another node"), "%s", kilnLastError());
  /* On one node they are kernel work like any other step. */
  cr_assert(eq(int, kilnPhasesBuild(p, 1, NULL, &ph), KILN_SUCCESS), "%s", kilnLastError());
  cr_assert(eq(int, ph->nphases, 1));
  const kilnThreadblock* tb = &ph->phases[0].plan->gpus[0].tbs[0];
  cr_assert(eq(int, tb->nsteps, 4));
  cr_assert(eq(int, tb->steps[1].type, KILN_STEP_PUT));
  cr_assert(eq(int, tb->steps[1].peer, 1));
  kilnPhasesFree(ph);
  kilnPlanFree(p);
}

Test(phases, bad_splits_are_refused) {
  kilnPlan* p = NULL;
  kilnClassicOptions o = KILN_CLASSIC_OPTIONS_INIT;
  cr_assert(eq(int, kilnClassicPlan("ring", KILN_COLL_ALLGATHER, 4, &o, &p), KILN_SUCCESS));
  kilnPhases* ph = NULL;
  cr_assert(eq(int, kilnPhasesBuild(p, 3, NULL, &ph), KILN_ERR_INVALID_ARGUMENT));
  cr_assert(contains(kilnLastError(), "3 nodes"), "%s", kilnLastError());
  cr_assert(eq(int, kilnPhasesBuild(p, 0, NULL, &ph), KILN_ERR_INVALID_ARGUMENT));
  const int node[4] = {0, 1, 5, 0};
  cr_assert(eq(int, kilnPhasesBuild(p, 2, node, &ph), KILN_ERR_INVALID_ARGUMENT));
  cr_assert(contains(kilnLastError(), "rank 2"), "%s", kilnLastError());
  cr_assert(eq(ptr, ph, NULL));
  kilnPlanFree(p);
}

/* The checker is not a rubber stamp: phases broken on purpose fail it. The calls are for a count
 * whose every chunk holds elements, the last position one fewer than the others. */
static uint64_t odd_count(const kilnPhases* ph) { return (uint64_t)ph->k * 3 - 1; }

static kilnPhases* ring_phases(kilnPlan** p, int n, int nodes) {
  kilnClassicOptions o = KILN_CLASSIC_OPTIONS_INIT;
  o.chunks = 2;
  cr_assert(eq(int, kilnClassicPlan("ring", KILN_COLL_ALLREDUCE, n, &o, p), KILN_SUCCESS));
  kilnPhases* ph = NULL;
  cr_assert(eq(int, kilnPhasesBuild(*p, nodes, NULL, &ph), KILN_SUCCESS), "%s", kilnLastError());
  cr_assert(eq(int, kilnPhasesCheck(ph, *p, odd_count(ph), false, KILN_SUM, 8, 1), KILN_SUCCESS), "%s",
            kilnLastError());
  return ph;
}

static int first_group(const kilnPhases* ph, int rank, int atLeast) {
  for (int i = 0; i < ph->nphases; i++)
    if (ph->phases[i].p2p && ph->phases[i].nops[rank] >= atLeast) return i;
  return -1;
}

Test(phases, checker_finds_calls_in_the_wrong_order) {
  kilnPlan* p = NULL;
  kilnPhases* ph = ring_phases(&p, 4, 4);
  /* Two sends of one group to the same peer, swapped: the peer's receives take them crossed. */
  int i = -1, r = -1;
  for (int q = 0; q < ph->nranks && i < 0; q++)
    for (int j = 0; j < ph->nphases && i < 0; j++)
      if (ph->phases[j].p2p && ph->phases[j].nops[q] >= 2) {
        kilnP2pOp* v = ph->phases[j].ops[q];
        for (int a = 0; a + 1 < ph->phases[j].nops[q] && i < 0; a++)
          if (v[a].send && v[a + 1].send && v[a].peer == v[a + 1].peer && v[a].buf == v[a + 1].buf &&
              v[a].off != v[a + 1].off) {
            const kilnP2pOp t = v[a];
            v[a] = v[a + 1];
            v[a + 1] = t;
            i = j;
            r = q;
          }
      }
  if (i < 0) {
    /* No group holds two such sends: take a receive's chunk instead. */
    i = first_group(ph, 0, 1);
    r = 0;
    for (int a = 0; a < ph->phases[i].nops[0]; a++)
      if (!ph->phases[i].ops[0][a].send) ph->phases[i].ops[0][a].off ^= 1;
  }
  cr_assert(eq(int, kilnPhasesCheck(ph, p, odd_count(ph), false, KILN_SUM, 8, 1), KILN_ERR_VERIFY),
            "phase %d rank %d", i, r);
  kilnPhasesFree(ph);
  kilnPlanFree(p);
}

Test(phases, checker_finds_a_missing_receive) {
  kilnPlan* p = NULL;
  kilnPhases* ph = ring_phases(&p, 4, 2);
  int i = -1, r = -1;
  for (int j = 0; j < ph->nphases && i < 0; j++)
    for (int q = 0; ph->phases[j].p2p && q < ph->nranks && i < 0; q++)
      for (int a = 0; a < ph->phases[j].nops[q]; a++)
        if (!ph->phases[j].ops[q][a].send) {
          i = j;
          r = q;
        }
  cr_assert(ge(int, i, 0), "no rank receives through NCCL");
  /* Rank r's group loses its receives: the peer's send never completes. */
  int n = ph->phases[i].nops[r], w = 0;
  for (int a = 0; a < n; a++)
    if (ph->phases[i].ops[r][a].send) ph->phases[i].ops[r][w++] = ph->phases[i].ops[r][a];
  ph->phases[i].nops[r] = w;
  cr_assert(eq(int, kilnPhasesCheck(ph, p, odd_count(ph), false, KILN_SUM, 8, 1), KILN_ERR_VERIFY));
  /* The peer's send then waits for ever, or meets a later receive of another size. */
  cr_assert(contains(kilnLastError(), "deadlock") || contains(kilnLastError(), "never") ||
                contains(kilnLastError(), "whose receive"),
            "%s", kilnLastError());
  kilnPhasesFree(ph);
  kilnPlanFree(p);
}

Test(phases, checker_finds_a_wrong_size) {
  kilnPlan* p = NULL;
  kilnPhases* ph = ring_phases(&p, 2, 2);
  const int i = first_group(ph, 0, 1);
  /* One end of a message believes its chunk sits at another position: with 17 elements in chunks
   * of 9 and 8 the two ends then disagree on the count. */
  const kilnP2pOp* o = &ph->phases[i].ops[0][0];
  int* cls = (int*)o->cls;
  cls[0] = cls[0] == ph->k - 1 ? 0 : ph->k - 1;
  const kilnResult_t r = kilnPhasesCheck(ph, p, odd_count(ph), false, KILN_SUM, 8, 1);
  cr_assert(eq(int, r, KILN_ERR_VERIFY));
  kilnPhasesFree(ph);
  kilnPlanFree(p);
}

Test(phases, checker_finds_a_group_that_reads_what_it_writes) {
  kilnPlan* p = NULL;
  kilnPhases* ph = ring_phases(&p, 2, 2);
  /* A group whose send reads what its receive writes. */
  for (int i = 0; i < ph->nphases; i++) {
    if (!ph->phases[i].p2p || ph->phases[i].nops[0] < 2) continue;
    kilnP2pOp* v = ph->phases[i].ops[0];
    int s = -1, r = -1;
    for (int a = 0; a < ph->phases[i].nops[0]; a++) *(v[a].send ? &s : &r) = a;
    if (s < 0 || r < 0) continue;
    v[s].buf = v[r].buf;
    v[s].off = v[r].off;
    v[s].cls = v[r].cls;
    cr_assert(eq(int, kilnPhasesCheck(ph, p, 16, false, KILN_SUM, 8, 1), KILN_ERR_VERIFY));
    cr_assert(contains(kilnLastError(), "same elements"), "%s", kilnLastError());
    kilnPhasesFree(ph);
    kilnPlanFree(p);
    return;
  }
  cr_assert(false, "no group of rank 0 holds a send and a receive");
}

/* ---- the plan's nodes: the nnodes attribute, kiln classic --nodes, kiln verify --nodes ---- */

static const char* const two_node_plan =
    "<algo name=\"x\" proto=\"Simple\" nchannels=\"1\" nchunksperloop=\"2\" ngpus=\"2\" nnodes=\"%d\" "
    "coll=\"allgather\" inplace=\"0\" outofplace=\"1\">"
    "<gpu id=\"0\" i_chunks=\"1\" o_chunks=\"2\" s_chunks=\"0\"><tb id=\"0\" send=\"1\" recv=\"1\" "
    "chan=\"0\">"
    "<step s=\"0\" type=\"s\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"0\" cnt=\"1\" depid=\"-1\" "
    "deps=\"-1\" hasdep=\"0\"/>"
    "<step s=\"1\" type=\"r\" srcbuf=\"o\" srcoff=\"1\" dstbuf=\"o\" dstoff=\"1\" cnt=\"1\" depid=\"-1\" "
    "deps=\"-1\" hasdep=\"0\"/>"
    "</tb><tb id=\"1\" send=\"-1\" recv=\"-1\" chan=\"0\">"
    "<step s=\"0\" type=\"cpy\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"0\" cnt=\"1\" depid=\"-1\" "
    "deps=\"-1\" hasdep=\"0\"/>"
    "</tb></gpu>"
    "<gpu id=\"1\" i_chunks=\"1\" o_chunks=\"2\" s_chunks=\"0\"><tb id=\"0\" send=\"0\" recv=\"0\" "
    "chan=\"0\">"
    "<step s=\"0\" type=\"s\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"1\" cnt=\"1\" depid=\"-1\" "
    "deps=\"-1\" hasdep=\"0\"/>"
    "<step s=\"1\" type=\"r\" srcbuf=\"o\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"0\" cnt=\"1\" depid=\"-1\" "
    "deps=\"-1\" hasdep=\"0\"/>"
    "</tb><tb id=\"1\" send=\"-1\" recv=\"-1\" chan=\"0\">"
    "<step s=\"0\" type=\"cpy\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"1\" cnt=\"1\" depid=\"-1\" "
    "deps=\"-1\" hasdep=\"0\"/>"
    "</tb></gpu></algo>";

Test(phases, plan_file_names_its_nodes) {
  char xml[4096];
  snprintf(xml, sizeof xml, two_node_plan, 2);
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnPlanReadMemory(xml, strlen(xml), "two.xml", &p), KILN_SUCCESS), "%s",
            kilnLastError());
  cr_assert(eq(int, p->nnodes, 2));
  char* back = NULL;
  cr_assert(eq(int, kilnPlanWriteMemory(p, &back), KILN_SUCCESS));
  cr_assert(contains(back, "nnodes=\"2\""), "%s", back);
  free(back);
  /* Not said: 0, and written without it. */
  p->nnodes = 0;
  cr_assert(eq(int, kilnPlanWriteMemory(p, &back), KILN_SUCCESS));
  cr_assert(not(contains(back, "nnodes")), "%s", back);
  free(back);
  kilnPlanFree(p);
  /* A count that does not divide the ranks, or none at all. */
  snprintf(xml, sizeof xml, two_node_plan, 3);
  cr_assert(eq(int, kilnPlanReadMemory(xml, strlen(xml), "three.xml", &p), KILN_ERR_PARSE));
  cr_assert(contains(kilnLastError(), "three.xml") && contains(kilnLastError(), "nnodes"), "%s",
            kilnLastError());
  snprintf(xml, sizeof xml, two_node_plan, 0);
  cr_assert(eq(int, kilnPlanReadMemory(xml, strlen(xml), "zero.xml", &p), KILN_ERR_PARSE));
}

Test(phases, cli_classic_names_nodes_and_verify_cuts_them) {
  char dir[64], out[8192];
  make_tmpdir(dir, sizeof dir);
  if (expect_kiln(out, sizeof out, 0, NULL, "classic ring --coll allreduce --ranks 4 --nodes 2 -o %s/r.xml",
                  dir) < 0)
    cr_skip_test("kiln not built");
  kilnPlan* p = NULL;
  char path[128];
  snprintf(path, sizeof path, "%s/r.xml", dir);
  cr_assert(eq(int, kilnPlanReadFile(path, &p), KILN_SUCCESS), "%s", kilnLastError());
  cr_assert(eq(int, p->nnodes, 2));
  kilnPlanFree(p);
  expect_kiln(out, sizeof out, 0, "cut for 2 nodes", "verify %s", path);
  expect_kiln(out, sizeof out, 0, "cut for 4 nodes", "verify --nodes 4 %s", path);
  expect_kiln(out, sizeof out, 1, "do not split into 3 nodes", "verify --nodes 3 %s", path);
  expect_kiln(out, sizeof out, 2, "--nodes", "verify --nodes x %s", path);
  expect_kiln(out, sizeof out, 2, "does not divide", "classic ring --coll allreduce --ranks 4 --nodes 3");
  /* A plan of memory steps (puts into the peers' buffers) verifies on one node, not across two. */
  expect_kiln(out, sizeof out, 0, NULL, "classic oneshot --coll allreduce --ranks 4 -o %s/o.xml", dir);
  expect_kiln(out, sizeof out, 0, "OK", "verify %s/o.xml", dir);
  expect_kiln(out, sizeof out, 1, "memory steps need load/store", "verify --nodes 2 %s/o.xml", dir);
  rm_tree(dir);
}
