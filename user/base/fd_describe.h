/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What a file descriptor of another process is: a socket and its peer, a
 * pipe, a file path. Read from /proc/PID/fd and the target's own network
 * namespace tables (/proc/PID/net/{tcp,tcp6,udp,udp6,unix}).
 */
#ifndef EP_FD_DESCRIBE_H
#define EP_FD_DESCRIBE_H
#include <stddef.h>
#include <sys/types.h>

#define FD_WATCHED_MAX 8

struct fd_info {
	int fd;
	char kind[16];		/* "tcp", "tcp6", "udp", "udp6", "unix", "pipe", "file", "other" */
	char local[64];		/* sockets: "127.0.0.1:5555", unix path */
	char peer[64];		/* connected inet sockets: the other end */
	char path[256];		/* files and pipes: what /proc/PID/fd/N links to */
	int watched[FD_WATCHED_MAX];	/* epoll: the descriptors it watches */
	int nwatched;
};

/* Fills *out for fd of process pid; -1 if the descriptor is not there. */
int fd_describe(pid_t pid, int fd, struct fd_info *out);

/* One line: "fd 5: tcp 127.0.0.1:40000 -> 127.0.0.1:5555"; an epoll lists
 * what it watches: "fd 3: epoll watching fd 5 (tcp 0.0.0.0:8080), fd 7 (...)". */
void fd_info_format(const struct fd_info *fi, char *out, size_t len);
/* The same, with what an epoll watches described (read from /proc/PID). */
void fd_info_format_watched(pid_t pid, const struct fd_info *fi, char *out, size_t len);

/* Pure parsers of /proc/net lines, for the unit tests. Each returns 0 and
 * fills local/peer (peer empty for a listening or unconnected socket) if the
 * line is the socket with that inode, else -1. */
int fd_parse_inet_line(const char *line, int v6, unsigned long inode,
		       char *local, size_t llen, char *peer, size_t plen);
/* An epoll fdinfo line "tfd:        5 events: ..." -> 5; else -1. */
int fd_parse_epoll_tfd(const char *line);
int fd_parse_unix_line(const char *line, unsigned long inode, char *path, size_t len);

#endif
