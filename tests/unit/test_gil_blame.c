// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Unit tests of user/model/gil_blame.c: GIL waits spread over what their
 * holder ran, adding up exactly. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>

#include "analysis.h"
#include "gil_blame.h"
#include "profile.h"

#define MS 1000000ull

/* A 10 ms on-CPU sample of thread tid of process 1 in `leaf`, called by `caller`. */
static void add(struct profile *p, int tid, uint64_t start, int gil, uint32_t caller, uint32_t leaf)
{
	uint32_t frames[2] = { caller, leaf };
	struct sample s = { .start_ns = start, .weight_ns = 10 * MS, .state = STATE_ON_CPU,
			    .holds_gil = (uint8_t)gil, .frames = frames, .nframes = 2 };

	assert_int_equal(profile_add_sample(p, profile_thread(p, 1, tid), &s), 0);
}

static void chunk(struct gil_blame *b, int waiter, int holder, int gc, uint64_t at, uint64_t ns)
{
	struct blame_chunk c = { .pid = 1, .waiter = waiter, .holder = holder, .gc = gc,
				 .at_ns = at, .count = 1, .ns = ns };

	assert_int_equal(gil_blame_add(b, &c), 0);
}

/* The time of b's stacks for (waiter, holder) whose innermost frame is leaf
 * (any leaf: UINT32_MAX). */
static double stacks_ns(const struct gil_blame *b, int holder, uint32_t leaf)
{
	double ns = 0;

	for (size_t i = 0; i < b->nstacks; i++)
		if (b->stacks[i].holder == holder &&
		    (leaf == UINT32_MAX || b->stacks[i].frames[b->stacks[i].nframes - 1] == leaf))
			ns += b->stacks[i].ns;
	return ns;
}

static void test_spread_adds_up(void **state)
{
	(void)state;
	struct profile p;
	struct analysis a;
	struct blame_share *v;
	uint32_t run, f, g, h;
	double expect_f;
	size_t n;

	profile_init(&p);
	analysis_init(&a);
	run = profile_frame(&p, "run", "a.py", 1, FRAME_PYTHON);
	f = profile_frame(&p, "tally", "a.py", 5, FRAME_PYTHON);
	g = profile_frame(&p, "audit", "a.py", 9, FRAME_PYTHON);
	h = profile_frame(&p, "idle", "a.py", 20, FRAME_PYTHON);
	/* the holder, 2: 3 samples in tally for 1 in audit holding the GIL, and
	 * one not holding it (in idle: not what made anyone wait) */
	for (int i = 0; i < 12; i++)
		add(&p, 2, i * 10 * MS, 1, run, i % 4 == 3 ? g : f);
	add(&p, 2, 125 * MS, 0, run, h);
	profile_thread(&p, 1, 3);
	/* thread 3 waited behind 2, in two drains; and once while it changed
	 * hands, and once while it was handed over */
	chunk(&a.blame, 3, 2, 0, 50 * MS, 40 * MS);
	chunk(&a.blame, 3, 2, 0, 100 * MS, 80 * MS);
	chunk(&a.blame, 3, 2, 0, 100 * MS, 0);		/* merged into the one before */
	chunk(&a.blame, 3, GB_CHANGED, 0, 100 * MS, 7 * MS);
	chunk(&a.blame, 3, GB_HANDOFF, 0, 100 * MS, 5 * MS);
	assert_int_equal(a.blame.n, 4);
	assert_int_equal(gil_blame_settle(&a.blame, &p, &a.gcs, &a.waits), 0);
	/* exact: every nanosecond behind 2 is on its stacks, each drain's over
	 * the samples from 100 ms before it to 10 ms after: the first over 5 in
	 * tally and 1 in audit, the second over 9 and 2 */
	expect_f = 40.0 * MS * 5 / 6 + 80.0 * MS * 9 / 11;
	assert_true(stacks_ns(&a.blame, 2, UINT32_MAX) > 120 * MS - 1 &&
		    stacks_ns(&a.blame, 2, UINT32_MAX) < 120 * MS + 1);
	assert_true(stacks_ns(&a.blame, 2, f) > expect_f - 1 && stacks_ns(&a.blame, 2, f) < expect_f + 1);
	assert_true(stacks_ns(&a.blame, 2, h) == 0);
	/* changed hands: a marker of its own; handed over: not in the stacks */
	assert_true(stacks_ns(&a.blame, GB_CHANGED, UINT32_MAX) == 7 * MS);
	assert_true(stacks_ns(&a.blame, GB_HANDOFF, UINT32_MAX) == 0);
	/* by holder: 2 first with its top function, then the rest */
	n = gil_blame_of(&a.blame, &p, 1, 3, 0, &v);
	assert_int_equal(n, 3);
	assert_int_equal(v[0].holder, 2);
	assert_int_equal(v[0].ns, 120 * MS);
	assert_int_equal(v[0].top_frame, f);
	assert_true(v[1].holder <= 0 && v[2].holder <= 0);
	assert_int_equal(v[1].ns + v[2].ns, 12 * MS);
	free(v);
	analysis_free(&a);
	profile_free(&p);
}

/* Waiting for GC: spread over the collector's collections, each with the
 * stack that triggered it under [GC gen N]; unattributed time given to the
 * collector when the collections around it are all its. */
static void test_gc_wait_goes_to_the_collector(void **state)
{
	(void)state;
	struct profile p;
	struct analysis a;
	uint32_t run, churn, stack[2];
	struct interval gc = { .pid = 1, .tid = 4, .start_ns = 60 * MS, .end_ns = 90 * MS,
			       .state = STATE_GC, .generation = 2, .collected = 10 };
	struct interval wait = { .pid = 1, .tid = 3, .start_ns = 61 * MS, .end_ns = 88 * MS,
				 .state = STATE_GIL_WAIT_GC, .holder = GB_CHANGED, .generation = -1 };

	profile_init(&p);
	analysis_init(&a);
	run = profile_frame(&p, "run", "a.py", 1, FRAME_PYTHON);
	churn = profile_frame(&p, "churn", "a.py", 7, FRAME_PYTHON);
	add(&p, 4, 20 * MS, 1, run, churn);
	stack[0] = run;
	stack[1] = churn;
	gc.frames = stack;
	gc.nframes = 2;
	assert_int_equal(analysis_add(&a.gcs, &gc), 0);
	assert_int_equal(analysis_add(&a.waits, &wait), 0);
	chunk(&a.blame, 3, GB_CHANGED, 1, 100 * MS, 27 * MS);
	gil_blame_name_collectors(&a.blame, &a.gcs, &a.waits);
	assert_int_equal(a.blame.v[0].holder, 4);
	assert_int_equal(a.waits.v[0].holder, 4);
	assert_int_equal(gil_blame_settle(&a.blame, &p, &a.gcs, &a.waits), 0);
	assert_int_equal(a.blame.nstacks, 1);
	assert_int_equal(a.blame.stacks[0].nframes, 4);	/* root, run, churn, [GC gen 2] */
	assert_string_equal(p.frames[a.blame.stacks[0].frames[3]].name, "[GC gen 2]");
	assert_int_equal(a.blame.stacks[0].frames[2], churn);
	assert_true(a.blame.stacks[0].ns == 27 * MS);
	/* the wait's holder stack: the collection's */
	assert_int_equal(a.waits.v[0].holder_nframes, 2);
	assert_int_equal(a.waits.v[0].holder_frames[1], churn);
	analysis_free(&a);
	profile_free(&p);
}

/* Issue 28 item 8: a target rewriting its GIL's last holder with a new value
 * at every switch. Each drain brings a waiter's waits behind new values the
 * recording never names: past GB_UNNAMED_MAX distinct ones, they are folded
 * into the unknown holder, one entry per drain, and still add up exactly. */
static void test_rewritten_holders_are_bounded(void **state)
{
	struct gil_blame b = { 0 };
	struct blame_share *v;
	uint64_t drain, k, value = 0x10000, total = 0;
	size_t n;

	(void)state;
	for (drain = 1; drain <= 2000; drain++) {
		for (k = 0; k < 4; k++) {	/* the kernel keeps 4 holders per thread and drain */
			struct blame_chunk c = { .pid = 1, .waiter = 7, .holder = GB_UNKNOWN,
						 .tstate = value += 64, .at_ns = drain * 100 * MS,
						 .count = 1, .ns = 1000 + k };

			assert_int_equal(gil_blame_add(&b, &c), 0);
			total += c.ns;
		}
	}
	/* 4096 values kept apart, then one folded entry per drain */
	assert_int_equal(b.nunnamed, GB_UNNAMED_MAX);
	assert_true(b.n <= GB_UNNAMED_MAX + 2000);
	assert_int_equal(b.folded_count, 8000 - GB_UNNAMED_MAX);
	/* a value already kept goes on being kept apart */
	{
		struct blame_chunk c = { .pid = 1, .waiter = 7, .holder = GB_UNKNOWN,
					 .tstate = 0x10000 + 64, .at_ns = 3000 * 100 * MS,
					 .count = 1, .ns = 5 };

		assert_int_equal(gil_blame_add(&b, &c), 0);
		assert_int_equal(b.v[b.n - 1].tstate, c.tstate);
		assert_int_equal(b.folded_count, 8000 - GB_UNNAMED_MAX);
	}
	n = gil_blame_of(&b, NULL, 1, 7, 0, &v);
	assert_int_equal(n, 1);
	assert_int_equal(v[0].holder, GB_UNKNOWN);
	assert_int_equal(v[0].ns, total + 5);
	free(v);
	gil_blame_free(&b);
}

/* The same target cycling through 1000 values, all kept apart, over ten
 * minutes of drains while the recorder tells its samples (so the spreading
 * passes run): a value no sample names is a chunk per waiter and value
 * once its drain is GB_UNNAMED_AGE_NS old, not a chunk per drain, and the
 * waits still add up exactly. */
static void test_recycled_unnamed_holders_stay_bounded(void **state)
{
	struct gil_blame b = { 0 };
	struct blame_share *v;
	uint64_t drain, k, at, total = 0;
	size_t n;

	(void)state;
	for (drain = 1; drain <= 12000; drain++) {	/* 50 ms each */
		at = drain * 50 * MS;
		assert_int_equal(gil_blame_note_sample(&b, 1, 2, &(struct sample){
			.start_ns = at, .weight_ns = 10 * MS, .state = STATE_ON_CPU, .holds_gil = 1 }, 0), 0);
		for (k = 0; k < 4; k++) {
			struct blame_chunk c = { .pid = 1, .waiter = 7, .holder = GB_UNKNOWN,
						 .tstate = 0x10000 + 64 * ((drain * 4 + k) % 1000),
						 .at_ns = at, .count = 1, .ns = 1000 + k };

			assert_int_equal(gil_blame_add(&b, &c), 0);
			total += c.ns;
		}
	}
	assert_int_equal(b.folded_count, 0);
	/* 1000 summaries, and the last GB_UNNAMED_AGE_NS of drains (4 a drain) */
	assert_true(b.n <= 1000 + 4 * (GB_UNNAMED_AGE_NS + GB_PASS_NS) / (50 * MS));
	n = gil_blame_of(&b, NULL, 1, 7, 0, &v);
	assert_int_equal(n, 1);
	assert_int_equal(v[0].holder, GB_UNKNOWN);
	assert_int_equal(v[0].ns, total);
	free(v);
	gil_blame_free(&b);
}

/* A minute of a holder (2) sampled every 10 ms in one of 3 functions,
 * holding the GIL 4 times in 5, and 2 waiters (3, 4) behind it at every
 * 50 ms drain (some with nothing of 2 in their window): told the samples as
 * they come (early), or not (all at the end). */
static void record_minute(struct profile *p, struct gil_blame *b, int early)
{
	uint32_t run = profile_frame(p, "run", "a.py", 1, FRAME_PYTHON), leaf[3];
	struct thread_profile *tp;
	uint64_t t, ns = 0;

	leaf[0] = profile_frame(p, "tally", "a.py", 5, FRAME_PYTHON);
	leaf[1] = profile_frame(p, "audit", "a.py", 9, FRAME_PYTHON);
	leaf[2] = profile_frame(p, "idle", "a.py", 20, FRAME_PYTHON);
	profile_thread(p, 1, 3);
	profile_thread(p, 1, 4);
	for (t = 0; t < 60000 * MS; t += 10 * MS) {
		uint64_t i = t / (10 * MS);
		int gap = i % 1000 >= 300 && i % 1000 < 330;	/* 300 ms without samples */

		if (!gap) {
			add(p, 2, t, i % 5 != 4, run, leaf[(i * 7 / 3) % 3]);
			tp = profile_thread(p, 1, 2);
			if (early)
				assert_int_equal(gil_blame_note_sample(b, 1, 2, &(struct sample){
					.start_ns = t, .weight_ns = 10 * MS, .state = STATE_ON_CPU,
					.holds_gil = i % 5 != 4 }, tp->log.last_stack), 0);
		}
		if (i % 5 == 0) {
			ns += 1;
			chunk(b, 3, 2, 0, t, (ns * 7919) % (5 * MS) + 1);
			chunk(b, 4, 2, 0, t, (ns * 104729) % (3 * MS) + 1);
		}
	}
}

/* Spread during the recording, the chunks stay few, and the stacks are
 * those spread all at the end. */
static void test_early_spread_is_the_same(void **state)
{
	(void)state;
	struct profile p[2];
	struct analysis a[2];
	struct blame_share *v[2];
	size_t i, n[2];

	for (i = 0; i < 2; i++) {
		profile_init(&p[i]);
		analysis_init(&a[i]);
		record_minute(&p[i], &a[i].blame, (int)i);
	}
	assert_int_equal(a[0].blame.n, 2400);
	assert_true(a[1].blame.n < 200);
	for (i = 0; i < 2; i++) {
		profile_sort(&p[i]);
		assert_int_equal(gil_blame_settle(&a[i].blame, &p[i], &a[i].gcs, &a[i].waits), 0);
	}
	assert_int_equal(a[0].blame.nstacks, a[1].blame.nstacks);
	for (i = 0; i < a[0].blame.nstacks; i++) {
		const struct blame_stack *x = &a[0].blame.stacks[i], *y = &a[1].blame.stacks[i];

		assert_int_equal(x->waiter, y->waiter);
		assert_int_equal(x->holder, y->holder);
		assert_int_equal(x->nframes, y->nframes);
		assert_memory_equal(x->frames, y->frames, x->nframes * sizeof(*x->frames));
		assert_true(x->ns - y->ns < 1e-6 * x->ns && y->ns - x->ns < 1e-6 * x->ns);
	}
	for (i = 0; i < 2; i++)
		n[i] = gil_blame_of(&a[i].blame, &p[i], 1, 3, 0, &v[i]);
	assert_int_equal(n[0], 1);
	assert_int_equal(n[1], 1);
	assert_int_equal(v[0][0].ns, v[1][0].ns);
	assert_int_equal(v[0][0].top_frame, v[1][0].top_frame);
	for (i = 0; i < 2; i++) {
		free(v[i]);
		analysis_free(&a[i]);
		profile_free(&p[i]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spread_adds_up),
		cmocka_unit_test(test_gc_wait_goes_to_the_collector),
		cmocka_unit_test(test_rewritten_holders_are_bounded),
		cmocka_unit_test(test_recycled_unnamed_holders_stay_bounded),
		cmocka_unit_test(test_early_spread_is_the_same),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
