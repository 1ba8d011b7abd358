/* kiln tune's CPU side (tune.h): candidates, the choice of ranges, the folder written. */
#define _GNU_SOURCE /* renameat2 */
#include "tune.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char* const kFormNames[] = {
#define KILN_X_NAME(e, n) n,
    KILN_TUNE_FORMS(KILN_X_NAME)
#undef KILN_X_NAME
};

const char* kilnTuneFormName(kilnTuneForm_t f) {
  return (unsigned)f < KILN_TUNE_NUM_FORMS ? kFormNames[f] : "unknown";
}

bool kilnTuneFormParse(const char* s, kilnTuneForm_t* out) {
  for (int f = 0; s && f < KILN_TUNE_NUM_FORMS; f++)
    if (!strcmp(s, kFormNames[f])) {
      *out = (kilnTuneForm_t)f;
      return true;
    }
  return false;
}

/* ---- candidates ---- */

kilnResult_t kilnTuneAdd(kilnTuneSet* set, kilnPlan* plan, const char* source, bool verified) {
  kilnResult_t r = KILN_SUCCESS;
  if (!set || !plan) {
    r = kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnTuneAdd: NULL set or plan");
    goto out_free_plan;
  }
  for (int i = 0; i < set->n; i++)
    if (!strcmp(set->c[i].plan->name, plan->name)) {
      r = kilnSetError(KILN_ERR_INVALID_ARGUMENT, "a candidate named %s is already in the set", plan->name);
      goto out_free_plan;
    }
  if ((r = kilnPlanCheckRuntime(plan)) != KILN_SUCCESS) goto out_free_plan;
  const kilnVerifyOptions vo = KILN_VERIFY_OPTIONS_INIT;
  if (!verified && (r = kilnPlanVerify(plan, &vo)) != KILN_SUCCESS) goto out_free_plan;
  if (set->n == set->cap) {
    const int cap = set->cap ? 2 * set->cap : 32;
    kilnTuneCandidate* c = realloc(set->c, (size_t)cap * sizeof *c);
    if (!c) {
      r = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory for the candidates");
      goto out_free_plan;
    }
    set->c = c;
    set->cap = cap;
  }
  set->c[set->n].plan = plan;
  snprintf(set->c[set->n].source, sizeof set->c[set->n].source, "%s", source ? source : "");
  set->n++;
  return KILN_SUCCESS;
out_free_plan:
  kilnPlanFree(plan);
  return r;
}

kilnResult_t kilnTuneClassic(kilnTuneSet* set, kilnColl_t coll, int nranks, const kilnTuneSpace* space,
                             kilnTuneNoteFn note, void* user, int* added) {
  if (added) *added = 0;
  if (!set || !space || space->ninstances < 0 || space->ninstances > KILN_TUNE_MAX_INSTANCES)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT,
                        "kilnTuneClassic: no set or space, or a space of %d instance counts",
                        space ? space->ninstances : -1);
  for (int f = 0; f < KILN_TUNE_NUM_FORMS; f++) {
    if (!(space->forms >> f & 1u)) continue;
    for (int p = 0; p < KILN_NUM_PROTOS; p++) {
      if (!(space->protos >> p & 1u)) continue;
      for (int i = 0; i < space->ninstances; i++) {
        kilnClassicOptions o = KILN_CLASSIC_OPTIONS_INIT;
        o.instances = space->instances[i];
        o.proto = (kilnProto_t)p;
        o.inplace = space->inplace;
        char name[KILN_NAME_MAX];
        snprintf(name, sizeof name, "%s %s %s x%d", kFormNames[f], kilnCollName(coll), kilnProtoName(o.proto),
                 o.instances);
        kilnPlan* plan = NULL;
        kilnResult_t r = kilnClassicPlan(kFormNames[f], coll, nranks, &o, &plan);
        if (r == KILN_SUCCESS) {
          snprintf(name, sizeof name, "%s", plan->name);
          r = kilnTuneAdd(set, plan, "classic", false);
        }
        if (r == KILN_ERR_NO_MEMORY) return r;
        if (r != KILN_SUCCESS) {
          if (note) note(name, r, kilnLastError(), user);
        } else if (added) {
          (*added)++;
        }
      }
    }
  }
  return KILN_SUCCESS;
}

void kilnTuneSetFree(kilnTuneSet* set) {
  if (!set) return;
  for (int i = 0; i < set->n; i++) kilnPlanFree(set->c[i].plan);
  free(set->c);
  memset(set, 0, sizeof *set);
}

bool kilnTuneSizes(uint64_t min, uint64_t max, int factor, uint64_t* sizes, int cap, int* n) {
  *n = 0;
  if (min < 1 || min > max || factor < 2) return false;
  uint64_t s = min;
  for (;;) {
    if (*n == cap) return false;
    sizes[(*n)++] = s;
    if (s == max) return true;
    s = s > max / (uint64_t)factor ? max : s * (uint64_t)factor;
  }
}

uint64_t kilnTuneCount(kilnColl_t coll, uint64_t bytes, int nranks) {
  if (nranks < 1) return 0;
  return coll == KILN_COLL_ALLREDUCE ? bytes / 4 : bytes / 4 / (uint64_t)nranks;
}

/* ---- ranges ---- */

static bool valid(double us) { return us >= 0; }

kilnResult_t kilnTuneChoose(const uint64_t* sizes, int nsizes, const double* us, int ncand,
                            const double* nccl, double tolerance, kilnTuneRange* out, int* nout) {
  *nout = 0;
  if (nsizes < 0 || ncand < 0 || !(tolerance >= 0) || (nsizes > 0 && (!sizes || !out)) || (ncand > 0 && !us))
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnTuneChoose: %d sizes, %d candidates, tolerance %g",
                        nsizes, ncand, tolerance);
  for (int k = 1; k < nsizes; k++)
    if (sizes[k] <= sizes[k - 1])
      return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnTuneChoose: sizes not increasing (%llu after %llu)",
                          (unsigned long long)sizes[k], (unsigned long long)sizes[k - 1]);
  /* the fastest candidate at each size (the first of equals; -1: none ran) into out[k].cand, in one
   * pass over the times: a candidate with a wrong result at any size takes none */
  for (int k = 0; k < nsizes; k++) out[k].cand = -1;
  for (int c = 0; c < ncand; c++) {
    const double* uc = &us[c * nsizes];
    bool wrong = false;
    for (int k = 0; k < nsizes && !wrong; k++) wrong = uc[k] == KILN_TUNE_WRONG;
    for (int k = 0; k < nsizes && !wrong; k++)
      if (valid(uc[k]) && (out[k].cand < 0 || uc[k] < us[out[k].cand * nsizes + k])) out[k].cand = c;
  }
  int cur = -1; /* the candidate chosen at the size before, -1: none or NCCL */
  for (int k = 0; k < nsizes; k++) {
    const int best = out[k].cand; /* the ranges so far fill out[0 .. k - 1] at most */
    int pick = best;
    if (cur >= 0 && best >= 0 && cur != best && valid(us[cur * nsizes + k]) &&
        us[cur * nsizes + k] <= us[best * nsizes + k] * (1.0 + tolerance))
      pick = cur;
    if (pick >= 0 && nccl && valid(nccl[k]) && nccl[k] <= us[pick * nsizes + k]) pick = -1;
    cur = pick;
    if (*nout > 0 && out[*nout - 1].cand == pick) {
      out[*nout - 1].last = k;
      continue;
    }
    out[(*nout)++] = (kilnTuneRange){pick, k, k, 0, 0};
  }
  for (int i = 0; i < *nout; i++) {
    kilnTuneRange* r = &out[i];
    if (i == 0)
      r->min_bytes = 0;
    else {
      const double a = (double)sizes[r->first - 1], b = (double)sizes[r->first];
      uint64_t cut = (uint64_t)(sqrt(a) * sqrt(b));
      if (cut < sizes[r->first - 1]) cut = sizes[r->first - 1];
      if (cut >= sizes[r->first]) cut = sizes[r->first] - 1;
      r->min_bytes = cut + 1;
      out[i - 1].max_bytes = cut;
    }
  }
  if (*nout > 0) out[*nout - 1].max_bytes = sizes[nsizes - 1];
  return KILN_SUCCESS;
}

/* ---- the model's times ---- */

kilnResult_t kilnTuneModel(const kilnTopology* t, kilnColl_t coll, int nranks, int sms,
                           const kilnTuneSet* set, const uint64_t* sizes, int nsizes, kilnTuneNoteFn note,
                           void* user, double* us, double* nccl) {
  if (!t || !set || nsizes < 0 || (nsizes > 0 && (!sizes || !nccl)) || (set->n > 0 && nsizes > 0 && !us))
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnTuneModel: no topology, candidates, sizes or tables");
  if (t->nranks != nranks)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "the topology %s has %d GPUs, the tune %d ranks", t->name,
                        t->nranks, nranks);
  for (int k = 1; k < nsizes; k++)
    if (sizes[k] <= sizes[k - 1])
      return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnTuneModel: sizes not increasing (%llu after %llu)",
                          (unsigned long long)sizes[k], (unsigned long long)sizes[k - 1]);
  for (int i = 0; i < set->n * nsizes; i++) us[i] = KILN_TUNE_NOT_RUN;
  for (int k = 0; k < nsizes; k++) {
    nccl[k] = KILN_TUNE_NOT_RUN;
    if (kilnTuneCount(coll, sizes[k], nranks) == 0) continue; /* as the GPU tune skips it */
    kilnSimResult r;
    kilnResult_t res = kilnBaselineSimulateWith(KILN_BASELINE_RING, coll, t, sizes[k], NULL, &r);
    if (res != KILN_SUCCESS) {
      kilnPrefixError("NCCL's %s %s of %llu bytes on %s: ", coll == KILN_COLL_ALLTOALL ? "all-pairs" : "ring",
                      kilnCollName(coll), (unsigned long long)sizes[k], t->name);
      return res;
    }
    nccl[k] = r.time_us;
    if (coll == KILN_COLL_ALLREDUCE) {
      res = kilnBaselineSimulateWith(KILN_BASELINE_TREE, coll, t, sizes[k], NULL, &r);
      if (res != KILN_SUCCESS) {
        kilnPrefixError("NCCL's tree allreduce of %llu bytes on %s: ", (unsigned long long)sizes[k], t->name);
        return res;
      }
      if (r.time_us < nccl[k]) nccl[k] = r.time_us;
    }
  }
  for (int c = 0; c < set->n; c++) {
    kilnPlan* p = set->c[c].plan;
    if (p->coll != coll || p->ngpus != nranks) {
      if (note)
        note(p->name, KILN_ERR_INVALID_ARGUMENT, "a plan of another collective or rank count than the tune's",
             user);
      continue;
    }
    const int most = kilnPlanMaxTbs(p);
    if (sms > 0 && most > sms) {
      if (note) {
        char why[160];
        snprintf(why, sizeof why, "%d threadblocks on a rank, more than the %d SMs the runtime loads", most,
                 sms);
        note(p->name, KILN_ERR_UNSUPPORTED, why, user);
      }
      continue;
    }
    /* an LL128 plan through FIFOs runs as Simple (KILN_LL128 off): predict that, with the plan's
     * protocol switched for the simulation and restored after it */
    const kilnProto_t was = p->proto;
    if (p->proto == KILN_PROTO_LL128 && !kilnPlanHasMemorySteps(p)) p->proto = KILN_PROTO_SIMPLE;
    for (int k = 0; k < nsizes; k++) {
      if (nccl[k] == KILN_TUNE_NOT_RUN) continue;
      kilnSimResult r;
      const kilnResult_t sr = kilnPlanSimulate(p, t, sizes[k], &r);
      if (sr != KILN_SUCCESS) {
        for (int j = 0; j < nsizes; j++) us[c * nsizes + j] = KILN_TUNE_NOT_RUN;
        if (note) {
          p->proto = was;
          note(p->name, sr, kilnLastError(), user);
        }
        break;
      }
      us[c * nsizes + k] = r.time_us;
    }
    p->proto = was;
  }
  return KILN_SUCCESS;
}

void kilnTuneModelDescribe(const kilnTopology* t, int nranks, kilnTuneMachine* m) {
  memset(m, 0, sizeof *m);
  m->nranks = nranks;
  if (t->has_costs) {
    snprintf(m->model, sizeof m->model,
             "the simulator on topology %s with its measured costs (the topology's <costs>, as kiln profile "
             "writes them)",
             t->name);
    snprintf(m->model_tag, sizeof m->model_tag, "model:%.40s-costs", t->name);
  } else {
    snprintf(m->model, sizeof m->model,
             "the simulator on topology %s with the built-in table fitted to H200s (KILN_SIM_PARAMS_INIT, "
             "bench/sim_calibrate)",
             t->name);
    snprintf(m->model_tag, sizeof m->model_tag, "model:h200-fit");
  }
  for (char* q = m->model_tag; *q; q++)
    if (*q == ',' || *q == ' ' || *q == '"') *q = '_';
}

/* ---- the folder ---- */

/* Removes a folder of plain files (one kiln tune wrote, or its temporary twin). */
static void remove_tree(const char* dir) {
  DIR* d = opendir(dir);
  if (d) {
    struct dirent* de;
    char path[PATH_MAX];
    while ((de = readdir(d)) != NULL) {
      if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
      if (snprintf(path, sizeof path, "%s/%s", dir, de->d_name) < (int)sizeof path) unlink(path);
    }
    closedir(d);
  }
  rmdir(dir);
}

/* Whether an existing dir may be replaced: empty, or holding a tune.csv. KILN_SUCCESS with *exists
 * set, or the error. */
static kilnResult_t check_target(const char* dir, bool* exists) {
  struct stat st;
  *exists = false;
  if (stat(dir, &st) != 0) {
    if (errno == ENOENT) return KILN_SUCCESS;
    return kilnSetError(KILN_ERR_IO, "%s: %s", dir, strerror(errno));
  }
  if (!S_ISDIR(st.st_mode))
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "%s exists and is not a folder", dir);
  *exists = true;
  char csv[PATH_MAX];
  snprintf(csv, sizeof csv, "%s/tune.csv", dir);
  if (access(csv, F_OK) == 0) return KILN_SUCCESS;
  DIR* d = opendir(dir);
  if (!d) return kilnSetError(KILN_ERR_IO, "%s: %s", dir, strerror(errno));
  bool empty = true;
  struct dirent* de;
  while (empty && (de = readdir(d)) != NULL) empty = !strcmp(de->d_name, ".") || !strcmp(de->d_name, "..");
  closedir(d);
  if (!empty)
    return kilnSetError(
        KILN_ERR_INVALID_ARGUMENT,
        "%s is a folder that kiln tune did not write (not empty, no tune.csv): not replacing it", dir);
  return KILN_SUCCESS;
}

kilnResult_t kilnTuneCheckDir(const char* dir) {
  if (!dir || !*dir) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "no folder named");
  char parent[PATH_MAX];
  size_t len = strlen(dir);
  if (len >= sizeof parent) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "%s: path too long", dir);
  memcpy(parent, dir, len + 1);
  while (len > 1 && parent[len - 1] == '/') parent[--len] = '\0';
  char* slash = strrchr(parent, '/');
  if (!slash)
    snprintf(parent, sizeof parent, ".");
  else if (slash == parent)
    parent[1] = '\0';
  else
    *slash = '\0';
  struct stat st;
  if (stat(parent, &st) != 0 || !S_ISDIR(st.st_mode))
    return kilnSetError(KILN_ERR_IO, "%s: its folder %s does not exist", dir, parent);
  if (access(parent, W_OK) != 0)
    return kilnSetError(KILN_ERR_IO, "%s: its folder %s is not writable", dir, parent);
  bool exists;
  return check_target(dir, &exists);
}

static const char* time_text(double us, char* buf, size_t n) {
  if (us == KILN_TUNE_WRONG) return "wrong";
  if (us == KILN_TUNE_FAILED) return "failed";
  if (us == KILN_TUNE_PRUNED) return "pruned";
  if (us < 0) return "";
  snprintf(buf, n, "%.2f", us);
  return buf;
}

static const char* status_text(double us) {
  return us == KILN_TUNE_WRONG    ? "wrong"
         : us == KILN_TUNE_FAILED ? "failed"
         : us == KILN_TUNE_PRUNED ? "pruned"
         : us < 0                 ? "not-run"
                                  : "ok";
}

/* The file name (without .xml) of range ri of a result: the candidate's plan name and -rN, cut to
 * fit a plan name. */
static void range_name(const kilnTuneResult* res, int ri, char* out, size_t n) {
  char suffix[16];
  snprintf(suffix, sizeof suffix, "-r%d", ri);
  const char* base = res->set->c[res->ranges[ri].cand].plan->name;
  size_t keep = strlen(base);
  if (keep + strlen(suffix) >= n) keep = n - 1 - strlen(suffix);
  snprintf(out, n, "%.*s%s", (int)keep, base, suffix);
  for (char* p = out; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
          *p == '_' || *p == '.'))
      *p = '_';
}

static kilnResult_t write_csv(const char* path, const kilnTuneMachine* m, const kilnTuneResult* results,
                              int nresults) {
  FILE* f = fopen(path, "w");
  if (!f) return kilnSetError(KILN_ERR_IO, "%s: %s", path, strerror(errno));
  const bool model = m->model[0] != '\0';
  fprintf(f, "coll,ranks,bytes,candidate,source,us,nccl_us,status,kept,timed_by\n");
  for (int i = 0; i < nresults; i++) {
    const kilnTuneResult* res = &results[i];
    for (int c = 0; c < res->set->n; c++)
      for (int k = 0; k < res->nsizes; k++) {
        const double us = res->us[c * res->nsizes + k];
        const double nc = res->nccl ? res->nccl[k] : KILN_TUNE_NOT_RUN;
        bool kept = false;
        for (int ri = 0; ri < res->nranges && !kept; ri++)
          kept = res->ranges[ri].cand == c && k >= res->ranges[ri].first && k <= res->ranges[ri].last;
        char a[32], b[32];
        fprintf(f, "%s,%d,%llu,%s,%s,%s,%s,%s,%d,%s\n", kilnCollName(res->coll), m->nranks,
                (unsigned long long)res->sizes[k], res->set->c[c].plan->name, res->set->c[c].source,
                time_text(us, a, sizeof a), time_text(nc, b, sizeof b),
                model && us >= 0 ? "predicted" : status_text(us), kept ? 1 : 0, model ? m->model_tag : "gpu");
      }
  }
  const bool bad = ferror(f) != 0;
  if (fclose(f) != 0 || bad) return kilnSetError(KILN_ERR_IO, "%s: cannot write it", path);
  return KILN_SUCCESS;
}

static kilnResult_t write_readme(const char* path, const char* dir, const kilnTuneMachine* m,
                                 const kilnTuneResult* results, int nresults, const char* command) {
  FILE* f = fopen(path, "w");
  if (!f) return kilnSetError(KILN_ERR_IO, "%s: %s", path, strerror(errno));
  const bool model = m->model[0] != '\0';
  if (model) {
    fprintf(f,
            "Plans kiln tune --model chose for %d ranks from the simulator's predictions: nothing was\n"
            "measured, the choice is the model's.\n\n",
            m->nranks);
    fprintf(f, "model: %s;\n", m->model);
    fprintf(f,
            "       NCCL: the faster of its simulated ring and tree (allreduce), its ring (allgather,\n"
            "       reducescatter), its all-pairs (alltoall), with the table fitted to NCCL\n"
            "       (KILN_SIM_PARAMS_NCCL).\n"
            "The model predicts GPU times within 25%% on the H200 tables it was fitted to\n"
            "(bench/sim_calibrate), not on every machine: kiln tune without --model, on the GPUs,\n"
            "measures every candidate beside NCCL and replaces this folder with the measured choice.\n");
  } else {
    fprintf(f, "Plans kiln tune chose for %d ranks on this machine.\n\n", m->nranks);
    fprintf(f, "machine: %d x %s, driver %s, NCCL %s\n", m->ngpus, m->gpu, m->driver, m->nccl);
    if (m->rehearsal)
      fprintf(
          f,
          "rehearsal: yes - %d ranks share %d GPU%s, so the times say nothing about speed and NCCL was not\n"
          "measured (it takes one rank a GPU); the plans are checked, not chosen for speed.\n",
          m->nranks, m->ngpus, m->ngpus == 1 ? "" : "s");
    else
      fprintf(f, "rehearsal: no (one rank a GPU)\n");
  }
  fprintf(f, "command: %s\n\n", command ? command : "kiln tune");
  fprintf(
      f,
      "Each plan's file holds its byte range (minBytes, maxBytes: the collective's reference bytes,\n"
      "allreduce per-rank input, allgather total output, reducescatter and alltoall total input).\n"
      "Sizes no plan takes stay NCCL's. Use them without a rebuild (the drop-in libnccl.so.2):\n"
      "  KILN_PLANS=%s\n"
      "or bake them into the library: cmake -DKILN_PLANS_DIR=%s (or kiln bake FILE.xml for each).\n"
      "%s\n\n",
      dir, dir,
      model ? "tune.csv has every time predicted (us: the simulator's per call, the call's launch included;\n"
              "status predicted, timed_by the model)."
            : "tune.csv has every time measured (us: median per call in CUDA graphs, the slowest rank).");
  for (int i = 0; i < nresults; i++) {
    const kilnTuneResult* res = &results[i];
    fprintf(f, "%s:\n", kilnCollName(res->coll));
    for (int ri = 0; ri < res->nranges; ri++) {
      const kilnTuneRange* r = &res->ranges[ri];
      char name[KILN_NAME_MAX] = "NCCL";
      if (r->cand >= 0) range_name(res, ri, name, sizeof name);
      fprintf(f, "  %12llu .. %-12llu %s\n", (unsigned long long)r->min_bytes,
              (unsigned long long)r->max_bytes, name);
    }
  }
  const bool bad = ferror(f) != 0;
  if (fclose(f) != 0 || bad) return kilnSetError(KILN_ERR_IO, "%s: cannot write it", path);
  return KILN_SUCCESS;
}

/* Puts tmp where dir is: atomically over an existing dir where the kernel can (RENAME_EXCHANGE),
 * the old one removed after. */
static kilnResult_t move_into(const char* tmp, const char* dir, bool exists) {
  if (!exists) {
    if (rename(tmp, dir) != 0)
      return kilnSetError(KILN_ERR_IO, "renaming %s to %s: %s", tmp, dir, strerror(errno));
    return KILN_SUCCESS;
  }
#ifdef RENAME_EXCHANGE
  if (renameat2(AT_FDCWD, tmp, AT_FDCWD, dir, RENAME_EXCHANGE) == 0) {
    remove_tree(tmp); /* now the old folder */
    return KILN_SUCCESS;
  }
#endif
  char old[PATH_MAX];
  if (snprintf(old, sizeof old, "%s.old-XXXXXX", dir) >= (int)sizeof old || !mkdtemp(old))
    return kilnSetError(KILN_ERR_IO, "%s: no room for the old folder beside it", dir);
  rmdir(old);
  if (rename(dir, old) != 0)
    return kilnSetError(KILN_ERR_IO, "renaming %s to %s: %s", dir, old, strerror(errno));
  if (rename(tmp, dir) != 0) {
    const int e = errno;
    rename(old, dir);
    return kilnSetError(KILN_ERR_IO, "renaming %s to %s: %s", tmp, dir, strerror(e));
  }
  remove_tree(old);
  return KILN_SUCCESS;
}

kilnResult_t kilnTuneWriteDir(const char* dir, const kilnTuneMachine* m, const kilnTuneResult* results,
                              int nresults, const char* command) {
  if (!dir || !*dir || !m || (nresults > 0 && !results))
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnTuneWriteDir: no folder, machine or results");
  char clean[PATH_MAX - 128]; /* room for ".tmp-XXXXXX" and "/NAME.xml" after it */
  size_t len = strlen(dir);
  while (len > 1 && dir[len - 1] == '/') len--;
  if (len + 32 >= sizeof clean) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "%s: path too long", dir);
  memcpy(clean, dir, len);
  clean[len] = '\0';
  bool exists = false;
  kilnResult_t r = kilnTuneCheckDir(clean);
  if (r == KILN_SUCCESS) r = check_target(clean, &exists);
  if (r != KILN_SUCCESS) return r;
  char tmp[PATH_MAX - 96];
  snprintf(tmp, sizeof tmp, "%s.tmp-XXXXXX", clean);
  if (!mkdtemp(tmp))
    return kilnSetError(KILN_ERR_IO, "cannot make a folder beside %s (%s): %s", clean, tmp, strerror(errno));
  char path[PATH_MAX];
  for (int i = 0; i < nresults && r == KILN_SUCCESS; i++) {
    const kilnTuneResult* res = &results[i];
    for (int ri = 0; ri < res->nranges && r == KILN_SUCCESS; ri++) {
      const kilnTuneRange* rg = &res->ranges[ri];
      if (rg->cand < 0) continue;
      if (rg->cand >= res->set->n) {
        r = kilnSetError(KILN_ERR_INVALID_ARGUMENT, "%s range %d names candidate %d of %d",
                         kilnCollName(res->coll), ri, rg->cand, res->set->n);
        break;
      }
      kilnPlan* p = NULL;
      if ((r = kilnPlanClone(res->set->c[rg->cand].plan, &p)) != KILN_SUCCESS) break;
      range_name(res, ri, p->name, sizeof p->name);
      p->min_bytes = rg->min_bytes;
      p->max_bytes = rg->max_bytes;
      p->has_minmax = true;
      snprintf(path, sizeof path, "%s/%s.xml", tmp, p->name);
      r = kilnPlanWriteFile(p, path);
      kilnPlanFree(p);
    }
  }
  if (r == KILN_SUCCESS) {
    snprintf(path, sizeof path, "%s/tune.csv", tmp);
    r = write_csv(path, m, results, nresults);
  }
  if (r == KILN_SUCCESS) {
    snprintf(path, sizeof path, "%s/README", tmp);
    r = write_readme(path, clean, m, results, nresults, command);
  }
  if (r == KILN_SUCCESS) r = move_into(tmp, clean, exists);
  if (r != KILN_SUCCESS) remove_tree(tmp);
  return r;
}

bool kilnTuneDriverVersion(const char* line, char* out, size_t n) {
  if (!out || n == 0) return false;
  out[0] = '\0';
  const char* k = line ? strstr(line, "Kernel Module") : NULL;
  if (!k) return false;
  k += strlen("Kernel Module");
  while (*k) {
    while (*k == ' ' || *k == '\t') k++;
    size_t len = strcspn(k, " \t\n");
    if (len == 0) break;
    if (*k >= '0' && *k <= '9') {
      if (len >= n) len = n - 1;
      memcpy(out, k, len);
      out[len] = '\0';
      return true;
    }
    k += len;
  }
  return false;
}
