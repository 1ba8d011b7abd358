/* MILP model builder (0-based triplets) and the GLPK backend.
 *
 * GLPK is kept from aborting the process with glp_error_hook + setjmp/longjmp, as GLPK's manual
 * describes; after such an error the whole GLPK environment is freed with glp_free_env(). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "milp.h"

#include <glpk.h>
#include <math.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void milpInit(milpModel* m) { memset(m, 0, sizeof *m); }

void milpFree(milpModel* m) {
  free(m->lb);
  free(m->ub);
  free(m->obj);
  free(m->integer);
  free(m->rlb);
  free(m->rub);
  free(m->ti);
  free(m->tj);
  free(m->tv);
  memset(m, 0, sizeof *m);
}

static bool grow(void** p, int* cap, int need, size_t elem) {
  if (need <= *cap) return true;
  int nc = *cap ? *cap : 64;
  while (nc < need) nc *= 2;
  void* q = realloc(*p, (size_t)nc * elem);
  if (!q) return false;
  *p = q;
  return true;
}

int milpAddCol(milpModel* m, double lb, double ub, double obj, bool integer) {
  int c = m->capcols;
  if (m->ncols + 1 > m->capcols) {
    int cap = c;
    bool ok = grow((void**)&m->lb, &cap, m->ncols + 1, sizeof(double));
    cap = c;
    ok = ok && grow((void**)&m->ub, &cap, m->ncols + 1, sizeof(double));
    cap = c;
    ok = ok && grow((void**)&m->obj, &cap, m->ncols + 1, sizeof(double));
    cap = c;
    ok = ok && grow((void**)&m->integer, &cap, m->ncols + 1, sizeof(bool));
    if (!ok) {
      m->oom = true;
      return 0;
    }
    m->capcols = cap;
  }
  int j = m->ncols++;
  m->lb[j] = lb;
  m->ub[j] = ub;
  m->obj[j] = obj;
  m->integer[j] = integer;
  return j;
}

int milpAddRow(milpModel* m, double lb, double ub) {
  int c = m->caprows;
  if (m->nrows + 1 > m->caprows) {
    int cap = c;
    bool ok = grow((void**)&m->rlb, &cap, m->nrows + 1, sizeof(double));
    cap = c;
    ok = ok && grow((void**)&m->rub, &cap, m->nrows + 1, sizeof(double));
    if (!ok) {
      m->oom = true;
      return 0;
    }
    m->caprows = cap;
  }
  int i = m->nrows++;
  m->rlb[i] = lb;
  m->rub[i] = ub;
  return i;
}

void milpAdd(milpModel* m, int row, int col, double v) {
  if (m->oom || v == 0.0) return;
  int c = m->capnnz;
  if (m->nnz + 1 > m->capnnz) {
    int cap = c;
    bool ok = grow((void**)&m->ti, &cap, m->nnz + 1, sizeof(int));
    cap = c;
    ok = ok && grow((void**)&m->tj, &cap, m->nnz + 1, sizeof(int));
    cap = c;
    ok = ok && grow((void**)&m->tv, &cap, m->nnz + 1, sizeof(double));
    if (!ok) {
      m->oom = true;
      return;
    }
    m->capnnz = cap;
  }
  m->ti[m->nnz] = row;
  m->tj[m->nnz] = col;
  m->tv[m->nnz] = v;
  m->nnz++;
}

int milpIntegers(const milpModel* m) {
  int n = 0;
  for (int j = 0; j < m->ncols; j++) n += m->integer[j];
  return n;
}

/* ---- compaction: merge entries, drop duplicate rows ---- */

typedef struct {
  int i, j;
  double v;
} trip;

static int cmp_trip(const void* a, const void* b) {
  const trip* x = a;
  const trip* y = b;
  if (x->i != y->i) return x->i < y->i ? -1 : 1;
  if (x->j != y->j) return x->j < y->j ? -1 : 1;
  return 0;
}

static uint64_t hash_mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

static uint64_t dbits(double d) {
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  return u;
}

void milpCompact(milpModel* m) {
  if (m->oom || m->nrows == 0) return;
  trip* t = malloc((size_t)(m->nnz ? m->nnz : 1) * sizeof *t);
  int* rstart = calloc((size_t)m->nrows + 1, sizeof(int));
  int* newid = malloc((size_t)m->nrows * sizeof(int));
  int tabn = 1;
  while (tabn < 2 * m->nrows) tabn *= 2;
  int* tab = malloc((size_t)tabn * sizeof(int));
  uint64_t* rh = malloc((size_t)m->nrows * sizeof(uint64_t));
  if (!t || !rstart || !newid || !tab || !rh) {
    m->oom = true;
    goto out_free;
  }
  for (int k = 0; k < m->nnz; k++) t[k] = (trip){m->ti[k], m->tj[k], m->tv[k]};
  qsort(t, (size_t)m->nnz, sizeof *t, cmp_trip);
  int n = 0;
  for (int k = 0; k < m->nnz; k++) {
    if (n > 0 && t[n - 1].i == t[k].i && t[n - 1].j == t[k].j)
      t[n - 1].v += t[k].v;
    else
      t[n++] = t[k];
  }
  int w = 0;
  for (int k = 0; k < n; k++)
    if (fabs(t[k].v) > 1e-12) t[w++] = t[k];
  n = w;
  for (int k = 0; k < n; k++) rstart[t[k].i + 1]++;
  for (int i = 0; i < m->nrows; i++) rstart[i + 1] += rstart[i];
  for (int i = 0; i < m->nrows; i++) {
    uint64_t h = hash_mix(dbits(m->rlb[i]), dbits(m->rub[i]));
    for (int k = rstart[i]; k < rstart[i + 1]; k++)
      h = hash_mix(hash_mix(h, (uint64_t)t[k].j), dbits(t[k].v));
    rh[i] = h;
  }
  for (int k = 0; k < tabn; k++) tab[k] = -1;
  int nr = 0;
  for (int i = 0; i < m->nrows; i++) {
    int len = rstart[i + 1] - rstart[i];
    newid[i] = -1;
    if (len == 0) continue; /* empty rows carry nothing (callers never add infeasible ones) */
    size_t slot = (size_t)(rh[i] & (uint64_t)(tabn - 1));
    for (;;) {
      int o = tab[slot];
      if (o < 0) {
        tab[slot] = i;
        newid[i] = nr++;
        break;
      }
      if (rh[o] == rh[i] && m->rlb[o] == m->rlb[i] && m->rub[o] == m->rub[i] &&
          rstart[o + 1] - rstart[o] == len) {
        bool same = true;
        for (int k = 0; k < len && same; k++)
          same = t[rstart[o] + k].j == t[rstart[i] + k].j && t[rstart[o] + k].v == t[rstart[i] + k].v;
        if (same) break; /* duplicate */
      }
      slot = (slot + 1) & (size_t)(tabn - 1);
    }
  }
  int nn = 0;
  for (int i = 0; i < m->nrows; i++) {
    if (newid[i] < 0) continue;
    m->rlb[newid[i]] = m->rlb[i];
    m->rub[newid[i]] = m->rub[i];
    for (int k = rstart[i]; k < rstart[i + 1]; k++) {
      m->ti[nn] = newid[i];
      m->tj[nn] = t[k].j;
      m->tv[nn] = t[k].v;
      nn++;
    }
  }
  m->nrows = nr;
  m->nnz = nn;
out_free:
  free(t);
  free(rstart);
  free(newid);
  free(tab);
  free(rh);
}

/* ---- GLPK backend ---- */

typedef struct glpkCtx {
  jmp_buf jmp;
  const milpParams* p;
  const double* warm; /* 1-based copy for glp_ios_heur_sol */
  bool warm_given;
  double t0, last_report;
  double best, best_t; /* incumbent objective and when it last improved */
  bool stalled;
} glpkCtx;

double synNow(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void glpk_error_hook(void* info) {
  glpkCtx* c = info;
  longjmp(c->jmp, 1);
}

static int glpk_quiet(void* info, const char* s) {
  (void)info;
  (void)s;
  return 1;
}

static void glpk_callback(glp_tree* tree, void* info) {
  glpkCtx* c = info;
  int reason = glp_ios_reason(tree);
  if (reason == GLP_IHEUR && c->warm && !c->warm_given && glp_ios_curr_node(tree) == 1) {
    glp_ios_heur_sol(tree, c->warm);
    c->warm_given = true;
  }
  double t = synNow();
  if (c->p->stop && *c->p->stop && !c->stalled) {
    c->stalled = true;
    glp_ios_terminate(tree);
  }
  if (reason == GLP_IBINGO || reason == GLP_ISELECT) {
    glp_prob* P = glp_ios_get_prob(tree);
    int ms = glp_mip_status(P);
    if (ms == GLP_FEAS || ms == GLP_OPT) {
      double v = glp_mip_obj_val(P);
      /* only an improvement larger than the gap tolerance restarts the stall clock */
      if (isnan(c->best) || v < c->best - fmax(c->p->mip_gap, 1e-9) * (1e-9 + fabs(c->best))) {
        c->best = v;
        c->best_t = t;
      } else if (c->p->stall_s > 0 && t - c->best_t >= c->p->stall_s && !c->stalled) {
        c->stalled = true;
        glp_ios_terminate(tree);
      }
    }
  }
  if (!c->p->progress) return;
  if (reason == GLP_IBINGO || (reason == GLP_ISELECT && t - c->last_report >= 1.0)) {
    c->last_report = t;
    glp_prob* P = glp_ios_get_prob(tree);
    double inc = NAN, bound = NAN, gap = NAN;
    int best = glp_ios_best_node(tree);
    if (best) bound = glp_ios_node_bound(tree, best);
    if (!isfinite(bound)) bound = NAN;
    if (glp_mip_status(P) == GLP_FEAS || glp_mip_status(P) == GLP_OPT) {
      inc = glp_mip_obj_val(P);
      gap = glp_ios_mip_gap(tree);
    }
    c->p->progress(c->p->user, inc, bound, gap, t - c->t0);
  }
}

static kilnResult_t glpk_solve(const milpModel* m, const milpParams* p, milpResult* r) {
  memset(r, 0, sizeof *r);
  r->obj = r->bound = NAN;
  if (m->oom) return kilnSetError(KILN_ERR_NO_MEMORY, "out of memory while building the MILP");
  kilnResult_t res = KILN_SUCCESS;
  int* ia = malloc(((size_t)m->nnz + 1) * sizeof(int));
  int* ja = malloc(((size_t)m->nnz + 1) * sizeof(int));
  double* ar = malloc(((size_t)m->nnz + 1) * sizeof(double));
  double* warm1 = NULL;
  volatile glp_prob* vP = NULL;
  glpkCtx* ctx = calloc(1, sizeof *ctx);
  if (!ia || !ja || !ar || !ctx) {
    res = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
    goto out_free;
  }
  if (p->warm) {
    warm1 = malloc(((size_t)m->ncols + 1) * sizeof(double));
    if (!warm1) {
      res = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
      goto out_free;
    }
    warm1[0] = 0;
    memcpy(warm1 + 1, p->warm, (size_t)m->ncols * sizeof(double));
  }
  ctx->p = p;
  ctx->warm = warm1;
  ctx->t0 = ctx->last_report = synNow();
  ctx->best = NAN;
  ctx->best_t = ctx->t0;
  glp_term_hook(glpk_quiet, NULL);
  glp_error_hook(glpk_error_hook, ctx);
  if (setjmp(ctx->jmp)) {
    glp_error_hook(NULL, NULL);
    glp_free_env();
    res = kilnSetError(KILN_ERR_SOLVER, "GLPK reported an internal error (model %d rows x %d cols)", m->nrows,
                       m->ncols);
    goto out_free;
  }
  glp_prob* P = glp_create_prob();
  vP = P;
  glp_set_obj_dir(P, GLP_MIN);
  if (m->nrows) glp_add_rows(P, m->nrows);
  if (m->ncols) glp_add_cols(P, m->ncols);
  for (int i = 0; i < m->nrows; i++) {
    double lo = m->rlb[i], hi = m->rub[i];
    int type = lo <= -MILP_INF ? (hi >= MILP_INF ? GLP_FR : GLP_UP)
                               : (hi >= MILP_INF ? GLP_LO : (lo == hi ? GLP_FX : GLP_DB));
    glp_set_row_bnds(P, i + 1, type, lo <= -MILP_INF ? 0 : lo, hi >= MILP_INF ? 0 : hi);
  }
  for (int j = 0; j < m->ncols; j++) {
    double lo = m->lb[j], hi = m->ub[j];
    int type = lo <= -MILP_INF ? (hi >= MILP_INF ? GLP_FR : GLP_UP)
                               : (hi >= MILP_INF ? GLP_LO : (lo == hi ? GLP_FX : GLP_DB));
    glp_set_col_bnds(P, j + 1, type, lo <= -MILP_INF ? 0 : lo, hi >= MILP_INF ? 0 : hi);
    glp_set_obj_coef(P, j + 1, m->obj[j]);
    if (m->integer[j]) glp_set_col_kind(P, j + 1, (lo == 0 && hi == 1) ? GLP_BV : GLP_IV);
  }
  for (int k = 0; k < m->nnz; k++) {
    ia[k + 1] = m->ti[k] + 1;
    ja[k + 1] = m->tj[k] + 1;
    ar[k + 1] = m->tv[k];
  }
  glp_load_matrix(P, m->nnz, ia, ja, ar);

  int tm_ms = (int)fmin(p->time_limit_s * 1000.0, 2e9);
  if (tm_ms < 1) tm_ms = 1;
  bool presolve = p->presolve && !p->warm; /* a warm start names columns of the original model */
  if (!presolve) {
    glp_smcp sp;
    glp_init_smcp(&sp);
    sp.msg_lev = GLP_MSG_OFF;
    sp.tm_lim = tm_ms;
    sp.presolve = GLP_ON;
    int rc = glp_simplex(P, &sp);
    if (rc == 0 && glp_get_status(P) == GLP_NOFEAS) {
      r->status = MILP_INFEASIBLE;
      goto out_prob;
    }
    if (rc != 0 || glp_get_status(P) != GLP_OPT) {
      /* presolved LP gives no basis on some statuses; retry plainly */
      sp.presolve = GLP_OFF;
      glp_adv_basis(P, 0);
      rc = glp_simplex(P, &sp);
      if (rc == 0 && glp_get_status(P) == GLP_NOFEAS) {
        r->status = MILP_INFEASIBLE;
        goto out_prob;
      }
      if (rc != 0 || glp_get_status(P) != GLP_OPT) {
        r->status = MILP_NOSOLUTION;
        goto out_prob;
      }
    }
  }
  glp_iocp ip;
  glp_init_iocp(&ip);
  ip.msg_lev = GLP_MSG_OFF;
  ip.tm_lim = tm_ms;
  ip.mip_gap = p->mip_gap;
  ip.presolve = presolve ? GLP_ON : GLP_OFF;
  ip.br_tech = p->warm ? GLP_BR_DTH : GLP_BR_PCH; /* pseudocost set-up is slow at the root */
  ip.bt_tech = GLP_BT_BLB;
  ip.fp_heur = p->warm ? GLP_OFF : GLP_ON; /* a warm start makes the pump redundant */
  ip.gmi_cuts = p->cuts ? GLP_ON : GLP_OFF;
  ip.mir_cuts = p->cuts ? GLP_ON : GLP_OFF;
  ip.cb_func = glpk_callback;
  ip.cb_info = ctx;
  int rc = glp_intopt(P, &ip);
  int st = glp_mip_status(P);
  if (rc == GLP_ENOPFS || st == GLP_NOFEAS) {
    r->status = MILP_INFEASIBLE;
    goto out_prob;
  }
  if (st == GLP_OPT || st == GLP_FEAS) {
    /* optimal, or within the relative gap asked for (GLP_EMIPGAP: GLPK stopped there) */
    r->status = (st == GLP_OPT && rc == 0) || rc == GLP_EMIPGAP ? MILP_OPTIMAL : MILP_FEASIBLE;
    r->obj = glp_mip_obj_val(P);
    r->x = malloc((size_t)(m->ncols ? m->ncols : 1) * sizeof(double));
    if (!r->x) {
      res = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
      goto out_prob;
    }
    for (int j = 0; j < m->ncols; j++) r->x[j] = glp_mip_col_val(P, j + 1);
    r->bound = r->status == MILP_OPTIMAL && rc == 0 ? r->obj : NAN; /* at the gap: no proven bound kept */
  } else if (rc == GLP_ETMLIM || rc == GLP_EMIPGAP || rc == GLP_ESTOP || rc == 0) {
    r->status = MILP_NOSOLUTION;
  } else {
    res = kilnSetError(KILN_ERR_SOLVER, "GLPK glp_intopt failed (code %d) on a %d x %d model", rc, m->nrows,
                       m->ncols);
  }
out_prob:
  glp_delete_prob((glp_prob*)vP);
  glp_error_hook(NULL, NULL);
  glp_term_hook(NULL, NULL);
out_free:
  free(ia);
  free(ja);
  free(ar);
  free(warm1);
  free(ctx);
  return res;
}

const milpBackend milpGlpk = {"glpk", glpk_solve};
