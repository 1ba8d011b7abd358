/*
 * Topologies: GPUs, directed α-β links, switches and NICs.
 *
 * A topology is a node template (links, switches and NICs among the node's local GPUs)
 * replicated `nodes` times, plus inter-node connectivity. The template is what the XML holds;
 * the expanded arrays (global ranks r = node * gpus_per_node + local) are derived from it by
 * kilnTopologyExpand(), which every constructor calls.
 *
 * Cost model: sending s bytes over a link costs alpha_us + beta_us_per_mb * s / 1e6 µs.
 * A link's `mult` parallel lanes multiply its bandwidth (β is per lane).
 * Links through a switch serialize at the sender's and the receiver's switch port.
 * Inter-node traffic goes through the sender's and receiver's NICs, which serialize too.
 *
 * Ownership: a kilnTopology returned by any constructor is owned by the caller and freed with
 * kilnTopologyFree(); everything it points to is owned by it.
 *
 * XML (element and attribute names in topology.c's table):
 *   <topology name="hgx-h100" nodes="1" gpus_per_node="8">
 *     <node>
 *       <link src="0" dst="1" alpha="0.7" beta="46" mult="2" kind="nvlink"/>
 *       <switch name="nvswitch" gpus="0 1 2 3 4 5 6 7" alpha="0.74" beta="2.7" kind="nvlink"/>
 *       <nic id="0" gpus="0 1"/>
 *     </node>
 *     <internode alpha="1.7" beta="106" kind="ib"/>
 *   </topology>
 */
#ifndef KILN_TOPOLOGY_H
#define KILN_TOPOLOGY_H

#include "kiln/kiln.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_NAME_MAX 64
#define KILN_MAX_RANKS 1024

#define KILN_LINK_KINDS(X) \
  X(KILN_LINK_NVLINK, "nvlink") \
  X(KILN_LINK_PCIE, "pcie")     \
  X(KILN_LINK_IB, "ib")         \
  X(KILN_LINK_OTHER, "other")

typedef enum {
#define KILN_X_ENUM(e, n) e,
  KILN_LINK_KINDS(KILN_X_ENUM)
#undef KILN_X_ENUM
  KILN_NUM_LINK_KINDS
} kilnLinkKind_t;

KILN_API const char* kilnLinkKindName(kilnLinkKind_t k);
KILN_API bool kilnLinkKindParse(const char* s, kilnLinkKind_t* out);

/* A directed link. In the template, src/dst are node-local; in the expansion, global ranks. */
typedef struct kilnLink {
  int src, dst;
  double alpha_us;       /* latency per send */
  double beta_us_per_mb; /* inverse bandwidth per lane, µs per MB (1e6 bytes) */
  int mult;              /* parallel lanes, >= 1 */
  kilnLinkKind_t kind;
  int switch_id;         /* expansion: index into switches[] if the link crosses a switch, else -1 */
  bool internode;        /* expansion: true if src and dst are on different nodes */
} kilnLink;

/* GPUs joined by a switch: every ordered pair of members is linked at (alpha, beta). */
typedef struct kilnSwitch {
  char name[KILN_NAME_MAX];
  int ngpus;
  int* gpus; /* template: node-local ids; expansion: global ranks */
  double alpha_us, beta_us_per_mb;
  kilnLinkKind_t kind;
} kilnSwitch;

/* A NIC and the GPUs that share it (template: local ids; expansion: global ranks). */
typedef struct kilnNic {
  int id;
  int ngpus;
  int* gpus;
} kilnNic;

typedef struct kilnTopology {
  char name[KILN_NAME_MAX];
  int nodes;          /* >= 1 */
  int gpus_per_node;  /* >= 1 */
  int nranks;         /* nodes * gpus_per_node */

  /* Template (what the XML holds). */
  int ntlinks;    kilnLink* tlinks;
  int ntswitches; kilnSwitch* tswitches;
  int ntnics;     kilnNic* tnics;
  bool has_internode;       /* every GPU with a NIC reaches every GPU of other nodes */
  double inter_alpha_us, inter_beta_us_per_mb;
  kilnLinkKind_t inter_kind;

  /* Expansion (derived; global ranks). */
  int nlinks;    kilnLink* links;     /* at most one link per ordered (src, dst) pair */
  int nswitches; kilnSwitch* switches;
  int nnics;     kilnNic* nics;
  int* nic_of;   /* [nranks]: index into nics[] of the rank's NIC, -1 if none */
  int* link_index; /* [nranks * nranks]: index into links[] for (src, dst), -1 if none */
} kilnTopology;

/* Built-in topologies by name: "ndv2", "dgx2", "hgx-h100", "switchN" (N in 2..KILN_MAX_RANKS),
 * "torusRxC" (R, C >= 2), with `nodes` copies (>= 1). Unknown names fail with
 * KILN_ERR_INVALID_ARGUMENT and a message listing the known ones. */
KILN_API kilnResult_t kilnTopologyBuiltin(const char* name, int nodes, kilnTopology** out);
/* Space-separated list of the built-in names, for help texts. */
KILN_API const char* kilnTopologyBuiltinNames(void);

/* Reads a topology from an XML file / memory. Errors name the file and line. */
KILN_API kilnResult_t kilnTopologyReadFile(const char* path, kilnTopology** out);
KILN_API kilnResult_t kilnTopologyReadMemory(const char* xml, size_t len, const char* name,
                                             kilnTopology** out);
/* Writes the XML form. The file is written to a temporary beside it and renamed, so a
 * failure never leaves a partial file. path "-" writes to stdout. */
KILN_API kilnResult_t kilnTopologyWriteFile(const kilnTopology* t, const char* path);
/* Writes into a malloc'ed NUL-terminated string the caller frees. */
KILN_API kilnResult_t kilnTopologyWriteMemory(const kilnTopology* t, char** out);

/* (Re)computes the expansion from the template and validates it (ids in range, α, β >= 0,
 * mult >= 1, no self links). Called by every constructor; call it after editing a template. */
KILN_API kilnResult_t kilnTopologyExpand(kilnTopology* t);

/* Link from src to dst (global ranks), or NULL. */
KILN_API const kilnLink* kilnTopologyLink(const kilnTopology* t, int src, int dst);

KILN_API void kilnTopologyFree(kilnTopology* t);

#ifdef __cplusplus
}
#endif
#endif /* KILN_TOPOLOGY_H */
