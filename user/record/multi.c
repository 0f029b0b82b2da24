// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "grow.h"
#include "hash.h"
#include "multi.h"
#include "printable.h"
#include "procfs.h"
#include "parse_num.h"
#include "py_target.h"
#include "remote.h"

/* How often /proc is scanned for new matches. */
#define SCAN_NS		(200ull * 1000000ull)
/* how long a matching process may take to show a CPython interpreter */
#define READY_TIMEOUT_NS (10ull * 1000000000ull)

enum target_state {
	T_PENDING,	/* matched; waiting for its interpreter */
	T_READY,	/* a CPython ebpfprof supports: waits for room */
	T_RUNNING,	/* a member of the session records it */
	T_DONE,		/* recorded, or not Python: until the pid goes or execs */
	T_REFUSED,	/* refused or its recording failed: never tried again */
};

struct target {
	pid_t pid;
	unsigned long long start_time;	/* with the pid, names the process */
	enum target_state state;
	void *out;		/* T_RUNNING: the front end's outputs of it */
	uint64_t deadline_ns;	/* T_PENDING: give up then */
	uint64_t cmd_hash;	/* T_DONE: an exec changes it, look again */
	int seen;		/* in the last scan */
};

struct multi {
	const struct multi_opts *o;
	struct controller ctl;
	struct target *t;
	size_t n, cap;
	unsigned max;		/* processes at once */
	uint64_t next_scan_ns;
	volatile sig_atomic_t *stop, *cut;
	unsigned started, failed;	/* recordings tried; those that failed */
	unsigned refused;	/* matched CPython processes not recorded (unsupported) */
	unsigned running;	/* members recording now */
	int told_full;		/* the line about the bound was printed */
};

static uint64_t cmdline_hash(pid_t pid)
{
	char cmdline[MATCH_CMDLINE_MAX];

	return procfs_cmdline(pid, cmdline, sizeof(cmdline)) ? 0 : fnv1a_str(FNV1A_BASIS, cmdline);
}

static struct target *find_target(struct multi *m, pid_t pid)
{
	for (size_t i = 0; i < m->n; i++)
		if (m->t[i].pid == pid)
			return &m->t[i];
	return NULL;
}

static void new_candidate(struct target *t, pid_t pid)
{
	*t = (struct target){ .pid = pid, .state = T_PENDING, .start_time = procfs_start_time(pid),
			      .deadline_ns = monotonic_ns() + READY_TIMEOUT_NS };
}

static struct target *add_target(struct multi *m, pid_t pid)
{
	if (GROW_ARRAY(m->t, m->cap, m->n + 1))
		return NULL;
	new_candidate(&m->t[m->n], pid);
	return &m->t[m->n++];
}

/* A process this run will not record: one line, and it is never tried
 * again (not even after an exec: it is the same process). */
static void give_up(struct target *t, const char *why)
{
	char shown[1024];

	fprintf(stderr, "ebpfprof: not profiling process %d: %s; not tried again\n", t->pid,
		printable(why, shown, sizeof(shown)));
	t->state = T_REFUSED;
}

static void failed(struct multi *m, struct target *t, const char *why)
{
	m->failed++;
	give_up(t, why);
}

/* The prepared target joins the session, its outputs checked first. */
static void start(struct multi *m, struct target *t, const struct py_target *pt)
{
	char err[512], cmdline[MATCH_CMDLINE_MAX], shown[MATCH_CMDLINE_MAX];

	if (procfs_cmdline(t->pid, cmdline, sizeof(cmdline)) == 0)
		fprintf(stderr, "ebpfprof: profiling process %d: %.200s\n", t->pid,
			printable(cmdline, shown, sizeof(shown)));
	/* tried, even if it fails to start: the summary counts started - failed */
	m->started++;
	t->out = m->o->out.start(m->o->out.ctx, pt, err, sizeof(err));
	if (!t->out) {
		remote_untrack(t->pid);
		failed(m, t, err);
		return;
	}
	if (!controller_add(&m->ctl, pt, -1, 0, err, sizeof(err))) {
		m->o->out.discard(m->o->out.ctx, t->out);
		t->out = NULL;
		failed(m, t, err);
		return;
	}
	t->state = T_RUNNING;
	m->running++;
}

/* Is the process a CPython ebpfprof supports (yet)? Checked before
 * anything is set up for it; it starts at once if there is room, else waits
 * its turn (said once, the first time the bound is met). */
static void try_start(struct multi *m, struct target *t)
{
	struct py_target pt;
	char err[512];
	int rc;

	if (t->state == T_READY && m->running >= m->max)
		return;
	if (controller_records(&m->ctl, t->pid)) {
		/* a child a member follows (-s): in its parent's profile already */
		t->state = T_DONE;
		t->cmd_hash = cmdline_hash(t->pid);
		return;
	}
	/* started only once its interpreter is initialised */
	rc = py_target_open(t->pid, &pt, err, sizeof(err));
	if (rc == PY_TARGET_OK && m->running < m->max) {
		start(m, t, &pt);
		return;
	}
	/* not read until it starts: its pidfd is let go */
	remote_untrack(t->pid);
	if (rc == PY_TARGET_OK) {
		if (!m->told_full)
			fprintf(stderr, "ebpfprof: %u processes recorded at once already, the most "
				"(--max-processes): process %d (and any further match) waits for one "
				"to end\n", m->max, t->pid);
		m->told_full = 1;
		t->state = T_READY;
	} else if (rc == PY_TARGET_UNSUPPORTED) {
		m->refused++;
		give_up(t, err);
	} else if (!m->o->match && (rc != PY_TARGET_NOT_READY || monotonic_ns() > t->deadline_ns)) {
		/* a pid given is recorded or said why not */
		m->started++;
		failed(m, t, err);
	} else if (rc == PY_TARGET_GONE || t->state == T_READY || monotonic_ns() > t->deadline_ns) {
		t->state = T_DONE;
		t->cmd_hash = cmdline_hash(t->pid);
	}
}

static void on_match(void *ctx, pid_t pid, const char *cmdline)
{
	struct multi *m = ctx;
	struct target *t = find_target(m, pid);

	if (!t) {
		t = add_target(m, pid);
		if (!t)
			return;
	} else if (t->state != T_RUNNING && t->start_time != procfs_start_time(pid)) {
		/* another process with the same pid */
		new_candidate(t, pid);
	} else if (t->state == T_DONE && t->cmd_hash != fnv1a_str(FNV1A_BASIS, cmdline)) {
		/* the same process exec'ed another program: a new candidate */
		new_candidate(t, pid);
	}
	t->seen = 1;
}

/* Kept while unseen: a running recording, and a process given up on for as
 * long as it lives (it may stop matching and match again). */
static int keep_unseen(const struct target *t)
{
	if (t->state == T_RUNNING)
		return 1;
	return t->state == T_REFUSED && t->start_time &&
	       procfs_start_time(t->pid) == t->start_time;
}

static void scan(struct multi *m)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		m->t[i].seen = 0;
	matcher_scan(m->o->match, on_match, m);
	/* forget what is gone and done with, so that a reused pid is new */
	for (i = 0; i < m->n; i++)
		if (!m->t[i].seen && !keep_unseen(&m->t[i]))
			m->t[i--] = m->t[--m->n];
}

/* Starts what waits, in the order found, while there is room. */
static void start_waiting(struct multi *m)
{
	for (size_t i = 0; i < m->n; i++)
		if (m->t[i].state == T_READY || m->t[i].state == T_PENDING)
			try_start(m, &m->t[i]);
}

static size_t count(const struct multi *m, enum target_state state)
{
	size_t n = 0;

	for (size_t i = 0; i < m->n; i++)
		n += m->t[i].state == state;
	return n;
}

/* Processes ready to record that wait for room. */
static size_t waiting(const struct multi *m)
{
	return count(m, T_READY);
}

static struct target *running_target(struct multi *m, pid_t pid)
{
	for (size_t i = 0; i < m->n; i++)
		if (m->t[i].pid == pid && m->t[i].state == T_RUNNING)
			return &m->t[i];
	return NULL;
}

/* the controller's hooks */

static int should_stop(void *ctx)
{
	struct multi *m = ctx;

	if (*m->stop)
		return 1;
	/* fixed pids: done when every one has ended */
	return !m->o->match && !m->running && !waiting(m) && !count(m, T_PENDING);
}

static void on_tick(void *ctx, uint64_t now_ns)
{
	struct multi *m = ctx;

	if (*m->cut) {
		*m->cut = 0;
		controller_request_cut(&m->ctl);
	}
	if (now_ns < m->next_scan_ns)
		return;
	m->next_scan_ns = now_ns + SCAN_NS;
	if (m->o->match)
		scan(m);
	start_waiting(m);
}

static void on_period(void *ctx, struct controller_member *mem, uint64_t end_ns)
{
	struct multi *m = ctx;
	struct target *t = running_target(m, mem->target.pid);

	if (t)
		m->o->out.period(m->o->out.ctx, mem, t->out, end_ns);
}

static void on_end(void *ctx, struct controller_member *mem)
{
	struct multi *m = ctx;
	struct target *t = running_target(m, mem->target.pid);
	void *out;

	if (!t)
		return;
	out = t->out;
	t->out = NULL;
	m->running--;
	if (m->o->out.end(m->o->out.ctx, mem, out)) {
		/* the front end said why; a process recorded once is not again */
		m->failed++;
		t->state = T_REFUSED;
		return;
	}
	t->state = T_DONE;
	t->cmd_hash = cmdline_hash(t->pid);
}

static void print_summary(struct multi *m)
{
	unsigned ok = m->started - m->failed;

	fprintf(stderr, "ebpfprof: %u process%s recorded %s, %u failed", ok, ok == 1 ? "" : "es",
		m->o->where, m->failed);
	if (m->refused)
		fprintf(stderr, ", %u refused", m->refused);
	if (waiting(m))
		fprintf(stderr, ", %zu not recorded (more than %u at once)", waiting(m), m->max);
	fputc('\n', stderr);
}

int multi_run(const struct multi_opts *o, volatile sig_atomic_t *stop,
	      volatile sig_atomic_t *cut)
{
	struct multi m = { .o = o, .stop = stop, .cut = cut,
			   .max = o->max_processes ? o->max_processes : MULTI_DEFAULT_PROCESSES };
	struct controller_config cfg = *o->cfg;
	char err[512], shown[1024];
	int rc;

	cfg.several = 1;
	cfg.periods = CONTROLLER_PERIODS_SEPARATE;
	cfg.should_stop = should_stop;
	cfg.on_tick = on_tick;
	cfg.on_period = on_period;
	cfg.on_end = on_end;
	cfg.ctx = &m;
	if (controller_open(&m.ctl, &cfg, err, sizeof(err))) {
		fprintf(stderr, "ebpfprof: %s\n", printable(err, shown, sizeof(shown)));
		return 1;
	}
	for (size_t i = 0; i < o->npids; i++) {
		struct target *t = add_target(&m, o->pids[i]);

		if (t)
			try_start(&m, t);
	}
	if (o->match)
		fprintf(stderr, "ebpfprof: profiling every CPython process matching '%s'%s\n",
			o->pattern, o->cfg->duration_ns ? "" : " until Ctrl-C or SIGTERM");
	controller_run(&m.ctl);
	controller_stop(&m.ctl);
	print_summary(&m);
	session_print_summary(m.ctl.session, stderr, o->cfg->verbose);
	if (o->cfg->verbose)
		fprintf(stderr, "ebpfprof: %lu records of processes no longer recorded, dropped\n",
			m.ctl.unrouted);
	rc = m.failed || m.refused || waiting(&m) ? 1 : 0;
	controller_close(&m.ctl);
	free(m.t);
	return rc;
}

int parse_pid_list(const char *s, pid_t **out, size_t *n)
{
	size_t cap = 1;
	pid_t *v;

	for (const char *p = s; *p; p++)
		cap += *p == ',';
	v = calloc(cap, sizeof(*v));
	if (!v)
		return -1;
	*n = 0;
	while (*s) {
		const char *end;
		unsigned long pid;

		if (parse_ulong_at(s, 1, INT_MAX, &end, &pid) || (*end && *end != ','))
			goto bad;
		for (size_t i = 0; i < *n; i++)
			if (v[i] == (pid_t)pid)
				goto bad;
		v[(*n)++] = pid;
		s = *end ? end + 1 : end;
		if (*end && !*s)
			goto bad;	/* a trailing comma */
	}
	if (!*n)
		goto bad;
	*out = v;
	return 0;
bad:
	free(v);
	return -1;
}
