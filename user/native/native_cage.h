/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * --native's cage: the target's files are parsed (libelf, libdw, libdwfl:
 * native_dwfl.h) in a helper process, never in ebpfprof's own. The helper is
 * ebpfprof itself run again (main() hands NATIVE_CAGE_ARG to
 * native_cage_main) from a fork; before it reads a message it drops to an
 * unused uid and gid of its own with no capability (no_new_privs), takes
 * RLIMIT_AS, RLIMIT_CPU, RLIMIT_NOFILE and RLIMIT_FSIZE limits, gives up the
 * file system (Landlock without any rule) and refuses, by seccomp, every
 * system call that opens a path, starts a process or talks to another one.
 * It gets module files only as descriptors ebpfprof opened (mapped_file.h)
 * and answers over a socket (native_proto.h); ebpfprof kills it when one
 * question costs it more than NATIVE_CAGE_CPU_MS of CPU, or is not answered
 * within NATIVE_CAGE_WALL_MS (CPU time, not wall time, is what a hostile
 * file makes it burn; wall time alone would also kill a helper that only
 * waits for a CPU on a loaded machine).
 */
#ifndef EP_NATIVE_CAGE_H
#define EP_NATIVE_CAGE_H
#include <stdint.h>
#include <sys/types.h>

#define NATIVE_CAGE_ARG		"--internal-native-cage"
/* CPU time and wall time one question may take in the helper, files loaded
 * included. */
#define NATIVE_CAGE_CPU_MS	1000
#define NATIVE_CAGE_WALL_MS	5000

struct native_cage {
	pid_t pid;			/* 0: none running */
	int sock;
	volatile uint64_t *progress;	/* shared: the pc the helper works on */
};

/* Starts a helper: 0, or -1 with errno. */
int native_cage_start(struct native_cage *c);
/* Kills and reaps it (nothing if none runs). */
void native_cage_stop(struct native_cage *c);
/* The helper's side: serves requests until its parent goes; the exit code. */
int native_cage_main(void);

#endif
