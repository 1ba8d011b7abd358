/* A small SVG line-plot writer for the benchmarks: panels of algbw-vs-size curves on log axes
 * (like the TACCL paper's figures), written directly, no plotting library needed. */
#ifndef KILN_BENCH_SVG_H
#define KILN_BENCH_SVG_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct benchSeries {
  const char* name; /* legend */
  const double* x;  /* bytes (log2 axis) */
  const double* y;  /* GB/s (log10 axis); values <= 0 are skipped */
  int n;
} benchSeries;

typedef struct benchPanel {
  char title[96];
  const benchSeries* series;
  int nseries;
} benchPanel;

/* Writes the panels in a grid of two columns under `title`. 0 on success, -1 when the file
 * cannot be written (it is written to a temporary and renamed). */
int benchSvgWrite(const char* path, const char* title, const benchPanel* panels, int npanels);

#ifdef __cplusplus
}
#endif
#endif
