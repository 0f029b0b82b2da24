// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <string.h>
#include "frame_names.h"

static struct frame_naming naming;

void frame_naming_set(const struct frame_naming *n)
{
	naming = *n;
}

int frame_naming_option(int key, struct frame_naming *n)
{
	if (key == FRAME_OPT_FULL_FILENAMES)
		n->full_filenames = 1;
	else if (key == FRAME_OPT_NOLINENO)
		n->nolineno = 1;
	else
		return 0;
	return 1;
}

/* Where the part after an installation directory starts, or NULL. */
static const char *after_dir(const char *path, const char *dir)
{
	const char *hit = NULL, *p = path;

	/* the last one: a venv inside a site-packages tree names the inner one */
	while ((p = strstr(p, dir))) {
		hit = p + strlen(dir);
		p = hit;
	}
	return hit && *hit ? hit : NULL;
}

/* ".../lib/python3.11/" or ".../lib64/python3/": the standard library. */
static const char *after_stdlib(const char *path)
{
	const char *p = path, *q, *hit = NULL;

	while ((p = strstr(p, "/python"))) {
		q = p + strlen("/python");
		/* the directory before must be lib or lib64 */
		if ((p - path >= 4 && !strncmp(p - 4, "/lib", 4)) ||
		    (p - path >= 6 && !strncmp(p - 6, "/lib64", 6))) {
			if (*q == '3')
				q++;
			if (*q == '.')
				for (q++; *q >= '0' && *q <= '9'; q++)
					;
			/* free-threaded builds: lib/python3.13t */
			if (*q == 't')
				q++;
			if (*q == '/' && q[1])
				hit = q + 1;
		}
		p += strlen("/python");
	}
	return hit;
}

const char *frame_short_filename(const char *path)
{
	const char *s;

	if (!path || path[0] != '/')
		return path;	/* "<frozen ...>", "<string>", relative: as written */
	s = after_dir(path, "/site-packages/");
	if (!s)
		s = after_dir(path, "/dist-packages/");
	if (!s)
		s = after_stdlib(path);
	return s ? s : path;
}

void frame_naming_apply(const char **file, int *line, int *firstlineno)
{
	if (!naming.full_filenames)
		*file = frame_short_filename(*file);
	if (naming.nolineno) {
		*line = 0;
		*firstlineno = 0;
	}
}
