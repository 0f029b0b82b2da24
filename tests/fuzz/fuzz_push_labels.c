// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target of --push's labels (user/push/push_labels.c): a process's
 * cgroup path is its own to choose (a cgroup it can write), its name too.
 * Input: the bytes, NUL-terminated, as /proc/PID/cgroup and as a service
 * name and label value. The container id must be "" or 64 hex digits, the
 * pod "" or a lower-case UUID, and the series name one "APP{k=v}" with no
 * character the name syntax could misread (abort otherwise).
 */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "push_labels.h"

static void check_ids(const char *container, const char *pod)
{
	size_t n = strlen(container);

	if (n && n != 64)
		abort();
	for (size_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char)container[i]))
			abort();
	n = strlen(pod);
	if (n && n != 36)
		abort();
	for (size_t i = 0; i < n; i++)
		if (!(pod[i] == '-' ? i == 8 || i == 13 || i == 18 || i == 23 :
		      isdigit((unsigned char)pod[i]) || (pod[i] >= 'a' && pod[i] <= 'f')))
			abort();
}

static void check_name(const char *name)
{
	const char *open = strchr(name, '{');

	if (!open || strchr(open + 1, '{') || strchr(name, '}') != name + strlen(name) - 1)
		abort();
	if (strchr(open, ',') || strchr(open, '=') != strrchr(open, '='))
		abort();
	for (const char *c = name; *c; c++)
		if ((unsigned char)*c < 0x21 || (unsigned char)*c > 0x7e)
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1), container[80], pod[48], name[PUSH_NAME_MAX];
	struct push_label label = { "v", NULL };

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	push_cgroup_ids(text, container, sizeof(container), pod, sizeof(pod));
	check_ids(container, pod);
	label.value = text;
	push_series_name(name, sizeof(name), text, &label, 1);
	check_name(name);
	free(text);
	return 0;
}
