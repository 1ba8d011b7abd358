/*
 * What kiln's own modules share across its libraries and binaries (the synthesizer, the runtime,
 * the generator, the CLI, the tests) and users do not need: no header under include/ declares
 * it, and it may change in any version. Functions marked KILN_INTERNAL leave libkiln.so (the
 * static synthesizer and the CLI call them); the rest stay inside it.
 */
#ifndef KILN_INTERNAL_H
#define KILN_INTERNAL_H

#include <stddef.h>

#include "kiln/kiln.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(KILN_BUILDING) && defined(__GNUC__)
#define KILN_INTERNAL __attribute__((visibility("default")))
#else
#define KILN_INTERNAL
#endif

/* Sets the thread's last error (printf-style; kilnLastError returns it) and returns r. */
KILN_INTERNAL kilnResult_t kilnSetError(kilnResult_t r, const char* fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Puts context in front of the thread's last error ("while reading x.xml: " + old). */
KILN_INTERNAL void kilnPrefixError(const char* fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* The name of the root element of the XML file at path (topology, sketch or algo for kiln's three
 * formats; a tool taking any of them can pick the reader by it), found past the prolog (XML
 * declaration, comments, processing instructions, blanks) as the readers find it, into out (cap
 * bytes). KILN_ERR_IO: the file cannot be opened or is not a regular file; KILN_ERR_PARSE: no root
 * element there (a DOCTYPE, which the readers refuse, junk, an empty file; a document past the
 * readers' size limit; a name of cap bytes or more); KILN_ERR_INVALID_ARGUMENT: no path, no out
 * or cap under 2; KILN_ERR_NO_MEMORY. Reads as much of the file as its prolog and the name take
 * (64 KiB for a usual file); the document itself is not checked: its reader does that. */
KILN_INTERNAL kilnResult_t kilnXmlFileRoot(const char* path, char* out, size_t cap);

struct kilnPlan;
/* The most threadblocks any rank of p has (0 for a plan without ranks): what a threadblock cap
 * (kilnSynthOptions.max_tbs, the SMs a runtime loads a plan on) is held against. */
KILN_INTERNAL int kilnPlanMaxTbs(const struct kilnPlan* p);

struct kilnTopology;
/* The node-local GPU through which channel i of NCCL's rings and trees enters every node in the
 * simulator's baselines (kilnBaselineSimulate), and in the synthesizer's floor plans that copy
 * them: the first GPU that the node's NIC i serves where the node has more than i NICs (NCCL gives
 * each channel a NIC of its own: on a DGX-2, whose NICs serve two GPUs each, channel i enters
 * through GPU 2i and leaves through GPU 2i - 1, so that 8 channels use all 8 NICs both ways), else
 * GPU i modulo the node's GPUs. */
KILN_INTERNAL int kilnChannelEntryGpu(const struct kilnTopology* t, int i);
/* The trees of NCCL's double binary tree as the simulator's baseline models them for an allreduce of
 * `bytes` on t: *ntrees trees (two per NIC of a node, mirrored, each carrying 1 / *ntrees of the
 * data), (*parents)[tree * nranks + rank] the rank's parent in that tree (-1 at its root), in
 * *slices slices each (the baseline interpolates between that count and one fewer). *parents is
 * malloc'ed. KILN_ERR_UNSUPPORTED where no chain runs through a node's links. */
KILN_INTERNAL kilnResult_t kilnBaselineTrees(const struct kilnTopology* t, uint64_t bytes, int* ntrees,
                                             int* slices, int** parents);

#ifdef __cplusplus
}
#endif
#endif /* KILN_INTERNAL_H */
