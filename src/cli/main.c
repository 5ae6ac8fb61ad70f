/* cli/main.c: the rlpt command line. `rlpt COMMAND ...`; the commands live in
 * src/cmd_*.c and are listed in src/cli/commands.c. */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"

static void usage(FILE *f) {
  fprintf(f, "rlpt %s: reinforcement-learning post-training for LLMs (MPI + C)\n\n"
             "usage: rlpt COMMAND [args]\n\ncommands:\n", RLPT_VERSION);
  for (int i = 0; i < rlpt_commands_len; i++)
    fprintf(f, "  %-12s %-40s %s\n", rlpt_commands[i].name, rlpt_commands[i].usage,
            rlpt_commands[i].summary);
}

int main(int argc, char **argv) {
  if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (!strcmp(argv[1], "--version")) {
    printf("rlpt %s\n", RLPT_VERSION);
    return 0;
  }
  for (int i = 0; i < rlpt_commands_len; i++)
    if (!strcmp(argv[1], rlpt_commands[i].name)) return rlpt_commands[i].fn(argc - 1, argv + 1);
  fprintf(stderr, "rlpt: unknown command '%s'\n", argv[1]);
  usage(stderr);
  return 2;
}
