/*
 * Plans with memory steps on the GPU (host/memplan.c, kernels/mem.cuh): every form `kiln classic`
 * writes with them, exact against the CPU reference on fresh random data.
 *
 * - oneshot allreduce and reducescatter, twoshot allreduce, staged allgather and alltoall, in the
 *   Simple, LL, LL12 and LL128 protocols, in place and out of place, every data type and op, at
 *   counts from one element to several slices (the plan areas are kept small, so that large
 *   calls run in iterations that reuse the scratch halves), the calls of a plan back to back
 *   and the plans one after another (each new plan meets its peers first);
 * - the same plans captured in CUDA graphs, each graph replayed on fresh data;
 * - zerocopy allgather and alltoall on buffers in symmetric windows (kilnCommWindowAdd), and their
 *   refusal (KILN_ERR_UNSUPPORTED) on plain buffers; LL12 refused for 8-byte elements.
 * Ranks sharing one GPU (2 and 4 ranks: kilnCommCreateShared) where there is one GPU, a GPU each
 * (2 and 4 GPUs: NCCL communicators) where there are that many. A failure names the plan, the
 * world, the call (collective, type, op, count, form) and the rank and element that differ, and
 * the seed (KILN_TEST_SEED repeats a run). Every test skips (exit 0) without the GPUs it needs.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_common.h"
#include "kiln/plan.h"

/* A form of kiln classic with memory steps. */
typedef struct form {
  const char* algo;
  kilnColl_t coll;
} form;

static const form kForms[] = {
    {"oneshot", KILN_COLL_ALLREDUCE}, {"oneshot", KILN_COLL_REDUCESCATTER}, {"twoshot", KILN_COLL_ALLREDUCE},
    {"staged", KILN_COLL_ALLGATHER},  {"staged", KILN_COLL_ALLTOALL},
};
#define NFORMS (sizeof kForms / sizeof kForms[0])
static const kilnProto_t kProtos[] = {KILN_PROTO_SIMPLE, KILN_PROTO_LL, KILN_PROTO_LL12, KILN_PROTO_LL128};
#define NPROTOS (sizeof kProtos / sizeof kProtos[0])

/* The communicator settings of the suites: small plan areas (symBytes: 256 KiB plain halves and
 * line halves), so that a call of a few hundred thousand elements runs in several iterations. */
static kilnCommConfig small_config(void) {
  kilnCommConfig cfg = KILN_COMM_CONFIG_INITIALIZER;
  cfg.symBytes = 512 << 10;
  cfg.maxChannels = 8;
  cfg.nslots = 2;
  cfg.slotBytes = 64 << 10;
  cfg.timeoutMs = 20000;
  return cfg;
}

/* kiln classic's plan of form f (instances of chunks each; asserted made). */
static kilnPlan* classic(const form* f, int n, kilnProto_t proto, bool inplace, int chunks, int instances) {
  return classic_plan(f->algo, f->coll, n, chunks, instances, proto, inplace);
}

/* One call of the loaded plan on every rank (in a kiln group: a world of NCCL communicators is
 * driven by this one thread), then the check; false where kilnRun refused the call (its error is
 * left for the caller), with every rank refusing alike. */
static bool run_once(const loaded* l, const world* w, call* c, kilnRedOp_t op, bool inplace, uint64_t* rng,
                     const char* where) {
  call_prepare(c, w, op, inplace, rng);
  cr_assert(eq(int, kilnGroupStart(), KILN_SUCCESS));
  int refused = 0;
  kilnResult_t why = KILN_SUCCESS;
  for (int r = 0; r < w->n; r++) {
    const kilnResult_t res = kilnRun(l->ex[r], c->sendp[r], c->recvp[r], c->count, c->dt, c->op, w->st[r]);
    if (res != KILN_SUCCESS) refused++, why = res;
  }
  const kilnResult_t ge = kilnGroupEnd();
  if (refused) {
    cr_assert(eq(int, refused, w->n), "plan %s (%s): %d of %d ranks refused a call", l->plan->name, where,
              refused, w->n);
    cr_assert(eq(int, ge, why));
    return false;
  }
  cr_assert(eq(int, ge, KILN_SUCCESS), "plan %s (%s): %s", l->plan->name, where, kilnLastError());
  char msg[512];
  cr_assert(call_check(c, w, msg, sizeof msg), "plan %s (%s): %s (seed %llu)", l->plan->name, where, msg,
            (unsigned long long)g_seed);
  return true;
}

/* Every data type and op of the plan's collective at `count`; LL12 of 8-byte elements is refused. */
static void sweep_types(const loaded* l, const world* w, size_t count, bool inplace, uint64_t* rng,
                        const char* where) {
  const bool reduces = gpu_reduces(l->plan->coll);
  const bool ll12 = l->plan->proto == KILN_PROTO_LL12;
  for (int dt = 0; dt < ALL_DTYPES; dt++) {
    call c;
    cr_assert(call_alloc(&c, w, l->plan->coll, count, (kilnDataType_t)dt));
    for (int op = 0; op < (reduces ? KILN_NUM_REDOPS : 1); op++) {
      const bool ran = run_once(l, w, &c, (kilnRedOp_t)op, inplace, rng, where);
      const bool wide = kilnDataTypeSize((kilnDataType_t)dt) > 4;
      cr_assert(eq(int, ran, !(ll12 && wide)), "plan %s (%s) %s count %zu: %s", l->plan->name, where,
                kilnDataTypeName((kilnDataType_t)dt), count, ran ? "ran" : kilnLastError());
      if (!ran)
        cr_assert(strstr(kilnLastError(), "LL12 lines hold elements of at most 4 bytes") != NULL, "%s",
                  kilnLastError());
    }
    call_free(&c, w);
  }
}

/* Counts for a plan of k chunks per block: one element, a prime, counts that leave the last chunks
 * short and one that divides, and one of several iterations (the plan areas of small_config). */
static size_t counts_for(const kilnPlan* p, size_t* counts) {
  const size_t k = chunks_per_block(p);
  size_t n = 0;
  counts[n++] = 1;
  counts[n++] = 7;
  counts[n++] = k * 997 + (k > 1 ? k - 1 : 0);
  counts[n++] = k * 4096;
  counts[n++] = k * 200003;
  return n;
}

/* Every form, protocol and in/out-of-place on world w: every data type and op at the small counts,
 * float sum and int8 max at the large one; the plans loaded one after another on the same
 * communicators, each one's calls back to back. */
static void every_form(const world* w, const char* name, int instances) {
  uint64_t rng = g_seed ^ (uint64_t)w->n * 0x9e37u;
  for (size_t f = 0; f < NFORMS; f++)
    for (size_t pi = 0; pi < NPROTOS; pi++)
      for (int inplace = 0; inplace < 2; inplace++) {
        if (inplace && kForms[f].coll == KILN_COLL_ALLTOALL) continue;
        kilnPlan* p = classic(&kForms[f], w->n, kProtos[pi], inplace, 1, instances);
        loaded l;
        load_verified(&l, w, p);
        char where[160];
        size_t counts[8];
        const size_t nc = counts_for(p, counts);
        for (size_t ci = 0; ci < nc; ci++) {
          snprintf(where, sizeof where, "%s, %s", name, inplace ? "in place" : "out of place");
          if (counts[ci] < 100000) {
            sweep_types(&l, w, counts[ci], inplace, &rng, where);
            continue;
          }
          static const kilnDataType_t bigTypes[] = {KILN_FLOAT32, KILN_INT8};
          for (size_t ti = 0; ti < 2; ti++) {
            call c;
            cr_assert(call_alloc(&c, w, p->coll, counts[ci], bigTypes[ti]));
            run_once(&l, w, &c, ti ? KILN_MAX : KILN_SUM, inplace, &rng, where);
            call_free(&c, w);
          }
        }
        assert_no_async_error_at(w, p->name);
        unload(&l, w);
      }
}

/* Each plan's calls captured in a CUDA graph per rank (3 calls), the graphs replayed 3 times on
 * fresh data (the inputs written before each replay, on the stream), each replay checked. */
static void graphs(const world* w, const char* name) {
  uint64_t rng = g_seed ^ 0x6a09u;
  for (size_t f = 0; f < NFORMS; f++)
    for (size_t pi = 0; pi < NPROTOS; pi++) {
      kilnPlan* p = classic(&kForms[f], w->n, kProtos[pi], false, 1, 2);
      loaded l;
      load_verified(&l, w, p);
      call c;
      cr_assert(call_alloc(&c, w, p->coll, chunks_per_block(p) * 3001, KILN_INT32));
      call_prepare(&c, w, KILN_SUM, false, &rng);
      cudaGraphExec_t ge[GPU_MAX];
      for (int r = 0; r < w->n; r++) {
        cudaSetDevice(w->dev[r]);
        cr_assert(eq(int, cudaStreamSynchronize(w->st[r]), cudaSuccess));
      }
      for (int r = 0; r < w->n; r++) {
        cudaSetDevice(w->dev[r]);
        cr_assert(eq(int, cudaStreamBeginCapture(w->st[r], cudaStreamCaptureModeRelaxed), cudaSuccess));
      }
      for (int k = 0; k < 3; k++) {
        cr_assert(eq(int, kilnGroupStart(), KILN_SUCCESS));
        for (int r = 0; r < w->n; r++)
          cr_assert(
              eq(int, kilnRun(l.ex[r], c.sendp[r], c.recvp[r], c.count, c.dt, c.op, w->st[r]), KILN_SUCCESS),
              "plan %s rank %d: %s", p->name, r, kilnLastError());
        cr_assert(eq(int, kilnGroupEnd(), KILN_SUCCESS), "%s", kilnLastError());
      }
      capture_end_all(w, ge);
      char when[160];
      snprintf(when, sizeof when, " of plan %s (%s)", p->name, name);
      replay_check(w, &c, ge, 3, when, &rng);
      for (int r = 0; r < w->n; r++) cudaGraphExecDestroy(ge[r]);
      assert_no_async_error_at(w, p->name);
      call_free(&c, w);
      unload(&l, w);
    }
}

/* ---- ranks sharing one GPU ---- */

static void shared_world(world* w, int n) {
  kilnCommConfig cfg = small_config();
  cr_assert(world_init_shared(w, n, 1, NULL, &cfg), "%d ranks on one GPU", n);
}

/* every_form with n ranks sharing the GPU, each plan in `instances` instances. */
static void every_form_shared(int n, int instances) {
  world w;
  shared_world(&w, n);
  char name[32];
  snprintf(name, sizeof name, "%d ranks on one GPU", n);
  every_form(&w, name, instances);
  world_fini(&w);
}

Test(gpu_memsteps, every_form_two_ranks_on_one_gpu, .init = gpu_init_shared, .timeout = 3600) {
  every_form_shared(2, 2);
}
Test(gpu_memsteps, every_form_four_ranks_on_one_gpu, .init = gpu_init_shared, .timeout = 3600) {
  every_form_shared(4, 2);
}
/* 8 ranks where there are fewer GPUs: the forms' 8-rank code (7 peers' reads, puts and signals)
 * runs as it will on 8 GPUs, the peers on one GPU. */
Test(gpu_memsteps, every_form_eight_ranks_on_one_gpu, .init = gpu_init_shared, .timeout = 3600) {
  every_form_shared(8, 1);
}

Test(gpu_memsteps, graphs_on_one_gpu, .init = gpu_init_shared, .timeout = 1800) {
  for (int n = 2; n <= 4; n += 2) {
    world w;
    shared_world(&w, n);
    graphs(&w, n == 2 ? "2 ranks on one GPU" : "4 ranks on one GPU");
    world_fini(&w);
  }
}

/* Chunks of several chunks per piece and one instance, then two plans alternating call by call
 * on the same communicators (each call of the other plan meets the peers first): every result
 * exact. */
Test(gpu_memsteps, plans_alternating_call_by_call, .init = gpu_init_shared, .timeout = 1800) {
  world w;
  shared_world(&w, 4);
  uint64_t rng = g_seed ^ 0xa17e;
  loaded a, b;
  load_verified(&a, &w, classic(&kForms[0], 4, KILN_PROTO_LL, false, 2, 1));
  load_verified(&b, &w, classic(&kForms[2], 4, KILN_PROTO_SIMPLE, false, 1, 3));
  for (int k = 0; k < 12; k++) {
    const loaded* l = k % 2 ? &b : &a;
    call c;
    cr_assert(call_alloc(&c, &w, KILN_COLL_ALLREDUCE, k % 3 == 0 ? 300007 : 1000 + 17 * k, KILN_FLOAT32));
    run_once(l, &w, &c, k % 4 == 3 ? KILN_MAX : KILN_SUM, false, &rng, "4 ranks on one GPU, alternating");
    call_free(&c, &w);
  }
  assert_no_async_error_at(&w, "alternating plans");
  unload(&a, &w);
  unload(&b, &w);
  world_fini(&w);
}

/* ---- a GPU each ---- */

static bool gpus_world(world* w, int n) {
  if (g_ngpus < n) return false;
  kilnCommConfig cfg = small_config();
  cr_assert(world_init(w, n, &cfg), "%d GPUs", n);
  return true;
}

Test(gpu_memsteps, every_form_on_gpus, .init = gpu_init_shared, .timeout = 3600) {
  int ran = 0;
  for (int n = 2; n <= 4; n += 2) {
    world w;
    if (!gpus_world(&w, n)) continue;
    every_form(&w, n == 2 ? "2 GPUs" : "4 GPUs", 2);
    graphs(&w, n == 2 ? "2 GPUs" : "4 GPUs");
    world_fini(&w);
    ran++;
  }
  if (!ran) cr_skip_test("skipped: %d GPU visible, 2 needed", g_ngpus);
}

/* zerocopy puts straight into the peers' outputs: on buffers in symmetric windows every rank
 * added, exact; on plain buffers refused by every rank (KILN_ERR_UNSUPPORTED), nothing run. */
Test(gpu_memsteps, zerocopy_on_windows, .init = gpu_init_shared, .timeout = 1800) {
  int ran = 0;
  for (int n = 2; n <= 4; n += 2) {
    world w;
    if (!gpus_world(&w, n)) continue;
    ran++;
    const size_t poolBytes = 64u << 20, half = poolBytes / 2;
    char* pool[GPU_MAX];
    ncclWindow_t win[GPU_MAX];
    window_pools(&w, poolBytes, pool, win);
    char* sendAt[GPU_MAX];
    char* recvAt[GPU_MAX];
    for (int r = 0; r < n; r++) sendAt[r] = pool[r], recvAt[r] = pool[r] + half;
    uint64_t rng = g_seed ^ 0x2e40;
    static const form zc[] = {{"zerocopy", KILN_COLL_ALLGATHER}, {"zerocopy", KILN_COLL_ALLTOALL}};
    for (size_t f = 0; f < 2; f++)
      for (int inplace = 0; inplace < 2; inplace++) {
        if (inplace && zc[f].coll == KILN_COLL_ALLTOALL) continue;
        loaded l;
        load_verified(&l, &w, classic(&zc[f], n, KILN_PROTO_SIMPLE, inplace, 1, 2));
        const char* where = n == 2 ? "2 GPUs, windows" : "4 GPUs, windows";
        static const size_t counts[] = {1, 7, 2 * 997 + 1, 2 * 300001};
        for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++)
          for (int dt = 0; dt < ALL_DTYPES; dt++) {
            if (ci == 3 && dt != KILN_FLOAT32) continue;
            call c;
            cr_assert(call_alloc_at(&c, &w, zc[f].coll, counts[ci], (kilnDataType_t)dt, sendAt, recvAt));
            cr_assert(run_once(&l, &w, &c, KILN_SUM, inplace, &rng, where), "plan %s (%s): refused: %s",
                      l.plan->name, where, kilnLastError());
            call_free(&c, &w);
          }
        /* Plain buffers: the peers' outputs are out of reach. */
        call c;
        cr_assert(call_alloc(&c, &w, zc[f].coll, 1000, KILN_FLOAT32));
        cr_assert(not(run_once(&l, &w, &c, KILN_SUM, inplace, &rng, "plain buffers")));
        cr_assert(strstr(kilnLastError(), "is not in a symmetric window added to the communicator") != NULL,
                  "%s", kilnLastError());
        call_free(&c, &w);
        assert_no_async_error_at(&w, l.plan->name);
        unload(&l, &w);
      }
    for (int r = 0; r < n; r++) cr_assert(eq(int, kilnCommWindowRemove(w.kc[r], win[r]), KILN_SUCCESS));
    ncclGroupStart();
    for (int r = 0; r < n; r++) {
      cudaSetDevice(r);
      ncclCommWindowDeregister(w.nccl[r], win[r]);
    }
    ncclGroupEnd();
    for (int r = 0; r < n; r++) ncclMemFree(pool[r]);
    world_fini(&w);
  }
  if (!ran) cr_skip_test("skipped: %d GPU visible, 2 needed", g_ngpus);
}

GPU_SUITE_HOOK("test_gpu_memsteps")
