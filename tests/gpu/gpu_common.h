/*
 * Helpers shared by the GPU suites: skipping where there are fewer than 2 GPUs, worlds of NCCL +
 * kiln communicators driven by one process, exact small-integer data in every NCCL type, CPU
 * references and checks.
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
#include "kiln/runtime.h"

#define GPU_MAX 8

extern int g_ngpus;      /* visible GPUs, counted in a child process before any test forks */
extern uint64_t g_seed;  /* printed at start; KILN_TEST_SEED overrides */

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
  void* dsend[GPU_MAX];   /* device buffers as allocated */
  void* drecv[GPU_MAX];
  const void* sendp[GPU_MAX]; /* the pointers passed to kilnRun */
  void* recvp[GPU_MAX];
  void* hin[GPU_MAX];     /* host inputs (encoded) */
  void* hout;             /* host result of one rank */
  int64_t* vals[GPU_MAX]; /* the small integers behind hin */
  bool borrowed;          /* dsend/drecv are the caller's memory (call_alloc_at): not freed */
} call;

/* Elements of a rank's input and output of (coll, count) among n ranks (count as NCCL's). */
void call_elems(kilnColl_t coll, int n, size_t count, size_t* inElems, size_t* outElems);
/* Allocates buffers for (coll, count, dtype) on every rank of w. */
bool call_alloc(call* c, const world* w, kilnColl_t coll, size_t count, kilnDataType_t dt);
/* The same with the device buffers at sendAt[r] and recvAt[r] (the caller's memory, which must
 * hold inElems and outElems elements). */
bool call_alloc_at(call* c, const world* w, kilnColl_t coll, size_t count, kilnDataType_t dt, char* const* sendAt,
                   char* const* recvAt);
void call_free(call* c, const world* w);
/* Draws fresh inputs for op (small integers exact in every type), uploads them, poisons the
 * outputs, and sets the pointers for the in-place or out-of-place form. Stream-ordered on w->st. */
void call_prepare(call* c, const world* w, kilnRedOp_t op, bool inplace, uint64_t* rng);
/* Compares every rank's output with the CPU reference; on mismatch writes a message naming rank,
 * element, expected and got into msg and returns false. Synchronizes the streams first. */
bool call_check(call* c, const world* w, char* msg, size_t msglen);

double gpu_decode(kilnDataType_t t, const void* p, size_t i);
void gpu_encode(kilnDataType_t t, void* p, size_t i, double v);
uint64_t gpu_rand(uint64_t* s);
bool gpu_reduces(kilnColl_t c);

#endif
