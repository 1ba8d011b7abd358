/* libFuzzer harness for TACCL's JSON files (solver/taccl_json.c on solver/json.c): any input, read
 * as a topology profile and as a sketch, must give a clean result; a topology that reads must
 * round-trip through kiln's XML, and a sketch that reads must validate (either way) against a
 * topology of its node size. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/synth.h"

static kilnTopology* dgx2;

int LLVMFuzzerInitialize(int* argc, char*** argv) {
  (void)argc;
  (void)argv;
  if (kilnTopologyBuiltin("dgx2", 2, &dgx2)) __builtin_trap();
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kilnTopology* t = NULL;
  if (kilnTopologyReadTacclMemory((const char*)data, size, "fuzz.json", &t) != KILN_SUCCESS) {
    if (t || !kilnLastError()[0]) __builtin_trap();
  } else {
    char* a = NULL;
    kilnTopology* u = NULL;
    if (kilnTopologyWriteMemory(t, &a) != KILN_SUCCESS) __builtin_trap();
    if (kilnTopologyReadMemory(a, strlen(a), "rt.xml", &u) != KILN_SUCCESS) __builtin_trap();
    free(a);
    kilnTopologyFree(u);
    kilnTopologyFree(t);
  }
  kilnSketch* s = NULL;
  int nnodes = 0;
  if (kilnSketchReadTacclMemory((const char*)data, size, "fuzz.json", 16, &s, &nnodes) != KILN_SUCCESS) {
    if (s || !kilnLastError()[0]) __builtin_trap();
    return 0;
  }
  if (nnodes < 1) __builtin_trap();
  kilnResult_t r = kilnSketchValidate(s, dgx2);
  if (r != KILN_SUCCESS && r != KILN_ERR_INVALID_ARGUMENT) __builtin_trap();
  kilnSketchFree(s);
  return 0;
}
