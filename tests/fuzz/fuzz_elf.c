// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target of the ELF reader (user/base/elf_syms.c) on a hostile file:
 * the input is the file (in a memfd), read as py_target.c reads a target's
 * interpreter: symbols, SONAME, .rodata strings, a read at a link-time
 * address. Crashes, hangs (-timeout) and huge allocations (-rss_limit_mb)
 * are what libFuzzer reports.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "elf_syms.h"

static int count_strings(const char *s, size_t len, void *arg)
{
	size_t *n = arg;

	if (strlen(s) != len)
		abort();
	return ++*n > 100000;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	struct elf_file *ef;
	uint64_t value, sym_size, first;
	uint8_t buf[64];
	size_t strings = 0;

	if (fd < 0)
		fd = memfd_create("fuzz-elf", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, 0) || pwrite(fd, data, size, 0) != (ssize_t)size)
		return 0;
	ef = elf_file_from_fd(fd);
	if (!ef)
		return 0;
	if (!elf_symbol(ef, "_PyRuntime", &value, &sym_size))
		elf_read_vaddr(ef, value, buf, sizeof(buf));
	elf_symbol(ef, "Py_Version", &value, NULL);
	elf_has_symtab(ef);
	elf_has_usdt(ef);
	elf_is_fixed(ef);
	elf_soname(ef);
	first = elf_first_load_vaddr(ef);
	elf_read_vaddr(ef, first, buf, sizeof(buf));
	elf_read_vaddr(ef, ~0ull - 8, buf, sizeof(buf));
	elf_for_each_rodata_string(ef, count_strings, &strings);
	elf_file_close(ef);
	return 0;
}
