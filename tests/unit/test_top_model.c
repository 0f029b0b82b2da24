// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Unit tests of user/live/top_model.c: what `ebpfprof top` computes per refresh. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>

#include "analysis.h"
#include "profile.h"
#include "top_model.h"

#define MS 1000000ull

static void add(struct profile *p, int tid, uint64_t start, int state, uint32_t n, ...)
{
	struct sample s = { .start_ns = start, .weight_ns = 10 * MS, .state = (uint8_t)state };
	uint32_t frames[8];
	va_list ap;

	va_start(ap, n);
	for (uint32_t i = 0; i < n; i++)
		frames[i] = va_arg(ap, uint32_t);
	va_end(ap);
	s.frames = frames;
	s.nframes = n;
	assert_int_equal(profile_add_sample(p, profile_thread(p, 1, tid), &s), 0);
}

static const struct top_fn *fn(const struct top_model *m, uint32_t id)
{
	assert_true(id < m->nfns);
	return &m->fns[id];
}

static void test_own_total_intervals(void **state)
{
	(void)state;
	struct profile p;
	struct analysis a;
	struct top_model m;
	struct interval wait = { .pid = 1, .tid = 2, .start_ns = 50 * MS, .end_ns = 1500 * MS,
				 .state = STATE_IO };
	struct interval gc = { .pid = 1, .tid = 1, .start_ns = 1100 * MS, .end_ns = 1130 * MS,
			       .state = STATE_GC };
	struct top_fn *sorted;
	uint32_t mod, f, g;
	size_t n;

	profile_init(&p);
	analysis_init(&a);
	top_model_init(&m);
	mod = profile_frame(&p, "<module>", "a.py", 1, FRAME_PYTHON);
	f = profile_frame(&p, "f", "a.py", 5, FRAME_PYTHON);
	g = profile_frame(&p, "g", "a.py", 9, FRAME_PYTHON);
	/* first second: f recursing into itself, then g */
	add(&p, 1, 0, STATE_ON_CPU, 3, mod, f, f);
	add(&p, 1, 10 * MS, STATE_ON_CPU, 3, mod, f, g);
	assert_int_equal(top_model_update(&m, &p, &a, 1000 * MS), 0);
	assert_int_equal(fn(&m, f)->own_ns, 10 * MS);
	assert_int_equal(fn(&m, f)->total_ns, 20 * MS);	/* recursion counted once */
	assert_int_equal(fn(&m, mod)->total_ns, 20 * MS);
	assert_int_equal(fn(&m, g)->own_ns, 10 * MS);

	/* what was taken is released: the profile keeps only newer samples */
	top_model_release(&m, &p, &a);
	assert_int_equal(p.threads[0].nsamples, 0);
	assert_int_equal(fn(&m, f)->own_all, 10 * MS);

	/* second second: only g. The states are the kernel's totals (with the
	 * exact pauses), not the samples nor the waits sent one by one: a wait
	 * is in the totals of the interval it happened in, short runs and
	 * waits too, and the on-CPU total is exact */
	add(&p, 1, 1000 * MS, STATE_GC, 2, mod, g);
	assert_int_equal(analysis_set_exact_gc(&a, 1), 0);
	assert_int_equal(analysis_add(&a.waits, &wait), 0);
	assert_int_equal(analysis_add(&a.gcs, &gc), 0);
	assert_int_equal(analysis_add_totals(&a, 1, 2, STATE_IO, 0, 3, 900 * MS), 0);
	assert_int_equal(analysis_add_totals(&a, 1, 2, STATE_ON_CPU, 0, 3, 100 * MS), 0);
	assert_int_equal(analysis_add_totals(&a, 1, 1, STATE_ON_CPU, 0, 9, 600 * MS), 0);
	assert_int_equal(analysis_add_totals(&a, 1, 1, STATE_GIL_WAIT, 0, 40, 350 * MS), 0);
	assert_int_equal(analysis_add_totals(&a, 1, 1, STATE_PREEMPTED, 0, 50, 20 * MS), 0);
	assert_int_equal(top_model_update(&m, &p, &a, 2000 * MS), 0);
	assert_int_equal(fn(&m, f)->own_ns, 0);
	assert_int_equal(fn(&m, f)->own_all, 10 * MS);
	assert_int_equal(fn(&m, g)->own_ns, 10 * MS);
	assert_int_equal(fn(&m, g)->own_all, 20 * MS);
	assert_int_equal(m.gc_window, 1);
	assert_int_equal(m.gc_longest_window, 30 * MS);
	assert_int_equal(m.nthreads, 2);
	for (size_t i = 0; i < m.nthreads; i++) {
		const struct top_thread *t = &m.threads[i];

		if (t->tid == 2) {
			assert_int_equal(t->ns[STATE_IO], 900 * MS);
			assert_int_equal(t->ns[STATE_ON_CPU], 100 * MS);
			assert_int_equal(t->all[STATE_IO], 900 * MS);
		} else {
			/* the pause's 30 ms on the CPU are GC's, not on-CPU's */
			assert_int_equal(t->ns[STATE_GC], 30 * MS);
			assert_int_equal(t->ns[STATE_ON_CPU], 570 * MS);
			assert_int_equal(t->ns[STATE_GIL_WAIT], 350 * MS);
			assert_int_equal(t->ns[STATE_PREEMPTED], 20 * MS);
			/* the first second had no totals: its samples stand in */
			assert_int_equal(t->all[STATE_ON_CPU], 20 * MS + 570 * MS);
		}
	}

	/* sorts: own now puts g first; total puts the caller above its callee */
	n = top_model_sorted(&m, &p, TOP_SORT_OWN, &sorted);
	assert_int_equal(n, 3);
	assert_int_equal(sorted[0].frame, g);
	free(sorted);
	n = top_model_sorted(&m, &p, TOP_SORT_TOTAL, &sorted);
	assert_int_equal(sorted[0].frame, mod);
	assert_int_equal(sorted[1].frame, g);
	free(sorted);
	n = top_model_sorted(&m, &p, TOP_SORT_OWN_ALL, &sorted);
	assert_int_equal(sorted[0].frame, g);
	assert_int_equal(sorted[1].frame, f);
	free(sorted);
	n = top_model_sorted(&m, &p, TOP_SORT_NAME, &sorted);
	assert_int_equal(sorted[0].frame, mod);
	assert_int_equal(sorted[1].frame, f);
	assert_int_equal(sorted[2].frame, g);
	free(sorted);

	top_model_release(&m, &p, &a);
	assert_int_equal(a.waits.n, 0);
	assert_int_equal(a.gcs.n, 0);
	assert_int_equal(a.ntotals, 0);
	assert_true(analysis_gc_is_exact(&a, 1));
	/* third second: a thread's totals count once, in their own interval */
	assert_int_equal(analysis_add_totals(&a, 1, 2, STATE_IO, 0, 1, 1000 * MS), 0);
	assert_int_equal(top_model_update(&m, &p, &a, 3000 * MS), 0);
	for (size_t i = 0; i < m.nthreads; i++) {
		const struct top_thread *t = &m.threads[i];

		assert_int_equal(t->ns[STATE_ON_CPU], 0);
		assert_int_equal(t->ns[STATE_IO], t->tid == 2 ? 1000 * MS : 0);
		assert_int_equal(t->all[STATE_IO], t->tid == 2 ? 1900 * MS : 0);
	}
	assert_int_equal(fn(&m, g)->own_ns, 0);
	assert_int_equal(fn(&m, g)->own_all, 20 * MS);
	assert_int_equal(m.gc_all, 1);

	n = top_model_sorted(&m, &p, TOP_SORT_OWN_ALL, &sorted);
	assert_int_equal(n, 3);
	assert_int_equal(sorted[0].frame, g);
	free(sorted);

	top_model_free(&m);
	analysis_free(&a);
	profile_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_own_total_intervals),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
