/* One option table for export: every row sets its option as a config key and is accepted on the command line, the command line has no option outside the table, and docs/export.md lists every key. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "exitcodes.h"
#include "export/export_config.h"
#include "support/support.h"

static char *dir;
static pid_t child = -1;

static void setup(void) { dir = ts_tmpdir("expopts"); }

static void teardown(void)
{
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	ts_rmtree_free(dir);
}

TestSuite(export_options, .init = setup, .fini = teardown, .timeout = 90);

/* cmd_export's row for key, NULL if none. */
static const struct cli_option *cli_row(const char *key)
{
	for (const struct cli_option *o = cmd_export.options; o->long_name; o++)
		if (!strcmp(o->long_name, key))
			return o;
	return NULL;
}

Test(export_options, every_key_sets_its_option_from_a_config_file)
{
	cr_assert_gt(export_noptions, 15);
	for (size_t i = 0; i < export_noptions; i++) {
		const struct export_option *x = &export_options[i];
		for (int underscore = 0; underscore < 2; underscore++) {
			char key[64], path[400], text[600], err[512];
			snprintf(key, sizeof(key), "%s", x->key);
			for (char *c = key; underscore && *c; c++)
				if (*c == '-')
					*c = '_';
			snprintf(path, sizeof(path), "%s/%s.conf", dir, key);
			snprintf(text, sizeof(text), "# one key\n%s = \"%s\"\n", key, x->example);
			cr_assert_eq(ts_write_file(path, text, strlen(text)), 0);
			struct export_opts def, o;
			export_opts_init(&def);
			export_opts_init(&o);
			cr_assert_eq(export_config_load(&o, path, err, sizeof(err)), 0, "%s: %s", key, err);
			cr_assert_neq(memcmp(&def, &o, sizeof(o)), 0, "%s = %s changed nothing", key, x->example);
		}
	}
}

Test(export_options, the_command_line_is_the_table)
{
	size_t n = 0;
	for (const struct cli_option *o = cmd_export.options; o->long_name; o++) {
		if (!strcmp(o->long_name, "config"))
			continue;   /* names the file: the one option that is no key */
		int found = 0;
		for (size_t i = 0; i < export_noptions; i++)
			found |= !strcmp(export_options[i].key, o->long_name);
		cr_assert(found, "--%s is an option of export but no row of EXPORT_OPTIONS (no config key)", o->long_name);
		n++;
	}
	for (size_t i = 0; i < export_noptions; i++)
		cr_assert(cli_row(export_options[i].key), "config key %s is no option of export", export_options[i].key);
	cr_assert_eq(n, export_noptions);
}

/* The real binary, every option with its example: never a usage error. */
Test(export_options, every_option_is_accepted_on_the_command_line)
{
	child = fork();
	cr_assert_geq(child, 0);
	if (child == 0) {
		execl("/bin/sleep", "sleep", "60", (char *)NULL);
		_exit(127);
	}
	for (size_t i = 0; i < export_noptions; i++) {
		const struct export_option *x = &export_options[i];
		const struct cli_option *row = cli_row(x->key);
		cr_assert(row, "%s", x->key);
		char cmd[1500], errpath[400], value[300] = "";
		if (row->arg)
			snprintf(value, sizeof(value), " '%s'", x->example);
		snprintf(errpath, sizeof(errpath), "%s/stderr", dir);
		snprintf(cmd, sizeof(cmd), "exec '%s' export --dry-run --duration 0.05 -p %d --%s%s 2>'%s' >/dev/null",
		         ts_loopstat_bin(), (int)child, x->key, value, errpath);
		char *argv[] = { "/bin/sh", "-c", cmd, NULL };
		int rc = ts_run(argv, NULL, 30000);
		char *err = ts_read_file(errpath);
		cr_assert(rc >= 0 && rc != EXIT_USAGE, "--%s%s: exit %d: %s", x->key, value, rc, err);
		free(err);
	}
}

Test(export_options, docs_list_every_config_key)
{
	char *doc = ts_read_file("docs/export.md");
	const char *p = strstr(doc, "Config keys are exactly the long options:");
	cr_assert(p, "docs/export.md lost its list of config keys");
	const char *end = strstr(p, "(`_` may stand for `-`)");
	cr_assert(end, "the list ends with (`_` may stand for `-`)");
	int listed = 0;
	for (const char *q = strchr(p, '`'); q && q < end; q = strchr(q + 1, '`')) {
		const char *close = strchr(q + 1, '`');
		cr_assert(close && close < end);
		char key[64];
		snprintf(key, sizeof(key), "%.*s", (int)(close - q - 1), q + 1);
		q = close;
		int found = 0;
		for (size_t i = 0; i < export_noptions; i++)
			found |= !strcmp(export_options[i].key, key);
		cr_assert(found, "docs/export.md lists `%s`, which is no config key", key);
		listed++;
	}
	cr_assert_eq((size_t)listed, export_noptions, "docs/export.md lists %d config keys, the table has %zu", listed,
	             export_noptions);
	free(doc);
}
