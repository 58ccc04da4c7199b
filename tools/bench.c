/* bench.c - `voxlod bench`: placeholder until the GPU benchmark API lands. */
#include <stdio.h>
#include "tools/cli.h"
int vx_cmd_bench(int argc, char **argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "voxlod bench: not available in this build\n");
  return 1;
}
