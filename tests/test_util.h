/* Small helpers the CPU suites share. */
#ifndef KILN_TEST_UTIL_H
#define KILN_TEST_UTIL_H

#include <stdbool.h>
#include <string.h>

/* s contains sub (false for a NULL s). */
static inline bool contains(const char* s, const char* sub) { return s && strstr(s, sub) != NULL; }

#endif
