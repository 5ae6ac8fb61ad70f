/* sandbox/sandbox.c: the sandbox's set-up: the tools and the interpreter found, and an
 * empty program run to prove that this machine isolates (sandbox/sandbox.h). */
#include "sandbox/sandbox.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void sandbox_opts_from_config(struct sandbox_opts *o, const struct config *cfg) {
  *o = (struct sandbox_opts){
    .isolation = cfg->sandbox.isolation, .timeout_s = cfg->sandbox.timeout_s, .cpu_s = cfg->sandbox.cpu_s,
    .memory_mb = cfg->sandbox.memory_mb, .output_kb = cfg->sandbox.output_kb, .file_mb = cfg->sandbox.file_mb,
    .processes = cfg->sandbox.processes};
  snprintf(o->interpreter, sizeof o->interpreter, "%s", cfg->sandbox.interpreter);
}

const char *sandbox_status_name(enum sandbox_status s) {
  switch (s) {
    case SANDBOX_EXITED: return "exited";
    case SANDBOX_SIGNALED: return "signaled";
    case SANDBOX_TIMEOUT: return "timeout";
    case SANDBOX_CPU_LIMIT: return "cpu_limit";
    case SANDBOX_OUTPUT_LIMIT: return "output_limit";
    case SANDBOX_START_FAILED: return "start_failed";
  }
  return "?";
}

int sandbox_job_ok(const struct sandbox_job *j) { return j->status == SANDBOX_EXITED && j->exit_code == 0; }

void sandbox_job_clear(struct sandbox_job *j) {
  free(j->out);
  free(j->err);
  j->out = j->err = NULL;
  j->out_len = j->err_len = 0;
}

/* name as an absolute path, else the first dir of dirs (':'-separated) holding it as an
 * executable; the real path (links resolved) into out. 0, or -1. */
static int find_program(const char *name, const char *dirs, char *out) {
  char cand[PATH_MAX];
  if (strchr(name, '/')) return realpath(name, out) && access(out, X_OK) == 0 ? 0 : -1;
  for (const char *d = dirs; *d;) {
    size_t n = strcspn(d, ":");
    snprintf(cand, sizeof cand, "%.*s/%s", (int)n, d, name);
    if (access(cand, X_OK) == 0 && realpath(cand, out)) return 0;
    d += n + (d[n] == ':');
  }
  return -1;
}

/* What /usr does not hold of the interpreter: the folder above its bin/ (/opt/py/bin/python3
 * -> /opt/py), bound read-only as well. */
static void interp_root(struct sandbox *sb) {
  sb->interp_root[0] = '\0';
  if (!strncmp(sb->interp, "/usr/", 5)) return;
  snprintf(sb->interp_root, sizeof sb->interp_root, "%s", sb->interp);
  for (int up = 0; up < 2; up++) {
    char *slash = strrchr(sb->interp_root, '/');
    if (slash && slash != sb->interp_root) *slash = '\0';
  }
}

static int split_interpreter(struct sandbox *sb, char *err, size_t errlen) {
  char buf[CFG_STR_MAX];
  snprintf(buf, sizeof buf, "%s", sb->o.interpreter);
  sb->n_interp_words = 0;
  for (char *save = NULL, *w = strtok_r(buf, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
    if (sb->n_interp_words == SANDBOX_INTERP_WORDS) {
      snprintf(err, errlen, "[sandbox] interpreter: more than %d words", SANDBOX_INTERP_WORDS);
      return 2;
    }
    snprintf(sb->interp_words[sb->n_interp_words++], CFG_STR_MAX, "%s", w);
  }
  if (sb->n_interp_words == 0) {
    snprintf(err, errlen, "[sandbox] interpreter: empty; name the program that runs the code, e.g. python3");
    return 2;
  }
  return 0;
}

static int find_tools(struct sandbox *sb, char *err, size_t errlen) {
  const char *sys = "/usr/local/bin:/usr/bin:/bin";
  if (find_program(sb->interp_words[0], sys, sb->interp)) {
    snprintf(err, errlen, "[sandbox] interpreter: '%s' is not an executable in %s", sb->interp_words[0], sys);
    return 2;
  }
  interp_root(sb);
  if (sb->o.isolation != SANDBOX_ISOLATION_BWRAP) return 0;
  if (find_program("bwrap", sys, sb->bwrap)) {
    snprintf(err, errlen, "[sandbox] isolation = bwrap: bubblewrap (bwrap) is not installed in %s "
             "(apt-get install bubblewrap); only with [sandbox] isolation = rlimits_only does model-written "
             "code run without it, and then it can read the host", sys);
    return 2;
  }
  if (find_program("prlimit", "/usr/bin:/bin", sb->prlimit)) {
    snprintf(err, errlen, "[sandbox] isolation = bwrap: prlimit (util-linux) is not in /usr/bin");
    return 2;
  }
  return 0;
}

/* An empty program must end with status 0: otherwise the namespaces (or the interpreter)
 * are refused here, and nothing would ever pass. */
static int probe(const struct sandbox *sb, char *err, size_t errlen) {
  struct sandbox_job j = {.program = "", .program_len = 0};
  if (sandbox_run(sb, &j, 1, 1)) {
    snprintf(err, errlen, "[sandbox]: out of memory starting the probe");
    return 1;
  }
  int ok = sandbox_job_ok(&j);
  if (!ok) {
    const char *why = j.status == SANDBOX_START_FAILED ? j.start_error : j.err && j.err[0] ? j.err : "";
    snprintf(err, errlen, "[sandbox] isolation = %s: an empty program with '%s' ended %s (exit %d): %.300s%s",
             sb->o.isolation == SANDBOX_ISOLATION_BWRAP ? "bwrap" : "rlimits_only", sb->o.interpreter,
             sandbox_status_name(j.status), j.exit_code, why,
             sb->o.isolation == SANDBOX_ISOLATION_BWRAP
                 ? " (are user namespaces refused here? only [sandbox] isolation = rlimits_only runs code "
                   "without them, and then it can read the host)" : "");
  }
  sandbox_job_clear(&j);
  return ok ? 0 : 2;
}

int sandbox_init(struct sandbox *sb, const struct sandbox_opts *o, char *err, size_t errlen) {
  memset(sb, 0, sizeof *sb);
  sb->o = *o;
  sb->drop_to_nobody = geteuid() == 0;
  int rc = split_interpreter(sb, err, errlen);
  if (!rc) rc = find_tools(sb, err, errlen);
  if (!rc) rc = probe(sb, err, errlen);
  if (!rc && o->isolation == SANDBOX_ISOLATION_RLIMITS_ONLY)
    fprintf(stderr, "rlpt: WARNING: [sandbox] isolation = rlimits_only: model-written code runs WITHOUT "
            "namespaces: it can read the host's files, use the network and signal processes of its uid; "
            "only CPU, memory, file size, process and output limits and the %g s timeout bound it\n",
            o->timeout_s);
  return rc;
}
