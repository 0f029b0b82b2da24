/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The one reader of text lines from /proc (maps, status, fdinfo, net
 * tables). Many of those lines hold text a target chose (a mapping's path,
 * a socket's name), so a line is never split: a line longer than the
 * buffer is skipped whole, never parsed piecewise, and its tail never read
 * as a line of its own.
 */
#ifndef EP_LINE_READ_H
#define EP_LINE_READ_H
#include <stddef.h>
#include <stdio.h>

/*
 * Reads the next line of f that fits in buf (size bytes, its '\n' dropped,
 * NUL-terminated) and returns its length, or -1 at the end of f (or on an
 * error). A line longer than size - 1 bytes, or holding a NUL, is read to
 * its end and skipped, and *skipped (when not NULL) counts it. The last
 * line may lack its '\n'.
 */
long line_read(FILE *f, char *buf, size_t size, unsigned long *skipped);

#endif
