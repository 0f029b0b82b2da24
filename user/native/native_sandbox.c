// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include "native_sandbox.h"

/* Module files stay open in libdwfl: one a module, and a few more. */
#define SANDBOX_NOFILE		1100

static int limit(int resource, rlim_t value)
{
	struct rlimit rl = { value, value };

	return setrlimit(resource, &rl);
}

static int set_limits(void)
{
	/* AddressSanitizer reserves terabytes of shadow: no address cap then */
#ifndef __SANITIZE_ADDRESS__
	if (limit(RLIMIT_AS, NATIVE_SANDBOX_AS_MAX))
		return -1;
#endif
	return limit(RLIMIT_CPU, NATIVE_SANDBOX_CPU_S) || limit(RLIMIT_NOFILE, SANDBOX_NOFILE) ||
	       limit(RLIMIT_FSIZE, 0) || limit(RLIMIT_CORE, 0) || limit(RLIMIT_NPROC, 0);
}

static int become(uid_t id)
{
	if (setresgid(id, id, id) || setresuid(id, id, id))
		return -1;
	return geteuid() == id && getegid() == id ? 0 : -1;
}

/* Root becomes an id of its own (losing every capability), or nobody in a
 * user namespace that does not map that id; anyone else stays who they are,
 * without capabilities already (no_new_privs at exec). */
static int drop_identity(void)
{
	if (geteuid() != 0)
		return 0;
	if (setgroups(0, NULL))
		return -1;
	return become(NATIVE_SANDBOX_ID_BASE + (getpid() & 0xffff)) && become(NATIVE_SANDBOX_NOBODY) ? -1 : 0;
}

/* Landlock's ruleset, as of ABI 6 (older kernels read a prefix of it). */
struct landlock_attr {
	uint64_t handled_access_fs, handled_access_net, scoped;
};

/* A Landlock domain without any rule: no path can be opened, created or
 * executed, no TCP port bound or reached, no signal sent outside it.
 * Where the kernel has no Landlock, seccomp alone refuses the opening. */
static int forbid_file_system(void)
{
	struct landlock_attr attr = { 0 };
	long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, 1 /* VERSION */);
	size_t size = offsetof(struct landlock_attr, handled_access_net);
	int fd, rc;

	if (abi < 1)
		return 0;
	attr.handled_access_fs = (1ull << 13) - 1;	/* ABI 1: execute .. make_sym */
	if (abi >= 2)
		attr.handled_access_fs |= 1ull << 13;	/* refer */
	if (abi >= 3)
		attr.handled_access_fs |= 1ull << 14;	/* truncate */
	if (abi >= 5)
		attr.handled_access_fs |= 1ull << 15;	/* ioctl_dev */
	if (abi >= 4) {
		attr.handled_access_net = 3;		/* bind, connect TCP */
		size = offsetof(struct landlock_attr, scoped);
	}
	if (abi >= 6) {
		attr.scoped = 3;			/* abstract sockets, signals */
		size = sizeof(attr);
	}
	fd = syscall(SYS_landlock_create_ruleset, &attr, size, 0);
	if (fd < 0)
		return -1;
	rc = syscall(SYS_landlock_restrict_self, fd, 0);
	close(fd);
	return rc ? -1 : 0;
}

/* System calls the helper never needs: refused with EPERM. */
static const int refused[] = {
	SYS_open, SYS_openat, SYS_openat2, SYS_creat, SYS_open_by_handle_at, SYS_name_to_handle_at,
	SYS_execve, SYS_execveat, SYS_fork, SYS_vfork, SYS_clone, SYS_clone3,
	SYS_socket, SYS_socketpair, SYS_connect, SYS_bind, SYS_listen, SYS_accept, SYS_accept4,
	SYS_ptrace, SYS_process_vm_readv, SYS_process_vm_writev, SYS_kill, SYS_tkill,
	SYS_pidfd_open, SYS_pidfd_getfd, SYS_pidfd_send_signal,
	SYS_mknod, SYS_mknodat, SYS_link, SYS_linkat, SYS_symlink, SYS_symlinkat, SYS_rename,
	SYS_renameat, SYS_renameat2, SYS_unlink, SYS_unlinkat, SYS_mkdir, SYS_mkdirat, SYS_rmdir,
	SYS_chdir, SYS_fchdir, SYS_chroot, SYS_truncate, SYS_chmod, SYS_fchmodat, SYS_chown,
	SYS_lchown, SYS_fchownat, SYS_mount, SYS_umount2, SYS_pivot_root, SYS_setns, SYS_unshare,
	SYS_bpf, SYS_perf_event_open, SYS_userfaultfd, SYS_io_uring_setup, SYS_keyctl,
	SYS_add_key, SYS_request_key, SYS_inotify_init, SYS_inotify_init1, SYS_fanotify_init,
	SYS_uselib, SYS_acct,
};

#define NREFUSED	(sizeof(refused) / sizeof(refused[0]))

/*
 * The filter: another ABI than x86-64 (i386, x32 numbers) kills; a refused
 * number gets EPERM; the rest is allowed. Layout: 0-3 the ABI, 4 x32,
 * 5..5+N-1 the refused, then allow, EPERM, kill.
 */
static int refuse_syscalls(void)
{
	struct sock_filter prog[8 + NREFUSED];
	struct sock_fprog fprog = { .len = sizeof(prog) / sizeof(prog[0]), .filter = prog };
	size_t i, n = 0;

	prog[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
						 offsetof(struct seccomp_data, arch));
	prog[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0);
	prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
	prog[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
						 offsetof(struct seccomp_data, nr));
	prog[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, NREFUSED + 2, 0);
	for (i = 0; i < NREFUSED; i++)
		prog[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, refused[i],
							 NREFUSED - i, 0);
	prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
	prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog, 0, 0) ? -1 : 0;
}

int native_sandbox_enter(const char **why)
{
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) {
		*why = "no_new_privs";
		return -1;
	}
	if (set_limits()) {
		*why = "resource limits";
		return -1;
	}
	if (drop_identity()) {
		*why = "uid and gid";
		return -1;
	}
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	if (forbid_file_system()) {
		*why = "landlock";
		return -1;
	}
	if (refuse_syscalls()) {
		*why = "seccomp";
		return -1;
	}
	return 0;
}
