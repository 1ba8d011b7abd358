/*
 * csv_svg: the plot of a coll_bench table (--csv), as coll_bench --svg draws it: one panel per
 * collective, algbw against size on log axes, a curve for each of NCCL, kiln baked, kiln
 * interpreted and kiln sym (the times the table holds).
 *
 *   csv_svg [--title TEXT] TABLE.csv OUT.svg
 *
 * TEXT goes after the figure's title (the machine and the table's form: what the CSV does not
 * record, such as --window). Exit status 0, or 1 with a message naming the file and line on a
 * table that cannot be read or an output that cannot be written (written whole or not at all).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_csv.h"
#include "bench_svg.h"

enum { NV = 4, MAX_COLLS = 16 };
static const char* const vname[NV] = {"nccl", "kiln-baked", "kiln-interp", "kiln-sym"};

typedef struct {
  char name[32];
  double* x[NV];
  double* y[NV];
  int n[NV];
  benchSeries series[NV];
} collPlot;

static void usage(FILE* f) {
  fprintf(f,
          "usage: csv_svg [--title TEXT] TABLE.csv OUT.svg\n"
          "  plots a coll_bench --csv table: algbw against size, a panel per collective\n");
}

int main(int argc, char** argv) {
  const char* title = NULL;
  const char* path[2] = {NULL, NULL};
  int npaths = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      usage(stdout);
      return 0;
    }
    if (!strcmp(argv[i], "--title") && i + 1 < argc)
      title = argv[++i];
    else if (argv[i][0] == '-' && argv[i][1]) {
      fprintf(stderr, "csv_svg: unknown option %s\n", argv[i]);
      usage(stderr);
      return 1;
    } else if (npaths < 2)
      path[npaths++] = argv[i];
    else {
      usage(stderr);
      return 1;
    }
  }
  if (npaths != 2) {
    usage(stderr);
    return 1;
  }

  int status = 1, ncolls = 0;
  collPlot colls[MAX_COLLS];
  benchPanel panels[MAX_COLLS];
  memset(colls, 0, sizeof colls);
  benchCsv t;
  char err[512];
  if (benchCsvRead(path[0], &t, err, sizeof err) != 0) {
    fprintf(stderr, "csv_svg: %s\n", err);
    return 1;
  }
  const int cColl = benchCsvColumn(&t, "coll"), cRanks = benchCsvColumn(&t, "nranks"),
            cModel = benchCsvColumn(&t, "model"), cDtype = benchCsvColumn(&t, "dtype"),
            cSize = benchCsvColumn(&t, "size");
  int cUs[NV];
  for (int v = 0; v < NV; v++) {
    char name[48];
    snprintf(name, sizeof name, "%s_us", vname[v]);
    cUs[v] = benchCsvColumn(&t, name);
  }
  if (cColl < 0 || cRanks < 0 || cModel < 0 || cDtype < 0 || cSize < 0) {
    fprintf(stderr, "csv_svg: %s: not a coll_bench table (no coll, nranks, model, dtype or size column)\n",
            path[0]);
    goto out;
  }
  if (t.nrows == 0) {
    fprintf(stderr, "csv_svg: %s: no rows to plot\n", path[0]);
    goto out;
  }
  for (int r = 0; r < t.nrows; r++) {
    const char* c = benchCsvCell(&t, r, cColl);
    int k = 0;
    while (k < ncolls && strcmp(colls[k].name, c) != 0) k++;
    if (k == ncolls) {
      if (ncolls == MAX_COLLS || strlen(c) >= sizeof colls[k].name) {
        fprintf(stderr, "csv_svg: %s:%d: collective '%s': more than %d collectives or a name too long\n",
                path[0], t.lines[r], c, MAX_COLLS);
        goto out;
      }
      snprintf(colls[k].name, sizeof colls[k].name, "%s", c);
      for (int v = 0; v < NV; v++) {
        colls[k].x[v] = malloc(sizeof(double) * (size_t)t.nrows);
        colls[k].y[v] = malloc(sizeof(double) * (size_t)t.nrows);
        if (!colls[k].x[v] || !colls[k].y[v]) {
          fprintf(stderr, "csv_svg: out of memory\n");
          ncolls++;
          goto out;
        }
      }
      ncolls++;
    }
    double size;
    if (!benchCsvNumber(benchCsvCell(&t, r, cSize), &size) || size <= 0) {
      fprintf(stderr, "csv_svg: %s:%d: size '%s' is not a positive number\n", path[0], t.lines[r],
              benchCsvCell(&t, r, cSize));
      goto out;
    }
    for (int v = 0; v < NV; v++) {
      double us;
      const char* f = benchCsvCell(&t, r, cUs[v]);
      if (!f[0]) continue; /* not measured */
      if (!benchCsvNumber(f, &us) || us <= 0) {
        fprintf(stderr, "csv_svg: %s:%d: %s_us '%s' is not a positive number\n", path[0], t.lines[r],
                vname[v], f);
        goto out;
      }
      collPlot* p = &colls[k];
      p->x[v][p->n[v]] = size;
      p->y[v][p->n[v]++] = size / (us * 1e3);
    }
  }

  /* Titles as coll_bench gives them. */
  const char* model = benchCsvCell(&t, 0, cModel);
  const int ranks = atoi(benchCsvCell(&t, 0, cRanks));
  int sharedGpus = 0;
  const bool mp = !strncmp(model, "mp", 2);
  if (!strncmp(model, "shared", 6)) sharedGpus = atoi(model + 6);
  for (int k = 0; k < ncolls; k++) {
    for (int v = 0; v < NV; v++)
      colls[k].series[v] = (benchSeries){vname[v], colls[k].x[v], colls[k].y[v], colls[k].n[v]};
    if (sharedGpus)
      snprintf(panels[k].title, sizeof panels[k].title, "%.31s, %d ranks on %d GPU%s", colls[k].name, ranks,
               sharedGpus, sharedGpus == 1 ? "" : "s");
    else
      snprintf(panels[k].title, sizeof panels[k].title, "%.31s, %d GPUs%s", colls[k].name, ranks,
               mp ? " (one process per GPU)" : "");
    panels[k].series = colls[k].series;
    panels[k].nseries = NV;
  }
  char figure[512];
  snprintf(figure, sizeof figure,
           "algbw (GB/s) vs size: NCCL, kiln baked, kiln interpreted, kiln sym (%s)%s%s",
           benchCsvCell(&t, 0, cDtype), title ? ", " : "", title ? title : "");
  if (benchSvgWrite(path[1], figure, panels, ncolls) != 0) {
    fprintf(stderr, "csv_svg: cannot write %s\n", path[1]);
    goto out;
  }
  status = 0;

out:
  for (int k = 0; k < ncolls; k++)
    for (int v = 0; v < NV; v++) {
      free(colls[k].x[v]);
      free(colls[k].y[v]);
    }
  benchCsvFree(&t);
  return status;
}
