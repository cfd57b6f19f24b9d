/* libFuzzer: the /proc/PID/task/TID/schedstat parser (probe_schedstat_parse). */
#include "fuzz.h"
#include "probe_schedstat.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size ? size : 1);
	memcpy(buf, data, size);
	struct probe_schedstat s;
	(void)probe_schedstat_parse(buf, size, &s);
	free(buf);
	return 0;
}
