// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <unistd.h>
#include "progress.h"

#define PROGRESS_PERIOD_NS 250000000ull

void progress_init(struct progress *p, FILE *f)
{
	p->f = isatty(fileno(f)) ? f : NULL;
	p->next_ns = 0;
	p->shown = 0;
}

void progress_update(struct progress *p, uint64_t now_ns, double elapsed_s,
		     unsigned long samples, unsigned long long lost, unsigned long gc_pauses)
{
	if (!p->f || now_ns < p->next_ns)
		return;
	p->next_ns = now_ns + PROGRESS_PERIOD_NS;
	/* \r and erase-to-end: the line shrinks cleanly; Ctrl-C's ^C does not stick */
	fprintf(p->f, "\r\033[Kebpfprof: recording %.1f s, %lu samples, %llu lost, %lu GC pauses (Ctrl-C to stop)",
		elapsed_s, samples, lost, gc_pauses);
	fflush(p->f);
	p->shown = 1;
}

void progress_clear(struct progress *p)
{
	if (!p->f || !p->shown)
		return;
	fputs("\r\033[K", p->f);
	fflush(p->f);
	p->shown = 0;
}
