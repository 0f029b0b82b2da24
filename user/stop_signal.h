/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Ctrl-C, SIGTERM and SIGHUP end a recording or a live view cleanly: the
 * handler only notes the signal; the main loop sees it and winds down. */
#ifndef EP_STOP_SIGNAL_H
#define EP_STOP_SIGNAL_H
#include <signal.h>

/* The signal that asked us to stop, or 0. */
extern volatile sig_atomic_t stop_signal;

void install_stop_signals(void);

#endif
