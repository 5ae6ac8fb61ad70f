"""run/prom_check.py: the Prometheus textfile of an `rlpt run` ([log] prometheus_path) read
with the reference parser (prometheus_client.parser.text_string_to_metric_families) and
checked against the run's metrics JSONL (tests/run/tests.cmake).

  prom_check.py PROM METRICS.jsonl DASHBOARD.json ALERTS.yml

Checks: the file parses; every family is a gauge with # HELP text; it holds rlpt_<key>
for every key of the last step line (rlpt_phase_rl for `phase`, rlpt_reward_part{name}
for reward_parts.<name>) with that line's value (null: NaN), rl_sample_mean_lag and
rl_sample_drop_ratio (= lag_mean, drop_ratio), the last eval line's rlpt_eval_step,
rlpt_eval_pass_at_1, rlpt_eval_acc, rlpt_eval_pass_at_k and rlpt_eval_k, and nothing
else; no PROM.tmp is left; every metric the Grafana dashboard and the alert rules
(jobscripts/monitoring/) query is one of these (or node_exporter's own
node_textfile_mtime_seconds) and the dashboard's data source is its variable.

Exits 77 when prometheus_client is not importable (pip install --target DIR
prometheus_client; PYTHONPATH=DIR). Prints PROM_CHECK_OK or PROM_CHECK_FAILED lines."""
import json
import math
import os
import re
import sys

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError as e:
    print("prometheus_client not importable (%s): skipped" % e)
    sys.exit(77)

failures = 0


def check(cond, msg):
    global failures
    if not cond:
        failures += 1
        print("PROM_CHECK_FAILED: " + msg)
    return cond


def same(a, b):
    """NaN = NaN; otherwise equal to the JSONL's 15 significant digits (cJSON prints 15
    when they read back within its epsilon; the textfile has the exact double)."""
    return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-14, abs_tol=0)


def expected(lines):
    step = [l for l in lines if "eval_pass@1" not in l][-1]
    ev = [l for l in lines if "eval_pass@1" in l][-1]
    want = {}
    for k, v in step.items():
        if k == "phase":
            want[("rlpt_phase_rl", ())] = 1.0 if v == "rl" else 0.0
        elif k.startswith("reward_parts."):
            want[("rlpt_reward_part", (("name", k[len("reward_parts."):]),))] = v
        else:
            want[("rlpt_" + k, ())] = v
    want[("rl_sample_mean_lag", ())] = step["lag_mean"]
    want[("rl_sample_drop_ratio", ())] = step["drop_ratio"]
    for name, k in (("step", "step"), ("pass_at_1", "eval_pass@1"), ("acc", "acc"),
                    ("pass_at_k", "eval_pass@k"), ("k", "eval_k")):
        want[("rlpt_eval_" + name, ())] = ev[k]
    return {key: float("nan") if v is None else float(v) for key, v in want.items()}


def check_file(prom, lines):
    with open(prom) as f:
        families = list(text_string_to_metric_families(f.read()))
    got = {}
    for fam in families:
        check(fam.type == "gauge", "%s: type %s, want gauge" % (fam.name, fam.type))
        check(bool(fam.documentation), "%s: no # HELP text" % fam.name)
        for s in fam.samples:
            got[(s.name, tuple(sorted(s.labels.items())))] = s.value
    want = expected(lines)
    check(set(got) == set(want), "gauges: missing %s, extra %s"
          % (sorted(set(want) - set(got)), sorted(set(got) - set(want))))
    for key, w in want.items():
        if key in got:
            check(same(got[key], w), "%s: %r, want %r" % (key, got[key], w))
    check(not os.path.exists(prom + ".tmp"), prom + ".tmp left behind")
    return {name for name, _ in got}


def queried(expr):
    """Metric names in a PromQL expression (identifiers not followed by '(' nor keywords)."""
    names = set(re.findall(r"\b([a-zA-Z_:][a-zA-Z0-9_:]*)\b(?!\s*\()", re.sub(r'"[^"]*"', "", expr)))
    return {n for n in names if n.startswith(("rlpt_", "rl_", "node_"))}


def check_dashboard(path, names):
    with open(path) as f:
        d = json.load(f)
    var = [v for v in d["templating"]["list"] if v["type"] == "datasource"]
    check(len(var) == 1 and var[0]["query"] == "prometheus", "no Prometheus data source variable")
    used = set()
    for p in d["panels"]:
        check(p["datasource"]["uid"] == "${%s}" % var[0]["name"], "%s: data source" % p["title"])
        check(bool(p["targets"]), "%s: no query" % p["title"])
        for t in p["targets"]:
            used |= queried(t["expr"])
    check(used <= names, "dashboard queries unknown metrics %s" % sorted(used - names))
    titles = " ".join(p["title"].lower() for p in d["panels"])
    for w in ("reward", "accuracy", "kl", "entropy", "response length", "clip", "grad", "lag",
              "tokens per second", "phase times"):
        check(w in titles, "no %s panel" % w)
    return len(d["panels"])


def check_alerts(path, names):
    import yaml
    with open(path) as f:
        rules = [r for g in yaml.safe_load(f)["groups"] for r in g["rules"]]
    used = set()
    for r in rules:
        check(r.get("alert") and r.get("expr") and "summary" in r.get("annotations", {}),
              "rule %s lacks alert, expr or summary" % r)
        used |= queried(r["expr"])
    check(used <= names | {"node_textfile_mtime_seconds"},
          "alert rules query unknown metrics %s" % sorted(used - names))
    exprs = " | ".join(r["expr"] for r in rules)
    for w in ("rl_sample_mean_lag > 2", "rl_sample_drop_ratio > 0.2", "rlpt_kl > 50",
              "rlpt_skipped_nonfinite > 0 or rlpt_reward_nonfinite > 0"):
        check(w in exprs, "no rule %s" % w)
    return len(rules)


if __name__ == "__main__":
    if len(sys.argv) != 5:
        print(__doc__)
        sys.exit(2)
    prom, metrics, dash, alerts = sys.argv[1:]
    with open(metrics) as f:
        lines = [json.loads(l) for l in f if l.strip()]
    names = check_file(prom, lines)
    n_panels = check_dashboard(dash, names)
    n_rules = check_alerts(alerts, names)
    if failures:
        print("PROM_CHECK_FAILED: %d check(s)" % failures)
        sys.exit(1)
    print("PROM_CHECK_OK: %d gauges, %d dashboard panels, %d alert rules" % (len(names), n_panels, n_rules))
