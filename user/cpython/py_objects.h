/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Reading plain Python objects of a running target from outside: dicts
 * (sys.modules, module and instance attributes), sets, lists, type names.
 * Used for thread names (py_threads.c) and asyncio tasks (py_asyncio.c).
 * The target keeps running and may change what we read under us, and any
 * byte may be garbage: every count is bounded, every call is capped in
 * reads (reads_left), and a value that does not look right ends the
 * lookup that needed it. Keys are compared by content, not looked up by
 * hash: str hashes are randomised per process.
 */
#ifndef EP_PY_OBJECTS_H
#define EP_PY_OBJECTS_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "py_layout.h"

/* Facts the same in every supported version (object.h, longintrepr.h). */
#define OB_TYPE			8		/* PyObject.ob_type */
#define TPF_INLINE_VALUES	(1ul << 2)	/* 3.13+ */
#define TPF_MANAGED_DICT	(1ul << 4)	/* 3.11+ */
#define TPF_LONG_SUBCLASS	(1ul << 24)
#define TPF_UNICODE_SUBCLASS	(1ul << 28)
#define TPF_DICT_SUBCLASS	(1ul << 29)
#define LONG_SHIFT		30		/* bits per digit */
#define LONG_SIGN_MASK		3		/* lv_tag: 0 positive, 1 zero, 2 negative */
#define LONG_SIGN_NEGATIVE	2
#define LONG_NON_SIZE_BITS	3		/* lv_tag >> this = digit count */

/* A type's name and base, as read once in a walk (types outlive it). */
struct py_type_seen {
	uint64_t type, base;
	char name[64];		/* "" if unreadable */
};
#define PY_TYPE_CACHE	256	/* a power of two (hash.h) */

struct py_reader {
	pid_t pid;
	const struct py_layout *L;
	const struct py_obj_layout *O;
	unsigned reads_left;	/* garbage can chain big dicts: cap the whole call */
	struct py_type_seen *types;	/* PY_TYPE_CACHE of them, or NULL: no cache */
};

/* The live part of a dict: entries and, for a split table, its values. */
struct py_dict_view {
	uint64_t entries;
	uint64_t values;	/* 0: values are in the entries */
	uint32_t n;		/* entries to look at */
	int stride, key, value;
};

/* Called per live entry until it returns nonzero. */
typedef int (*py_entry_fn)(struct py_reader *c, uint64_t key, uint64_t value, void *arg);

/* A reader of pid allowed `reads` reads; -1 if the version has no object layout. */
int py_reader_init(struct py_reader *c, pid_t pid, const struct py_layout *L, unsigned reads);
int py_rd(struct py_reader *c, uint64_t addr, void *buf, size_t len);
int py_rd_u64(struct py_reader *c, uint64_t addr, uint64_t *out);
int py_obj_type_flags(struct py_reader *c, uint64_t obj, uint64_t *type, uint64_t *flags);
int py_dict_view(struct py_reader *c, uint64_t dict, struct py_dict_view *v);
/* Calls fn on each live entry until it returns nonzero; returns that, or 0,
 * or -1 if the entries cannot be read. */
int py_view_for_each(struct py_reader *c, const struct py_dict_view *v, py_entry_fn fn, void *arg);
/* 1 and *value if the view has a str key `name`, 0 if not, -1 if unreadable. */
int py_view_lookup(struct py_reader *c, const struct py_dict_view *v, const char *name,
		   uint64_t *value);
int py_dict_lookup(struct py_reader *c, uint64_t dict, const char *name, uint64_t *value);
/* The attributes of an instance: its __dict__, or values keyed by the
 * class's shared keys when no dict has been made (3.11+). */
int py_instance_view(struct py_reader *c, uint64_t obj, struct py_dict_view *v);
/* 1 and *value for sys.modules[module].attr of the interpreter, 0 if the
 * module is not loaded or lacks attr, -1 if unreadable. */
int py_module_attr(struct py_reader *c, uint64_t interp, const char *module, const char *attr,
		   uint64_t *value);
/* An int object that is non-negative and below 2**64 (a thread ident, a
 * task counter): 0 and *out, or -1. */
int py_long_u64(struct py_reader *c, uint64_t obj, uint64_t *out);
/* The ob_type's tp_name as a NUL-terminated string (printable ASCII only,
 * cut to len - 1); 0, or -1 if unreadable. */
int py_type_name(struct py_reader *c, uint64_t obj, char *out, size_t len);
/* 1 if obj's type or one of its first bases is named `name`. */
int py_type_is(struct py_reader *c, uint64_t obj, const char *name);
/* The same for a type already read (obj's ob_type). */
int py_type_chain_is(struct py_reader *c, uint64_t type, const char *name);
/* Calls fn(c, key, 0, arg) for each key of a set or frozenset until fn
 * returns nonzero: that, 0, or -1. Only the first PY_SET_MAX slots are
 * looked at: PY_SET_CUT when the table has more. */
#define PY_SET_MAX	(1u << 20)
#define PY_SET_CUT	(-2)
int py_set_for_each(struct py_reader *c, uint64_t set, py_entry_fn fn, void *arg);
/* Up to max items of a list; the count read, or -1. */
int py_list_items(struct py_reader *c, uint64_t list, uint64_t *items, int max);

#endif
