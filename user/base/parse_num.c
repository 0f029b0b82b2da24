// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "parse_num.h"

int parse_real(const char *s, double min, int open_min, double max, double *out)
{
	char *end;

	if (strpbrk(s, "xXpP") || strcasestr(s, "inf") || strcasestr(s, "nan") || isspace(*s))
		return -1;	/* strtod would take them */
	errno = 0;
	*out = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(*out))
		return -1;
	if (*out < min || (open_min && *out == min) || *out > max)
		return -1;
	return 0;
}

int parse_ulong_at(const char *s, unsigned long min, unsigned long max, const char **end,
		   unsigned long *out)
{
	char *stop;

	if (*s < '0' || *s > '9')
		return -1;	/* strtoul would take a sign or spaces */
	errno = 0;
	*out = strtoul(s, &stop, 10);
	if (errno || (!end && *stop) || *out < min || *out > max)
		return -1;
	if (end)
		*end = stop;
	return 0;
}

int parse_ulong(const char *s, unsigned long min, unsigned long max, unsigned long *out)
{
	return parse_ulong_at(s, min, max, NULL, out);
}

int parse_pid(const char *s, pid_t *out)
{
	unsigned long v;

	if (parse_ulong(s, 1, INT_MAX, &v))
		return -1;
	*out = (pid_t)v;
	return 0;
}
