// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdlib.h>
#include <string.h>
#include "atomic_file.h"
#include "grow.h"
#include "json.h"
#include "utf8.h"
#include "printable.h"
#include "report.h"
#include "states.h"
#include "writer.h"

static const char *thread_name(const struct profile *p, int pid, int tid)
{
	const char *name = thread_display_name(profile_thread_name(p, pid, tid), NULL, pid, tid);

	return name ? name : "?";
}

/* Names come from the target: on a terminal, escapes must stay text. */
#define SHOWN_MAX	512

static const char *shown_thread_name(const struct profile *p, int pid, int tid, char *buf)
{
	return printable(thread_name(p, pid, tid), buf, SHOWN_MAX);
}

/* Copies at most max bytes of UTF-8 s, never cutting a character. */
static void utf8_cut(char *out, const char *s, size_t max)
{
	size_t n = utf8_prefix(s, (size_t)-1, max);

	memcpy(out, s, n);
	out[n] = 0;
}

/* Pads UTF-8 s with spaces to `width` characters (not bytes). */
static void print_padded(FILE *f, const char *s, int width)
{
	size_t chars = utf8_chars(s);

	fputs(s, f);
	for (; chars < (size_t)width; chars++)
		fputc(' ', f);
}

void report_thread_table(FILE *f, const struct analysis *a, const struct profile *p)
{
	struct thread_states *ts;
	size_t i, j, n = analysis_thread_states(a, p, &ts);
	double total = p->duration_ns ? p->duration_ns : 1;

	/* a column per state with a column title, in the order of enum
	 * sample_state: the order a reader scans for trouble */
	fprintf(f, "  %-24s", "thread");
	for (j = 0; j < STATE_MAX; j++)
		if (state_table[j].column)
			fprintf(f, " %12s", state_table[j].column);
	fputc('\n', f);
	for (i = 0; i < n; i++) {
		char label[128], cut[32], name[SHOWN_MAX];

		snprintf(label, sizeof(label), "%d %s", ts[i].tid,
			 shown_thread_name(p, ts[i].pid, ts[i].tid, name));
		utf8_cut(cut, label, 24);
		fputs("  ", f);
		print_padded(f, cut, 24);
		for (j = 0; j < STATE_MAX; j++) {
			uint64_t ns = ts[i].ns[j];

			if (state_table[j].column)
				fprintf(f, " %6.2fs %3.0f%%", ns / 1e9, 100.0 * ns / total);
		}
		fputc('\n', f);
	}
	free(ts);
}

/* Label values shown per label in the summary, the longest first. */
#define LABEL_ROWS_SHOWN	20

static const struct label_table *sort_table;

static int by_total_desc(const void *x, const void *y)
{
	uint64_t a = label_value_total(&sort_table->v[*(const size_t *)x]);
	uint64_t b = label_value_total(&sort_table->v[*(const size_t *)y]);

	return a < b ? 1 : a > b ? -1 : 0;
}

/* One label's values with time, the longest first, into a malloc'ed
 * array; *total gets their time summed. */
static size_t label_rows(const struct label_table *t, int label, size_t **out, uint64_t *total)
{
	size_t i, n = 0, *rows = malloc((t->n ? t->n : 1) * sizeof(*rows));

	*total = 0;
	*out = rows;
	if (!rows)
		return 0;
	for (i = 0; i < t->n; i++) {
		if (t->v[i].label != label || !label_value_total(&t->v[i]))
			continue;
		rows[n++] = i;
		*total += label_value_total(&t->v[i]);
	}
	sort_table = t;
	qsort(rows, n, sizeof(*rows), by_total_desc);
	return n;
}

static void print_label_row(FILE *f, const struct label_value *v, double total)
{
	char cut[32], shown[SHOWN_MAX];
	int j;

	utf8_cut(cut, printable(v->value, shown, sizeof(shown)), 24);
	fputs("  ", f);
	print_padded(f, cut, 24);
	for (j = 0; j < STATE_MAX; j++)
		if (state_table[j].column)
			fprintf(f, " %6.2fs %3.0f%%", v->ns[j] / 1e9, 100.0 * v->ns[j] / total);
	fputc('\n', f);
}

void report_label_tables(FILE *f, const struct analysis *a)
{
	const struct label_table *t = &a->labels;
	size_t *rows, n, i;
	uint64_t total;
	char shown[SHOWN_MAX];
	int label, j;

	for (label = 0; label < t->nnames; label++) {
		n = label_rows(t, label, &rows, &total);
		fprintf(f, "ebpfprof: label %s: %zu value%s, %.2f s of stacks under it (shares of that time)\n",
			printable(t->names[label], shown, sizeof(shown)), n, n == 1 ? "" : "s",
			total / 1e9);
		if (n) {
			fprintf(f, "  %-24s", "value");
			for (j = 0; j < STATE_MAX; j++)
				if (state_table[j].column)
					fprintf(f, " %12s", state_table[j].column);
			fputc('\n', f);
		}
		for (i = 0; i < n && i < LABEL_ROWS_SHOWN; i++)
			print_label_row(f, &t->v[rows[i]], total ? total : 1);
		if (n > LABEL_ROWS_SHOWN)
			fprintf(f, "  ... %zu more values in the recording's ebpfprof.labels\n",
				n - LABEL_ROWS_SHOWN);
		free(rows);
	}
}

/* "f (file:line) < g (file:line) < ...": innermost first, a few frames. */
static void print_stack(FILE *f, const struct profile *p, const struct interval *iv, int max)
{
	char buf[SHOWN_MAX];
	int i, shown = 0;

	for (i = (int)iv->nframes - 1; i >= 0 && shown < max; i--, shown++) {
		const struct frame_info *fr = &p->frames[iv->frames[i]];

		fprintf(f, "%s%s", shown ? " < " : "", printable(fr->name, buf, sizeof(buf)));
		if (fr->file)
			fprintf(f, " (%s:%d)", printable(fr->file, buf, sizeof(buf)), fr->line);
	}
	if (!iv->nframes)
		fprintf(f, "(no Python stack)");
}

static int by_duration_desc(const void *x, const void *y)
{
	const struct interval *a = *(const struct interval *const *)x;
	const struct interval *b = *(const struct interval *const *)y;
	uint64_t da = a->end_ns - a->start_ns, db = b->end_ns - b->start_ns;

	return da < db ? 1 : da > db ? -1 : 0;
}

void report_longest_gc(FILE *f, const struct analysis *a, const struct profile *p, size_t max)
{
	const struct interval **order;
	uint64_t total = 0;
	size_t i;

	if (!a->gcs.n)
		return;
	order = malloc(a->gcs.n * sizeof(*order));
	if (!order)
		return;
	for (i = 0; i < a->gcs.n; i++) {
		order[i] = &a->gcs.v[i];
		total += a->gcs.v[i].end_ns - a->gcs.v[i].start_ns;
	}
	qsort(order, a->gcs.n, sizeof(*order), by_duration_desc);
	fprintf(f, "ebpfprof: %zu garbage collections, %.3f s in total; the longest:\n",
		a->gcs.n, total / 1e9);
	for (i = 0; i < a->gcs.n && i < max; i++) {
		const struct interval *g = order[i];
		char name[SHOWN_MAX];

		fprintf(f, "  gen %d %8.2f ms  thread %d %s  in ", g->generation,
			(g->end_ns - g->start_ns) / 1e6, g->tid,
			shown_thread_name(p, g->pid, g->tid, name));
		print_stack(f, p, g, 4);
		fputc('\n', f);
	}
	free(order);
}

/* "2.41 s behind hog (602) in tally_orders (app.py:12)" for each holder,
 * largest first (at most max), then what is not attributed. */
static void print_shares(FILE *f, const struct profile *p, int pid, const struct blame_share *v,
			 size_t n, int gc, size_t max)
{
	char name[SHOWN_MAX], buf[SHOWN_MAX];
	size_t i, shown = 0;

	for (i = 0; i < n; i++) {
		const struct frame_info *fr = v[i].top_ns > 0 && v[i].top_frame < p->nframes ?
					      &p->frames[v[i].top_frame] : NULL;

		if (v[i].holder > 0 && shown++ >= max)
			continue;
		fprintf(f, "%s%.2f s ", i ? ", " : "", v[i].ns / 1e9);
		if (v[i].holder <= 0) {
			fputs(v[i].holder == GB_CHANGED ? "while the GIL changed hands" :
			      v[i].holder == GB_HANDOFF ? "handing the GIL over" :
			      "behind a holder not known", f);
			continue;
		}
		fprintf(f, "behind %s (%d)", shown_thread_name(p, pid, v[i].holder, name),
			v[i].holder);
		if (!fr)
			continue;
		fprintf(f, gc ? " collecting, triggered in %s" : " in %s",
			printable(fr->name, buf, sizeof(buf)));
		if (fr->file)
			fprintf(f, " (%s:%d)", printable(fr->file, buf, sizeof(buf)), fr->line);
	}
	if (shown > max)
		fprintf(f, ", %zu more", shown - max);
}

/* Whether chunk c's waiter is among seen[0..n), else adds it (a few
 * threads, where the chunks are one per drain); -1: no memory. */
static int waiter_seen(const struct blame_chunk *c, struct blame_chunk **seen, size_t *n,
		       size_t *cap)
{
	size_t j;

	for (j = 0; j < *n; j++)
		if ((*seen)[j].pid == c->pid && (*seen)[j].waiter == c->waiter)
			return 1;
	if (GROW_ARRAY(*seen, *cap, *n + 1))
		return -1;
	(*seen)[(*n)++] = *c;
	return 0;
}

void report_gil_blame(FILE *f, const struct analysis *a, const struct profile *p)
{
	const struct gil_blame *b = &a->blame;
	struct blame_chunk *seen = NULL;
	struct blame_share *v;
	char name[SHOWN_MAX];
	size_t i, j, n, nseen = 0, seen_cap = 0;
	uint64_t total;
	int gc, header = 0;

	for (i = 0; i < b->n; i++) {
		if (waiter_seen(&b->v[i], &seen, &nseen, &seen_cap))
			continue;
		for (gc = 0; gc < 2; gc++) {
			n = gil_blame_of(b, p, b->v[i].pid, b->v[i].waiter, gc, &v);
			for (total = 0, j = 0; j < n; j++)
				total += v[j].ns;
			if (total >= GIL_BLAME_SHOWN_NS) {
				if (!header++)
					fprintf(f, "ebpfprof: who held the GIL while threads waited for it:\n");
				fprintf(f, "  %s (%d) waited %.2f s for %s: ",
					shown_thread_name(p, b->v[i].pid, b->v[i].waiter, name),
					b->v[i].waiter, total / 1e9, gc ? "GC" : "the GIL");
				print_shares(f, p, b->v[i].pid, v, n, gc, 3);
				fputc('\n', f);
			}
			free(v);
		}
	}
	free(seen);
	if (b->folded_count)
		fprintf(f, "ebpfprof: %.2f s of GIL waits (%llu) behind PyThreadStates past the first %d never seen in a sample (the GIL's last holder is the target's to write) are counted as behind a holder not known\n",
			b->folded_ns / 1e9, (unsigned long long)b->folded_count, GB_UNNAMED_MAX);
}

void report_summary(FILE *f, const struct recording_summary *s)
{
	const struct recording_info *info = s->info;
	const struct profile *p = s->profile;

	fprintf(f, "ebpfprof: recorded %.2f s (%s): %lu samples, %llu lost, %zu thread%s, CPython %d.%d, GC timed by %s\n",
		p->duration_ns / 1e9, info->stop_reason, info->samples, info->lost, p->nthreads,
		p->nthreads == 1 ? "" : "s", info->python_major, info->python_minor, info->gc_timing);
	if (s->children >= 0)
		fprintf(f, "ebpfprof: followed %ld child process%s\n", s->children,
			s->children == 1 ? "" : "es");
	if (s->print_losses)
		s->print_losses(f, s->ctx);
	if (s->gc_needs_sys_admin)
		fprintf(f, "ebpfprof: GC pauses timed by samples only: the kernel attaches the GC probes (uprobes) only for CAP_SYS_ADMIN\n");
	report_thread_table(f, s->analysis, p);
	report_label_tables(f, s->analysis);
	report_gil_blame(f, s->analysis, p);
	report_longest_gc(f, s->analysis, p, 5);
	if (s->gc_log)
		fprintf(f, "ebpfprof: wrote GC pauses and waits over %.1f ms to %s\n",
			s->wait_threshold_ms, s->gc_log);
	if (s->path)	/* --push without -o writes no file */
		fprintf(f, "ebpfprof: wrote %s profile to %s\n", s->format, s->path);
}

/* "key":[frames innermost first] */
static void json_stack(FILE *f, const struct profile *p, const char *key, const uint32_t *frames,
		       uint32_t nframes)
{
	int i;

	fprintf(f, "\"%s\":[", key);
	for (i = (int)nframes - 1; i >= 0; i--) {
		const struct frame_info *fr = &p->frames[frames[i]];

		fputs(i == (int)nframes - 1 ? "{\"name\":" : ",{\"name\":", f);
		json_write_string(f, fr->name);
		if (fr->file) {
			fputs(",\"file\":", f);
			json_write_string(f, fr->file);
			fprintf(f, ",\"line\":%d", fr->line);
		}
		fputc('}', f);
	}
	fputc(']', f);
}

/* A GIL wait's holder: its tid, name and stack during the wait; null when
 * not attributed, and why. */
static void json_holder(FILE *f, const struct profile *p, const struct interval *iv)
{
	if (iv->holder <= 0) {
		fprintf(f, ",\"holder_tid\":null,\"holder_thread\":null,\"holder_unattributed\":\"%s\"",
			iv->holder == GB_CHANGED ? "changed-hands" :
			iv->holder == GB_HANDOFF ? "handed-over" : "unknown");
		return;
	}
	fprintf(f, ",\"holder_tid\":%d,\"holder_thread\":", iv->holder);
	json_write_string(f, thread_name(p, iv->pid, iv->holder));
	fputc(',', f);
	json_stack(f, p, "holder_stack", iv->holder_frames, iv->holder_nframes);
}

static void json_interval(FILE *f, const struct profile *p, const struct interval *iv,
			  const char *type)
{
	fprintf(f, "{\"type\":\"%s\",\"pid\":%d,\"tid\":%d,\"thread\":", type, iv->pid, iv->tid);
	json_write_string(f, thread_name(p, iv->pid, iv->tid));
	fprintf(f, ",\"start_s\":%.9f,\"duration_s\":%.9f", iv->start_ns / 1e9,
		(iv->end_ns - iv->start_ns) / 1e9);
	if (iv->state == STATE_GC)
		fprintf(f, ",\"generation\":%d,\"collected\":%lld", iv->generation,
			(long long)iv->collected);
	else
		fprintf(f, ",\"reason\":\"%s\"", sample_state_name(iv->state));
	fputc(',', f);
	json_stack(f, p, "stack", iv->frames, iv->nframes);
	if (iv->state == STATE_GIL_WAIT || iv->state == STATE_GIL_WAIT_GC)
		json_holder(f, p, iv);
	fputs("}\n", f);
}

static int write_log(FILE *f, const struct analysis *a, const struct profile *p,
		     uint64_t min_wait_ns)
{
	size_t i;

	/* start_s values are relative to this CLOCK_MONOTONIC instant, the clock
	 * of Python's time.monotonic(), so the log lines up with the app's own */
	fprintf(f, "{\"type\":\"session\",\"monotonic_start_s\":%.9f,\"duration_s\":%.9f}\n",
		p->start_monotonic_ns / 1e9, p->duration_ns / 1e9);

	for (i = 0; i < a->gcs.n; i++)
		json_interval(f, p, &a->gcs.v[i], "gc");
	for (i = 0; i < a->waits.n; i++)
		if (a->waits.v[i].end_ns - a->waits.v[i].start_ns >= min_wait_ns)
			json_interval(f, p, &a->waits.v[i], "wait");
	return ferror(f) ? -1 : 0;
}

struct gc_log_job {
	const struct analysis *a;
	const struct profile *p;
	uint64_t min_wait_ns;
};

static int write_log_job(FILE *f, void *ctx)
{
	const struct gc_log_job *job = ctx;

	return write_log(f, job->a, job->p, job->min_wait_ns);
}

int report_gc_log(const char *path, const struct analysis *a, const struct profile *p,
		  uint64_t min_wait_ns)
{
	struct gc_log_job job = { .a = a, .p = p, .min_wait_ns = min_wait_ns };

	/* the profile's own atomic write: same checks, mode and owner */
	return atomic_file_write(path, 0, write_log_job, &job);
}
