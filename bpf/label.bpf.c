// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * --label: the value of a labelled frame's argument, read in the kernel
 * while the stack is walked: the object (a Dask key, a request id) may be
 * freed as soon as its function returns, long before userspace could read
 * it. A str (latin-1), an int, or a tuple of them; anything else by its
 * type's name. Every address comes from the target and may be garbage: a
 * read that fails leaves its item unreadable, and every copy is bounded by
 * its room in the blob. A global function: the verifier checks it once,
 * not in every program that walks stacks.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "ebpfprof.h"
#include "maps.bpf.h"

/* Fixed in every CPython 3.8-3.15 (x86-64): PyObject.ob_type,
 * PyTypeObject.tp_name, PyVarObject.ob_size, and the type flags of int,
 * tuple and str subclasses. */
#define OB_TYPE		8
#define TP_NAME		24
#define VAR_SIZE	16
#define TPF_LONG	(1ull << 24)
#define TPF_TUPLE	(1ull << 26)
#define TPF_UNICODE	(1ull << 28)
#define DIGIT_MASK	0x3fffffffull	/* 30-bit digits */

struct label_req {
	struct ep_label_offsets lo;
	__u8 long_tagged;
};

static __always_inline __u64 user_u64(__u64 addr, int *err)
{
	__u64 v = 0;

	if (bpf_probe_read_user(&v, sizeof(v), (void *)addr))
		*err = 1;
	return v;
}

/* A str's latin-1 bytes into out (room cap): EP_LT_STR or EP_LT_STR_CUT. */
static __always_inline __u8 read_str(const struct label_req *q, __u64 obj, __u8 *out, __u32 cap,
				     __u8 *len)
{
	int err = 0;
	__u32 state = (__u32)user_u64(obj + q->lo.unicode_state, &err);
	__u64 length = user_u64(obj + q->lo.unicode_length, &err);
	__u64 data, n;

	if (err)
		return EP_LT_UNREADABLE;
	if (!(state & EP_STR_COMPACT) || EP_STR_KIND(state) != 1)
		return EP_LT_WIDE_STR;
	data = obj + ((state & EP_STR_ASCII) ? q->lo.unicode_ascii_size : q->lo.unicode_compact_size);
	n = length < cap ? length : cap;
	barrier_var(n);
	if (n > cap)
		return EP_LT_UNREADABLE;
	if (n && bpf_probe_read_user(out, n, (void *)data))
		return EP_LT_UNREADABLE;
	*len = n;
	return length > cap ? EP_LT_STR_CUT : EP_LT_STR;
}

/* An int of at most two digits into out (8 bytes, little-endian). */
static __always_inline __u8 read_int(const struct label_req *q, __u64 obj, __u8 *out, __u8 *len)
{
	int err = 0;
	__u64 size = user_u64(obj + q->lo.long_size, &err);
	__u64 digits = user_u64(obj + q->lo.long_digits, &err);
	__u64 ndigits, mag;
	__s64 v;
	int neg;

	if (q->long_tagged) {		/* lv_tag: digits << 3 | sign (0 +, 1 zero, 2 -) */
		ndigits = (size & 3) == 1 ? 0 : size >> 3;
		neg = (size & 3) == 2;
	} else {
		neg = (__s64)size < 0;
		ndigits = neg ? -(__s64)size : size;
	}
	if (ndigits > 2)
		return EP_LT_BIG_INT;
	if (err && ndigits)
		return EP_LT_UNREADABLE;
	mag = 0;
	if (ndigits >= 1)
		mag = digits & DIGIT_MASK;
	if (ndigits == 2)
		mag |= (digits >> 32 & DIGIT_MASK) << 30;
	v = neg ? -(__s64)mag : (__s64)mag;
	__builtin_memcpy(out, &v, sizeof(v));
	*len = sizeof(v);
	return EP_LT_INT;
}

/* One value: a str, an int, else its type's name (cut to the room). */
static __always_inline __u8 read_item(const struct label_req *q, __u64 obj, __u8 *out,
				      __u32 cap, __u8 *len)
{
	int err = 0;
	__u64 type = user_u64(obj + OB_TYPE, &err);
	__u64 flags = user_u64(type + q->lo.tp_flags, &err);
	long n;

	*len = 0;
	if (err)
		return EP_LT_UNREADABLE;
	if (flags & TPF_UNICODE)
		return read_str(q, obj, out, cap, len);
	if (flags & TPF_LONG)
		return read_int(q, obj, out, len);
	n = bpf_probe_read_user_str(out, cap, (void *)user_u64(type + TP_NAME, &err));
	if (err || n <= 1)
		return EP_LT_UNREADABLE;
	*len = n - 1;
	return EP_LT_TYPE;
}

/* A tuple's items: up to EP_LABEL_ITEMS read, the first with the most room. */
static __always_inline void read_tuple(const struct label_req *q, __u64 obj,
				       struct ep_label_blob *b)
{
	__u64 items[EP_LABEL_ITEMS] = {};
	int err = 0;
	__u64 n = user_u64(obj + VAR_SIZE, &err);

	b->tuple = 1;
	if (err || bpf_probe_read_user(items, sizeof(items), (void *)(obj + q->lo.tuple_items))) {
		b->tag[0] = EP_LT_UNREADABLE;
		return;
	}
	b->nitems = n < EP_LABEL_ITEMS ? n : EP_LABEL_ITEMS;
	b->more = n > EP_LABEL_ITEMS;
	if (b->nitems > 0)
		b->tag[0] = read_item(q, items[0], b->first, EP_LABEL_FIRST_BYTES, &b->len[0]);
	if (b->nitems > 1)
		b->tag[1] = read_item(q, items[1], b->rest[0], EP_LABEL_ITEM_BYTES, &b->len[1]);
	if (b->nitems > 2)
		b->tag[2] = read_item(q, items[2], b->rest[1], EP_LABEL_ITEM_BYTES, &b->len[2]);
	if (b->nitems > 3)
		b->tag[3] = read_item(q, items[3], b->rest[2], EP_LABEL_ITEM_BYTES, &b->len[3]);
}

__noinline int ep_label_read(__u32 slot)
{
	struct ep_scratch *sc = bpf_map_lookup_elem(&scratch, &slot);
	struct ep_label_blob *b;
	struct label_req q;
	__u64 obj;
	int err = 0;

	if (!sc)
		return 0;
	b = &sc->label.blob;
	q.lo = sc->label.lo;
	q.long_tagged = sc->label.long_tagged;
	obj = sc->label.obj;
	/* whole: its bytes are mixed into the stack's id, stale ones too */
	__builtin_memset(b, 0, sizeof(*b));
	b->nitems = 1;
	if (!obj) {
		b->tag[0] = EP_LT_UNREADABLE;
		return 0;
	}
	if (user_u64(user_u64(obj + OB_TYPE, &err) + q.lo.tp_flags, &err) & TPF_TUPLE && !err) {
		read_tuple(&q, obj, b);
		return 0;
	}
	b->tag[0] = read_item(&q, obj, b->first, EP_LABEL_FIRST_BYTES, &b->len[0]);
	return 0;
}
