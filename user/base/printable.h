/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Text from the target (thread names, comm, paths) made safe to print on a
 * terminal: control characters and invalid UTF-8 never reach stderr raw.
 */
#ifndef EP_PRINTABLE_H
#define EP_PRINTABLE_H
#include <stddef.h>

/*
 * The one escaper of every text output (stderr, dump, top, diff, the
 * summary table): copies s into out (out_size > 0, NUL-terminated), with
 * C0 control characters, DEL, C1 control characters (U+0080..U+009F in
 * UTF-8), bidi controls (U+061C, U+200E/F, U+202A..E, U+2066..9), backslash
 * and bytes that are not valid UTF-8 written as \xHH, one escape per byte
 * (U+202E is \xe2\x80\xae). Cut to fit, never in the middle of a
 * character or an escape. Returns out.
 */
char *printable(const char *s, char *out, size_t out_size);

#endif
