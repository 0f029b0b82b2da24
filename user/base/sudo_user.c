// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#define _GNU_SOURCE
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdlib.h>
#include <sys/fsuid.h>
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

/* The user's supplementary groups (their own gid among them), or NULL. */
static gid_t *groups_of(uid_t uid, gid_t gid, int *n)
{
	struct passwd *pw = getpwuid(uid);
	gid_t *groups;

	*n = 64;
	groups = calloc(*n, sizeof(*groups));
	if (!groups)
		return NULL;
	if (!pw || getgrouplist(pw->pw_name, gid, groups, n) < 0) {
		groups[0] = gid;
		*n = 1;
	}
	return groups;
}

void sudo_fs_enter(struct fs_identity *was)
{
	gid_t *theirs;
	uid_t uid;
	gid_t gid;
	int n;

	*was = (struct fs_identity){ 0 };
	if (!sudo_user(&uid, &gid))
		return;
	was->ngroups = getgroups(0, NULL);
	was->groups = was->ngroups > 0 ? calloc(was->ngroups, sizeof(gid_t)) : NULL;
	if (was->groups && getgroups(was->ngroups, was->groups) != was->ngroups)
		was->ngroups = -1;
	theirs = groups_of(uid, gid, &n);
	if (theirs)
		setgroups(n, theirs);
	free(theirs);
	was->gid = setfsgid(gid);
	was->uid = setfsuid(uid);
	was->entered = 1;
}

void sudo_fs_leave(struct fs_identity *was)
{
	if (!was->entered)
		return;
	setfsuid(was->uid);
	setfsgid(was->gid);
	if (was->groups && was->ngroups >= 0)
		setgroups(was->ngroups, was->groups);
	else
		setgroups(0, NULL);
	free(was->groups);
	*was = (struct fs_identity){ 0 };
}
