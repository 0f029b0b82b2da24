// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The run history's store: one SQLite database, its schema versioned by
 * PRAGMA user_version and brought up to date by the migrations below, in
 * WAL mode with a busy timeout so that several writers wait for each other
 * instead of failing, and each run written in one transaction so that a
 * writer killed half-way leaves no half of a run. A database of a newer
 * schema, of another program or not a database at all is refused in one
 * line; SQLite's own checks make a damaged file an error, never a crash.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <sqlite3.h>
#include "history.h"
#include "sudo_user.h"

#define HIST_APP_ID 0x65627066	/* "ebpf" */
#define BUSY_TIMEOUT_MS 30000

struct hist_db {
	sqlite3 *db;
	const char *path;
};

/* migrations[i] brings a database of schema i to schema i + 1. */
static const char *const migrations[HIST_SCHEMA_VERSION] = {
	"CREATE TABLE runs(id INTEGER PRIMARY KEY AUTOINCREMENT, series TEXT NOT NULL,"
	" at INTEGER NOT NULL, host TEXT NOT NULL, kernel TEXT NOT NULL,"
	" python TEXT NOT NULL, command TEXT NOT NULL, source TEXT NOT NULL,"
	" duration_s REAL NOT NULL, nmetrics INTEGER NOT NULL);"
	"CREATE INDEX runs_by_series ON runs(series, id);"
	"CREATE TABLE tags(run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
	" key TEXT NOT NULL, value TEXT NOT NULL);"
	"CREATE INDEX tags_by_run ON tags(run);"
	"CREATE TABLE metrics(run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
	" kind TEXT NOT NULL, process TEXT NOT NULL, thread TEXT NOT NULL,"
	" name TEXT NOT NULL, field TEXT NOT NULL, value REAL NOT NULL);"
	"CREATE INDEX metrics_by_run ON metrics(run);",
	/* 2: what a run holds; the runs before were all recordings */
	"ALTER TABLE runs ADD COLUMN kind TEXT NOT NULL DEFAULT 'recording';",
};

/* mkdir -p of the folders of path below home. Under sudo the caller works
 * as the user (sudo_fs_enter): what is made is theirs, and made only where
 * they may make it, whatever their symlinks point at. */
static int make_folders(const char *path, size_t home_len, char *err, size_t errlen)
{
	char dir[4096];
	size_t i;

	snprintf(dir, sizeof(dir), "%s", path);
	for (i = home_len + 1; dir[i]; i++) {
		if (dir[i] != '/')
			continue;
		dir[i] = 0;
		if (mkdir(dir, 0700) && errno != EEXIST) {
			snprintf(err, errlen, "cannot make %s: %s", dir, strerror(errno));
			return -1;
		}
		dir[i] = '/';
	}
	return 0;
}

int hist_default_path(char *out, size_t len, int create, char *err, size_t errlen)
{
	const char *xdg = getenv("XDG_DATA_HOME"), *home = getenv("HOME");
	struct passwd *pw;
	uid_t uid;
	gid_t gid;

	if (xdg && xdg[0] == '/' && strlen(xdg) < 2048) {
		snprintf(out, len, "%s/ebpfprof/history.db", xdg);
		/* the folder itself too, if it is not there yet */
		return create ? make_folders(out, 0, err, errlen) : 0;
	}
	/* sudo's HOME may be root's: the user's home is theirs in passwd */
	if (sudo_user(&uid, &gid)) {
		pw = getpwuid(uid);
		home = pw ? pw->pw_dir : NULL;
	}
	if (!home || home[0] != '/' || strlen(home) >= 2048) {
		snprintf(err, errlen, "no home folder for the history: give --history-db PATH");
		return -1;
	}
	snprintf(out, len, "%s/.local/share/ebpfprof/history.db", home);
	return create ? make_folders(out, strlen(home), err, errlen) : 0;
}

static int say(struct hist_db *h, char *err, size_t errlen, const char *doing)
{
	snprintf(err, errlen, "%s: %s: %s", h->path, doing, sqlite3_errmsg(h->db));
	return -1;
}

static int exec(struct hist_db *h, const char *sql, char *err, size_t errlen)
{
	return sqlite3_exec(h->db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 :
	       say(h, err, errlen, "database error");
}

/* The file's identity, read in one statement and so from one snapshot:
 * three statements, each its own read, could see the application id from
 * before another writer's first migration committed and its tables from
 * after (four writers creating one file at once: "not ours", 3 runs in 30). */
static int read_identity(struct hist_db *h, long long *app, long long *version,
			 long long *tables, char *err, size_t errlen)
{
	static const char sql[] =
		"SELECT (SELECT application_id FROM pragma_application_id()),"
		" (SELECT user_version FROM pragma_user_version()),"
		" (SELECT count(*) FROM sqlite_master)";
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(h->db, sql, -1, &st, NULL) != SQLITE_OK)
		return say(h, err, errlen, "cannot read it");
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*app = sqlite3_column_int64(st, 0);
		*version = sqlite3_column_int64(st, 1);
		*tables = sqlite3_column_int64(st, 2);
	}
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 0 : say(h, err, errlen, "cannot read it");
}

/* Ours, of a schema this binary knows; or empty (version 0, no tables). */
static int check_identity(struct hist_db *h, long long *version, char *err, size_t errlen)
{
	long long app, tables;

	if (read_identity(h, &app, version, &tables, err, errlen))
		return -1;
	if (app != HIST_APP_ID && (app || *version || tables)) {
		snprintf(err, errlen, "%s: not an ebpfprof history database", h->path);
		return -1;
	}
	if (*version > HIST_SCHEMA_VERSION) {
		snprintf(err, errlen, "%s: history schema %lld is newer than this ebpfprof's (%d): "
			 "use a newer ebpfprof", h->path, *version, HIST_SCHEMA_VERSION);
		return -1;
	}
	return 0;
}

/* Brings the schema up to date in one transaction; another writer doing
 * the same at once waits, then finds nothing left to do. */
static int migrate(struct hist_db *h, char *err, size_t errlen)
{
	char sql[128];
	long long v;

	if (exec(h, "BEGIN IMMEDIATE", err, errlen))
		return -1;
	if (check_identity(h, &v, err, errlen))
		goto fail;
	for (; v < HIST_SCHEMA_VERSION; v++)
		if (exec(h, migrations[v], err, errlen))
			goto fail;
	snprintf(sql, sizeof(sql), "PRAGMA application_id = %d; PRAGMA user_version = %d",
		 HIST_APP_ID, HIST_SCHEMA_VERSION);
	if (exec(h, sql, err, errlen) || exec(h, "COMMIT", err, errlen))
		goto fail;
	return 0;
fail:
	sqlite3_exec(h->db, "ROLLBACK", NULL, NULL, NULL);
	return -1;
}

/* WAL: readers never wait for a writer, a killed writer's transaction is
 * not in the database. Switching a new file to it needs it alone, and
 * SQLite says "locked" at once instead of waiting when several writers
 * open it together: retried here for as long as the busy timeout. */
static int wal_mode(struct hist_db *h, char *err, size_t errlen)
{
	const struct timespec pause = { 0, 10 * 1000000 };
	int tries, rc = SQLITE_BUSY;

	for (tries = 0; tries < BUSY_TIMEOUT_MS / 10; tries++) {
		rc = sqlite3_exec(h->db, "PRAGMA journal_mode = WAL", NULL, NULL, NULL);
		if (rc != SQLITE_BUSY && rc != SQLITE_LOCKED)
			break;
		nanosleep(&pause, NULL);
	}
	return rc == SQLITE_OK ? 0 : say(h, err, errlen, "cannot use it");
}

int hist_db_open(struct hist_db **out, const char *path, int create, char *err, size_t errlen)
{
	int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0);
	struct hist_db *h = calloc(1, sizeof(*h));
	struct stat sb;
	long long v;

	*out = NULL;
	if (!h) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	h->path = path;
	if (!create && stat(path, &sb)) {
		snprintf(err, errlen, "%s: no history there (record with --history SERIES, or "
			 "ebpfprof history add)", path);
		free(h);
		return -1;
	}
	if (sqlite3_open_v2(path, &h->db, flags | SQLITE_OPEN_NOFOLLOW, NULL) != SQLITE_OK) {
		int e = h->db ? sqlite3_system_errno(h->db) : 0;

		snprintf(err, errlen, "%s: cannot open: %s%s%s%s", path,
			 h->db ? sqlite3_errmsg(h->db) : "out of memory", e ? " (" : "",
			 e ? strerror(e) : "", e ? ")" : "");
		goto fail;
	}
	sqlite3_busy_timeout(h->db, BUSY_TIMEOUT_MS);
	/* a database anyone may have written: no schema object runs SQL
	 * functions it names, no writes to the schema behind SQLite's back */
	sqlite3_db_config(h->db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
	sqlite3_db_config(h->db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, NULL);
	if (check_identity(h, &v, err, errlen) || wal_mode(h, err, errlen) ||
	    exec(h, "PRAGMA foreign_keys = ON", err, errlen) ||
	    (v < HIST_SCHEMA_VERSION && migrate(h, err, errlen)))
		goto fail;
	*out = h;
	return 0;
fail:
	sqlite3_close(h->db);
	free(h);
	return -1;
}

void hist_db_close(struct hist_db *h)
{
	if (!h)
		return;
	sqlite3_close(h->db);
	free(h);
}

static int bind_texts(sqlite3_stmt *st, const char *const *texts, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (sqlite3_bind_text(st, i + 1, texts[i] ? texts[i] : "", -1, SQLITE_STATIC))
			return -1;
	return 0;
}

static int insert_run(struct hist_db *h, struct hist_run *run, char *err, size_t errlen)
{
	const char *texts[] = { run->series, run->host, run->kernel, run->python, run->command,
				run->source, run->kind && run->kind[0] ? run->kind : "recording" };
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(h->db, "INSERT INTO runs(series, host, kernel, python, command,"
			       " source, kind, at, duration_s, nmetrics) VALUES (?,?,?,?,?,?,?,?,?,?)",
			       -1, &st, NULL) != SQLITE_OK)
		return say(h, err, errlen, "cannot store the run");
	rc = bind_texts(st, texts, 7) || sqlite3_bind_int64(st, 8, run->at) ||
	     sqlite3_bind_double(st, 9, run->duration_s) ||
	     sqlite3_bind_int64(st, 10, (long long)run->nm) ? SQLITE_ERROR : sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return say(h, err, errlen, "cannot store the run");
	run->id = sqlite3_last_insert_rowid(h->db);
	return 0;
}

static int insert_tags(struct hist_db *h, const struct hist_run *run, char *err, size_t errlen)
{
	sqlite3_stmt *st;
	size_t i;
	int rc = SQLITE_DONE;

	if (sqlite3_prepare_v2(h->db, "INSERT INTO tags(run, key, value) VALUES (?,?,?)", -1,
			       &st, NULL) != SQLITE_OK)
		return say(h, err, errlen, "cannot store the tags");
	for (i = 0; rc == SQLITE_DONE && i < run->ntags; i++) {
		const char *eq = strchr(run->tags[i], '=');

		sqlite3_reset(st);
		rc = sqlite3_bind_int64(st, 1, run->id) ||
		     sqlite3_bind_text(st, 2, run->tags[i], (int)(eq - run->tags[i]), SQLITE_STATIC) ||
		     sqlite3_bind_text(st, 3, eq + 1, -1, SQLITE_STATIC) ? SQLITE_ERROR :
		     sqlite3_step(st);
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : say(h, err, errlen, "cannot store the tags");
}

static int insert_metrics(struct hist_db *h, const struct hist_run *run, char *err, size_t errlen)
{
	sqlite3_stmt *st;
	size_t i;
	int rc = SQLITE_DONE;

	if (sqlite3_prepare_v2(h->db, "INSERT INTO metrics(run, kind, process, thread, name,"
			       " field, value) VALUES (?,?,?,?,?,?,?)", -1, &st, NULL) != SQLITE_OK)
		return say(h, err, errlen, "cannot store the figures");
	for (i = 0; rc == SQLITE_DONE && i < run->nm; i++) {
		const struct hist_metric *m = &run->m[i];
		const char *texts[] = { m->kind, m->process, m->thread, m->name, m->field };

		sqlite3_reset(st);
		rc = sqlite3_bind_int64(st, 1, run->id) ? SQLITE_ERROR : SQLITE_DONE;
		/* the run is 1, the texts 2..6, the value 7 */
		for (int k = 0; rc == SQLITE_DONE && k < 5; k++)
			rc = sqlite3_bind_text(st, k + 2, texts[k], -1, SQLITE_STATIC) ?
			     SQLITE_ERROR : SQLITE_DONE;
		if (rc == SQLITE_DONE)
			rc = sqlite3_bind_double(st, 7, m->value) ? SQLITE_ERROR : sqlite3_step(st);
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : say(h, err, errlen, "cannot store the figures");
}

int hist_db_add(struct hist_db *h, struct hist_run *run, char *err, size_t errlen)
{
	/* IMMEDIATE: the write lock now, waited for, not at the first insert */
	if (exec(h, "BEGIN IMMEDIATE", err, errlen))
		return -1;
	if (insert_run(h, run, err, errlen) || insert_tags(h, run, err, errlen) ||
	    insert_metrics(h, run, err, errlen) || exec(h, "COMMIT", err, errlen)) {
		sqlite3_exec(h->db, "ROLLBACK", NULL, NULL, NULL);
		return -1;
	}
	return 0;
}

static char *column_dup(sqlite3_stmt *st, int col)
{
	const unsigned char *s = sqlite3_column_text(st, col);

	return strdup(s ? (const char *)s : "");
}

#define RUN_COLUMNS "id, series, at, host, kernel, python, command, source, duration_s, kind"

static int read_run_row(sqlite3_stmt *st, struct hist_run *run)
{
	memset(run, 0, sizeof(*run));
	run->id = sqlite3_column_int64(st, 0);
	run->series = column_dup(st, 1);
	run->at = sqlite3_column_int64(st, 2);
	run->host = column_dup(st, 3);
	run->kernel = column_dup(st, 4);
	run->python = column_dup(st, 5);
	run->command = column_dup(st, 6);
	run->source = column_dup(st, 7);
	run->duration_s = sqlite3_column_double(st, 8);
	run->kind = column_dup(st, 9);
	return run->series && run->host && run->kernel && run->python && run->command &&
	       run->source && run->kind ? 0 : -1;
}

static int read_tags(struct hist_db *h, struct hist_run *run, char *err, size_t errlen)
{
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(h->db, "SELECT key, value FROM tags WHERE run = ? ORDER BY rowid",
			       -1, &st, NULL) != SQLITE_OK)
		return say(h, err, errlen, "cannot read the tags");
	sqlite3_bind_int64(st, 1, run->id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW && run->ntags < HIST_MAX_TAGS) {
		if (asprintf(&run->tags[run->ntags], "%s=%s", sqlite3_column_text(st, 0),
			     sqlite3_column_text(st, 1)) < 0) {
			rc = SQLITE_NOMEM;
			break;
		}
		run->ntags++;
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : say(h, err, errlen, "cannot read the tags");
}

static int read_metrics(struct hist_db *h, struct hist_run *run, char *err, size_t errlen)
{
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(h->db, "SELECT kind, process, thread, name, field, value FROM"
			       " metrics WHERE run = ? ORDER BY rowid", -1, &st, NULL) != SQLITE_OK)
		return say(h, err, errlen, "cannot read the figures");
	sqlite3_bind_int64(st, 1, run->id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *t[5];

		for (int k = 0; k < 5; k++) {
			t[k] = (const char *)sqlite3_column_text(st, k);
			t[k] = t[k] ? t[k] : "";
		}
		if (hist_run_add(run, t[0], t[1], t[2], t[3], t[4], sqlite3_column_double(st, 5))) {
			rc = SQLITE_NOMEM;
			break;
		}
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : say(h, err, errlen, "cannot read the figures");
}

void hist_runs_free(struct hist_run *runs, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		hist_run_free(&runs[i]);
	free(runs);
}

static int read_details(struct hist_db *h, struct hist_run *run, int with_metrics,
			char *err, size_t errlen)
{
	return read_tags(h, run, err, errlen) ||
	       (with_metrics && read_metrics(h, run, err, errlen)) ? -1 : 0;
}

int hist_db_runs(struct hist_db *h, const char *series, size_t n, int with_metrics,
		 struct hist_run **out, size_t *nout, char *err, size_t errlen)
{
	struct hist_run *runs = NULL;
	size_t nruns = 0, cap = 0, i;
	sqlite3_stmt *st;
	int rc;

	*out = NULL;
	*nout = 0;
	/* one read transaction: a writer at the same time is not half seen */
	if (exec(h, "BEGIN", err, errlen))
		return -1;
	if (sqlite3_prepare_v2(h->db, "SELECT * FROM (SELECT " RUN_COLUMNS " FROM runs WHERE"
			       " series = ? ORDER BY id DESC LIMIT ?) ORDER BY id", -1, &st,
			       NULL) != SQLITE_OK) {
		say(h, err, errlen, "cannot read the runs");
		goto fail;
	}
	sqlite3_bind_text(st, 1, series, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, n ? (long long)n : -1);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (nruns == cap) {
			struct hist_run *grown = realloc(runs, (cap = cap ? 2 * cap : 16) * sizeof(*runs));

			if (!grown)
				break;
			runs = grown;
		}
		if (read_run_row(st, &runs[nruns++]))
			break;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		snprintf(err, errlen, "%s: cannot read the runs: %s", h->path,
			 rc == SQLITE_ROW ? "out of memory" : sqlite3_errstr(rc));
		goto fail;
	}
	for (i = 0; i < nruns; i++)
		if (read_details(h, &runs[i], with_metrics, err, errlen))
			goto fail;
	sqlite3_exec(h->db, "COMMIT", NULL, NULL, NULL);
	*out = runs;
	*nout = nruns;
	return 0;
fail:
	sqlite3_exec(h->db, "ROLLBACK", NULL, NULL, NULL);
	hist_runs_free(runs, nruns);
	return -1;
}

int hist_db_run(struct hist_db *h, long long id, struct hist_run *run, char *err, size_t errlen)
{
	sqlite3_stmt *st;
	int rc, found;

	memset(run, 0, sizeof(*run));
	if (sqlite3_prepare_v2(h->db, "SELECT " RUN_COLUMNS " FROM runs WHERE id = ?", -1, &st,
			       NULL) != SQLITE_OK)
		return say(h, err, errlen, "cannot read the run");
	sqlite3_bind_int64(st, 1, id);
	rc = sqlite3_step(st);
	found = rc == SQLITE_ROW;
	if (found && read_run_row(st, run))
		rc = SQLITE_NOMEM;
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		snprintf(err, errlen, "%s: cannot read the run: %s", h->path, sqlite3_errstr(rc));
		return -1;
	}
	if (!found)
		return 1;
	return read_details(h, run, 1, err, errlen);
}
