// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Choosing an output writer, and writing its file so that a reader never
 * sees half of it: a profile is often written when the session is stopped
 * by a signal or the disk fills, and a truncated JSON file or gzip stream
 * is worse than none.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>
#include "writer.h"

static const struct output_writer *const writers[] = {
	&speedscope_writer,
	&collapsed_writer,
	&chrome_trace_writer,
	&pprof_writer,
};

const struct output_writer *writer_by_name(const char *name)
{
	size_t i;

	if (!name)
		return NULL;
	for (i = 0; i < sizeof(writers) / sizeof(writers[0]); i++)
		if (strcmp(writers[i]->name, name) == 0)
			return writers[i];
	return NULL;
}

/*
 * "DIR/.BASE.XXXXXX" for path "DIR/BASE": the same directory, so that the
 * final rename() cannot cross file systems, and hidden, so that a crash
 * leaves no file that looks like a profile. NULL if out of memory.
 */
static char *temp_template(const char *path)
{
	const char *slash = strrchr(path, '/');
	size_t dirlen = slash ? (size_t)(slash - path) + 1 : 0;
	const char *base = path + dirlen;
	char *tmpl;

	if (asprintf(&tmpl, "%.*s.%s.XXXXXX", (int)dirlen, path, base) < 0)
		return NULL;
	return tmpl;
}

/*
 * Makes the rename durable. The file is in place already whatever happens
 * here, so a failure is not reported: the caller must not believe there is
 * no file.
 */
static void sync_parent_dir(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir;
	int fd;

	if (!slash)
		dir = strdup(".");
	else if (slash == path)
		dir = strdup("/");
	else
		dir = strndup(path, slash - path);
	if (!dir)
		return;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
	free(dir);
}

/* The temporary file being written, for writer_abandon() in a signal handler. */
static char *volatile pending_tmp;

void writer_abandon(void)
{
	char *tmp = pending_tmp;

	if (tmp)
		unlink(tmp);
}

/*
 * The owner an output gets: run under sudo, the user who ran sudo, not
 * root (as files a launched command writes). -1 leaves it as it is.
 */
static void output_owner(uid_t *uid, gid_t *gid)
{
	const char *su = getenv("SUDO_UID"), *sg = getenv("SUDO_GID");
	char *end;
	unsigned long v;

	*uid = (uid_t)-1;
	*gid = (gid_t)-1;
	if (geteuid() != 0 || !su || !sg)
		return;
	errno = 0;
	v = strtoul(su, &end, 10);
	if (errno || end == su || *end || v == 0 || v >= (uid_t)-1)
		return;
	*uid = v;
	v = strtoul(sg, &end, 10);
	if (errno || end == sg || *end || v >= (gid_t)-1)
		return;
	*gid = v;
}

/* The mode a file created by open(0666) would get: the umask is respected. */
static mode_t output_mode(void)
{
	mode_t mask = umask(022);

	umask(mask);
	return 0666 & ~mask;
}

int writer_check_path(const char *path)
{
	struct stat st;

	if (!path[0]) {
		errno = ENOENT;
		return -1;
	}
	if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		errno = S_ISDIR(st.st_mode) ? EISDIR : EEXIST;
		return -1;
	}
	return 0;
}

/* Gives the finished file its mode and owner, and gets it to the disk. */
static int finish_file(FILE *f)
{
	uid_t uid;
	gid_t gid;

	if (fflush(f) || ferror(f))
		return -1;
	output_owner(&uid, &gid);
	if (uid != (uid_t)-1 && fchown(fileno(f), uid, gid))
		return -1;
	/* mkstemp() makes 0600; a profile is meant to be shared and read */
	if (fchmod(fileno(f), output_mode()))
		return -1;
	return fsync(fileno(f));
}

int writer_write_atomic(const char *path, int binary,
			int (*fn)(FILE *f, void *ctx), void *ctx)
{
	char *tmp;
	FILE *f = NULL;
	int fd, err;

	/* never replace a device, a FIFO, a socket or a symlink (nor what it
	 * points to): checked before recording and again here */
	if (writer_check_path(path))
		return -1;
	tmp = temp_template(path);
	if (!tmp)
		return -1;
	fd = mkstemp(tmp);
	if (fd < 0)
		goto fail_nofile;
	pending_tmp = tmp;
	f = fdopen(fd, binary ? "wb" : "w");
	if (!f)
		goto fail;
	errno = 0;
	if (fn(f, ctx) || finish_file(f))
		goto fail;
	err = fclose(f);
	f = NULL;
	fd = -1;
	if (err || writer_check_path(path))
		goto fail;
	if (rename(tmp, path))
		goto fail;
	pending_tmp = NULL;
	sync_parent_dir(path);
	free(tmp);
	return 0;

fail:
	err = errno ? errno : EIO;
	if (f)
		fclose(f);
	else if (fd >= 0)
		close(fd);
	unlink(tmp);
	pending_tmp = NULL;
	errno = err;
fail_nofile:
	err = errno ? errno : EIO;
	free(tmp);
	errno = err;
	return -1;
}

struct profile_job {
	const struct output_writer *w;
	const struct profile *p;
	const struct writer_options *o;
};

static int write_profile(FILE *f, void *ctx)
{
	const struct profile_job *job = ctx;

	return job->w->write(job->p, job->o, f);
}

int writer_write_file(const struct output_writer *w, const struct profile *p,
		      const struct writer_options *o, const char *path)
{
	struct profile_job job = { .w = w, .p = p, .o = o };

	return writer_write_atomic(path, w->binary, write_profile, &job);
}
