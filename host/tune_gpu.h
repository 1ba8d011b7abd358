/*
 * kiln tune, its GPU side: the local GPUs as one communicator of kiln's and one of NCCL's, a thread
 * per rank, and one collective call at a time timed in CUDA graphs and checked against a CPU
 * reference. The CPU side (candidates, ranges, the folder written) is solver/tune.h.
 *
 * Ranks: one a GPU (NCCL's communicators from ncclCommInitAll, kiln's from kilnCommCreateAll over
 * them), or, with more ranks than GPUs, rank r on GPU r % GPUs (kiln's communicators over CUDA peer
 * memory, kilnCommCreateShared, and no NCCL: it takes one rank a GPU). The latter is a rehearsal:
 * ranks on one GPU meet over its memory and share its SMs, so its times say nothing of speed.
 *
 * Data: float, sum. Inputs are fresh random multiples of 1/8 in [-8, 8] (every sum of them exact,
 * in any order), drawn per size from the seed given; the reference is computed on the CPU and each
 * rank's output compared with it element for element (bitwise).
 *
 * Internal to kiln: its functions leave libkiln for the CLI and the tests (KILN_INTERNAL).
 * Ownership: kilnTuneGpuOpen's world is freed with kilnTuneGpuClose; plans passed in are only read.
 */
#ifndef KILN_TUNE_GPU_H
#define KILN_TUNE_GPU_H

#include "kiln/plan.h"
#include "kiln_internal.h"
#include "tune.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kilnTuneGpu kilnTuneGpu;

/* How a call is timed: `warmup` calls outside capture, then a CUDA graph of `graph_calls` calls per
 * rank (one untimed launch), launched `reps` times between events on every rank; a launch's time
 * is its slowest rank's, the call's time the median launch's / graph_calls. */
typedef struct kilnTuneTiming {
  int warmup;      /* default 2 */
  int graph_calls; /* default 10 */
  int reps;        /* default 7 */
} kilnTuneTiming;
#define KILN_TUNE_TIMING_INIT \
  { 2, 10, 7 }

/* Sets up nranks ranks (>= 2) over the first ngpus visible GPUs (0: all of them), as above, with one
 * thread per rank for what follows, and describes the machine into *m. KILN_ERR_CUDA "no CUDA device: ..." (CUDA's reason)
 * where none is visible; KILN_ERR_NCCL or the runtime's error where the communicators cannot be made.
 * Blocks until they are. */
KILN_INTERNAL kilnResult_t kilnTuneGpuOpen(int nranks, int ngpus, kilnTuneMachine* m, kilnTuneGpu** out);
KILN_INTERNAL void kilnTuneGpuClose(kilnTuneGpu* g);
/* Whether the world has NCCL (false in a rehearsal). */
KILN_INTERNAL bool kilnTuneGpuHasNccl(const kilnTuneGpu* g);

/* Makes the call of the next kilnTuneGpuRun calls: coll over `bytes` reference bytes (kiln/registry.h;
 * count = bytes / 4 per rank for allreduce, bytes / 4 / nranks for the others, so at least one
 * element), in place or not, on fresh inputs drawn from seed, with their reference. KILN_ERR_INVALID_ARGUMENT
 * for a call of no element or an in-place alltoall; KILN_ERR_CUDA, KILN_ERR_NO_MEMORY where the
 * buffers cannot be had. *count gets the elements per rank as NCCL counts them. */
KILN_INTERNAL kilnResult_t kilnTuneGpuPrepare(kilnTuneGpu* g, kilnColl_t coll, uint64_t bytes, bool inplace,
                                              uint64_t seed, size_t* count);
/* Runs the prepared call with plan (NULL: NCCL) on every rank: once, checked; then timed as t says
 * (NULL: KILN_TUNE_TIMING_INIT); then, out of place, one more graph launch, checked. *us: the
 * call's time. KILN_ERR_UNSUPPORTED: the plan does not take the call (kilnPlanSupports) or the
 * runtime cannot load it (kilnPlanLoad's reason); KILN_ERR_VERIFY: a wrong result (the message names
 * rank, element, expected and got); another error: the call failed (on the GPU: the communicators
 * are made again, so the next call starts clean). Blocks. */
KILN_INTERNAL kilnResult_t kilnTuneGpuRun(kilnTuneGpu* g, const kilnPlan* plan, const kilnTuneTiming* t,
                                          double* us);

#ifdef __cplusplus
}
#endif
#endif /* KILN_TUNE_GPU_H */
