/* A program of a user of the installed kiln: a classic plan verified and simulated, a small
 * synthesis. tests/install/run.sh builds it through pkg-config and through find_package. */
#include <stdio.h>

#include "kiln/plan.h"
#include "kiln/synth.h"
#include "kiln/topology.h"

int main(void) {
  kilnPlan* p = NULL;
  kilnTopology* t = NULL;
  kilnSketch* s = NULL;
  kilnPlan* q = NULL;
  kilnClassicOptions co = KILN_CLASSIC_OPTIONS_INIT;
  kilnSynthOptions so = KILN_SYNTH_OPTIONS_INIT;
  kilnSimResult sim;
  so.time_limit_s = 10;
  if (kilnClassicPlan("ring", KILN_COLL_ALLREDUCE, 4, &co, &p) != KILN_SUCCESS ||
      kilnPlanVerify(p, NULL) != KILN_SUCCESS || kilnTopologyBuiltin("switch4", 1, &t) != KILN_SUCCESS ||
      kilnPlanSimulate(p, t, 1 << 20, &sim) != KILN_SUCCESS || kilnSketchDefault(t, &s) != KILN_SUCCESS ||
      kilnSynthesize(t, s, KILN_COLL_ALLGATHER, &so, &q, NULL) != KILN_SUCCESS ||
      kilnPlanVerify(q, NULL) != KILN_SUCCESS) {
    fprintf(stderr, "consumer: %s\n", kilnLastError());
    return 1;
  }
  printf("consumer: ring allreduce 4 ranks 1 MiB %.1f us; synthesized allgather verified\n", sim.time_us);
  kilnPlanFree(q);
  kilnSketchFree(s);
  kilnTopologyFree(t);
  kilnPlanFree(p);
  return 0;
}
