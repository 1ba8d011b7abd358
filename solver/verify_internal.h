/*
 * The verifier's two engines: verify.c runs plans of MSCCL's steps for one call; verify_mem.c runs
 * plans with memory steps over several calls and iterations (plan.h). kilnPlanVerify picks one.
 *
 * Internal to kiln_core: not a public header.
 */
#ifndef KILN_VERIFY_INTERNAL_H
#define KILN_VERIFY_INTERNAL_H

#include "kiln/plan.h"

/* kilnPlanVerify of a plan with memory steps (options already checked). */
kilnResult_t kilnVerifyMemoryPlan(const kilnPlan* p, const kilnVerifyOptions* opts);

#endif
