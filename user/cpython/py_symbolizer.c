// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Code object -> (qualified name, file, line table), read from the target
 * with bounded reads and cached by (address, identity): the identity the
 * kernel computed (ep_code_ident) tells apart a code object freed and
 * another allocated at the same address.
 * The line of each sample is decoded from the cached table, and the last
 * few answers of each code object are kept.
 *
 * The target decides how many code objects there are and how big their
 * tables are: the cache has a byte budget and an entry limit, and when
 * either is passed the least recently used half is dropped (and read
 * again if sampled again). The profile copies what it keeps.
 */
#include <stdlib.h>
#include <string.h>
#include "clock.h"
#include "ebpfprof.h"
#include "frame_names.h"
#include "grow.h"
#include "hash.h"
#include "hash_index.h"
#include "py_linetable.h"
#include "py_str.h"
#include "py_symbolizer.h"
#include "remote.h"

#define NAME_MAX_CHARS		1024
#define LINETABLE_MAX_BYTES	(1u << 20)
/* Names, files and line tables held at most; then the older half goes. */
#define CACHE_BUDGET_BYTES	(32u << 20)
#define CACHE_MAX_ENTRIES	(1u << 16)
/* Line answers remembered per code object (by instruction offset). */
#define LINE_MEMO		4
/* A code object whose name could not be read is read again when sampled,
 * at most this many times, this far apart: a read that failed for a
 * moment (the target mapping memory at its start, a reader given up on)
 * had left a launched target's every frame <unknown> to the end. */
#define FILL_TRIES		16
#define FILL_GAP_NS		(50 * 1000000ull)

/* What the last read of an entry found. */
enum fill_result {
	FILL_NAMED,
	FILL_UNREAD,		/* its firstlineno or filename unreadable */
	FILL_REPLACED,		/* they no longer give the kernel's identity */
	FILL_NAMELESS,		/* its name string unreadable */
};

struct code_entry {
	uint64_t code;
	uint32_t ident;
	int32_t firstlineno;
	int used;
	enum fill_result result;
	char *name;
	char *file;
	uint8_t *table;
	size_t table_len;
	size_t bytes;		/* of the above, for the budget */
	uint64_t last_use;
	uint64_t filled_ns;	/* when last read */
	int complete_later;	/* named by the kernel: file, line table still to read */
	unsigned fills;		/* reads so far */
	uint32_t memo_instr[LINE_MEMO];
	int memo_line[LINE_MEMO];
	unsigned memo_next;
};

struct py_symbolizer {
	pid_t pid;
	struct py_layout layout;
	struct code_entry *entries;	/* the used ones first, in the order made */
	size_t cap, used;
	struct hash_index index;	/* entries by (code, ident) */
	size_t bytes;		/* held by all entries */
	uint64_t tick;		/* lookups so far: the LRU clock */
	size_t seeded;		/* code objects the kernel named */
};

struct py_symbolizer *py_symbolizer_new(pid_t pid, const struct py_layout *layout)
{
	struct py_symbolizer *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->pid = pid;
	s->layout = *layout;
	return s;
}

static void entry_free(struct code_entry *e)
{
	free(e->name);
	free(e->file);
	free(e->table);
}

void py_symbolizer_free(struct py_symbolizer *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->used; i++)
		entry_free(&s->entries[i]);
	free(s->entries);
	hash_index_free(&s->index);
	free(s);
}

static uint64_t code_hash(uint64_t code, uint32_t ident)
{
	return fnv1a(fnv1a(FNV1A_BASIS, &code, sizeof(code)), &ident, sizeof(ident));
}

/* Indexes entries[0 .. used - 1] again, after eviction moved them. */
static void reindex(struct py_symbolizer *s)
{
	size_t i;

	hash_index_clear(&s->index);	/* as big as before: adds cannot fail */
	for (i = 0; i < s->used; i++)
		hash_index_add(&s->index, code_hash(s->entries[i].code, s->entries[i].ident), i);
}

static int by_last_use(const void *x, const void *y)
{
	const struct code_entry *a = *(const struct code_entry *const *)x;
	const struct code_entry *b = *(const struct code_entry *const *)y;

	return a->last_use < b->last_use ? -1 : a->last_use > b->last_use;
}

/* Drops the least recently used entries until at most half the budget and
 * half the entry limit are held. Amortised: each drop halves the cache. */
static void evict(struct py_symbolizer *s)
{
	struct code_entry **order = malloc(s->used * sizeof(*order));
	size_t i, n = 0;

	if (!order)
		return;
	for (i = 0; i < s->used; i++)
		order[n++] = &s->entries[i];
	qsort(order, n, sizeof(*order), by_last_use);
	for (i = 0; i < n && (s->bytes > CACHE_BUDGET_BYTES / 2 ||
			      s->used > CACHE_MAX_ENTRIES / 2); i++) {
		s->bytes -= order[i]->bytes;
		s->used--;
		entry_free(order[i]);
		memset(order[i], 0, sizeof(*order[i]));
	}
	free(order);
	/* the survivors close up, in the order they were made */
	for (i = 0, n = 0; n < s->used; i++)
		if (s->entries[i].used)
			s->entries[n++] = s->entries[i];
	reindex(s);
}

int py_symbolizer_read_str(pid_t pid, const struct py_layout *L, uint64_t obj,
			   char *out, size_t out_size)
{
	struct py_str_state st;
	int64_t length;
	uint32_t state;
	uint64_t data;
	void *buf;
	int n;

	if (remote_read(pid, obj + L->unicode_length, &length, sizeof(length)) ||
	    remote_read(pid, obj + L->unicode_state, &state, sizeof(state)) ||
	    py_str_parse_state(state, &st) || length < 0)
		return -1;
	if (length > NAME_MAX_CHARS)
		length = NAME_MAX_CHARS;
	if (st.compact)
		data = obj + (st.ascii ? L->unicode_ascii_size : L->unicode_compact_size);
	else if (remote_read_u64(pid, obj + L->unicode_compact_size, &data))
		return -1;
	buf = malloc(length * st.kind + 1);
	if (!buf)
		return -1;
	n = remote_read(pid, data, buf, length * st.kind) ? -1 :
		py_str_to_utf8(st.kind, buf, length * st.kind, length, out, out_size);
	free(buf);
	return n < 0 ? -1 : 0;
}

static char *read_str_field(struct py_symbolizer *s, uint64_t code, int off)
{
	char buf[NAME_MAX_CHARS * 4 + 1];
	uint64_t obj;

	if (off < 0 || remote_read_u64(s->pid, code + off, &obj) ||
	    py_symbolizer_read_str(s->pid, &s->layout, obj, buf, sizeof(buf)))
		return NULL;
	return strdup(buf);
}

static void read_linetable(struct py_symbolizer *s, struct code_entry *e)
{
	const struct py_layout *L = &s->layout;
	uint64_t bytes;
	int64_t len;

	if (remote_read_u64(s->pid, e->code + L->code_linetable, &bytes) ||
	    remote_read(s->pid, bytes + L->bytes_size, &len, sizeof(len)) ||
	    len <= 0 || (uint64_t)len > LINETABLE_MAX_BYTES)
		return;
	e->table = malloc(len);
	if (e->table && !remote_read(s->pid, bytes + L->bytes_data, e->table, len)) {
		e->table_len = len;
		e->bytes += len;
		return;
	}
	free(e->table);
	e->table = NULL;
}

static void fill_entry(struct py_symbolizer *s, struct code_entry *e)
{
	const struct py_layout *L = &s->layout;
	uint64_t filename = 0;
	int unread;

	e->fills++;
	e->filled_ns = monotonic_ns();
	/* The code object may be gone since the sample: trust nothing that no
	 * longer matches what the kernel saw. */
	unread = remote_read_i32(s->pid, e->code + L->code_firstlineno, &e->firstlineno) ||
		 remote_read_u64(s->pid, e->code + L->code_filename, &filename);
	if (unread || ep_code_ident(e->firstlineno, filename) != e->ident) {
		/* read, and another object there: not read again (a later
		 * match by chance would name it after another) */
		if (!unread)
			e->fills = FILL_TRIES;
		e->result = unread ? FILL_UNREAD : FILL_REPLACED;
		e->firstlineno = 0;
		return;
	}
	e->name = read_str_field(s, e->code, L->code_qualname >= 0 ? L->code_qualname : L->code_name);
	/* no name, no frame worth a line: and a read again stays small */
	e->result = e->name ? FILL_NAMED : FILL_NAMELESS;
	if (!e->name)
		return;
	e->file = read_str_field(s, e->code, L->code_filename);
	e->bytes = (e->name ? strlen(e->name) + 1 : 0) + (e->file ? strlen(e->file) + 1 : 0);
	read_linetable(s, e);
}

/* Reads a code object again whose name was not read: what the first read
 * kept goes, the count of reads stays. */
static void refill_entry(struct py_symbolizer *s, struct code_entry *e)
{
	struct code_entry again = { .code = e->code, .ident = e->ident, .used = 1,
				    .fills = e->fills };

	s->bytes -= e->bytes;
	entry_free(e);
	*e = again;
	fill_entry(s, e);
	s->bytes += e->bytes;
}

/* The entry of (code, ident); else an unused one, zeroed, that
 * entry_taken counts once filled; NULL when out of memory. */
static struct code_entry *slot_for(struct py_symbolizer *s, uint64_t code, uint32_t ident)
{
	struct hash_probe p;
	size_t i;

	if (s->bytes > CACHE_BUDGET_BYTES || s->used >= CACHE_MAX_ENTRIES)
		evict(s);
	for (i = hash_index_first(&s->index, code_hash(code, ident), &p); i != HASH_INDEX_NONE;
	     i = hash_index_next(&p))
		if (s->entries[i].code == code && s->entries[i].ident == ident)
			return &s->entries[i];
	if (GROW_ARRAY(s->entries, s->cap, s->used + 1) ||
	    hash_index_reserve(&s->index, s->used + 1))
		return NULL;
	memset(&s->entries[s->used], 0, sizeof(s->entries[s->used]));
	return &s->entries[s->used];
}

/* The unused entry slot_for gave, for (code, ident), is used now. */
static void entry_taken(struct py_symbolizer *s, uint64_t code, uint32_t ident)
{
	hash_index_add(&s->index, code_hash(code, ident), s->used++);	/* reserved */
}

/* A code object the kernel named: what it could not send (the file name,
 * the line table) is read from the target when the object is first looked
 * up, if it is still the same object; else its lines are its first line. */
static void complete_entry(struct py_symbolizer *s, struct code_entry *e)
{
	const struct py_layout *L = &s->layout;
	uint64_t filename = 0;
	int32_t firstlineno = 0;

	e->complete_later = 0;
	if (remote_read_i32(s->pid, e->code + L->code_firstlineno, &firstlineno) ||
	    remote_read_u64(s->pid, e->code + L->code_filename, &filename) ||
	    ep_code_ident(firstlineno, filename) != e->ident)
		return;
	s->bytes -= e->bytes;
	if (!e->file) {
		e->file = read_str_field(s, e->code, L->code_filename);
		e->bytes += e->file ? strlen(e->file) + 1 : 0;
	}
	read_linetable(s, e);
	s->bytes += e->bytes;
}

/* latin-1 bytes from the kernel's record as a UTF-8 string; NULL if none. */
static char *latin1_dup(const uint8_t *bytes, size_t len)
{
	char buf[EP_CODE_FILE_MAX * 2 + 1];

	if (!len || len >= EP_CODE_FILE_MAX ||
	    py_str_to_utf8(1, bytes, len, len, buf, sizeof(buf)) < 0)
		return NULL;
	return strdup(buf);
}

void py_symbolizer_seed(struct py_symbolizer *s, const struct ep_code_event *ev)
{
	struct code_entry *e = slot_for(s, ev->code, ev->ident);
	char *name = latin1_dup(ev->name, ev->name_len < EP_CODE_NAME_MAX ? ev->name_len : 0);

	if (!e || !name || (e->used && e->name)) {
		free(name);
		return;		/* named already: userspace read it first */
	}
	if (e->used) {
		s->bytes -= e->bytes;
		entry_free(e);
	} else {
		entry_taken(s, ev->code, ev->ident);
	}
	*e = (struct code_entry){ .code = ev->code, .ident = ev->ident, .used = 1,
				  .firstlineno = ev->firstlineno, .result = FILL_NAMED,
				  .name = name, .complete_later = 1, .fills = FILL_TRIES,
				  .filled_ns = monotonic_ns(), .last_use = ++s->tick };
	e->file = latin1_dup(ev->file, ev->file_len < EP_CODE_FILE_MAX ? ev->file_len : 0);
	e->bytes = strlen(name) + 1 + (e->file ? strlen(e->file) + 1 : 0);
	s->bytes += e->bytes;
	s->seeded++;
}

static struct code_entry *lookup(struct py_symbolizer *s, uint64_t code, uint32_t ident)
{
	struct code_entry *e = slot_for(s, code, ident);

	if (!e)
		return NULL;
	if (e->complete_later)
		complete_entry(s, e);
	if (!e->used) {
		e->used = 1;
		e->code = code;
		e->ident = ident;
		entry_taken(s, code, ident);
		fill_entry(s, e);
		s->bytes += e->bytes;
	} else if (!e->name && e->fills < FILL_TRIES &&
		   monotonic_ns() - e->filled_ns >= FILL_GAP_NS) {
		refill_entry(s, e);
	}
	e->last_use = ++s->tick;
	return e;
}

void py_symbolizer_unnamed(const struct py_symbolizer *s, struct py_sym_unnamed *out)
{
	/* the identity of a code object whose fields the kernel could not read */
	const uint32_t kernel_unread = ep_code_ident(0, 0);
	size_t i;

	memset(out, 0, sizeof(*out));
	out->seeded = s->seeded;
	for (i = 0; i < s->used; i++) {
		const struct code_entry *e = &s->entries[i];

		out->held++;
		out->unread += e->result == FILL_UNREAD;
		out->replaced += e->result == FILL_REPLACED;
		out->kernel_unread += e->result == FILL_REPLACED && e->ident == kernel_unread;
		out->nameless += e->result == FILL_NAMELESS;
	}
}

/* The line of instr, remembered: a table can be 1 MiB long and the same
 * few instructions are sampled again and again. */
static int entry_line(struct py_symbolizer *s, struct code_entry *e, uint32_t instr)
{
	unsigned i;
	int line;

	for (i = 0; i < LINE_MEMO && i < e->memo_next; i++)
		if (e->memo_instr[i] == instr)
			return e->memo_line[i];
	line = py_linetable_line_for_offset(s->layout.linetable_format, e->table,
					    e->table_len, e->firstlineno, instr);
	i = e->memo_next++ % LINE_MEMO;
	e->memo_instr[i] = instr;
	e->memo_line[i] = line;
	return line;
}

void py_symbolizer_frame(struct py_symbolizer *s, uint64_t code, uint32_t ident,
			 uint32_t instr, struct py_sym_frame *out)
{
	struct code_entry *e = lookup(s, code, ident);
	int line = -1;

	out->name = e && e->name ? e->name : PY_SYM_UNNAMED;
	out->file = e ? e->file : NULL;
	out->firstlineno = e ? e->firstlineno : 0;
	if (e && e->table && instr != ~0u)
		line = entry_line(s, e, instr);
	out->line = line >= 0 ? line : out->firstlineno;
	/* --full-filenames, --nolineno */
	frame_naming_apply(&out->file, &out->line, &out->firstlineno);
}
