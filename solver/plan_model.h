/* Internals of the plan model shared by plan.c and plan_xml.c. */
#ifndef KILN_PLAN_MODEL_H
#define KILN_PLAN_MODEL_H

#include "kiln/plan.h"

/* Zeroed room for n > 0 steps of a threadblock, with the capacity kilnPlanAddStep's growth rule
 * assumes (the next power of two), so steps can be appended later; NULL when out of memory. */
kilnStep* kilnPlanStepsAlloc(int n);

#endif
