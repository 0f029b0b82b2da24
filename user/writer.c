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

/* Runs the writer into f and gets every byte to the disk. */
static int write_and_sync(const struct output_writer *w, const struct profile *p,
			  const struct writer_options *o, FILE *f)
{
	errno = 0;
	if (w->write(p, o, f))
		return -1;
	if (fflush(f) || ferror(f))
		return -1;
	if (fsync(fileno(f)))
		return -1;
	return 0;
}

int writer_write_file(const struct output_writer *w, const struct profile *p,
		      const struct writer_options *o, const char *path)
{
	char *tmp = temp_template(path);
	FILE *f = NULL;
	int fd, err;

	if (!tmp)
		return -1;
	fd = mkstemp(tmp);
	if (fd < 0)
		goto fail_nofile;
	/* mkstemp() makes 0600; a profile is meant to be shared and read. */
	if (fchmod(fd, 0644))
		goto fail;
	f = fdopen(fd, w->binary ? "wb" : "w");
	if (!f)
		goto fail;
	if (write_and_sync(w, p, o, f))
		goto fail;
	err = fclose(f);
	f = NULL;
	fd = -1;
	if (err)
		goto fail;
	if (rename(tmp, path))
		goto fail;
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
	errno = err;
fail_nofile:
	err = errno ? errno : EIO;
	free(tmp);
	errno = err;
	return -1;
}
