/*
 * perf_compare: checks a coll_bench table (--csv) against a baseline of the same form (a table of
 * bench/baselines/) and names every row that got slower.
 *
 *   perf_compare [--threshold PCT] [--col COLUMN] BASELINE.csv NEW.csv
 *
 * Rows are matched by collective, ranks, process model and timing (the `model` column: single,
 * mp or sharedG, +graph or +batch), dtype, op, placement and size; where a table holds several
 * rows of one call (coll_bench --sweep: one a plan) the plan joins the match. Printed, one line
 * each: a baseline row whose time in NEW is more than PCT per cent (default 5) above the
 * baseline's, a baseline row that NEW lacks or has no time for, and a NEW row whose result
 * differed from NCCL's (its err column). Exit status: 1 when any was printed, 0 when none, 2 on
 * bad arguments or a table that cannot be read.
 *
 * COLUMN is the time compared: `kiln` (default) what kiln runs by default for the call (the sym
 * column where it is marked `*`, else the baked or interpreted time that coll_bench's speedup
 * was taken from), or one of coll_bench's columns: nccl, kiln-baked, kiln-interp, kiln-sym.
 * Tables without an NCCL column (--shared) have no speedup to tell kiln's default by: name a
 * column there.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_csv.h"

enum { KEY_COLL, KEY_NRANKS, KEY_MODEL, KEY_DTYPE, KEY_OP, KEY_INPLACE, KEY_SIZE, NKEYS };
static const char* const keyNames[NKEYS] = {"coll", "nranks", "model", "dtype", "op", "inplace", "size"};

/* Where a table keeps what the comparison reads. */
typedef struct {
  const char* path;
  benchCsv t;
  int key[NKEYS];
  int plan;
  int nccl, speedup, sym;   /* for the default column */
  int baked, interp, symUs; /* kiln's times */
  int col;                  /* --col's time column (-1: kiln's default) */
} table;

static void usage(FILE* f) {
  fprintf(f,
          "usage: perf_compare [--threshold PCT] [--col COLUMN] BASELINE.csv NEW.csv\n"
          "  names every row of NEW (a coll_bench --csv table) more than PCT per cent (default 5)\n"
          "  slower than the same row of BASELINE, every baseline row NEW lacks, and every row of\n"
          "  NEW whose result differed from NCCL's; exit status 1 when there is any, 0 otherwise.\n"
          "  COLUMN: kiln (default: what kiln runs by default), nccl, kiln-baked, kiln-interp, kiln-sym\n");
}

static int open_table(table* x, const char* path, const char* colName) {
  char err[512];
  x->path = path;
  if (benchCsvRead(path, &x->t, err, sizeof err) != 0) {
    fprintf(stderr, "perf_compare: %s\n", err);
    return -1;
  }
  for (int k = 0; k < NKEYS; k++) {
    x->key[k] = benchCsvColumn(&x->t, keyNames[k]);
    if (x->key[k] < 0) {
      fprintf(stderr, "perf_compare: %s: no column '%s': not a coll_bench table\n", path, keyNames[k]);
      return -1;
    }
  }
  x->plan = benchCsvColumn(&x->t, "plan");
  x->nccl = benchCsvColumn(&x->t, "nccl_us");
  x->speedup = benchCsvColumn(&x->t, "speedup");
  x->sym = benchCsvColumn(&x->t, "sym");
  x->baked = benchCsvColumn(&x->t, "kiln-baked_us");
  x->interp = benchCsvColumn(&x->t, "kiln-interp_us");
  x->symUs = benchCsvColumn(&x->t, "kiln-sym_us");
  x->col = -1;
  if (strcmp(colName, "kiln") != 0) {
    char name[96];
    snprintf(name, sizeof name, "%s_us", colName);
    x->col = benchCsvColumn(&x->t, name);
    if (x->col < 0) {
      fprintf(stderr, "perf_compare: %s: no column '%s_us'\n", path, colName);
      return -1;
    }
  }
  return 0;
}

/* The err column beside time column c (-1: none). */
static int err_column_of(const table* x, int c) {
  if (c < 0) return -1;
  const char* us = x->t.names[c];
  char name[96];
  const size_t l = strlen(us);
  if (l < 3 || l - 3 + 5 > sizeof name) return -1;
  snprintf(name, sizeof name, "%.*s_err", (int)(l - 3), us);
  return benchCsvColumn(&x->t, name);
}

/* Row r's compared time into *us and the column it came from into *from: 1 when the row has
 * one, 0 when it has none (a variant coll_bench could not run), -1 when the row cannot say which
 * time is kiln's default (no NCCL time, no speedup), with a message. */
static int time_of(const table* x, int r, double* us, int* from) {
  const benchCsv* t = &x->t;
  *from = x->col;
  if (x->col >= 0) return benchCsvNumber(benchCsvCell(t, r, x->col), us) ? 1 : 0;
  const char* sym = benchCsvCell(t, r, x->sym);
  const size_t sl = strlen(sym);
  if (sl && sym[sl - 1] == '*' && benchCsvNumber(benchCsvCell(t, r, x->symUs), us)) {
    *from = x->symUs;
    return 1;
  }
  double nccl, speedup;
  if (!benchCsvNumber(benchCsvCell(t, r, x->nccl), &nccl) ||
      !benchCsvNumber(benchCsvCell(t, r, x->speedup), &speedup) || speedup <= 0) {
    double b, i;
    if (!benchCsvNumber(benchCsvCell(t, r, x->baked), &b) &&
        !benchCsvNumber(benchCsvCell(t, r, x->interp), &i))
      return 0; /* kiln ran nothing there */
    fprintf(stderr,
            "perf_compare: %s:%d: no NCCL time and speedup to tell kiln's default time by: name a column "
            "(--col)\n",
            x->path, t->lines[r]);
    return -1;
  }
  /* coll_bench's speedup is NCCL's time over the default's: of the plan's two times, the one it
   * was taken from is the nearer to NCCL's time / speedup (the speedup has 3 decimals). */
  const double want = nccl / speedup;
  double best = INFINITY;
  const int cand[2] = {x->baked, x->interp};
  for (int k = 0; k < 2; k++) {
    double v;
    if (!benchCsvNumber(benchCsvCell(t, r, cand[k]), &v)) continue;
    if (fabs(v - want) < best) {
      best = fabs(v - want);
      *us = v;
      *from = cand[k];
    }
  }
  return best < INFINITY ? 1 : 0;
}

static bool same_key(const table* a, int ra, const table* b, int rb, bool withPlan) {
  for (int k = 0; k < NKEYS; k++)
    if (strcmp(benchCsvCell(&a->t, ra, a->key[k]), benchCsvCell(&b->t, rb, b->key[k])) != 0) return false;
  return !withPlan || !strcmp(benchCsvCell(&a->t, ra, a->plan), benchCsvCell(&b->t, rb, b->plan));
}

/* Whether two rows of x share a key (without the plan). */
static bool repeats_calls(const table* x) {
  for (int r = 0; r < x->t.nrows; r++)
    for (int s = 0; s < r; s++)
      if (same_key(x, r, x, s, false)) return true;
  return false;
}

static bool withPlanNames; /* the tables repeat calls (--sweep): rows are named with their plan */

/* Row r's call, for a report line. */
static void describe(const table* x, int r, char* out, size_t n) {
  const benchCsv* t = &x->t;
  int l = snprintf(out, n, "%s, %s ranks, %s, %s %s, %s B%s", benchCsvCell(t, r, x->key[KEY_COLL]),
                   benchCsvCell(t, r, x->key[KEY_NRANKS]), benchCsvCell(t, r, x->key[KEY_MODEL]),
                   benchCsvCell(t, r, x->key[KEY_DTYPE]), benchCsvCell(t, r, x->key[KEY_OP]),
                   benchCsvCell(t, r, x->key[KEY_SIZE]),
                   strcmp(benchCsvCell(t, r, x->key[KEY_INPLACE]), "0") ? ", in place" : "");
  if (withPlanNames && l >= 0 && (size_t)l < n)
    snprintf(out + l, n - (size_t)l, ", %s", benchCsvCell(t, r, x->plan));
}

int main(int argc, char** argv) {
  double threshold = 5;
  const char* col = "kiln";
  const char* path[2] = {NULL, NULL};
  int npaths = 0;
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      return 0;
    }
    if (!strcmp(a, "--threshold") || !strcmp(a, "--col")) {
      if (i + 1 >= argc) {
        fprintf(stderr, "perf_compare: %s needs a value\n", a);
        usage(stderr);
        return 2;
      }
      const char* v = argv[++i];
      if (!strcmp(a, "--col")) {
        col = v;
        continue;
      }
      if (!benchCsvNumber(v, &threshold) || threshold < 0) {
        fprintf(stderr, "perf_compare: --threshold %s: not a percentage (a number, 0 or more)\n", v);
        return 2;
      }
      continue;
    }
    if (a[0] == '-' && a[1]) {
      fprintf(stderr, "perf_compare: unknown option %s\n", a);
      usage(stderr);
      return 2;
    }
    if (npaths == 2) {
      fprintf(stderr, "perf_compare: more than two tables given (%s)\n", a);
      usage(stderr);
      return 2;
    }
    path[npaths++] = a;
  }
  if (npaths != 2) {
    usage(stderr);
    return 2;
  }
  if (strcmp(col, "kiln") && strcmp(col, "nccl") && strcmp(col, "kiln-baked") && strcmp(col, "kiln-interp") &&
      strcmp(col, "kiln-sym")) {
    fprintf(stderr, "perf_compare: --col %s: not kiln, nccl, kiln-baked, kiln-interp or kiln-sym\n", col);
    return 2;
  }

  int status = 2;
  table base, cur;
  memset(&base, 0, sizeof base);
  memset(&cur, 0, sizeof cur);
  if (open_table(&base, path[0], col) != 0 || open_table(&cur, path[1], col) != 0) goto out;
  const bool withPlan = repeats_calls(&base) || repeats_calls(&cur);
  withPlanNames = withPlan;
  if (withPlan && (base.plan < 0 || cur.plan < 0)) {
    fprintf(stderr, "perf_compare: a table repeats a call and %s has no plan column to tell its rows apart\n",
            base.plan < 0 ? base.path : cur.path);
    goto out;
  }
  for (int pass = 0; pass < 2; pass++) { /* a call repeated under one key is a table that cannot be matched */
    const table* x = pass ? &cur : &base;
    for (int r = 0; r < x->t.nrows; r++)
      for (int s = 0; s < r; s++)
        if (same_key(x, r, x, s, withPlan)) {
          fprintf(stderr, "perf_compare: %s:%d: the same call as line %d\n", x->path, x->t.lines[r],
                  x->t.lines[s]);
          goto out;
        }
  }

  int slower = 0, missing = 0, wrong = 0, matched = 0, worstRow = -1;
  double worst = -INFINITY;
  char what[160];
  for (int r = 0; r < base.t.nrows; r++) {
    double b, n;
    int bFrom, nFrom;
    const int hasB = time_of(&base, r, &b, &bFrom);
    if (hasB < 0) goto out;
    int m = -1;
    for (int s = 0; s < cur.t.nrows && m < 0; s++)
      if (same_key(&base, r, &cur, s, withPlan)) m = s;
    if (hasB == 0) continue; /* nothing of this row to compare */
    describe(&base, r, what, sizeof what);
    if (m < 0) {
      printf("%s: not in %s\n", what, cur.path);
      missing++;
      continue;
    }
    const int hasN = time_of(&cur, m, &n, &nFrom);
    if (hasN < 0) goto out;
    if (hasN == 0) {
      printf("%s: %.3f us in the baseline, no time in %s\n", what, b, cur.path);
      missing++;
      continue;
    }
    matched++;
    const double change = (n / b - 1) * 100;
    if (change > worst) worst = change, worstRow = r;
    if (change > threshold) {
      printf("%s: %9.3f -> %9.3f us  %+.1f%%\n", what, b, n, change);
      slower++;
    }
  }
  for (int s = 0; s < cur.t.nrows; s++) { /* wrong results, whatever the baseline holds */
    double n, e;
    int from;
    const int has = time_of(&cur, s, &n, &from);
    if (has < 0) goto out;
    if (has && benchCsvNumber(benchCsvCell(&cur.t, s, err_column_of(&cur, from)), &e) && e != 0) {
      describe(&cur, s, what, sizeof what);
      printf("%s: %.0f elements differ from NCCL's in %s (%s:%d)\n", what, e, cur.t.names[from], cur.path,
             cur.t.lines[s]);
      wrong++;
    }
  }
  printf("perf_compare: %s (%s time) against %s: %d rows compared, %d more than %g%% slower", cur.path, col,
         base.path, matched, slower, threshold);
  if (missing) printf(", %d missing", missing);
  if (wrong) printf(", %d with wrong results", wrong);
  if (worstRow >= 0) {
    describe(&base, worstRow, what, sizeof what);
    printf("; largest change %+.1f%% (%s)", worst, what);
  }
  printf("\n");
  status = slower || missing || wrong ? 1 : 0;

out:
  benchCsvFree(&base.t);
  benchCsvFree(&cur.t);
  return status;
}
