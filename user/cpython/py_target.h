/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Finding the CPython interpreter inside a process: which ELF file holds
 * _PyRuntime (the executable or a libpython3.X.so), where it is loaded,
 * which version it is, and the per-process configuration of the BPF walk.
 * Files are opened once, through /proc/PID/map_files or under the
 * target's /proc/PID/root, checked (regular file, the mapped inode) and then
 * used by descriptor only, so targets in chroots and other mount namespaces
 * are found the same way as host processes and their names never reach
 * a host file.
 */
#ifndef EP_PY_TARGET_H
#define EP_PY_TARGET_H
#include <limits.h>
#include <stdint.h>
#include <sys/types.h>
#include "ebpfprof.h"
#include "py_layout.h"

struct py_target {
	pid_t pid;
	char elf_path[PATH_MAX];	/* "/proc/self/fd/N": the ELF holding _PyRuntime */
	int elf_fd;			/* N, kept open by py_target.c (shared, not ours to close) */
	dev_t elf_dev;			/* what N was when found */
	ino_t elf_ino;
	char shown_path[PATH_MAX];	/* the same file as the target names it */
	int in_executable;		/* statically linked: _PyRuntime in the exe */
	int has_usdt;			/* .note.stapsdt present (python:gc__start...) */
	int has_symtab;			/* not stripped */
	uint64_t load_bias;		/* runtime address = link-time address + bias */
	uint64_t runtime_addr;		/* &_PyRuntime in the target */
	int major, minor, micro;
	int free_threaded;		/* the binary says Py_GIL_DISABLED (py_build.h) */
	char build_evidence[96];	/* what said so */
	struct py_layout layout;
	uint64_t interp_addr;		/* main interpreter, once initialised */
	struct ep_proc_cfg cfg;
};

enum py_target_status {
	PY_TARGET_OK = 0,
	PY_TARGET_NOT_PYTHON = -1,	/* no CPython runtime in the process */
	PY_TARGET_UNSUPPORTED = -2,	/* a CPython we do not support */
	PY_TARGET_GONE = -3,		/* the process no longer exists */
	PY_TARGET_NOT_READY = -4,	/* found, but the runtime is not initialised yet */
};

/* Finds the interpreter and its version. On failure err says why, in one line. */
int py_target_find(pid_t pid, struct py_target *t, char *err, size_t errlen);
/* Reads the main interpreter and fills t->cfg. PY_TARGET_NOT_READY until the
 * target has initialised Python. */
int py_target_prepare(struct py_target *t, char *err, size_t errlen);
/* The one way to a target every front end and follower takes: found, then
 * prepared. A failure to read it for want of privileges says which. */
int py_target_open(pid_t pid, struct py_target *t, char *err, size_t errlen);
/* 1 if the kernel can read labelled arguments of this target (--label). */
int py_target_label_ready(const struct py_target *t);
/* The link-time address of symbol `name` in the interpreter's ELF, or 0. */
uint64_t py_target_symbol(const struct py_target *t, const char *name);

#endif
