/*
 * GPU suite of groups and streams: kilnGroupStart/End (calls queued and issued at the outermost
 * end, nested, failing), the capture state a group takes at its end, calls on several streams,
 * two communicators at once, and streams of random calls (every collective, type, op, placement
 * and form, eager and captured; KILN_TEST_RANDOM_STREAMS=N soaks). A test that needs more GPUs than are visible skips; the binary prints "skipped: no GPU" and
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

/* Eager calls of one communicator on different streams run in issue order (host/exec.c: a call
 * on another stream than the last call's waits for that call's event). Per count (LL lines, flags
 * in rounds, a longer call): K in-place allreduces chained on one buffer, one-shot and two-shot by
 * turns, each on the next of three streams per rank, the second on a stream destroyed right after
 * it is issued; after the fourth, a plan allreduce on a stream of its own reads the chain's buffer
 * into another (the fifth, in place, must wait for it). The chain ends at n^(K-1) times the
 * inputs' sum, the plan's output at n^4 times. */
Test(gpu_streams, sym_streams, .init = gpu_init, .timeout = 600) {
  const int n = suite_gpus();
  uint64_t rng = g_seed ^ 0x5e7;
  enum { K = 6, PLAN_AFTER = 3 };
  kilnCommConfig cfg = KILN_COMM_CONFIG_INITIALIZER;
  cfg.symBytes = 1 << 20;
  world w;
  cr_assert(world_init(&w, n, &cfg));
  loaded l;
  load(&l, &w, "ring", KILN_COLL_ALLREDUCE, 2, 2, KILN_PROTO_SIMPLE, false);
  cudaStream_t st[GPU_MAX][4];
  for (int r = 0; r < n; r++) {
    cudaSetDevice(r);
    st[r][0] = w.st[r];
    for (int s = 1; s < 4; s++)
      cr_assert(eq(int, cudaStreamCreateWithFlags(&st[r][s], cudaStreamNonBlocking), cudaSuccess));
  }
  static const size_t counts[] = {1004, 70004, 400004};
  for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++) {
    const size_t count = counts[ci];
    call c, p; /* p: only its output buffers (drecv), for the plan */
    cr_assert(call_alloc(&c, &w, KILN_COLL_ALLREDUCE, count, KILN_INT32));
    cr_assert(call_alloc(&p, &w, KILN_COLL_ALLREDUCE, count, KILN_INT32));
    call_prepare(&c, &w, KILN_SUM, true, &rng);
    for (int k = 0; k < K; k++)
      for (int r = 0; r < n; r++) {
        cudaSetDevice(r);
        cudaStream_t s = st[r][k % 3];
        if (k == 1) cr_assert(eq(int, cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess));
        const kilnSymAlgo_t a = k % 2 ? KILN_SYM_ALLREDUCE_TWOSHOT : KILN_SYM_ALLREDUCE_ONESHOT;
        kilnResult_t res = kilnSymRun(w.kc[r], a, c.recvp[r], c.recvp[r], count, KILN_INT32, KILN_SUM, s);
        cr_assert(eq(int, res, KILN_SUCCESS), "count %zu call %d rank %d: %s", count, k, r, kilnLastError());
        if (k == 1) cr_assert(eq(int, cudaStreamDestroy(s), cudaSuccess));
        if (k == PLAN_AFTER) {
          res = kilnRun(l.ex[r], c.recvp[r], p.drecv[r], count, KILN_INT32, KILN_SUM, st[r][3]);
          cr_assert(eq(int, res, KILN_SUCCESS), "count %zu plan rank %d: %s", count, r, kilnLastError());
        }
      }
    for (int r = 0; r < n; r++) {
      cudaSetDevice(r);
      for (int s = 0; s < 4; s++)
        cr_assert(eq(int, cudaStreamSynchronize(st[r][s]), cudaSuccess), "count %zu rank %d stream %d: %s",
                  count, r, s, cudaGetErrorString(cudaGetLastError()));
    }
    int64_t mul = 1;
    for (int k = 1; k < K; k++) mul *= n;
    assert_times_sum(&w, c.recvp, c.vals, count, mul, "the chain's end");
    assert_times_sum(&w, p.drecv, c.vals, count, (int64_t)n * n * n * n, "the plan's output");
    call_free(&p, &w);
    call_free(&c, &w);
  }
  assert_no_async_error(&w);
  for (int r = 0; r < n; r++)
    for (int s = 1; s < 4; s++) cudaStreamDestroy(st[r][s]);
  unload(&l, &w);
  world_fini(&w);
}

/* ---- random streams of calls (symmetric kernels and plans) ---- */

/* A call of a random stream: what random_pick drew (a symmetric algorithm, or a loaded plan). */
typedef struct randomCall {
  call c;
  kilnSymAlgo_t a;
  const loaded* plan; /* NULL: the symmetric kernels (a) */
  kilnRedOp_t op;
  bool inplace;
} randomCall;

/* Elements a rank for a random call among n ranks: 35% 1-4096 (LL lines), 30% 4097-266240, 29%
 * 256 Ki to 4.25 Mi, and at most one call of a stream (*huge) 8-12 Mi; the two large classes
 * divided by n / 2 past 2 ranks, since the CPU's share of a call (inputs drawn, references,
 * checks) grows with the square of the ranks for every collective but allreduce. */
static size_t random_count(uint64_t* rng, bool* huge, int n) {
  const size_t shrink = n > 2 ? (size_t)n / 2 : 1;
  const uint64_t x = gpu_rand(rng) % 100;
  if (x < 35) return 1 + gpu_rand(rng) % 4096;
  if (x < 65) return 4097 + gpu_rand(rng) % (1u << 18);
  if (x < 94 || *huge) return ((1u << 18) + gpu_rand(rng) % (1u << 22)) / shrink;
  *huge = true;
  return ((1u << 23) + gpu_rand(rng) % (1u << 22)) / shrink;
}

/* Draws a call that fits the communicators: collective, data type, count, op, placement; the
 * algorithm kiln chooses by default (kilnSymSelect), or one drawn where it chooses none and, a
 * quarter of the time, anyway. false: the drawn call fits no algorithm (draw again). */
static bool random_pick(const world* w, randomCall* rc, uint64_t* rng, bool* huge) {
  rc->plan = NULL;
  const kilnSymAlgo_t drawn = kSymAlgos[gpu_rand(rng) % (sizeof(kSymAlgos) / sizeof(kSymAlgos[0]))];
  const kilnColl_t coll = sym_coll(drawn);
  const kilnDataType_t dt = (kilnDataType_t)(gpu_rand(rng) % ALL_DTYPES);
  bool h = *huge;
  const size_t count = random_count(rng, &h, w->n);
  rc->inplace = coll != KILN_COLL_ALLTOALL && gpu_rand(rng) % 3 == 0;
  rc->a = kilnSymSelect(w->kc[0], coll, count, dt, rc->inplace);
  if (rc->a == KILN_SYM_NONE || gpu_rand(rng) % 4 == 0) rc->a = drawn;
  if (!kilnSymFits(w->kc[0], rc->a, count, dt, rc->inplace)) return false;
  rc->op = gpu_reduces(coll) ? (kilnRedOp_t)(gpu_rand(rng) % KILN_NUM_REDOPS) : KILN_SUM;
  rc->c.coll = coll;
  rc->c.count = count;
  rc->c.dt = dt;
  *huge = h;
  return true;
}

/* Draws a call of one of the nplans loaded plans: its collective and placement, a data type, op
 * and count (up to 1 Mi elements: plans move their data through FIFO slots, slower) it supports.
 * false: it supports none of them (draw again). */
static bool random_pick_plan(const world* w, const loaded* plans, int nplans, randomCall* rc, uint64_t* rng) {
  rc->plan = &plans[gpu_rand(rng) % (uint64_t)nplans];
  const kilnPlan* p = rc->plan->plan;
  rc->c.coll = p->coll;
  rc->c.dt = (kilnDataType_t)(gpu_rand(rng) % ALL_DTYPES);
  bool never = true; /* no 8-12 Mi element calls */
  rc->c.count = random_count(rng, &never, w->n) % (1u << 20) + 1;
  rc->inplace = p->inplace;
  rc->op = gpu_reduces(p->coll) ? (kilnRedOp_t)(gpu_rand(rng) % KILN_NUM_REDOPS) : KILN_SUM;
  rc->a = KILN_SYM_NONE;
  return kilnPlanSupports(p, rc->c.count, rc->c.dt, rc->op, rc->inplace);
}

static const char* random_name(const randomCall* rc) {
  return rc->plan ? rc->plan->plan->name : kilnSymAlgoName(rc->a);
}

/* Issues calls [0, k) of rc on ranks [r0, r1), in call order; grouped: one to three calls of every
 * rank in each kilnGroupStart/End. */
static void random_issue(const world* w, randomCall* rc, int k, int r0, int r1, bool grouped, uint64_t* rng) {
  for (int i = 0; i < k;) {
    const int batch = grouped ? 1 + (int)(gpu_rand(rng) % 3) : 1;
    if (grouped) kilnGroupStart();
    for (int j = i; j < i + batch && j < k; j++)
      for (int r = r0; r < r1; r++) {
        const call* c = &rc[j].c;
        kilnResult_t res = rc[j].plan ? kilnRun(rc[j].plan->ex[r], c->sendp[r], c->recvp[r], c->count, c->dt,
                                                rc[j].op, w->st[r])
                                      : kilnSymRun(w->kc[r], rc[j].a, c->sendp[r], c->recvp[r], c->count,
                                                   c->dt, rc[j].op, w->st[r]);
        cr_assert(eq(int, res, KILN_SUCCESS), "call %d %s rank %d: %s", j, random_name(&rc[j]), r,
                  kilnLastError());
      }
    if (grouped) cr_assert(eq(int, kilnGroupEnd(), KILN_SUCCESS), "%s", kilnLastError());
    i += batch;
  }
}

static const char* const kRandomModes[] = {"eager", "eager, grouped", "graph per rank", "graph, grouped"};

enum { RANDOM_CANARY = 0xA5 };

/* After a random stream: every byte of rank r's allocation (bytes at base) outside the calls'
 * buffers (their gaps, the input buffer an in-place allreduce or allgather leaves unused, the
 * tail) still holds RANDOM_CANARY, which it was filled with before the stream. */
static void random_canaries(const world* w, int r, const char* base, size_t bytes, const randomCall* rc,
                            int k, const char* what, int mode) {
  unsigned char* h = malloc(bytes);
  cr_assert(not(eq(ptr, h, NULL)));
  cudaSetDevice(w->dev[r]);
  cr_assert(eq(int, cudaMemcpy(h, base, bytes, cudaMemcpyDeviceToHost), cudaSuccess));
  for (int i = 0; i < k; i++) {
    const call* c = &rc[i].c;
    const size_t es = kilnDataTypeSize(c->dt);
    memset(h + ((const char*)c->sendp[r] - base), RANDOM_CANARY, c->inElems * es);
    memset(h + ((const char*)c->recvp[r] - base), RANDOM_CANARY, c->outElems * es);
    /* call_prepare poisons the output buffer as allocated, also where an in-place reducescatter
     * leaves it unused. */
    memset(h + ((const char*)c->drecv[r] - base), RANDOM_CANARY, c->outElems * es);
  }
  size_t at = 0;
  while (at < bytes && h[at] == RANDOM_CANARY) at++;
  size_t last = at;
  while (last < bytes && last < at + 4096 && h[last] != RANDOM_CANARY) last++;
  /* The buffer that ends nearest before the byte. */
  int near = -1;
  bool nearOut = false;
  ptrdiff_t past = PTRDIFF_MAX;
  for (int i = 0; i < k && at < bytes; i++) {
    const call* c = &rc[i].c;
    const size_t es = kilnDataTypeSize(c->dt);
    const ptrdiff_t ends[2] = {(const char*)c->sendp[r] - base + (ptrdiff_t)(c->inElems * es),
                               (const char*)c->recvp[r] - base + (ptrdiff_t)(c->outElems * es)};
    for (int o = 0; o < 2; o++)
      if (ends[o] <= (ptrdiff_t)at && (ptrdiff_t)at - ends[o] < past) {
        past = (ptrdiff_t)at - ends[o];
        near = i;
        nearOut = o == 1;
      }
  }
  char who[256] = "no buffer before it";
  if (near >= 0) {
    const call* c = &rc[near].c;
    snprintf(who, sizeof who, "%td bytes past the end of call %d's %s (%s %s %s count %zu %s, %s)", past,
             near, nearOut ? "output" : "input", kilnCollName(c->coll), kilnDataTypeName(c->dt),
             kilnRedOpName(c->op), c->count, c->inplace ? "in place" : "out of place",
             random_name(&rc[near]));
  }
  free(h);
  cr_assert(eq(sz, at, bytes),
            "%s, %s: rank %d wrote bytes %zu-%zu of its allocation, outside every call's buffers: "
            "%s (seed %llu)",
            what, kRandomModes[mode], r, at, last - 1, who, (unsigned long long)g_seed);
}

/* One random stream of k calls issued back to back with nothing between them (mode: eager one
 * rank after the other, eager in groups, captured per rank, captured in groups; graphs replayed
 * twice), then every output checked against the CPU. The calls' buffers lie end to end in one
 * allocation per rank, at element-aligned offsets 0-3 elements apart, filled with RANDOM_CANARY
 * first: a call that writes past its output shows in a neighbour's result or in a canary byte
 * (random_canaries), one that reads the wrong staging in its own result. Returns the calls
 * checked. */
static int random_stream(const world* w, const loaded* plans, int nplans, const char* what, int stream,
                         int mode, int k, uint64_t* rng) {
  randomCall rc[16];
  size_t inE[16], outE[16];
  cr_assert(k <= 16);
  bool huge = false;
  size_t arena = 256;
  for (int i = 0; i < k; i++) {
    /* With plans, half the calls are theirs (drawn again until one fits, on the side drawn). */
    const bool plan = nplans > 0 && gpu_rand(rng) % 2;
    while (plan ? !random_pick_plan(w, plans, nplans, &rc[i], rng) : !random_pick(w, &rc[i], rng, &huge)) {}
    call_elems(rc[i].c.coll, w->n, rc[i].c.count, &inE[i], &outE[i]);
    arena += (inE[i] + outE[i] + 8) * kilnDataTypeSize(rc[i].c.dt);
  }
  char* base[GPU_MAX];
  for (int r = 0; r < w->n; r++) {
    cudaSetDevice(w->dev[r]);
    cr_assert(eq(int, cudaMalloc((void**)&base[r], arena), cudaSuccess), "%zu bytes", arena);
    cr_assert(eq(int, cudaMemsetAsync(base[r], RANDOM_CANARY, arena, w->st[r]), cudaSuccess));
  }
  size_t at = 0;
  for (int i = 0; i < k; i++) {
    const size_t es = kilnDataTypeSize(rc[i].c.dt);
    char* send[GPU_MAX];
    char* recv[GPU_MAX];
    at = (at + es - 1) / es * es + es * (gpu_rand(rng) % 4);
    for (int r = 0; r < w->n; r++) send[r] = base[r] + at;
    at += inE[i] * es + es * (gpu_rand(rng) % 4);
    for (int r = 0; r < w->n; r++) recv[r] = base[r] + at;
    at += outE[i] * es;
    cr_assert(le(sz, at, arena));
    cr_assert(call_alloc_at(&rc[i].c, w, rc[i].c.coll, rc[i].c.count, rc[i].c.dt, send, recv));
  }
  const bool grouped = mode == 1 || mode == 3, graph = mode >= 2;
  cudaGraphExec_t ge[GPU_MAX];
  if (graph) {
    /* The buffers the graphs capture set, and the first replay's data drawn (the captures begin
     * after it is on the GPUs). */
    for (int i = 0; i < k; i++) call_prepare(&rc[i].c, w, rc[i].op, rc[i].inplace, rng);
    if (grouped) {
      capture_begin_all(w);
      random_issue(w, rc, k, 0, w->n, true, rng);
      capture_end_all(w, ge);
    } else {
      for (int r = 0; r < w->n; r++) {
        capture_begin(w, r);
        random_issue(w, rc, k, r, r + 1, false, rng);
        capture_end(w, r, &ge[r]);
      }
    }
  }
  for (int rep = 0; rep < (graph ? 2 : 1); rep++) {
    if (!graph || rep > 0)
      for (int i = 0; i < k; i++) call_prepare(&rc[i].c, w, rc[i].op, rc[i].inplace, rng);
    if (graph)
      replay_all(w, ge);
    else
      random_issue(w, rc, k, 0, w->n, grouped, rng);
    for (int i = 0; i < k; i++) {
      char msg[512];
      cr_assert(call_check(&rc[i].c, w, msg, sizeof msg),
                "%s, %s, stream %d, call %d of %d (%s)%s: %s (seed %llu)", what, kRandomModes[mode], stream,
                i, k, random_name(&rc[i]), graph ? (rep ? ", replay 2" : ", replay 1") : "", msg,
                (unsigned long long)g_seed);
    }
  }
  assert_no_async_error(w);
  for (int r = 0; r < w->n; r++) random_canaries(w, r, base[r], arena, rc, k, what, mode);
  if (graph)
    for (int r = 0; r < w->n; r++) cudaGraphExecDestroy(ge[r]);
  for (int i = 0; i < k; i++) call_free(&rc[i].c, w);
  for (int r = 0; r < w->n; r++) {
    cudaSetDevice(w->dev[r]);
    cudaFree(base[r]);
  }
  return graph ? 2 * k : k;
}

/* Streams of 12 random calls (every symmetric algorithm, data type, op and placement, 1 element to
 * 12 Mi; with plans, half of them the plans') back to back with nothing between them, so that
 * each form follows every other on the same staging with programmatic launches overlapping them,
 * in each of the four ways of issuing them (random_stream); KILN_TEST_RANDOM_STREAMS streams per
 * way (default 3). */
static void random_streams_run(const world* w, const loaded* plans, int nplans, const char* what,
                               uint64_t* rng) {
  const char* e = getenv("KILN_TEST_RANDOM_STREAMS");
  const int streams = e && atoi(e) > 0 ? atoi(e) : 3;
  for (int mode = 0; mode < 4; mode++) {
    int checked = 0;
    const uint64_t direct = peer_calls(w);
    for (int s = 0; s < streams; s++) checked += random_stream(w, plans, nplans, what, s, mode, 12, rng);
    fprintf(stderr,
            "  %d ranks, %s, %s: %d random calls checked (%llu issued direct into the peers' buffers)\n",
            w->n, what, kRandomModes[mode], checked, (unsigned long long)(peer_calls(w) - direct));
  }
}

/* Communicators whose forms change at small sizes: 4 MiB of staging (large calls in rounds),
 * outputs of grouped calls stored direct from 64 KiB, allgather and alltoall by the copy engine
 * from 1 MiB, allreduce as a reducescatter and the engine's copies from 2 MiB. */
static const char* const kSmallForms[] = {"KILN_SYM_DIRECT_BYTES",
                                          "65536",
                                          "KILN_SYM_CE_BYTES",
                                          "1048576",
                                          "KILN_SYM_AR_CE_BYTES",
                                          "2097152",
                                          NULL};

/* The classic plans random streams mix in: every collective, Simple, LL and LL128, in place and
 * not, chunks and instances (baked kernels where kiln bakes the shape, the interpreter elsewhere). */
typedef struct randomPlan {
  const char* algo;
  kilnColl_t coll;
  int chunks, instances;
  kilnProto_t proto;
  bool inplace;
} randomPlan;
static const randomPlan kRandomPlans[] = {
    {"ring", KILN_COLL_ALLREDUCE, 2, 2, KILN_PROTO_SIMPLE, false},
    {"ring", KILN_COLL_ALLREDUCE, 1, 1, KILN_PROTO_LL128, true},
    {"direct", KILN_COLL_ALLREDUCE, 1, 1, KILN_PROTO_LL, false},
    {"ring", KILN_COLL_ALLGATHER, 1, 1, KILN_PROTO_LL, false},
    {"direct", KILN_COLL_ALLGATHER, 1, 1, KILN_PROTO_SIMPLE, true},
    {"ring", KILN_COLL_REDUCESCATTER, 1, 1, KILN_PROTO_SIMPLE, false},
    {"direct", KILN_COLL_REDUCESCATTER, 1, 1, KILN_PROTO_LL128, true},
    {"direct", KILN_COLL_ALLTOALL, 2, 1, KILN_PROTO_SIMPLE, false},
    {"direct", KILN_COLL_ALLTOALL, 1, 1, KILN_PROTO_LL, false},
};
enum { RANDOM_PLANS = sizeof(kRandomPlans) / sizeof(kRandomPlans[0]) };

/* Random streams (random_streams_run) on communicators of the default settings, on ones whose
 * forms change at small sizes (kSmallForms), so that direct calls, the copy engine's and the
 * staged halves in rounds come often among the line forms, and on default ones with the classic
 * plans of kRandomPlans between the symmetric calls. */
static void random_streams_test(int n, bool shared) {
  kilnCommConfig small = KILN_COMM_CONFIG_INITIALIZER;
  small.symBytes = 4 << 20;
  static const char* const what[] = {"default settings", "forms changing at small sizes", "plans among them"};
  for (int pass = 0; pass < 3; pass++) {
    world w;
    sweep_world(&w, n, shared, pass == 1 ? &small : NULL, pass == 1 ? kSmallForms : kNoEnv);
    uint64_t rng = g_seed ^ (0x5EED0 + (uint64_t)pass);
    loaded plans[RANDOM_PLANS];
    const int nplans = pass == 2 ? RANDOM_PLANS : 0;
    for (int i = 0; i < nplans; i++) {
      const randomPlan* p = &kRandomPlans[i];
      load(&plans[i], &w, p->algo, p->coll, p->chunks, p->instances, p->proto, p->inplace);
    }
    random_streams_run(&w, plans, nplans, what[pass], &rng);
    for (int i = 0; i < nplans; i++) unload(&plans[i], &w);
    world_fini(&w);
  }
}

Test(gpu_streams, random_streams, .init = gpu_init, .timeout = 900) {
  random_streams_test(suite_gpus(), false);
}
/* The same with 4 ranks sharing fewer GPUs (kilnCommCreateShared; its kernels launch without
 * programmatic serialization). */
Test(gpu_streams, random_streams_4ranks_shared, .init = gpu_init_shared, .timeout = 900) {
  random_streams_test(4, true);
}

/* A group's calls take the capture state their streams have at kilnGroupEnd, as NCCL's do. Each
 * rank's first call runs eagerly on its stream; the second, on another stream, is queued in a
 * group before a capture of that stream begins, so the group's end must capture it (it used to
 * be issued as an eager call: a wait on the first call's event inside the capture, which CUDA
 * refuses); the graphs then replay on fresh data. A third group's calls are queued inside
 * captures that end before the group does: they run eagerly at its end. 2 ranks, sharing a GPU
 * where there is one. */
Test(gpu_streams, group_takes_the_capture_state_at_its_end, .init = gpu_init_shared, .timeout = 300) {
  world w;
  cr_assert(world_init_shared(&w, 2, g_ngpus >= 2 ? 2 : 1, NULL, NULL));
  uint64_t rng = g_seed ^ 0xCA97;
  const kilnSymAlgo_t a = KILN_SYM_ALLREDUCE_ONESHOT;
  call c;
  cr_assert(call_alloc(&c, &w, sym_coll(a), 4099, KILN_FLOAT32));
  sym_run_check(&w, &c, a, KILN_SUM, false, &rng); /* eager, on w.st: the communicator's last stream */
  world v = w;
  for (int r = 0; r < w.n; r++) {
    cudaSetDevice(w.dev[r]);
    cr_assert(eq(int, cudaStreamCreateWithFlags(&v.st[r], cudaStreamNonBlocking), cudaSuccess));
  }
  cudaGraphExec_t ge[GPU_MAX];
  call_prepare(&c, &v, KILN_SUM, false, &rng);
  kilnGroupStart();
  sym_issue(&v, &c, a, KILN_SUM, 0, v.n, false); /* queued in the open group */
  capture_begin_all(&v);
  cr_assert(eq(int, kilnGroupEnd(), KILN_SUCCESS), "group's end inside the captures: %s", kilnLastError());
  cudaGraph_t gr[GPU_MAX];
  for (int r = 0; r < v.n; r++)
    cr_assert(eq(int, cudaStreamEndCapture(v.st[r], &gr[r]), cudaSuccess), "rank %d", r);
  for (int r = 0; r < v.n; r++) {
    cr_assert(eq(int, cudaGraphInstantiate(&ge[r], gr[r], 0), cudaSuccess));
    cudaGraphDestroy(gr[r]);
  }
  replay_check(&v, &c, ge, 3, " (a group captured at its end)", &rng);
  /* Queued inside captures that end before the group's end: eager calls. */
  call_prepare(&c, &v, KILN_SUM, false, &rng);
  capture_begin_all(&v);
  kilnGroupStart();
  sym_issue(&v, &c, a, KILN_SUM, 0, v.n, false); /* queued in the open group */
  for (int r = 0; r < v.n; r++)
    cr_assert(eq(int, cudaStreamEndCapture(v.st[r], &gr[r]), cudaSuccess), "rank %d", r);
  for (int r = 0; r < v.n; r++) {
    size_t nodes = 1;
    cr_assert(eq(int, cudaGraphGetNodes(gr[r], NULL, &nodes), cudaSuccess));
    cr_assert(eq(sz, nodes, 0), "rank %d: the capture took %zu nodes of a group that had not ended", r,
              nodes);
    cudaGraphDestroy(gr[r]);
  }
  cr_assert(eq(int, kilnGroupEnd(), KILN_SUCCESS), "group's end after the captures: %s", kilnLastError());
  char msg[512];
  cr_assert(call_check(&c, &v, msg, sizeof msg), "a group ended after its captures: %s (seed %llu)", msg,
            (unsigned long long)g_seed);
  sym_run_check(&w, &c, a, KILN_SUM, false, &rng); /* and eagerly on the first streams again */
  assert_no_async_error(&w);
  for (int r = 0; r < w.n; r++) {
    cudaGraphExecDestroy(ge[r]);
    cudaSetDevice(w.dev[r]);
    cudaStreamDestroy(v.st[r]);
  }
  call_free(&c, &w);
  world_fini(&w);
}

/* Back-to-back calls on three streams per rank, no synchronization in between. */
Test(gpu_streams, several_streams, .init = gpu_init, .timeout = 600) {
  int n = suite_gpus();
  world w;
  cr_assert(world_init(&w, n, NULL));
  uint64_t rng = g_seed ^ 0x55;
  loaded l;
  load(&l, &w, "ring", KILN_COLL_ALLREDUCE, 2, 2, KILN_PROTO_SIMPLE, false);
  enum { NCALLS = 9 };
  call c[NCALLS];
  world views[3];
  for (int s = 0; s < 3; s++) {
    views[s] = w;
    for (int r = 0; r < n; r++) {
      cudaSetDevice(r);
      if (s > 0) cudaStreamCreateWithFlags(&views[s].st[r], cudaStreamNonBlocking);
    }
  }
  for (int i = 0; i < NCALLS; i++) {
    world* v = &views[i % 3];
    cr_assert(call_alloc(&c[i], v, KILN_COLL_ALLREDUCE, 100000 + 17 * i, KILN_FLOAT32));
    call_prepare(&c[i], v, KILN_SUM, false, &rng);
    for (int r = 0; r < n; r++)
      cr_assert(eq(int,
                   kilnRun(l.ex[r], c[i].sendp[r], c[i].recvp[r], c[i].count, c[i].dt, KILN_SUM, v->st[r]),
                   KILN_SUCCESS));
  }
  for (int i = 0; i < NCALLS; i++) {
    char msg[512];
    cr_assert(call_check(&c[i], &views[i % 3], msg, sizeof msg), "call %d: %s", i, msg);
    call_free(&c[i], &views[i % 3]);
  }
  for (int s = 1; s < 3; s++)
    for (int r = 0; r < n; r++) cudaStreamDestroy(views[s].st[r]);
  unload(&l, &w);
  world_fini(&w);
}

/* Two kiln communicators (over two NCCL communicators) with calls in flight at once. */
Test(gpu_streams, two_communicators, .init = gpu_init, .timeout = 600) {
  int n = suite_gpus();
  world a, b;
  cr_assert(world_init(&a, n, NULL));
  cr_assert(world_init(&b, n, NULL));
  uint64_t rng = g_seed ^ 0x99;
  loaded la, lb;
  load(&la, &a, "ring", KILN_COLL_ALLREDUCE, 2, 2, KILN_PROTO_SIMPLE, false);
  load(&lb, &b, "direct", KILN_COLL_ALLGATHER, 2, 2, KILN_PROTO_LL, false);
  call ca, cb;
  cr_assert(call_alloc(&ca, &a, KILN_COLL_ALLREDUCE, 300001, KILN_FLOAT64));
  cr_assert(call_alloc(&cb, &b, KILN_COLL_ALLGATHER, 50003, KILN_FLOAT16));
  /* it 0: both at once, first launches of both kernels included; it 1: a alone; it 2: b alone;
   * then both at once again. */
  for (int it = 0; it < 8; it++) {
    const bool runA = it != 2, runB = it != 1;
    call_prepare(&ca, &a, KILN_MAX, false, &rng);
    call_prepare(&cb, &b, KILN_SUM, false, &rng);
    for (int r = 0; r < n; r++) {
      if (runA)
        cr_assert(eq(int, kilnRun(la.ex[r], ca.sendp[r], ca.recvp[r], ca.count, ca.dt, KILN_MAX, a.st[r]),
                     KILN_SUCCESS));
      if (runB)
        cr_assert(eq(int, kilnRun(lb.ex[r], cb.sendp[r], cb.recvp[r], cb.count, cb.dt, KILN_SUM, b.st[r]),
                     KILN_SUCCESS));
    }
    char msg[512];
    bool okA = !runA || call_check(&ca, &a, msg, sizeof msg);
    kilnResult_t ea = KILN_SUCCESS, eb = KILN_SUCCESS;
    kilnCommGetAsyncError(a.kc[0], &ea);
    cr_assert(okA, "iteration %d, a: %s (async a %s)", it, msg, kilnResultName(ea));
    bool okB = !runB || call_check(&cb, &b, msg, sizeof msg);
    kilnCommGetAsyncError(b.kc[0], &eb);
    cr_assert(okB, "iteration %d, b: %s (async b %s)", it, msg, kilnResultName(eb));
  }
  call_free(&ca, &a);
  call_free(&cb, &b);
  unload(&la, &a);
  unload(&lb, &b);
  world_fini(&a);
  world_fini(&b);
}

/* The plan a group test runs for small allreduces: the registry's pick (a one-shot plan with a
 * scratch buffer in the default build), else a classic direct LL plan. */
static void load_small_allreduce(loaded* l, const world* w) {
  const kilnRegistryEntry* e =
      kilnRegistrySelect(KILN_COLL_ALLREDUCE, w->n, 4096, false, KILN_FLOAT32, KILN_SUM);
  if (!e || !e->xml) {
    load(l, w, "direct", KILN_COLL_ALLREDUCE, 1, 1, KILN_PROTO_LL, false);
    return;
  }
  load_entry(l, w, e);
}

/* kilnGroupStart/End: every rank's calls of a group are queued and issued at the outermost end
 * (GPUs in parallel from launcher threads when those are awake, from this thread when asleep:
 * the pauses put them to sleep). In one group: the small allreduce twice on the same exec, the
 * second larger (its scratch grows inside the group), and an allgather of another communicator;
 * nested in every other iteration; every third iteration calls rank after rank (all of rank 0's
 * calls, then rank 1's, ...: a growth must not wait for peers queued later), every fourth on the
 * legacy default stream (issued by this thread). Results checked on fresh data. A call that
 * fails inside a group fails the group (nothing launched, the communicators stay usable);
 * kilnGroupEnd without a start is an error. */
Test(gpu_streams, groups, .init = gpu_init, .timeout = 600) {
  const int n = suite_gpus();
  world a, b;
  cr_assert(world_init(&a, n, NULL));
  cr_assert(world_init(&b, n, NULL));
  uint64_t rng = g_seed ^ 0x6709;
  loaded la, lb;
  load_small_allreduce(&la, &a);
  load(&lb, &b, "ring", KILN_COLL_ALLGATHER, 1, 4, KILN_PROTO_SIMPLE, false);
  cr_assert(eq(int, kilnGroupEnd(), KILN_ERR_INVALID_ARGUMENT));
  cr_assert(contains(kilnLastError(), "kilnGroupEnd"), "%s", kilnLastError());
  {
    const kilnPlan* lp = la.plan;
    fprintf(stderr, "  groups: small allreduce plan %s, %d scratch chunks\n", lp->name, lp->gpus[0].s_chunks);
  }
  for (int it = 0; it < 12; it++) {
    call c1, c2, c3;
    cr_assert(call_alloc(&c1, &a, KILN_COLL_ALLREDUCE, 1000 + 7 * (size_t)it, KILN_FLOAT32));
    cr_assert(call_alloc(&c2, &a, KILN_COLL_ALLREDUCE, 3000 + 1500 * (size_t)it, KILN_FLOAT32));
    cr_assert(call_alloc(&c3, &b, KILN_COLL_ALLGATHER, 40000 + 11 * (size_t)it, KILN_BFLOAT16));
    call_prepare(&c1, &a, KILN_SUM, false, &rng);
    call_prepare(&c2, &a, KILN_MAX, false, &rng);
    call_prepare(&c3, &b, KILN_SUM, false, &rng);
    for (int r = 0; r < n; r++) {
      cudaSetDevice(r);
      cudaStreamSynchronize(a.st[r]);
      cudaStreamSynchronize(b.st[r]);
    }
    const bool nested = it % 2 == 1, rankMajor = it % 3 == 2, legacy = it % 4 == 3;
    cudaStream_t sa[GPU_MAX], sb[GPU_MAX];
    for (int r = 0; r < n; r++) {
      sa[r] = legacy ? (cudaStream_t)0 : a.st[r];
      sb[r] = legacy ? (cudaStream_t)0 : b.st[r];
    }
    cr_assert(eq(int, kilnGroupStart(), KILN_SUCCESS));
    if (nested) kilnGroupStart();
    /* (call, rank) in operation order, or rank after rank */
    for (int k = 0; k < 3 * n; k++) {
      const int which = rankMajor ? k % 3 : k / n, r = rankMajor ? k / 3 : k % n;
      cudaSetDevice(r); /* the default stream is the current device's */
      kilnResult_t res =
          which == 0   ? kilnRun(la.ex[r], c1.sendp[r], c1.recvp[r], c1.count, c1.dt, KILN_SUM, sa[r])
          : which == 1 ? kilnRun(la.ex[r], c2.sendp[r], c2.recvp[r], c2.count, c2.dt, KILN_MAX, sa[r])
                       : kilnRun(lb.ex[r], c3.sendp[r], c3.recvp[r], c3.count, c3.dt, KILN_SUM, sb[r]);
      cr_assert(eq(int, res, KILN_SUCCESS), "iteration %d call %d rank %d: %s", it, which, r,
                kilnLastError());
    }
    if (nested) cr_assert(eq(int, kilnGroupEnd(), KILN_SUCCESS), "%s", kilnLastError());
    cr_assert(eq(int, kilnGroupEnd(), KILN_SUCCESS), "%s", kilnLastError());
    if (legacy) /* the test's streams do not wait for the legacy stream */
      for (int r = 0; r < n; r++) {
        cudaSetDevice(r);
        cr_assert(eq(int, cudaStreamSynchronize(0), cudaSuccess));
      }
    char msg[512];
    cr_assert(call_check(&c1, &a, msg, sizeof msg), "iteration %d, small allreduce: %s", it, msg);
    cr_assert(call_check(&c2, &a, msg, sizeof msg), "iteration %d, grown allreduce: %s", it, msg);
    cr_assert(call_check(&c3, &b, msg, sizeof msg), "iteration %d, allgather: %s", it, msg);
    for (int r = 0; r < n; r++) {
      kilnResult_t ea = KILN_SUCCESS, eb = KILN_SUCCESS;
      kilnCommGetAsyncError(a.kc[r], &ea);
      kilnCommGetAsyncError(b.kc[r], &eb);
      cr_assert(eq(int, ea, KILN_SUCCESS), "rank %d", r);
      cr_assert(eq(int, eb, KILN_SUCCESS), "rank %d", r);
    }
    call_free(&c1, &a);
    call_free(&c2, &a);
    call_free(&c3, &b);
    if (it % 4 == 3) usleep(5000); /* past the launchers' spin: they sleep */
  }
  /* A failing call (an unknown data type on the last rank) fails the group: nothing of it runs,
   * and the next group works. */
  {
    call c1;
    cr_assert(call_alloc(&c1, &a, KILN_COLL_ALLREDUCE, 777, KILN_FLOAT32));
    call_prepare(&c1, &a, KILN_SUM, false, &rng);
    kilnGroupStart();
    for (int r = 0; r < n - 1; r++)
      cr_assert(eq(int, kilnRun(la.ex[r], c1.sendp[r], c1.recvp[r], c1.count, c1.dt, KILN_SUM, a.st[r]),
                   KILN_SUCCESS));
    cr_assert(eq(int,
                 kilnRun(la.ex[n - 1], c1.sendp[n - 1], c1.recvp[n - 1], c1.count, (kilnDataType_t)99,
                         KILN_SUM, a.st[n - 1]),
                 KILN_ERR_INVALID_ARGUMENT));
    cr_assert(eq(int, kilnGroupEnd(), KILN_ERR_INVALID_ARGUMENT));
    cr_assert(contains(kilnLastError(), "none of the group was launched"), "%s", kilnLastError());
    kilnGroupStart();
    for (int r = 0; r < n; r++)
      cr_assert(eq(int, kilnRun(la.ex[r], c1.sendp[r], c1.recvp[r], c1.count, c1.dt, KILN_SUM, a.st[r]),
                   KILN_SUCCESS));
    cr_assert(eq(int, kilnGroupEnd(), KILN_SUCCESS), "%s", kilnLastError());
    char msg[512];
    cr_assert(call_check(&c1, &a, msg, sizeof msg), "after a failed group: %s", msg);
    call_free(&c1, &a);
  }
  unload(&la, &a);
  unload(&lb, &b);
  world_fini(&a);
  world_fini(&b);
}

GPU_SUITE_HOOK("test_gpu_streams")
