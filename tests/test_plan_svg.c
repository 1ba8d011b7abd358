/* kiln show PLAN --svg: the simulated schedule as a picture - a lane per link that carries data, a
 * bar per transfer labelled with its chunk, within the time axis - written whole or not at all, and
 * clear refusals of what it cannot draw. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_run.h"
#include "kiln/plan.h"
#include "test_util.h"

/* Counts of what the picture holds: transfers (<g> groups), lanes (right-aligned labels). */
static void count_svg(const char* path, int* bars, int* lanes, bool* closed) {
  FILE* f = fopen(path, "r");
  cr_assert(not(eq(ptr, f, NULL)), "%s", path);
  char line[8192];
  *bars = *lanes = 0;
  *closed = false;
  while (fgets(line, sizeof line, f)) {
    if (!strncmp(line, "<g><title>", 10)) (*bars)++;
    if (strstr(line, "text-anchor=\"end\"")) (*lanes)++;
    if (!strcmp(line, "</svg>\n")) *closed = true;
  }
  fclose(f);
}

Test(plan_svg, a_bar_per_transfer_and_a_lane_per_link) {
  char dir[64], out[8192], path[256];
  make_tmpdir(dir, sizeof dir);
  const char* plan = KILN_SOURCE_DIR "/plans/multinode/switch4-sk-1-allreduce-2x4.xml";
  snprintf(path, sizeof path, "%s/s.svg", dir);
  int rc = expect_kiln(out, sizeof out, 0, NULL,
                       "show %s --svg %s --topo %s/plans/topologies/switch4-2nic.xml --nodes 2", plan, path,
                       KILN_SOURCE_DIR);
  if (rc < 0) cr_skip_test("kiln CLI not built");
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnPlanReadFile(plan, &p), KILN_SUCCESS), "%s", kilnLastError());
  int sends = 0, links = 0;
  bool used[8][8] = {{false}};
  for (int r = 0; r < p->ngpus; r++)
    for (int t = 0; t < p->gpus[r].ntbs; t++)
      for (int s = 0; s < p->gpus[r].tbs[t].nsteps; s++)
        if (kilnStepSends(p->gpus[r].tbs[t].steps[s].type)) {
          sends++;
          if (!used[r][p->gpus[r].tbs[t].send]) links++;
          used[r][p->gpus[r].tbs[t].send] = true;
        }
  int bars, lanes;
  bool closed;
  count_svg(path, &bars, &lanes, &closed);
  cr_expect(eq(int, bars, sends));
  cr_expect(eq(int, lanes, links));
  cr_expect(closed);
  kilnPlanFree(p);
  unlink(path);
  /* without --topo: the plan's nodes of switch4 */
  expect_kiln(out, sizeof out, 0, NULL, "show %s --svg %s --bytes 1G", plan, path);
  count_svg(path, &bars, &lanes, &closed);
  cr_expect(eq(int, bars, sends));
  unlink(path);
  rmdir(dir);
}

Test(plan_svg, refusals_write_nothing) {
  char dir[64], out[8192], path[256];
  make_tmpdir(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/s.svg", dir);
  const char* plan = KILN_SOURCE_DIR "/plans/multinode/switch4-sk-1-allreduce-2x4.xml";
  if (expect_kiln(out, sizeof out, 2, "has 8 ranks but topology hgx-h100 has 16",
                  "show %s --svg %s --topo hgx-h100 "
                  "--nodes 2",
                  plan, path) < 0)
    cr_skip_test("kiln CLI not built");
  expect_kiln(out, sizeof out, 2, "--svg draws a plan", "show --topo switch4 --svg %s", path);
  expect_kiln(out, sizeof out, 2, "bad --bytes", "show %s --svg %s --bytes lots", plan, path);
  expect_kiln(out, sizeof out, 2, "give --topo", "show %s/plans/multinode/switch1-allgather-2x1.xml --svg %s",
              KILN_SOURCE_DIR, path);
  expect_kiln(out, sizeof out, 1, "no-such.xml", "show %s/no-such.xml --svg %s", dir, path);
  cr_expect(not(eq(int, access(path, F_OK), 0)), "a picture was written");
  rmdir(dir);
}
