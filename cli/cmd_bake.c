/* kiln bake: put a verified plan, with the byte range it should serve, under the folder whose
 * plans the build compiles into the runtime (plans/baked by default); or list that folder. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli_util.h"
#include "commands.h"
#include "gen.h"
#include "kiln/plan.h"

static void help(FILE* f) {
  fprintf(f,
          "usage: kiln bake [-d DIR] [--min SIZE] [--max SIZE|inf] [--name NAME] PLAN.xml\n"
          "       kiln bake --list [-d DIR]\n"
          "Verifies PLAN.xml, sets the byte range it serves (--min/--max; default: keep the\n"
          "plan's) and writes it as DIR/NAME.xml (NAME: default the file's name), so that the next\n"
          "build bakes it into the runtime (DIR: default the build's KILN_PLANS_DIR, its source\n"
          "tree's plans/baked unless configured otherwise).\n"
          "Sizes take K/M/G suffixes (powers of 1024). Bytes are the collective's reference size:\n"
          "allreduce per-rank input; allgather total output; reducescatter, alltoall total input.\n"
          "--list prints DIR's plans and warns where two of one collective, rank count and form\n"
          "overlap (selection then prefers the narrower range).\n");
}

typedef struct row {
  char file[256];
  kilnPlan* p;
} row;

static int cmp_row(const void* a, const void* b) {
  return strcmp(((const row*)a)->file, ((const row*)b)->file);
}

static void print_size(uint64_t v) {
  if (v == UINT64_MAX || v >= 9223372036854775807ull)
    printf("%10s", "inf");
  else
    printf("%10llu", (unsigned long long)v);
}

/* Lists DIR's plans; 0 on success, 1 when a plan cannot be read. */
static int list_dir(const char* dir) {
  DIR* d = opendir(dir);
  if (!d) {
    fprintf(stderr, "kiln bake: cannot open folder %s\n", dir);
    return 1;
  }
  row* rows = NULL;
  int n = 0, cap = 0, rc = 0;
  struct dirent* de;
  while ((de = readdir(d)) != NULL) {
    size_t len = strlen(de->d_name);
    if (len < 5 || strcmp(de->d_name + len - 4, ".xml") || len >= sizeof rows[0].file) continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 16;
      row* nr = realloc(rows, (size_t)cap * sizeof *nr);
      if (!nr) {
        fprintf(stderr, "kiln bake: out of memory\n");
        rc = 1;
        goto out_free;
      }
      rows = nr;
    }
    snprintf(rows[n].file, sizeof rows[n].file, "%s", de->d_name);
    rows[n].p = NULL;
    n++;
  }
  if (n > 1) qsort(rows, (size_t)n, sizeof *rows, cmp_row);
  printf("%-40s %-13s %5s %10s %10s %-8s %-6s\n", "file", "collective", "ranks", "min", "max", "form",
         "proto");
  for (int i = 0; i < n; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, rows[i].file);
    if (kilnPlanReadFile(path, &rows[i].p) != KILN_SUCCESS) {
      fprintf(stderr, "kiln bake: %s\n", kilnLastError());
      rc = 1;
      continue;
    }
    const kilnPlan* p = rows[i].p;
    printf("%-40s %-13s %5d ", rows[i].file, kilnCollName(p->coll), p->ngpus);
    print_size(p->min_bytes);
    printf(" ");
    print_size(p->max_bytes);
    const bool in = kilnPlanServes(p, true), out = kilnPlanServes(p, false);
    printf(" %-8s %-6s\n",
           in && out ? "both"
           : in      ? "inplace"
           : out     ? "outplace"
                     : "none",
           kilnProtoName(p->proto));
  }
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++) {
      const kilnPlan *a = rows[i].p, *b = rows[j].p;
      if (!a || !b || a->coll != b->coll || a->ngpus != b->ngpus) continue;
      if (!((kilnPlanServes(a, true) && kilnPlanServes(b, true)) ||
            (kilnPlanServes(a, false) && kilnPlanServes(b, false))))
        continue;
      if (a->max_bytes < b->min_bytes || b->max_bytes < a->min_bytes) continue;
      printf("note: %s and %s overlap\n", rows[i].file, rows[j].file);
    }
out_free:
  for (int i = 0; i < n; i++) kilnPlanFree(rows[i].p);
  free(rows);
  closedir(d);
  return rc;
}

/* Whether the build can bake a plan written to `out` in `dir`: its file name makes an identifier
 * (kilnGenIdent) that no other plan of the folder makes (a-b.xml and a_b.xml would both be a_b;
 * the build stops on such a pair). Says why not. */
static bool bakeable_name(const char* dir, const char* out) {
  char ident[KILN_GEN_IDENT_MAX], other[KILN_GEN_IDENT_MAX];
  if (kilnGenIdent(out, ident) != KILN_SUCCESS) {
    fprintf(stderr, "kiln bake: %s\n", kilnLastError());
    return false;
  }
  DIR* d = opendir(dir);
  if (!d) return true; /* the write names the folder */
  const char* base = strrchr(out, '/') ? strrchr(out, '/') + 1 : out;
  bool ok = true;
  for (struct dirent* e; ok && (e = readdir(d));) {
    const size_t l = strlen(e->d_name);
    if (l <= 4 || strcmp(e->d_name + l - 4, ".xml") || !strcmp(e->d_name, base)) continue;
    if (kilnGenIdent(e->d_name, other) == KILN_SUCCESS && !strcmp(other, ident)) {
      fprintf(stderr, "kiln bake: %s would be baked as %s, as %s/%s is: give it another --name\n", base,
              ident, dir, e->d_name);
      ok = false;
    }
  }
  closedir(d);
  return ok;
}

int cmd_bake(int argc, char** argv) {
#ifdef KILN_PLANS_DIR
  const char* dir = KILN_PLANS_DIR; /* the folder this build bakes, wherever kiln runs from */
#else
  const char* dir = "plans/baked";
#endif
  const char* dirOpt = NULL;
  const char* name = NULL;
  const char* in = NULL;
  bool list = false, setMin = false, setMax = false;
  uint64_t minB = 0, maxB = UINT64_MAX;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      help(stdout);
      return 0;
    }
    if (!strcmp(argv[i], "--list")) {
      list = true;
      continue;
    }
    if (i + 1 >= argc && (!strcmp(argv[i], "-d") || !strcmp(argv[i], "--name") || !strcmp(argv[i], "--min") ||
                          !strcmp(argv[i], "--max"))) {
      fprintf(stderr, "kiln bake: %s needs a value\n", argv[i]);
      help(stderr);
      return 2;
    }
    if (!strcmp(argv[i], "-d") && i + 1 < argc) {
      if (!cliOnce("bake", &dirOpt, "-d", argv[++i])) return 2;
      dir = dirOpt;
      continue;
    }
    if (!strcmp(argv[i], "--name") && i + 1 < argc) {
      if (!cliOnce("bake", &name, "--name", argv[++i])) return 2;
      continue;
    }
    if (!strcmp(argv[i], "--min") && i + 1 < argc) {
      if (!kilnParseSize(argv[++i], &minB)) {
        fprintf(stderr, "kiln bake: bad size '%s' for --min\n", argv[i]);
        help(stderr);
        return 2;
      }
      setMin = true;
      continue;
    }
    if (!strcmp(argv[i], "--max") && i + 1 < argc) {
      i++;
      if (strcasecmp(argv[i], "inf") && !kilnParseSize(argv[i], &maxB)) {
        fprintf(stderr, "kiln bake: bad size '%s' for --max\n", argv[i]);
        help(stderr);
        return 2;
      }
      if (!strcasecmp(argv[i], "inf")) maxB = UINT64_MAX;
      setMax = true;
      continue;
    }
    if (argv[i][0] == '-' || in) {
      fprintf(stderr, "kiln bake: %s '%s'\n",
              argv[i][0] == '-' ? "unknown option" : "one plan only; unexpected argument", argv[i]);
      help(stderr);
      return 2;
    }
    in = argv[i];
  }
  if (list) {
    if (in) {
      fprintf(stderr, "kiln bake: --list takes no plan\n");
      help(stderr);
      return 2;
    }
    return list_dir(dir);
  }
  if (!in) {
    fprintf(stderr, "kiln bake: no plan given\n");
    help(stderr);
    return 2;
  }
  if (name && (!*name || strchr(name, '/') || strlen(name) > 200)) {
    fprintf(stderr, "kiln bake: bad --name '%s' (a file name of 1 to 200 characters, without folders)\n",
            name);
    return 2;
  }
  kilnPlan* p = NULL;
  if (kilnPlanReadFile(in, &p) != KILN_SUCCESS) {
    fprintf(stderr, "kiln bake: %s\n", kilnLastError());
    return 1;
  }
  int rc = 1;
  if (setMin) p->min_bytes = minB;
  if (setMax) p->max_bytes = maxB;
  if ((setMin && minB > (uint64_t)INT64_MAX) ||
      (setMax && maxB != UINT64_MAX && maxB > (uint64_t)INT64_MAX)) {
    fprintf(stderr,
            "kiln bake: --min/--max above 2^63 - 1 bytes (a plan file's limit; --max inf: no limit)\n");
    rc = 2;
    goto out_free;
  }
  if (p->min_bytes > p->max_bytes) {
    fprintf(stderr, "kiln bake: %s: min bytes %llu above max bytes %llu\n", in,
            (unsigned long long)p->min_bytes, (unsigned long long)p->max_bytes);
    rc = 2;
    goto out_free;
  }
  p->has_minmax = true;
  if (kilnPlanVerify(p, NULL) != KILN_SUCCESS) {
    fprintf(stderr, "kiln bake: %s (plan %s) refused: %s\n", in, p->name, kilnLastError());
    goto out_free;
  }
  {
    const char* base = strrchr(in, '/');
    base = base ? base + 1 : in;
    char out[4096];
    size_t bl = strlen(base);
    if (name)
      snprintf(out, sizeof out, "%s/%s%s", dir, name,
               (strlen(name) > 4 && !strcmp(name + strlen(name) - 4, ".xml")) ? "" : ".xml");
    else
      snprintf(out, sizeof out, "%s/%.*s.xml", dir,
               (int)(bl > 4 && !strcmp(base + bl - 4, ".xml") ? bl - 4 : bl), base);
    if (!bakeable_name(dir, out) || !cliOutputWritable("bake", out)) {
      rc = 2;
      goto out_free;
    }
    if (kilnPlanWriteFile(p, out) != KILN_SUCCESS) {
      fprintf(stderr, "kiln bake: %s\n", kilnLastError());
      goto out_free;
    }
    printf("baked %s (plan %s, %s, %d ranks) as %s; rebuild to compile it in\n", in, p->name,
           kilnCollName(p->coll), p->ngpus, out);
  }
  rc = 0;
out_free:
  kilnPlanFree(p);
  return rc;
}
