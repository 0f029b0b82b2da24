// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stddef.h>
#include "stop_signal.h"

volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig)
{
	stop_signal = sig;
}

void install_stop_signals(void)
{
	struct sigaction sa = { .sa_handler = on_stop_signal };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}
