/* kiln show PLAN --svg FILE: a picture of a plan's schedule as the simulator runs it on a
 * topology. A lane per directed link (a sender and a receiver) that carries data, grouped by
 * sender; each transfer a bar over the time its link or ports are held (β·bytes), labelled with the
 * chunk it carries (the sender's buffer and offset, +count for several), then a thin line to the
 * data's arrival (α); a bar's colour tells its step type, its tooltip the rest. Time runs left to
 * right in µs. */
#include "plan_svg.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The most transfers one picture draws (an SVG of more is too large to look at). */
#define SVG_MAX_BARS 200000

typedef struct svgBuf {
  char* s;
  size_t n, cap;
  bool oom;
} svgBuf;

static void put(svgBuf* b, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(svgBuf* b, const char* fmt, ...) {
  if (b->oom) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(b->s ? b->s + b->n : NULL, b->s ? b->cap - b->n : 0, fmt, ap);
    va_end(ap);
    if (k < 0) {
      b->oom = true;
      return;
    }
    if (b->s && b->n + (size_t)k < b->cap) {
      b->n += (size_t)k;
      return;
    }
    size_t nc = b->cap ? 2 * b->cap : 1 << 16;
    while (nc < b->n + (size_t)k + 1) nc *= 2;
    char* ns = realloc(b->s, nc);
    if (!ns) {
      b->oom = true;
      return;
    }
    b->s = ns;
    b->cap = nc;
  }
}

/* A transfer: the sending step, its lane, its times. */
typedef struct bar {
  int lane, rank, tb, step;
  const kilnStep* st;
  double start, end, arrive;
} bar;

static int cmp_int(const void* a, const void* b) {
  int x = *(const int*)a, y = *(const int*)b;
  return x < y ? -1 : x > y;
}

/* A step type's colour (sends, fused receive-and-sends, the rest). */
static const char* colour(kilnStepType_t t) {
  switch (t) {
    case KILN_STEP_SEND: return "#4e79a7";
    case KILN_STEP_RECV_COPY_SEND: return "#59a14f";
    case KILN_STEP_RECV_REDUCE_SEND: return "#e15759";
    case KILN_STEP_RECV_REDUCE_COPY_SEND: return "#f28e2b";
    default: return "#9c755f";
  }
}

/* A round step (1, 2 or 5 times a power of ten) for about n ticks over span. */
static double tick_step(double span, int n) {
  double raw = span / n, p = pow(10, floor(log10(raw)));
  return raw <= p ? p : raw <= 2 * p ? 2 * p : raw <= 5 * p ? 5 * p : 10 * p;
}

int cliPlanSvg(const kilnPlan* p, const kilnTopology* t, uint64_t bytes, const char* path, char* err,
               size_t errlen) {
  kilnSimResult sim;
  kilnSimStepTime* times = NULL;
  int ntimes = 0;
  if (kilnPlanSimulateTimes(p, t, bytes, &sim, &times, &ntimes) != KILN_SUCCESS) {
    snprintf(err, errlen, "%s", kilnLastError());
    return 1;
  }
  int rc = 1;
  bar* bars = NULL;
  int nbars = 0, nlanes = 0;
  int* lanekey = NULL; /* sender * ngpus + receiver, sorted */
  svgBuf b = {0};
  /* the transfers, in the simulator's order of steps */
  long cap = 0;
  for (int r = 0; r < p->ngpus; r++)
    for (int i = 0; i < p->gpus[r].ntbs; i++)
      for (int s = 0; s < p->gpus[r].tbs[i].nsteps; s++)
        cap += kilnStepSends(p->gpus[r].tbs[i].steps[s].type);
  if (cap > SVG_MAX_BARS) {
    snprintf(err, errlen, "the plan has %ld transfers; a picture draws at most %d (synthesize a smaller one)",
             cap, SVG_MAX_BARS);
    goto out_free;
  }
  bars = malloc(sizeof *bars * (size_t)(cap + 1));
  lanekey = malloc(sizeof *lanekey * (size_t)(cap + 1));
  if (!bars || !lanekey) {
    snprintf(err, errlen, "out of memory");
    goto out_free;
  }
  int f = 0;
  for (int r = 0; r < p->ngpus; r++)
    for (int i = 0; i < p->gpus[r].ntbs; i++) {
      const kilnThreadblock* tb = &p->gpus[r].tbs[i];
      for (int s = 0; s < tb->nsteps; s++, f++) {
        const kilnStep* st = &tb->steps[s];
        if (!kilnStepSends(st->type) || f >= ntimes) continue;
        bars[nbars] = (bar){r * p->ngpus + tb->send, r, i, s, st, times[f].start_us, times[f].end_us,
                            times[f].arrive_us};
        lanekey[nbars] = r * p->ngpus + tb->send;
        nbars++;
      }
    }
  qsort(lanekey, (size_t)nbars, sizeof *lanekey, cmp_int);
  for (int i = 0; i < nbars; i++)
    if (i == 0 || lanekey[i] != lanekey[i - 1]) lanekey[nlanes++] = lanekey[i];
  for (int i = 0; i < nbars; i++) {
    int lo = 0, hi = nlanes - 1;
    while (lo < hi) {
      int mid = (lo + hi) / 2;
      if (lanekey[mid] < bars[i].lane)
        lo = mid + 1;
      else
        hi = mid;
    }
    bars[i].lane = lo;
  }
  /* geometry: lanes of 18 px, a time axis of 1200 px */
  const double T = sim.time_us > 0 ? sim.time_us : 1;
  const int left = 150, top = 70, lane_h = 18, width = 1200;
  const int height = top + nlanes * lane_h + 60;
  const double xs = width / T;
  put(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
  put(&b,
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" "
      "font-size=\"11\">\n",
      left + width + 40, height);
  put(&b, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
  char title[512];
  snprintf(title, sizeof title, "%s: %s, %d ranks on %s (%d node%s), %llu bytes: %.2f us in the simulator",
           p->name, kilnCollName(p->coll), p->ngpus, t->name, t->nodes, t->nodes == 1 ? "" : "s",
           (unsigned long long)bytes, sim.time_us);
  put(&b, "<text x=\"10\" y=\"20\" font-size=\"14\">");
  for (const char* c = title; *c; c++) /* names come from files: escape them */
    put(&b, "%s", *c == '<' ? "&lt;" : *c == '>' ? "&gt;" : *c == '&' ? "&amp;" : (char[]){*c, 0});
  put(&b, "</text>\n");
  put(&b,
      "<text x=\"10\" y=\"38\" fill=\"#555\">a lane per link (sender -&gt; receiver); a bar per transfer "
      "while "
      "its link or ports are held, labelled with the sender's chunk (buffer, offset, +count); the thin line "
      "is "
      "the latency to its arrival. Colours: ");
  static const kilnStepType_t legend[] = {KILN_STEP_SEND, KILN_STEP_RECV_COPY_SEND,
                                          KILN_STEP_RECV_REDUCE_SEND, KILN_STEP_RECV_REDUCE_COPY_SEND};
  for (size_t i = 0; i < sizeof legend / sizeof legend[0]; i++)
    put(&b, "<tspan fill=\"%s\">%s</tspan>%s", colour(legend[i]), kilnStepTypeName(legend[i]),
        i + 1 < 4 ? ", " : "");
  put(&b, "</text>\n");
  /* time axis */
  const double step = tick_step(T, 10);
  for (double x = 0; x <= T + 1e-9; x += step) {
    double px = left + x * xs;
    put(&b, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#ddd\"/>\n", px, top - 5, px,
        top + nlanes * lane_h);
    put(&b, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g us</text>\n", px, top - 8, x);
  }
  /* lanes */
  for (int l = 0; l < nlanes; l++) {
    const int a = lanekey[l] / p->ngpus, c = lanekey[l] % p->ngpus, y = top + l * lane_h;
    const kilnLink* lk = kilnTopologyLink(t, a, c);
    if (l % 2 == 0)
      put(&b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#f6f6f6\"/>\n", left, y, width,
          lane_h);
    put(&b, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%d -&gt; %d%s</text>\n", left - 6, y + 13, a, c,
        lk && lk->internode ? " (between nodes)" : "");
  }
  /* transfers */
  for (int i = 0; i < nbars; i++) {
    const bar* br = &bars[i];
    const int y = top + br->lane * lane_h + 2;
    const double x0 = left + br->start * xs, w = fmax(0.5, (br->end - br->start) * xs);
    char label[48];
    if (br->st->cnt > 1)
      snprintf(label, sizeof label, "%s%d+%d", kilnBufferName(br->st->srcbuf), br->st->srcoff, br->st->cnt);
    else
      snprintf(label, sizeof label, "%s%d", kilnBufferName(br->st->srcbuf), br->st->srcoff);
    put(&b,
        "<g><title>rank %d tb %d step %d (%s): %s chunk %d, %d chunk%s, to rank %d; %.3f-%.3f us, arrives "
        "%.3f "
        "us</title>",
        br->rank, br->tb, br->step, kilnStepTypeName(br->st->type), kilnBufferName(br->st->srcbuf),
        br->st->srcoff, br->st->cnt, br->st->cnt == 1 ? "" : "s", lanekey[br->lane] % p->ngpus, br->start,
        br->end, br->arrive);
    put(&b,
        "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\" stroke=\"white\" "
        "stroke-width=\"0.5\"/>",
        x0, y, w, lane_h - 6, colour(br->st->type));
    if (br->arrive > br->end)
      put(&b, "<line x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%d\" stroke=\"%s\"/>", x0 + w,
          y + (lane_h - 6) / 2, left + br->arrive * xs, y + (lane_h - 6) / 2, colour(br->st->type));
    if (w >= 6.5 * (double)strlen(label))
      put(&b, "<text x=\"%.2f\" y=\"%d\" fill=\"white\" font-size=\"9\">%s</text>", x0 + 2, y + 9, label);
    put(&b, "</g>\n");
  }
  put(&b, "</svg>\n");
  if (b.oom) {
    snprintf(err, errlen, "out of memory writing the picture");
    goto out_free;
  }
  /* written as kiln writes plans: whole, to a temporary renamed into place ("-": stdout) */
  if (kilnPlanWriteDocument(b.s, path) != KILN_SUCCESS) {
    b.s = NULL; /* freed by the writer */
    snprintf(err, errlen, "%s", kilnLastError());
    goto out_free;
  }
  b.s = NULL;
  rc = 0;
out_free:
  free(b.s);
  free(bars);
  free(lanekey);
  free(times);
  return rc;
}
