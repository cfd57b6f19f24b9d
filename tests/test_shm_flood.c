/* Segment floods: another user's well-formed files naming its own live processes, which map none of them. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "loopstat_shm.h"
#include "probe_shm.h"
#include "probe_stat.h"
#include "support/children.h"
#include "support/support.h"
#include "support/users.h"
#include "shm/shm_int.h"

#define FLOOD  100000
#define OWNERS 20

static char *dir;
static struct ts_user user;
static pid_t owners[OWNERS];

static void setup(void)
{
	dir = ts_tmpdir("flood");
	chmod(dir, 01777); /* like /dev/shm: anyone may plant files */
	setenv(LOOPSTAT_SHM_DIR_ENV, dir, 1);
}

static void teardown(void)
{
	tc_kill_all(owners, OWNERS);
	ts_user_del(&user);
	ts_rmtree_free(dir);
}

TestSuite(shm_flood, .init = setup, .fini = teardown, .timeout = 90);

/* The attacker's processes: the user's, paused until killed. */
static void spawn_owners(void)
{
	for (int i = 0; i < OWNERS; i++) {
		owners[i] = fork();
		cr_assert_geq(owners[i], 0);
		if (owners[i] == 0) {
			if (ts_become(&user) < 0)
				_exit(1);
			pause();
			_exit(0);
		}
	}
}

/* As the user: FLOOD well-formed one-slot segments, named and headed after
 * its live processes, with their true start times. */
static int plant(void *arg)
{
	(void)arg;
	struct probe_stat st[OWNERS];
	for (int i = 0; i < OWNERS; i++)
		if (probe_stat_read(owners[i], 0, &st[i]) < 0)
			return 1;
	for (int i = 0; i < FLOOD; i++) {
		int o = i % OWNERS;
		struct loopstat_shm_header h = {
			.magic = LOOPSTAT_SHM_MAGIC, .abi_major = LOOPSTAT_SHM_ABI_MAJOR,
			.abi_minor = LOOPSTAT_SHM_ABI_MINOR, .byte_order = LOOPSTAT_SHM_BYTE_ORDER,
			.header_size = sizeof(h), .slot_size = sizeof(struct loopstat_shm_slot), .slot_count = 1,
			.pid = owners[o], .start_time = st[o].start_time, .ready = 1,
		};
		char path[512];
		snprintf(path, sizeof(path), "%s/loopstat.%d.f%x", dir, (int)owners[o], i);
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd < 0 || ftruncate(fd, (off_t)(sizeof(h) + sizeof(struct loopstat_shm_slot))) < 0 ||
		    pwrite(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h))
			return 2;
		close(fd);
	}
	return 0;
}

static double cpu_s(const struct rusage *r)
{
	return (double)(r->ru_utime.tv_sec + r->ru_stime.tv_sec) + (double)(r->ru_utime.tv_usec + r->ru_stime.tv_usec) / 1e6;
}

static json_object *get(json_object *o, const char *key)
{
	json_object *v = NULL;
	cr_assert(json_object_object_get_ex(o, key, &v), "no \"%s\"", key);
	return v;
}

/*
 * Before: each of the 100,000 files cost a full validation (~80 us: open,
 * header, three /proc files, the owner's maps), 8 s of CPU on the sampling
 * thread, and a 2-s list took 10 s with one sample of the real worker.
 */
Test(shm_flood, a_real_worker_keeps_its_samples_and_the_run_its_duration)
{
	ts_user_add(&user);
	spawn_owners();
	cr_assert_eq(ts_as_user(&user, plant, NULL, 60000), 0);
	const char *args[] = { "--idle", "0.9", "--seconds", "20", NULL };
	pid_t worker = tc_spawn_example("duty_cycle", args, NULL);
	char seg[512];
	for (int i = 0; i < 200 && ts_shm_segment(dir, worker, seg, sizeof(seg)) < 0; i++)
		usleep(10000);

	struct rusage before, after;
	getrusage(RUSAGE_CHILDREN, &before);
	long long t0 = ts_now_ms();
	char *out = NULL;
	/* the rate and span asked for, not list's own account of them: a
	 * flood that delays the first sample must not shrink the expectation */
	const double duration = 2.0, rate = 100.0;
	char *argv[] = { (char *)ts_loopstat_bin(), "list", "--duration", "2", "-r", "100", "--json", NULL };
	int rc = ts_run(argv, &out, 30000);
	double wall = (double)(ts_now_ms() - t0) / 1000.0;
	getrusage(RUSAGE_CHILDREN, &after);
	double cpu = cpu_s(&after) - cpu_s(&before);
	tc_kill(worker);
	cr_assert_eq(rc, 0, "list exited %d: %s", rc, out);

	json_object *doc = json_tokener_parse(out);
	cr_assert(doc);
	json_object *workers = get(doc, "workers");
	cr_assert_eq(json_object_array_length(workers), 1, "only the real worker is listed: %s", out);
	json_object *w = json_object_array_get_idx(workers, 0);
	cr_assert_eq(json_object_get_int(get(w, "pid")), worker);
	double expected = duration * rate;
	int samples = json_object_get_int(get(w, "samples"));
	cr_log_info("flood of %d: list took %.2f s wall, %.2f s CPU; the worker got %d samples of %.0f "
		    "(list's own span %.3f s at %.0f Hz)\n", FLOOD, wall, cpu, samples, expected,
		    json_object_get_double(get(doc, "duration_s")), json_object_get_double(get(doc, "rate_hz")));
	cr_expect_geq(samples, 0.9 * expected, "the real worker got %d samples of %.0f", samples, expected);
	cr_expect_leq(wall, 3.5, "a 2-s list took %.2f s", wall);
	cr_expect_leq(cpu, 1.5, "a 2-s list spent %.2f s of CPU", cpu);
	json_object_put(doc);
	free(out);
}
