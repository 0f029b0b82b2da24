// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The version and build of an interpreter, read from its ELF file (see
 * py_build.h). The evidence, strongest first:
 *  - 3.13+: the _Py_DebugOffsets at the start of _PyRuntime are static data
 *    of the file: the "xdebugpy" cookie, PY_VERSION_HEX and free_threaded;
 *  - Py_Version (3.11+), then the PY_VERSION string in .rodata;
 *  - for the build, the ABI tag: every build keeps its extension suffix
 *    (".cpython-313t-x86_64-linux-gnu.so") in .rodata, with a "t" after
 *    the version for a free-threaded one;
 *  - the file's or its soname's name, for the version only.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include "py_build.h"

#define DEBUG_COOKIE	"xdebugpy"

/* "3.X" from a name such as libpython3.11.so.1.0, python3.9, python3.13d. */
static int version_from_name(const char *path, int *major, int *minor)
{
	const char *base = path ? strrchr(path, '/') : NULL;
	const char *p;

	base = base ? base + 1 : path;
	p = base ? strstr(base, "python") : NULL;
	if (!p || sscanf(p + 6, "%d.%d", major, minor) != 2)
		return -1;
	return 0;
}

/* 3.13+: cookie, version and free_threaded, words 0 to 2 of _PyRuntime as
 * the file initialises it. 0 when found. */
static int from_debug_offsets(struct elf_file *ef, struct py_build *b)
{
	uint64_t runtime, w[3];

	if (elf_symbol(ef, "_PyRuntime", &runtime, NULL) ||
	    elf_read_vaddr(ef, runtime, w, sizeof(w)) || memcmp(w, DEBUG_COOKIE, 8))
		return -1;
	if (w[1] >> 24 != 3 || w[2] > 1)
		return -1;	/* not a blob we understand: other evidence decides */
	b->major = 3;
	b->minor = (w[1] >> 16) & 0xff;
	b->micro = (w[1] >> 8) & 0xff;
	b->free_threaded = (int)w[2];
	snprintf(b->evidence, sizeof(b->evidence), "its _Py_DebugOffsets say free_threaded = %d",
		 (int)w[2]);
	return 0;
}

/* PY_VERSION ("3.9.2", "3.10.0rc1", "3.8.18+") as a string of its own */
static int match_version_string(const char *s, size_t len, void *arg)
{
	struct py_build *b = arg;
	int major, minor, micro, n = 0;

	if (len < 5 || len > 16 || s[0] != '3' || s[1] != '.')
		return 0;
	if (sscanf(s, "%d.%d.%d%n", &major, &minor, &micro, &n) != 3)
		return 0;
	if (minor < 0 || minor > 40 || micro < 0 || micro > 99)
		return 0;
	for (; (size_t)n < len; n++)
		if (!isalnum((unsigned char)s[n]) && s[n] != '+')
			return 0;
	b->major = major;
	b->minor = minor;
	b->micro = micro;
	return 1;
}

static int from_version_data(struct elf_file *ef, struct py_build *b)
{
	uint64_t addr;
	uint32_t hex;

	if (!elf_symbol(ef, "Py_Version", &addr, NULL) &&
	    !elf_read_vaddr(ef, addr, &hex, sizeof(hex)) && hex >> 24 == 3) {
		b->major = hex >> 24;
		b->minor = (hex >> 16) & 0xff;
		b->micro = (hex >> 8) & 0xff;
		return 0;
	}
	return elf_for_each_rodata_string(ef, match_version_string, b) ? 0 : -1;
}

/* The extension suffix's ABI tag, "cpython-3XY" then "t" or "-", anywhere
 * in a .rodata string: 1 free-threaded, 0 GIL, -1 no tag found. */
static int abi_tag_in(const char *s, size_t len, void *arg)
{
	const char *p = s, *end = s + len;
	int *ft = arg;

	while ((p = memmem(p, end - p, "cpython-3", 9))) {
		p += 9;
		while (p < end && isdigit((unsigned char)*p))
			p++;
		if (p < end && (*p == 't' || *p == '-' || *p == 'd')) {
			*ft = *p == 't';
			return 1;
		}
	}
	return 0;
}

int py_build_detect(struct elf_file *ef, const char *name, struct py_build *b)
{
	int ft = -1;

	memset(b, 0, sizeof(*b));
	b->major = b->minor = b->micro = -1;
	if (!from_debug_offsets(ef, b))
		return 0;
	if (from_version_data(ef, b)) {
		b->micro = -1;
		if (version_from_name(elf_soname(ef), &b->major, &b->minor) &&
		    version_from_name(name, &b->major, &b->minor))
			b->major = b->minor = -1;
	}
	if (elf_for_each_rodata_string(ef, abi_tag_in, &ft) && ft == 1) {
		b->free_threaded = 1;
		snprintf(b->evidence, sizeof(b->evidence),
			 "its ABI tag is cpython-3%dt (Py_GIL_DISABLED)", b->minor);
	}
	return b->major < 0 ? -1 : 0;
}
