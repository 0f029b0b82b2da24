// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include "native_weave.h"
#include "py_stack.h"
#include "remote.h"
#include "thread_dump_native.h"

#define STOP_WAIT_MS	100

/* What is read of a thread while it is stopped. */
struct stopped {
	uint64_t regs[17];	/* DWARF order */
	uint8_t stack[EP_NATIVE_STACK_MAX];
	size_t stack_len;
	uint8_t entry[EP_MAX_FRAMES];
};

/*
 * Stops thread tid (seized: no signal is sent): 0 once it is stopped, with
 * *resend the signal to give back at detach. A stop may be ours (the
 * interrupt: PTRACE_EVENT_STOP in status >> 16) or a signal on its way to
 * the thread (seized, it stops for every one): that signal must be handed
 * back when we let go, or it is lost. -1 if it did not stop in time (it is
 * then still seized: see capture).
 */
static int stop_thread(pid_t tid, int *resend)
{
	struct timespec pause = { 0, 1000000 };
	int status, i;

	*resend = 0;
	if (ptrace(PTRACE_SEIZE, tid, 0, 0))
		return -1;
	if (ptrace(PTRACE_INTERRUPT, tid, 0, 0)) {
		ptrace(PTRACE_DETACH, tid, 0, 0);
		return -1;
	}
	for (i = 0; i < STOP_WAIT_MS; i++) {
		pid_t got = waitpid(tid, &status, __WALL | WNOHANG);

		if (got == tid) {
			if (!WIFSTOPPED(status))
				return -1;	/* gone */
			if (status >> 16 != PTRACE_EVENT_STOP)
				*resend = WSTOPSIG(status);
			return 0;
		}
		if (got < 0 && errno != EINTR)
			return -1;
		nanosleep(&pause, NULL);
	}
	return -1;
}

/* The user stack from sp: at most EP_NATIVE_STACK_MAX bytes, page by page
 * up to the first that cannot be read. */
static size_t read_stack(pid_t pid, uint64_t sp, uint8_t *buf)
{
	size_t got = 0, len;

	if (!remote_read(pid, sp, buf, EP_NATIVE_STACK_MAX))
		return EP_NATIVE_STACK_MAX;
	while (got < EP_NATIVE_STACK_MAX) {
		len = 4096 - ((sp + got) & 4095);
		if (len > EP_NATIVE_STACK_MAX - got)
			len = EP_NATIVE_STACK_MAX - got;
		if (remote_read(pid, sp + got, buf + got, len))
			break;
		got += len;
	}
	return got;
}

static void regs_in_dwarf_order(const struct user_regs_struct *r, uint64_t *out)
{
	const uint64_t v[17] = { r->rax, r->rdx, r->rcx, r->rbx, r->rsi, r->rdi, r->rbp, r->rsp,
				 r->r8, r->r9, r->r10, r->r11, r->r12, r->r13, r->r14, r->r15,
				 r->rip };

	memcpy(out, v, sizeof(v));
}

/* Reads the stopped thread: registers, stack, Python frames. 0 or -1. */
static int read_stopped(const struct py_target *t, struct dump_thread *th,
			struct ep_stack_event *ev, struct stopped *st)
{
	struct user_regs_struct regs;

	if (ptrace(PTRACE_GETREGS, th->tid, 0, &regs))
		return -1;
	regs_in_dwarf_order(&regs, st->regs);
	st->stack_len = read_stack(t->pid, regs.rsp, st->stack);
	memset(ev, 0, EP_STACK_EVENT_HDR_SIZE);
	memset(st->entry, 0, sizeof(st->entry));
	if (th->tstate)
		py_stack_walk_entries(t, th->tstate, ev, st->entry);
	return 0;
}

/* Weaves: ids below npy are Python frames, the others native ones. */
static int weave(const struct py_target *t, struct py_symbolizer *sym, struct dump_thread *th,
		 const struct ep_stack_event *ev, const struct stopped *st,
		 const uint64_t *pcs, int npcs, int complete, struct native_unwinder *u)
{
	uint32_t npy = ev->depth, py[EP_MAX_FRAMES], ids[EP_MAX_FRAMES + NATIVE_MAX_FRAMES];
	struct native_ref refs[NATIVE_MAX_FRAMES];
	uint32_t i, n;

	th->native = calloc(npcs ? npcs : 1, sizeof(*th->native));
	th->frames = calloc(npy + npcs + 1, sizeof(*th->frames));
	if (!th->native || !th->frames)
		return -1;
	for (i = 0; i < npy; i++)
		py[i] = i;
	for (i = 0; i < (uint32_t)npcs; i++) {
		native_symbolize(u, pcs[i], &th->native[i]);
		refs[i] = (struct native_ref){ npy + i, native_kind_of(&th->native[i], t->elf_ino) };
	}
	n = native_weave(py, st->entry, npy, refs, npcs, complete, ids,
			 EP_MAX_FRAMES + NATIVE_MAX_FRAMES);
	/* root first from the weave; the dump prints innermost first */
	for (i = 0; i < n; i++) {
		struct py_sym_frame *out = &th->frames[n - 1 - i];
		uint32_t id = ids[i];

		if (id < npy) {
			py_symbolizer_frame(sym, ev->frames[id].code, ev->frames[id].ident,
					    ev->frames[id].instr, out);
			continue;
		}
		out->name = th->native[id - npy].name;
		out->file = th->native[id - npy].file[0] ? th->native[id - npy].file : NULL;
		out->line = th->native[id - npy].line;
	}
	th->nframes = n;
	th->truncated = !!(ev->flags & EP_F_TRUNCATED);
	return 0;
}

/* What the tracer thread is given and gives back. */
struct capture {
	const struct py_target *t;
	struct dump_thread *th;
	struct ep_stack_event *ev;
	struct stopped *st;
	int rc;
};

/*
 * The tracer: seizes, reads, lets go. It is a thread of its own because a
 * tracee that did not stop in time (uninterruptible sleep) cannot be
 * detached while it runs: when the thread that seized it ends, the kernel
 * detaches it and drops the interrupt still pending, so it never freezes
 * on its way back.
 */
static void *capture(void *arg)
{
	struct capture *c = arg;
	int resend;

	c->rc = -1;
	if (stop_thread(c->th->tid, &resend))
		return NULL;
	c->rc = read_stopped(c->t, c->th, c->ev, c->st);
	ptrace(PTRACE_DETACH, c->th->tid, 0, (void *)(long)resend);
	return NULL;
}

static int stop_and_read(const struct py_target *t, struct dump_thread *th,
			 struct ep_stack_event *ev, struct stopped *st)
{
	struct capture c = { t, th, ev, st, -1 };
	pthread_t tracer;

	if (pthread_create(&tracer, NULL, capture, &c))
		return -1;
	pthread_join(tracer, NULL);
	return c.rc;
}

int dump_native_stack(const struct py_target *t, struct native_unwinder *u,
		      struct py_symbolizer *sym, struct dump_thread *th, struct ep_stack_event *ev)
{
	struct stopped *st = malloc(sizeof(*st));
	uint64_t pcs[NATIVE_MAX_FRAMES];
	int npcs, rc, complete = 0;

	if (!st || stop_and_read(t, th, ev, st)) {
		free(st);
		return -1;
	}
	npcs = native_unwind(u, th->tid, st->regs, st->stack, st->stack_len, pcs, NATIVE_MAX_FRAMES,
			     &complete);
	rc = weave(t, sym, th, ev, st, pcs, npcs, complete, u);
	free(st);
	return rc;
}
