/* The baked table of a build without the GPU runtime: empty. */
#include <stddef.h>

#include "registry_internal.h"

const kilnRegistryEntry* kilnBakedTable(int* n) {
  *n = 0;
  return NULL;
}
