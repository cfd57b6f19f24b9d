/*
 * service.c — a process's service from its cgroup path (probe_service.h).
 */
#include "probe_proc.h"
#include "probe_service.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

/* Whether [s, s+n) is at least 12 hex digits. */
static int hex_id(const char *s, size_t n)
{
	if (n < 12)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char)s[i]))
			return 0;
	return 1;
}

/* "<prefix><id>.scope" (systemd's cgroup driver) or a bare id under a
 * "<parent>" component (cgroupfs driver: /docker/<id>). */
static const struct runtime {
	const char *scope_prefix, *parent, *label;
} runtimes[] = {
	{ "docker-", "docker", "docker" },
	{ "cri-containerd-", "containerd", "containerd" },
	{ "crio-", "crio", "crio" },
	{ "libpod-", "libpod", "podman" },
};

static int container(const char *comp, size_t n, const char *parent, size_t pn, char *out, size_t len)
{
	for (size_t r = 0; r < sizeof(runtimes) / sizeof(runtimes[0]); r++) {
		const struct runtime *rt = &runtimes[r];
		size_t p = strlen(rt->scope_prefix);
		if (n > p + 6 && strncmp(comp, rt->scope_prefix, p) == 0 && strncmp(comp + n - 6, ".scope", 6) == 0 &&
		    hex_id(comp + p, n - p - 6)) {
			snprintf(out, len, "%s:%.12s", rt->label, comp + p);
			return 1;
		}
		if (parent && pn == strlen(rt->parent) && strncmp(parent, rt->parent, pn) == 0 && hex_id(comp, n)) {
			snprintf(out, len, "%s:%.12s", rt->label, comp);
			return 1;
		}
	}
	return 0;
}

/* Kubernetes: a "pod<uid>" component, alone (cgroupfs) or as
 * "kubepods-<qos>-pod<uid>.slice" (systemd), uid's '-' as '_' there. */
static int pod(const char *comp, size_t n, char *out, size_t len)
{
	const char *p = NULL;
	for (size_t i = 0; i + 3 < n; i++)
		if (strncmp(comp + i, "pod", 3) == 0 && (i == 0 || comp[i - 1] == '-'))
			p = comp + i + 3;
	if (!p)
		return 0;
	size_t m = (size_t)(comp + n - p);
	if (m > 6 && strncmp(p + m - 6, ".slice", 6) == 0)
		m -= 6;
	if (m < 8 || m > 40)
		return 0;
	char uid[48];
	for (size_t i = 0; i < m; i++) {
		char c = p[i] == '_' ? '-' : p[i];
		if (!isxdigit((unsigned char)c) && c != '-')
			return 0;
		uid[i] = c;
	}
	uid[m] = '\0';
	snprintf(out, len, "pod:%s", uid);
	return 1;
}

/* Who owns what is below comps[0..n): the user of the nearest
 * user@UID.service (a user's own systemd, whose units and rootless
 * containers that user names as they like), and the nearest container
 * (whose systemd names its units as its owner likes): "user 1001: ",
 * "docker:0123456789ab: ", both, or "". A unit or container below is
 * named with it, so that it is never taken for the host's own. */
static void owner_prefix(const char *const *comps, const size_t *lens, size_t n, char *pre, size_t len)
{
	char user[32] = "", box[PROBE_SERVICE_LEN + 4] = "";
	for (size_t i = n; i-- > 0;) {
		unsigned long uid;
		int used = 0;
		if (!*user && lens[i] > 13 && strncmp(comps[i], "user@", 5) == 0 &&
		    strncmp(comps[i] + lens[i] - 8, ".service", 8) == 0 &&
		    sscanf(comps[i] + 5, "%lu.service%n", &uid, &used) == 1 && (size_t)used == lens[i] - 5)
			snprintf(user, sizeof(user), "user %lu: ", uid);
		char c[PROBE_SERVICE_LEN];
		if (!*box && (pod(comps[i], lens[i], c, sizeof(c)) ||
			      container(comps[i], lens[i], i ? comps[i - 1] : NULL, i ? lens[i - 1] : 0, c, sizeof(c))))
			snprintf(box, sizeof(box), "%s: ", c);
	}
	snprintf(pre, len, "%s%s", user, box);
}

/* The service in one cgroup path: its deepest .service unit (not a user
 * manager's user@UID.service), else its pod, else its container, else
 * none; named with who owns the part of the tree it is in (owner_prefix):
 * "user 1001: duty.service" is not the system's duty.service. */
static int from_path(const char *path, char *out, size_t len)
{
	const char *comps[64];
	size_t lens[64], n = 0;
	for (const char *p = path; *p && n < 64;) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		const char *e = strchr(p, '/');
		size_t l = e ? (size_t)(e - p) : strlen(p);
		comps[n] = p;
		lens[n++] = l;
		p += l;
	}
	char pre[PROBE_SERVICE_LEN];
	for (size_t i = n; i-- > 0;)
		if (lens[i] > 8 && strncmp(comps[i] + lens[i] - 8, ".service", 8) == 0 &&
		    strncmp(comps[i], "user@", 5) != 0) {
			owner_prefix(comps, lens, i, pre, sizeof(pre));
			if (strlen(pre) + lens[i] >= len)
				return 0;   /* cut, it could be taken for another: the process name stands in */
			snprintf(out, len, "%s%.*s", pre, (int)lens[i], comps[i]);
			return 1;
		}
	/* a Kubernetes pod before the container in it: the pod is what is deployed */
	char name[PROBE_SERVICE_LEN];
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = n; i-- > 0;)
			if (pass == 0 ? pod(comps[i], lens[i], name, sizeof(name))
				      : container(comps[i], lens[i], i ? comps[i - 1] : NULL, i ? lens[i - 1] : 0, name,
						  sizeof(name))) {
				owner_prefix(comps, lens, i, pre, sizeof(pre));
				if (strlen(pre) + strlen(name) >= len)
					return 0;
				snprintf(out, len, "%s%s", pre, name);
				return 1;
			}
	return 0;
}

int probe_service_parse(const char *text, char *out, size_t len)
{
	char v2[PATH_MAX] = "", sd[PATH_MAX] = "", any[PATH_MAX] = "";
	for (const char *line = text; *line;) {
		const char *nl = strchr(line, '\n');
		size_t l = nl ? (size_t)(nl - line) : strlen(line);
		const char *c1 = memchr(line, ':', l);
		const char *c2 = c1 ? memchr(c1 + 1, ':', l - (size_t)(c1 + 1 - line)) : NULL;
		if (c2 && (size_t)(line + l - c2) < PATH_MAX) {
			int pl = (int)(line + l - c2 - 1);
			if (strncmp(line, "0::", 3) == 0)
				snprintf(v2, sizeof(v2), "%.*s", pl, c2 + 1);
			else if ((size_t)(c2 - c1 - 1) == 12 && strncmp(c1 + 1, "name=systemd", 12) == 0)
				snprintf(sd, sizeof(sd), "%.*s", pl, c2 + 1);
			else if (!*any)
				snprintf(any, sizeof(any), "%.*s", pl, c2 + 1);
		}
		line += l + (nl != NULL);
	}
	out[0] = '\0';
	const char *paths[] = { v2, sd, any };
	for (int i = 0; i < 3; i++)
		if (*paths[i] && from_path(paths[i], out, len))
			return 1;
	out[0] = '\0';
	return 0;
}

int probe_service_of(pid_t pid, char *out, size_t len)
{
	char path[PATH_MAX], text[4096];
	out[0] = '\0';
	int err = probe_proc_path(path, sizeof(path), "%d/cgroup", (int)pid);
	if (err < 0)
		return err;
	ssize_t n = probe_read_file(path, text, sizeof(text));
	if (n < 0)
		return (int)n;
	return probe_service_parse(text, out, len);
}
