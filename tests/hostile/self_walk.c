// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A hostile target that walks its own asyncio tasks (test_forged_tasks.py):
 * an embedded CPython runs the Python file argv[1], which forges its task
 * set, then ebpfprof's own walk (py_asyncio_tasks, the one dump --tasks
 * makes) reads this very process.
 *
 * Why itself: a walk of another process reads through the reader child,
 * ~20-30 us a read on the 2-core test VM, and ends at its 3 s deadline
 * after ~100,000 reads. Reading itself, a read is a copy, as fast as a walk
 * on a quick host: a walk that can be made to probe for ever does so here.
 *
 * Prints "tasks N truncated T reads R took S", then each task's name.
 */
#include <Python.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include "py_target.h"
#include "remote.h"
#include "py_asyncio.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	struct py_target t;
	struct py_tasks tasks;
	char err[512];
	FILE *script;
	double t0;
	size_t i;

	if (argc != 2 || !(script = fopen(argv[1], "r"))) {
		fprintf(stderr, "usage: self_walk FORGERY.py\n");
		return 2;
	}
	Py_Initialize();
	if (PyRun_SimpleFile(script, argv[1]))
		return 2;
	fclose(script);
	if (py_target_find(getpid(), &t, err, sizeof(err)) != PY_TARGET_OK ||
	    py_target_prepare(&t, err, sizeof(err)) != PY_TARGET_OK) {
		fprintf(stderr, "self_walk: %s\n", err);
		return 2;
	}
	remote_untrack(getpid());	/* its own memory read directly, not by the reader */
	t0 = now_s();
	if (py_asyncio_tasks(&t, 0, &tasks, err, sizeof(err))) {
		fprintf(stderr, "self_walk: %s\n", err);
		return 2;
	}
	printf("tasks %zu truncated %d reads %lu took %.3f\n", tasks.n, tasks.truncated,
	       tasks.reads, now_s() - t0);
	for (i = 0; i < tasks.n; i++)
		printf("%s\n", tasks.tasks[i].name);
	py_asyncio_tasks_free(&tasks);
	return 0;
}
