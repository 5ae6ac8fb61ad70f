/* monitor/findings.h: the kinds of finding of `rlpt doctor` (the troubleshooting playbook):
 * for each, the name its JSON carries, a title, the likely causes and the deck keys to
 * change; and one finding: the steps it covers and its evidence with numbers. The checks
 * that find them are monitor/checks.h (per RL step) and monitor/doctor.h (the post-SFT
 * band). */
#ifndef RLPT_FINDINGS_H
#define RLPT_FINDINGS_H

#include <stddef.h>

enum doctor_kind {
  DK_REWARD_HACKING,
  DK_KL,
  DK_ENTROPY_COLLAPSE,
  DK_THROUGHPUT,
  DK_NONFINITE,
  DK_DROP,
  DK_LAG,
  DK_CLIP_HIGH,
  DK_CLIP_LOW,
  DK_LOGPROB_MISMATCH,
  DK_LOSS_ZERO,
  DK_TOO_EASY,
  DK_TOO_HARD,
  DK_SFT_BAND,
  DK_COUNT
};

#define FINDING_KEYS_MAX 7
#define FINDING_EVIDENCE_MAX 512

struct finding_kind {
  const char *name;    /* "kl_explosion": the JSON "kind" */
  const char *title;   /* "KL explosion" */
  const char *causes;  /* the likely causes, one sentence */
  const char *advice;  /* what to change, naming the deck keys */
  const char *keys[FINDING_KEYS_MAX];  /* those keys as section.key, NULL-terminated */
};
extern const struct finding_kind finding_kinds[DK_COUNT];

/* One finding: kind k seen at the steps [step_lo, step_hi]. */
struct finding {
  enum doctor_kind kind;
  long step_lo, step_hi;   /* the steps the evidence spans (all detections together) */
  long step_first;         /* the step of the first detection */
  long n_fired;            /* steps at which the check fired */
  double score;            /* how far past its threshold the evidence is (larger = worse) */
  char evidence[FINDING_EVIDENCE_MAX];
};

/* "step 7" or "steps 3-9": the steps f covers. */
const char *finding_steps(const struct finding *f, char *buf, size_t len);

#endif
