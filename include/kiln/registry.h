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
 * ones; no entry serves an in-place alltoall), and takes the one kilnRegistryPrefer ranks first:
 * plans loaded at run time (the user asked for them: the narrowest byte range, then the one loaded
 * last, so that plans loaded for different sizes each serve their own and a plan loaded again for
 * the same sizes takes over), then entries with a baked kernel for the call's dtype and op that
 * runs by default (inlined steps: the runtime interprets the others unless told otherwise), the
 * narrowest byte range, then table order. So every rank that has the same plans decides the same
 * way. Every data type and op runs, baked or interpreted.
 *
 * Which of all of kiln's candidates serves a call, plans of this registry, the symmetric-memory
 * kernels or NCCL, is the selector's choice (kilnSelect, kiln/runtime.h; the rule below, "The
 * selector"): loaded plans replace the defaults where their ranges and forms take a call, and
 * extend them elsewhere.
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
  const char* name;  /* the plan's name */
  const char* ident; /* baked: the C identifier of its file (gen/); loaded: its path */
  kilnColl_t coll;
  int nranks;
  uint64_t minBytes, maxBytes; /* inclusive range of reference bytes it serves */
  bool inplace, outofplace;    /* call forms it serves */
  kilnProto_t proto;
  bool reduces;                              /* the collective reduces (baked kernels then do sum/avg only) */
  const char* xml;                           /* baked: the plan as XML; loaded: NULL */
  kilnBakedLaunch_t launch[KILN_NUM_DTYPES]; /* baked kernel per dtype; NULL: interpreter */
  bool inlined; /* baked with its steps inlined (gen/: few steps); such kernels run
                                by default, the others only on kilnExecUseBaked (runtime.h) */
} kilnRegistryEntry;

/* Whether e is a plan loaded at run time (kilnRegistryLoadFile, kilnRegistryLoadPath,
 * kilnRegistryAddPlan), not a baked one. */
KILN_API bool kilnRegistryIsLoaded(const kilnRegistryEntry* e);

/* True when a ranks before b for a call of (dtype, op) that both serve: the order of the rules
 * above (a loaded plan before a baked one; of two loaded, the narrower range, then the one loaded
 * last; of two baked, the one whose baked kernel runs by default, then the narrower range, then
 * the earlier in the table). A predicate. */
KILN_API bool kilnRegistryPrefer(const kilnRegistryEntry* a, const kilnRegistryEntry* b, kilnDataType_t dtype,
                                 kilnRedOp_t op);

/* Whether entry e takes a call of (coll, nranks, bytes, inplace) by its collective, rank count,
 * byte range and form (no entry takes an in-place alltoall). A predicate. */
KILN_API bool kilnRegistryFits(const kilnRegistryEntry* e, kilnColl_t coll, int nranks, uint64_t bytes,
                               bool inplace);

/* The reference bytes of an NCCL-style call (count as NCCL counts it: allreduce elements per
 * rank; allgather sendcount; reducescatter recvcount; alltoall elements per peer). 0 for an
 * unknown dtype or collective. */
KILN_API uint64_t kilnRegistryCallBytes(kilnColl_t coll, int nranks, size_t count, kilnDataType_t dtype);

/* Whether an NCCL-style call of `rank` is in place, as NCCL defines it: allreduce and alltoall
 * sendbuf == recvbuf; allgather sendbuf == recvbuf + rank * count elements; reducescatter
 * recvbuf == sendbuf + rank * count elements. */
KILN_API bool kilnRegistryCallInPlace(kilnColl_t coll, int rank, const void* sendbuf, const void* recvbuf,
                                      size_t count, kilnDataType_t dtype);

/* The entry that serves this call (see the rules above), or NULL: no plan, use NCCL. Never sets
 * an error. Does not block. */
KILN_API const kilnRegistryEntry* kilnRegistrySelect(kilnColl_t coll, int nranks, uint64_t bytes,
                                                     bool inplace, kilnDataType_t dtype, kilnRedOp_t op);

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

/* ---- The selector (kilnSelect, kiln/runtime.h): its vocabulary and its rule ----
 *
 * What serves a collective call is one of kiln's candidates or NCCL. The candidates are the plans
 * of this registry the communicator has loaded (kilnPlanLoad) and, while they exist, the
 * symmetric-memory kernels (kilnSymRun). The rule, the same on every rank for the same call
 * (every fact it reads is):
 *   1. An op or data type kiln does not have (NCCL's PreMulSum, say) goes to NCCL.
 *   2. Loaded plans whose range and form take the call and that can run it serve it, the first
 *      by kilnRegistryPrefer: a loaded plan replaces the defaults where it serves.
 *   3. A rank alone in its process (the peers' plain buffers out of its reach), an allreduce
 *      above KILN_STAGED_AR_MAX_BYTES (default 512 MiB on 4 ranks, no limit on others) whose
 *      output lies in no symmetric window: NCCL (its ring measured faster there than kiln's
 *      staging; host/select.c has the figures).
 *   4. The defaults, kind by kind in the selector's order (host/select.c kDefaults): the
 *      symmetric kernels in their measured ranges (host/select.c kSymRanges: 2 and 4 ranks, every
 *      size) where their staging holds the call, then the baked plans, the first by
 *      kilnRegistryPrefer, that can run it.
 *   5. Nothing else: NCCL.
 * A plan "can run" a call when kilnPlanSupports grants its count, dtype, op and form, the caller
 * has the plan's exec where it names execs, and, for a call made during a CUDA stream capture,
 * the plan's scratch already holds the call
 * (kilnExecScratchHolds): a captured call whose plan would have to grow its scratch (an
 * allocation inside the capture, which could fail on one rank alone) is passed over, to the next
 * candidate or NCCL. The capture state of a call must be the same on every rank (every rank
 * captures the same graph), as NCCL asks of its own calls. */

/* The symmetric-memory kernels' algorithms (kilnSymRun, kiln/runtime.h). */
typedef enum {
  KILN_SYM_NONE = -1,
  KILN_SYM_ALLREDUCE_ONESHOT = 0,
  KILN_SYM_ALLREDUCE_TWOSHOT = 1,
  KILN_SYM_REDUCESCATTER = 2,
  KILN_SYM_ALLGATHER = 3,
  KILN_SYM_ALLTOALL = 4
} kilnSymAlgo_t;
/* "sym-allreduce-oneshot", ...; "none" for anything else. */
KILN_API const char* kilnSymAlgoName(kilnSymAlgo_t algo);
/* The collective algorithm a runs. */
KILN_API kilnColl_t kilnSymAlgoColl(kilnSymAlgo_t a);

/* What serves a call. */
typedef enum {
  KILN_SERVE_NCCL = 0, /* the real NCCL */
  KILN_SERVE_PLAN = 1, /* a plan of the registry (kilnChoice.entry) */
  KILN_SERVE_SYM = 2   /* the symmetric-memory kernels (kilnChoice.sym) */
} kilnServe_t;

/* Why: X(enum, text). One table: the enum and kilnSelectReasonText come from it. */
#define KILN_SELECT_REASONS(X)                                                                           \
  X(KILN_SELECT_LOADED, "a plan loaded at run time takes this call")                                     \
  X(KILN_SELECT_SYM_RANGE, "the symmetric kernels' measured range")                                      \
  X(KILN_SELECT_BAKED, "the baked plan for this size")                                                   \
  X(KILN_SELECT_NO_KILN, "no kiln communicator")                                                         \
  X(KILN_SELECT_OP_UNKNOWN, "an op or data type kiln does not run")                                      \
  X(KILN_SELECT_STAGED_AR,                                                                               \
    "a rank alone in its process, plain buffers: NCCL measured faster than kiln's staging")              \
  X(KILN_SELECT_NO_PLAN, "no plan takes this call")                                                      \
  X(KILN_SELECT_CANNOT_RUN, "the plans that take this call cannot run it (count, dtype, op or buffers)") \
  X(KILN_SELECT_CAPTURE_GROW, "captured, and the plan's scratch would have to grow inside the capture")

typedef enum {
#define KILN_X_REASON(name, text) name,
  KILN_SELECT_REASONS(KILN_X_REASON)
#undef KILN_X_REASON
      KILN_NUM_SELECT_REASONS
} kilnSelectReason_t;
/* The reason's text ("no plan takes this call"); never NULL. */
KILN_API const char* kilnSelectReasonText(kilnSelectReason_t r);

/* A collective call as NCCL takes it (count as kilnRun's), and its capture state. */
typedef struct kilnCall {
  kilnColl_t coll;
  const void* sendbuf;
  const void* recvbuf;
  size_t count;
  kilnDataType_t dtype;
  kilnRedOp_t op;
  bool captured; /* made while its stream is capturing a CUDA graph */
} kilnCall;

/* The selector's answer. */
typedef struct kilnChoice {
  kilnServe_t serve;
  int plan;                       /* KILN_SERVE_PLAN: the index of entry among the candidates given */
  const kilnRegistryEntry* entry; /* KILN_SERVE_PLAN, else NULL */
  kilnSymAlgo_t sym;              /* KILN_SERVE_SYM, else KILN_SYM_NONE */
  kilnSelectReason_t reason;
} kilnChoice;

/* What a choice names, for logs and tables: the plan's name, the symmetric algorithm's
 * ("sym-allreduce-oneshot") or "nccl". Never NULL. */
KILN_API const char* kilnChoiceName(const kilnChoice* c);

#ifdef __cplusplus
}
#endif
#endif /* KILN_REGISTRY_H */
