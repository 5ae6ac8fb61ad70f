/* cli/cmd_version.c: `rlpt version` prints the version and what this build contains
 * (model/build_info.h). It takes no arguments. */
#include "model/build_info.h"

int cmd_version(int argc, char **argv) {
  (void)argc;
  (void)argv;
  return build_info_print();
}
