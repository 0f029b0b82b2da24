/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Who ran sudo: the one reading of SUDO_UID and SUDO_GID. */
#ifndef EP_SUDO_USER_H
#define EP_SUDO_USER_H
#include <sys/types.h>

/* 1 and the user's ids when ebpfprof runs as root under sudo: SUDO_UID a
 * user other than root and SUDO_GID a group, both decimal numbers below
 * 2^31; else 0. A launched command runs as them, the files ebpfprof makes
 * are theirs. */
int sudo_user(uid_t *uid, gid_t *gid);

/* File-system work done for the user who ran sudo (their history database,
 * their credential files) is done as them: between sudo_fs_enter and
 * sudo_fs_leave this thread's file-system identity is theirs (setfsuid,
 * setfsgid) and the process's supplementary groups are theirs, so what it
 * creates is theirs without a chown, and it reaches only what they may
 * (their symlink to a root-only file included). The rest of ebpfprof (BPF,
 * the target's memory) keeps root's. Without sudo, nothing changes. */
struct fs_identity {
	int entered;
	uid_t uid;
	gid_t gid;
	int ngroups;
	gid_t *groups;
};
void sudo_fs_enter(struct fs_identity *was);
void sudo_fs_leave(struct fs_identity *was);

#endif
