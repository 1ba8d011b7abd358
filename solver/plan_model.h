/* Internals of the plan model shared by plan.c, plan_xml.c and classic.c. */
#ifndef KILN_PLAN_MODEL_H
#define KILN_PLAN_MODEL_H

#include "kiln/plan.h"
#include "kiln_internal.h"

/* The most threadblocks a GPU of a plan file holds (the reader refuses more, the writer too). */
#define KILN_PLAN_FILE_MAX_TBS 4096

/* Zeroed room for n > 0 steps of a threadblock, with the capacity kilnPlanAddStep's growth rule
 * assumes (the next power of two), so steps can be appended later; NULL when out of memory. */
kilnStep* kilnPlanStepsAlloc(int n);

#endif
