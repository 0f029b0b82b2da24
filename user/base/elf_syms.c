// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* libelf access to the interpreter's binary: symbols, rodata, load layout. */
#include <fcntl.h>
#include <sys/stat.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "elf_syms.h"

/* More sections than any real binary has: a bigger count is a forgery
 * that would make every section lookup slow. */
#define ELF_SECTIONS_MAX	65536
/* Sections read whole per file (symbols, strings, .rodata: a few). */
#define ELF_LOADED_MAX		16

struct elf_file {
	int fd;
	int owns_fd;
	uint64_t size;		/* of the file when opened */
	Elf *elf;
	GElf_Ehdr ehdr;
	char *soname;
	/* the sections libelf was let read whole (it keeps them until
	 * elf_end), each counted once against ELF_LOAD_MAX */
	size_t loaded_scn[ELF_LOADED_MAX];
	unsigned nloaded;
	uint64_t loaded;
};

/* The counts and tables an ELF header claims, in either class. */
struct elf_claims {
	uint64_t shoff, shnum, shentsize, phoff, phnum, phentsize;
};

/* A table of n entries of entsize (the class's own) at off, within size. */
static int table_fits(uint64_t off, uint64_t n, uint64_t entsize, uint64_t want, uint64_t size)
{
	if (!n)
		return 1;
	return n <= ELF_SECTIONS_MAX && entsize == want && off <= size &&
	       n * entsize <= size - off;
}

/* Reads the header's claims; with extended numbering (e_shnum 0, e_phnum
 * PN_XNUM) the real counts from section header 0. 0 or -1. */
static int read_claims(int fd, struct elf_claims *c, uint64_t *shsize, uint64_t *phsize)
{
	unsigned char ident[EI_NIDENT];
	union { Elf64_Ehdr e64; Elf32_Ehdr e32; } eh;
	union { Elf64_Shdr s64; Elf32_Shdr s32; } sh0;
	int is64;

	if (pread(fd, ident, sizeof(ident), 0) != sizeof(ident) || memcmp(ident, ELFMAG, SELFMAG))
		return -1;
	is64 = ident[EI_CLASS] == ELFCLASS64;
	if ((!is64 && ident[EI_CLASS] != ELFCLASS32) ||
	    ident[EI_DATA] != (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB))
		return -1;	/* not a file this machine runs */
	if (pread(fd, &eh, is64 ? sizeof(eh.e64) : sizeof(eh.e32), 0) !=
	    (ssize_t)(is64 ? sizeof(eh.e64) : sizeof(eh.e32)))
		return -1;
	*c = is64 ? (struct elf_claims){ eh.e64.e_shoff, eh.e64.e_shnum, eh.e64.e_shentsize,
					 eh.e64.e_phoff, eh.e64.e_phnum, eh.e64.e_phentsize } :
		    (struct elf_claims){ eh.e32.e_shoff, eh.e32.e_shnum, eh.e32.e_shentsize,
					 eh.e32.e_phoff, eh.e32.e_phnum, eh.e32.e_phentsize };
	*shsize = is64 ? sizeof(Elf64_Shdr) : sizeof(Elf32_Shdr);
	*phsize = is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr);
	if (!c->shoff || (c->shnum && c->phnum != PN_XNUM))
		return 0;
	if (c->shentsize != *shsize || pread(fd, &sh0, *shsize, c->shoff) != (ssize_t)*shsize)
		return -1;
	if (!c->shnum)
		c->shnum = is64 ? sh0.s64.sh_size : sh0.s32.sh_size;
	if (c->phnum == PN_XNUM)
		c->phnum = is64 ? sh0.s64.sh_info : sh0.s32.sh_info;
	return 0;
}

/*
 * Judges a file by its ELF header (and section header 0) read here with
 * pread, before libelf allocates anything: elf_begin() allocates per
 * section the header claims, so a sparse file claiming 2^24 sections cost
 * gigabytes before any count could be checked. 0 when the counts are at
 * most ELF_SECTIONS_MAX and the tables lie within the file's size.
 */
static int elf_header_sane(int fd, uint64_t size)
{
	struct elf_claims c;
	uint64_t shsize, phsize;

	if (read_claims(fd, &c, &shsize, &phsize))
		return -1;
	if (c.shnum && !c.shoff)
		return -1;
	return table_fits(c.shoff, c.shnum, c.shentsize, shsize, size) &&
	       table_fits(c.phoff, c.phnum, c.phentsize, phsize, size) ? 0 : -1;
}

struct elf_file *elf_file_from_fd(int fd)
{
	struct elf_file *ef;
	struct stat st;
	size_t nsec;

	if (elf_version(EV_CURRENT) == EV_NONE || fstat(fd, &st) ||
	    !S_ISREG(st.st_mode) || (uint64_t)st.st_size > ELF_FILE_MAX ||
	    elf_header_sane(fd, st.st_size))
		return NULL;
	ef = calloc(1, sizeof(*ef));
	if (!ef)
		return NULL;
	ef->fd = fd;
	ef->size = st.st_size;
	/* ELF_C_READ reads with pread: a file truncated under us is an error,
	 * where ELF_C_READ_MMAP would be SIGBUS. */
	ef->elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!ef->elf || elf_kind(ef->elf) != ELF_K_ELF || !gelf_getehdr(ef->elf, &ef->ehdr) ||
	    elf_getshdrnum(ef->elf, &nsec) || nsec > ELF_SECTIONS_MAX) {
		elf_file_close(ef);
		return NULL;
	}
	return ef;
}

struct elf_file *elf_file_open(const char *path)
{
	/* O_NONBLOCK: a FIFO or a device must not block the open */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	struct elf_file *ef;

	if (fd < 0)
		return NULL;
	ef = elf_file_from_fd(fd);
	if (!ef) {
		close(fd);
		return NULL;
	}
	ef->owns_fd = 1;
	return ef;
}

void elf_file_close(struct elf_file *ef)
{
	if (!ef)
		return;
	if (ef->elf)
		elf_end(ef->elf);
	if (ef->owns_fd)
		close(ef->fd);
	free(ef->soname);
	free(ef);
}

/* A section that lies within the file and is small enough to read whole. */
static int section_readable(const struct elf_file *ef, const GElf_Shdr *sh)
{
	if (sh->sh_type == SHT_NOBITS)
		return 0;
	return sh->sh_size <= ELF_SECTION_MAX && sh->sh_offset <= ef->size &&
	       sh->sh_size <= ef->size - sh->sh_offset;
}

/* A readable section libelf may read whole: within ELF_LOAD_MAX bytes of
 * sections for this file, so a file of many 64 MiB tables costs no more. */
static int section_loadable(struct elf_file *ef, size_t index, const GElf_Shdr *sh)
{
	unsigned i;

	if (!section_readable(ef, sh))
		return 0;
	for (i = 0; i < ef->nloaded; i++)
		if (ef->loaded_scn[i] == index)
			return 1;
	if (ef->nloaded == ELF_LOADED_MAX || sh->sh_size > ELF_LOAD_MAX - ef->loaded)
		return 0;
	ef->loaded_scn[ef->nloaded++] = index;
	ef->loaded += sh->sh_size;
	return 1;
}

/* The data of a table section whose entries are `type`: sizes must agree,
 * so that sh_entsize == 1 on a sparse file cannot mean 10^12 entries. */
static Elf_Data *table_data(struct elf_file *ef, Elf_Scn *scn, Elf_Type type, size_t *n)
{
	size_t entsize = gelf_fsize(ef->elf, type, 1, EV_CURRENT);
	Elf_Data *data;
	GElf_Shdr sh;

	if (!scn || !entsize || !gelf_getshdr(scn, &sh) || sh.sh_entsize != entsize ||
	    sh.sh_size % entsize || !section_loadable(ef, elf_ndxscn(scn), &sh))
		return NULL;
	data = elf_getdata(scn, NULL);
	if (!data || data->d_size < sh.sh_size)
		return NULL;
	*n = sh.sh_size / entsize;
	return data;
}

/* The string section a table links to must be readable as well: libelf
 * reads it whole on the first elf_strptr(). */
static int strings_readable(struct elf_file *ef, size_t link)
{
	Elf_Scn *scn = elf_getscn(ef->elf, link);
	GElf_Shdr sh;

	return scn && gelf_getshdr(scn, &sh) && sh.sh_type == SHT_STRTAB &&
	       section_loadable(ef, link, &sh);
}

static Elf_Scn *find_section(struct elf_file *ef, Elf64_Word type, const char *name)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t shstrndx;

	if (elf_getshdrstrndx(ef->elf, &shstrndx) || (name && !strings_readable(ef, shstrndx)))
		return NULL;
	while ((scn = elf_nextscn(ef->elf, scn))) {
		const char *sname;

		if (!gelf_getshdr(scn, &sh) || (type && sh.sh_type != type))
			continue;
		sname = elf_strptr(ef->elf, shstrndx, sh.sh_name);
		if (!name || (sname && !strcmp(sname, name)))
			return scn;
	}
	return NULL;
}

static int symbol_in(struct elf_file *ef, Elf64_Word type, const char *name,
		     uint64_t *value, uint64_t *size)
{
	Elf_Scn *scn = find_section(ef, type, NULL);
	Elf_Data *data;
	GElf_Shdr sh;
	size_t i, n = 0;

	data = table_data(ef, scn, ELF_T_SYM, &n);
	if (!data || !gelf_getshdr(scn, &sh) || !strings_readable(ef, sh.sh_link))
		return -1;
	for (i = 0; i < n; i++) {
		GElf_Sym sym;
		const char *sname;

		if (!gelf_getsym(data, i, &sym) || sym.st_shndx == SHN_UNDEF)
			continue;
		sname = elf_strptr(ef->elf, sh.sh_link, sym.st_name);
		if (sname && !strcmp(sname, name)) {
			*value = sym.st_value;
			if (size)
				*size = sym.st_size;
			return 0;
		}
	}
	return -1;
}

int elf_symbol(struct elf_file *ef, const char *name, uint64_t *value, uint64_t *size)
{
	if (!symbol_in(ef, SHT_DYNSYM, name, value, size))
		return 0;
	return symbol_in(ef, SHT_SYMTAB, name, value, size);
}

int elf_has_symtab(struct elf_file *ef)
{
	return find_section(ef, SHT_SYMTAB, NULL) != NULL;
}

int elf_has_usdt(struct elf_file *ef)
{
	return find_section(ef, SHT_NOTE, ".note.stapsdt") != NULL;
}

int elf_read_vaddr(struct elf_file *ef, uint64_t vaddr, void *buf, size_t len)
{
	size_t i, nph;

	if (elf_getphdrnum(ef->elf, &nph) || vaddr + len < vaddr)
		return -1;
	for (i = 0; i < nph && i < ELF_SECTIONS_MAX; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(ef->elf, i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (ph.p_vaddr + ph.p_filesz < ph.p_vaddr || ph.p_offset > ef->size)
			continue;
		if (vaddr < ph.p_vaddr || vaddr + len > ph.p_vaddr + ph.p_filesz)
			continue;
		if (pread(ef->fd, buf, len, ph.p_offset + (vaddr - ph.p_vaddr)) != (ssize_t)len)
			return -1;
		return 0;
	}
	return -1;
}

int elf_is_fixed(struct elf_file *ef)
{
	return ef->ehdr.e_type == ET_EXEC;
}

uint64_t elf_first_load_vaddr(struct elf_file *ef)
{
	size_t i, nph;

	if (elf_getphdrnum(ef->elf, &nph))
		return 0;
	for (i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(ef->elf, i, &ph) && ph.p_type == PT_LOAD)
			return ph.p_vaddr & ~(uint64_t)0xfff;
	}
	return 0;
}

const char *elf_soname(struct elf_file *ef)
{
	Elf_Scn *scn = find_section(ef, SHT_DYNAMIC, NULL);
	Elf_Data *data;
	GElf_Shdr sh;
	size_t i, n = 0;

	if (ef->soname || !scn)
		return ef->soname;
	data = table_data(ef, scn, ELF_T_DYN, &n);
	if (!data || !gelf_getshdr(scn, &sh) || !strings_readable(ef, sh.sh_link))
		return NULL;
	for (i = 0; i < n; i++) {
		GElf_Dyn dyn;
		const char *s;

		if (!gelf_getdyn(data, i, &dyn) || dyn.d_tag != DT_SONAME)
			continue;
		s = elf_strptr(ef->elf, sh.sh_link, dyn.d_un.d_val);
		ef->soname = s ? strdup(s) : NULL;
		break;
	}
	return ef->soname;
}

int elf_section_copy(struct elf_file *ef, const char *name, void *buf, size_t len)
{
	Elf_Scn *scn = find_section(ef, SHT_PROGBITS, name);
	Elf_Data *data = NULL;
	GElf_Shdr sh;
	size_t n;

	if (scn && gelf_getshdr(scn, &sh) && section_loadable(ef, elf_ndxscn(scn), &sh))
		data = elf_rawdata(scn, NULL);
	if (!data || !data->d_buf)
		return -1;
	n = data->d_size < len ? data->d_size : len;
	memcpy(buf, data->d_buf, n);
	return (int)n;
}

int elf_for_each_rodata_string(struct elf_file *ef,
			       int (*fn)(const char *s, size_t len, void *arg), void *arg)
{
	Elf_Scn *scn = find_section(ef, SHT_PROGBITS, ".rodata");
	Elf_Data *data = NULL;
	const char *p, *end;
	GElf_Shdr sh;

	if (scn && gelf_getshdr(scn, &sh) && section_loadable(ef, elf_ndxscn(scn), &sh))
		data = elf_rawdata(scn, NULL);
	if (!data || !data->d_buf)
		return 0;
	p = data->d_buf;
	end = p + data->d_size;
	while (p < end) {
		const char *nul = memchr(p, 0, end - p);
		int rc;

		if (!nul)
			break;
		if (nul > p && (rc = fn(p, nul - p, arg)))
			return rc;
		p = nul + 1;
	}
	return 0;
}
