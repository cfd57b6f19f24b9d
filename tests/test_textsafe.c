/* Names reach the terminal only as printable text: C0, DEL, C1 (raw or UTF-8-encoded) and invalid UTF-8 become '?', valid text is kept. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "util/textsafe.h"

static void check(const char *in, const char *want)
{
	char buf[128];
	snprintf(buf, sizeof(buf), "%s", in);
	cr_assert_str_eq(textsafe(buf), want, "'%s'", in);
}

Test(textsafe, controls_and_invalid_bytes_become_question_marks, .timeout = 10)
{
	check("web", "web");
	check("caf\xc3\xa9 \xe2\x96\x81", "caf\xc3\xa9 \xe2\x96\x81");   /* é and ▁ stay */
	check("a\x1b[2Jb", "a?[2Jb");                 /* ESC: no clear screen */
	check("a\x7f" "b", "a?b");                    /* DEL */
	check("a\x9b" "31mb", "a?31mb");              /* raw C1 CSI, invalid UTF-8 */
	check("a\xc2\x9b" "31mb", "a?31mb");          /* U+009B CSI encoded: one '?' */
	check("a\xc0\xafz", "a??z");                  /* overlong '/' */
	check("a\xed\xa0\x80z", "a???z");             /* a surrogate */
	check("cut\xe2\x96", "cut?");                 /* comm cut inside a character: one '?' */
	check("a\xe2\x96" "b\xe2", "a?b?");           /* a cut sequence does not swallow 'b' */
}
