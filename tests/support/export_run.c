/*
 * export_run.c — see export_run.h.
 */
#include "support/export_run.h"
#include "support/support.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ex_export(const char *dir, char **out, char **err, const char *fmt, ...)
{
	char args[2048], cmd[3072], errpath[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	snprintf(errpath, sizeof(errpath), "%s/stderr", dir);
	snprintf(cmd, sizeof(cmd), "exec \"%s\" export %s 2>'%s'", ts_loopstat_bin(), args, errpath);
	char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	int rc = ts_run(argv, out, 40000);
	FILE *f = fopen(errpath, "r");
	static char buf[64 * 1024];
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	if (f)
		fclose(f);
	buf[n] = '\0';
	*err = strdup(buf);
	return rc;
}
