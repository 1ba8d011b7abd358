/* kiln: command-line front end. Dispatches to one function per subcommand (cli/commands.h). */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "kiln/kiln.h"

static const struct {
  const char* name;
  int (*fn)(int, char**);
  const char* summary;
} commands[] = {
#define KILN_X_ROW(name, fn, summary) {name, fn, summary},
    KILN_CLI_COMMANDS(KILN_X_ROW)
#undef KILN_X_ROW
};

static void usage(FILE* f) {
  fprintf(f, "usage: kiln COMMAND [ARGS...]   (kiln COMMAND --help for details)\n\ncommands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
}

int main(int argc, char** argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
    usage(stdout);
    return 0;
  }
  if (!strcmp(argv[1], "--version")) {
    printf("kiln %d.%d.%d\n", KILN_VERSION_MAJOR, KILN_VERSION_MINOR, KILN_VERSION_PATCH);
    return 0;
  }
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (!strcmp(argv[1], commands[i].name)) return commands[i].fn(argc - 1, argv + 1);
  fprintf(stderr, "kiln: unknown command '%s'\n", argv[1]);
  usage(stderr);
  return 2;
}
