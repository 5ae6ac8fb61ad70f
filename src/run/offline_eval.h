/* run/offline_eval.h: `rlpt eval`, a run's held-out eval (run/eval.h) of a model file
 * outside a run, on one process or under mpirun (every rank a rollout instance). */
#ifndef RLPT_OFFLINE_EVAL_H
#define RLPT_OFFLINE_EVAL_H

struct offline_eval_args {
  const char *deck;    /* the deck: task, reward, [rollout] sampling, [eval] keys */
  const char *model;   /* model .h5, checkpoint .h5 or directory, gguf:PATH, hf:DIR */
  const char *output;  /* NULL, or a JSONL file the eval line is appended to */
  int json;            /* 1: the eval line on stdout, human lines on stderr */
};

/* MPI_Init to MPI_Finalize: the eval of a->model with the deck and overrides. 0, 2 (bad
 * input, one message) or 1. */
int offline_eval_run(const struct offline_eval_args *a, int n_over, char **over);

#endif
