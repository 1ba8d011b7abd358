/* A small JSON reader (RFC 8259) for the input files kiln takes from other tools (TACCL's topology
 * and sketch files): the whole document into a tree of values, each knowing its line and column,
 * so that a reader's error names the file, the place and what is wrong there.
 *
 * Strict: UTF-8 text, no comments, no trailing commas, no duplicate keys in an object, no NaN or infinities,
 * strings of valid escapes without raw control characters, nesting at most JSON_MAX_DEPTH deep,
 * documents of at most JSON_MAX_BYTES. Errors: KILN_ERR_PARSE, "FILE:LINE:COL: what".
 *
 * Ownership: jsonParse and jsonReadFile return a tree the caller frees with jsonFree. */
#ifndef KILN_SOLVER_JSON_H
#define KILN_SOLVER_JSON_H

#include <stdbool.h>
#include <stddef.h>

#include "kiln/kiln.h"
#include "kiln_internal.h"

#define JSON_MAX_DEPTH 64
#define JSON_MAX_BYTES ((size_t)16 << 20)

typedef enum { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT } jsonType;

typedef struct jsonValue {
  jsonType type;
  int line, col;           /* where the value begins (1-based) */
  bool b;                  /* JSON_BOOL */
  double num;              /* JSON_NUMBER */
  bool integral;           /* JSON_NUMBER written without fraction or exponent */
  char* str;               /* JSON_STRING: UTF-8, NUL-terminated (an embedded NUL is refused) */
  int n;                   /* JSON_ARRAY, JSON_OBJECT: how many items */
  struct jsonValue* items; /* [n]: the array's items, or the object's values */
  char** keys;             /* JSON_OBJECT: [n] keys, in file order */
} jsonValue;

/* Parses len bytes of text; fname names it in errors. */
KILN_INTERNAL kilnResult_t jsonParse(const char* text, size_t len, const char* fname, jsonValue** out);
/* Reads and parses a file (a regular file of at most JSON_MAX_BYTES). */
KILN_INTERNAL kilnResult_t jsonReadFile(const char* path, jsonValue** out);
KILN_INTERNAL void jsonFree(jsonValue* v);

/* The value of key in object obj, or NULL. */
KILN_INTERNAL const jsonValue* jsonGet(const jsonValue* obj, const char* key);
/* The name of a type, for messages ("a number", "an object"...). */
KILN_INTERNAL const char* jsonTypeName(jsonType t);

/* Sets the error "FNAME:LINE:COL: what" at value v (v NULL: line 1) and returns r. */
KILN_INTERNAL kilnResult_t jsonError(kilnResult_t r, const char* fname, const jsonValue* v, const char* fmt,
                                     ...) __attribute__((format(printf, 4, 5)));

#endif
