/*
 * The table of kiln's settings (kiln/params.h): X(id, variable, type, default, description), one
 * row per KILN_* environment variable the library reads. The enum below, the reader
 * (solver/params.c), `kiln params` and the documentation's table come from these rows. A default
 * of NULL means the code that reads the setting decides it (per rank count, say), as the row says.
 * Sizes are bytes ("16M" reads as 16 MiB); "off" in a description is what 0 or an unset value
 * means where the row says so.
 */
#ifndef KILN_SOLVER_PARAMS_H
#define KILN_SOLVER_PARAMS_H

#include <stdint.h>

#include "kiln/params.h"
#include "kiln_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_PARAMS(X)                                                                                       \
  /* logging, the drop-in library (host/shim/README.md) */                                                   \
  X(Debug, "KILN_DEBUG", STRING, "ERROR",                                                                    \
    "what kiln prints on stderr: NONE, ERROR, WARN or INFO (INFO: each decision once, the plan that serves " \
    "a call)")                                                                                               \
  X(Disable, "KILN_DISABLE", BOOL, "0", "the drop-in libnccl.so.2 forwards everything to the real NCCL")     \
  X(NcclPath, "KILN_NCCL_PATH", STRING, NULL,                                                                \
    "the real libnccl.so.2 the drop-in loads; unset: a search list (a Python package's, CUDA_HOME, "         \
    "/usr/...)")                                                                                             \
  X(CudaHome, "CUDA_HOME", STRING, NULL,                                                                     \
    "the CUDA toolkit whose lib64 and lib the drop-in searches for the real NCCL")                           \
  X(Plans, "KILN_PLANS", STRING, NULL,                                                                       \
    "plan files and folders (':'-separated) loaded at start; they serve their byte ranges before the "       \
    "defaults")                                                                                              \
  X(StagedARMaxBytes, "KILN_STAGED_AR_MAX_BYTES", SIZE, NULL,                                                \
    "a rank alone in its process: allreduce above this on plain buffers goes to NCCL (default 512M on 4 "    \
    "ranks)")                                                                                                \
  X(TimeoutMs, "KILN_TIMEOUT_MS", INT, NULL,                                                                 \
    "drop-in: a kiln kernel gives up waiting for a peer after this (1..2^31-1 ms; default: no limit, as "    \
    "NCCL)")                                                                                                 \
  X(AbortWaitMs, "KILN_ABORT_WAIT_MS", INT, "1000",                                                          \
    "drop-in, ncclCommAbort/Revoke: ms to wait for kiln's kernels to leave before freeing kiln's window")    \
  /* communicators and plans (host/) */                                                                      \
  X(EmulateNodes, "KILN_EMULATE_NODES", INT, NULL,                                                           \
    "every communicator's ranks form this many nodes of consecutive ranks (not a positive integer: kiln "    \
    "off)")                                                                                                  \
  X(GroupThreads, "KILN_GROUP_THREADS", BOOL, "1",                                                           \
    "a launcher thread per GPU issues a kiln group's launches")                                              \
  X(GroupSpinUs, "KILN_GROUP_SPIN_US", INT, "200",                                                           \
    "microseconds an idle launcher thread spins before it sleeps")                                           \
  X(LL128, "KILN_LL128", BOOL, "0",                                                                          \
    "plans of send and receive steps in LL128 run in LL128 (else as Simple)")                                \
  X(LaunchDriver, "KILN_LAUNCH_DRIVER", BOOL, "1", "the symmetric kernels launch through cuLaunchKernelEx")  \
  X(Fault, "KILN_FAULT", STRING, NULL,                                                                       \
    "tests only: STEP@RANK (or @*) fails a set-up step on that rank: setup (the drop-in's), window (its "    \
    "allocation)")                                                                                           \
  /* the symmetric-memory kernels (host/sym.c, kernels/README.md) */                                         \
  X(Sym, "KILN_SYM", BOOL, "1", "the symmetric-memory kernels serve calls where the selector's ranges say")  \
  X(SymPeers, "KILN_SYM_PEERS", BOOL, "1",                                                                   \
    "one process driving every rank: grouped calls may go zero copy into each other's plain buffers")        \
  X(SymBlocks, "KILN_SYM_BLOCKS", INT, "64", "blocks a symmetric kernel takes at most")                      \
  X(SymReduceBlocks, "KILN_SYM_REDUCE_BLOCKS", INT, "128", "blocks of a reduction in rounds")                \
  X(SymBlockBytes, "KILN_SYM_BLOCK_BYTES", SIZE, "2K", "a block per this much of a segment (at least 1K)")   \
  X(SymLLBytes, "KILN_SYM_LL_BYTES", SIZE, NULL,                                                             \
    "segments up to this go as LL lines (default 512K on 2 ranks, 128K)")                                    \
  X(SymLLReduceBytes, "KILN_SYM_LL_REDUCE_BYTES", SIZE, NULL,                                                \
    "one-shot allreduce and reducescatter as LL lines up to this (default 256K on 4 ranks, else "            \
    "KILN_SYM_LL_BYTES)")                                                                                    \
  X(SymLL2Bytes, "KILN_SYM_LL2_BYTES", SIZE, "128K", "two-shot shares up to this go as LL lines (0: never)") \
  X(SymLL12, "KILN_SYM_LL12", BOOL, "1", "one-shot LL calls of elements up to 4 bytes may go as LL12 lines") \
  X(SymLL12Bytes, "KILN_SYM_LL12_BYTES", SIZE, "8K", "one-shot LL segments above this go as LL12 lines")     \
  X(SymLL128Bytes, "KILN_SYM_LL128_BYTES", SIZE, "128K",                                                     \
    "one-shot segments above this go as LL128 lines (0: never)")                                             \
  X(SymLL128MaxBytes, "KILN_SYM_LL128_MAX_BYTES", SIZE, NULL,                                                \
    "... up to this (default 1M on 2 ranks, 256K)")                                                          \
  X(SymLL2x128Bytes, "KILN_SYM_LL2_128_BYTES", SIZE, NULL,                                                   \
    "two-shot shares above this go as LL128 lines (0: never; default KILN_SYM_LL2_BYTES)")                   \
  X(SymLL2x128MaxBytes, "KILN_SYM_LL2_128_MAX_BYTES", SIZE, "512K", "... up to this")                        \
  X(SymRoundBytes, "KILN_SYM_ROUND_BYTES", SIZE, "0",                                                        \
    "flag form: a piece's bytes per round at most (0: a half)")                                              \
  X(SymRSRoundBytes, "KILN_SYM_RS_ROUND_BYTES", SIZE, NULL,                                                  \
    "reducescatter: bytes per round at most (default 8M on 2 ranks)")                                        \
  X(SymCopyRoundBytes, "KILN_SYM_COPY_ROUND_BYTES", SIZE, "16M",                                             \
    "copies: bytes per round over all regions (0: a half)")                                                  \
  X(SymCopyRoundMaxBytes, "KILN_SYM_COPY_ROUND_MAX_BYTES", SIZE, NULL,                                       \
    "copies of 8 rounds or more: grown rounds up to this (default 32M up to 4 ranks)")                       \
  X(SymCopyBlocks, "KILN_SYM_COPY_BLOCKS", INT, NULL,                                                        \
    "blocks of grown copy rounds (default 128 up to 4 ranks)")                                               \
  X(SymA2ABigBytes, "KILN_SYM_A2A_BIG_BYTES", SIZE, NULL,                                                    \
    "alltoall pieces from this go as a reduction's rounds (default: never on 2 ranks, 128M)")                \
  X(SymMinRounds, "KILN_SYM_MIN_ROUNDS", INT, "4",                                                           \
    "reductions larger than a copy round take at least this many rounds")                                    \
  X(SymDirect, "KILN_SYM_DIRECT", BOOL, "1",                                                                 \
    "outputs in symmetric windows (or a clique's buffers) may go zero copy")                                 \
  X(SymDirectBytes, "KILN_SYM_DIRECT_BYTES", SIZE, NULL,                                                     \
    "zero copy from this size (default 16M on 2 ranks, 1M on 4)")                                            \
  X(SymDirectA2ABytes, "KILN_SYM_DIRECT_A2A_BYTES", SIZE, NULL,                                              \
    "alltoall zero copy from this size (default 4M on 4 ranks, else KILN_SYM_DIRECT_BYTES)")                 \
  X(SymDirectBlocks, "KILN_SYM_DIRECT_BLOCKS", INT, "128", "blocks of a zero-copy allgather or alltoall")    \
  X(SymDirectBlockBytes, "KILN_SYM_DIRECT_BLOCK_BYTES", SIZE, "8K",                                          \
    "zero-copy copies: a block per this much")                                                               \
  X(SymDirectBigBlockBytes, "KILN_SYM_DIRECT_BIG_BLOCK_BYTES", SIZE, "16K", "... for pieces from 1M")        \
  X(SymDirectPreload, "KILN_SYM_DIRECT_PRELOAD", BOOL, "1",                                                  \
    "zero-copy copies load a first pack while they wait")                                                    \
  X(SymCE, "KILN_SYM_CE", BOOL, "1", "zero-copy allgather and alltoall may copy with the copy engine")       \
  X(SymCEBytes, "KILN_SYM_CE_BYTES", SIZE, NULL, "... from this size (default 128M on 2 and 4 ranks)")       \
  X(SymCEBlocks, "KILN_SYM_CE_BLOCKS", INT, "32", "blocks of the local copy beside the copy engine")         \
  X(SymARCE, "KILN_SYM_AR_CE", BOOL, "1", "zero-copy allreduce may reduce then copy with the copy engine")   \
  X(SymARCEBytes, "KILN_SYM_AR_CE_BYTES", SIZE, NULL, "... from this size (default 512M on 2 and 4 ranks)")  \
  X(SymPdl, "KILN_SYM_PDL", BOOL, "1", "symmetric kernels launch with programmatic stream serialization")    \
  X(SymPdlTrigger, "KILN_SYM_PDL_TRIGGER", STRING, "early",                                                  \
    "LL calls let the next kernel start once their lines are out (early) or at their end (end)")

typedef enum {
#define KILN_X_PARAM_ID(id, env, type, def, desc) KILN_PARAM_##id,
  KILN_PARAMS(KILN_X_PARAM_ID)
#undef KILN_X_PARAM_ID
      KILN_NUM_PARAMS
} kilnParamId;

/* A setting's value: the environment's where it is set and parses, else the table's default
 * (bool: 1 or 0; int and size: the number; none: 0). Reads the environment on first use. */
KILN_INTERNAL int64_t kilnParam(kilnParamId id);
/* Whether the environment sets it to a value that parses (so the default does not hold). */
KILN_INTERNAL bool kilnParamIsSet(kilnParamId id);
/* A string setting's value (the environment's, else the default, which may be NULL). */
KILN_INTERNAL const char* kilnParamString(kilnParamId id);
/* The environment's text of any setting as read (NULL: unset), for messages. */
KILN_INTERNAL const char* kilnParamRaw(kilnParamId id);
/* Reads the environment again (for tests that change it between their cases; not thread-safe
 * against readers). */
KILN_INTERNAL void kilnParamsReload(void);

/* KILN_DEBUG as a level: 0 NONE, 1 ERROR (default), 2 WARN, 3 INFO. */
KILN_INTERNAL int kilnDebugLevel(void);
#define KILN_DEBUG_INFO 3

/* KILN_FAULT: whether it names `step` for this rank ("step@rank"; "step@*": every rank). */
KILN_INTERNAL bool kilnFaultAt(const char* step, int rank);

#ifdef __cplusplus
}
#endif
#endif /* KILN_SOLVER_PARAMS_H */
