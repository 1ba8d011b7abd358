/* Small helpers the CPU suites share. */
#ifndef KILN_TEST_UTIL_H
#define KILN_TEST_UTIL_H

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* s contains sub (false for a NULL s). */
static inline bool contains(const char* s, const char* sub) { return s && strstr(s, sub) != NULL; }

/* Removes a test's temporary folder with everything under it (a failing test keeps its folder,
 * for a look). Does not follow symbolic links. */
static inline void rm_tree(const char* dir) {
  DIR* d = opendir(dir);
  if (!d) return;
  struct dirent* e;
  while ((e = readdir(d)) != NULL) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path) continue;
    if (unlink(path) != 0) rm_tree(path); /* a folder */
  }
  closedir(d);
  rmdir(dir);
}

/* The parameters of a Criterion test that runs once per index 0..n-1 of a file-scope case table
 * (Criterion runs each parameter in a fresh process, where pointers from the parent are not
 * valid, so the parameter is an index, not a case). */
#define KILN_INDEX_PARAMS(suite, name, n)                     \
  ParameterizedTestParameters(suite, name) {                  \
    static int idx[n];                                        \
    for (size_t i = 0; i < (size_t)(n); i++) idx[i] = (int)i; \
    return cr_make_param_array(int, idx, (n));                \
  }

#endif
