// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#define _GNU_SOURCE
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <gelf.h>
#include <elfutils/libdwfl.h>
#include "clock.h"
#include "eh_frame_hdr.h"
#include "elf_syms.h"
#include "grow.h"
#include "native_dwfl.h"
#include "xz_bound.h"

/* x86-64 DWARF registers 0-16: the last one is rip */
#define EP_NATIVE_REGS_X86	17
/* Symbols kept of one module at most (a debug libpython has ~20,000), and
 * of all modules together: the tables live as long as their modules. */
#define NATIVE_MAX_FNS		(1u << 20)
#define NATIVE_MAX_FNS_ALL	(1u << 21)

/* A function symbol: [addr, addr + size) in the process (bias applied);
 * the name is libdwfl's, alive as long as the module. */
struct native_fn {
	uint64_t addr, size;
	const char *name;
	int global;
};

/* One module as reported: kept (with its tables) while reported again. */
struct native_module {
	struct np_module at;
	int reported;			/* in the last report */
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
	int cold_loaded;		/* eval_cold looked for */
	uint64_t eval_cold;		/* link-time start of the eval loop's cold part, 0: none */
};

struct native_dwfl {
	Dwfl *dwfl;
	int attached;			/* dwfl_attach_state done */
	native_file_fn file_of;
	void *file_arg;
	volatile uint64_t *progress;
	struct native_module *mods;
	size_t nmods, mods_cap, nfns_all;
	/* the sample being unwound */
	pid_t tid;
	const uint64_t *regs;
	const uint8_t *stack;
	size_t stack_len;
	uint64_t *pcs;
	int npcs, max;
	int past_copy;			/* the walk asked for a word beyond the copy */
	/* the walk's steps: when the last began, from which pc, the longest */
	uint64_t step_ns, step_pc, slow_ns, slow_pc;
};

static struct native_module *module_at(struct native_dwfl *d, uint64_t low)
{
	size_t i;

	for (i = 0; i < d->nmods; i++)
		if (d->mods[i].reported && d->mods[i].at.low == low)
			return &d->mods[i];
	return NULL;
}

/* A .gnu_debugdata section's inflated size, at most (real ones are a few
 * hundred KiB: the symbols a stripped file keeps). */
#define DEBUGDATA_MAX		(32u << 20)

/* .gnu_debugdata: libdwfl inflates it whole when the file has no .symtab;
 * one that inflates past DEBUGDATA_MAX refuses the file. 0 or -1. */
static int check_debugdata(Elf_Scn *scn)
{
	Elf_Data *raw = elf_rawdata(scn, NULL);

	return raw && raw->d_buf && xz_inflates_within(raw->d_buf, raw->d_size, DEBUGDATA_MAX) ? -1 : 0;
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
		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(elf, shstrndx, shdr.sh_name);
		if (name && !strcmp(name, ".gnu_debugdata") && check_debugdata(scn))
			return -1;
		if (shdr.sh_size <= ELF_SECTION_MAX)
			continue;
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
 * libdwfl asks for a module's ELF: the parent's descriptor, read by libelf
 * with pread (ELF_C_READ: the target can truncate a file mmap'ed under us).
 * A file without section headers is refused: libdwfl would then look for
 * the dynamic symbols by walking the file, in time quadratic in its size.
 * libdwfl owns the descriptor and the Elf from then on.
 */
static int find_elf(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
		    char **file_name, Elf **elfp)
{
	struct native_dwfl *d = *userdata;	/* set when reported */
	struct native_module *m = d ? module_at(d, base) : NULL;
	size_t nsections = 0;
	int fd;

	(void)mod;
	(void)modname;
	(void)file_name;
	if (!m)
		return -1;
	fd = d->file_of(d->file_arg, m->at.id);
	if (fd < 0)
		return -1;
	*elfp = elf_begin(fd, ELF_C_READ, NULL);
	if (!*elfp || elf_kind(*elfp) != ELF_K_ELF || elf_getshdrnum(*elfp, &nsections) ||
	    nsections < 2 || check_sections(*elfp, m)) {
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

static void forget_module(struct native_dwfl *d, struct native_module *m)
{
	d->nfns_all -= m->nfns;
	free(m->fns);
	memset(m, 0, sizeof(*m));
}

/* Marks the modules of the report, adding those not known yet; the others
 * are forgotten (libdwfl drops them at dwfl_report_end). */
static int take_report(struct native_dwfl *d, const struct np_request *report)
{
	struct np_module at;
	size_t i, kept = 0;
	uint32_t j;

	for (i = 0; i < d->nmods; i++)
		d->mods[i].reported = 0;
	for (j = 0; j < report->report.n; j++) {
		np_module_at(report, j, &at);
		for (i = 0; i < d->nmods; i++)
			if (d->mods[i].at.id == at.id && d->mods[i].at.low == at.low &&
			    d->mods[i].at.high == at.high)
				break;
		if (i == d->nmods) {
			if (GROW_ARRAY(d->mods, d->mods_cap, d->nmods + 1))
				return -1;
			memset(&d->mods[d->nmods], 0, sizeof(d->mods[0]));
			d->mods[d->nmods++].at = at;
		}
		d->mods[i].reported = 1;
	}
	for (i = 0; i < d->nmods; i++) {
		if (!d->mods[i].reported)
			forget_module(d, &d->mods[i]);
		else
			d->mods[kept++] = d->mods[i];
	}
	d->nmods = kept;
	return 0;
}

int native_dwfl_report(struct native_dwfl *d, const struct np_request *report)
{
	char name[32];
	Dwfl_Module *mod;
	void **slot;
	size_t i;

	if (take_report(d, report))
		return -1;
	dwfl_report_begin(d->dwfl);
	for (i = 0; i < d->nmods; i++) {
		/* named by id: the same mapping keeps its libdwfl module */
		snprintf(name, sizeof(name), "m%u", d->mods[i].at.id);
		mod = dwfl_report_module(d->dwfl, name, d->mods[i].at.low, d->mods[i].at.high);
		if (!mod)
			continue;
		dwfl_module_info(mod, &slot, NULL, NULL, NULL, NULL, NULL, NULL);
		if (slot)
			*slot = d;
	}
	return dwfl_report_end(d->dwfl, NULL, NULL) ? -1 : 0;
}

/* Thread callbacks: the one thread is the sample's, its memory the stack copy. */
static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	struct native_dwfl *d = arg;

	(void)dwfl;
	if (*thread_argp)
		return 0;
	*thread_argp = d;
	return d->tid;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	struct native_dwfl *d = arg;

	(void)dwfl;
	*thread_argp = d;
	return tid == d->tid;
}

/* A word of the stack copy; anything else is unknown (the unwind stops). */
static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	struct native_dwfl *d = arg;
	uint64_t sp = d->regs[7];

	(void)dwfl;
	if (addr < sp || addr - sp > d->stack_len || d->stack_len - (addr - sp) < sizeof(*result)) {
		/* the caller's frame lies beyond what was copied: the walk is cut
		 * there (libdwfl ends such a walk as if it were complete) */
		if (addr >= sp && addr - sp < (64u << 20))
			d->past_copy = 1;
		return false;
	}
	memcpy(result, d->stack + (addr - sp), sizeof(*result));
	return true;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	struct native_dwfl *d = arg;
	Dwarf_Word regs[EP_NATIVE_REGS_X86];

	memcpy(regs, d->regs, sizeof(regs));
	return dwfl_thread_state_registers(thread, 0, EP_NATIVE_REGS_X86, regs);
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = next_thread,
	.get_thread = get_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
};

struct native_dwfl *native_dwfl_new(native_file_fn file_of, void *arg, volatile uint64_t *progress)
{
	struct native_dwfl *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->file_of = file_of;
	d->file_arg = arg;
	d->progress = progress;
	d->dwfl = dwfl_begin(&dwfl_callbacks);
	if (!d->dwfl) {
		free(d);
		return NULL;
	}
	return d;
}

void native_dwfl_free(struct native_dwfl *d)
{
	size_t i;

	if (!d)
		return;
	for (i = 0; i < d->nmods; i++)
		free(d->mods[i].fns);
	dwfl_end(d->dwfl);
	free(d->mods);
	free(d);
}

static void working_on(struct native_dwfl *d, uint64_t pc)
{
	if (d->progress)
		*d->progress = pc;
}

/* The coarse clock (a few ms of resolution, 4 ns a read against 31 for
 * the precise one, read at every frame): steps are charged only from 10 ms. */
static uint64_t coarse_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* A step of the walk ended: the time since the last one is the CFI of
 * step_pc's frame (finding its caller); the next step starts from pc. */
static void step_done(struct native_dwfl *d, uint64_t pc)
{
	uint64_t now = coarse_ns();

	if (now - d->step_ns > d->slow_ns) {
		d->slow_ns = now - d->step_ns;
		d->slow_pc = d->step_pc;
	}
	d->step_ns = now;
	d->step_pc = pc;
}

static int on_frame(Dwfl_Frame *state, void *arg)
{
	struct native_dwfl *d = arg;
	Dwarf_Addr pc;
	bool activation;

	if (!dwfl_frame_pc(state, &pc, &activation) || !pc)
		return DWARF_CB_ABORT;
	/* a return address is past its call: look up the call itself */
	d->pcs[d->npcs++] = activation ? pc : pc - 1;
	working_on(d, pc);
	step_done(d, d->pcs[d->npcs - 1]);
	return d->npcs < d->max ? DWARF_CB_OK : DWARF_CB_ABORT;
}

static void start_walk(struct native_dwfl *d, const struct np_request *req, struct np_reply *rep)
{
	d->tid = req->unwind.tid;
	d->regs = req->unwind.regs;
	d->stack = req->unwind.stack;
	d->stack_len = req->unwind.stack_len;
	d->pcs = rep->unwound.pcs;
	d->npcs = 0;
	d->past_copy = 0;
	d->max = req->unwind.max > NATIVE_MAX_FRAMES ? NATIVE_MAX_FRAMES : req->unwind.max;
	d->step_ns = coarse_ns();
	d->step_pc = req->unwind.regs[16];
	d->slow_ns = 0;
	d->slow_pc = 0;
}

void native_dwfl_unwind(struct native_dwfl *d, const struct np_request *req, struct np_reply *rep)
{
	const uint64_t *regs = req->unwind.regs;
	int rc;

	memset(&rep->unwound, 0, offsetof(typeof(rep->unwound), pcs));
	rep->type = NP_UNWOUND;
	if (!req->unwind.max || !regs[16])
		return;
	working_on(d, regs[16]);
	start_walk(d, req, rep);
	if (!d->attached)
		d->attached = dwfl_attach_state(d->dwfl, NULL, 1, &thread_callbacks, d);
	if (!d->attached) {
		rep->unwound.pcs[0] = regs[16];
		rep->unwound.n = 1;
		return;
	}
	/* an error ends the walk where the copy or the CFI ends: what came
	 * before it stands; 0 is a walk to the outermost frame */
	rc = dwfl_getthread_frames(d->dwfl, d->tid, on_frame, d);
	step_done(d, 0);
	rep->unwound.n = d->npcs;
	rep->unwound.complete = rc == 0 && !d->past_copy && d->npcs < d->max;
	rep->unwound.slow_us = d->slow_ns / 1000 > UINT32_MAX ? UINT32_MAX : d->slow_ns / 1000;
	rep->unwound.slow_pc = d->slow_pc;
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
 * (.eh_frame_hdr's table), so that its samples still gather in one frame;
 * the start is an offset from the module's low address. */
static void name_by_cfi(Dwfl_Module *mod, struct native_module *m, uint64_t pc, struct np_reply *rep)
{
	uint64_t start;

	if (load_eh_frame_hdr(mod, m) ||
	    eh_frame_hdr_function(m->hdr, m->hdr_len, m->hdr_vaddr, pc - m->hdr_bias, &start))
		return;
	rep->symbol.kind = NP_SYM_CFI;
	rep->symbol.start = start + m->hdr_bias - m->at.low;
}

/*
 * gcc splits a function that its profile finds mostly cold (PGO: Debian's
 * 3.14 and 3.15) into its named entry and a ".cold" part, which a stripped
 * binary leaves without a symbol; the eval loop's bytecodes then run there
 * (84 KB of python3.14 named only by its CFI), and the weave could not tell
 * its frames for the eval loop's. The part is found by where the entry
 * jumps: near jumps (jcc rel32, jmp rel32) matched in the entry's bytes,
 * the function without a symbol that takes most of them. Matched, not
 * disassembled: a stray match lands anywhere, so the winner needs
 * EVAL_COLD_MIN_JUMPS of them. A jump to a function's first byte is a tail
 * call, not a branch into the part: not counted.
 */
#define EVAL_ENTRY_MAX		(64u << 10)
#define EVAL_COLD_MIN_JUMPS	3
#define EVAL_COLD_CANDIDATES	16

struct cold_votes {
	uint64_t start[EVAL_COLD_CANDIDATES];
	unsigned n[EVAL_COLD_CANDIDATES];
	unsigned used;
};

/* len bytes of code at link-time address vaddr, in an executable section:
 * only those bytes read (libelf checks them against the file), or NULL. */
static const uint8_t *code_at(Elf *elf, uint64_t vaddr, size_t len)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	Elf_Data *data;

	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_PROGBITS ||
		    !(shdr.sh_flags & SHF_EXECINSTR) || vaddr < shdr.sh_addr ||
		    vaddr - shdr.sh_addr >= shdr.sh_size || len > shdr.sh_size - (vaddr - shdr.sh_addr))
			continue;
		data = elf_getdata_rawchunk(elf, shdr.sh_offset + (vaddr - shdr.sh_addr), len,
					    ELF_T_BYTE);
		return data && data->d_buf && data->d_size == len ? data->d_buf : NULL;
	}
	return NULL;
}

static void vote(struct cold_votes *v, uint64_t start)
{
	unsigned i;

	for (i = 0; i < v->used; i++)
		if (v->start[i] == start) {
			v->n[i]++;
			return;
		}
	if (v->used < EVAL_COLD_CANDIDATES) {
		v->start[v->used] = start;
		v->n[v->used++] = 1;
	}
}

/* The target of a near jump at code[i] (link-time address at + i), 0 if none. */
static uint64_t near_jump(const uint8_t *code, size_t len, size_t i, uint64_t at)
{
	size_t op = code[i] == 0xe9 ? 1 : code[i] == 0x0f && (code[i + 1] & 0xf0) == 0x80 ? 2 : 0;
	int32_t rel;

	if (!op || i + op + 4 > len)
		return 0;
	memcpy(&rel, code + i + op, 4);
	return at + i + op + 4 + (int64_t)rel;
}

static const char *function_at(struct native_dwfl *d, Dwfl_Module *mod, struct native_module *m,
			       uint64_t pc);

static void find_eval_cold(struct native_dwfl *d, Dwfl_Module *mod, struct native_module *m)
{
	const struct native_fn *entry = NULL;
	struct cold_votes v = { .used = 0 };
	Dwarf_Addr bias = 0;
	const uint8_t *code;
	uint64_t at, target, start;
	unsigned best = 0, i;
	Elf *elf;

	m->cold_loaded = 1;
	for (i = 0; i < m->nfns && !entry; i++)
		if (!strcmp(m->fns[i].name, "_PyEval_EvalFrameDefault"))
			entry = &m->fns[i];
	elf = dwfl_module_getelf(mod, &bias);
	if (!entry || !elf || !entry->size || entry->size > EVAL_ENTRY_MAX ||
	    load_eh_frame_hdr(mod, m) || bias != m->hdr_bias)
		return;
	at = entry->addr - bias;
	code = code_at(elf, at, entry->size);
	for (i = 0; code && i + 1 < entry->size; i++) {
		target = near_jump(code, entry->size, i, at);
		if (!target || (target >= at && target < at + entry->size) ||
		    eh_frame_hdr_function(m->hdr, m->hdr_len, m->hdr_vaddr, target, &start) ||
		    target == start || function_at(d, mod, m, target + bias))
			continue;
		vote(&v, start);
	}
	for (i = 0; i < v.used; i++)
		if (v.n[i] >= EVAL_COLD_MIN_JUMPS && v.n[i] > best) {
			best = v.n[i];
			m->eval_cold = v.start[i];
		}
}

/* Whether pc is in the eval loop's cold part (see find_eval_cold). */
static int in_eval_cold(struct native_dwfl *d, Dwfl_Module *mod, struct native_module *m,
			uint64_t pc)
{
	uint64_t start;

	if (!m->cold_loaded)
		find_eval_cold(d, mod, m);
	return m->eval_cold &&
	       !eh_frame_hdr_function(m->hdr, m->hdr_len, m->hdr_vaddr, pc - m->hdr_bias, &start) &&
	       start == m->eval_cold;
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
static void load_functions(struct native_dwfl *d, Dwfl_Module *mod, struct native_module *m)
{
	int n = dwfl_module_getsymtab(mod), i;
	const char *name;
	GElf_Addr addr;
	GElf_Sym sym;

	m->fns_loaded = 1;
	if (n <= 0 || (unsigned)n > NATIVE_MAX_FNS || d->nfns_all + n > NATIVE_MAX_FNS_ALL)
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
	d->nfns_all += m->nfns;
	qsort(m->fns, m->nfns, sizeof(*m->fns), by_address);
}

/* The function symbol covering pc, or NULL. */
static const char *function_at(struct native_dwfl *d, Dwfl_Module *mod, struct native_module *m,
			       uint64_t pc)
{
	size_t lo = 0, hi, mid;

	if (!m->fns_loaded)
		load_functions(d, mod, m);
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

/* The name of pc in module mod (NULL: none) into rep. */
static void name_pc(struct native_dwfl *d, Dwfl_Module *mod, uint64_t pc, struct np_reply *rep)
{
	struct native_module *m;
	Dwarf_Addr low = 0;
	const char *name;
	Dwfl_Line *line;
	int lineno = 0;

	if (!mod)
		return;
	dwfl_module_info(mod, NULL, &low, NULL, NULL, NULL, NULL, NULL);
	m = module_at(d, low);
	if (!m)
		return;
	name = function_at(d, mod, m, pc);
	if (!name || !name[0])
		name = in_eval_cold(d, mod, m, pc) ? "_PyEval_EvalFrameDefault.cold" : NULL;
	if (name) {
		rep->symbol.kind = NP_SYM_NAME;
		snprintf(rep->symbol.name, sizeof(rep->symbol.name), "%s", name);
	} else {
		name_by_cfi(mod, m, pc, rep);
	}
	line = m->no_lines ? NULL : dwfl_module_getsrc(mod, pc);
	if (line && dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL) && lineno > 0)
		rep->symbol.line = lineno;
}

void native_dwfl_symbolize(struct native_dwfl *d, uint64_t pc, struct np_reply *rep)
{
	uint64_t spent_us, t0 = monotonic_ns();

	memset(rep, 0, sizeof(*rep));
	rep->type = NP_SYMBOL;
	rep->symbol.kind = NP_SYM_NONE;
	working_on(d, pc);
	name_pc(d, dwfl_addrmodule(d->dwfl, pc), pc, rep);
	spent_us = (monotonic_ns() - t0) / 1000;
	rep->symbol.spent_us = spent_us > UINT32_MAX ? UINT32_MAX : spent_us;
}
