// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The symbolizer's cache against code objects made in this process's own
 * memory (read back through the remote reader): a name that could not be
 * read is read again when sampled later, not left <unknown> to the end.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include "ebpfprof.h"
#include "py_layout.h"
#include "py_symbolizer.h"

/* A compact ASCII str: length, state, then its characters. */
struct fake_str {
	int64_t length;
	uint32_t state;
	uint32_t pad;
	char data[16];
};

struct fake_code {
	uint64_t filename, qualname;
	int32_t firstlineno;
};

#define STATE_ASCII_KIND1	((1u << 2) | (1u << 5) | (1u << 6))

static struct py_layout fake_layout(void)
{
	struct py_layout L;

	memset(&L, 0, sizeof(L));
	L.major = 3;
	L.minor = 12;
	L.code_filename = offsetof(struct fake_code, filename);
	L.code_name = offsetof(struct fake_code, qualname);
	L.code_qualname = offsetof(struct fake_code, qualname);
	L.code_firstlineno = offsetof(struct fake_code, firstlineno);
	L.code_linetable = -1;
	L.unicode_length = offsetof(struct fake_str, length);
	L.unicode_state = offsetof(struct fake_str, state);
	L.unicode_ascii_size = offsetof(struct fake_str, data);
	L.unicode_compact_size = offsetof(struct fake_str, data);
	return L;
}

static void sleep_ms(long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&t, NULL);
}

/* handle() of app.py at line 7, whose name is not a str the reader accepts
 * (kind 0: as a read that failed) until made one; and a symbolizer of it. */
static struct fake_str file = { 6, STATE_ASCII_KIND1, 0, "app.py" };
static struct fake_str name;
static struct fake_code code;
static uint32_t ident;

static struct py_symbolizer *unreadable_handle(void)
{
	struct py_layout L = fake_layout();

	name = (struct fake_str){ 6, 0, 0, "handle" };
	code = (struct fake_code){ (uintptr_t)&file, (uintptr_t)&name, 7 };
	ident = ep_code_ident(7, (uintptr_t)&file);
	return py_symbolizer_new(getpid(), &L);
}

static void test_a_name_not_read_is_read_again_later(void **state)
{
	struct py_symbolizer *s = unreadable_handle();
	struct py_sym_frame f;

	(void)state;
	assert_non_null(s);
	py_symbolizer_frame(s, (uintptr_t)&code, ident, ~0u, &f);
	assert_string_equal(f.name, "<unknown>");
	/* readable now; not read again at once (the next samples come in
	 * microseconds), but 50 ms later */
	name.state = STATE_ASCII_KIND1;
	py_symbolizer_frame(s, (uintptr_t)&code, ident, ~0u, &f);
	assert_string_equal(f.name, "<unknown>");
	sleep_ms(60);
	py_symbolizer_frame(s, (uintptr_t)&code, ident, ~0u, &f);
	assert_string_equal(f.name, "handle");
	assert_string_equal(f.file, "app.py");
	assert_int_equal(f.firstlineno, 7);
	py_symbolizer_free(s);
}

static void test_a_name_never_read_is_tried_a_bounded_number_of_times(void **state)
{
	struct py_symbolizer *s = unreadable_handle();
	struct py_sym_frame f;
	int i;

	(void)state;
	assert_non_null(s);
	/* 16 reads at most (the first and 15 more), 50 ms apart */
	for (i = 0; i < 17; i++) {
		py_symbolizer_frame(s, (uintptr_t)&code, ident, ~0u, &f);
		assert_string_equal(f.name, "<unknown>");
		sleep_ms(55);
	}
	name.state = STATE_ASCII_KIND1;
	py_symbolizer_frame(s, (uintptr_t)&code, ident, ~0u, &f);
	assert_string_equal(f.name, "<unknown>");
	py_symbolizer_free(s);
}

/* The summary's account of <unknown> frames: each code object counted under
 * the reason its name is missing. */
static void test_unnamed_code_objects_are_counted_by_why(void **state)
{
	struct py_symbolizer *s = unreadable_handle();
	struct fake_code other = { (uintptr_t)&file, (uintptr_t)&name, 9 };
	struct py_sym_unnamed u;
	struct py_sym_frame f;

	(void)state;
	assert_non_null(s);
	/* its name unreadable */
	py_symbolizer_frame(s, (uintptr_t)&code, ident, ~0u, &f);
	/* another object where the kernel saw one of line 7: freed before */
	py_symbolizer_frame(s, (uintptr_t)&other, ident, ~0u, &f);
	/* the kernel could not read it (identity of nothing read) */
	py_symbolizer_frame(s, (uintptr_t)&other, ep_code_ident(0, 0), ~0u, &f);
	/* an address with nothing there */
	py_symbolizer_frame(s, 8, ident, ~0u, &f);
	py_symbolizer_unnamed(s, &u);
	assert_int_equal(u.held, 4);
	assert_int_equal(u.nameless, 1);
	assert_int_equal(u.replaced, 2);
	assert_int_equal(u.kernel_unread, 1);
	assert_int_equal(u.unread, 1);
	py_symbolizer_free(s);
}

static struct ep_code_event kernel_named(uint64_t code, uint32_t id, const char *qualname,
				       const char *filename, int32_t line)
{
	struct ep_code_event ev = { .kind = EP_EV_CODE, .pid = getpid(), .code = code,
				    .ident = id, .firstlineno = line };

	ev.name_len = strlen(qualname);
	memcpy(ev.name, qualname, ev.name_len);
	ev.file_len = strlen(filename);
	memcpy(ev.file, filename, ev.file_len);
	return ev;
}

/* A code object the kernel named and that is gone by the time its stack is
 * read: named all the same, at its first line; latin-1 made UTF-8. */
static void test_a_code_object_named_by_the_kernel_keeps_its_name_once_gone(void **state)
{
	struct py_layout L = fake_layout();
	struct py_symbolizer *s = py_symbolizer_new(getpid(), &L);
	struct ep_code_event ev = kernel_named(8, 1234, "Spin.caf\xe9", "/tmp/spinmod0.py", 3);
	struct py_sym_unnamed u;
	struct py_sym_frame f;

	(void)state;
	assert_non_null(s);
	py_symbolizer_seed(s, &ev);
	py_symbolizer_frame(s, 8, 1234, 40, &f);
	assert_string_equal(f.name, "Spin.caf\xc3\xa9");
	assert_string_equal(f.file, "/tmp/spinmod0.py");
	assert_int_equal(f.line, 3);
	py_symbolizer_unnamed(s, &u);
	assert_int_equal(u.held, 1);
	assert_int_equal(u.seeded, 1);
	assert_int_equal(u.unread + u.replaced + u.nameless, 0);
	py_symbolizer_free(s);
}

/* One userspace read first is kept: it has the line table too. */
static void test_a_name_read_first_is_not_replaced_by_the_kernels(void **state)
{
	struct py_symbolizer *s = unreadable_handle();
	struct ep_code_event ev = kernel_named((uintptr_t)&code, ident, "other", "other.py", 7);
	struct py_sym_frame f;

	(void)state;
	assert_non_null(s);
	name.state = STATE_ASCII_KIND1;
	py_symbolizer_frame(s, (uintptr_t)&code, ident, ~0u, &f);
	py_symbolizer_seed(s, &ev);
	py_symbolizer_frame(s, (uintptr_t)&code, ident, ~0u, &f);
	assert_string_equal(f.name, "handle");
	assert_string_equal(f.file, "app.py");
	py_symbolizer_free(s);
}

/* Past 65,536 code objects the least recently used half goes; those kept
 * are found again after their entries close up. */
static void test_the_cache_drops_the_least_recently_used_and_keeps_the_rest(void **state)
{
	enum { N = 70000 };
	struct py_layout L = fake_layout();
	struct py_symbolizer *s = py_symbolizer_new(getpid(), &L);
	struct ep_code_event ev;
	struct py_sym_unnamed u;
	struct py_sym_frame f;
	char want[16];
	uint32_t i;

	(void)state;
	assert_non_null(s);
	for (i = 0; i < N; i++) {
		snprintf(want, sizeof(want), "f%u", i);
		ev = kernel_named(0x1000 + 8 * (uint64_t)i, i, want, "mod.py", 1);
		py_symbolizer_seed(s, &ev);
	}
	py_symbolizer_unnamed(s, &u);
	assert_int_equal(u.seeded, N);
	assert_int_equal(u.held, (1 << 15) + N - (1 << 16));
	for (i = N - u.held; i < N; i += 101) {
		snprintf(want, sizeof(want), "f%u", i);
		py_symbolizer_frame(s, 0x1000 + 8 * (uint64_t)i, i, ~0u, &f);
		assert_string_equal(f.name, want);
	}
	py_symbolizer_frame(s, 0x1000, 0, ~0u, &f);	/* dropped: read again, nothing there */
	assert_string_not_equal(f.name, "f0");
	py_symbolizer_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_name_not_read_is_read_again_later),
		cmocka_unit_test(test_a_name_never_read_is_tried_a_bounded_number_of_times),
		cmocka_unit_test(test_unnamed_code_objects_are_counted_by_why),
		cmocka_unit_test(test_a_code_object_named_by_the_kernel_keeps_its_name_once_gone),
		cmocka_unit_test(test_a_name_read_first_is_not_replaced_by_the_kernels),
		cmocka_unit_test(test_the_cache_drops_the_least_recently_used_and_keeps_the_rest),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
