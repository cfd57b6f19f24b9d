/*
 * lsan.c — LeakSanitizer's suppressions for every test binary. Linked into
 * each test as an object, not from the support archive: nothing calls the
 * hook, so the archive would leave it out.
 */
#include "probe_discover.h"

/* Criterion's runner (not a test, not the runtime) leaks a 48-byte event
 * record now and then when workers run in parallel (--jobs 2): keep
 * LeakSanitizer's verdict about our code only; and libproc2's known leak
 * (probe_discover.h). */
const char *__lsan_default_suppressions(void);
__attribute__((visibility("default"))) const char *__lsan_default_suppressions(void)
{
	return "leak:libcriterion.so\n" PROBE_LSAN_SUPPRESSIONS;
}
