// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Python thread names, read from outside the target (py_objects.h says
 * how objects are read and bounded):
 *
 *   interp->modules (sys.modules)["threading"] -> module md_dict
 *     ["_active"] -> { ident (int): Thread } -> Thread attributes["_name"]
 */
#include <string.h>
#include "py_objects.h"
#include "py_symbolizer.h"
#include "py_threads.h"
#include "remote.h"

/* Each read is one syscall (~1 us): a few thousand modules and threads
 * need tens of thousands; this stops garbage at well under a second. */
#define READS_MAX		(1u << 18)


struct names {
	struct py_thread_name *out;
	int max, n;
};

/* One _active item; a thread that cannot be read is skipped. */
static int add_thread(struct py_reader *c, uint64_t key, uint64_t thread, void *arg)
{
	struct names *nm = arg;
	struct py_thread_name *t;
	struct py_dict_view attrs;
	uint64_t name, type, flags, native, tid;

	if (nm->n >= nm->max)
		return 1;
	t = &nm->out[nm->n];
	if (py_long_u64(c, key, &t->ident) || py_instance_view(c, thread, &attrs) ||
	    py_view_lookup(c, &attrs, "_name", &name) != 1 ||
	    py_obj_type_flags(c, name, &type, &flags) || !(flags & TPF_UNICODE_SUBCLASS) ||
	    py_symbolizer_read_str(c->pid, c->L, name, t->name, sizeof(t->name)))
		return 0;
	/* before 3.11 the thread state lacks the tid: Thread._native_id has it */
	t->native_id = 0;
	if (py_view_lookup(c, &attrs, "_native_id", &native) == 1 && !py_long_u64(c, native, &tid) &&
	    tid > 0 && tid <= INT32_MAX)
		t->native_id = (int)tid;
	nm->n++;
	return 0;
}

int py_thread_names(pid_t pid, const struct py_layout *L, uint64_t interp_addr,
		    struct py_thread_name *out, int max)
{
	struct names nm = { .out = out, .max = max };
	struct py_reader c;
	struct py_dict_view v;
	uint64_t active;
	int r;

	if (max < 0 || py_reader_init(&c, pid, L, READS_MAX))
		return -1;
	r = py_module_attr(&c, interp_addr, "threading", "_active", &active);
	if (r <= 0)
		return r;
	if (py_dict_view(&c, active, &v))
		return -1;
	/* A chunk that fails to read mid-way (the dict was resized under us)
	 * still leaves the names found before it good. */
	if (py_view_for_each(&c, &v, add_thread, &nm) < 0 && !nm.n)
		return -1;
	return nm.n;
}
