// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "blocked.h"
#include "clock.h"
#include "controller.h"
#include "launch.h"
#include "parse_num.h"

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

void controller_session_opts(const struct controller_config *cfg, struct session_opts *so)
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

void controller_recorder_opts(const struct controller_config *cfg, struct recorder_opts *ro)
{
	*ro = (struct recorder_opts){ .rate_hz = cfg->rate_hz, .gil_only = cfg->gil_only,
				      .by_function = cfg->by_function, .idle = cfg->idle,
				      .native = cfg->native, .labels = cfg->labels,
				      .nlabels = cfg->nlabels, .dask = cfg->dask,
				      .tasks = cfg->tasks };
}

static void session_opts_of(struct controller *c, struct session_opts *so)
{
	controller_session_opts(&c->cfg, so);
	so->on_event = recorder_on_event;
	so->on_totals = recorder_on_totals;
	so->next_lost_stack = recorder_next_lost_stack;
	so->next_label_codes = recorder_next_label_codes;
	so->stack_of_blocked = blocked_stack_of;
	so->ctx = &c->rec;
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

int controller_open(struct controller *c, const struct controller_config *cfg,
		    char *err, size_t errlen)
{
	struct recorder_opts ro;
	struct session_opts so = { 0 };

	memset(c, 0, sizeof(*c));
	c->cfg = *cfg;
	c->pidfd = -1;
	if (!c->cfg.rate_hz)
		c->cfg.rate_hz = SESSION_DEFAULT_RATE_HZ;
	controller_recorder_opts(&c->cfg, &ro);
	if (recorder_init(&c->rec, &ro)) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (session_opts_pidns(&so) && cfg->subprocesses) {
		snprintf(err, errlen, "--subprocesses is not supported yet when ebpfprof runs inside a PID namespace; run it from the host");
		recorder_free(&c->rec);
		return -1;
	}
	session_opts_of(c, &so);
	c->session = session_open(&so, err, errlen);
	if (!c->session) {
		recorder_free(&c->rec);
		return -1;
	}
	c->follower = (struct follower){ .session = c->session, .rec = &c->rec,
					 .verbose = cfg->verbose };
	return 0;
}

int controller_attach(struct controller *c, const struct py_target *t, int pidfd, int launched,
		      char *err, size_t errlen)
{
	uint64_t t0;

	c->target = t;
	c->launched = launched;
	c->own_pidfd = pidfd < 0;
	c->pidfd = pidfd >= 0 ? pidfd : watch_process(t->pid);
	c->gc_probe = session_attach_gc(c->session, t);
	if (c->gc_probe != GC_PROBE_NONE)
		recorder_set_exact_gc(&c->rec, t->pid);
	t0 = monotonic_ns();
	recorder_start(&c->rec, t0);
	if (recorder_add_process(&c->rec, t)) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (session_add_process(c->session, t->pid, &t->cfg)) {
		snprintf(err, errlen, "cannot configure the BPF maps for the target");
		return -1;
	}
	/* inside a PID namespace too: offcpu_task_io finds threads by our tids */
	seed_blocked_threads(c->session, &c->rec, t, t0);
	recorder_walk_tasks(&c->rec, 1);
	if (c->cfg.subprocesses)
		session_follow(c->session, t->pid);
	if (c->cfg.duration_ns)
		c->deadline_ns = t0 + c->cfg.duration_ns;
	if (c->cfg.period_ns)
		c->next_cut_ns = t0 + c->cfg.period_ns;
	return 0;
}

void controller_drain(struct session *s, unsigned passes)
{
	unsigned n = 0;

	while (session_poll(s, 0) > 0 && (!passes || ++n < passes))
		;
}

void controller_cut_period(struct controller *c)
{
	uint64_t end;

	controller_drain(c->session, CONTROLLER_CUT_DRAIN_PASSES);
	if (c->cfg.periods == CONTROLLER_PERIODS_SEPARATE)
		recorder_walk_tasks(&c->rec, 1);	/* a live view walks as it shows */
	end = monotonic_ns();
	session_cut_period(c->session, c->target->pid);
	if (c->cfg.periods == CONTROLLER_PERIODS_SEPARATE)
		recorder_cut_period(&c->rec, end);
	if (c->cfg.on_period)
		c->cfg.on_period(c->cfg.ctx, end);
	if (c->cfg.periods == CONTROLLER_PERIODS_SEPARATE)
		recorder_next_period(&c->rec, end);
	c->last_cut_ns = end;
}

void controller_request_cut(struct controller *c)
{
	uint64_t now = monotonic_ns();

	if (!c->last_cut_ns || now >= c->last_cut_ns + CUT_REQUEST_MERGE_NS)
		c->cut_requested = 1;
}

static enum controller_stop_reason stop_reason(struct controller *c, uint64_t now)
{
	int status;

	if (c->cfg.should_stop && c->cfg.should_stop(c->cfg.ctx))
		return CONTROLLER_STOPPED;
	if (c->deadline_ns && now >= c->deadline_ns)
		return CONTROLLER_DURATION;
	if (process_exited(c->target->pid, c->pidfd, c->launched, &status))
		return CONTROLLER_TARGET_EXITED;
	return CONTROLLER_RUNNING;
}

/* A period ends on its grid or on request, never at the very end: the last
 * period is the front end's to take as the recording stops. */
static void maybe_cut(struct controller *c, uint64_t now)
{
	int due = c->next_cut_ns && now >= c->next_cut_ns;

	if (!due && !c->cut_requested)
		return;
	if (c->deadline_ns && now + 1000000 >= c->deadline_ns)
		return;
	c->cut_requested = 0;
	controller_cut_period(c);
	/* on the grid from the start: lateness does not add up */
	while (c->next_cut_ns && c->next_cut_ns <= now)
		c->next_cut_ns += c->cfg.period_ns;
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
		follower_step(&c->follower);
		if (c->cfg.periods == CONTROLLER_PERIODS_SEPARATE)
			recorder_walk_tasks(&c->rec, 0);
		if (monotonic_ns() >= c->next_names_ns) {
			recorder_refresh_names(&c->rec);
			c->next_names_ns = monotonic_ns() + CONTROLLER_NAMES_EVERY_NS;
		}
	}
	return c->stopped;
}

void controller_stop(struct controller *c)
{
	uint64_t end;

	recorder_walk_tasks(&c->rec, 1);	/* the last stretch, while the target may live */
	end = monotonic_ns();
	session_remove_process(c->session, c->target->pid);
	controller_drain(c->session, 0);
	if (c->cfg.periods != CONTROLLER_PERIODS_LIVE)
		recorder_finish(&c->rec, end);
}

void controller_close(struct controller *c)
{
	if (c->session)
		session_close(c->session);
	c->session = NULL;
	follower_free(&c->follower);
	recorder_free(&c->rec);
	if (c->pidfd >= 0 && c->own_pidfd)
		close(c->pidfd);
	c->pidfd = -1;
}

uint64_t controller_lost(struct controller *c)
{
	uint64_t counters[EP_CNT_MAX];

	session_counters(c->session, counters);
	return counters[EP_CNT_LOST];
}

void controller_print_losses(struct controller *c, FILE *f)
{
	session_print_summary(c->session, f, c->cfg.verbose);
	recorder_print_losses(&c->rec, f, c->cfg.verbose);
}
