// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Plain Python objects of a target, read from outside (py_objects.h). */
#include <stdio.h>
#include <string.h>
#include "hash.h"
#include "py_objects.h"
#include "py_str.h"
#include "remote.h"

#define DICT_KEYS_GENERAL	0		/* dk_kind: entries carry their hash */
#define DICT_KEYS_SPLIT		2		/* the highest dk_kind */

/* Beyond any real sys.modules or thread count: more is garbage or too slow. */
#define DICT_MAX_ENTRIES	(1u << 17)
#define DK_LOG2_MAX		30
#define DICT_CHUNK		64		/* entries read per process_vm_readv */
#define ENTRY_MAX		24		/* largest entry_size */
#define KEYS_HDR_MAX		64		/* bytes up to dk_indices */
#define KEY_NAME_MAX		32		/* longest name looked up, "_scheduled_tasks" */
#define STR_HDR_MAX		64		/* sizeof(PyASCIIObject) and less */
#define BASICSIZE_MAX		4096		/* of a Thread (sub)class instance */
#define DICTOFFSET_MAX		4096



int py_rd(struct py_reader *c, uint64_t addr, void *buf, size_t len)
{
	if (!c->reads_left)
		return -1;
	c->reads_left--;
	return remote_read(c->pid, addr, buf, len);
}

int py_rd_u64(struct py_reader *c, uint64_t addr, uint64_t *out)
{
	return py_rd(c, addr, out, sizeof(*out));
}

static uint64_t get_u64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

int py_obj_type_flags(struct py_reader *c, uint64_t obj, uint64_t *type, uint64_t *flags)
{
	return py_rd_u64(c, obj + OB_TYPE, type) ||
	       py_rd_u64(c, *type + c->O->tp_flags, flags);
}

/* Index bytes, entries and entry kind of a PyDictKeysObject. */
static int py_keys_view(struct py_reader *c, uint64_t keys, uint64_t values, struct py_dict_view *v)
{
	const struct py_obj_layout *O = c->O;
	uint8_t hdr[KEYS_HDR_MAX], capacity;
	uint64_t size, index_bytes;
	int64_t nentries;
	int general = 1;

	if (O->dk_indices > KEYS_HDR_MAX || py_rd(c, keys, hdr, O->dk_indices))
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
		if (py_rd(c, values + O->values_capacity, &capacity, 1))
			return -1;
		if (nentries > capacity)
			nentries = capacity;
	}
	v->n = nentries < DICT_MAX_ENTRIES ? nentries : DICT_MAX_ENTRIES;
	return 0;
}

int py_dict_view(struct py_reader *c, uint64_t dict, struct py_dict_view *v)
{
	uint64_t type, flags, keys, values;

	if (py_obj_type_flags(c, dict, &type, &flags) || !(flags & TPF_DICT_SUBCLASS) ||
	    py_rd_u64(c, dict + c->O->ma_keys, &keys) ||
	    py_rd_u64(c, dict + c->O->ma_values, &values))
		return -1;
	return py_keys_view(c, keys, values, v);
}


/* Calls fn on each live entry until it returns nonzero; returns that, or 0,
 * or -1 if the entries cannot be read. */
int py_view_for_each(struct py_reader *c, const struct py_dict_view *v, py_entry_fn fn, void *arg)
{
	uint8_t ebuf[DICT_CHUNK * ENTRY_MAX];
	uint64_t vbuf[DICT_CHUNK], key, value;
	uint32_t i, j, k;
	int r;

	if (v->stride <= 0 || v->stride > ENTRY_MAX)
		return -1;
	for (i = 0; i < v->n; i += k) {
		k = v->n - i < DICT_CHUNK ? v->n - i : DICT_CHUNK;
		if (py_rd(c, v->entries + (uint64_t)i * v->stride, ebuf, k * v->stride) ||
		    (v->values && py_rd(c, v->values + i * 8ull, vbuf, k * 8)))
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
static int py_match_name(struct py_reader *c, uint64_t key, uint64_t value, void *arg)
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
	    py_rd(c, key, buf, hdr + lk->len))
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
int py_view_lookup(struct py_reader *c, const struct py_dict_view *v, const char *name,
		       uint64_t *value)
{
	struct lookup lk = { .name = name, .len = strlen(name) };
	int r;

	if (lk.len > KEY_NAME_MAX || c->L->unicode_ascii_size > STR_HDR_MAX)
		return -1;
	r = py_view_for_each(c, v, py_match_name, &lk);
	if (r == 1)
		*value = lk.value;
	return r;
}

int py_dict_lookup(struct py_reader *c, uint64_t dict, const char *name, uint64_t *value)
{
	struct py_dict_view v;

	return py_dict_view(c, dict, &v) ? -1 : py_view_lookup(c, &v, name, value);
}

/* 3.13+: inline values are given up (valid = 0) once a dict takes over. */
static int py_inline_values(struct py_reader *c, uint64_t obj, uint64_t type, uint64_t *values)
{
	int64_t basicsize;
	uint8_t valid;

	if (py_rd(c, type + c->O->tp_basicsize, &basicsize, sizeof(basicsize)) ||
	    basicsize < 16 || basicsize > BASICSIZE_MAX || basicsize % 8 ||
	    py_rd(c, obj + basicsize + c->O->values_valid, &valid, 1) || !valid)
		return -1;
	*values = obj + basicsize;
	return 0;
}

/* The attributes of an instance: its __dict__, or values keyed by the
 * class's shared keys when no dict has been made (3.11+). */
int py_instance_view(struct py_reader *c, uint64_t obj, struct py_dict_view *v)
{
	const struct py_obj_layout *O = c->O;
	uint64_t type, flags, dict = 0, values = 0, keys;
	int64_t off;

	if (py_obj_type_flags(c, obj, &type, &flags))
		return -1;
	if (O->attr_kind == PY_ATTR_DICTOFFSET || !(flags & TPF_MANAGED_DICT)) {
		if (py_rd(c, type + O->tp_dictoffset, &off, sizeof(off)) ||
		    off <= 0 || off > DICTOFFSET_MAX || py_rd_u64(c, obj + off, &dict))
			return -1;
		return py_dict_view(c, dict, v);
	}
	if (py_rd_u64(c, obj + O->managed_dict, &dict))
		return -1;
	switch (O->attr_kind) {
	case PY_ATTR_VALUES_PTR:
		if (!dict && py_rd_u64(c, obj + O->managed_values, &values))
			return -1;
		break;
	case PY_ATTR_DICT_OR_VALUES:
		if (dict & 1) {
			values = dict + 1;
			dict = 0;
		}
		break;
	case PY_ATTR_INLINE_VALUES:
		if (!dict && (!(flags & TPF_INLINE_VALUES) || py_inline_values(c, obj, type, &values)))
			return -1;
		break;
	default:
		return -1;
	}
	if (dict)
		return py_dict_view(c, dict, v);
	if (!values || py_rd_u64(c, type + O->ht_cached_keys, &keys))
		return -1;
	return py_keys_view(c, keys, values, v);
}

int py_long_u64(struct py_reader *c, uint64_t obj, uint64_t *ident)
{
	const struct py_obj_layout *O = c->O;
	uint64_t type, flags, ndigits;
	uint32_t digit[3];
	int64_t size;
	int i;

	if (py_obj_type_flags(c, obj, &type, &flags) || !(flags & TPF_LONG_SUBCLASS) ||
	    py_rd(c, obj + O->long_size, &size, sizeof(size)))
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
	if (ndigits > 3 || py_rd(c, obj + O->long_digits, digit, ndigits * 4))
		return -1;
	*ident = 0;
	for (i = (int)ndigits - 1; i >= 0; i--) {
		if (digit[i] >> LONG_SHIFT || (i == 2 && digit[i] >> (64 - 2 * LONG_SHIFT)))
			return -1;
		*ident = *ident << LONG_SHIFT | digit[i];
	}
	return 0;
}

int py_reader_init(struct py_reader *c, pid_t pid, const struct py_layout *L, unsigned reads)
{
	c->pid = pid;
	c->L = L;
	c->O = py_obj_layout_for_version(L->major, L->minor);
	c->reads_left = reads;
	c->types = NULL;
	return c->O ? 0 : -1;
}

int py_module_attr(struct py_reader *c, uint64_t interp, const char *module, const char *attr,
		   uint64_t *value)
{
	uint64_t modules, mod, md_dict;
	int r;

	if (c->L->interp_modules < 0 || py_rd_u64(c, interp + c->L->interp_modules, &modules))
		return -1;
	r = py_dict_lookup(c, modules, module, &mod);
	if (r <= 0)
		return r;
	if (py_rd_u64(c, mod + c->O->md_dict, &md_dict))
		return -1;
	return py_dict_lookup(c, md_dict, attr, value);
}

/* PyTypeObject: tp_name and tp_base sit where they did in 3.8 (object.h). */
#define TP_NAME		24
#define TP_BASE		256
#define TYPE_NAME_MAX	64
#define TYPE_BASES_MAX	8

/* Reads the name of type into out (TYPE_NAME_MAX bytes); 0 or -1. */
static int read_type_name(struct py_reader *c, uint64_t type, char *out)
{
	char buf[TYPE_NAME_MAX];
	uint64_t name, room;
	size_t i;

	if (py_rd_u64(c, type + TP_NAME, &name) || !name)
		return -1;
	/* tp_name may end within a few bytes of an unmapped page: read less then */
	room = 4096 - (name & 4095);
	if (py_rd(c, name, buf, sizeof(buf)) && py_rd(c, name, buf, room < sizeof(buf) ? room : 1))
		return -1;
	for (i = 0; i + 1 < sizeof(buf) && buf[i]; i++) {
		if (buf[i] < 0x20 || buf[i] > 0x7e)
			return -1;
		out[i] = buf[i];
	}
	out[i] = 0;
	return 0;
}

/* The name and base of type, from the reader's cache or read into it. */
static const struct py_type_seen *type_seen(struct py_reader *c, uint64_t type,
					    struct py_type_seen *tmp)
{
	struct py_type_seen *e = tmp;

	if (c->types) {
		e = &c->types[hash_cache_slot(hash_u64(type), PY_TYPE_CACHE)];
		if (e->type == type)
			return e;
	}
	e->type = type;
	e->base = 0;
	if (read_type_name(c, type, e->name)) {
		e->name[0] = 0;
		return e;
	}
	py_rd_u64(c, type + TP_BASE, &e->base);
	return e;
}

int py_type_name(struct py_reader *c, uint64_t obj, char *out, size_t len)
{
	const struct py_type_seen *e;
	struct py_type_seen tmp;
	uint64_t type;

	if (!obj || !len || py_rd_u64(c, obj + OB_TYPE, &type) || !type)
		return -1;
	e = type_seen(c, type, &tmp);
	if (!e->name[0])
		return -1;
	snprintf(out, len, "%s", e->name);
	return 0;
}

int py_type_chain_is(struct py_reader *c, uint64_t type, const char *name)
{
	const struct py_type_seen *e;
	struct py_type_seen tmp;
	int i;

	for (i = 0; type && i < TYPE_BASES_MAX; i++) {
		e = type_seen(c, type, &tmp);
		if (!e->name[0])
			return 0;
		if (!strcmp(e->name, name))
			return 1;
		type = e->base;
	}
	return 0;
}

int py_type_is(struct py_reader *c, uint64_t obj, const char *name)
{
	uint64_t type;

	return obj && !py_rd_u64(c, obj + OB_TYPE, &type) && py_type_chain_is(c, type, name);
}

/* PySetObject (setobject.h, 3.8 to 3.15): fill, used, mask, table; entries
 * are {key, hash}. A dummy (deleted) key is an object of its own type. */
#define SET_MASK	32
#define SET_TABLE	40
#define SET_ENTRY	16
#define SET_CHUNK	64

int py_set_for_each(struct py_reader *c, uint64_t set, py_entry_fn fn, void *arg)
{
	uint64_t mask, table, buf[SET_CHUNK * 2], i, k, j;
	int r;

	uint64_t slots;

	if (py_rd_u64(c, set + SET_MASK, &mask) || py_rd_u64(c, set + SET_TABLE, &table) ||
	    (mask & (mask + 1)) || !table)
		return -1;
	slots = mask < PY_SET_MAX ? mask + 1 : PY_SET_MAX;
	for (i = 0; i < slots; i += k) {
		k = slots - i < SET_CHUNK ? slots - i : SET_CHUNK;
		if (py_rd(c, table + i * SET_ENTRY, buf, k * SET_ENTRY))
			return -1;
		for (j = 0; j < k; j++) {
			if (!buf[2 * j])
				continue;
			r = fn(c, buf[2 * j], 0, arg);
			if (r)
				return r;
		}
	}
	return slots <= mask ? PY_SET_CUT : 0;
}

/* PyListObject: ob_size at 16, ob_item at 24. */
#define LIST_SIZE	16
#define LIST_ITEMS	24

int py_list_items(struct py_reader *c, uint64_t list, uint64_t *items, int max)
{
	uint64_t arr;
	int64_t n;

	if (py_rd(c, list + LIST_SIZE, &n, sizeof(n)) || n < 0 ||
	    py_rd_u64(c, list + LIST_ITEMS, &arr))
		return -1;
	if (n > max)
		n = max;
	if (n && (!arr || py_rd(c, arr, items, n * 8)))
		return -1;
	return (int)n;
}
