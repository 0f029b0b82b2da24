// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * pprof's profile.proto (github.com/google/pprof, proto/profile.proto),
 * gzip-compressed as `go tool pprof` expects it on disk.
 *
 * The protobuf encoding is written by hand: the message is small and flat,
 * and a protobuf library would be a large dependency for seven message
 * types. Field numbers below are profile.proto's.
 *
 * Each Location is one interned frame (id = frame id + 1), so a Location
 * carries the frame's current line; Functions are the distinct
 * (name, file) pairs. Samples are aggregated per thread, state and stack,
 * and labelled with the thread and the state. With record --tasks' spans,
 * a third type, task_suspended, holds the suspended tasks' task-seconds.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>
#include "grow.h"
#include "hash.h"
#include "hash_index.h"
#include "analysis.h"
#include "json.h"
#include "utf8.h"
#include "varint.h"
#include "writer.h"

#include "version.h"

/* Profile */
#define PROFILE_SAMPLE_TYPE	1
#define PROFILE_SAMPLE		2
#define PROFILE_LOCATION	4
#define PROFILE_FUNCTION	5
#define PROFILE_STRING_TABLE	6
#define PROFILE_TIME_NANOS	9
#define PROFILE_DURATION_NANOS	10
#define PROFILE_PERIOD_TYPE	11
#define PROFILE_PERIOD		12
#define PROFILE_COMMENT		13
/* ValueType */
#define VALUE_TYPE_TYPE		1
#define VALUE_TYPE_UNIT		2
/* Sample */
#define SAMPLE_LOCATION_ID	1
#define SAMPLE_VALUE		2
#define SAMPLE_LABEL		3
/* Label */
#define LABEL_KEY		1
#define LABEL_STR		2
#define LABEL_NUM		3
/* Location */
#define LOCATION_ID		1
#define LOCATION_LINE		4
/* Line */
#define LINE_FUNCTION_ID	1
#define LINE_LINE		2
/* Function */
#define FUNCTION_ID		1
#define FUNCTION_NAME		2
#define FUNCTION_SYSTEM_NAME	3
#define FUNCTION_FILENAME	4

#define WIRE_VARINT	0
#define WIRE_LEN	2

/*
 * A growing byte buffer. An allocation failure is remembered rather than
 * returned from every append, and checked once when the message is done.
 */
struct pbuf {
	uint8_t *data;
	size_t len, cap;
	int failed;
};

static void pb_reserve(struct pbuf *b, size_t more)
{
	if (b->failed || more > SIZE_MAX - b->len || GROW_ARRAY(b->data, b->cap, b->len + more))
		b->failed = 1;
}

static void pb_raw(struct pbuf *b, const void *data, size_t len)
{
	pb_reserve(b, len);
	if (b->failed)
		return;
	memcpy(b->data + b->len, data, len);
	b->len += len;
}

static void pb_varint(struct pbuf *b, uint64_t v)
{
	uint8_t tmp[VARINT_MAX];

	pb_raw(b, tmp, varint_put(tmp, v) - tmp);
}

static void pb_key(struct pbuf *b, unsigned field, unsigned wire)
{
	pb_varint(b, (uint64_t)field << 3 | wire);
}

/* A scalar field; zero is proto3's default and is left out. */
static void pb_uint(struct pbuf *b, unsigned field, uint64_t v)
{
	if (!v)
		return;
	pb_key(b, field, WIRE_VARINT);
	pb_varint(b, v);
}

static void pb_bytes(struct pbuf *b, unsigned field, const void *data, size_t len)
{
	pb_key(b, field, WIRE_LEN);
	pb_varint(b, len);
	pb_raw(b, data, len);
}

/* Appends the message in sub as a field of b, and empties sub for reuse. */
static void pb_message(struct pbuf *b, unsigned field, struct pbuf *sub)
{
	if (sub->failed)
		b->failed = 1;
	pb_bytes(b, field, sub->data, sub->len);
	sub->len = 0;
}

/* A packed repeated varint field: how proto3 writes repeated scalars. */
static void pb_packed(struct pbuf *b, unsigned field, const uint64_t *v, size_t n,
		      struct pbuf *scratch)
{
	size_t i;

	for (i = 0; i < n; i++)
		pb_varint(scratch, v[i]);
	pb_message(b, field, scratch);
}

/* The string table: strings numbered in first-use order, "" first. */
struct strtab {
	char **strs;
	size_t n, cap;
	struct hash_index index;	/* strs by their text */
	int failed;
};

/*
 * A copy of s that is valid UTF-8, as proto3 requires of a string field:
 * strict decoders reject the whole profile otherwise.
 */
static char *utf8_copy(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	char *out = malloc(strlen(s) * 3 + 1), *o = out;
	size_t n, bad;

	if (!out)
		return NULL;
	while (*p) {
		n = utf8_len(p, &bad);
		if (n) {
			memcpy(o, p, n);
			o += n;
			p += n;
		} else {
			memcpy(o, "\xef\xbf\xbd", 3);
			o += 3;
			p += bad;
		}
	}
	*o = '\0';
	return out;
}

/* The string's index; 0 ("") on failure, which is remembered. */
static int64_t strtab_id(struct strtab *st, const char *s)
{
	struct hash_probe p;
	char *copy;
	uint64_t h;
	size_t e;

	if (st->failed)
		return 0;
	copy = utf8_copy(s ? s : "");
	if (!copy)
		goto fail;
	h = fnv1a_str(FNV1A_BASIS, copy);
	for (e = hash_index_first(&st->index, h, &p); e != HASH_INDEX_NONE; e = hash_index_next(&p))
		if (!strcmp(st->strs[e], copy)) {
			free(copy);
			return (int64_t)e;
		}
	if (GROW_ARRAY(st->strs, st->cap, st->n + 1) || hash_index_add(&st->index, h, st->n)) {
		free(copy);
		goto fail;
	}
	st->strs[st->n] = copy;
	return (int64_t)st->n++;
fail:
	st->failed = 1;
	return 0;
}

static void strtab_free(struct strtab *st)
{
	size_t i;

	for (i = 0; i < st->n; i++)
		free(st->strs[i]);
	free(st->strs);
	hash_index_free(&st->index);
}

/* Everything one write needs. */
struct pprof {
	const struct profile *p;
	const struct label_table *labels;	/* --label; NULL: none */
	int pid;		/* writer_options.pid */
	int state_types;	/* writer_options.state_types */
	int task_type;		/* a last sample type for --tasks' task-seconds */
	struct pbuf out, msg, sub, scratch;
	struct strtab st;
	uint32_t *frame_func;	/* frame id -> function id */
};

static void put_value_type(struct pprof *pp, unsigned field, const char *type,
			   const char *unit)
{
	pb_uint(&pp->msg, VALUE_TYPE_TYPE, strtab_id(&pp->st, type));
	pb_uint(&pp->msg, VALUE_TYPE_UNIT, strtab_id(&pp->st, unit));
	pb_message(&pp->out, field, &pp->msg);
}

/*
 * Functions: one per distinct (name, file), numbered from 1. Frames that
 * differ only in their line share one; sorting the frames by the string
 * ids of their name and file puts those side by side.
 */
struct func_key {
	int64_t name, file;
	uint32_t frame;
};

static int func_key_cmp(const void *a, const void *b)
{
	const struct func_key *x = a, *y = b;

	if (x->name != y->name)
		return x->name < y->name ? -1 : 1;
	if (x->file != y->file)
		return x->file < y->file ? -1 : 1;
	return x->frame < y->frame ? -1 : x->frame > y->frame;
}

static void put_function(struct pprof *pp, uint32_t id, const struct func_key *k)
{
	pb_uint(&pp->msg, FUNCTION_ID, id);
	pb_uint(&pp->msg, FUNCTION_NAME, k->name);
	pb_uint(&pp->msg, FUNCTION_SYSTEM_NAME, k->name);
	pb_uint(&pp->msg, FUNCTION_FILENAME, k->file);
	pb_message(&pp->out, PROFILE_FUNCTION, &pp->msg);
}

/* Numbers the functions, fills frame_func and writes the Function messages. */
static int put_functions(struct pprof *pp)
{
	const struct profile *p = pp->p;
	struct func_key *keys;
	uint32_t id = 0;
	size_t i;

	keys = calloc(p->nframes + 1, sizeof(*keys));
	pp->frame_func = calloc(p->nframes + 1, sizeof(*pp->frame_func));
	if (!keys || !pp->frame_func) {
		free(keys);
		return -1;
	}
	for (i = 0; i < p->nframes; i++) {
		keys[i].name = strtab_id(&pp->st, p->frames[i].name);
		/* A marker has no file; "" keeps it apart from any real one. */
		keys[i].file = p->frames[i].kind == FRAME_MARKER ? 0 :
			       strtab_id(&pp->st, p->frames[i].file);
		keys[i].frame = i;
	}
	qsort(keys, p->nframes, sizeof(*keys), func_key_cmp);
	for (i = 0; i < p->nframes; i++) {
		if (!i || keys[i].name != keys[i - 1].name ||
		    keys[i].file != keys[i - 1].file)
			put_function(pp, ++id, &keys[i]);
		pp->frame_func[keys[i].frame] = id;
	}
	free(keys);
	return 0;
}

static void put_locations(struct pprof *pp)
{
	const struct profile *p = pp->p;
	size_t i;

	for (i = 0; i < p->nframes; i++) {
		pb_uint(&pp->sub, LINE_FUNCTION_ID, pp->frame_func[i]);
		if (p->frames[i].line > 0)
			pb_uint(&pp->sub, LINE_LINE, p->frames[i].line);
		pb_uint(&pp->msg, LOCATION_ID, i + 1);
		pb_message(&pp->msg, LOCATION_LINE, &pp->sub);
		pb_message(&pp->out, PROFILE_LOCATION, &pp->msg);
	}
}

static int sample_cmp(const void *a, const void *b)
{
	const struct sample *x = *(const struct sample *const *)a;
	const struct sample *y = *(const struct sample *const *)b;

	if (x->state != y->state)
		return x->state < y->state ? -1 : 1;
	if (x->label != y->label)
		return x->label < y->label ? -1 : 1;
	return profile_stack_cmp(x->frames, x->nframes, y->frames, y->nframes);
}

static void put_label(struct pprof *pp, const char *key, const char *str,
		      int64_t num)
{
	pb_uint(&pp->sub, LABEL_KEY, strtab_id(&pp->st, key));
	if (str)
		pb_uint(&pp->sub, LABEL_STR, strtab_id(&pp->st, str));
	else
		pb_uint(&pp->sub, LABEL_NUM, num);
	pb_message(&pp->msg, SAMPLE_LABEL, &pp->sub);
}

/* --label: the sample's label value (id + 1, 0: none) and the one it
 * derives (dask_prefix), each under its label's name. */
static void put_value_labels(struct pprof *pp, uint32_t label)
{
	const struct label_table *t = pp->labels;
	uint32_t id = label - 1;
	int hops;

	if (!label || !t)
		return;
	for (hops = 0; id < t->n && hops < 2; hops++, id = t->v[id].derived)
		put_label(pp, t->names[t->v[id].label], t->v[id].value, 0);
}

/*
 * --push's sample types: the samples and cpu of the default, then one per
 * state but on-CPU, in nanoseconds (GC counts in cpu and in gc). A sample
 * has its time in cpu if on CPU, and in its state's column.
 */
#define STATE_TYPES	(2 + STATE_RECORDED - 1)

/* The name of state s's sample type: its name with '_' for '-' ("gil_wait"). */
void pprof_state_type_name(int s, char *out, size_t len)
{
	snprintf(out, len, "%s", sample_state_name(s));
	for (char *c = out; *c; c++)
		if (*c == '-')
			*c = '_';
}

static size_t sample_values(const struct pprof *pp, const struct sample *s, uint64_t count,
			    uint64_t ns, uint64_t *values)
{
	int on_cpu = s->state == STATE_ON_CPU || s->state == STATE_GC;

	if (!pp->state_types) {
		values[0] = count;
		values[1] = ns;
		values[2] = 0;		/* task_suspended */
		return 2 + pp->task_type;
	}
	memset(values, 0, STATE_TYPES * sizeof(*values));
	values[0] = on_cpu ? count : 0;
	values[1] = on_cpu ? ns : 0;
	if (s->state != STATE_ON_CPU && s->state < STATE_RECORDED)
		values[2 + s->state - 1] = ns;
	return STATE_TYPES;
}

/* A sample's locations (frames, root first) and values. */
static int put_stack_values(struct pprof *pp, const uint32_t *frames, uint32_t nframes,
			    const uint64_t *values, size_t nvalues)
{
	uint64_t *locs = malloc((nframes + 1) * sizeof(*locs));
	uint32_t i;

	if (!locs)
		return -1;
	/* Leaf first, as pprof wants; our stacks are root first. */
	for (i = 0; i < nframes; i++)
		locs[i] = (uint64_t)frames[nframes - 1 - i] + 1;
	pb_packed(&pp->msg, SAMPLE_LOCATION_ID, locs, nframes, &pp->scratch);
	pb_packed(&pp->msg, SAMPLE_VALUE, values, nvalues, &pp->scratch);
	free(locs);
	return 0;
}

static int put_sample(struct pprof *pp, const struct thread_profile *t,
		      const struct sample *s, uint64_t count, uint64_t ns)
{
	uint64_t values[STATE_TYPES];
	char fallback[32];
	size_t nvalues = sample_values(pp, s, count, ns, values);

	if (put_stack_values(pp, s->frames, s->nframes, values, nvalues))
		return -1;
	snprintf(fallback, sizeof(fallback), "Thread %d", t->tid);
	put_label(pp, "thread", t->name ? t->name : fallback, 0);
	put_label(pp, "thread_id", NULL, t->tid);
	put_label(pp, "pid", NULL, t->pid);
	if (t->process)
		put_label(pp, "process", t->process, 0);
	put_label(pp, "state", sample_state_name(s->state), 0);
	put_value_labels(pp, s->label);
	pb_message(&pp->out, PROFILE_SAMPLE, &pp->msg);
	return 0;
}

/* Is the sample worth a pprof sample: it must have a stack, and be seen. */
static int counted(const struct profile *p, const struct sample *s)
{
	uint32_t i;

	if (s->state == STATE_IDLE || !s->nframes)
		return 0;
	for (i = 0; i < s->nframes; i++)
		if (s->frames[i] >= p->nframes)
			return 0;
	return 1;
}

/* One Sample per distinct (state, stack) of the thread, values summed. */
static int put_thread_samples(struct pprof *pp, const struct thread_profile *t)
{
	struct sample *samples = profile_thread_samples(pp->p, t);
	const struct sample **order;
	uint64_t count, ns;
	size_t i, j, n = 0;
	int err = 0;

	order = calloc(t->nsamples + 1, sizeof(*order));
	if (!order || !samples) {
		free(order);
		free(samples);
		return -1;
	}
	for (i = 0; i < t->nsamples; i++)
		if (counted(pp->p, &samples[i]))
			order[n++] = &samples[i];
	qsort(order, n, sizeof(*order), sample_cmp);
	for (i = 0; !err && i < n; i = j) {
		count = 0;
		ns = 0;
		for (j = i; j < n && sample_cmp(&order[i], &order[j]) == 0; j++) {
			count += profile_sample_count(pp->p, order[j]);
			ns += order[j]->weight_ns;
		}
		err = put_sample(pp, t, order[i], count, ns);
	}
	free(order);
	free(samples);
	return err;
}

/*
 * record --tasks: each stack of a process's suspended tasks as a sample of
 * the last type, task_suspended (nanoseconds of task time), its samples
 * and cpu 0, labelled with the profile's name, the pid and the process.
 */
static int put_task_samples(int pid, void *arg)
{
	struct pprof *pp = arg;
	uint64_t values[3] = { 0 };
	struct task_profile tp;
	size_t i;
	int err;

	if (pp->pid && pid != pp->pid)
		return 0;
	err = task_profile_of(&pp->p->tasks, pid, &tp);
	for (i = 0; !err && i < tp.n; i++) {
		values[2] = tp.stacks[i].ns;
		err = put_stack_values(pp, tp.stacks[i].frames, tp.stacks[i].nframes, values, 3);
		put_label(pp, "profile", tp.title, 0);
		put_label(pp, "pid", NULL, pid);
		put_label(pp, "state", "task-suspended", 0);
		pb_message(&pp->out, PROFILE_SAMPLE, &pp->msg);
	}
	task_profile_free(&tp);
	return err ? -1 : 0;
}

/*
 * The profile records no wall-clock start; the writer runs as the session
 * ends, so now minus its duration is the start to within the write's delay.
 */
static uint64_t start_time_ns(const struct profile *p)
{
	struct timespec now;
	uint64_t ns;

	if (clock_gettime(CLOCK_REALTIME, &now))
		return 0;
	ns = (uint64_t)now.tv_sec * 1000000000ull + now.tv_nsec;
	return ns > p->duration_ns ? ns - p->duration_ns : 0;
}

static void put_header(struct pprof *pp)
{
	const struct profile *p = pp->p;
	uint64_t comment;

	/* "" must be string 0 before anything else is interned. */
	strtab_id(&pp->st, "");
	put_value_type(pp, PROFILE_SAMPLE_TYPE, "samples", "count");
	put_value_type(pp, PROFILE_SAMPLE_TYPE, "cpu", "nanoseconds");
	if (pp->task_type)
		put_value_type(pp, PROFILE_SAMPLE_TYPE, "task_suspended", "nanoseconds");
	for (int s = STATE_ON_CPU + 1; pp->state_types && s < STATE_RECORDED; s++) {
		char name[64];

		pprof_state_type_name(s, name, sizeof(name));
		put_value_type(pp, PROFILE_SAMPLE_TYPE, name, "nanoseconds");
	}
	put_value_type(pp, PROFILE_PERIOD_TYPE, "cpu", "nanoseconds");
	pb_uint(&pp->out, PROFILE_PERIOD, p->rate_hz ? 1000000000ull / p->rate_hz : 0);
	pb_uint(&pp->out, PROFILE_TIME_NANOS, start_time_ns(p));
	pb_uint(&pp->out, PROFILE_DURATION_NANOS, p->duration_ns);
	comment = strtab_id(&pp->st, "ebpfprof " EP_VERSION);
	pb_packed(&pp->out, PROFILE_COMMENT, &comment, 1, &pp->scratch);
	if (p->command) {
		comment = strtab_id(&pp->st, p->command);
		pb_packed(&pp->out, PROFILE_COMMENT, &comment, 1, &pp->scratch);
	}
}

static int encode(struct pprof *pp)
{
	size_t i;

	put_header(pp);
	if (put_functions(pp))
		return -1;
	put_locations(pp);
	for (i = 0; i < pp->p->nthreads; i++)
		if ((!pp->pid || pp->p->threads[i].pid == pp->pid) &&
		    put_thread_samples(pp, &pp->p->threads[i]))
			return -1;
	if (pp->task_type && task_spans_each_pid(&pp->p->tasks, put_task_samples, pp))
		return -1;
	/* Last: the samples' labels intern strings too. */
	for (i = 0; i < pp->st.n; i++)
		pb_bytes(&pp->out, PROFILE_STRING_TABLE, pp->st.strs[i],
			 strlen(pp->st.strs[i]));
	if (pp->out.failed || pp->msg.failed || pp->sub.failed ||
	    pp->scratch.failed || pp->st.failed)
		return -1;
	return 0;
}

/* gzip (not zlib) framing: windowBits + 16 asks zlib for the gzip wrapper. */
static int gzip_to(FILE *f, const uint8_t *data, size_t len)
{
	uint8_t chunk[65536];
	z_stream zs;
	size_t have;
	int ret;

	memset(&zs, 0, sizeof(zs));
	if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK) {
		errno = ENOMEM;
		return -1;
	}
	zs.next_in = (uint8_t *)data;
	zs.avail_in = len;	/* the caller checked that it fits */
	do {
		zs.next_out = chunk;
		zs.avail_out = sizeof(chunk);
		ret = deflate(&zs, Z_FINISH);
		have = sizeof(chunk) - zs.avail_out;
		if (ret == Z_STREAM_ERROR ||
		    (have && fwrite(chunk, 1, have, f) != have)) {
			deflateEnd(&zs);
			if (!errno)
				errno = EIO;
			return -1;
		}
	} while (ret != Z_STREAM_END);
	deflateEnd(&zs);
	return 0;
}

static int pprof_write(const struct profile *p, const struct writer_options *o,
		       FILE *f)
{
	struct pprof pp = { .p = p, .labels = o && o->analysis ? &o->analysis->labels : NULL,
			    .pid = o ? o->pid : 0, .state_types = o && o->state_types };
	int err;

	/* --push's types are Pyroscope's: no task-seconds among them */
	pp.task_type = !pp.state_types && p->tasks.n;

	err = encode(&pp);
	if (err) {
		errno = ENOMEM;
	} else if (pp.out.len > UINT32_MAX) {
		/* zlib takes at most 4 GiB of input in one go. */
		errno = EFBIG;
		err = -1;
	} else {
		err = gzip_to(f, pp.out.data, pp.out.len);
	}
	free(pp.out.data);
	free(pp.msg.data);
	free(pp.sub.data);
	free(pp.scratch.data);
	free(pp.frame_func);
	strtab_free(&pp.st);
	return err;
}

const struct output_writer pprof_writer = {
	.name = "pprof",
	.suffix = ".pb.gz",
	.binary = 1,
	.write = pprof_write,
};
