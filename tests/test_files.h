/* Files the CPU suites read and write: a sketch kiln ships, a text file written whole. Header-only,
 * with Criterion asserts (a file that cannot be read or written fails the test there). */
#ifndef KILN_TESTS_TEST_FILES_H
#define KILN_TESTS_TEST_FILES_H

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>

#include "kiln/sketch.h"

/* The sketch kiln ships as plans/sketches/NAME.xml; the caller frees it (kilnSketchFree). */
static inline kilnSketch* load_sketch(const char* name) {
  char path[1024];
  snprintf(path, sizeof path, "%s/plans/sketches/%s.xml", KILN_SOURCE_DIR, name);
  kilnSketch* s = NULL;
  const kilnResult_t r = kilnSketchReadFile(path, &s);
  cr_assert(eq(int, r, KILN_SUCCESS), "%s: %s", path, kilnLastError());
  return s;
}

/* Writes text to path, replacing what was there. */
static inline void write_text(const char* path, const char* text) {
  FILE* f = fopen(path, "wb");
  cr_assert(not(eq(ptr, f, NULL)), "cannot write %s", path);
  fputs(text, f);
  fclose(f);
}

#endif
