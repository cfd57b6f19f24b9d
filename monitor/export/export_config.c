/*
 * export_config.c — the options of `loopstat export` (EXPORT_OPTIONS, shared
 * with the command line): defaults, value checks, the config file.
 */
#include "export/export_config.h"
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pwd.h>
#include <strings.h>
#include <unistd.h>

enum kind { K_STR, K_SECONDS, K_HZ, K_PRECISION, K_AGE, K_SIZE, K_BOOL, K_RESOLUTION, K_COUNT };

static const struct opt {
	const char *key;
	enum kind kind;
	size_t off, size;
	double lo, hi;                   /* K_SECONDS, K_AGE: the range, in seconds */
} opts[] = {
#define OPT_ROW(id, key, sh, arg, help, example, kind, field, cli, lo, hi) \
	{ key, K_##kind, offsetof(struct export_opts, field), sizeof(((struct export_opts *)0)->field), lo, hi },
	EXPORT_OPTIONS(OPT_ROW)
#undef OPT_ROW
};

const struct export_option export_options[] = {
#define PUBLIC_ROW(id, key, sh, arg, help, example, kind, field, cli, lo, hi) { key, example },
	EXPORT_OPTIONS(PUBLIC_ROW)
#undef PUBLIC_ROW
};
const size_t export_noptions = sizeof(export_options) / sizeof(export_options[0]);

void export_opts_init(struct export_opts *o)
{
	memset(o, 0, sizeof(*o));
	snprintf(o->prefix, sizeof(o->prefix), "loopstat");
	snprintf(o->resolution, sizeof(o->resolution), "window");
	o->duration_s = 10;
	o->timeout_s = 20;
	o->lock_wait_s = 5;
	o->max_age_s = 86400;
	o->max_spool_bytes = 64ll << 20;
	/* never a shared directory: without HOME (cron, systemd) the home is
	 * the passwd entry's, and with none at all there is no default */
	const char *state = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
	struct passwd *pw = home && home[0] == '/' ? NULL : getpwuid(geteuid());
	if (!home || home[0] != '/')
		home = pw && pw->pw_dir[0] == '/' ? pw->pw_dir : NULL;
	if (geteuid() == 0)
		snprintf(o->spool, sizeof(o->spool), "/var/spool/loopstat");
	else if (state && state[0] == '/')   /* the XDG spec ignores a relative one */
		snprintf(o->spool, sizeof(o->spool), "%s/loopstat/spool", state);
	else if (home)
		snprintf(o->spool, sizeof(o->spool), "%s/.local/state/loopstat/spool", home);
}

static int parse_bool(const char *v)
{
	static const char *const yes[] = { "1", "yes", "true", "on" }, *const no[] = { "0", "no", "false", "off" };
	if (!v)
		return 1;
	for (int i = 0; i < 4; i++) {
		if (!strcasecmp(v, yes[i]))
			return 1;
		if (!strcasecmp(v, no[i]))
			return 0;
	}
	return -1;
}

int export_opts_set(struct export_opts *o, const char *key, const char *value, char *err, size_t errlen)
{
	const struct opt *op = NULL;
	char k[32];
	snprintf(k, sizeof(k), "%s", key);
	for (char *c = k; *c; c++)
		if (*c == '_')
			*c = '-';
	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
		if (!strcmp(k, opts[i].key))
			op = &opts[i];
	if (!op) {
		snprintf(err, errlen, "unknown option '%s'", key);
		return -ENOENT;
	}
	if (!value && op->kind != K_BOOL) {
		snprintf(err, errlen, "option '%s' needs a value", op->key);
		return -EINVAL;
	}
	char *base = (char *)o + op->off;
	double d;
	int64_t n;
	int b;
	switch (op->kind) {
	case K_RESOLUTION:
		if (strcmp(value, "1s") && strcmp(value, "window")) {
			snprintf(err, errlen, "%s '%s': expected 1s or window", op->key, value);
			return -EINVAL;
		}
		/* fall through */
	case K_STR:
		if (strlen(value) >= op->size) {
			snprintf(err, errlen, "%s: value longer than %zu bytes", op->key, op->size - 1);
			return -EINVAL;
		}
		memcpy(base, value, strlen(value) + 1);
		return 0;
	case K_SECONDS:
	case K_AGE:
		if (cli_set_duration(op->key, value, op->lo, op->hi, &d, err, errlen) < 0)
			return -EINVAL;
		if (op->kind == K_AGE)
			*(int64_t *)(void *)base = (int64_t)d;
		else
			*(double *)(void *)base = d;
		return 0;
	case K_HZ:
	case K_PRECISION:
		if ((op->kind == K_HZ ? cli_parse_rate : cli_parse_precision)(value, &d, err, errlen) < 0)
			return -EINVAL;
		*(double *)(void *)base = d;
		return 0;
	case K_SIZE:
		n = cli_parse_size(value);
		if (n < 4096) {
			snprintf(err, errlen, "%s '%s': expected a size of at least 4096 bytes (K, M, G allowed)",
			         op->key, value);
			return -EINVAL;
		}
		*(int64_t *)(void *)base = n;
		return 0;
	case K_COUNT:
		if (cli_parse_number(value, 1, 1 << 20, &d) < 0 || d != (double)(size_t)d) {
			snprintf(err, errlen, "%s '%s': expected a whole number from 1 to %d", op->key, value, 1 << 20);
			return -EINVAL;
		}
		*(size_t *)(void *)base = (size_t)d;
		return 0;
	case K_BOOL:
		b = parse_bool(value);
		if (b < 0) {
			snprintf(err, errlen, "%s '%s': expected yes or no", op->key, value);
			return -EINVAL;
		}
		*(int *)(void *)base = b;
		return 0;
	}
	return -EINVAL;
}

static char *trim(char *s)
{
	while (isspace((unsigned char)*s))
		s++;
	char *e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

int export_config_load(struct export_opts *o, const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "re");
	if (!f) {
		int e = errno;
		snprintf(err, errlen, "open(%s): %s", path, strerror(e));
		return -e;
	}
	char line[2048], why[256];
	int lineno = 0, rc = 0;
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		if (!strchr(line, '\n') && !feof(f)) {
			snprintf(err, errlen, "%s:%d: line longer than %zu bytes", path, lineno, sizeof(line) - 2);
			rc = -EINVAL;
			break;
		}
		char *s = trim(line);
		if (!*s || *s == '#')
			continue;
		char *eq = strchr(s, '=');
		if (!eq) {
			snprintf(err, errlen, "%s:%d: expected 'key = value'", path, lineno);
			rc = -EINVAL;
			break;
		}
		*eq = '\0';
		char *key = trim(s), *val = trim(eq + 1);
		size_t vl = strlen(val);
		if (vl >= 2 && val[0] == '"' && val[vl - 1] == '"') {
			val[vl - 1] = '\0';
			val++;
		}
		rc = export_opts_set(o, key, val, why, sizeof(why));
		if (rc < 0) {
			snprintf(err, errlen, "%s:%d: %s", path, lineno, why);
			break;
		}
	}
	fclose(f);
	return rc;
}
