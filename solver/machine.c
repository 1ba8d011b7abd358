/* The machine kiln profile describes (machine.h): PCI paths from sysfs, NVLinks from NVML, the
 * topology of its nodes. */
#define _GNU_SOURCE
#include "machine.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- PCI paths ---- */

static bool parse_bus_id(const char* s, unsigned* dom, unsigned* bus, unsigned* dev, unsigned* fn) {
  return s && sscanf(s, "%x:%x:%x.%x", dom, bus, dev, fn) == 4;
}

/* Whether two bus ids name the same PCI function (NVML writes 8 digits of domain, CUDA 4). */
static bool same_bus(const char* a, const char* b) {
  unsigned d1, b1, v1, f1, d2, b2, v2, f2;
  return parse_bus_id(a, &d1, &b1, &v1, &f1) && parse_bus_id(b, &d2, &b2, &v2, &f2) && d1 == d2 && b1 == b2 &&
         v1 == v2 && f1 == f2;
}

/* The real path of root + rel, without root, into out ("" where it does not resolve). */
static void pci_path(const char* root, const char* rel, char* out, size_t len) {
  char full[PATH_MAX], real[PATH_MAX], realRoot[PATH_MAX];
  out[0] = '\0';
  snprintf(full, sizeof full, "%s%s", root, rel);
  if (!realpath(full, real)) return;
  size_t skip = 0;
  if (root[0]) {
    if (!realpath(root, realRoot)) return;
    skip = strlen(realRoot);
    if (strncmp(real, realRoot, skip) != 0) return;
  }
  if (strlen(real + skip) >= len) return; /* longer than kiln keeps: as not found */
  memcpy(out, real + skip, strlen(real + skip) + 1);
}

/* Components two paths share from their start. */
static int shared_depth(const char* a, const char* b) {
  int depth = 0;
  while (*a && *a == *b) {
    const char* ea = strchr(a + 1, '/');
    const char* eb = strchr(b + 1, '/');
    const size_t la = ea ? (size_t)(ea - a) : strlen(a), lb = eb ? (size_t)(eb - b) : strlen(b);
    if (la != lb || strncmp(a, b, la) != 0) break;
    depth++;
    a += la;
    b += lb;
  }
  return depth;
}

static int cmp_name(const void* x, const void* y) { return strcmp(*(char* const*)x, *(char* const*)y); }

/* The entries of a folder in name order (*n of them; free each and the array), NULL with *n 0
 * where it does not exist. */
static char** list_dir(const char* path, int* n, kilnResult_t* res) {
  *n = 0;
  *res = KILN_SUCCESS;
  DIR* d = opendir(path);
  if (!d) {
    if (errno != ENOENT && errno != ENOTDIR)
      *res = kilnSetError(KILN_ERR_IO, "%s: %s", path, strerror(errno));
    return NULL;
  }
  char** v = NULL;
  int cap = 0;
  struct dirent* e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    if (*n == cap) {
      cap = cap ? 2 * cap : 16;
      char** w = realloc(v, (size_t)cap * sizeof *w);
      if (!w) {
        *res = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
        break;
      }
      v = w;
    }
    if (!(v[*n] = strdup(e->d_name))) {
      *res = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
      break;
    }
    (*n)++;
  }
  closedir(d);
  if (v) qsort(v, (size_t)*n, sizeof *v, cmp_name);
  return v;
}

static void free_list(char** v, int n) {
  for (int i = 0; i < n; i++) free(v[i]);
  free(v);
}

/* The NICs of one class folder (infiniband or net). */
static kilnResult_t scan_class(kilnMachine* m, const char* root, const char* cls, bool ib) {
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s/sys/class/%s", root, cls);
  int n = 0;
  kilnResult_t res = KILN_SUCCESS;
  char** names = list_dir(dir, &n, &res);
  for (int i = 0; i < n && res == KILN_SUCCESS && m->nnics < KILN_MACHINE_MAX_NICS; i++) {
    char rel[PATH_MAX], path[512];
    snprintf(rel, sizeof rel, "/sys/class/%s/%s/device", cls, names[i]);
    pci_path(root, rel, path, sizeof path);
    if (!path[0]) continue; /* virtual: loopback, bridge, tunnel */
    bool known = false;     /* an HCA's IPoIB interface: the same PCI function */
    for (int j = 0; j < m->nnics && !known; j++) known = !strcmp(m->nic[j].path, path);
    if (known) continue;
    kilnMachineNic* nic = &m->nic[m->nnics++];
    snprintf(nic->name, sizeof nic->name, "%s", names[i]);
    snprintf(nic->path, sizeof nic->path, "%s", path);
    nic->ib = ib;
  }
  free_list(names, n);
  return res;
}

kilnResult_t kilnMachinePci(kilnMachine* m, const char* root) {
  if (!root) root = "";
  if (!strcmp(root, "/")) root = "";
  for (int g = 0; g < m->ngpus; g++) {
    char rel[128];
    /* sysfs names functions with a 4-digit domain, lower case. */
    unsigned dom, bus, dev, fn;
    if (parse_bus_id(m->gpu[g].busId, &dom, &bus, &dev, &fn)) {
      snprintf(rel, sizeof rel, "/sys/bus/pci/devices/%04x:%02x:%02x.%x", dom, bus, dev, fn);
      pci_path(root, rel, m->gpu[g].path, sizeof m->gpu[g].path);
    } else {
      m->gpu[g].path[0] = '\0';
    }
  }
  m->nnics = 0;
  kilnResult_t res = scan_class(m, root, "infiniband", true);
  if (res == KILN_SUCCESS) res = scan_class(m, root, "net", false);
  for (int g = 0; g < m->ngpus; g++) {
    m->nicOf[g] = -1;
    int best = -1;
    for (int i = 0; i < m->nnics && m->gpu[g].path[0]; i++) {
      const int d = shared_depth(m->gpu[g].path, m->nic[i].path);
      if (d > best) {
        best = d;
        m->nicOf[g] = i;
      }
    }
  }
  return res;
}

/* ---- NVML ---- */

/* The few NVML types and functions kiln asks for (nvml.h's, declared here: NVML comes from the
 * driver at run time, it is no build dependency). */
typedef struct nvmlDevice_st* nvmlDevice_t;
typedef int nvmlReturn_t; /* 0: NVML_SUCCESS */
typedef struct {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
} nvmlPciInfo_t;
enum { NVML_NVLINK_MAX_LINKS = 18, NVML_NVLINK_DEVICE_TYPE_GPU = 0, NVML_NVLINK_DEVICE_TYPE_SWITCH = 2 };

bool kilnMachineNvml(kilnMachine* m, char* why, size_t len) {
  void* h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(why, len, "NVML not loaded (libnvidia-ml.so.1: %s)", dlerror());
    return false;
  }
  nvmlReturn_t (*init)(void) = (nvmlReturn_t(*)(void))dlsym(h, "nvmlInit_v2");
  nvmlReturn_t (*shutdown)(void) = (nvmlReturn_t(*)(void))dlsym(h, "nvmlShutdown");
  nvmlReturn_t (*byBus)(const char*, nvmlDevice_t*) =
      (nvmlReturn_t(*)(const char*, nvmlDevice_t*))dlsym(h, "nvmlDeviceGetHandleByPciBusId_v2");
  nvmlReturn_t (*state)(nvmlDevice_t, unsigned, int*) =
      (nvmlReturn_t(*)(nvmlDevice_t, unsigned, int*))dlsym(h, "nvmlDeviceGetNvLinkState");
  nvmlReturn_t (*remotePci)(nvmlDevice_t, unsigned, nvmlPciInfo_t*) = (nvmlReturn_t(*)(
      nvmlDevice_t, unsigned, nvmlPciInfo_t*))dlsym(h, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
  nvmlReturn_t (*remoteType)(nvmlDevice_t, unsigned, int*) =
      (nvmlReturn_t(*)(nvmlDevice_t, unsigned, int*))dlsym(h, "nvmlDeviceGetNvLinkRemoteDeviceType");
  bool ok = false;
  if (!init || !shutdown || !byBus || !state || !remotePci) {
    snprintf(why, len, "NVML lacks the NVLink functions kiln asks for");
  } else if (init() != 0) {
    snprintf(why, len, "nvmlInit failed");
  } else {
    int answered = 0;
    for (int g = 0; g < m->ngpus; g++) {
      nvmlDevice_t dev;
      if (byBus(m->gpu[g].busId, &dev) != 0) continue;
      answered++;
      for (unsigned l = 0; l < NVML_NVLINK_MAX_LINKS; l++) {
        int active = 0, type = NVML_NVLINK_DEVICE_TYPE_GPU;
        if (state(dev, l, &active) != 0 || !active) continue;
        if (remoteType && remoteType(dev, l, &type) != 0) type = NVML_NVLINK_DEVICE_TYPE_GPU;
        if (type == NVML_NVLINK_DEVICE_TYPE_SWITCH) {
          m->switchLinks[g]++;
          continue;
        }
        nvmlPciInfo_t pci;
        memset(&pci, 0, sizeof pci);
        if (remotePci(dev, l, &pci) != 0) continue;
        for (int q = 0; q < m->ngpus; q++)
          if (q != g && same_bus(pci.busId, m->gpu[q].busId)) m->nvlinks[g][q]++;
      }
    }
    shutdown();
    ok = answered > 0;
    if (!ok) snprintf(why, len, "NVML knows none of the GPUs by their PCI bus ids");
  }
  dlclose(h);
  return ok;
}

/* ---- the topology ---- */

kilnResult_t kilnMachineTopology(const kilnMachine* m, const char* name, const double* alpha,
                                 const double* beta, int nodes, double nicAlpha, double nicBeta,
                                 kilnTopology** out) {
  *out = NULL;
  const int g = m->ngpus;
  if (g < 1 || g > KILN_MACHINE_MAX_GPUS || nodes < 1 || g * nodes > KILN_MAX_RANKS)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT,
                        "a topology of %d nodes of %d GPUs (1..%d GPUs, at most %d ranks)", nodes, g,
                        KILN_MACHINE_MAX_GPUS, KILN_MAX_RANKS);
  kilnTopology* t = calloc(1, sizeof *t);
  if (!t) return kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
  snprintf(t->name, sizeof t->name, "%s", name ? name : "profiled");
  t->nodes = nodes;
  t->gpus_per_node = g;
  kilnResult_t res = KILN_SUCCESS;
  /* The switch: GPUs with NVLinks to an NVSwitch (two or more of them). */
  int sw[KILN_MACHINE_MAX_GPUS], nsw = 0;
  for (int a = 0; a < g; a++)
    if (m->switchLinks[a] > 0) sw[nsw++] = a;
  if (nsw >= 2) {
    double sa = 0, sb = 0;
    int pairs = 0;
    for (int i = 0; alpha && beta && i < nsw; i++)
      for (int j = 0; j < nsw; j++)
        if (i != j) {
          sa += alpha[sw[i] * g + sw[j]];
          sb += beta[sw[i] * g + sw[j]];
          pairs++;
        }
    t->tswitches = calloc(1, sizeof *t->tswitches);
    if (!t->tswitches || !(t->tswitches[0].gpus = malloc((size_t)nsw * sizeof(int)))) goto nomem;
    t->ntswitches = 1;
    kilnSwitch* s = &t->tswitches[0];
    snprintf(s->name, sizeof s->name, "nvswitch");
    s->ngpus = nsw;
    memcpy(s->gpus, sw, (size_t)nsw * sizeof(int));
    s->alpha_us = pairs ? sa / pairs : 0;
    s->beta_us_per_mb = pairs ? sb / pairs : 0;
    s->kind = KILN_LINK_NVLINK;
  } else {
    nsw = 0;
  }
  /* Links of the other pairs: NVLink straight between them, else PCIe; measured ones only. */
  if (alpha && beta) {
    t->tlinks = calloc((size_t)g * (size_t)g, sizeof *t->tlinks);
    if (!t->tlinks) goto nomem;
    for (int a = 0; a < g; a++)
      for (int b = 0; b < g; b++) {
        if (a == b || (nsw >= 2 && m->switchLinks[a] > 0 && m->switchLinks[b] > 0)) continue;
        const bool nvl = m->nvlinks[a][b] > 0;
        t->tlinks[t->ntlinks++] = (kilnLink){
            a, b, alpha[a * g + b], beta[a * g + b], 1, nvl ? KILN_LINK_NVLINK : KILN_LINK_PCIE, -1, false};
      }
  }
  /* NICs: those some GPU is nearest to, with those GPUs. */
  bool anyIb = false;
  t->tnics = calloc((size_t)(m->nnics > 0 ? m->nnics : 1), sizeof *t->tnics);
  if (!t->tnics) goto nomem;
  for (int i = 0; i < m->nnics; i++) {
    int n = 0;
    for (int a = 0; a < g; a++) n += m->nicOf[a] == i;
    if (n == 0) continue;
    kilnNic* nic = &t->tnics[t->ntnics];
    if (!(nic->gpus = malloc((size_t)n * sizeof(int)))) goto nomem;
    nic->id = t->ntnics++;
    for (int a = 0; a < g; a++)
      if (m->nicOf[a] == i) nic->gpus[nic->ngpus++] = a;
    anyIb |= m->nic[i].ib;
  }
  if (nodes > 1) {
    if (t->ntnics == 0) {
      res = kilnSetError(KILN_ERR_INVALID_ARGUMENT,
                         "%d nodes, but no NIC serves any of the %d GPUs: nothing would "
                         "link the nodes",
                         nodes, g);
      goto fail;
    }
    t->has_internode = true;
    t->inter_alpha_us = nicAlpha;
    t->inter_beta_us_per_mb = nicBeta;
    t->inter_kind = anyIb ? KILN_LINK_IB : KILN_LINK_OTHER;
  }
  if ((res = kilnTopologyExpand(t)) != KILN_SUCCESS) goto fail;
  *out = t;
  return KILN_SUCCESS;
nomem:
  res = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
fail:
  kilnTopologyFree(t);
  return res;
}

void kilnMachineDescribe(const kilnMachine* m, FILE* f) {
  for (int a = 0; a < m->ngpus; a++) {
    fprintf(f, "GPU %d (%s):", a, m->gpu[a].busId);
    if (m->switchLinks[a] > 0) fprintf(f, " %d NVLinks to an NVSwitch;", m->switchLinks[a]);
    for (int b = 0; b < m->ngpus; b++)
      if (m->nvlinks[a][b] > 0)
        fprintf(f, " %d NVLink%s to GPU %d;", m->nvlinks[a][b], m->nvlinks[a][b] > 1 ? "s" : "", b);
    const int i = m->nicOf[a];
    if (i >= 0)
      fprintf(f, " nearest NIC %s (%s, %s)\n", m->nic[i].name,
              m->nic[i].ib ? "InfiniBand" : "network interface", m->nic[i].path);
    else
      fprintf(f, " no NIC%s\n", m->gpu[a].path[0] ? "" : " (its PCI path was not found)");
  }
}
