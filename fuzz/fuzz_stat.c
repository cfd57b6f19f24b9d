/* libFuzzer: the /proc/PID/stat parser (probe_stat_parse: comm up to the last ')'). */
#include "fuzz.h"
#include "probe_stat.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	memcpy(text, data, size);
	text[size] = '\0';
	struct probe_stat st;
	if (probe_stat_parse(text, &st) == 0 && st.comm[sizeof(st.comm) - 1] != '\0')
		abort();
	free(text);
	return 0;
}
