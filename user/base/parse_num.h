/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The one set of number parsers for the command line (record, top, diff):
 * strict decimal only, bounded, nothing after the number. Each value is
 * converted to an integer or a deadline later, where anything out of range
 * would be undefined behaviour. 0 on success, -1 otherwise (*out unspecified).
 */
#ifndef EP_PARSE_NUM_H
#define EP_PARSE_NUM_H
#include <sys/types.h>

/* A finite decimal number in [min, max] (min excluded if open_min): no inf,
 * nan, hex floats, leading spaces or trailing text. */
int parse_real(const char *s, double min, int open_min, double max, double *out);

/* A decimal integer in [min, max] starting at s: digits only (no sign, space
 * or base prefix). With end, *end is set past the digits and text may follow;
 * without, the string must end there. */
int parse_ulong_at(const char *s, unsigned long min, unsigned long max, const char **end,
		   unsigned long *out);

/* The whole of s: a decimal integer in [min, max]. */
int parse_ulong(const char *s, unsigned long min, unsigned long max, unsigned long *out);

/* A process id: a decimal integer in [1, INT_MAX]. */
int parse_pid(const char *s, pid_t *out);

#endif
