// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A process that is not CPython but says it is a CPython 3.13: it exports
 * Py_Version and a _PyRuntime that starts with a _Py_DebugOffsets blob
 * ("xdebugpy", 3.13.0) describing fake interpreter, thread, frame, dict and
 * str objects that it really holds in memory, so that the profiler reads
 * them all. argv[1] picks what is forged:
 *   valid    offsets that agree with the objects (the profiler must work)
 *   frame    frame.previous at 0xfffc: wraps the 16-bit read size
 *   unicode  str.length at 0xff00: past the header buffer of a name lookup
 *   huge     an offset of 2^40
 * Prints pid=N on stderr, then sleeps until killed.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

__attribute__((used)) const uint32_t Py_Version = 0x030d00f0;
uint64_t _PyRuntime[1024];

static uint64_t interp[64], tstate[32], frame[32], dict[8], dict_type[64];
static uint64_t keys[16], str[16], dummy[8];

/* word index of each field in the 3.13 _Py_DebugOffsets */
enum {
	W_VERSION = 1, W_FREE_THREADED = 2, W_INTERP_HEAD = 5,
	W_THREADS_HEAD = 9, W_GC = 10, W_MODULES = 11, W_CEVAL_GIL = 14,
	W_GIL = 15, W_GIL_LOCKED = 17, W_GIL_HOLDER = 18,
	W_TS_NEXT = 21, W_TS_FRAME = 23, W_TS_THREAD_ID = 24, W_TS_NATIVE_ID = 25,
	W_FR_PREVIOUS = 29, W_FR_EXECUTABLE = 30, W_FR_INSTR = 31, W_FR_OWNER = 33,
	W_CO_FILENAME = 35, W_CO_NAME = 36, W_CO_QUALNAME = 37, W_CO_LINETABLE = 38,
	W_CO_FIRSTLINENO = 39, W_CO_ADAPTIVE = 43, W_BYTES_SIZE = 65, W_BYTES_SVAL = 66,
	W_STR_STATE = 68, W_STR_LENGTH = 69, W_STR_ASCII_SIZE = 70, W_GC_COLLECTING = 72,
};

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "valid";
	uint64_t *w = _PyRuntime;
	uint8_t *k = (uint8_t *)keys, *s = (uint8_t *)str;
	int64_t one = 1, nine = 9;

	memcpy(w, "xdebugpy", 8);
	w[W_VERSION] = 0x030d00f0;
	w[W_FREE_THREADED] = 0;
	w[W_INTERP_HEAD] = 0x400;
	w[W_THREADS_HEAD] = 0x10;
	w[W_GC] = 0x20;
	w[W_MODULES] = 0x30;
	w[W_CEVAL_GIL] = 0x40;
	w[W_GIL] = 0x100;
	w[W_GIL_LOCKED] = 0x108;
	w[W_GIL_HOLDER] = 0x110;
	w[W_TS_NEXT] = 0;
	w[W_TS_FRAME] = 0x8;
	w[W_TS_THREAD_ID] = 0x10;
	w[W_TS_NATIVE_ID] = 0x18;
	w[W_FR_PREVIOUS] = 0;
	w[W_FR_EXECUTABLE] = 0x8;
	w[W_FR_INSTR] = 0x38;
	w[W_FR_OWNER] = 0x46;
	w[W_CO_FILENAME] = 0x10;
	w[W_CO_NAME] = 0x18;
	w[W_CO_QUALNAME] = 0x20;
	w[W_CO_LINETABLE] = 0x28;
	w[W_CO_FIRSTLINENO] = 0x30;
	w[W_CO_ADAPTIVE] = 0x40;
	w[W_BYTES_SIZE] = 16;
	w[W_BYTES_SVAL] = 32;
	w[W_STR_STATE] = 32;
	w[W_STR_LENGTH] = 16;
	w[W_STR_ASCII_SIZE] = 40;
	w[W_GC_COLLECTING] = 8;
	if (!strcmp(mode, "frame"))
		w[W_FR_PREVIOUS] = 0xfffc;
	else if (!strcmp(mode, "unicode"))
		w[W_STR_LENGTH] = 0xff00;
	else if (!strcmp(mode, "huge"))
		w[W_TS_FRAME] = 1ull << 40;

	/* runtime -> interpreter -> its one thread -> one frame (no code) */
	w[0x400 / 8] = (uintptr_t)interp;	/* interpreters.head */
	w[0x408 / 8] = (uintptr_t)interp;	/* interpreters.main */
	interp[0x10 / 8] = (uintptr_t)tstate;
	interp[0x30 / 8] = (uintptr_t)dict;
	tstate[0x8 / 8] = (uintptr_t)frame;
	tstate[0x10 / 8] = 1;
	tstate[0x18 / 8] = (uint64_t)gettid();
	frame[0] = 0;
	frame[1] = 0;

	/* sys.modules: a dict of one entry, "threading" -> dummy */
	dict[1] = (uintptr_t)dict_type;
	dict[4] = (uintptr_t)keys;
	dict[5] = 0;
	dict_type[168 / 8] = 1ull << 29;	/* Py_TPFLAGS_DICT_SUBCLASS */
	k[8] = 3;			/* dk_log2_size */
	k[9] = 3;			/* dk_log2_index_bytes */
	k[10] = 0;			/* general keys */
	memcpy(k + 24, &one, 8);	/* dk_nentries */
	keys[48 / 8] = (uintptr_t)str;	/* entry 0: hash, key, value */
	keys[56 / 8] = (uintptr_t)dummy;
	memcpy(s + 16, &nine, 8);	/* length */
	s[32] = 1 << 2 | 1 << 5 | 1 << 6;	/* kind 1, compact, ascii */
	memcpy(s + 40, "threading", 9);

	fprintf(stderr, "pid=%d\n", getpid());
	fflush(stderr);
	for (;;)
		pause();
}
