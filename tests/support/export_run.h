/*
 * export_run.h — `loopstat export` run end to end for the export suites.
 */
#ifndef TESTS_EXPORT_RUN_H
#define TESTS_EXPORT_RUN_H

/* `loopstat export ARGS` (printf-style) through sh, within 40 s, its stderr
 * kept in dir/stderr: the exit status, stdout in *out and stderr in *err
 * (both malloc'd). */
int ex_export(const char *dir, char **out, char **err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
