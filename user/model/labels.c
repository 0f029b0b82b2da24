// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "grow.h"
#include "hash.h"
#include "hash_index.h"
#include "labels.h"

void label_table_init(struct label_table *t)
{
	int i;

	memset(t, 0, sizeof(*t));
	for (i = 0; i < 2 * EP_MAX_LABELS; i++)
		t->derive_to[i] = -1;
	label_clock_init(&t->clock);
}

void label_table_free(struct label_table *t)
{
	size_t i;

	for (i = 0; i < t->n; i++) {
		free(t->v[i].value);
		free(t->v[i].series);
	}
	for (i = 0; i < (size_t)t->nnames; i++)
		free(t->names[i]);
	free(t->v);
	hash_index_free(&t->index);
	label_table_init(t);
}

int label_table_add_name(struct label_table *t, const char *name)
{
	if (t->nnames >= 2 * EP_MAX_LABELS)
		return -1;
	t->names[t->nnames] = strdup(name);
	return t->names[t->nnames] ? t->nnames++ : -1;
}

void label_table_derive(struct label_table *t, int from, int to, label_derive_fn fn)
{
	t->derive_to[from] = to;
	t->derive[from] = fn;
}

static uint64_t value_hash(int label, const char *text)
{
	return fnv1a_str(fnv1a(FNV1A_BASIS, &label, sizeof(label)), text);
}

/* The id of (label, text), or LABEL_NONE. */
static uint32_t find_value(const struct label_table *t, int label, const char *text, uint64_t h)
{
	struct hash_probe p;
	size_t i;

	for (i = hash_index_first(&t->index, h, &p); i != HASH_INDEX_NONE; i = hash_index_next(&p))
		if (t->v[i].label == label && !strcmp(t->v[i].value, text))
			return i;
	return LABEL_NONE;
}

/* The id of (label, text), added if new (LABEL_NONE: out of memory). */
static uint32_t intern_one(struct label_table *t, int label, const char *text)
{
	uint64_t h = value_hash(label, text);
	uint32_t id = find_value(t, label, text, h);
	struct label_value *v;

	if (id != LABEL_NONE)
		return id;
	if (GROW_ARRAY(t->v, t->cap, t->n + 1))
		return LABEL_NONE;
	v = &t->v[t->n];
	memset(v, 0, sizeof(*v));
	v->label = label;
	v->derived = LABEL_NONE;
	v->value = strdup(text);
	if (!v->value || hash_index_add(&t->index, h, t->n)) {
		free(v->value);
		return LABEL_NONE;
	}
	t->n++;
	t->per_label[label]++;
	/* a series is 37 KB: the first values of a label few enough to draw */
	if (t->derive_to[label] < 0 && t->with_series[label] < LABEL_SERIES_VALUES) {
		v->series = label_series_new();
		t->with_series[label] += v->series != NULL;
	}
	return t->n - 1;
}

/*
 * Past LABEL_VALUES_MAX values, a new value joins the label's other values:
 * one per derived value ("[other values: inc]"), so that what derives from
 * it still adds up (a Dask cluster runs more tasks than values are kept,
 * but has few prefixes; those are bounded the same way).
 */
uint32_t label_intern(struct label_table *t, int label, const char *text, const char *source)
{
	char derived[LABEL_TEXT_MAX], other[LABEL_TEXT_MAX + 32];
	int to;
	uint32_t id, d = LABEL_NONE;

	if (label < 0 || label >= t->nnames)
		return LABEL_NONE;
	id = find_value(t, label, text, value_hash(label, text));
	if (id != LABEL_NONE)
		return id;
	to = t->derive_to[label];
	if (to >= 0) {
		t->derive[label](source, derived, sizeof(derived));
		d = label_intern(t, to, derived, derived);
	}
	if (t->per_label[label] >= LABEL_VALUES_MAX) {
		if (to >= 0 && d != LABEL_NONE)
			snprintf(other, sizeof(other), "[other values: %s]", t->v[d].value);
		else
			snprintf(other, sizeof(other), "%s", LABEL_OTHER);
		text = other;
	}
	id = intern_one(t, label, text);
	if (id != LABEL_NONE)
		t->v[id].derived = d;
	return id;
}

/* Widens the series' clock until its bins reach end_ns. */
static void fit_clock(struct label_table *t, uint64_t end_ns)
{
	size_t i;

	while (label_clock_too_narrow(&t->clock, end_ns)) {
		for (i = 0; i < t->n; i++)
			if (t->v[i].series)
				label_series_halve(t->v[i].series);
		label_clock_widen(&t->clock);
	}
}

void label_add_time(struct label_table *t, uint32_t id, int state, uint64_t start_ns,
		    uint64_t ns, int sample)
{
	int hops;

	if (state < 0 || state >= STATE_MAX || id >= t->n)
		return;
	fit_clock(t, start_ns + ns < start_ns ? UINT64_MAX : start_ns + ns);
	for (hops = 0; id < t->n && hops < 2; hops++, id = t->v[id].derived) {
		t->v[id].ns[state] += ns;
		t->v[id].samples += sample;
		if (t->v[id].series)
			label_series_add(t->v[id].series, &t->clock, state, start_ns, ns);
	}
}

void label_add_gc(struct label_table *t, uint32_t id, uint64_t ns)
{
	int hops;

	for (hops = 0; id < t->n && hops < 2; hops++, id = t->v[id].derived) {
		t->v[id].gc_count++;
		t->v[id].gc_ns += ns;
	}
}

void label_table_next_period(struct label_table *t)
{
	size_t i;

	for (i = 0; i < t->n; i++) {
		memset(t->v[i].ns, 0, sizeof(t->v[i].ns));
		t->v[i].samples = t->v[i].gc_count = t->v[i].gc_ns = 0;
		if (t->v[i].series)
			memset(t->v[i].series, 0,
			       (size_t)LABEL_BINS * STATE_RECORDED * sizeof(*t->v[i].series));
	}
	label_clock_init(&t->clock);	/* the period's times start from 0 again */
}

uint64_t label_value_total(const struct label_value *v)
{
	uint64_t total = 0;
	int s;

	for (s = 0; s < STATE_RECORDED; s++)
		total += v->ns[s];
	return total;
}

/* Appends to out[*at..len) as far as it fits. */
static void put(char *out, size_t len, size_t *at, const char *s)
{
	int n = snprintf(out + *at, len - *at, "%s", s);

	*at += n < 0 ? 0 : (size_t)n >= len - *at ? len - *at - 1 : (size_t)n;
}

static void put_bytes(char *out, size_t len, size_t *at, const __u8 *b, unsigned n)
{
	char c[8];
	unsigned i;

	for (i = 0; i < n; i++) {
		if (b[i] >= 0x20 && b[i] < 0x7f && b[i] != '\\')
			snprintf(c, sizeof(c), "%c", b[i]);
		else
			snprintf(c, sizeof(c), "\\x%02x", b[i]);
		put(out, len, at, c);
	}
}

static void put_item(char *out, size_t len, size_t *at, const struct ep_label_blob *b, int i,
		     int quoted)
{
	const __u8 *data = i ? b->rest[i - 1] : b->first;
	unsigned room = i ? EP_LABEL_ITEM_BYTES : EP_LABEL_FIRST_BYTES;
	unsigned n = b->len[i] < room ? b->len[i] : room;
	char num[32];
	__s64 v;

	switch (b->tag[i]) {
	case EP_LT_STR:
	case EP_LT_STR_CUT:
		put(out, len, at, quoted ? "'" : "");
		put_bytes(out, len, at, data, n);
		put(out, len, at, b->tag[i] == EP_LT_STR_CUT ? "..." : "");
		put(out, len, at, quoted ? "'" : "");
		break;
	case EP_LT_INT:
		memcpy(&v, data, sizeof(v));
		snprintf(num, sizeof(num), "%lld", (long long)v);
		put(out, len, at, num);
		break;
	case EP_LT_BIG_INT:
		put(out, len, at, "<big int>");
		break;
	case EP_LT_TYPE:
		put(out, len, at, "<");
		put_bytes(out, len, at, data, n);
		put(out, len, at, ">");
		break;
	case EP_LT_WIDE_STR:
		put(out, len, at, "<str beyond latin-1>");
		break;
	default:
		put(out, len, at, "<unreadable>");
	}
}

void label_format(const struct ep_label_blob *b, char *out, size_t len)
{
	size_t at = 0;
	int i, n = b->nitems < EP_LABEL_ITEMS ? b->nitems : EP_LABEL_ITEMS;

	out[0] = 0;
	if (!b->tuple) {
		put_item(out, len, &at, b, 0, 0);
		return;
	}
	put(out, len, &at, "(");
	for (i = 0; i < n; i++) {
		put(out, len, &at, i ? ", " : "");
		put_item(out, len, &at, b, i, 1);
	}
	put(out, len, &at, b->more ? ", ...)" : n == 1 ? ",)" : ")");
}

const char *label_source(const struct ep_label_blob *b, char *buf, size_t len)
{
	size_t at = 0;

	if (b->tag[0] != EP_LT_STR && b->tag[0] != EP_LT_STR_CUT)
		return NULL;
	buf[0] = 0;
	put_bytes(buf, len, &at, b->first, b->len[0] < EP_LABEL_FIRST_BYTES ? b->len[0] :
						      EP_LABEL_FIRST_BYTES);
	return buf;
}

static int name_char_ok(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-' || c == '.';
}

int label_spec_parse(const char *arg, struct label_spec *out, char *err, size_t errlen)
{
	const char *eq = strchr(arg, '='), *colon = strrchr(arg, ':'), *p;
	char *end;
	long idx;

	memset(out, 0, sizeof(*out));
	if (!eq || !colon || colon < eq) {
		snprintf(err, errlen, "invalid --label %s: NAME=FUNCTION:ARGUMENT expected", arg);
		return -1;
	}
	if (eq == arg || eq - arg >= LABEL_NAME_MAX) {
		snprintf(err, errlen, "invalid --label %s: NAME must have 1 to %d characters", arg,
			 LABEL_NAME_MAX - 1);
		return -1;
	}
	for (p = arg; p < eq; p++) {
		if (!name_char_ok(*p)) {
			snprintf(err, errlen, "invalid --label %s: NAME may hold letters, digits and _-. only", arg);
			return -1;
		}
	}
	if (colon == eq + 1 || colon - eq - 1 >= LABEL_FUNCTION_MAX) {
		snprintf(err, errlen, "invalid --label %s: FUNCTION must have 1 to %d characters", arg,
			 LABEL_FUNCTION_MAX - 1);
		return -1;
	}
	errno = 0;
	idx = strtol(colon + 1, &end, 10);
	if (!colon[1] || *end || errno || idx < 0 || idx > EP_LABEL_MAX_ARG) {
		snprintf(err, errlen, "invalid --label %s: ARGUMENT must be an argument index, 0 to %d",
			 arg, EP_LABEL_MAX_ARG);
		return -1;
	}
	memcpy(out->name, arg, eq - arg);
	memcpy(out->function, eq + 1, colon - eq - 1);
	out->arg = idx;
	return 0;
}

int label_function_matches(const char *function, const char *name)
{
	size_t nf = strlen(function), nn = strlen(name);

	if (!strcmp(function, name))
		return 1;
	/* a plain name matches the last part of a qualified one */
	return !strchr(function, '.') && nn > nf && name[nn - nf - 1] == '.' &&
	       !strcmp(name + nn - nf, function);
}

uint32_t label_value_under(const struct label_table *t, uint32_t sample_label, int label)
{
	uint32_t id = sample_label - 1;
	int hops;

	for (hops = 0; sample_label && id < t->n && hops < 2; hops++, id = t->v[id].derived)
		if (t->v[id].label == label)
			return id;
	return LABEL_NONE;
}

int label_table_find(const struct label_table *t, const char *name)
{
	int i;

	for (i = 0; i < t->nnames; i++)
		if (!strcmp(t->names[i], name))
			return i;
	return -1;
}
