// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Python thread names, read from outside the target:
 *
 *   interp->modules (sys.modules)["threading"] -> module md_dict
 *     ["_active"] -> { ident (int): Thread } -> Thread attributes["_name"]
 *
 * The target keeps running and may change these dicts while we read them,
 * and anything read may be garbage: every count is bounded, and a value
 * that does not look right ends the lookup that needed it. Keys are
 * compared by content, not looked up by hash: str hashes are randomised
 * per process, so a scan of the entries is the only way from outside.
 */
#include <string.h>
#include "py_str.h"
#include "py_symbolizer.h"
#include "py_threads.h"
#include "remote.h"

/* Facts the same in every supported version (object.h, longintrepr.h). */
#define OB_TYPE			8		/* PyObject.ob_type */
#define TPF_INLINE_VALUES	(1ul << 2)	/* 3.13+ */
#define TPF_MANAGED_DICT	(1ul << 4)	/* 3.11+ */
#define TPF_LONG_SUBCLASS	(1ul << 24)
#define TPF_UNICODE_SUBCLASS	(1ul << 28)
#define TPF_DICT_SUBCLASS	(1ul << 29)
#define DICT_KEYS_GENERAL	0		/* dk_kind: entries carry their hash */
#define DICT_KEYS_SPLIT		2		/* the highest dk_kind */
#define LONG_SHIFT		30		/* bits per digit */
#define LONG_SIGN_MASK		3		/* lv_tag: 0 positive, 1 zero, 2 negative */
#define LONG_SIGN_NEGATIVE	2
#define LONG_NON_SIZE_BITS	3		/* lv_tag >> this = digit count */

/* Beyond any real sys.modules or thread count: more is garbage or too slow. */
#define DICT_MAX_ENTRIES	(1u << 17)
#define DK_LOG2_MAX		30
#define DICT_CHUNK		64		/* entries read per process_vm_readv */
#define ENTRY_MAX		24		/* largest entry_size */
#define KEYS_HDR_MAX		64		/* bytes up to dk_indices */
#define KEY_NAME_MAX		16		/* longest name looked up, "threading" */
#define STR_HDR_MAX		64		/* sizeof(PyASCIIObject) and less */
#define BASICSIZE_MAX		4096		/* of a Thread (sub)class instance */
#define DICTOFFSET_MAX		4096
/* Each read is one syscall (~1 us): a few thousand modules and threads
 * need tens of thousands; this stops garbage at well under a second. */
#define READS_MAX		(1u << 18)

struct ctx {
	pid_t pid;
	const struct py_layout *L;
	const struct py_obj_layout *O;
	unsigned reads_left;	/* garbage can chain big dicts: cap the whole call */
};

/* The live part of a dict: entries and, for a split table, its values. */
struct dict_view {
	uint64_t entries;
	uint64_t values;	/* 0: values are in the entries */
	uint32_t n;		/* entries to look at */
	int stride, key, value;
};

static int rd(struct ctx *c, uint64_t addr, void *buf, size_t len)
{
	if (!c->reads_left)
		return -1;
	c->reads_left--;
	return remote_read(c->pid, addr, buf, len);
}

static int rd_u64(struct ctx *c, uint64_t addr, uint64_t *out)
{
	return rd(c, addr, out, sizeof(*out));
}

static uint64_t get_u64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static int obj_type_flags(struct ctx *c, uint64_t obj, uint64_t *type, uint64_t *flags)
{
	return rd_u64(c, obj + OB_TYPE, type) ||
	       rd_u64(c, *type + c->O->tp_flags, flags);
}

/* Index bytes, entries and entry kind of a PyDictKeysObject. */
static int keys_view(struct ctx *c, uint64_t keys, uint64_t values, struct dict_view *v)
{
	const struct py_obj_layout *O = c->O;
	uint8_t hdr[KEYS_HDR_MAX], capacity;
	uint64_t size, index_bytes;
	int64_t nentries;
	int general = 1;

	if (O->dk_indices > KEYS_HDR_MAX || rd(c, keys, hdr, O->dk_indices))
		return -1;
	memcpy(&nentries, hdr + O->dk_nentries, sizeof(nentries));
	if (O->dk_size >= 0) {
		/* Up to 3.10: index width follows from the table size. */
		size = get_u64(hdr + O->dk_size);
		if (size < 8 || size > (1ull << DK_LOG2_MAX) || (size & (size - 1)))
			return -1;
		index_bytes = size <= 0xff ? 1 : size <= 0xffff ? 2 : 4;
		v->entries = keys + O->dk_indices + size * index_bytes;
	} else {
		unsigned log2_size = hdr[O->dk_log2_size];
		unsigned log2_index = hdr[O->dk_log2_index_bytes];

		if (log2_size < 3 || log2_size > DK_LOG2_MAX ||
		    log2_index < log2_size || log2_index > log2_size + 3 ||
		    hdr[O->dk_kind] > DICT_KEYS_SPLIT)
			return -1;
		size = 1ull << log2_size;
		general = hdr[O->dk_kind] == DICT_KEYS_GENERAL;
		v->entries = keys + O->dk_indices + (1ull << log2_index);
	}
	if (nentries < 0 || (uint64_t)nentries > size)
		return -1;
	v->stride = general ? O->entry_size : O->uentry_size;
	v->key = general ? O->entry_key : O->uentry_key;
	v->value = general ? O->entry_value : O->uentry_value;
	v->values = values ? values + O->values_array : 0;
	/* 3.13+: an object's values array may be shorter than the shared keys. */
	if (values && O->values_capacity >= 0) {
		if (rd(c, values + O->values_capacity, &capacity, 1))
			return -1;
		if (nentries > capacity)
			nentries = capacity;
	}
	v->n = nentries < DICT_MAX_ENTRIES ? nentries : DICT_MAX_ENTRIES;
	return 0;
}

static int dict_view(struct ctx *c, uint64_t dict, struct dict_view *v)
{
	uint64_t type, flags, keys, values;

	if (obj_type_flags(c, dict, &type, &flags) || !(flags & TPF_DICT_SUBCLASS) ||
	    rd_u64(c, dict + c->O->ma_keys, &keys) ||
	    rd_u64(c, dict + c->O->ma_values, &values))
		return -1;
	return keys_view(c, keys, values, v);
}

typedef int (*entry_fn)(struct ctx *c, uint64_t key, uint64_t value, void *arg);

/* Calls fn on each live entry until it returns nonzero; returns that, or 0,
 * or -1 if the entries cannot be read. */
static int view_for_each(struct ctx *c, const struct dict_view *v, entry_fn fn, void *arg)
{
	uint8_t ebuf[DICT_CHUNK * ENTRY_MAX];
	uint64_t vbuf[DICT_CHUNK], key, value;
	uint32_t i, j, k;
	int r;

	if (v->stride <= 0 || v->stride > ENTRY_MAX)
		return -1;
	for (i = 0; i < v->n; i += k) {
		k = v->n - i < DICT_CHUNK ? v->n - i : DICT_CHUNK;
		if (rd(c, v->entries + (uint64_t)i * v->stride, ebuf, k * v->stride) ||
		    (v->values && rd(c, v->values + i * 8ull, vbuf, k * 8)))
			return -1;
		for (j = 0; j < k; j++) {
			key = get_u64(ebuf + j * v->stride + v->key);
			value = v->values ? vbuf[j] : get_u64(ebuf + j * v->stride + v->value);
			/* Deleted entries have no value (and no key from 3.11). */
			if (!key || !value)
				continue;
			r = fn(c, key, value, arg);
			if (r)
				return r;
		}
	}
	return 0;
}

struct lookup {
	const char *name;
	size_t len;
	uint64_t value;
};

/* Identifiers are interned compact ASCII str: compare header and bytes. */
static int match_name(struct ctx *c, uint64_t key, uint64_t value, void *arg)
{
	const struct py_layout *L = c->L;
	struct lookup *lk = arg;
	uint8_t buf[STR_HDR_MAX + KEY_NAME_MAX];
	struct py_str_state st;
	size_t hdr = L->unicode_ascii_size;
	int64_t length;
	uint32_t state;

	/* the offsets come from the target (3.13+): keep them in the header read */
	if (L->unicode_length < 0 || L->unicode_state < 0 || hdr > STR_HDR_MAX ||
	    L->unicode_length + sizeof(length) > hdr || L->unicode_state + sizeof(state) > hdr ||
	    rd(c, key, buf, hdr + lk->len))
		return 0;
	memcpy(&length, buf + L->unicode_length, sizeof(length));
	memcpy(&state, buf + L->unicode_state, sizeof(state));
	if (py_str_parse_state(state, &st) || !st.compact || !st.ascii ||
	    length != (int64_t)lk->len || memcmp(buf + L->unicode_ascii_size, lk->name, lk->len))
		return 0;
	lk->value = value;
	return 1;
}

/* 1 and *value if the view has a str key `name`, 0 if not, -1 if unreadable. */
static int view_lookup(struct ctx *c, const struct dict_view *v, const char *name,
		       uint64_t *value)
{
	struct lookup lk = { .name = name, .len = strlen(name) };
	int r;

	if (lk.len > KEY_NAME_MAX || c->L->unicode_ascii_size > STR_HDR_MAX)
		return -1;
	r = view_for_each(c, v, match_name, &lk);
	if (r == 1)
		*value = lk.value;
	return r;
}

static int dict_lookup(struct ctx *c, uint64_t dict, const char *name, uint64_t *value)
{
	struct dict_view v;

	return dict_view(c, dict, &v) ? -1 : view_lookup(c, &v, name, value);
}

/* 3.13+: inline values are given up (valid = 0) once a dict takes over. */
static int inline_values(struct ctx *c, uint64_t obj, uint64_t type, uint64_t *values)
{
	int64_t basicsize;
	uint8_t valid;

	if (rd(c, type + c->O->tp_basicsize, &basicsize, sizeof(basicsize)) ||
	    basicsize < 16 || basicsize > BASICSIZE_MAX || basicsize % 8 ||
	    rd(c, obj + basicsize + c->O->values_valid, &valid, 1) || !valid)
		return -1;
	*values = obj + basicsize;
	return 0;
}

/* The attributes of an instance: its __dict__, or values keyed by the
 * class's shared keys when no dict has been made (3.11+). */
static int instance_view(struct ctx *c, uint64_t obj, struct dict_view *v)
{
	const struct py_obj_layout *O = c->O;
	uint64_t type, flags, dict = 0, values = 0, keys;
	int64_t off;

	if (obj_type_flags(c, obj, &type, &flags))
		return -1;
	if (O->attr_kind == PY_ATTR_DICTOFFSET || !(flags & TPF_MANAGED_DICT)) {
		if (rd(c, type + O->tp_dictoffset, &off, sizeof(off)) ||
		    off <= 0 || off > DICTOFFSET_MAX || rd_u64(c, obj + off, &dict))
			return -1;
		return dict_view(c, dict, v);
	}
	if (rd_u64(c, obj + O->managed_dict, &dict))
		return -1;
	switch (O->attr_kind) {
	case PY_ATTR_VALUES_PTR:
		if (!dict && rd_u64(c, obj + O->managed_values, &values))
			return -1;
		break;
	case PY_ATTR_DICT_OR_VALUES:
		if (dict & 1) {
			values = dict + 1;
			dict = 0;
		}
		break;
	case PY_ATTR_INLINE_VALUES:
		if (!dict && (!(flags & TPF_INLINE_VALUES) || inline_values(c, obj, type, &values)))
			return -1;
		break;
	default:
		return -1;
	}
	if (dict)
		return dict_view(c, dict, v);
	if (!values || rd_u64(c, type + O->ht_cached_keys, &keys))
		return -1;
	return keys_view(c, keys, values, v);
}

/* threading's keys are get_ident() values: non-negative, below 2**64. */
static int read_ident(struct ctx *c, uint64_t obj, uint64_t *ident)
{
	const struct py_obj_layout *O = c->O;
	uint64_t type, flags, ndigits;
	uint32_t digit[3];
	int64_t size;
	int i;

	if (obj_type_flags(c, obj, &type, &flags) || !(flags & TPF_LONG_SUBCLASS) ||
	    rd(c, obj + O->long_size, &size, sizeof(size)))
		return -1;
	if (O->long_tagged) {
		if ((size & LONG_SIGN_MASK) == LONG_SIGN_NEGATIVE)
			return -1;
		ndigits = (uint64_t)size >> LONG_NON_SIZE_BITS;
	} else {
		if (size < 0)
			return -1;
		ndigits = size;
	}
	if (ndigits > 3 || rd(c, obj + O->long_digits, digit, ndigits * 4))
		return -1;
	*ident = 0;
	for (i = (int)ndigits - 1; i >= 0; i--) {
		if (digit[i] >> LONG_SHIFT || (i == 2 && digit[i] >> (64 - 2 * LONG_SHIFT)))
			return -1;
		*ident = *ident << LONG_SHIFT | digit[i];
	}
	return 0;
}

struct names {
	struct py_thread_name *out;
	int max, n;
};

/* One _active item; a thread that cannot be read is skipped. */
static int add_thread(struct ctx *c, uint64_t key, uint64_t thread, void *arg)
{
	struct names *nm = arg;
	struct py_thread_name *t;
	struct dict_view attrs;
	uint64_t name, type, flags, native, tid;

	if (nm->n >= nm->max)
		return 1;
	t = &nm->out[nm->n];
	if (read_ident(c, key, &t->ident) || instance_view(c, thread, &attrs) ||
	    view_lookup(c, &attrs, "_name", &name) != 1 ||
	    obj_type_flags(c, name, &type, &flags) || !(flags & TPF_UNICODE_SUBCLASS) ||
	    py_symbolizer_read_str(c->pid, c->L, name, t->name, sizeof(t->name)))
		return 0;
	/* before 3.11 the thread state lacks the tid: Thread._native_id has it */
	t->native_id = 0;
	if (view_lookup(c, &attrs, "_native_id", &native) == 1 && !read_ident(c, native, &tid) &&
	    tid > 0 && tid <= INT32_MAX)
		t->native_id = (int)tid;
	nm->n++;
	return 0;
}

int py_thread_names(pid_t pid, const struct py_layout *L, uint64_t interp_addr,
		    struct py_thread_name *out, int max)
{
	struct ctx c = { .pid = pid, .L = L, .O = py_obj_layout_for_version(L->major, L->minor),
			 .reads_left = READS_MAX };
	struct names nm = { .out = out, .max = max };
	uint64_t modules, module, md_dict, active;
	struct dict_view v;
	int r;

	if (!c.O || max < 0 || L->interp_modules < 0 ||
	    rd_u64(&c, interp_addr + L->interp_modules, &modules))
		return -1;
	r = dict_lookup(&c, modules, "threading", &module);
	if (r <= 0)
		return r;
	if (rd_u64(&c, module + c.O->md_dict, &md_dict))
		return -1;
	r = dict_lookup(&c, md_dict, "_active", &active);
	if (r <= 0)
		return r;
	if (dict_view(&c, active, &v))
		return -1;
	/* A chunk that fails to read mid-way (the dict was resized under us)
	 * still leaves the names found before it good. */
	if (view_for_each(&c, &v, add_thread, &nm) < 0 && !nm.n)
		return -1;
	return nm.n;
}
