/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cannot_run(reason): a unit test that cannot run here says why and is
 * skipped; under CI (CI=true) it fails instead. cmocka counts skip() as a
 * pass in the runner's exit status, so a bare skip() hid tests in CI.
 * Include after <cmocka.h>.
 */
#ifndef TESTS_UNIT_CANNOT_RUN_H
#define TESTS_UNIT_CANNOT_RUN_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define cannot_run(reason)						\
	do {								\
		const char *ci_ = getenv("CI");				\
		if (ci_ && strcmp(ci_, "true") == 0)			\
			fail_msg("cannot run in CI: %s", (reason));	\
		fprintf(stderr, "skipped: %s\n", (reason));		\
		skip();							\
	} while (0)

#endif
