/* Chunk transfers from routed trees (paper 5.3): allgather and alltoall directly; reducescatter as
 * the inverse of an allgather (tree edges reversed, receivers reduce, a rank forwards a chunk
 * only after all of its children's contributions arrived); allreduce as reducescatter followed
 * by allgather, where a chunk's allgather starts at its root once its reduction is complete. */
#include <stdlib.h>
#include <string.h>

#include "synth_internal.h"

void synXfersFree(synXfers* X) {
  free(X->x);
  free(X->preds);
  free(X->link_order);
  free(X->link_start);
  free(X->port_order);
  free(X->port_start);
  memset(X, 0, sizeof *X);
}

int synXfersAdd(synXfers* X, int chunk, int link, int src, int dst, int phase, synKind kind) {
  if (X->n == X->cap) {
    int cap = X->cap ? 2 * X->cap : 256;
    synXfer* nx = realloc(X->x, (size_t)cap * sizeof *nx);
    if (!nx) return -1;
    X->x = nx;
    X->cap = cap;
  }
  synXfer* x = &X->x[X->n];
  memset(x, 0, sizeof *x);
  x->chunk = chunk;
  x->src = src;
  x->dst = dst;
  x->link = link;
  x->phase = phase;
  x->kind = kind;
  return X->n++;
}

bool synXfersAddPred(synXfers* X, int p) {
  if (X->npreds == X->cappreds) {
    int cap = X->cappreds ? 2 * X->cappreds : 256;
    int* np = realloc(X->preds, (size_t)cap * sizeof *np);
    if (!np) return false;
    X->preds = np;
    X->cappreds = cap;
  }
  X->preds[X->npreds++] = p;
  return true;
}

kilnResult_t synXfersBuild(kilnColl_t coll, const synLogical* L, const synLogical* Lt, const synChunks* C,
                           const synRoute* ag, const synRoute* rs, synXfers* out) {
  memset(out, 0, sizeof *out);
  int n = L->n, nc = C->nchunks;
  kilnResult_t r = KILN_SUCCESS;
  /* into[c*n+v]: the allgather transfer delivering c to v; up[c*n+v]: the reducescatter transfer
   * carrying v's partial sum of c towards the root */
  int* into = malloc((size_t)nc * (size_t)n * sizeof(int));
  int* up = malloc((size_t)nc * (size_t)n * sizeof(int));
  if (!into || !up) {
    r = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
    goto out_free;
  }
  for (size_t i = 0; i < (size_t)nc * n; i++) into[i] = up[i] = -1;

  if (rs) {
    for (int c = 0; c < nc; c++)
      for (int v = 0; v < n; v++) {
        int tl = rs->parent[(size_t)c * n + v];
        if (tl < 0) continue;
        int u = Lt->links[tl].src; /* tree edge u -> v in the transposed topology */
        if (L->link_of[v * n + u] < 0) {
          r = kilnSetError(KILN_ERR_INTERNAL, "reversed tree edge %d->%d is not a logical link", v, u);
          goto out_free;
        }
        int i = synXfersAdd(out, c, L->link_of[v * n + u], v, u, 0, SYN_REDUCE);
        if (i < 0) {
          r = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
          goto out_free;
        }
        up[(size_t)c * n + v] = i;
      }
  }
  if (ag) {
    int phase = rs ? 1 : 0;
    for (int c = 0; c < nc; c++) {
      /* BFS order from the root so that a transfer's predecessor exists first */
      int s = C->pre[c];
      int qh = 0, qt = 0;
      int stack[KILN_MAX_RANKS];
      stack[qt++] = s;
      while (qh < qt) {
        int u = stack[qh++];
        for (int v = 0; v < n; v++) {
          int l = ag->parent[(size_t)c * n + v];
          if (l < 0 || L->links[l].src != u) continue;
          int i = synXfersAdd(out, c, L->link_of[u * n + v], u, v, phase, SYN_COPY);
          if (i < 0) {
            r = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
            goto out_free;
          }
          into[(size_t)c * n + v] = i;
          stack[qt++] = v;
        }
      }
    }
  }
  /* predecessors */
  for (int i = 0; i < out->n; i++) {
    synXfer* x = &out->x[i];
    x->pred0 = out->npreds;
    int c = x->chunk;
    bool ok = true;
    if (x->kind == SYN_REDUCE) {
      for (int w = 0; w < n; w++) {
        int j = up[(size_t)c * n + w];
        if (j >= 0 && out->x[j].dst == x->src) ok = ok && synXfersAddPred(out, j);
      }
    } else if (x->src != C->pre[c]) {
      ok = synXfersAddPred(out, into[(size_t)c * n + x->src]);
    } else if (rs) {
      for (int w = 0; w < n; w++) {
        int j = up[(size_t)c * n + w];
        if (j >= 0 && out->x[j].dst == x->src) ok = ok && synXfersAddPred(out, j);
      }
    }
    if (!ok) {
      r = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
      goto out_free;
    }
    x = &out->x[i];
    x->npred = out->npreds - x->pred0;
  }
  (void)coll;
out_free:
  free(into);
  free(up);
  if (r != KILN_SUCCESS) synXfersFree(out);
  return r;
}
