/* model/lora_merge.c: LoRA adapters folded into their base weights (model/lora.h). */
#include "model/lora.h"

#include <stdlib.h>
#include <string.h>

#include "model/params.h"

/* W[out, in] += scale B[out, r] A[r, in], each element's sum in double. */
static void fold(float *W, const float *A, const float *B, int out, int in, int r, double scale) {
  for (int o = 0; o < out; o++)
    for (int i = 0; i < in; i++) {
      double s = 0;
      for (int k = 0; k < r; k++) s += (double)B[(size_t)o * r + k] * A[(size_t)k * in + i];
      W[(size_t)o * in + i] += (float)(scale * s);
    }
}

void lora_merge(const struct param_table *t, const struct model_config *mc, float *params,
                struct model_config *base) {
  double scale = mc->lora_alpha / mc->lora_rank;
  for (int n = 0; n + 1 < t->n; n++) {
    const struct param_entry *a = &t->e[n], *b = &t->e[n + 1];
    if (a->kind != P_LORA_A) continue;
    size_t w = param_offset(t, a->target, a->layer);
    fold(params + w, params + a->offset, params + b->offset, b->rows, a->cols, a->rows, scale);
  }
  *base = *mc;
  base->lora_rank = 0;
  base->lora_alpha = 0;
  base->lora_targets = 0;
}
