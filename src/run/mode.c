/* run/mode.c: the mode_ops of each [run] mode (run/mode.h). */
#include "run/mode.h"

#include "deck/config.h"

const struct mode_ops *mode_ops_for(const struct config *cfg) {
  if (cfg->run.mode == MODE_SYNC && config_is_pref(cfg)) return &pref_mode_ops;
  switch (cfg->run.mode) {
  case MODE_SYNC: return &sync_mode_ops;
  case MODE_SEPARATE_ASYNC: return cfg->async.deterministic ? &separate_async_mode_ops : &separate_async_free_mode_ops;
  case MODE_COLOCATE_ASYNC: return &colocate_async_mode_ops;
  default: return NULL;
  }
}
