// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "clock.h"
#include "elf_syms.h"
#include "line_read.h"
#include "mapped_file.h"
#include "printable.h"
#include "procfs.h"
#include "py_build.h"
#include "py_target.h"
#include "remote.h"

/*
 * The files of the target are opened once each and then used by
 * descriptor only, here and by libbpf (as /proc/self/fd/N): a name the
 * target controls is never looked up twice. Descriptors are shared by
 * every process mapping the same file and kept for the attaches that
 * follow a discovery; the oldest is closed when the table is full.
 */
#define ELF_FDS_MAX	32

static struct elf_fd_slot {
	int fd;			/* 0: free (stdin is never one of ours) */
	dev_t dev;
	ino_t ino;
} elf_fds[ELF_FDS_MAX];
static unsigned elf_fds_next;

/* Keeps fd (a regular file of st), or a descriptor already kept for the
 * same file; returns the descriptor to use. */
static int keep_elf_fd(int fd, const struct stat *st)
{
	struct elf_fd_slot *slot;
	int i;

	for (i = 0; i < ELF_FDS_MAX; i++) {
		if (elf_fds[i].fd > 0 && elf_fds[i].dev == st->st_dev &&
		    elf_fds[i].ino == st->st_ino) {
			close(fd);
			return elf_fds[i].fd;
		}
	}
	slot = &elf_fds[elf_fds_next++ % ELF_FDS_MAX];
	if (slot->fd > 0)
		close(slot->fd);
	*slot = (struct elf_fd_slot){ .fd = fd, .dev = st->st_dev, .ino = st->st_ino };
	return fd;
}

/* The ELF of the target's interpreter, if its kept descriptor still is the
 * file found (the table may have closed it and the number been reused). */
static struct elf_file *target_elf(const struct py_target *t)
{
	struct stat st;

	if (t->elf_fd <= 0 || fstat(t->elf_fd, &st) || st.st_dev != t->elf_dev ||
	    st.st_ino != t->elf_ino)
		return NULL;
	return elf_file_from_fd(t->elf_fd);
}

static int is_libpython(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strncmp(base, "libpython", 9);
}

/* Examines one mapped file; 1 if it holds _PyRuntime (t is filled). */
static int try_candidate(struct py_target *t, const struct mapped_file *m, uint64_t map_base)
{
	struct py_build build;
	struct elf_file *ef;
	uint64_t runtime;
	struct stat st;
	int fd = mapped_file_open(t->pid, m, &st);

	if (fd < 0)
		return 0;
	ef = elf_file_from_fd(fd);
	if (!ef || elf_symbol(ef, "_PyRuntime", &runtime, NULL)) {
		elf_file_close(ef);
		close(fd);
		return 0;
	}
	elf_file_close(ef);
	t->elf_fd = keep_elf_fd(fd, &st);
	t->elf_dev = st.st_dev;
	t->elf_ino = st.st_ino;
	snprintf(t->elf_path, sizeof(t->elf_path), "/proc/self/fd/%d", t->elf_fd);
	ef = target_elf(t);
	if (!ef)
		return 0;
	snprintf(t->shown_path, sizeof(t->shown_path), "%s", m->path);
	t->load_bias = elf_is_fixed(ef) ? 0 : map_base - elf_first_load_vaddr(ef);
	t->runtime_addr = runtime + t->load_bias;
	t->has_usdt = elf_has_usdt(ef);
	t->has_symtab = elf_has_symtab(ef);
	py_build_detect(ef, t->shown_path, &build);
	t->major = build.major;
	t->minor = build.minor;
	t->micro = build.micro;
	t->free_threaded = build.free_threaded;
	snprintf(t->build_evidence, sizeof(t->build_evidence), "%s", build.evidence);
	elf_file_close(ef);
	return 1;
}

/*
 * The search among the target's files, bounded: each distinct file (device
 * and inode) is examined once however its mappings are named and ordered
 * (two names alternating are still two files), at most PY_CANDIDATES_MAX
 * files per search, and none after PY_SCAN_NS. Each examination is bounded
 * by elf_syms.c (its header judged before libelf allocates, ELF_LOAD_MAX
 * bytes of sections). A target mapping more files named libpython* than
 * that before its interpreter is refused: the names are its choice.
 */
#define PY_CANDIDATES_MAX	16
#define PY_SCAN_NS		(3ull * 1000000000)

struct scan {
	struct { dev_t dev; unsigned long ino; } tried[PY_CANDIDATES_MAX];
	unsigned ntried;
	int saw_python_name;
	enum { SCAN_DONE, SCAN_TOO_MANY, SCAN_TOO_LONG } stop;
	uint64_t deadline_ns;
};

/* Whether m's file may be examined now: 0 and noted if so; 1 if it was
 * already (skip it); -1 if the search must end (s->stop says why). */
static int scan_admit(struct scan *s, const struct mapped_file *m)
{
	unsigned i;

	for (i = 0; i < s->ntried; i++)
		if (s->tried[i].dev == m->dev && s->tried[i].ino == m->inode)
			return 1;
	if (s->ntried == PY_CANDIDATES_MAX)
		s->stop = SCAN_TOO_MANY;
	else if (monotonic_ns() > s->deadline_ns)
		s->stop = SCAN_TOO_LONG;
	if (s->stop != SCAN_DONE)
		return -1;
	s->tried[s->ntried].dev = m->dev;
	s->tried[s->ntried++].ino = m->inode;
	return 0;
}

/* Walks the maps: the executable and any libpython3.X.so are candidates. */
static int scan_maps(struct py_target *t, const char *exe, struct scan *s)
{
	char path[64], line[PATH_MAX + 128];
	struct mapped_file m;
	FILE *f;
	int found = 0, is_exe, admit;

	snprintf(path, sizeof(path), "/proc/%d/maps", t->pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	s->deadline_ns = monotonic_ns() + PY_SCAN_NS;
	/* a line longer than line (a path the target made long) is skipped
	 * whole: its tail, text the target chose, is never taken for a line */
	while (!found && line_read(f, line, sizeof(line), NULL) >= 0) {
		if (mapped_file_parse(line, &m) || m.offset != 0)
			continue;
		if (strstr(m.path, "python") || strstr(m.path, "pypy"))
			s->saw_python_name = 1;
		is_exe = exe[0] && !strncmp(m.path, exe, strlen(exe)) &&
			 (!m.path[strlen(exe)] || (m.deleted && !strcmp(m.path + strlen(exe), MAPPED_DELETED_SUFFIX)));
		if (!is_exe && !is_libpython(m.path))
			continue;
		admit = scan_admit(s, &m);
		if (admit < 0)
			break;
		if (admit)
			continue;
		t->in_executable = is_exe;
		found = try_candidate(t, &m, m.start);
	}
	fclose(f);
	return found;
}

int py_target_find(pid_t pid, struct py_target *t, char *err, size_t errlen)
{
	char path[64], exe[PATH_MAX] = "", comm[64];
	const struct py_layout *layout;
	struct scan scan = { .stop = SCAN_DONE };
	int found;
	ssize_t n;

	memset(t, 0, sizeof(*t));
	t->pid = pid;
	/* what is read from here on is of this process, not a later one with its pid */
	if (remote_track(pid)) {
		snprintf(err, errlen, "process %d exited", pid);
		return PY_TARGET_GONE;
	}
	procfs_comm(pid, 0, comm, sizeof(comm));
	if (!comm[0])
		snprintf(comm, sizeof(comm), "?");
	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	if (n < 0 && errno == ENOENT) {
		snprintf(err, errlen, "process %d exited", pid);
		return PY_TARGET_GONE;
	}
	exe[n > 0 ? n : 0] = 0;
	if (strlen(exe) > 10 && !strcmp(exe + strlen(exe) - 10, " (deleted)"))
		exe[strlen(exe) - 10] = 0;
	found = scan_maps(t, exe, &scan);
	if (!remote_same_process(pid)) {
		snprintf(err, errlen, "process %d exited", pid);
		return PY_TARGET_GONE;
	}
	if (found < 0) {
		snprintf(err, errlen, "cannot read /proc/%d/maps: %s", pid, strerror(errno));
		return errno == ENOENT || errno == ESRCH ? PY_TARGET_GONE : PY_TARGET_NOT_PYTHON;
	}
	if (!found && scan.stop != SCAN_DONE) {
		snprintf(err, errlen, "process %d (%s): no _PyRuntime found in the first %u files it maps named like an interpreter, and no more are examined (%s %d)",
			 pid, comm, scan.ntried, scan.stop == SCAN_TOO_MANY ? "files examined at most:" :
			 "seconds the search may take:", scan.stop == SCAN_TOO_MANY ? PY_CANDIDATES_MAX :
			 (int)(PY_SCAN_NS / 1000000000));
		return PY_TARGET_NOT_PYTHON;
	}
	if (!found) {
		snprintf(err, errlen, "process %d (%s) is not a CPython process: no _PyRuntime in %s%s (ebpfprof profiles CPython %s)",
			 pid, comm, exe[0] ? exe : "its executable",
			 scan.saw_python_name ? " or a mapped libpython" : "", py_supported_versions());
		return PY_TARGET_NOT_PYTHON;
	}
	if (t->free_threaded) {
		snprintf(err, errlen, "process %d runs a free-threaded CPython build (%s: %s), which is not supported yet; supported: CPython %s with the GIL",
			 pid, t->shown_path, t->build_evidence, py_supported_versions());
		return PY_TARGET_UNSUPPORTED;
	}
	layout = t->major == 3 ? py_layout_for_version(t->major, t->minor) : NULL;
	if (!layout) {
		if (t->major < 0)
			snprintf(err, errlen, "process %d: cannot tell the CPython version of %s; supported: CPython %s",
				 pid, t->shown_path, py_supported_versions());
		else
			snprintf(err, errlen, "process %d runs CPython %d.%d, which is not supported; supported: CPython %s",
				 pid, t->major, t->minor, py_supported_versions());
		return PY_TARGET_UNSUPPORTED;
	}
	t->layout = *layout;
	return PY_TARGET_OK;
}

uint64_t py_target_symbol(const struct py_target *t, const char *name)
{
	struct elf_file *ef = target_elf(t);
	uint64_t value = 0;

	if (ef && elf_symbol(ef, name, &value, NULL))
		value = 0;
	elf_file_close(ef);
	return value;
}
