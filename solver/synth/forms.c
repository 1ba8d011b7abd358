/* The forms of a collective besides the sketch's plan (kiln/synth.h, "Forms"): where the sketch's
 * logical topology links every pair of ranks of one node, every shortest-path route goes straight
 * from a chunk's source to each rank that needs it, so the routing has nothing left to choose and
 * the plan is one of the direct forms - one-flight, two-shot, direct - lowered with kiln's memory
 * steps exactly as kilnClassicPlan writes them (solver/classic.c), so that the synthesizer and
 * `kiln classic` write one vocabulary. What is left to choose is the protocol of the puts and the
 * instances, and between the forms: the simulator chooses (synth.c). */
#include <stdio.h>
#include <string.h>

#include "synth_internal.h"

static const char* const form_names[] = {
#define KILN_X_NAME(e, n) n,
    KILN_SYNTH_FORMS(KILN_X_NAME)
#undef KILN_X_NAME
};

const char* kilnSynthFormName(kilnSynthForm_t f) {
  return (unsigned)f < KILN_SYNTH_NUM_FORMS ? form_names[f] : "unknown";
}

bool kilnSynthFormParse(const char* s, kilnSynthForm_t* out) {
  for (int f = 0; s && f < KILN_SYNTH_NUM_FORMS; f++)
    if (!strcmp(s, form_names[f])) {
      if (out) *out = (kilnSynthForm_t)f;
      return true;
    }
  return false;
}

bool synNvlinkDomain(const kilnTopology* t, const synLogical* L) {
  if (t->nodes != 1 || L->n < 2) return false;
  for (int a = 0; a < L->n; a++)
    for (int b = 0; b < L->n; b++)
      if (a != b && L->link_of[a * L->n + b] < 0) return false;
  return true;
}

/* kilnClassicPlan's name of memory form f for coll, or NULL where f does not implement it. */
static const char* classic_algo(kilnSynthForm_t f, kilnColl_t coll) {
  switch (f) {
    case KILN_SYNTH_FORM_ONEFLIGHT:
      return coll == KILN_COLL_ALLREDUCE || coll == KILN_COLL_REDUCESCATTER ? "oneshot" : NULL;
    case KILN_SYNTH_FORM_TWOSHOT: return coll == KILN_COLL_ALLREDUCE ? "twoshot" : NULL;
    case KILN_SYNTH_FORM_DIRECT:
      /* staged: puts into the peers' scratch, which the runtime holds; zero-copy puts into the
       * peers' outputs need those in symmetric windows of the caller's, so it is not a default */
      return coll == KILN_COLL_ALLGATHER || coll == KILN_COLL_ALLTOALL ? "staged" : NULL;
    default: return NULL;
  }
}

bool synFormHas(kilnSynthForm_t f, kilnColl_t coll) {
  return f == KILN_SYNTH_FORM_SKETCH || classic_algo(f, coll) != NULL;
}

kilnResult_t synFormPlan(kilnSynthForm_t f, kilnColl_t coll, int n, int k, int instances, kilnProto_t proto,
                         bool inplace, const char* name, kilnPlan** out) {
  *out = NULL;
  const char* algo = classic_algo(f, coll);
  if (!algo)
    return kilnSetError(KILN_ERR_UNSUPPORTED, "the %s form has no %s", kilnSynthFormName(f),
                        kilnCollName(coll));
  kilnClassicOptions co = KILN_CLASSIC_OPTIONS_INIT;
  co.chunks = k;
  co.instances = instances;
  co.proto = proto;
  co.inplace = inplace;
  kilnResult_t r = kilnClassicPlan(algo, coll, n, &co, out);
  if (r == KILN_SUCCESS) snprintf((*out)->name, sizeof(*out)->name, "%s", name);
  return r;
}
