// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>
#include "parse_num.h"
#include "sudo_user.h"

int sudo_user(uid_t *uid, gid_t *gid)
{
	const char *su = getenv("SUDO_UID"), *sg = getenv("SUDO_GID");
	unsigned long u, g;

	if (geteuid() != 0 || !su || !sg || parse_ulong(su, 1, INT_MAX, &u) ||
	    parse_ulong(sg, 0, INT_MAX, &g))
		return 0;
	*uid = (uid_t)u;
	*gid = (gid_t)g;
	return 1;
}
