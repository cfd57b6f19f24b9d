/* docs/shm-abi.md lists every value of the ABI table with its kind, unit and description. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe_shm.h"

Test(docs, abi_table_matches_header, .timeout = 10)
{
	FILE *f = fopen("docs/shm-abi.md", "r");
	cr_assert(f, "docs/shm-abi.md missing (run from the repository root)");
	static char doc[1 << 16];
	size_t n = fread(doc, 1, sizeof(doc) - 1, f);
	fclose(f);
	doc[n] = '\0';
	for (int i = 0; i < PROBE_SHM_NVALUES; i++) {
		const struct probe_shm_value_info *v = &probe_shm_values[i];
		char row[512];
		snprintf(row, sizeof(row), "| `%s` | %s | %s | %s |", v->name,
			 v->kind == LOOPSTAT_COUNTER ? "counter" : "gauge", v->unit, v->desc);
		cr_expect(strstr(doc, row), "docs/shm-abi.md lacks the row: %s", row);
	}
}
