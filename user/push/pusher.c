// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#define _GNU_SOURCE
#include <curl/curl.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "clock.h"
#include "grow.h"
#include "procfs.h"
#include "pusher.h"
#include "writer.h"

int pusher_open(struct pusher *p, const struct push_config *cfg, char *err, size_t len)
{
	pthread_condattr_t ca;

	memset(p, 0, sizeof(*p));
	p->cfg = *cfg;
	pthread_mutex_init(&p->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->wake, &ca);
	pthread_condattr_destroy(&ca);
	if (gethostname(p->host, sizeof(p->host) - 1))
		snprintf(p->host, sizeof(p->host), "unknown");
	for (size_t i = 0; i < cfg->ntags; i++) {
		const char *why = push_tag_invalid(cfg->tags[i]);

		if (why) {
			snprintf(err, len, "%s: %s", why, cfg->tags[i]);
			return -1;
		}
	}
	if (cfg->basic_auth_file && cfg->token_file) {
		snprintf(err, len, "give --push-basic-auth-file or --push-token-file, not both");
		return -1;
	}
	if (push_http_global_init() || push_http_init(&p->http, cfg->url, err, len))
		return -1;
	if (cfg->basic_auth_file && push_http_basic_auth(&p->http, cfg->basic_auth_file, err, len))
		return -1;
	if (cfg->token_file && push_http_bearer(&p->http, cfg->token_file, err, len))
		return -1;
	if (cfg->ca_file && push_http_ca_file(&p->http, cfg->ca_file, err, len))
		return -1;
	if (cfg->tenant && asprintf(&p->http.tenant_header, "X-Scope-OrgID: %s", cfg->tenant) < 0) {
		p->http.tenant_header = NULL;
		snprintf(err, len, "out of memory");
		return -1;
	}
	return spool_open(&p->spool, cfg->spool_dir, cfg->spool_max_bytes, err, len);
}

/* Sleeps ms, or less: until the last round, or (for_new) a request spooled
 * since the count was seen (before the spool was found empty: none is
 * missed). A back-off (!for_new) is not cut short by new periods. */
static void nap(struct pusher *p, unsigned ms, int for_new, unsigned long seen)
{
	struct timespec until;
	uint64_t t = monotonic_ns() + (uint64_t)ms * 1000000ull;

	until.tv_sec = t / 1000000000ull;
	until.tv_nsec = t % 1000000000ull;
	pthread_mutex_lock(&p->lock);
	while (!p->final_round && !(for_new && p->submitted != seen) && monotonic_ns() < t &&
	       pthread_cond_timedwait(&p->wake, &p->lock, &until) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&p->lock);
}

/* Sends the oldest request: 1 sent or rejected (go on), 0 nothing to send,
 * -1 failed (back off). */
static int send_oldest(struct pusher *p)
{
	unsigned long seq;
	char *query, *body, err[256];
	size_t len;
	enum push_result r;
	int got = spool_take_oldest(&p->spool, &seq, &query, &body, &len);

	if (got <= 0)
		return got < 0 ? 1 : 0;	/* an unreadable file was dropped: the next */
	r = push_http_post(&p->http, query, body, len, err, sizeof(err));
	spool_done(&p->spool, seq, r == PUSH_OK ? SPOOL_SENT : r == PUSH_REJECTED ? SPOOL_REJECTED : SPOOL_RETRY);
	free(query);
	free(body);
	if (r == PUSH_OK)
		return 1;
	pthread_mutex_lock(&p->lock);
	snprintf(p->last_error, sizeof(p->last_error), "%s", err);
	if (r == PUSH_RETRY)
		p->retries++;
	pthread_mutex_unlock(&p->lock);
	if (p->cfg.verbose)
		fprintf(stderr, "ebpfprof: push: %s\n", err);
	return r == PUSH_REJECTED ? 1 : -1;
}

static void *push_loop(void *arg)
{
	struct pusher *p = arg;
	unsigned backoff = PUSH_BACKOFF_MIN_MS;
	uint64_t final_deadline = 0;
	unsigned long seen;
	int rc;

	for (;;) {
		pthread_mutex_lock(&p->lock);
		if (p->final_round && !final_deadline)
			final_deadline = monotonic_ns() + PUSH_FINAL_S * 1000000000ull;
		seen = p->submitted;
		pthread_mutex_unlock(&p->lock);
		rc = send_oldest(p);
		if (final_deadline && (rc <= 0 || monotonic_ns() > final_deadline))
			break;	/* the last round stops at the first failure */
		if (rc > 0) {
			backoff = PUSH_BACKOFF_MIN_MS;
			continue;
		}
		nap(p, rc < 0 ? backoff : 3600 * 1000, rc == 0, seen);
		if (rc < 0)
			backoff = backoff * 2 > PUSH_BACKOFF_MAX_MS ? PUSH_BACKOFF_MAX_MS : backoff * 2;
	}
	return NULL;
}

int pusher_start(struct pusher *p, char *err, size_t len)
{
	sigset_t all, old;
	int rc;

	/* only where the requests are sent: not in --match's parent, which
	 * opens the spool only to check it */
	spool_adopt(&p->spool);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&p->thread, NULL, push_loop, p);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		snprintf(err, len, "cannot start the push thread: %s", strerror(rc));
		return -1;
	}
	p->started = 1;
	return 0;
}

/* The labels of process pid, noted at its first period. */
static const struct push_process *process_of(struct pusher *p, pid_t pid, const char *comm)
{
	struct push_process *pr;
	char name[64];

	for (size_t i = 0; i < p->nprocs; i++)
		if (p->procs[i].pid == pid)
			return &p->procs[i];
	if (GROW_ARRAY(p->procs, p->procs_cap, p->nprocs + 1))
		return NULL;
	pr = &p->procs[p->nprocs++];
	memset(pr, 0, sizeof(*pr));
	pr->pid = pid;
	name[0] = '\0';
	procfs_comm(pid, pid, name, sizeof(name));
	snprintf(pr->app, sizeof(pr->app), "%s",
		 p->cfg.app ? p->cfg.app : name[0] ? name : comm ? comm : "python");
	push_process_ids(pid, pr->container, sizeof(pr->container), pr->pod, sizeof(pr->pod));
	return pr;
}

void pusher_forget(struct pusher *p, pid_t pid)
{
	for (size_t i = 0; i < p->nprocs; i++)
		if (p->procs[i].pid == pid)
			p->procs[i--] = p->procs[--p->nprocs];
}

/* "name=...&from=...": the request's query, the name percent-encoded. */
static char *request_query(struct pusher *p, const struct push_process *pr, double from_s,
			   double until_s)
{
	struct push_label labels[PUSH_MAX_LABELS + 8];
	char pid[16], series[PUSH_NAME_MAX], keys[PUSH_MAX_LABELS][PUSH_LABEL_NAME_MAX + 1];
	char *name, *query = NULL;
	size_t n = 0;
	long from = (long)from_s, until = (long)until_s;

	snprintf(pid, sizeof(pid), "%d", (int)pr->pid);
	labels[n++] = (struct push_label){ "pid", pid };
	labels[n++] = (struct push_label){ "host", p->host };
	labels[n++] = (struct push_label){ "container_id", pr->container };
	labels[n++] = (struct push_label){ "pod_uid", pr->pod };
	for (size_t i = 0; i < p->cfg.ntags && i < PUSH_MAX_LABELS; i++) {
		const char *eq = strchr(p->cfg.tags[i], '=');

		snprintf(keys[i], sizeof(keys[i]), "%.*s", (int)(eq - p->cfg.tags[i]), p->cfg.tags[i]);
		labels[n++] = (struct push_label){ keys[i], eq + 1 };
	}
	push_series_name(series, sizeof(series), pr->app, labels, n);
	/* Pyroscope's time is in whole seconds: a period shorter than one
	 * still spans one (until > from) */
	if (until <= from)
		until = from + 1;
	name = curl_easy_escape(NULL, series, 0);
	if (name && asprintf(&query, "name=%s&from=%ld&until=%ld&format=pprof&sampleRate=%u"
			     "&spyName=ebpfprof&units=nanoseconds&aggregationType=sum",
			     name, from, until, p->cfg.rate_hz) < 0)
		query = NULL;
	curl_free(name);
	return query;
}

/* The distinct processes of the profile's threads, in their order. */
static size_t profile_pids(const struct profile *prof, pid_t *pids, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < prof->nthreads; i++) {
		size_t j;

		for (j = 0; j < n && pids[j] != prof->threads[i].pid; j++)
			;
		if (j == n && n < max)
			pids[n++] = prof->threads[i].pid;
	}
	return n;
}

static void push_process(struct pusher *p, const struct profile *prof,
			 const struct writer_options *wo, pid_t pid, const char *comm,
			 double from_s, double until_s)
{
	struct writer_options o = *wo;
	const struct push_process *pr = process_of(p, pid, comm);
	char *body = NULL, *query = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&body, &len);

	o.pid = pid;
	o.state_types = 1;
	if (f && pr && !pprof_writer.write(prof, &o, f) && !fclose(f)) {
		f = NULL;
		query = request_query(p, pr, from_s, until_s);
		if (query && !spool_add(&p->spool, query, body, len)) {
			pthread_mutex_lock(&p->lock);
			p->submitted++;
			pthread_cond_signal(&p->wake);
			pthread_mutex_unlock(&p->lock);
		}
	}
	if (f)
		fclose(f);
	free(query);
	free(body);
}

void pusher_period(struct pusher *p, const struct profile *prof, const struct writer_options *wo,
		   double from_s, double until_s)
{
	pid_t pids[1024];
	size_t n = profile_pids(prof, pids, 1024);

	for (size_t i = 0; i < n; i++) {
		const char *comm = NULL;

		for (size_t t = 0; t < prof->nthreads && !comm; t++)
			if (prof->threads[t].pid == pids[i])
				comm = prof->threads[t].process;
		push_process(p, prof, wo, pids[i], comm, from_s, until_s);
	}
}

void pusher_stop(struct pusher *p)
{
	if (!p->started)
		return;
	pthread_mutex_lock(&p->lock);
	p->final_round = 1;
	pthread_cond_signal(&p->wake);
	pthread_mutex_unlock(&p->lock);
	/* a request under way when the round's time is up is abandoned */
	push_http_abort_at(&p->http, monotonic_ns() + PUSH_FINAL_S * 1000000000ull);
	pthread_join(p->thread, NULL);
	p->started = 0;
}

void pusher_print(struct pusher *p, FILE *f)
{
	struct spool *s = &p->spool;
	size_t pending = spool_pending(s);

	fprintf(f, "ebpfprof: push: %lu of %lu requests sent to %s", s->sent, s->added + s->adopted,
		p->http.url);
	if (s->adopted)
		fprintf(f, " (%lu of them left by an earlier run)", s->adopted);
	if (s->rejected)
		fprintf(f, ", %lu refused by it", s->rejected);
	if (s->dropped)
		fprintf(f, ", %lu dropped (spool full or unwritable)", s->dropped);
	if (pending)
		fprintf(f, ", %zu not sent%s", pending,
			s->temporary ? " (lost: no --spool)" : " (left in the spool)");
	if (s->dropped || pending || s->rejected)
		fprintf(f, "; last error: %s", p->last_error[0] ? p->last_error : "none");
	fputc('\n', f);
}

void pusher_close(struct pusher *p)
{
	pusher_stop(p);
	push_http_free(&p->http);
	spool_close(&p->spool);
	free(p->procs);
	pthread_cond_destroy(&p->wake);
	pthread_mutex_destroy(&p->lock);
	curl_global_cleanup();
}
