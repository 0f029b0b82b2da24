/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Text from the target (thread names, comm, paths) made safe to print on a
 * terminal: control characters and invalid UTF-8 never reach stderr raw.
 */
#ifndef EP_PRINTABLE_H
#define EP_PRINTABLE_H
#include <stddef.h>

/*
 * Copies s into out (out_size > 0, NUL-terminated), with C0 and C1 control
 * characters, DEL, backslash and bytes that are not valid UTF-8 written as
 * \xHH. Cut to fit, never in the middle of a character or an escape.
 * Returns out.
 */
char *printable(const char *s, char *out, size_t out_size);

#endif
