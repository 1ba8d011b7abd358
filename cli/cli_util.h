/* Argument helpers shared by the CLI's subcommands. */
#ifndef KILN_CLI_UTIL_H
#define KILN_CLI_UTIL_H

#include <stdio.h>

#include "kiln/topology.h"
#include "kiln_internal.h"

/* --topo NAME|FILE.xml [--nodes K] | --file FILE.xml */
typedef struct kilnTopoArgs {
  const char* name; /* built-in name or path (a path if it ends in .xml or names a file) */
  int nodes;        /* 0: default 1 */
  bool file;        /* a file, not a built-in: given with --file, or so read by cliLoadTopo */
} kilnTopoArgs;

/* If argv[i] is a topology option, consumes it (and its value) and returns how many arguments
 * it used (>0); returns 0 if argv[i] is something else; -1 (after a message) on a bad value. */
int cliTopoArg(kilnTopoArgs* ta, int argc, char** argv, int i);
/* Builds the topology named by ta (a built-in name wins over a file of that name in the current
 * folder). On failure prints the error and returns the exit status: 2 for no topology, a bad
 * name or a --nodes the topology cannot take (built-in or file), 1 for a file that cannot be
 * read. */
int cliLoadTopo(kilnTopoArgs* ta, kilnTopology** out);
/* Sets *slot to v, for option opt of subcommand cmd; false (after a message) if set before. */
bool cliOnce(const char* cmd, const char** slot, const char* opt, const char* v);
/* False (after a message) when out names the same existing file as one of ins[0..nins). */
bool cliOutputApart(const char* cmd, const char* out, const char* const* ins, int nins);
/* False (after a message) when out cannot be written: a folder, or a file in a folder that does
 * not exist or is not writable. Checked before long work (synthesis, measurements), so that
 * they are not lost to a mistyped path; the writer still reports what fails later. */
bool cliOutputWritable(const char* cmd, const char* out);
/* Prints "FILE: message" to stdout, without repeating FILE when the message already starts
 * with it (errors from the readers name their file). */
void cliPrintFileError(const char* path, const char* msg);
/* The same on stream f, after `lead` ("kiln: "). */
void cliFileErrorTo(FILE* f, const char* lead, const char* path, const char* msg);
/* The sketch file `arg` names: itself when it is a path (a '/', a .xml ending, or a file of that
 * name here), else the sketch of that name kiln ships (NAME.xml of the installed
 * share/kiln/plans/sketches beside the program, or of the source tree's plans/sketches); NULL
 * when it names none (an unknown name, a bad argument). buf holds the path built. */
const char* cliSketchPath(const char* arg, char* buf, size_t n);
/* Parses a positive int; false on junk. */
bool cliParseInt(const char* s, int* out);

#endif
