// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The compact sample log (see sample_log.h). A record is
 *
 *	flags		state (low 4 bits; 15: the state is the next byte),
 *			GIL held, exact, weight nominal, same stack
 *	[state]		only when the low bits are 15: a varint of state << 1,
 *			plus 1 when a label follows (a state over 14, or a label)
 *	[label]		varint, the sample's label value (--label)
 *	start delta	zigzag varint of start - the previous record's start
 *			(mod 2^64, so that any two starts round-trip)
 *	[stack]		varint, unless the same as the previous record's
 *	[weight]	varint, unless the log's nominal weight
 *
 * At 100 Hz a typical on-CPU sample takes 5 to 7 bytes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "sample_log.h"
#include "varint.h"

#define F_STATE		0x0f
#define F_STATE_BYTE	0x0f	/* the state does not fit: it follows */
#define F_GIL		0x10
#define F_EXACT		0x20
#define F_NOMINAL	0x40
#define F_SAME_STACK	0x80

/* flags, a 2-byte state, a 5-byte label, a 10-byte start delta, a 5-byte stack, a
 * 10-byte weight */
#define RECORD_MAX	33
/* Chunks double from the first size to the last: a thread with a few
 * samples costs little, a long one a chunk list of 16 KiB blocks. */
#define CHUNK_FIRST	256
#define CHUNK_LAST	16384

struct sample_chunk {
	struct sample_chunk *next;
	uint32_t used, cap;	/* bytes of data */
	uint8_t data[];
};

void sample_log_init(struct sample_log *log, uint64_t nominal_ns)
{
	memset(log, 0, sizeof(*log));
	log->nominal_ns = nominal_ns;
	log->last_stack = UINT32_MAX;	/* the first record names its stack */
}

void sample_log_free(struct sample_log *log)
{
	struct sample_chunk *c, *next;

	for (c = log->first; c; c = next) {
		next = c->next;
		free(c);
	}
	sample_log_init(log, log->nominal_ns);
}

/* Where the next record goes: room for RECORD_MAX bytes, or NULL. */
static uint8_t *room(struct sample_log *log)
{
	struct sample_chunk *c = log->last;
	size_t size = CHUNK_FIRST;

	if (c && c->cap - c->used >= RECORD_MAX)
		return c->data + c->used;
	if (c)
		size = (sizeof(*c) + c->cap) * 2 > CHUNK_LAST ? CHUNK_LAST
							      : (sizeof(*c) + c->cap) * 2;
	c = malloc(size);
	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	c->next = NULL;
	c->used = 0;
	c->cap = size - sizeof(*c);
	if (log->last)
		log->last->next = c;
	else
		log->first = c;
	log->last = c;
	log->bytes += size;
	return c->data;
}

/* Signed deltas as small unsigned numbers: 0, -1, 1, -2... -> 0, 1, 2, 3... */
static uint64_t zigzag(uint64_t delta)
{
	return (delta << 1) ^ (uint64_t)-(int64_t)(delta >> 63);
}

static uint64_t unzigzag(uint64_t z)
{
	return (z >> 1) ^ (uint64_t)-(int64_t)(z & 1);
}

int sample_log_append(struct sample_log *log, const struct sample_record *r)
{
	uint8_t *start = room(log), *p, flags = 0;
	uint64_t delta = r->start_ns - log->last_start;	/* mod 2^64 */

	if (!start)
		return -1;
	flags |= r->state < F_STATE_BYTE && !r->label ? r->state : F_STATE_BYTE;
	flags |= r->holds_gil ? F_GIL : 0;
	flags |= r->exact ? F_EXACT : 0;
	flags |= r->weight_ns == log->nominal_ns ? F_NOMINAL : 0;
	flags |= r->stack == log->last_stack ? F_SAME_STACK : 0;
	p = start;
	*p++ = flags;
	if ((flags & F_STATE) == F_STATE_BYTE)
		p = varint_put(p, (uint64_t)r->state << 1 | !!r->label);
	if (r->label)
		p = varint_put(p, r->label);
	p = varint_put(p, zigzag(delta));
	if (!(flags & F_SAME_STACK))
		p = varint_put(p, r->stack);
	if (!(flags & F_NOMINAL))
		p = varint_put(p, r->weight_ns);
	log->last->used += p - start;
	if (log->n && r->start_ns < log->last_start)
		log->unsorted = 1;
	log->last_start = r->start_ns;
	log->last_stack = r->stack;
	log->n++;
	return 0;
}

void sample_log_reader_init(struct sample_log_reader *rd, const struct sample_log *log)
{
	rd->chunk = log->first;
	rd->pos = 0;
	rd->left = log->n;
	rd->nominal_ns = log->nominal_ns;
	rd->last_start = 0;
	rd->last_stack = UINT32_MAX;
}

int sample_log_read(struct sample_log_reader *rd, struct sample_record *r)
{
	const uint8_t *p, *start;
	uint64_t v;
	uint8_t flags;

	if (!rd->left)
		return 0;
	if (rd->pos == rd->chunk->used) {
		rd->chunk = rd->chunk->next;
		rd->pos = 0;
	}
	p = start = rd->chunk->data + rd->pos;
	flags = *p++;
	r->state = flags & F_STATE;
	r->label = 0;
	if (r->state == F_STATE_BYTE) {
		p = varint_get(p, &v);
		r->state = (uint8_t)(v >> 1);
		if (v & 1) {
			p = varint_get(p, &v);
			r->label = (uint32_t)v;
		}
	}
	r->holds_gil = !!(flags & F_GIL);
	r->exact = !!(flags & F_EXACT);
	p = varint_get(p, &v);
	r->start_ns = rd->last_start + unzigzag(v);
	r->stack = rd->last_stack;
	if (!(flags & F_SAME_STACK)) {
		p = varint_get(p, &v);
		r->stack = (uint32_t)v;
	}
	r->weight_ns = rd->nominal_ns;
	if (!(flags & F_NOMINAL))
		p = varint_get(p, &r->weight_ns);
	rd->pos += p - start;
	rd->last_start = r->start_ns;
	rd->last_stack = r->stack;
	rd->left--;
	return 1;
}
