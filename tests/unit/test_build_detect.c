// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * py_build_detect(): the version and the free-threaded flag of an
 * interpreter come from its binary, never from its file name. Each test
 * writes a made-up ELF file with libelf: an x86-64 executable whose one
 * PT_LOAD segment holds .data (where _PyRuntime, and Py_Version, point),
 * a .rodata of strings and a .symtab.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <gelf.h>
#include <cmocka.h>
#include "py_build.h"

#define DATA_VADDR	0x601000ull

struct fake_python {
	int debug_offsets;		/* _PyRuntime starts with "xdebugpy" */
	uint64_t do_version;		/* PY_VERSION_HEX there */
	uint64_t do_free_threaded;
	uint32_t py_version;		/* Py_Version symbol; 0: none */
	const char *abi_suffix;		/* in .rodata; NULL: none */
	const char *version_string;	/* PY_VERSION in .rodata; NULL: none */
};

/* A section of `size` bytes at buf, named by offset name_off in .shstrtab. */
static Elf_Scn *add_section(Elf *e, Elf64_Word type, void *buf, size_t size, uint64_t addr,
			    size_t name_off)
{
	Elf_Scn *scn = elf_newscn(e);
	Elf_Data *d = elf_newdata(scn);
	GElf_Shdr sh;

	d->d_buf = buf;
	d->d_size = size;
	d->d_align = 8;
	d->d_type = ELF_T_BYTE;
	gelf_getshdr(scn, &sh);
	sh.sh_name = name_off;
	sh.sh_type = type;
	sh.sh_flags = addr ? SHF_ALLOC : 0;
	sh.sh_addr = addr;
	sh.sh_addralign = 8;
	gelf_update_shdr(scn, &sh);
	return scn;
}

/* Writes the made-up interpreter to a temporary file; returns its fd. */
static int write_fake(const struct fake_python *fp)
{
	static char shstr[] = "\0.data\0.rodata\0.symtab\0.strtab\0.shstrtab";
	static char strtab[] = "\0_PyRuntime\0Py_Version";
	static uint64_t data[16];
	static char rodata[256];
	static Elf64_Sym syms[3];
	char path[] = "/tmp/ebpfprof-fakepy-XXXXXX";
	int fd = mkstemp(path), nsyms = 2;
	size_t ro = 1;
	Elf_Scn *data_scn, *sym_scn;
	GElf_Ehdr eh;
	GElf_Phdr ph;
	GElf_Shdr sh;
	Elf *e;

	assert_true(fd >= 0);
	unlink(path);
	memset(data, 0, sizeof(data));
	memset(rodata, 0, sizeof(rodata));
	memset(syms, 0, sizeof(syms));
	if (fp->debug_offsets) {
		memcpy(data, "xdebugpy", 8);
		data[1] = fp->do_version;
		data[2] = fp->do_free_threaded;
	}
	data[8] = fp->py_version;
	if (fp->abi_suffix) {
		strcpy(rodata + ro, fp->abi_suffix);
		ro += strlen(fp->abi_suffix) + 1;
	}
	if (fp->version_string) {
		strcpy(rodata + ro, fp->version_string);
		ro += strlen(fp->version_string) + 1;
	}
	syms[1] = (Elf64_Sym){ .st_name = 1, .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT),
			       .st_shndx = 1, .st_value = DATA_VADDR, .st_size = 64 };
	if (fp->py_version)
		syms[nsyms++] = (Elf64_Sym){ .st_name = 12,
			.st_info = ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT), .st_shndx = 1,
			.st_value = DATA_VADDR + 64, .st_size = 4 };

	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_WRITE, NULL);
	assert_non_null(e);
	gelf_newehdr(e, ELFCLASS64);
	gelf_getehdr(e, &eh);
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_type = ET_EXEC;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	gelf_update_ehdr(e, &eh);
	gelf_newphdr(e, 1);

	data_scn = add_section(e, SHT_PROGBITS, data, sizeof(data), DATA_VADDR, 1);
	add_section(e, SHT_PROGBITS, rodata, ro, DATA_VADDR + 0x1000, 7);
	sym_scn = add_section(e, SHT_SYMTAB, syms, nsyms * sizeof(Elf64_Sym), 0, 15);
	add_section(e, SHT_STRTAB, strtab, sizeof(strtab), 0, 23);
	add_section(e, SHT_STRTAB, shstr, sizeof(shstr), 0, 31);
	elf_getdata(sym_scn, NULL)->d_type = ELF_T_SYM;
	gelf_getshdr(sym_scn, &sh);
	sh.sh_entsize = sizeof(Elf64_Sym);
	sh.sh_link = 4;		/* .strtab */
	sh.sh_info = 1;
	gelf_update_shdr(sym_scn, &sh);
	gelf_getehdr(e, &eh);
	eh.e_shstrndx = 5;
	gelf_update_ehdr(e, &eh);

	assert_true(elf_update(e, ELF_C_NULL) >= 0);
	gelf_getshdr(data_scn, &sh);
	memset(&ph, 0, sizeof(ph));
	ph.p_type = PT_LOAD;
	ph.p_flags = PF_R | PF_W;
	ph.p_offset = sh.sh_offset;
	ph.p_vaddr = ph.p_paddr = DATA_VADDR;
	ph.p_filesz = ph.p_memsz = sh.sh_size;
	ph.p_align = 8;
	gelf_update_phdr(e, 0, &ph);
	assert_true(elf_update(e, ELF_C_WRITE) >= 0);
	elf_end(e);
	return fd;
}

/* Detects the build of fp under the file name `name`. */
static struct py_build detect(const struct fake_python *fp, const char *name)
{
	int fd = write_fake(fp);
	struct elf_file *ef = elf_file_from_fd(fd);
	struct py_build b;

	assert_non_null(ef);
	py_build_detect(ef, name, &b);
	elf_file_close(ef);
	close(fd);
	return b;
}

/* A GIL build copied to a free-threaded-looking name is a GIL build. */
static void test_gil_build_under_a_t_name(void **state)
{
	struct fake_python fp = { .debug_offsets = 1, .do_version = 0x030f02f0,
				  .py_version = 0x030f02f0,
				  .abi_suffix = ".cpython-315-x86_64-linux-gnu.so" };
	struct py_build b = detect(&fp, "/usr/bin/python3.13t");

	(void)state;
	assert_int_equal(b.major, 3);
	assert_int_equal(b.minor, 15);
	assert_int_equal(b.micro, 2);
	assert_int_equal(b.free_threaded, 0);
}

/* 3.14+: free_threaded in _Py_DebugOffsets decides, whatever the name. */
static void test_debug_offsets_say_free_threaded(void **state)
{
	struct fake_python fp = { .debug_offsets = 1, .do_version = 0x030e0af0,
				  .do_free_threaded = 1,
				  .abi_suffix = ".cpython-314-x86_64-linux-gnu.so" };
	struct py_build b = detect(&fp, "/usr/bin/python3.14");

	(void)state;
	assert_int_equal(b.minor, 14);
	assert_int_equal(b.free_threaded, 1);
	assert_string_equal(b.evidence, "its _Py_DebugOffsets say free_threaded = 1");
}

/* Without readable debug offsets, the ABI tag's "t" says free-threaded. */
static void test_abi_tag_says_free_threaded(void **state)
{
	struct fake_python fp = { .py_version = 0x030d05f0,
				  .abi_suffix = ".cpython-313t-x86_64-linux-gnu.so" };
	struct py_build b = detect(&fp, "/opt/py/bin/python3");

	(void)state;
	assert_int_equal(b.minor, 13);
	assert_int_equal(b.micro, 5);
	assert_int_equal(b.free_threaded, 1);
	assert_string_equal(b.evidence, "its ABI tag is cpython-313t (Py_GIL_DISABLED)");
}

/* A debug build's "d" tag is a GIL build; the version from PY_VERSION. */
static void test_debug_abi_tag_and_version_string(void **state)
{
	struct fake_python fp = { .abi_suffix = ".cpython-312d-x86_64-linux-gnu.so",
				  .version_string = "3.12.1" };
	struct py_build b = detect(&fp, "python3.12t");

	(void)state;
	assert_int_equal(b.minor, 12);
	assert_int_equal(b.micro, 1);
	assert_int_equal(b.free_threaded, 0);
}

/* A name is the last resort for the version, never evidence of the build. */
static void test_name_gives_only_the_version(void **state)
{
	struct fake_python fp = { 0 };
	struct py_build b = detect(&fp, "/usr/bin/python3.13t");

	(void)state;
	assert_int_equal(b.major, 3);
	assert_int_equal(b.minor, 13);
	assert_int_equal(b.micro, -1);
	assert_int_equal(b.free_threaded, 0);
	b = detect(&fp, "/usr/bin/pythonic");
	assert_int_equal(b.major, -1);
}

/* A blob with the cookie but a free_threaded of no meaning is not trusted. */
static void test_garbled_debug_offsets_fall_back(void **state)
{
	struct fake_python fp = { .debug_offsets = 1, .do_version = 0x030f02f0,
				  .do_free_threaded = 0x4141414141414141ull,
				  .py_version = 0x030f02f0,
				  .abi_suffix = ".cpython-315t-x86_64-linux-gnu.so" };
	struct py_build b = detect(&fp, "python3.15");

	(void)state;
	assert_int_equal(b.minor, 15);
	assert_int_equal(b.free_threaded, 1);
	assert_non_null(strstr(b.evidence, "cpython-315t"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gil_build_under_a_t_name),
		cmocka_unit_test(test_debug_offsets_say_free_threaded),
		cmocka_unit_test(test_abi_tag_says_free_threaded),
		cmocka_unit_test(test_debug_abi_tag_and_version_string),
		cmocka_unit_test(test_name_gives_only_the_version),
		cmocka_unit_test(test_garbled_debug_offsets_fall_back),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
