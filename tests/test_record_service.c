/* Recordings keep each worker's service: a real child in a cgroup named for a systemd unit profiles, records and reports (JSON, replay's model and its services roll-up) as that unit; the same recording without its "w" records (as older writers wrote it) reports the name; hostile service strings are cut and cleaned like every label; bad "w" records are refused; merged threads keep only a shared service. */
#include <criterion/criterion.h>

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collect/recording.h"
#include "probe_service.h"
#include "collect/replay.h"
#include "model/feed.h"
#include "model/model_build.h"
#include "profile/profile_out.h"
#include "profile/profile_tree.h"
#include "support/probe_child.h"
#include "support/support.h"

static char group[512 + 64], unit[64];
static pid_t child = -1;
static char *dir;

/* The mount point of the cgroup2 hierarchy, else of v1's name=systemd one,
 * from mountinfo: where a group named "<x>.service" makes its members that
 * unit's (probe_service reads v2's path first, then v1 systemd's). */
static int unit_hierarchy(char *out, size_t len)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	char line[1024], v1[512] = "";
	out[0] = '\0';
	while (f && fgets(line, sizeof(line), f)) {
		char mnt[512], fstype[64], opts[512];
		/* ID PARENT MAJ:MIN ROOT MOUNT OPTS [TAGS...] - FSTYPE SOURCE SUPEROPTS */
		const char *dash = strstr(line, " - ");
		if (!dash || sscanf(line, "%*s %*s %*s %*s %511s", mnt) != 1 ||
		    sscanf(dash + 3, "%63s %*s %511s", fstype, opts) != 2)
			continue;
		if (strcmp(fstype, "cgroup2") == 0 && !out[0])
			snprintf(out, len, "%s", mnt);
		else if (strcmp(fstype, "cgroup") == 0 && strstr(opts, "name=systemd"))
			snprintf(v1, sizeof(v1), "%s", mnt);
	}
	if (f)
		fclose(f);
	if (!out[0])
		snprintf(out, len, "%s", v1);
	return out[0] != '\0';
}

/* A fresh group "loopstat-test-PID.service" holding a real child parked in
 * epoll_wait (a loop by the loop-poll rule); 0 when no hierarchy is ours to write. */
static int child_in_unit(void)
{
	char root[512];
	snprintf(unit, sizeof(unit), "loopstat-test-%d.service", (int)getpid());
	if (!unit_hierarchy(root, sizeof(root)))
		return 0;
	snprintf(group, sizeof(group), "%s/%s", root, unit);
	if (mkdir(group, 0755) < 0) {
		group[0] = '\0';
		return 0;
	}
	int ep = epoll_create1(0);
	cr_assert_geq(ep, 0);
	child = tchild_fork(tchild_park_epoll_wait, TCHILD_FD(ep));
	close(ep);
	cr_assert_gt(child, 0);
	char procs[sizeof(group) + 16], pid[16];
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", group);
	int n = snprintf(pid, sizeof(pid), "%d", (int)child);
	cr_assert_eq(ts_write_file(procs, pid, (size_t)n), 0, "moving %d into %s", (int)child, group);
	return 1;
}

static void cleanup(void)
{
	if (child > 0)
		tchild_reap(child);
	if (group[0])
		for (int i = 0; i < 50 && rmdir(group) < 0 && errno == EBUSY; i++)
			usleep(100 * 1000);   /* its killed member is reaped first */
	if (dir)
		ts_rmtree_free(dir);
}

/* The service key of the thread node whose label starts with thread in the profile JSON at json. */
static char *json_service(const char *json, const char *thread)
{
	json_object *doc = json_object_from_file(json), *nodes, *v;
	cr_assert(doc, "report's JSON does not parse");
	cr_assert(json_object_object_get_ex(doc, "nodes", &nodes));
	char *service = NULL;
	for (size_t i = 0; i < json_object_array_length(nodes) && !service; i++) {
		json_object *o = json_object_array_get_idx(nodes, i);
		json_object_object_get_ex(o, "level", &v);
		if (strcmp(json_object_get_string(v), "thread") != 0)
			continue;
		json_object_object_get_ex(o, "name", &v);
		if (strncmp(json_object_get_string(v), thread, strlen(thread)) != 0)
			continue;
		cr_assert(json_object_object_get_ex(o, "service", &v), "a thread node without a service");
		service = strdup(json_object_get_string(v));
	}
	cr_assert(service, "no thread '%s' in the report", thread);
	json_object_put(doc);
	return service;
}

/* The same in report's JSON of the recording rec. */
static char *reported_service(const char *rec, const char *thread)
{
	char *json = ts_path_in(dir, "report.json");
	int rc = ts_loopstat(NULL, 20000, "report", rec, "-f", "json", "-o", json, NULL);
	cr_assert_eq(rc, 0, "report exited %d", rc);
	char *service = json_service(json, thread);
	free(json);
	return service;
}

/* The replay's model of the recording at path, to its end. */
static void replayed_model(const char *path, struct model *m, struct replay **r)
{
	FILE *f = fopen(path, "r");
	cr_assert(f);
	long line = 0;
	cr_assert_eq(replay_open(f, r, &line), 0, "replay refused line %ld", line);
	fclose(f);
	struct source src;
	replay_source(*r, &src);
	replay_advance_to(*r, replay_end_ns(*r));
	cr_assert_eq(model_of_source(&src, 0, m), 0);
}

/* The recording at src without its "w" lines, at dst: what a writer older
 * than the service record made of the same samples. */
static void strip_services(const char *src, const char *dst)
{
	char *text = ts_read_file(src);
	FILE *f = fopen(dst, "w");
	cr_assert(f);
	int stripped = 0;
	for (char *line = text, *nl; *line; line = nl + 1) {
		nl = strchr(line, '\n');
		cr_assert(nl, "the recording ends without a newline");
		if (line[0] == 'w' && line[1] == ' ')
			stripped++;
		else
			fwrite(line, 1, (size_t)(nl - line + 1), f);
	}
	cr_assert_eq(fclose(f), 0);
	cr_assert_gt(stripped, 0, "the recording holds no service record");
	free(text);
}

Test(record_service, a_child_in_a_unit_records_and_replays_as_that_unit, .timeout = PROBE_TEST_TIMEOUT,
     .fini = cleanup)
{
	if (!child_in_unit())
		cr_skip_test("no cgroup hierarchy to write (v2, or v1's name=systemd): needs root");
	dir = ts_tmpdir("recsvc");
	char pid[16], thread[40], comm_path[64];
	snprintf(pid, sizeof(pid), "%d", (int)child);
	snprintf(thread, sizeof(thread), "%d/%d ", (int)child, (int)child);
	snprintf(comm_path, sizeof(comm_path), "/proc/%d/comm", (int)child);
	char *comm = ts_read_file(comm_path);
	comm[strcspn(comm, "\n")] = '\0';
	cr_assert_str_neq(comm, unit, "the test needs a service that is not the name");

	char *rec = ts_path_in(dir, "r.rec"), *old = ts_path_in(dir, "old.rec");
	int rc = ts_loopstat(NULL, 20000, "record", "-p", pid, "--duration", "1", "-o", rec, NULL);
	cr_assert_eq(rc, 0, "record exited %d", rc);

	char *service = reported_service(rec, thread);
	cr_expect_str_eq(service, unit, "report names the recorded unit");
	free(service);
	/* and a live profile, whose report it is */
	char *live = ts_path_in(dir, "live.json");
	rc = ts_loopstat(NULL, 20000, "profile", "-p", pid, "--duration", "0.5", "-f", "json", "-o", live, NULL);
	cr_assert_eq(rc, 0, "profile exited %d", rc);
	service = json_service(live, thread);
	cr_expect_str_eq(service, unit, "a live profile names the unit");
	free(service);
	free(live);

	struct model m;
	struct replay *r = NULL;
	replayed_model(rec, &m, &r);
	const struct worker_view *w = ts_find_tid(&m, child);
	cr_assert(w, "the replay has no worker %d", (int)child);
	cr_expect_str_eq(w->service, unit);
	cr_assert_eq(m.nservices, 1);
	cr_expect_str_eq(m.services[0].name, unit, "the services roll-up of the replay");
	model_done(&m);
	replay_delete(r);

	/* the same samples as an older writer recorded them: the name stands in */
	strip_services(rec, old);
	service = reported_service(old, thread);
	cr_expect_str_eq(service, comm, "an old recording reports the name");
	free(service);
	replayed_model(old, &m, &r);
	w = ts_find_tid(&m, child);
	cr_assert(w);
	cr_expect_str_eq(w->service, comm);
	cr_expect_str_eq(m.services[0].name, comm);
	model_done(&m);
	replay_delete(r);
	free(rec), free(old), free(comm);
}

/* One idle sample of thread 42/TID, in the format's own text. */
#define SAMPLE(t, tid, id) "e " #t " 42 " #tid " 0 1 232 3 0 0 0 0 0 " #id " 0 0 0 0\n"

Test(record_service, hostile_services_are_cut_and_cleaned_like_labels, .timeout = PROBE_TEST_TIMEOUT,
     .fini = cleanup)
{
	dir = ts_tmpdir("recsvc");
	/* 700 bytes (longer than any label) with a 3-byte character across the
	 * service name's last byte, an escape sequence with a raw and an encoded C1, and bytes
	 * that are not UTF-8 */
	char longname[800];
	memset(longname, 'a', PROBE_SERVICE_LEN - 2);
	strcpy(longname + PROBE_SERVICE_LEN - 2, "\xe2\x82\xac");
	memset(longname + PROBE_SERVICE_LEN + 1, 'b', 700 - (PROBE_SERVICE_LEN + 1));
	longname[700] = '\0';
	char text[2048];
	snprintf(text, sizeof(text),
		 "loopstat-record 1\nm rate_hz 100\n"
		 "s 1 42/43 w\ns 2 42/44 w\ns 3 42/45 w\n"
		 "s 4 %s\ns 5 \x1b[2Jevil\xc2\x9b" "31m.service\ns 6 caf\xe9\xff.service\n"
		 "w 42 43 4\nw 42 44 5\nw 42 45 6\n"
		 SAMPLE(1000, 43, 1) SAMPLE(1000, 44, 2) SAMPLE(1000, 45, 3)
		 "m duration_s 0.001\n", longname);
	char *path = ts_path_in(dir, "hostile.rec");
	cr_assert_eq(ts_write_file(path, text, strlen(text)), 0);

	struct model m;
	struct replay *r = NULL;
	replayed_model(path, &m, &r);
	cr_assert_eq(m.n, 3);
	/* cut before the character that does not fit PROBE_SERVICE_LEN; controls and stray bytes are '?' */
	char want_long[PROBE_SERVICE_LEN];
	memset(want_long, 'a', PROBE_SERVICE_LEN - 2);
	want_long[PROBE_SERVICE_LEN - 2] = '\0';
	const char *want[] = { want_long, "?[2Jevil?31m.service", "caf??.service" };
	for (int i = 0; i < 3; i++) {
		const struct worker_view *w = ts_find_tid(&m, 43 + i);
		cr_assert(w);
		cr_expect_str_eq(w->service, want[i], "thread %d", 43 + i);
	}
	cr_expect_eq(m.nservices, 3);
	model_done(&m);
	replay_delete(r);

	/* report cuts them where it cuts every label (PROFILE_LABEL_MAX), and
	 * cleans them the same way */
	char want_report[PROFILE_LABEL_MAX];
	snprintf(want_report, sizeof(want_report), "%.*s", PROFILE_LABEL_MAX - 1, longname);
	want[0] = want_report;
	for (int i = 0; i < 3; i++) {
		char thread[16];
		snprintf(thread, sizeof(thread), "42/%d ", 43 + i);
		char *svc = reported_service(path, thread);
		cr_expect_str_eq(svc, want[i], "thread %d", 43 + i);
		free(svc);
	}
	free(path);
}

struct seen {
	char *svc[4];
	int   n;
};

static int each(void *arg, const struct rec_event *ev)
{
	struct seen *s = arg;
	if (s->n < 4)
		s->svc[s->n++] = ev->service ? strdup(ev->service) : NULL;
	return 0;
}

Test(record_service, bad_service_records_are_refused, .timeout = PROBE_TEST_TIMEOUT)
{
	static const char *const bad[] = {
		"loopstat-record 1\ns 1 42/43 w\nw 42 43 2\n" SAMPLE(5, 43, 1),    /* string 2 never defined */
		"loopstat-record 1\ns 1 42/43 w\nw 42 43 0\n" SAMPLE(5, 43, 1),    /* no string */
		"loopstat-record 1\ns 1 42/43 w\nw 42 43 1 7\n" SAMPLE(5, 43, 1),  /* a field too many */
		"loopstat-record 1\ns 1 42/43 w\nw 42 43\n" SAMPLE(5, 43, 1),      /* one too few */
		"loopstat-record 1\ns 1 42/43 w\nw 42 x 1\n" SAMPLE(5, 43, 1),     /* not a number */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		FILE *f = fmemopen((void *)bad[i], strlen(bad[i]), "r");
		cr_assert(f);
		struct replay *r = NULL;
		long line = 0;
		cr_expect_eq(replay_open(f, &r, &line), -EPROTO, "case %zu accepted", i);
		cr_expect_eq(line, 3, "case %zu: line %ld", i, line);
		cr_assert_null(r);
		fclose(f);
	}
	/* a service set again mid-recording holds from there on, for that thread only */
	const char ok[] = "loopstat-record 1\ns 1 42/43 w\ns 2 a.service\ns 3 b.service\ns 4 42/44 v\n"
			  "w 42 43 2\n" SAMPLE(5, 43, 1) SAMPLE(5, 44, 4) "w 42 43 3\n" SAMPLE(6, 43, 1);
	FILE *f = fmemopen((void *)ok, sizeof(ok) - 1, "r");
	struct rec_meta meta;
	long line = 0;
	struct seen seen = { { 0 }, 0 };
	cr_assert_eq(rec_read(f, &meta, each, &seen, &line), 0);
	fclose(f);
	cr_assert_eq(seen.n, 3);
	cr_expect_str_eq(seen.svc[0], "a.service");
	cr_expect_null(seen.svc[1], "a thread without a w record has no service");
	cr_expect_str_eq(seen.svc[2], "b.service");
	for (int i = 0; i < 3; i++)
		free(seen.svc[i]);
}

/* Threads a text report merges keep the service they share, and only that. */
Test(record_service, merged_threads_keep_a_shared_service_only, .timeout = PROBE_TEST_TIMEOUT)
{
	static const char *const threads[] = { "1/2 bio", "1/3 bio", "5/6 bio", "5/7 bio" };
	static const char *const services[] = { "a.service", "a.service", "a.service", "b.service" };
	struct profile_tree *t = profile_tree_new(0);
	cr_assert(t);
	for (int i = 0; i < 4; i++) {
		struct profile_sample s = { .thread = threads[i], .state = PROFILE_IDLE, .service = services[i] };
		cr_assert_eq(profile_tree_add(t, &s, 100), 0);
	}
	/* the last sample's service holds; one without a service keeps it */
	struct profile_sample s = { .thread = "5/7 bio", .state = PROFILE_IDLE };
	cr_assert_eq(profile_tree_add(t, &s, 100), 0);
	s.thread = "8/9 lone";
	s.state = PROFILE_BLOCKED;   /* another shape: never merged with the others */
	cr_assert_eq(profile_tree_add(t, &s, 100), 0);
	int seen = 0;
	for (const struct profile_node *c = profile_tree_root(t)->child; c; c = c->next)
		if (strcmp(c->label, "5/7 bio") == 0) {
			seen++;
			cr_expect_str_eq(profile_node_service(c), "b.service");
		} else if (strcmp(c->label, "8/9 lone") == 0) {
			seen++;
			cr_expect_str_eq(profile_node_service(c), "lone", "no service: the name stands in");
		}
	cr_assert_eq(seen, 2);
	/* 5/7 has twice the samples, all idle too: the same shape and shares, so all four merge */
	cr_assert_eq(profile_tree_merge_threads(t), 0);
	size_t n = 0, merged = 0;
	for (const struct profile_node *c = profile_tree_root(t)->child; c; c = c->next, n++)
		if (strncmp(c->label, "4 threads", 9) == 0) {
			merged++;
			cr_expect_null(profile_node_service(c), "threads of two services merged: %s", c->service);
		}
	cr_assert_eq(n, 2);
	cr_assert_eq(merged, 1);
	profile_tree_delete(t);

	t = profile_tree_new(0);
	for (int i = 0; i < 3; i++) {
		struct profile_sample one = { .thread = threads[i], .state = PROFILE_BLOCKED, .service = services[i] };
		cr_assert_eq(profile_tree_add(t, &one, 10), 0);
	}
	cr_assert_eq(profile_tree_merge_threads(t), 0);
	const struct profile_node *c = profile_tree_root(t)->child;
	cr_assert(c && !c->next, "three threads of one shape merge");
	cr_expect_str_eq(profile_node_service(c), "a.service");
	profile_tree_delete(t);
}

/* report's text, SVG, speedscope and pprof name each thread's service, as
 * its JSON does; a service that is only the process name says nothing. */
Test(record_service, every_report_format_names_the_service, .timeout = PROBE_TEST_TIMEOUT)
{
	struct profile_tree *t = profile_tree_new(0);
	cr_assert(t);
	struct profile_sample s = { .thread = "7/7 worker", .state = PROFILE_IDLE, .service = "web-frontend.service" };
	cr_assert_eq(profile_tree_add(t, &s, 100), 0);
	s = (struct profile_sample){ .thread = "9/9 lone", .state = PROFILE_ON_CPU };
	cr_assert_eq(profile_tree_add(t, &s, 100), 0);
	char *d = ts_tmpdir("svcfmt");
	const enum profile_format fmts[] = { PROFILE_FMT_TEXT, PROFILE_FMT_SVG, PROFILE_FMT_SPEEDSCOPE, PROFILE_FMT_PPROF };
	for (size_t i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++) {
		char *path = ts_path_in(d, profile_format_name(fmts[i]));
		FILE *f = fopen(path, "w");
		cr_assert(f);
		struct profile_meta meta = { .title = "t", .rate_hz = 1000, .duration_s = 0.2 };
		cr_assert_eq(profile_write(f, fmts[i], t, &meta, NULL), 0);
		cr_assert_eq(fclose(f), 0);
		char *cmd = NULL, *out = NULL;
		cr_assert(asprintf(&cmd, "%s '%s' | grep -c 'web-frontend.service'; %s '%s' | grep -c 'service lone'",
				   fmts[i] == PROFILE_FMT_PPROF ? "gzip -dc" : "cat", path,
				   fmts[i] == PROFILE_FMT_PPROF ? "gzip -dc" : "cat", path) > 0);
		char *const argv[] = { "/bin/sh", "-c", cmd, NULL };
		ts_run(argv, &out, 10000);
		int named = 0, lone = 0;
		cr_assert_eq(sscanf(out ? out : "", "%d %d", &named, &lone), 2, "%s", out ? out : "");
		cr_expect_gt(named, 0, "%s does not name the service", profile_format_name(fmts[i]));
		cr_expect_eq(lone, 0, "%s names a service that is only the process name", profile_format_name(fmts[i]));
		free(cmd), free(out), free(path);
	}
	profile_tree_delete(t);
	ts_rmtree_free(d);
}
