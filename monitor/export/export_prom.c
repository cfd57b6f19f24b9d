/*
 * export_prom.c — the textfile for node_exporter: the points rendered by
 * expo_prom_format, replaced atomically (util/safefile.h).
 */
#include "export/export_prom.h"
#include "expo/expo_prom.h"
#include "util/safefile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* PATH's directory, opened once and checked (the file is replaced
 * relative to it), and its last component in *base. A dirfd or -errno. */
static int textfile_dir(const char *path, const char **base, char *err, size_t errlen)
{
	char dir[4096];
	const char *slash = strrchr(path, '/');
	*base = slash ? slash + 1 : path;
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash == path ? 1 : slash - path) : 1, slash ? path : ".");
	if (!**base || !strcmp(*base, ".") || !strcmp(*base, "..")) {
		snprintf(err, errlen, "%s: names a directory, not a file", path);
		return -EINVAL;
	}
	return safefile_dir_open(dir, 0, err, errlen);
}

int export_prom_check(const char *path, char *err, size_t errlen)
{
	const char *base;
	int dfd = textfile_dir(path, &base, err, errlen);
	if (dfd < 0)
		return dfd;
	close(dfd);
	return 0;
}

int export_prom_write(const char *path, const struct expo_point *pts, size_t n, char *err, size_t errlen)
{
	char why[1024];
	const char *base;
	int dfd = textfile_dir(path, &base, err, errlen);
	if (dfd < 0)
		return dfd;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f) {
		int e = errno;
		close(dfd);
		snprintf(err, errlen, "open_memstream: %s", strerror(e));
		return -e;
	}
	expo_prom_format(f, pts, n, NULL);
	int rc = fclose(f) == 0 ? 0 : -ENOMEM;
	if (rc == 0)
		rc = safefile_replace(dfd, base, path, text, len, 0644, why, sizeof(why));
	if (rc < 0)
		snprintf(err, errlen, "%s", rc == -ENOMEM ? "out of memory" : why);
	free(text);
	close(dfd);
	return rc;
}
