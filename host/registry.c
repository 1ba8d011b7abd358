/*
 * The plan registry (include/kiln/registry.h): the baked table from gen/ plus plans loaded at run
 * time, and the selection rule every rank applies the same way.
 */
#include "registry_internal.h"

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A loaded entry owns its plan and the strings the entry points to. */
typedef struct loaded {
  kilnRegistryEntry e;
  kilnPlan* plan;
  char* path;
} loaded;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static loaded** loads; /* in load order */
static int nloads, caploads;
static kilnPlan** bakedPlans; /* parsed on demand, parallel to the baked table */
static int nbaked = -1;
static const kilnRegistryEntry* baked;
static const kilnRegistryEntry* tableOverride; /* kilnRegistryUseTable */
static int ntableOverride;

/* Called with the lock held. */
static void init_baked(void) {
  if (nbaked >= 0) return;
  int n = ntableOverride;
  const kilnRegistryEntry* t = tableOverride ? tableOverride : kilnBakedTable(&n);
  baked = t;
  nbaked = (t && n > 0) ? n : 0;
  bakedPlans = nbaked ? calloc((size_t)nbaked, sizeof *bakedPlans) : NULL;
  if (nbaked && !bakedPlans) nbaked = 0; /* out of memory: behave as if nothing was baked */
}

void kilnRegistryUseTable(const kilnRegistryEntry* entries, int n) {
  pthread_mutex_lock(&lock);
  for (int i = 0; bakedPlans && i < nbaked; i++) kilnPlanFree(bakedPlans[i]);
  free(bakedPlans);
  bakedPlans = NULL;
  baked = NULL;
  nbaked = -1;
  tableOverride = entries;
  ntableOverride = entries ? n : 0;
  pthread_mutex_unlock(&lock);
}

uint64_t kilnRegistryCallBytes(kilnColl_t coll, int nranks, size_t count, kilnDataType_t dtype) {
  size_t es = kilnDataTypeSize(dtype);
  if (es == 0 || nranks < 1) return 0;
  switch (coll) {
    case KILN_COLL_ALLREDUCE: return (uint64_t)count * es;
    case KILN_COLL_ALLGATHER:
    case KILN_COLL_REDUCESCATTER:
    case KILN_COLL_ALLTOALL: return (uint64_t)count * es * (uint64_t)nranks;
    default: return 0;
  }
}

bool kilnRegistryCallInPlace(kilnColl_t coll, int rank, const void* sendbuf, const void* recvbuf,
                             size_t count, kilnDataType_t dtype) {
  const char* sb = (const char*)sendbuf;
  const char* rb = (const char*)recvbuf;
  const size_t mine = (size_t)rank * count * kilnDataTypeSize(dtype);
  switch (coll) {
    case KILN_COLL_ALLGATHER: return sb == rb + mine;
    case KILN_COLL_REDUCESCATTER: return rb == sb + mine;
    default: return sb == rb;
  }
}

kilnBakedLaunch_t kilnRegistryKernel(const kilnRegistryEntry* e, kilnDataType_t dtype, kilnRedOp_t op) {
  if (!e || (unsigned)dtype >= KILN_NUM_DTYPES) return NULL;
  if (e->reduces && op != KILN_SUM && op != KILN_AVG) return NULL;
  return e->launch[dtype];
}

bool kilnRegistryFits(const kilnRegistryEntry* e, kilnColl_t coll, int nranks, uint64_t bytes, bool inplace) {
  if (!e || !e->name || e->coll != coll || e->nranks != nranks) return false;
  if (bytes < e->minBytes || bytes > e->maxBytes) return false;
  if (inplace && coll == KILN_COLL_ALLTOALL) return false;
  return inplace ? e->inplace : e->outofplace;
}

/* Called with the lock held: e's place in the load order, -1 for an entry that was not loaded. */
static int load_index(const kilnRegistryEntry* e) {
  for (int i = 0; i < nloads; i++)
    if (&loads[i]->e == e) return i;
  return -1;
}

/* Called with the lock held: kilnRegistryPrefer. Entries of a caller's own array that are not
 * the registry's count as baked ones, in array order. */
static bool prefer(const kilnRegistryEntry* a, const kilnRegistryEntry* b, kilnDataType_t dtype,
                   kilnRedOp_t op) {
  const int la = load_index(a), lb = load_index(b);
  if ((la >= 0) != (lb >= 0)) return la >= 0;
  const uint64_t wa = a->maxBytes - a->minBytes, wb = b->maxBytes - b->minBytes;
  if (la >= 0) return wa != wb ? wa < wb : la > lb;
  /* One whose baked kernel runs by default (inlined steps; the runtime interprets the others
   * unless told to use their kernels), then the narrower range, then table order. */
  const bool ka = a->inlined && kilnRegistryKernel(a, dtype, op) != NULL;
  const bool kb = b->inlined && kilnRegistryKernel(b, dtype, op) != NULL;
  if (ka != kb) return ka;
  return wa != wb ? wa < wb : a < b;
}

bool kilnRegistryIsLoaded(const kilnRegistryEntry* e) {
  pthread_mutex_lock(&lock);
  const bool l = load_index(e) >= 0;
  pthread_mutex_unlock(&lock);
  return l;
}

bool kilnRegistryPrefer(const kilnRegistryEntry* a, const kilnRegistryEntry* b, kilnDataType_t dtype,
                        kilnRedOp_t op) {
  if (!a || !b) return a != NULL;
  pthread_mutex_lock(&lock);
  const bool p = prefer(a, b, dtype, op);
  pthread_mutex_unlock(&lock);
  return p;
}

/* Called with the lock held: the index of the first of entries[0..n) by prefer that fits the
 * call, or -1. */
static int pick(const kilnRegistryEntry* entries, int n, kilnColl_t coll, int nranks, uint64_t bytes,
                bool inplace, kilnDataType_t dtype, kilnRedOp_t op) {
  int best = -1;
  for (int i = 0; entries && i < n; i++) {
    if (!kilnRegistryFits(&entries[i], coll, nranks, bytes, inplace)) continue;
    if (best < 0 || prefer(&entries[i], &entries[best], dtype, op)) best = i;
  }
  return best;
}

int kilnRegistryPick(const kilnRegistryEntry* entries, int n, kilnColl_t coll, int nranks, uint64_t bytes,
                     bool inplace, kilnDataType_t dtype, kilnRedOp_t op) {
  pthread_mutex_lock(&lock);
  const int best = pick(entries, n, coll, nranks, bytes, inplace, dtype, op);
  pthread_mutex_unlock(&lock);
  return best;
}

const kilnRegistryEntry* kilnRegistrySelect(kilnColl_t coll, int nranks, uint64_t bytes, bool inplace,
                                            kilnDataType_t dtype, kilnRedOp_t op) {
  const kilnRegistryEntry* out = NULL;
  pthread_mutex_lock(&lock);
  init_baked();
  for (int i = 0; i < nloads; i++) {
    const kilnRegistryEntry* e = &loads[i]->e;
    if (kilnRegistryFits(e, coll, nranks, bytes, inplace) && (!out || prefer(e, out, dtype, op))) out = e;
  }
  if (!out) {
    const int i = pick(baked, nbaked, coll, nranks, bytes, inplace, dtype, op);
    if (i >= 0) out = &baked[i];
  }
  pthread_mutex_unlock(&lock);
  return out;
}

kilnResult_t kilnRegistryPlan(const kilnRegistryEntry* e, const kilnPlan** out) {
  if (!e || !out) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnRegistryPlan: NULL argument");
  kilnResult_t res = KILN_SUCCESS;
  *out = NULL;
  pthread_mutex_lock(&lock);
  init_baked();
  if (nbaked > 0 && e >= baked && e < baked + nbaked) {
    size_t i = (size_t)(e - baked);
    if (!bakedPlans[i] && !e->xml) {
      res = kilnSetError(KILN_ERR_INVALID_ARGUMENT, "baked plan %s: no plan text in its entry", e->name);
    } else if (!bakedPlans[i]) {
      res = kilnPlanReadMemory(e->xml, strlen(e->xml), e->ident, &bakedPlans[i]);
      if (res != KILN_SUCCESS) kilnPrefixError("baked plan %s: ", e->name);
    }
    *out = bakedPlans[i];
  } else {
    for (int i = 0; i < nloads; i++)
      if (&loads[i]->e == e) *out = loads[i]->plan;
    if (!*out) res = kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnRegistryPlan: not a registry entry");
  }
  pthread_mutex_unlock(&lock);
  return res;
}

/* Takes ownership of p (verified) and path (may be NULL). */
static kilnResult_t add_loaded(kilnPlan* p, char* path, const kilnRegistryEntry** out) {
  loaded* l = NULL;
  kilnResult_t res = kilnPlanCheckRuntime(p); /* a plan the runtime cannot run never serves a call */
  if (res != KILN_SUCCESS) {
    kilnPrefixError("%s refused: ", path ? path : "plan");
    goto out_free;
  }
  l = calloc(1, sizeof *l);
  if (!l) {
    res = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory adding plan %s", p->name);
    goto out_free;
  }
  l->plan = p;
  l->path = path;
  l->e.name = p->name;
  l->e.ident = path ? path : "(memory)";
  l->e.coll = p->coll;
  l->e.nranks = p->ngpus;
  l->e.minBytes = p->min_bytes;
  l->e.maxBytes = p->max_bytes;
  l->e.inplace = kilnPlanServes(p, true);
  l->e.outofplace = kilnPlanServes(p, false);
  l->e.proto = p->proto;
  l->e.reduces = p->coll == KILN_COLL_ALLREDUCE || p->coll == KILN_COLL_REDUCESCATTER;
  pthread_mutex_lock(&lock);
  if (nloads == caploads) {
    int cap = caploads ? caploads * 2 : 8;
    loaded** n = realloc(loads, (size_t)cap * sizeof *n);
    if (!n) {
      pthread_mutex_unlock(&lock);
      res = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory adding plan %s", p->name);
      goto out_free;
    }
    loads = n;
    caploads = cap;
  }
  loads[nloads++] = l;
  pthread_mutex_unlock(&lock);
  if (out) *out = &l->e;
  return KILN_SUCCESS;
out_free:
  free(l);
  kilnPlanFree(p);
  free(path);
  return res;
}

kilnResult_t kilnRegistryAddPlan(const kilnPlan* plan, const kilnRegistryEntry** out) {
  if (!plan) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnRegistryAddPlan: NULL plan");
  kilnPlan* p = NULL;
  kilnResult_t res = kilnPlanVerify(plan, NULL);
  if (res != KILN_SUCCESS) {
    kilnPrefixError("plan %s refused: ", plan->name);
    return res;
  }
  if ((res = kilnPlanClone(plan, &p)) != KILN_SUCCESS) return res;
  return add_loaded(p, NULL, out);
}

kilnResult_t kilnRegistryLoadFile(const char* path, const kilnRegistryEntry** out) {
  if (!path) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnRegistryLoadFile: NULL path");
  kilnPlan* p = NULL;
  kilnResult_t res = kilnPlanReadFile(path, &p);
  if (res != KILN_SUCCESS) return res;
  if ((res = kilnPlanVerify(p, NULL)) != KILN_SUCCESS) {
    kilnPrefixError("%s (plan %s) refused: ", path, p->name);
    kilnPlanFree(p);
    return res;
  }
  char* copy = strdup(path);
  if (!copy) {
    kilnPlanFree(p);
    return kilnSetError(KILN_ERR_NO_MEMORY, "out of memory loading %s", path);
  }
  return add_loaded(p, copy, out);
}

static int cmp_str(const void* a, const void* b) { return strcmp(*(char* const*)a, *(char* const*)b); }

/* Loads the *.xml files of a folder in name order. */
static kilnResult_t load_dir(const char* dir, DIR* d) {
  char** names = NULL;
  int n = 0, cap = 0;
  kilnResult_t res = KILN_SUCCESS;
  struct dirent* de;
  while ((de = readdir(d)) != NULL) {
    size_t len = strlen(de->d_name);
    if (len < 5 || strcmp(de->d_name + len - 4, ".xml")) continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 16;
      char** nn = realloc(names, (size_t)cap * sizeof *nn);
      if (!nn) {
        res = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory listing %s", dir);
        goto out_free;
      }
      names = nn;
    }
    size_t need = strlen(dir) + len + 2;
    if (!(names[n] = malloc(need))) {
      res = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory listing %s", dir);
      goto out_free;
    }
    snprintf(names[n], need, "%s/%s", dir, de->d_name);
    n++;
  }
  if (n > 1) qsort(names, (size_t)n, sizeof *names, cmp_str);
  for (int i = 0; i < n && res == KILN_SUCCESS; i++) res = kilnRegistryLoadFile(names[i], NULL);
out_free:
  for (int i = 0; i < n; i++) free(names[i]);
  free(names);
  return res;
}

kilnResult_t kilnRegistryLoadPath(const char* list) {
  if (!list) return KILN_SUCCESS;
  kilnResult_t res = KILN_SUCCESS;
  char* copy = strdup(list);
  if (!copy) return kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
  char* save = NULL;
  for (char* item = strtok_r(copy, ":", &save); item && res == KILN_SUCCESS;
       item = strtok_r(NULL, ":", &save)) {
    DIR* d = opendir(item);
    if (d) {
      res = load_dir(item, d);
      closedir(d);
    } else {
      res = kilnRegistryLoadFile(item, NULL);
    }
  }
  free(copy);
  return res;
}

void kilnRegistryReset(void) {
  pthread_mutex_lock(&lock);
  for (int i = 0; i < nloads; i++) {
    kilnPlanFree(loads[i]->plan);
    free(loads[i]->path);
    free(loads[i]);
  }
  free(loads);
  loads = NULL;
  nloads = caploads = 0;
  pthread_mutex_unlock(&lock);
}

int kilnRegistryCount(void) {
  pthread_mutex_lock(&lock);
  init_baked();
  int n = nbaked + nloads;
  pthread_mutex_unlock(&lock);
  return n;
}

const kilnRegistryEntry* kilnRegistryAt(int i) {
  const kilnRegistryEntry* e = NULL;
  pthread_mutex_lock(&lock);
  init_baked();
  if (i >= 0 && i < nbaked)
    e = &baked[i];
  else if (i >= nbaked && i < nbaked + nloads)
    e = &loads[i - nbaked]->e;
  pthread_mutex_unlock(&lock);
  return e;
}

const kilnRegistryEntry* kilnRegistryFind(const char* name) {
  const kilnRegistryEntry* e = NULL;
  if (!name) return NULL;
  pthread_mutex_lock(&lock);
  init_baked();
  for (int i = nloads - 1; i >= 0 && !e; i--)
    if (!strcmp(loads[i]->e.name, name)) e = &loads[i]->e;
  for (int i = 0; i < nbaked && !e; i++)
    if ((baked[i].name && !strcmp(baked[i].name, name)) || (baked[i].ident && !strcmp(baked[i].ident, name)))
      e = &baked[i];
  pthread_mutex_unlock(&lock);
  return e;
}

/* The first tests of same_shape: collective, ranks, protocol. */
static bool same_head(kilnColl_t ca, int na, kilnProto_t pa, kilnColl_t cb, int nb, kilnProto_t pb) {
  return ca == cb && na == nb && pa == pb;
}

/* Same shape: everything the kernel depends on. That includes whether the plan may run in place:
 * gen/ folds local reductions by kilnPlanRankSteps, which folds fewer of them in such a plan. */
static bool same_shape(const kilnPlan* a, const kilnPlan* b) {
  if (!same_head(a->coll, a->ngpus, a->proto, b->coll, b->ngpus, b->proto)) return false;
  if ((a->inplace != 0) != (b->inplace != 0)) return false;
  for (int r = 0; r < a->ngpus; r++) {
    const kilnGpu *ga = &a->gpus[r], *gb = &b->gpus[r];
    if (ga->i_chunks != gb->i_chunks || ga->o_chunks != gb->o_chunks || ga->s_chunks != gb->s_chunks ||
        ga->ntbs != gb->ntbs)
      return false;
    for (int t = 0; t < ga->ntbs; t++) {
      const kilnThreadblock *ta = &ga->tbs[t], *tb = &gb->tbs[t];
      if (ta->send != tb->send || ta->recv != tb->recv || ta->chan != tb->chan || ta->nsteps != tb->nsteps)
        return false;
      for (int s = 0; s < ta->nsteps; s++) {
        const kilnStep *x = &ta->steps[s], *y = &tb->steps[s];
        if (x->type != y->type || x->srcbuf != y->srcbuf || x->srcoff != y->srcoff ||
            x->dstbuf != y->dstbuf || x->dstoff != y->dstoff || x->cnt != y->cnt || x->peer != y->peer ||
            x->proto != y->proto)
          return false;
        int dx = x->depid >= 0 ? x->depid : -1, dy = y->depid >= 0 ? y->depid : -1;
        if (dx != dy || (dx >= 0 && x->deps != y->deps)) return false;
      }
    }
  }
  return true;
}

const kilnRegistryEntry* kilnRegistryBakedFor(const kilnPlan* p) {
  if (!p || !p->gpus) return NULL;
  char saved[512];
  snprintf(saved, sizeof saved, "%s", kilnLastError());
  int n = 0;
  const kilnRegistryEntry* t = NULL;
  pthread_mutex_lock(&lock);
  init_baked();
  n = nbaked;
  t = baked;
  pthread_mutex_unlock(&lock);
  const kilnRegistryEntry* out = NULL;
  for (int i = 0; i < n && !out; i++) {
    /* on the row, before parsing the entry's plan */
    if (!same_head(t[i].coll, t[i].nranks, t[i].proto, p->coll, p->ngpus, p->proto)) continue;
    const kilnPlan* q = NULL;
    if (kilnRegistryPlan(&t[i], &q) == KILN_SUCCESS && q && same_shape(p, q)) out = &t[i];
  }
  kilnSetError(KILN_SUCCESS, "%s", saved); /* a lookup leaves no error behind */
  return out;
}
