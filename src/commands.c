/* commands.c: the table of subcommands (one row each; implementations in cmd_*.c). */
#include "commands.h"

int cmd_version(int argc, char **argv);

const struct command rlpt_commands[] = {
  {"version", "", "print the version and the build's features", cmd_version},
};
const int rlpt_commands_len = (int)(sizeof rlpt_commands / sizeof rlpt_commands[0]);
