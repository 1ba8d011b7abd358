/* Small helpers the CPU suites share. */
#ifndef KILN_TEST_UTIL_H
#define KILN_TEST_UTIL_H

#include <stdbool.h>
#include <string.h>

/* s contains sub (false for a NULL s). */
static inline bool contains(const char* s, const char* sub) { return s && strstr(s, sub) != NULL; }

/* The parameters of a Criterion test that runs once per index 0..n-1 of a file-scope case table
 * (Criterion runs each parameter in a fresh process, where pointers from the parent are not
 * valid, so the parameter is an index, not a case). */
#define KILN_INDEX_PARAMS(suite, name, n)                              \
  ParameterizedTestParameters(suite, name) {                           \
    static int idx[n];                                                 \
    for (size_t i = 0; i < (size_t)(n); i++) idx[i] = (int)i;         \
    return cr_make_param_array(int, idx, (n));                         \
  }

#endif
