/* kiln params: the settings kiln's library reads (kiln/params.h), with the values in force here. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "kiln/params.h"

static void help(FILE* f) {
  fprintf(f,
          "usage: kiln params [--markdown]\n"
          "Lists every KILN_* environment variable kiln's library (libkiln, the drop-in libnccl.so.2)\n"
          "reads: type, default, the value this environment sets, and what it does. A value that does\n"
          "not parse is shown with why it is ignored. --markdown: the same table in Markdown, without\n"
          "the values (docs/PARAMS.md is this output).\n");
}

/* A cell of the Markdown table: '|' escaped. */
static void md_cell(const char* s) {
  for (; s && *s; s++) {
    if (*s == '|') fputc('\\', stdout);
    fputc(*s, stdout);
  }
}

static void markdown(void) {
  printf("| variable | type | default | what it does |\n| --- | --- | --- | --- |\n");
  for (int i = 0; i < kilnParamCount(); i++) {
    kilnParamInfo p;
    if (!kilnParamGetInfo(i, &p)) continue;
    printf("| `%s` | %s | %s%s%s | ", p.env, kilnParamTypeName(p.type), p.defaultText ? "`" : "",
           p.defaultText ? p.defaultText : "(see text)", p.defaultText ? "`" : "");
    md_cell(p.description);
    printf(" |\n");
  }
}

static void listing(void) {
  printf("%-32s %-6s %-8s %-12s %s\n", "variable", "type", "default", "value", "what it does");
  for (int i = 0; i < kilnParamCount(); i++) {
    kilnParamInfo p;
    if (!kilnParamGetInfo(i, &p)) continue;
    printf("%-32s %-6s %-8s %-12s %s\n", p.env, kilnParamTypeName(p.type),
           p.defaultText ? p.defaultText : "-", p.value ? p.value : "-", p.description);
    if (p.problem) printf("%-32s   ^ %s=%s is ignored: %s\n", "", p.env, p.value, p.problem);
  }
}

int cmd_params(int argc, char** argv) {
  bool md = false;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      help(stdout);
      return 0;
    }
    if (!strcmp(argv[i], "--markdown")) {
      md = true;
      continue;
    }
    fprintf(stderr, "kiln params: unexpected argument '%s'\n", argv[i]);
    help(stderr);
    return 2;
  }
  if (md)
    markdown();
  else
    listing();
  return 0;
}
