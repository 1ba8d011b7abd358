/* Topology model: expansion of the node template into global ranks, XML reading and writing,
 * link lookup. The built-in topologies live in topology_builtin.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/topology.h"
#include "xml_util.h"

#define MAX_COST 1e12 /* largest α (µs) or β (µs/MB) accepted: rejects nonsense, keeps sums finite */
#define MAX_MULT 1024

static const char* const link_kind_names[] = {
#define KILN_X_NAME(e, n) n,
    KILN_LINK_KINDS(KILN_X_NAME)
#undef KILN_X_NAME
};

const char* kilnLinkKindName(kilnLinkKind_t k) {
  return (unsigned)k < KILN_NUM_LINK_KINDS ? link_kind_names[k] : "unknown";
}

bool kilnLinkKindParse(const char* s, kilnLinkKind_t* out) {
  if (!s || !out) return false;
  for (int i = 0; i < KILN_NUM_LINK_KINDS; i++)
    if (!strcmp(s, link_kind_names[i])) {
      *out = (kilnLinkKind_t)i;
      return true;
    }
  return false;
}

static void free_switches(kilnSwitch* s, int n) {
  for (int i = 0; s && i < n; i++) free(s[i].gpus);
  free(s);
}

static void free_nics(kilnNic* s, int n) {
  for (int i = 0; s && i < n; i++) free(s[i].gpus);
  free(s);
}

static void free_expansion(kilnTopology* t) {
  free(t->links);
  free_switches(t->switches, t->nswitches);
  free_nics(t->nics, t->nnics);
  free(t->nic_of);
  free(t->link_index);
  t->links = NULL;
  t->switches = NULL;
  t->nics = NULL;
  t->nic_of = NULL;
  t->link_index = NULL;
  t->nlinks = t->nswitches = t->nnics = 0;
}

void kilnTopologyFree(kilnTopology* t) {
  if (!t) return;
  free_expansion(t);
  free(t->tlinks);
  free_switches(t->tswitches, t->ntswitches);
  free_nics(t->tnics, t->ntnics);
  free(t);
}

static bool cost_ok(double a, double b) {
  return isfinite(a) && isfinite(b) && a >= 0 && b >= 0 && a <= MAX_COST && b <= MAX_COST;
}

/* The element of the template a check failed on: its XML name ("link", "switch", "nic") and its
 * index among the template's elements of that kind; elem NULL for the topology as a whole. */
typedef struct templatePart {
  const char* elem;
  int index;
} templatePart;

/* Checks the template alone (ids in range, costs, no pair given twice); on failure *at names the
 * element at fault, so that the XML reader can give its line. */
static kilnResult_t validate_template(const kilnTopology* t, templatePart* at) {
  const char* nm = t->name;
  *at = (templatePart){NULL, 0};
  int g = t->gpus_per_node;
  if (t->nodes < 1 || g < 1)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT,
                        "topology %s: nodes (%d) and gpus_per_node (%d) must be >= 1", nm, t->nodes, g);
  if ((long long)t->nodes * g > KILN_MAX_RANKS)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT,
                        "topology %s: %d nodes x %d GPUs = %lld ranks exceeds KILN_MAX_RANKS (%d)", nm,
                        t->nodes, g, (long long)t->nodes * g, KILN_MAX_RANKS);
  kilnResult_t r = KILN_SUCCESS;
  /* who[a*g+b]: 0 free, 1 + link index, or -(1 + switch index) */
  int* who = calloc((size_t)g * g, sizeof *who);
  if (!who) return kilnSetError(KILN_ERR_NO_MEMORY, "topology %s: out of memory", nm);
  for (int i = 0; i < t->ntlinks; i++) {
    const kilnLink* l = &t->tlinks[i];
    *at = (templatePart){"link", i};
    if (l->src < 0 || l->src >= g || l->dst < 0 || l->dst >= g) {
      r = kilnSetError(KILN_ERR_INVALID_ARGUMENT, "topology %s: link %d (%d->%d) names a GPU outside 0..%d",
                       nm, i, l->src, l->dst, g - 1);
      goto out_free;
    }
    if (l->src == l->dst) {
      r = kilnSetError(KILN_ERR_INVALID_ARGUMENT, "topology %s: link %d is a self link (%d->%d)", nm, i,
                       l->src, l->dst);
      goto out_free;
    }
    if (!cost_ok(l->alpha_us, l->beta_us_per_mb) || l->mult < 1 || l->mult > MAX_MULT ||
        (unsigned)l->kind >= KILN_NUM_LINK_KINDS) {
      r = kilnSetError(
          KILN_ERR_INVALID_ARGUMENT,
          "topology %s: link %d->%d needs 0 <= alpha, beta <= %g, 1 <= mult <= %d and a known kind", nm,
          l->src, l->dst, MAX_COST, MAX_MULT);
      goto out_free;
    }
    int* w = &who[l->src * g + l->dst];
    if (*w) {
      r = kilnSetError(KILN_ERR_INVALID_ARGUMENT, "topology %s: link %d->%d is given twice", nm, l->src,
                       l->dst);
      goto out_free;
    }
    *w = 1 + i;
  }
  for (int s = 0; s < t->ntswitches; s++) {
    const kilnSwitch* sw = &t->tswitches[s];
    *at = (templatePart){"switch", s};
    if (sw->ngpus < 2 || !sw->gpus) {
      r = kilnSetError(KILN_ERR_INVALID_ARGUMENT, "topology %s: switch %s joins fewer than 2 GPUs", nm,
                       sw->name);
      goto out_free;
    }
    if (!cost_ok(sw->alpha_us, sw->beta_us_per_mb) || (unsigned)sw->kind >= KILN_NUM_LINK_KINDS) {
      r = kilnSetError(KILN_ERR_INVALID_ARGUMENT,
                       "topology %s: switch %s needs 0 <= alpha, beta <= %g and a known kind", nm, sw->name,
                       MAX_COST);
      goto out_free;
    }
    for (int i = 0; i < sw->ngpus; i++) {
      int a = sw->gpus[i];
      if (a < 0 || a >= g) {
        r = kilnSetError(KILN_ERR_INVALID_ARGUMENT, "topology %s: switch %s names GPU %d outside 0..%d", nm,
                         sw->name, a, g - 1);
        goto out_free;
      }
      for (int j = 0; j < i; j++)
        if (sw->gpus[j] == a) {
          r = kilnSetError(KILN_ERR_INVALID_ARGUMENT, "topology %s: switch %s lists GPU %d twice", nm,
                           sw->name, a);
          goto out_free;
        }
      for (int j = 0; j < i; j++) {
        int b = sw->gpus[j];
        if (who[a * g + b] || who[b * g + a]) {
          r = kilnSetError(
              KILN_ERR_INVALID_ARGUMENT,
              "topology %s: GPUs %d and %d are joined by switch %s and by another link or switch", nm, a, b,
              sw->name);
          goto out_free;
        }
      }
      for (int j = 0; j < i; j++) {
        who[a * g + sw->gpus[j]] = -(1 + s);
        who[sw->gpus[j] * g + a] = -(1 + s);
      }
    }
  }
  /* A NIC per GPU at most; reuse who's first row as "has a NIC" marks. */
  memset(who, 0, (size_t)g * sizeof *who);
  for (int k = 0; k < t->ntnics; k++) {
    const kilnNic* nic = &t->tnics[k];
    *at = (templatePart){"nic", k};
    if (nic->ngpus < 1 || !nic->gpus) {
      r = kilnSetError(KILN_ERR_INVALID_ARGUMENT, "topology %s: NIC %d serves no GPU", nm, nic->id);
      goto out_free;
    }
    for (int j = 0; j < k; j++)
      if (t->tnics[j].id == nic->id) {
        r = kilnSetError(KILN_ERR_INVALID_ARGUMENT, "topology %s: NIC id %d is given twice", nm, nic->id);
        goto out_free;
      }
    for (int i = 0; i < nic->ngpus; i++) {
      int a = nic->gpus[i];
      if (a < 0 || a >= g) {
        r = kilnSetError(KILN_ERR_INVALID_ARGUMENT, "topology %s: NIC %d names GPU %d outside 0..%d", nm,
                         nic->id, a, g - 1);
        goto out_free;
      }
      if (who[a]) {
        r = kilnSetError(KILN_ERR_INVALID_ARGUMENT, "topology %s: GPU %d is given to more than one NIC", nm,
                         a);
        goto out_free;
      }
      who[a] = 1;
    }
  }
  *at = (templatePart){NULL, 0};
  if (t->has_internode && (!cost_ok(t->inter_alpha_us, t->inter_beta_us_per_mb) ||
                           (unsigned)t->inter_kind >= KILN_NUM_LINK_KINDS)) {
    r = kilnSetError(KILN_ERR_INVALID_ARGUMENT,
                     "topology %s: internode needs 0 <= alpha, beta <= %g and a known kind", nm, MAX_COST);
    goto out_free;
  }
out_free:
  free(who);
  return r;
}

static int* dup_ints(const int* a, int n) {
  int* d = malloc((size_t)(n > 0 ? n : 1) * sizeof *d);
  if (d && n > 0) memcpy(d, a, (size_t)n * sizeof *d);
  return d;
}

/* Expands a template validate_template passed into global ranks (replacing any expansion). */
static kilnResult_t expand_template(kilnTopology* t) {
  free_expansion(t);
  int g = t->gpus_per_node, N = t->nodes;
  int n = N * g;
  t->nranks = n;

  /* Count links first so that one allocation holds them. */
  long long nl = (long long)t->ntlinks * N;
  for (int s = 0; s < t->ntswitches; s++)
    nl += (long long)t->tswitches[s].ngpus * (t->tswitches[s].ngpus - 1) * N;
  int with_nic = 0;
  for (int k = 0; k < t->ntnics; k++) with_nic += t->tnics[k].ngpus;
  if (t->has_internode && N > 1) nl += (long long)with_nic * N * with_nic * (N - 1);

  t->links = malloc((size_t)(nl > 0 ? nl : 1) * sizeof *t->links);
  t->switches = calloc((size_t)(t->ntswitches * N > 0 ? t->ntswitches * N : 1), sizeof *t->switches);
  t->nics = calloc((size_t)(t->ntnics * N > 0 ? t->ntnics * N : 1), sizeof *t->nics);
  t->nic_of = malloc((size_t)n * sizeof *t->nic_of);
  t->link_index = malloc((size_t)n * n * sizeof *t->link_index);
  if (!t->links || !t->switches || !t->nics || !t->nic_of || !t->link_index) goto out_nomem;
  for (int i = 0; i < n; i++) t->nic_of[i] = -1;
  for (long long i = 0; i < (long long)n * n; i++) t->link_index[i] = -1;

  for (int node = 0; node < N; node++) {
    int base = node * g;
    for (int i = 0; i < t->ntlinks; i++) {
      kilnLink l = t->tlinks[i];
      l.src += base;
      l.dst += base;
      l.switch_id = -1;
      l.internode = false;
      t->link_index[l.src * n + l.dst] = t->nlinks;
      t->links[t->nlinks++] = l;
    }
    for (int s = 0; s < t->ntswitches; s++) {
      const kilnSwitch* ts = &t->tswitches[s];
      kilnSwitch* es = &t->switches[t->nswitches];
      *es = *ts;
      es->gpus = dup_ints(ts->gpus, ts->ngpus);
      if (!es->gpus) goto out_nomem;
      t->nswitches++;
      for (int i = 0; i < es->ngpus; i++) es->gpus[i] += base;
      for (int i = 0; i < es->ngpus; i++)
        for (int j = 0; j < es->ngpus; j++) {
          if (i == j) continue;
          kilnLink l = {es->gpus[i], es->gpus[j], ts->alpha_us,     ts->beta_us_per_mb,
                        1,           ts->kind,    t->nswitches - 1, false};
          t->link_index[l.src * n + l.dst] = t->nlinks;
          t->links[t->nlinks++] = l;
        }
    }
    for (int k = 0; k < t->ntnics; k++) {
      const kilnNic* tn = &t->tnics[k];
      kilnNic* en = &t->nics[t->nnics];
      en->id = t->nnics;
      en->ngpus = tn->ngpus;
      en->gpus = dup_ints(tn->gpus, tn->ngpus);
      if (!en->gpus) goto out_nomem;
      t->nnics++;
      for (int i = 0; i < en->ngpus; i++) {
        en->gpus[i] += base;
        t->nic_of[en->gpus[i]] = t->nnics - 1;
      }
    }
  }
  if (t->has_internode && N > 1) {
    for (int a = 0; a < n; a++) {
      if (t->nic_of[a] < 0) continue;
      for (int b = 0; b < n; b++) {
        if (t->nic_of[b] < 0 || a / g == b / g) continue;
        kilnLink l = {a, b, t->inter_alpha_us, t->inter_beta_us_per_mb, 1, t->inter_kind, -1, true};
        t->link_index[a * n + b] = t->nlinks;
        t->links[t->nlinks++] = l;
      }
    }
  }
  return KILN_SUCCESS;
out_nomem:
  free_expansion(t);
  return kilnSetError(KILN_ERR_NO_MEMORY, "topology %s: out of memory expanding %d ranks", t->name, n);
}

kilnResult_t kilnTopologyExpand(kilnTopology* t) {
  if (!t) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnTopologyExpand: NULL topology");
  templatePart at;
  kilnResult_t r = validate_template(t, &at);
  return r != KILN_SUCCESS ? r : expand_template(t);
}

const kilnLink* kilnTopologyLink(const kilnTopology* t, int src, int dst) {
  if (!t || !t->link_index || src < 0 || dst < 0 || src >= t->nranks || dst >= t->nranks) return NULL;
  int i = t->link_index[src * t->nranks + dst];
  return i < 0 ? NULL : &t->links[i];
}

/* ---- XML ---- */

static void write_cost(kilnBuf* b, double alpha, double beta) {
  kilnBufPrintf(b, " alpha=\"");
  kilnBufDouble(b, alpha);
  kilnBufPrintf(b, "\" beta=\"");
  kilnBufDouble(b, beta);
  kilnBufPrintf(b, "\"");
}

kilnResult_t kilnTopologyWriteMemory(const kilnTopology* t, char** out) {
  if (!t || !out) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnTopologyWriteMemory: NULL argument");
  kilnBuf b = {0};
  kilnBufPrintf(&b, "<?xml version=\"1.0\"?>\n<topology name=\"");
  kilnBufEscaped(&b, t->name);
  kilnBufPrintf(&b, "\" nodes=\"%d\" gpus_per_node=\"%d\">\n  <node>\n", t->nodes, t->gpus_per_node);
  for (int i = 0; i < t->ntlinks; i++) {
    const kilnLink* l = &t->tlinks[i];
    kilnBufPrintf(&b, "    <link src=\"%d\" dst=\"%d\"", l->src, l->dst);
    write_cost(&b, l->alpha_us, l->beta_us_per_mb);
    kilnBufPrintf(&b, " mult=\"%d\" kind=\"%s\"/>\n", l->mult, kilnLinkKindName(l->kind));
  }
  for (int s = 0; s < t->ntswitches; s++) {
    const kilnSwitch* sw = &t->tswitches[s];
    kilnBufPrintf(&b, "    <switch name=\"");
    kilnBufEscaped(&b, sw->name);
    kilnBufPrintf(&b, "\" gpus=\"");
    kilnBufInts(&b, sw->gpus, sw->ngpus);
    kilnBufPrintf(&b, "\"");
    write_cost(&b, sw->alpha_us, sw->beta_us_per_mb);
    kilnBufPrintf(&b, " kind=\"%s\"/>\n", kilnLinkKindName(sw->kind));
  }
  for (int k = 0; k < t->ntnics; k++) {
    kilnBufPrintf(&b, "    <nic id=\"%d\" gpus=\"", t->tnics[k].id);
    kilnBufInts(&b, t->tnics[k].gpus, t->tnics[k].ngpus);
    kilnBufPrintf(&b, "\"/>\n");
  }
  kilnBufPrintf(&b, "  </node>\n");
  if (t->has_internode) {
    kilnBufPrintf(&b, "  <internode");
    write_cost(&b, t->inter_alpha_us, t->inter_beta_us_per_mb);
    kilnBufPrintf(&b, " kind=\"%s\"/>\n", kilnLinkKindName(t->inter_kind));
  }
  if (t->has_costs) {
    kilnSimParams c = t->costs;
    kilnBufPrintf(&b, "  <costs");
    for (int i = 0; i < kilnSimParamCount(); i++) {
      kilnBufPrintf(&b, "%s%s=\"", i % 4 == 3 ? "\n        " : " ", kilnSimParamName(i));
      kilnBufDouble(&b, *kilnSimParamRef(&c, i));
      kilnBufPrintf(&b, "\"");
    }
    kilnBufPrintf(&b, "/>\n");
  }
  kilnBufPrintf(&b, "</topology>\n");
  return kilnBufFinish(&b, out);
}

kilnResult_t kilnTopologyWriteFile(const kilnTopology* t, const char* path) {
  if (!t) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnTopologyWriteFile: NULL topology");
  char* s = NULL;
  kilnResult_t r = kilnTopologyWriteMemory(t, &s);
  return kilnWriteDocument(r, s, path);
}

static kilnResult_t get_kind(xmlNodePtr n, const char* f, kilnLinkKind_t dflt, kilnLinkKind_t* out) {
  char s[32];
  kilnResult_t r = kilnXmlGetString(n, f, "kind", false, kilnLinkKindName(dflt), s, sizeof s);
  if (r != KILN_SUCCESS) return r;
  if (!kilnLinkKindParse(s, out))
    return kilnXmlError(KILN_ERR_PARSE, f, n, "unknown link kind \"%s\" (known: nvlink pcie ib other)", s);
  return KILN_SUCCESS;
}

static kilnResult_t get_cost(xmlNodePtr n, const char* f, double* alpha, double* beta) {
  kilnResult_t r = kilnXmlGetDouble(n, f, "alpha", true, 0, MAX_COST, 0, alpha);
  if (r == KILN_SUCCESS) r = kilnXmlGetDouble(n, f, "beta", true, 0, MAX_COST, 0, beta);
  return r;
}

/* Reads the <node> template into t; ids are checked against g here so messages carry lines. */
static kilnResult_t read_node(xmlNodePtr node, const char* f, kilnTopology* t) {
  static const char* const kids[] = {"link", "switch", "nic", NULL};
  static const char *const linkAttrs[] = {"src", "dst", "alpha", "beta", "mult", "kind", NULL},
                           *const switchAttrs[] = {"name", "gpus", "alpha", "beta", "kind", NULL},
                           *const nicAttrs[] = {"id", "gpus", NULL};
  kilnResult_t r = kilnXmlCheckElement(node, f, kids, NULL);
  if (r != KILN_SUCCESS) return r;
  int g = t->gpus_per_node;
  int nl = kilnXmlCountChildren(node, "link"), ns = kilnXmlCountChildren(node, "switch"),
      nn = kilnXmlCountChildren(node, "nic");
  t->tlinks = calloc((size_t)(nl ? nl : 1), sizeof *t->tlinks);
  t->tswitches = calloc((size_t)(ns ? ns : 1), sizeof *t->tswitches);
  t->tnics = calloc((size_t)(nn ? nn : 1), sizeof *t->tnics);
  if (!t->tlinks || !t->tswitches || !t->tnics)
    return kilnSetError(KILN_ERR_NO_MEMORY, "%s: out of memory", f);
  for (xmlNodePtr c = kilnXmlNextElement(node->children); c; c = kilnXmlNextElement(c->next)) {
    if (!xmlStrcmp(c->name, (const xmlChar*)"link")) {
      kilnLink* l = &t->tlinks[t->ntlinks];
      l->switch_id = -1;
      if ((r = kilnXmlCheckAttrs(c, f, linkAttrs)) ||
          (r = kilnXmlGetInt32(c, f, "src", true, 0, g - 1, 0, &l->src)) ||
          (r = kilnXmlGetInt32(c, f, "dst", true, 0, g - 1, 0, &l->dst)) ||
          (r = get_cost(c, f, &l->alpha_us, &l->beta_us_per_mb)) ||
          (r = kilnXmlGetInt32(c, f, "mult", false, 1, MAX_MULT, 1, &l->mult)) ||
          (r = get_kind(c, f, KILN_LINK_NVLINK, &l->kind)))
        return r;
      if (l->src == l->dst) return kilnXmlError(KILN_ERR_PARSE, f, c, "self link %d->%d", l->src, l->dst);
      for (int i = 0; i < t->ntlinks; i++)
        if (t->tlinks[i].src == l->src && t->tlinks[i].dst == l->dst)
          return kilnXmlError(KILN_ERR_PARSE, f, c, "link %d->%d is given twice", l->src, l->dst);
      t->ntlinks++;
    } else if (!xmlStrcmp(c->name, (const xmlChar*)"switch")) {
      kilnSwitch* s = &t->tswitches[t->ntswitches];
      if ((r = kilnXmlCheckAttrs(c, f, switchAttrs)) ||
          (r = kilnXmlGetString(c, f, "name", false, "switch", s->name, sizeof s->name)) ||
          (r = kilnXmlGetIntList(c, f, "gpus", 0, g - 1, g, &s->gpus, &s->ngpus)))
        return r;
      t->ntswitches++; /* owns s->gpus from here */
      if ((r = get_cost(c, f, &s->alpha_us, &s->beta_us_per_mb)) ||
          (r = get_kind(c, f, KILN_LINK_NVLINK, &s->kind)))
        return r;
      if (s->ngpus < 2)
        return kilnXmlError(KILN_ERR_PARSE, f, c, "switch %s joins fewer than 2 GPUs", s->name);
    } else {
      kilnNic* k = &t->tnics[t->ntnics];
      if ((r = kilnXmlCheckAttrs(c, f, nicAttrs)) ||
          (r = kilnXmlGetInt32(c, f, "id", true, 0, KILN_MAX_RANKS, 0, &k->id)) ||
          (r = kilnXmlGetIntList(c, f, "gpus", 0, g - 1, g, &k->gpus, &k->ngpus)))
        return r;
      t->ntnics++;
      if (k->ngpus < 1) return kilnXmlError(KILN_ERR_PARSE, f, c, "NIC %d serves no GPU", k->id);
    }
  }
  return KILN_SUCCESS;
}

/* Reads <costs>: every attribute a knob of the simulator's table (kilnSimParamName), the others
 * KILN_SIM_PARAMS_INIT's. */
static kilnResult_t read_costs(xmlNodePtr n, const char* f, kilnTopology* t) {
  static const char* const none[] = {NULL};
  kilnResult_t r = kilnXmlCheckChildren(n, f, none);
  if (r != KILN_SUCCESS) return r;
  t->costs = (kilnSimParams)KILN_SIM_PARAMS_INIT;
  t->has_costs = true;
  for (xmlAttrPtr a = n->properties; a; a = a->next) {
    const char* name = (const char*)a->name;
    const int k = kilnSimParamFind(name);
    if (k < 0)
      return kilnXmlError(KILN_ERR_PARSE, f, n,
                          "<costs> has no knob \"%s\" (kilnSimParamName: launch, step, sig, "
                          "wait, local_beta, tb_beta, put.PROTO.alpha, send.PROTO.efficiency, ...)",
                          name);
    if ((r = kilnXmlGetDouble(n, f, name, true, 0, MAX_COST, 0, kilnSimParamRef(&t->costs, k)))) return r;
  }
  if (kilnSimParamsCheck(&t->costs) != KILN_SUCCESS) {
    kilnPrefixError("%s:%ld: <costs>: ", f, kilnXmlLine(n));
    return KILN_ERR_PARSE;
  }
  return KILN_SUCCESS;
}

/* The index-th child element of parent named name; NULL if it has fewer. */
static xmlNodePtr nth_child(xmlNodePtr parent, const char* name, int index) {
  for (xmlNodePtr c = kilnXmlNextElement(parent->children); c; c = kilnXmlNextElement(c->next))
    if (!xmlStrcmp(c->name, (const xmlChar*)name) && index-- == 0) return c;
  return NULL;
}

/* A kilnXmlDocReader: out is a kilnTopology**. */
static kilnResult_t read_doc(xmlDocPtr doc, const char* f, void* outp) {
  kilnTopology** out = (kilnTopology**)outp;
  xmlNodePtr root;
  kilnResult_t r = kilnXmlRoot(doc, f, "topology", &root);
  if (r != KILN_SUCCESS) return r;
  static const char *const kids[] = {"node", "internode", "costs", NULL},
                           *const rootAttrs[] = {"name", "nodes", "gpus_per_node", NULL},
                           *const interAttrs[] = {"alpha", "beta", "kind", NULL};
  if ((r = kilnXmlCheckElement(root, f, kids, rootAttrs))) return r;
  kilnTopology* t = calloc(1, sizeof *t);
  if (!t) return kilnSetError(KILN_ERR_NO_MEMORY, "%s: out of memory", f);
  if ((r = kilnXmlGetString(root, f, "name", true, NULL, t->name, sizeof t->name)) ||
      (r = kilnXmlGetInt32(root, f, "nodes", false, 1, KILN_MAX_RANKS, 1, &t->nodes)) ||
      (r = kilnXmlGetInt32(root, f, "gpus_per_node", true, 1, KILN_MAX_RANKS, 1, &t->gpus_per_node)))
    goto out_free;
  if ((long long)t->nodes * t->gpus_per_node > KILN_MAX_RANKS) {
    r = kilnXmlError(KILN_ERR_PARSE, f, root, "%d nodes x %d GPUs exceeds KILN_MAX_RANKS (%d)", t->nodes,
                     t->gpus_per_node, KILN_MAX_RANKS);
    goto out_free;
  }
  int nnode = kilnXmlCountChildren(root, "node"), ninter = kilnXmlCountChildren(root, "internode");
  if (nnode != 1 || ninter > 1 || kilnXmlCountChildren(root, "costs") > 1) {
    r = kilnXmlError(KILN_ERR_PARSE, f, root,
                     "<topology> needs exactly one <node>, at most one <internode> and at most one <costs>");
    goto out_free;
  }
  xmlNodePtr node = NULL;
  for (xmlNodePtr c = kilnXmlNextElement(root->children); c; c = kilnXmlNextElement(c->next)) {
    if (!xmlStrcmp(c->name, (const xmlChar*)"node")) {
      node = c;
      if ((r = read_node(c, f, t))) goto out_free;
    } else if (!xmlStrcmp(c->name, (const xmlChar*)"costs")) {
      if ((r = read_costs(c, f, t))) goto out_free;
    } else {
      t->has_internode = true;
      if ((r = kilnXmlCheckElement(c, f, NULL, interAttrs)) ||
          (r = get_cost(c, f, &t->inter_alpha_us, &t->inter_beta_us_per_mb)) ||
          (r = get_kind(c, f, KILN_LINK_IB, &t->inter_kind)))
        goto out_free;
    }
  }
  /* The checks that need the whole template (a GPU pair joined twice, a NIC id or a GPU given
   * twice) name the element at fault: the i-th <link>, <switch> or <nic> is template entry i. */
  templatePart at;
  if ((r = validate_template(t, &at))) {
    if (r == KILN_ERR_INVALID_ARGUMENT) r = KILN_ERR_PARSE; /* bad content of the file */
    xmlNodePtr bad = at.elem ? nth_child(node, at.elem, at.index) : NULL;
    kilnPrefixError("%s:%ld: ", f, kilnXmlLine(bad ? bad : root));
    goto out_free;
  }
  if ((r = expand_template(t))) goto out_free;
  *out = t;
  return KILN_SUCCESS;
out_free:
  kilnTopologyFree(t);
  return r;
}

kilnResult_t kilnTopologyReadMemory(const char* xml, size_t len, const char* name, kilnTopology** out) {
  if (!out) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnTopologyReadMemory: NULL out");
  *out = NULL;
  return kilnXmlReadMemory(xml, len, name, read_doc, out);
}

kilnResult_t kilnTopologyReadFile(const char* path, kilnTopology** out) {
  if (!out) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnTopologyReadFile: NULL out");
  *out = NULL;
  return kilnXmlReadFile(path, read_doc, out);
}
