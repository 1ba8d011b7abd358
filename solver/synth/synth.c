/* kilnSynthesize: the driver over the three stages, the combining of collectives, the lowering
 * and the verification of the result. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synth_internal.h"

/* The direct alltoall (NCCL's all-pairs) is tried as a floor up to this many transfers, n(n-1):
 * 181 ranks. Past it, simulating and verifying it would cost more than the synthesis it checks (512
 * ranks: 261,632 transfers). Other collectives have no direct floor: a direct allreduce, faster at
 * 1 KB on some relay sketches, is 4-8x slower at 1 MB and 1 GB than the sketch's plan, and a plan
 * runs at every size. */
#define FLOOR_DIRECT_MAX 32768.0
/* Plans through FIFOs are tried in instances up to this many steps in all (instances.c). */
#define INSTANCES_MAX_STEPS 2000000.0
/* Floor plans up to this many steps are tried in each protocol through FIFOs (fastest_fifo_proto). */
#define FLOOR_PROTO_MAX_STEPS 1000000L

static const char* const stage_names[] = {
#define KILN_X_NAME(e, n) n,
    KILN_SYNTH_STAGES(KILN_X_NAME)
#undef KILN_X_NAME
};

const char* kilnSynthStageName(kilnSynthStage_t s) {
  return (unsigned)s < KILN_SYNTH_NUM_STAGES ? stage_names[s] : "unknown";
}

uint64_t kilnSynthReferenceBytes(kilnColl_t coll, int nranks, uint64_t input_size) {
  return coll == KILN_COLL_ALLGATHER ? (uint64_t)nranks * input_size : input_size;
}

/* ---- progress and stopping ----
 * kilnSynthesize routes every progress report through a tracker (its options' progress and
 * progress_user are the tracker's, whatever the caller gave), which counts the synthesis' steps
 * as planned and as done, measures them, and estimates the time left before handing the report
 * to the caller's callback. */
enum { WORK_ROUTE, WORK_ORDER, WORK_LOWER, WORK_VERIFY, WORK_KINDS };

typedef struct synTracker {
  kilnSynthProgressFn fn; /* the caller's; may be NULL */
  void* user;
  const volatile sig_atomic_t* stop;
  double t0;
  int planned[WORK_KINDS]; /* steps still to begin */
  int done[WORK_KINDS];
  double spent[WORK_KINDS]; /* seconds in the finished ones */
  int cur;                  /* kind of the step running, -1 none */
  double cur_t0, cur_limit; /* when it began; an upper bound on it (a solve's time limit) or 0 */
} synTracker;

static synTracker* tracker(const kilnSynthOptions* o) { return (synTracker*)o->progress_user; }

static bool stopping(const kilnSynthOptions* o) {
  const synTracker* tr = tracker(o);
  return tr->stop && *tr->stop;
}

/* The mean time of a step of kind k: measured, or where nothing of its kind finished yet, scaled
 * from the kinds measured (a lowering of all its variants ~3 orderings, a verification ~2
 * lowerings: their sizes on hgx-h100 and dgx2 of 64-512 GPUs); NaN with nothing measured. */
static double mean_step(const synTracker* tr, int k) {
  if (tr->done[k] > 0) return tr->spent[k] / tr->done[k];
  static const double scale[WORK_KINDS] = {0, 1, 3, 6}; /* relative to an ordering */
  for (int j = WORK_ORDER; j < WORK_KINDS; j++)
    if (tr->done[j] > 0 && scale[k] > 0) return tr->spent[j] / tr->done[j] * scale[k] / scale[j];
  return NAN;
}

static double remaining(const synTracker* tr) {
  double left = 0, now = synNow();
  for (int k = 0; k < WORK_KINDS; k++) {
    if (tr->planned[k] == 0) continue;
    double m = k == WORK_ROUTE && tr->done[k] == 0 ? tr->cur_limit : mean_step(tr, k);
    if (isnan(m)) return NAN;
    left += tr->planned[k] * m;
  }
  if (tr->cur >= 0) { /* a solve never measured yet: its time limit */
    double m = tr->cur_limit > 0 && tr->done[tr->cur] == 0 ? tr->cur_limit : mean_step(tr, tr->cur);
    if (isnan(m)) return NAN;
    left += fmax(0, m - (now - tr->cur_t0));
  }
  return left;
}

static void tracker_forward(const kilnSynthProgress* p, void* user) {
  synTracker* tr = user;
  if (!tr->fn) return;
  kilnSynthProgress q = *p;
  int done = 0, planned = 0;
  for (int k = 0; k < WORK_KINDS; k++) {
    done += tr->done[k];
    planned += tr->planned[k];
  }
  if (tr->stop && *tr->stop) planned = 0; /* stopping: only the step under way */
  q.step = done + (tr->cur >= 0 ? 1 : 0);
  q.nsteps = q.step + planned;
  q.remaining_s = tr->stop && *tr->stop ? NAN : remaining(tr);
  q.total_s = synNow() - tr->t0;
  tr->fn(&q, tr->user);
}

/* Steps of kind k added to (count > 0) or dropped from (count < 0) the plan. */
static void plan_steps(const kilnSynthOptions* o, int k, int count) {
  synTracker* tr = tracker(o);
  tr->planned[k] += count;
  if (tr->planned[k] < 0) tr->planned[k] = 0;
}

static void step_begin(const kilnSynthOptions* o, int k, double limit_s) {
  synTracker* tr = tracker(o);
  if (tr->planned[k] > 0) tr->planned[k]--;
  tr->cur = k;
  tr->cur_t0 = synNow();
  tr->cur_limit = limit_s;
}

static void step_end(const kilnSynthOptions* o) {
  synTracker* tr = tracker(o);
  if (tr->cur < 0) return;
  tr->done[tr->cur]++;
  tr->spent[tr->cur] += synNow() - tr->cur_t0;
  tr->cur = -1;
}

static void report(const kilnSynthOptions* o, kilnSynthStage_t st, const char* msg, double el) {
  kilnSynthProgress p = {st, msg, -1, -1, -1, -1, NAN, NAN, NAN, el, 0, 0, NAN, 0};
  o->progress(&p, o->progress_user);
}

/* One routing solve and its statistics (count, optimality, the largest model; with addBound its
 * bound added to route_bound_us). */
static kilnResult_t solve_route(const synLogical* L, const synChunks* C, const synRouteParams* rp,
                                bool addBound, synRoute* out, kilnSynthStats* st, const kilnSynthOptions* o) {
  step_begin(o, WORK_ROUTE, rp->time_limit_s);
  kilnResult_t r = synRouteSolve(L, C, rp, out);
  step_end(o);
  if (r != KILN_SUCCESS) return r;
  st->route_solves++;
  st->route_optimal = st->route_optimal && out->optimal;
  if (addBound) st->route_bound_us += out->bound_us;
  if (out->rows > st->route_rows) {
    st->route_rows = out->rows;
    st->route_cols = out->cols;
    st->route_nonzeros = out->nnz;
    st->route_integers = out->ints;
  }
  return KILN_SUCCESS;
}

/* Predicted time of a plan (the simulator's), or the schedule's makespan if it cannot say. */
static double predict(const kilnPlan* p, const kilnTopology* t, uint64_t ref, double fallback) {
  kilnSimResult sim;
  if (kilnPlanSimulate(p, t, ref, &sim) == KILN_SUCCESS) return sim.time_us;
  return fallback;
}

/* predict's time where the plan fits the threadblock cap (0: none), else INFINITY (a runtime
 * with that many SMs does not load it). */
static double predict_within(const kilnPlan* p, const kilnTopology* t, uint64_t ref, int tbs_cap) {
  return tbs_cap == 0 || kilnPlanMaxTbs(p) <= tbs_cap ? predict(p, t, ref, INFINITY) : INFINITY;
}

static long count_steps(const kilnPlan* p) {
  long n = 0;
  for (int r = 0; r < p->ngpus; r++)
    for (int t = 0; t < p->gpus[r].ntbs; t++) n += p->gpus[r].tbs[t].nsteps;
  return n;
}

/* Verifies a plan: unbounded FIFOs (the results, races, ranges), then one slot per connection
 * (the strictest a runtime can be: it holds for any depth). A plan past the verifier's clocks is
 * checked for races rank by rank, which proves it race-free or refuses it; a race-free plan gives
 * one result whatever the interleaving, and whether it deadlocks does not depend on one either
 * (every step waits for something that, once true, stays true), so one interleaving each checks
 * the rest of it. */
static kilnResult_t verify(const kilnPlan* p) {
  kilnVerifyOptions vo = KILN_VERIFY_OPTIONS_INIT;
  int tbs = 0;
  long steps = 0;
  bool fifo = false;
  for (int r = 0; r < p->ngpus; r++) {
    tbs += p->gpus[r].ntbs;
    for (int t = 0; t < p->gpus[r].ntbs; t++) {
      const kilnThreadblock* tb = &p->gpus[r].tbs[t];
      steps += tb->nsteps;
      for (int i = 0; i < tb->nsteps && !fifo; i++)
        fifo = kilnStepSends(tb->steps[i].type) || kilnStepReceives(tb->steps[i].type);
    }
  }
  if (!fifo) {
    /* memory steps only: no FIFO to bound; within the verifier's clocks every race is found on any
     * interleaving, so one settles it (past them, the default interleavings are run) */
    if (KILN_VERIFY_MEMORY_CHECKS_ALL_RACES(tbs, p->ngpus, steps)) vo.schedules = 1;
    return kilnPlanVerify(p, &vo);
  }
  if (!KILN_VERIFY_CHECKS_ALL_RACES(tbs, steps)) vo.schedules = 1;
  vo.fifo_depth = 0;
  kilnResult_t r = kilnPlanVerify(p, &vo);
  if (r == KILN_SUCCESS) {
    vo.fifo_depth = 1;
    r = kilnPlanVerify(p, &vo);
  }
  return r;
}

/* verify(p) as a step of the verification stage: msg (NULL: none) reported as it starts, its time
 * added to the stage's; *el (may be NULL) gets that time (s). plan_it: the step is planned here
 * (plan_steps) as it begins; else the caller planned it before. */
static kilnResult_t verify_step(const kilnPlan* p, const char* msg, const kilnSynthOptions* o,
                                kilnSynthStats* st, double* el, bool plan_it) {
  if (plan_it) plan_steps(o, WORK_VERIFY, 1);
  const double t0 = synNow();
  step_begin(o, WORK_VERIFY, 0);
  if (msg) report(o, KILN_SYNTH_STAGE_VERIFY, msg, 0);
  const kilnResult_t r = verify(p);
  step_end(o);
  const double dt = synNow() - t0;
  st->stage_s[KILN_SYNTH_STAGE_VERIFY] += dt;
  if (el) *el = dt;
  return r;
}

/* Lowers the scheduled transfers with and without fused instructions (try_fused), with and without
 * port-order dependencies, and returns the fastest (simulated) one that verifies, if it beats
 * `bar` µs; plans that cannot beat it are not
 * verified (verification is the expensive part). *plan is NULL when nothing beats the bar; an
 * error is returned only when a plan that would have beaten it fails verification and no other
 * does. */
static kilnResult_t lower_verify(const kilnTopology* t, uint64_t ref, const synLogical* L, const synXfers* X,
                                 kilnColl_t coll, int k, const kilnSynthOptions* o, bool try_fused,
                                 const char* name, double bar, kilnPlan** plan, double* us,
                                 kilnSynthStats* st) {
  enum { NV = 4 }; /* fused or not x port-order dependencies or not */
  kilnResult_t r = KILN_SUCCESS;
  kilnPlan* cand[NV] = {NULL};
  double cus[NV];
  bool cfused[NV] = {false};
  *plan = NULL;
  *us = INFINITY;
  step_begin(o, WORK_LOWER, 0);
  for (int a = 0; a < NV; a++) {
    cus[a] = INFINITY;
    bool fuse = (a & 1) == 0, port_deps = (a & 2) != 0;
    if (fuse && (!o->fuse || !try_fused)) continue;
    double t0 = synNow();
    synLowerParams lp = {coll, k, o->instances, o->proto, fuse, port_deps, o->inplace, false, name};
    r = synLower(L, X, &lp, &cand[a], &cfused[a]);
    if (r == KILN_SUCCESS && o->max_tbs > 0 && kilnPlanMaxTbs(cand[a]) > o->max_tbs) {
      kilnPlanFree(cand[a]);
      cand[a] = NULL;
      lp.pair_peers = true;
      r = synLower(L, X, &lp, &cand[a], &cfused[a]);
      if (r == KILN_SUCCESS && kilnPlanMaxTbs(cand[a]) > o->max_tbs) {
        r = kilnSetError(
            KILN_ERR_UNSUPPORTED,
            "the plan needs %d threadblocks on some rank even with paired peers; the limit is %d "
            "(lower --instances)",
            kilnPlanMaxTbs(cand[a]), o->max_tbs);
        kilnPlanFree(cand[a]);
        cand[a] = NULL;
      }
    }
    st->stage_s[KILN_SYNTH_STAGE_LOWER] += synNow() - t0;
    if (r != KILN_SUCCESS) {
      step_end(o);
      goto out_free;
    }
    if (fuse && !cfused[a]) {
      kilnPlanFree(cand[a]);
      cand[a] = NULL;
      continue;
    } /* same as plain */
    t0 = synNow();
    cus[a] = predict(cand[a], t, ref, X->makespan);
    st->stage_s[KILN_SYNTH_STAGE_LOWER] += synNow() - t0;
    if (cus[a] < *us) *us = cus[a]; /* predicted, verified or not */
  }
  step_end(o);
  {
    char msg[160];
    snprintf(msg, sizeof msg, "lowered and simulated; the fastest predicted %.2f us%s", *us,
             *us < bar - 1e-9 ? "" : ", no faster than the best plan so far");
    report(o, KILN_SYNTH_STAGE_LOWER, msg, 0);
  }
  /* the fastest first (on a tie the lower index: fused, fewer dependencies) */
  bool tried = false;
  r = KILN_SUCCESS;
  for (;;) {
    int a = -1;
    for (int b = 0; b < NV; b++)
      if (cand[b] && cus[b] < bar - 1e-9 && (a < 0 || cus[b] < cus[a] - 1e-9)) a = b;
    if (a < 0) break;
    const bool plan_it = tried || tracker(o)->planned[WORK_VERIFY] == 0;
    tried = true;
    char msg[160];
    snprintf(msg, sizeof msg, "verifying the plan predicted at %.2f us (%ld steps on %d ranks)", cus[a],
             count_steps(cand[a]), cand[a]->ngpus);
    double el;
    r = verify_step(cand[a], msg, o, st, &el, plan_it);
    if (r == KILN_SUCCESS) {
      report(o, KILN_SYNTH_STAGE_VERIFY, "plan verified", el);
      *plan = cand[a];
      cand[a] = NULL;
      *us = cus[a];
      st->fused = cfused[a];
      break;
    }
    report(o, KILN_SYNTH_STAGE_VERIFY, "plan failed verification; trying another lowering", el);
    kilnPlanFree(cand[a]);
    cand[a] = NULL;
  }
  if (!*plan && tried) {
    kilnPrefixError("synthesized plan failed verification: ");
    if (r == KILN_SUCCESS) r = KILN_ERR_INTERNAL;
  }
out_free:
  for (int a = 0; a < NV; a++)
    if (cand[a]) kilnPlanFree(cand[a]);
  return r;
}

/* Whether two routes (either never solved: empty) choose the same links. */
static bool same_route(const synRoute* a, const synRoute* b) {
  if (a->nchunks != b->nchunks || a->n != b->n) return false;
  return !a->parent || !b->parent ||
         !memcmp(a->parent, b->parent, sizeof(int) * (size_t)a->nchunks * (size_t)a->n);
}

/* Node-quotient synthesis (nodes.c): routes on the two-node representative, weighted for the N
 * nodes, under both cost models (the second only where it routes otherwise), expanded onto the
 * nodes; ordered by list scheduling on the simulator's cost model with each heuristic (the second
 * only where it schedules otherwise); lowered and kept as lower_verify keeps plans, without fused
 * instructions (on hgx-h100, dgx2 and ndv2 of 4 nodes, every collective at 1 KB, 1 MB and 1 GB, the
 * fused lowerings were never the fastest; each costs a lowering and a simulation).
 * Stage 3 (contiguity) is not run: its MILP and its greedy merging grow with the square of the
 * transfers. */
static kilnResult_t synth_nodes(const kilnTopology* t, const kilnSketch* s, kilnColl_t coll,
                                const kilnSynthOptions* o, const char* name, int k, double chunk_mb,
                                uint64_t ref, const kilnOrdering_t* hs, int nh, kilnSynthStats* st,
                                kilnPlan** best, double* best_us) {
  const int N = t->nodes;
  const bool need_ag = coll != KILN_COLL_REDUCESCATTER;
  const bool need_rs = coll == KILN_COLL_REDUCESCATTER || coll == KILN_COLL_ALLREDUCE;
  kilnTopology* t2 = NULL;
  kilnSketch *s2 = NULL, *sn = NULL;
  synLogical L2 = {0}, Lt2 = {0}, L = {0};
  synChunks C2 = {0};
  synRoute ra = {0}, rr = {0}, pra = {0}, prr = {0}; /* this round's routes and the previous round's */
  synXfers X = {0};
  uint64_t seen[8]; /* hashes of this round's schedules */
  int nseen = 0;
  double t0 = synNow();
  kilnResult_t r = synNodeRepresentative(t, s, &t2, &s2, &sn);
  /* the sketch on the N nodes with its symmetries within a node, and the representative */
  if (r == KILN_SUCCESS && (r = kilnSketchValidate(sn, t)) != KILN_SUCCESS)
    kilnPrefixError("sketch '%s' rejected: ", s->name);
  if (r == KILN_SUCCESS && (r = kilnSketchValidate(s2, t2)) != KILN_SUCCESS)
    kilnPrefixError("sketch '%s' rejected on the two nodes that stand for all: ", s->name);
  if (r == KILN_SUCCESS) r = synLogicalBuild(t2, s2, false, &L2);
  if (r == KILN_SUCCESS && need_rs) r = synLogicalBuild(t2, s2, true, &Lt2);
  if (r == KILN_SUCCESS)
    r = synChunksMake(coll == KILN_COLL_ALLTOALL ? KILN_COLL_ALLTOALL : KILN_COLL_ALLGATHER, t2->nranks, k,
                      &C2);
  if (r == KILN_SUCCESS) r = synLogicalBuild(t, sn, false, &L);
  if (r != KILN_SUCCESS) goto out_free;
  st->stage_s[KILN_SYNTH_STAGE_VALIDATE] += synNow() - t0;
  plan_steps(o, WORK_ROUTE, 2 * ((int)need_ag + (int)need_rs));
  plan_steps(o, WORK_ORDER, 2 * nh);
  plan_steps(o, WORK_LOWER, 2 * nh);
  plan_steps(o, WORK_VERIFY, 1);
  char msg[160];
  snprintf(msg, sizeof msg, "node-level: routes on %d ranks (2 nodes) stand for %d nodes of %d GPUs",
           t2->nranks, N, t->gpus_per_node);
  report(o, KILN_SYNTH_STAGE_VALIDATE, msg, synNow() - t0);
  kilnResult_t last_err = KILN_ERR_INTERNAL;
  st->route_optimal = true;
  bool any = false;
  for (int rm = 1; rm >= 0; rm--) {
    if (stopping(o) && (*best || !o->keep_on_stop)) break;
    t0 = synNow();
    synRouteParams rp = {chunk_mb,    o->use_symmetry,  o->time_limit_s, o->mip_gap, o->stall_s,
                         o->progress, o->progress_user, rm == 1,         N - 1,      tracker(o)->stop};
    synRouteFree(&pra);
    synRouteFree(&prr);
    pra = ra;
    prr = rr;
    memset(&ra, 0, sizeof ra);
    memset(&rr, 0, sizeof rr);
    if (need_rs && (r = solve_route(&Lt2, &C2, &rp, rm == 0, &rr, st, o)) != KILN_SUCCESS) goto out_free;
    if (need_ag && (r = solve_route(&L2, &C2, &rp, rm == 0, &ra, st, o)) != KILN_SUCCESS) goto out_free;
    st->stage_s[KILN_SYNTH_STAGE_ROUTE] += synNow() - t0;
    if (rm == 0 && same_route(&ra, &pra) && same_route(&rr, &prr)) {
      plan_steps(o, WORK_ORDER, -nh);
      plan_steps(o, WORK_LOWER, -nh);
      report(o, KILN_SYNTH_STAGE_ROUTE,
             "routes of the paper's cost model: as the simulator's, not ordered again", synNow() - t0);
      break;
    }
    synXfersFree(&X);
    t0 = synNow();
    r = synXfersExpand(coll, N, &L2, &Lt2, &C2, need_ag ? &ra : NULL, need_rs ? &rr : NULL, &L, k, &X);
    st->stage_s[KILN_SYNTH_STAGE_ROUTE] += synNow() - t0;
    if (r != KILN_SUCCESS) goto out_free;
    snprintf(msg, sizeof msg, "%s; expanded to %d transfers",
             st->route_optimal ? "routes optimal" : "routes (time limit or stall)", X.n);
    report(o, KILN_SYNTH_STAGE_ROUTE, msg, synNow() - t0);
    nseen = 0;
    for (int i = 0; i < nh; i++) {
      if (stopping(o) && (*best || !o->keep_on_stop)) break;
      /* the simulator's cost model (α overlapped), the one the plans are judged by; its policy too
       * (transfers in the order they become ready), so that a plan runs in the simulator as its
       * schedule says */
      X.pipelined = true;
      X.window_us = 0;
      t0 = synNow();
      step_begin(o, WORK_ORDER, 0);
      r = synOrderList(&L, &X, hs[i], chunk_mb);
      step_end(o);
      st->stage_s[KILN_SYNTH_STAGE_ORDER] += synNow() - t0;
      if (r != KILN_SUCCESS) goto out_free;
      /* a schedule one of the earlier variants made already is not lowered again */
      uint64_t hsh = 1469598103934665603ull;
      for (int x = 0; x < X.n; x++) {
        uint64_t b;
        memcpy(&b, &X.x[x].send_t, sizeof b);
        hsh = (hsh ^ b) * 1099511628211ull;
      }
      bool same = false;
      for (int q = 0; q < nseen; q++) same = same || seen[q] == hsh;
      if (same) {
        plan_steps(o, WORK_LOWER, -1);
        report(o, KILN_SYNTH_STAGE_ORDER, "the same schedule as the other heuristic's: not lowered again",
               synNow() - t0);
        continue;
      }
      seen[nseen++] = hsh;
      report(o, KILN_SYNTH_STAGE_ORDER, kilnOrderingName(hs[i]), synNow() - t0);
      kilnPlan* plan = NULL;
      bool prev_fused = st->fused;
      double us;
      r = lower_verify(t, ref, &L, &X, coll, k, o, false, name, *best_us, &plan, &us, st);
      if (r == KILN_ERR_NO_MEMORY) goto out_free;
      if (r != KILN_SUCCESS) {
        last_err = r;
        report(o, KILN_SYNTH_STAGE_VERIFY, "variant dropped: its plan failed verification", 0);
        st->fused = prev_fused;
        continue;
      }
      any = true;
      if (!plan) continue;
      if (*best) kilnPlanFree(*best);
      *best = plan;
      *best_us = us;
      st->ordering = hs[i];
      st->transfers = X.n;
      st->greedy_us = st->schedule_us = X.makespan;
      st->sched_used_greedy = true;
      st->pipelined_model = rm == 1;
    }
  }
  r = *best ? KILN_SUCCESS : any ? KILN_ERR_INTERNAL : last_err;
  if (o->contiguity)
    report(o, KILN_SYNTH_STAGE_SCHEDULE, "skipped: node-level synthesis keeps the list schedule", 0);
out_free:
  synRouteFree(&pra);
  synRouteFree(&prr);
  synXfersFree(&X);
  synRouteFree(&ra);
  synRouteFree(&rr);
  synChunksFree(&C2);
  synLogicalFree(&L2);
  synLogicalFree(&Lt2);
  synLogicalFree(&L);
  kilnSketchFree(s2);
  kilnSketchFree(sn);
  kilnTopologyFree(t2);
  return r;
}

/* A plan's name: kiln-SKETCH-COLL, then -FORM for a memory form, the protocol where it is not
 * Simple and the instances where they are more than one (kiln-switch4-allreduce-oneflight-LL-i2),
 * so that plans of one sketch for different sizes tell apart in a registry, a benchmark's rows and
 * kiln show. The suffix first, the sketch's name cut to what is left: two plans never share a name
 * for want of room. */
static void plan_name(char* name, size_t len, const char* sketch, kilnColl_t coll, kilnSynthForm_t form,
                      kilnProto_t proto, int instances) {
  char fm[24] = "", pr[16] = "", inst[16] = "", suffix[64];
  if (form != KILN_SYNTH_FORM_SKETCH) snprintf(fm, sizeof fm, "-%s", kilnSynthFormName(form));
  if (proto != KILN_PROTO_SIMPLE) snprintf(pr, sizeof pr, "-%s", kilnProtoName(proto));
  if (instances > 1) snprintf(inst, sizeof inst, "-i%d", instances);
  snprintf(suffix, sizeof suffix, "-%s%s%s%s", kilnCollName(coll), fm, pr, inst);
  const int room = (int)len - 1 - 5 - (int)strlen(suffix);
  snprintf(name, len, "kiln-%.*s", room > 0 ? room : 0, sketch);
  strncat(name, suffix, len - 1 - strlen(name));
}

/* Where the caller leaves the protocol to the synthesizer (KILN_SYNTH_PROTO_AUTO), a plan through
 * FIFOs - the sketch's, a floor's - runs in the protocol the simulator predicts fastest for it,
 * Simple or LL: on the calibrated costs a Simple step through a FIFO costs a slot's handshake
 * (kiln/topology.h), which LL's lines do without (two HGX H100 nodes' allreduce at 1 KB: 36.6 us
 * in Simple). Not LL128, whose FIFO sends the runtime runs as Simple unless asked (KILN_LL128) and
 * whose costs the table holds at their nominal values, nor LL12, a protocol of puts. Sets
 * p->proto; returns its time (us: in p's). */
static double fastest_fifo_proto(kilnPlan* p, const kilnTopology* t, uint64_t ref, double us) {
  static const kilnProto_t protos[] = {KILN_PROTO_SIMPLE, KILN_PROTO_LL};
  const kilnProto_t was = p->proto;
  kilnProto_t bp = was;
  for (size_t i = 0; i < sizeof protos / sizeof protos[0]; i++) {
    if (protos[i] == was) continue;
    p->proto = protos[i];
    const double u = predict(p, t, ref, INFINITY);
    if (u < us * (1 - 1e-9)) {
      us = u;
      bp = protos[i];
    }
  }
  p->proto = bp;
  return us;
}

/* Memory forms' instances tried where kilnSynthOptions.instances is 0: 1, 2, 4 .. this. One
 * threadblock moves a connection's data at a fraction of an NVLink port's rate (kiln profile: 38.5
 * GB/s on an H200 against 370), and the symmetric kernels take up to 64-128 blocks for large calls
 * (host/sym.c), so large calls want many of them; a plan's channels stay under the runtime's
 * default kilnCommConfig.maxChannels (32), so every instance is a channel the runtime has. */
#define FORMS_MAX_INSTANCES 32
/* Among memory-form plans predicted within this fraction of the fastest, the one of the fewest
 * instances (then the fewest chunks) is kept: the simulator is calibrated to 25% of measured times
 * (kiln/topology.h, KILN_SIM_PARAMS_INIT), and it charges nothing for a threadblock that has little
 * to do, where a GPU does (1 KB on switch8: 2.74 us in 1 instance, 2.36 in 8, 2.32 in 32). */
#define FORMS_TIE 0.03

/* Where the caller leaves the instances open, plan p through FIFOs (the sketch's, a floor's;
 * predicted us) in 2, 4 .. instances (synReplicate) while each doubling predicts faster by more
 * than FORMS_TIE, up to FORMS_MAX_INSTANCES channels, INSTANCES_MAX_STEPS steps and a byte a chunk:
 * on the calibrated costs one threadblock moves 38.5 GB/s a connection. *win becomes the fastest
 * copy (not verified yet; the caller's to free), *win_us its time and *k its instances; where no
 * copy predicts faster, *win is NULL and *k 1. p stays as it was. */
static kilnResult_t fastest_instances(const kilnPlan* p, const kilnTopology* t, uint64_t ref, int tbs_cap,
                                      double us, kilnPlan** win, double* win_us, int* k) {
  *win = NULL;
  *k = 1;
  for (int c = 2;
       (long long)p->nchannels * c <= FORMS_MAX_INSTANCES &&
       (double)count_steps(p) * c <= INSTANCES_MAX_STEPS && (double)ref >= (double)p->nchunksperloop * c;
       c *= 2) {
    kilnPlan* q = NULL;
    kilnResult_t r = synReplicate(p, c, &q);
    if (r != KILN_SUCCESS) {
      kilnPlanFree(*win);
      *win = NULL;
      return r;
    }
    if (!q) break;
    const double u = predict_within(q, t, ref, tbs_cap);
    if (!(u < us * (1 - FORMS_TIE))) {
      kilnPlanFree(q);
      break;
    }
    kilnPlanFree(*win);
    *win = q;
    us = u;
    *win_us = u;
    *k = c;
  }
  return KILN_SUCCESS;
}

/* A memory form lowered and simulated: form, protocol, instances, chunks per piece, predicted µs. */
typedef struct formCand {
  kilnSynthForm_t f;
  kilnProto_t p;
  int i, k;
  double us;
} formCand;

/* The candidate to verify next: among those faster than bar, the fewest instances (then chunks)
 * within FORMS_TIE of the fastest; -1 when none is faster than bar. */
static int forms_pick(const formCand* c, int nc, double bar) {
  int fast = -1;
  for (int b = 0; b < nc; b++)
    if (c[b].us < bar * (1 - 1e-9) && (fast < 0 || c[b].us < c[fast].us * (1 - 1e-9))) fast = b;
  if (fast < 0) return -1;
  int a = fast;
  for (int b = 0; b < nc; b++)
    if (c[b].us <= c[fast].us * (1 + FORMS_TIE) && c[b].us < bar * (1 - 1e-9) &&
        (c[b].i < c[a].i || (c[b].i == c[a].i && c[b].k < c[a].k) ||
         (c[b].i == c[a].i && c[b].k == c[a].k && c[b].us < c[a].us * (1 - 1e-9))))
      a = b;
  return a;
}

/* The memory forms (forms.c) in forms: each in every protocol (or proto), instance count (or
 * instances) and chunking (the sketch's input_chunkup, and one chunk a piece), simulated at ref
 * bytes; the one forms_pick takes that beats *best_us and verifies replaces *best. Only plans that
 * could win are verified. */
static kilnResult_t synth_forms(const kilnTopology* t, const kilnSketch* s, kilnColl_t coll, uint64_t insize,
                                uint64_t ref, const kilnSynthOptions* o, kilnProto_t proto, int instances,
                                unsigned forms, kilnSynthStats* st, kilnPlan** best, double* best_us,
                                kilnSynthForm_t* best_form) {
  enum { MAXC = 3 * KILN_NUM_PROTOS * 8 * 2 };
  formCand c[MAXC];
  int nc = 0;
  const int n = t->nranks;
  const int ks[2] = {s->input_chunkup, 1}, nk = s->input_chunkup > 1 ? 2 : 1;
  static const kilnProto_t protos[] = {KILN_PROTO_LL, KILN_PROTO_LL128, KILN_PROTO_LL12, KILN_PROTO_SIMPLE};
  double t0 = synNow();
  kilnResult_t r = KILN_SUCCESS;
  step_begin(o, WORK_LOWER, 0);
  for (int f = KILN_SYNTH_FORM_ONEFLIGHT; f <= KILN_SYNTH_FORM_DIRECT && r == KILN_SUCCESS; f++) {
    if (!(forms & KILN_SYNTH_FORM_BIT(f)) || !synFormHas((kilnSynthForm_t)f, coll)) continue;
    for (int pi = 0; pi < KILN_NUM_PROTOS && r == KILN_SUCCESS; pi++) {
      const kilnProto_t pr = proto == KILN_SYNTH_PROTO_AUTO ? protos[pi] : proto;
      if (proto != KILN_SYNTH_PROTO_AUTO && pi > 0) break;
      for (int ki = 0; ki < nk && r == KILN_SUCCESS; ki++) {
        const int k = ks[ki];
        const uint64_t refchunks = coll == KILN_COLL_ALLGATHER ? (uint64_t)k : (uint64_t)n * k;
        for (int inst = instances ? instances : 1; inst <= (instances ? instances : FORMS_MAX_INSTANCES);
             inst *= 2) {
          if (o->max_tbs > 0 && inst > o->max_tbs) break; /* a threadblock per instance */
          if (insize < refchunks * (uint64_t)inst) break; /* a byte a chunk at least */
          kilnPlan* p = NULL;
          r = synFormPlan((kilnSynthForm_t)f, coll, n, k, inst, pr, o->inplace, "candidate", &p);
          if (r != KILN_SUCCESS) break;
          const double us = predict(p, t, ref, INFINITY);
          kilnPlanFree(p);
          if (nc < MAXC) c[nc++] = (formCand){(kilnSynthForm_t)f, pr, inst, k, us};
          st->candidates++;
          if (instances) break;
        }
      }
    }
  }
  step_end(o);
  st->stage_s[KILN_SYNTH_STAGE_LOWER] += synNow() - t0;
  if (r != KILN_SUCCESS) return r;
  bool verified = false;
  for (;;) {
    const int a = forms_pick(c, nc, *best_us);
    if (!verified) {
      char msg[200];
      if (a >= 0)
        snprintf(msg, sizeof msg, "%d memory-form plans simulated; kept: %s in %s, %d instance%s, %.2f us",
                 nc, kilnSynthFormName(c[a].f), kilnProtoName(c[a].p), c[a].i, c[a].i == 1 ? "" : "s",
                 c[a].us);
      else
        snprintf(msg, sizeof msg, "%d memory-form plans simulated; none faster than the plan so far", nc);
      report(o, KILN_SYNTH_STAGE_LOWER, msg, synNow() - t0);
    }
    if (a < 0 || (stopping(o) && (*best || !o->keep_on_stop))) break;
    verified = true;
    char name[KILN_NAME_MAX];
    plan_name(name, sizeof name, s->name, coll, c[a].f, c[a].p, c[a].i);
    kilnPlan* p = NULL;
    r = synFormPlan(c[a].f, coll, n, c[a].k, c[a].i, c[a].p, o->inplace, name, &p);
    if (r != KILN_SUCCESS) return r;
    double el;
    r = verify_step(p, NULL, o, st, &el, true);
    if (r == KILN_SUCCESS) {
      report(o, KILN_SYNTH_STAGE_VERIFY, "plan verified", el);
      if (*best) kilnPlanFree(*best);
      *best = p;
      *best_us = c[a].us;
      *best_form = c[a].f;
      st->fused = false;
      st->chunks = coll == KILN_COLL_ALLGATHER ? c[a].k : n * c[a].k;
      return KILN_SUCCESS;
    }
    kilnPlanFree(p);
    if (r == KILN_ERR_NO_MEMORY) return r;
    /* kiln classic's forms verify; one that does not is a bug, reported, and the next one tried */
    kilnPrefixError("the %s form (%s, %d instances) failed verification: ", kilnSynthFormName(c[a].f),
                    kilnProtoName(c[a].p), c[a].i);
    report(o, KILN_SYNTH_STAGE_VERIFY, kilnLastError(), el);
    c[a].us = INFINITY;
  }
  return *best || r == KILN_SUCCESS ? KILN_SUCCESS : r;
}

kilnResult_t kilnSynthesize(const kilnTopology* t, const kilnSketch* s, kilnColl_t coll,
                            const kilnSynthOptions* opts, kilnPlan** out, kilnSynthStats* stats) {
  kilnSynthOptions o = KILN_SYNTH_OPTIONS_INIT;
  kilnSynthStats stl;
  kilnSynthStats* st = stats ? stats : &stl;
  memset(st, 0, sizeof *st);
  if (!t || !s || !out) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnSynthesize: NULL argument");
  *out = NULL;
  if (opts) {
    if (opts->size != sizeof(kilnSynthOptions))
      return kilnSetError(KILN_ERR_INVALID_ARGUMENT,
                          "kilnSynthOptions: size %zu, expected %zu (stale header?)", opts->size,
                          sizeof(kilnSynthOptions));
    o = *opts;
  }
  if (!(o.time_limit_s > 0) || o.instances < 0 || !(o.mip_gap >= 0) || !(o.stall_s >= 0) || o.max_tbs < 0)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT,
                        "synthesis options: time limit must be > 0, instances >= 0, "
                        "mip gap >= 0, stall >= 0, max_tbs >= 0");
  if ((unsigned)o.proto >= KILN_NUM_PROTOS && o.proto != KILN_SYNTH_PROTO_AUTO)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT,
                        "synthesis options: proto %d is neither a kilnProto_t nor KILN_SYNTH_PROTO_AUTO",
                        (int)o.proto);
  if (o.forms & ~KILN_SYNTH_FORMS_CHOSEN)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT,
                        "synthesis options: forms 0x%x names no form chosen among (the bits "
                        "of sketch, oneflight, twoshot and direct: 0x%x)",
                        o.forms, KILN_SYNTH_FORMS_CHOSEN);
  if (o.ordering < -1 || o.ordering >= KILN_NUM_ORDERINGS)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT,
                        "synthesis options: ordering %d is neither -1 (the sketch's) "
                        "nor a kilnOrdering_t",
                        o.ordering);
  if (coll != KILN_COLL_ALLGATHER && coll != KILN_COLL_ALLTOALL && coll != KILN_COLL_REDUCESCATTER &&
      coll != KILN_COLL_ALLREDUCE)
    return kilnSetError(KILN_ERR_UNSUPPORTED, "cannot synthesize collective '%s'", kilnCollName(coll));
  if (o.inplace && coll == KILN_COLL_ALLTOALL)
    return kilnSetError(KILN_ERR_UNSUPPORTED, "in-place alltoall plans are not supported (use out-of-place)");
  double t_all = synNow();
  int n = t->nranks;
  if (n < 2)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "topology '%s' has %d rank(s); need >= 2", t->name, n);
  synTracker tr = {o.progress, o.progress_user, o.stop, t_all, {0}, {0}, {0}, -1, 0, 0};
  o.progress = tracker_forward;
  o.progress_user = &tr;

  /* validate before any solve (node-level synthesis validates its own sketches, synth_nodes) */
  double t0 = synNow();
  const bool node_level =
      o.nodes_mode == 1 ? t->nodes >= 2 : o.nodes_mode < 0 && t->nodes >= KILN_SYNTH_NODES_AUTO;
  kilnResult_t r = node_level ? KILN_SUCCESS : kilnSketchValidate(s, t);
  if (r != KILN_SUCCESS) {
    kilnPrefixError("sketch '%s' rejected: ", s->name);
    return r;
  }
  int k = s->input_chunkup;
  uint64_t insize = o.input_size ? o.input_size : s->input_size;
  if (k < 1)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "sketch '%s': input_chunkup must be >= 1", s->name);
  if (insize == 0) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "sketch '%s': input size is 0", s->name);
  int refchunks = coll == KILN_COLL_ALLGATHER ? k : n * k;
  if (insize > UINT64_MAX / (uint64_t)n)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT,
                        "input size %" PRIu64 " bytes: %d ranks of it do not fit in 64 bits", insize, n);
  if (insize < (uint64_t)refchunks)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT,
                        "input size %" PRIu64
                        " bytes is less than a byte for each of "
                        "its %d chunks (%s of %d ranks, input_chunkup %d)",
                        insize, refchunks, kilnCollName(coll), n, k);
  double chunk_mb = (double)insize / refchunks / 1e6;
  bool need_ag = coll != KILN_COLL_REDUCESCATTER;
  bool need_rs = coll == KILN_COLL_REDUCESCATTER || coll == KILN_COLL_ALLREDUCE;
  synLogical L = {0}, Lt = {0};
  synChunks C = {0};
  synRoute ra = {0}, rr = {0};
  synXfers X = {0};
  kilnPlan* best = NULL;

  /* stage 1, then stage 2 per heuristic ("auto": each, keeping the best simulated plan); both
   * under two cost models: the paper's (α occupies a link or port) and the simulator's (α is
   * latency that back-to-back transfers overlap). The paper's model goes last, so that stage 3
   * (contiguity, which only pays when α occupies) works on its routes. A variant whose plan fails
   * verification is dropped (the error is returned only if every variant fails). */
  kilnOrdering_t hs[2];
  int nh = 0;
  kilnOrdering_t want = o.ordering >= 0 ? (kilnOrdering_t)o.ordering : s->ordering;
  if (want == KILN_ORDER_AUTO) {
    hs[nh++] = KILN_ORDER_SHORTEST_PATH_FIRST;
    hs[nh++] = KILN_ORDER_LONGEST_PATH_FIRST;
  } else {
    hs[nh++] = want;
  }
  bool best_pipelined = false;
  char name[KILN_NAME_MAX];
  /* The protocol and instances the memory forms choose among (AUTO, 0: every one), and those of the
   * sketch's plan and the floor's (Simple and 1 unless given). */
  const kilnProto_t want_proto = o.proto;
  const int want_inst = o.instances;
  if (o.proto == KILN_SYNTH_PROTO_AUTO) o.proto = KILN_PROTO_SIMPLE;
  if (o.instances == 0) o.instances = 1;
  plan_name(name, sizeof name, s->name, coll, KILN_SYNTH_FORM_SKETCH, o.proto, o.instances);
  double best_us = INFINITY;
  kilnSynthForm_t best_form = KILN_SYNTH_FORM_SKETCH;
  uint64_t ref = kilnSynthReferenceBytes(coll, n, insize);
  kilnOrdering_t paper_h = hs[0];
  double paper_us = INFINITY, paper_window = 0;
  st->chunks = refchunks;
  /* the forms: an NVLink domain takes the memory forms, other topologies the sketch's plan */
  unsigned forms = 0;
  if (!node_level) {
    r = synLogicalBuild(t, s, false, &L);
    if (r != KILN_SUCCESS) goto out_free;
    st->nvlink_domain = synNvlinkDomain(t, &L);
  }
  {
    const unsigned memforms = KILN_SYNTH_FORM_BIT(KILN_SYNTH_FORM_ONEFLIGHT) |
                              KILN_SYNTH_FORM_BIT(KILN_SYNTH_FORM_TWOSHOT) |
                              KILN_SYNTH_FORM_BIT(KILN_SYNTH_FORM_DIRECT);
    const unsigned want = o.forms             ? o.forms
                          : st->nvlink_domain ? memforms
                                              : KILN_SYNTH_FORM_BIT(KILN_SYNTH_FORM_SKETCH);
    char why[200] = "";
    for (int f = 0; f <= KILN_SYNTH_FORM_DIRECT; f++) {
      if (!(want & KILN_SYNTH_FORM_BIT(f))) continue;
      const char* fn = kilnSynthFormName((kilnSynthForm_t)f);
      if (!synFormHas((kilnSynthForm_t)f, coll))
        snprintf(why, sizeof why, "the %s form has no %s", fn, kilnCollName(coll));
      else if (f != KILN_SYNTH_FORM_SKETCH && !st->nvlink_domain)
        snprintf(why, sizeof why, "the %s form is written with memory steps, %s", fn,
                 t->nodes > 1
                     ? "which reach only the GPUs of one node"
                     : "for an NVLink domain, and the sketch's logical topology does not link every pair of "
                       "ranks");
      else if (f == KILN_SYNTH_FORM_SKETCH && want_proto == KILN_PROTO_LL12)
        snprintf(why, sizeof why, "LL12 is a protocol of puts, and the sketch's plan sends through FIFOs");
      else
        forms |= KILN_SYNTH_FORM_BIT(f);
    }
    if (!forms) {
      r = kilnSetError(KILN_ERR_UNSUPPORTED, "no form of %s to synthesize on %s with sketch '%s': %s",
                       kilnCollName(coll), t->name, s->name, why);
      goto out_free;
    }
    if (forms & ~KILN_SYNTH_FORM_BIT(KILN_SYNTH_FORM_SKETCH)) plan_steps(&o, WORK_LOWER, 1);
  }
  if (!(forms & KILN_SYNTH_FORM_BIT(KILN_SYNTH_FORM_SKETCH))) {
    st->stage_s[KILN_SYNTH_STAGE_VALIDATE] = synNow() - t0;
    report(
        &o, KILN_SYNTH_STAGE_VALIDATE,
        "sketch accepted: it links every pair of ranks of one node, so every route is direct (memory forms)",
        synNow() - t0);
    goto out_done;
  }
  if (node_level) {
    st->stage_s[KILN_SYNTH_STAGE_VALIDATE] = synNow() - t0;
    st->node_level = true;
    r = synth_nodes(t, s, coll, &o, name, k, chunk_mb, ref, hs, nh, st, &best, &best_us);
    if (r != KILN_SUCCESS && stopping(&o) && !best)
      r = kilnSetError(KILN_ERR_TIMEOUT, "synthesis interrupted before any plan was verified");
    if (r != KILN_SUCCESS) goto out_free;
    best_pipelined = st->pipelined_model;
    goto out_done;
  }
  if (need_rs) {
    r = synLogicalBuild(t, s, true, &Lt);
    if (r != KILN_SUCCESS) goto out_free;
  }
  r = synChunksMake(coll == KILN_COLL_ALLTOALL ? KILN_COLL_ALLTOALL : KILN_COLL_ALLGATHER, n, k, &C);
  if (r != KILN_SUCCESS) goto out_free;
  st->chunks = refchunks;
  st->stage_s[KILN_SYNTH_STAGE_VALIDATE] = synNow() - t0;
  plan_steps(&o, WORK_ROUTE, 2 * ((int)need_ag + (int)need_rs));
  plan_steps(&o, WORK_ORDER, 2 * 4 * nh);
  plan_steps(&o, WORK_LOWER, 2 * 4 * nh + (o.contiguity ? 1 : 0));
  plan_steps(&o, WORK_VERIFY, 1);
  report(&o, KILN_SYNTH_STAGE_VALIDATE, "sketch accepted", synNow() - t0);
  kilnResult_t last_err = KILN_ERR_INTERNAL;
  st->route_optimal = true;
  for (int rm = 1; rm >= 0; rm--) {
    if (stopping(&o) && (best || !o.keep_on_stop)) break;
    t0 = synNow();
    synRouteParams rp = {chunk_mb,   o.use_symmetry,  o.time_limit_s, o.mip_gap, o.stall_s,
                         o.progress, o.progress_user, rm == 1,        1,         tracker(&o)->stop};
    synRouteFree(&ra);
    synRouteFree(&rr);
    synXfersFree(&X);
    /* route_bound_us is 0 until the last round (rm == 0), which adds both bounds */
    if (need_rs && (r = solve_route(&Lt, &C, &rp, rm == 0, &rr, st, &o)) != KILN_SUCCESS) goto out_free;
    if (need_ag && (r = solve_route(&L, &C, &rp, rm == 0, &ra, st, &o)) != KILN_SUCCESS) goto out_free;
    st->stage_s[KILN_SYNTH_STAGE_ROUTE] += synNow() - t0;
    report(&o, KILN_SYNTH_STAGE_ROUTE, st->route_optimal ? "routes optimal" : "routes (time limit or stall)",
           synNow() - t0);
    r = synXfersBuild(coll, &L, &Lt, &C, need_ag ? &ra : NULL, need_rs ? &rr : NULL, &X);
    if (r != KILN_SUCCESS) goto out_free;
    /* ordering variants: heuristic x cost model x window (the heuristic, not the earliest start,
     * picks among transfers that can start within one chunk time of the slowest link) */
    double window = 0;
    for (int e = 0; e < L.nlinks; e++) window = fmax(window, L.links[e].alpha + L.links[e].beta * chunk_mb);
    paper_us = INFINITY;
    const double t_variants = synNow();
    for (int v = 0; v < 4 * nh; v++) {
      /* The variants share the time limit of one solve: past it, the best plan so far stands
       * (switch8, input_chunkup 1024: 16 variants of the greedy took 172 s with a limit of 1). */
      if (best && synNow() - t_variants > o.time_limit_s) {
        st->orderings_cut = true;
        plan_steps(&o, WORK_ORDER, -(4 * nh - v));
        plan_steps(&o, WORK_LOWER, -(4 * nh - v));
        report(&o, KILN_SYNTH_STAGE_ORDER, "time limit: the remaining ordering variants skipped",
               synNow() - t_variants);
        break;
      }
      if (stopping(&o) && (best || !o.keep_on_stop)) break;
      int i = v % nh;
      X.pipelined = (v / nh) % 2 == 1;
      X.window_us = v >= 2 * nh ? window : 0;
      t0 = synNow();
      step_begin(&o, WORK_ORDER, 0);
      r = synOrder(&L, &X, hs[i], chunk_mb);
      double greedy = r == KILN_SUCCESS ? synScheduleAsap(&L, &X, chunk_mb) : 0;
      step_end(&o);
      if (r != KILN_SUCCESS) goto out_free;
      st->stage_s[KILN_SYNTH_STAGE_ORDER] += synNow() - t0;
      report(&o, KILN_SYNTH_STAGE_ORDER, kilnOrderingName(hs[i]), synNow() - t0);
      kilnPlan* plan = NULL;
      bool prev_fused = st->fused;
      double us;
      r = lower_verify(t, ref, &L, &X, coll, k, &o, true, name, best_us, &plan, &us, st);
      if (r == KILN_ERR_NO_MEMORY) goto out_free;
      if (r != KILN_SUCCESS) {
        last_err = r;
        report(&o, KILN_SYNTH_STAGE_VERIFY, "variant dropped: its plan failed verification", 0);
        st->fused = prev_fused;
        continue;
      }
      if (!X.pipelined && us < paper_us) {
        paper_us = us;
        paper_h = hs[i];
        paper_window = X.window_us;
      }
      if (!plan) continue; /* no faster than the best so far */
      best_pipelined = X.pipelined || rm == 1;
      if (best) kilnPlanFree(best);
      best = plan;
      best_us = us;
      st->ordering = hs[i];
      st->transfers = X.n;
      st->greedy_us = st->schedule_us = greedy;
      st->sched_used_greedy = true;
    }
  }
  if (!best) {
    r = stopping(&o) ? kilnSetError(KILN_ERR_TIMEOUT, "synthesis interrupted before any plan was verified")
                     : last_err;
    goto out_free;
  }
  /* Stage 3 merges sends on the paper-model orders. On the simulator a merged send can at best
   * tie the same sends apart (it holds the link as long and delivers its first chunks later), so
   * when those orders already simulate slower than the best plan, stage 3 cannot change the
   * result and is skipped. */
  bool contiguity_can_win = paper_us <= best_us * (1 + 1e-9) + 1e-9 && !stopping(&o);
  if (o.contiguity && !contiguity_can_win) plan_steps(&o, WORK_LOWER, -1);
  if (o.contiguity && !contiguity_can_win && !stopping(&o))
    report(&o, KILN_SYNTH_STAGE_SCHEDULE,
           "skipped: the paper-model orders simulate slower than the best plan, and merging cannot speed "
           "them up",
           0);
  if (o.contiguity && contiguity_can_win) {
    t0 = synNow();
    X.pipelined = false;
    X.window_us = paper_window;
    r = synOrder(&L, &X, paper_h, chunk_mb);
    if (r != KILN_SUCCESS) goto out_free;
    synSchedInfo si = {0};
    synSchedParams sp = {chunk_mb,   o.time_limit_s,  o.mip_gap,        o.stall_s,
                         o.progress, o.progress_user, tracker(&o)->stop};
    r = synSchedule(&L, &X, &sp, &si);
    if (r == KILN_ERR_NO_MEMORY) goto out_free;
    if (r != KILN_SUCCESS) { /* a solver failure leaves the greedy plan */
      report(&o, KILN_SYNTH_STAGE_SCHEDULE, kilnLastError(), synNow() - t0);
      si.used_greedy = true;
      r = KILN_SUCCESS;
    }
    st->sched_rows = si.rows;
    st->sched_cols = si.cols;
    st->sched_integers = si.ints;
    st->sched_optimal = si.optimal;
    st->stage_s[KILN_SYNTH_STAGE_SCHEDULE] += synNow() - t0;
    report(&o, KILN_SYNTH_STAGE_SCHEDULE, si.used_greedy ? "greedy schedule kept" : "contiguity schedule",
           synNow() - t0);
    if (si.used_greedy) plan_steps(&o, WORK_LOWER, -1);
    if (!si.used_greedy) {
      kilnPlan* plan = NULL;
      bool fused = st->fused;
      double us;
      /* the simulator overlaps α, so merged sends can at best tie there; a tie still wins, as
       * the plan has fewer steps (each costs a runtime some synchronization) */
      r = lower_verify(t, ref, &L, &X, coll, k, &o, true, name, best_us * (1 + 1e-9) + 1e-9, &plan, &us, st);
      if (r == KILN_SUCCESS && plan && count_steps(plan) >= count_steps(best)) {
        kilnPlanFree(plan);
        plan = NULL;
      }
      if (r == KILN_ERR_NO_MEMORY) goto out_free;
      if (r != KILN_SUCCESS) {
        report(&o, KILN_SYNTH_STAGE_VERIFY, "contiguity plan failed verification; greedy plan kept", 0);
        st->fused = fused;
        r = KILN_SUCCESS;
      } else if (plan) {
        kilnPlanFree(best);
        best = plan;
        best_us = us;
        best_pipelined = false;
        st->ordering = paper_h;
        st->schedule_us = X.makespan;
        st->sched_used_greedy = false;
      } else {
        st->fused = fused;
      }
    }
  }
out_done:
  if (best && want_proto == KILN_SYNTH_PROTO_AUTO && !stopping(&o)) {
    best_us = fastest_fifo_proto(best, t, ref, best_us);
    plan_name(best->name, sizeof best->name, s->name, coll, KILN_SYNTH_FORM_SKETCH, best->proto, o.instances);
  }
  if (forms & ~KILN_SYNTH_FORM_BIT(KILN_SYNTH_FORM_SKETCH) && !(stopping(&o) && (best || !o.keep_on_stop))) {
    r = synth_forms(t, s, coll, insize, ref, &o, want_proto, want_inst, forms, st, &best, &best_us,
                    &best_form);
    if (r != KILN_SUCCESS) goto out_free;
    if (!best) {
      r = stopping(&o)
              ? kilnSetError(KILN_ERR_TIMEOUT, "synthesis interrupted before any plan was verified")
              : kilnSetError(KILN_ERR_INTERNAL, "no memory form of %s could be lowered", kilnCollName(coll));
      goto out_free;
    }
  }
  /* the sketch's plan in instances (fastest_instances), verified */
  int fifo_inst = o.instances;
  if (best && best_form == KILN_SYNTH_FORM_SKETCH && want_inst == 0 && !stopping(&o)) {
    kilnPlan* many = NULL;
    double many_us = best_us;
    int k = 1;
    r = fastest_instances(best, t, ref, o.max_tbs, best_us, &many, &many_us, &k);
    if (r != KILN_SUCCESS) goto out_free;
    if (many) {
      char msg[160];
      snprintf(msg, sizeof msg,
               "the plan in %d instances simulates faster (%.2f against %.2f us): verifying it", k, many_us,
               best_us);
      r = verify_step(many, msg, &o, st, NULL, true);
      if (r == KILN_SUCCESS) {
        plan_name(many->name, sizeof many->name, s->name, coll, KILN_SYNTH_FORM_SKETCH, many->proto, k);
        kilnPlanFree(best);
        best = many;
        best_us = many_us;
        fifo_inst = k;
      } else {
        report(&o, KILN_SYNTH_STAGE_VERIFY, "the plan in instances failed verification; one instance kept",
               0);
        kilnPlanFree(many);
        r = KILN_SUCCESS;
      }
    }
  }
  /* the floor: NCCL's ring on the NIC rails, NCCL's all-pairs alltoall (the direct plan) and NCCL's
   * double binary tree (allreduce across nodes), in the protocol and instances as above, where one
   * simulates faster than the best plan; then a ring past 9 million steps (f 3: 1,024 GPUs'
   * allreduce, a minute and GBs to lower, simulate and verify) only where the tree floor has beaten
   * the synthesized plan (dgx2 x 64's allreduce at 1 GB; hgx-h100 x 128's ties its ring) */
  if (!stopping(&o) && o.instances == 1 && o.floor && o.proto != KILN_PROTO_LL12) {
    for (int f = 0; f < 4 && !stopping(&o); f++) {
      kilnPlan* fp = NULL;
      double fus = INFINITY;
      const bool ring = f == 0 || f == 3;
      if (f == 3 && !st->tree_floor) continue;
      if (ring) {
        /* a ring's steps follow each other around it, each at least half the smallest α: where that
         * alone passes the best plan (large rings at small sizes), the ring is not lowered */
        double amin = INFINITY;
        for (int e = 0; e < t->nlinks; e++) amin = fmin(amin, t->links[e].alpha_us);
        const double hops = (double)(t->nranks - 1) * (coll == KILN_COLL_ALLREDUCE ? 2 : 1);
        if (!(hops * amin * 0.5 < best_us)) continue;
        r = synRingPlan(t, coll, ref, o.inplace, f == 3, name, &fp);
        if (fp) fp->proto = o.proto; /* Simple, or the protocol asked for */
      } else if (f == 2) {
        /* the baseline's slices, and one fewer (it interpolates between the two): the faster */
        for (int d = 0; d >= -1 && r == KILN_SUCCESS && coll == KILN_COLL_ALLREDUCE; d--) {
          kilnPlan* tp = NULL;
          r = synTreePlan(t, ref, d, o.inplace, name, &tp);
          if (!tp) continue;
          tp->proto = o.proto;
          const double tus = predict_within(tp, t, ref, o.max_tbs);
          if (tus < fus) {
            kilnPlanFree(fp);
            fp = tp;
            fus = tus;
          } else {
            kilnPlanFree(tp);
          }
        }
      } else if (coll == KILN_COLL_ALLTOALL && (double)t->nranks * (t->nranks - 1) <= FLOOR_DIRECT_MAX) {
        kilnClassicOptions co = KILN_CLASSIC_OPTIONS_INIT;
        co.proto = o.proto;
        co.inplace = o.inplace;
        r = kilnClassicPlan("direct", coll, t->nranks, &co, &fp);
        if (fp) snprintf(fp->name, sizeof fp->name, "%s", name);
      }
      if (r == KILN_ERR_NO_MEMORY) {
        kilnPlanFree(fp);
        goto out_free;
      }
      if (f != 2) fus = fp && r == KILN_SUCCESS ? predict_within(fp, t, ref, o.max_tbs) : INFINITY;
      /* in the fastest protocol; a plan of more than FLOOR_PROTO_MAX_STEPS steps keeps Simple (such
       * floors come at sizes where Simple's bandwidth wins, and each simulation of one is seconds) */
      if (fp && want_proto == KILN_SYNTH_PROTO_AUTO && isfinite(fus) &&
          count_steps(fp) <= FLOOR_PROTO_MAX_STEPS) {
        fus = fastest_fifo_proto(fp, t, ref, fus);
        plan_name(fp->name, sizeof fp->name, s->name, coll, KILN_SYNTH_FORM_SKETCH, fp->proto, 1);
      }
      int fk = 1;
      if (fp && want_inst == 0 && isfinite(fus)) {
        kilnPlan* many = NULL;
        r = fastest_instances(fp, t, ref, o.max_tbs, fus, &many, &fus, &fk);
        if (r != KILN_SUCCESS) {
          kilnPlanFree(fp);
          goto out_free;
        }
        if (many) {
          kilnPlanFree(fp);
          fp = many;
          plan_name(fp->name, sizeof fp->name, s->name, coll, KILN_SYNTH_FORM_SKETCH, fp->proto, fk);
        }
      }
      if (fp && fus < best_us * (1 - 1e-9)) {
        r = verify_step(
            fp,
            ring ? "NCCL's ring on the NIC rails simulates faster than the synthesized plans: verifying it"
            : f == 2 ? "NCCL's double binary tree simulates faster than the synthesized plans: verifying it"
                     : "the direct alltoall (NCCL's all-pairs) simulates faster than the synthesized plans: "
                       "verifying it",
            &o, st, NULL, true);
        if (r == KILN_SUCCESS) {
          kilnPlanFree(best);
          best = fp;
          fp = NULL;
          best_us = fus;
          st->ring_floor = ring;
          st->direct_floor = f == 1;
          st->tree_floor = f == 2;
          st->fused = f != 1;
          best_form = ring ? KILN_SYNTH_FORM_RING : f == 2 ? KILN_SYNTH_FORM_TREE : KILN_SYNTH_FORM_ALLPAIRS;
          fifo_inst = fk;
        }
      }
      kilnPlanFree(fp);
      r = KILN_SUCCESS;
    }
  }
  const bool fifo_form = best_form == KILN_SYNTH_FORM_SKETCH || best_form >= KILN_SYNTH_FORM_RING;
  if (stopping(&o)) {
    if (!o.keep_on_stop || !best) {
      r = kilnSetError(KILN_ERR_TIMEOUT, "synthesis interrupted%s",
                       best ? "" : " before any plan was verified");
      goto out_free;
    }
    st->interrupted = true;
    report(&o, KILN_SYNTH_STAGE_VERIFY, "interrupted: the best plan verified so far kept", 0);
  }
  if (t->nodes > 1) best->nnodes = t->nodes; /* runtimes cut it into phases on that many nodes */
  st->form = best_form;
  st->proto = best->proto;
  st->instances = fifo_form ? fifo_inst : best->nchannels;
  st->predicted_us = best_us;
  st->pipelined_model = best_pipelined;
  st->total_s = synNow() - t_all;
  *out = best;
  best = NULL;
  r = KILN_SUCCESS;
out_free:
  if (best) kilnPlanFree(best);
  synXfersFree(&X);
  synRouteFree(&ra);
  synRouteFree(&rr);
  synChunksFree(&C);
  synLogicalFree(&L);
  synLogicalFree(&Lt);
  return r;
}
