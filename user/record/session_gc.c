// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The GC probes of each interpreter file: USDT, else uprobes on the collector. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "grow.h"
#include "py_target.h"
#include "session_priv.h"

/* Collector functions that take the generation as their second argument,
 * newest first; 3.8's collect() only exists as constprop clones whose
 * arguments cannot be trusted, so it gets no uprobe. */
static const char *const collector_functions[] = {
	"gc_collect_main",	/* 3.10 to 3.14 */
	"collect",		/* 3.9 */
};

static int keep_gc_link(struct session *s, struct bpf_link *link)
{
	if (link && GROW_ARRAY(s->gc_links, s->gc_links_cap, s->ngc_links + 1)) {
		bpf_link__destroy(link);
		return -1;
	}
	if (!link)
		return -1;
	s->gc_links[s->ngc_links++] = link;
	return 0;
}

/* Keeps both links of a probe pair, or neither: half a pair would leave
 * collections that start and never end (or the reverse). */
static int keep_gc_pair(struct session *s, struct bpf_link *start, struct bpf_link *done)
{
	if (!start || !done) {
		bpf_link__destroy(start);
		bpf_link__destroy(done);
		return -1;
	}
	keep_gc_link(s, start);
	return keep_gc_link(s, done);
}

/*
 * The GC probes are attached to the interpreter's file for every process
 * (pid -1), and the programs keep only profiled processes (procs). Given a
 * pid, the kernel's uprobe is a perf event of that task, and perf switches a
 * task's events out and in with the task: measured on a two-thread ping-pong
 * pinned to one CPU, that made every context switch ~2 us dearer (+20%)
 * while not one collection ran (a uprobe_multi link with a pid did the
 * same). The price of the wide attach: other processes running the same
 * file pay the probes' traps on their collections (~2.5 us each here), the
 * programs returning at once for them.
 */
#define GC_PROBE_PID	(-1)

static int attach_gc_usdt(struct session *s, const struct py_target *t)
{
	struct bpf_link *start, *done;

	start = bpf_program__attach_usdt(s->skel->progs.gc_start_usdt, GC_PROBE_PID, t->elf_path,
					 "python", "gc__start", NULL);
	done = bpf_program__attach_usdt(s->walk.gc_done_usdt, GC_PROBE_PID, t->elf_path,
					"python", "gc__done", NULL);
	return keep_gc_pair(s, start, done);
}

static int attach_gc_uprobe(struct session *s, const struct py_target *t, const char *fn)
{
	LIBBPF_OPTS(bpf_uprobe_opts, entry, .func_name = fn);
	LIBBPF_OPTS(bpf_uprobe_opts, ret, .func_name = fn, .retprobe = true);
	struct bpf_link *start, *done;

	start = bpf_program__attach_uprobe_opts(s->skel->progs.gc_start_uprobe, GC_PROBE_PID,
						t->elf_path, 0, &entry);
	done = bpf_program__attach_uprobe_opts(s->walk.gc_done_uprobe, GC_PROBE_PID,
					       t->elf_path, 0, &ret);
	return keep_gc_pair(s, start, done);
}

/* The collector function t's symbols name, or NULL. */
static const char *collector_of(const struct py_target *t)
{
	size_t i;

	if (!t->has_symtab)
		return NULL;
	for (i = 0; i < sizeof(collector_functions) / sizeof(collector_functions[0]); i++)
		if (py_target_symbol(t, collector_functions[i]))
			return collector_functions[i];
	return NULL;
}

unsigned session_gc_probes_for(const struct py_target *t)
{
	if (t->has_usdt)
		return 1u << GC_PROBE_USDT;
	return 1u << (collector_of(t) ? GC_PROBE_UPROBE : GC_PROBE_NONE);
}

/* The programs of a kind are there unless the recording said at load that
 * none of its targets needs them (session_opts.gc_probes). */
static int loaded(const struct bpf_program *prog)
{
	return bpf_program__fd(prog) >= 0;
}

static enum gc_probe_kind attach_gc_probes(struct session *s, const struct py_target *t)
{
	const char *collector = collector_of(t);

	if (t->has_usdt && loaded(s->walk.gc_done_usdt) && !attach_gc_usdt(s, t))
		return GC_PROBE_USDT;
	if (collector && loaded(s->walk.gc_done_uprobe) && !attach_gc_uprobe(s, t, collector))
		return GC_PROBE_UPROBE;
	return GC_PROBE_NONE;
}

/* With probes, the process gets a GC clock: GIL waits are then split
 * exactly in the kernel (see ep_gc_clock_read). Without a clock (map full:
 * more than its 256 processes) its GIL waits are classified by the
 * collecting flag instead, as for a process without probes; the summary
 * says so through EP_CNT_MAP_FULL. */
/* Probes once per interpreter file: attached for every process, a second
 * attach would run the programs twice per collection. */
static enum gc_probe_kind probe_file(struct session *s, const struct py_target *t)
{
	enum gc_probe_kind kind;
	size_t i;

	for (i = 0; i < s->ngc_files; i++)
		if (s->gc_files[i].dev == t->elf_dev && s->gc_files[i].ino == t->elf_ino)
			return s->gc_files[i].kind;
	kind = attach_gc_probes(s, t);
	if (kind != GC_PROBE_NONE && !GROW_ARRAY(s->gc_files, s->gc_files_cap, s->ngc_files + 1))
		s->gc_files[s->ngc_files++] = (struct gc_file){ t->elf_dev, t->elf_ino, kind };
	return kind;
}

__u16 session_gc_slot(const struct session *s, pid_t pid)
{
	int i;

	for (i = 0; i < EP_GC_CLOCK_SLOTS; i++)
		if (s->gc_slot_pid[i] == pid)
			return i + 1;
	return 0;
}

/* A free GC clock slot for pid, its clock at 0; its number + 1, 0 if none. */
static __u16 take_gc_slot(struct session *s, pid_t pid)
{
	struct ep_gc_clock fresh = { .pid = pid };
	__u16 slot = session_gc_slot(s, pid);
	__u32 i;

	if (slot)
		return slot;
	slot = session_gc_slot(s, 0);
	if (!slot) {
		errno = ENOSPC;
		return 0;
	}
	i = slot - 1;
	if (bpf_map_update_elem(bpf_map__fd(s->skel->maps.gc_clocks), &i, &fresh, BPF_ANY))
		return 0;
	s->gc_slot_pid[i] = pid;
	return slot;
}

/* The slot goes to the process's configuration, if it is in the map already
 * (else session_add_process puts it there). */
static void set_cfg_gc_slot(struct session *s, pid_t pid, __u16 slot)
{
	int fd = bpf_map__fd(s->skel->maps.procs);
	struct ep_proc_cfg cfg;
	__u32 key = pid;

	if (!bpf_map_lookup_elem(fd, &key, &cfg) && cfg.gc_slot != slot) {
		cfg.gc_slot = slot;
		bpf_map_update_elem(fd, &key, &cfg, BPF_EXIST);
	}
}

enum gc_probe_kind session_attach_gc(struct session *s, const struct py_target *t)
{
	enum gc_probe_kind kind = probe_file(s, t);
	__u16 slot;

	if (kind == GC_PROBE_NONE)
		return kind;
	slot = take_gc_slot(s, t->pid);
	if (!slot) {
		fprintf(stderr, "ebpfprof: warning: process %d: GC clock not kept (%s): its GIL waits behind collections are classified by the collecting flag\n",
			t->pid, strerror(errno));
		return kind;
	}
	set_cfg_gc_slot(s, t->pid, slot);
	return kind;
}

void session_free_gc_slot(struct session *s, pid_t pid)
{
	struct ep_gc_clock none = { 0 };
	__u16 slot = session_gc_slot(s, pid);
	__u32 i;

	if (!pid || !slot)
		return;
	i = slot - 1;
	bpf_map_update_elem(bpf_map__fd(s->skel->maps.gc_clocks), &i, &none, BPF_ANY);
	s->gc_slot_pid[i] = 0;
}

const char *gc_probe_name(enum gc_probe_kind k)
{
	switch (k) {
	case GC_PROBE_USDT:
		return "USDT probes";
	case GC_PROBE_UPROBE:
		return "uprobes on the collector";
	default:
		return "the collecting flag only";
	}
}


static void *destroy_link(void *link)
{
	bpf_link__destroy(link);
	return NULL;
}

/* Each uprobe's detach waits for the kernel's grace period (60-70 ms a
 * link here): the links go at once, each in a thread of its own, not one
 * after the other at the end of every recording. */
void session_destroy_gc_links(struct session *s)
{
	pthread_t *threads = calloc(s->ngc_links, sizeof(*threads));
	unsigned char *started = calloc(s->ngc_links, 1);
	size_t i;

	for (i = 0; i < s->ngc_links; i++) {
		if (threads && started &&
		    !pthread_create(&threads[i], NULL, destroy_link, s->gc_links[i]))
			started[i] = 1;
		else
			bpf_link__destroy(s->gc_links[i]);
	}
	for (i = 0; i < s->ngc_links; i++)
		if (started && started[i])
			pthread_join(threads[i], NULL);
	free(threads);
	free(started);
	free(s->gc_links);
	s->gc_links = NULL;
	s->ngc_links = 0;
}
