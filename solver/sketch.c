/* Communication sketches: XML reading and writing, the default sketch of a topology, and the
 * check of a sketch against a topology (kilnSketchValidate). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/sketch.h"
#include "xml_util.h"

#define MAX_CHUNKUP 1024
#define MAX_SPLIT 1024

static const char* const policy_names[] = {
#define KILN_X_NAME(e, n) n,
    KILN_HYPER_POLICIES(KILN_X_NAME)
#undef KILN_X_NAME
};
static const char* const intra_names[] = {
#define KILN_X_NAME(e, n) n,
    KILN_INTRA_STRATEGIES(KILN_X_NAME)
#undef KILN_X_NAME
};
static const char* const inter_names[] = {
#define KILN_X_NAME(e, n) n,
    KILN_INTER_STRATEGIES(KILN_X_NAME)
#undef KILN_X_NAME
};
static const char* const ordering_names[] = {
#define KILN_X_NAME(e, n) n,
    KILN_ORDERINGS(KILN_X_NAME)
#undef KILN_X_NAME
};

/* Index of s in names[0..n-1], or -1 (s NULL: -1). */
static int lookup(const char* const* names, int n, const char* s) {
  for (int i = 0; s && i < n; i++)
    if (!strcmp(s, names[i])) return i;
  return -1;
}

const char* kilnHyperPolicyName(kilnHyperPolicy_t p) {
  return (unsigned)p < KILN_NUM_HYPER_POLICIES ? policy_names[p] : "unknown";
}

bool kilnHyperPolicyParse(const char* s, kilnHyperPolicy_t* out) {
  int i = lookup(policy_names, KILN_NUM_HYPER_POLICIES, s);
  if (i < 0 || !out) return false;
  *out = (kilnHyperPolicy_t)i;
  return true;
}

const char* kilnIntraStrategyName(kilnIntraStrategy_t v) {
  return (unsigned)v < KILN_NUM_INTRA_STRATEGIES ? intra_names[v] : "unknown";
}

const char* kilnInterStrategyName(kilnInterStrategy_t v) {
  return (unsigned)v < KILN_NUM_INTER_STRATEGIES ? inter_names[v] : "unknown";
}

const char* kilnOrderingName(kilnOrdering_t v) {
  return (unsigned)v < KILN_NUM_ORDERINGS ? ordering_names[v] : "unknown";
}

bool kilnOrderingParse(const char* s, kilnOrdering_t* out) {
  int i = lookup(ordering_names, KILN_NUM_ORDERINGS, s);
  if (i < 0 || !out) return false;
  *out = (kilnOrdering_t)i;
  return true;
}

void kilnSketchFree(kilnSketch* s) {
  if (!s) return;
  for (int i = 0; s->switches && i < s->nswitches; i++) free(s->switches[i].gpus);
  free(s->switches);
  free(s->links);
  for (int i = 0; s->conns && i < s->nconns; i++) free(s->conns[i].dst);
  free(s->conns);
  free(s->beta_split_gpu);
  free(s->beta_split);
  free(s->symmetry);
  free(s);
}

/* ---- XML reading ---- */

static bool is(xmlNodePtr n, const char* name) { return !xmlStrcmp(n->name, (const xmlChar*)name); }

/* What a sketch has when its XML (or kilnSketchDefault) says nothing else. */
static void sketch_defaults(kilnSketch* s) {
  s->intra = KILN_INTRA_ALL;
  s->inter = KILN_INTER_DIRECT;
  s->input_chunkup = 1;
  s->input_size = 1u << 20;
  s->ordering = KILN_ORDER_AUTO;
}

/* Reads a name attribute from a vocabulary table. */
static kilnResult_t get_enum(xmlNodePtr n, const char* f, const char* attr, const char* const* names, int nn,
                             int dflt, int* out) {
  char s[64];
  kilnResult_t r = kilnXmlGetString(n, f, attr, false, names[dflt], s, sizeof s);
  if (r != KILN_SUCCESS) return r;
  int i = lookup(names, nn, s);
  if (i < 0) {
    char known[256] = "";
    for (int k = 0; k < nn; k++) {
      strncat(known, " ", sizeof known - strlen(known) - 1);
      strncat(known, names[k], sizeof known - strlen(known) - 1);
    }
    return kilnXmlError(KILN_ERR_PARSE, f, n, "%s=\"%s\" is not one of:%s", attr, s, known);
  }
  *out = i;
  return KILN_SUCCESS;
}

static kilnResult_t read_intranode(xmlNodePtr n, const char* f, kilnSketch* s) {
  static const char *const kids[] = {"switch", "link", NULL}, *const attrs[] = {"strategy", NULL},
                           *const switchAttrs[] = {"gpus", "policy", NULL},
                           *const linkAttrs[] = {"src", "dst", NULL};
  kilnResult_t r;
  int strat;
  if ((r = kilnXmlCheckElement(n, f, kids, attrs)) ||
      (r = get_enum(n, f, "strategy", intra_names, KILN_NUM_INTRA_STRATEGIES, KILN_INTRA_ALL, &strat)))
    return r;
  s->intra = (kilnIntraStrategy_t)strat;
  int ns = kilnXmlCountChildren(n, "switch"), nl = kilnXmlCountChildren(n, "link");
  if (ns > KILN_MAX_RANKS || nl > KILN_MAX_RANKS * KILN_MAX_RANKS)
    return kilnXmlError(KILN_ERR_PARSE, f, n, "too many switches or links");
  s->switches = calloc((size_t)(ns ? ns : 1), sizeof *s->switches);
  s->links = calloc((size_t)(nl ? nl : 1), sizeof *s->links);
  if (!s->switches || !s->links) return kilnSetError(KILN_ERR_NO_MEMORY, "%s: out of memory", f);
  for (xmlNodePtr c = kilnXmlNextElement(n->children); c; c = kilnXmlNextElement(c->next)) {
    if (is(c, "switch")) {
      kilnSketchSwitch* sw = &s->switches[s->nswitches];
      int pol = KILN_HYPER_UC_MAX; /* get_enum sets it or fails */
      if ((r = kilnXmlCheckElement(c, f, NULL, switchAttrs))) return r;
      if ((r = get_enum(c, f, "policy", policy_names, KILN_NUM_HYPER_POLICIES, KILN_HYPER_UC_MAX, &pol)))
        return r;
      sw->policy = (kilnHyperPolicy_t)pol;
      if ((r = kilnXmlGetIntList(c, f, "gpus", 0, KILN_MAX_RANKS - 1, KILN_MAX_RANKS, &sw->gpus, &sw->ngpus)))
        return r;
      s->nswitches++;
      if (sw->ngpus < 2) return kilnXmlError(KILN_ERR_PARSE, f, c, "a sketch switch needs at least 2 GPUs");
    } else {
      kilnSketchLink* l = &s->links[s->nlinks];
      if ((r = kilnXmlCheckElement(c, f, NULL, linkAttrs)) ||
          (r = kilnXmlGetInt32(c, f, "src", true, 0, KILN_MAX_RANKS - 1, 0, &l->src)) ||
          (r = kilnXmlGetInt32(c, f, "dst", true, 0, KILN_MAX_RANKS - 1, 0, &l->dst)))
        return r;
      if (l->src == l->dst) return kilnXmlError(KILN_ERR_PARSE, f, c, "self link %d->%d", l->src, l->dst);
      s->nlinks++;
    }
  }
  return KILN_SUCCESS;
}

static kilnResult_t read_internode(xmlNodePtr n, const char* f, kilnSketch* s) {
  static const char *const kids[] = {"conn", "beta_split", "chunk_to_relay", NULL},
                           *const attrs[] = {"strategy", NULL}, *const connAttrs[] = {"src", "dst", NULL},
                           *const splitAttrs[] = {"gpu", "split", NULL},
                           *const relayAttrs[] = {"r1", "r2", NULL};
  kilnResult_t r;
  int strat;
  if ((r = kilnXmlCheckElement(n, f, kids, attrs)) ||
      (r = get_enum(n, f, "strategy", inter_names, KILN_NUM_INTER_STRATEGIES, KILN_INTER_DIRECT, &strat)))
    return r;
  s->inter = (kilnInterStrategy_t)strat;
  int nc = kilnXmlCountChildren(n, "conn"), nb = kilnXmlCountChildren(n, "beta_split");
  if (nc > KILN_MAX_RANKS || nb > KILN_MAX_RANKS || kilnXmlCountChildren(n, "chunk_to_relay") > 1)
    return kilnXmlError(KILN_ERR_PARSE, f, n,
                        "too many <conn> or <beta_split> elements, or more than one <chunk_to_relay>");
  s->conns = calloc((size_t)(nc ? nc : 1), sizeof *s->conns);
  s->beta_split_gpu = calloc((size_t)(nb ? nb : 1), sizeof *s->beta_split_gpu);
  s->beta_split = calloc((size_t)(nb ? nb : 1), sizeof *s->beta_split);
  if (!s->conns || !s->beta_split_gpu || !s->beta_split)
    return kilnSetError(KILN_ERR_NO_MEMORY, "%s: out of memory", f);
  for (xmlNodePtr c = kilnXmlNextElement(n->children); c; c = kilnXmlNextElement(c->next)) {
    if (is(c, "conn")) {
      kilnSketchConn* cn = &s->conns[s->nconns];
      if ((r = kilnXmlCheckElement(c, f, NULL, connAttrs)) ||
          (r = kilnXmlGetInt32(c, f, "src", true, 0, KILN_MAX_RANKS - 1, 0, &cn->src)) ||
          (r = kilnXmlGetIntList(c, f, "dst", 0, KILN_MAX_RANKS - 1, KILN_MAX_RANKS, &cn->dst, &cn->ndst)))
        return r;
      s->nconns++;
      if (cn->ndst < 1) return kilnXmlError(KILN_ERR_PARSE, f, c, "<conn> lists no dst");
      for (int i = 0; i < s->nconns - 1; i++)
        if (s->conns[i].src == cn->src)
          return kilnXmlError(KILN_ERR_PARSE, f, c, "<conn> src=\"%d\" is given twice", cn->src);
    } else if (is(c, "beta_split")) {
      int k = s->nbeta_split;
      if ((r = kilnXmlCheckElement(c, f, NULL, splitAttrs)) ||
          (r = kilnXmlGetInt32(c, f, "gpu", true, 0, KILN_MAX_RANKS - 1, 0, &s->beta_split_gpu[k])) ||
          (r = kilnXmlGetInt32(c, f, "split", true, 1, MAX_SPLIT, 1, &s->beta_split[k])))
        return r;
      s->nbeta_split++;
    } else {
      s->has_chunk_to_relay = true;
      if ((r = kilnXmlCheckElement(c, f, NULL, relayAttrs)) ||
          (r = kilnXmlGetInt32(c, f, "r1", true, 1, KILN_MAX_RANKS, 1, &s->relay_r1)) ||
          (r = kilnXmlGetInt32(c, f, "r2", true, 0, KILN_MAX_RANKS - 1, 0, &s->relay_r2)))
        return r;
      if (s->relay_r2 >= s->relay_r1)
        return kilnXmlError(KILN_ERR_PARSE, f, c, "chunk_to_relay needs r2 < r1 (r1=%d, r2=%d)", s->relay_r1,
                            s->relay_r2);
    }
  }
  return KILN_SUCCESS;
}

/* A kilnXmlDocReader: out is a kilnSketch**. */
static kilnResult_t read_doc(xmlDocPtr doc, const char* f, void* outp) {
  kilnSketch** out = (kilnSketch**)outp;
  xmlNodePtr root;
  kilnResult_t r = kilnXmlRoot(doc, f, "sketch", &root);
  if (r != KILN_SUCCESS) return r;
  static const char *const kids[] = {"intranode", "internode", "symmetry", "hyperparameters", NULL},
                           *const rootAttrs[] = {"name", NULL}, *const symAttrs[] = {"offset", "group", NULL},
                           *const hyperAttrs[] = {"input_chunkup", "input_size", "ordering", NULL};
  if ((r = kilnXmlCheckElement(root, f, kids, rootAttrs))) return r;
  if (kilnXmlCountChildren(root, "intranode") > 1 || kilnXmlCountChildren(root, "internode") > 1 ||
      kilnXmlCountChildren(root, "hyperparameters") > 1)
    return kilnXmlError(KILN_ERR_PARSE, f, root,
                        "<intranode>, <internode> and <hyperparameters> may appear once each");
  int nsym = kilnXmlCountChildren(root, "symmetry");
  if (nsym > 64) return kilnXmlError(KILN_ERR_PARSE, f, root, "more than 64 <symmetry> elements");
  kilnSketch* s = calloc(1, sizeof *s);
  if (!s) return kilnSetError(KILN_ERR_NO_MEMORY, "%s: out of memory", f);
  sketch_defaults(s);
  if ((r = kilnXmlGetString(root, f, "name", true, NULL, s->name, sizeof s->name))) goto out_free;
  s->symmetry = calloc((size_t)(nsym ? nsym : 1), sizeof *s->symmetry);
  if (!s->symmetry) {
    r = kilnSetError(KILN_ERR_NO_MEMORY, "%s: out of memory", f);
    goto out_free;
  }
  for (xmlNodePtr c = kilnXmlNextElement(root->children); c; c = kilnXmlNextElement(c->next)) {
    if (is(c, "intranode")) {
      r = read_intranode(c, f, s);
    } else if (is(c, "internode")) {
      r = read_internode(c, f, s);
    } else if (is(c, "symmetry")) {
      kilnSymmetry* y = &s->symmetry[s->nsymmetry];
      if (!(r = kilnXmlCheckElement(c, f, NULL, symAttrs)) &&
          !(r = kilnXmlGetInt32(c, f, "offset", true, 0, KILN_MAX_RANKS, 0, &y->offset)) &&
          !(r = kilnXmlGetInt32(c, f, "group", true, 1, KILN_MAX_RANKS, 1, &y->group)))
        s->nsymmetry++;
    } else {
      char size[64];
      int ord = KILN_ORDER_AUTO;
      if (!(r = kilnXmlCheckElement(c, f, NULL, hyperAttrs)) &&
          !(r = kilnXmlGetInt32(c, f, "input_chunkup", false, 1, MAX_CHUNKUP, 1, &s->input_chunkup)) &&
          !(r = kilnXmlGetString(c, f, "input_size", false, "1M", size, sizeof size)) &&
          !(r = get_enum(c, f, "ordering", ordering_names, KILN_NUM_ORDERINGS, KILN_ORDER_AUTO, &ord))) {
        s->ordering = (kilnOrdering_t)ord;
        if (!kilnParseSize(size, &s->input_size) || s->input_size == 0)
          r = kilnXmlError(KILN_ERR_PARSE, f, c,
                           "input_size=\"%s\" is not a positive size (e.g. 1M, 64KB, 4096)", size);
      }
    }
    if (r != KILN_SUCCESS) goto out_free;
  }
  *out = s;
  return KILN_SUCCESS;
out_free:
  kilnSketchFree(s);
  return r;
}

kilnResult_t kilnSketchReadMemory(const char* xml, size_t len, const char* name, kilnSketch** out) {
  if (!out) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnSketchReadMemory: NULL out");
  *out = NULL;
  return kilnXmlReadMemory(xml, len, name, read_doc, out);
}

kilnResult_t kilnSketchReadFile(const char* path, kilnSketch** out) {
  if (!out) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnSketchReadFile: NULL out");
  *out = NULL;
  return kilnXmlReadFile(path, read_doc, out);
}

/* ---- XML writing ---- */

/* Sizes as kilnParseSize reads them: the largest exact binary unit. */
static void write_size(kilnBuf* b, uint64_t v) {
  static const char units[] = "KMGT";
  int u = -1;
  while (u < 3 && v >= 1024 && v % 1024 == 0) {
    v /= 1024;
    u++;
  }
  if (u < 0)
    kilnBufPrintf(b, "%llu", (unsigned long long)v);
  else
    kilnBufPrintf(b, "%llu%c", (unsigned long long)v, units[u]);
}

kilnResult_t kilnSketchWriteMemory(const kilnSketch* s, char** out) {
  if (!s || !out) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnSketchWriteMemory: NULL argument");
  *out = NULL;
  if ((unsigned)s->intra >= KILN_NUM_INTRA_STRATEGIES || (unsigned)s->inter >= KILN_NUM_INTER_STRATEGIES ||
      (unsigned)s->ordering >= KILN_NUM_ORDERINGS)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "sketch %s: unknown strategy or ordering", s->name);
  kilnBuf b = {0};
  kilnBufPrintf(&b, "<?xml version=\"1.0\"?>\n<sketch name=\"");
  kilnBufEscaped(&b, s->name);
  kilnBufPrintf(&b, "\">\n  <intranode strategy=\"%s\"%s>\n", kilnIntraStrategyName(s->intra),
                s->nswitches + s->nlinks == 0 ? "/" : "");
  for (int i = 0; i < s->nswitches; i++) {
    kilnBufPrintf(&b, "    <switch gpus=\"");
    kilnBufInts(&b, s->switches[i].gpus, s->switches[i].ngpus);
    kilnBufPrintf(&b, "\" policy=\"%s\"/>\n", kilnHyperPolicyName(s->switches[i].policy));
  }
  for (int i = 0; i < s->nlinks; i++)
    kilnBufPrintf(&b, "    <link src=\"%d\" dst=\"%d\"/>\n", s->links[i].src, s->links[i].dst);
  if (s->nswitches + s->nlinks > 0) kilnBufPrintf(&b, "  </intranode>\n");
  bool inter_empty = s->nconns + s->nbeta_split == 0 && !s->has_chunk_to_relay;
  kilnBufPrintf(&b, "  <internode strategy=\"%s\"%s>\n", kilnInterStrategyName(s->inter),
                inter_empty ? "/" : "");
  for (int i = 0; i < s->nconns; i++) {
    kilnBufPrintf(&b, "    <conn src=\"%d\" dst=\"", s->conns[i].src);
    kilnBufInts(&b, s->conns[i].dst, s->conns[i].ndst);
    kilnBufPrintf(&b, "\"/>\n");
  }
  for (int i = 0; i < s->nbeta_split; i++)
    kilnBufPrintf(&b, "    <beta_split gpu=\"%d\" split=\"%d\"/>\n", s->beta_split_gpu[i], s->beta_split[i]);
  if (s->has_chunk_to_relay)
    kilnBufPrintf(&b, "    <chunk_to_relay r1=\"%d\" r2=\"%d\"/>\n", s->relay_r1, s->relay_r2);
  if (!inter_empty) kilnBufPrintf(&b, "  </internode>\n");
  for (int i = 0; i < s->nsymmetry; i++)
    kilnBufPrintf(&b, "  <symmetry offset=\"%d\" group=\"%d\"/>\n", s->symmetry[i].offset,
                  s->symmetry[i].group);
  kilnBufPrintf(&b, "  <hyperparameters input_chunkup=\"%d\" input_size=\"", s->input_chunkup);
  write_size(&b, s->input_size);
  kilnBufPrintf(&b, "\" ordering=\"%s\"/>\n</sketch>\n", kilnOrderingName(s->ordering));
  return kilnBufFinish(&b, out);
}

kilnResult_t kilnSketchWriteFile(const kilnSketch* s, const char* path) {
  if (!s) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnSketchWriteFile: NULL sketch");
  char* x = NULL;
  kilnResult_t r = kilnSketchWriteMemory(s, &x);
  return kilnWriteDocument(r, x, path);
}

/* ---- default sketch ---- */

kilnResult_t kilnSketchDefault(const kilnTopology* t, kilnSketch** out) {
  if (!t || !out) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnSketchDefault: NULL argument");
  *out = NULL;
  kilnSketch* s = calloc(1, sizeof *s);
  if (!s) goto out_nomem;
  snprintf(s->name, sizeof s->name, "%.*s-default", KILN_NAME_MAX - 9, t->name);
  sketch_defaults(s);
  if (t->ntswitches > 0) {
    s->switches = calloc((size_t)t->ntswitches, sizeof *s->switches);
    if (!s->switches) goto out_nomem;
    for (int i = 0; i < t->ntswitches; i++) {
      const kilnSwitch* ts = &t->tswitches[i];
      kilnSketchSwitch* sw = &s->switches[i];
      sw->gpus = malloc((size_t)ts->ngpus * sizeof *sw->gpus);
      if (!sw->gpus) goto out_nomem;
      s->nswitches++;
      memcpy(sw->gpus, ts->gpus, (size_t)ts->ngpus * sizeof *sw->gpus);
      sw->ngpus = ts->ngpus;
      sw->policy = KILN_HYPER_UC_MAX;
    }
  }
  *out = s;
  return KILN_SUCCESS;
out_nomem:
  kilnSketchFree(s);
  return kilnSetError(KILN_ERR_NO_MEMORY, "out of memory building the default sketch of %s", t->name);
}

/* ---- validation against a topology ---- */

static int rot(int x, int offset, int group) { return (x / group) * group + (x % group + offset) % group; }

/* Marks a kept logical link, which must be a physical one. */
static kilnResult_t keep(const kilnSketch* s, const kilnTopology* t, unsigned char* kept, int a, int b,
                         const char* what) {
  if (!kilnTopologyLink(t, a, b))
    return kilnSetError(
        KILN_ERR_INVALID_ARGUMENT,
        "sketch %s: %s keeps link %d->%d, but topology %s has no physical link from rank %d to rank %d",
        s->name, what, a, b, t->name, a, b);
  kept[(size_t)a * t->nranks + b] = 1;
  return KILN_SUCCESS;
}

/* Ranks reachable from 0 over kept links (forward, or backward when rev). Returns the first
 * unreached rank or -1. */
static int unreached(const unsigned char* kept, int n, bool rev, int* queue, unsigned char* seen) {
  memset(seen, 0, (size_t)n);
  int head = 0, tail = 0;
  queue[tail++] = 0;
  seen[0] = 1;
  while (head < tail) {
    int a = queue[head++];
    for (int b = 0; b < n; b++) {
      bool e = rev ? kept[(size_t)b * n + a] : kept[(size_t)a * n + b];
      if (e && !seen[b]) {
        seen[b] = 1;
        queue[tail++] = b;
      }
    }
  }
  for (int i = 0; i < n; i++)
    if (!seen[i]) return i;
  return -1;
}

kilnResult_t kilnSketchValidate(const kilnSketch* s, const kilnTopology* t) {
  if (!s || !t || !t->link_index)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnSketchValidate: NULL sketch or unexpanded topology");
  const char* nm = s->name;
  int g = t->gpus_per_node, n = t->nranks, N = t->nodes;
  char what[96];
  if ((unsigned)s->intra >= KILN_NUM_INTRA_STRATEGIES || (unsigned)s->inter >= KILN_NUM_INTER_STRATEGIES)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "sketch %s: unknown strategy", nm);
  if (s->input_chunkup < 1 || s->input_size == 0)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "sketch %s: input_chunkup must be >= 1 and input_size > 0",
                        nm);
  /* Elements the chosen strategy would ignore: a sketch that says two things is refused rather
   * than synthesized from one of them. */
  static const struct {
    bool intra;
    int strategy, also; /* the strategies that use the element (also: -1, none) */
    const char* elem;
  } owners[] = {{true, KILN_INTRA_SWITCH, KILN_INTRA_ALL, "switch"},
                {true, KILN_INTRA_LINKS, -1, "link"},
                {false, KILN_INTER_RELAY, -1, "conn"}};
  const int counts[] = {s->nswitches, s->nlinks, s->nconns};
  for (int i = 0; i < 3; i++) {
    const int has = owners[i].intra ? (int)s->intra : (int)s->inter;
    if (counts[i] > 0 && has != owners[i].strategy && has != owners[i].also)
      return kilnSetError(
          KILN_ERR_INVALID_ARGUMENT,
          "sketch %s: %s strategy \"%s\" ignores the %d <%s> element%s given: make the strategy "
          "\"%s\" or remove them",
          nm, owners[i].intra ? "intranode" : "internode",
          owners[i].intra ? kilnIntraStrategyName(s->intra) : kilnInterStrategyName(s->inter), counts[i],
          owners[i].elem, counts[i] == 1 ? "" : "s",
          owners[i].intra ? kilnIntraStrategyName((kilnIntraStrategy_t)owners[i].strategy)
                          : kilnInterStrategyName((kilnInterStrategy_t)owners[i].strategy));
  }
  /* Ids against the node size. */
  for (int i = 0; i < s->nswitches; i++)
    for (int j = 0; j < s->switches[i].ngpus; j++) {
      int a = s->switches[i].gpus[j];
      if (a < 0 || a >= g)
        return kilnSetError(KILN_ERR_INVALID_ARGUMENT,
                            "sketch %s: switch %d names GPU %d, outside 0..%d of %s", nm, i, a, g - 1,
                            t->name);
      for (int k = 0; k < j; k++)
        if (s->switches[i].gpus[k] == a)
          return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "sketch %s: switch %d lists GPU %d twice", nm, i, a);
    }
  for (int i = 0; i < s->nlinks; i++)
    if (s->links[i].src < 0 || s->links[i].src >= g || s->links[i].dst < 0 || s->links[i].dst >= g)
      return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "sketch %s: link %d->%d names a GPU outside 0..%d of %s",
                          nm, s->links[i].src, s->links[i].dst, g - 1, t->name);
  for (int i = 0; i < s->nconns; i++) {
    bool bad = s->conns[i].src < 0 || s->conns[i].src >= g;
    for (int j = 0; j < s->conns[i].ndst; j++) bad |= s->conns[i].dst[j] < 0 || s->conns[i].dst[j] >= g;
    if (bad)
      return kilnSetError(KILN_ERR_INVALID_ARGUMENT,
                          "sketch %s: conn from GPU %d names a GPU outside 0..%d of %s", nm, s->conns[i].src,
                          g - 1, t->name);
  }
  for (int i = 0; i < s->nbeta_split; i++)
    if (s->beta_split_gpu[i] < 0 || s->beta_split_gpu[i] >= g || s->beta_split[i] < 1)
      return kilnSetError(KILN_ERR_INVALID_ARGUMENT,
                          "sketch %s: beta_split gpu=%d split=%d: need GPU in 0..%d, split >= 1", nm,
                          s->beta_split_gpu[i], s->beta_split[i], g - 1);
  if (s->has_chunk_to_relay &&
      (s->relay_r1 < 1 || s->relay_r2 < 0 || s->relay_r2 >= s->relay_r1 || s->relay_r2 >= g))
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT,
                        "sketch %s: chunk_to_relay r1=%d r2=%d: need 0 <= r2 < r1 and r2 < %d", nm,
                        s->relay_r1, s->relay_r2, g);

  kilnResult_t r = KILN_SUCCESS;
  unsigned char* kept = calloc((size_t)n * n, 1);
  unsigned char* seen = malloc((size_t)n);
  int* queue = malloc((size_t)n * sizeof *queue);
  if (!kept || !seen || !queue) {
    r = kilnSetError(KILN_ERR_NO_MEMORY, "sketch %s: out of memory", nm);
    goto out_free;
  }
  /* The logical topology: intra-node links kept by the strategy, replicated per node... */
  for (int node = 0; node < N; node++) {
    int base = node * g;
    if (s->intra == KILN_INTRA_SWITCH || s->intra == KILN_INTRA_ALL) { /* "all": below as well */
      for (int i = 0; i < s->nswitches; i++) {
        const kilnSketchSwitch* sw = &s->switches[i];
        snprintf(what, sizeof what, "switch %d", i);
        for (int x = 0; x < sw->ngpus; x++)
          for (int y = 0; y < sw->ngpus; y++)
            if (x != y && (r = keep(s, t, kept, base + sw->gpus[x], base + sw->gpus[y], what))) goto out_free;
      }
    } else if (s->intra == KILN_INTRA_LINKS) {
      for (int i = 0; i < s->nlinks; i++)
        if ((r = keep(s, t, kept, base + s->links[i].src, base + s->links[i].dst, "intranode link")))
          goto out_free;
    }
  }
  if (s->intra == KILN_INTRA_ALL)
    for (int i = 0; i < t->nlinks; i++)
      if (!t->links[i].internode) kept[(size_t)t->links[i].src * n + t->links[i].dst] = 1;
  /* ...plus the inter-node connections. */
  if (s->inter == KILN_INTER_DIRECT) {
    for (int i = 0; i < t->nlinks; i++)
      if (t->links[i].internode) kept[(size_t)t->links[i].src * n + t->links[i].dst] = 1;
  } else if (s->inter == KILN_INTER_RELAY) {
    for (int i = 0; i < s->nconns; i++) {
      const kilnSketchConn* c = &s->conns[i];
      for (int j = 0; j < c->ndst; j++) {
        snprintf(what, sizeof what, "relay conn %d->%d", c->src, c->dst[j]);
        for (int n1 = 0; n1 < N; n1++)
          for (int n2 = 0; n2 < N; n2++)
            if (n1 != n2 && (r = keep(s, t, kept, n1 * g + c->src, n2 * g + c->dst[j], what))) goto out_free;
      }
    }
  }
  if (n > 1) {
    int u = unreached(kept, n, false, queue, seen);
    if (u >= 0) {
      r = kilnSetError(
          KILN_ERR_INVALID_ARGUMENT,
          "sketch %s: logical topology on %s is not connected: rank %d cannot be reached from rank 0", nm,
          t->name, u);
      goto out_free;
    }
    u = unreached(kept, n, true, queue, seen);
    if (u >= 0) {
      r = kilnSetError(KILN_ERR_INVALID_ARGUMENT,
                       "sketch %s: logical topology on %s is not connected: rank %d cannot reach rank 0", nm,
                       t->name, u);
      goto out_free;
    }
  }
  /* Each symmetry must map every kept link onto a kept link. */
  for (int k = 0; k < s->nsymmetry; k++) {
    int o = s->symmetry[k].offset, gr = s->symmetry[k].group;
    if (gr < 1 || o < 0 || n % gr != 0) {
      r = kilnSetError(
          KILN_ERR_INVALID_ARGUMENT,
          "sketch %s: symmetry (offset %d, group %d): group must divide the %d ranks of %s, offset >= 0", nm,
          o, gr, n, t->name);
      goto out_free;
    }
    for (int a = 0; a < n; a++)
      for (int b = 0; b < n; b++) {
        if (!kept[(size_t)a * n + b]) continue;
        int ra = rot(a, o, gr), rb = rot(b, o, gr);
        if (!kept[(size_t)ra * n + rb]) {
          r = kilnSetError(
              KILN_ERR_INVALID_ARGUMENT,
              "sketch %s: symmetry offset %d (group %d) does not map the logical topology onto itself: "
              "link %d->%d is kept but its image %d->%d is not",
              nm, o, gr, a, b, ra, rb);
          goto out_free;
        }
      }
  }
out_free:
  free(queue);
  free(seen);
  free(kept);
  return r;
}
