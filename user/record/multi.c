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
#include "hash.h"
#include "multi.h"
#include "printable.h"
#include "procfs.h"
#include "parse_num.h"
#include "py_target.h"
#include "recorder.h"
#include "remote.h"

#define POLL_NS		(200ull * 1000000ull)
/* how long a matching process may take to show a CPython interpreter */
#define READY_TIMEOUT_NS (10ull * 1000000000ull)
/* after the duration, how long the children may take to write */
#define FINISH_GRACE_NS	(30ull * 1000000000ull)

enum target_state {
	T_PENDING,	/* matched; waiting for its interpreter */
	T_READY,	/* a CPython ebpfprof supports: waits for a free recording */
	T_RUNNING,	/* a child records it */
	T_DONE,		/* recorded, or not Python: until the pid goes or execs */
	T_REFUSED,	/* refused or its recording failed: never tried again */
};

struct target {
	pid_t pid;
	unsigned long long start_time;	/* with the pid, names the process */
	enum target_state state;
	pid_t child;
	uint64_t deadline_ns;	/* T_PENDING: give up then */
	uint64_t cmd_hash;	/* T_DONE: an exec changes it, look again */
	int seen;		/* in the last scan */
};

struct multi {
	const struct multi_opts *o;
	struct target *t;
	size_t n, cap;
	uint64_t end_ns;	/* 0: no duration */
	unsigned started, failed;	/* recordings tried; those that failed */
	unsigned refused;	/* matched CPython processes not recorded (unsupported) */
	unsigned running;	/* children recording now */
	int told_full;		/* the line about MULTI_MAX_CHILDREN was printed */
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

static void format_seconds(char *buf, size_t len, double s)
{
	snprintf(buf, len, "%.3f", s);
}

/* The child: "ebpfprof OPTIONS --pid PID -o DIR/ebpfprof-PID.SUFFIX ...". */
static pid_t spawn_child(struct multi *m, pid_t pid)
{
	const struct multi_opts *o = m->o;
	char pidbuf[16], out[PATH_MAX], gclog[PATH_MAX], dur[32];
	const char **argv;
	size_t n = 0;
	pid_t child;

	for (const char *const *a = o->base_argv; *a; a++)
		n++;
	/* every option forwarded, then at most 8 of the child's own */
	argv = calloc(n + 9, sizeof(*argv));
	if (!argv)
		return -1;
	n = 0;
	for (const char *const *a = o->base_argv; *a; a++)
		argv[n++] = *a;
	snprintf(pidbuf, sizeof(pidbuf), "%d", pid);
	argv[n++] = "--pid";
	argv[n++] = pidbuf;
	if (o->outdir) {
		snprintf(out, sizeof(out), "%s/ebpfprof-%d%s", o->outdir, pid, o->suffix);
		argv[n++] = "-o";
		argv[n++] = out;
	}
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
	free(argv);
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
		t->state = T_REFUSED;
		m->failed++;
		return;
	}
	t->state = T_RUNNING;
	m->running++;
}

/* Starts t now if fewer than MULTI_MAX_CHILDREN record, else it waits its
 * turn (said once, the first time the limit is met). */
static void start_or_wait(struct multi *m, struct target *t)
{
	char cmdline[MATCH_CMDLINE_MAX], shown[MATCH_CMDLINE_MAX];

	if (m->running >= MULTI_MAX_CHILDREN) {
		if (t->state != T_READY && !m->told_full)
			fprintf(stderr, "ebpfprof: %d recordings at once already, the most: process %d "
				"(and any further match) waits for one to end\n", MULTI_MAX_CHILDREN, t->pid);
		m->told_full = 1;
		t->state = T_READY;
		return;
	}
	if (procfs_cmdline(t->pid, cmdline, sizeof(cmdline)) == 0)
		fprintf(stderr, "ebpfprof: profiling process %d: %.200s\n", t->pid,
			printable(cmdline, shown, sizeof(shown)));
	start(m, t);
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

/* T_PENDING: is it a CPython process ebpfprof supports yet? Checked here,
 * before any child loads BPF programs for it. */
static void try_start(struct multi *m, struct target *t)
{
	struct py_target pt;
	char err[512];
	int rc = py_target_find(t->pid, &pt, err, sizeof(err));

	/* started only once its interpreter is initialised: "--pid" does not wait */
	if (rc == PY_TARGET_OK)
		rc = py_target_prepare(&pt, err, sizeof(err));
	/* the recording reads it, not this process: its pidfd is let go */
	remote_untrack(t->pid);
	if (rc == PY_TARGET_OK) {
		start_or_wait(m, t);
	} else if (rc == PY_TARGET_UNSUPPORTED) {
		m->refused++;
		give_up(t, err);
	} else if (rc == PY_TARGET_GONE || monotonic_ns() > t->deadline_ns) {
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

/* Starts what waits, in the order found, while recordings are free. */
static void start_waiting(struct multi *m)
{
	for (size_t i = 0; i < m->n; i++) {
		if (m->t[i].state == T_READY)
			start_or_wait(m, &m->t[i]);
		else if (m->t[i].state == T_PENDING)
			try_start(m, &m->t[i]);
	}
}

static void reaped(struct multi *m, pid_t child, int status)
{
	char why[128];

	for (size_t i = 0; i < m->n; i++) {
		struct target *t = &m->t[i];

		if (t->child != child)
			continue;
		t->child = 0;
		m->running--;
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
			t->state = T_DONE;
			t->cmd_hash = cmdline_hash(t->pid);
			return;
		}
		m->failed++;
		if (WIFEXITED(status))
			snprintf(why, sizeof(why), "its recording failed (exit status %d)",
				 WEXITSTATUS(status));
		else
			snprintf(why, sizeof(why), "its recording was ended by signal %d",
				 WTERMSIG(status));
		give_up(t, why);
		return;
	}
}

static size_t reap(struct multi *m, int block)
{
	int status;
	pid_t c;

	while ((c = waitpid(-1, &status, block ? 0 : WNOHANG)) > 0) {
		reaped(m, c, status);
		block = 0;
	}
	return m->running;
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

/* Processes ready to record that wait for a free recording. */
static size_t waiting(const struct multi *m)
{
	size_t n = 0;

	for (size_t i = 0; i < m->n; i++)
		n += m->t[i].state == T_READY;
	return n;
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
		else if (!running && !waiting(m))
			return;
		start_waiting(m);
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
			start_or_wait(&m, t);
	}
	if (o->match)
		fprintf(stderr, "ebpfprof: profiling every CPython process matching '%s'%s\n",
			o->pattern, o->duration > 0 ? "" : " until Ctrl-C or SIGTERM");
	run_loop(&m, stop, forward);
	finish(&m, stop);
	fprintf(stderr, "ebpfprof: %u process%s recorded %s%s, %u failed",
		m.started - m.failed, m.started - m.failed == 1 ? "" : "es",
		o->outdir ? "into " : "and pushed", o->outdir ? o->outdir : "", m.failed);
	if (m.refused)
		fprintf(stderr, ", %u refused", m.refused);
	if (waiting(&m))
		fprintf(stderr, ", %zu not recorded (more than %d at once)", waiting(&m),
			MULTI_MAX_CHILDREN);
	fputc('\n', stderr);
	free(m.t);
	return m.failed || m.refused || waiting(&m) ? 1 : 0;
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
