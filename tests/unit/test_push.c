// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* --push: label names and values, the series name, ids from cgroup paths,
 * the spool's bound and its refusals. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include "push_labels.h"
#include "spool.h"

static void label_names_follow_the_rules(void **state)
{
	(void)state;
	assert_int_equal(push_label_name_valid("env"), 0);
	assert_int_equal(push_label_name_valid("_x9"), 0);
	assert_int_equal(push_label_name_valid("9x"), -1);
	assert_int_equal(push_label_name_valid("__name__"), -1);
	assert_int_equal(push_label_name_valid("a-b"), -1);
	assert_int_equal(push_label_name_valid("a.b"), -1);
	assert_int_equal(push_label_name_valid(""), -1);
	assert_null(push_tag_invalid("team=perf-1"));
	assert_non_null(push_tag_invalid("team="));
	assert_non_null(push_tag_invalid("=x"));
	assert_non_null(push_tag_invalid("team"));
}

/* The name syntax has no escapes: what it could misread becomes '_'. */
static void series_name_cleans_values(void **state)
{
	struct push_label labels[] = {
		{ "pid", "42" }, { "container_id", "" }, { "env", "a,b}c=d e{f" }, { "url", "x:1/y@z+w" },
	};
	char out[PUSH_NAME_MAX];

	(void)state;
	push_series_name(out, sizeof(out), "my app{x}", labels, 4);
	assert_string_equal(out, "my_app_x_{pid=42,env=a_b_c_d_e_f,url=x:1/y@z+w}");
	push_series_name(out, sizeof(out), "a:b@c+d/e.f-g", NULL, 0);
	assert_string_equal(out, "a_b_c_d/e.f-g{}");
	push_series_name(out, sizeof(out), "", NULL, 0);
	assert_string_equal(out, "python{}");
}

static void ids_from_cgroup_paths(void **state)
{
	const char *id = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
	char cg[512], container[80], pod[48];

	(void)state;
	/* containerd under systemd: the pod's uid with '_' for '-' */
	snprintf(cg, sizeof(cg), "0::/kubepods.slice/kubepods-burstable.slice/"
		 "kubepods-burstable-pod1f2e3d4c_5b6a_4789_8abc_def012345678.slice/cri-containerd-%s.scope\n", id);
	push_cgroup_ids(cg, container, sizeof(container), pod, sizeof(pod));
	assert_string_equal(container, id);
	assert_string_equal(pod, "1f2e3d4c-5b6a-4789-8abc-def012345678");
	/* cgroupfs driver, v1 lines */
	snprintf(cg, sizeof(cg), "12:pids:/kubepods/besteffort/pod1F2E3D4C-5B6A-4789-8ABC-DEF012345678/%s\n", id);
	push_cgroup_ids(cg, container, sizeof(container), pod, sizeof(pod));
	assert_string_equal(container, id);
	assert_string_equal(pod, "1f2e3d4c-5b6a-4789-8abc-def012345678");
	/* docker, no pod */
	snprintf(cg, sizeof(cg), "0::/system.slice/docker-%s.scope\n", id);
	push_cgroup_ids(cg, container, sizeof(container), pod, sizeof(pod));
	assert_string_equal(container, id);
	assert_string_equal(pod, "");
	/* a host process; 65 hex digits and a short uuid are no ids */
	push_cgroup_ids("0::/user.slice/user-0.slice/session-1.scope\n", container, sizeof(container),
			pod, sizeof(pod));
	assert_string_equal(container, "");
	snprintf(cg, sizeof(cg), "0::/x/%sa/pod1f2e3d4c-5b6a-4789-8abc-def01234567\n", id);
	push_cgroup_ids(cg, container, sizeof(container), pod, sizeof(pod));
	assert_string_equal(container, "");
	assert_string_equal(pod, "");
}

static size_t files_in(const char *dir)
{
	char cmd[512];
	FILE *p;
	size_t n = 0;

	snprintf(cmd, sizeof(cmd), "ls -A %s | wc -l", dir);
	p = popen(cmd, "r");
	if (p && fscanf(p, "%zu", &n) != 1)
		n = 0;
	if (p)
		pclose(p);
	return n;
}

/* Beyond the bound the oldest go first, counted; what is taken is the oldest left. */
static void spool_drops_the_oldest(void **state)
{
	char dir[] = "/tmp/ebpfprof-test-spool-XXXXXX", err[256], body[1000], *q, *b;
	struct spool s;
	unsigned long seq;
	size_t len;

	(void)state;
	assert_non_null(mkdtemp(dir));
	memset(body, 'x', sizeof(body));
	/* room for three requests of about 1 KB */
	assert_int_equal(spool_open(&s, dir, 3200, err, sizeof(err)), 0);
	for (int i = 0; i < 5; i++) {
		char query[32];

		snprintf(query, sizeof(query), "name=app{}&n=%d", i);
		assert_int_equal(spool_add(&s, query, body, sizeof(body)), 0);
	}
	assert_int_equal(spool_pending(&s), 3);
	assert_int_equal(s.dropped, 2);
	assert_true(s.bytes <= 3200);
	assert_int_equal(files_in(dir), 3);
	assert_int_equal(spool_take_oldest(&s, &seq, &q, &b, &len), 1);
	assert_string_equal(q, "name=app{}&n=2");
	assert_int_equal(len, sizeof(body));
	assert_memory_equal(b, body, len);
	free(q);
	free(b);
	/* a failure keeps it first in line */
	spool_done(&s, seq, SPOOL_RETRY);
	assert_int_equal(spool_take_oldest(&s, &seq, &q, &b, &len), 1);
	assert_string_equal(q, "name=app{}&n=2");
	free(q);
	free(b);
	spool_done(&s, seq, SPOOL_SENT);
	assert_int_equal(spool_pending(&s), 2);
	assert_int_equal(s.sent, 1);
	assert_int_equal(files_in(dir), 2);
	spool_close(&s);
	/* a directory given is left with what was not sent */
	assert_int_equal(files_in(dir), 2);
	snprintf(err, sizeof(err), "rm -rf %s", dir);
	assert_int_equal(system(err), 0);
}

static void spool_refuses_a_directory_others_control(void **state)
{
	char dir[] = "/tmp/ebpfprof-test-spool-XXXXXX", link[64], err[256];
	struct spool s;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(link, sizeof(link), "%s-link", dir);
	assert_int_equal(symlink(dir, link), 0);
	assert_int_equal(spool_open(&s, link, 1 << 20, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "not a symlink"));
	chmod(dir, 0777);
	assert_int_equal(spool_open(&s, dir, 1 << 20, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "writable by no one else"));
	unlink(link);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(label_names_follow_the_rules),
		cmocka_unit_test(series_name_cleans_values),
		cmocka_unit_test(ids_from_cgroup_paths),
		cmocka_unit_test(spool_drops_the_oldest),
		cmocka_unit_test(spool_refuses_a_directory_others_control),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
