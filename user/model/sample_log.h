/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * One thread's samples as a compact append-only log: a long recording keeps
 * every sample (the time-ordered views need them all), so a sample must cost
 * a few bytes, not a struct. Each record is delta-encoded against the one
 * before it: a flags byte (state, GIL, exact, "weight is the nominal period",
 * "same stack as before"), the start as a signed varint delta, then the stack
 * id and the weight as varints only when the flags do not already say them.
 * Records live in chunks of at most 16 KiB, never in one big array that
 * realloc would have to copy, or leave twice as large as needed.
 */
#ifndef EP_SAMPLE_LOG_H
#define EP_SAMPLE_LOG_H
#include <stddef.h>
#include <stdint.h>

/* One sample as the log stores it: its stack by id. */
struct sample_record {
	uint64_t start_ns;
	uint64_t weight_ns;
	uint32_t stack;		/* an id of the profile's stack store */
	uint32_t label;		/* --label: the label value's id + 1, 0: none */
	uint8_t state;
	uint8_t holds_gil;	/* 0 or 1 when read back */
	uint8_t exact;		/* 0 or 1 when read back */
};

struct sample_chunk;

struct sample_log {
	struct sample_chunk *first, *last;
	size_t n;		/* records */
	uint64_t nominal_ns;	/* a weight the log stores as a flag only */
	uint64_t last_start;	/* the last record's, for the next delta */
	uint32_t last_stack;
	int unsorted;		/* a record starts before the one ahead of it */
	size_t bytes;		/* allocated, headers included */
};

/* An empty log whose records of weight nominal_ns cost no weight bytes. */
void sample_log_init(struct sample_log *log, uint64_t nominal_ns);
void sample_log_free(struct sample_log *log);
/* Appends r. 0, or -1 (errno ENOMEM) with the log unchanged. */
int sample_log_append(struct sample_log *log, const struct sample_record *r);

struct sample_log_reader {
	const struct sample_chunk *chunk;
	size_t pos;		/* in chunk */
	size_t left;		/* records not yet read */
	uint64_t nominal_ns, last_start;
	uint32_t last_stack;
};

void sample_log_reader_init(struct sample_log_reader *rd, const struct sample_log *log);
/* The next record into *r: 1, or 0 when there is none left. */
int sample_log_read(struct sample_log_reader *rd, struct sample_record *r);

#endif
