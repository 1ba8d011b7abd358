/* Launch table of the interpreter: one instantiation per data type (ids as kilnDataType_t). */
#include <cuda_runtime.h>

#include "kiln_dev.h"

/* X(id, name) in kilnDataType_t order; the instantiations come from interp_dtype.cu.in. */
#define KILN_DEV_DTYPES(X) \
  X(0, int8) X(1, uint8) X(2, int32) X(3, uint32) X(4, int64) X(5, uint64) X(6, half) \
  X(7, float) X(8, double) X(9, bfloat16) X(10, fp8_e4m3) X(11, fp8_e5m2)

#define KILN_X_DECL(id, name)                                                     \
  extern "C" int kilnInterpLaunch_##name(const kilnDevArgs*, int, void*);         \
  extern "C" int kilnInterpPreload_##name(void);                                  \
  extern "C" int kilnSymLaunch_##name(const kilnSymArgs*, int, void*);
KILN_DEV_DTYPES(KILN_X_DECL)
#undef KILN_X_DECL

typedef int (*kilnLaunchFn)(const kilnDevArgs*, int, void*);
static const kilnLaunchFn kLaunch[] = {
#define KILN_X_ROW(id, name) /* id */ kilnInterpLaunch_##name,
    KILN_DEV_DTYPES(KILN_X_ROW)
#undef KILN_X_ROW
};

extern "C" int kilnInterpLaunch(int dtype, const kilnDevArgs* args, int threads, void* stream) {
  if (dtype < 0 || dtype >= (int)(sizeof(kLaunch) / sizeof(kLaunch[0]))) return (int)cudaErrorInvalidValue;
  return kLaunch[dtype](args, threads, stream);
}

typedef int (*kilnSymLaunchFn)(const kilnSymArgs*, int, void*);
static const kilnSymLaunchFn kSymLaunch[] = {
#define KILN_X_ROW(id, name) /* id */ kilnSymLaunch_##name,
    KILN_DEV_DTYPES(KILN_X_ROW)
#undef KILN_X_ROW
};

extern "C" int kilnSymLaunch(int dtype, const kilnSymArgs* args, int threads, void* stream) {
  if (dtype < 0 || dtype >= (int)(sizeof(kSymLaunch) / sizeof(kSymLaunch[0]))) return (int)cudaErrorInvalidValue;
  return kSymLaunch[dtype](args, threads, stream);
}

extern "C" int kilnInterpPreload(void) {
  int first = 0;
#define KILN_X_LOAD(id, name)                  \
  {                                            \
    int e = kilnInterpPreload_##name();        \
    if (e != 0 && first == 0) first = e;       \
  }
  KILN_DEV_DTYPES(KILN_X_LOAD)
#undef KILN_X_LOAD
  return first;
}
