/*
 * The plan registry: which plan serves a collective call.
 *
 * Two kinds of entries, searched together:
 * - baked plans, compiled into the library at build time (every plan under KILN_PLANS_DIR, see
 *   gen/): each carries launch functions of its generated kernel for the data types that were
 *   baked (by default float, half, bfloat16, int32 with sum/avg for plans that reduce; every data
 *   type of a baked element size for plans that only move data);
 * - plans loaded from XML at run time (kilnRegistryLoadFile / kilnRegistryLoadPath, e.g. from the
 *   KILN_PLANS environment variable in the NCCL drop-in): these always run on the interpreter.
 *
 * Selection (kilnRegistrySelect) keeps the entries whose collective and rank count equal the
 * call's, whose byte range [minBytes, maxBytes] holds the call's bytes (kilnRegistryCallBytes) and
 * whose form fits the call (inplace entries serve in-place calls, outofplace entries out-of-place
 * ones; no entry serves an in-place alltoall). Among those it prefers, in order: plans loaded at
 * run time (the user asked for them: the narrowest byte range, then the one loaded last, so
 * that plans loaded for different sizes each serve their own and a plan loaded again for the
 * same sizes takes over), entries with a baked kernel for the call's dtype and op that runs by
 * default (inlined steps: the runtime interprets the others unless told otherwise), the
 * narrowest byte range, then table order. So every rank that has the same plans decides the same
 * way. Every data type and op runs, baked or interpreted.
 *
 * Bytes are the collective's reference size, as in plan.h and the simulator: allreduce: per-rank
 * input; allgather: total output; reducescatter: total input; alltoall: total input.
 *
 * Ownership: entries and their plans belong to the registry and live until kilnRegistryReset
 * (loaded entries) or the end of the process (baked entries). All functions are thread-safe.
 */
#ifndef KILN_REGISTRY_H
#define KILN_REGISTRY_H

#include "kiln/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A baked kernel's launch function: args is the runtime's kilnDevArgs (kernels/kiln_dev.h),
 * launched with args->ntbs blocks of `threads` threads on `stream` (a cudaStream_t). Returns a
 * cudaError_t value (0: launched). Same contract as the interpreter's kilnInterpLaunch.
 * launch(NULL, 0, NULL) only loads the kernel on the current device: do it before the first
 * launch (kilnPlanLoad does), since CUDA's lazy loading during a spinning kiln kernel on the same
 * device can deadlock. */
typedef int (*kilnBakedLaunch_t)(const void* args, int threads, void* stream);

typedef struct kilnRegistryEntry {
  const char* name;          /* the plan's name */
  const char* ident;         /* baked: the C identifier of its file (gen/); loaded: its path */
  kilnColl_t coll;
  int nranks;
  uint64_t minBytes, maxBytes; /* inclusive range of reference bytes it serves */
  bool inplace, outofplace;  /* call forms it serves */
  kilnProto_t proto;
  bool reduces;              /* the collective reduces (baked kernels then do sum/avg only) */
  const char* xml;           /* baked: the plan as XML; loaded: NULL */
  kilnBakedLaunch_t launch[KILN_NUM_DTYPES]; /* baked kernel per dtype; NULL: interpreter */
  bool inlined;              /* baked with its steps inlined (gen/: few steps); such kernels run
                                by default, the others only on kilnExecUseBaked (runtime.h) */
} kilnRegistryEntry;

/* The reference bytes of an NCCL-style call (count as NCCL counts it: allreduce elements per
 * rank; allgather sendcount; reducescatter recvcount; alltoall elements per peer). 0 for an
 * unknown dtype or collective. */
KILN_API uint64_t kilnRegistryCallBytes(kilnColl_t coll, int nranks, size_t count,
                                        kilnDataType_t dtype);

/* Whether an NCCL-style call of `rank` is in place, as NCCL defines it: allreduce and alltoall
 * sendbuf == recvbuf; allgather sendbuf == recvbuf + rank * count elements; reducescatter
 * recvbuf == sendbuf + rank * count elements. */
KILN_API bool kilnRegistryCallInPlace(kilnColl_t coll, int rank, const void* sendbuf,
                                      const void* recvbuf, size_t count, kilnDataType_t dtype);

/* The entry that serves this call (see the rules above), or NULL: no plan, use NCCL. Never sets
 * an error. Does not block. */
KILN_API const kilnRegistryEntry* kilnRegistrySelect(kilnColl_t coll, int nranks, uint64_t bytes,
                                                     bool inplace, kilnDataType_t dtype,
                                                     kilnRedOp_t op);

/* The same choice over a caller's array of entries (no loaded plans involved); returns an index
 * into entries or -1. What kilnRegistrySelect applies to the baked table. */
KILN_API int kilnRegistryPick(const kilnRegistryEntry* entries, int n, kilnColl_t coll, int nranks,
                              uint64_t bytes, bool inplace, kilnDataType_t dtype, kilnRedOp_t op);

/* The baked kernel of entry e for (dtype, op), or NULL when the call must run on the
 * interpreter (loaded plan, dtype not baked, or an op other than sum/avg on a plan that
 * reduces). */
KILN_API kilnBakedLaunch_t kilnRegistryKernel(const kilnRegistryEntry* e, kilnDataType_t dtype,
                                              kilnRedOp_t op);

/* The baked entry whose plan has exactly p's shape (collective, ranks, protocol, chunk counts,
 * threadblocks with their peers and channels, every step), whatever p's name and byte range; NULL
 * if none. The runtime (kilnPlanLoad) uses it to run any plan that was baked, loaded from
 * wherever, with its generated kernel. Never sets an error. */
KILN_API const kilnRegistryEntry* kilnRegistryBakedFor(const kilnPlan* p);

/* The plan of entry e (baked entries parse their XML on the first call). *out belongs to the
 * registry. */
KILN_API kilnResult_t kilnRegistryPlan(const kilnRegistryEntry* e, const kilnPlan** out);

/* Reads a plan file, verifies it (kilnPlanVerify) and adds it as a loaded entry; out may be
 * NULL. A plan that fails is refused with an error naming the file and plan. */
KILN_API kilnResult_t kilnRegistryLoadFile(const char* path, const kilnRegistryEntry** out);
/* Adds a copy of a verified plan as a loaded entry (ident = "(memory)"); out may be NULL. */
KILN_API kilnResult_t kilnRegistryAddPlan(const kilnPlan* plan, const kilnRegistryEntry** out);
/* Loads every plan named in a ':'-separated list of files and folders (a folder: its *.xml, in
 * name order). Stops at the first failure. */
KILN_API kilnResult_t kilnRegistryLoadPath(const char* list);
/* Drops every loaded entry (baked ones stay). Entries and plans returned before are invalid. */
KILN_API void kilnRegistryReset(void);

/* Enumeration: baked entries first (table order), then loaded ones (in load order). */
KILN_API int kilnRegistryCount(void);
KILN_API const kilnRegistryEntry* kilnRegistryAt(int i);
/* The entry whose plan name (or baked ident) is `name`, loaded ones first; NULL if none. */
KILN_API const kilnRegistryEntry* kilnRegistryFind(const char* name);

/* The baked table (generated by gen/ into baked_registry.c; an empty one without CUDA). */
KILN_API const kilnRegistryEntry* kilnBakedTable(int* n);

#ifdef __cplusplus
}
#endif
#endif /* KILN_REGISTRY_H */
