/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * --push's series names: Pyroscope's ingest takes an application name with
 * its labels, "APP{k=v,...}", in the name query parameter. Label names are
 * held to Pyroscope's (Prometheus') rules; the name syntax has no escapes, so
 * a value keeps only characters it cannot misread, the others become '_'.
 * The container and pod come from the process's cgroup path, which the
 * process itself may choose (a cgroup it can write): only what looks like a
 * runtime's id is taken from it.
 */
#ifndef EP_PUSH_LABELS_H
#define EP_PUSH_LABELS_H
#include <stddef.h>
#include <sys/types.h>

#define PUSH_MAX_LABELS		40
#define PUSH_LABEL_NAME_MAX	64
#define PUSH_LABEL_VALUE_MAX	256
#define PUSH_NAME_MAX		(PUSH_MAX_LABELS * (PUSH_LABEL_NAME_MAX + PUSH_LABEL_VALUE_MAX + 2) + 256)

struct push_label {
	const char *name, *value;
};

/* 0 if name is a label name: [A-Za-z_][A-Za-z0-9_]*, at most 64, no "__"
 * prefix (reserved); else -1. */
int push_label_name_valid(const char *name);
/* --tag KEY=VALUE for --push: NULL if valid, else why not. */
const char *push_tag_invalid(const char *tag);
/* value with every character the name syntax could misread as '_', cut to
 * PUSH_LABEL_VALUE_MAX: letters, digits and -_.:/@+ are kept. */
void push_label_value(char *out, size_t len, const char *value);
/* "APP{k=v,...}" into out (len >= PUSH_NAME_MAX): in app every character
 * but letters, digits and -_./ as '_' (an application name's), values
 * cleaned by push_label_value(), labels in the order given, those with an
 * empty value left out. */
void push_series_name(char *out, size_t len, const char *app,
		      const struct push_label *labels, size_t n);
/* From a /proc/PID/cgroup text: the container id (64 hex digits) and the
 * Kubernetes pod uid ("pod" then a UUID, '_' read as '-'), "" when absent. */
void push_cgroup_ids(const char *cgroup, char *container, size_t clen, char *pod, size_t plen);
/* The same from /proc/pid/cgroup itself (at most 8 KiB of it read). */
void push_process_ids(pid_t pid, char *container, size_t clen, char *pod, size_t plen);

#endif
