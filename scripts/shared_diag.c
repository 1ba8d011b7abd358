/*
 * Where a classic plan's wrong sums come from, with ranks sharing GPUs (tests/gpu's
 * world_init_shared: kilnCommCreateShared, no NCCL). For each case of the list below: n ranks
 * placed on GPUs as given, a classic plan (algorithm, collective, chunks, instances, protocol),
 * one call of `count` elements summed, every rank's output against the CPU; a wrong element's
 * difference is matched against each rank's input there (missing: want - got equals that rank's
 * value; twice: got - want does), and the rank that explains the most wrong elements is named;
 * a call slower than 1 s is reported with its time. The last two cases make one 1-element call
 * first, so that the plan's scratch buffer grows at the first checked call (what found the
 * cudaFree on the call path: bench/results/h200-s22 runs 2-3).
 * Build (CUDA build folder B):
 *   cc -O2 -std=gnu11 -Iinclude -Ihost -Itests/gpu -I/usr/local/cuda/include \
 *      scripts/shared_diag.c B/tests/gpu/libkiln_gpu_test_common.a B/host/libkiln_runtime.a \
 *      B/gen/libkiln_registry.a B/solver/libkiln_core.a -L/usr/local/cuda/lib64 -lnccl -lcudart \
 *      -lxml2 -lstdc++ -lm -lpthread -ldl -o shared_diag
 * Run: shared_diag [CASE...]   (no argument: every case; a case by its number)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu_common.h"
#include "kiln/plan.h"

typedef struct {
  const char* what;
  int n;
  int devs[8];
  const char* algo;
  kilnColl_t coll;
  int chunks, instances;
  kilnProto_t proto;
  size_t count;
  kilnDataType_t dt;
  size_t first; /* a call of this many elements before the three checked ones (0: none) */
} diagCase;

static const diagCase kCases[] = {
    {"8 ranks i%4", 8, {0, 1, 2, 3, 0, 1, 2, 3}, "direct", KILN_COLL_ALLREDUCE, 2, 2, KILN_PROTO_SIMPLE, 1003, KILN_INT8, 0},
    {"8 ranks i/2", 8, {0, 0, 1, 1, 2, 2, 3, 3}, "direct", KILN_COLL_ALLREDUCE, 2, 2, KILN_PROTO_SIMPLE, 1003, KILN_INT8, 0},
    {"8 ranks i%4 c1 i1", 8, {0, 1, 2, 3, 0, 1, 2, 3}, "direct", KILN_COLL_ALLREDUCE, 1, 1, KILN_PROTO_SIMPLE, 1003, KILN_INT8, 0},
    {"8 ranks i%4 f32", 8, {0, 1, 2, 3, 0, 1, 2, 3}, "direct", KILN_COLL_ALLREDUCE, 2, 2, KILN_PROTO_SIMPLE, 1003, KILN_FLOAT32, 0},
    {"8 ranks i%4 f32 64Ki", 8, {0, 1, 2, 3, 0, 1, 2, 3}, "direct", KILN_COLL_ALLREDUCE, 2, 2, KILN_PROTO_SIMPLE, 65536, KILN_FLOAT32, 0},
    {"8 ranks i%4 RS", 8, {0, 1, 2, 3, 0, 1, 2, 3}, "direct", KILN_COLL_REDUCESCATTER, 1, 1, KILN_PROTO_SIMPLE, 1003, KILN_INT8, 0},
    {"8 ranks i%4 LL", 8, {0, 1, 2, 3, 0, 1, 2, 3}, "direct", KILN_COLL_ALLREDUCE, 2, 2, KILN_PROTO_LL, 1003, KILN_INT8, 0},
    {"8 ranks i%4 ring", 8, {0, 1, 2, 3, 0, 1, 2, 3}, "ring", KILN_COLL_ALLREDUCE, 2, 2, KILN_PROTO_SIMPLE, 1003, KILN_INT8, 0},
    {"4 ranks on 4 GPUs", 4, {0, 1, 2, 3}, "direct", KILN_COLL_ALLREDUCE, 2, 2, KILN_PROTO_SIMPLE, 1003, KILN_INT8, 0},
    {"4 ranks on 2 GPUs", 4, {0, 1, 0, 1}, "direct", KILN_COLL_ALLREDUCE, 2, 2, KILN_PROTO_SIMPLE, 1003, KILN_INT8, 0},
    {"6 ranks on 3 GPUs", 6, {0, 1, 2, 0, 1, 2}, "direct", KILN_COLL_ALLREDUCE, 2, 2, KILN_PROTO_SIMPLE, 1003, KILN_INT8, 0},
    {"5 ranks on 4 GPUs", 5, {0, 1, 2, 3, 0}, "direct", KILN_COLL_ALLREDUCE, 2, 2, KILN_PROTO_SIMPLE, 1003, KILN_INT8, 0},
    {"8 ranks on 8 slots of 1 GPU", 8, {0, 0, 0, 0, 0, 0, 0, 0}, "direct", KILN_COLL_ALLREDUCE, 1, 1, KILN_PROTO_SIMPLE, 1003, KILN_INT8, 0},
    {"8 ranks i%4, 1 element first", 8, {0, 1, 2, 3, 0, 1, 2, 3}, "direct", KILN_COLL_ALLREDUCE, 2, 2, KILN_PROTO_SIMPLE, 1003, KILN_INT8, 1},
    {"4 ranks on 2 GPUs, 1 element first", 4, {0, 1, 0, 1}, "direct", KILN_COLL_ALLREDUCE, 2, 2, KILN_PROTO_SIMPLE, 1003, KILN_INT8, 1},
};
#define NCASES ((int)(sizeof(kCases) / sizeof(kCases[0])))

static int runCase(int ci, uint64_t* rng) {
  const diagCase* d = &kCases[ci];
  int ngpus = 0;
  cudaGetDeviceCount(&ngpus);
  for (int i = 0; i < d->n; i++)
    if (d->devs[i] >= ngpus) {
      printf("case %d (%s): skipped, GPU %d missing\n", ci, d->what, d->devs[i]);
      return 0;
    }
  world w;
  if (!world_init_shared(&w, d->n, ngpus, d->devs, NULL)) {
    printf("case %d (%s): world: %s\n", ci, d->what, kilnLastError());
    return 1;
  }
  kilnClassicOptions o = KILN_CLASSIC_OPTIONS_INIT;
  o.chunks = d->chunks;
  o.instances = d->instances;
  o.proto = d->proto;
  kilnPlan* plan = NULL;
  if (kilnClassicPlan(d->algo, d->coll, d->n, &o, &plan) != KILN_SUCCESS) {
    printf("case %d (%s): plan: %s\n", ci, d->what, kilnLastError());
    world_fini(&w);
    return 1;
  }
  kilnExec_t ex[GPU_MAX] = {0};
  for (int r = 0; r < d->n; r++)
    if (kilnPlanLoad(w.kc[r], plan, &ex[r]) != KILN_SUCCESS) {
      printf("case %d (%s): load rank %d: %s\n", ci, d->what, r, kilnLastError());
      for (int q = 0; q < r; q++) kilnExecFree(ex[q]);
      kilnPlanFree(plan);
      world_fini(&w);
      return 1;
    }
  call c;
  if (d->first) { /* the scratch buffer then grows at the first checked call */
    call_alloc(&c, &w, d->coll, d->first, d->dt);
    call_prepare(&c, &w, KILN_SUM, false, rng);
    for (int r = 0; r < d->n; r++) kilnRun(ex[r], c.sendp[r], c.recvp[r], c.count, c.dt, KILN_SUM, w.st[r]);
    char msg[256];
    if (!call_check(&c, &w, msg, sizeof msg)) printf("case %d: the first call: %s\n", ci, msg);
    call_free(&c, &w);
  }
  call_alloc(&c, &w, d->coll, d->count, d->dt);
  int bad = 0;
  for (int rep = 0; rep < 3; rep++) {
    call_prepare(&c, &w, KILN_SUM, false, rng);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int r = 0; r < d->n; r++)
      if (kilnRun(ex[r], c.sendp[r], c.recvp[r], c.count, c.dt, KILN_SUM, w.st[r]) != KILN_SUCCESS)
        printf("case %d: run rank %d: %s\n", ci, r, kilnLastError());
    const size_t es = kilnDataTypeSize(d->dt);
    for (int r = 0; r < d->n; r++) {
      cudaSetDevice(w.dev[r]);
      cudaStreamSynchronize(w.st[r]);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    const double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    if (ms > 1000) printf("case %d (%s) call %d: %.0f ms\n", ci, d->what, rep, ms);
    for (int r = 0; r < d->n; r++) {
      cudaSetDevice(w.dev[r]);
      cudaMemcpy(c.hout, c.recvp[r], c.outElems * es, cudaMemcpyDeviceToHost);
      size_t nbad = 0, first = 0, last = 0;
      int missing[GPU_MAX] = {0}, twice[GPU_MAX] = {0};
      for (size_t i = 0; i < c.outElems; i++) {
        const size_t j = d->coll == KILN_COLL_REDUCESCATTER ? (size_t)r * c.count + i : i;
        double want = 0;
        for (int q = 0; q < d->n; q++) want += (double)c.vals[q][j];
        const double got = gpu_decode(d->dt, c.hout, i);
        if (got == want) continue;
        if (!nbad) first = i;
        last = i;
        nbad++;
        for (int q = 0; q < d->n; q++) {
          if (c.vals[q][j] != 0 && want - got == (double)c.vals[q][j]) missing[q]++;
          if (c.vals[q][j] != 0 && got - want == (double)c.vals[q][j]) twice[q]++;
        }
      }
      if (!nbad) continue;
      bad = 1;
      int qm = 0, qt = 0;
      for (int q = 1; q < d->n; q++) {
        if (missing[q] > missing[qm]) qm = q;
        if (twice[q] > twice[qt]) qt = q;
      }
      printf("case %d (%s) call %d rank %d: %zu of %zu wrong (elements %zu-%zu); rank %d's value missing in %d, "
             "rank %d's twice in %d\n", ci, d->what, rep, r, nbad, c.outElems, first, last, qm, missing[qm], qt,
             twice[qt]);
    }
  }
  kilnResult_t ae = KILN_SUCCESS;
  for (int r = 0; r < d->n; r++) {
    kilnCommGetAsyncError(w.kc[r], &ae);
    if (ae != KILN_SUCCESS) printf("case %d: rank %d async error\n", ci, r);
  }
  if (!bad) printf("case %d (%s): ok (3 calls)\n", ci, d->what);
  call_free(&c, &w);
  for (int r = 0; r < d->n; r++) kilnExecFree(ex[r]);
  kilnPlanFree(plan);
  world_fini(&w);
  return bad;
}

int main(int argc, char** argv) {
  uint64_t rng = 12345;
  int bad = 0;
  if (argc < 2)
    for (int ci = 0; ci < NCASES; ci++) bad |= runCase(ci, &rng);
  for (int a = 1; a < argc; a++) {
    const int ci = atoi(argv[a]);
    if (ci >= 0 && ci < NCASES) bad |= runCase(ci, &rng);
  }
  return bad;
}
