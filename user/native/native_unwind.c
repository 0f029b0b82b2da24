// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * --native in ebpfprof's own process: the target's modules (from its
 * /proc/PID/maps), their files opened the safe way, and every question that
 * needs those files parsed asked of the cage's helper (native_cage.h), whose
 * answers are checked here. A helper that dies or does not answer in time
 * is killed, the module it was in is left without symbols (said once, and
 * not given to a helper again), and a new helper starts at the next
 * question; after NATIVE_CAGE_LOSSES_MAX of them, the process's native
 * frames are only the sampled pc, named by offset.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "clock.h"
#include "grow.h"
#include "line_read.h"
#include "mapped_file.h"
#include "native_cage.h"
#include "native_proto.h"
#include "native_unwind.h"
#include "printable.h"
#include "procfs.h"

/* /proc/PID/maps is read again at most this often, when a pc falls in no file
 * reported (a library loaded since). */
#define REPORT_EVERY_NS		1000000000ull
/* Helpers lost (dead, late, or answering nonsense) before giving up. */
#define NATIVE_CAGE_LOSSES_MAX	3
/* A step of an unwind, or a name, slower than this is charged to its
 * module; a module charged more than its budget is dropped: a file can make
 * every question cost just under the helper's CPU limit, and be asked
 * again at every sample. */
#define SLOW_US			10000
#define MODULE_BUDGET_US	1000000

/* One file of the process: its first mapping (for map_files) and the
 * addresses of all its mappings. */
struct native_module {
	struct mapped_file first;
	uint64_t low, high;
	uint32_t id;			/* the helper's name for it */
	int bad;			/* a helper was lost in it: no symbols */
	uint64_t slow_us;		/* the helper's slow time in it */
};

struct native_unwinder {
	pid_t pid;
	char root[PATH_MAX];		/* the target's root seen from ours, "" if ours */
	struct native_module *mods, *prev;	/* prev: the list before the last read */
	size_t nmods, mods_cap, nprev, prev_cap;
	uint32_t next_id;
	uint64_t reported_ns;		/* last read of /proc/PID/maps, 0: never */
	struct native_cage cage;
	int cage_current;		/* the running helper has the module list */
	int losses;
	uint32_t asked_id;		/* the module whose file the helper asked last */
	int asked;
	struct np_reply rep;
	uint8_t msg[NP_MSG_MAX];
};

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* The module whose addresses hold pc (the nearest start), or NULL. */
static struct native_module *module_of(struct native_unwinder *u, uint64_t pc)
{
	struct native_module *best = NULL;
	size_t i;

	for (i = 0; i < u->nmods; i++)
		if (u->mods[i].low <= pc && pc < u->mods[i].high &&
		    (!best || u->mods[i].low > best->low))
			best = &u->mods[i];
	return best;
}

static struct native_module *module_by_id(struct native_unwinder *u, uint32_t id)
{
	size_t i;

	for (i = 0; i < u->nmods; i++)
		if (u->mods[i].id == id)
			return &u->mods[i];
	return NULL;
}

/* The same mapping in the list before: it keeps its id (and the helper its
 * tables) and its verdict. */
static void carry_over(struct native_unwinder *u, struct native_module *m)
{
	size_t i;

	for (i = 0; i < u->nprev; i++) {
		struct native_module *p = &u->prev[i];

		if (p->low == m->low && p->high == m->high && p->first.inode == m->first.inode &&
		    p->first.dev == m->first.dev && !strcmp(p->first.path, m->first.path)) {
			m->id = p->id;
			m->bad = p->bad;
			m->slow_us = p->slow_us;
			return;
		}
	}
	m->id = u->next_id++;
}

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

/* Reads /proc/PID/maps into the module list. 0 or -1. */
static int read_modules(struct native_unwinder *u)
{
	char path[64], line[PATH_MAX + 128];
	struct native_module *older = u->prev;
	size_t older_cap = u->prev_cap, i, lines = 0;
	struct mapped_file m;
	FILE *f;

	u->reported_ns = monotonic_ns();
	snprintf(path, sizeof(path), "/proc/%d/maps", u->pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	/* the current list becomes the one before; the new one reuses the
	 * array of the one before that */
	u->prev = u->mods;
	u->prev_cap = u->mods_cap;
	u->nprev = u->nmods;
	u->mods = older;
	u->mods_cap = older_cap;
	u->nmods = 0;
	while (lines++ < 1000000 && line_read(f, line, sizeof(line), NULL) >= 0)
		if (!mapped_file_parse(line, &m))
			add_mapping(u, &m);
	fclose(f);
	for (i = 0; i < u->nmods; i++)
		carry_over(u, &u->mods[i]);
	u->cage_current = 0;
	return 0;
}

/* Reads the maps the first time, and again (rate-limited) when pc lies in no
 * module: a library loaded since. */
static void refresh_modules(struct native_unwinder *u, uint64_t pc)
{
	if (u->reported_ns && (module_of(u, pc) || monotonic_ns() - u->reported_ns < REPORT_EVERY_NS))
		return;
	read_modules(u);
}

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

/* m's file name as stderr may show it (the target chose it). */
static const char *shown_name(const struct native_unwinder *u, const struct native_module *m,
			      char *out, size_t size)
{
	return printable(base_name(as_target_sees(u, m->first.path)), out, size);
}

/* The helper was lost (how: "did not answer within 5 s"): stopped, and the
 * module it worked in marked, said once. */
static void lose_helper(struct native_unwinder *u, const char *how)
{
	uint64_t pc = u->cage.progress ? *u->cage.progress : 0;
	struct native_module *m = module_of(u, pc);
	char name[NAME_MAX * 4 + 1];

	if (!m && u->asked)
		m = module_by_id(u, u->asked_id);
	native_cage_stop(&u->cage);
	u->cage_current = 0;
	if (m && !m->bad) {
		m->bad = 1;
		fprintf(stderr, "ebpfprof: --native: no symbols for %s: its unwinder %s\n",
			shown_name(u, m, name, sizeof(name)), how);
	} else if (!m) {
		fprintf(stderr, "ebpfprof: --native: process %d's unwinder %s, outside any file; "
			"a new one takes the next question\n", u->pid, how);
	}
	if (++u->losses == NATIVE_CAGE_LOSSES_MAX)
		fprintf(stderr, "ebpfprof: --native: %d unwinders lost for process %d: its native frames "
			"are only the sampled pc from now on\n", u->losses, u->pid);
}

/* The helper spent us on pc's module: past its budget, the module is
 * dropped (said once) and the helper told at the next question. */
static void charge(struct native_unwinder *u, uint64_t pc, uint32_t us)
{
	struct native_module *m = us >= SLOW_US ? module_of(u, pc) : NULL;
	char name[NAME_MAX * 4 + 1];

	if (!m || m->bad)
		return;
	m->slow_us += us;
	if (m->slow_us <= MODULE_BUDGET_US)
		return;
	m->bad = 1;
	u->cage_current = 0;
	fprintf(stderr, "ebpfprof: --native: no symbols for %s: it cost its unwinder more than 1 s\n",
		shown_name(u, m, name, sizeof(name)));
}

/* The helper asks for a module's file: a descriptor we opened, or none. */
static int send_file(struct native_unwinder *u, uint32_t id)
{
	struct native_module *m = module_by_id(u, id);
	uint8_t msg[8];
	struct stat st;
	int fd = m && !m->bad ? mapped_file_open(u->pid, &m->first, &st) : -1;
	int rc;

	u->asked = m != NULL;
	u->asked_id = id;
	rc = np_send(u->cage.sock, msg, np_encode_u32(msg, NP_FD, fd >= 0), fd);
	if (fd >= 0)
		close(fd);
	return rc;
}

/* How long a question has taken: its wall-time end, and the helper's CPU
 * time when it was first found slow (read only then: most questions are
 * answered in microseconds, and reading /proc costs as much). */
struct question {
	uint64_t wall_end_ns, cpu0_ns;
	int slow;
};

#define SLICE_MS	100

/* Waits for the next message: 0 when one is there (or the socket failed:
 * the read that follows says so), else the reason the helper is given up. */
static const char *wait_message(struct native_unwinder *u, struct question *q)
{
	struct pollfd pfd = { u->cage.sock, POLLIN, 0 };
	uint64_t now, cpu;
	int rc;

	for (;;) {
		rc = poll(&pfd, 1, SLICE_MS);
		if (rc > 0 || (rc < 0 && errno != EINTR))
			return NULL;
		now = monotonic_ns();
		if (now >= q->wall_end_ns)
			return "did not answer within 5 s";
		cpu = procfs_cpu_ns(u->cage.pid);
		if (!q->slow) {
			q->slow = 1;
			q->cpu0_ns = cpu;
		} else if (cpu - q->cpu0_ns > NATIVE_CAGE_CPU_MS * 1000000ull) {
			return "spent 1 s of CPU on one question";
		}
	}
}

/* Sends the request in u->msg (len bytes) and reads until its reply of
 * type want, into u->rep, serving the helper's file requests meanwhile.
 * 0, or -1 with the helper lost. */
static int ask(struct native_unwinder *u, size_t len, uint32_t want)
{
	struct question q = { monotonic_ns() + NATIVE_CAGE_WALL_MS * 1000000ull, 0, 0 };
	const char *late;
	ssize_t n;

	u->asked = 0;
	*u->cage.progress = 0;
	if (!len || np_send(u->cage.sock, u->msg, len, -1))
		goto lost;
	for (;;) {
		late = wait_message(u, &q);
		if (late) {
			lose_helper(u, late);
			return -1;
		}
		n = np_recv(u->cage.sock, u->msg, NULL);
		if (n < 0 || np_decode_reply(u->msg, n, &u->rep))
			goto lost;
		if (u->rep.type == want)
			return 0;
		if (u->rep.type != NP_ASK_FD || send_file(u, u->rep.ask_id))
			goto lost;
	}
lost:
	lose_helper(u, "failed");
	return -1;
}

/* The modules not known to be bad, as the helper names them. */
static int report(struct native_unwinder *u)
{
	struct np_module *list = malloc(u->nmods * sizeof(*list) + 1);
	uint32_t n = 0;
	size_t i, len;

	if (!list)
		return -1;
	for (i = 0; i < u->nmods; i++)
		if (!u->mods[i].bad)
			list[n++] = (struct np_module){ u->mods[i].id, u->mods[i].low, u->mods[i].high };
	len = np_encode_report(u->msg, list, n);
	free(list);
	if (ask(u, len, NP_REPORTED))
		return -1;
	u->cage_current = 1;
	return 0;
}

/* A helper running, with the module list: 1, or 0 if there cannot be one. */
static int helper_ready(struct native_unwinder *u)
{
	if (u->losses >= NATIVE_CAGE_LOSSES_MAX)
		return 0;
	if (!u->cage.pid && native_cage_start(&u->cage)) {
		fprintf(stderr, "ebpfprof: --native: cannot start the unwinder: %s\n", strerror(errno));
		u->losses = NATIVE_CAGE_LOSSES_MAX;
		return 0;
	}
	return u->cage_current || !report(u);
}

struct native_unwinder *native_unwinder_new(pid_t pid)
{
	struct native_unwinder *u = calloc(1, sizeof(*u));

	if (!u)
		return NULL;
	u->pid = pid;
	u->cage.sock = -1;
	target_root(pid, u->root, sizeof(u->root));
	return u;
}

void native_unwinder_free(struct native_unwinder *u)
{
	if (!u)
		return;
	native_cage_stop(&u->cage);
	free(u->mods);
	free(u->prev);
	free(u);
}

int native_unwind(struct native_unwinder *u, pid_t tid, const uint64_t *regs,
		  const uint8_t *stack, size_t len, uint64_t *pcs, int max, int *complete)
{
	uint32_t sent_max = max > NATIVE_MAX_FRAMES ? NATIVE_MAX_FRAMES : max;
	size_t msg_len;

	if (complete)
		*complete = 0;
	if (max <= 0 || !regs[16])
		return 0;
	refresh_modules(u, regs[16]);
	if (len > NP_STACK_MAX)
		len = NP_STACK_MAX;
	if (!helper_ready(u))
		goto pc_only;
	msg_len = np_encode_unwind(u->msg, tid, regs, stack, len, sent_max);
	if (ask(u, msg_len, NP_UNWOUND) || u->rep.unwound.n > sent_max)
		goto pc_only;
	memcpy(pcs, u->rep.unwound.pcs, u->rep.unwound.n * sizeof(*pcs));
	if (complete)
		*complete = u->rep.unwound.complete;
	charge(u, u->rep.unwound.slow_pc, u->rep.unwound.slow_us);
	return u->rep.unwound.n;
pc_only:
	pcs[0] = regs[16];
	return 1;
}

/* The helper's name for pc in m, into out->name (and out->line): 0 or -1. */
static int ask_name(struct native_unwinder *u, const struct native_module *m, uint64_t pc,
		    struct native_sym *out)
{
	if (m->bad || !helper_ready(u) || ask(u, np_encode_u64(u->msg, NP_SYMBOLIZE, pc), NP_SYMBOL))
		return -1;
	charge(u, pc, u->rep.symbol.spent_us);
	switch (u->rep.symbol.kind) {
	case NP_SYM_NAME:
		snprintf(out->name, sizeof(out->name), "%s", u->rep.symbol.name);
		break;
	case NP_SYM_CFI:
		snprintf(out->name, sizeof(out->name), "%s+0x%llx", base_name(out->file),
			 (unsigned long long)u->rep.symbol.start);
		break;
	default:
		return -1;
	}
	out->line = u->rep.symbol.line;
	return 0;
}

int native_symbolize(struct native_unwinder *u, uint64_t pc, struct native_sym *out)
{
	struct native_module *m;

	memset(out, 0, sizeof(*out));
	refresh_modules(u, pc);
	m = module_of(u, pc);
	if (!m) {
		snprintf(out->name, sizeof(out->name), "[unknown]");
		return -1;
	}
	snprintf(out->file, sizeof(out->file), "%s", as_target_sees(u, m->first.path));
	out->mod_low = m->low;
	out->mod_high = m->high;
	out->mod_inode = m->first.inode;
	/* without a name: the offset from the file's first mapping */
	if (ask_name(u, m, pc, out))
		snprintf(out->name, sizeof(out->name), "%s+0x%llx", base_name(out->file),
			 (unsigned long long)(pc - m->low));
	return 0;
}
