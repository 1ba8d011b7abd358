/* kiln gen: bake plans into CUDA source (tables + instantiations of kernels/baked.cuh) and a
 * registry of them. The build runs the same code as build/kiln-gen (gen/CMakeLists.txt). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli_util.h"
#include "commands.h"
#include "gen.h"

static void help(FILE* f) {
  fprintf(f,
          "usage: kiln gen -o DIR [--dtypes LIST] [--schedules N] [--inlined-only] [PLAN.xml...]\n"
          "Verifies every plan (a plan that fails is refused, naming it, and nothing is written),\n"
          "then writes DIR/plan_<name>.cu per plan (constexpr tables of its steps and one-line\n"
          "kernel instantiations of kernels/baked.cuh) and DIR/baked_registry.c (the registry\n"
          "table: collective, ranks, byte range, in-place, protocol, kernels per dtype).\n"
          "  -o DIR          output folder (must exist)\n"
          "  --dtypes LIST   dtypes baked for plans that reduce (sum/avg), comma separated;\n"
          "                  plans that only move data get one kernel per element size of LIST\n"
          "                  (default float,half,bfloat16,int32; the rest runs interpreted)\n"
          "  --schedules N   interleavings the verifier tries per plan (default 4)\n"
          "  --inlined-only  kernels only for plans whose steps are inlined (those the runtime\n"
          "                  runs by default; it interprets the others unless told otherwise)\n"
          "<name> is the file name without .xml, non-identifier characters turned into '_'.\n"
          "With no plan, only an empty registry is written (a build with nothing to bake).\n"
          "Files of earlier runs that this one does not write are left in DIR.\n");
}

int cmd_gen(int argc, char** argv) {
  kilnGenOptions o;
  kilnGenOptionsDefault(&o);
  const char* dir = NULL;
  const char** plans = calloc((size_t)argc + 1, sizeof *plans);
  int n = 0, rc = 2;
  if (!plans) {
    fprintf(stderr, "kiln gen: out of memory\n");
    return 1;
  }
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      help(stdout);
      rc = 0;
      goto out_free;
    } else if (i + 1 >= argc &&
               (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--dtypes") || !strcmp(argv[i], "--schedules"))) {
      fprintf(stderr, "kiln gen: %s needs a value\n", argv[i]);
      goto out_usage;
    } else if (!strcmp(argv[i], "-o") && i + 1 < argc) {
      if (!cliOnce("gen", &dir, "-o", argv[++i])) goto out_usage;
    } else if (!strcmp(argv[i], "--dtypes") && i + 1 < argc) {
      if (kilnGenParseDtypes(&o, argv[++i]) != KILN_SUCCESS) {
        fprintf(stderr, "kiln gen: %s\n", kilnLastError());
        goto out_usage;
      }
    } else if (!strcmp(argv[i], "--inlined-only")) {
      o.inlinedOnly = true;
    } else if (!strcmp(argv[i], "--schedules") && i + 1 < argc) {
      char* end = NULL;
      long v = strtol(argv[++i], &end, 10);
      if (!*argv[i] || *end || v < 1 || v > 1000) {
        fprintf(stderr, "kiln gen: --schedules wants 1..1000, not '%s'\n", argv[i]);
        goto out_usage;
      }
      o.verify.schedules = (int)v;
    } else if (argv[i][0] == '-' && argv[i][1]) {
      fprintf(stderr, "kiln gen: unknown option '%s'\n", argv[i]);
      goto out_usage;
    } else {
      plans[n++] = argv[i];
    }
  }
  if (!dir) {
    fprintf(stderr, "kiln gen: -o DIR is required\n");
    goto out_usage;
  }
  struct stat st;
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
    fprintf(stderr, "kiln gen: %s is not a folder\n", dir);
    goto out_usage;
  }
  if (kilnGenFiles(dir, plans, n, &o) != KILN_SUCCESS) {
    fprintf(stderr, "kiln gen: %s\n", kilnLastError());
    rc = 1;
    goto out_free;
  }
  rc = 0;
  goto out_free;
out_usage:
  help(stderr);
out_free:
  free(plans);
  return rc;
}
