// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Unit tests of user/cpython/frame_names.c (how frames are named, py-spy's way) and
 * of the /proc/net line parsers of user/base/fd_describe.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>

#include "fd_describe.h"
#include "frame_names.h"
#include "py_symbolizer.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

struct name_case {
	const char *path, *shown;
};

static const struct name_case name_cases[] = {
	/* the standard library: from its root, subpackages kept */
	{ "/usr/lib/python3.11/threading.py", "threading.py" },
	{ "/usr/lib/python3.11/json/encoder.py", "json/encoder.py" },
	{ "/root/.pyenv/versions/3.8.18/lib/python3.8/queue.py", "queue.py" },
	{ "/usr/lib64/python3.9/asyncio/events.py", "asyncio/events.py" },
	{ "/opt/py/lib/python3.13t/threading.py", "threading.py" },
	{ "/usr/lib/python3/dist-packages/requests/api.py", "requests/api.py" },
	/* installed packages: from the package root; the innermost tree wins */
	{ "/srv/venv/lib/python3.12/site-packages/flask/app.py", "flask/app.py" },
	{ "/a/site-packages/x/site-packages/pkg/m.py", "pkg/m.py" },
	{ "/home/u/.local/lib/python3.11/site-packages/six.py", "six.py" },
	/* the application's own files keep their full path */
	{ "/home/u/app/main.py", "/home/u/app/main.py" },
	{ "/srv/python/app.py", "/srv/python/app.py" },
	{ "/usr/lib/pythonista/x.py", "/usr/lib/pythonista/x.py" },
	{ "/usr/lib/python3.11/", "/usr/lib/python3.11/" },
	{ "/x/site-packages/", "/x/site-packages/" },
	/* not paths: as written */
	{ "<frozen importlib._bootstrap>", "<frozen importlib._bootstrap>" },
	{ "<string>", "<string>" },
	{ "rel/lib/python3.11/x.py", "rel/lib/python3.11/x.py" },
	{ "", "" },
};

static void test_short_filenames(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(name_cases); i++)
		assert_string_equal(frame_short_filename(name_cases[i].path), name_cases[i].shown);
	assert_null(frame_short_filename(NULL));
}

static void test_naming_applied(void **state)
{
	(void)state;
	struct frame_naming full = { .full_filenames = 1 }, nolineno = { .nolineno = 1 }, dflt = { 0 };
	struct py_sym_frame f = { .name = "f", .file = "/usr/lib/python3.11/json/decoder.py",
			       .line = 12, .firstlineno = 10 };
	struct py_sym_frame g = f;

	frame_naming_set(&dflt);
	frame_naming_apply(&g.file, &g.line, &g.firstlineno);
	assert_string_equal(g.file, "json/decoder.py");
	assert_int_equal(g.line, 12);
	g = f;
	frame_naming_set(&full);
	frame_naming_apply(&g.file, &g.line, &g.firstlineno);
	assert_string_equal(g.file, f.file);
	g = f;
	frame_naming_set(&nolineno);
	frame_naming_apply(&g.file, &g.line, &g.firstlineno);
	assert_string_equal(g.file, "json/decoder.py");
	assert_int_equal(g.line, 0);
	assert_int_equal(g.firstlineno, 0);
	frame_naming_set(&dflt);
}

static void test_inet_lines(void **state)
{
	(void)state;
	char local[64], peer[64];
	const char *tcp = "   3: 0100007F:9C40 0100007F:15B3 01 00000000:00000000 00:00000000 00000000     0        0 4242 1 0000000000000000 20 4 30 10 -1";
	const char *listen = "   0: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 77 1 0000000000000000 100 0 0 10 0";
	const char *tcp6 = "   0: 00000000000000000000000001000000:1F90 00000000000000000000000001000000:D431 01 00000000:00000000 00:00000000 00000000     0        0 99 1 0000000000000000 20 4 30 10 -1";

	assert_int_equal(fd_parse_inet_line(tcp, 0, 4242, local, sizeof(local), peer, sizeof(peer)), 0);
	assert_string_equal(local, "127.0.0.1:40000");
	assert_string_equal(peer, "127.0.0.1:5555");
	assert_int_equal(fd_parse_inet_line(tcp, 0, 4243, local, sizeof(local), peer, sizeof(peer)), -1);
	assert_int_equal(fd_parse_inet_line(listen, 0, 77, local, sizeof(local), peer, sizeof(peer)), 0);
	assert_string_equal(local, "0.0.0.0:8080");
	assert_string_equal(peer, "");
	assert_int_equal(fd_parse_inet_line(tcp6, 1, 99, local, sizeof(local), peer, sizeof(peer)), 0);
	assert_string_equal(local, "[::1]:8080");
	assert_string_equal(peer, "[::1]:54321");
	/* the header line and garbage are not sockets */
	assert_int_equal(fd_parse_inet_line("  sl  local_address rem_address   st tx_queue", 0, 0,
					    local, sizeof(local), peer, sizeof(peer)), -1);
	assert_int_equal(fd_parse_inet_line("1: zz:zz", 0, 0, local, sizeof(local), peer, sizeof(peer)), -1);
}

static void test_unix_lines(void **state)
{
	(void)state;
	char path[64];

	assert_int_equal(fd_parse_unix_line("0000000000000000: 00000002 00000000 00010000 0001 01 5151 /run/app.sock",
					    5151, path, sizeof(path)), 0);
	assert_string_equal(path, "/run/app.sock");
	assert_int_equal(fd_parse_unix_line("0000000000000000: 00000003 00000000 00000000 0001 03 5152",
					    5152, path, sizeof(path)), 0);
	assert_string_equal(path, "");
	assert_int_equal(fd_parse_unix_line("Num       RefCount Protocol Flags    Type St Inode Path",
					    0, path, sizeof(path)), -1);
}

static void test_epoll_lines(void **state)
{
	(void)state;
	assert_int_equal(fd_parse_epoll_tfd("tfd:        5 events:       19 data:                5  pos:0 ino:1a sdev:8"), 5);
	assert_int_equal(fd_parse_epoll_tfd("pos:\t0"), -1);
	assert_int_equal(fd_parse_epoll_tfd("tfd: -3 events: 1"), -1);
}

static void test_fd_format(void **state)
{
	(void)state;
	struct fd_info a = { .fd = 5, .kind = "tcp", .local = "127.0.0.1:1", .peer = "127.0.0.1:2" };
	struct fd_info b = { .fd = 3, .kind = "pipe", .path = "pipe:[12]" };
	char out[128];

	fd_info_format(&a, out, sizeof(out));
	assert_string_equal(out, "fd 5: tcp 127.0.0.1:1 -> 127.0.0.1:2");
	fd_info_format(&b, out, sizeof(out));
	assert_string_equal(out, "fd 3: pipe pipe:[12]");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_short_filenames),
		cmocka_unit_test(test_naming_applied),
		cmocka_unit_test(test_inet_lines),
		cmocka_unit_test(test_unix_lines),
		cmocka_unit_test(test_epoll_lines),
		cmocka_unit_test(test_fd_format),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
