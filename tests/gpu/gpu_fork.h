/* A process per rank for the GPU suites (tests/gpu/gpu_common.c). */
#ifndef KILN_TESTS_GPU_FORK_H
#define KILN_TESTS_GPU_FORK_H

#include <nccl.h>
#include <stdbool.h>
#include <stddef.h>

/* A process per rank, forked before any CUDA call in it (call before touching CUDA): rank 0 makes
 * the NCCL id with getId and hands it to ranks 1 to n - 1 through pipes; every rank then returns
 * body(rank, n, &id, ctx) as its exit status (0: passed; codes other than GPU_RANK_NO_ID name the
 * step that failed). Waits for every rank; false, with msg naming the first rank that did not exit
 * 0, when any did not. A rank whose id never came (rank 0 failed before handing it on) exits with
 * GPU_RANK_NO_ID instead of waiting. */
enum { GPU_RANK_NO_ID = 10 };
typedef int (*gpu_rank_body)(int rank, int n, const ncclUniqueId* id, void* ctx);
bool gpu_fork_ranks(int n, ncclResult_t (*getId)(ncclUniqueId*), gpu_rank_body body, void* ctx, char* msg,
                    size_t msglen);

#endif
