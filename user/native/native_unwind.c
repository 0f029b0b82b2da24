// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <gelf.h>
#include <elfutils/libdwfl.h>
#include "clock.h"
#include "eh_frame_hdr.h"
#include "elf_syms.h"
#include "grow.h"
#include "mapped_file.h"
#include "native_unwind.h"

/* x86-64 DWARF registers 0-16: the last one is rip */
#define EP_NATIVE_REGS_X86	17

/* /proc/PID/maps is read again at most this often, when a pc falls in no file
 * reported (a library loaded since). */
#define REPORT_EVERY_NS		1000000000ull

/* One file of the process: its first mapping (for map_files) and the
 * addresses of all its mappings. */
/* A function symbol: [addr, addr + size) in the process (bias applied);
 * the name is libdwfl's, alive as long as the module. */
struct native_fn {
	uint64_t addr, size;
	const char *name;
	int global;
};

struct native_module {
	struct mapped_file first;
	uint64_t low, high;
	/* loaded on the first pc named in it: libdwfl's own lookup scans every
	 * symbol for every address (36 us a pc in libc), this one is sorted */
	int fns_loaded;
	struct native_fn *fns;
	size_t nfns;
	int no_lines;			/* its DWARF is past our bounds: no lines */
	int hdr_loaded;			/* .eh_frame_hdr, for code without a symbol */
	const uint8_t *hdr;
	size_t hdr_len;
	uint64_t hdr_vaddr, hdr_bias;
};

/* Symbols kept of one module at most (a debug libpython has ~20,000). */
#define NATIVE_MAX_FNS	(1u << 20)

struct native_unwinder {
	pid_t pid;
	char root[PATH_MAX];		/* the target's root seen from ours, "" if ours */
	Dwfl *dwfl;
	int attached;			/* dwfl_attach_state done */
	struct native_module *mods;
	size_t nmods, mods_cap;
	uint64_t reported_ns;		/* last read of /proc/PID/maps, 0: never */
	/* the sample being unwound */
	pid_t tid;
	const uint64_t *regs;
	const uint8_t *stack;
	size_t stack_len;
	uint64_t *pcs;
	int npcs, max;
	int past_copy;			/* the walk asked for a word beyond the copy */
};

static struct native_module *module_at(struct native_unwinder *u, uint64_t low)
{
	size_t i;

	for (i = 0; i < u->nmods; i++)
		if (u->mods[i].low == low)
			return &u->mods[i];
	return NULL;
}

/*
 * libdwfl reads whole sections: one past ELF_SECTION_MAX that it would need
 * to unwind or name (CFI, symbols) refuses the file; DWARF past it only
 * costs the lines. 0, or -1 to refuse.
 */
static int check_sections(Elf *elf, struct native_module *m)
{
	static const char *const needed[] = { ".eh_frame", ".eh_frame_hdr", ".debug_frame",
					      ".symtab", ".strtab", ".dynsym", ".dynstr" };
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	size_t shstrndx, i;
	const char *name;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return -1;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type == SHT_NOBITS ||
		    shdr.sh_size <= ELF_SECTION_MAX)
			continue;
		name = elf_strptr(elf, shstrndx, shdr.sh_name);
		if (!name)
			return -1;
		for (i = 0; i < sizeof(needed) / sizeof(needed[0]); i++)
			if (!strcmp(name, needed[i]))
				return -1;
		if (!strncmp(name, ".debug_", 7) || !strncmp(name, ".zdebug_", 8))
			m->no_lines = 1;
	}
	return 0;
}

/*
 * libdwfl asks for a module's ELF: opened the safe way, read by libelf with
 * pread (ELF_C_READ; libdwfl's own open would mmap a file the target can
 * truncate under us). libdwfl owns the descriptor and the Elf from then on.
 */
static int find_elf(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
		    char **file_name, Elf **elfp)
{
	struct native_unwinder *u = *userdata;	/* set when reported */
	struct native_module *m = u ? module_at(u, base) : NULL;
	struct stat st;
	int fd;

	(void)mod;
	(void)modname;
	(void)file_name;
	if (!m)
		return -1;
	fd = mapped_file_open(u->pid, &m->first, &st);
	if (fd < 0)
		return -1;
	*elfp = elf_begin(fd, ELF_C_READ, NULL);
	if (!*elfp || elf_kind(*elfp) != ELF_K_ELF || check_sections(*elfp, m)) {
		elf_end(*elfp);
		*elfp = NULL;
		close(fd);
		return -1;
	}
	return fd;
}

/* Separate debug files are not looked for: their names come from the
 * target's files, and the host's /usr/lib/debug is not the target's. */
static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
			  Dwarf_Addr base, const char *file_name, const char *debuglink_file,
			  GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	(void)mod; (void)userdata; (void)modname; (void)base; (void)file_name;
	(void)debuglink_file; (void)debuglink_crc; (void)debuginfo_file_name;
	return -1;
}

static const Dwfl_Callbacks dwfl_callbacks = {
	.find_elf = find_elf,
	.find_debuginfo = find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

/* Adds mapping m to the module list: a file's mappings are consecutive in
 * /proc/PID/maps; a file mapped again elsewhere is a module of its own. */
static void add_mapping(struct native_unwinder *u, const struct mapped_file *m)
{
	struct native_module *last = u->nmods ? &u->mods[u->nmods - 1] : NULL;

	if (last && last->first.inode == m->inode && last->first.dev == m->dev &&
	    last->high == m->start && !strcmp(last->first.path, m->path)) {
		last->high = m->end;
		return;
	}
	if (u->nmods >= NATIVE_MAX_MODULES || m->offset > m->start ||
	    GROW_ARRAY(u->mods, u->mods_cap, u->nmods + 1))
		return;
	last = &u->mods[u->nmods++];
	memset(last, 0, sizeof(*last));
	last->first = *m;
	/* where the file's offset 0 is (the ELF header's first PT_LOAD) */
	last->low = m->start - m->offset;
	last->high = m->end;
}

/* Drops the module list and what was loaded of each (libdwfl may free a
 * module not reported again, and the names with it). */
static void forget_modules(struct native_unwinder *u)
{
	size_t i;

	for (i = 0; i < u->nmods; i++)
		free(u->mods[i].fns);
	u->nmods = 0;
}

/* Reads /proc/PID/maps and reports every file with code to libdwfl (modules
 * reported again keep what was loaded of them). 0 or -1. */
static int report_modules(struct native_unwinder *u)
{
	char path[64], line[PATH_MAX + 128];
	struct mapped_file m;
	Dwfl_Module *mod;
	void **slot;
	size_t i, lines = 0;
	FILE *f;

	u->reported_ns = monotonic_ns();
	snprintf(path, sizeof(path), "/proc/%d/maps", u->pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	forget_modules(u);
	while (fgets(line, sizeof(line), f) && lines++ < 1000000)
		if (!mapped_file_parse(line, &m))
			add_mapping(u, &m);
	fclose(f);
	dwfl_report_begin(u->dwfl);
	for (i = 0; i < u->nmods; i++) {
		mod = dwfl_report_module(u->dwfl, u->mods[i].first.path, u->mods[i].low,
					 u->mods[i].high);
		if (!mod)
			continue;
		dwfl_module_info(mod, &slot, NULL, NULL, NULL, NULL, NULL, NULL);
		if (slot)
			*slot = u;
	}
	return dwfl_report_end(u->dwfl, NULL, NULL) ? -1 : 0;
}

/* Thread callbacks: the one thread is the sample's, its memory the stack copy. */
static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	struct native_unwinder *u = arg;

	(void)dwfl;
	if (*thread_argp)
		return 0;
	*thread_argp = u;
	return u->tid;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	struct native_unwinder *u = arg;

	(void)dwfl;
	*thread_argp = u;
	return tid == u->tid;
}

/* A word of the stack copy; anything else is unknown (the unwind stops). */
static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	struct native_unwinder *u = arg;
	uint64_t sp = u->regs[7];

	(void)dwfl;
	if (addr < sp || addr - sp > u->stack_len || u->stack_len - (addr - sp) < sizeof(*result)) {
		/* the caller's frame lies beyond what was copied: the walk is cut
		 * there (libdwfl ends such a walk as if it were complete) */
		if (addr >= sp && addr - sp < (64u << 20))
			u->past_copy = 1;
		return false;
	}
	memcpy(result, u->stack + (addr - sp), sizeof(*result));
	return true;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	struct native_unwinder *u = arg;
	Dwarf_Word regs[EP_NATIVE_REGS_X86];

	memcpy(regs, u->regs, sizeof(regs));
	return dwfl_thread_state_registers(thread, 0, EP_NATIVE_REGS_X86, regs);
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = next_thread,
	.get_thread = get_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
};

/* A chroot's directory as our paths name it ("" for our root, or one we
 * cannot see: a container's maps already name files from its own root). */
static void target_root(pid_t pid, char *root, size_t size)
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/root", pid);
	n = readlink(path, root, size - 1);
	root[n > 0 ? n : 0] = 0;
	if (root[0] != '/' || !strcmp(root, "/"))
		root[0] = 0;
}

/* path as the target names it: without its chroot's directory. */
static const char *as_target_sees(const struct native_unwinder *u, const char *path)
{
	size_t n = strlen(u->root);

	if (n && !strncmp(path, u->root, n) && path[n] == '/')
		return path + n;
	return path;
}

struct native_unwinder *native_unwinder_new(pid_t pid)
{
	struct native_unwinder *u = calloc(1, sizeof(*u));

	if (!u)
		return NULL;
	u->pid = pid;
	target_root(pid, u->root, sizeof(u->root));
	u->dwfl = dwfl_begin(&dwfl_callbacks);
	if (!u->dwfl) {
		free(u);
		return NULL;
	}
	return u;
}

void native_unwinder_free(struct native_unwinder *u)
{
	if (!u)
		return;
	forget_modules(u);
	dwfl_end(u->dwfl);
	free(u->mods);
	free(u);
}

/* Reads the maps the first time, and again (rate-limited) when pc lies in no
 * module: a library loaded since. Attaches the thread callbacks once. */
static void refresh_modules(struct native_unwinder *u, uint64_t pc)
{
	if (u->reported_ns && (dwfl_addrmodule(u->dwfl, pc) ||
			       monotonic_ns() - u->reported_ns < REPORT_EVERY_NS))
		return;
	if (report_modules(u))
		return;
	if (!u->attached)
		u->attached = dwfl_attach_state(u->dwfl, NULL, u->pid, &thread_callbacks, u);
}

static int on_frame(Dwfl_Frame *state, void *arg)
{
	struct native_unwinder *u = arg;
	Dwarf_Addr pc;
	bool activation;

	if (!dwfl_frame_pc(state, &pc, &activation) || !pc)
		return DWARF_CB_ABORT;
	/* a return address is past its call: look up the call itself */
	u->pcs[u->npcs++] = activation ? pc : pc - 1;
	return u->npcs < u->max ? DWARF_CB_OK : DWARF_CB_ABORT;
}

int native_unwind(struct native_unwinder *u, pid_t tid, const uint64_t *regs,
		  const uint8_t *stack, size_t len, uint64_t *pcs, int max, int *complete)
{
	int rc;

	if (complete)
		*complete = 0;
	if (max <= 0 || !regs[16])
		return 0;
	refresh_modules(u, regs[16]);
	u->tid = tid;
	u->regs = regs;
	u->stack = stack;
	u->stack_len = len;
	u->pcs = pcs;
	u->npcs = 0;
	u->past_copy = 0;
	u->max = max > NATIVE_MAX_FRAMES ? NATIVE_MAX_FRAMES : max;
	if (!u->attached) {
		pcs[0] = regs[16];
		return 1;
	}
	/* an error ends the walk where the copy or the CFI ends: what came
	 * before it stands; 0 is a walk to the outermost frame */
	rc = dwfl_getthread_frames(u->dwfl, tid, on_frame, u);
	if (complete)
		*complete = rc == 0 && !u->past_copy && u->npcs < u->max;
	return u->npcs;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* The module's .eh_frame_hdr: its bytes and link-time address, once. */
static int load_eh_frame_hdr(Dwfl_Module *mod, struct native_module *m)
{
	Dwarf_Addr bias = 0;
	Elf *elf = dwfl_module_getelf(mod, &bias);
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	size_t shstrndx;
	Elf_Data *data;
	const char *name;

	if (m->hdr_loaded)
		return m->hdr ? 0 : -1;
	m->hdr_loaded = 1;
	if (!elf || elf_getshdrstrndx(elf, &shstrndx))
		return -1;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_PROGBITS)
			continue;
		name = elf_strptr(elf, shstrndx, shdr.sh_name);
		if (!name || strcmp(name, ".eh_frame_hdr") || shdr.sh_size > ELF_SECTION_MAX)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data || !data->d_buf || data->d_size != shdr.sh_size)
			return -1;
		m->hdr = data->d_buf;
		m->hdr_len = data->d_size;
		m->hdr_vaddr = shdr.sh_addr;
		m->hdr_bias = bias;
		return 0;
	}
	return -1;
}

/* A function without a symbol: named by where its unwind information starts
 * (.eh_frame_hdr's table), so that its samples still gather in one frame:
 * "libz.so.1+0x4a80", the offset from the file's first mapping. */
static void name_by_cfi(Dwfl_Module *mod, struct native_module *m, uint64_t pc,
			const char *file, struct native_sym *out)
{
	uint64_t start, bias = 0;

	if (m && !load_eh_frame_hdr(mod, m) &&
	    !eh_frame_hdr_function(m->hdr, m->hdr_len, m->hdr_vaddr, pc - m->hdr_bias, &start))
		bias = m->hdr_bias;
	else
		start = pc;
	snprintf(out->name, sizeof(out->name), "%s+0x%llx", base_name(file),
		 (unsigned long long)(start + bias - (m ? m->low : 0)));
}

static int by_address(const void *x, const void *y)
{
	const struct native_fn *a = x, *b = y;

	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	if (a->global != b->global)	/* of aliases, the exported name first */
		return b->global - a->global;
	return (int)strlen(a->name) - (int)strlen(b->name);
}

/* The module's function symbols (.symtab, else .dynsym), sorted, once. */
static void load_functions(Dwfl_Module *mod, struct native_module *m)
{
	int n = dwfl_module_getsymtab(mod), i;
	const char *name;
	GElf_Addr addr;
	GElf_Sym sym;

	m->fns_loaded = 1;
	if (n <= 0 || (unsigned)n > NATIVE_MAX_FNS)
		return;
	m->fns = calloc(n, sizeof(*m->fns));
	if (!m->fns)
		return;
	for (i = 1; i < n; i++) {
		name = dwfl_module_getsym_info(mod, i, &sym, &addr, NULL, NULL, NULL);
		if (!name || !name[0] || !addr ||
		    (GELF_ST_TYPE(sym.st_info) != STT_FUNC && GELF_ST_TYPE(sym.st_info) != STT_GNU_IFUNC))
			continue;
		m->fns[m->nfns++] = (struct native_fn){ addr, sym.st_size, name,
							GELF_ST_BIND(sym.st_info) != STB_LOCAL };
	}
	qsort(m->fns, m->nfns, sizeof(*m->fns), by_address);
}

/* The function symbol covering pc, or NULL. */
static const char *function_at(Dwfl_Module *mod, struct native_module *m, uint64_t pc)
{
	size_t lo = 0, hi, mid;

	if (!m->fns_loaded)
		load_functions(mod, m);
	hi = m->nfns;
	if (!hi || pc < m->fns[0].addr)
		return NULL;
	while (hi - lo > 1) {	/* the last entry at or below pc */
		mid = lo + (hi - lo) / 2;
		if (m->fns[mid].addr <= pc)
			lo = mid;
		else
			hi = mid;
	}
	while (lo && m->fns[lo - 1].addr == m->fns[lo].addr)	/* the first alias */
		lo--;
	return pc - m->fns[lo].addr < m->fns[lo].size ? m->fns[lo].name : NULL;
}

int native_symbolize(struct native_unwinder *u, uint64_t pc, struct native_sym *out)
{
	struct native_module *m;
	Dwfl_Module *mod;
	const char *name, *modname;
	Dwarf_Addr low = 0, high = 0;
	GElf_Off offset;
	GElf_Sym sym;
	Dwfl_Line *line;
	int lineno = 0;

	memset(out, 0, sizeof(*out));
	refresh_modules(u, pc);
	mod = dwfl_addrmodule(u->dwfl, pc);
	if (!mod) {
		snprintf(out->name, sizeof(out->name), "[unknown]");
		return -1;
	}
	modname = dwfl_module_info(mod, NULL, &low, &high, NULL, NULL, NULL, NULL);
	snprintf(out->file, sizeof(out->file), "%s", modname ? as_target_sees(u, modname) : "");
	out->mod_low = low;
	out->mod_high = high;
	m = module_at(u, low);
	if (m)
		out->mod_inode = m->first.inode;
	name = m ? function_at(mod, m, pc) : dwfl_module_addrinfo(mod, pc, &offset, &sym, NULL,
								    NULL, NULL);
	if (name && name[0])
		snprintf(out->name, sizeof(out->name), "%s", name);
	else
		name_by_cfi(mod, m, pc, out->file, out);
	line = m && m->no_lines ? NULL : dwfl_module_getsrc(mod, pc);
	if (line && dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL) && lineno > 0)
		out->line = lineno;
	return 0;
}
