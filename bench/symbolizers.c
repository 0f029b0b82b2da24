// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * --native's symbolizer, against BCC's (issue 22): the same pcs of a running
 * process named by user/native (libdwfl through the safe opener) or by
 * bcc_symcache_*, in a process of their own each, for time and memory.
 * bench/symbolizers.sh builds and runs it (needs libbpfcc-dev), twice: the
 * libdw one without BCC linked (NO_BCC), so that each one's memory is its own.
 *   symbolizers dw|bcc PID N: N pcs spread over PID's executable mappings
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#ifndef NO_BCC
#include <bcc/bcc_syms.h>
#endif
#include "mapped_file.h"
#include "native_unwind.h"

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* n pcs, spread evenly over the executable file mappings */
static size_t pick_pcs(int pid, uint64_t *pcs, size_t n)
{
	char path[64], line[4200];
	struct mapped_file m, exec[256];
	size_t nexec = 0, i, got = 0;
	uint64_t total = 0, at;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f) && nexec < 256)
		if (!mapped_file_parse(line, &m) && m.exec) {
			exec[nexec++] = m;
			total += m.end - m.start;
		}
	if (f)
		fclose(f);
	for (i = 0; i < nexec && got < n; i++)
		for (at = exec[i].start; at < exec[i].end && got < n; at += total / n + 1)
			pcs[got++] = at;
	return got;
}

int main(int argc, char **argv)
{
	int pid = argc > 3 ? atoi(argv[2]) : 0, named = 0;
	size_t n = argc > 3 ? strtoul(argv[3], NULL, 10) : 0, got, i;
	uint64_t *pcs = calloc(n + 1, sizeof(*pcs));
	double t0, t1;
	struct rusage ru;

	if (!pid || !pcs)
		return 2;
	got = pick_pcs(pid, pcs, n);
	t0 = cpu_now();
	if (!strcmp(argv[1], "dw")) {
		struct native_unwinder *u = native_unwinder_new(pid);
		struct native_sym sym;

		for (i = 0; i < got; i++)
			named += !native_symbolize(u, pcs[i], &sym) && sym.name[0] != '[';
		t1 = cpu_now();
		native_unwinder_free(u);
	} else {
#ifndef NO_BCC
		struct bcc_symbol_option opt = { .use_debug_file = 1, .check_debug_file_crc = 1,
						 .use_symbol_type = (1 << 2) | (1 << 10) };
		void *cache = bcc_symcache_new(pid, &opt);
		struct bcc_symbol sym;

		for (i = 0; i < got; i++)
			named += bcc_symcache_resolve_no_demangle(cache, pcs[i], &sym) == 0 && sym.name;
		t1 = cpu_now();
		bcc_free_symcache(cache, pid);
#else
		return 2;
#endif
	}
	getrusage(RUSAGE_SELF, &ru);
	printf("%s: %zu pcs, %d named, %.1f ms CPU (%.2f us a pc), max RSS %ld KiB\n", argv[1], got, named,
	       (t1 - t0) * 1e3, (t1 - t0) * 1e6 / (got ? got : 1), ru.ru_maxrss);
	return 0;
}
