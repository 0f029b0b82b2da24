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

#endif
