/* libFuzzer: the /proc/PID/task/TID/syscall parser (probe_syscall_parse). */
#include "fuzz.h"
#include "probe_syscall.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct probe_sc_sample s;
	/* not NUL-terminated: the parser must stay within len */
	char *buf = malloc(size ? size : 1);
	memcpy(buf, data, size);
	if (probe_syscall_parse(buf, size, &s) == 0 && s.state != PROBE_SC_IN_SYSCALL && s.nr != -1)
		abort();
	free(buf);
	return 0;
}
