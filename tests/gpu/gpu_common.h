/*
 * Helpers shared by the GPU suites: skipping where there are fewer than 2 GPUs, worlds of NCCL +
 * kiln communicators driven by one process, exact small-integer data in every NCCL type, CPU
 * references and checks; plans loaded on every rank, graphs captured and replayed, symmetric
 * calls run and checked (the runtime suites' shared steps).
 */
#ifndef KILN_TESTS_GPU_COMMON_H
#define KILN_TESTS_GPU_COMMON_H

#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "gpu_count.h"
#include "gpu_fork.h"
#include "kiln/registry.h"
#include "kiln/runtime.h"
#include "runtime_test.h"

#define GPU_MAX 8

extern int g_ngpus;     /* visible GPUs, counted in a child process before any test forks */
extern uint64_t g_seed; /* printed at start; KILN_TEST_SEED overrides */

/* One process driving n ranks: NCCL communicators, kiln communicators and a stream each; rank i
 * on GPU dev[i] (i, or i modulo the GPUs of a shared world). */
typedef struct world {
  int n;
  int dev[GPU_MAX];
  ncclComm_t nccl[GPU_MAX];
  kilnComm_t kc[GPU_MAX];
  cudaStream_t st[GPU_MAX];
} world;

/* Returns false (after printing why) when the world cannot be made. */
bool world_init(world* w, int n, const kilnCommConfig* cfg);
/* n ranks over the first ngpus GPUs (rank i on GPU devs[i], or i % ngpus when devs is NULL) with
 * kiln communicators of kilnCommCreateShared (CUDA peer memory, no NCCL): rank counts beyond the
 * GPUs at hand. Every rank's kernels must be issued before any is waited for (ranks on one GPU
 * wait for each other). */
bool world_init_shared(world* w, int n, int ngpus, const int* devs, const kilnCommConfig* cfg);
void world_fini(world* w);

/* Per-rank buffers and host copies of one collective call. */
typedef struct call {
  kilnColl_t coll;
  int n;
  size_t count, inElems, outElems;
  kilnDataType_t dt;
  kilnRedOp_t op;
  bool inplace;
  void* dsend[GPU_MAX]; /* device buffers as allocated */
  void* drecv[GPU_MAX];
  const void* sendp[GPU_MAX]; /* the pointers passed to kilnRun */
  void* recvp[GPU_MAX];
  void* hin[GPU_MAX];     /* host inputs (encoded) */
  void* hout;             /* host result of one rank */
  int64_t* vals[GPU_MAX]; /* the small integers behind hin */
  bool borrowed;          /* dsend/drecv are the caller's memory (call_alloc_at): not freed */
} call;

/* A plan's count unit: the elements of a user buffer's block per chunk index (the counts that
 * divide into the plan's chunks are its multiples). */
size_t chunks_per_block(const kilnPlan* p);
/* The SMs each of nranks ranks sharing GPU 0 has to itself (a plan's threadblocks must all be
 * resident: at most this many per rank); 0 where the GPU cannot be asked. */
int gpu_rank_sms(int nranks);
/* Every rank of w a pool of `bytes` from ncclMemAlloc (pool[r]), registered with NCCL as a
 * symmetric window (win[r], in one group) and added to the rank's kiln communicator. */
void window_pools(const world* w, size_t bytes, char** pool, ncclWindow_t* win);
/* Elements of a rank's input and output of (coll, count) among n ranks (count as NCCL's). */
void call_elems(kilnColl_t coll, int n, size_t count, size_t* inElems, size_t* outElems);
/* Allocates buffers for (coll, count, dtype) on every rank of w. */
bool call_alloc(call* c, const world* w, kilnColl_t coll, size_t count, kilnDataType_t dt);
/* The same with the device buffers at sendAt[r] and recvAt[r] (the caller's memory, which must
 * hold inElems and outElems elements). */
bool call_alloc_at(call* c, const world* w, kilnColl_t coll, size_t count, kilnDataType_t dt,
                   char* const* sendAt, char* const* recvAt);
void call_free(call* c, const world* w);
/* Draws fresh inputs for op (small integers exact in every type), uploads them, poisons the
 * outputs, and sets the pointers for the in-place or out-of-place form. Stream-ordered on w->st. */
void call_prepare(call* c, const world* w, kilnRedOp_t op, bool inplace, uint64_t* rng);
/* Compares every rank's output with the CPU reference; on mismatch writes a message naming rank,
 * element, expected and got into msg and returns false. Synchronizes the streams first. */
bool call_check(call* c, const world* w, char* msg, size_t msglen);

/* What the tests read of a communicator (host/runtime_test.h). */
static inline kilnTestCommView comm_view(kilnComm_t c) {
  kilnTestCommView v;
  kilnTestCommRead(c, &v);
  return v;
}

/* The plans folder the suites read (sketches/, n8/): KILN_TEST_PLANS_DIR where set; else a plans
 * folder beside the binary or one level up (a tree packed for a GPU machine: bin/, plans/); else
 * the source tree's, as the build saw it. */
const char* gpu_plans_dir(void);

double gpu_decode(kilnDataType_t t, const void* p, size_t i);
void gpu_encode(kilnDataType_t t, void* p, size_t i, double v);
uint64_t gpu_rand(uint64_t* s);
bool gpu_reduces(kilnColl_t c);

/* ---- the runtime suites' shared steps (test_gpu_plans, _sym, _graphs, _streams, _faults) ---- */

/* The PRE_ALL hook of a GPU suite binary (one per binary): counts the GPUs once and fixes the
 * seed (gpu_suite_start); both reach the test workers (separate processes) through the
 * environment. */
#define GPU_SUITE_HOOK(name)                             \
  ReportHook(PRE_ALL)(struct criterion_test_set * set) { \
    (void)set;                                           \
    gpu_suite_start(name);                               \
  }
void gpu_suite_start(const char* suite);

#define ALL_DTYPES 12

typedef struct loaded {
  kilnPlan* plan;
  kilnExec_t ex[GPU_MAX];
} loaded;

/* A (data type, op) pair of a size sweep. */
typedef struct typedOp {
  kilnDataType_t dt;
  kilnRedOp_t op;
} typedOp;

/* "s" after a count of n things but one. */
const char* plural(int n);

/* The GPU count and seed the PRE_ALL hook left in the environment (test workers are separate
 * processes). */
void gpu_env(void);

/* Every test's .init but the shared suites': skips without 2 GPUs. */
void gpu_init(void);

/* The .init of tests whose ranks may share the GPUs there are (sweep_world's shared suites,
 * kilnCommCreateShared worlds): skips without a GPU. */
void gpu_init_shared(void);

/* GPUs the single-size tests use: every GPU there is, as 8, 4 or 2. */
int suite_gpus(void);

/* Loads plan (which l then owns) on every rank of w. */
void load_plan(loaded* l, const world* w, kilnPlan* plan);
/* Asserts that plan passes kilnPlanVerify (default options), then load_plan. */
void load_verified(loaded* l, const world* w, kilnPlan* plan);
/* Loads the classic plan `algo` for coll (kilnClassicPlan with these options) on every rank. */
/* kiln classic's plan of algo for coll on n ranks (asserted made). */
kilnPlan* classic_plan(const char* algo, kilnColl_t coll, int n, int chunks, int instances, kilnProto_t proto,
                       bool inplace);
void load(loaded* l, const world* w, const char* algo, kilnColl_t coll, int chunks, int instances,
          kilnProto_t proto, bool inplace);
void unload(loaded* l, const world* w);

/* No rank's communicator recorded an error on the GPU. */
void assert_no_async_error(const world* w);
/* The same, naming what ran (a plan) in the failure. */
void assert_no_async_error_at(const world* w, const char* what);

/* CUDA graphs of one call per rank: capture_begin (after the stream's pending work) and
 * capture_end around the rank's call, replay_all launches every rank's graph. */
void capture_begin(const world* w, int r);

/* Captures begun on every rank's stream at once (capture_begin's synchronization, an unsafe call
 * while this thread captures, would end the captures begun before it). */
void capture_begin_all(const world* w);
void capture_end(const world* w, int r, cudaGraphExec_t* ge);

/* Every rank's capture ended, then each graph instantiated: instantiating one while this thread
 * still captures another stream (thread-local mode) is refused (cudaErrorStreamCaptureUnsupported). */
void capture_end_all(const world* w, cudaGraphExec_t* ge);
void replay_all(const world* w, cudaGraphExec_t* ge);
/* No settings: the environment list of world_init_env_as that sets nothing. */
extern const char* const kNoEnv[1];

/* world_init with settings from the environment: env holds name, value pairs, NULL-terminated,
 * each set while the communicators are created (which read them) and removed after. */
bool world_init_env_as(world* w, int n, bool shared, const kilnCommConfig* cfg, const char* const* env);

/* The world of a sweep of n ranks: n GPUs, or (shared) n ranks over the fewer GPUs there are
 * (world_init_shared: kilnCommCreateShared, no NCCL; where there are n GPUs the n-GPU suite runs
 * and the shared one skips). Skips when neither fits this machine. */
void sweep_world(world* w, int n, bool shared, const kilnCommConfig* cfg, const char* const* env);

/* Runs the loaded plan on every rank and checks the result. */
void run_check(const loaded* l, const world* w, call* c, kilnRedOp_t op, bool inplace, uint64_t* rng);

/* Loads a registry entry's plan (its XML) on every rank. */
void load_entry(loaded* l, const world* w, const kilnRegistryEntry* e);

/* The symmetric-memory algorithms (kilnSymRun, kernels/sym.cuh) and the collective of each. */
extern const kilnSymAlgo_t kSymAlgos[5];
kilnColl_t sym_coll(kilnSymAlgo_t a);

/* Issues one call of algorithm a on ranks [r0, r1) of w, inside one group when grouped. */
void sym_issue(const world* w, const call* c, kilnSymAlgo_t a, kilnRedOp_t op, int r0, int r1, bool grouped);
/* One call of algorithm a on every rank (no synchronization; grouped: in one kilnGroupStart/End,
 * each GPU's launches issued by its own launcher thread), then the check. */
void sym_run_check_as(const world* w, call* c, kilnSymAlgo_t a, kilnRedOp_t op, bool inplace, uint64_t* rng,
                      bool grouped);
void sym_run_check(const world* w, call* c, kilnSymAlgo_t a, kilnRedOp_t op, bool inplace, uint64_t* rng);

/* `calls` int32 sums of `count` elements with algorithm a captured in a CUDA graph per rank, then
 * replayed `replays` times, each on fresh data and checked. */
void sym_graph_check_call(const world* w, kilnSymAlgo_t a, call* cp, int calls, int replays, uint64_t* rng);
void sym_graph_check(const world* w, kilnSymAlgo_t a, size_t count, int replays, uint64_t* rng);

/* Every rank's `count` int32 elements at buf[r] are `mul` times the sum of vals over the ranks. */
void assert_times_sum(const world* w, void* const* buf, int64_t* const* vals, size_t count, int64_t mul,
                      const char* what);

/* Rank 0's count of calls that went direct into the clique's buffers. */
uint64_t peer_calls(const world* w);

/* `times` replays of every rank's graph ge (capture_plan_call on c), each on fresh data, checked. */
void replay_check(const world* w, call* c, cudaGraphExec_t* ge, int times, const char* when, uint64_t* rng);

#endif
