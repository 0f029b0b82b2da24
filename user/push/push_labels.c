// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <ctype.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "push_labels.h"

static int is_name_char(int c, int first)
{
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (!first && c >= '0' && c <= '9');
}

int push_label_name_valid(const char *name)
{
	size_t n = strlen(name);

	if (!n || n > PUSH_LABEL_NAME_MAX || !strncmp(name, "__", 2))
		return -1;
	for (size_t i = 0; i < n; i++)
		if (!is_name_char((unsigned char)name[i], i == 0))
			return -1;
	return 0;
}

const char *push_tag_invalid(const char *tag)
{
	const char *eq = strchr(tag, '=');
	char name[PUSH_LABEL_NAME_MAX + 2];

	if (!eq || (size_t)(eq - tag) > PUSH_LABEL_NAME_MAX)
		return "invalid --tag for --push (KEY=VALUE, KEY of letters, digits and _, not starting with a digit or __)";
	snprintf(name, sizeof(name), "%.*s", (int)(eq - tag), tag);
	if (push_label_name_valid(name))
		return "invalid --tag for --push (KEY=VALUE, KEY of letters, digits and _, not starting with a digit or __)";
	if (!eq[1] || strlen(eq + 1) > PUSH_LABEL_VALUE_MAX)
		return "invalid --tag for --push (a VALUE of 1 to 256 characters)";
	return NULL;
}

/* value into out, every character not in keep (nor a letter or digit) as '_' */
static void clean(char *out, size_t len, const char *value, const char *keep)
{
	size_t n = 0;

	if (!len)
		return;
	for (; *value && n + 1 < len && n < PUSH_LABEL_VALUE_MAX; value++) {
		unsigned char c = *value;

		out[n++] = (c < 0x80 && isalnum(c)) || (c && strchr(keep, c)) ? c : '_';
	}
	out[n] = '\0';
}

void push_label_value(char *out, size_t len, const char *value)
{
	clean(out, len, value, "-_.:/@+");
}

void push_series_name(char *out, size_t len, const char *app,
		      const struct push_label *labels, size_t n)
{
	char name[PUSH_LABEL_VALUE_MAX + 1], value[PUSH_LABEL_VALUE_MAX + 1];
	size_t used;
	int first = 1;

	/* an application name takes fewer characters than a value */
	clean(name, sizeof(name), app, "-_./");
	used = snprintf(out, len, "%s{", name[0] ? name : "python");
	for (size_t i = 0; i < n && i < PUSH_MAX_LABELS && used < len; i++) {
		if (!labels[i].value || !labels[i].value[0])
			continue;
		push_label_value(value, sizeof(value), labels[i].value);
		used += snprintf(out + used, len - used, "%s%s=%s", first ? "" : ",",
				 labels[i].name, value);
		first = 0;
	}
	if (used < len)
		snprintf(out + used, len - used, "}");
}

/* The 64-hex-digit run that starts at p, or 0. */
static int hex64_at(const char *p)
{
	for (int i = 0; i < 64; i++)
		if (!isxdigit((unsigned char)p[i]))
			return 0;
	return !isxdigit((unsigned char)p[64]);
}

static void find_container(const char *cg, char *out, size_t len)
{
	for (const char *p = cg; *p; p++) {
		int at_start = p == cg || !isxdigit((unsigned char)p[-1]);

		if (at_start && hex64_at(p)) {
			snprintf(out, len, "%.64s", p);
			return;
		}
	}
}

/* "pod" then a UUID, its dashes written as '_' by systemd's slice names. */
static void find_pod(const char *cg, char *out, size_t len)
{
	static const int dash_at[] = { 8, 13, 18, 23 };

	for (const char *p = strstr(cg, "pod"); p; p = strstr(p + 1, "pod")) {
		const char *u = p + 3;
		char uuid[37];
		int ok = 1, d = 0;

		for (int i = 0; i < 36 && ok; i++) {
			if (d < 4 && i == dash_at[d]) {
				ok = u[i] == '-' || u[i] == '_';
				uuid[i] = '-';
				d++;
			} else {
				ok = isxdigit((unsigned char)u[i]);
				uuid[i] = tolower((unsigned char)u[i]);
			}
		}
		if (ok && !isxdigit((unsigned char)u[36])) {
			uuid[36] = '\0';
			snprintf(out, len, "%s", uuid);
			return;
		}
	}
}

void push_cgroup_ids(const char *cgroup, char *container, size_t clen, char *pod, size_t plen)
{
	if (clen)
		container[0] = '\0';
	if (plen)
		pod[0] = '\0';
	find_container(cgroup, container, clen);
	find_pod(cgroup, pod, plen);
}

void push_process_ids(pid_t pid, char *container, size_t clen, char *pod, size_t plen)
{
	char path[64], buf[8192];
	ssize_t n = -1;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
	}
	buf[n > 0 ? n : 0] = '\0';
	push_cgroup_ids(buf, container, clen, pod, plen);
}
