// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* One Python frame as dump prints it (dump_frames.h). */
#include "dump_frames.h"
#include "json.h"
#include "printable.h"

/* Names and paths come from the target: printable() keeps its terminal
 * controls (ESC, C1, bidi overrides) text. */
#define SHOWN_MAX 4096

void dump_print_frame(FILE *f, const struct py_sym_frame *fr)
{
	char name[SHOWN_MAX], file[SHOWN_MAX];

	fprintf(f, "    %s (%s", printable(fr->name, name, sizeof(name)),
		printable(fr->file ? fr->file : "<unknown>", file, sizeof(file)));
	if (fr->line > 0)
		fprintf(f, ":%d", fr->line);
	fputs(")\n", f);
}

void dump_json_kv_str(FILE *f, const char *key, const char *val)
{
	fprintf(f, "\"%s\": ", key);
	json_write_string(f, val ? val : "");
}

void dump_json_frame(FILE *f, const struct py_sym_frame *fr)
{
	fputc('{', f);
	dump_json_kv_str(f, "function", fr->name);
	fputs(", ", f);
	dump_json_kv_str(f, "file", fr->file);
	fprintf(f, ", \"line\": %d}", fr->line);
}
