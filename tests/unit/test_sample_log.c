// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The compact sample log and the profile's samples read back through it:
 * every field must come back exactly, whatever the deltas, weights, states
 * and stacks, in many threads at once; and a sample must stay small.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "profile.h"
#include "sample_log.h"

#define MS 1000000ull
#define S (1000 * MS)

static uint64_t rng = 7;

static uint64_t next_rand(void)
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return rng >> 11;
}

static void assert_record_equal(const struct sample_record *a, const struct sample_record *b)
{
	assert_int_equal(a->start_ns, b->start_ns);
	assert_int_equal(a->weight_ns, b->weight_ns);
	assert_int_equal(a->stack, b->stack);
	assert_int_equal(a->state, b->state);
	assert_int_equal(a->holds_gil, b->holds_gil);
	assert_int_equal(a->exact, b->exact);
	assert_int_equal(a->label, b->label);
}

/* Records that stress every field: the log must give each back exactly. */
static void test_records_round_trip(void **state)
{
	static const struct sample_record odd[] = {
		{ .start_ns = 0, .weight_ns = 10 * MS, .stack = 1 },
		{ .start_ns = UINT64_MAX, .weight_ns = 0, .stack = 1 },	/* huge delta */
		{ .start_ns = 0, .weight_ns = UINT64_MAX, .stack = 0 },	/* and back */
		{ .start_ns = 1ull << 63, .weight_ns = 10 * MS, .stack = UINT32_MAX - 1 },
		{ .start_ns = (1ull << 63) - 1, .weight_ns = 10 * MS, .stack = UINT32_MAX },
		{ .start_ns = 5 * S, .weight_ns = 4 * S + 1, .stack = 3, .exact = 1,
		  .state = STATE_LOCK_WAIT },	/* a long exact interval */
		{ .start_ns = 5 * S, .weight_ns = 3600 * S, .stack = 3, .exact = 1,
		  .state = STATE_SLEEP, .holds_gil = 1 },
		{ .start_ns = 4 * S, .weight_ns = 10 * MS, .stack = 3, .state = 14 },
		{ .start_ns = 4 * S, .weight_ns = 10 * MS, .stack = 3, .state = 15 },
		{ .start_ns = 4 * S, .weight_ns = 10 * MS, .stack = 3, .state = 255 },
		{ .start_ns = 4 * S, .weight_ns = 10 * MS, .stack = 3, .state = 255,
		  .label = UINT32_MAX },	/* --label: a value's id + 1 */
		{ .start_ns = 4 * S, .weight_ns = 10 * MS, .stack = 3, .state = 1, .label = 1 },
	};
	struct sample_record *want, got;
	struct sample_log_reader rd;
	struct sample_log log;
	size_t i, n = 100000;

	(void)state;
	want = calloc(n, sizeof(*want));
	assert_non_null(want);
	memcpy(want, odd, sizeof(odd));
	for (i = sizeof(odd) / sizeof(*odd); i < n; i++) {
		uint64_t r = next_rand();

		want[i].start_ns = want[i - 1].start_ns + 10 * MS + r % 5000;
		if (r % 97 == 0)
			want[i].start_ns -= 200 * MS;	/* out of order */
		want[i].weight_ns = r % 13 == 0 ? r % (10 * S) : r % 29 == 0 ? 0 : 10 * MS;
		want[i].stack = r % 3 ? want[i - 1].stack : (uint32_t)(r >> 20) % 5000;
		want[i].state = (uint8_t)(r % 7 ? 0 : (r >> 8) % STATE_MAX);
		want[i].holds_gil = (r >> 4) & 1;
		want[i].exact = r % 13 == 0;
		want[i].label = r % 5 == 0 ? (uint32_t)(r >> 30) % 20000 : 0;
	}
	sample_log_init(&log, 10 * MS);
	for (i = 0; i < n; i++)
		assert_int_equal(sample_log_append(&log, &want[i]), 0);
	assert_int_equal(log.n, n);
	assert_true(log.unsorted);
	sample_log_reader_init(&rd, &log);
	for (i = 0; i < n; i++) {
		assert_int_equal(sample_log_read(&rd, &got), 1);
		assert_record_equal(&got, &want[i]);
	}
	assert_int_equal(sample_log_read(&rd, &got), 0);
	/* 10 ms apart, mostly nominal weights and repeated stacks */
	assert_true(log.bytes < n * 8);
	sample_log_free(&log);
	assert_int_equal(log.n, 0);
	assert_null(log.first);
	free(want);
}

/* Samples of many threads added interleaved, read back per thread. */
static void test_profile_round_trip(void **state)
{
	enum { THREADS = 300, PER_THREAD = 200 };
	uint32_t frames[8];
	struct sample *want, *got, s;
	struct sample_iter it;
	struct thread_profile *t;
	struct profile p;
	size_t i, j, k;

	(void)state;
	profile_init(&p);
	p.rate_hz = 100;
	want = calloc(THREADS * PER_THREAD, sizeof(*want));
	assert_non_null(want);
	for (j = 0; j < PER_THREAD; j++) {
		for (i = 0; i < THREADS; i++) {
			struct sample *w = &want[i * PER_THREAD + j];
			uint64_t r = next_rand();

			w->start_ns = j ? w[-1].start_ns + r % (20 * MS) : r % S;
			if (r % 50 == 0)
				w->start_ns += 3600 * S;	/* a long gap */
			w->weight_ns = r % 11 == 0 ? 4 * S + r % S : r % 17 == 0 ? 0 : 10 * MS;
			w->exact = r % 11 == 0;
			w->state = (uint8_t)((r >> 8) % STATE_MAX);
			w->holds_gil = (r >> 16) & 1;
			w->nframes = (uint32_t)(r >> 20) % 9;
			for (k = 0; k < w->nframes; k++)
				frames[k] = (uint32_t)(k + (r >> (24 + k)) % 3);
			w->frames = frames;
			t = profile_thread(&p, 1, (int)i + 1);
			assert_int_equal(profile_add_sample(&p, t, w), 0);
			/* a copy of the stack to compare with */
			w->frames = malloc(sizeof(frames));
			assert_non_null(w->frames);
			memcpy(w->frames, frames, sizeof(frames));
		}
	}
	assert_int_equal(p.nthreads, THREADS);
	for (i = 0; i < THREADS; i++) {
		t = &p.threads[i];
		assert_int_equal(t->nsamples, PER_THREAD);
		got = profile_thread_samples(&p, t);
		assert_non_null(got);
		sample_iter_init(&it, &p, t);
		for (j = 0; j < PER_THREAD; j++) {
			const struct sample *w = &want[i * PER_THREAD + j];

			assert_ptr_equal(sample_iter_peek(&it) != NULL, 1);
			assert_int_equal(sample_iter_next(&it, &s), 1);
			assert_memory_equal(&s, &got[j], sizeof(s));
			assert_int_equal(s.start_ns, w->start_ns);
			assert_int_equal(s.weight_ns, w->weight_ns);
			assert_int_equal(s.state, w->state);
			assert_int_equal(s.holds_gil, w->holds_gil);
			assert_int_equal(s.exact, w->exact);
			assert_int_equal(s.nframes, w->nframes);
			if (s.nframes)
				assert_memory_equal(s.frames, w->frames, s.nframes * sizeof(*s.frames));
			else
				assert_null(s.frames);
		}
		assert_null(sample_iter_peek(&it));
		assert_int_equal(sample_iter_next(&it, &s), 0);
		free(got);
	}
	for (i = 0; i < THREADS * PER_THREAD; i++)
		free(want[i].frames);
	free(want);
	profile_free(&p);
}

/* Replacing, forgetting (top) and sorting keep the rest exactly. */
static void test_set_forget_sort(void **state)
{
	uint32_t a[] = { 1, 2, 3 }, b[] = { 1, 2 };
	struct sample v[6], *got;
	struct thread_profile *t;
	struct profile p;
	size_t i;

	(void)state;
	profile_init(&p);
	p.rate_hz = 100;
	t = profile_thread(&p, 5, 6);
	for (i = 0; i < 6; i++)
		v[i] = (struct sample){ .start_ns = (6 - i / 2) * 10 * MS, .weight_ns = 10 * MS,
					.frames = i % 2 ? a : b, .nframes = i % 2 ? 3 : 2,
					.state = (uint8_t)i };
	for (i = 0; i < 6; i++)
		assert_int_equal(profile_add_sample(&p, t, &v[i]), 0);
	profile_sort(&p);
	got = profile_thread_samples(&p, t);
	assert_non_null(got);
	/* by start, ties in the order added */
	for (i = 0; i < 6; i++)
		assert_int_equal(got[i].state, (4 - i / 2 * 2) + i % 2);
	free(got);

	assert_int_equal(profile_thread_forget(&p, t, 2), 0);
	assert_int_equal(t->nsamples, 4);
	got = profile_thread_samples(&p, t);
	assert_non_null(got);
	assert_int_equal(got[0].state, 2);
	assert_int_equal(got[0].start_ns, 50 * MS);
	assert_int_equal(got[3].state, 1);
	assert_int_equal(got[3].nframes, 3);
	assert_memory_equal(got[3].frames, a, sizeof(a));
	free(got);
	assert_int_equal(profile_thread_forget(&p, t, 4), 0);
	assert_int_equal(t->nsamples, 0);
	assert_null(t->log.first);
	/* and the thread takes samples again */
	assert_int_equal(profile_add_sample(&p, t, &v[0]), 0);
	assert_int_equal(t->nsamples, 1);
	profile_free(&p);
}

/* What a recording keeps per sample: the target is well under 12 bytes. */
static void test_bytes_per_sample(void **state)
{
	uint32_t stacks[50][6];
	struct thread_profile *t;
	struct profile p;
	uint64_t at = 0;
	size_t i, n = 200000, bytes = 0;
	struct sample s = { .weight_ns = 10 * MS, .nframes = 6 };

	(void)state;
	profile_init(&p);
	p.rate_hz = 100;
	for (i = 0; i < 50; i++)
		for (size_t k = 0; k < 6; k++)
			stacks[i][k] = (uint32_t)(i * 7 + k);
	for (i = 0; i < n; i++) {
		uint64_t r = next_rand();

		/* nine threads, each on the CPU now and then */
		at += r % (8 * MS);
		s.start_ns = at;
		s.frames = stacks[r % 4 ? (r >> 8) % 5 : (r >> 8) % 50];
		s.holds_gil = r & 1;
		s.state = r % 20 ? STATE_ON_CPU : STATE_GC;
		t = profile_thread(&p, 1, 1 + (int)((r >> 16) % 9));
		assert_int_equal(profile_add_sample(&p, t, &s), 0);
	}
	for (i = 0; i < p.nthreads; i++)
		bytes += p.threads[i].log.bytes;
	print_message("%zu samples in %zu bytes: %.2f bytes per sample\n", n, bytes,
		      (double)bytes / n);
	assert_true(bytes < n * 8);
	profile_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_records_round_trip),
		cmocka_unit_test(test_profile_round_trip),
		cmocka_unit_test(test_set_forget_sort),
		cmocka_unit_test(test_bytes_per_sample),
	};

	return cmocka_run_group_tests_name("sample_log", tests, NULL, NULL);
}
