/* libFuzzer harness for the sketch reader and validator: any input must give a clean result; a
 * sketch that reads must round-trip and validate (either way) against built-in topologies. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/sketch.h"

static kilnTopology* topos[3];

int LLVMFuzzerInitialize(int* argc, char*** argv) {
  (void)argc;
  (void)argv;
  if (kilnTopologyBuiltin("dgx2", 2, &topos[0]) || kilnTopologyBuiltin("ndv2", 1, &topos[1]) ||
      kilnTopologyBuiltin("torus3x3", 2, &topos[2]))
    __builtin_trap();
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kilnSketch* s = NULL;
  if (kilnSketchReadMemory((const char*)data, size, "fuzz.xml", &s) != KILN_SUCCESS) {
    if (s || !kilnLastError()[0]) __builtin_trap();
    return 0;
  }
  char *a = NULL, *b = NULL;
  kilnSketch* u = NULL;
  if (kilnSketchWriteMemory(s, &a) != KILN_SUCCESS) __builtin_trap();
  if (kilnSketchReadMemory(a, strlen(a), "rt.xml", &u) != KILN_SUCCESS) __builtin_trap();
  if (kilnSketchWriteMemory(u, &b) != KILN_SUCCESS || strcmp(a, b) != 0) __builtin_trap();
  for (int i = 0; i < 3; i++) {
    kilnResult_t r = kilnSketchValidate(s, topos[i]);
    if (r != KILN_SUCCESS && r != KILN_ERR_INVALID_ARGUMENT) __builtin_trap();
  }
  free(a);
  free(b);
  kilnSketchFree(s);
  kilnSketchFree(u);
  return 0;
}
