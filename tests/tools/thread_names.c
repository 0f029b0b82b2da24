// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * thread_names PID: prints "ident<TAB>name" for each Python thread of a
 * running CPython process, read by py_thread_names() from its memory.
 * A test tool for user/cpython/py_threads.c (tests/tools/thread_names_target.py
 * is its target).
 *
 * Finds _PyRuntime by itself: the first mapping of each file whose name
 * says python (the executable or libpython3.X.so), opened through
 * /proc/PID/map_files so that chrooted targets work too, and its symbol
 * looked up with libelf. The version comes from that file name.
 *
 * Build (from the top of the tree):
 *   gcc -Wall -Wextra -O2 -Iinclude -Iuser/{base,cpython,model,output,diff,record,live,cli} -o thread_names tests/tools/thread_names.c \
 *       user/cpython/py_threads.c user/cpython/py_symbolizer.c user/cpython/py_linetable.c user/cpython/py_str.c \
 *       user/base/remote.c user/base/elf_syms.c user/cpython/py_layout_table.c \
 *       user/cpython/py_debug_offsets.c -lelf
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "elf_syms.h"
#include "py_layout.h"
#include "py_threads.h"
#include "remote.h"

#define MAX_THREADS	1024

struct found {
	uint64_t runtime;
	int major, minor;
	char path[PATH_MAX];
};

/* "3.X" from python3.X, python3.Xd, libpython3.X.so.1.0. */
static int version_of(const char *path, int *major, int *minor)
{
	const char *base = strrchr(path, '/');
	const char *p = strstr(base ? base + 1 : path, "python");

	return p && sscanf(p + 6, "%d.%d", major, minor) == 2 ? 0 : -1;
}

/* 1 if the mapped file at [start, end) holds _PyRuntime. */
static int try_file(pid_t pid, uint64_t start, uint64_t end, struct found *f)
{
	char mf[96];
	struct elf_file *ef;
	uint64_t sym, bias;

	snprintf(mf, sizeof(mf), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, pid, start, end);
	ef = elf_file_open(mf);
	if (!ef)
		return 0;
	if (elf_symbol(ef, "_PyRuntime", &sym, NULL)) {
		elf_file_close(ef);
		return 0;
	}
	bias = elf_is_fixed(ef) ? 0 : start - elf_first_load_vaddr(ef);
	f->runtime = sym + bias;
	elf_file_close(ef);
	return 1;
}

static int find_runtime(pid_t pid, struct found *f)
{
	char maps[64], line[PATH_MAX + 128];
	unsigned long long start, end, off;
	int at, ok = 0;
	FILE *fp;

	snprintf(maps, sizeof(maps), "/proc/%d/maps", pid);
	fp = fopen(maps, "re");
	if (!fp)
		return -1;
	while (!ok && fgets(line, sizeof(line), fp)) {
		at = 0;
		line[strcspn(line, "\n")] = 0;
		if (sscanf(line, "%llx-%llx %*s %llx %*s %*s %n", &start, &end, &off, &at) < 3 ||
		    !at || line[at] != '/' || off != 0 ||
		    version_of(line + at, &f->major, &f->minor))
			continue;
		snprintf(f->path, sizeof(f->path), "%s", line + at);
		ok = try_file(pid, start, end, f);
	}
	fclose(fp);
	return ok ? 0 : -1;
}

int main(int argc, char **argv)
{
	static struct py_thread_name names[MAX_THREADS];
	const struct py_layout *table;
	struct py_layout L;
	struct found f;
	uint64_t interp;
	pid_t pid;
	int i, n;

	if (argc != 2 || (pid = atoi(argv[1])) <= 0) {
		fprintf(stderr, "usage: thread_names PID\n");
		return 2;
	}
	if (find_runtime(pid, &f)) {
		fprintf(stderr, "thread_names: no _PyRuntime in a python file mapped by %d\n", pid);
		return 1;
	}
	table = py_layout_for_version(f.major, f.minor);
	if (!table) {
		fprintf(stderr, "thread_names: %s: CPython %d.%d not supported\n",
			f.path, f.major, f.minor);
		return 1;
	}
	L = *table;
	/* The profiler reads 3.13+ layouts from the target itself; so do we. */
	if (f.minor >= 13 && py_debug_offsets_read(pid, f.runtime, &L)) {
		fprintf(stderr, "thread_names: _Py_DebugOffsets unusable, using the table\n");
		L = *table;
	}
	if (remote_read_u64(pid, f.runtime + L.runtime_interpreters_head, &interp) || !interp) {
		fprintf(stderr, "thread_names: cannot read the main interpreter of %d\n", pid);
		return 1;
	}
	n = py_thread_names(pid, &L, interp, names, MAX_THREADS);
	if (n < 0) {
		fprintf(stderr, "thread_names: cannot read threading._active of %d (%s, %d.%d)\n",
			pid, f.path, f.major, f.minor);
		return 1;
	}
	for (i = 0; i < n; i++)
		printf("%" PRIu64 "\t%s\n", names[i].ident, names[i].name);
	return 0;
}
