/* kiln topo: print a topology (built-in or file) as XML. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"
#include "kiln/topology.h"

static void help(FILE* f) {
  fprintf(f,
          "usage: kiln topo (--topo NAME [--nodes K] | --file TOPO.xml) [-o OUT.xml]\n"
          "Prints the topology as XML (to OUT.xml, or stdout).\n"
          "built-in names: %s\n",
          kilnTopologyBuiltinNames());
}

int cmd_topo(int argc, char** argv) {
  kilnTopoArgs ta = {0};
  const char* out = NULL;
  for (int i = 1; i < argc; i++) {
    int used = cliTopoArg(&ta, argc, argv, i);
    if (used < 0) return 2;
    if (used > 0) {
      i += used - 1;
      continue;
    }
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      help(stdout);
      return 0;
    }
    if (!strcmp(argv[i], "-o")) {
      if (i + 1 >= argc) {
        fprintf(stderr, "kiln topo: -o needs a value\n");
        return 2;
      }
      if (!cliOnce("topo", &out, "-o", argv[++i])) return 2;
      continue;
    }
    fprintf(stderr, "kiln topo: unexpected argument '%s'\n", argv[i]);
    help(stderr);
    return 2;
  }
  kilnTopology* t = NULL;
  const int trc = cliLoadTopo(&ta, &t);
  if (trc != 0) {
    if (trc == 2) help(stderr);
    return trc;
  }
  const char* in = ta.file ? ta.name : NULL;
  if (!cliOutputApart("topo", out, &in, 1) || !cliOutputWritable("topo", out)) {
    kilnTopologyFree(t);
    return 2;
  }
  int rc = 0;
  if (kilnTopologyWriteFile(t, out ? out : "-") != KILN_SUCCESS) {
    fprintf(stderr, "kiln topo: %s\n", kilnLastError());
    rc = 1;
  }
  kilnTopologyFree(t);
  return rc;
}
