/* kiln show --svg: a plan's simulated schedule as an SVG picture (plan_svg.c). */
#ifndef KILN_CLI_PLAN_SVG_H
#define KILN_CLI_PLAN_SVG_H

#include <stddef.h>
#include <stdint.h>

#include "kiln/plan.h"

/* Simulates plan p on topology t for `bytes` (the collective's reference size, as kiln simulate
 * takes) and writes the picture to path (whole, or not at all; "-": stdout). 0 on success, else 1
 * with the reason in err. */
int cliPlanSvg(const kilnPlan* p, const kilnTopology* t, uint64_t bytes, const char* path, char* err,
               size_t errlen);

#endif
