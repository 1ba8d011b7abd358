/* kiln: command-line front end. Dispatches to one function per subcommand (cli/commands.h). */
#define _POSIX_C_SOURCE 200809L /* sigaction */
#include <errno.h>
#include <signal.h>
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
  fprintf(f,
          "usage: kiln COMMAND [ARGS...]   (kiln COMMAND --help or kiln help COMMAND for details)\n"
          "       kiln --version\n\ncommands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
}

/* An interrupted run leaves no temporary output file behind, then dies of its signal. */
static void on_signal(int sig) {
  kilnWriteAbandon();
  signal(sig, SIG_DFL);
  raise(sig);
}

/* What the command printed must have reached stdout (a full disk, a closed pipe): else 1. */
static int flushed(int rc) {
  errno = 0;
  if (fflush(stdout) != 0 || ferror(stdout)) {
    fprintf(stderr, "kiln: cannot write the output%s%s\n", errno ? ": " : "", errno ? strerror(errno) : "");
    return rc == 0 ? 1 : rc;
  }
  return rc;
}

/* An option of a command given twice (long options, and the short -o and -d): none of kiln's
 * options repeat, and several took the last value silently (classic --coll allreduce --coll
 * allgather wrote an allgather). NULL when none is. */
static const char* repeated_option(int argc, char** argv) {
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    const bool opt = (a[0] == '-' && a[1] == '-' && a[2]) || !strcmp(a, "-o") || !strcmp(a, "-d");
    if (!opt || !strcmp(a, "--help")) continue;
    const size_t n = strcspn(a, "="); /* --opt=value counts as --opt */
    for (int j = 1; j < i; j++)
      if (!strncmp(argv[j], a, n) && (argv[j][n] == '\0' || argv[j][n] == '=')) return a;
  }
  return NULL;
}

int main(int argc, char** argv) {
  /* SIGPIPE too: a reader that went away (kiln ... | head) ends kiln as it ends any tool, but not
   * before a half-written output file is removed. */
  static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    /* A signal the caller ignores (a background job's SIGINT) stays ignored. */
    if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN) sigaction(sigs[i], &sa, NULL);
  }
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  if (!strcmp(argv[1], "help") && argc > 2) { /* kiln help COMMAND: that command's --help */
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
      if (!strcmp(argv[2], commands[i].name)) {
        char* hv[] = {argv[2], (char*)"--help", NULL};
        return flushed(commands[i].fn(2, hv));
      }
    fprintf(stderr, "kiln: unknown command '%s'\n", argv[2]);
    usage(stderr);
    return 2;
  }
  if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
    usage(stdout);
    return flushed(0);
  }
  if (!strcmp(argv[1], "--version")) {
    printf("kiln %d.%d.%d\n", KILN_VERSION_MAJOR, KILN_VERSION_MINOR, KILN_VERSION_PATCH);
    return flushed(0);
  }
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (!strcmp(argv[1], commands[i].name)) {
      const char* twice = repeated_option(argc - 1, argv + 1);
      if (twice) {
        fprintf(stderr, "kiln %s: %s given twice\n", argv[1], twice);
        return 2;
      }
      return flushed(commands[i].fn(argc - 1, argv + 1));
    }
  fprintf(stderr, "kiln: unknown command '%s'\n", argv[1]);
  usage(stderr);
  return 2;
}
