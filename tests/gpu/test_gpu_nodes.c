/*
 * Plans across nodes on the GPU (host/internode.c): communicators whose ranks form several nodes
 * run a plan cut into phases, kernels within a node and NCCL's point-to-point calls between nodes.
 * Every data type and op against the CPU reference, fresh random data, counts that divide into
 * the plan's chunks and counts that do not.
 *
 * - phases_on_one_gpu: ranks sharing one GPU (kilnCommCreateShared with kilnCommConfig.nodes; the
 *   steps between nodes go as copies between the ranks' buffers, in the order NCCL would match
 *   them): the kernel phases exact. Needs 1 GPU. synthesized_plans_on_one_gpu: the same for
 *   plans synthesized for 2 nodes of 2 and of 4 GPUs (and those under plans/ that name nodes).
 * - emulated_nodes_one_process: every rank in one process on a GPU each, NCCL communicators split
 *   into nodes (2 GPUs: 2 nodes of 1; 4: 2 of 2 and 4 of 1), calls in kiln groups, eager and in
 *   CUDA graphs. Needs 2 or more GPUs. With NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 in the
 *   environment NCCL carries the steps between nodes over its network transport (sockets).
 * - emulated_nodes_process_per_gpu: the same with a process per rank. Needs 2 or more GPUs.
 * - a_peer_of_another_node_that_never_comes: the survivor's call is stopped by kilnCommAbort and
 *   ncclCommAbort (nothing hangs). Needs 2 GPUs.
 * Every test skips (exit 0) where the GPUs are too few.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpu_common.h"
#include "kiln/plan.h"
#ifdef KILN_HAVE_SYNTH
#include "kiln/sketch.h"
#include "kiln/synth.h"
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
#define NPLANS (sizeof kPlans / sizeof kPlans[0])

/* A classic plan of n ranks that names `nodes` nodes. */
static kilnPlan* classic(const planCase* pc, int n, int nodes, bool inplace) {
  kilnClassicOptions o = KILN_CLASSIC_OPTIONS_INIT;
  o.chunks = 2;
  o.inplace = inplace;
  kilnPlan* p = NULL;
  if (kilnClassicPlan(pc->algo, pc->coll, n, &o, &p) != KILN_SUCCESS) return NULL;
  p->nnodes = nodes;
  return p;
}

/* Runs plan on every rank of w in one kiln group per call (the copies or NCCL groups between
 * nodes need every rank's call together when one thread drives them), every data type and op at
 * each count, and checks every rank's result. */
static void check_all(const world* w, const kilnPlan* plan, bool inplace, const size_t* counts,
                      size_t ncounts, uint64_t* rng) {
  kilnExec_t ex[GPU_MAX] = {0};
  for (int r = 0; r < w->n; r++)
    cr_assert(eq(int, kilnPlanLoad(w->kc[r], plan, &ex[r]), KILN_SUCCESS), "plan %s rank %d: %s", plan->name,
              r, kilnLastError());
  const bool reduces = gpu_reduces(plan->coll);
  for (size_t ci = 0; ci < ncounts; ci++)
    for (int dt = 0; dt < ALL_DTYPES; dt++) {
      call c;
      cr_assert(call_alloc(&c, w, plan->coll, counts[ci], (kilnDataType_t)dt));
      for (int op = 0; op < (reduces ? KILN_NUM_REDOPS : 1); op++) {
        call_prepare(&c, w, (kilnRedOp_t)op, inplace, rng);
        cr_assert(eq(int, kilnGroupStart(), KILN_SUCCESS));
        for (int r = 0; r < w->n; r++)
          cr_assert(
              eq(int, kilnRun(ex[r], c.sendp[r], c.recvp[r], c.count, c.dt, c.op, w->st[r]), KILN_SUCCESS),
              "%s rank %d: %s", plan->name, r, kilnLastError());
        cr_assert(eq(int, kilnGroupEnd(), KILN_SUCCESS), "%s: %s", plan->name, kilnLastError());
        char msg[512];
        cr_assert(call_check(&c, w, msg, sizeof msg), "plan %s on %d nodes, %zu %s %s%s: %s (seed %llu)",
                  plan->name, kilnCommNodes(w->kc[0]), c.count, kilnDataTypeName(c.dt), kilnRedOpName(c.op),
                  inplace ? " in place" : "", msg, (unsigned long long)g_seed);
      }
      call_free(&c, w);
    }
  for (int r = 0; r < w->n; r++) {
    kilnResult_t ae = KILN_SUCCESS;
    kilnCommGetAsyncError(w->kc[r], &ae);
    cr_assert(eq(int, ae, KILN_SUCCESS), "rank %d: %s", r, kilnLastError());
    kilnExecFree(ex[r]);
  }
}

/* Counts for a plan of k chunks per block: one element, a count that leaves the last chunks
 * short, one that divides. */
static void counts_for(const kilnPlan* p, size_t* counts) {
  const size_t k = chunks_per_block(p);
  counts[0] = 1;
  counts[1] = k * 997 + (k > 1 ? k - 1 : 0);
  counts[2] = k * 4096;
}

/* ---- ranks sharing one GPU ---- */

static const int kSplits[][2] = {{2, 2}, {2, 1}, {4, 1}}; /* nodes x ranks per node */

Test(gpu_nodes, phases_on_one_gpu, .init = gpu_init_shared, .timeout = 1800) {
  uint64_t rng = g_seed;
  for (size_t s = 0; s < sizeof kSplits / sizeof kSplits[0]; s++) {
    const int nodes = kSplits[s][0], n = nodes * kSplits[s][1];
    kilnCommConfig cfg = KILN_COMM_CONFIG_INITIALIZER;
    cfg.nodes = nodes;
    world w;
    cr_assert(world_init_shared(&w, n, 1, NULL, &cfg));
    cr_assert(eq(int, kilnCommNodes(w.kc[0]), nodes));
    for (size_t i = 0; i < NPLANS; i++)
      for (int inplace = 0; inplace < 2; inplace++) {
        if (inplace && kPlans[i].coll == KILN_COLL_ALLTOALL) continue;
        kilnPlan* p = classic(&kPlans[i], n, nodes, inplace);
        cr_assert(p != NULL, "%s", kilnLastError());
        size_t counts[3];
        counts_for(p, counts);
        check_all(&w, p, inplace, counts, 3, &rng);
        kilnPlanFree(p);
      }
    world_fini(&w);
  }
}

/* The multi-node plans under plans/ (synthesized for nodes x GPUs), scaled down to at most 8
 * ranks, and those the synthesizer makes here for switch2 and switch4 nodes, two of each, joined
 * GPU to GPU (TACCL's relays within a node, one step between nodes), every collective: all of
 * them on one GPU. */
static int synthesized(kilnPlan** out, int max) {
  int n = 0;
#ifdef KILN_HAVE_SYNTH
  static const kilnColl_t colls[] = {KILN_COLL_ALLGATHER, KILN_COLL_REDUCESCATTER, KILN_COLL_ALLREDUCE,
                                     KILN_COLL_ALLTOALL};
  static const char* const topos[] = {"switch2", "switch4"};
  for (int ti = 0; ti < 2; ti++)
    for (int ci = 0; ci < 4 && n < max; ci++) {
      kilnTopology* t = NULL;
      kilnSketch* sk = NULL;
      char xml[512], gpus[32] = "";
      cr_assert(eq(int, kilnTopologyBuiltin(topos[ti], 2, &t), KILN_SUCCESS), "%s", kilnLastError());
      for (int g = 0; g < t->gpus_per_node; g++)
        snprintf(gpus + strlen(gpus), sizeof gpus - strlen(gpus), "%s%d", g ? " " : "", g);
      snprintf(xml, sizeof xml,
               "<sketch name=\"%s-direct\"><intranode strategy=\"switch\"><switch gpus=\"%s\" "
               "policy=\"uc-max\"/></intranode><internode strategy=\"direct\"/></sketch>",
               topos[ti], gpus);
      cr_assert(eq(int, kilnSketchReadMemory(xml, strlen(xml), "sketch.xml", &sk), KILN_SUCCESS), "%s",
                kilnLastError());
      kilnSynthOptions o = KILN_SYNTH_OPTIONS_INIT;
      o.time_limit_s = 5;
      o.stall_s = 0.3;
      o.max_tbs = gpu_rank_sms(2 * t->gpus_per_node); /* its ranks share one GPU */
      kilnPlan* p = NULL;
      cr_assert(eq(int, kilnSynthesize(t, sk, colls[ci], &o, &p, NULL), KILN_SUCCESS), "%s", kilnLastError());
      p->nnodes = 2;
      out[n++] = p;
      kilnSketchFree(sk);
      kilnTopologyFree(t);
    }
#endif
  char dirs[2][1024];
  snprintf(dirs[0], sizeof dirs[0], "%s", gpu_plans_dir());
  snprintf(dirs[1], sizeof dirs[1], "%s/multinode", gpu_plans_dir());
  for (size_t d = 0; d < sizeof dirs / sizeof dirs[0]; d++) {
    DIR* dir = opendir(dirs[d]);
    if (!dir) continue;
    struct dirent* e;
    while ((e = readdir(dir)) != NULL && n < max) {
      const size_t len = strlen(e->d_name);
      if (len < 5 || strcmp(e->d_name + len - 4, ".xml") != 0) continue;
      char path[4096];
      snprintf(path, sizeof path, "%s/%s", dirs[d], e->d_name);
      kilnPlan* p = NULL;
      if (kilnPlanReadFile(path, &p) != KILN_SUCCESS) continue;
      if (p->nnodes > 1 && p->ngpus <= 8)
        out[n++] = p;
      else
        kilnPlanFree(p);
    }
    closedir(dir);
  }
  return n;
}

Test(gpu_nodes, synthesized_plans_on_one_gpu, .init = gpu_init_shared, .timeout = 1800) {
  kilnPlan* plans[64];
  const int np = synthesized(plans, 64);
  if (np == 0)
    cr_skip_test(
        "skipped: no synthesizer in this build and no plan of several nodes and at most 8 ranks under "
        "plans/");
  uint64_t rng = g_seed;
  for (int i = 0; i < np; i++) {
    kilnCommConfig cfg = KILN_COMM_CONFIG_INITIALIZER;
    cfg.nodes = plans[i]->nnodes;
    world w;
    cr_assert(world_init_shared(&w, plans[i]->ngpus, 1, NULL, &cfg));
    size_t counts[3];
    counts_for(plans[i], counts);
    for (int inplace = 0; inplace < 2; inplace++)
      if (kilnPlanServes(plans[i], inplace) && !(inplace && plans[i]->coll == KILN_COLL_ALLTOALL))
        check_all(&w, plans[i], inplace, counts, 3, &rng);
    world_fini(&w);
    fprintf(stderr, "  %s: %d ranks on %d nodes, exact\n", plans[i]->name, plans[i]->ngpus, plans[i]->nnodes);
    kilnPlanFree(plans[i]);
  }
}

/* ---- emulated nodes: a GPU per rank, NCCL between nodes ---- */

/* 2 GPUs: 2 nodes of 1; 4 or more: 4 ranks as 2 nodes of 2 and as 4 of 1. */
static int emulated_splits(int (*splits)[2]) {
  if (g_ngpus >= 4) {
    splits[0][0] = 2, splits[0][1] = 2;
    splits[1][0] = 4, splits[1][1] = 1;
    return 2;
  }
  splits[0][0] = 2, splits[0][1] = 1;
  return 1;
}

Test(gpu_nodes, emulated_nodes_one_process, .init = gpu_init, .timeout = 1800) {
  uint64_t rng = g_seed;
  int splits[2][2];
  const int ns = emulated_splits(splits);
  for (int s = 0; s < ns; s++) {
    const int nodes = splits[s][0], n = nodes * splits[s][1];
    kilnCommConfig cfg = KILN_COMM_CONFIG_INITIALIZER;
    cfg.nodes = nodes;
    world w;
    cr_assert(world_init(&w, n, &cfg));
    cr_assert(eq(int, kilnCommNodes(w.kc[0]), nodes));
    fprintf(stderr, "  %d ranks as %d nodes of %d\n", n, nodes, n / nodes);
    for (size_t i = 0; i < NPLANS; i++)
      for (int inplace = 0; inplace < 2; inplace++) {
        if (inplace && kPlans[i].coll == KILN_COLL_ALLTOALL) continue;
        kilnPlan* p = classic(&kPlans[i], n, nodes, inplace);
        cr_assert(p != NULL, "%s", kilnLastError());
        size_t counts[3];
        counts_for(p, counts);
        check_all(&w, p, inplace, counts, 3, &rng);
        kilnPlanFree(p);
      }
    world_fini(&w);
  }
}

/* One call of every rank captured in a CUDA graph per rank (the kiln group's end issues into the
 * captures), replayed 3 times on fresh data: exact each time. */
Test(gpu_nodes, emulated_nodes_in_cuda_graphs, .init = gpu_init, .timeout = 600) {
  uint64_t rng = g_seed;
  int splits[2][2];
  emulated_splits(splits);
  const int nodes = splits[0][0], n = nodes * splits[0][1];
  kilnCommConfig cfg = KILN_COMM_CONFIG_INITIALIZER;
  cfg.nodes = nodes;
  world w;
  cr_assert(world_init(&w, n, &cfg));
  for (size_t i = 0; i < NPLANS; i++) {
    kilnPlan* p = classic(&kPlans[i], n, nodes, false);
    kilnExec_t ex[GPU_MAX];
    for (int r = 0; r < n; r++)
      cr_assert(eq(int, kilnPlanLoad(w.kc[r], p, &ex[r]), KILN_SUCCESS), "%s", kilnLastError());
    call c;
    cr_assert(call_alloc(&c, &w, p->coll, 12345, KILN_FLOAT32));
    call_prepare(&c, &w, KILN_SUM, false, &rng);
    /* A first eager call grows the scratch outside the capture. */
    cr_assert(eq(int, kilnGroupStart(), KILN_SUCCESS));
    for (int r = 0; r < n; r++) kilnRun(ex[r], c.sendp[r], c.recvp[r], c.count, c.dt, KILN_SUM, w.st[r]);
    cr_assert(eq(int, kilnGroupEnd(), KILN_SUCCESS), "%s", kilnLastError());
    cudaGraphExec_t ge[GPU_MAX];
    capture_begin_all(&w);
    cr_assert(eq(int, kilnGroupStart(), KILN_SUCCESS));
    for (int r = 0; r < n; r++) kilnRun(ex[r], c.sendp[r], c.recvp[r], c.count, c.dt, KILN_SUM, w.st[r]);
    cr_assert(eq(int, kilnGroupEnd(), KILN_SUCCESS), "%s", kilnLastError());
    capture_end_all(&w, ge);
    char when[128];
    snprintf(when, sizeof when, " (%s in graphs)", p->name);
    replay_check(&w, &c, ge, 3, when, &rng);
    for (int r = 0; r < n; r++) {
      cudaGraphExecDestroy(ge[r]);
      kilnExecFree(ex[r]);
    }
    call_free(&c, &w);
    kilnPlanFree(p);
  }
  world_fini(&w);
}

/* ---- a process per rank ---- */

typedef struct rankCtx {
  int nodes;
  uint64_t seed;
} rankCtx;

/* The small integers every process draws alike for rank q's input element i. */
static int64_t input_value(uint64_t seed, int q, size_t i, kilnRedOp_t op, bool reduces) {
  uint64_t s = seed ^ ((uint64_t)q << 40) ^ (uint64_t)i * 0x9e3779b97f4a7c15ull;
  const uint64_t x = gpu_rand(&s);
  if (reduces && op == KILN_PROD) return (int64_t[]){1, 2, 1, 1}[x % 4];
  return (int64_t)(x % 3);
}

/* Rank `rank`'s result at output element e (the same rules as gpu_common's reference). */
static double reference(kilnColl_t coll, int n, int rank, size_t count, size_t e, kilnRedOp_t op,
                        kilnDataType_t dt, uint64_t seed) {
  const bool reduces = gpu_reduces(coll);
  if (coll == KILN_COLL_ALLGATHER) return (double)input_value(seed, (int)(e / count), e % count, op, false);
  if (coll == KILN_COLL_ALLTOALL)
    return (double)input_value(seed, (int)(e / count), (size_t)rank * count + e % count, op, false);
  const size_t at = coll == KILN_COLL_REDUCESCATTER ? (size_t)rank * count + e : e;
  double acc = (double)input_value(seed, 0, at, op, reduces);
  for (int q = 1; q < n; q++) {
    const double v = (double)input_value(seed, q, at, op, reduces);
    acc = op == KILN_PROD  ? acc * v
          : op == KILN_MAX ? (v > acc ? v : acc)
          : op == KILN_MIN ? (v < acc ? v : acc)
                           : acc + v;
  }
  if (op == KILN_AVG) acc = dt <= KILN_UINT64 ? (double)((int64_t)acc / n) : acc / n;
  return acc;
}

static int rank_body(int rank, int n, const ncclUniqueId* id, void* arg) {
  const rankCtx* ctx = arg;
  if (cudaSetDevice(rank) != cudaSuccess) return 20;
  ncclComm_t nc;
  if (ncclCommInitRank(&nc, n, *id, rank) != ncclSuccess) return 21;
  kilnCommConfig cfg = KILN_COMM_CONFIG_INITIALIZER;
  cfg.nodes = ctx->nodes;
  kilnComm_t kc = NULL;
  if (kilnCommCreate(nc, &cfg, &kc) != KILN_SUCCESS) {
    fprintf(stderr, "rank %d: %s\n", rank, kilnLastError());
    return 22;
  }
  cudaStream_t st;
  cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
  int rc = 0;
  for (size_t i = 0; i < NPLANS && rc == 0; i++) {
    kilnPlan* p = classic(&kPlans[i], n, ctx->nodes, false);
    kilnExec_t ex = NULL;
    if (!p || kilnPlanLoad(kc, p, &ex) != KILN_SUCCESS) {
      fprintf(stderr, "rank %d: %s\n", rank, kilnLastError());
      rc = 23;
      break;
    }
    const bool reduces = gpu_reduces(p->coll);
    size_t counts[3];
    counts_for(p, counts);
    for (int ci = 0; ci < 3 && rc == 0; ci++)
      for (int dt = 0; dt < ALL_DTYPES && rc == 0; dt++)
        for (int op = 0; op < (reduces ? KILN_NUM_REDOPS : 1) && rc == 0; op++) {
          const size_t count = counts[ci], es = kilnDataTypeSize((kilnDataType_t)dt);
          size_t inElems, outElems;
          call_elems(p->coll, n, count, &inElems, &outElems);
          char* hin = malloc(inElems * es);
          char* hout = malloc(outElems * es);
          void *din = NULL, *dout = NULL;
          cudaMalloc(&din, inElems * es);
          cudaMalloc(&dout, outElems * es);
          for (size_t e = 0; e < inElems; e++)
            gpu_encode((kilnDataType_t)dt, hin, e,
                       (double)input_value(ctx->seed, rank, e, (kilnRedOp_t)op, reduces));
          cudaMemcpy(din, hin, inElems * es, cudaMemcpyHostToDevice);
          if (kilnRun(ex, din, dout, count, (kilnDataType_t)dt, (kilnRedOp_t)op, st) != KILN_SUCCESS) {
            fprintf(stderr, "rank %d: %s\n", rank, kilnLastError());
            rc = 24;
          }
          cudaStreamSynchronize(st);
          cudaMemcpy(hout, dout, outElems * es, cudaMemcpyDeviceToHost);
          for (size_t e = 0; e < outElems && rc == 0; e++) {
            const double want =
                reference(p->coll, n, rank, count, e, (kilnRedOp_t)op, (kilnDataType_t)dt, ctx->seed);
            const double got = gpu_decode((kilnDataType_t)dt, hout, e);
            if (got != want) {
              fprintf(stderr, "rank %d: %s %zu %s %s: element %zu is %g, not %g\n", rank, p->name, count,
                      kilnDataTypeName((kilnDataType_t)dt), kilnRedOpName((kilnRedOp_t)op), e, got, want);
              rc = 25;
            }
          }
          cudaFree(din);
          cudaFree(dout);
          free(hin);
          free(hout);
        }
    kilnExecFree(ex);
    kilnPlanFree(p);
  }
  kilnCommDestroy(kc);
  ncclCommDestroy(nc);
  return rc;
}

Test(gpu_nodes, emulated_nodes_process_per_gpu, .init = gpu_init, .timeout = 1800) {
  int splits[2][2];
  const int ns = emulated_splits(splits);
  for (int s = 0; s < ns; s++) {
    rankCtx ctx = {splits[s][0], g_seed};
    char msg[256];
    cr_assert(gpu_fork_ranks(splits[s][0] * splits[s][1], ncclGetUniqueId, rank_body, &ctx, msg, sizeof msg),
              "%s", msg);
  }
}

/* ---- failures ---- */

/* Both ranks make one call (NCCL connects its peers on the first), then rank 1 (node 1) never
 * calls again; rank 0 (node 0) calls an allreduce, which waits in NCCL for it. Rank 0 then aborts
 * kiln's and NCCL's communicators: its stream drains (kiln's kernels leave on the abort word,
 * NCCL's are stopped), and no later call runs. */
static int never_body(int rank, int n, const ncclUniqueId* id, void* arg) {
  (void)arg;
  if (cudaSetDevice(rank) != cudaSuccess) return 20;
  ncclComm_t nc;
  if (ncclCommInitRank(&nc, n, *id, rank) != ncclSuccess) return 21;
  kilnCommConfig cfg = KILN_COMM_CONFIG_INITIALIZER;
  cfg.nodes = 2;
  cfg.timeoutMs = 2000;
  kilnComm_t kc = NULL;
  if (kilnCommCreate(nc, &cfg, &kc) != KILN_SUCCESS) return 22;
  kilnPlan* p = classic(&kPlans[0], n, 2, false);
  kilnExec_t ex = NULL;
  if (!p || kilnPlanLoad(kc, p, &ex) != KILN_SUCCESS) return 23;
  cudaStream_t st;
  cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
  float* d = NULL;
  cudaMalloc((void**)&d, 4096 * sizeof(float));
  cudaMemset(d, 0, 4096 * sizeof(float));
  if (kilnRun(ex, d, d, 4096, KILN_FLOAT32, KILN_SUM, st) != KILN_SUCCESS) return 24;
  if (cudaStreamSynchronize(st) != cudaSuccess) return 28;
  if (rank == 1) {
    sleep(20); /* alive, never calling again, until after rank 0 gave up */
    _exit(0);
  }
  if (kilnRun(ex, d, d, 4096, KILN_FLOAT32, KILN_SUM, st) != KILN_SUCCESS) return 24;
  /* NCCL's error (a peer gone) or kiln's (a peer of this node late), if either comes. */
  for (int i = 0; i < 30 && cudaStreamQuery(st) == cudaErrorNotReady; i++) {
    ncclResult_t ne = ncclSuccess;
    kilnResult_t ke = KILN_SUCCESS;
    ncclCommGetAsyncError(nc, &ne);
    kilnCommGetAsyncError(kc, &ke);
    if (ne != ncclSuccess || ke != KILN_SUCCESS) break;
    usleep(100000);
  }
  if (cudaStreamQuery(st) != cudaErrorNotReady) return 25; /* the call cannot have finished without rank 1 */
  if (kilnCommAbort(kc) != KILN_SUCCESS) return 26;
  ncclCommAbort(nc);
  cudaStreamSynchronize(st); /* returns: nothing waits any more (its status may be an error) */
  if (kilnRun(ex, d, d, 4096, KILN_FLOAT32, KILN_SUM, st) == KILN_SUCCESS) return 27;
  _exit(0); /* the aborted communicators' memory goes with the process */
}

Test(gpu_nodes, a_peer_of_another_node_that_never_comes, .init = gpu_init, .timeout = 120) {
  char msg[256];
  cr_assert(gpu_fork_ranks(2, ncclGetUniqueId, never_body, NULL, msg, sizeof msg), "%s", msg);
}

GPU_SUITE_HOOK("test_gpu_nodes")
