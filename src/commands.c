/* commands.c: the table of subcommands (one row each; implementations in cmd_*.c). */
#include "commands.h"

int cmd_version(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_deck_help(int argc, char **argv);
int cmd_plan(int argc, char **argv);

const struct command rlpt_commands[] = {
  {"version", "", "print the version and the build's features", cmd_version},
  {"check", "DECK [section.key=value ...]", "validate a deck (no MPI) and print the canonical deck", cmd_check},
  {"plan", "DECK [--world N] [--ranks] [section.key=value ...]", "rank map, memory per rank and FLOPs per step; exit 2 if it cannot run", cmd_plan},
  {"deck-help", "", "print every deck key as markdown (inputs/README.md)", cmd_deck_help},
};
const int rlpt_commands_len = (int)(sizeof rlpt_commands / sizeof rlpt_commands[0]);
