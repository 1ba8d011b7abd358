/*
 * kiln — synthesized collective-communication algorithms, run faster than NCCL.
 *
 * Umbrella header: result codes, the shared vocabularies (collectives, data types,
 * reduction ops, protocols) and the error reporting contract used by every module.
 *
 * Error contract: every function that does something returns a kilnResult_t. On failure it
 * also leaves a human-readable message (naming the file, line, rank, threadblock or step
 * involved) in a thread-local buffer that kilnLastError() returns. Library code never
 * exits, aborts or prints except through the progress callbacks documented per module.
 */
#ifndef KILN_KILN_H
#define KILN_KILN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(KILN_BUILDING) && defined(__GNUC__)
#define KILN_API __attribute__((visibility("default")))
#else
#define KILN_API
#endif

#define KILN_VERSION_MAJOR 0
#define KILN_VERSION_MINOR 1
#define KILN_VERSION_PATCH 0

/* X(name, value, description) — one table: enum, kilnResultName() and messages come from it. */
#define KILN_RESULTS(X)                                   \
  X(KILN_SUCCESS, 0, "success")                           \
  X(KILN_ERR_INVALID_ARGUMENT, 1, "invalid argument")     \
  X(KILN_ERR_PARSE, 2, "malformed input")                 \
  X(KILN_ERR_IO, 3, "I/O error")                          \
  X(KILN_ERR_NO_MEMORY, 4, "out of memory")               \
  X(KILN_ERR_INFEASIBLE, 5, "infeasible problem")         \
  X(KILN_ERR_UNSUPPORTED, 6, "unsupported")               \
  X(KILN_ERR_VERIFY, 7, "plan failed verification")       \
  X(KILN_ERR_SOLVER, 8, "MILP solver failure")            \
  X(KILN_ERR_CUDA, 9, "CUDA error")                       \
  X(KILN_ERR_NCCL, 10, "NCCL error")                      \
  X(KILN_ERR_TIMEOUT, 11, "timed out waiting for a peer") \
  X(KILN_ERR_INTERNAL, 12, "internal error")

typedef enum {
#define KILN_X_ENUM(name, value, desc) name = value,
  KILN_RESULTS(KILN_X_ENUM)
#undef KILN_X_ENUM
      KILN_NUM_RESULTS
} kilnResult_t;

/* Short name of a result ("KILN_ERR_PARSE"); never NULL. */
KILN_API const char* kilnResultName(kilnResult_t r);
/* Description of a result ("malformed input"); never NULL. */
KILN_API const char* kilnResultString(kilnResult_t r);
/* Message of the last failure on this thread ("" if none). Valid until the next kiln call
 * on this thread that fails. */
KILN_API const char* kilnLastError(void);
/* Collectives. X(enum, msccl name, alternate name accepted on input or NULL) */
#define KILN_COLLS(X)                                           \
  X(KILN_COLL_ALLGATHER, "allgather", NULL)                     \
  X(KILN_COLL_ALLTOALL, "alltoall", NULL)                       \
  X(KILN_COLL_REDUCESCATTER, "reducescatter", "reduce_scatter") \
  X(KILN_COLL_ALLREDUCE, "allreduce", NULL)                     \
  X(KILN_COLL_CUSTOM, "custom", NULL)

typedef enum {
#define KILN_X_ENUM(e, n, alt) e,
  KILN_COLLS(KILN_X_ENUM)
#undef KILN_X_ENUM
      KILN_NUM_COLLS
} kilnColl_t;

KILN_API const char* kilnCollName(kilnColl_t c);
/* Parses a collective name (either spelling); false if unknown. */
KILN_API bool kilnCollParse(const char* s, kilnColl_t* out);

/* Data types, numbered as NCCL 2.28 numbers them (ncclDataType_t). X(enum, value, name, bytes) */
#define KILN_DTYPES(X)                  \
  X(KILN_INT8, 0, "int8", 1)            \
  X(KILN_UINT8, 1, "uint8", 1)          \
  X(KILN_INT32, 2, "int32", 4)          \
  X(KILN_UINT32, 3, "uint32", 4)        \
  X(KILN_INT64, 4, "int64", 8)          \
  X(KILN_UINT64, 5, "uint64", 8)        \
  X(KILN_FLOAT16, 6, "half", 2)         \
  X(KILN_FLOAT32, 7, "float", 4)        \
  X(KILN_FLOAT64, 8, "double", 8)       \
  X(KILN_BFLOAT16, 9, "bfloat16", 2)    \
  X(KILN_FLOAT8E4M3, 10, "fp8_e4m3", 1) \
  X(KILN_FLOAT8E5M2, 11, "fp8_e5m2", 1)

typedef enum {
#define KILN_X_ENUM(e, v, n, b) e = v,
  KILN_DTYPES(KILN_X_ENUM)
#undef KILN_X_ENUM
      KILN_NUM_DTYPES
} kilnDataType_t;

KILN_API const char* kilnDataTypeName(kilnDataType_t t);
KILN_API size_t kilnDataTypeSize(kilnDataType_t t); /* 0 if unknown */
KILN_API bool kilnDataTypeParse(const char* s, kilnDataType_t* out);

/* Reduction ops, numbered as ncclRedOp_t. */
#define KILN_REDOPS(X)    \
  X(KILN_SUM, 0, "sum")   \
  X(KILN_PROD, 1, "prod") \
  X(KILN_MAX, 2, "max")   \
  X(KILN_MIN, 3, "min")   \
  X(KILN_AVG, 4, "avg")

typedef enum {
#define KILN_X_ENUM(e, v, n) e = v,
  KILN_REDOPS(KILN_X_ENUM)
#undef KILN_X_ENUM
      KILN_NUM_REDOPS
} kilnRedOp_t;

KILN_API const char* kilnRedOpName(kilnRedOp_t op);
KILN_API bool kilnRedOpParse(const char* s, kilnRedOp_t* out);

/* Protocols (MSCCL's names, and kiln's LL12: 12 data bytes and a flag word per 16-byte line,
 * a protocol of put steps; see kiln/plan.h). */
#define KILN_PROTOS(X)           \
  X(KILN_PROTO_SIMPLE, "Simple") \
  X(KILN_PROTO_LL, "LL")         \
  X(KILN_PROTO_LL128, "LL128")   \
  X(KILN_PROTO_LL12, "LL12")

typedef enum {
#define KILN_X_ENUM(e, n) e,
  KILN_PROTOS(KILN_X_ENUM)
#undef KILN_X_ENUM
      KILN_NUM_PROTOS
} kilnProto_t;

KILN_API const char* kilnProtoName(kilnProto_t p);
KILN_API bool kilnProtoParse(const char* s, kilnProto_t* out);

/* The *WriteFile functions write a temporary file beside their target and rename it over the
 * target. kilnWriteAbandon removes the one being written now, if any: for a program's SIGINT or
 * SIGTERM handler (it is async-signal-safe), so that an interrupted write leaves nothing behind. */
KILN_API void kilnWriteAbandon(void);

/* Parses a size like "1M", "64KB", "1GiB", "512" (bytes; K/M/G are powers of 1024).
 * Returns false on junk, overflow or a negative value. */
KILN_API bool kilnParseSize(const char* s, uint64_t* out);

#ifdef __cplusplus
}
#endif
#endif /* KILN_KILN_H */
