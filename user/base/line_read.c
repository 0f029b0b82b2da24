// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Whole lines only (see line_read.h). */
#include <string.h>
#include "line_read.h"

long line_read(FILE *f, char *buf, size_t size, unsigned long *skipped)
{
	size_t len;
	int c, cut;

	if (size < 2)
		return -1;
	for (;;) {
		len = 0;
		cut = 0;
		while ((c = getc(f)) != EOF && c != '\n') {
			if (len + 1 < size)
				buf[len++] = c;
			else
				cut = 1;	/* read on to the line's end, keeping nothing */
		}
		if (c == EOF && !len && !cut)
			return -1;
		/* a NUL would end the line early for every parser: as bad as cut */
		if (!cut && !memchr(buf, 0, len)) {
			buf[len] = 0;
			return len;
		}
		if (skipped)
			(*skipped)++;
		if (c == EOF)
			return -1;
	}
}
