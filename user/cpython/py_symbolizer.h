/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Names of the target's code objects, read from its memory and cached
 * within a byte budget (least recently used dropped first). */
#ifndef EP_PY_SYMBOLIZER_H
#define EP_PY_SYMBOLIZER_H
#include <stdint.h>
#include <sys/types.h>
#include "ebpfprof.h"
#include "py_layout.h"

struct py_symbolizer;

/* the name of a code object whose name could not be read */
#define PY_SYM_UNNAMED "<unknown>"

struct py_sym_frame {
	const char *name;	/* co_qualname (3.11+) or co_name, "<unknown>" if unreadable */
	const char *file;	/* co_filename, or NULL if unreadable */
	int line;		/* line of the instruction, or co_firstlineno if unknown */
	int firstlineno;
};

struct py_symbolizer *py_symbolizer_new(pid_t pid, const struct py_layout *layout);
void py_symbolizer_free(struct py_symbolizer *s);
/* Pointers in *out stay valid until the next call on s (the cache is
 * bounded and may drop the entry): copy what is kept. */
void py_symbolizer_frame(struct py_symbolizer *s, uint64_t code, uint32_t ident,
			 uint32_t instr, struct py_sym_frame *out);
/* Why code objects held in the cache have no name (<unknown>), for the
 * summary: a profile mostly <unknown> must say which of these it was. */
struct py_sym_unnamed {
	size_t held;		/* code objects held */
	size_t unread;		/* their memory could not be read */
	size_t replaced;	/* another object there when read: freed before */
	size_t kernel_unread;	/* ... of which the kernel could not read it */
	size_t nameless;	/* read, but not its name string */
	size_t seeded;		/* code objects the kernel named (py_symbolizer_seed) */
};
/* A code object named by the kernel as its stack was first sampled: kept
 * unless userspace named it first; its file name and line table are read
 * from the target when it is first looked up, if it is still there. */
void py_symbolizer_seed(struct py_symbolizer *s, const struct ep_code_event *ev);
void py_symbolizer_unnamed(const struct py_symbolizer *s, struct py_sym_unnamed *out);
/* Reads a str object of the target as UTF-8 into out; 0, or -1 if unreadable. */
int py_symbolizer_read_str(pid_t pid, const struct py_layout *L, uint64_t obj,
			   char *out, size_t out_size);

#endif
