/*
 * The machine kiln profile describes (solver/machine.h), on the CPU: PCI paths and NICs from a
 * fake sysfs tree (two PCIe switches each with two GPUs and an InfiniBand HCA, whose IPoIB
 * interface is no NIC of its own, an Ethernet interface on another root port, a loopback), the
 * nearest NIC of each GPU, and the topology written from such a machine (NVSwitch, direct NVLinks,
 * PCIe) read back with its switch, links, NICs and the links between nodes. kiln profile's
 * arguments.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../solver/machine.h"
#include "cli_run.h"
#include "kiln/topology.h"
#include "test_util.h"

static char root[64];

static void mkdirs(const char* rel) {
  char path[1024];
  snprintf(path, sizeof path, "%s%s", root, rel);
  for (char* p = path + strlen(root) + 1; *p; p++)
    if (*p == '/') {
      *p = '\0';
      mkdir(path, 0755);
      *p = '/';
    }
  mkdir(path, 0755);
}

/* root/<link> -> target (relative, as sysfs has them). */
static void symlink_at(const char* target, const char* link) {
  char path[1024];
  snprintf(path, sizeof path, "%s%s", root, link);
  cr_assert(symlink(target, path) == 0, "symlink %s", path);
}

static const char* const kDev = "/sys/devices";
#define SW0 "/pci0000:00/0000:00:01.0/0000:01:00.0"
#define SW1 "/pci0000:80/0000:80:01.0/0000:81:00.0"
#define ETH "/pci0000:00/0000:00:03.0/0000:05:00.0"

static void fake_sysfs(void) {
  make_tmpdir(root, sizeof root);
  const char* fns[] = {SW0 "/0000:02:00.0",
                       SW0 "/0000:02:01.0",
                       SW0 "/0000:02:02.0",
                       SW1 "/0000:82:00.0",
                       SW1 "/0000:82:01.0",
                       SW1 "/0000:82:02.0",
                       ETH};
  char rel[512];
  for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
    snprintf(rel, sizeof rel, "%s%s", kDev, fns[i]);
    mkdirs(rel);
  }
  mkdirs("/sys/bus/pci/devices");
  mkdirs("/sys/class/infiniband/mlx5_0");
  mkdirs("/sys/class/infiniband/mlx5_1");
  mkdirs("/sys/class/net/eth0");
  mkdirs("/sys/class/net/ib0");
  mkdirs("/sys/class/net/lo");
  const char* gpus[] = {SW0 "/0000:02:00.0", SW0 "/0000:02:02.0", SW1 "/0000:82:00.0", SW1 "/0000:82:02.0"};
  for (int g = 0; g < 4; g++) {
    char target[512], link[128];
    snprintf(target, sizeof target, "../../../devices%s", gpus[g]);
    snprintf(link, sizeof link, "/sys/bus/pci/devices/%s", strrchr(gpus[g], '/') + 1);
    symlink_at(target, link);
  }
  symlink_at("../../../devices" SW0 "/0000:02:01.0", "/sys/class/infiniband/mlx5_0/device");
  symlink_at("../../../devices" SW1 "/0000:82:01.0", "/sys/class/infiniband/mlx5_1/device");
  symlink_at("../../../devices" SW0 "/0000:02:01.0", "/sys/class/net/ib0/device");
  symlink_at("../../../devices" ETH, "/sys/class/net/eth0/device");
}

static void remove_sysfs(void) {
  if (root[0]) rm_tree(root);
  root[0] = '\0';
}

static void four_gpus(kilnMachine* m) {
  memset(m, 0, sizeof *m);
  m->ngpus = 4;
  /* As CUDA writes them (NVML writes 8 digits of domain: the same functions). */
  snprintf(m->gpu[0].busId, sizeof m->gpu[0].busId, "0000:02:00.0");
  snprintf(m->gpu[1].busId, sizeof m->gpu[1].busId, "0000:02:02.0");
  snprintf(m->gpu[2].busId, sizeof m->gpu[2].busId, "0000:82:00.0");
  snprintf(m->gpu[3].busId, sizeof m->gpu[3].busId, "0000:82:02.0");
}

Test(machine, nics_and_the_gpus_nearest_to_them, .init = fake_sysfs, .fini = remove_sysfs) {
  kilnMachine m;
  four_gpus(&m);
  cr_assert(eq(int, kilnMachinePci(&m, root), KILN_SUCCESS), "%s", kilnLastError());
  cr_assert(eq(str, m.gpu[0].path, "/sys/devices" SW0 "/0000:02:00.0"));
  /* mlx5_0, mlx5_1, eth0: ib0 is mlx5_0's own function, lo has no device. */
  cr_assert(eq(int, m.nnics, 3));
  cr_assert(eq(str, m.nic[0].name, "mlx5_0"));
  cr_assert(m.nic[0].ib);
  cr_assert(eq(str, m.nic[1].name, "mlx5_1"));
  cr_assert(eq(str, m.nic[2].name, "eth0"));
  cr_assert(not(m.nic[2].ib));
  const int want[4] = {0, 0, 1, 1};
  for (int g = 0; g < 4; g++) cr_assert(eq(int, m.nicOf[g], want[g]), "GPU %d", g);
}

Test(machine, without_infiniband_the_ethernet_interface_serves_every_gpu, .init = fake_sysfs,
     .fini = remove_sysfs) {
  char dir[512];
  snprintf(dir, sizeof dir, "%s/sys/class/infiniband", root);
  rm_tree(dir);
  snprintf(dir, sizeof dir, "%s/sys/class/net/ib0", root);
  rm_tree(dir);
  kilnMachine m;
  four_gpus(&m);
  cr_assert(eq(int, kilnMachinePci(&m, root), KILN_SUCCESS), "%s", kilnLastError());
  cr_assert(eq(int, m.nnics, 1));
  for (int g = 0; g < 4; g++) cr_assert(eq(int, m.nicOf[g], 0), "GPU %d", g);
  /* A GPU sysfs does not know: no path, no NIC. */
  snprintf(m.gpu[3].busId, sizeof m.gpu[3].busId, "0000:c1:00.0");
  cr_assert(eq(int, kilnMachinePci(&m, root), KILN_SUCCESS));
  cr_assert(eq(str, m.gpu[3].path, ""));
  cr_assert(eq(int, m.nicOf[3], -1));
}

/* alpha 1 + a/10, beta 2 + b/10 on pair (a, b). */
static void measured(int g, double* alpha, double* beta) {
  for (int a = 0; a < g; a++)
    for (int b = 0; b < g; b++) {
      alpha[a * g + b] = 1 + a / 10.0;
      beta[a * g + b] = 2 + b / 10.0;
    }
}

/* Writes t, reads it back. */
static kilnTopology* round_trip(const kilnTopology* t) {
  char* xml = NULL;
  cr_assert(eq(int, kilnTopologyWriteMemory(t, &xml), KILN_SUCCESS), "%s", kilnLastError());
  kilnTopology* back = NULL;
  cr_assert(eq(int, kilnTopologyReadMemory(xml, strlen(xml), "profiled.xml", &back), KILN_SUCCESS), "%s\n%s",
            kilnLastError(), xml);
  free(xml);
  return back;
}

Test(machine, nvswitch_node_with_two_hcas_on_two_nodes, .init = fake_sysfs, .fini = remove_sysfs) {
  kilnMachine m;
  four_gpus(&m);
  cr_assert(eq(int, kilnMachinePci(&m, root), KILN_SUCCESS));
  for (int g = 0; g < 4; g++) m.switchLinks[g] = 18;
  double alpha[16], beta[16];
  measured(4, alpha, beta);
  kilnTopology* t = NULL;
  cr_assert(eq(int, kilnMachineTopology(&m, "box", alpha, beta, 2, 1.7, 20, &t), KILN_SUCCESS), "%s",
            kilnLastError());
  kilnTopology* b = round_trip(t);
  cr_assert(eq(int, b->nodes, 2));
  cr_assert(eq(int, b->gpus_per_node, 4));
  cr_assert(eq(int, b->ntswitches, 1));
  cr_assert(eq(int, b->tswitches[0].ngpus, 4));
  cr_assert(eq(int, b->ntlinks, 0), "pairs behind the switch get no links of their own");
  /* The switch's costs: the mean of its pairs'. */
  cr_assert(ieee_ulp_eq(dbl, b->tswitches[0].alpha_us, 1.15, 64), "%g", b->tswitches[0].alpha_us);
  cr_assert(ieee_ulp_eq(dbl, b->tswitches[0].beta_us_per_mb, 2.15, 64), "%g", b->tswitches[0].beta_us_per_mb);
  cr_assert(eq(int, b->ntnics, 2));
  cr_assert(eq(int, b->tnics[0].ngpus, 2));
  cr_assert(eq(int, b->tnics[0].gpus[0], 0));
  cr_assert(eq(int, b->tnics[0].gpus[1], 1));
  cr_assert(eq(int, b->tnics[1].gpus[0], 2));
  cr_assert(eq(int, b->tnics[1].gpus[1], 3));
  cr_assert(b->has_internode);
  cr_assert(eq(int, b->inter_kind, KILN_LINK_IB));
  cr_assert(ieee_ulp_eq(dbl, b->inter_beta_us_per_mb, 20, 4));
  /* Expanded: 8 ranks, each with a NIC, reaching the other node. */
  cr_assert(eq(int, b->nranks, 8));
  cr_assert(kilnTopologyLink(b, 0, 5) != NULL);
  cr_assert(kilnTopologyLink(b, 0, 5)->internode);
  kilnTopologyFree(t);
  kilnTopologyFree(b);
}

Test(machine, direct_nvlinks_and_pcie_pairs) {
  kilnMachine m;
  memset(&m, 0, sizeof m);
  m.ngpus = 3;
  m.nvlinks[0][1] = m.nvlinks[1][0] = 4;
  m.nicOf[0] = m.nicOf[1] = m.nicOf[2] = -1;
  double alpha[9], beta[9];
  measured(3, alpha, beta);
  kilnTopology* t = NULL;
  cr_assert(eq(int, kilnMachineTopology(&m, "mesh", alpha, beta, 1, -1, -1, &t), KILN_SUCCESS), "%s",
            kilnLastError());
  kilnTopology* b = round_trip(t);
  cr_assert(eq(int, b->ntswitches, 0));
  cr_assert(eq(int, b->ntlinks, 6));
  cr_assert(eq(int, kilnTopologyLink(b, 0, 1)->kind, KILN_LINK_NVLINK));
  cr_assert(eq(int, kilnTopologyLink(b, 0, 2)->kind, KILN_LINK_PCIE));
  cr_assert(eq(int, kilnTopologyLink(b, 2, 1)->kind, KILN_LINK_PCIE));
  cr_assert(ieee_ulp_eq(dbl, kilnTopologyLink(b, 2, 1)->alpha_us, 1.2, 4));
  cr_assert(not(b->has_internode));
  cr_assert(eq(int, b->ntnics, 0));
  kilnTopologyFree(t);
  kilnTopologyFree(b);
}

Test(machine, one_gpu_is_its_structure_only) {
  kilnMachine m;
  memset(&m, 0, sizeof m);
  m.ngpus = 1;
  m.switchLinks[0] = 18;
  m.nnics = 1;
  snprintf(m.nic[0].name, sizeof m.nic[0].name, "eth0");
  m.nicOf[0] = 0;
  kilnTopology* t = NULL;
  cr_assert(eq(int, kilnMachineTopology(&m, "one", NULL, NULL, 4, 30, 800, &t), KILN_SUCCESS), "%s",
            kilnLastError());
  kilnTopology* b = round_trip(t);
  cr_assert(eq(int, b->gpus_per_node, 1));
  cr_assert(eq(int, b->nodes, 4));
  cr_assert(eq(int, b->ntswitches, 0), "a switch of one GPU links nothing");
  cr_assert(eq(int, b->ntnics, 1));
  cr_assert(eq(int, b->inter_kind, KILN_LINK_OTHER));
  cr_assert(kilnTopologyLink(b, 0, 3) != NULL);
  kilnTopologyFree(t);
  kilnTopologyFree(b);
}

Test(machine, several_nodes_need_a_nic) {
  kilnMachine m;
  memset(&m, 0, sizeof m);
  m.ngpus = 2;
  m.nicOf[0] = m.nicOf[1] = -1;
  double alpha[4], beta[4];
  measured(2, alpha, beta);
  kilnTopology* t = NULL;
  cr_assert(eq(int, kilnMachineTopology(&m, "x", alpha, beta, 2, 1, 1, &t), KILN_ERR_INVALID_ARGUMENT));
  cr_assert(contains(kilnLastError(), "no NIC"), "%s", kilnLastError());
  cr_assert(eq(ptr, t, NULL));
  cr_assert(eq(int, kilnMachineTopology(&m, "x", alpha, beta, 0, 1, 1, &t), KILN_ERR_INVALID_ARGUMENT));
}

Test(machine, cli_profile_arguments_about_nodes) {
  char out[4096];
  if (run_kiln("--version", out, sizeof out) < 0) cr_skip_test("kiln CLI not built");
  expect_kiln(out, sizeof out, 2, "--nic-alpha and --nic-beta", "profile --nodes 2");
  expect_kiln(out, sizeof out, 2, "give --nodes too", "profile --nic-alpha 2 --nic-beta 20");
  expect_kiln(out, sizeof out, 2, NULL, "profile --nodes 2 --nic-alpha -1 --nic-beta 20");
  expect_kiln(out, sizeof out, 2, "--gpus 17", "profile --gpus 17");
  expect_kiln(out, sizeof out, 0, "--nodes M", "profile --help");
}
