// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>
#include "top_term.h"

static struct termios saved;
static int active;

int top_term_open(void)
{
	struct termios raw;

	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO) || tcgetattr(STDIN_FILENO, &saved))
		return 0;
	raw = saved;
	/* keys one at a time, not echoed; Ctrl-C still interrupts */
	raw.c_lflag &= ~(ICANON | ECHO);
	raw.c_cc[VMIN] = 0;
	raw.c_cc[VTIME] = 0;
	if (tcsetattr(STDIN_FILENO, TCSANOW, &raw))
		return 0;
	active = 1;
	atexit(top_term_close);
	/* the alternate screen keeps the user's scrollback; hide the cursor */
	fputs("\033[?1049h\033[?25l\033[H\033[2J", stdout);
	fflush(stdout);
	return 1;
}

void top_term_close(void)
{
	if (!active)
		return;
	active = 0;
	fputs("\033[?25h\033[?1049l", stdout);
	fflush(stdout);
	tcsetattr(STDIN_FILENO, TCSANOW, &saved);
}

int top_term_key(void)
{
	unsigned char c;

	if (!active || read(STDIN_FILENO, &c, 1) != 1)
		return -1;
	return c;
}

void top_term_size(int *rows, int *cols)
{
	struct winsize ws;

	*rows = 24;
	*cols = 80;
	if (!ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) && ws.ws_row && ws.ws_col) {
		*rows = ws.ws_row;
		*cols = ws.ws_col;
	}
}
