// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "blocked.h"
#include "grow.h"
#include "group.h"
#include "launch.h"
#include "remote.h"

/* The member profiling pid: its target, else (--subprocesses) the one whose
 * recorder knows pid as a child it followed. The last one found is kept:
 * records come in runs of one process. */
static struct group_member *member_of(struct group *g, int pid)
{
	size_t i;

	if (g->last && g->last->target.pid == pid)
		return g->last;
	for (i = 0; i < g->n; i++)
		if (g->members[i]->target.pid == pid)
			return g->last = g->members[i];
	if (!g->cfg.subprocesses)
		return NULL;
	for (i = 0; i < g->n; i++)
		if (recorder_target(&g->members[i]->rec, pid))
			return g->members[i];
	return NULL;
}

int group_records(struct group *g, pid_t pid)
{
	return member_of(g, pid) != NULL;
}

/* Every record starts with its kind and its process (include/ebpfprof.h);
 * a fork belongs to the parent's member. */
static int on_event(void *ctx, void *data, size_t len)
{
	struct group *g = ctx;
	const struct ep_proc_event *e = data;
	struct group_member *m;

	if (len < 3 * sizeof(__u32))
		return 0;
	m = member_of(g, e->kind == EP_EV_FORK ? e->ppid : e->pid);
	if (!m) {
		g->unrouted++;
		return 0;
	}
	return recorder_on_event(&m->rec, data, len);
}

static void on_totals(void *ctx, const struct ep_totals_key *key, const struct ep_totals *val)
{
	struct group_member *m = member_of(ctx, key->pid);

	if (m)
		recorder_on_totals(&m->rec, key, val);
}

static int next_lost_stack(void *ctx, __u32 *pid, __u64 *stack_id)
{
	struct group *g = ctx;

	for (size_t i = 0; i < g->n; i++)
		if (recorder_next_lost_stack(&g->members[i]->rec, pid, stack_id))
			return 1;
	return 0;
}

static int next_label_codes(void *ctx, __u32 *pid, struct label_codes *out)
{
	struct group *g = ctx;

	for (size_t i = 0; i < g->n; i++)
		if (recorder_next_label_codes(&g->members[i]->rec, pid, out))
			return 1;
	return 0;
}

static int stack_of_blocked(void *ctx, __u32 pid, __u32 tid, __u64 *stack_id)
{
	struct group_member *m = member_of(ctx, pid);

	return m ? blocked_stack_of(&m->rec, pid, tid, stack_id) : -1;
}

int group_open(struct group *g, const struct controller_config *cfg,
	       const struct group_hooks *hooks, char *err, size_t errlen)
{
	struct session_opts so = { 0 };

	memset(g, 0, sizeof(*g));
	g->cfg = *cfg;
	g->hooks = *hooks;
	if (!g->cfg.rate_hz)
		g->cfg.rate_hz = SESSION_DEFAULT_RATE_HZ;
	if (session_opts_pidns(&so) && cfg->subprocesses) {
		snprintf(err, errlen, "--subprocesses is not supported yet when ebpfprof runs inside a PID namespace; run it from the host");
		return -1;
	}
	controller_session_opts(&g->cfg, &so);
	so.on_event = on_event;
	so.on_totals = on_totals;
	so.next_lost_stack = next_lost_stack;
	so.next_label_codes = next_label_codes;
	so.stack_of_blocked = stack_of_blocked;
	so.ctx = g;
	g->session = session_open(&so, err, errlen);
	if (!g->session)
		return -1;
	if (cfg->duration_ns)
		g->deadline_ns = monotonic_ns() + cfg->duration_ns;
	return 0;
}

/* What a member holds, given back: its recorder, follower and pidfd, and
 * the remote reads of its processes. */
static void free_member(struct group_member *m)
{
	for (size_t i = 0; i < recorder_nprocs(&m->rec); i++)
		remote_untrack(recorder_pid(&m->rec, i));
	remote_untrack(m->target.pid);
	recorder_free(&m->rec);
	follower_free(&m->follower);
	if (m->pidfd >= 0)
		close(m->pidfd);
	free(m);
}

static int start_member(struct group *g, struct group_member *m, char *err, size_t errlen)
{
	struct recorder_opts ro;
	uint64_t t0;

	controller_recorder_opts(&g->cfg, &ro);
	if (recorder_init(&m->rec, &ro)) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	m->follower = (struct follower){ .session = g->session, .rec = &m->rec,
					 .verbose = g->cfg.verbose };
	m->pidfd = watch_process(m->target.pid);
	m->gc_probe = session_attach_gc(g->session, &m->target);
	if (m->gc_probe != GC_PROBE_NONE)
		recorder_set_exact_gc(&m->rec, m->target.pid);
	t0 = monotonic_ns();
	recorder_start(&m->rec, t0);
	recorder_set_command(&m->rec, m->target.shown_path);
	if (recorder_add_process(&m->rec, &m->target)) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (session_add_process(g->session, m->target.pid, &m->target.cfg)) {
		snprintf(err, errlen, "cannot configure the BPF maps for process %d (%s)",
			 m->target.pid, strerror(errno));
		return -1;
	}
	seed_blocked_threads(g->session, &m->rec, &m->target, t0);
	if (g->cfg.subprocesses)
		session_follow(g->session, m->target.pid);
	if (g->cfg.period_ns)
		m->next_cut_ns = t0 + g->cfg.period_ns;
	return 0;
}

/* Tells the kernel to forget every process of m (delivering what is open). */
static void forget_processes(struct group *g, struct group_member *m)
{
	for (size_t i = 0; i < recorder_nprocs(&m->rec); i++)
		session_unfollow(g->session, recorder_pid(&m->rec, i));
	if (!recorder_nprocs(&m->rec))
		session_unfollow(g->session, m->target.pid);
}

struct group_member *group_add(struct group *g, const struct py_target *t, char *err,
			       size_t errlen)
{
	struct group_member *m = calloc(1, sizeof(*m));

	if (!m || GROW_ARRAY(g->members, g->cap, g->n + 1)) {
		free(m);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	m->session = g->session;
	m->target = *t;
	m->pidfd = -1;
	g->members[g->n++] = m;
	if (start_member(g, m, err, errlen)) {
		forget_processes(g, m);
		g->members[--g->n] = NULL;
		g->last = NULL;
		free_member(m);
		return NULL;
	}
	return m;
}

static void cut_member(struct group *g, struct group_member *m, uint64_t end)
{
	session_cut_period(g->session, m->target.pid);
	recorder_cut_period(&m->rec, end);
	if (g->hooks.on_period)
		g->hooks.on_period(g->hooks.ctx, m, end);
	recorder_next_period(&m->rec, end);
}

/* Periods end on each member's grid (from its start) or on request, never
 * at the very end: the last one is written as the member ends. */
static void maybe_cut(struct group *g, uint64_t now)
{
	int drained = 0;

	if (g->deadline_ns && now + 1000000 >= g->deadline_ns)
		return;
	for (size_t i = 0; i < g->n; i++) {
		struct group_member *m = g->members[i];

		if (!g->cut_requested && (!m->next_cut_ns || now < m->next_cut_ns))
			continue;
		if (!drained++)
			controller_drain(g->session, CONTROLLER_CUT_DRAIN_PASSES);
		recorder_walk_tasks(&m->rec, 1);
		cut_member(g, m, monotonic_ns());
		while (m->next_cut_ns && m->next_cut_ns <= now)
			m->next_cut_ns += g->cfg.period_ns;
	}
	g->cut_requested = 0;
}

/* The member at i ends: what is open is closed and drained into its
 * profile, the front end writes it, its memory goes. */
static void end_member(struct group *g, size_t i, enum controller_stop_reason why)
{
	struct group_member *m = g->members[i];

	m->stopped = why;
	if (why != CONTROLLER_TARGET_EXITED)	/* the last stretch, while it lives */
		recorder_walk_tasks(&m->rec, 1);
	forget_processes(g, m);
	controller_drain(g->session, 0);
	recorder_finish(&m->rec, monotonic_ns());
	if (g->hooks.on_end)
		g->hooks.on_end(g->hooks.ctx, m);
	g->members[i] = g->members[--g->n];
	g->last = NULL;
	free_member(m);
	/* a process's stacks and samples were many small blocks: give the
	 * pages back, or a host's stream of short processes grows our RSS */
	malloc_trim(0);
}

static void end_exited(struct group *g)
{
	int status;

	for (size_t i = 0; i < g->n; i++) {
		struct group_member *m = g->members[i];

		if (process_exited(m->target.pid, m->pidfd, 0, &status))
			end_member(g, i--, CONTROLLER_TARGET_EXITED);
	}
}

static void step_members(struct group *g)
{
	int names = monotonic_ns() >= g->next_names_ns;

	for (size_t i = 0; i < g->n; i++) {
		if (g->cfg.subprocesses)
			follower_step(&g->members[i]->follower);
		if (names)
			recorder_refresh_names(&g->members[i]->rec);
		recorder_walk_tasks(&g->members[i]->rec, 0);
	}
	if (names)
		g->next_names_ns = monotonic_ns() + CONTROLLER_NAMES_EVERY_NS;
}

enum controller_stop_reason group_run(struct group *g)
{
	for (;;) {
		uint64_t now = monotonic_ns();

		if (g->hooks.should_stop && g->hooks.should_stop(g->hooks.ctx))
			return CONTROLLER_STOPPED;
		if (g->deadline_ns && now >= g->deadline_ns)
			return CONTROLLER_DURATION;
		maybe_cut(g, now);
		if (session_poll(g->session, EP_DRAIN_MS) < 0 && errno != EINTR)
			return CONTROLLER_POLL_FAILED;
		end_exited(g);
		if (g->hooks.on_tick)
			g->hooks.on_tick(g->hooks.ctx, monotonic_ns());
		step_members(g);
	}
}

void group_request_cut(struct group *g)
{
	g->cut_requested = 1;
}

void group_stop(struct group *g, enum controller_stop_reason why)
{
	while (g->n)
		end_member(g, g->n - 1, why);
}

void group_close(struct group *g)
{
	group_stop(g, CONTROLLER_STOPPED);
	if (g->session)
		session_close(g->session);
	g->session = NULL;
	free(g->members);
	g->members = NULL;
	g->cap = 0;
}
