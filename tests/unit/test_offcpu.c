// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The off-CPU logic without the kernel: the GC clock that splits a GIL wait
 * into its waiting-for-GC part (the same inline functions the BPF program
 * runs), the per-thread totals, the --idle timeline fit, and the recorder
 * fed hand-made record sequences (a stack and its intervals, records naming
 * a stack never received, GIL waits behind collections, sampled short waits,
 * an interval still open when the thread's process is removed).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "analysis.h"
#include "ebpfprof.h"
#include "recorder.h"

#define MS	1000000ull

/* --- the GC clock ------------------------------------------------------ */

/* The process's GC time up to each moment of a script of starts and stops. */
static void test_gc_clock_splits_a_wait(void **state)
{
	uint64_t clock = 0, at_out, at_in;

	(void)state;
	clock = ep_gc_clock_start(clock, 100 * MS);	/* collection 1: 100..130 */
	clock = ep_gc_clock_stop(clock, 130 * MS);
	assert_int_equal(ep_gc_clock_read(clock, 200 * MS), 30 * MS);
	/* a GIL wait from 120 ms (inside collection 2: 110..150) to 170 ms,
	 * collection 3 (160..165) inside it: 30 + 5 ms behind collections */
	clock = 0;
	clock = ep_gc_clock_start(clock, 110 * MS);
	at_out = ep_gc_clock_read(clock, 120 * MS);
	assert_int_equal(at_out, 10 * MS);
	clock = ep_gc_clock_stop(clock, 150 * MS);
	clock = ep_gc_clock_start(clock, 160 * MS);
	clock = ep_gc_clock_stop(clock, 165 * MS);
	at_in = ep_gc_clock_read(clock, 170 * MS);
	assert_int_equal(at_in - at_out, 35 * MS);
	/* read while one runs: its time so far counts */
	clock = ep_gc_clock_start(clock, 180 * MS);
	assert_int_equal(ep_gc_clock_read(clock, 190 * MS) - at_in, 10 * MS);
	/* a second start without an end (a missed probe) keeps the first */
	assert_int_equal(ep_gc_clock_start(clock, 185 * MS), clock);
}

/* --- totals and the thread table ---------------------------------------- */

static void test_totals_make_the_thread_table(void **state)
{
	struct analysis a;
	struct profile p;
	struct thread_states *ts;
	size_t n, i;

	(void)state;
	analysis_init(&a);
	profile_init(&p);
	assert_int_equal(analysis_set_exact_gc(&a, 10), 0);
	/* drained in pieces: they add up */
	analysis_add_totals(&a, 10, 11, STATE_GIL_WAIT, 0, 3, 30 * MS);
	analysis_add_totals(&a, 10, 11, STATE_GIL_WAIT, 0, 1, 5 * MS);
	analysis_add_totals(&a, 10, 11, STATE_GIL_WAIT_GC, 0, 1, 7 * MS);
	/* off the CPU while collecting itself: the pause's time, not a wait */
	analysis_add_totals(&a, 10, 12, STATE_PREEMPTED, 1, 1, 4 * MS);
	analysis_add_totals(&a, 20, 21, STATE_SLEEP, 0, 2, 50 * MS);
	analysis_add_totals(&a, 20, 21, STATE_PREEMPTED, 1, 1, 2 * MS);
	/* many threads: the index grows and finds each again */
	for (i = 0; i < 5000; i++)
		analysis_add_totals(&a, 30, 1000 + i, STATE_IO, 0, 1, i);
	for (i = 0; i < 5000; i++)
		analysis_add_totals(&a, 30, 1000 + i, STATE_IO, 0, 1, 1);
	assert_int_equal(a.intervals, 3 + 1 + 1 + 1 + 2 + 1 + 10000);
	n = analysis_thread_states(&a, &p, &ts);
	assert_int_equal(n, 3 + 5000);
	for (i = 0; i < n; i++) {
		if (ts[i].tid == 11) {
			assert_int_equal(ts[i].ns[STATE_GIL_WAIT], 35 * MS);
			assert_int_equal(ts[i].ns[STATE_GIL_WAIT_GC], 7 * MS);
		} else if (ts[i].tid == 12) {
			assert_int_equal(ts[i].observed_ns, 0);
		} else if (ts[i].tid == 21) {
			/* no probes for pid 20: no pause covers it, it stays visible */
			assert_int_equal(ts[i].ns[STATE_SLEEP], 50 * MS);
			assert_int_equal(ts[i].ns[STATE_OTHER], 2 * MS);
		} else {
			assert_int_equal(ts[i].ns[STATE_IO], ts[i].tid - 1000 + 1);
		}
	}
	free(ts);
	analysis_free(&a);
	profile_free(&p);
}

/* --- the --idle timeline -------------------------------------------------- */

static void add(struct profile *p, struct thread_profile *t, uint64_t start, uint64_t weight,
		int exact, uint32_t frame)
{
	struct sample s = { .start_ns = start, .weight_ns = weight, .exact = exact,
			    .frames = &frame, .nframes = 1,
			    .state = exact ? STATE_SLEEP : STATE_ON_CPU };

	assert_int_equal(profile_add_sample(p, t, &s), 0);
}

static uint64_t weight_of(const struct sample *samples, size_t n, uint32_t frame)
{
	uint64_t w = 0;
	size_t i;

	for (i = 0; i < n; i++)
		if (samples[i].frames[0] == frame)
			w += samples[i].weight_ns;
	return w;
}

static void test_fit_keeps_weights_and_exact_places(void **state)
{
	struct profile p;
	struct thread_profile *t;
	struct sample *s;
	size_t i;

	(void)state;
	profile_init(&p);
	t = profile_thread(&p, 1, 1);
	/* exact waits 20..50 and 60..100; sampled 10 ms weights around and
	 * across them, out of order */
	add(&p, t, 45 * MS, 10 * MS, 0, 2);	/* starts inside the first wait */
	add(&p, t, 20 * MS, 30 * MS, 1, 9);
	add(&p, t, 15 * MS, 10 * MS, 0, 1);	/* overlaps the first wait's start */
	add(&p, t, 60 * MS, 40 * MS, 1, 9);
	add(&p, t, 101 * MS, 10 * MS, 0, 3);
	assert_int_equal(analysis_fit_timeline(&p), 0);
	t = &p.threads[0];
	s = profile_thread_samples(&p, t);
	assert_non_null(s);
	assert_int_equal(weight_of(s, t->nsamples, 1), 10 * MS);
	assert_int_equal(weight_of(s, t->nsamples, 2), 10 * MS);
	assert_int_equal(weight_of(s, t->nsamples, 3), 10 * MS);
	assert_int_equal(weight_of(s, t->nsamples, 9), 70 * MS);
	for (i = 0; i + 1 < t->nsamples; i++)	/* nothing overlaps */
		assert_true(s[i].start_ns + s[i].weight_ns <= s[i + 1].start_ns);
	for (i = 0; i < t->nsamples; i++)
		if (s[i].exact)
			assert_true(s[i].start_ns == 20 * MS || s[i].start_ns == 60 * MS);
	/* the first sample was cut around the wait: 15..20, then 50..55 */
	assert_int_equal(s[0].start_ns, 15 * MS);
	assert_int_equal(s[0].weight_ns, 5 * MS);
	free(s);
	profile_free(&p);
}

/* --- the recorder's event handling --------------------------------------- */

struct fixture {
	struct recorder r;
	int pid;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct recorder_opts o = { .rate_hz = 100, .idle = 1 };
	struct py_target t = { 0 };

	f->pid = getpid();
	assert_int_equal(recorder_init(&f->r, &o), 0);
	t.pid = f->pid;
	assert_int_equal(recorder_add_process(&f->r, &t), 0);
	f->r.t0_ns = 1000 * MS;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	recorder_free(&f->r);
	free(f);
	return 0;
}

/* A stack record of `depth` unreadable frames (they symbolize as <unknown>). */
static void send_stack(struct fixture *f, int tid, uint64_t id, int depth)
{
	struct ep_stack_event *ev = calloc(1, sizeof(*ev));
	int i;

	ev->kind = EP_EV_STACK;
	ev->pid = f->pid;
	ev->tid = tid;
	ev->depth = depth;
	ev->stack_id = id;
	for (i = 0; i < depth; i++)
		ev->frames[i].code = 0x10 + i;
	recorder_on_event(&f->r, ev, EP_STACK_EVENT_HDR_SIZE + depth * sizeof(struct ep_frame));
	free(ev);
}

static void send_offcpu(struct fixture *f, int tid, int reason, int flags, uint64_t start_ms,
			uint64_t end_ms, uint64_t weight_ms, uint64_t gc_ms, uint64_t stack)
{
	struct ep_offcpu_record rec = {
		.kind = EP_EV_OFFCPU, .pid = f->pid, .tid = tid, .reason = reason, .flags = flags,
		.start_ts = 1000 * MS + start_ms * MS, .end_ts = 1000 * MS + end_ms * MS,
		.weight_ns = weight_ms * MS, .gc_ns = gc_ms * MS, .stack_id = stack };

	recorder_on_event(&f->r, &rec, sizeof(rec));
}

static const struct interval *wait_at(const struct analysis *a, int tid, uint64_t start_ms)
{
	size_t i;

	for (i = 0; i < a->waits.n; i++)
		if (a->waits.v[i].tid == tid && a->waits.v[i].start_ns == start_ms * MS)
			return &a->waits.v[i];
	return NULL;
}

static void test_recorder_exact_intervals(void **state)
{
	struct fixture *f = *state;
	const struct interval *w;

	send_stack(f, 7, 0xabc, 2);
	send_offcpu(f, 7, EP_OFF_SLEEP, EP_IV_EXACT, 10, 40, 30, 0, 0xabc);
	/* the same stack again, no new stack record needed */
	send_offcpu(f, 7, EP_OFF_LOCK, EP_IV_EXACT, 50, 70, 20, 0, 0xabc);
	/* a GIL wait with 15 ms behind a collection that ran at switch-out */
	send_offcpu(f, 7, EP_OFF_GIL, EP_IV_EXACT | EP_IV_GC_FIRST, 100, 140, 40, 15, 0xabc);
	/* ... and one whose collection came later: GIL wait first */
	send_offcpu(f, 7, EP_OFF_GIL, EP_IV_EXACT, 200, 230, 30, 10, 0xabc);
	recorder_finish(&f->r, 1000 * MS + 300 * MS);
	assert_int_equal(f->r.analysis.waits.n, 6);
	w = wait_at(&f->r.analysis, 7, 10);
	assert_non_null(w);
	assert_int_equal(w->state, STATE_SLEEP);
	assert_int_equal(w->end_ns, 40 * MS);
	assert_int_equal(w->nframes, 2);
	assert_int_equal(wait_at(&f->r.analysis, 7, 50)->state, STATE_LOCK_WAIT);
	w = wait_at(&f->r.analysis, 7, 100);
	assert_int_equal(w->state, STATE_GIL_WAIT_GC);
	assert_int_equal(w->end_ns, 115 * MS);
	w = wait_at(&f->r.analysis, 7, 115);
	assert_int_equal(w->state, STATE_GIL_WAIT);
	assert_int_equal(w->end_ns, 140 * MS);
	assert_int_equal(wait_at(&f->r.analysis, 7, 200)->end_ns, 220 * MS);
	assert_int_equal(wait_at(&f->r.analysis, 7, 220)->state, STATE_GIL_WAIT_GC);
	assert_int_equal(f->r.unknown_stacks, 0);
}

/* A sample of `depth` frames, or with depth < 0 one naming its stack by id. */
static void send_sample(struct fixture *f, int tid, uint64_t id, int depth, int flags)
{
	struct ep_stack_event *ev = calloc(1, sizeof(*ev));
	int i;

	ev->kind = EP_EV_SAMPLE;
	ev->pid = f->pid;
	ev->tid = tid;
	ev->ts = 1000 * MS + 5 * MS;
	ev->tstate = 0x1000;
	ev->flags = flags | (depth < 0 ? EP_F_STACK_BY_ID : 0);
	ev->depth = depth < 0 ? 0 : depth;
	ev->stack_id = id;
	for (i = 0; i < ev->depth; i++)
		ev->frames[i].code = 0x10 + i;
	recorder_on_event(&f->r, ev, EP_STACK_EVENT_HDR_SIZE + ev->depth * sizeof(struct ep_frame));
	free(ev);
}

/* The kernel sends a stack's frames with the first sample at it, its id
 * after that: the frames are kept once (without the per-sample GC marker),
 * and an id never received is handed back for the kernel to resend. */
static void test_recorder_samples_by_stack_id(void **state)
{
	struct fixture *f = *state;
	const struct stack_entry *st;
	__u32 pid;
	__u64 id;

	send_sample(f, 7, 0x77, 2, EP_F_IN_GC);
	st = stack_table_get(&f->r.stacks, f->pid, 0x77);
	assert_non_null(st);
	assert_int_equal(st->nframes, 2);
	send_sample(f, 7, 0x77, -1, 0);
	send_sample(f, 7, 0x77, -1, EP_F_IN_GC);
	assert_int_equal(f->r.kept, 3);
	assert_int_equal(f->r.unknown_stacks, 0);
	assert_int_equal(recorder_next_lost_stack(&f->r, &pid, &id), 0);
	send_sample(f, 7, 0x99, -1, 0);
	send_sample(f, 7, 0x99, -1, 0);
	assert_int_equal(f->r.kept, 3);
	assert_int_equal(f->r.unknown_stacks, 2);
	assert_int_equal(recorder_next_lost_stack(&f->r, &pid, &id), 1);
	assert_int_equal(pid, f->pid);
	assert_int_equal(id, 0x99);
	assert_int_equal(recorder_next_lost_stack(&f->r, &pid, &id), 0);
}

/* Records can name a stack whose record was lost (ring buffer full) or
 * comes later: the interval is kept, without frames, and counted. */
static void test_recorder_unknown_and_late_stacks(void **state)
{
	struct fixture *f = *state;

	send_offcpu(f, 8, EP_OFF_IO, EP_IV_EXACT, 10, 30, 20, 0, 0x5);
	send_stack(f, 8, 0x5, 3);
	send_offcpu(f, 8, EP_OFF_IO, EP_IV_EXACT, 40, 60, 20, 0, 0x5);
	/* an end before its start is nonsense: dropped */
	send_offcpu(f, 8, EP_OFF_IO, EP_IV_EXACT, 80, 70, 10, 0, 0x5);
	/* a record of a process never added: ignored */
	{
		struct ep_offcpu_record rec = { .kind = EP_EV_OFFCPU, .pid = f->pid + 1, .tid = 1,
						.flags = EP_IV_EXACT, .start_ts = 1, .end_ts = 2 };

		recorder_on_event(&f->r, &rec, sizeof(rec));
	}
	/* truncated records are not read */
	send_stack(f, 8, 0x6, 0);
	recorder_on_event(&f->r, &(uint32_t){ EP_EV_OFFCPU }, sizeof(uint32_t));
	recorder_finish(&f->r, 1000 * MS + 100 * MS);
	assert_int_equal(f->r.unknown_stacks, 1);
	assert_int_equal(f->r.analysis.waits.n, 2);
	assert_int_equal(wait_at(&f->r.analysis, 8, 10)->nframes, 0);
	assert_int_equal(wait_at(&f->r.analysis, 8, 40)->nframes, 3);
}

/* Sampled short waits become --idle samples of one period's weight, the
 * part behind a collection in proportion; the thread table comes from the
 * totals, not from these samples. */
static void test_recorder_sampled_waits(void **state)
{
	struct fixture *f = *state;
	struct ep_totals_key key = { .pid = f->pid, .tid = 9, .reason = EP_OFF_GIL };
	struct ep_totals val = { 40, 80 * MS };
	const struct thread_profile *t;
	struct sample_iter it;
	struct sample s;
	uint64_t gil = 0, gc = 0;

	send_stack(f, 9, 0x77, 1);
	send_offcpu(f, 9, EP_OFF_GIL, 0, 10, 12, 10, 1, 0x77);	/* 2 ms, half behind GC */
	send_offcpu(f, 9, EP_OFF_GIL, 0, 20, 24, 10, 0, 0x77);
	recorder_on_totals(&f->r, &key, &val);
	recorder_finish(&f->r, 1000 * MS + 100 * MS);
	assert_int_equal(f->r.analysis.waits.n, 0);
	assert_int_equal(f->r.profile.nthreads, 1);
	t = &f->r.profile.threads[0];
	for (sample_iter_init(&it, &f->r.profile, t); sample_iter_next(&it, &s);) {
		if (s.state == STATE_GIL_WAIT)
			gil += s.weight_ns;
		if (s.state == STATE_GIL_WAIT_GC)
			gc += s.weight_ns;
		/* the stack, then the reason's marker */
		assert_int_equal(s.nframes, 2);
	}
	assert_int_equal(gil, 15 * MS);
	assert_int_equal(gc, 5 * MS);
	assert_int_equal(f->r.analysis.ntotals, 1);
	assert_int_equal(f->r.analysis.totals[0].ns[STATE_GIL_WAIT], 80 * MS);
}

/* A thread preempted: no walk, its last on-CPU sample's stack is shown;
 * one still off the CPU when the recording ends comes as an open record. */
static void test_recorder_preempted_and_open(void **state)
{
	struct fixture *f = *state;
	struct ep_stack_event *ev = calloc(1, sizeof(*ev));
	const struct interval *w;

	ev->kind = EP_EV_SAMPLE;
	ev->pid = f->pid;
	ev->tid = 5;
	ev->ts = 1000 * MS + 5 * MS;
	ev->tstate = 0x1000;
	ev->depth = 4;
	recorder_on_event(&f->r, ev, EP_STACK_EVENT_HDR_SIZE + 4 * sizeof(struct ep_frame));
	free(ev);
	send_offcpu(f, 5, EP_OFF_PREEMPTED, EP_IV_EXACT, 10, 30, 20, 0, 0);
	send_offcpu(f, 5, EP_OFF_SLEEP, EP_IV_EXACT | EP_IV_OPEN, 40, 90, 50, 0, 0x99);
	recorder_finish(&f->r, 1000 * MS + 90 * MS);
	w = wait_at(&f->r.analysis, 5, 10);
	assert_non_null(w);
	assert_int_equal(w->state, STATE_PREEMPTED);
	assert_int_equal(w->nframes, 4);
	assert_int_equal(wait_at(&f->r.analysis, 5, 40)->end_ns, 90 * MS);
	assert_int_equal(f->r.kept, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gc_clock_splits_a_wait),
		cmocka_unit_test(test_totals_make_the_thread_table),
		cmocka_unit_test(test_fit_keeps_weights_and_exact_places),
		cmocka_unit_test_setup_teardown(test_recorder_exact_intervals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_recorder_samples_by_stack_id, setup, teardown),
		cmocka_unit_test_setup_teardown(test_recorder_unknown_and_late_stacks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_recorder_sampled_waits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_recorder_preempted_and_open, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
