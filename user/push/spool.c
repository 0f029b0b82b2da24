// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "atomic_file.h"
#include "grow.h"
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
	int rc;

	pthread_mutex_lock(&s->lock);
	seq = s->next_seq++;
	s->added++;
	pthread_mutex_unlock(&s->lock);
	entry_path(s, seq, path, sizeof(path));
	/* written unlocked: the pusher may send meanwhile */
	rc = atomic_file_write_private(path, write_request, &r);
	pthread_mutex_lock(&s->lock);
	if (rc || GROW_ARRAY(s->entries, s->cap, s->n + 1)) {
		if (!rc)
			unlink(path);
		s->failed_writes++;
		s->dropped++;
		pthread_mutex_unlock(&s->lock);
		return -1;
	}
	s->entries[s->n++] = (struct spool_entry){ seq, bytes };
	s->bytes += bytes;
	while (s->bytes > s->max_bytes && !drop_oldest(s))
		;
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
