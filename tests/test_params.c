/*
 * kiln's table of settings (solver/params.h, kiln/params.h): each KILN_* variable read once into
 * its type, a value that does not parse ignored and reported, the table listed by `kiln params`,
 * and docs/PARAMS.md that listing. Each test runs in its own process (Criterion's default) and
 * sets the environment before the table is first read.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/wait.h>
#include <unistd.h>
#include "kiln/params.h"
#include "params.h"

/* Runs `env-assignments build/kiln args` through the shell, output (stdout and stderr) into out;
 * returns the exit status, or -1 where the CLI is not built (the test then skips). */
static int run_kiln(const char* env, const char* args, char* out, size_t len) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "%s/kiln", KILN_BINARY_DIR);
  if (access(cmd, X_OK) != 0) return -1;
  snprintf(cmd, sizeof cmd, "%s %s/kiln %s 2>&1", env, KILN_BINARY_DIR, args);
  FILE* f = popen(cmd, "r");
  cr_assert(f != NULL);
  const size_t n = fread(out, 1, len - 1, f);
  out[n] = '\0';
  const int st = pclose(f);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* The row of env in the public listing. */
static kilnParamInfo info_of(const char* env) {
  kilnParamInfo p;
  for (int i = 0; i < kilnParamCount(); i++) {
    cr_assert(kilnParamGetInfo(i, &p));
    if (!strcmp(p.env, env)) return p;
  }
  cr_assert(false, "no row for %s", env);
  return p;
}

Test(params, every_row_has_a_kiln_variable_a_description_and_a_default_of_its_type) {
  cr_assert(eq(int, kilnParamCount(), KILN_NUM_PARAMS));
  for (int i = 0; i < kilnParamCount(); i++) {
    kilnParamInfo p;
    cr_assert(kilnParamGetInfo(i, &p));
    cr_assert(strncmp(p.env, "KILN_", 5) == 0 || strcmp(p.env, "CUDA_HOME") == 0, "%s", p.env);
    cr_assert(p.description && strlen(p.description) > 10, "%s has no description", p.env);
    cr_assert(strchr(p.description, '\n') == NULL, "%s: a description is one line", p.env);
    for (int j = 0; j < i; j++) {
      kilnParamInfo q;
      kilnParamGetInfo(j, &q);
      cr_assert(strcmp(p.env, q.env) != 0, "%s twice", p.env);
    }
    if (p.defaultText && p.type != KILN_PARAM_STRING && !p.value) {
      /* The default parses as its type: unset, the value is the default's. */
      uint64_t want = 0;
      if (p.type == KILN_PARAM_BOOL)
        cr_assert(strcmp(p.defaultText, "1") == 0 || strcmp(p.defaultText, "0") == 0, "%s", p.env);
      if (p.type == KILN_PARAM_BOOL || p.type == KILN_PARAM_INT)
        want = strtoull(p.defaultText, NULL, 10);
      else
        cr_assert(kilnParseSize(p.defaultText, &want), "%s: default %s", p.env, p.defaultText);
      cr_assert(eq(i64, kilnParam((kilnParamId)i), (int64_t)want), "%s", p.env);
    }
  }
  cr_assert(not(kilnParamGetInfo(-1, &(kilnParamInfo){0})));
  cr_assert(not(kilnParamGetInfo(KILN_NUM_PARAMS, &(kilnParamInfo){0})));
}

Test(params, defaults_hold_where_unset) {
  unsetenv("KILN_SYM");
  unsetenv("KILN_SYM_BLOCKS");
  unsetenv("KILN_SYM_BLOCK_BYTES");
  unsetenv("KILN_SYM_LL_BYTES");
  kilnParamsReload();
  cr_assert(eq(i64, kilnParam(KILN_PARAM_Sym), 1));
  cr_assert(eq(i64, kilnParam(KILN_PARAM_SymBlocks), 64));
  cr_assert(eq(i64, kilnParam(KILN_PARAM_SymBlockBytes), 2048));
  cr_assert(not(kilnParamIsSet(KILN_PARAM_SymLLBytes)));
  cr_assert(eq(i64, kilnParam(KILN_PARAM_SymLLBytes), 0)); /* no default of its own: the reader decides */
  cr_assert(eq(str, (char*)kilnParamString(KILN_PARAM_SymPdlTrigger), "early"));
}

Test(params, values_parse_as_their_types) {
  setenv("KILN_SYM", "off", 1);
  setenv("KILN_DISABLE", "yes", 1);
  setenv("KILN_SYM_BLOCKS", "12", 1);
  setenv("KILN_SYM_DIRECT_BYTES", "16M", 1);
  setenv("KILN_SYM_LL_BYTES", "0", 1);
  setenv("KILN_PLANS", "/a:/b", 1);
  kilnParamsReload();
  cr_assert(eq(i64, kilnParam(KILN_PARAM_Sym), 0));
  cr_assert(eq(i64, kilnParam(KILN_PARAM_Disable), 1));
  cr_assert(eq(i64, kilnParam(KILN_PARAM_SymBlocks), 12));
  cr_assert(eq(i64, kilnParam(KILN_PARAM_SymDirectBytes), 16 << 20));
  cr_assert(kilnParamIsSet(KILN_PARAM_SymLLBytes));
  cr_assert(eq(i64, kilnParam(KILN_PARAM_SymLLBytes), 0));
  cr_assert(eq(str, (char*)kilnParamString(KILN_PARAM_Plans), "/a:/b"));
  cr_assert(eq(str, (char*)kilnParamRaw(KILN_PARAM_SymDirectBytes), "16M"));
}

/* Read once: a change of the environment after the first read is not seen until a reload. */
Test(params, the_environment_is_read_once) {
  setenv("KILN_SYM_BLOCKS", "7", 1);
  kilnParamsReload();
  cr_assert(eq(i64, kilnParam(KILN_PARAM_SymBlocks), 7));
  setenv("KILN_SYM_BLOCKS", "9", 1);
  cr_assert(eq(i64, kilnParam(KILN_PARAM_SymBlocks), 7));
  kilnParamsReload();
  cr_assert(eq(i64, kilnParam(KILN_PARAM_SymBlocks), 9));
}

Test(params, a_value_that_does_not_parse_is_ignored_and_said_why) {
  setenv("KILN_SYM", "maybe", 1);
  setenv("KILN_SYM_BLOCKS", "-4", 1);
  setenv("KILN_SYM_CE_BYTES", "12Q", 1);
  setenv("KILN_DEBUG", "NONE", 1); /* not on stderr here */
  kilnParamsReload();
  cr_assert(eq(i64, kilnParam(KILN_PARAM_Sym), 1));
  cr_assert(not(kilnParamIsSet(KILN_PARAM_Sym)));
  cr_assert(eq(i64, kilnParam(KILN_PARAM_SymBlocks), 64));
  cr_assert(not(kilnParamIsSet(KILN_PARAM_SymCEBytes)));
  kilnParamInfo p = info_of("KILN_SYM");
  cr_assert(eq(str, (char*)p.value, "maybe"));
  cr_assert(p.problem && strstr(p.problem, "boolean"), "%s", p.problem ? p.problem : "(none)");
  p = info_of("KILN_SYM_CE_BYTES");
  cr_assert(p.problem && strstr(p.problem, "size"));
  p = info_of("KILN_SYM_BLOCKS");
  cr_assert(p.problem != NULL);
  p = info_of("KILN_SYM_DIRECT_BYTES");
  cr_assert(eq(ptr, (void*)p.problem, NULL));
}

Test(params, debug_levels) {
  static const struct {
    const char* v;
    int level;
  } cases[] = {{"NONE", 0}, {"0", 0}, {"ERROR", 1}, {"warn", 2}, {"INFO", 3}, {"TRACE", 3}, {"junk", 1}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    setenv("KILN_DEBUG", cases[i].v, 1);
    kilnParamsReload();
    cr_assert(eq(int, kilnDebugLevel(), cases[i].level), "KILN_DEBUG=%s", cases[i].v);
  }
  unsetenv("KILN_DEBUG");
  kilnParamsReload();
  cr_assert(eq(int, kilnDebugLevel(), 1));
}

Test(params, a_fault_names_a_step_and_a_rank) {
  setenv("KILN_FAULT", "window@1", 1);
  kilnParamsReload();
  cr_assert(kilnFaultAt("window", 1));
  cr_assert(not(kilnFaultAt("window", 0)));
  cr_assert(not(kilnFaultAt("setup", 1)));
  cr_assert(not(kilnFaultAt("win", 1)));
  setenv("KILN_FAULT", "setup@*", 1);
  kilnParamsReload();
  cr_assert(kilnFaultAt("setup", 0) && kilnFaultAt("setup", 7));
  unsetenv("KILN_FAULT");
  kilnParamsReload();
  cr_assert(not(kilnFaultAt("setup", 0)));
}

Test(params, kiln_params_lists_every_setting_with_its_value) {
  char out[1 << 16];
  const int rc = run_kiln("", "params", out, sizeof out);
  if (rc < 0) cr_skip_test("build/kiln not built");
  cr_assert(eq(int, rc, 0), "%s", out);
  for (int i = 0; i < kilnParamCount(); i++) {
    kilnParamInfo p;
    kilnParamGetInfo(i, &p);
    cr_assert(strstr(out, p.env) != NULL, "kiln params does not list %s", p.env);
  }
  cr_assert(eq(int, run_kiln("KILN_SYM_BLOCKS=5 KILN_SYM=junk", "params", out, sizeof out), 0), "%s", out);
  cr_assert(strstr(out, "KILN_SYM_BLOCKS                  int    64       5 ") != NULL, "%s", out);
  cr_assert(strstr(out, "KILN_SYM=junk is ignored: not a boolean") != NULL, "%s", out);
  cr_assert(eq(int, run_kiln("", "params --bogus", out, sizeof out), 2), "%s", out);
}

/* docs/PARAMS.md's table is `kiln params --markdown`, so the documentation lists the table as it is. */
Test(params, the_documentation_is_the_table) {
  char out[1 << 16];
  const int rc = run_kiln("", "params --markdown", out, sizeof out);
  if (rc < 0) cr_skip_test("build/kiln not built");
  cr_assert(eq(int, rc, 0), "%s", out);
  FILE* f = fopen(KILN_SOURCE_DIR "/docs/PARAMS.md", "rb");
  cr_assert(f != NULL, "no docs/PARAMS.md");
  static char doc[1 << 17];
  const size_t n = fread(doc, 1, sizeof doc - 1, f);
  doc[n] = '\0';
  fclose(f);
  cr_assert(strstr(doc, out) != NULL,
            "docs/PARAMS.md does not hold `kiln params --markdown` (regenerate its table with it):\n%s", out);
}
