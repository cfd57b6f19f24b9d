/* docs/usage.md lists every key binding and column of the dashboard, in the words of its help screen. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "top/tui_int.h"
#include "support/support.h"

Test(tui_docs, every_key_is_documented_with_its_help_text, .timeout = 10)
{
	char *doc = ts_read_file("docs/usage.md");
	cr_assert_gt(tui_nkeys, 15);
	for (size_t i = 0; i < tui_nkeys; i++) {
		char row[512];
		snprintf(row, sizeof(row), "| `%s` | %s |\n", tui_keys[i].label, tui_keys[i].desc);
		cr_assert(strstr(doc, row), "docs/usage.md lacks the row: %s", row);
	}
	free(doc);
}

Test(tui_docs, every_column_is_documented, .timeout = 10)
{
	char *doc = ts_read_file("docs/usage.md");
	for (int c = 0; c < TUI_NCOLS; c++) {
		char row[64];
		snprintf(row, sizeof(row), "\n| `%s` | ", tui_columns[c].title);
		cr_assert(strstr(doc, row), "docs/usage.md lacks the column %s", tui_columns[c].title);
	}
	free(doc);
}

Test(tui_docs, no_key_code_is_bound_twice, .timeout = 10)
{
	for (size_t i = 0; i < tui_nkeys; i++)
		for (int k = 0; k < 3; k++) {
			int ch = tui_keys[i].codes[k];
			if (ch)
				cr_assert_eq(tui_key_action(ch), tui_keys[i].action, "key %d of '%s' is bound twice",
					     ch, tui_keys[i].label);
		}
}
