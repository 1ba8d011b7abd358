/*
 * The fake NCCL's default bodies (weak): record the call and return a fixed value of the return
 * type (ncclResult_t: fakeNcclResult). fake_nccl.c overrides those whose outputs matter.
 */
#include <stdint.h>

#include "fake_nccl.h"
#include "shim_api.h"

extern ncclResult_t fakeNcclResult;
fakeNcclRecord* fakeNcclBegin(const char* name);

#define FAKE_WEAK __attribute__((weak, visibility("default")))
#define FAKE_RETURN(ret) \
  _Generic(*(ret*)0, ncclResult_t: fakeNcclResult, int: 42, const char*: "fake",                 \
           ncclTeam_t: (ncclTeam_t){7, 3, 1})

#define FAKE_X(ret, name, params, args, missing)    \
  FAKE_WEAK ret name params {                       \
    fakeNcclRecord* fakeRec = fakeNcclBegin(#name); \
    FAKE_NCCL_EACH(args)                            \
    (void)fakeRec;                                  \
    return FAKE_RETURN(ret);                        \
  }
KILN_SHIM_ALL(FAKE_X)
#undef FAKE_X

#define FAKE_X_VOID(name) \
  FAKE_WEAK void name(void) { fakeNcclBegin(#name); }
KILN_SHIM_VOID(FAKE_X_VOID)
#undef FAKE_X_VOID
