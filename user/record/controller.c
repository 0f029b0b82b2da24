// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "blocked.h"
#include "clock.h"
#include "controller.h"
#include "grow.h"
#include "launch.h"
#include "parse_num.h"
#include "remote.h"

/* Two requests for a cut this close are one (SIGUSR1 sent to every ebpfprof
 * process, and passed on by the one that started this one). */
#define CUT_REQUEST_MERGE_NS	250000000ull

/* The kernel's thresholds from the wait threshold and the rate: every wait
 * as long as the threshold is sent whole (the --gc-log shows them), shorter
 * ones are sampled once per sampling period. */
static void offcpu_thresholds(const struct controller_config *cfg, struct session_opts *so)
{
	uint64_t threshold_ns = (uint64_t)(cfg->wait_threshold_ms * 1e6);

	so->offcpu_period_ns = 1000000000ull / so->rate_hz;
	so->offcpu_exact_ns = threshold_ns < so->offcpu_period_ns ? threshold_ns + 1 :
				so->offcpu_period_ns;
}

static void session_opts_of(const struct controller_config *cfg, struct session_opts *so)
{
	so->rate_hz = cfg->rate_hz;
	so->follow_children = cfg->subprocesses;
	so->native = cfg->native;
	so->native_stack_bytes = cfg->native_stack_bytes;
	so->labels = cfg->nlabels > 0;
	so->gc_probes = cfg->gc_probes;
	so->verbose = cfg->verbose;
	offcpu_thresholds(cfg, so);
}

static void recorder_opts_of(const struct controller_config *cfg, struct recorder_opts *ro)
{
	*ro = (struct recorder_opts){ .rate_hz = cfg->rate_hz, .gil_only = cfg->gil_only,
				      .by_function = cfg->by_function, .idle = cfg->idle,
				      .native = cfg->native, .labels = cfg->labels,
				      .nlabels = cfg->nlabels, .dask = cfg->dask,
				      .tasks = cfg->tasks };
}

error_t controller_rate_option(int key, char *arg, struct argp_state *state, unsigned *rate_hz)
{
	unsigned long v;

	if (key != 'r')
		return ARGP_ERR_UNKNOWN;
	if (parse_ulong(arg, 1, CONTROLLER_RATE_MAX, &v))
		argp_error(state, "invalid rate: %s (1 to %d Hz)", arg, CONTROLLER_RATE_MAX);
	*rate_hz = v;
	return 0;
}

/* The member profiling pid: its target, else (--subprocesses) the one whose
 * recorder knows pid as a child it followed. The last one found is kept:
 * records come in runs of one process. */
static struct controller_member *member_of(struct controller *c, int pid)
{
	size_t i;

	if (c->last && c->last->target.pid == pid)
		return c->last;
	for (i = 0; i < c->n; i++)
		if (c->members[i]->target.pid == pid)
			return c->last = c->members[i];
	if (!c->cfg.subprocesses)
		return NULL;
	for (i = 0; i < c->n; i++)
		if (recorder_target(&c->members[i]->rec, pid))
			return c->members[i];
	return NULL;
}

int controller_records(struct controller *c, pid_t pid)
{
	return member_of(c, pid) != NULL;
}

/* Every record starts with its kind and its process (include/ebpfprof.h);
 * a fork belongs to the parent's member. */
static int on_event(void *ctx, void *data, size_t len)
{
	struct controller *c = ctx;
	const struct ep_proc_event *e = data;
	struct controller_member *m;

	if (len < 3 * sizeof(__u32))
		return 0;
	m = member_of(c, e->kind == EP_EV_FORK ? e->ppid : e->pid);
	if (!m) {
		c->unrouted++;
		return 0;
	}
	return recorder_on_event(&m->rec, data, len);
}

static void on_totals(void *ctx, const struct ep_totals_key *key, const struct ep_totals *val)
{
	struct controller_member *m = member_of(ctx, key->pid);

	if (m)
		recorder_on_totals(&m->rec, key, val);
}

static int next_lost_stack(void *ctx, __u32 *pid, __u64 *stack_id)
{
	struct controller *c = ctx;

	for (size_t i = 0; i < c->n; i++)
		if (recorder_next_lost_stack(&c->members[i]->rec, pid, stack_id))
			return 1;
	return 0;
}

static int next_label_codes(void *ctx, __u32 *pid, struct label_codes *out)
{
	struct controller *c = ctx;

	for (size_t i = 0; i < c->n; i++)
		if (recorder_next_label_codes(&c->members[i]->rec, pid, out))
			return 1;
	return 0;
}

static int stack_of_blocked(void *ctx, __u32 pid, __u32 tid, __u64 *stack_id)
{
	struct controller_member *m = member_of(ctx, pid);

	return m ? blocked_stack_of(&m->rec, pid, tid, stack_id) : -1;
}

int controller_open(struct controller *c, const struct controller_config *cfg,
		    char *err, size_t errlen)
{
	struct session_opts so = { 0 };

	memset(c, 0, sizeof(*c));
	c->cfg = *cfg;
	if (!c->cfg.rate_hz)
		c->cfg.rate_hz = SESSION_DEFAULT_RATE_HZ;
	if (session_opts_pidns(&so) && cfg->subprocesses) {
		snprintf(err, errlen, "--subprocesses is not supported yet when ebpfprof runs inside a PID namespace; run it from the host");
		return -1;
	}
	session_opts_of(&c->cfg, &so);
	so.on_event = on_event;
	so.on_totals = on_totals;
	so.next_lost_stack = next_lost_stack;
	so.next_label_codes = next_label_codes;
	so.stack_of_blocked = stack_of_blocked;
	so.ctx = c;
	c->session = session_open(&so, err, errlen);
	if (!c->session)
		return -1;
	/* several: the run's clock; one: it starts with its target */
	if (cfg->several && cfg->duration_ns)
		c->deadline_ns = monotonic_ns() + cfg->duration_ns;
	return 0;
}

/* What a member holds, given back: its recorder, follower and pidfd, and
 * the remote reads of its processes. */
static void free_member(struct controller_member *m)
{
	for (size_t i = 0; i < recorder_nprocs(&m->rec); i++)
		remote_untrack(recorder_pid(&m->rec, i));
	remote_untrack(m->target.pid);
	recorder_free(&m->rec);
	follower_free(&m->follower);
	if (m->pidfd >= 0 && m->own_pidfd)
		close(m->pidfd);
	free(m);
}

/* The recorder first (its GC probe known), then the kernel's maps; what
 * blocked before the start and the asyncio tasks now are read at once. */
static int start_member(struct controller *c, struct controller_member *m, char *err,
			size_t errlen)
{
	struct recorder_opts ro;
	uint64_t t0;

	recorder_opts_of(&c->cfg, &ro);
	if (recorder_init(&m->rec, &ro)) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	m->follower = (struct follower){ .session = c->session, .rec = &m->rec,
					 .verbose = c->cfg.verbose };
	m->gc_probe = session_attach_gc(c->session, &m->target);
	if (m->gc_probe != GC_PROBE_NONE)
		recorder_set_exact_gc(&m->rec, m->target.pid);
	t0 = monotonic_ns();
	recorder_start(&m->rec, t0);
	recorder_set_command(&m->rec, m->target.shown_path);
	if (recorder_add_process(&m->rec, &m->target)) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	/* children are followed before -v says the target is recorded: one
	 * forked in between is found by its fork event (follow.c) */
	if (c->cfg.subprocesses)
		session_follow(c->session, m->target.pid);
	if (session_add_process(c->session, m->target.pid, &m->target.cfg)) {
		snprintf(err, errlen, "cannot configure the BPF maps for process %d (%s)",
			 m->target.pid, strerror(errno));
		return -1;
	}
	/* inside a PID namespace too: offcpu_task_io finds threads by our tids */
	seed_blocked_threads(c->session, &m->rec, &m->target, t0);
	recorder_walk_tasks(&m->rec, 1);
	if (c->cfg.period_ns)
		m->next_cut_ns = t0 + c->cfg.period_ns;
	if (!c->deadline_ns && c->cfg.duration_ns)
		c->deadline_ns = t0 + c->cfg.duration_ns;
	return 0;
}

/* Tells the kernel to forget every process of m (delivering what is open). */
static void forget_processes(struct controller *c, struct controller_member *m)
{
	for (size_t i = 0; i < recorder_nprocs(&m->rec); i++)
		session_unfollow(c->session, recorder_pid(&m->rec, i));
	if (!recorder_nprocs(&m->rec))
		session_unfollow(c->session, m->target.pid);
}

struct controller_member *controller_add(struct controller *c, const struct py_target *t,
					 int pidfd, int launched, char *err, size_t errlen)
{
	struct controller_member *m = calloc(1, sizeof(*m));

	if (!m || GROW_ARRAY(c->members, c->cap, c->n + 1)) {
		free(m);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	*m = (struct controller_member){ .session = c->session, .target = *t,
					 .launched = launched, .own_pidfd = pidfd < 0 };
	m->pidfd = pidfd >= 0 ? pidfd : watch_process(t->pid);
	c->members[c->n++] = m;
	if (start_member(c, m, err, errlen)) {
		forget_processes(c, m);
		c->members[--c->n] = NULL;
		c->last = NULL;
		free_member(m);
		return NULL;
	}
	return m;
}

void controller_drain(struct session *s, unsigned passes)
{
	unsigned n = 0;

	while (session_poll(s, 0) > 0 && (!passes || ++n < passes))
		;
}

static void cut_member(struct controller *c, struct controller_member *m)
{
	int separate = c->cfg.periods == CONTROLLER_PERIODS_SEPARATE;
	uint64_t end;

	if (separate)
		recorder_walk_tasks(&m->rec, 1);	/* a live view walks as it shows */
	end = monotonic_ns();
	session_cut_period(c->session, m->target.pid);
	if (separate)
		recorder_cut_period(&m->rec, end);
	if (c->cfg.on_period)
		c->cfg.on_period(c->cfg.ctx, m, end);
	if (separate)
		recorder_next_period(&m->rec, end);
	c->last_cut_ns = end;
}

void controller_cut_period(struct controller *c)
{
	controller_drain(c->session, CONTROLLER_CUT_DRAIN_PASSES);
	for (size_t i = 0; i < c->n; i++)
		if (!c->members[i]->ended)
			cut_member(c, c->members[i]);
}

void controller_request_cut(struct controller *c)
{
	uint64_t now = monotonic_ns();

	if (!c->last_cut_ns || now >= c->last_cut_ns + CUT_REQUEST_MERGE_NS)
		c->cut_requested = 1;
}

/* Periods end on each member's grid (from its start) or on request, never
 * at the very end: the last one is the front end's as the member ends. */
static void maybe_cut(struct controller *c, uint64_t now)
{
	int drained = 0;

	if (c->deadline_ns && now + 1000000 >= c->deadline_ns)
		return;
	for (size_t i = 0; i < c->n; i++) {
		struct controller_member *m = c->members[i];

		if (m->ended || (!c->cut_requested && (!m->next_cut_ns || now < m->next_cut_ns)))
			continue;
		if (!drained++)
			controller_drain(c->session, CONTROLLER_CUT_DRAIN_PASSES);
		cut_member(c, m);
		/* on the grid from the start: lateness does not add up */
		while (m->next_cut_ns && m->next_cut_ns <= now)
			m->next_cut_ns += c->cfg.period_ns;
	}
	c->cut_requested = 0;
}

/* The member at i ends: what is open is closed and drained into its
 * profile, the front end takes it; in a group of many its memory goes. */
static void end_member(struct controller *c, size_t i, enum controller_stop_reason why)
{
	struct controller_member *m = c->members[i];
	uint64_t end;

	m->stopped = why;
	if (why != CONTROLLER_TARGET_EXITED)	/* the last stretch, while it lives */
		recorder_walk_tasks(&m->rec, 1);
	end = monotonic_ns();
	forget_processes(c, m);
	controller_drain(c->session, 0);
	if (c->cfg.periods != CONTROLLER_PERIODS_LIVE)
		recorder_finish(&m->rec, end);
	m->ended = 1;
	if (c->cfg.on_end)
		c->cfg.on_end(c->cfg.ctx, m);
	if (!c->cfg.several)
		return;
	c->members[i] = c->members[--c->n];
	c->last = NULL;
	free_member(m);
	/* a process's stacks and samples were many small blocks: give the
	 * pages back, or a host's stream of short processes grows our RSS */
	malloc_trim(0);
}

/* A group of many ends each member whose process exited (0); a group of
 * one stops (1). */
static int end_exited(struct controller *c)
{
	int status;

	for (size_t i = 0; i < c->n; i++) {
		struct controller_member *m = c->members[i];

		if (m->ended || !process_exited(m->target.pid, m->pidfd, m->launched, &status))
			continue;
		if (!c->cfg.several)
			return 1;
		end_member(c, i--, CONTROLLER_TARGET_EXITED);
	}
	return 0;
}

/* Children followed, asyncio tasks walked when due, thread names once a
 * second. */
static void step_members(struct controller *c)
{
	int names = monotonic_ns() >= c->next_names_ns;

	for (size_t i = 0; i < c->n; i++) {
		struct controller_member *m = c->members[i];

		if (m->ended)
			continue;
		follower_step(&m->follower);
		if (c->cfg.periods == CONTROLLER_PERIODS_SEPARATE)
			recorder_walk_tasks(&m->rec, 0);
		if (names)
			recorder_refresh_names(&m->rec);
	}
	if (names)
		c->next_names_ns = monotonic_ns() + CONTROLLER_NAMES_EVERY_NS;
}

static enum controller_stop_reason stop_reason(struct controller *c, uint64_t now)
{
	if (c->cfg.should_stop && c->cfg.should_stop(c->cfg.ctx))
		return CONTROLLER_STOPPED;
	if (c->deadline_ns && now >= c->deadline_ns)
		return CONTROLLER_DURATION;
	if (end_exited(c))
		return CONTROLLER_TARGET_EXITED;
	return CONTROLLER_RUNNING;
}

enum controller_stop_reason controller_run(struct controller *c)
{
	uint64_t now;

	while ((c->stopped = stop_reason(c, now = monotonic_ns())) == CONTROLLER_RUNNING) {
		maybe_cut(c, now);
		if (session_poll(c->session, EP_DRAIN_MS) < 0 && errno != EINTR) {
			c->stopped = CONTROLLER_POLL_FAILED;
			break;
		}
		if (c->cfg.on_tick)
			c->cfg.on_tick(c->cfg.ctx, monotonic_ns());
		step_members(c);
	}
	return c->stopped;
}

void controller_stop(struct controller *c)
{
	enum controller_stop_reason why = c->stopped != CONTROLLER_RUNNING ? c->stopped :
					  CONTROLLER_STOPPED;
	size_t i = c->n;

	while (i-- > 0)
		if (!c->members[i]->ended)
			end_member(c, i, why);
}

void controller_close(struct controller *c)
{
	while (c->n)
		free_member(c->members[--c->n]);
	free(c->members);
	c->members = NULL;
	c->cap = 0;
	if (c->session)
		session_close(c->session);
	c->session = NULL;
}

uint64_t controller_lost(struct session *s)
{
	uint64_t counters[EP_CNT_MAX];

	session_counters(s, counters);
	return counters[EP_CNT_LOST];
}

void controller_print_losses(struct controller *c, FILE *f)
{
	session_print_summary(c->session, f, c->cfg.verbose);
	if (!c->cfg.several && c->n)
		recorder_print_losses(&c->members[0]->rec, f, c->cfg.verbose);
}
