/* Plans with memory steps on the GPU (memplan.c): what exec.c and comm.c call. */
#ifndef KILN_HOST_MEMPLAN_H
#define KILN_HOST_MEMPLAN_H

#include "kiln/registry.h"
#include "runtime_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

struct kilnMemPlan;

/* comm.c, at creation (after the symmetric kernels' areas, which end at `at`): places the plans'
 * areas of the window (kilnComm.mem*): plain scratch halves of symHalf each, line halves, signal
 * and arrival words; none (memHalf 0) where the communicator has no symmetric staging. */
void kilnMemPlanAreas(struct kilnComm* c, size_t at);

/* exec.c's kilnPlanLoad for a plan with memory steps (kilnPlanHasMemorySteps), after its checks:
 * k chunks per block of a user buffer (exec.c plan_geometry); the forms it serves from the plan
 * (kilnPlanServes, kilnPlanInPlaceOnly). KILN_ERR_UNSUPPORTED where this communicator cannot run the plan (no plan areas,
 * more ranks or threadblocks than the kernels take, steps kiln/passes.h does not run, lines of two
 * protocols). */
kilnResult_t kilnMemPlanLoad(struct kilnComm* c, const kilnPlan* p, int k, struct kilnMemPlan** out);
/* kilnRun of such an exec: one kernel on `stream` (queued in a group as kilnRun's). Refuses
 * (KILN_ERR_UNSUPPORTED) a call whose plan reaches a peer's input or output where that buffer is
 * not in a symmetric window added to the communicator (kilnCommWindowAdd), LL12 lines of elements
 * wider than 4 bytes, and a chunk too large for the plan areas even sliced. */
kilnResult_t kilnMemPlanRun(struct kilnMemPlan* m, const void* sendbuf, void* recvbuf, size_t count,
                            kilnDataType_t dtype, kilnRedOp_t op, cudaStream_t stream);
/* Whether kilnMemPlanRun would take such a call (the checks above; a predicate, no error text). */
bool kilnMemPlanServes(const struct kilnMemPlan* m, const void* sendbuf, const void* recvbuf, size_t count,
                       kilnDataType_t dtype);
/* Waits for the communicator's last call and frees m. */
void kilnMemPlanFree(struct kilnMemPlan* m);
/* kilnExecUseBaked for such an exec. */
bool kilnMemPlanUseBaked(struct kilnMemPlan* m, bool on);

#ifdef __cplusplus
}
#endif
#endif
