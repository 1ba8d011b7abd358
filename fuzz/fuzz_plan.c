/* libFuzzer harness for the plan reader: any input must give a clean result; a plan that reads
 * must write, read back and write again to the same text, and its deep copy must write the same. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/plan.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kilnPlan* p = NULL;
  if (kilnPlanReadMemory((const char*)data, size, "fuzz.xml", &p) != KILN_SUCCESS) {
    if (p || !kilnLastError()[0]) __builtin_trap();
    return 0;
  }
  char *a = NULL, *b = NULL, *c = NULL;
  kilnPlan *q = NULL, *k = NULL;
  if (kilnPlanWriteMemory(p, &a) != KILN_SUCCESS) __builtin_trap();
  if (kilnPlanReadMemory(a, strlen(a), "rt.xml", &q) != KILN_SUCCESS) __builtin_trap();
  if (kilnPlanWriteMemory(q, &b) != KILN_SUCCESS || strcmp(a, b) != 0) __builtin_trap();
  if (kilnPlanClone(p, &k) != KILN_SUCCESS) __builtin_trap();
  if (kilnPlanWriteMemory(k, &c) != KILN_SUCCESS || strcmp(a, c) != 0) __builtin_trap();
  (void)kilnPlanRefChunks(p);
  free(a);
  free(b);
  free(c);
  kilnPlanFree(p);
  kilnPlanFree(q);
  kilnPlanFree(k);
  return 0;
}
