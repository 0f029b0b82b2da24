// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target of --label's text (user/model/labels.c, dask_key.c): a
 * value as the kernel sends it (struct ep_label_blob, any bytes: its
 * lengths, tags and counts must not be trusted), the option's syntax, and
 * dask's key_split port. Input: the blob's bytes, then a NUL-terminated
 * string for the parsers. Each output must be a NUL-terminated printable
 * ASCII string within its buffer (abort otherwise).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "dask_key.h"
#include "labels.h"

static void check_text(const char *s, size_t room)
{
	size_t n = strnlen(s, room);

	if (n == room)
		abort();
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ep_label_blob b;
	struct label_spec spec;
	char text[LABEL_TEXT_MAX], src[LABEL_TEXT_MAX], prefix[32], err[256], *str;

	if (size < sizeof(b))
		return 0;
	memcpy(&b, data, sizeof(b));
	label_format(&b, text, sizeof(text));
	check_text(text, sizeof(text));
	if (label_source(&b, src, sizeof(src)))
		check_text(src, sizeof(src));
	str = malloc(size - sizeof(b) + 1);
	if (!str)
		return 0;
	memcpy(str, data + sizeof(b), size - sizeof(b));
	str[size - sizeof(b)] = 0;
	dask_key_split(str, prefix, sizeof(prefix));
	if (strnlen(prefix, sizeof(prefix)) == sizeof(prefix))
		abort();
	if (label_spec_parse(str, &spec, err, sizeof(err)) == 0 &&
	    (spec.arg < 0 || spec.arg > EP_LABEL_MAX_ARG || !spec.name[0] || !spec.function[0]))
		abort();
	free(str);
	return 0;
}
