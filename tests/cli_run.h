/* Helpers for the tests that drive the kiln CLI (build/kiln). Header-only: each suite is one
 * Criterion binary. */
#ifndef KILN_TESTS_CLI_RUN_H
#define KILN_TESTS_CLI_RUN_H

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

/* Runs the kiln CLI with args (a shell fragment), capturing stdout+stderr into out; returns the
 * exit status, or -1 when the binary has not been built (the test then skips). */
static int run_kiln(const char* args, char* out, size_t outlen) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "%s/kiln", KILN_BINARY_DIR);
  FILE* probe = fopen(cmd, "rb");
  if (!probe) return -1;
  fclose(probe);
  snprintf(cmd, sizeof cmd, "%s/kiln %s 2>&1", KILN_BINARY_DIR, args);
  FILE* f = popen(cmd, "r");
  cr_assert(not(eq(ptr, f, NULL)));
  size_t n = fread(out, 1, outlen - 1, f);
  out[n] = '\0';
  int st = pclose(f);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static void make_tmpdir(char* dir, size_t len) {
  snprintf(dir, len, "/tmp/kiln-test-XXXXXX");
  cr_assert(not(eq(ptr, mkdtemp(dir), NULL)));
}

#endif
