// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#define _GNU_SOURCE
#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "clock.h"
#include "push_http.h"
#include "sudo_user.h"
#include "states.h"
#include "writer.h"

int push_tenant_valid(const char *id)
{
	size_t n = strlen(id);

	if (!n || n > 150 || !strcmp(id, ".") || !strcmp(id, ".."))
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = id[i];

		if (!(c < 0x80 && isalnum(c)) && !strchr("!-_.*'()", c))
			return 0;
	}
	return 1;
}

int push_http_global_init(void)
{
	return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -1;
}

/* Each sample type of the pushed pprof (writer.h), as Pyroscope's
 * sample_type_config describes it: unit, aggregation, display name. */
static char *sample_type_config(void)
{
	char *buf = NULL, name[64];
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	fprintf(f, "{\"samples\":{\"units\":\"samples\",\"aggregation\":\"sum\",\"display-name\":\"cpu_samples\",\"sampled\":true},"
		   "\"cpu\":{\"units\":\"nanoseconds\",\"aggregation\":\"sum\",\"display-name\":\"cpu_nanoseconds\",\"sampled\":true}");
	for (int s = STATE_ON_CPU + 1; s < STATE_RECORDED; s++) {
		pprof_state_type_name(s, name, sizeof(name));
		fprintf(f, ",\"%s\":{\"units\":\"nanoseconds\",\"aggregation\":\"sum\",\"display-name\":\"%s_nanoseconds\"}",
			name, name);
	}
	fputc('}', f);
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

int push_http_init(struct push_http *h, const char *url, char *err, size_t len)
{
	size_t n = strlen(url);

	memset(h, 0, sizeof(*h));
	if (strncmp(url, "http://", 7) && strncmp(url, "https://", 8)) {
		snprintf(err, len, "invalid --push URL: %s (http:// or https://)", url);
		return -1;
	}
	while (n && url[n - 1] == '/')
		n--;
	h->curl = curl_easy_init();
	h->sample_types = sample_type_config();
	if (!h->curl || !h->sample_types || asprintf(&h->url, "%.*s/ingest", (int)n, url) < 0) {
		h->url = NULL;
		snprintf(err, len, "out of memory");
		return -1;
	}
	return 0;
}

/* Opens a credential file named on the command line: under sudo as the
 * user who ran it, so that a file only root may read never reaches the
 * URL they chose. */
static int open_secret(const char *path, const char *what, char *err, size_t len)
{
	struct fs_identity root;
	uid_t uid;
	gid_t gid;
	int fd, e;

	sudo_fs_enter(&root);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	e = errno;
	sudo_fs_leave(&root);
	if (fd >= 0)
		return fd;
	if (e == EACCES && sudo_user(&uid, &gid))
		snprintf(err, len, "cannot read %s %s: %s (read as uid %d, who ran sudo)", what,
			 path, strerror(e), (int)uid);
	else
		snprintf(err, len, "cannot read %s %s: %s", what, path, strerror(e));
	return -1;
}

int push_read_secret(const char *path, const char *what, char *out, size_t outlen,
		     char *err, size_t len)
{
	int fd = open_secret(path, what, err, len);
	struct stat st;
	ssize_t n = -1;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size > PUSH_SECRET_MAX) {
		snprintf(err, len, "%s %s refused: not a regular file of at most 4 KiB", what, path);
	} else if (st.st_mode & 007) {
		snprintf(err, len, "%s %s refused: others may access it (mode %03o; chmod o-rwx)",
			 what, path, (unsigned)(st.st_mode & 0777));
	} else {
		n = read(fd, out, outlen - 1);
		if (n < 0)
			snprintf(err, len, "cannot read %s %s: %s", what, path, strerror(errno));
	}
	close(fd);
	if (n < 0)
		return -1;
	out[n] = '\0';
	while (n && (out[n - 1] == '\n' || out[n - 1] == '\r'))
		out[--n] = '\0';
	for (ssize_t i = 0; i < n; i++)
		if ((unsigned char)out[i] < 0x20 || out[i] == 0x7f) {
			snprintf(err, len, "%s %s refused: more than one line, or a control character", what, path);
			return -1;
		}
	if (!n) {
		snprintf(err, len, "%s %s is empty", what, path);
		return -1;
	}
	return 0;
}

int push_http_basic_auth(struct push_http *h, const char *path, char *err, size_t len)
{
	char secret[PUSH_SECRET_MAX + 1];

	if (push_read_secret(path, "basic auth file", secret, sizeof(secret), err, len))
		return -1;
	if (!strchr(secret, ':')) {
		snprintf(err, len, "basic auth file %s refused: not USER:PASSWORD", path);
		return -1;
	}
	h->userpwd = strdup(secret);
	explicit_bzero(secret, sizeof(secret));
	return h->userpwd ? 0 : -1;
}

int push_http_bearer(struct push_http *h, const char *path, char *err, size_t len)
{
	char secret[PUSH_SECRET_MAX + 1];
	int rc;

	if (push_read_secret(path, "token file", secret, sizeof(secret), err, len))
		return -1;
	rc = asprintf(&h->auth_header, "Authorization: Bearer %s", secret);
	explicit_bzero(secret, sizeof(secret));
	return rc < 0 ? -1 : 0;
}

int push_http_ca_file(struct push_http *h, const char *path, char *err, size_t len)
{
	struct stat st;

	if (stat(path, &st) || !S_ISREG(st.st_mode) || access(path, R_OK)) {
		snprintf(err, len, "--push-ca-file %s: not a readable regular file", path);
		return -1;
	}
	h->ca_file = strdup(path);
	return h->ca_file ? 0 : -1;
}

static size_t discard_body(char *data, size_t size, size_t n, void *ctx)
{
	(void)data;
	(void)ctx;
	return size * n;
}

void push_http_abort_at(struct push_http *h, uint64_t ns)
{
	__atomic_store_n(&h->abort_at_ns, ns, __ATOMIC_RELAXED);
}

/* libcurl calls it about once a second, and as data moves: non-zero aborts. */
static int past_deadline(void *ctx, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
			 curl_off_t ulnow)
{
	struct push_http *h = ctx;
	uint64_t at = __atomic_load_n(&h->abort_at_ns, __ATOMIC_RELAXED);

	(void)dltotal;
	(void)dlnow;
	(void)ultotal;
	(void)ulnow;
	return at && monotonic_ns() > at;
}

static void set_options(struct push_http *h, CURL *c, const char *url)
{
	curl_easy_reset(c);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);	/* a thread: no SIGALRM */
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, (long)PUSH_CONNECT_TIMEOUT_S);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, (long)PUSH_REQUEST_TIMEOUT_S);
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "ebpfprof/" EP_VERSION);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard_body);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, past_deadline);
	curl_easy_setopt(c, CURLOPT_XFERINFODATA, h);
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	if (h->ca_file)
		curl_easy_setopt(c, CURLOPT_CAINFO, h->ca_file);
	if (h->userpwd) {
		curl_easy_setopt(c, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(c, CURLOPT_USERPWD, h->userpwd);
	}
}

static curl_mime *request_body(CURL *c, const struct push_http *h, const void *body, size_t blen)
{
	curl_mime *mime = curl_mime_init(c);
	curl_mimepart *part;

	if (!mime)
		return NULL;
	part = curl_mime_addpart(mime);
	curl_mime_name(part, "profile");
	curl_mime_filename(part, "profile.pprof");
	curl_mime_type(part, "application/octet-stream");
	curl_mime_data(part, body, blen);
	part = curl_mime_addpart(mime);
	curl_mime_name(part, "sample_type_config");
	curl_mime_filename(part, "sample_type_config.json");
	curl_mime_type(part, "application/json");
	curl_mime_data(part, h->sample_types, CURL_ZERO_TERMINATED);
	return mime;
}

/* 5xx, 408 and 429 may pass; another 4xx never will (a bad request, a
 * refused token): retrying it would only fill the spool. */
static enum push_result judge(long status)
{
	if (status >= 200 && status < 300)
		return PUSH_OK;
	if (status >= 400 && status < 500 && status != 408 && status != 429)
		return PUSH_REJECTED;
	return PUSH_RETRY;
}

enum push_result push_http_post(struct push_http *h, const char *query, const void *body,
				size_t blen, char *err, size_t len)
{
	struct curl_slist *headers = NULL;
	curl_mime *mime;
	char *url = NULL;
	long status = 0;
	CURLcode rc;

	if (asprintf(&url, "%s?%s", h->url, query) < 0) {
		snprintf(err, len, "out of memory");
		return PUSH_RETRY;
	}
	set_options(h, h->curl, url);
	mime = request_body(h->curl, h, body, blen);
	if (h->auth_header)
		headers = curl_slist_append(headers, h->auth_header);
	if (h->tenant_header)
		headers = curl_slist_append(headers, h->tenant_header);
	/* no "Expect: 100-continue" round trip for every period */
	headers = curl_slist_append(headers, "Expect:");
	curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(h->curl, CURLOPT_MIMEPOST, mime);
	rc = curl_easy_perform(h->curl);
	if (rc == CURLE_OK)
		curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, NULL);
	curl_slist_free_all(headers);
	curl_mime_free(mime);
	free(url);
	if (rc != CURLE_OK) {
		snprintf(err, len, "%s", curl_easy_strerror(rc));
		return PUSH_RETRY;
	}
	snprintf(err, len, "HTTP %ld", status);
	return judge(status);
}

void push_http_free(struct push_http *h)
{
	if (h->curl)
		curl_easy_cleanup(h->curl);
	if (h->userpwd)
		explicit_bzero(h->userpwd, strlen(h->userpwd));
	if (h->auth_header)
		explicit_bzero(h->auth_header, strlen(h->auth_header));
	free(h->userpwd);
	free(h->auth_header);
	free(h->ca_file);
	free(h->tenant_header);
	free(h->sample_types);
	free(h->url);
	memset(h, 0, sizeof(*h));
}
