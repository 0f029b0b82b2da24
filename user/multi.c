// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "grow.h"
#include "multi.h"
#include "parse_num.h"
#include "py_target.h"
#include "recorder.h"

#define POLL_NS		(200ull * 1000000ull)
/* how long a matching process may take to show a CPython interpreter */
#define READY_TIMEOUT_NS (10ull * 1000000000ull)
/* after the duration, how long the children may take to write */
#define FINISH_GRACE_NS	(30ull * 1000000000ull)
#define MAX_ARGS	64

enum target_state {
	T_PENDING,	/* matched; waiting for its interpreter */
	T_RUNNING,	/* a child records it */
	T_DONE,		/* recorded, failed or not Python: until the pid goes */
};

struct target {
	pid_t pid;
	enum target_state state;
	pid_t child;
	uint64_t deadline_ns;	/* T_PENDING: give up then */
	unsigned long cmd_hash;	/* T_DONE: an exec changes it, look again */
	int seen;		/* in the last scan */
};

struct multi {
	const struct multi_opts *o;
	struct target *t;
	size_t n, cap;
	uint64_t end_ns;	/* 0: no duration */
	unsigned started, failed;	/* recordings tried; those that failed */
};

static unsigned long hash_str(const char *s)
{
	unsigned long h = 5381;

	while (*s)
		h = h * 33 + (unsigned char)*s++;
	return h;
}

static struct target *find_target(struct multi *m, pid_t pid)
{
	for (size_t i = 0; i < m->n; i++)
		if (m->t[i].pid == pid)
			return &m->t[i];
	return NULL;
}

static struct target *add_target(struct multi *m, pid_t pid)
{
	if (GROW_ARRAY(m->t, m->cap, m->n + 1))
		return NULL;
	m->t[m->n] = (struct target){ .pid = pid, .state = T_PENDING,
				       .deadline_ns = monotonic_ns() + READY_TIMEOUT_NS };
	return &m->t[m->n++];
}

static void format_seconds(char *buf, size_t len, double s)
{
	snprintf(buf, len, "%.3f", s);
}

/* The child: "ebpfprof OPTIONS --pid PID -o DIR/ebpfprof-PID.SUFFIX ...". */
static pid_t spawn_child(struct multi *m, pid_t pid)
{
	const struct multi_opts *o = m->o;
	char pidbuf[16], out[PATH_MAX], gclog[PATH_MAX], dur[32];
	const char *argv[MAX_ARGS];
	size_t n = 0;
	pid_t child;

	for (const char *const *a = o->base_argv; *a && n < MAX_ARGS - 10; a++)
		argv[n++] = *a;
	snprintf(pidbuf, sizeof(pidbuf), "%d", pid);
	snprintf(out, sizeof(out), "%s/ebpfprof-%d%s", o->outdir, pid, o->suffix);
	argv[n++] = "--pid";
	argv[n++] = pidbuf;
	argv[n++] = "-o";
	argv[n++] = out;
	if (o->gc_log_dir) {
		snprintf(gclog, sizeof(gclog), "%s/ebpfprof-%d.gc.jsonl", o->gc_log_dir, pid);
		argv[n++] = "--gc-log";
		argv[n++] = gclog;
	}
	if (m->end_ns) {
		format_seconds(dur, sizeof(dur), (m->end_ns - monotonic_ns()) / 1e9);
		argv[n++] = "-d";
		argv[n++] = dur;
	}
	argv[n] = NULL;
	child = fork();
	if (child == 0) {
		/* the recording must not outlive the one who asked for it */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		execv("/proc/self/exe", (char **)argv);
		fprintf(stderr, "ebpfprof: cannot run /proc/self/exe: %s\n", strerror(errno));
		_exit(1);
	}
	return child;
}

static void start(struct multi *m, struct target *t)
{
	/* tried, even if it fails to start: the summary counts started - failed */
	m->started++;
	t->child = spawn_child(m, t->pid);
	if (t->child < 0) {
		fprintf(stderr, "ebpfprof: cannot start the recording of process %d: %s\n",
			t->pid, strerror(errno));
		t->state = T_DONE;
		m->failed++;
		return;
	}
	t->state = T_RUNNING;
}

/* T_PENDING: is it a CPython process yet? Started if so. */
static void try_start(struct multi *m, struct target *t)
{
	struct py_target pt;
	char err[512], cmdline[MATCH_CMDLINE_MAX];
	int rc = py_target_find(t->pid, &pt, err, sizeof(err));

	/* started only once its interpreter is initialised: "--pid" does not wait */
	if (rc == PY_TARGET_OK)
		rc = py_target_prepare(&pt, err, sizeof(err));
	if (rc == PY_TARGET_OK || rc == PY_TARGET_UNSUPPORTED) {
		/* the child says why an unsupported one cannot be profiled */
		if (procfs_cmdline(t->pid, cmdline, sizeof(cmdline)) == 0)
			fprintf(stderr, "ebpfprof: profiling process %d: %.200s\n", t->pid, cmdline);
		start(m, t);
		return;
	}
	if (rc == PY_TARGET_GONE || monotonic_ns() > t->deadline_ns) {
		t->state = T_DONE;
		t->cmd_hash = procfs_cmdline(t->pid, cmdline, sizeof(cmdline)) ? 0 : hash_str(cmdline);
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
	} else if (t->state == T_DONE && t->child <= 0 && t->cmd_hash != hash_str(cmdline)) {
		/* the same pid exec'ed another program: a new candidate */
		*t = (struct target){ .pid = pid, .state = T_PENDING,
				      .deadline_ns = monotonic_ns() + READY_TIMEOUT_NS };
	}
	t->seen = 1;
}

static void scan(struct multi *m)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		m->t[i].seen = 0;
	matcher_scan(m->o->match, on_match, m);
	/* forget what is gone and done with, so that a reused pid is new */
	for (i = 0; i < m->n; i++)
		if (!m->t[i].seen && m->t[i].state != T_RUNNING)
			m->t[i--] = m->t[--m->n];
	for (i = 0; i < m->n; i++)
		if (m->t[i].state == T_PENDING)
			try_start(m, &m->t[i]);
}

static void reaped(struct multi *m, pid_t child, int status)
{
	for (size_t i = 0; i < m->n; i++) {
		if (m->t[i].child != child)
			continue;
		m->t[i].state = T_DONE;
		m->t[i].child = 0;
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			m->failed++;
		return;
	}
}

static size_t reap(struct multi *m, int block)
{
	size_t running = 0;
	int status;
	pid_t c;

	while ((c = waitpid(-1, &status, block ? 0 : WNOHANG)) > 0) {
		reaped(m, c, status);
		block = 0;
	}
	for (size_t i = 0; i < m->n; i++)
		running += m->t[i].state == T_RUNNING;
	return running;
}

static void signal_children(struct multi *m, int sig)
{
	for (size_t i = 0; i < m->n; i++)
		if (m->t[i].state == T_RUNNING)
			kill(m->t[i].child, sig);
}

static void nap(uint64_t ns)
{
	struct timespec ts = { ns / 1000000000ull, ns % 1000000000ull };

	nanosleep(&ts, NULL);	/* a signal ends it early: fine */
}

static void run_loop(struct multi *m, volatile sig_atomic_t *stop,
		     volatile sig_atomic_t *forward)
{
	for (;;) {
		size_t running = reap(m, 0);

		if (*forward) {
			signal_children(m, *forward);
			*forward = 0;
		}
		if (*stop) {
			signal_children(m, SIGTERM);
			return;
		}
		if (m->end_ns && monotonic_ns() + 50000000ull >= m->end_ns)
			return;
		if (m->o->match)
			scan(m);
		else if (!running)
			return;
		nap(POLL_NS);
	}
}

static void finish(struct multi *m, volatile sig_atomic_t *stop)
{
	uint64_t give_up = monotonic_ns() + FINISH_GRACE_NS;
	int terminated = 0;

	while (reap(m, 0)) {
		if (!terminated && (*stop || monotonic_ns() > give_up)) {
			signal_children(m, SIGTERM);
			terminated = 1;
			give_up = monotonic_ns() + FINISH_GRACE_NS;
		} else if (terminated && monotonic_ns() > give_up) {
			signal_children(m, SIGKILL);
		}
		nap(POLL_NS / 4);
	}
}

int multi_run(const struct multi_opts *o, volatile sig_atomic_t *stop,
	      volatile sig_atomic_t *forward)
{
	struct multi m = { .o = o };
	size_t i;

	if (o->duration > 0)
		m.end_ns = monotonic_ns() + (uint64_t)(o->duration * 1e9);
	for (i = 0; i < o->npids; i++) {
		struct target *t = add_target(&m, o->pids[i]);

		if (t)
			start(&m, t);
	}
	if (o->match)
		fprintf(stderr, "ebpfprof: profiling every CPython process matching '%s'%s\n",
			o->pattern, o->duration > 0 ? "" : " until Ctrl-C or SIGTERM");
	run_loop(&m, stop, forward);
	finish(&m, stop);
	fprintf(stderr, "ebpfprof: %u process%s recorded into %s, %u failed\n",
		m.started - m.failed, m.started - m.failed == 1 ? "" : "es", o->outdir, m.failed);
	free(m.t);
	return m.failed ? 1 : 0;
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
