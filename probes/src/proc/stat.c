/*
 * stat.c — /proc/PID/stat parsing. comm may contain spaces and parentheses,
 * so fields are located from the last ')' (as procps does).
 */
#include "probe_stat.h"
#include "probe_proc.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* Next space-separated unsigned field; advances *p. */
static int next_u64(const char **p, uint64_t *out)
{
	const char *s = *p;
	while (*s == ' ')
		s++;
	if (*s < '0' || *s > '9')
		return -EINVAL;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	*out = v;
	*p = end;
	return 0;
}

static int next_i64(const char **p, int64_t *out)
{
	const char *s = *p;
	while (*s == ' ')
		s++;
	int neg = *s == '-';
	uint64_t v;
	const char *q = s + neg;
	if (next_u64(&q, &v) < 0 || v > (uint64_t)INT64_MAX)
		return -EINVAL;
	*out = neg ? -(int64_t)v : (int64_t)v;
	*p = q;
	return 0;
}

int probe_stat_parse(const char *text, struct probe_stat *out)
{
	const char *open = strchr(text, '(');
	const char *close = strrchr(text, ')');
	if (!open || !close || close < open || close[1] != ' ' || !close[2])
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	size_t n = (size_t)(close - open - 1);
	if (n >= sizeof(out->comm))
		n = sizeof(out->comm) - 1;
	memcpy(out->comm, open + 1, n);
	out->comm[n] = '\0';
	out->state = close[2];

	/* fields 4..22 follow the state; keep the ones we publish */
	const char *p = close + 3;
	for (int field = 4; field <= 22; field++) {
		int64_t v;
		if (next_i64(&p, &v) < 0)
			return -EINVAL;
		switch (field) {
		case 4: out->ppid = (int)v; break;
		case 9: out->flags = (unsigned)v; break;
		case 14: out->utime = (uint64_t)v; break;
		case 15: out->stime = (uint64_t)v; break;
		case 20: out->threads = (int)v; break;
		case 22: out->start_time = (uint64_t)v; break;
		}
	}
	/* the image fields: optional, so a short line (an old kernel, a
	 * fixture) leaves them 0, which readers take as "hidden" */
	int k = 0;
	for (int field = 23; field <= 51; field++) {
		/* rsslim (25) is a u64 that is often ~0; exit_signal (38) an
		 * int that a thread shows as -1 */
		uint64_t v;
		int64_t sv;
		if (next_u64(&p, &v) < 0) {
			if (next_i64(&p, &sv) < 0)
				break;
			v = (uint64_t)sv;
		}
		if ((field >= 26 && field <= 28) || field >= 45)
			out->image[k++] = v;
	}
	if (k < PROBE_STAT_IMAGE_FIELDS)
		memset(out->image, 0, sizeof(out->image));
	return 0;
}

int probe_stat_read(pid_t pid, pid_t tid, struct probe_stat *out)
{
	char path[PATH_MAX], buf[2048]; /* 52 fields of up to 20 digits and comm */
	int err = tid > 0 ? probe_proc_path(path, sizeof(path), "%d/task/%d/stat", (int)pid, (int)tid)
			  : probe_proc_path(path, sizeof(path), "%d/stat", (int)pid);
	if (err < 0)
		return err;
	ssize_t n = probe_read_file(path, buf, sizeof(buf));
	if (n == -ENOENT || n == 0)
		return -ESRCH;
	if (n < 0)
		return (int)n;
	return probe_stat_parse(buf, out);
}
