// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Writing an output file so that a reader never sees half of it, nothing
 * but a regular file is ever replaced, and root's files stay root's (see
 * atomic_file.h). A profile is often written when the session is stopped by
 * a signal or the disk fills, and a truncated JSON file or gzip stream is
 * worse than none.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "atomic_file.h"
#include "sudo_user.h"

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

/* The temporary file being written, for atomic_file_abandon() in a signal handler. */
static char *volatile pending_tmp;

void atomic_file_abandon(void)
{
	char *tmp = pending_tmp;

	if (tmp)
		unlink(tmp);
}

/* mkstemp(tmp), registered for atomic_file_abandon() with the stop signals
 * held off: one that came between the two ended ebpfprof with the
 * temporary file left behind (seen once in a clean-clone CI run). */
static int make_pending(char *tmp)
{
	sigset_t stops, old;
	int fd;

	sigemptyset(&stops);
	sigaddset(&stops, SIGINT);
	sigaddset(&stops, SIGTERM);
	sigaddset(&stops, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &stops, &old);
	fd = mkstemp(tmp);
	if (fd >= 0)
		pending_tmp = tmp;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return fd;
}

/* The mode a file created by open(0666) would get: the umask is respected. */
static mode_t created_mode(void)
{
	mode_t mask = umask(022);

	umask(mask);
	return 0666 & ~mask;
}

/* What is at the final name now. */
struct final_name {
	int exists;
	uid_t uid;
	gid_t gid;
	mode_t perm;
};

static int examine(const char *path, struct final_name *fin)
{
	struct stat st;

	memset(fin, 0, sizeof(*fin));
	if (!path[0]) {
		errno = ENOENT;
		return -1;
	}
	if (lstat(path, &st)) {
		if (errno != ENOENT)
			return -1;
		return 0;
	}
	if (!S_ISREG(st.st_mode)) {
		errno = S_ISDIR(st.st_mode) ? EISDIR : EEXIST;
		return -1;
	}
	fin->exists = 1;
	fin->uid = st.st_uid;
	fin->gid = st.st_gid;
	/* never set-id bits: the content is ours, not the old program's */
	fin->perm = st.st_mode & 0777;
	return 0;
}

int atomic_file_check(const char *path)
{
	struct final_name fin;

	return examine(path, &fin);
}

const char *atomic_file_strerror(int err)
{
	if (err == EEXIST)
		return "it exists and is not a regular file (devices, FIFOs, sockets and symlinks are never replaced)";
	if (err == EISDIR)
		return "it is a directory";
	return strerror(err);
}

/*
 * The owner and mode of the file about to take the name: a new file's are
 * the sudo user's and 0666 less the umask; a replaced file's are kept
 * (as root: without root, the new file can only be ours).
 */
static int set_owner(int fd, const struct final_name *fin)
{
	uid_t uid = (uid_t)-1;
	gid_t gid = (gid_t)-1;
	mode_t mode;

	if (fin->exists) {
		if (geteuid() == 0) {
			uid = fin->uid;
			gid = fin->gid;
		}
		mode = fin->perm;
	} else {
		/* under sudo a file ebpfprof creates is theirs, as the files
		 * a launched command writes */
		if (!sudo_user(&uid, &gid))
			uid = (uid_t)-1, gid = (gid_t)-1;
		mode = created_mode();
	}
	if ((uid != (uid_t)-1 || gid != (gid_t)-1) && fchown(fd, uid, gid))
		return -1;
	/* mkstemp() makes 0600; a profile is meant to be shared and read */
	return fchmod(fd, mode);
}

/*
 * Renames tmp (open as fd) to path with the owner path's file gets. A new
 * name is taken with RENAME_NOREPLACE, so that a file that appeared at it
 * meanwhile is seen and kept its owner, never handed over.
 */
static int put_in_place(int fd, const char *tmp, const char *path)
{
	struct final_name fin;
	int tries;

	for (tries = 0; tries < 4; tries++) {
		if (examine(path, &fin) || set_owner(fd, &fin) || fsync(fd))
			return -1;
		if (fin.exists)
			return rename(tmp, path);
		if (!renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE))
			return 0;
		/* a file system without RENAME_NOREPLACE: only our own name
		 * check stands between, as with any rename */
		if (errno == EINVAL || errno == ENOSYS)
			return rename(tmp, path);
		if (errno != EEXIST)
			return -1;
	}
	errno = EAGAIN;
	return -1;
}

/* A private file takes a new name only, as mkstemp made it: 0600, ours. */
static int put_private_in_place(int fd, const char *tmp, const char *path)
{
	if (fsync(fd))
		return -1;
	return renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE);
}

static int write_file(const char *path, int binary, int private,
		      int (*fn)(FILE *f, void *ctx), void *ctx)
{
	char *tmp;
	FILE *f = NULL;
	int fd, err;

	/* refused before anything is written; checked again at the rename */
	if (atomic_file_check(path))
		return -1;
	tmp = temp_template(path);
	if (!tmp)
		return -1;
	fd = make_pending(tmp);
	if (fd < 0)
		goto fail_nofile;
	f = fdopen(fd, binary ? "wb" : "w");
	if (!f)
		goto fail;
	errno = 0;
	if (fn(f, ctx) || fflush(f) || ferror(f) ||
	    (private ? put_private_in_place(fd, tmp, path) : put_in_place(fd, tmp, path)))
		goto fail;
	pending_tmp = NULL;
	/* flushed and synced: closing cannot lose what is in place */
	fclose(f);
	sync_parent_dir(path);
	free(tmp);
	return 0;

fail:
	err = errno ? errno : EIO;
	if (f)
		fclose(f);
	else
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

int atomic_file_write(const char *path, int binary,
		      int (*fn)(FILE *f, void *ctx), void *ctx)
{
	return write_file(path, binary, 0, fn, ctx);
}

int atomic_file_write_private(const char *path, int (*fn)(FILE *f, void *ctx), void *ctx)
{
	return write_file(path, 1, 1, fn, ctx);
}
