"""run/tb_check.py: reads the event files of an `rlpt run` back with TensorBoard's own
readers and checks them against the run's metrics JSONL (tests/run/tests.cmake).

  tb_check.py run TBDIR METRICS.jsonl SAMPLES.jsonl
      one controller file and one train-dp-0 file, each opening with file_version
      "brain.Event:2"; every number of every JSONL line is a scalar under its TensorBoard
      tag (TAGS below) at the line's step with the line's value as float32, and nothing
      else is (but actor/pg_clipfrac = pg_clipfrac_low + pg_clipfrac_high); both with the
      legacy reader (event_accumulator.EventAccumulator) and, when its binary is there,
      TensorBoard's data server (the default reader of `tensorboard --logdir`); the text
      tables hold the samples of SAMPLES.jsonl (prompt, response, reward, finish reason)
      at their steps.
  tb_check.py restart TBDIR METRICS.jsonl
      after a run resumed from an earlier checkpoint (its steps logged twice, in two
      files): the data server shows each step once, with the resumed run's values, which
      are those of the (cut back and appended) JSONL.

Exits 77 when the tensorboard package is not importable (pip install --target DIR
tensorboard; PYTHONPATH=DIR). Prints TB_CHECK_OK or TB_CHECK_FAILED lines."""
import glob
import json
import math
import os
import struct
import sys
import time

try:
    from tensorboard.backend.event_processing import event_accumulator as ea
    from tensorboard.backend.event_processing import event_file_loader
    from tensorboard.util import tensor_util
except ImportError as e:
    print("tensorboard not importable (%s): skipped" % e)
    sys.exit(77)

# JSONL key -> TensorBoard tag (step lines; SFT lines add sft/). veRL's names where veRL
# logs the same quantity (verl/trainer/ppo/metric_utils.py, core_algos.py,
# workers/actor/dp_actor.py, workers/fsdp_workers.py, trainer/ppo/ray_trainer.py).
TAGS = {
    "time_s": "timing_s/step", "weight_version": "training/weight_version",
    "reward_mean": "critic/score/mean", "reward_std": "critic/score/std", "acc": "critic/acc",
    "resp_len_mean": "response_length/mean", "resp_len_max": "response_length/max",
    "truncated_frac": "response_length/clip_ratio", "kl": "actor/kl_loss",
    "entropy": "actor/entropy", "pg_loss": "actor/pg_loss",
    "pg_clipfrac_low": "actor/pg_clipfrac_low", "pg_clipfrac_high": "actor/pg_clipfrac_high",
    "ratio_mean": "actor/ratio_mean", "grad_norm": "actor/grad_norm", "lr": "actor/lr",
    "logprob_diff_max": "training/rollout_logprob_diff_max",
    "logprob_diff_mean": "training/rollout_logprob_diff_mean", "logprob_diff_frac": "training/rollout_logprob_diff_frac",
    "lag_mean": "staleness/mean_lag", "lag_max": "staleness/max_lag",
    "drop_ratio": "staleness/drop_ratio", "tis_clipfrac": "rollout_corr/tis_clipfrac",
    "buffer_groups": "async/buffer_groups", "idle_train": "async/trainer_idle_frac",
    "idle_rollout": "async/rollout_idle_frac", "version_mixed_frac": "async/version_mixed_frac",
    "stale_kept": "staleness/stale_kept_frac",
    "weight_sync_overlap_frac": "async/weight_sync_overlap_frac",
    "groups_filtered": "training/groups_filtered", "gen_rounds": "training/gen_rounds",
    "groups_trained": "training/groups_trained",
    "prompts_filtered": "training/prompts_filtered",
    "sft_generated": "training/sft_generated", "sft_kept": "training/sft_kept",
    "sc_label_acc": "training/sc_label_acc",
    "skipped_nonfinite": "training/skipped_nonfinite",
    "params_nonfinite": "training/params_nonfinite",
    "reward_nonfinite": "training/reward_nonfinite",
    "reward_parts_const_frac": "training/reward_parts_const_frac",
    "reward_errors": "training/reward_errors", "sandbox_exec_per_s": "perf/sandbox_exec_per_s",
    "rss_train_gb": "perf/cpu_memory_peak_gb/train", "rss_rollout_gb": "perf/cpu_memory_peak_gb/rollout",
    "t_gen": "timing_s/gen", "t_reward": "timing_s/reward", "t_ref": "timing_s/ref",
    "t_train": "timing_s/update_actor", "t_sync": "timing_s/update_weights",
    "t_ckpt": "timing_s/save_checkpoint", "gen_tok_per_s": "perf/gen_tokens_per_s",
    "train_tok_per_s": "perf/train_tokens_per_s", "sync_gbps": "perf/update_weights_gbps", "sync_mb": "perf/update_weights_mb",
    "mfu": "perf/mfu/actor",
    # preference steps ([algo] name = dpo | ipo | rm): TRL DPOTrainer's names
    "pref_loss": "loss", "pref_chosen": "rewards/chosen", "pref_rejected": "rewards/rejected",
    "pref_margin": "rewards/margins", "pref_acc": "rewards/accuracies",
    "pref_eval_acc": "eval/rewards/accuracies",
}
# eval lines: these four by name, the rest under eval/ + TAGS
EVAL_TAGS = {"eval_pass@1": "eval/pass@1", "eval_pass@k": "eval/pass@k", "eval_k": "eval/k",
             "acc": "eval/acc"}

failures = 0


def check(cond, msg):
    global failures
    if not cond:
        failures += 1
        print("TB_CHECK_FAILED: " + msg)
    return cond


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


def tag_of(line, key):
    if line.get("eval_k") is not None or "eval_pass@1" in line:
        return EVAL_TAGS.get(key) or "eval/" + TAGS[key]
    if key.startswith("reward_parts."):
        tag = "critic/reward_parts/" + key[len("reward_parts."):]
    else:
        check(key in TAGS, "JSONL key %s has no TensorBoard tag in tb_check.py" % key)
        tag = TAGS.get(key, key)
    return ("sft/" if line["phase"] == "sft" else "") + tag


def expected(lines):
    """{tag: {step: value}} from the JSONL, later lines replacing earlier ones of a step."""
    want = {}
    for line in lines:
        step = line["step"]
        for key, v in line.items():
            if key in ("step", "phase") or v is None:
                continue
            want.setdefault(tag_of(line, key), {})[step] = f32(v)
        lo, hi = line.get("pg_clipfrac_low"), line.get("pg_clipfrac_high")
        if lo is not None and hi is not None:
            pre = "sft/" if line["phase"] == "sft" else ""
            want.setdefault(pre + "actor/pg_clipfrac", {})[step] = f32(f32(lo + hi))
    return want


def compare(reader, got, want):
    """got: {tag: [(step, value)]}; every point expected, once, and nothing missing."""
    for tag in sorted(set(want) | set(got)):
        pts = got.get(tag, [])
        steps = [s for s, _ in pts]
        check(len(steps) == len(set(steps)), "%s: %s: a step shown twice: %s" % (reader, tag, steps))
        have = dict(pts)
        check(set(have) == set(want.get(tag, {})), "%s: %s: steps %s, want %s"
              % (reader, tag, sorted(have), sorted(want.get(tag, {}))))
        for s, v in have.items():
            w = want.get(tag, {}).get(s)
            if w is not None:
                check(v == w or (math.isclose(v, w, rel_tol=1e-6)), "%s: %s step %d: %r, want %r"
                      % (reader, tag, s, v, w))


def legacy_scalars(tbdir):
    acc = ea.EventAccumulator(tbdir, size_guidance={ea.SCALARS: 0, ea.TENSORS: 0})
    acc.Reload()
    return acc, {t: [(e.step, e.value) for e in acc.Scalars(t)] for t in acc.Tags()["scalars"]}


def server_scalars(tbdir):
    """The data server's scalars of the run, or None without its binary."""
    try:
        from tensorboard import context
        from tensorboard.data import server_ingester
        from tensorboard.util import grpc_util
        binary = server_ingester.get_server_binary()
    except Exception as e:  # noqa: BLE001 (any reason the server is not there)
        print("tensorboard data server not available (%s): legacy reader only" % e)
        return None
    ing = server_ingester.SubprocessServerDataIngester(
        binary, tbdir, reload_interval=0, channel_creds_type=grpc_util.ChannelCredsType.LOCAL,
        samples_per_plugin={"scalars": 0})
    ing.start()
    ctx, prev = context.RequestContext(), None
    for _ in range(100):  # until two reads agree: the one load has finished
        d = ing.data_provider.read_scalars(ctx, experiment_id="", plugin_name="scalars",
                                           downsample=1 << 30)
        cur = {run: {t: [(p.step, p.value) for p in pts] for t, pts in tags.items()}
               for run, tags in d.items()}
        if cur and cur == prev:
            break
        prev = cur
        time.sleep(0.2)
    check(list(cur) == ["."], "data server runs %s, want the one run '.'" % list(cur))
    return cur.get(".", {})


def check_files(tbdir):
    ctl = glob.glob(os.path.join(tbdir, "events.out.tfevents.*.rlpt"))
    smp = [p for p in ctl if p.endswith(".samples.rlpt")]
    ctl = [p for p in ctl if not p.endswith(".samples.rlpt")]
    for p in ctl + smp:
        first = next(iter(event_file_loader.EventFileLoader(p).Load()), None)
        check(first is not None and first.file_version == "brain.Event:2",
              "%s: first event %s" % (p, first))
    return ctl, smp


def check_text(acc, samples):
    want = {}
    for s in samples:
        want.setdefault(s["step"], []).append(
            [s["prompt"], s["response"], s["reward"], s["finish_reason"]])
    ev = acc.Tensors("samples/responses") if "samples/responses" in acc.Tags()["tensors"] else []
    check(sorted(e.step for e in ev) == sorted(want), "text steps %s, want %s"
          % ([e.step for e in ev], sorted(want)))
    for e in ev:
        t = tensor_util.make_ndarray(e.tensor_proto)
        rows = [[c.decode("utf-8") for c in r] for r in t.tolist()]
        w = want.get(e.step, [])
        check(len(rows) == len(w), "text step %d: %d rows, want %d" % (e.step, len(rows), len(w)))
        for r, x in zip(rows, w):
            check(r[0] == x[0] and r[1] == x[1] and float(r[2]) == x[2] and r[3] == x[3],
                  "text step %d: row %s, want %s" % (e.step, r, x))


def main_run(tbdir, metrics, samples):
    ctl, smp = check_files(tbdir)
    check(len(ctl) == 1 and len(smp) == 1, "files: controller %s, samples %s" % (ctl, smp))
    lines = read_jsonl(metrics)
    want = expected(lines)
    check(any(t.startswith("sft/") for t in want) and any(t.startswith("eval/") for t in want)
          and "actor/kl_loss" in want and "timing_s/update_weights" in want,
          "the run lacks SFT, eval, KL or sync lines: %s" % sorted(want))
    acc, got = legacy_scalars(tbdir)
    compare("legacy reader", got, want)
    srv = server_scalars(tbdir)
    if srv is not None:
        compare("data server", srv, want)
    check_text(acc, read_jsonl(samples))
    n = sum(len(v) for v in want.values())
    return "%d scalars of %d tags, %d lines" % (n, len(want), len(lines))


def main_restart(tbdir, metrics):
    ctl, _ = check_files(tbdir)
    check(len(ctl) == 2, "controller files %s, want 2 (the run and its restart)" % ctl)
    lines = read_jsonl(metrics)
    want = expected(lines)
    srv = server_scalars(tbdir)
    if srv is None:
        print("tensorboard data server not available: skipped")
        sys.exit(77)
    compare("data server", srv, want)
    # the legacy reader keeps both copies of a re-logged step: the restart did re-log
    _, legacy = legacy_scalars(tbdir)
    steps = [s for s, _ in legacy.get("timing_s/step", [])]
    check(len(steps) > len(set(steps)), "no step logged twice: the test did not restart mid-run")
    return "%d tags, re-logged steps once each" % len(want)


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    if mode == "run" and len(sys.argv) == 5:
        what = main_run(*sys.argv[2:])
    elif mode == "restart" and len(sys.argv) == 4:
        what = main_restart(*sys.argv[2:])
    else:
        print(__doc__)
        sys.exit(2)
    if failures:
        print("TB_CHECK_FAILED: %d check(s)" % failures)
        sys.exit(1)
    print("TB_CHECK_OK: " + what)
