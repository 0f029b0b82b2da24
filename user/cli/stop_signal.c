// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stddef.h>
#include <unistd.h>
#include "stop_signal.h"
#include "atomic_file.h"

volatile sig_atomic_t stop_signal;
static volatile pid_t launched_pid;

/* Only async-signal-safe calls here. */
static void on_stop_signal(int sig)
{
	static const char msg[] = "ebpfprof: interrupted again: stopping now, nothing written\n";

	if (stop_signal && sig != SIGHUP) {
		atomic_file_abandon();
		if (launched_pid > 0)
			kill(-launched_pid, SIGTERM);	/* its process group: all of it */
		if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0)
			_exit(130);
		_exit(130);
	}
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

void stop_signal_end_on_second(pid_t pid)
{
	launched_pid = pid;
}
