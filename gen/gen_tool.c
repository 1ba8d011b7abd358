/* kiln-gen: the build-time generator. The same code as `kiln gen` (cli/cmd_gen.c), in a binary
 * that does not link the runtime, since the runtime is built from its output. */
#include "commands.h"

int main(int argc, char** argv) { return cmd_gen(argc, argv); }
