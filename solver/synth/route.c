/* Stage 1, routing (paper Appendix B.1): a MILP choosing each chunk's links over the shortest
 * paths of the logical topology, with relaxed bandwidth per link and per switch / NIC port,
 * switch-hyperedge policies, and the sketch's symmetry as a quotient (one column per orbit of
 * (chunk, link) and (chunk, rank) under the symmetry group). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "synth_internal.h"

#define ROUTE_MAX_KEYS 20000000 /* (chunk, link) pairs: beyond this the model cannot be built */

void synRouteFree(synRoute* r) {
  free(r->parent);
  memset(r, 0, sizeof *r);
}

static int uf_find(int* p, int a) {
  while (p[a] != a) {
    p[a] = p[p[a]];
    a = p[a];
  }
  return a;
}
static void uf_union(int* p, int a, int b) {
  a = uf_find(p, a);
  b = uf_find(p, b);
  if (a != b) p[a < b ? b : a] = a < b ? a : b;
}

static int relay_of(const synLogical* L, int p) { return (p / L->relay_r1) * L->relay_r1 + L->relay_r2; }

/* How many times chunk c's crossing of link l loads the link (port false) or its ports (port true)
 * in the topology the logical one represents (synRouteParams.remote_copies). */
static double load_weight(const synLogical* L, const synChunks* C, const synRouteParams* p, int c, int l,
                          bool port) {
  if (p->remote_copies <= 1) return 1;
  const synLink* e = &L->links[l];
  const int home = C->pre[c] / L->gpn;
  const bool remote = C->multicast ? e->internode || e->src / L->gpn != home : C->dst[c] / L->gpn != home;
  if (!remote) return 1;
  return e->internode && !port ? 1 : p->remote_copies;
}

/* With a chunk-to-relay map, a chunk crosses between nodes only from its relay: in an allgather the
 * relay of its node sends it (the link leaves the relay); in the reducescatter, routed as an
 * allgather on the transposed links, the partial sums of another node reach the chunk's node
 * from that node's GPU of the relay's local index (the transposed link enters it). */
static bool link_allowed(const synLogical* L, int l, int pre) {
  if (!L->has_relay_map || !L->links[l].internode) return true;
  if (L->transposed) return L->links[l].dst % L->gpn == relay_of(L, pre) % L->gpn;
  return L->links[l].src == relay_of(L, pre);
}

/* BFS distances from s over links allowed for chunks starting at pre (reverse: into s). */
static void bfs(const synLogical* L, int pre, int s, bool reverse, int* dist, int* q) {
  int n = L->n;
  for (int i = 0; i < n; i++) dist[i] = -1;
  int h = 0, t = 0;
  dist[s] = 0;
  q[t++] = s;
  while (h < t) {
    int u = q[h++];
    for (int v = 0; v < n; v++) {
      int l = reverse ? L->link_of[v * n + u] : L->link_of[u * n + v];
      if (l < 0 || dist[v] >= 0 || !link_allowed(L, l, pre)) continue;
      dist[v] = dist[u] + 1;
      q[t++] = v;
    }
  }
}

typedef struct progressCtx {
  const synRouteParams* p;
  int rows, cols, nnz, ints;
} progressCtx;

static void route_progress(void* user, double inc, double bound, double gap, double el) {
  progressCtx* c = user;
  kilnSynthProgress pr = {KILN_SYNTH_STAGE_ROUTE,
                          "solving",
                          c->rows,
                          c->cols,
                          c->nnz,
                          c->ints,
                          inc,
                          bound,
                          gap,
                          el,
                          0,
                          0,
                          NAN,
                          0};
  c->p->progress(&pr, c->p->user);
}

kilnResult_t synRouteSolve(const synLogical* L, const synChunks* C, const synRouteParams* p, synRoute* out) {
  memset(out, 0, sizeof *out);
  int n = L->n, nl = L->nlinks, nc = C->nchunks;
  kilnResult_t r = KILN_SUCCESS;
  milpModel m;
  milpInit(&m);
  milpResult res = {0};
  size_t xkeys = (size_t)nc * (size_t)nl, skeys = (size_t)nc * (size_t)n;
  if (xkeys > ROUTE_MAX_KEYS)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT,
                        "routing problem too large: %d chunks x %d logical links (limit %d million pairs); "
                        "lower input_chunkup or prune the logical topology",
                        nc, nl, ROUTE_MAX_KEYS / 1000000);
  size_t nkeys = xkeys + skeys + (size_t)nl;
  char* cand = calloc(xkeys, 1);
  int* uf = malloc(nkeys * sizeof(int));
  int* col = malloc(nkeys * sizeof(int));
  int* distall = malloc((size_t)n * (size_t)n * sizeof(int)); /* per pre: dist[x][y] */
  int* q = malloc((size_t)n * sizeof(int));
  double* ub = calloc(skeys, sizeof(double));
  int* order = malloc((size_t)n * sizeof(int));
  double* load = calloc((size_t)nl, sizeof(double));
  out->parent = malloc(skeys * sizeof(int));
  if (!cand || !uf || !col || !distall || !q || !ub || !order || !load || !out->parent) {
    r = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
    goto out_free;
  }
  for (size_t i = 0; i < skeys; i++) out->parent[i] = -1;

  /* candidate links: on some shortest path from the chunk's source to one of its targets */
  /* All-pairs distances depend on the chunk's source only through the links it may use: its
   * relay with a chunk-to-relay map, nothing without one. */
  int last_key = -1;
  for (int c = 0; c < nc; c++) {
    int s = C->pre[c];
    if (!C->multicast && C->dst[c] == s) continue;
    const int key = L->has_relay_map ? relay_of(L, s) : 0;
    if (key != last_key) {
      for (int x = 0; x < n; x++) bfs(L, s, x, false, distall + (size_t)x * n, q);
      last_key = key;
    }
    const int* ds = distall + (size_t)s * n;
    for (int t = 0; t < n; t++) {
      if (t == s || (!C->multicast && t != C->dst[c])) continue;
      if (ds[t] < 0) {
        r = kilnSetError(KILN_ERR_INFEASIBLE,
                         "chunk %d of rank %d cannot reach rank %d in the logical topology%s", c, s, t,
                         L->has_relay_map ? " (its inter-node traffic must leave through the rank "
                                            "chunk_to_relay names)"
                                          : "");
        goto out_free;
      }
    }
    for (int l = 0; l < nl; l++) {
      if (!link_allowed(L, l, s)) continue;
      int x = L->links[l].src, y = L->links[l].dst;
      if (ds[x] < 0 || ds[y] != ds[x] + 1) continue;
      bool on = C->multicast;
      if (!on) {
        int d = C->dst[c];
        int dyd = distall[(size_t)y * n + d];
        on = dyd >= 0 && ds[x] + 1 + dyd == ds[d];
      }
      if (on) cand[(size_t)c * nl + l] = 1;
    }
    /* upper bounds on arrival times: longest candidate path (by routing latency), BFS order */
    int cnt = 0;
    for (int dd = 0; dd < n; dd++)
      for (int v = 0; v < n; v++)
        if (ds[v] == dd) order[cnt++] = v;
    double* u = ub + (size_t)c * n;
    for (int v = 0; v < n; v++) u[v] = 0;
    for (int i = 0; i < cnt; i++) {
      int v = order[i];
      for (int x = 0; x < n; x++) {
        int l = L->link_of[x * n + v];
        if (l < 0 || !cand[(size_t)c * nl + l]) continue;
        double lat = L->links[l].alpha + L->links[l].beta_route * p->chunk_mb;
        if (u[x] + lat > u[v]) u[v] = u[x] + lat;
      }
    }
  }

  /* symmetry quotient */
  for (size_t i = 0; i < nkeys; i++) uf[i] = (int)i;
  if (p->use_symmetry) {
    for (int g = 0; g < L->nsym; g++) {
      const int* perm = L->sym[g];
      for (int c = 0; c < nc; c++) {
        int c2 = synChunkImage(C, n, perm, c);
        for (int l = 0; l < nl; l++) {
          if (!cand[(size_t)c * nl + l]) continue;
          int l2 = L->link_of[perm[L->links[l].src] * n + perm[L->links[l].dst]];
          if (l2 < 0 || !cand[(size_t)c2 * nl + l2]) {
            r = kilnSetError(KILN_ERR_INFEASIBLE,
                             "symmetry %d maps chunk %d on link %d->%d to chunk %d on a link off its "
                             "shortest paths; the symmetry does not fit this collective",
                             g, c, L->links[l].src, L->links[l].dst, c2);
            goto out_free;
          }
          uf_union(uf, (int)((size_t)c * nl + l), (int)((size_t)c2 * nl + l2));
        }
        for (int v = 0; v < n; v++)
          uf_union(uf, (int)(xkeys + (size_t)c * n + v), (int)(xkeys + (size_t)c2 * n + perm[v]));
      }
      for (int l = 0; l < nl; l++) {
        int l2 = L->link_of[perm[L->links[l].src] * n + perm[L->links[l].dst]];
        if (l2 >= 0) uf_union(uf, (int)(xkeys + skeys + l), (int)(xkeys + skeys + l2));
      }
    }
  }

  /* columns: T, then one per class */
  double minlat = INFINITY;
  int nhyperlinks = 0;
  for (int l = 0; l < nl; l++) {
    double lat = L->links[l].alpha + L->links[l].beta_route * p->chunk_mb;
    if (lat < minlat) minlat = lat;
    if (L->links[l].hyper >= 0) nhyperlinks++;
  }
  double gamma = nhyperlinks ? 0.01 * minlat / nhyperlinks : 0;
  int T = milpAddCol(&m, 0, MILP_INF, 1.0, false);
  for (size_t i = 0; i < nkeys; i++) col[i] = -1;
  for (int c = 0; c < nc; c++)
    for (int l = 0; l < nl; l++) {
      size_t key = (size_t)c * nl + l;
      if (!cand[key]) continue;
      int rep = uf_find(uf, (int)key);
      if (col[rep] < 0) col[rep] = milpAddCol(&m, 0, 1, 0, true);
      col[key] = col[rep];
    }
  for (int c = 0; c < nc; c++)
    for (int v = 0; v < n; v++) {
      size_t key = xkeys + (size_t)c * n + v;
      if (v == C->pre[c] || (!C->multicast && C->dst[c] == C->pre[c])) continue;
      int rep = uf_find(uf, (int)key);
      if (col[rep] < 0) col[rep] = milpAddCol(&m, 0, ub[(size_t)c * n + v], 0, false);
      col[key] = col[rep];
    }

  /* rows */
  for (int c = 0; c < nc; c++) {
    int s = C->pre[c];
    if (!C->multicast && C->dst[c] == s) continue;
    const double* u = ub + (size_t)c * n;
    for (int t = 0; t < n; t++) {
      if (t == s) continue;
      bool target = C->multicast || t == C->dst[c];
      /* arrival at every target; the time bounds the arrival */
      int row = -1;
      for (int x = 0; x < n; x++) {
        int l = L->link_of[x * n + t];
        if (l < 0 || !cand[(size_t)c * nl + l]) continue;
        if (row < 0) row = milpAddRow(&m, target ? 1 : -MILP_INF, MILP_INF);
        milpAdd(&m, row, col[(size_t)c * nl + l], 1);
      }
      if (target) {
        int tr = milpAddRow(&m, 0, MILP_INF);
        milpAdd(&m, tr, T, 1);
        milpAdd(&m, tr, col[xkeys + (size_t)c * n + t], -1);
      }
    }
    for (int l = 0; l < nl; l++) {
      if (!cand[(size_t)c * nl + l]) continue;
      int x = L->links[l].src, y = L->links[l].dst;
      int xc = col[(size_t)c * nl + l];
      double lat = L->links[l].alpha + L->links[l].beta_route * p->chunk_mb;
      /* a chunk leaves x only once it got there */
      if (x != s) {
        int row = milpAddRow(&m, -MILP_INF, 0);
        milpAdd(&m, row, xc, 1);
        for (int w = 0; w < n; w++) {
          int l2 = L->link_of[w * n + x];
          if (l2 >= 0 && cand[(size_t)c * nl + l2]) milpAdd(&m, row, col[(size_t)c * nl + l2], -1);
        }
      }
      /* is_sent -> start[y] >= start[x] + lat, with M from the latency bounds */
      double M = (x == s ? 0 : u[x]) + lat;
      int row = milpAddRow(&m, lat - M, MILP_INF);
      milpAdd(&m, row, col[xkeys + (size_t)c * n + y], 1);
      if (x != s) milpAdd(&m, row, col[xkeys + (size_t)c * n + x], -1);
      milpAdd(&m, row, xc, -M);
    }
  }
  /* relaxed bandwidth per link and per port */
  int* prow = malloc(((size_t)L->nports + 1) * sizeof(int));
  if (!prow) {
    r = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
    goto out_free;
  }
  for (int i = 0; i < L->nports; i++) prow[i] = -1;
  /* inter-node links and NICs bound a second, lightly weighted time T2 <= T: among routes of
   * equal T, those that spread inter-node traffic over the NICs win */
  int T2 = -1;
  for (int l = 0; l < nl && T2 < 0; l++)
    if (L->links[l].internode) {
      T2 = milpAddCol(&m, 0, MILP_INF, 0.05, false);
      int row = milpAddRow(&m, 0, MILP_INF);
      milpAdd(&m, row, T, 1);
      milpAdd(&m, row, T2, -1);
    }
  for (int l = 0; l < nl; l++) {
    const synLink* e = &L->links[l];
    /* what a chunk occupies the link for: α + β (the paper), or β alone (α overlapped) */
    double lat = (p->pipelined ? 0 : e->alpha) + e->beta_route * p->chunk_mb;
    int lrow = -1, used = 0;
    for (int c = 0; c < nc; c++) used += cand[(size_t)c * nl + l];
    if (!used) continue;
    int tcol = e->internode ? T2 : T;
    lrow = milpAddRow(&m, 0, MILP_INF);
    milpAdd(&m, lrow, tcol, 1);
    int ports[2] = {e->send_port, e->recv_port};
    for (int k = 0; k < 2; k++)
      if (ports[k] >= 0 && prow[ports[k]] < 0) {
        prow[ports[k]] = milpAddRow(&m, 0, MILP_INF);
        milpAdd(&m, prow[ports[k]], tcol, 1);
      }
    for (int c = 0; c < nc; c++) {
      if (!cand[(size_t)c * nl + l]) continue;
      int xc = col[(size_t)c * nl + l];
      milpAdd(&m, lrow, xc, -lat * load_weight(L, C, p, c, l, false));
      for (int k = 0; k < 2; k++)
        if (ports[k] >= 0) milpAdd(&m, prow[ports[k]], xc, -lat * load_weight(L, C, p, c, l, true));
    }
    /* switch-hyperedge policy */
    if (e->hyper >= 0 && L->hyper_policy[e->hyper] != KILN_HYPER_FREE) {
      size_t key = xkeys + skeys + (size_t)l;
      int rep = uf_find(uf, (int)key);
      bool maxp = L->hyper_policy[e->hyper] == KILN_HYPER_UC_MAX;
      if (col[rep] < 0) col[rep] = milpAddCol(&m, 0, 1, maxp ? -gamma : gamma, true);
      int uc = col[rep];
      int row = maxp ? milpAddRow(&m, -MILP_INF, 0) : milpAddRow(&m, 0, MILP_INF);
      milpAdd(&m, row, uc, maxp ? 1 : used);
      for (int c = 0; c < nc; c++)
        if (cand[(size_t)c * nl + l]) milpAdd(&m, row, col[(size_t)c * nl + l], -1);
    }
  }
  free(prow);
  milpCompact(&m);
  out->rows = m.nrows;
  out->cols = m.ncols;
  out->nnz = m.nnz;
  out->ints = milpIntegers(&m);
  progressCtx pc = {p, m.nrows, m.ncols, m.nnz, out->ints};
  if (p->progress) {
    kilnSynthProgress pr = {KILN_SYNTH_STAGE_ROUTE,
                            "model built",
                            m.nrows,
                            m.ncols,
                            m.nnz,
                            out->ints,
                            NAN,
                            NAN,
                            NAN,
                            0,
                            0,
                            0,
                            NAN,
                            0};
    p->progress(&pr, p->user);
  }
  milpParams mp = {
      p->time_limit_s, p->mip_gap, true, true, p->stall_s, NULL, p->progress ? route_progress : NULL, &pc,
      p->stop};
  r = milpGlpk.solve(&m, &mp, &res);
  if (r == KILN_ERR_SOLVER) {
    /* the solver failed: route by least load instead (below), and say so */
    if (p->progress) {
      kilnSynthProgress pr = {KILN_SYNTH_STAGE_ROUTE,
                              "solver failed; least-loaded routes",
                              -1,
                              -1,
                              -1,
                              -1,
                              NAN,
                              NAN,
                              NAN,
                              0,
                              0,
                              0,
                              NAN,
                              0};
      p->progress(&pr, p->user);
    }
    free(res.x);
    memset(&res, 0, sizeof res);
    res.status = MILP_NOSOLUTION;
    r = KILN_SUCCESS;
  }
  if (r != KILN_SUCCESS) goto out_free;
  if (res.status == MILP_INFEASIBLE) {
    r = kilnSetError(KILN_ERR_INFEASIBLE, "routing MILP is infeasible for this sketch");
    goto out_free;
  }
  out->optimal = res.status == MILP_OPTIMAL;
  out->bound_us = res.obj;
  out->nchunks = nc;
  out->n = n;

  /* trees: each rank takes one chosen incoming link whose source already holds the chunk; without
   * a MILP solution (time limit, no incumbent), the least-loaded candidate link */
  char* have = malloc((size_t)n);
  if (!have) {
    r = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
    goto out_free;
  }
  int last_pre = -1;
  for (int c = 0; c < nc && r == KILN_SUCCESS; c++) {
    int s = C->pre[c];
    if (!C->multicast && C->dst[c] == s) continue;
    if (s != last_pre) { /* distances from s over the links s's chunks may use */
      bfs(L, s, s, false, q, order);
      last_pre = s;
    }
    const int* ds = q;
    memset(have, 0, (size_t)n);
    have[s] = 1;
    int* par = out->parent + (size_t)c * n;
    for (int dd = 1; dd < n; dd++)
      for (int v = 0; v < n; v++) {
        if (ds[v] != dd) continue;
        int best = -1;
        double bl = INFINITY;
        for (int x = 0; x < n; x++) {
          int l = L->link_of[x * n + v];
          if (l < 0 || !cand[(size_t)c * nl + l] || !have[x]) continue;
          if (res.x) {
            if (res.x[col[(size_t)c * nl + l]] > 0.5) {
              best = l;
              break;
            }
          } else if (load[l] < bl) {
            bl = load[l];
            best = l;
          }
        }
        if (best >= 0) {
          par[v] = best;
          have[v] = 1;
          load[best] += (L->links[best].alpha + L->links[best].beta_route * p->chunk_mb) *
                        load_weight(L, C, p, c, best, true);
        }
      }
    if (C->multicast) {
      for (int v = 0; v < n; v++)
        if (v != s && par[v] < 0)
          r = kilnSetError(KILN_ERR_INTERNAL, "routing left chunk %d without a path to rank %d", c, v);
    } else {
      /* keep only the path to the destination */
      char* keep = have;
      memset(keep, 0, (size_t)n);
      int v = C->dst[c];
      while (v != s && par[v] >= 0) {
        keep[v] = 1;
        v = L->links[par[v]].src;
      }
      if (v != s) r = kilnSetError(KILN_ERR_INTERNAL, "routing left chunk %d without a path", c);
      for (int w = 0; w < n; w++)
        if (!keep[w]) par[w] = -1;
    }
  }
  free(have);
  if (!res.x && r == KILN_SUCCESS) {
    double mx = 0;
    for (int l = 0; l < nl; l++)
      if (load[l] > mx) mx = load[l];
    out->bound_us = mx;
  }
out_free:
  free(res.x);
  milpFree(&m);
  free(cand);
  free(uf);
  free(col);
  free(distall);
  free(q);
  free(ub);
  free(order);
  free(load);
  if (r != KILN_SUCCESS) synRouteFree(out);
  return r;
}
