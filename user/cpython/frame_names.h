/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * How frames are named in every output, as py-spy names them:
 *   --full-filenames off (the default): a file of the standard library or of
 *     an installed package is shown from the package root, as its import
 *     names it ("threading.py", "json/decoder.py", "requests/api.py");
 *     the application's own files keep their full path.
 *   --nolineno: no line numbers, so a function is one frame.
 */
#ifndef EP_FRAME_NAMES_H
#define EP_FRAME_NAMES_H
#include <stddef.h>

struct frame_naming {
	int full_filenames;
	int nolineno;
};

/* The options that set it, for the subcommands' argp tables. */
enum { FRAME_OPT_FULL_FILENAMES = 0x180, FRAME_OPT_NOLINENO };
#define FRAME_NAMING_OPTIONS \
	{ "full-filenames", FRAME_OPT_FULL_FILENAMES, NULL, 0, "Full paths for standard library and installed package files (default: from the package root, as py-spy shows them)", 0 }, \
	{ "nolineno", FRAME_OPT_NOLINENO, NULL, 0, "No line numbers: one frame per function, named without a line", 0 }

/* argp: 1 if key was one of those options (noted in *n), else 0. */
int frame_naming_option(int key, struct frame_naming *n);

/* Set once, before any frame is named (the process's command line). */
void frame_naming_set(const struct frame_naming *n);

/* The part of path shown: a suffix of path (never a copy), or path itself. */
const char *frame_short_filename(const char *path);

/* Applies the naming to a symbolized frame's file and lines, in place (the
 * symbolizer calls it: the naming knows nothing of the symbolizer). */
void frame_naming_apply(const char **file, int *line, int *firstlineno);

#endif
