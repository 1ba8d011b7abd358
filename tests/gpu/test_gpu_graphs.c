/*
 * GPU suite of CUDA graphs: plan calls and symmetric calls captured and replayed on fresh data,
 * scratch that grows before or inside a capture, 8 ranks sharing the GPUs. A test that needs more GPUs than are visible skips; the binary prints "skipped: no GPU" and
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

/* One symmetric call captured per rank (each algorithm in turn, as LL lines and as staged data
 * with flags), replayed on new data: the kernels advance their sequence number on the GPU, so
 * replays alternate the staging halves with no host help. */
Test(gpu_graphs, sym_graph_replays, .init = gpu_init, .timeout = 600) {
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
 * H200, allgather 512 KiB in graphs of 20 calls, times out that way), so kilnCommCreateShared
 * launches without it. Each graph replayed on fresh data, checked. */
Test(gpu_graphs, sym_graphs_8ranks_shared, .init = gpu_init_shared, .timeout = 600) {
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

/* The loaded plan's call on c (a sum) captured in a CUDA graph per rank (c's buffers as they are). */
static void capture_plan_call(const loaded* l, const world* w, const call* c, cudaGraphExec_t* ge) {
  for (int r = 0; r < w->n; r++) {
    capture_begin(w, r);
    kilnResult_t res = kilnRun(l->ex[r], c->sendp[r], c->recvp[r], c->count, c->dt, KILN_SUM, w->st[r]);
    cr_assert(eq(int, res, KILN_SUCCESS), "%s", kilnLastError());
    capture_end(w, r, &ge[r]);
  }
}

/* One call captured per rank, replayed 1000 times on new data each time. */
Test(gpu_graphs, graph_replays, .init = gpu_init, .timeout = 600) {
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
Test(gpu_graphs, graph_replays_after_scratch_growth, .init = gpu_init, .timeout = 300) {
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
      cr_assert(eq(sz, bad, 0),
                "rank %d: %zu bytes of a buffer allocated after the growth changed while the "
                "graph replayed: it got the freed scratch",
                r, bad);
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
Test(gpu_graphs, scratch_grows_inside_a_capture, .init = gpu_init_shared, .timeout = 300) {
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

GPU_SUITE_HOOK("test_gpu_graphs")
