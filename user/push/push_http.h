/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * --push's one HTTP request: POST URL/ingest?QUERY through libcurl, the
 * pprof as multipart/form-data ("profile", and "sample_type_config" naming
 * each sample type's unit and aggregation), TLS verified as curl does by
 * default, no redirect followed, only http and https, a time-out on the
 * connection and on the whole request. Credentials come from files
 * (never argv): basic auth "user:password" or a bearer token.
 */
#ifndef EP_PUSH_HTTP_H
#define EP_PUSH_HTTP_H
#include <stddef.h>
#include <stdint.h>

#define PUSH_CONNECT_TIMEOUT_S	10
#define PUSH_REQUEST_TIMEOUT_S	30
#define PUSH_SECRET_MAX		4096

struct push_http {
	char *url;		/* ".../ingest", no trailing '/' doubled */
	char *userpwd;		/* basic auth, or NULL */
	char *auth_header;	/* "Authorization: Bearer ...", or NULL */
	char *ca_file;		/* --push-ca-file, or NULL: the system's */
	char *tenant_header;	/* "X-Scope-OrgID: ...", or NULL */
	char *sample_types;	/* the sample_type_config JSON */
	void *curl;
	uint64_t abort_at_ns;	/* CLOCK_MONOTONIC; 0: none (atomic) */
};

enum push_result { PUSH_OK, PUSH_RETRY, PUSH_REJECTED };

/* A tenant id as Pyroscope (Cortex) takes it: 1 to 150 of letters, digits
 * and !-_.*'(), not "." or "..": 1 if so. */
int push_tenant_valid(const char *id);
/* Once, before any thread: libcurl's global state. */
int push_http_global_init(void);
/* 0, or -1 with a one-line reason: url must be http:// or https://. */
int push_http_init(struct push_http *h, const char *url, char *err, size_t len);
/*
 * Reads a credential file: a regular file of at most 4 KiB, one line (a
 * trailing newline dropped), no control characters. A file that others
 * (not owner, not group) may read or write is refused: the token would be
 * everyone's. 0, or -1 with a one-line reason.
 */
int push_read_secret(const char *path, const char *what, char *out, size_t outlen,
		     char *err, size_t len);
int push_http_basic_auth(struct push_http *h, const char *path, char *err, size_t len);
int push_http_bearer(struct push_http *h, const char *path, char *err, size_t len);
/* https: trust the PEM certificates of path (a readable regular file) instead
 * of the system's. 0, or -1 with a one-line reason. */
int push_http_ca_file(struct push_http *h, const char *path, char *err, size_t len);
/* Sends one request; err says why it failed. */
enum push_result push_http_post(struct push_http *h, const char *query, const void *body,
				size_t blen, char *err, size_t len);
/* A request still under way at CLOCK_MONOTONIC ns (and any after) fails at
 * once: the end of a recording waits for the network only so long. Any thread. */
void push_http_abort_at(struct push_http *h, uint64_t ns);
void push_http_free(struct push_http *h);

#endif
