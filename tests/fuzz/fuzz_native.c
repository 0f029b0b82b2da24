// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target of --native's unwinder (user/native/native_dwfl.c, what
 * the cage's helper runs): random stack bytes and registers unwound against
 * real modules (this process's own, from /proc/self/maps, opened the safe
 * way), every pc symbolized; and .eh_frame_hdr's search table parsed from the
 * same bytes. The input: 8 bytes choose the pc (an offset into this very
 * function, so the CFI lookup starts in real code), 8 the frame pointer, the
 * rest is the stack.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "eh_frame_hdr.h"
#include "mapped_file.h"
#include "native_dwfl.h"
#include "native_proto.h"

static struct mapped_file files[NATIVE_MAX_MODULES];
static struct np_module mods[NATIVE_MAX_MODULES];
static uint32_t nmods;
static uint8_t msg[NP_MSG_MAX];

static int file_of(void *arg, uint32_t id)
{
	struct stat st;

	(void)arg;
	return id < nmods ? mapped_file_open(getpid(), &files[id], &st) : -1;
}

/* This process's files, one module each (their mappings are consecutive). */
static void read_modules(void)
{
	char line[PATH_MAX + 128];
	struct mapped_file m;
	FILE *f = fopen("/proc/self/maps", "re");

	while (f && fgets(line, sizeof(line), f)) {
		if (mapped_file_parse(line, &m) || m.offset > m.start)
			continue;
		if (nmods && files[nmods - 1].inode == m.inode && mods[nmods - 1].high == m.start) {
			mods[nmods - 1].high = m.end;
			continue;
		}
		if (nmods == NATIVE_MAX_MODULES)
			break;
		files[nmods] = m;
		mods[nmods] = (struct np_module){ nmods, m.start - m.offset, m.end };
		nmods++;
	}
	if (f)
		fclose(f);
}

static struct native_dwfl *unwinder(void)
{
	static struct native_dwfl *d;
	struct np_request req;

	if (d)
		return d;
	read_modules();
	d = native_dwfl_new(file_of, NULL, NULL);
	if (!d || np_decode_request(msg, np_encode_report(msg, mods, nmods), &req) ||
	    native_dwfl_report(d, &req))
		abort();
	return d;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct native_dwfl *d = unwinder();
	static struct np_reply rep, sym;
	struct np_request req = { .type = NP_UNWIND };
	uint64_t *regs = req.unwind.regs, pick, bp, start;
	uint32_t i;

	if (size < 16)
		return 0;
	eh_frame_hdr_function(data, size, 0x1000, (uint64_t)data[0] << 12 | data[1], &start);
	memcpy(&pick, data, 8);
	memcpy(&bp, data + 8, 8);
	regs[16] = (uint64_t)(uintptr_t)LLVMFuzzerTestOneInput + pick % 512;
	/* rsp: where the stack copy would sit in the target (any address: it
	 * is only compared, never dereferenced) */
	regs[7] = 0x7ffd00000000ull + (pick >> 20 & 0xfff8);
	regs[6] = bp;
	req.unwind.tid = getpid();
	req.unwind.max = NATIVE_MAX_FRAMES;
	req.unwind.stack = data + 16;
	req.unwind.stack_len = size - 16 > NP_STACK_MAX ? NP_STACK_MAX : size - 16;
	native_dwfl_unwind(d, &req, &rep);
	if (rep.unwound.n > NATIVE_MAX_FRAMES || rep.unwound.complete > 1)
		abort();
	for (i = 0; i < rep.unwound.n; i++) {
		native_dwfl_symbolize(d, rep.unwound.pcs[i], &sym);
		if (!memchr(sym.symbol.name, 0, sizeof(sym.symbol.name)) || sym.symbol.kind > NP_SYM_NONE)
			abort();
	}
	return 0;
}
