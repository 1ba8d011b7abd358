/* TACCL's input files (microsoft/taccl): its JSON topology profiles (taccl solve --topology-file)
 * and communication sketches (--sketch-file), read into kiln's topology and sketch. The mapping,
 * and what kiln does not take, is documented in docs/taccl.md; in short:
 *
 * Topology: name, gpus_per_node, alpha (every intra-node link's α), node_betas_list and
 * node_invbws_list (one β: every GPU pair through one switch, as TACCL's DGX2 and HubAndSpoke
 * give; two: the NDv2 hybrid cube-mesh, its double links at the first β), or links, betas and
 * invbws (TACCL's custom: g x g matrices indexed [dst][src], links counting parallel lanes, β per
 * lane); nics_per_node with remote_alpha, remote_beta and remote_invbw (inter-node links between
 * every pair of GPUs with a NIC). TACCL's costs are in the units of its ILP: kiln reads them as µs
 * and µs per MB unless kiln_time_unit_us (µs per unit) and kiln_beta_bytes (the bytes a β is for)
 * say otherwise; kiln_nics lists the GPUs each NIC serves (default: consecutive GPUs,
 * gpus_per_node / nics_per_node each); kiln_kind names TACCL's topology argument (DGX2, NDv2,
 * HubAndSpoke, custom) where the file alone does not. invbws (α + β, rounded for TACCL's ILP) are
 * checked to be there, as TACCL checks, and not used.
 *
 * Sketch: nnodes (returned beside the sketch), intranode_sketch (strategy switch with switches and
 * switch_hyperedge_strategy, or none), internode_sketch (strategy relay; internode_conn as a map,
 * "fully-connected" or "direct-map"; gpus_to_sender_rev_map where it has the form of kiln's
 * chunk_to_relay; the paper's beta_split and chunk_to_relay_map; enforce_ordering, accepted and
 * not used), symmetry_offsets, hyperparameters (input_chunkup, and the paper's input_size).
 *
 * Errors name the file, line and column, the key and what is wrong; unknown keys are refused, as
 * kiln's XML readers refuse unknown attributes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "kiln/synth.h"

#define MAX_COST 1e12
#define MAX_LANES 1024
#define MAX_CHUNKUP 1024
#define MAX_SPLIT 1024

/* ---- value helpers: each returns KILN_SUCCESS or a KILN_ERR_PARSE naming file, place and key ---- */

static kilnResult_t check_keys(const char* f, const jsonValue* obj, const char* what,
                               const char* const* known) {
  if (obj->type != JSON_OBJECT)
    return jsonError(KILN_ERR_PARSE, f, obj, "%s must be an object, not %s", what, jsonTypeName(obj->type));
  for (int i = 0; i < obj->n; i++) {
    bool ok = false;
    for (int k = 0; known[k] && !ok; k++) ok = !strcmp(obj->keys[i], known[k]);
    if (!ok) {
      char list[512] = "";
      for (int k = 0; known[k]; k++) {
        strncat(list, k ? ", " : "", sizeof list - strlen(list) - 1);
        strncat(list, known[k], sizeof list - strlen(list) - 1);
      }
      return jsonError(KILN_ERR_PARSE, f, &obj->items[i], "%s: unknown key \"%s\" (known: %s)", what,
                       obj->keys[i], list);
    }
  }
  return KILN_SUCCESS;
}

static kilnResult_t need(const char* f, const jsonValue* obj, const char* key, const char* what,
                         const jsonValue** out) {
  *out = jsonGet(obj, key);
  if (!*out) return jsonError(KILN_ERR_PARSE, f, obj, "%s: the key \"%s\" is missing", what, key);
  return KILN_SUCCESS;
}

static kilnResult_t get_number(const char* f, const jsonValue* v, const char* what, double lo, double hi,
                               double* out) {
  if (v->type != JSON_NUMBER)
    return jsonError(KILN_ERR_PARSE, f, v, "%s must be a number, not %s", what, jsonTypeName(v->type));
  if (!(v->num >= lo && v->num <= hi))
    return jsonError(KILN_ERR_PARSE, f, v, "%s is %g; it must be in %g..%g", what, v->num, lo, hi);
  *out = v->num;
  return KILN_SUCCESS;
}

static kilnResult_t get_int(const char* f, const jsonValue* v, const char* what, int lo, int hi, int* out) {
  if (v->type != JSON_NUMBER || !v->integral)
    return jsonError(KILN_ERR_PARSE, f, v, "%s must be an integer, not %s", what,
                     v->type == JSON_NUMBER ? "a fraction" : jsonTypeName(v->type));
  if (!(v->num >= lo && v->num <= hi))
    return jsonError(KILN_ERR_PARSE, f, v, "%s is %.0f; it must be in %d..%d", what, v->num, lo, hi);
  *out = (int)v->num;
  return KILN_SUCCESS;
}

/* A GPU id: an integer, or TACCL's string keys ("3"). */
static kilnResult_t get_gpu(const char* f, const jsonValue* v, const char* key, const char* what, int g,
                            int* out) {
  if (key) {
    char* end;
    long x = strtol(key, &end, 10);
    if (!*key || *end || x < 0 || x >= g)
      return jsonError(KILN_ERR_PARSE, f, v, "%s: the key \"%s\" is not a GPU of a node (0..%d)", what, key,
                       g - 1);
    *out = (int)x;
    return KILN_SUCCESS;
  }
  char w[96];
  snprintf(w, sizeof w, "%s (a GPU of a node)", what);
  return get_int(f, v, w, 0, g - 1, out);
}

static kilnResult_t get_array(const char* f, const jsonValue* v, const char* what, int n, int min) {
  if (v->type != JSON_ARRAY)
    return jsonError(KILN_ERR_PARSE, f, v, "%s must be an array, not %s", what, jsonTypeName(v->type));
  if (n >= 0 && v->n != n)
    return jsonError(KILN_ERR_PARSE, f, v, "%s has %d entries; it needs %d", what, v->n, n);
  if (v->n < min)
    return jsonError(KILN_ERR_PARSE, f, v, "%s has %d entries; it needs at least %d", what, v->n, min);
  return KILN_SUCCESS;
}

/* A g x g matrix of numbers in lo..hi, indexed [dst][src] as TACCL's are; out[src * g + dst]. */
static kilnResult_t get_matrix(const char* f, const jsonValue* v, const char* what, int g, double lo,
                               double hi, bool integral, double* out) {
  kilnResult_t r = get_array(f, v, what, g, 0);
  for (int d = 0; d < g && r == KILN_SUCCESS; d++) {
    char w[96];
    snprintf(w, sizeof w, "%s[%d]", what, d);
    r = get_array(f, &v->items[d], w, g, 0);
    for (int s = 0; s < g && r == KILN_SUCCESS; s++) {
      const jsonValue* e = &v->items[d].items[s];
      snprintf(w, sizeof w, "%s[%d][%d] (from GPU %d to GPU %d)", what, d, s, s, d);
      if (integral) {
        int x;
        r = get_int(f, e, w, (int)lo, (int)hi, &x);
        out[s * g + d] = x;
      } else {
        r = get_number(f, e, w, lo, hi, &out[s * g + d]);
      }
      if (r == KILN_SUCCESS && s == d && out[s * g + d] != 0)
        r = jsonError(KILN_ERR_PARSE, f, e, "%s: a GPU has no link to itself; the diagonal must be 0", w);
    }
  }
  return r;
}

/* A size: bytes as a number, or a string such as "1M", "64KB". */
static kilnResult_t get_size(const char* f, const jsonValue* v, const char* what, uint64_t* out) {
  if (v->type == JSON_NUMBER && v->integral && v->num >= 1 && v->num <= 1e18) {
    *out = (uint64_t)v->num;
    return KILN_SUCCESS;
  }
  if (v->type == JSON_STRING && kilnParseSize(v->str, out) && *out > 0) return KILN_SUCCESS;
  return jsonError(KILN_ERR_PARSE, f, v,
                   "%s must be a positive size: bytes, or a string such as \"1M\" or \"64KB\"", what);
}

/* ---- topology ---- */

/* The NDv2 (DGX-1) hybrid cube-mesh as TACCL's NDv2 topology connects it: the GPU pairs joined by
 * NVLink, class 0 at the first β of node_betas_list (the pairs of two NVLinks), class 1 at the
 * second. */
static const int ndv2_pairs[][3] = {
    {0, 1, 0}, {0, 2, 1}, {0, 3, 1}, {0, 4, 0}, {1, 2, 1}, {1, 3, 0}, {1, 5, 1}, {2, 3, 0},
    {2, 6, 0}, {3, 7, 1}, {4, 5, 0}, {4, 6, 1}, {4, 7, 1}, {5, 6, 1}, {5, 7, 0}, {6, 7, 0},
};

typedef enum { KIND_SWITCH, KIND_NDV2, KIND_CUSTOM } topoKind;

static kilnResult_t add_link(kilnTopology* t, int cap, int src, int dst, double a, double b, int mult) {
  if (t->ntlinks >= cap) return kilnSetError(KILN_ERR_INTERNAL, "TACCL topology: too many links");
  t->tlinks[t->ntlinks++] = (kilnLink){src, dst, a, b, mult, KILN_LINK_NVLINK, -1, false};
  return KILN_SUCCESS;
}

static kilnResult_t read_topology(const jsonValue* root, const char* f, kilnTopology** out) {
  static const char* const known[] = {"name",
                                      "gpus_per_node",
                                      "nics_per_node",
                                      "alpha",
                                      "node_betas_list",
                                      "node_invbws_list",
                                      "links",
                                      "betas",
                                      "invbws",
                                      "remote_alpha",
                                      "remote_beta",
                                      "remote_invbw",
                                      "kiln_kind",
                                      "kiln_nics",
                                      "kiln_beta_bytes",
                                      "kiln_time_unit_us",
                                      NULL};
  kilnResult_t r = check_keys(f, root, "the topology", known);
  if (r != KILN_SUCCESS) return r;
  kilnTopology* t = calloc(1, sizeof *t);
  double* mat = NULL;
  double* lanes = NULL;
  if (!t) return kilnSetError(KILN_ERR_NO_MEMORY, "%s: out of memory", f);
  t->nodes = 1;
  const jsonValue *v, *name;
  if ((r = need(f, root, "name", "the topology", &name))) goto out_fail;
  bool printable = name->type == JSON_STRING;
  for (const char* c = printable ? name->str : ""; *c && printable; c++)
    printable = (unsigned char)*c >= 0x20 && *c != 0x7f;
  if (!printable || !*name->str || strlen(name->str) >= KILN_NAME_MAX) {
    r = jsonError(KILN_ERR_PARSE, f, name,
                  "name must be a string of 1..%d bytes of text (no control characters)", KILN_NAME_MAX - 1);
    goto out_fail;
  }
  snprintf(t->name, sizeof t->name, "%s", name->str);
  int g;
  if ((r = need(f, root, "gpus_per_node", "the topology", &v)) ||
      (r = get_int(f, v, "gpus_per_node", 1, KILN_MAX_RANKS, &g)))
    goto out_fail;
  t->gpus_per_node = g;
  double alpha, unit = 1, bbytes = 1e6;
  if ((r = need(f, root, "alpha", "the topology", &v)) ||
      (r = get_number(f, v, "alpha", 0, MAX_COST, &alpha)))
    goto out_fail;
  if ((v = jsonGet(root, "kiln_time_unit_us")) &&
      (r = get_number(f, v, "kiln_time_unit_us", 1e-9, 1e9, &unit)))
    goto out_fail;
  if ((v = jsonGet(root, "kiln_beta_bytes"))) {
    uint64_t b;
    if ((r = get_size(f, v, "kiln_beta_bytes", &b))) goto out_fail;
    bbytes = (double)b;
  }
  /* a cost of the file in kiln's units: α in µs, β in µs per MB */
  const double aus = unit, bus = unit * 1e6 / bbytes;
  /* which kind of node */
  topoKind kind;
  const jsonValue* links = jsonGet(root, "links");
  const jsonValue* nbl = jsonGet(root, "node_betas_list");
  const jsonValue* kk = jsonGet(root, "kiln_kind");
  if (kk) {
    if (kk->type != JSON_STRING || (strcmp(kk->str, "DGX2") && strcmp(kk->str, "NDv2") &&
                                    strcmp(kk->str, "HubAndSpoke") && strcmp(kk->str, "custom"))) {
      r = jsonError(KILN_ERR_PARSE, f, kk,
                    "kiln_kind must be one of \"DGX2\", \"NDv2\", \"HubAndSpoke\", \"custom\"");
      goto out_fail;
    }
    kind = !strcmp(kk->str, "custom") ? KIND_CUSTOM : !strcmp(kk->str, "NDv2") ? KIND_NDV2 : KIND_SWITCH;
    if (!strcmp(kk->str, "DGX2") && g != 16) {
      r = jsonError(KILN_ERR_PARSE, f, kk, "kiln_kind DGX2 has 16 GPUs a node, but gpus_per_node is %d", g);
      goto out_fail;
    }
  } else if (links) {
    kind = KIND_CUSTOM;
  } else if (nbl && nbl->type == JSON_ARRAY && nbl->n == 2) {
    kind = KIND_NDV2;
  } else {
    kind = KIND_SWITCH;
  }
  if (kind == KIND_CUSTOM) {
    static const char* const mine[] = {"links", "betas", "invbws"};
    for (int i = 0; i < 3; i++)
      if ((r = need(f, root, mine[i], "a custom topology (links, betas, invbws)", &v))) goto out_fail;
    if ((v = jsonGet(root, "node_betas_list")) || (v = jsonGet(root, "node_invbws_list"))) {
      r = jsonError(KILN_ERR_PARSE, f, v,
                    "a custom topology gives links, betas and invbws, not node_betas_list or "
                    "node_invbws_list");
      goto out_fail;
    }
    mat = malloc(sizeof(double) * (size_t)g * (size_t)g);
    lanes = malloc(sizeof(double) * (size_t)g * (size_t)g);
    t->tlinks = calloc((size_t)g * (size_t)g + 1, sizeof *t->tlinks);
    if (!mat || !lanes || !t->tlinks) {
      r = kilnSetError(KILN_ERR_NO_MEMORY, "%s: out of memory", f);
      goto out_fail;
    }
    /* invbws is checked (its shape and values), then left: kiln's costs come from alpha and betas */
    if ((r = get_matrix(f, links, "links", g, 0, MAX_LANES, true, lanes)) ||
        (r = get_matrix(f, jsonGet(root, "invbws"), "invbws", g, 0, MAX_COST, false, mat)) ||
        (r = get_matrix(f, jsonGet(root, "betas"), "betas", g, 0, MAX_COST, false, mat)))
      goto out_fail;
    for (int s = 0; s < g && r == KILN_SUCCESS; s++)
      for (int d = 0; d < g && r == KILN_SUCCESS; d++)
        if (lanes[s * g + d] > 0)
          r = add_link(t, g * g, s, d, alpha * aus, mat[s * g + d] * bus, (int)lanes[s * g + d]);
    if (r != KILN_SUCCESS) goto out_fail;
  } else {
    const jsonValue *betas, *invbws;
    if ((v = links ? links : jsonGet(root, "betas") ? jsonGet(root, "betas") : jsonGet(root, "invbws"))) {
      r = jsonError(KILN_ERR_PARSE, f, v,
                    "links, betas and invbws describe a custom topology (kiln_kind \"custom\"); "
                    "this one takes node_betas_list and node_invbws_list");
      goto out_fail;
    }
    if ((r = need(f, root, "node_betas_list", "the topology", &betas)) ||
        (r = need(f, root, "node_invbws_list", "the topology", &invbws)))
      goto out_fail;
    const int nb = kind == KIND_NDV2 ? 2 : 1;
    if ((r = get_array(f, betas,
                       kind == KIND_NDV2 ? "node_betas_list (NDv2: the double and the single NVLinks)"
                                         : "node_betas_list (one switch: one beta)",
                       nb, 0)) ||
        (r = get_array(f, invbws, "node_invbws_list (one per beta)", nb, 0)))
      goto out_fail;
    double b[2], ib;
    for (int i = 0; i < nb; i++) {
      char w[48];
      snprintf(w, sizeof w, "node_betas_list[%d]", i);
      if ((r = get_number(f, &betas->items[i], w, 0, MAX_COST, &b[i]))) goto out_fail;
      snprintf(w, sizeof w, "node_invbws_list[%d]", i);
      if ((r = get_number(f, &invbws->items[i], w, 0, MAX_COST, &ib))) goto out_fail;
    }
    if (kind == KIND_NDV2) {
      if (g != 8) {
        r = jsonError(KILN_ERR_PARSE, f, betas,
                      "two betas describe TACCL's NDv2 (8 GPUs a node), but gpus_per_node is %d", g);
        goto out_fail;
      }
      const int np = (int)(sizeof ndv2_pairs / sizeof ndv2_pairs[0]);
      t->tlinks = calloc(2 * (size_t)np, sizeof *t->tlinks);
      if (!t->tlinks) {
        r = kilnSetError(KILN_ERR_NO_MEMORY, "%s: out of memory", f);
        goto out_fail;
      }
      for (int i = 0; i < np && r == KILN_SUCCESS; i++) {
        const double beta = b[ndv2_pairs[i][2]] * bus;
        r = add_link(t, 2 * np, ndv2_pairs[i][0], ndv2_pairs[i][1], alpha * aus, beta, 1);
        if (r == KILN_SUCCESS)
          r = add_link(t, 2 * np, ndv2_pairs[i][1], ndv2_pairs[i][0], alpha * aus, beta, 1);
      }
      if (r != KILN_SUCCESS) goto out_fail;
    } else if (g > 1) { /* every pair through one switch */
      t->tswitches = calloc(1, sizeof *t->tswitches);
      if (!t->tswitches || !(t->tswitches[0].gpus = malloc(sizeof(int) * (size_t)g))) {
        r = kilnSetError(KILN_ERR_NO_MEMORY, "%s: out of memory", f);
        goto out_fail;
      }
      t->ntswitches = 1;
      kilnSwitch* sw = &t->tswitches[0];
      snprintf(sw->name, sizeof sw->name, "switch");
      sw->ngpus = g;
      for (int i = 0; i < g; i++) sw->gpus[i] = i;
      sw->alpha_us = alpha * aus;
      sw->beta_us_per_mb = b[0] * bus;
      sw->kind = KILN_LINK_NVLINK;
    }
  }
  /* NICs and the links between nodes */
  const jsonValue* nics = jsonGet(root, "nics_per_node");
  const jsonValue* knics = jsonGet(root, "kiln_nics");
  if (!nics) {
    static const char* const remote[] = {"remote_alpha", "remote_beta", "remote_invbw", "kiln_nics", NULL};
    for (int i = 0; remote[i]; i++)
      if ((v = jsonGet(root, remote[i]))) {
        r = jsonError(KILN_ERR_PARSE, f, v, "%s describes the links between nodes, which need nics_per_node",
                      remote[i]);
        goto out_fail;
      }
  } else {
    int nn;
    double ra, rb, rib;
    if ((r = get_int(f, nics, "nics_per_node", 1, g, &nn))) goto out_fail;
    const jsonValue *va, *vb, *vi;
    if ((r = need(f, root, "remote_alpha", "a topology with nics_per_node", &va)) ||
        (r = need(f, root, "remote_beta", "a topology with nics_per_node", &vb)) ||
        (r = need(f, root, "remote_invbw", "a topology with nics_per_node", &vi)) ||
        (r = get_number(f, va, "remote_alpha", 0, MAX_COST, &ra)) ||
        (r = get_number(f, vb, "remote_beta", 0, MAX_COST, &rb)) ||
        (r = get_number(f, vi, "remote_invbw", 0, MAX_COST, &rib)))
      goto out_fail;
    t->tnics = calloc((size_t)nn, sizeof *t->tnics);
    if (!t->tnics) {
      r = kilnSetError(KILN_ERR_NO_MEMORY, "%s: out of memory", f);
      goto out_fail;
    }
    if (knics) {
      if ((r = get_array(f, knics, "kiln_nics (the GPUs of each NIC)", nn, 0))) goto out_fail;
      int* seen = calloc((size_t)g, sizeof(int));
      if (!seen) {
        r = kilnSetError(KILN_ERR_NO_MEMORY, "%s: out of memory", f);
        goto out_fail;
      }
      for (int k = 0; k < nn && r == KILN_SUCCESS; k++) {
        const jsonValue* l = &knics->items[k];
        char w[64];
        snprintf(w, sizeof w, "kiln_nics[%d]", k);
        if ((r = get_array(f, l, w, -1, 1))) break;
        kilnNic* nic = &t->tnics[t->ntnics++];
        nic->id = k;
        if (!(nic->gpus = malloc(sizeof(int) * (size_t)l->n))) {
          r = kilnSetError(KILN_ERR_NO_MEMORY, "%s: out of memory", f);
          break;
        }
        for (int i = 0; i < l->n && r == KILN_SUCCESS; i++) {
          int x;
          if ((r = get_gpu(f, &l->items[i], NULL, w, g, &x))) break;
          if (seen[x])
            r = jsonError(KILN_ERR_PARSE, f, &l->items[i], "%s: GPU %d is given to more than one NIC", w, x);
          seen[x] = 1;
          nic->gpus[nic->ngpus++] = x;
        }
      }
      free(seen);
      if (r != KILN_SUCCESS) goto out_fail;
    } else {
      if (g % nn != 0) {
        r = jsonError(KILN_ERR_PARSE, f, nics,
                      "nics_per_node %d does not divide the %d GPUs of a node: say which GPUs "
                      "each NIC serves with kiln_nics",
                      nn, g);
        goto out_fail;
      }
      for (int k = 0; k < nn; k++) {
        kilnNic* nic = &t->tnics[t->ntnics++];
        nic->id = k;
        if (!(nic->gpus = malloc(sizeof(int) * (size_t)(g / nn)))) {
          r = kilnSetError(KILN_ERR_NO_MEMORY, "%s: out of memory", f);
          goto out_fail;
        }
        for (int i = k * (g / nn); i < (k + 1) * (g / nn); i++) nic->gpus[nic->ngpus++] = i;
      }
    }
    t->has_internode = true;
    t->inter_alpha_us = ra * aus;
    t->inter_beta_us_per_mb = rb * bus;
    t->inter_kind = KILN_LINK_IB;
  }
  if ((r = kilnTopologyExpand(t)) != KILN_SUCCESS) {
    kilnPrefixError("%s: ", f);
    if (r == KILN_ERR_INVALID_ARGUMENT) r = KILN_ERR_PARSE;
    goto out_fail;
  }
  free(mat);
  free(lanes);
  *out = t;
  return KILN_SUCCESS;
out_fail:
  free(mat);
  free(lanes);
  kilnTopologyFree(t);
  return r;
}

kilnResult_t kilnTopologyReadTacclMemory(const char* json, size_t len, const char* name, kilnTopology** out) {
  if (!out || !json)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnTopologyReadTacclMemory: NULL argument");
  *out = NULL;
  jsonValue* root = NULL;
  kilnResult_t r = jsonParse(json, len, name ? name : "(topology)", &root);
  if (r == KILN_SUCCESS) r = read_topology(root, name ? name : "(topology)", out);
  jsonFree(root);
  return r;
}

kilnResult_t kilnTopologyReadTacclFile(const char* path, kilnTopology** out) {
  if (!out) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnTopologyReadTacclFile: NULL out");
  *out = NULL;
  jsonValue* root = NULL;
  kilnResult_t r = jsonReadFile(path, &root);
  if (r == KILN_SUCCESS) r = read_topology(root, path, out);
  jsonFree(root);
  return r;
}

/* ---- sketch ---- */

static kilnResult_t read_intranode(const char* f, const jsonValue* in, kilnSketch* s, int g) {
  static const char* const known[] = {"strategy", "switches", "switch_hyperedge_strategy", NULL};
  kilnResult_t r = check_keys(f, in, "intranode_sketch", known);
  const jsonValue* st;
  if (r || (r = need(f, in, "strategy", "intranode_sketch", &st))) return r;
  if (st->type != JSON_STRING)
    return jsonError(KILN_ERR_PARSE, f, st, "intranode_sketch.strategy must be a string, not %s",
                     jsonTypeName(st->type));
  if (!strcmp(st->str, "none")) {
    const jsonValue* x =
        jsonGet(in, "switches") ? jsonGet(in, "switches") : jsonGet(in, "switch_hyperedge_strategy");
    if (x) return jsonError(KILN_ERR_PARSE, f, x, "intranode_sketch: strategy \"none\" takes no switches");
    s->intra = KILN_INTRA_ALL; /* every link of the node, no hyperedge */
    return KILN_SUCCESS;
  }
  if (!strcmp(st->str, "maxmin") || !strcmp(st->str, "minmax"))
    return jsonError(KILN_ERR_UNSUPPORTED, f, st,
                     "intranode_sketch: TACCL's strategy \"%s\" is not supported by kiln "
                     "(it takes \"switch\" and \"none\")",
                     st->str);
  if (strcmp(st->str, "switch"))
    return jsonError(KILN_ERR_PARSE, f, st,
                     "intranode_sketch.strategy \"%s\" is not one of: switch, none, maxmin, minmax", st->str);
  s->intra = KILN_INTRA_SWITCH;
  const jsonValue *sw, *pol;
  if ((r = need(f, in, "switches", "intranode_sketch (strategy switch)", &sw)) ||
      (r = need(f, in, "switch_hyperedge_strategy", "intranode_sketch (strategy switch)", &pol)) ||
      (r = get_array(f, sw, "intranode_sketch.switches", -1, 1)) ||
      (r = get_array(f, pol, "intranode_sketch.switch_hyperedge_strategy (one per switch)", sw->n, 0)))
    return r;
  s->switches = calloc((size_t)sw->n, sizeof *s->switches);
  if (!s->switches) return kilnSetError(KILN_ERR_NO_MEMORY, "%s: out of memory", f);
  for (int i = 0; i < sw->n; i++) {
    char w[64];
    snprintf(w, sizeof w, "intranode_sketch.switches[%d]", i);
    const jsonValue* l = &sw->items[i];
    if ((r = get_array(f, l, w, -1, 2))) return r;
    kilnSketchSwitch* x = &s->switches[s->nswitches++];
    if (!(x->gpus = malloc(sizeof(int) * (size_t)l->n)))
      return kilnSetError(KILN_ERR_NO_MEMORY, "%s: out of memory", f);
    for (int k = 0; k < l->n; k++) {
      int gpu;
      if ((r = get_gpu(f, &l->items[k], NULL, w, g, &gpu))) return r;
      for (int j = 0; j < x->ngpus; j++)
        if (x->gpus[j] == gpu)
          return jsonError(KILN_ERR_PARSE, f, &l->items[k], "%s lists GPU %d twice", w, gpu);
      x->gpus[x->ngpus++] = gpu;
    }
    const jsonValue* p = &pol->items[i];
    if (p->type != JSON_STRING || !kilnHyperPolicyParse(p->str, &x->policy))
      return jsonError(KILN_ERR_PARSE, f, p,
                       "intranode_sketch.switch_hyperedge_strategy[%d] must be \"uc-max\", \"uc-min\" "
                       "or \"free\"",
                       i);
  }
  return KILN_SUCCESS;
}

/* gpus_to_sender_rev_map {sender: [GPUs]} as kiln's chunk_to_relay (r1, r2): every block of r1
 * consecutive GPUs {b*r1 .. b*r1+r1-1} sends through GPU b*r1 + r2. */
static kilnResult_t rev_map(const char* f, const jsonValue* m, kilnSketch* s, int g) {
  if (m->type != JSON_OBJECT)
    return jsonError(KILN_ERR_PARSE, f, m, "gpus_to_sender_rev_map must be an object, not %s",
                     jsonTypeName(m->type));
  int* via = malloc(sizeof(int) * (size_t)g);
  if (!via) return kilnSetError(KILN_ERR_NO_MEMORY, "%s: out of memory", f);
  for (int i = 0; i < g; i++) via[i] = -1;
  kilnResult_t r = KILN_SUCCESS;
  for (int i = 0; i < m->n && r == KILN_SUCCESS; i++) {
    int sender;
    if ((r = get_gpu(f, &m->items[i], m->keys[i], "gpus_to_sender_rev_map", g, &sender))) break;
    const jsonValue* l = &m->items[i];
    if ((r = get_array(f, l, "gpus_to_sender_rev_map's list", -1, 1))) break;
    for (int k = 0; k < l->n && r == KILN_SUCCESS; k++) {
      int gpu;
      if ((r = get_gpu(f, &l->items[k], NULL, "gpus_to_sender_rev_map's list", g, &gpu))) break;
      if (via[gpu] >= 0)
        r = jsonError(KILN_ERR_PARSE, f, &l->items[k], "gpus_to_sender_rev_map: GPU %d has two senders", gpu);
      via[gpu] = sender;
    }
  }
  int r1 = 0, r2 = -1;
  if (r == KILN_SUCCESS) {
    for (int i = 0; i < g && r == KILN_SUCCESS; i++)
      if (via[i] < 0) r = jsonError(KILN_ERR_PARSE, f, m, "gpus_to_sender_rev_map gives GPU %d no sender", i);
    /* the block size: the first GPU whose sender differs from GPU 0's */
    r1 = g;
    for (int i = 1; i < g; i++)
      if (via[i] != via[0]) {
        r1 = i;
        break;
      }
    r2 = via[0];
    bool ok = r == KILN_SUCCESS && g % r1 == 0 && r2 >= 0 && r2 < r1;
    for (int i = 0; i < g && ok; i++) ok = via[i] == (i / r1) * r1 + r2;
    if (r == KILN_SUCCESS && !ok)
      r = jsonError(KILN_ERR_UNSUPPORTED, f, m,
                    "gpus_to_sender_rev_map is not of the form kiln takes (every block of r1 "
                    "consecutive GPUs sending through the same member of its block)");
  }
  free(via);
  if (r == KILN_SUCCESS) {
    s->has_chunk_to_relay = true;
    s->relay_r1 = r1;
    s->relay_r2 = r2;
  }
  return r;
}

static kilnResult_t read_internode(const char* f, const jsonValue* in, kilnSketch* s, int g) {
  static const char* const known[] = {"strategy",
                                      "internode_conn",
                                      "gpus_to_sender_rev_map",
                                      "enforce_ordering",
                                      "beta_split",
                                      "chunk_to_relay_map",
                                      NULL};
  kilnResult_t r = check_keys(f, in, "internode_sketch", known);
  const jsonValue *st, *conn, *v;
  if (r || (r = need(f, in, "strategy", "internode_sketch", &st))) return r;
  if (st->type != JSON_STRING || strcmp(st->str, "relay"))
    return jsonError(KILN_ERR_PARSE, f, st, "internode_sketch.strategy must be \"relay\" (TACCL's only one)");
  s->inter = KILN_INTER_RELAY;
  if ((r = need(f, in, "internode_conn", "internode_sketch", &conn))) return r;
  s->conns = calloc((size_t)g, sizeof *s->conns);
  if (!s->conns) return kilnSetError(KILN_ERR_NO_MEMORY, "%s: out of memory", f);
  if (conn->type == JSON_STRING) {
    const bool full = !strcmp(conn->str, "fully-connected"), diag = !strcmp(conn->str, "direct-map");
    if (!full && !diag)
      return jsonError(KILN_ERR_PARSE, f, conn,
                       "internode_conn \"%s\" is not \"fully-connected\", \"direct-map\" or a map "
                       "of GPUs to GPUs",
                       conn->str);
    for (int i = 0; i < g; i++) {
      kilnSketchConn* c = &s->conns[s->nconns++];
      c->src = i;
      if (!(c->dst = malloc(sizeof(int) * (size_t)(full ? g : 1))))
        return kilnSetError(KILN_ERR_NO_MEMORY, "%s: out of memory", f);
      for (int j = 0; j < g; j++)
        if (full || j == i) c->dst[c->ndst++] = j;
    }
  } else if (conn->type == JSON_OBJECT) {
    if (conn->n > g)
      return jsonError(KILN_ERR_PARSE, f, conn, "internode_conn names more senders than the %d GPUs", g);
    for (int i = 0; i < conn->n; i++) {
      kilnSketchConn* c = &s->conns[s->nconns++];
      if ((r = get_gpu(f, &conn->items[i], conn->keys[i], "internode_conn", g, &c->src))) return r;
      for (int j = 0; j < i; j++)
        if (s->conns[j].src == c->src)
          return jsonError(KILN_ERR_PARSE, f, &conn->items[i], "internode_conn names GPU %d twice", c->src);
      const jsonValue* l = &conn->items[i];
      char w[64];
      snprintf(w, sizeof w, "internode_conn[\"%s\"]", conn->keys[i]);
      if ((r = get_array(f, l, w, -1, 1))) return r;
      if (!(c->dst = malloc(sizeof(int) * (size_t)l->n)))
        return kilnSetError(KILN_ERR_NO_MEMORY, "%s: out of memory", f);
      for (int k = 0; k < l->n; k++)
        if ((r = get_gpu(f, &l->items[k], NULL, w, g, &c->dst[c->ndst++]))) return r;
    }
  } else {
    return jsonError(KILN_ERR_PARSE, f, conn,
                     "internode_conn must be a map of GPUs to GPUs, \"fully-connected\" or "
                     "\"direct-map\", not %s",
                     jsonTypeName(conn->type));
  }
  if ((v = jsonGet(in, "enforce_ordering")) && v->type != JSON_BOOL)
    return jsonError(KILN_ERR_PARSE, f, v, "enforce_ordering must be true or false");
  if ((v = jsonGet(in, "gpus_to_sender_rev_map")) && (r = rev_map(f, v, s, g))) return r;
  if ((v = jsonGet(in, "chunk_to_relay_map"))) {
    if (jsonGet(in, "gpus_to_sender_rev_map"))
      return jsonError(KILN_ERR_PARSE, f, v,
                       "chunk_to_relay_map and gpus_to_sender_rev_map both map chunks to senders: "
                       "give one");
    if ((r = get_array(f, v, "chunk_to_relay_map ([r1, r2])", 2, 0)) ||
        (r = get_int(f, &v->items[0], "chunk_to_relay_map's r1", 1, g, &s->relay_r1)) ||
        (r = get_int(f, &v->items[1], "chunk_to_relay_map's r2", 0, s->relay_r1 - 1, &s->relay_r2)))
      return r;
    s->has_chunk_to_relay = true;
  }
  if ((v = jsonGet(in, "beta_split"))) {
    if (v->type != JSON_OBJECT)
      return jsonError(KILN_ERR_PARSE, f, v, "beta_split must be an object of GPUs to splits, not %s",
                       jsonTypeName(v->type));
    s->beta_split_gpu = malloc(sizeof(int) * (size_t)(v->n + 1));
    s->beta_split = malloc(sizeof(int) * (size_t)(v->n + 1));
    if (!s->beta_split_gpu || !s->beta_split) return kilnSetError(KILN_ERR_NO_MEMORY, "%s: out of memory", f);
    for (int i = 0; i < v->n; i++) {
      int gpu, split;
      if ((r = get_gpu(f, &v->items[i], v->keys[i], "beta_split", g, &gpu)) ||
          (r = get_int(f, &v->items[i], "beta_split's split", 1, MAX_SPLIT, &split)))
        return r;
      s->beta_split_gpu[s->nbeta_split] = gpu;
      s->beta_split[s->nbeta_split++] = split;
    }
  }
  return KILN_SUCCESS;
}

static kilnResult_t read_sketch(const jsonValue* root, const char* f, const char* name, int g,
                                kilnSketch** out, int* nnodes) {
  static const char* const known[] = {"nnodes",           "intranode_sketch", "internode_sketch",
                                      "symmetry_offsets", "hyperparameters",  NULL};
  kilnResult_t r = check_keys(f, root, "the sketch", known);
  if (r != KILN_SUCCESS) return r;
  kilnSketch* s = calloc(1, sizeof *s);
  if (!s) return kilnSetError(KILN_ERR_NO_MEMORY, "%s: out of memory", f);
  s->intra = KILN_INTRA_ALL;
  s->inter = KILN_INTER_NONE;
  s->input_chunkup = 1;
  s->input_size = 1u << 20;
  s->ordering = KILN_ORDER_AUTO;
  snprintf(s->name, sizeof s->name, "%s", name);
  const jsonValue *v, *in;
  int N;
  if ((r = need(f, root, "nnodes", "the sketch", &v)) || (r = get_int(f, v, "nnodes", 1, KILN_MAX_RANKS, &N)))
    goto out_fail;
  if ((r = need(f, root, "intranode_sketch", "the sketch", &in)) || (r = read_intranode(f, in, s, g)))
    goto out_fail;
  if ((in = jsonGet(root, "internode_sketch"))) {
    if ((r = read_internode(f, in, s, g))) goto out_fail;
  } else if (N > 1) {
    r = jsonError(KILN_ERR_PARSE, f, root,
                  "the sketch: nnodes is %d but the key \"internode_sketch\" is missing", N);
    goto out_fail;
  }
  if ((r = need(f, root, "symmetry_offsets", "the sketch", &v)) ||
      (r = get_array(f, v, "symmetry_offsets", -1, 0)))
    goto out_fail;
  if (v->n > 64) {
    r = jsonError(KILN_ERR_PARSE, f, v, "symmetry_offsets has %d entries; kiln takes at most 64", v->n);
    goto out_fail;
  }
  s->symmetry = calloc((size_t)(v->n + 1), sizeof *s->symmetry);
  if (!s->symmetry) {
    r = kilnSetError(KILN_ERR_NO_MEMORY, "%s: out of memory", f);
    goto out_fail;
  }
  for (int i = 0; i < v->n; i++) {
    char w[64];
    snprintf(w, sizeof w, "symmetry_offsets[%d] ([offset, group])", i);
    kilnSymmetry* y = &s->symmetry[s->nsymmetry++];
    if ((r = get_array(f, &v->items[i], w, 2, 0)) ||
        (r = get_int(f, &v->items[i].items[0], "a symmetry's offset", 0, KILN_MAX_RANKS, &y->offset)) ||
        (r = get_int(f, &v->items[i].items[1], "a symmetry's group", 1, KILN_MAX_RANKS, &y->group)))
      goto out_fail;
  }
  if ((r = need(f, root, "hyperparameters", "the sketch", &v))) goto out_fail;
  static const char* const hyper[] = {"input_chunkup", "input_size", NULL};
  if ((r = check_keys(f, v, "hyperparameters", hyper))) goto out_fail;
  if ((r = need(f, v, "input_chunkup", "hyperparameters", &in)) ||
      (r = get_int(f, in, "input_chunkup", 1, MAX_CHUNKUP, &s->input_chunkup)))
    goto out_fail;
  if ((in = jsonGet(v, "input_size")) && (r = get_size(f, in, "input_size", &s->input_size))) goto out_fail;
  *out = s;
  if (nnodes) *nnodes = N;
  return KILN_SUCCESS;
out_fail:
  kilnSketchFree(s);
  return r;
}

/* The sketch's name: its file's, without folders and the .json ending, each character other than
 * a letter, digit, '.', '_' or '-' as '_' (the name goes into plans' XML). */
static void sketch_name(const char* path, char* name, size_t n) {
  const char* b = strrchr(path, '/');
  b = b ? b + 1 : path;
  size_t len = strlen(b);
  if (len > 5 && !strcmp(b + len - 5, ".json")) len -= 5;
  if (len >= n) len = n - 1;
  if (len == 0) {
    snprintf(name, n, "taccl-sketch");
    return;
  }
  for (size_t i = 0; i < len; i++) {
    const char c = b[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '_' || c == '-';
    name[i] = ok ? c : '_';
  }
  name[len] = '\0';
}

kilnResult_t kilnSketchReadTacclMemory(const char* json, size_t len, const char* name, int gpus_per_node,
                                       kilnSketch** out, int* nnodes) {
  if (!out || !json)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnSketchReadTacclMemory: NULL argument");
  *out = NULL;
  if (gpus_per_node < 1 || gpus_per_node > KILN_MAX_RANKS)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnSketchReadTacclMemory: gpus_per_node %d",
                        gpus_per_node);
  const char* f = name ? name : "(sketch)";
  char nm[KILN_NAME_MAX];
  sketch_name(f, nm, sizeof nm);
  jsonValue* root = NULL;
  kilnResult_t r = jsonParse(json, len, f, &root);
  if (r == KILN_SUCCESS) r = read_sketch(root, f, nm, gpus_per_node, out, nnodes);
  jsonFree(root);
  return r;
}

kilnResult_t kilnSketchReadTacclFile(const char* path, int gpus_per_node, kilnSketch** out, int* nnodes) {
  if (!out) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnSketchReadTacclFile: NULL out");
  *out = NULL;
  if (gpus_per_node < 1 || gpus_per_node > KILN_MAX_RANKS)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnSketchReadTacclFile: gpus_per_node %d",
                        gpus_per_node);
  char nm[KILN_NAME_MAX];
  sketch_name(path ? path : "", nm, sizeof nm);
  jsonValue* root = NULL;
  kilnResult_t r = jsonReadFile(path, &root);
  if (r == KILN_SUCCESS) r = read_sketch(root, path, nm, gpus_per_node, out, nnodes);
  jsonFree(root);
  return r;
}
