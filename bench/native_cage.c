// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The cost of --native's cage (bench/native_cage.py builds this twice: with
 * this tree's user/native and with main's in-process unwinder, the same
 * native_unwind.h API). A thread of process PID is stopped once (ptrace),
 * its registers and 32 KiB of stack taken; then, in microseconds:
 *   first_unwind   the first unwind (cage: helper start, maps, module loads)
 *   first_names    naming each distinct module's first pc (its symbols loaded)
 *   unwind         one unwind of the same sample again (median of ROUNDS)
 *   name           one symbolize of a pc already named (median of ROUNDS)
 *   start          (cage only) a helper started and answering an empty report
 * printed as "key value" lines.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include "native_unwind.h"
#ifdef CAGE
#include <poll.h>
#include "native_cage.h"
#include "native_proto.h"
#endif

#define STACK_BYTES	32768
#define ROUNDS		2000

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return v[n / 2];
}

static int capture(pid_t pid, uint64_t *regs, uint8_t *stack, size_t *len)
{
	struct user_regs_struct r;
	struct iovec local, remote;
	int status;

	if (ptrace(PTRACE_SEIZE, pid, 0, 0) || ptrace(PTRACE_INTERRUPT, pid, 0, 0) ||
	    waitpid(pid, &status, __WALL) != pid || ptrace(PTRACE_GETREGS, pid, 0, &r))
		return -1;
	const uint64_t v[17] = { r.rax, r.rdx, r.rcx, r.rbx, r.rsi, r.rdi, r.rbp, r.rsp, r.r8, r.r9,
				 r.r10, r.r11, r.r12, r.r13, r.r14, r.r15, r.rip };
	memcpy(regs, v, sizeof(v));
	/* up to 32 KiB: less where the stack's top is nearer */
	for (*len = STACK_BYTES; *len; *len -= 4096) {
		local = (struct iovec){ stack, *len };
		remote = (struct iovec){ (void *)r.rsp, *len };
		if (process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)*len)
			break;
	}
	ptrace(PTRACE_DETACH, pid, 0, 0);
	return *len ? 0 : -1;
}

#ifdef CAGE
/* A helper started and answering an empty module list, then stopped. */
static double helper_start_us(void)
{
	static uint8_t msg[NP_MSG_MAX];
	struct native_cage c;
	struct pollfd pfd;
	double t0 = now_us(), t;

	if (native_cage_start(&c))
		return -1;
	pfd = (struct pollfd){ c.sock, POLLIN, 0 };
	if (np_send(c.sock, msg, np_encode_report(msg, NULL, 0), -1) || poll(&pfd, 1, 5000) != 1 ||
	    np_recv(c.sock, msg, NULL) < 0)
		t = -1;
	else
		t = now_us() - t0;
	native_cage_stop(&c);
	return t;
}
#endif

int main(int argc, char **argv)
{
	static uint8_t stack[STACK_BYTES];
	static double times[ROUNDS];
	uint64_t regs[17], pcs[NATIVE_MAX_FRAMES], lows[NATIVE_MAX_FRAMES];
	struct native_unwinder *u;
	struct native_sym sym;
	int n, i, j, nmods = 0;
	size_t len;
	double t0;

#ifdef CAGE
	if (argc == 2 && !strcmp(argv[1], NATIVE_CAGE_ARG))
		return native_cage_main();
#endif
	if (argc < 2 || capture(atoi(argv[1]), regs, stack, &len)) {
		fprintf(stderr, "usage: native_cage PID (a thread to stop): %s\n", strerror(errno));
		return 2;
	}
	u = native_unwinder_new(atoi(argv[1]));
	t0 = now_us();
	n = native_unwind(u, atoi(argv[1]), regs, stack, len, pcs, NATIVE_MAX_FRAMES, NULL);
	printf("first_unwind %.1f\nframes %d\n", now_us() - t0, n);
	t0 = now_us();
	for (i = 0; i < n; i++) {
		native_symbolize(u, pcs[i], &sym);
		for (j = 0; j < nmods && lows[j] != sym.mod_low; j++)
			;
		if (j == nmods)
			lows[nmods++] = sym.mod_low;
	}
	printf("first_names %.1f\nmodules %d\n", now_us() - t0, nmods);
	for (i = 0; i < ROUNDS; i++) {
		t0 = now_us();
		native_unwind(u, atoi(argv[1]), regs, stack, len, pcs, NATIVE_MAX_FRAMES, NULL);
		times[i] = now_us() - t0;
	}
	printf("unwind %.2f\n", median(times, ROUNDS));
	for (i = 0; i < ROUNDS; i++) {
		t0 = now_us();
		native_symbolize(u, pcs[i % n], &sym);
		times[i] = now_us() - t0;
	}
	printf("name %.2f\n", median(times, ROUNDS));
	native_unwinder_free(u);
#ifdef CAGE
	for (i = 0; i < 20; i++)
		times[i] = helper_start_us();
	printf("start %.1f\n", median(times, 20));
#endif
	return 0;
}
