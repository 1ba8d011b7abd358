/*
 * kiln's settings: every KILN_* environment variable the library reads, in one table
 * (solver/params.h), each with its type, default and a one-line description. The library reads
 * them all once, at the first use of any, and keeps them for the life of the process; nothing
 * else in it reads the environment. `kiln params` prints this table with the values in force.
 *
 * A value that does not parse as its type is ignored (the default holds; KILN_EMULATE_NODES is the
 * exception its row names) and reported: once on stderr ("kiln: KILN_X=...: ..., ignored") when the
 * library first reads the table unless KILN_DEBUG=NONE, and in kilnParamInfo.problem.
 */
#ifndef KILN_PARAMS_H
#define KILN_PARAMS_H

#include "kiln/kiln.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The types of settings. bool: 1/0, true/false, yes/no, on/off; int: a non-negative decimal
 * integer; size: bytes, a non-negative integer with an optional K/M/G/T suffix (powers of 1024:
 * "512K", "16MiB"); string: any text. */
typedef enum { KILN_PARAM_BOOL, KILN_PARAM_INT, KILN_PARAM_SIZE, KILN_PARAM_STRING } kilnParamType;

/* One setting as kiln sees it now. The strings belong to the library and live as long as it. */
typedef struct kilnParamInfo {
  const char* env; /* the variable, e.g. "KILN_SYM" */
  kilnParamType type;
  const char* defaultText; /* the default as a value of the type; NULL: set by the code that reads it,
                            * as the description says (e.g. per rank count) */
  const char* description; /* one line */
  const char* value;       /* the environment's text as read, NULL when unset */
  const char* problem;     /* why the value does not parse, NULL when it does or is unset */
} kilnParamInfo;

/* How many settings there are, and the i-th (0 <= i < kilnParamCount(); table order). Returns
 * false for an i out of range. Reads the environment on first use. */
KILN_API int kilnParamCount(void);
KILN_API bool kilnParamGetInfo(int i, kilnParamInfo* out);
/* The name of a parameter type ("bool", "int", "size", "string"). */
KILN_API const char* kilnParamTypeName(kilnParamType t);

#ifdef __cplusplus
}
#endif
#endif /* KILN_PARAMS_H */
