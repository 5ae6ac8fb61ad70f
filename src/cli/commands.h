/* cli/commands.h: the subcommands of the rlpt binary, one file each (src/cmd_*.c).
 * Each returns the process exit code: 0 success, 2 bad input (deck, data,
 * checkpoint), 1 internal failure. MPI is initialised by the command itself
 * when it needs it (plan --world and deck-help run without MPI). */
#ifndef RLPT_COMMANDS_H
#define RLPT_COMMANDS_H

struct command {
  const char *name;
  const char *usage;   /* one line: arguments */
  const char *summary; /* one line: what it does */
  int (*fn)(int argc, char **argv); /* argv[0] is the command name */
};

extern const struct command rlpt_commands[];
extern const int rlpt_commands_len;

#endif
