// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * 3.14+: the _asyncio module describes its own task layout in an ELF
 * section of its own, .AsyncioDebug (_Py_AsyncioModuleDebugOffsets in
 * Modules/_asynciomodule.c): 13 u64 words, in three groups each led by the
 * size of the structure its offsets point into:
 *   task object:   size, task_name, task_awaited_by, task_is_task,
 *                  task_awaited_by_is_set, task_coro, task_node
 *   interpreter:   size, asyncio_tasks_head
 *   thread state:  size, asyncio_running_loop, asyncio_running_task,
 *                  asyncio_tasks_head
 * (the same 13 words in 3.14 and 3.15). Debian builds _asyncio as a module
 * of its own in 3.14 (mapped once asyncio is imported) and into the
 * interpreter in 3.15: both places are looked at. The section comes from a
 * file of the target: each offset must fit inside the size it comes with.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "clock.h"
#include "elf_syms.h"
#include "line_read.h"
#include "mapped_file.h"
#include "py_asyncio.h"

#define SECTION		".AsyncioDebug"
#define WORDS		13
/* No task, interpreter or thread state is anywhere near this large
 * (3.14: 168, 225864 and 936 bytes). */
#define SIZE_MAX_TASK	4096
#define SIZE_MAX_INTERP	(1u << 22)
#define SIZE_MAX_TSTATE	(1u << 16)
#define MAPS_LINES_MAX	65536

/* A field of `width` bytes at off lies within a structure of size bytes. */
static int fits(uint64_t off, unsigned width, uint64_t size)
{
	return off >= 16 && off + width <= size;
}

int py_asyncio_offsets_parse(const void *blob, size_t len, struct py_asyncio_offsets *o)
{
	uint64_t w[WORDS];

	if (len < sizeof(w))
		return -1;
	memcpy(w, blob, sizeof(w));
	*o = (struct py_asyncio_offsets){
		.task_size = w[0], .task_name = w[1], .task_awaited_by = w[2],
		.task_is_task = w[3], .task_awaited_by_is_set = w[4], .task_coro = w[5],
		.task_node = w[6], .interp_size = w[7], .interp_tasks_head = w[8],
		.tstate_size = w[9], .tstate_running_loop = w[10],
		.tstate_running_task = w[11], .tstate_tasks_head = w[12],
	};
	if (o->task_size > SIZE_MAX_TASK || o->interp_size > SIZE_MAX_INTERP ||
	    o->tstate_size > SIZE_MAX_TSTATE)
		return -1;
	return fits(o->task_name, 8, o->task_size) && fits(o->task_awaited_by, 8, o->task_size) &&
	       fits(o->task_is_task, 1, o->task_size) &&
	       fits(o->task_awaited_by_is_set, 1, o->task_size) &&
	       fits(o->task_coro, 8, o->task_size) && fits(o->task_node, 16, o->task_size) &&
	       fits(o->interp_tasks_head, 16, o->interp_size) &&
	       fits(o->tstate_running_loop, 8, o->tstate_size) &&
	       fits(o->tstate_running_task, 8, o->tstate_size) &&
	       fits(o->tstate_tasks_head, 16, o->tstate_size) ? 0 : -1;
}

static int from_fd(int fd, struct py_asyncio_offsets *out)
{
	uint8_t blob[WORDS * 8];
	struct elf_file *ef = elf_file_from_fd(fd);
	int n, r = -1;

	if (!ef)
		return -1;
	n = elf_section_copy(ef, SECTION, blob, sizeof(blob));
	if (n == (int)sizeof(blob))
		r = py_asyncio_offsets_parse(blob, sizeof(blob), out);
	elf_file_close(ef);
	return r;
}

/* "/.../_asyncio.cpython-314-x86_64-linux-gnu.so" and the like */
static int is_asyncio_module(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strncmp(base, "_asyncio.", 9) && strstr(base, ".so");
}

/*
 * What was learnt of a process, kept across walks (the recorder's <task
 * NAME> refresh walks every second): the offsets once found, else the
 * files already parsed for them. A target chooses the files named
 * _asyncio.*.so it maps, and how often: each is parsed once per process,
 * MODULE_FILES_MAX of them at most, and never past the walk's deadline
 * (a parse may read a section-name table of 64 MiB).
 */
#define MODULE_FILES_MAX	4
#define CACHED_PROCESSES	64

struct module_cache {
	pid_t pid;
	uint64_t runtime_addr;		/* with pid: this process, not a later one */
	int found, interp_tried;
	struct py_asyncio_offsets off;
	size_t ntried;
	struct { dev_t dev; ino_t ino; } tried[MODULE_FILES_MAX];
};
static struct module_cache cached[CACHED_PROCESSES];
static size_t next_evicted;

static struct module_cache *cache_of(const struct py_target *t)
{
	struct module_cache *c;
	size_t i;

	for (i = 0; i < CACHED_PROCESSES; i++)
		if (cached[i].pid == t->pid && cached[i].runtime_addr == t->runtime_addr)
			return &cached[i];
	c = &cached[next_evicted++ % CACHED_PROCESSES];
	*c = (struct module_cache){ .pid = t->pid, .runtime_addr = t->runtime_addr };
	return c;
}

/* 1 if the file was parsed for c already; else notes it (0), or -1 when
 * c has parsed all it may. */
static int tried_before(struct module_cache *c, const struct stat *st)
{
	size_t i;

	for (i = 0; i < c->ntried; i++)
		if (c->tried[i].dev == st->st_dev && c->tried[i].ino == st->st_ino)
			return 1;
	if (c->ntried >= MODULE_FILES_MAX)
		return -1;
	c->tried[c->ntried].dev = st->st_dev;
	c->tried[c->ntried++].ino = st->st_ino;
	return 0;
}

static int from_modules(const struct py_target *t, struct module_cache *c, uint64_t deadline_ns)
{
	char path[64], line[PATH_MAX + 128];
	struct mapped_file m;
	struct stat st;
	int lines = 0, fd, seen;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", t->pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (!c->found && c->ntried < MODULE_FILES_MAX && lines++ < MAPS_LINES_MAX &&
	       monotonic_ns() < deadline_ns && line_read(f, line, sizeof(line), NULL) >= 0) {
		if (mapped_file_parse(line, &m) || m.offset != 0 || !is_asyncio_module(m.path))
			continue;
		fd = mapped_file_open(t->pid, &m, &st);
		if (fd < 0)
			continue;
		seen = tried_before(c, &st);
		if (!seen)
			c->found = !from_fd(fd, &c->off);
		close(fd);
	}
	fclose(f);
	return c->found ? 0 : -1;
}

int py_asyncio_offsets_read(const struct py_target *t, uint64_t deadline_ns,
			    struct py_asyncio_offsets *out)
{
	struct module_cache *c = cache_of(t);
	struct stat st;

	/* the interpreter's descriptor is shared: check it is still the file */
	if (!c->found && !c->interp_tried && t->elf_fd > 0 && !fstat(t->elf_fd, &st) &&
	    st.st_dev == t->elf_dev && st.st_ino == t->elf_ino) {
		c->interp_tried = 1;
		c->found = !from_fd(t->elf_fd, &c->off);
	}
	if (!c->found && from_modules(t, c, deadline_ns))
		return -1;
	*out = c->off;
	return 0;
}
