// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* libelf access to the interpreter's binary: symbols, rodata, load layout. */
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "elf_syms.h"

struct elf_file {
	int fd;
	Elf *elf;
	GElf_Ehdr ehdr;
	char *soname;
};

struct elf_file *elf_file_open(const char *path)
{
	struct elf_file *ef;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return NULL;
	ef = calloc(1, sizeof(*ef));
	if (!ef)
		return NULL;
	ef->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (ef->fd < 0)
		goto fail;
	ef->elf = elf_begin(ef->fd, ELF_C_READ_MMAP, NULL);
	if (!ef->elf || elf_kind(ef->elf) != ELF_K_ELF || !gelf_getehdr(ef->elf, &ef->ehdr))
		goto fail;
	return ef;
fail:
	elf_file_close(ef);
	return NULL;
}

void elf_file_close(struct elf_file *ef)
{
	if (!ef)
		return;
	if (ef->elf)
		elf_end(ef->elf);
	if (ef->fd >= 0)
		close(ef->fd);
	free(ef->soname);
	free(ef);
}

static Elf_Scn *find_section(struct elf_file *ef, Elf64_Word type, const char *name)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t shstrndx;

	if (elf_getshdrstrndx(ef->elf, &shstrndx))
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
	size_t i, n;

	if (!scn || !gelf_getshdr(scn, &sh) || !sh.sh_entsize)
		return -1;
	data = elf_getdata(scn, NULL);
	if (!data)
		return -1;
	n = sh.sh_size / sh.sh_entsize;
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

	if (elf_getphdrnum(ef->elf, &nph))
		return -1;
	for (i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(ef->elf, i, &ph) || ph.p_type != PT_LOAD)
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
	size_t i;

	if (ef->soname || !scn || !gelf_getshdr(scn, &sh) || !sh.sh_entsize)
		return ef->soname;
	data = elf_getdata(scn, NULL);
	for (i = 0; data && i < sh.sh_size / sh.sh_entsize; i++) {
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

int elf_for_each_rodata_string(struct elf_file *ef,
			       int (*fn)(const char *s, size_t len, void *arg), void *arg)
{
	Elf_Scn *scn = find_section(ef, SHT_PROGBITS, ".rodata");
	Elf_Data *data = scn ? elf_rawdata(scn, NULL) : NULL;
	const char *p, *end;

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
