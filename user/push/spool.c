// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "atomic_file.h"
#include "grow.h"
#include "procfs.h"
#include "spool.h"

#define SPOOL_MAGIC	"ebpfprof-push 1\n"
#define QUERY_MAX	16384

/* The directory is ebpfprof's alone: its own, a directory, not a symlink,
 * writable by no one else (who could swap a file in between). */
static int check_dir(const char *dir, char *err, size_t len)
{
	struct stat st;

	if (mkdir(dir, 0700) && errno != EEXIST) {
		snprintf(err, len, "cannot create spool directory %s: %s", dir, strerror(errno));
		return -1;
	}
	if (lstat(dir, &st)) {
		snprintf(err, len, "spool directory %s: %s", dir, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022)) {
		snprintf(err, len, "spool directory %s refused: it must be a directory (not a symlink) owned by uid %d and writable by no one else",
			 dir, (int)geteuid());
		return -1;
	}
	return 0;
}

int spool_open(struct spool *s, const char *dir, uint64_t max_bytes, char *err, size_t len)
{
	char tmpl[] = "/tmp/ebpfprof-spool-XXXXXX";

	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->lock, NULL);
	s->max_bytes = max_bytes;
	s->next_seq = 1;
	if (!dir) {
		if (!mkdtemp(tmpl)) {
			snprintf(err, len, "cannot create a spool directory in /tmp: %s", strerror(errno));
			return -1;
		}
		dir = tmpl;
		s->temporary = 1;
	} else if (check_dir(dir, err, len)) {
		return -1;
	}
	s->dir = strdup(dir);
	if (!s->dir) {
		snprintf(err, len, "out of memory");
		return -1;
	}
	return 0;
}

static void entry_path(const struct spool *s, unsigned long seq, char *out, size_t len)
{
	snprintf(out, len, "%s/push-%d-%010lu", s->dir, (int)getpid(), seq);
}

struct request {
	const char *query;
	const void *body;
	size_t len;
};

static int write_request(FILE *f, void *ctx)
{
	const struct request *r = ctx;

	if (fputs(SPOOL_MAGIC, f) == EOF || fputs(r->query, f) == EOF || fputc('\n', f) == EOF ||
	    fwrite(r->body, 1, r->len, f) != r->len)
		return -1;
	return 0;
}

/* Drops the oldest entry (the in-flight one only if it is alone); locked. */
static int drop_oldest(struct spool *s)
{
	char path[4096];
	size_t i = 0;

	if (s->n > 1 && s->entries[0].seq == s->in_flight)
		i = 1;
	if (!s->n)
		return -1;
	entry_path(s, s->entries[i].seq, path, sizeof(path));
	unlink(path);
	s->bytes -= s->entries[i].bytes;
	memmove(&s->entries[i], &s->entries[i + 1], (s->n - i - 1) * sizeof(*s->entries));
	s->n--;
	s->dropped++;
	return 0;
}

int spool_add(struct spool *s, const char *query, const void *body, size_t len)
{
	struct request r = { query, body, len };
	size_t bytes = strlen(SPOOL_MAGIC) + strlen(query) + 1 + len;
	char path[4096];
	unsigned long seq;
	int rc = -1;

	/* room made before the file appears: the directory never holds
	 * more than the bound, not even for a moment */
	pthread_mutex_lock(&s->lock);
	seq = s->next_seq++;
	s->added++;
	while (s->bytes + bytes > s->max_bytes && !drop_oldest(s))
		;
	if (bytes <= s->max_bytes)
		s->bytes += bytes;
	pthread_mutex_unlock(&s->lock);
	entry_path(s, seq, path, sizeof(path));
	/* written unlocked: the pusher may send meanwhile */
	if (bytes <= s->max_bytes)
		rc = atomic_file_write_private(path, write_request, &r);
	pthread_mutex_lock(&s->lock);
	if (rc || GROW_ARRAY(s->entries, s->cap, s->n + 1)) {
		if (!rc)
			unlink(path);
		if (bytes <= s->max_bytes)
			s->bytes -= bytes;
		s->failed_writes += bytes <= s->max_bytes;
		s->dropped++;
		pthread_mutex_unlock(&s->lock);
		return -1;
	}
	s->entries[s->n++] = (struct spool_entry){ seq, bytes };
	pthread_mutex_unlock(&s->lock);
	return 0;
}

/* Reads a request file back: ours, regular, not through a symlink, bounded. */
static int read_request(const char *path, uint64_t max, char **query, char **body, size_t *len)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	char *buf = NULL, *nl;
	size_t got = 0, magic = strlen(SPOOL_MAGIC);
	ssize_t n;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (uint64_t)st.st_size > max || (size_t)st.st_size < magic + 1)
		goto fail;
	buf = malloc(st.st_size + 1);
	while (buf && got < (size_t)st.st_size && (n = read(fd, buf + got, st.st_size - got)) > 0)
		got += n;
	if (!buf || got != (size_t)st.st_size || memcmp(buf, SPOOL_MAGIC, magic))
		goto fail;
	buf[got] = '\0';
	nl = memchr(buf + magic, '\n', got - magic);
	if (!nl || nl - (buf + magic) > QUERY_MAX)
		goto fail;
	*query = strndup(buf + magic, nl - (buf + magic));
	*len = got - (nl + 1 - buf);
	*body = malloc(*len + 1);
	if (!*query || !*body) {
		free(*query);
		free(*body);
		goto fail;
	}
	memcpy(*body, nl + 1, *len);
	free(buf);
	close(fd);
	return 0;
fail:
	free(buf);
	close(fd);
	return -1;
}

int spool_take_oldest(struct spool *s, unsigned long *seq, char **query, char **body, size_t *len)
{
	char path[4096];
	int rc;

	pthread_mutex_lock(&s->lock);
	if (!s->n) {
		pthread_mutex_unlock(&s->lock);
		return 0;
	}
	*seq = s->in_flight = s->entries[0].seq;
	pthread_mutex_unlock(&s->lock);
	entry_path(s, *seq, path, sizeof(path));
	*query = *body = NULL;
	rc = read_request(path, s->max_bytes + QUERY_MAX + 64, query, body, len);
	if (rc) {
		/* replaced or damaged behind our back: dropped, never sent */
		spool_done(s, *seq, SPOOL_UNREADABLE);
		return -1;
	}
	return 1;
}

void spool_done(struct spool *s, unsigned long seq, enum spool_outcome outcome)
{
	char path[4096];

	pthread_mutex_lock(&s->lock);
	s->in_flight = 0;
	for (size_t i = 0; i < s->n && outcome != SPOOL_RETRY; i++) {
		if (s->entries[i].seq != seq)
			continue;
		entry_path(s, seq, path, sizeof(path));
		unlink(path);
		s->bytes -= s->entries[i].bytes;
		memmove(&s->entries[i], &s->entries[i + 1], (s->n - i - 1) * sizeof(*s->entries));
		s->n--;
		if (outcome == SPOOL_SENT)
			s->sent++;
		else if (outcome == SPOOL_REJECTED)
			s->rejected++;
		else
			s->dropped++;
		break;
	}
	pthread_mutex_unlock(&s->lock);
}

/* A request file left by another ebpfprof, which is gone. */
struct leftover {
	char name[64];
	struct timespec mtime;
	unsigned long seq;
	size_t bytes;
};

/* Is pid an ebpfprof still running (whose files are its own to send)? */
static int writer_alive(pid_t pid)
{
	char comm[32] = "";

	if (kill(pid, 0) && errno == ESRCH)
		return 0;
	procfs_comm(pid, pid, comm, sizeof(comm));
	return !strcmp(comm, "ebpfprof");
}

/* "push-PID-SEQ" of another, gone, writer: a regular file of ours, bounded. */
static int leftover_of(const struct spool *s, int dfd, const char *name, struct leftover *l)
{
	char again[64];
	struct stat st;
	int pid;

	if (sscanf(name, "push-%d-%lu", &pid, &l->seq) != 2 || pid <= 0 || pid == getpid())
		return -1;
	snprintf(again, sizeof(again), "push-%d-%010lu", pid, l->seq);
	if (strcmp(again, name) || writer_alive(pid))
		return -1;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode) ||
	    st.st_uid != geteuid() || (uint64_t)st.st_size > s->max_bytes + QUERY_MAX + 64)
		return -1;
	snprintf(l->name, sizeof(l->name), "%s", name);
	l->mtime = st.st_mtim;
	l->bytes = st.st_size;
	return 0;
}

/* ".push-PID-SEQ.XXXXXX": the temporary file of a write a writer gone
 * never finished (killed mid-write); removed. */
static void remove_abandoned_temp(int dfd, const char *name)
{
	unsigned long seq;
	struct stat st;
	int pid, len = 0;

	if (sscanf(name, ".push-%d-%lu.%*6[A-Za-z0-9]%n", &pid, &seq, &len) != 2 || !len ||
	    name[len] || pid <= 0 || pid == getpid() || writer_alive(pid))
		return;
	if (!fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) && S_ISREG(st.st_mode) &&
	    st.st_uid == geteuid())
		unlinkat(dfd, name, 0);
}

static int leftover_cmp(const void *a, const void *b)
{
	const struct leftover *x = a, *y = b;

	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Renames a leftover to our next name (another process may take it first:
 * then it is theirs) and queues it. Locked. */
static void adopt_one(struct spool *s, const struct leftover *l)
{
	char from[4096], to[4096];
	unsigned long seq = s->next_seq;

	snprintf(from, sizeof(from), "%s/%s", s->dir, l->name);
	entry_path(s, seq, to, sizeof(to));
	if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) ||
	    GROW_ARRAY(s->entries, s->cap, s->n + 1))
		return;
	s->next_seq++;
	s->entries[s->n++] = (struct spool_entry){ seq, l->bytes };
	s->bytes += l->bytes;
	s->adopted++;
}

int spool_adopt(struct spool *s)
{
	struct leftover *found = NULL, l;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *d;

	if (s->temporary || !(d = opendir(s->dir)))
		return 0;
	while ((de = readdir(d)) && n < SPOOL_ADOPT_MAX) {
		remove_abandoned_temp(dirfd(d), de->d_name);
		if (leftover_of(s, dirfd(d), de->d_name, &l) || GROW_ARRAY(found, cap, n + 1))
			continue;
		found[n++] = l;
	}
	closedir(d);
	qsort(found, n, sizeof(*found), leftover_cmp);
	pthread_mutex_lock(&s->lock);
	for (size_t i = 0; i < n; i++)
		adopt_one(s, &found[i]);
	while (s->bytes > s->max_bytes && !drop_oldest(s))
		;
	pthread_mutex_unlock(&s->lock);
	free(found);
	return 0;
}

size_t spool_pending(struct spool *s)
{
	size_t n;

	pthread_mutex_lock(&s->lock);
	n = s->n;
	pthread_mutex_unlock(&s->lock);
	return n;
}

void spool_close(struct spool *s)
{
	char path[4096];

	for (size_t i = 0; s->temporary && i < s->n; i++) {
		entry_path(s, s->entries[i].seq, path, sizeof(path));
		unlink(path);
	}
	if (s->temporary && s->dir)
		rmdir(s->dir);
	free(s->entries);
	free(s->dir);
	pthread_mutex_destroy(&s->lock);
	s->entries = NULL;
	s->dir = NULL;
}
