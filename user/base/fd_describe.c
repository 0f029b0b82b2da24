// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * File descriptors of a target, described from /proc. The target's files
 * are untrusted text: every line is parsed with bounded fields and a line
 * that does not parse is skipped.
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "fd_describe.h"
#include "line_read.h"

/* /proc/net/tcp6 holds the address as four host-order 32-bit words. */
static int hex_addr(const char *hex, int v6, char *out, size_t len)
{
	unsigned port, w[4];
	char ip[INET6_ADDRSTRLEN];

	if (!v6) {
		if (sscanf(hex, "%8x:%4x", &w[0], &port) != 2 ||
		    !inet_ntop(AF_INET, &w[0], ip, sizeof(ip)))
			return -1;
		snprintf(out, len, "%s:%u", ip, port);
		return 0;
	}
	if (sscanf(hex, "%8x%8x%8x%8x:%4x", &w[0], &w[1], &w[2], &w[3], &port) != 5 ||
	    !inet_ntop(AF_INET6, w, ip, sizeof(ip)))
		return -1;
	snprintf(out, len, "[%s]:%u", ip, port);
	return 0;
}

/* "  1: 0100007F:15B3 0100007F:9C40 01 00000000:00000000 00:00000000 00000000  0  0 12345 ..." */
int fd_parse_inet_line(const char *line, int v6, unsigned long inode,
		       char *local, size_t llen, char *peer, size_t plen)
{
	char loc[64], rem[64];
	unsigned long ino;
	unsigned st;

	if (sscanf(line, " %*[0-9]: %63s %63s %x %*s %*s %*s %*s %*s %lu",
		   loc, rem, &st, &ino) != 4 || ino != inode)
		return -1;
	if (hex_addr(loc, v6, local, llen))
		return -1;
	peer[0] = 0;
	/* an all-zero remote port: listening, or udp not connected */
	if (!strstr(rem, ":0000") && hex_addr(rem, v6, peer, plen))
		peer[0] = 0;
	return 0;
}

/* "0000000000000000: 00000002 00000000 00010000 0001 01 12345 /tmp/sock" */
int fd_parse_unix_line(const char *line, unsigned long inode, char *path, size_t len)
{
	char p[256] = "";
	unsigned long ino;

	if (sscanf(line, "%*s %*s %*s %*s %*s %*s %lu %255s", &ino, p) < 1 || ino != inode)
		return -1;
	snprintf(path, len, "%s", p);
	return 0;
}

int fd_parse_epoll_tfd(const char *line)
{
	int tfd;

	return sscanf(line, "tfd: %d events:", &tfd) == 1 && tfd >= 0 ? tfd : -1;
}

/* An event loop's wait: which descriptors its epoll watches. */
static void read_epoll(pid_t pid, struct fd_info *out)
{
	char path[64], line[256];
	FILE *f;
	int tfd;

	snprintf(path, sizeof(path), "/proc/%d/fdinfo/%d", pid, out->fd);
	f = fopen(path, "re");
	if (!f)
		return;
	while (out->nwatched < FD_WATCHED_MAX && line_read(f, line, sizeof(line), NULL) >= 0)
		if ((tfd = fd_parse_epoll_tfd(line)) >= 0)
			out->watched[out->nwatched++] = tfd;
	fclose(f);
}

static const char *const net_tables[] = { "tcp", "tcp6", "udp", "udp6" };

static int find_socket(pid_t pid, unsigned long inode, struct fd_info *out)
{
	char path[64], line[512];
	size_t i;
	FILE *f;
	int found = 0;

	for (i = 0; i < sizeof(net_tables) / sizeof(net_tables[0]) && !found; i++) {
		snprintf(path, sizeof(path), "/proc/%d/net/%s", pid, net_tables[i]);
		f = fopen(path, "re");
		if (!f)
			continue;
		while (!found && line_read(f, line, sizeof(line), NULL) >= 0)
			found = !fd_parse_inet_line(line, strchr(net_tables[i], '6') != NULL, inode,
						    out->local, sizeof(out->local),
						    out->peer, sizeof(out->peer));
		if (found)
			snprintf(out->kind, sizeof(out->kind), "%s", net_tables[i]);
		fclose(f);
	}
	if (found)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/net/unix", pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (!found && line_read(f, line, sizeof(line), NULL) >= 0)
		found = !fd_parse_unix_line(line, inode, out->local, sizeof(out->local));
	fclose(f);
	if (found)
		snprintf(out->kind, sizeof(out->kind), "unix");
	return found ? 0 : -1;
}

int fd_describe(pid_t pid, int fd, struct fd_info *out)
{
	char link[64];
	unsigned long inode;
	ssize_t n;

	memset(out, 0, sizeof(*out));
	out->fd = fd;
	snprintf(link, sizeof(link), "/proc/%d/fd/%d", pid, fd);
	n = readlink(link, out->path, sizeof(out->path) - 1);
	if (n < 0)
		return -1;
	out->path[n] = 0;
	if (sscanf(out->path, "socket:[%lu]", &inode) == 1) {
		if (find_socket(pid, inode, out))
			snprintf(out->kind, sizeof(out->kind), "socket");
		return 0;
	}
	if (!strncmp(out->path, "pipe:", 5)) {
		snprintf(out->kind, sizeof(out->kind), "pipe");
	} else if (!strcmp(out->path, "anon_inode:[eventpoll]")) {
		snprintf(out->kind, sizeof(out->kind), "epoll");
		read_epoll(pid, out);
	}
	else if (out->path[0] == '/')
		snprintf(out->kind, sizeof(out->kind), "file");
	else
		snprintf(out->kind, sizeof(out->kind), "other");
	return 0;
}

static void format_one(const struct fd_info *fi, char *out, size_t len)
{
	if (fi->local[0] && fi->peer[0])
		snprintf(out, len, "%s %s -> %s", fi->kind, fi->local, fi->peer);
	else if (fi->local[0])
		snprintf(out, len, "%s %s", fi->kind, fi->local);
	else
		snprintf(out, len, "%s %s", fi->kind, fi->path);
}

void fd_info_format_watched(pid_t pid, const struct fd_info *fi, char *out, size_t len)
{
	struct fd_info w;
	char one[160];
	size_t n;
	int i;

	fd_info_format(fi, out, len);
	for (i = 0; i < fi->nwatched; i++) {
		n = strlen(out);
		if (fd_describe(pid, fi->watched[i], &w))
			snprintf(out + n, len - n, "%s fd %d", i ? "," : " watching", fi->watched[i]);
		else {
			format_one(&w, one, sizeof(one));
			snprintf(out + n, len - n, "%s fd %d (%s)", i ? "," : " watching",
				 fi->watched[i], one);
		}
	}
}

void fd_info_format(const struct fd_info *fi, char *out, size_t len)
{
	if (!strcmp(fi->kind, "epoll")) {
		snprintf(out, len, "fd %d: epoll", fi->fd);
		return;
	}
	if (fi->local[0] && fi->peer[0])
		snprintf(out, len, "fd %d: %s %s -> %s", fi->fd, fi->kind, fi->local, fi->peer);
	else if (fi->local[0])
		snprintf(out, len, "fd %d: %s %s", fi->fd, fi->kind, fi->local);
	else
		snprintf(out, len, "fd %d: %s %s", fi->fd, fi->kind, fi->path);
}
