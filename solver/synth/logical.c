/* The logical topology a sketch leaves of a physical topology (paper 3.1-3.3, Appendix A), the
 * chunks of a collective, and the symmetry permutations. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "synth_internal.h"

void synLogicalFree(synLogical* L) {
  free(L->links);
  free(L->link_of);
  free(L->hyper_policy);
  free(L->sym);
  memset(L, 0, sizeof *L);
}

/* Port ids: (rank, switch) send/recv ports and NIC send/recv ports, numbered densely. */
typedef struct portMap {
  int n, nsw, nnic;
  int* id;
  int next;
} portMap;

static int port_get(portMap* pm, int key) {
  if (pm->id[key] < 0) pm->id[key] = pm->next++;
  return pm->id[key];
}

static kilnResult_t add_link(synLogical* L, const kilnTopology* t, int a, int b, int hyper, const char* why) {
  if (a == b) return KILN_SUCCESS;
  if (a < 0 || b < 0 || a >= L->n || b >= L->n)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "sketch %s: rank %d -> %d out of range (%d ranks)", why, a,
                        b, L->n);
  const kilnLink* pl = kilnTopologyLink(t, a, b);
  if (!pl)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT,
                        "sketch %s: no physical link from rank %d to rank %d in topology '%s'", why, a, b,
                        t->name);
  if (L->link_of[a * L->n + b] >= 0) {
    synLink* e = &L->links[L->link_of[a * L->n + b]];
    if (hyper >= 0 && e->hyper < 0) e->hyper = hyper;
    return KILN_SUCCESS;
  }
  synLink* l = &L->links[L->nlinks];
  memset(l, 0, sizeof *l);
  l->src = a;
  l->dst = b;
  l->alpha = pl->alpha_us;
  l->beta = pl->beta_us_per_mb / (pl->mult > 0 ? pl->mult : 1);
  l->beta_route = l->beta;
  l->internode = pl->internode;
  l->hyper = hyper;
  l->send_port = l->recv_port = -1;
  L->link_of[a * L->n + b] = L->nlinks++;
  return KILN_SUCCESS;
}

static void reverse_links(synLogical* L) {
  for (int i = 0; i < L->nlinks; i++) {
    synLink* l = &L->links[i];
    int a = l->src;
    l->src = l->dst;
    l->dst = a;
    int p = l->send_port;
    l->send_port = l->recv_port;
    l->recv_port = p;
  }
  for (int i = 0; i < L->n * L->n; i++) L->link_of[i] = -1;
  for (int i = 0; i < L->nlinks; i++) L->link_of[L->links[i].src * L->n + L->links[i].dst] = i;
}

/* Checks every rank reaches every other over logical links: rank 0 reaches every rank and every
 * rank reaches rank 0 (two searches over the links, linear in their number); names a pair that
 * fails. */
static kilnResult_t check_connected(const synLogical* L, const char* sk) {
  int n = L->n, nl = L->nlinks;
  int* q = malloc((size_t)n * sizeof(int));
  char* seen = malloc((size_t)n);
  int* start = calloc((size_t)n + 1, sizeof(int));
  int* adj = malloc(((size_t)nl + 1) * sizeof(int));
  kilnResult_t r = KILN_SUCCESS;
  if (!q || !seen || !start || !adj) {
    r = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
    goto out_free;
  }
  for (int dir = 0; dir < 2 && r == KILN_SUCCESS; dir++) {
    /* dir 0: forward from rank 0; dir 1: over reversed links, i.e. who reaches rank 0 */
    memset(start, 0, ((size_t)n + 1) * sizeof(int));
    for (int e = 0; e < nl; e++) start[(dir ? L->links[e].dst : L->links[e].src) + 1]++;
    for (int v = 0; v < n; v++) start[v + 1] += start[v];
    for (int e = 0; e < nl; e++) {
      int u = dir ? L->links[e].dst : L->links[e].src;
      adj[start[u]++] = dir ? L->links[e].src : L->links[e].dst;
    }
    for (int v = n; v > 0; v--) start[v] = start[v - 1];
    start[0] = 0;
    memset(seen, 0, (size_t)n);
    int h = 0, tl = 0;
    q[tl++] = 0;
    seen[0] = 1;
    while (h < tl) {
      int u = q[h++];
      for (int k = start[u]; k < start[u + 1]; k++)
        if (!seen[adj[k]]) {
          seen[adj[k]] = 1;
          q[tl++] = adj[k];
        }
    }
    for (int v = 0; v < n; v++)
      if (!seen[v]) {
        r = kilnSetError(KILN_ERR_INFEASIBLE,
                         "sketch '%s': logical topology is disconnected: rank %d cannot reach rank %d", sk,
                         dir ? v : 0, dir ? 0 : v);
        break;
      }
  }
out_free:
  free(q);
  free(seen);
  free(start);
  free(adj);
  return r;
}

kilnResult_t synLogicalBuild(const kilnTopology* t, const kilnSketch* s, bool transposed, synLogical* out) {
  memset(out, 0, sizeof *out);
  synLogical* L = out;
  int n = t->nranks, g = t->gpus_per_node;
  kilnResult_t r = KILN_SUCCESS;
  portMap pm = {0};
  L->n = n;
  L->gpn = g;
  L->transposed = transposed;
  L->links = calloc((size_t)n * (size_t)n + 1, sizeof(synLink));
  L->link_of = malloc((size_t)n * (size_t)n * sizeof(int));
  L->hyper_policy = calloc((size_t)s->nswitches + 1, sizeof(kilnHyperPolicy_t));
  int nsw = t->nswitches > 0 ? t->nswitches : 1;
  int nnic = t->nnics > 0 ? t->nnics : 1;
  int keys = 2 * n * nsw + 2 * nnic + 2 * n;
  pm.id = malloc((size_t)keys * sizeof(int));
  if (!L->links || !L->link_of || !L->hyper_policy || !pm.id) {
    r = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
    goto out_fail;
  }
  for (int i = 0; i < n * n; i++) L->link_of[i] = -1;
  for (int i = 0; i < keys; i++) pm.id[i] = -1;
  L->nhyper = s->nswitches;
  for (int i = 0; i < s->nswitches; i++) L->hyper_policy[i] = s->switches[i].policy;

  /* intra-node links */
  for (int node = 0; node < t->nodes && r == KILN_SUCCESS; node++) {
    int base = node * g;
    /* "switch" keeps the switches' links; "all" keeps every link, those among a <switch>'s GPUs
     * as that switch's hyperedge (its policy), added first. */
    if (s->intra == KILN_INTRA_SWITCH || s->intra == KILN_INTRA_ALL) {
      for (int w = 0; w < s->nswitches && r == KILN_SUCCESS; w++) {
        const kilnSketchSwitch* sw = &s->switches[w];
        for (int i = 0; i < sw->ngpus && r == KILN_SUCCESS; i++)
          for (int j = 0; j < sw->ngpus && r == KILN_SUCCESS; j++) {
            if (sw->gpus[i] >= g || sw->gpus[j] >= g || sw->gpus[i] < 0 || sw->gpus[j] < 0) {
              r = kilnSetError(KILN_ERR_INVALID_ARGUMENT,
                               "sketch '%s': switch %d names GPU %d but a node has %d GPUs", s->name, w,
                               sw->gpus[i] >= g || sw->gpus[i] < 0 ? sw->gpus[i] : sw->gpus[j], g);
              break;
            }
            r = add_link(L, t, base + sw->gpus[i], base + sw->gpus[j], w, "switch hyperedge");
          }
      }
    }
    if (s->intra == KILN_INTRA_LINKS) {
      for (int i = 0; i < s->nlinks && r == KILN_SUCCESS; i++) {
        const kilnSketchLink* sl = &s->links[i];
        if (sl->src < 0 || sl->src >= g || sl->dst < 0 || sl->dst >= g) {
          r = kilnSetError(KILN_ERR_INVALID_ARGUMENT, "sketch '%s': link %d -> %d outside a node of %d GPUs",
                           s->name, sl->src, sl->dst, g);
          break;
        }
        r = add_link(L, t, base + sl->src, base + sl->dst, -1, "link");
      }
    } else if (s->intra == KILN_INTRA_ALL) {
      for (int i = 0; i < t->nlinks && r == KILN_SUCCESS; i++) {
        const kilnLink* pl = &t->links[i];
        if (!pl->internode && pl->src / g == node) r = add_link(L, t, pl->src, pl->dst, -1, "link");
      }
    }
  }
  if (r != KILN_SUCCESS) goto out_fail;

  /* inter-node links */
  if (s->inter == KILN_INTER_RELAY) {
    for (int i = 0; i < s->nconns && r == KILN_SUCCESS; i++) {
      const kilnSketchConn* c = &s->conns[i];
      for (int d = 0; d < c->ndst && r == KILN_SUCCESS; d++)
        for (int na = 0; na < t->nodes && r == KILN_SUCCESS; na++)
          for (int nb = 0; nb < t->nodes && r == KILN_SUCCESS; nb++)
            if (na != nb) r = add_link(L, t, na * g + c->src, nb * g + c->dst[d], -1, "inter-node conn");
    }
  } else if (s->inter == KILN_INTER_DIRECT) {
    for (int i = 0; i < t->nlinks && r == KILN_SUCCESS; i++)
      if (t->links[i].internode) r = add_link(L, t, t->links[i].src, t->links[i].dst, -1, "inter-node");
  }
  if (r != KILN_SUCCESS) goto out_fail;

  /* β split, ports */
  for (int i = 0; i < L->nlinks; i++) {
    synLink* l = &L->links[i];
    if (l->internode)
      for (int b = 0; b < s->nbeta_split; b++)
        if (s->beta_split_gpu[b] == l->src % g && s->beta_split[b] > 1)
          l->beta_route = l->beta * s->beta_split[b];
    const kilnLink* pl = kilnTopologyLink(t, l->src, l->dst);
    if (pl->internode) {
      int ns = t->nic_of ? t->nic_of[l->src] : -1, nd = t->nic_of ? t->nic_of[l->dst] : -1;
      l->send_port = port_get(&pm, ns >= 0 ? 2 * n * nsw + ns : 2 * n * nsw + 2 * nnic + l->src);
      l->recv_port = port_get(&pm, nd >= 0 ? 2 * n * nsw + nnic + nd : 2 * n * nsw + 2 * nnic + n + l->dst);
    } else if (pl->switch_id >= 0 && pl->switch_id < nsw) {
      l->send_port = port_get(&pm, (l->src * nsw + pl->switch_id) * 2);
      l->recv_port = port_get(&pm, (l->dst * nsw + pl->switch_id) * 2 + 1);
    }
  }
  L->nports = pm.next;
  L->has_relay_map = s->has_chunk_to_relay;
  L->relay_r1 = s->relay_r1;
  L->relay_r2 = s->relay_r2;
  if (L->has_relay_map && L->relay_r1 <= 0) {
    r = kilnSetError(KILN_ERR_INVALID_ARGUMENT, "sketch '%s': chunk_to_relay r1 must be positive", s->name);
    goto out_fail;
  }

  r = check_connected(L, s->name);
  if (r != KILN_SUCCESS) goto out_fail;

  /* symmetry permutations, each checked to be an automorphism of the logical topology */
  if (s->nsymmetry > 0) {
    L->sym = malloc((size_t)s->nsymmetry * sizeof *L->sym);
    if (!L->sym) {
      r = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
      goto out_fail;
    }
  }
  for (int i = 0; i < s->nsymmetry; i++) {
    int o = s->symmetry[i].offset, grp = s->symmetry[i].group;
    if (grp <= 0 || n % grp != 0 || o < 0) {
      r = kilnSetError(KILN_ERR_INVALID_ARGUMENT,
                       "sketch '%s': symmetry (offset %d, group %d) does not divide the %d ranks", s->name, o,
                       grp, n);
      goto out_fail;
    }
    for (int a = 0; a < n; a++) L->sym[i][a] = (a / grp) * grp + (a % grp + o) % grp;
    for (int e = 0; e < L->nlinks; e++) {
      const synLink* l = &L->links[e];
      int a = L->sym[i][l->src], b = L->sym[i][l->dst];
      int f = L->link_of[a * n + b];
      if (f < 0 || L->links[f].internode != l->internode ||
          fabs(L->links[f].alpha - l->alpha) > 1e-9 * (1 + l->alpha) ||
          fabs(L->links[f].beta_route - l->beta_route) > 1e-9 * (1 + l->beta_route)) {
        r = kilnSetError(KILN_ERR_INFEASIBLE,
                         "sketch '%s': symmetry (offset %d, group %d) is not an automorphism of the "
                         "logical topology: link %d -> %d maps to %d -> %d, which %s",
                         s->name, o, grp, l->src, l->dst, a, b,
                         f < 0 ? "is not in the logical topology" : "has other costs");
        goto out_fail;
      }
    }
    if (L->has_relay_map) {
      for (int p = 0; p < n; p++) {
        int rp = (p / L->relay_r1) * L->relay_r1 + L->relay_r2;
        int rq = (L->sym[i][p] / L->relay_r1) * L->relay_r1 + L->relay_r2;
        if (rp < n && rq != L->sym[i][rp]) {
          r = kilnSetError(KILN_ERR_INFEASIBLE,
                           "sketch '%s': symmetry (offset %d, group %d) does not preserve the "
                           "chunk_to_relay map (rank %d relays via %d, its image %d via %d)",
                           s->name, o, grp, p, rp, L->sym[i][p], rq);
          goto out_fail;
        }
      }
    }
  }
  L->nsym = s->nsymmetry;
  if (transposed) reverse_links(L);
  free(pm.id);
  return KILN_SUCCESS;
out_fail:
  free(pm.id);
  synLogicalFree(L);
  return r;
}

kilnResult_t synChunksMake(kilnColl_t coll, int n, int k, synChunks* out) {
  memset(out, 0, sizeof *out);
  if (k < 1) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "input_chunkup must be >= 1 (got %d)", k);
  bool a2a = coll == KILN_COLL_ALLTOALL;
  int nc = a2a ? n * n * k : n * k;
  if (a2a && nc < n * n)
    return kilnSetError(KILN_ERR_INFEASIBLE,
                        "alltoall needs at least one chunk per (source, destination): %d chunks < %d", nc,
                        n * n);
  out->nchunks = nc;
  out->k = k;
  out->multicast = !a2a;
  out->pre = malloc((size_t)nc * sizeof(int));
  out->dst = malloc((size_t)nc * sizeof(int));
  if (!out->pre || !out->dst) {
    synChunksFree(out);
    return kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
  }
  for (int c = 0; c < nc; c++) {
    if (a2a) {
      out->pre[c] = c / (n * k);
      out->dst[c] = (c / k) % n;
    } else {
      out->pre[c] = c / k;
      out->dst[c] = -1;
    }
  }
  return KILN_SUCCESS;
}

void synChunksFree(synChunks* c) {
  free(c->pre);
  free(c->dst);
  memset(c, 0, sizeof *c);
}

int synChunkImage(const synChunks* c, int n, const int* perm, int chunk) {
  int k = c->k;
  if (c->multicast) return perm[chunk / k] * k + chunk % k;
  int p = chunk / (n * k), d = (chunk / k) % n, j = chunk % k;
  return (perm[p] * n + perm[d]) * k + j;
}
