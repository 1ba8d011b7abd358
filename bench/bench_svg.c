/* SVG line plots for the benchmarks (bench_svg.h). */
#include "bench_svg.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define PW 520 /* panel width and height */
#define PH 340
#define ML 64 /* margins inside a panel */
#define MR 16
#define MT 34
#define MB 46

static const char* const colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"};

static void size_label(double b, char* out, size_t n) {
  const char* u[] = {"B", "K", "M", "G", "T"};
  int i = 0;
  while (b >= 1024 && i < 4) {
    b /= 1024;
    i++;
  }
  snprintf(out, n, "%g%s", b, u[i]);
}

static void xml_text(FILE* f, const char* s) {
  for (; *s; s++) {
    if (*s == '<')
      fputs("&lt;", f);
    else if (*s == '>')
      fputs("&gt;", f);
    else if (*s == '&')
      fputs("&amp;", f);
    else
      fputc(*s, f);
  }
}

/* One panel at (ox, oy). Axis ranges come from the data: x in whole powers of two, y in decades. */
static void panel(FILE* f, const benchPanel* p, int ox, int oy) {
  double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
  for (int s = 0; s < p->nseries; s++)
    for (int i = 0; i < p->series[s].n; i++) {
      double x = p->series[s].x[i], y = p->series[s].y[i];
      if (x <= 0 || y <= 0) continue;
      xmin = fmin(xmin, x);
      xmax = fmax(xmax, x);
      ymin = fmin(ymin, y);
      ymax = fmax(ymax, y);
    }
  fprintf(f, "<g transform=\"translate(%d,%d)\">\n", ox, oy);
  fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"white\" stroke=\"#ccc\"/>\n", PW, PH);
  fprintf(f, "<text x=\"%d\" y=\"20\" text-anchor=\"middle\" font-size=\"14\">", PW / 2);
  xml_text(f, p->title);
  fprintf(f, "</text>\n");
  if (!(xmin < INFINITY)) {
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" font-size=\"12\">no data</text>\n</g>\n",
            PW / 2, PH / 2);
    return;
  }
  double lx0 = floor(log2(xmin)), lx1 = ceil(log2(xmax));
  double ly0 = floor(log10(ymin)), ly1 = ceil(log10(ymax));
  if (lx1 <= lx0) lx1 = lx0 + 1;
  if (ly1 <= ly0) ly1 = ly0 + 1;
  const double w = PW - ML - MR, h = PH - MT - MB;
#define SX(x) (ML + (log2(x) - lx0) / (lx1 - lx0) * w)
#define SY(y) (MT + h - (log10(y) - ly0) / (ly1 - ly0) * h)
  /* grid and ticks */
  int xstep = (int)ceil((lx1 - lx0) / 10.0);
  if (xstep < 1) xstep = 1;
  for (double lx = lx0; lx <= lx1; lx += xstep) {
    double x = ML + (lx - lx0) / (lx1 - lx0) * w;
    char lab[32];
    size_label(pow(2, lx), lab, sizeof lab);
    fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>\n", x, MT, x, MT + h);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"10\">%s</text>\n", x,
            MT + h + 14, lab);
  }
  for (double ly = ly0; ly <= ly1; ly += 1) {
    double y = MT + h - (ly - ly0) / (ly1 - ly0) * h;
    fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>\n", ML, y, ML + w, y);
    fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\" font-size=\"10\">%g</text>\n", ML - 4, y + 3,
            pow(10, ly));
  }
  fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#333\"/>\n", ML,
          MT, w, h);
  fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" font-size=\"11\">size (bytes)</text>\n",
          ML + w / 2, PH - 8);
  fprintf(f,
          "<text x=\"14\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"11\" transform=\"rotate(-90 14 "
          "%.1f)\">algbw (GB/s)</text>\n",
          MT + h / 2, MT + h / 2);
  /* series */
  for (int s = 0; s < p->nseries; s++) {
    const benchSeries* se = &p->series[s];
    const char* col = colors[s % 6];
    fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", col);
    for (int i = 0; i < se->n; i++)
      if (se->x[i] > 0 && se->y[i] > 0) fprintf(f, "%.1f,%.1f ", SX(se->x[i]), SY(se->y[i]));
    fprintf(f, "\"/>\n");
    for (int i = 0; i < se->n; i++)
      if (se->x[i] > 0 && se->y[i] > 0)
        fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"/>\n", SX(se->x[i]), SY(se->y[i]),
                col);
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2\"/>\n", ML + 10,
            MT + 12 + 14 * s, ML + 30, MT + 12 + 14 * s, col);
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"11\">", ML + 34, MT + 16 + 14 * s);
    xml_text(f, se->name);
    fprintf(f, "</text>\n");
  }
#undef SX
#undef SY
  fprintf(f, "</g>\n");
}

int benchSvgWrite(const char* path, const char* title, const benchPanel* panels, int npanels) {
  char tmp[4200];
  if (snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid()) >= (int)sizeof tmp) return -1;
  FILE* f = fopen(tmp, "w");
  if (!f) return -1;
  int cols = npanels > 1 ? 2 : 1, rows = (npanels + cols - 1) / cols;
  int W = cols * PW + (cols + 1) * 10, H = rows * PH + (rows + 1) * 10 + 30;
  fprintf(
      f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\">\n",
      W, H);
  fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"#fafafa\"/>\n");
  fprintf(f, "<text x=\"%d\" y=\"24\" text-anchor=\"middle\" font-size=\"16\">", W / 2);
  xml_text(f, title);
  fprintf(f, "</text>\n");
  for (int i = 0; i < npanels; i++)
    panel(f, &panels[i], 10 + (i % cols) * (PW + 10), 40 + (i / cols) * (PH + 10));
  fprintf(f, "</svg>\n");
  if (fclose(f) != 0 || rename(tmp, path) != 0) {
    remove(tmp);
    return -1;
  }
  return 0;
}
