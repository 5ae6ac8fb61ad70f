/* model/scratch.h: a freshly initialised model file for a deck whose [model] init is
 * scratch: the deck's [model] shape (vocab auto: the character tokenizer's), normal(0,
 * init_std) weights from [run] seed (model_params_init), in the HDF5 layout of
 * io/model_h5.h. */
#ifndef RLPT_MODEL_SCRATCH_H
#define RLPT_MODEL_SCRATCH_H

struct model_scratch_opts {
  const char *deck;      /* the deck file */
  char *const *over;     /* n_over section.key=value overrides of it */
  int n_over;
  const char *out;       /* the model file written */
};

/* Load the deck (no MPI), then write o->out and a line on stdout saying what it holds.
 * Returns 0, 2 (bad deck: one message naming it) or 1. */
int model_scratch_write(const struct model_scratch_opts *o);

#endif
