// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdio.h>
#include <string.h>
#include "dask_key.h"

static int is_letter(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* A word of letters only, and at least one. */
static int all_letters(const char *w, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!is_letter(w[i]))
			return 0;
	return n > 0;
}

static int is_hex_digits(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

static void set(char *out, size_t len, const char *s, size_t n)
{
	snprintf(out, len, "%.*s", (int)n, s);
}

/* [*from, *to) without the characters of `chars` at either end. */
static void strip(const char **from, const char **to, const char *chars)
{
	while (*from < *to && strchr(chars, **from))
		(*from)++;
	while (*to > *from && strchr(chars, (*to)[-1]))
		(*to)--;
}

/* A <module.Class object at 0x...> key: the class's name. 0 when empty. */
static int object_name(const char *s, size_t n, char *out, size_t len)
{
	const char *from = s, *to = s + n, *end, *dot;

	strip(&from, &to, "<>");
	while (from < to && strchr(" \t\n\r\f\v", *from))
		from++;
	for (end = from; end < to && !strchr(" \t\n\r\f\v", *end); end++)
		;
	if (end == from)
		return 0;
	for (dot = end; dot > from && dot[-1] != '.'; dot--)
		;
	set(out, len, dot, end - dot);
	return 1;
}

void dask_key_split(const char *key, char *out, size_t len)
{
	char result[256];
	const char *word, *end, *from, *to;
	size_t n;

	if (!key || !key[0] || key[0] == '-') {	/* no first word */
		set(out, len, "Other", 5);
		return;
	}
	end = strchr(key, '-');
	end = end ? end : key + strlen(key);
	from = key;
	to = end;
	if (!is_letter(key[0])) {
		const char *comma = memchr(key, ',', end - key);

		to = comma ? comma : end;
		strip(&from, &to, "_'()\"");
	}
	set(result, sizeof(result), from, to - from);
	for (word = end; *word == '-'; word = end) {
		word++;
		end = strchr(word, '-');
		end = end ? end : word + strlen(word);
		n = end - word;
		if (!all_letters(word, n) || (n == 8 && word[0] >= 'a' && word[0] <= 'f'))
			break;
		n = strlen(result);
		snprintf(result + n, sizeof(result) - n, "-%.*s", (int)(end - word), word);
	}
	n = strlen(result);
	if (n == 32 && is_hex_digits(result, 32))
		set(out, len, "data", 4);
	else if (!n || (result[0] == '<' && !object_name(result, n, out, len)))
		set(out, len, "Other", 5);
	else if (result[0] != '<')
		set(out, len, result, n);
}
