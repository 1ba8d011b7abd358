/*
 * gen/: turns verified plans into CUDA source for the runtime ("baking").
 *
 * The generated code is thin on purpose: per plan, one .cu file holding the plan's threadblocks
 * and steps as constexpr tables (one row per step, with a / * idx * / comment) and one-line
 * instantiations of the hand-written template in kernels/baked.cuh, which unrolls each
 * threadblock's steps at compile time into straight-line calls of the runtime's primitives.
 * Plus one registry file (C) listing every baked plan: its name, collective, ranks, byte range,
 * in/out-of-place, protocol, the plan XML (the host builds its connections from it) and the
 * launch function of each data type that was baked.
 *
 * What gets baked per plan (KEEP BUILDS LEAN): plans that reduce get kernels for the dtypes in
 * kilnGenOptions.dtypes with the sum op (avg runs on them too); plans that only move data get one
 * kernel per element size actually needed by those dtypes and serve every dtype of that size.
 * Plans of more than 1024 steps get no kernel, nor, with inlinedOnly, plans whose steps are not
 * inlined (the runtime interprets those unless told to use their kernels). Everything else runs
 * on the interpreter.
 *
 * Output is deterministic: the same plans and options give byte-identical files (no dates, no
 * absolute paths). Files are written atomically (temporary + rename).
 */
#ifndef KILN_GEN_GEN_H
#define KILN_GEN_GEN_H

#include "kiln/plan.h"
#include "kiln_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_GEN_IDENT_MAX 64

typedef struct kilnGenOptions {
  /* Data types baked for plans that reduce (and whose sizes are baked for plans that do not). */
  bool dtypes[KILN_NUM_DTYPES];
  kilnVerifyOptions verify; /* how hard to check each plan before baking it */
  /* Kernels only for plans whose steps are inlined, the ones the runtime runs by default: the
   * others' kernels run only on kilnExecUseBaked(x, true), and cost most of a build's compile
   * time and memory. */
  bool inlinedOnly;
} kilnGenOptions;

/* Defaults: float, half, bfloat16, int32; verifier defaults; every plan of at most 1024 steps gets
 * its kernels. */
void kilnGenOptionsDefault(kilnGenOptions* o);
/* Parses a comma list of dtype names ("float,half") into o->dtypes (replacing it); false and an
 * error naming the bad item otherwise. */
kilnResult_t kilnGenParseDtypes(kilnGenOptions* o, const char* list);

/* The C identifier kiln uses for a plan file: its base name without ".xml", every character
 * outside [A-Za-z0-9_] turned into '_', prefixed with "p_" when it starts with a digit.
 * KILN_ERR_INVALID_ARGUMENT when empty or longer than KILN_GEN_IDENT_MAX - 1. */
kilnResult_t kilnGenIdent(const char* path, char out[KILN_GEN_IDENT_MAX]);

/* One plan to bake: the plan (not owned), the identifier its symbols use, and the file it came
 * from (only its base name is written into the output). */
typedef struct kilnGenUnit {
  const kilnPlan* plan;
  char ident[KILN_GEN_IDENT_MAX];
  const char* origin;
} kilnGenUnit;

/* The .cu source of one plan (tables + instantiations); *out is malloc'd, freed by the caller.
 * The plan must have passed kilnPlanVerify; this only checks what the template needs (e.g. a
 * known protocol) and fails with KILN_ERR_UNSUPPORTED naming the plan otherwise. */
kilnResult_t kilnGenPlanSource(const kilnGenUnit* u, const kilnGenOptions* o, char** out);

/* The registry source (C) listing the units in order; *out is malloc'd, freed by the caller. */
kilnResult_t kilnGenRegistrySource(const kilnGenUnit* units, int n, const kilnGenOptions* o, char** out);

/* Reads, verifies and bakes the plan files: writes DIR/plan_<ident>.cu per plan and
 * DIR/baked_registry.c. Every plan is read and verified before anything is written; a plan that
 * cannot be read or fails kilnPlanVerify is refused with an error naming it (no file written).
 * Two paths with one identifier are refused too. n may be 0 (an empty registry). */
kilnResult_t kilnGenFiles(const char* dir, const char* const* paths, int n, const kilnGenOptions* o);

#ifdef __cplusplus
}
#endif
#endif /* KILN_GEN_GEN_H */
