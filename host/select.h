/*
 * The selector's rule (kiln/registry.h, "The selector"; host/select.c) over what it asks of a
 * communicator, so that it runs without a GPU: kilnSelect (host/select_comm.c) answers the
 * questions from a kiln communicator, the CPU tests from tables of their own.
 */
#ifndef KILN_HOST_SELECT_H
#define KILN_HOST_SELECT_H

#include "kiln/registry.h"
#include "kiln_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What the rule asks beyond the call's arguments. Every answer must be the same on every rank for
 * the same call (each says why it is). */
typedef struct kilnSelectView {
  int nranks, rank;
  bool symOn; /* the communicator has the symmetric kernels (staging, KILN_SYM, one node): a
                        setting every rank has alike */
  bool alone; /* no other rank of the communicator lives in this process (no clique):
                        every rank of a communicator is made alike, kilnCommCreate or
                        kilnCommCreateAll of all its ranks */
  void* ctx;  /* the caller's, handed to the questions */
  /* Whether algorithm a's staging holds the call (geometry from settings every rank shares).
   * NULL: it does. */
  bool (*symFits)(void* ctx, kilnSymAlgo_t a);
  /* Whether the call goes zero copy: its output in a symmetric window every rank added (windows
   * are added on every rank or none, at the same offsets), from the zero-copy sizes. NULL: never. */
  bool (*zeroCopy)(void* ctx);
  /* Whether candidate i can run the call (kiln/registry.h, "can run"), and whether its scratch
   * holds the call without growing (asked of captured calls only): from the plan and the calls
   * every rank made of it alike. NULL: every candidate can, and holds. */
  bool (*planRuns)(void* ctx, int i);
  bool (*planHolds)(void* ctx, int i);
} kilnSelectView;

/* The rule: what serves `call` among the candidate plans[0..nplans) (registry entries; loaded
 * and baked ones alike, told apart by kilnRegistryIsLoaded) and the symmetric kernels. */
KILN_INTERNAL kilnChoice kilnSelectRule(const kilnSelectView* v, const kilnRegistryEntry* const* plans,
                                        int nplans, const kilnCall* call);

/* The symmetric algorithm whose measured range takes a call of (coll, nranks, bytes, inplace)
 * (host/select.c kSymRanges), or KILN_SYM_NONE: kilnSymSelect's table. */
KILN_INTERNAL kilnSymAlgo_t kilnSelectSymRange(kilnColl_t coll, int nranks, uint64_t bytes, bool inplace);

/* Whether the selector's defaults hold the symmetric kernels for some calls of nranks ranks (so a
 * communicator of that many ranks on one node has a kiln candidate without any plan). */
KILN_INTERNAL bool kilnSelectSymServes(int nranks);

/* KILN_STAGED_AR_MAX_BYTES in force for nranks ranks (its default per rank count where unset). */
KILN_INTERNAL uint64_t kilnSelectStagedARMax(int nranks);

#ifdef __cplusplus
}
#endif
#endif /* KILN_HOST_SELECT_H */
