/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Ctrl-C, SIGTERM and SIGHUP end a recording or a live view cleanly: the
 * handler only notes the signal; the main loop sees it and winds down. A
 * second Ctrl-C or SIGTERM, when the drain or the write is too slow, ends
 * ebpfprof there and then: no output (a temporary file is removed), and a
 * launched command is terminated with it.
 */
#ifndef EP_STOP_SIGNAL_H
#define EP_STOP_SIGNAL_H
#include <signal.h>
#include <sys/types.h>

/* The signal that asked us to stop, or 0. */
extern volatile sig_atomic_t stop_signal;

void install_stop_signals(void);
/* A launched command (the leader of its own process group, launch.c) to
 * terminate, with its whole group, if a second interrupt ends us at once. */
void stop_signal_end_on_second(pid_t pid);

#endif
