// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Reads of the target's memory. process_vm_readv needs no ptrace attach and
 * never stops the target; a read of an unmapped range simply fails. */
#define _GNU_SOURCE
#include <sys/uio.h>
#include "remote.h"

/* Nothing in a code object or frame is larger; a bigger request is a bug or
 * corrupt target data and must not turn into a huge read. */
#define REMOTE_READ_MAX	(16u << 20)

int remote_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { .iov_base = buf, .iov_len = len };
	struct iovec remote = { .iov_base = (void *)(uintptr_t)addr, .iov_len = len };

	if (len == 0)
		return 0;
	if (len > REMOTE_READ_MAX || addr == 0 || addr + len < addr)
		return -1;
	return process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -1;
}

int remote_read_u64(pid_t pid, uint64_t addr, uint64_t *out)
{
	return remote_read(pid, addr, out, sizeof(*out));
}

int remote_read_i32(pid_t pid, uint64_t addr, int32_t *out)
{
	return remote_read(pid, addr, out, sizeof(*out));
}
