/* Built-in topologies by name: ndv2, dgx2, hgx-h100, switchN, torusRxC (see topology.h).
 *
 * Where the figures come from:
 * - ndv2 and dgx2 NVLink and InfiniBand α-β: TACCL paper (NSDI'23), Table 1 — NDv2 NVLink
 *   α=0.7 µs β=46 µs/MB, DGX-2 NVLink α=0.7 β=8, InfiniBand α=1.7 β=106 on both.
 * - ndv2 NVLink pairs: the hybrid cube-mesh of the DGX-1 / Azure NDv2 (8 V100, 6 NVLinks each),
 *   numbered as the TACCL/SCCL tools number it: two sockets {0,1,2,3} {4,5,6,7}; 0-1, 1-3, 3-2
 *   and 4-5, 5-7, 7-6 and the cross links 0-4, 2-6 carry 2 NVLinks, the others one.
 * - hgx-h100 and switchN NVLink: measured on 4x H200 over NVSwitch (a CUDA probe, 2026-11-26):
 *   one-way GPU->GPU latency 0.74 µs; ~370 GB/s per-pair copy -> β = 1e6 B / 370e9 B/s ≈ 2.7 µs/MB.
 * - hgx-h100 InfiniBand: NDR 400 Gb/s = 50 GB/s -> β = 20 µs/MB; α as the paper's IB, 1.7 µs
 *   (not measured here: no multi-node machine).
 * - torusRxC: NVLink-like links with the NDv2 figures (α=0.7, β=46), no switch.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/topology.h"
#include "kiln_internal.h"

#define NVLINK_V100_ALPHA 0.7  /* µs, paper Table 1 */
#define NVLINK_V100_BETA 46.0  /* µs/MB, paper Table 1 (NDv2) */
#define NVSWITCH_DGX2_BETA 8.0 /* µs/MB, paper Table 1 (DGX-2) */
#define IB_EDR_ALPHA 1.7       /* µs, paper Table 1 */
#define IB_EDR_BETA 106.0      /* µs/MB, paper Table 1 */
#define NVLINK_H100_ALPHA 0.74 /* µs, baselines/README.md one-way flag latency */
#define NVLINK_H100_BETA 2.7   /* µs/MB, baselines/README.md ~370 GB/s copy */
#define IB_NDR_ALPHA 1.7       /* µs, as the paper's IB */
#define IB_NDR_BETA 20.0       /* µs/MB, 400 Gb/s line rate */

static const char builtin_names[] = "ndv2 dgx2 hgx-h100 switchN torusRxC";

const char* kilnTopologyBuiltinNames(void) { return builtin_names; }

static kilnTopology* topo_new(const char* name, int nodes, int g) {
  kilnTopology* t = calloc(1, sizeof *t);
  if (!t) return NULL;
  snprintf(t->name, sizeof t->name, "%s", name);
  t->nodes = nodes;
  t->gpus_per_node = g;
  return t;
}

static bool add_link(kilnTopology* t, int cap, int src, int dst, double a, double b, int mult) {
  if (!t->tlinks) t->tlinks = calloc((size_t)cap, sizeof *t->tlinks);
  if (!t->tlinks || t->ntlinks >= cap) return false;
  t->tlinks[t->ntlinks++] = (kilnLink){src, dst, a, b, mult, KILN_LINK_NVLINK, -1, false};
  return true;
}

/* One switch over GPUs lo..hi-1. */
static bool add_switch(kilnTopology* t, const char* name, int lo, int hi, double a, double b) {
  t->tswitches = calloc(1, sizeof *t->tswitches);
  if (!t->tswitches) return false;
  kilnSwitch* s = &t->tswitches[0];
  t->ntswitches = 1;
  snprintf(s->name, sizeof s->name, "%s", name);
  s->gpus = malloc((size_t)(hi - lo) * sizeof *s->gpus);
  if (!s->gpus) return false;
  s->ngpus = hi - lo;
  for (int i = lo; i < hi; i++) s->gpus[i - lo] = i;
  s->alpha_us = a;
  s->beta_us_per_mb = b;
  s->kind = KILN_LINK_NVLINK;
  return true;
}

/* NICs shared by `per` consecutive GPUs each, plus inter-node links at (a, b). */
static bool add_nics(kilnTopology* t, int per, double a, double b) {
  int g = t->gpus_per_node, n = (g + per - 1) / per;
  t->tnics = calloc((size_t)n, sizeof *t->tnics);
  if (!t->tnics) return false;
  for (int k = 0; k < n; k++) {
    kilnNic* nic = &t->tnics[k];
    nic->gpus = malloc((size_t)per * sizeof *nic->gpus);
    if (!nic->gpus) return false;
    t->ntnics++;
    nic->id = k;
    for (int i = k * per; i < g && i < (k + 1) * per; i++) nic->gpus[nic->ngpus++] = i;
  }
  t->has_internode = true;
  t->inter_alpha_us = a;
  t->inter_beta_us_per_mb = b;
  t->inter_kind = KILN_LINK_IB;
  return true;
}

static bool build_ndv2(kilnTopology* t) {
  /* NVLinks per unordered pair of the hybrid cube-mesh (each GPU: 6 in total). */
  static const int pairs[][3] = {
      {0, 1, 2}, {0, 2, 1}, {0, 3, 1}, {0, 4, 2}, {1, 2, 1}, {1, 3, 2}, {1, 5, 1}, {2, 3, 2},
      {2, 6, 2}, {3, 7, 1}, {4, 5, 2}, {4, 6, 1}, {4, 7, 1}, {5, 6, 1}, {5, 7, 2}, {6, 7, 2},
  };
  int np = (int)(sizeof pairs / sizeof pairs[0]);
  for (int i = 0; i < np; i++) {
    if (!add_link(t, 2 * np, pairs[i][0], pairs[i][1], NVLINK_V100_ALPHA, NVLINK_V100_BETA, pairs[i][2]) ||
        !add_link(t, 2 * np, pairs[i][1], pairs[i][0], NVLINK_V100_ALPHA, NVLINK_V100_BETA, pairs[i][2]))
      return false;
  }
  return add_nics(t, 8, IB_EDR_ALPHA, IB_EDR_BETA); /* one NIC shared by all 8 GPUs */
}

static bool build_torus(kilnTopology* t, int R, int C) {
  /* Neighbours right and down, both directions, with wraparound; a dimension of 2 gives one
   * neighbour on that axis, not two links to the same GPU. */
  int cap = 4 * R * C;
  for (int y = 0; y < R; y++)
    for (int x = 0; x < C; x++) {
      int me = y * C + x;
      int nb[4] = {y * C + (x + 1) % C, y * C + (x + C - 1) % C, ((y + 1) % R) * C + x,
                   ((y + R - 1) % R) * C + x};
      for (int k = 0; k < 4; k++) {
        bool dup = nb[k] == me;
        for (int j = 0; j < k; j++) dup |= nb[j] == nb[k];
        if (!dup && !add_link(t, cap, me, nb[k], NVLINK_V100_ALPHA, NVLINK_V100_BETA, 1)) return false;
      }
    }
  return add_nics(t, 1, IB_EDR_ALPHA, IB_EDR_BETA);
}

/* Parses "<prefix><int>" exactly; false on anything else. */
static bool parse_suffix_int(const char* s, const char* prefix, int* out, const char** rest) {
  size_t n = strlen(prefix);
  if (strncmp(s, prefix, n) != 0) return false;
  s += n;
  if (*s < '0' || *s > '9') return false;
  long v = 0;
  while (*s >= '0' && *s <= '9') { /* past 2^20: 2^20 + 1, which every range check refuses */
    v = v * 10 + (*s++ - '0');
    if (v > 1 << 20) v = (1 << 20) + 1;
  }
  *out = (int)v;
  *rest = s;
  return true;
}

kilnResult_t kilnTopologyBuiltin(const char* name, int nodes, kilnTopology** out) {
  if (!out) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnTopologyBuiltin: NULL out");
  *out = NULL;
  if (!name)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "no topology name given (known: %s)", builtin_names);
  if (nodes < 1 || nodes > KILN_MAX_RANKS)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "topology %s: nodes must be in 1..%d, not %d", name,
                        KILN_MAX_RANKS, nodes);
  kilnTopology* t = NULL;
  bool ok = false;
  int a, b;
  const char* rest;
  if (!strcmp(name, "ndv2")) {
    ok = (t = topo_new(name, nodes, 8)) && build_ndv2(t);
  } else if (!strcmp(name, "dgx2")) {
    ok = (t = topo_new(name, nodes, 16)) &&
         add_switch(t, "nvswitch", 0, 16, NVLINK_V100_ALPHA, NVSWITCH_DGX2_BETA) &&
         add_nics(t, 2, IB_EDR_ALPHA, IB_EDR_BETA);
  } else if (!strcmp(name, "hgx-h100")) {
    ok = (t = topo_new(name, nodes, 8)) &&
         add_switch(t, "nvswitch", 0, 8, NVLINK_H100_ALPHA, NVLINK_H100_BETA) &&
         add_nics(t, 1, IB_NDR_ALPHA, IB_NDR_BETA);
  } else if (parse_suffix_int(name, "switch", &a, &rest) && !*rest) {
    if (a < 2 || (long long)a * nodes > KILN_MAX_RANKS)
      return kilnSetError(KILN_ERR_INVALID_ARGUMENT,
                          "topology %s: needs 2 <= N and N x nodes (%d) <= KILN_MAX_RANKS (%d)", name, nodes,
                          KILN_MAX_RANKS);
    ok = (t = topo_new(name, nodes, a)) &&
         add_switch(t, "nvswitch", 0, a, NVLINK_H100_ALPHA, NVLINK_H100_BETA) &&
         add_nics(t, 1, IB_NDR_ALPHA, IB_NDR_BETA);
  } else if (parse_suffix_int(name, "torus", &a, &rest) && *rest == 'x' &&
             parse_suffix_int(rest, "x", &b, &rest) && !*rest) {
    if (a < 2 || b < 2 || (long long)a * b * nodes > KILN_MAX_RANKS)
      return kilnSetError(KILN_ERR_INVALID_ARGUMENT,
                          "topology %s: needs R, C >= 2 and R x C x nodes (%d) <= KILN_MAX_RANKS (%d)", name,
                          nodes, KILN_MAX_RANKS);
    ok = (t = topo_new(name, nodes, a * b)) && build_torus(t, a, b);
  } else {
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "unknown topology \"%s\" (known: %s)", name,
                        builtin_names);
  }
  if (!ok) {
    kilnTopologyFree(t);
    return kilnSetError(KILN_ERR_NO_MEMORY, "topology %s: out of memory", name);
  }
  if ((long long)t->gpus_per_node * nodes > KILN_MAX_RANKS) {
    kilnResult_t r =
        kilnSetError(KILN_ERR_INVALID_ARGUMENT, "topology %s: %d nodes x %d GPUs exceeds KILN_MAX_RANKS (%d)",
                     name, nodes, t->gpus_per_node, KILN_MAX_RANKS);
    kilnTopologyFree(t);
    return r;
  }
  kilnResult_t r = kilnTopologyExpand(t);
  if (r != KILN_SUCCESS) {
    kilnTopologyFree(t);
    return r;
  }
  *out = t;
  return KILN_SUCCESS;
}
