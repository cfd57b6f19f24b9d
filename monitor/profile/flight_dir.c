/*
 * flight_dir.c — the flight recorder's recordings on disk: a stream into
 * a temp file, renamed when complete; the directory's byte cap.
 */
#include "profile/flight_dir.h"
#include "profile/flight.h"
#include "cli.h"
#include "util/safefile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void flight_file_name(int dirfd, double t, const char *text, int pid, char *out, size_t len)
{
	char when[32], what[64];
	time_t secs = (time_t)t;
	struct tm tm;
	gmtime_r(&secs, &tm);
	strftime(when, sizeof(when), "%Y%m%dT%H%M%SZ", &tm);
	/* the threshold in a file name: letters, digits, _ and ., ops spelled */
	size_t n = 0;
	for (const char *p = text; *p && n + 3 < sizeof(what); p++) {
		const char *op = *p == '>' ? "gt" : *p == '<' ? "lt" : *p == '=' ? "eq" : *p == '!' ? "ne" : NULL;
		if (op) {
			memcpy(what + n, op, 2);
			n += 2;
		} else if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
			   *p == '_' || *p == '.') {
			what[n++] = *p;
		} else if (n && what[n - 1] != '-') {
			what[n++] = '-';
		}
	}
	what[n] = '\0';
	char pidtext[24] = "";
	if (pid > 0)
		snprintf(pidtext, sizeof(pidtext), "-pid%d", pid);
	struct stat st;
	for (int i = 1; i < 1000; i++) {
		char nth[16] = "";
		if (i > 1)
			snprintf(nth, sizeof(nth), "-%d", i);
		snprintf(out, len, FLIGHT_PREFIX "%s-%s%s%s.rec", when, what, pidtext, nth);
		if (fstatat(dirfd, out, &st, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT)
			return;
	}
}

int flight_file_open(struct flight_file *ff, int dirfd, const char *name, const struct rec_meta *meta, char *err,
		     size_t errlen)
{
	memset(ff, 0, sizeof(*ff));
	snprintf(ff->name, sizeof(ff->name), "%s", name);
	ff->fd = safefile_tmp_open(dirfd, name, 0600, ff->tmp, sizeof(ff->tmp), err, errlen);
	if (ff->fd < 0)
		return ff->fd;
	int dupfd = dup(ff->fd);
	if (dupfd < 0 || !(ff->f = fdopen(dupfd, "w")) || !(ff->w = rec_writer_new(ff->f, meta))) {
		int e = errno ? errno : ENOMEM;
		snprintf(err, errlen, "opening %s: %s", ff->tmp, strerror(e));
		if (ff->f)
			fclose(ff->f);
		else if (dupfd >= 0)
			close(dupfd);
		close(ff->fd);
		unlinkat(dirfd, ff->tmp, 0);
		return -e;
	}
	return 0;
}

int flight_file_close(struct flight_file *ff, int dirfd, int write_err, double duration_s, int64_t *bytes,
		      char *err, size_t errlen)
{
	int rc = rec_writer_end(ff->w, duration_s);
	if (write_err < 0)
		rc = write_err;
	errno = 0;
	if (fclose(ff->f) != 0 && rc == 0)
		rc = errno ? -errno : -EIO;
	struct stat st;
	*bytes = fstat(ff->fd, &st) == 0 ? (int64_t)st.st_size : 0;
	return safefile_commit(dirfd, ff->fd, rc, ff->tmp, ff->name, NULL, err, errlen);
}

struct entry {
	char    name[NAME_MAX + 1];
	int64_t bytes;
};

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->name, ((const struct entry *)b)->name);
}

/* Ours: FLIGHT_PREFIX...".rec", a regular file of ours (never a link's target). */
static int listed(int dirfd, const char *name, int64_t *bytes)
{
	size_t n = strlen(name), lp = strlen(FLIGHT_PREFIX);
	struct stat st;
	char why[128];
	if (n <= lp + 4 || strncmp(name, FLIGHT_PREFIX, lp) != 0 || strcmp(name + n - 4, ".rec") != 0)
		return 0;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || safefile_refusal(&st, why, sizeof(why)))
		return 0;
	*bytes = (int64_t)st.st_size;
	return 1;
}

int flight_dir_trim(int dirfd, int64_t max_bytes, FILE *log)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return -e;
	}
	struct entry *v = NULL;
	size_t n = 0, cap = 0;
	int64_t total = 0, bytes;
	int rc = 0;
	for (struct dirent *de; (de = readdir(d));) {
		if (!listed(dirfd, de->d_name, &bytes))
			continue;
		if (n == cap) {
			struct entry *g = realloc(v, (cap = cap ? 2 * cap : 64) * sizeof(*v));
			if (!g) {
				rc = -ENOMEM;
				break;
			}
			v = g;
		}
		snprintf(v[n].name, sizeof(v[n].name), "%s", de->d_name);
		v[n++].bytes = bytes;
		total += bytes;
	}
	closedir(d);
	if (rc == 0) {
		/* the names start with the time: by name is oldest first */
		qsort(v, n, sizeof(*v), by_name);
		for (size_t i = 0; i < n && total > max_bytes; i++) {
			if (unlinkat(dirfd, v[i].name, 0) < 0)
				continue;
			total -= v[i].bytes;
			rc++;
			cli_log(log, "removed %s (%lld bytes): the directory holds more than --max-bytes %lld", v[i].name,
				(long long)v[i].bytes, (long long)max_bytes);
		}
	}
	free(v);
	return rc;
}
