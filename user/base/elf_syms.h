/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Symbols and read-only data of an ELF file on disk (libelf). The file
 * belongs to the target and is hostile: it is read with pread (ELF_C_READ,
 * never mmap, so a file truncated under us gives an error, not SIGBUS), its
 * size and every section read are capped, and every count is checked
 * against the bytes it claims. Its header is judged first, read here
 * before libelf allocates anything: at most 65536 sections and segments,
 * their tables within the file, this machine's class and byte order.
 */
#ifndef EP_ELF_SYMS_H
#define EP_ELF_SYMS_H
#include <stddef.h>
#include <stdint.h>

struct elf_file;

/* Largest ELF file looked at (a debug libpython is ~100 MiB). */
#define ELF_FILE_MAX		(1ull << 30)
/* Largest section read whole (.symtab, .dynsym, their strings, .rodata). */
#define ELF_SECTION_MAX		(64ull << 20)
/* Most bytes of sections read whole for one file, all held at once. */
#define ELF_LOAD_MAX		(128ull << 20)

/* Opens path read-only, without blocking and only if it is a regular file.
 * NULL if it is not a readable ELF file. */
struct elf_file *elf_file_open(const char *path);
/* Reads the already open regular file fd (which the caller keeps open and
 * closes after elf_file_close). NULL if it is not a usable ELF file. */
struct elf_file *elf_file_from_fd(int fd);
void elf_file_close(struct elf_file *ef);

/* Value (link-time address) and size of a symbol, from .dynsym then .symtab.
 * Returns 0, or -1 if absent. */
int elf_symbol(struct elf_file *ef, const char *name, uint64_t *value, uint64_t *size);
/* 1 if the file has a .symtab (not stripped). */
int elf_has_symtab(struct elf_file *ef);
/* Copies len bytes found at link-time address vaddr in the file. 0 or -1. */
int elf_read_vaddr(struct elf_file *ef, uint64_t vaddr, void *buf, size_t len);
/* 1 for a position-dependent executable (ET_EXEC): its addresses are absolute. */
int elf_is_fixed(struct elf_file *ef);
/* Link-time address of the first loadable segment, rounded down to a page. */
uint64_t elf_first_load_vaddr(struct elf_file *ef);
/* The file's DT_SONAME, or NULL. */
const char *elf_soname(struct elf_file *ef);
/* Calls fn on every NUL-terminated string in .rodata until fn returns nonzero;
 * returns that value, or 0. */
int elf_for_each_rodata_string(struct elf_file *ef,
			       int (*fn)(const char *s, size_t len, void *arg), void *arg);
/* Copies up to len bytes from the start of the PROGBITS section `name`
 * (capped like every section read). The bytes copied, or -1 if absent. */
int elf_section_copy(struct elf_file *ef, const char *name, void *buf, size_t len);
/* 1 if the file has a .note.stapsdt section (USDT probes). */
int elf_has_usdt(struct elf_file *ef);

#endif
