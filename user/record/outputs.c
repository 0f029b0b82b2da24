// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "diff.h"
#include "outputs.h"
#include "preflight.h"
#include "printable.h"
#include "report.h"
#include "sudo_user.h"

#define ERRLEN 512

int outputs_init(struct outputs *out, const struct outputs_config *cfg, const char *output,
		 int files, const char *gc_log, struct pusher *pusher, int several,
		 char *err, size_t errlen)
{
	*out = (struct outputs){ .cfg = cfg, .pusher = pusher, .files = files,
				 .several = several };
	out->rotation.keep = cfg->keep;
	out->output = strdup(output);
	out->gc_log = gc_log ? strdup(gc_log) : NULL;
	clock_gettime(CLOCK_REALTIME, &out->period_start);
	if (out->output && (!gc_log || out->gc_log))
		return 0;
	snprintf(err, errlen, "out of memory");
	outputs_free(out);
	return -1;
}

void outputs_free(struct outputs *out)
{
	rotation_free(&out->rotation);
	free(out->output);
	free(out->gc_log);
	out->output = out->gc_log = NULL;
}

/* The run history's database: --history-db, else the user's default. */
static int open_history(const struct outputs_config *cfg, struct hist_db **db, char *err,
			size_t len)
{
	char path[4096];

	if (!cfg->history_db && hist_default_path(path, sizeof(path), 1, err, len))
		return -1;
	return hist_db_open(db, cfg->history_db ? cfg->history_db : path, 1, err, len);
}

int outputs_check_history(const struct outputs_config *cfg, char *err, size_t errlen)
{
	struct hist_db *db;

	if (open_history(cfg, &db, err, errlen))
		return -1;
	hist_db_close(db);
	return 0;
}

/* --history: the profile as its speedscope recording, read back as diff
 * reads it, stored as a run named after its file (source). A failure is
 * said, the recording stands. */
static void store_history(const struct outputs_config *cfg, const char *source,
			  const struct profile *p, const struct writer_options *wopts)
{
	struct hist_add add = { cfg->history, source, (long long)time(NULL), cfg->tags, cfg->ntags };
	struct recording r;
	struct hist_db *db = NULL;
	struct fs_identity root;
	char *buf = NULL, err[ERRLEN], shown[4 * ERRLEN];
	size_t len = 0;
	long long id = 0;
	FILE *f = open_memstream(&buf, &len);
	int rc = -1;

	memset(&r, 0, sizeof(r));
	snprintf(err, sizeof(err), "out of memory");
	if (f && !speedscope_writer.write(p, wopts, f) && !fclose(f)) {
		f = NULL;
		/* the database is the user's: under sudo, made and written as them */
		sudo_fs_enter(&root);
		rc = recording_read_buffer(&r, "the recording", buf, len, err, sizeof(err)) ||
		     open_history(cfg, &db, err, sizeof(err)) ||
		     hist_add_recording(db, &add, &r, &id, err, sizeof(err)) ? -1 : 0;
		hist_db_close(db);
		db = NULL;
		sudo_fs_leave(&root);
	}
	if (f)
		fclose(f);
	if (rc)
		fprintf(stderr, "ebpfprof: history not stored: %s\n", printable(err, shown, sizeof(shown)));
	else
		fprintf(stderr, "ebpfprof: stored as run #%lld of series %s\n", id,
			printable(cfg->history, shown, sizeof(shown)));
	hist_db_close(db);
	recording_free(&r);
	free(buf);
}

static const char *stop_reason(const struct outputs *out)
{
	int sig = out->cfg->stop_signal ? *out->cfg->stop_signal : 0;

	if (sig == SIGINT)
		return "interrupted";
	if (sig)
		return "terminated";
	if (out->m->stopped == CONTROLLER_TARGET_EXITED)
		return "target exited";
	return "duration reached";
}

/* The recording's facts, for the writers and the summary. */
static void recording_info_of(const struct outputs *out, struct recording_info *info)
{
	const struct controller_member *m = out->m;

	*info = (struct recording_info){
		.samples = recorder_kept(&m->rec),
		.lost = controller_lost(m->session),
		.python_major = m->target.major,
		.python_minor = m->target.minor,
		.gc_timing = gc_probe_name(m->gc_probe),
		.stop_reason = stop_reason(out),
		.idle = out->cfg->idle,
		.gil_only = out->cfg->gil_only,
	};
}

/* What the writers may keep besides the samples: the exact GC pauses and
 * waits, and the recording's facts (ebpfprof diff reads them back). */
static void fill_writer_options(const struct outputs *out, struct writer_options *w,
				struct recording_info *info)
{
	recording_info_of(out, info);
	*w = (struct writer_options){ .threads = out->cfg->threads,
				      .analysis = recorder_analysis(&out->m->rec), .info = info,
				      .gc_min_ns = (uint64_t)(out->cfg->gc_min_ms * 1e6),
				      .group_by = out->cfg->group_by };
}

static int write_failed(const char *path, char *err, size_t errlen)
{
	snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
	return -1;
}

/* profile_path NULL: no profile file (--push alone). */
static int write_files(struct outputs *out, const char *profile_path, const char *gc_log_path,
		       char *err, size_t errlen)
{
	struct recorder *rec = &out->m->rec;
	struct writer_options wopts;
	struct recording_info info;

	fill_writer_options(out, &wopts, &info);
	if (profile_path &&
	    writer_write_file(out->cfg->writer, recorder_profile(rec), &wopts, profile_path))
		return write_failed(profile_path, err, errlen);
	if (out->cfg->history)
		store_history(out->cfg, out->several ? profile_path : out->cfg->output_option,
			      recorder_profile(rec), &wopts);
	if (gc_log_path && report_gc_log(gc_log_path, recorder_analysis(rec), recorder_profile(rec),
					 (uint64_t)(out->cfg->wait_threshold_ms * 1e6)))
		return write_failed(gc_log_path, err, errlen);
	return 0;
}

static int has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && !strcmp(s + n - k, suffix);
}

/* --rotate: the files of the period that started at out->period_start,
 * under names no file has yet (a clock stepped back, an earlier run). */
static void period_paths(struct outputs *out, char *prof, char *log, size_t len)
{
	unsigned ms = out->period_start.tv_nsec / 1000000;
	const char *gc_log = out->gc_log;

	do {
		out->rotation.seq++;
		period_name(prof, len, out->output, out->cfg->writer->suffix,
			    out->period_start.tv_sec, ms, out->rotation.seq);
		if (gc_log)
			period_name(log, len, gc_log,
				    has_suffix(gc_log, ".gc.jsonl") ? ".gc.jsonl" : ".jsonl",
				    out->period_start.tv_sec, ms, out->rotation.seq);
	} while (!access(prof, F_OK) || (gc_log && !access(log, F_OK)));
}

/* --push: the period's profile, spooled for the push thread. */
static void push_period(struct outputs *out)
{
	struct writer_options wopts;
	struct recording_info info;
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	fill_writer_options(out, &wopts, &info);
	pusher_period(out->pusher, recorder_profile(&out->m->rec), &wopts,
		      out->period_start.tv_sec + out->period_start.tv_nsec / 1e9,
		      now.tv_sec + now.tv_nsec / 1e9);
}

/* Writes the period's files (with --push, only when -o named them), pushes
 * it, deletes the oldest files beyond --keep. */
static int write_period(struct outputs *out, char *prof, char *log, size_t len, char *err,
			size_t errlen)
{
	const char *paths[3] = { prof, out->gc_log ? log : NULL, NULL };

	log[0] = '\0';

	if (out->pusher)
		push_period(out);
	period_paths(out, prof, log, len);
	if (write_files(out, out->files ? prof : NULL, paths[1], err, errlen))
		return -1;
	if (!out->files) {
		prof[0] = '\0';
		paths[0] = paths[1];
		paths[1] = NULL;
	}
	if (rotation_written(&out->rotation, paths)) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}

int outputs_period(struct outputs *out, struct controller_member *m, char *err, size_t errlen)
{
	char prof[PATH_MAX], log[PATH_MAX];
	struct timespec next_start;
	double secs;

	out->m = m;
	clock_gettime(CLOCK_REALTIME, &next_start);
	secs = recorder_profile(&m->rec)->duration_ns / 1e9;
	if (write_period(out, prof, log, sizeof(prof), err, errlen))
		return -1;
	fprintf(stderr, "ebpfprof: period %u: %.2f s, %lu samples, %s%s\n",
		out->rotation.periods, secs, recorder_kept(&m->rec), prof[0] ? "wrote " : "pushed",
		prof);
	out->period_start = next_start;
	return 0;
}

int outputs_last(struct outputs *out, struct controller_member *m, char *prof, char *log,
		 size_t len, char *err, size_t errlen)
{
	out->m = m;
	prof[0] = log[0] = '\0';
	if (out->cfg->rotate)
		return write_period(out, prof, log, len, err, errlen);
	snprintf(prof, len, "%s", out->files ? out->output : "");
	snprintf(log, len, "%s", out->gc_log ? out->gc_log : "");
	return write_files(out, out->files ? out->output : NULL, out->gc_log, err, errlen);
}

static void print_losses(FILE *f, void *ctx)
{
	struct outputs *out = ctx;

	/* the session's own losses are said once, at the end of several */
	if (!out->several)
		session_print_summary(out->m->session, f, out->cfg->verbose);
	recorder_print_losses(&out->m->rec, f, out->cfg->verbose);
}

void outputs_summary(struct outputs *out, struct controller_member *m, const char *prof,
		     const char *log)
{
	struct recording_info info;
	struct recording_summary s = {
		.info = &info,
		.profile = recorder_profile(&m->rec),
		.analysis = recorder_analysis(&m->rec),
		.children = out->cfg->subprocesses ? (long)recorder_nprocs(&m->rec) - 1 : -1,
		.gc_needs_sys_admin = m->gc_probe == GC_PROBE_NONE &&
				      (m->target.has_usdt || m->target.has_symtab) &&
				      !preflight_sys_admin(),
		.gc_log = out->gc_log && log[0] ? log : NULL,
		.wait_threshold_ms = out->cfg->wait_threshold_ms,
		.format = out->cfg->writer->name,
		.path = prof && prof[0] ? prof : NULL,
		.print_losses = print_losses,
		.ctx = out,
	};

	out->m = m;
	recording_info_of(out, &info);
	report_summary(stderr, &s);
}
