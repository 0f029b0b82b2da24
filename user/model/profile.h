/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The recorded profile, as the writers see it: interned frames, and per
 * thread a time-ordered list of samples. A sample is a stack (root first)
 * with a start time and a weight, both in nanoseconds since the session
 * started, so every thread of every process shares one time axis.
 *
 * Samples are stored compactly (sample_log.h) and read back one at a time
 * through a sample_iter, or one thread at a time as an array.
 */
#ifndef EP_PROFILE_H
#define EP_PROFILE_H
#include <stddef.h>
#include <stdint.h>
#include "sample_log.h"
#include "states.h"	/* enum sample_state, sample_state_name() */
#include "task_spans.h"

enum frame_kind {
	FRAME_PYTHON = 0,	/* a Python function */
	FRAME_MARKER = 1,	/* [GC gen 2], [truncated], [GIL wait]... */
};

struct frame_info {
	char *name;		/* qualified name, UTF-8 */
	char *file;		/* file name, UTF-8, or NULL for markers */
	int line;		/* current line, or 0 when unknown */
	int kind;		/* enum frame_kind */
};

struct sample {
	uint64_t start_ns;	/* since the session start */
	uint64_t weight_ns;
	uint32_t *frames;	/* frame ids, root first; read back: the profile's,
				 * valid until profile_free(), never to be freed */
	uint32_t nframes;
	uint8_t state;		/* enum sample_state */
	uint8_t holds_gil;
	uint8_t exact;		/* start and weight measured (a whole interval), not nominal */
	uint32_t label;		/* --label: its value's id in the label table + 1, 0: none */
};

struct thread_profile {
	int pid;
	int tid;
	char *name;		/* Python thread name, or the kernel's comm */
	char *process;		/* process name for multi-process profiles */
	struct sample_log log;	/* the samples: read them with a sample_iter */
	size_t nsamples;
};

struct profile {
	struct frame_info *frames;
	size_t nframes, frames_cap;
	void *frame_index;	/* hash index: private to profile.c */
	void *stack_store;	/* every sample's stack, stored once: private to profile.c */
	struct thread_profile *threads;
	size_t nthreads, threads_cap;
	/* names of the threads with no samples (only off-CPU time without
	 * --idle), for the thread table; the writers show thread profiles only */
	struct thread_label {
		int pid, tid;
		char *name;
		char *process;		/* its process's comm */
	} *labels;
	size_t nlabels, labels_cap;
	uint64_t duration_ns;	/* session length: the common time axis */
	uint64_t start_monotonic_ns;	/* CLOCK_MONOTONIC at the session start */
	uint64_t start_realtime_ns;	/* CLOCK_REALTIME then, 0: unknown */
	unsigned rate_hz;
	const char *command;	/* what was profiled, for the writers' metadata */
	struct task_spans tasks;	/* record --tasks: suspended asyncio tasks */
};

void profile_init(struct profile *p);
void profile_free(struct profile *p);
/* Interns a frame; returns its id. Strings are copied. */
uint32_t profile_frame(struct profile *p, const char *name, const char *file,
		       int line, int kind);
struct thread_profile *profile_thread(struct profile *p, int pid, int tid);
/* A new thread (pid, tid), not looked up first: for a reader that knows each
 * of its threads is new (a scan per thread would be quadratic). */
struct thread_profile *profile_new_thread(struct profile *p, int pid, int tid);
/* The thread's profile if it has one, else NULL (never adds one). */
const struct thread_profile *profile_find_thread(const struct profile *p, int pid, int tid);
/* Names thread tid of pid for the thread table (copied); 0 or -1. */
int profile_label_thread(struct profile *p, int pid, int tid, const char *name,
			 const char *process);
/* The thread's name: its profile's, else its label's; NULL if neither. */
const char *profile_thread_name(const struct profile *p, int pid, int tid);
/* The name thread tid of process pid is shown by, everywhere (record, its
 * reports, top): its Python name, else its comm but for the main thread's
 * (the program's), else "MainThread" for the main thread (as threading
 * names it; it may not be imported); NULL when none is known. */
const char *thread_display_name(const char *py_name, const char *comm, int pid, int tid);
/* Its process's name, from its profile or its label; NULL if neither. */
const char *profile_thread_process(const struct profile *p, int pid, int tid);
/* Forgets every thread and its samples, and the tasks' spans; the frames
 * stay (--rotate). */
void profile_drop_threads(struct profile *p);
/* Appends a sample; frames (root first) are copied. */
int profile_add_sample(struct profile *p, struct thread_profile *t,
		       const struct sample *s);
/* Sorts every thread's samples by start time; writers expect this. */
void profile_sort(struct profile *p);
/* Sorts v by start time, stably. */
void profile_sort_samples(struct sample *v, size_t n);

/* Reads a thread's samples in order, with one sample of lookahead. */
struct sample_iter {
	const struct profile *p;
	struct sample_log_reader rd;
	struct sample ahead;
	int has_ahead;
};

void sample_iter_init(struct sample_iter *it, const struct profile *p,
		      const struct thread_profile *t);
/* The next sample into *s: 1, or 0 at the end. */
int sample_iter_next(struct sample_iter *it, struct sample *s);
/* The sample the next call will return, or NULL at the end. */
const struct sample *sample_iter_peek(const struct sample_iter *it);

/* The thread's samples as a malloc'ed array of t->nsamples, for the caller
 * to free as soon as it is done with them (one thread at a time); NULL with
 * errno ENOMEM. */
struct sample *profile_thread_samples(const struct profile *p, const struct thread_profile *t);
/* Replaces the thread's samples with v[0..n) (frames copied). 0, or -1 with
 * errno ENOMEM and the samples unchanged. */
int profile_thread_set_samples(struct profile *p, struct thread_profile *t,
			       const struct sample *v, size_t n);
/* Forgets the thread's first n samples. 0, or -1 (ENOMEM, nothing forgotten). */
int profile_thread_forget(struct profile *p, struct thread_profile *t, size_t n);

/* Where the sample's time ends: start + weight, UINT64_MAX if that overflows. */
uint64_t sample_end(const struct sample *s);
/*
 * Where the sample's time ends on its thread's timeline, laid from start (its
 * own, or the previous sample's end if later): a sampled one's whole weight
 * on, so it loses no time to the next (UINT64_MAX if that overflows); an
 * exact one's own end, or the next sample's start (next: NULL for the last).
 */
uint64_t sample_placed_end(const struct sample *s, uint64_t start, const struct sample *next);
/* Stacks in frame id order, a stack before the longer ones it starts. */
int profile_stack_cmp(const uint32_t *a, uint32_t na, const uint32_t *b, uint32_t nb);
/* How many samples at the profile's rate the weight stands for; at least one. */
uint64_t profile_sample_count(const struct profile *p, const struct sample *s);
/* The threads in the writers' order: by process, its main thread first, then
 * by tid. A malloc'ed array of p->nthreads pointers, or NULL (ENOMEM). */
const struct thread_profile **profile_sorted_threads(const struct profile *p);
/* 1 if the threads are of more than one process. */
int profile_many_processes(const struct profile *p);

#endif
