/* The copy-engine form of direct allgather and alltoall (host/sym.c issue_copy_engine;
 * kernels/sym.cuh bodyDirect): what the host and the kernels share beyond kiln_dev.h. */
#ifndef KILN_KERNELS_SYM_CE_H
#define KILN_KERNELS_SYM_CE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* kilnSymArgs.direct: 0 staged; KILN_SYM_DIRECT_SM: the kernel stores every piece into the
 * outputs (and two-shot allreduce its reduced shares); the copy-engine form is two kernels of one
 * block around the copies: ARRIVE (publish and wait for phase 0: every peer's output may be
 * written) and DONE (phase 1: every peer's copies into this rank's output are over).
 * KILN_SYM_DIRECT_REDUCE_CE, host only: allreduce as a staged reducescatter into this rank's
 * share of the output, the engine's copies of it into the peers' outputs, then DONE (host/sym.c
 * issue_reduce_then_copy; the kernels are launched with 0 and DONE, never with it). */
enum {
  KILN_SYM_DIRECT_SM = 1,
  KILN_SYM_DIRECT_ARRIVE = 2,
  KILN_SYM_DIRECT_DONE = 3,
  KILN_SYM_DIRECT_REDUCE_CE = 4
};

/* Copies `bytes` from src to dst (device memory of the current device, 16-byte aligned, bytes a
 * multiple of 16) with `blocks` blocks of 512 threads on `stream`. Returns a cudaError_t value. */
int kilnSymCopyLaunch(void* dst, const void* src, size_t bytes, int blocks, void* stream);

#ifdef __cplusplus
}
#endif

#endif
