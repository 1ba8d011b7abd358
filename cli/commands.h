/* The kiln CLI's subcommands: one row each, X(name, function, one-line summary).
 * Each function lives in cli/cmd_<name>.c and returns the process exit status. */
#ifndef KILN_CLI_COMMANDS_H
#define KILN_CLI_COMMANDS_H

#define KILN_CLI_COMMANDS(X)                                                            \
  X("topo", cmd_topo, "print a topology (built-in or file) as XML")                     \
  X("synth", cmd_synth, "synthesize a plan from a topology and a sketch (TACCL)")       \
  X("verify", cmd_verify, "check plans on the CPU verifier")                            \
  X("simulate", cmd_simulate, "predict plan or NCCL ring/tree time on a topology")      \
  X("classic", cmd_classic, "write a verified ring or direct plan")                     \
  X("gen", cmd_gen, "bake plans into CUDA source and a registry table (build-time)")    \
  X("bake", cmd_bake, "put a verified plan with its byte range under plans/baked")      \
  X("show", cmd_show, "summarize a topology, sketch or plan XML file")                  \
  X("profile", cmd_profile, "measure alpha/beta of GPU pairs, write a topology")        \
  X("tune", cmd_tune, "time candidate plans on the GPUs beside NCCL, keep the fastest") \
  X("params", cmd_params, "list the KILN_* settings the library reads, with their values")

#define KILN_X_DECL(name, fn, summary) int fn(int argc, char** argv);
KILN_CLI_COMMANDS(KILN_X_DECL)
#undef KILN_X_DECL

#endif
