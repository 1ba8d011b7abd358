#include "cli_util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

bool cliParseInt(const char* s, int* out) {
  if (!s || !*s) return false;
  errno = 0;
  char* end;
  long v = strtol(s, &end, 10);
  if (errno || *end || v < 0 || v > 1 << 30) return false;
  *out = (int)v;
  return true;
}

int cliTopoArg(kilnTopoArgs* ta, int argc, char** argv, int i) {
  if (!strcmp(argv[i], "--topo") || !strcmp(argv[i], "--file")) {
    if (i + 1 >= argc) {
      fprintf(stderr, "kiln: %s needs a value\n", argv[i]);
      return -1;
    }
    ta->name = argv[i + 1];
    return 2;
  }
  if (!strcmp(argv[i], "--nodes")) {
    if (i + 1 >= argc || !cliParseInt(argv[i + 1], &ta->nodes) || ta->nodes < 1) {
      fprintf(stderr, "kiln: --nodes needs a positive integer\n");
      return -1;
    }
    return 2;
  }
  return 0;
}

int cliLoadTopo(const kilnTopoArgs* ta, kilnTopology** out) {
  if (!ta->name) {
    fprintf(stderr, "kiln: no topology given (--topo NAME or --topo FILE.xml)\n");
    return 1;
  }
  struct stat st;
  size_t n = strlen(ta->name);
  bool is_file = (n > 4 && !strcmp(ta->name + n - 4, ".xml")) || stat(ta->name, &st) == 0;
  kilnResult_t r;
  if (is_file) {
    r = kilnTopologyReadFile(ta->name, out);
    if (r == KILN_SUCCESS && ta->nodes > 0 && ta->nodes != (*out)->nodes) {
      (*out)->nodes = ta->nodes;
      r = kilnTopologyExpand(*out);
      if (r != KILN_SUCCESS) kilnTopologyFree(*out);
    }
  } else {
    r = kilnTopologyBuiltin(ta->name, ta->nodes > 0 ? ta->nodes : 1, out);
  }
  if (r != KILN_SUCCESS) {
    fprintf(stderr, "kiln: %s\n", kilnLastError());
    return 1;
  }
  return 0;
}

void cliPrintFileError(const char* path, const char* msg) {
  size_t n = strlen(path);
  if (!strncmp(msg, path, n) && msg[n] == ':') printf("%s\n", msg);
  else printf("%s: %s\n", path, msg);
}
