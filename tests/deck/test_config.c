/* deck/test_config.c: the deck parser. The schema table is sane; defaults; a good deck; the
 * canonical deck parses back to the identical struct; overrides; each type's edge cases;
 * every message names file:line (or the override) and the key; die_local without MPI. */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "deck/config.h"
#include "testutil.h"
#include "util/error.h"

static char err[4096];
static struct config cfg, cfg2;

static int parse(const char *text) { return config_parse(&cfg, "t.ini", text, 0, NULL, err, sizeof err); }

static int parse_over(const char *text, int n, char **over) {
  return config_parse(&cfg, "t.ini", text, n, over, err, sizeof err);
}

/* text must fail with a message containing want. */
static void expect_fail(const char *text, const char *want) {
  int rc = parse(text);
  CHECK_MSG(rc == 2, "deck <<%s>> gave %d, expected 2", text, rc);
  CHECK_MSG(strstr(err, want) != NULL, "deck <<%s>>: message '%s' lacks '%s'", text, err, want);
}

static void expect_ok(const char *text) {
  int rc = parse(text);
  CHECK_MSG(rc == 0, "deck <<%s>> failed: %s", text, err);
}

/* Struct equality ignoring where values came from. */
static int same_values(const struct config *a, const struct config *b) {
  struct config x = *a, y = *b;
  memset(x.src, 0, sizeof x.src);
  memset(y.src, 0, sizeof y.src);
  return !memcmp(&x, &y, sizeof x);
}

/* Canonical text of c (malloc'd). */
static char *canonical(const struct config *c) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  config_write_canonical(c, f);
  fclose(f);
  return buf;
}

static void test_schema(void) {
  CHECK(cfg_schema_len > 0 && cfg_schema_len <= CFG_KEYS_MAX);
  for (int r = 0; r < cfg_schema_len; r++) {
    const struct cfg_key *k = &cfg_schema[r];
    CHECK_MSG(config_find(k->section, k->name) == r, "[%s] %s appears twice", k->section, k->name);
    CHECK_MSG(k->help && k->help[0] && k->unit, "[%s] %s needs help text and a unit", k->section, k->name);
    CHECK_MSG(k->offset < sizeof(struct config), "[%s] %s offset", k->section, k->name);
    CHECK_MSG(k->def || (k->flags & CFG_REQUIRED), "[%s] %s has no default", k->section, k->name);
    if (k->type == CFG_ENUM) CHECK_MSG(k->choices && k->choices[0], "[%s] %s choices", k->section, k->name);
    if (k->type == CFG_STRING || k->type == CFG_PATH)
      CHECK_MSG(k->size > 0 && k->offset + k->size <= sizeof(struct config), "[%s] %s size", k->section, k->name);
    /* a section's rows are adjacent: one table per section in deck-help and the canonical deck */
    for (int q = r + 2; q < cfg_schema_len; q++)
      if (!strcmp(cfg_schema[q].section, k->section))
        CHECK_MSG(!strcmp(cfg_schema[q - 1].section, k->section), "[%s] rows %d and %d are not adjacent",
                  k->section, r, q);
  }
}

static void test_defaults(void) {
  config_defaults(&cfg);
  for (int r = 0; r < cfg_schema_len; r++) CHECK(cfg.src[r] == 0);
  CHECK(cfg.run.seed == 1234);
  CHECK(cfg.run.mode == MODE_SYNC);
  CHECK(cfg.ranks.train == -1); /* auto */
  CHECK(cfg.sft.target_band.n == 2 && cfg.sft.target_band.v[0] == 0.0 && cfg.sft.target_band.v[1] == 1.0);
  CHECK(cfg.model.tie_embeddings == 1 && cfg.model.qkv_bias == 0);
  CHECK(!strcmp(cfg.model.init, "scratch") && cfg.run.restart[0] == '\0');
  /* an empty deck parses to the defaults, and they pass the cross-key checks ... */
  struct config d = cfg;
  CHECK(config_parse_deck(&cfg, "t.ini", "", 0, NULL, err, sizeof err) == 0 &&
        config_cross_check(&cfg, "t.ini", NULL, err, sizeof err) == 0);
  CHECK(same_values(&d, &cfg));
  /* ... but a deck that sets nothing is refused: an empty file, comments and headers only,
   * with overrides or without */
  expect_fail("", "t.ini: the deck is empty: it sets no key");
  expect_fail("# only a comment\n\n[run]\n", "t.ini: the deck is empty");
  char *over[] = {"run.steps=3"};
  CHECK(parse_over("\n", 1, over) == 2 && strstr(err, "the deck is empty"));
  expect_ok("[run]\nsteps = 10\n");  /* one key, even at its default, is a deck */
  /* group_size = 1 and a group baseline: every advantage 0 */
  expect_fail("[algo]\ngroup_size = 1\n", "t.ini:2: [algo] group_size: group_size = 1 with adv_estimator = grpo");
  expect_fail("[algo]\nname = rloo\ngroup_size = 1\n", "adv_estimator = rloo");
  expect_ok("[algo]\nname = ppo\ngroup_size = 1\n");
  expect_ok("[algo]\nname = reinforce_pp\ngroup_size = 1\n");
  expect_ok("[run]\nsteps = 0\n[algo]\ngroup_size = 1\n");
}

static const char *good =
    "# a good deck\n"
    "[run]\n"
    "seed = 7\n"
    "mode = colocate_async   ; inline comment\n"
    "restart =\n"
    "  [ sft ]  \n"
    "target_band = 0.25 , 0.75\n"
    "[model]\n"
    "  vocab_size = 32\n"
    "dim = 64 # comment\n"
    "kv_heads = 2\n"
    "tie_embeddings = No\n"
    "init_std = 0.1\n"
    "[optim]\n"
    "lr = 1e-4\n"
    "[ranks]\n"
    "train = auto\n"
    "cores_per_node = 16\n"
    "device_memory_gb = 1.5\r\n"
    "layout = colocated\n";  /* colocate_async's */

static void test_good_deck(void) {
  int rc = parse(good);
  CHECK_MSG(rc == 0, "%s", err);
  CHECK(cfg.run.seed == 7 && cfg.run.mode == MODE_COLOCATE_ASYNC && cfg.run.restart[0] == '\0');
  CHECK(cfg.sft.target_band.n == 2 && cfg.sft.target_band.v[0] == 0.25 && cfg.sft.target_band.v[1] == 0.75);
  CHECK(cfg.model.vocab_size == 32 && cfg.model.dim == 64 && cfg.model.kv_heads == 2);
  CHECK(cfg.model.tie_embeddings == 0 && cfg.model.init_std == 0.1 && cfg.optim.lr == 1e-4);
  CHECK(cfg.ranks.train == -1 && cfg.ranks.cores_per_node == 16 && cfg.ranks.device_memory_gb == 1.5);
  CHECK(cfg.src[config_find("run", "seed")] == 3);
  CHECK(cfg.src[config_find("model", "dim")] == 10);
  CHECK(cfg.src[config_find("ranks", "device_memory_gb")] == 19);
  CHECK(cfg.src[config_find("model", "layers")] == 0);
}

/* The canonical deck parses back to the identical struct, and is a fixed point. */
static void roundtrip(const struct config *c, const char *what) {
  char *t1 = canonical(c);
  int rc = config_parse(&cfg2, "canon.ini", t1, 0, NULL, err, sizeof err);
  CHECK_MSG(rc == 0, "%s: canonical deck does not parse: %s", what, err);
  CHECK_MSG(same_values(c, &cfg2), "%s: canonical deck parses to a different struct", what);
  for (int r = 0; r < cfg_schema_len; r++) CHECK(cfg2.src[r] > 0); /* it names every key */
  char *t2 = canonical(&cfg2);
  /* the values (not the source comments) are a fixed point */
  char *a = t1, *b = t2;
  int lines_equal = 1;
  while (*a && *b) {
    size_t la = strcspn(a, "#\n"), lb = strcspn(b, "#\n");
    if (la != lb || strncmp(a, b, la)) lines_equal = 0;
    a += strcspn(a, "\n");
    b += strcspn(b, "\n");
    if (*a) a++;
    if (*b) b++;
  }
  CHECK_MSG(lines_equal && !*a && !*b, "%s: canonical deck is not a fixed point", what);
  free(t1);
  free(t2);
}

static void test_roundtrip(void) {
  config_defaults(&cfg);
  roundtrip(&cfg, "defaults");
  CHECK(parse(good) == 0);
  roundtrip(&cfg, "good deck");
  /* awkward floats: every float key at a value with no short decimal form */
  CHECK(parse(good) == 0);
  struct config c = cfg;
  for (int r = 0; r < cfg_schema_len; r++) {
    const struct cfg_key *k = &cfg_schema[r];
    double *v = (double *)(void *)((char *)&c + k->offset);
    if (k->type != CFG_FLOAT || k->min > k->max) continue;
    /* [env] keys off their defaults are refused while [env] enabled = false (the good deck's
     * colocate_async cannot enable it): their floats print like every other's */
    if (!strcmp(k->section, "env")) continue;
    /* likewise [model] lora_alpha, refused off its default while lora_rank = 0 */
    if (!strcmp(k->name, "lora_alpha")) continue;
    *v = k->min + (k->max - k->min) / 3.0;
  }
  c.sft.target_band.v[0] = 0.1 + 0.2;
  c.sft.target_band.v[1] = 0.7;
  roundtrip(&c, "awkward floats");
  /* and the canonical deck shows each source */
  char *over[] = {"algo.group_size=4"};
  CHECK(parse_over(good, 1, over) == 0);
  char *t = canonical(&cfg);
  CHECK(strstr(t, "# deck:10") && strstr(t, "# override") && strstr(t, "# default"));
  CHECK(strstr(t, "\n[model]\n") && strstr(t, "\nmode = colocate_async "));
  free(t);
}

static void test_overrides(void) {
  char *over[] = {"algo.group_size=4", "model.dim=256", "run.mode=separate_async", "log.samples_path="};
  int rc = parse_over(good, 4, over);
  CHECK_MSG(rc == 0, "%s", err);
  CHECK(cfg.algo.group_size == 4 && cfg.model.dim == 256 && cfg.run.mode == MODE_SEPARATE_ASYNC);
  CHECK(cfg.src[config_find("model", "dim")] == -2); /* override number 2 beats deck line 10 */
  char *bad1[] = {"algo.group_size=0"};
  CHECK(parse_over(good, 1, bad1) == 2);
  CHECK_MSG(!strncmp(err, "override 'algo.group_size=0': [algo] group_size: 0 is out of range [1, ", 70), "%s", err);
  char *bad2[] = {"modle.dim=64"};
  CHECK(parse_over(good, 1, bad2) == 2 && strstr(err, "unknown section") && strstr(err, "did you mean model.dim?"));
  char *bad3[] = {"model.dim"};
  CHECK(parse_over(good, 1, bad3) == 2 && strstr(err, "expected section.key=value"));
  char *bad4[] = {"model.dim=64", "model.dim=128"};
  CHECK(parse_over(good, 2, bad4) == 2 && strstr(err, "overridden twice"));
  char *bad5[] = {"model.dim=12x"};
  CHECK(parse_over(good, 1, bad5) == 2 && strstr(err, "trailing junk 'x'"));
  char *bad6[] = {"task.ops=+ # x"};
  CHECK(parse_over(good, 1, bad6) == 2 && strstr(err, "cannot be written in a deck"));
  /* cross-key failures name the override that broke them */
  char *bad7[] = {"model.kv_heads=3"};
  CHECK(parse_over(good, 1, bad7) == 2);
  CHECK_MSG(strstr(err, "override 'model.kv_heads=3': [model] kv_heads: model.heads (4)") == err, "%s", err);

  CHECK(config_is_override("a.b=1") && config_is_override("algo.group_size=") && config_is_override("a.b=c=d"));
  CHECK(!config_is_override("--world=8") && !config_is_override("deck.ini") && !config_is_override("a=b.c") &&
        !config_is_override(".b=1") && !config_is_override("a.=1") && !config_is_override("dir/x.ini=3"));
  char *argv[] = {"run", "--dry-run", "deck.ini", "optim.lr=1", "-n", "4", "run.seed=2"};
  char *o[7], *rest[7];
  int no, nr;
  config_split_args(7, argv, o, &no, rest, &nr);
  CHECK(no == 2 && !strcmp(o[0], "optim.lr=1") && !strcmp(o[1], "run.seed=2"));
  CHECK(nr == 4 && !strcmp(rest[0], "--dry-run") && !strcmp(rest[1], "deck.ini") && !strcmp(rest[3], "4"));
}

static void test_types(void) {
  /* int */
  expect_ok("[model]\ndim = +64\n");
  CHECK(cfg.model.dim == 64);
  expect_fail("[model]\ndim = 12x\n", "t.ini:2: [model] dim: trailing junk 'x' after the integer 12");
  expect_fail("[model]\ndim =\n", "expected an integer, got ''");
  expect_fail("[model]\ndim = 1.5\n", "expected an integer, got '1.5'");
  expect_fail("[model]\ndim = 99999999999999999999\n", "overflows");
  expect_fail("[model]\ndim = 0\n", "0 is out of range [1, ");
  expect_fail("[model]\ndim = auto\n", "expected an integer, got 'auto'");
  expect_ok("[model]\nvocab_size = auto\n");
  CHECK(cfg.model.vocab_size == -1);
  expect_ok("[run]\nseed = 9200000000000000000\n"); /* inclusive upper bound of a 64-bit int */
  CHECK(cfg.run.seed == 9200000000000000000L);
  /* float */
  expect_ok("[optim]\nlr = 0x1p-3\n");
  CHECK(cfg.optim.lr == 0.125);
  expect_ok("[optim]\nbeta1 = 0\n");
  expect_fail("[optim]\nlr = 1e999\n", "expected a finite number");
  expect_fail("[optim]\nlr = inf\n", "expected a finite number");
  expect_fail("[optim]\nlr = 1.5.2\n", "trailing junk '.2' after the number 1.5");
  expect_fail("[optim]\nlr = 11\n", "11 is out of range [0, 10]");
  expect_fail("[optim]\nlr = -1e-9\n", "out of range");
  /* bool */
  expect_ok("[model]\nqkv_bias = YES\nvalue_head = on\ntie_embeddings = 0\n");
  CHECK(cfg.model.qkv_bias == 1 && cfg.model.value_head == 1 && cfg.model.tie_embeddings == 0);
  expect_fail("[model]\nqkv_bias = 2\n", "expected a bool");
  /* enum: exact names, message lists the choices */
  expect_ok("[optim]\nschedule = linear\n");
  CHECK(cfg.optim.schedule == SCHED_LINEAR);
  expect_fail("[optim]\nschedule = Linear\n", "'Linear' is not one of constant|linear|cosine");
  /* list */
  expect_ok("[sft]\ntarget_band = 0.5,0.5\n");
  expect_fail("[sft]\ntarget_band = 0.1,\n", "item 2 of the list '0.1,' is empty");
  expect_fail("[sft]\ntarget_band =\n", "expected two items"); /* the empty list parses; the cross check refuses it */
  expect_fail("[sft]\ntarget_band = 0.1, 0.2, 0.3\n", "expected two items");
  expect_fail("[sft]\ntarget_band = 0.8, 0.2\n", "lo <= hi");
  expect_fail("[sft]\ntarget_band = 0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0\n", "more than 16 items");
  /* string / path */
  char deck[1200] = "[task]\nname = ";
  size_t n = strlen(deck);
  memset(deck + n, 'a', 64);
  strcpy(deck + n + 64, "\n");
  expect_fail(deck, "value is 64 characters long; the limit is 63");
  deck[n + 63] = '\n';
  deck[n + 64] = '\0';
  expect_ok(deck);
  char big[8000] = "[log]\nmetrics_path = ";
  n = strlen(big);
  memset(big + n, 'p', 512);
  strcpy(big + n + 512, "\n");
  expect_fail(big, "value is 512 characters long; the limit is 511");
  big[n + 511] = '\n';
  big[n + 512] = '\0';
  expect_ok(big);
  n = strlen(big);
  memset(big + n, 'x', 5000);
  big[n + 5000] = '\0';
  expect_fail(big, "t.ini:3: line is longer than");
  expect_fail("[task]\nname =\n", "expected a non-empty string");
  expect_ok("[task]\nops = +-*\n");
  CHECK(!strcmp(cfg.task.ops, "+-*"));
}

static void test_messages(void) {
  expect_fail("[run]\nseed = 1\n[modle]\n", "t.ini:3: [modle]: unknown section\n  did you mean [model]?");
  expect_fail("[zzzzzzzzz]\n", "t.ini:1: [zzzzzzzzz]: unknown section");
  CHECK(!strstr(err, "did you mean") && strstr(err, "\n  the sections are: [run] [sft] [model]")); /* no guess */
  expect_fail("[model]\nwhatever_this_is = 1\n", "unknown key\n  `rlpt deck-help` lists the keys of [model]");
  expect_fail("[model]\ndimm = 3\n", "t.ini:2: [model] dimm: unknown key\n  did you mean 'dim'?");
  expect_fail("[model]\nlr = 3\n", "did you mean [sft] lr or [optim] lr?");
  expect_fail("[model]\ndim = 64\n\ndim = 64\n", "t.ini:4: [model] dim: duplicate key (first set on line 2)");
  /* the same key in two [model] blocks is still a duplicate */
  expect_fail("[model]\ndim = 64\n[run]\n[model]\ndim = 64\n", "t.ini:5: [model] dim: duplicate key");
  expect_fail("[run]\nmode = sink\n", "t.ini:2: [run] mode: 'sink' is not one of");
  expect_fail("[run]\n\nnot a line\n", "t.ini:3: unparsable line 'not a line'");
  expect_fail("[run]\nseed: 3\n", "t.ini:2: unparsable line 'seed: 3'");
  expect_fail("[run\n", "t.ini:1: unparsable line '[run'");
  expect_fail("[run] seed = 1\n", "t.ini:1: unparsable line");
  expect_fail("seed = 1\n", "t.ini:1: seed: key outside of any section");
  expect_fail("[model]\ndim = 64;c\n", "t.ini:2: [model] dim: trailing junk ';c'"); /* ';' after a blank only */
  expect_ok("\xEF\xBB\xBF[run]\r\nseed = 3\r\n"); /* byte-order mark, CRLF */
  CHECK(cfg.run.seed == 3);
  expect_ok("[model]\n  dim = 64\n    heads = 4\n"); /* indentation is not a continuation line */
  CHECK(cfg.model.dim == 64 && cfg.model.heads == 4);
  /* cross-key checks name the keys and the line of the key that was set */
  expect_fail("[model]\ndim = 96\nheads = 6\nkv_heads = 4\n", "t.ini:3: [model] heads: model.heads (6) must be divisible by model.kv_heads (4)");
  expect_fail("[model]\ndim = 100\nheads = 8\nkv_heads = 4\n", "t.ini:2: [model] dim: model.dim (100) must be divisible by model.heads (8)");
  expect_fail("[eval]\nk = 5\n", "t.ini:2: [eval] k: eval.k (5) must not exceed eval.samples (4)");
  expect_fail("[task]\ndigits_min = 3\n", "[task] digits_min: task.digits_min (3) must not exceed task.digits_max (2)");
  expect_fail("[rollout]\nmax_new_tokens = 64\n", "rollout.max_new_tokens (64) must be less than model.max_seq (64)");
  expect_fail("[log]\nsamples_every = 5\n", "needs log.samples_path");
  /* file errors */
  struct config c;
  CHECK(config_load_serial(&c, "/nonexistent/deck.ini", 0, NULL) == 2);
}

/* die_local without MPI: prints "rlpt: ..." and exits 1 (checked in a child process). */
static void test_die_local(void) {
  int fds[2];
  CHECK(pipe(fds) == 0);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 2);
    die_local("broken invariant %d", 42);
  }
  close(fds[1]);
  char buf[256] = "";
  ssize_t n = read(fds[0], buf, sizeof buf - 1);
  close(fds[0]);
  buf[n > 0 ? n : 0] = '\0';
  int status = 0;
  waitpid(pid, &status, 0);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 1);
  CHECK_MSG(!strcmp(buf, "rlpt: broken invariant 42\n"), "die_local printed '%s'", buf);
}

int main(void) {
  test_schema();
  test_defaults();
  test_good_deck();
  test_roundtrip();
  test_overrides();
  test_types();
  test_messages();
  test_die_local();
  return TEST_RESULT("test_config");
}
