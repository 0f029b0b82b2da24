/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The terminal of `ebpfprof top`: keys without Enter, the alternate screen,
 * and everything put back as it was on exit, however we exit. */
#ifndef EP_TOP_TERM_H
#define EP_TOP_TERM_H

/* 1 if stdin and stdout are a terminal: then raw keys and the alternate
 * screen are set up (and undone at exit). 0: plain periodic text. */
int top_term_open(void);
/* Puts the terminal back; safe to call twice, and from atexit. */
void top_term_close(void);
/* A key pressed since the last call, or -1. */
int top_term_key(void);
/* Rows and columns of the terminal (24x80 if unknown). */
void top_term_size(int *rows, int *cols);

#endif
