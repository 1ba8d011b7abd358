/* Node-quotient synthesis: routing for a topology of many identical nodes, solved on two.
 *
 * A topology of N nodes is N copies of one node template, and a sketch's inter-node connections
 * join every pair of nodes alike, so the routing problem is symmetric under any permutation of
 * the nodes. Its size still grows with N (every chunk may cross every link), and so does GLPK's
 * time: about tenfold per doubling of the nodes. Here the routing MILP runs on a representative
 * of two nodes instead - node 0 stands for a chunk's origin node, node 1 for any other - and its
 * routes are expanded onto the N nodes: a chunk of node a takes its route inside node a once, and
 * the route the representative gives it into node 1 towards every other node b. A shortest path
 * crosses between nodes once, so every chunk's route has this form in the representative; what
 * the expansion fixes is that the route into node b does not depend on b (every node is reached
 * the same way), which is the node symmetry the sketch's knobs already ask for.
 *
 * The representative keeps the sketch's meaning: its logical topology is the sketch's on two
 * nodes (switch hyperedges and their policies, relay connections, beta_split, chunk_to_relay),
 * its symmetries are the sketch's symmetries within a node plus the swap of the two nodes (a
 * sketch's node-level symmetries, offsets that are multiples of the node size, all become node
 * permutations of the expanded plan), and its loads are those of N nodes: a chunk's load inside
 * the other node and on the NICs counts N - 1 times (once per node it reaches: synRouteParams.
 * remote_copies), inside its own node once. The transfers of the N-node routes are then ordered
 * (synOrderList), lowered and verified as any other. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synth_internal.h"

/* A copy of sketch s (through its XML). */
static kilnResult_t sketch_copy(const kilnSketch* s, kilnSketch** out) {
  char* doc = NULL;
  kilnResult_t r = kilnSketchWriteMemory(s, &doc);
  if (r == KILN_SUCCESS) r = kilnSketchReadMemory(doc, strlen(doc), s->name, out);
  free(doc);
  return r;
}

kilnResult_t synNodeRepresentative(const kilnTopology* t, const kilnSketch* s, kilnTopology** t2,
                                   kilnSketch** s2, kilnSketch** sn) {
  *t2 = NULL;
  *s2 = NULL;
  *sn = NULL;
  const int g = t->gpus_per_node;
  char* doc = NULL;
  kilnResult_t r = kilnTopologyWriteMemory(t, &doc);
  if (r == KILN_SUCCESS) r = kilnTopologyReadMemory(doc, strlen(doc), t->name, t2);
  free(doc);
  doc = NULL;
  if (r != KILN_SUCCESS) goto out_fail;
  (*t2)->nodes = 2;
  if ((r = kilnTopologyExpand(*t2)) != KILN_SUCCESS) goto out_fail;
  if ((r = sketch_copy(s, s2)) != KILN_SUCCESS || (r = sketch_copy(s, sn)) != KILN_SUCCESS) goto out_fail;
  /* symmetries: within a node as given, every node-level one as the swap of the two nodes */
  kilnSymmetry* sym = malloc(((size_t)s->nsymmetry + 1) * sizeof *sym);
  if (!sym) {
    r = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
    goto out_fail;
  }
  int ns = 0;
  for (int i = 0; i < s->nsymmetry; i++) {
    const int o = s->symmetry[i].offset, grp = s->symmetry[i].group;
    if (grp <= g && g % grp == 0) {
      sym[ns++] = s->symmetry[i];
    } else if (grp % g == 0 && o % g == 0) {
      continue; /* a permutation of the nodes: the swap below */
    } else {
      free(sym);
      r = kilnSetError(
          KILN_ERR_UNSUPPORTED,
          "sketch '%s': symmetry (offset %d, group %d) spans nodes but does not permute them (its offset "
          "and group are not multiples of the %d GPUs of a node): node-level synthesis takes symmetries "
          "within a node and permutations of whole nodes (or synthesize without it: --node-level off)",
          s->name, o, grp, g);
      goto out_fail;
    }
  }
  /* the N nodes keep the symmetries within a node (the expansion makes the plan node-symmetric) */
  (*sn)->nsymmetry = ns;
  if (ns > 0) memcpy((*sn)->symmetry, sym, (size_t)ns * sizeof *sym);
  sym[ns++] = (kilnSymmetry){g, 2 * g};
  free((*s2)->symmetry);
  (*s2)->symmetry = sym;
  (*s2)->nsymmetry = ns;
  return KILN_SUCCESS;
out_fail:
  kilnTopologyFree(*t2);
  kilnSketchFree(*s2);
  kilnSketchFree(*sn);
  *t2 = NULL;
  *s2 = NULL;
  *sn = NULL;
  return r;
}

/* One representative chunk's tree: its ranks in breadth-first order from the root (ord[0] is
 * the root), each rank's parent on the tree (-1: none) and its children (CSR). */
typedef struct repTree {
  int nord;
  int ord[2 * KILN_MAX_RANKS];
  int par[2 * KILN_MAX_RANKS];
  int cstart[2 * KILN_MAX_RANKS + 1];
  int child[2 * KILN_MAX_RANKS];
} repTree;

/* The tree of representative chunk c in route R on logical topology L2 (from root). */
static kilnResult_t rep_tree(const synLogical* L2, const synRoute* R, int c, int root, repTree* T) {
  const int n2 = L2->n, g = L2->gpn;
  for (int v = 0; v < n2; v++) {
    const int l = R->parent[(size_t)c * n2 + v];
    T->par[v] = l < 0 || v == root ? -1 : L2->links[l].src;
  }
  memset(T->cstart, 0, sizeof(int) * (size_t)(n2 + 1));
  for (int v = 0; v < n2; v++)
    if (T->par[v] >= 0) T->cstart[T->par[v] + 1]++;
  for (int v = 0; v < n2; v++) T->cstart[v + 1] += T->cstart[v];
  int fill[2 * KILN_MAX_RANKS];
  memcpy(fill, T->cstart, sizeof(int) * (size_t)n2);
  for (int v = 0; v < n2; v++)
    if (T->par[v] >= 0) T->child[fill[T->par[v]]++] = v;
  T->nord = 0;
  T->ord[T->nord++] = root;
  for (int h = 0; h < T->nord; h++) {
    const int u = T->ord[h];
    for (int k = T->cstart[u]; k < T->cstart[u + 1]; k++) T->ord[T->nord++] = T->child[k];
  }
  /* a chunk leaves its origin node once: no rank of node 0 is reached through node 1 */
  for (int h = 1; h < T->nord; h++) {
    const int v = T->ord[h];
    if (v < g && T->par[v] >= g)
      return kilnSetError(
          KILN_ERR_UNSUPPORTED,
          "node-level synthesis: a chunk of local GPU %d reaches local GPU %d of its own node through "
          "another node; the sketch's links inside a node must let a node's chunks reach its GPUs "
          "(or synthesize without it: --node-level off)",
          root % g, v);
  }
  return KILN_SUCCESS;
}

/* Rank of representative rank v (0..2g-1) in copy s (0: the origin node a; s >= 1: node a + s). */
static inline int map_rank(int v, int g, int N, int a, int s) {
  return v < g ? a * g + v : ((a + s) % N) * g + v - g;
}

/* Transfers of one multicast chunk of node a over the representative tree T: those inside node a
 * once, the others once per other node. kind SYN_COPY: along the tree from the root; SYN_REDUCE:
 * against it, towards the root. Fills idx[v * N + s] with the transfer into (COPY) or out of
 * (REDUCE) representative rank v in copy s, and who[i] with v * N + s for each transfer i it adds
 * (who[i - base]). */
static kilnResult_t emit_tree(synXfers* X, const synLogical* L, int N, int g, int a, int chunk,
                              const repTree* T, int phase, synKind kind, int* idx, int* who, int base) {
  const int n = L->n;
  for (int h = 1; h < T->nord; h++) {
    const int v = T->ord[h], u = T->par[v];
    const int copies = v < g ? 1 : N;
    for (int s = v < g ? 0 : 1; s < copies; s++) {
      const int ru = map_rank(u, g, N, a, s), rv = map_rank(v, g, N, a, s);
      const int src = kind == SYN_COPY ? ru : rv, dst = kind == SYN_COPY ? rv : ru;
      const int link = L->link_of[(size_t)src * n + dst];
      if (link < 0)
        return kilnSetError(KILN_ERR_INTERNAL, "node-level expansion: no logical link %d -> %d", src, dst);
      const int i = synXfersAdd(X, chunk, link, src, dst, phase, kind);
      if (i < 0) return kilnSetError(KILN_ERR_NO_MEMORY, "out of memory expanding the routes");
      idx[v * N + s] = i;
      who[i - base] = v * N + s;
      X->x[i].tie = s;
    }
  }
  return KILN_SUCCESS;
}

/* Predecessors of the reduce transfer out of representative rank v in copy s: the transfers out
 * of its children (a child in node 1 under a parent in node 0 arrives from every copy). */
static bool reduce_preds(synXfers* X, const repTree* T, int N, int g, int v, int s, const int* up) {
  for (int k = T->cstart[v]; k < T->cstart[v + 1]; k++) {
    const int w = T->child[k];
    if (w >= g && v < g) {
      for (int s2 = 1; s2 < N; s2++)
        if (!synXfersAddPred(X, up[w * N + s2])) return false;
    } else if (!synXfersAddPred(X, up[w * N + (w < g ? 0 : s)])) {
      return false;
    }
  }
  return true;
}

kilnResult_t synXfersExpand(kilnColl_t coll, int N, const synLogical* L2, const synLogical* Lt2,
                            const synChunks* C2, const synRoute* ag2, const synRoute* rs2,
                            const synLogical* L, int k, synXfers* out) {
  memset(out, 0, sizeof *out);
  const int g = L2->gpn, n2 = L2->n, n = L->n;
  kilnResult_t r = KILN_SUCCESS;
  repTree* ta = malloc(sizeof *ta);
  repTree* tr = malloc(sizeof *tr);
  int* down = malloc(sizeof(int) * (size_t)n2 * (size_t)N);
  int* up = malloc(sizeof(int) * (size_t)n2 * (size_t)N);
  int* who = malloc(sizeof(int) * (size_t)n2 * (size_t)N * 2); /* a chunk's transfers: both trees */
  if (!ta || !tr || !down || !up || !who) {
    r = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
    goto out_free;
  }
  if (coll == KILN_COLL_ALLTOALL) {
    /* each (source, destination) pair: the representative path, its node 1 being the destination's
     * node; pairs in shifted order (source p's s-th pair goes to p + s), so that ties in the
     * ordering spread the sends over the receivers */
    for (int p = 0; p < n && r == KILN_SUCCESS; p++)
      for (int sh = 1; sh < n && r == KILN_SUCCESS; sh++) {
        const int d = (p + sh) % n, a = p / g, b = d / g;
        const int rd = b == a ? d % g : g + d % g;
        for (int j = 0; j < k && r == KILN_SUCCESS; j++) {
          const int cr = ((p % g) * n2 + rd) * k + j, chunk = (p * n + d) * k + j;
          int path[2 * KILN_MAX_RANKS], np = 0;
          for (int v = rd; v != p % g;) {
            const int l = ag2->parent[(size_t)cr * n2 + v];
            if (l < 0 || np >= n2) {
              r = kilnSetError(KILN_ERR_INTERNAL, "node-level expansion: broken path");
              break;
            }
            path[np++] = v;
            v = L2->links[l].src;
          }
          int prev = -1;
          for (int h = np - 1; h >= 0 && r == KILN_SUCCESS; h--) {
            const int v = path[h], u = h + 1 < np ? path[h + 1] : p % g;
            const int src = map_rank(u, g, N, a, b == a ? 0 : (b - a + N) % N);
            const int dst = map_rank(v, g, N, a, b == a ? 0 : (b - a + N) % N);
            const int link = L->link_of[(size_t)src * n + dst];
            const int i = link < 0 ? -2 : synXfersAdd(out, chunk, link, src, dst, 0, SYN_COPY);
            if (i == -2)
              r = kilnSetError(KILN_ERR_INTERNAL, "node-level expansion: no logical link %d -> %d", src, dst);
            else if (i < 0)
              r = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory expanding the routes");
            else {
              out->x[i].pred0 = out->npreds;
              if (prev >= 0 && !synXfersAddPred(out, prev))
                r = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
              out->x[i].npred = out->npreds - out->x[i].pred0;
              prev = i;
            }
          }
        }
      }
    goto out_free;
  }
  const bool rs = coll == KILN_COLL_REDUCESCATTER || coll == KILN_COLL_ALLREDUCE;
  const bool ag = coll != KILN_COLL_REDUCESCATTER;
  for (int c = 0; c < n * k && r == KILN_SUCCESS; c++) {
    const int p = c / k, a = p / g, cr = (p % g) * k + c % k;
    const int first = out->n;
    if (rs && (r = rep_tree(Lt2, rs2, cr, C2->pre[cr], tr)) == KILN_SUCCESS)
      r = emit_tree(out, L, N, g, a, c, tr, 0, SYN_REDUCE, up, who, first);
    const int mid = out->n;
    if (r == KILN_SUCCESS && ag && (r = rep_tree(L2, ag2, cr, C2->pre[cr], ta)) == KILN_SUCCESS)
      r = emit_tree(out, L, N, g, a, c, ta, rs ? 1 : 0, SYN_COPY, down, who, first);
    /* predecessors, in transfer order */
    for (int i = first; i < out->n && r == KILN_SUCCESS; i++) {
      const int v = who[i - first] / N, s = who[i - first] % N;
      out->x[i].pred0 = out->npreds;
      bool ok;
      if (i < mid) { /* reduce out of (v, s): after its children's */
        ok = reduce_preds(out, tr, N, g, v, s, up);
      } else { /* copy into (v, s): after the copy into its parent, or at the root every contribution */
        const int u = ta->par[v];
        if (u != ta->ord[0])
          ok = synXfersAddPred(out, down[u * N + (u < g ? 0 : s)]);
        else
          ok = !rs || reduce_preds(out, tr, N, g, u, 0, up);
      }
      if (!ok) r = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
      out->x[i].npred = out->npreds - out->x[i].pred0;
    }
  }
out_free:
  free(ta);
  free(tr);
  free(down);
  free(up);
  free(who);
  if (r != KILN_SUCCESS) synXfersFree(out);
  return r;
}
