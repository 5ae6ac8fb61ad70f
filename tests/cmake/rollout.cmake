# Rollout engine on the real transformer (rollout.c): greedy vs from-scratch argmax,
# logprobs vs model_forward, batch-composition invariance with preemption.
add_unit_test(test_rollout SOURCES test_rollout.c)
