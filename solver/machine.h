/*
 * The machine as kiln profile finds it: its GPUs (PCI bus ids), the NVLinks between them or to an
 * NVSwitch (NVML, loaded with dlopen from the driver's libnvidia-ml.so.1), its NICs (InfiniBand
 * HCAs and network interfaces under /sys/class) and the one each GPU is nearest to by PCI path; and
 * the topology of one node of it, replicated over `nodes` nodes, with measured α and β.
 *
 * Nearest: the NIC whose PCI path (/sys/devices/pci.../...) shares the most components with the
 * GPU's (the same PCIe switch before the same root port, before the same root complex); ties go
 * to the NIC found first (InfiniBand before the network interfaces, each in name order). A network
 * interface without a device (loopback, bridges, tunnels) and one on the PCI function of an
 * InfiniBand HCA (its IPoIB interface) is not a NIC of its own.
 *
 * Internal to kiln: not a public header; its functions leave libkiln for the CLI and the tests
 * (KILN_INTERNAL).
 */
#ifndef KILN_MACHINE_H
#define KILN_MACHINE_H

#include <stdbool.h>
#include <stdio.h>

#include "kiln/topology.h"
#include "kiln_internal.h"

#define KILN_MACHINE_MAX_GPUS 16
#define KILN_MACHINE_MAX_NICS 32

typedef struct kilnMachineGpu {
  char busId[32]; /* "dddd:bb:dd.f" as CUDA writes it */
  char path[512]; /* its PCI path, "/sys/devices/pci0000:00/..." ("" where not found) */
} kilnMachineGpu;

typedef struct kilnMachineNic {
  char name[64];  /* "mlx5_0", "eth0" */
  bool ib;        /* an InfiniBand (or RoCE) HCA, else a network interface */
  char path[512]; /* its PCI path */
} kilnMachineNic;

typedef struct kilnMachine {
  int ngpus;
  kilnMachineGpu gpu[KILN_MACHINE_MAX_GPUS];
  int nvlinks[KILN_MACHINE_MAX_GPUS][KILN_MACHINE_MAX_GPUS]; /* active NVLinks from a straight to b */
  int switchLinks[KILN_MACHINE_MAX_GPUS];                    /* active NVLinks from a to an NVSwitch */
  int nnics;
  kilnMachineNic nic[KILN_MACHINE_MAX_NICS];
  int nicOf[KILN_MACHINE_MAX_GPUS]; /* the NIC each GPU is nearest to, -1: none */
} kilnMachine;

/* PCI paths under root ("" or NULL: "/"): each GPU's (root/sys/bus/pci/devices/<busId>), the NICs
 * (root/sys/class/infiniband/ *, root/sys/class/net/ *, through their device links) and nicOf.
 * Paths are kept without the root. A GPU whose path is not found keeps "" and nicOf -1. Fails only
 * out of memory or when a folder exists but cannot be read. */
KILN_INTERNAL kilnResult_t kilnMachinePci(kilnMachine* m, const char* root);

/* NVLinks of the GPUs from NVML (nvlinks, switchLinks). false when NVML cannot be loaded or
 * answers none of the GPUs, the reason in why. */
KILN_INTERNAL bool kilnMachineNvml(kilnMachine* m, char* why, size_t len);

/* The topology: `nodes` nodes of m's GPUs. GPUs with NVLinks to an NVSwitch form a switch (α and β
 * the mean of their pairs'); other pairs get a link each, nvlink where they have NVLinks between
 * them, pcie otherwise, with their own α and β. alpha/beta: [ngpus * ngpus] (row a, column b), or
 * NULL where nothing was measured (one GPU). The NICs nearest to some GPU, with those GPUs; with
 * nodes > 1 the links between nodes at nicAlpha and nicBeta (kind ib where a NIC is InfiniBand).
 * KILN_ERR_INVALID_ARGUMENT where nodes > 1 but no GPU has a NIC. */
KILN_INTERNAL kilnResult_t kilnMachineTopology(const kilnMachine* m, const char* name, const double* alpha,
                                               const double* beta, int nodes, double nicAlpha, double nicBeta,
                                               kilnTopology** out);

/* A line per GPU saying what was found (NVLinks, NVSwitch, nearest NIC), into f. */
KILN_INTERNAL void kilnMachineDescribe(const kilnMachine* m, FILE* f);

#endif
