// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include "diff.h"

int diff_write_flame_html(FILE *f, const struct diff *d)
{
	errno = ENOSYS;
	return -1;
}
