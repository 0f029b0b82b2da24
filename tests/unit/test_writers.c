// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The profile store and the four output writers: each format is written
 * from a small profile and read back with a parser of its own here.
 *
 * gcc -Wall -Wextra -g -Iinclude -Iuser/{base,cpython,model,output,diff,record,live,cli} tests/unit/test_writers.c user/base/json.c \
 *     user/model/profile.c user/writer*.c -lz -lcmocka -o build/test_writers
 *
 * With EP_TEST_KEEP=DIR the written files are also copied to DIR, for
 * checking them with speedscope, pprof and other readers.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <zlib.h>
#include <jansson.h>
#include <cmocka.h>
#include "cannot_run.h"
#include "analysis.h"
#include "profile.h"
#include "writer.h"

#ifndef EP_VERSION
#define EP_VERSION "0.1.0"
#endif

#define MS 1000000ull
#define FFFD "\xef\xbf\xbd"

/* ---------------------------------------------------------------- JSON */

enum jtype { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

struct jval {
	enum jtype type;
	double num;
	char *str;		/* J_STR, decoded UTF-8 */
	struct jval **items;	/* J_ARR values, J_OBJ values */
	char **keys;		/* J_OBJ */
	size_t n;
};

struct jparser {
	const char *p;
	int depth;
};

static struct jval *jparse_value(struct jparser *jp);

static void jskip(struct jparser *jp)
{
	while (*jp->p == ' ' || *jp->p == '\n' || *jp->p == '\r' || *jp->p == '\t')
		jp->p++;
}

static void jfree(struct jval *v)
{
	size_t i;

	if (!v)
		return;
	for (i = 0; i < v->n; i++) {
		jfree(v->items[i]);
		if (v->keys)
			free(v->keys[i]);
	}
	free(v->items);
	free(v->keys);
	free(v->str);
	free(v);
}

static void put_utf8(char **out, size_t *len, unsigned cp)
{
	char *o = *out + *len;

	if (cp < 0x80) {
		o[0] = (char)cp;
		*len += 1;
	} else if (cp < 0x800) {
		o[0] = (char)(0xc0 | cp >> 6);
		o[1] = (char)(0x80 | (cp & 0x3f));
		*len += 2;
	} else if (cp < 0x10000) {
		o[0] = (char)(0xe0 | cp >> 12);
		o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		*len += 3;
	} else {
		o[0] = (char)(0xf0 | cp >> 18);
		o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
		o[3] = (char)(0x80 | (cp & 0x3f));
		*len += 4;
	}
}

static int hex4(const char *s, unsigned *v)
{
	char buf[5];
	char *end;

	memcpy(buf, s, 4);
	buf[4] = '\0';
	*v = (unsigned)strtoul(buf, &end, 16);
	return end == buf + 4 ? 0 : -1;
}

/* Strict: raw control characters and invalid UTF-8 are errors. */
static char *jparse_string(struct jparser *jp)
{
	size_t cap = strlen(jp->p) + 1, len = 0, n;
	char *out = malloc(cap);
	const unsigned char *u;
	unsigned cp, lo;

	if (!out || *jp->p != '"')
		goto bad;
	jp->p++;
	while (*jp->p != '"') {
		u = (const unsigned char *)jp->p;
		if (*u < 0x20)
			goto bad;
		if (*u == '\\') {
			jp->p++;
			switch (*jp->p) {
			case '"': out[len++] = '"'; break;
			case '\\': out[len++] = '\\'; break;
			case '/': out[len++] = '/'; break;
			case 'b': out[len++] = '\b'; break;
			case 'f': out[len++] = '\f'; break;
			case 'n': out[len++] = '\n'; break;
			case 'r': out[len++] = '\r'; break;
			case 't': out[len++] = '\t'; break;
			case 'u':
				if (hex4(jp->p + 1, &cp))
					goto bad;
				jp->p += 4;
				if (cp >= 0xd800 && cp < 0xdc00) {
					if (jp->p[1] != '\\' || jp->p[2] != 'u' ||
					    hex4(jp->p + 3, &lo) || lo < 0xdc00 || lo > 0xdfff)
						goto bad;
					cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
					jp->p += 6;
				} else if (cp >= 0xdc00 && cp < 0xe000) {
					goto bad;
				}
				put_utf8(&out, &len, cp);
				break;
			default:
				goto bad;
			}
			jp->p++;
			continue;
		}
		n = *u < 0x80 ? 1 : *u >= 0xf0 ? 4 : *u >= 0xe0 ? 3 : *u >= 0xc2 ? 2 : 0;
		if (!n || *u > 0xf4)
			goto bad;
		memcpy(out + len, jp->p, 1);
		len++;
		jp->p++;
		while (--n) {
			if ((*jp->p & 0xc0) != 0x80)
				goto bad;
			out[len++] = *jp->p++;
		}
	}
	jp->p++;
	out[len] = '\0';
	return out;
bad:
	free(out);
	return NULL;
}

static struct jval *jnew(enum jtype t)
{
	struct jval *v = calloc(1, sizeof(*v));

	assert_non_null(v);
	v->type = t;
	return v;
}

static int jadd(struct jval *v, char *key, struct jval *item)
{
	v->items = realloc(v->items, (v->n + 1) * sizeof(*v->items));
	assert_non_null(v->items);
	if (v->type == J_OBJ) {
		v->keys = realloc(v->keys, (v->n + 1) * sizeof(*v->keys));
		assert_non_null(v->keys);
		v->keys[v->n] = key;
	}
	v->items[v->n++] = item;
	return 0;
}

static struct jval *jparse_container(struct jparser *jp, enum jtype t)
{
	char close = t == J_ARR ? ']' : '}';
	struct jval *v = jnew(t), *item;
	char *key = NULL;

	jp->p++;
	jskip(jp);
	if (*jp->p == close) {
		jp->p++;
		return v;
	}
	for (;;) {
		jskip(jp);
		if (t == J_OBJ) {
			key = jparse_string(jp);
			jskip(jp);
			if (!key || *jp->p++ != ':')
				goto bad;
		}
		item = jparse_value(jp);
		if (!item)
			goto bad;
		jadd(v, key, item);
		key = NULL;
		jskip(jp);
		if (*jp->p == ',') {
			jp->p++;
			continue;
		}
		if (*jp->p++ == close)
			return v;
		goto bad;
	}
bad:
	free(key);
	jfree(v);
	return NULL;
}

static struct jval *jparse_value(struct jparser *jp)
{
	struct jval *v;
	char *end;

	jskip(jp);
	switch (*jp->p) {
	case '{':
		return jparse_container(jp, J_OBJ);
	case '[':
		return jparse_container(jp, J_ARR);
	case '"':
		v = jnew(J_STR);
		v->str = jparse_string(jp);
		if (!v->str) {
			jfree(v);
			return NULL;
		}
		return v;
	}
	if (!strncmp(jp->p, "true", 4) || !strncmp(jp->p, "null", 4) ||
	    !strncmp(jp->p, "false", 5)) {
		v = jnew(*jp->p == 'n' ? J_NULL : J_BOOL);
		v->num = *jp->p == 't';
		jp->p += *jp->p == 'f' ? 5 : 4;
		return v;
	}
	if (*jp->p != '-' && (*jp->p < '0' || *jp->p > '9'))
		return NULL;
	v = jnew(J_NUM);
	v->num = strtod(jp->p, &end);
	jp->p = end;
	return v;
}

static struct jval *jparse(const char *text)
{
	struct jparser jp = { .p = text };
	struct jval *v = jparse_value(&jp);

	jskip(&jp);
	if (v && *jp.p) {
		jfree(v);
		return NULL;
	}
	return v;
}

static struct jval *jget(const struct jval *obj, const char *key)
{
	size_t i;

	if (!obj || obj->type != J_OBJ)
		return NULL;
	for (i = 0; i < obj->n; i++)
		if (!strcmp(obj->keys[i], key))
			return obj->items[i];
	return NULL;
}

static struct jval *jget_type(const struct jval *obj, const char *key, enum jtype t)
{
	struct jval *v = jget(obj, key);

	assert_non_null(v);
	assert_int_equal(v->type, t);
	return v;
}

/* ----------------------------------------------------------- fixtures */

struct fixture {
	struct profile p;
	char dir[PATH_MAX];
	uint32_t main_f, work_f, inner_f, io_f;
	uint32_t func_f, calc_f, bad_f, semi_f, gc_f;
};

static void add(struct profile *p, int pid, int tid, uint64_t start, uint64_t w,
		int state, uint32_t n, ...)
{
	struct thread_profile *t = profile_thread(p, pid, tid);
	struct sample s = { .start_ns = start, .weight_ns = w, .state = (uint8_t)state };
	uint32_t frames[16], i;
	va_list ap;

	va_start(ap, n);
	for (i = 0; i < n; i++)
		frames[i] = va_arg(ap, uint32_t);
	va_end(ap);
	s.frames = frames;
	s.nframes = n;
	assert_non_null(t);
	assert_int_equal(profile_add_sample(p, t, &s), 0);
}

/*
 * Two threads of "python3" (pid 100) over 100 ms at 100 Hz:
 *  MainThread (100): [main work] 0-10, [main work inner] 10-20, nothing
 *	20-50, [main] 50-60 overlapped by [main io] 55-70, idle 70-80,
 *	nothing after 80; samples added out of order.
 *  "Wörker-β" (101): non-ASCII, invalid UTF-8 and ';' names, and a
 *	marker frame: 5-15 and 15-30.
 */
static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	struct profile *p;

	assert_non_null(fx);
	p = &fx->p;
	profile_init(p);
	p->duration_ns = 100 * MS;
	p->rate_hz = 100;
	p->command = "python3 app.py";
	fx->main_f = profile_frame(p, "main", "app.py", 1, FRAME_PYTHON);
	fx->work_f = profile_frame(p, "work", "app.py", 5, FRAME_PYTHON);
	fx->inner_f = profile_frame(p, "inner", "lib/util.py", 42, FRAME_PYTHON);
	fx->io_f = profile_frame(p, "read", "io.py", 0, FRAME_PYTHON);
	fx->func_f = profile_frame(p, "funci\xc3\xb3n_\xc3\xb1", "m\xc3\xb3" "dulo.py", 3,
				   FRAME_PYTHON);
	fx->calc_f = profile_frame(p, "\xe8\xae\xa1\xe7\xae\x97", "calc.py", 7, FRAME_PYTHON);
	fx->bad_f = profile_frame(p, "bad\xff\xfe", "b\"q.py", 9, FRAME_PYTHON);
	fx->semi_f = profile_frame(p, "a;b\nc", "x;y.py", 11, FRAME_PYTHON);
	fx->gc_f = profile_frame(p, "[GC gen 2]", NULL, 0, FRAME_MARKER);

	add(p, 100, 100, 10 * MS, 10 * MS, STATE_ON_CPU, 3, fx->main_f, fx->work_f, fx->inner_f);
	add(p, 100, 100, 0, 10 * MS, STATE_ON_CPU, 2, fx->main_f, fx->work_f);
	add(p, 100, 101, 5 * MS, 10 * MS, STATE_ON_CPU, 3, fx->func_f, fx->calc_f, fx->bad_f);
	add(p, 100, 101, 15 * MS, 15 * MS, STATE_GC, 3, fx->func_f, fx->semi_f, fx->gc_f);
	add(p, 100, 100, 50 * MS, 10 * MS, STATE_ON_CPU, 1, fx->main_f);
	add(p, 100, 100, 55 * MS, 15 * MS, STATE_IO, 2, fx->main_f, fx->io_f);
	add(p, 100, 100, 70 * MS, 10 * MS, STATE_IDLE, 0);
	profile_thread(p, 100, 100)->name = strdup("MainThread");
	profile_thread(p, 100, 100)->process = strdup("python3");
	profile_thread(p, 100, 101)->name = strdup("W\xc3\xb6rker-\xce\xb2");
	profile_thread(p, 100, 101)->process = strdup("python3");
	profile_sort(p);

	strcpy(fx->dir, "/tmp/ep-writers-XXXXXX");
	assert_non_null(mkdtemp(fx->dir));
	*state = fx;
	return 0;
}

static void remove_dir(const char *dir)
{
	char path[PATH_MAX * 2];
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d)
		return;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (rmdir(path))
			unlink(path);
	}
	closedir(d);
	rmdir(dir);
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	profile_free(&fx->p);
	remove_dir(fx->dir);
	free(fx);
	return 0;
}

static char *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	rewind(f);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	if (len)
		*len = (size_t)n;
	return buf;
}

/* Copies the file to $EP_TEST_KEEP, when set, for outside readers. */
static void keep(const char *path, const char *name)
{
	const char *dir = getenv("EP_TEST_KEEP");
	char dst[PATH_MAX * 2], *data;
	size_t len;
	FILE *f;

	if (!dir)
		return;
	data = read_all(path, &len);
	snprintf(dst, sizeof(dst), "%s/%s", dir, name);
	f = fopen(dst, "wb");
	if (f) {
		fwrite(data, 1, len, f);
		fclose(f);
	}
	free(data);
}

/* Writes the fixture in the named format as STEM.SUFFIX with options o;
 * returns its path. */
static char *write_stem_opts(struct fixture *fx, const char *format, const char *stem,
			     const struct writer_options *o)
{
	const struct output_writer *w = writer_by_name(format);
	char *path, name[64];
	struct stat st;

	assert_non_null(w);
	snprintf(name, sizeof(name), "%s%s", stem, w->suffix);
	assert_true(asprintf(&path, "%s/%s", fx->dir, name) > 0);
	assert_int_equal(writer_write_file(w, &fx->p, o, path), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0644);
	keep(path, name);
	return path;
}

static char *write_stem(struct fixture *fx, const char *format, const char *stem)
{
	struct writer_options o = { 0 };

	return write_stem_opts(fx, format, stem, &o);
}

static char *write_format(struct fixture *fx, const char *format)
{
	return write_stem(fx, format, "sample");
}

static int count_entries(const char *dir)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

/* -------------------------------------------------------------- profile */

static void test_frame_interning(void **state)
{
	struct fixture *fx = *state;
	struct profile *p = &fx->p;
	size_t n = p->nframes;
	uint32_t id;
	int i;

	assert_int_equal(profile_frame(p, "main", "app.py", 1, FRAME_PYTHON), fx->main_f);
	assert_int_equal(profile_frame(p, "[GC gen 2]", NULL, 0, FRAME_MARKER), fx->gc_f);
	assert_int_equal(p->nframes, n);
	/* Any field that differs makes another frame. */
	assert_int_not_equal(profile_frame(p, "main", "app.py", 2, FRAME_PYTHON), fx->main_f);
	assert_int_not_equal(profile_frame(p, "main", "app2.py", 1, FRAME_PYTHON), fx->main_f);
	assert_int_not_equal(profile_frame(p, "main", "app.py", 1, FRAME_MARKER), fx->main_f);
	assert_int_not_equal(profile_frame(p, "[GC gen 2]", "", 0, FRAME_MARKER), fx->gc_f);
	assert_int_equal(p->nframes, n + 4);
	/* Enough frames to grow the index several times; all found again. */
	for (i = 0; i < 5000; i++) {
		char name[32];

		snprintf(name, sizeof(name), "f%d", i);
		id = profile_frame(p, name, "gen.py", i, FRAME_PYTHON);
		assert_int_equal(id, n + 4 + (size_t)i);
	}
	for (i = 0; i < 5000; i += 7) {
		char name[32];

		snprintf(name, sizeof(name), "f%d", i);
		assert_int_equal(profile_frame(p, name, "gen.py", i, FRAME_PYTHON),
				 n + 4 + (size_t)i);
	}
	assert_string_equal(p->frames[fx->work_f].name, "work");
	assert_null(p->frames[fx->gc_f].file);
	assert_int_equal(p->frames[fx->inner_f].line, 42);
}

static void test_threads_and_sort(void **state)
{
	struct fixture *fx = *state;
	struct profile *p = &fx->p;
	const struct thread_profile *t = profile_thread(p, 100, 100);
	struct profile q;
	struct thread_profile *u;
	struct sample *s;
	size_t i;

	assert_int_equal(p->nthreads, 2);
	assert_ptr_equal(profile_thread(p, 100, 100), t);
	assert_int_equal(t->nsamples, 5);
	s = profile_thread_samples(p, t);
	assert_non_null(s);
	for (i = 1; i < t->nsamples; i++)
		assert_true(s[i - 1].start_ns <= s[i].start_ns);
	assert_int_equal(s[0].nframes, 2);
	assert_int_equal(s[0].frames[1], fx->work_f);
	free(s);

	/* Stable: samples with one start keep the order they were added in. */
	profile_init(&q);
	for (i = 0; i < 40; i++) {
		add(&q, 1, 2, (39 - i) / 4 * MS, MS, STATE_ON_CPU, 1, (uint32_t)i);
	}
	profile_sort(&q);
	u = profile_thread(&q, 1, 2);
	s = profile_thread_samples(&q, u);
	assert_non_null(s);
	for (i = 1; i < u->nsamples; i++) {
		assert_true(s[i - 1].start_ns <= s[i].start_ns);
		if (s[i - 1].start_ns == s[i].start_ns)
			assert_true(s[i - 1].frames[0] < s[i].frames[0]);
	}
	free(s);
	assert_int_not_equal(profile_thread(&q, 1, 3), profile_thread(&q, 1, 2));
	assert_int_not_equal(profile_thread(&q, 2, 2), profile_thread(&q, 1, 2));
	assert_int_equal(q.nthreads, 3);
	profile_free(&q);
}

static void test_state_names(void **state)
{
	(void)state;
	assert_string_equal(sample_state_name(STATE_ON_CPU), "on-cpu");
	assert_string_equal(sample_state_name(STATE_GC), "gc");
	assert_string_equal(sample_state_name(STATE_GIL_WAIT), "gil-wait");
	assert_string_equal(sample_state_name(STATE_GIL_WAIT_GC), "waiting-for-gc");
	assert_string_equal(sample_state_name(STATE_LOCK_WAIT), "lock-wait");
	assert_string_equal(sample_state_name(STATE_IO), "io");
	assert_string_equal(sample_state_name(STATE_SLEEP), "sleep");
	assert_string_equal(sample_state_name(STATE_PREEMPTED), "preempted");
	assert_string_equal(sample_state_name(STATE_OTHER), "other");
	assert_string_equal(sample_state_name(STATE_IDLE), "idle");
	assert_string_equal(sample_state_name(STATE_MAX), "other");
}

static void test_writer_by_name(void **state)
{
	(void)state;
	assert_ptr_equal(writer_by_name("speedscope"), &speedscope_writer);
	assert_ptr_equal(writer_by_name("collapsed"), &collapsed_writer);
	assert_ptr_equal(writer_by_name("chrome"), &chrome_trace_writer);
	assert_ptr_equal(writer_by_name("pprof"), &pprof_writer);
	assert_null(writer_by_name("svg"));
	assert_null(writer_by_name(""));
	assert_null(writer_by_name(NULL));
	assert_string_equal(speedscope_writer.suffix, ".speedscope.json");
	assert_string_equal(collapsed_writer.suffix, ".collapsed.txt");
	assert_string_equal(chrome_trace_writer.suffix, ".trace.json");
	assert_string_equal(pprof_writer.suffix, ".pb.gz");
	assert_int_equal(pprof_writer.binary, 1);
}

/* ----------------------------------------------------------- speedscope */

/* Checks one profile lines up on [0, duration]; returns its weights' sum. */
static double check_sampled(const struct jval *prof, size_t nframes, double end)
{
	struct jval *samples = jget_type(prof, "samples", J_ARR);
	struct jval *weights = jget_type(prof, "weights", J_ARR);
	double sum = 0;
	size_t i, j;

	assert_string_equal(jget_type(prof, "type", J_STR)->str, "sampled");
	assert_string_equal(jget_type(prof, "unit", J_STR)->str, "nanoseconds");
	assert_true(jget_type(prof, "startValue", J_NUM)->num == 0);
	assert_true(jget_type(prof, "endValue", J_NUM)->num == end);
	assert_int_equal(samples->n, weights->n);
	for (i = 0; i < samples->n; i++) {
		assert_int_equal(samples->items[i]->type, J_ARR);
		for (j = 0; j < samples->items[i]->n; j++) {
			double id = samples->items[i]->items[j]->num;

			assert_true(id >= 0 && id < (double)nframes && id == (size_t)id);
		}
		assert_int_equal(weights->items[i]->type, J_NUM);
		assert_true(weights->items[i]->num > 0);
		assert_true(weights->items[i]->num == (uint64_t)weights->items[i]->num);
		sum += weights->items[i]->num;
	}
	assert_true(sum == end);
	return sum;
}

/* The profile's samples as "w:ids" strings, for comparing whole timelines. */
static void timeline_text(const struct jval *prof, char *out, size_t size)
{
	struct jval *samples = jget(prof, "samples"), *weights = jget(prof, "weights");
	size_t i, j, len = 0;

	out[0] = '\0';
	for (i = 0; i < samples->n; i++) {
		len += snprintf(out + len, size - len, "%s%.0f:", i ? " " : "",
				weights->items[i]->num / MS);
		for (j = 0; j < samples->items[i]->n; j++)
			len += snprintf(out + len, size - len, "%s%.0f", j ? "," : "",
					samples->items[i]->items[j]->num);
	}
}

static void test_speedscope(void **state)
{
	struct fixture *fx = *state;
	char *path = write_format(fx, "speedscope"), *text, want[256], got[256];
	struct jval *root, *frames, *profiles, *f;

	text = read_all(path, NULL);
	root = jparse(text);
	assert_non_null(root);
	assert_string_equal(jget_type(root, "$schema", J_STR)->str,
			    "https://www.speedscope.app/file-format-schema.json");
	assert_string_equal(jget_type(root, "name", J_STR)->str, "python3 app.py");
	assert_string_equal(jget_type(root, "exporter", J_STR)->str, "ebpfprof " EP_VERSION);
	assert_true(jget_type(root, "activeProfileIndex", J_NUM)->num == 0);
	frames = jget_type(jget_type(root, "shared", J_OBJ), "frames", J_ARR);
	assert_int_equal(frames->n, fx->p.nframes);

	f = frames->items[fx->inner_f];
	assert_string_equal(jget_type(f, "name", J_STR)->str, "inner");
	assert_string_equal(jget_type(f, "file", J_STR)->str, "lib/util.py");
	assert_true(jget_type(f, "line", J_NUM)->num == 42);
	/* No line when unknown; no file or line for a marker. */
	assert_null(jget(frames->items[fx->io_f], "line"));
	f = frames->items[fx->gc_f];
	assert_string_equal(jget_type(f, "name", J_STR)->str, "[GC gen 2]");
	assert_null(jget(f, "file"));
	assert_null(jget(f, "line"));
	/* Non-ASCII survives; invalid UTF-8 became U+FFFD. */
	assert_string_equal(jget(frames->items[fx->calc_f], "name")->str,
			    "\xe8\xae\xa1\xe7\xae\x97");
	assert_string_equal(jget(frames->items[fx->bad_f], "name")->str, "bad" FFFD FFFD);
	assert_string_equal(jget(frames->items[fx->bad_f], "file")->str, "b\"q.py");
	assert_string_equal(jget(frames->items[fx->semi_f], "name")->str, "a;b\nc");

	profiles = jget_type(root, "profiles", J_ARR);
	assert_int_equal(profiles->n, 2);
	check_sampled(profiles->items[0], frames->n, 100.0 * MS);
	check_sampled(profiles->items[1], frames->n, 100.0 * MS);
	assert_string_equal(jget(profiles->items[0], "name")->str, "Thread 100 \"MainThread\"");
	assert_string_equal(jget(profiles->items[1], "name")->str,
			    "Thread 101 \"W\xc3\xb6rker-\xce\xb2\"");
	/*
	 * Gaps are empty stacks; [main io], which starts before [main] ends, is
	 * laid after it, whole (no sample loses time); the idle sample and the
	 * time after it are one gap.
	 */
	snprintf(want, sizeof(want), "10:%u,%u 10:%u,%u,%u 30: 10:%u 15:%u,%u 25:",
		 fx->main_f, fx->work_f, fx->main_f, fx->work_f, fx->inner_f,
		 fx->main_f, fx->main_f, fx->io_f);
	timeline_text(profiles->items[0], got, sizeof(got));
	assert_string_equal(got, want);
	snprintf(want, sizeof(want), "5: 10:%u,%u,%u 15:%u,%u,%u 70:",
		 fx->func_f, fx->calc_f, fx->bad_f, fx->func_f, fx->semi_f, fx->gc_f);
	timeline_text(profiles->items[1], got, sizeof(got));
	assert_string_equal(got, want);
	jfree(root);
	free(text);
	free(path);
}

/* Another process's thread: names then carry the process. */
static void test_speedscope_processes(void **state)
{
	struct fixture *fx = *state;
	struct jval *root, *profiles;
	char *path, *text;

	add(&fx->p, 200, 201, 90 * MS, 20 * MS, STATE_ON_CPU, 1, fx->main_f);
	path = write_stem(fx, "speedscope", "processes");
	text = read_all(path, NULL);
	root = jparse(text);
	assert_non_null(root);
	profiles = jget_type(root, "profiles", J_ARR);
	assert_int_equal(profiles->n, 3);
	assert_string_equal(jget(profiles->items[0], "name")->str,
			    "python3 (pid 100) Thread 100 \"MainThread\"");
	assert_string_equal(jget(profiles->items[2], "name")->str, "(pid 200) Thread 201");
	/* The sample running past the session's end is cut at it. */
	check_sampled(profiles->items[2], fx->p.nframes, 100.0 * MS);
	jfree(root);
	free(text);
	free(path);
}

/* ------------------------------------------------------------ collapsed */

/* -t: each stack under its thread, as py-spy --threads writes them. */
static void test_collapsed(void **state)
{
	struct fixture *fx = *state;
	struct writer_options o = { .threads = 1 };
	char *path = write_stem_opts(fx, "collapsed", "threads", &o), *text, *line, *save, *sp;
	unsigned long total = 0;
	int lines = 0;

	text = read_all(path, NULL);
	assert_true(strlen(text) > 0 && text[strlen(text) - 1] == '\n');
	assert_non_null(strstr(text,
		"Thread 100 \"MainThread\";main (app.py:1);work (app.py:5) 1\n"));
	assert_non_null(strstr(text,
		"Thread 100 \"MainThread\";main (app.py:1);read (io.py) 2\n"));
	assert_null(strstr(text, "(pid 100)"));	/* one process: no process root */
	assert_non_null(strstr(text,
		";funci\xc3\xb3n_\xc3\xb1 (m\xc3\xb3" "dulo.py:3);"
		"a,b c (x,y.py:11);[GC gen 2] 2\n"));
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		int semis = 0;
		char *c;

		lines++;
		sp = strrchr(line, ' ');
		assert_non_null(sp);
		for (c = sp + 1; *c; c++)
			assert_true(*c >= '0' && *c <= '9');
		total += strtoul(sp + 1, NULL, 10);
		for (c = line; c < sp; c++)
			semis += *c == ';';
		/* thread;at least one frame */
		assert_true(semis >= 1);
		assert_null(strstr(line, ";;"));
	}
	/* 6 samples with stacks (the idle one is left out): 1+1+1+2+1+2. */
	assert_int_equal(lines, 6);
	assert_int_equal(total, 8);
	free(text);
	free(path);
}

/*
 * Counts by hand: at 100 Hz (10 ms a period) a stack sampled three times at
 * 4 ms each weighs 12 ms, one period; one sampled at 16 and 9 ms, 25 ms:
 * 2.5 periods, rounded up to 3. Rounding each sample (at least 1) read
 * 3 and 3: a thread sharing its CPU counted high.
 */
static void test_collapsed_rounds_per_line(void **state)
{
	static const uint64_t short_ms[] = { 4, 4, 4 }, long_ms[] = { 16, 9 };
	uint32_t ab[2], ac[2];
	struct profile p;
	struct thread_profile *t;
	struct sample s;
	char *buf = NULL;
	size_t len = 0, i;
	uint64_t at = 0;
	FILE *f;

	(void)state;
	profile_init(&p);
	p.rate_hz = 100;
	ab[0] = ac[0] = profile_frame(&p, "a", "m.py", 1, FRAME_PYTHON);
	ab[1] = profile_frame(&p, "b", "m.py", 2, FRAME_PYTHON);
	ac[1] = profile_frame(&p, "c", "m.py", 3, FRAME_PYTHON);
	t = profile_thread(&p, 7, 7);
	assert_non_null(t);
	for (i = 0; i < 5; i++) {
		memset(&s, 0, sizeof(s));
		s.state = STATE_ON_CPU;
		s.weight_ns = (i < 3 ? short_ms[i] : long_ms[i - 3]) * MS;
		s.start_ns = at;
		at += s.weight_ns;
		s.frames = i < 3 ? ab : ac;
		s.nframes = 2;
		assert_int_equal(profile_add_sample(&p, t, &s), 0);
	}
	profile_sort(&p);
	f = open_memstream(&buf, &len);
	assert_non_null(f);
	assert_int_equal(collapsed_writer.write(&p, NULL, f), 0);
	assert_int_equal(fclose(f), 0);
	assert_string_equal(buf, "a (m.py:1);b (m.py:2) 1\na (m.py:1);c (m.py:3) 3\n");
	free(buf);
	profile_free(&p);
}

/* Without -t the threads' equal stacks are merged, as py-spy writes them;
 * several processes each get a root. */
static void test_collapsed_roots(void **state)
{
	struct fixture *fx = *state;
	struct profile *p = &fx->p;
	uint32_t a, b;
	struct writer_options merged = { 0 }, threads = { .threads = 1 };
	char *path, *text;

	profile_free(p);
	profile_init(p);
	p->duration_ns = 100 * MS;
	p->rate_hz = 100;
	a = profile_frame(p, "a", "m.py", 1, FRAME_PYTHON);
	b = profile_frame(p, "b", "m.py", 2, FRAME_PYTHON);
	add(p, 100, 100, 0, 10 * MS, STATE_ON_CPU, 2, a, b);
	add(p, 100, 101, 0, 20 * MS, STATE_ON_CPU, 2, a, b);
	profile_thread(p, 100, 101)->name = strdup("w");
	path = write_stem_opts(fx, "collapsed", "merged", &merged);
	text = read_all(path, NULL);
	assert_string_equal(text, "a (m.py:1);b (m.py:2) 3\n");
	free(text);
	free(path);
	path = write_stem_opts(fx, "collapsed", "per-thread", &threads);
	text = read_all(path, NULL);
	assert_string_equal(text, "Thread 100;a (m.py:1);b (m.py:2) 1\n"
				  "Thread 101 \"w\";a (m.py:1);b (m.py:2) 2\n");
	free(text);
	free(path);
	add(p, 200, 200, 0, 10 * MS, STATE_ON_CPU, 1, a);
	profile_thread(p, 200, 200)->process = strdup("child");
	path = write_stem_opts(fx, "collapsed", "processes", &merged);
	text = read_all(path, NULL);
	assert_string_equal(text, "(pid 100);a (m.py:1);b (m.py:2) 3\n"
				  "child (pid 200);a (m.py:1) 1\n");
	free(text);
	free(path);
}

/* --------------------------------------------------------------- chrome */

struct xev {
	const char *name;
	double ts, dur;
	int tid;
};

static size_t chrome_events(const struct jval *events, struct xev *out, size_t max)
{
	size_t i, n = 0;
	const struct jval *e;

	for (i = 0; i < events->n; i++) {
		e = events->items[i];
		if (strcmp(jget_type(e, "ph", J_STR)->str, "X"))
			continue;
		assert_true(n < max);
		out[n].name = jget_type(e, "name", J_STR)->str;
		out[n].ts = jget_type(e, "ts", J_NUM)->num;
		out[n].dur = jget_type(e, "dur", J_NUM)->num;
		out[n].tid = (int)jget_type(e, "tid", J_NUM)->num;
		assert_true(jget_type(e, "pid", J_NUM)->num == 100);
		assert_true(out[n].ts >= 0 && out[n].dur > 0);
		n++;
	}
	return n;
}

static int has_event(const struct xev *ev, size_t n, int tid, const char *name,
		     double ts_ms, double dur_ms)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (ev[i].tid == tid && !strcmp(ev[i].name, name) &&
		    ev[i].ts == ts_ms * 1000 && ev[i].dur == dur_ms * 1000)
			return 1;
	return 0;
}

static void test_chrome(void **state)
{
	struct fixture *fx = *state;
	char *path = write_format(fx, "chrome"), *text;
	struct jval *root, *events, *e;
	struct xev ev[64];
	int thread_names = 0, process_names = 0;
	size_t n, i;

	text = read_all(path, NULL);
	root = jparse(text);
	assert_non_null(root);
	assert_string_equal(jget_type(root, "displayTimeUnit", J_STR)->str, "ms");
	events = jget_type(root, "traceEvents", J_ARR);
	for (i = 0; i < events->n; i++) {
		e = events->items[i];
		if (strcmp(jget_type(e, "ph", J_STR)->str, "M"))
			continue;
		if (!strcmp(jget_type(e, "name", J_STR)->str, "thread_name")) {
			thread_names++;
			if (jget_type(e, "tid", J_NUM)->num == 101)
				assert_string_equal(jget(jget(e, "args"), "name")->str,
						    "W\xc3\xb6rker-\xce\xb2");
		} else if (!strcmp(jget(e, "name")->str, "process_name")) {
			process_names++;
			assert_string_equal(jget(jget(e, "args"), "name")->str, "python3");
		}
	}
	assert_int_equal(thread_names, 2);
	assert_int_equal(process_names, 1);
	n = chrome_events(events, ev, 64);
	/* Adjacent samples sharing main and work make one long event each. */
	assert_true(has_event(ev, n, 100, "main", 0, 20));
	assert_true(has_event(ev, n, 100, "work", 0, 20));
	assert_true(has_event(ev, n, 100, "inner", 10, 10));
	/* After the gap: main again, [main io] laid after [main], whole. */
	assert_true(has_event(ev, n, 100, "main", 50, 25));
	assert_true(has_event(ev, n, 100, "read", 60, 15));
	assert_true(has_event(ev, n, 101, "funci\xc3\xb3n_\xc3\xb1", 5, 25));
	assert_true(has_event(ev, n, 101, "bad" FFFD FFFD, 5, 10));
	assert_true(has_event(ev, n, 101, "[GC gen 2]", 15, 15));
	assert_int_equal(n, 10);
	/* Time order within a thread, callers first. */
	for (i = 1; i < n; i++)
		if (ev[i].tid == ev[i - 1].tid)
			assert_true(ev[i - 1].ts <= ev[i].ts);
	jfree(root);
	free(text);
	free(path);
}

/* ---------------------------------------------------------------- pprof */

struct pb {
	const uint8_t *p, *end;
};

static uint64_t pb_varint(struct pb *b)
{
	uint64_t v = 0;
	int shift = 0;

	for (;;) {
		assert_true(b->p < b->end && shift < 64);
		v |= (uint64_t)(*b->p & 0x7f) << shift;
		shift += 7;
		if (!(*b->p++ & 0x80))
			return v;
	}
}

/* Next field: its number, wire type, and varint value or bytes. */
static int pb_next(struct pb *b, unsigned *field, unsigned *wire, uint64_t *v,
		   struct pb *bytes)
{
	uint64_t key;

	if (b->p >= b->end)
		return 0;
	key = pb_varint(b);
	*field = (unsigned)(key >> 3);
	*wire = key & 7;
	if (*wire == 0) {
		*v = pb_varint(b);
	} else if (*wire == 2) {
		*v = pb_varint(b);
		assert_true(*v <= (uint64_t)(b->end - b->p));
		bytes->p = b->p;
		bytes->end = b->p + *v;
		b->p += *v;
	} else {
		fail_msg("unexpected wire type %u", *wire);
	}
	return 1;
}

static uint8_t *gunzip(const uint8_t *in, size_t len, size_t *out_len)
{
	size_t cap = 1 << 20;
	uint8_t *out = malloc(cap);
	z_stream zs;

	assert_non_null(out);
	memset(&zs, 0, sizeof(zs));
	assert_int_equal(inflateInit2(&zs, 15 + 16), Z_OK);
	zs.next_in = (uint8_t *)in;
	zs.avail_in = (uInt)len;
	zs.next_out = out;
	zs.avail_out = (uInt)cap;
	assert_int_equal(inflate(&zs, Z_FINISH), Z_STREAM_END);
	*out_len = zs.total_out;
	inflateEnd(&zs);
	return out;
}

struct pprof_seen {
	char *strings[64];
	size_t nstrings;
	uint64_t sample_type[4], period_type[2];
	size_t nsample_type;
	uint64_t loc_ids[64], func_ids[64];
	size_t nlocs, nfuncs, nsamples;
	uint64_t total_count, total_ns, period, duration;
	uint64_t label_keys[16];	/* string ids, each once */
	size_t nlabel_keys;
};

static void note_label_key(struct pprof_seen *s, uint64_t key)
{
	size_t i;

	for (i = 0; i < s->nlabel_keys; i++)
		if (s->label_keys[i] == key)
			return;
	assert_true(s->nlabel_keys < 16);
	s->label_keys[s->nlabel_keys++] = key;
}

static int has_label_key(const struct pprof_seen *s, const char *name)
{
	size_t i;

	for (i = 0; i < s->nlabel_keys; i++)
		if (s->label_keys[i] < s->nstrings &&
		    !strcmp(s->strings[s->label_keys[i]], name))
			return 1;
	return 0;
}

static void pprof_sample(struct pprof_seen *s, struct pb msg, uint64_t *locs,
			 size_t *nlocs)
{
	struct pb sub, lab, packed;
	unsigned field, wire, lf, lw;
	uint64_t v, key = 0, lv, vals[2];
	size_t nvals = 0;

	*nlocs = 0;
	while (pb_next(&msg, &field, &wire, &v, &sub)) {
		if (field == 1 || field == 2) {
			assert_int_equal(wire, 2);	/* packed */
			packed = sub;
			while (packed.p < packed.end) {
				if (field == 1)
					locs[(*nlocs)++] = pb_varint(&packed);
				else
					vals[nvals++] = pb_varint(&packed);
			}
		} else if (field == 3) {
			lab = sub;
			while (pb_next(&lab, &lf, &lw, &lv, &sub))
				if (lf == 1)
					key = lv;
			/* Keys are names once the string table is read. */
			note_label_key(s, key);
		}
	}
	assert_int_equal(nvals, 2);
	s->total_count += vals[0];
	s->total_ns += vals[1];
	s->nsamples++;
}

static void test_pprof(void **state)
{
	struct fixture *fx = *state;
	char *path = write_format(fx, "pprof");
	struct pprof_seen s = { 0 };
	size_t len, plen, nlocs, i, j;
	uint8_t *gz = (uint8_t *)read_all(path, &len), *raw;
	struct pb b, sub, inner;
	unsigned field, wire, f2, w2, first_field = 0;
	uint64_t v, v2, locs[64];

	/* gzip magic, deflate. */
	assert_true(len > 18);
	assert_int_equal(gz[0], 0x1f);
	assert_int_equal(gz[1], 0x8b);
	assert_int_equal(gz[2], 8);
	raw = gunzip(gz, len, &plen);
	/* The first field is sample_type (1), length-delimited: key 0x0a. */
	assert_int_equal(raw[0], 0x0a);

	b.p = raw;
	b.end = raw + plen;
	while (pb_next(&b, &field, &wire, &v, &sub)) {
		if (!first_field)
			first_field = field;
		switch (field) {
		case 1:		/* sample_type */
			while (pb_next(&sub, &f2, &w2, &v2, &inner))
				s.sample_type[s.nsample_type * 2 + f2 - 1] = v2;
			s.nsample_type++;
			break;
		case 2:		/* sample */
			pprof_sample(&s, sub, locs, &nlocs);
			assert_true(nlocs > 0);
			for (i = 0; i < nlocs; i++)
				assert_true(locs[i] >= 1 && locs[i] <= fx->p.nframes);
			break;
		case 4:		/* location */
			while (pb_next(&sub, &f2, &w2, &v2, &inner))
				if (f2 == 1)
					s.loc_ids[s.nlocs++] = v2;
			break;
		case 5:		/* function */
			while (pb_next(&sub, &f2, &w2, &v2, &inner))
				if (f2 == 1)
					s.func_ids[s.nfuncs++] = v2;
			break;
		case 6:		/* string_table */
			assert_true(s.nstrings < 64);
			s.strings[s.nstrings++] = strndup((const char *)sub.p, v);
			break;
		case 10:
			s.duration = v;
			break;
		case 11:	/* period_type */
			while (pb_next(&sub, &f2, &w2, &v2, &inner))
				s.period_type[f2 - 1] = v2;
			break;
		case 12:
			s.period = v;
			break;
		}
	}
	assert_int_equal(first_field, 1);
	assert_true(s.nstrings > 8);
	assert_string_equal(s.strings[0], "");
	assert_int_equal(s.nsample_type, 2);
	assert_string_equal(s.strings[s.sample_type[0]], "samples");
	assert_string_equal(s.strings[s.sample_type[1]], "count");
	assert_string_equal(s.strings[s.sample_type[2]], "cpu");
	assert_string_equal(s.strings[s.sample_type[3]], "nanoseconds");
	assert_string_equal(s.strings[s.period_type[0]], "cpu");
	assert_string_equal(s.strings[s.period_type[1]], "nanoseconds");
	assert_int_equal(s.period, 10 * MS);
	assert_int_equal(s.duration, 100 * MS);
	/* One location per frame, ids 1..n; functions unique and nonzero. */
	assert_int_equal(s.nlocs, fx->p.nframes);
	for (i = 0; i < s.nlocs; i++)
		assert_int_equal(s.loc_ids[i], i + 1);
	for (i = 0; i < s.nfuncs; i++) {
		assert_true(s.func_ids[i] != 0);
		for (j = 0; j < i; j++)
			assert_true(s.func_ids[i] != s.func_ids[j]);
	}
	/* main, work, inner, read, función_ñ, 计算, bad, a;b, [GC gen 2]. */
	assert_int_equal(s.nfuncs, 9);
	assert_int_equal(s.nsamples, 6);
	assert_int_equal(s.total_count, 8);
	assert_int_equal(s.total_ns, 70 * MS);
	/* proto3 strings must be UTF-8: the invalid name was repaired. */
	for (i = 0; i < s.nstrings && strcmp(s.strings[i], "bad" FFFD FFFD); i++)
		;
	assert_true(i < s.nstrings);
	assert_true(has_label_key(&s, "thread"));
	assert_true(has_label_key(&s, "thread_id"));
	assert_true(has_label_key(&s, "state"));
	for (i = 0; i < s.nstrings; i++)
		free(s.strings[i]);
	free(raw);
	free(gz);
	free(path);
}

/* ------------------------------------------------------- atomic writing */

/* record --tasks' spans: a profile of their own in speedscope, a root of
 * their own in collapsed, a process of tracks in Chrome, pprof written. */
static void test_task_profiles(void **state)
{
	struct fixture *fx = *state;
	struct task_spans *ts = &fx->p.tasks;
	uint32_t a = profile_frame(&fx->p, "<task a>", NULL, 0, FRAME_MARKER);
	uint32_t b = profile_frame(&fx->p, "<task b;x\n>", NULL, 0, FRAME_MARKER);
	uint32_t sleep = profile_frame(&fx->p, "[await sleep]", NULL, 0, FRAME_MARKER);
	uint32_t on_a = profile_frame(&fx->p, "[await Task a]", NULL, 0, FRAME_MARKER);
	uint32_t fa[] = { a, fx->main_f, sleep }, fb[] = { b, on_a };
	struct task_span s = { .pid = 100, .track = 1, .task_frame = a, .start_ns = 0,
			       .end_ns = 80 * MS, .frames = fa, .nframes = 3 };
	char *path, *text;

	assert_int_equal(task_spans_add(ts, &s), 0);
	s = (struct task_span){ .pid = 100, .track = 2, .task_frame = b, .start_ns = 10 * MS,
				.end_ns = 40 * MS, .frames = fb, .nframes = 2 };
	assert_int_equal(task_spans_add(ts, &s), 1);
	s.start_ns = 40 * MS;
	s.end_ns = 90 * MS;
	assert_int_equal(task_spans_add(ts, &s), 2);
	assert_int_equal(task_spans_name_process(ts, 100, "srv"), 0);

	path = write_stem(fx, "speedscope", "tasks");
	text = read_all(path, NULL);
	assert_non_null(strstr(text, "{\"type\":\"sampled\",\"name\":\"[asyncio tasks] srv (pid 100)\","
				     "\"unit\":\"nanoseconds\",\"startValue\":0,\"endValue\":160000000,"));
	free(text);
	free(path);
	path = write_stem(fx, "collapsed", "tasks");
	text = read_all(path, NULL);
	assert_non_null(strstr(text, "\n[asyncio tasks] srv (pid 100);<task a>;main (app.py:1);[await sleep] 8\n"));
	assert_non_null(strstr(text, "\n[asyncio tasks] srv (pid 100);<task b,x >;[await Task a] 8\n"));
	free(text);
	free(path);
	path = write_stem(fx, "chrome", "tasks");
	text = read_all(path, NULL);
	assert_non_null(strstr(text, "\"ph\":\"M\",\"name\":\"process_name\",\"pid\":4194404,"
				     "\"args\":{\"name\":\"[asyncio tasks] srv (pid 100)\"}"));
	assert_non_null(strstr(text, "\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":4194404,\"tid\":2,"
				     "\"args\":{\"name\":\"<task b;x\\n>\"}"));
	assert_non_null(strstr(text, "\"name\":\"[await Task a]\",\"cat\":\"marker\",\"pid\":4194404,"
				     "\"tid\":2,\"ts\":40000.000,\"dur\":50000.000"));
	free(text);
	free(path);
	free(write_stem(fx, "pprof", "tasks"));
}

static int failing_write(const struct profile *p, const struct writer_options *o,
			 FILE *f)
{
	(void)p;
	(void)o;
	fputs("half a profile", f);
	errno = ENOSPC;
	return -1;
}

static const struct output_writer failing_writer = {
	.name = "failing",
	.suffix = ".txt",
	.write = failing_write,
};

static void test_write_file_failures(void **state)
{
	struct fixture *fx = *state;
	char path[PATH_MAX * 2], *text;
	struct writer_options o = { 0 };

	/* A directory that does not exist: nothing can be made. */
	snprintf(path, sizeof(path), "%s/missing/out.json", fx->dir);
	errno = 0;
	assert_int_equal(writer_write_file(&speedscope_writer, &fx->p, &o, path), -1);
	assert_int_equal(errno, ENOENT);
	assert_int_equal(count_entries(fx->dir), 0);

	/* The target is a directory: the rename fails, the temp file goes. */
	snprintf(path, sizeof(path), "%s/adir", fx->dir);
	assert_int_equal(mkdir(path, 0755), 0);
	errno = 0;
	assert_int_equal(writer_write_file(&collapsed_writer, &fx->p, &o, path), -1);
	assert_int_equal(errno, EISDIR);
	assert_int_equal(count_entries(fx->dir), 1);
	assert_int_equal(count_entries(path), 0);
	assert_int_equal(rmdir(path), 0);

	/* The writer fails half way: its errno comes back, and no file. */
	snprintf(path, sizeof(path), "%s/out.txt", fx->dir);
	errno = 0;
	assert_int_equal(writer_write_file(&failing_writer, &fx->p, &o, path), -1);
	assert_int_equal(errno, ENOSPC);
	assert_int_equal(count_entries(fx->dir), 0);

	/* An old file at the target survives a failed write untouched. */
	assert_int_equal(writer_write_file(&collapsed_writer, &fx->p, &o, path), 0);
	assert_int_equal(writer_write_file(&failing_writer, &fx->p, &o, path), -1);
	assert_int_equal(count_entries(fx->dir), 1);
	text = read_all(path, NULL);
	assert_null(strstr(text, "half"));
	assert_non_null(strstr(text, "main (app.py:1)"));
	free(text);
}

/* A relative path writes into the current directory, temp file included. */
static void test_write_file_relative(void **state)
{
	struct fixture *fx = *state;
	char cwd[PATH_MAX];

	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(fx->dir), 0);
	assert_int_equal(writer_write_file(&pprof_writer, &fx->p, NULL, "rel.pb.gz"), 0);
	assert_int_equal(writer_write_file(&speedscope_writer, &fx->p, NULL, "rel.json"), 0);
	assert_int_equal(count_entries("."), 2);
	assert_int_equal(chdir(cwd), 0);
}

/*
 * Under sudo (root, SUDO_UID set) a file created is the sudo user's, and a
 * file replaced keeps its owner and permissions: -o /etc/passwd must not
 * hand root's file to that user (issue 18 item 3). A device is refused.
 */
static void test_write_file_owner_under_sudo(void **state)
{
	struct fixture *fx = *state;
	char made[PATH_MAX * 2], roots[PATH_MAX * 2], theirs[PATH_MAX * 2], dev[PATH_MAX * 2];
	struct stat st;
	int fd;

	if (geteuid() != 0)
		cannot_run("needs root (chown to another user)");
	snprintf(made, sizeof(made), "%s/made.json", fx->dir);
	snprintf(roots, sizeof(roots), "%s/roots.json", fx->dir);
	snprintf(theirs, sizeof(theirs), "%s/theirs.json", fx->dir);
	snprintf(dev, sizeof(dev), "%s/null", fx->dir);
	fd = open(roots, O_CREAT | O_WRONLY, 0640);
	assert_true(fd >= 0 && fchmod(fd, 0640) == 0);
	close(fd);
	fd = open(theirs, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0 && fchown(fd, 65534, 65534) == 0);
	close(fd);
	assert_int_equal(mknod(dev, S_IFCHR | 0666, makedev(1, 3)), 0);
	setenv("SUDO_UID", "65534", 1);
	setenv("SUDO_GID", "65534", 1);
	assert_int_equal(writer_write_file(&collapsed_writer, &fx->p, NULL, made), 0);
	assert_int_equal(writer_write_file(&collapsed_writer, &fx->p, NULL, roots), 0);
	assert_int_equal(writer_write_file(&collapsed_writer, &fx->p, NULL, theirs), 0);
	errno = 0;
	assert_int_equal(writer_write_file(&collapsed_writer, &fx->p, NULL, dev), -1);
	assert_int_equal(errno, EEXIST);
	unsetenv("SUDO_UID");
	unsetenv("SUDO_GID");
	assert_int_equal(stat(made, &st), 0);
	assert_true(st.st_uid == 65534 && st.st_gid == 65534);
	assert_int_equal(st.st_mode & 07777, 0644);
	assert_int_equal(stat(roots, &st), 0);
	assert_true(st.st_uid == 0 && st.st_gid == 0 && st.st_size > 0);
	assert_int_equal(st.st_mode & 07777, 0640);
	assert_int_equal(stat(theirs, &st), 0);
	assert_true(st.st_uid == 65534 && st.st_size > 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(lstat(dev, &st), 0);
	assert_true(S_ISCHR(st.st_mode));
	assert_int_equal(count_entries(fx->dir), 4);
	unlink(made);
	unlink(roots);
	unlink(theirs);
	unlink(dev);
}

/* An empty profile is still a valid file in every format. */
static void test_empty_profile(void **state)
{
	struct fixture *fx = *state;
	char path[PATH_MAX * 2], *text;
	struct profile p;
	struct jval *root;

	profile_init(&p);
	snprintf(path, sizeof(path), "%s/empty.json", fx->dir);
	assert_int_equal(writer_write_file(&speedscope_writer, &p, NULL, path), 0);
	text = read_all(path, NULL);
	root = jparse(text);
	assert_non_null(root);
	/* speedscope refuses a file without profiles: one gap, named for why */
	assert_int_equal(jget_type(root, "profiles", J_ARR)->n, 1);
	assert_non_null(strstr(jget(jget_type(root, "profiles", J_ARR)->items[0], "name")->str,
			       "no samples"));
	jfree(root);
	free(text);
	assert_int_equal(writer_write_file(&chrome_trace_writer, &p, NULL, path), 0);
	text = read_all(path, NULL);
	root = jparse(text);
	assert_non_null(root);
	assert_int_equal(jget_type(root, "traceEvents", J_ARR)->n, 0);
	jfree(root);
	free(text);
	assert_int_equal(writer_write_file(&collapsed_writer, &p, NULL, path), 0);
	assert_int_equal(writer_write_file(&pprof_writer, &p, NULL, path), 0);
	profile_free(&p);
}

/* ------------------------------------------------------ labels: tasks */

/* A thread of [main, handle, work] samples of 10 ms under req=alpha twice,
 * beta once, then [main] alone, a gap, beta again; a collection of 2 ms at
 * 21 ms, under beta. */
static void labelled_profile(struct profile *p, struct analysis *a, uint32_t *alpha,
			     uint32_t *beta)
{
	uint32_t frames[3], ids[5];
	static const uint64_t starts[] = { 0, 10, 20, 30, 50 };
	struct interval gc = { .pid = 100, .tid = 100, .start_ns = 21 * MS, .end_ns = 23 * MS,
			       .state = STATE_GC, .generation = 2 };
	struct thread_profile *t;
	struct sample s = { 0 };
	int key, i;

	profile_init(p);
	analysis_init(a);
	p->rate_hz = 100;
	key = label_table_add_name(&a->labels, "req");
	*alpha = label_intern(&a->labels, key, "alpha", "alpha");
	*beta = label_intern(&a->labels, key, "beta", "beta");
	frames[0] = profile_frame(p, "main", "m.py", 1, FRAME_PYTHON);
	frames[1] = profile_frame(p, "handle", "m.py", 5, FRAME_PYTHON);
	frames[2] = profile_frame(p, "work", "m.py", 9, FRAME_PYTHON);
	ids[0] = ids[1] = *alpha + 1;
	ids[2] = ids[4] = *beta + 1;
	ids[3] = 0;
	t = profile_thread(p, 100, 100);
	for (i = 0; i < 5; i++) {
		s.start_ns = starts[i] * MS;
		s.weight_ns = 10 * MS;
		s.frames = frames;
		s.nframes = ids[i] ? 3 : 1;
		s.state = STATE_ON_CPU;
		s.label = ids[i];
		assert_int_equal(profile_add_sample(p, t, &s), 0);
		if (ids[i])
			label_add_time(&a->labels, ids[i] - 1, STATE_ON_CPU, s.start_ns, s.weight_ns, 1);
	}
	assert_int_equal(analysis_add(&a->gcs, &gc), 0);
	profile_sort(p);
	p->duration_ns = 100 * MS;
}

static json_t *written(const struct output_writer *w, const struct profile *p,
		       const struct writer_options *o)
{
	char *buf = NULL;
	size_t len = 0;
	json_error_t error;
	json_t *doc;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(w->write(p, o, f), 0);
	assert_int_equal(fclose(f), 0);
	doc = json_loads(buf, 0, &error);
	assert_non_null(doc);
	free(buf);
	return doc;
}

/* The "X" event of category cat named name from ts_ms for dur_ms. */
static int has_slice(json_t *events, const char *cat, const char *name, double ts_ms, double dur_ms)
{
	json_t *e;
	size_t i;

	json_array_foreach(events, i, e) {
		const char *c = json_string_value(json_object_get(e, "cat"));

		if (c && !strcmp(c, cat) &&
		    !strcmp(json_string_value(json_object_get(e, "name")), name) &&
		    json_number_value(json_object_get(e, "ts")) == ts_ms * 1000 &&
		    json_number_value(json_object_get(e, "dur")) == dur_ms * 1000)
			return 1;
	}
	return 0;
}

/* Every two slices of the thread nested or apart. */
static void assert_nested(json_t *events)
{
	double ts[64], end[64];
	size_t i, j, n = 0;
	json_t *e;

	json_array_foreach(events, i, e) {
		if (strcmp(json_string_value(json_object_get(e, "ph")), "X"))
			continue;
		assert_true(n < 64);
		ts[n] = json_number_value(json_object_get(e, "ts"));
		end[n] = ts[n] + json_number_value(json_object_get(e, "dur"));
		n++;
	}
	for (i = 0; i < n; i++)
		for (j = 0; j < n; j++)
			assert_false(ts[i] < ts[j] && ts[j] < end[i] && end[i] < end[j]);
}

/*
 * --label in the Chrome trace: a "task" slice per run of samples under one
 * value, named by it, the calls cut where the value changes; the
 * collection's slice inside its task. In the recording: each value's series
 * over 100 ms bins and its top functions by self time.
 */
/* A recording with labels says how the Dask report groups its states: each
 * recorded state in exactly one group, in the one list's groups and order. */
static void check_state_groups(json_t *groups)
{
	int seen[STATE_RECORDED] = { 0 }, g, s;
	size_t i;
	json_t *grp, *name;

	assert_int_equal(json_array_size(groups), STATE_GROUP_MAX);
	json_array_foreach(groups, i, grp) {
		g = (int)i;
		assert_string_equal(json_string_value(json_object_get(grp, "key")), state_groups[g].key);
		assert_string_equal(json_string_value(json_object_get(grp, "title")),
				    state_groups[g].title);
		assert_int_equal(json_is_true(json_object_get(grp, "on_cpu")), state_groups[g].on_cpu);
		json_array_foreach(json_object_get(grp, "states"), s, name) {
			int st = state_by_name(json_string_value(name));

			assert_true(st >= 0);
			assert_int_equal(state_table[st].group, g);
			seen[st]++;
		}
	}
	for (s = 0; s < STATE_RECORDED; s++)
		assert_int_equal(seen[s], 1);
}

static void test_label_tasks_and_series(void **state)
{
	struct writer_options o = { 0 };
	struct profile p;
	struct analysis a;
	uint32_t alpha, beta;
	json_t *doc, *events, *v, *fn;

	(void)state;
	labelled_profile(&p, &a, &alpha, &beta);
	o.analysis = &a;
	doc = written(&chrome_trace_writer, &p, &o);
	events = json_object_get(doc, "traceEvents");
	assert_true(has_slice(events, "task", "alpha", 0, 20));
	assert_true(has_slice(events, "task", "beta", 20, 10));
	assert_true(has_slice(events, "task", "beta", 50, 10));
	assert_true(has_slice(events, "python", "work", 0, 20));
	assert_true(has_slice(events, "python", "work", 20, 1));	/* cut by the collection */
	assert_true(has_slice(events, "python", "work", 23, 7));
	assert_true(has_slice(events, "python", "main", 30, 10));
	assert_true(has_slice(events, "gc", "GC gen 2", 21, 2));
	assert_nested(events);
	json_decref(doc);

	doc = written(&speedscope_writer, &p, &o);
	v = json_object_get(json_object_get(json_object_get(json_object_get(doc, "ebpfprof"),
							      "labels"), "req"), "beta");
	assert_true(json_number_value(json_object_get(json_object_get(doc, "ebpfprof"),
						      "label_bin_s")) == 0.1);
	/* 20 ms of beta in the first bin of 100 ms: one of the 1 bins of 0.1 s */
	assert_int_equal(json_array_size(json_object_get(json_object_get(v, "series"), "on-cpu")), 1);
	assert_true(json_real_value(json_array_get(json_object_get(json_object_get(v, "series"),
								     "on-cpu"), 0)) == 0.02);
	fn = json_array_get(json_object_get(v, "functions"), 0);
	assert_string_equal(json_string_value(json_object_get(fn, "name")), "work");
	assert_true(json_real_value(json_object_get(fn, "self_s")) == 0.02);
	assert_int_equal(json_array_size(json_object_get(v, "functions")), 1);
	check_state_groups(json_object_get(json_object_get(doc, "ebpfprof"), "state_groups"));
	json_decref(doc);
	analysis_free(&a);
	profile_free(&p);
}

/* ------------------------------------------------------------- golden */

static uint64_t lcg_state;

static uint32_t lcg(uint32_t below)
{
	lcg_state = lcg_state * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(lcg_state >> 33) % below;
}

/* The states the golden profile draws from, by name: a state added to the
 * table later changes no draw (the hashes were taken with these ten). */
static const uint8_t golden_states[] = {
	STATE_ON_CPU, STATE_GC, STATE_GIL_WAIT, STATE_GIL_WAIT_GC, STATE_LOCK_WAIT, STATE_IO,
	STATE_SLEEP, STATE_PREEMPTED, STATE_OTHER, STATE_IDLE,
};
#define GOLDEN_NSTATES	(sizeof(golden_states) / sizeof(golden_states[0]))

/* One thread's samples: mostly one period apart, some long exact intervals
 * (over 4 s), huge jumps, zero and odd weights, stacks from a small pool
 * so that they repeat and share prefixes; added in runs out of order. */
static void golden_thread(struct profile *p, int pid, int tid, uint32_t nframes)
{
	struct thread_profile *t = profile_thread(p, pid, tid);
	uint32_t frames[12], i, j, n = 300 + lcg(200);
	uint64_t at = lcg(20) * MS;
	struct sample s;

	assert_non_null(t);
	for (i = 0; i < n; i++) {
		memset(&s, 0, sizeof(s));
		s.start_ns = at + lcg(7) * 1000;
		s.weight_ns = 10 * MS;
		switch (lcg(16)) {
		case 0: s.weight_ns = 4 * 1000 * MS + lcg(1000) * MS; s.exact = 1; break;
		case 1: s.weight_ns = 0; break;
		case 2: s.weight_ns = lcg(30000) * 1000 + 1; s.exact = lcg(2); break;
		case 3: at += (uint64_t)lcg(100) * 1000 * MS; break;
		default: break;
		}
		s.state = lcg(5) ? STATE_ON_CPU : golden_states[lcg(GOLDEN_NSTATES)];
		s.holds_gil = (uint8_t)lcg(2);
		s.nframes = lcg(9);
		for (j = 0; j < s.nframes; j++)
			frames[j] = j < 2 ? j : lcg(4) ? j + lcg(3) : lcg(nframes + 2);
		s.frames = frames;
		assert_int_equal(profile_add_sample(p, t, &s), 0);
		at += lcg(4) ? 10 * MS : lcg(20) * MS;
		if (lcg(40) == 0 && at > 500 * MS)
			at -= 500 * MS;	/* a run that starts in the past */
	}
}

static void golden_profile(struct profile *p, struct analysis *a)
{
	static const char *const names[] = { "MainThread", "worker-1", "pool \"b\"", NULL };
	char name[32], file[32];
	int pid, tid, i;
	uint32_t nframes = 30;

	lcg_state = 42;
	profile_init(p);
	analysis_init(a);
	p->rate_hz = 100;
	p->command = "python3 golden.py";
	for (i = 0; i < (int)nframes; i++) {
		snprintf(name, sizeof(name), i % 7 == 6 ? "[marker %d]" : "f%d", i);
		snprintf(file, sizeof(file), "mod%d.py", i % 5);
		profile_frame(p, name, i % 7 == 6 ? NULL : file, i % 11,
			      i % 7 == 6 ? FRAME_MARKER : FRAME_PYTHON);
	}
	for (pid = 300; pid > 100; pid -= 100) {
		if (pid == 200)
			analysis_set_exact_gc(a, pid);
		for (tid = pid + 4; tid >= pid; tid--) {
			golden_thread(p, pid, tid, nframes);
			profile_thread(p, pid, tid)->process = strdup(pid == 200 ? "python3" : "worker");
			if (names[tid % 4])
				profile_thread(p, pid, tid)->name = strdup(names[tid % 4]);
		}
		for (i = 0; i < 20; i++) {
			uint64_t start = lcg(5000) * MS;
			uint32_t gc_frames[2] = { 0, lcg(nframes) };
			struct interval iv = { .pid = pid, .tid = pid + (int)lcg(5),
					       .start_ns = start, .end_ns = start + lcg(300) * MS,
					       .state = STATE_GC, .generation = (int)lcg(3),
					       .collected = lcg(1000), .frames = gc_frames, .nframes = 2 };
			struct interval w = iv;

			assert_int_equal(analysis_add(&a->gcs, &iv), 0);
			w.state = golden_states[4 + lcg(3)];	/* lock wait, I/O, sleep */
			w.start_ns = lcg(9000) * MS;
			w.end_ns = w.start_ns + lcg(5000) * MS;
			w.generation = lcg(3) ? -1 : 2;
			assert_int_equal(analysis_add(&a->waits, &w), 0);
			assert_int_equal(analysis_add_totals(a, pid, w.tid, w.state, 0, 1,
							     w.end_ns - w.start_ns), 0);
		}
	}
	profile_sort(p);
	p->duration_ns = 30000 * MS;
}

/* The recording as format 1 wrote it: the version and the state names are
 * the only difference format 2 made (the outputs are otherwise byte-identical
 * to those the hashes were taken of). */
static void as_format_1(char *buf, size_t *len)
{
	static const char v2[] = "\"version\":2,\"states\":[";
	char *at = memmem(buf, *len, v2, sizeof(v2) - 1), *end;

	if (!at)
		return;
	end = memchr(at, ']', *len - (size_t)(at - buf));
	assert_non_null(end);
	at[strlen("\"version\":")] = '1';
	at += strlen("\"version\":1");
	end++;
	memmove(at, end, *len - (size_t)(end - buf));
	*len -= (size_t)(end - at);
}

/* FNV-1a of the output; pprof's is of the gunzipped message. */
static uint64_t golden_hash(const struct profile *p, const struct writer_options *o,
			    const struct output_writer *w)
{
	uint64_t h = 0xcbf29ce484222325ull;
	uint8_t *raw = NULL;
	size_t len = 0, i;
	char *buf = NULL;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(w->write(p, o, f), 0);
	assert_int_equal(fclose(f), 0);
	if (w->binary) {
		raw = gunzip((uint8_t *)buf, len, &len);
		free(buf);
		buf = (char *)raw;
	}
	if (w == &speedscope_writer)
		as_format_1(buf, &len);
	for (i = 0; i < len; i++)
		h = (h ^ (uint8_t)buf[i]) * 0x100000001b3ull;
	free(buf);
	return h;
}

/*
 * The golden speedscope file read by another JSON reader (jansson), not only
 * hashed: every thread of the profile has exactly one profile there, a
 * timeline whose weights add up to its end, with a stack in some samples.
 * (Its samples past the 30 s axis are cut, so their weights are not the
 * model's: the hash below holds those.)
 */
static void check_speedscope_against_model(const struct profile *p, const struct writer_options *o)
{
	char *buf = NULL, name[64];
	size_t len = 0, i, j, k;
	json_error_t error;
	json_t *doc, *prof, *w;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(speedscope_writer.write(p, o, f), 0);
	assert_int_equal(fclose(f), 0);
	doc = json_loads(buf, 0, &error);
	assert_non_null(doc);
	for (k = 0; k < p->nthreads; k++) {
		const struct thread_profile *t = &p->threads[k];
		double timeline = 0, stacked = 0;
		int hits = 0;

		snprintf(name, sizeof(name), "(pid %d) Thread %d", t->pid, t->tid);
		json_array_foreach(json_object_get(doc, "profiles"), i, prof) {
			const char *pn = json_string_value(json_object_get(prof, "name"));

			if (!pn || !strstr(pn, name))
				continue;
			hits++;
			json_array_foreach(json_object_get(prof, "weights"), j, w) {
				timeline += json_number_value(w);
				if (json_array_size(json_array_get(json_object_get(prof, "samples"), j)))
					stacked += json_number_value(w);
			}
			assert_true(timeline == json_number_value(json_object_get(prof, "endValue")) -
					       json_number_value(json_object_get(prof, "startValue")));
		}
		assert_int_equal(hits, 1);
		assert_true(stacked > 0);
	}
	json_decref(doc);
	free(buf);
}

/*
 * Every format's bytes from a large made-up profile, against what the writers
 * wrote before the profile's storage changed: a change of the storage or of
 * a writer's structure must not change the output. (Format 4 changed the
 * speedscope file's version field alone: with 3 the old hashes come back.)
 */
static void test_golden_outputs(void **state)
{
	static const uint64_t want[2][5] = {
		{ 0x2b4a34df3b9feb5full, 0x8f40426652d0af85ull, 0x996b3e6aba3b4d58ull,
		  0xd2da6165aaa7eb12ull, 0x0d38966d47382969ull },
		{ 0xc1a0adf81c03ad33ull, 0xf965fe1ea82f46dbull, 0xfd36c20f8b16f9ddull,
		  0xd3629228f766540bull, 0xd826006f20b8ec80ull },
	};
	struct profile p;
	struct analysis a;
	struct writer_options o = { .gc_min_ns = MS };
	uint64_t got[5];
	int round;

	(void)state;
	golden_profile(&p, &a);
	o.analysis = &a;
	check_speedscope_against_model(&p, &o);
	for (round = 0; round < 2; round++) {
		if (round) {	/* --idle's way: waits as samples, fitted */
			assert_int_equal(analysis_add_idle_samples(&a, &p), 0);
			assert_int_equal(analysis_fit_timeline(&p), 0);
		}
		got[0] = golden_hash(&p, &o, &speedscope_writer);
		got[1] = golden_hash(&p, &o, &chrome_trace_writer);
		got[2] = golden_hash(&p, &o, &collapsed_writer);
		o.threads = 1;
		got[3] = golden_hash(&p, &o, &collapsed_writer);
		o.threads = 0;
		p.duration_ns = UINT64_MAX;	/* pprof's start time: 0, not now */
		got[4] = golden_hash(&p, &o, &pprof_writer);
		p.duration_ns = 30000 * MS;
		if (memcmp(got, want[round], sizeof(got)))
			print_message("round %d: 0x%016llxull, 0x%016llxull, 0x%016llxull, "
				      "0x%016llxull, 0x%016llxull\n", round,
				      (unsigned long long)got[0], (unsigned long long)got[1],
				      (unsigned long long)got[2], (unsigned long long)got[3],
				      (unsigned long long)got[4]);
		assert_memory_equal(got, want[round], sizeof(got));
	}
	analysis_free(&a);
	profile_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_frame_interning, setup, teardown),
		cmocka_unit_test_setup_teardown(test_threads_and_sort, setup, teardown),
		cmocka_unit_test(test_state_names),
		cmocka_unit_test(test_writer_by_name),
		cmocka_unit_test_setup_teardown(test_speedscope, setup, teardown),
		cmocka_unit_test_setup_teardown(test_speedscope_processes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_collapsed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_collapsed_roots, setup, teardown),
		cmocka_unit_test(test_collapsed_rounds_per_line),
		cmocka_unit_test_setup_teardown(test_chrome, setup, teardown),
		cmocka_unit_test(test_label_tasks_and_series),
		cmocka_unit_test_setup_teardown(test_pprof, setup, teardown),
		cmocka_unit_test_setup_teardown(test_task_profiles, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_file_failures, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_file_relative, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_file_owner_under_sudo, setup, teardown),
		cmocka_unit_test_setup_teardown(test_empty_profile, setup, teardown),
		cmocka_unit_test(test_golden_outputs),
	};

	return cmocka_run_group_tests_name("writers", tests, NULL, NULL);
}
