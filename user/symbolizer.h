/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Names of the target's code objects, read from its memory and cached
 * within a byte budget (least recently used dropped first). */
#ifndef EP_SYMBOLIZER_H
#define EP_SYMBOLIZER_H
#include <stdint.h>
#include <sys/types.h>
#include "py_layout.h"

struct symbolizer;

struct sym_frame {
	const char *name;	/* co_qualname (3.11+) or co_name, "<unknown>" if unreadable */
	const char *file;	/* co_filename, or NULL if unreadable */
	int line;		/* line of the instruction, or co_firstlineno if unknown */
	int firstlineno;
};

struct symbolizer *symbolizer_new(pid_t pid, const struct py_layout *layout);
void symbolizer_free(struct symbolizer *s);
/* Pointers in *out stay valid until the next call on s (the cache is
 * bounded and may drop the entry): copy what is kept. */
void symbolizer_frame(struct symbolizer *s, uint64_t code, uint32_t ident,
		      uint32_t instr, struct sym_frame *out);
/* Reads a str object of the target as UTF-8 into out; 0, or -1 if unreadable. */
int symbolizer_read_str(pid_t pid, const struct py_layout *L, uint64_t obj,
			char *out, size_t out_size);
/* Code objects looked up and how many could not be read, for the summary. */
void symbolizer_stats(const struct symbolizer *s, unsigned long *codes, unsigned long *failed);
/* Bytes of names, files and line tables the cache holds now. */
size_t symbolizer_bytes(const struct symbolizer *s);

#endif
