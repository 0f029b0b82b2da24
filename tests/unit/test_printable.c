// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Unit tests of user/base/printable.c: target text made safe for a terminal
 * (issue 9 item 9). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "printable.h"

static void expect(const char *in, size_t size, const char *want)
{
	char out[256];

	assert_true(size <= sizeof(out));
	assert_ptr_equal(printable(in, out, size), out);
	assert_string_equal(out, want);
}

static void test_plain_and_utf8_kept(void **state)
{
	(void)state;
	expect("MainThread", 256, "MainThread");
	expect("caf\xc3\xa9 \xe4\xb8\xad \xf0\x9f\x90\x8d", 256, "caf\xc3\xa9 \xe4\xb8\xad \xf0\x9f\x90\x8d");
	expect(NULL, 256, "");
}

static void test_controls_escaped(void **state)
{
	(void)state;
	/* OSC title, clear screen: ESC ] ... BEL, ESC [ 2 J */
	expect("\x1b]0;owned\x07\x1b[2J", 256, "\\x1b]0;owned\\x07\\x1b[2J");
	expect("a\nb\tc\rd\x7f", 256, "a\\x0ab\\x09c\\x0dd\\x7f");
	/* C1 CSI (U+009B) is a control to terminals too; the backslash itself
	 * is escaped so that no text can imitate an escape */
	expect("\xc2\x9b" "2J", 256, "\\xc2\\x9b2J");
	expect("a\\x1b", 256, "a\\x5cx1b");
}

/* Unicode's Bidi_Control characters reorder what follows them on the line:
 * escaped, one \xHH per byte; the characters around them are kept. */
static void test_bidi_controls_escaped(void **state)
{
	(void)state;
	expect("a\xe2\x80\xae" "cba", 256, "a\\xe2\\x80\\xaecba");	/* U+202E RLO */
	expect("\xe2\x80\xaa\xe2\x81\xa6\xe2\x81\xa9", 256,	/* U+202A, U+2066, U+2069 */
	       "\\xe2\\x80\\xaa\\xe2\\x81\\xa6\\xe2\\x81\\xa9");
	expect("\xe2\x80\x8e\xe2\x80\x8f\xd8\x9c", 256,	/* U+200E, U+200F, U+061C */
	       "\\xe2\\x80\\x8e\\xe2\\x80\\x8f\\xd8\\x9c");
	/* their neighbours are text: U+2010 hyphen, U+202F, U+2065, U+206A, U+061B */
	expect("\xe2\x80\x90\xe2\x80\xaf\xe2\x81\xa5\xe2\x81\xaa\xd8\x9b", 256,
	       "\xe2\x80\x90\xe2\x80\xaf\xe2\x81\xa5\xe2\x81\xaa\xd8\x9b");
}

/* Every C1 control, U+0080..U+009F; U+00A0 is text. What frame_printable()
 * let through before it was merged into printable(). */
static void test_c1_and_frame_names(void **state)
{
	char in[3] = { (char)0xc2, 0, 0 }, want[16];
	int c;

	(void)state;
	for (c = 0x80; c < 0xa0; c++) {
		in[1] = (char)c;
		snprintf(want, sizeof(want), "\\xc2\\x%02x", c);
		expect(in, 256, want);
	}
	expect("\xc2\xa0", 256, "\xc2\xa0");
	expect("f\033]0;x\a\x7f\n", 256, "f\\x1b]0;x\\x07\\x7f\\x0a");
	expect("0123456789abcdefgh", 16, "0123456789abcde");
}

static void test_invalid_utf8_escaped(void **state)
{
	(void)state;
	expect("\xff\xfe", 256, "\\xff\\xfe");
	expect("\xc3", 256, "\\xc3");		/* truncated */
	expect("\xe0\x80\xaf", 256, "\\xe0\\x80\\xaf");	/* overlong */
	expect("\xed\xa0\x80", 256, "\\xed\\xa0\\x80");	/* surrogate */
}

static void test_cut_whole(void **state)
{
	(void)state;
	expect("abc", 1, "");
	expect("abc", 3, "ab");
	expect("a\x1b", 4, "a");		/* never half an escape */
	expect("a\x1b", 6, "a\\x1b");
	expect("\xc3\xa9\xc3\xa9", 4, "\xc3\xa9");	/* never half a character */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain_and_utf8_kept),
		cmocka_unit_test(test_controls_escaped),
		cmocka_unit_test(test_bidi_controls_escaped),
		cmocka_unit_test(test_c1_and_frame_names),
		cmocka_unit_test(test_invalid_utf8_escaped),
		cmocka_unit_test(test_cut_whole),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
