// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Unit tests of py_asyncio_offsets_parse() (user/cpython/py_asyncio_debug.c):
 * the .AsyncioDebug sections of Debian sid's 3.14.10 _asyncio module and
 * 3.15.2 interpreter are taken, and blobs whose offsets leave the objects
 * they describe are refused.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>

#include "py_asyncio.h"

/* readelf -x .AsyncioDebug, as u64 words */
static const uint64_t sid_314[13] = { 168, 136, 96, 108, 109, 128, 152, 225864, 10880, 936, 864, 872, 880 };
static const uint64_t sid_315[13] = { 168, 136, 96, 108, 109, 128, 152, 226240, 10856, 1104, 1024, 1032, 1048 };

static void real_sections_parse(void **state)
{
	struct py_asyncio_offsets o;

	(void)state;
	assert_int_equal(py_asyncio_offsets_parse(sid_314, sizeof(sid_314), &o), 0);
	assert_int_equal(o.task_coro, 128);
	assert_int_equal(o.task_node, 152);
	assert_int_equal(o.tstate_tasks_head, 880);
	assert_int_equal(o.interp_tasks_head, 10880);
	assert_int_equal(py_asyncio_offsets_parse(sid_315, sizeof(sid_315), &o), 0);
	assert_int_equal(o.tstate_running_task, 1032);
	assert_int_equal(o.tstate_tasks_head, 1048);
}

static void short_blob_refused(void **state)
{
	struct py_asyncio_offsets o;

	(void)state;
	assert_int_equal(py_asyncio_offsets_parse(sid_314, sizeof(sid_314) - 1, &o), -1);
}

/* Each word in turn made to lie: past its object, or a size beyond any. */
static void forged_words_refused(void **state)
{
	struct py_asyncio_offsets o;
	uint64_t blob[13];
	int i;

	(void)state;
	for (i = 0; i < 13; i++) {
		memcpy(blob, sid_314, sizeof(blob));
		blob[i] = (uint64_t)1 << 40;
		assert_int_equal(py_asyncio_offsets_parse(blob, sizeof(blob), &o), -1);
	}
	memcpy(blob, sid_314, sizeof(blob));
	blob[6] = 160;		/* task_node: a 16-byte node ending past a 168-byte task */
	assert_int_equal(py_asyncio_offsets_parse(blob, sizeof(blob), &o), -1);
	memcpy(blob, sid_314, sizeof(blob));
	blob[5] = 8;		/* task_coro inside the object header */
	assert_int_equal(py_asyncio_offsets_parse(blob, sizeof(blob), &o), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(real_sections_parse),
		cmocka_unit_test(short_blob_refused),
		cmocka_unit_test(forged_words_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
