/* Helpers for the tests that drive the kiln CLI (build/kiln). Header-only: each suite is one
 * Criterion binary. */
#ifndef KILN_TESTS_CLI_RUN_H
#define KILN_TESTS_CLI_RUN_H

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Runs the kiln CLI with args (a shell fragment), capturing stdout+stderr into out; returns the
 * exit status, or -1 when the binary has not been built (the test then skips). */
static int run_kiln(const char* args, char* out, size_t outlen) {
  char cmd[4096 + 256]; /* the kiln path, expect_kiln's arguments (up to 4095 bytes) and the redirection */
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

/* Runs the kiln CLI with the arguments fmt makes (printf-style), output into out as run_kiln, and
 * expects exit status code and, where want is not NULL, want in the output (the failures name the
 * arguments). Returns the exit status. */
__attribute__((format(printf, 5, 6))) static int expect_kiln(char* out, size_t outlen, int code,
                                                             const char* want, const char* fmt, ...) {
  char args[4096];
  va_list ap;
  va_start(ap, fmt);
  const int len = vsnprintf(args, sizeof args, fmt, ap);
  va_end(ap);
  cr_assert(len >= 0 && len < (int)sizeof args, "expect_kiln: arguments longer than %zu bytes", sizeof args);
  const int rc = run_kiln(args, out, outlen);
  cr_expect(eq(int, rc, code), "kiln %s: %s", args, out);
  if (want) cr_expect(strstr(out, want) != NULL, "kiln %s: wanted '%s' in: %s", args, want, out);
  return rc;
}

static void make_tmpdir(char* dir, size_t len) {
  snprintf(dir, len, "/tmp/kiln-test-XXXXXX");
  cr_assert(not(eq(ptr, mkdtemp(dir), NULL)));
}

#endif
