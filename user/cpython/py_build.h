/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What an interpreter binary is, from the binary alone: its CPython version
 * and whether it is a free-threaded (Py_GIL_DISABLED) build. A file's name
 * says nothing here: a GIL build copied to "python3.13t" is a GIL build, and
 * a free-threaded one named "python3.14" is free-threaded. The name is only
 * the last resort for the version, when the binary holds no version at all.
 */
#ifndef EP_PY_BUILD_H
#define EP_PY_BUILD_H
#include "elf_syms.h"

struct py_build {
	int major, minor, micro;	/* -1 where unknown */
	int free_threaded;		/* 1: the binary says it is free-threaded */
	char evidence[96];		/* what said so, for the refusal message */
};

/*
 * Fills *b from the ELF file holding _PyRuntime; name (the file's name as
 * the target sees it, may be NULL) is used only for a version the binary
 * does not hold. Returns 0, or -1 if the version is unknown (b->major -1).
 */
int py_build_detect(struct elf_file *ef, const char *name, struct py_build *b);

#endif
