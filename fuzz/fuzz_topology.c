/* libFuzzer harness for the topology reader: any input must give a clean result; a topology that
 * reads must write, read back and write again to the same text. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/topology.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kilnTopology* t = NULL;
  if (kilnTopologyReadMemory((const char*)data, size, "fuzz.xml", &t) != KILN_SUCCESS) {
    if (t || !kilnLastError()[0]) __builtin_trap(); /* failure must leave no object and a message */
    return 0;
  }
  char *a = NULL, *b = NULL;
  kilnTopology* u = NULL;
  if (kilnTopologyWriteMemory(t, &a) != KILN_SUCCESS) __builtin_trap();
  if (kilnTopologyReadMemory(a, strlen(a), "rt.xml", &u) != KILN_SUCCESS) __builtin_trap();
  if (kilnTopologyWriteMemory(u, &b) != KILN_SUCCESS || strcmp(a, b) != 0) __builtin_trap();
  for (int i = 0; i < t->nlinks; i++)
    if (kilnTopologyLink(t, t->links[i].src, t->links[i].dst) != &t->links[i]) __builtin_trap();
  free(a);
  free(b);
  kilnTopologyFree(t);
  kilnTopologyFree(u);
  return 0;
}
