// Compile-time check that every row of shim_api.h has exactly the prototype of NCCL's own headers:
// the rows are redeclared here as extern "C" functions next to nccl.h and the device API headers,
// and C++ rejects two declarations of one C function that differ. Defines nothing.
#include <nccl.h>
#include <nccl_device/core.h>
#include <nccl_device/gin_barrier.h>
#include <nccl_device/ll_a2a.h>
#include <nccl_device/lsa_barrier.h>

#include "shim_api.h"

#define SHIM_X_DECL(ret, name, params, args, missing) extern "C" ret name params;
KILN_SHIM_ALL(SHIM_X_DECL)
#undef SHIM_X_DECL
