/* kiln verify: run plans on the CPU verifier and report each one. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"
#include "kiln/plan.h"

static void help(FILE* f) {
  fprintf(f,
          "usage: kiln verify [--schedules N] [--seed S] [--fifo-depth D] PLAN.xml...\n"
          "Runs each plan for all ranks on the CPU and checks its collective's result (symbolic\n"
          "and numeric with sum/prod/max/min), deadlocks, matching of sends and receives, and\n"
          "buffer ranges. Prints 'FILE: OK (...)' or the first error; exits 0 only if all pass.\n"
          "  --schedules N  interleavings of threadblocks to try, 1..100000 (default 4)\n"
          "  --seed S       seed of the random interleavings and values, decimal (default 1)\n"
          "  --fifo-depth D FIFO slots per connection, as the runtime's nslots (default 8, the\n"
          "                 runtime's default; 0: unbounded); a plan that needs more deadlocks\n"
          "                 and is reported\n");
}

static bool parse_u64(const char* s, uint64_t* out) {
  if (!s || !*s || *s == '-') return false;
  errno = 0;
  char* end;
  unsigned long long v = strtoull(s, &end, 10); /* decimal: "010" is ten, not eight */
  if (errno || *end) return false;
  *out = v;
  return true;
}

int cmd_verify(int argc, char** argv) {
  kilnVerifyOptions vo = KILN_VERIFY_OPTIONS_INIT;
  int nfiles = 0;
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) { help(stdout); return 0; }
    if (!strcmp(a, "--schedules")) {
      if (i + 1 >= argc || !cliParseInt(argv[i + 1], &vo.schedules) || vo.schedules < 1 || vo.schedules > 100000) {
        fprintf(stderr, "kiln verify: --schedules wants 1..100000\n");
        return 2;
      }
      i++;
      continue;
    }
    if (!strcmp(a, "--fifo-depth")) {
      if (i + 1 >= argc || !cliParseInt(argv[i + 1], &vo.fifo_depth)) {
        fprintf(stderr, "kiln verify: --fifo-depth needs a non-negative integer\n");
        return 2;
      }
      i++;
      continue;
    }
    if (!strcmp(a, "--seed")) {
      if (i + 1 >= argc || !parse_u64(argv[i + 1], &vo.seed)) {
        fprintf(stderr, "kiln verify: --seed needs a non-negative integer\n");
        return 2;
      }
      i++;
      continue;
    }
    if (a[0] == '-' && a[1]) {
      fprintf(stderr, "kiln verify: unknown option '%s'\n", a);
      help(stderr);
      return 2;
    }
    argv[++nfiles] = argv[i]; /* compact the file names in place */
  }
  if (nfiles == 0) {
    fprintf(stderr, "kiln verify: no plan files given\n");
    help(stderr);
    return 2;
  }
  int failed = 0;
  for (int f = 1; f <= nfiles; f++) {
    const char* path = argv[f];
    kilnPlan* p = NULL;
    if (kilnPlanReadFile(path, &p) != KILN_SUCCESS) {
      cliPrintFileError(path, kilnLastError());
      failed++;
      continue;
    }
    if (kilnPlanVerify(p, &vo) == KILN_SUCCESS) {
      int tbs = 0, steps = 0;
      for (int r = 0; r < p->ngpus; r++) {
        tbs += p->gpus[r].ntbs;
        for (int t = 0; t < p->gpus[r].ntbs; t++) steps += p->gpus[r].tbs[t].nsteps;
      }
      char races[160] = "";
      if (!KILN_VERIFY_CHECKS_ALL_RACES(tbs, steps))
        snprintf(races, sizeof races, "; data races checked only on the %d interleavings run, not on all: the plan is "
                 "too large for the clocks; --schedules N runs more", vo.schedules);
      printf("%s: OK (%s, %d ranks, %d tbs, %d steps%s)\n", path, kilnCollName(p->coll), p->ngpus, tbs, steps, races);
    } else {
      printf("%s: %s\n", path, kilnLastError());
      failed++;
    }
    kilnPlanFree(p);
  }
  fflush(stdout);
  return failed ? 1 : 0;
}
