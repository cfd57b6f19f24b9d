/* A target of another user mapping 12 sparse 256-MB objects costs a root list or profile at most 100 MB, and the real worker beside it keeps 90% of its samples. */
#include <criterion/criterion.h>

#include <errno.h>
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

#include "unwind/unwind_int.h"

#include "support/list_json.h"
#include "support/loop_child.h"
#include "support/support.h"
#include "support/users.h"

#define NLIBS     12
#define SPARSE_MB 256

/* Each object's hop calls the next one's: a stall's stack runs through
 * all twelve, so an unwind must open every one of them. */
static const char lib_src[] =
	"#include <time.h>\n"
	"__attribute__((noinline)) int hop(int i, void **fns)\n"
	"{ int r = 0;\n"
	"  if (fns[i + 1]) r = ((int (*)(int, void **))fns[i + 1])(i + 1, fns);\n"
	"  else { struct timespec ts = { 0, 120000000 }; nanosleep(&ts, 0); }\n"
	"  __asm__ volatile(\"\" ::: \"memory\"); return r + 1; }\n";

/* target LIB...: an epoll loop that leaves its poll for 120 ms at a time
 * through every LIB (a stall each time). */
static const char target_src[] =
	"#include <dlfcn.h>\n#include <stdio.h>\n#include <sys/epoll.h>\n"
	"int main(int argc, char **argv)\n{\n"
	"  void *fns[32] = { 0 };\n"
	"  for (int i = 1; i < argc && i < 31; i++) {\n"
	"    void *h = dlopen(argv[i], RTLD_NOW | RTLD_LOCAL);\n"
	"    if (!h || !(fns[i - 1] = dlsym(h, \"hop\"))) return 10;\n  }\n"
	"  int ep = epoll_create1(0);\n"
	"  printf(\"ready\\n\"); fflush(stdout);\n"
	"  for (;;) { struct epoll_event ev; epoll_wait(ep, &ev, 1, 30);\n"
	"    ((int (*)(int, void **))fns[0])(0, fns); }\n}\n";

static struct ts_user user;
static char *dir;
static char target[300];

static void compile(const char *src, const char *name, const char *out, int shared)
{
	char path[300];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	cr_assert_eq(ts_write_file(path, src, strlen(src)), 0);
	char *argv_so[] = { "/usr/bin/cc", "-shared", "-fPIC", "-O0", "-fno-omit-frame-pointer", "-o", (char *)out, path, NULL };
	char *argv_ex[] = { "/usr/bin/cc", "-O0", "-fno-omit-frame-pointer", "-o", (char *)out, path, "-ldl", NULL };
	char *text = NULL;
	int rc = ts_run(shared ? argv_so : argv_ex, &text, 60000);
	cr_assert_eq(rc, 0, "cc %s: %s", name, text ? text : "");
	free(text);
}

static void lib_path(char *buf, size_t len, const char *kind, int i)
{
	snprintf(buf, len, "%s/%s/lib%02d.so", dir, kind, i);
}

/* kind/libNN.so: copies of the object, extended (sparse) to 256 MB or not. */
static void make_libs(const char *kind, const char *src, off_t size)
{
	char d[300];
	snprintf(d, sizeof(d), "%s/%s", dir, kind);
	cr_assert_eq(mkdir(d, 0755), 0);
	char *so = ts_read_file(src);
	struct stat st;
	cr_assert_eq(stat(src, &st), 0);
	for (int i = 0; i < NLIBS; i++) {
		char p[300];
		lib_path(p, sizeof(p), kind, i);
		cr_assert_eq(ts_write_file(p, so, (size_t)st.st_size), 0);
		if (size)
			cr_assert_eq(truncate(p, size), 0);
		cr_assert_eq(chown(p, user.uid, user.gid), 0);
	}
	free(so);
	cr_assert_eq(chown(d, user.uid, user.gid), 0);
}

static void setup(void)
{
	ts_user_add(&user);
	dir = ts_tmpdir("unwind-budget");
	cr_assert_eq(chmod(dir, 0755), 0);
	char so[300];
	snprintf(so, sizeof(so), "%s/hop.so", dir);
	snprintf(target, sizeof(target), "%s/target", dir);
	compile(lib_src, "lib.c", so, 1);
	compile(target_src, "target.c", target, 0);
	make_libs("small", so, 0);
	make_libs("sparse", so, (off_t)SPARSE_MB << 20);
}

static void teardown(void)
{
	ts_rmtree_free(dir);
	dir = NULL;
	ts_user_del(&user);
}

TestSuite(unwind_budget, .init = setup, .fini = teardown, .timeout = 120);

/* The attacker: target as the second user over kind's objects. */
static pid_t start_attacker(const char *kind, int *out_fd)
{
	int out[2];
	cr_assert_eq(pipe(out), 0);
	char paths[NLIBS][300];
	char *argv[NLIBS + 2];
	argv[0] = target;
	for (int i = 0; i < NLIBS; i++) {
		lib_path(paths[i], sizeof(paths[i]), kind, i);
		argv[i + 1] = paths[i];
	}
	argv[NLIBS + 1] = NULL;
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		dup2(out[1], 1);
		if (ts_become(&user) < 0)
			_exit(120);
		execv(target, argv);
		_exit(121);
	}
	close(out[1]);
	char buf[16] = "";
	ssize_t n = read(out[0], buf, sizeof(buf) - 1);
	cr_assert(n > 0 && strstr(buf, "ready"), "attacker over %s did not start", kind);
	*out_fd = out[0];
	return pid;
}

static void stop(pid_t pid, int fd)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(fd);
}

static long meminfo_kb(const char *key)
{
	char *t = ts_read_file("/proc/meminfo");
	const char *p = t ? strstr(t, key) : NULL;
	long v = p ? strtol(p + strlen(key), NULL, 10) : -1;
	free(t);
	return v;
}

static long status_kb(pid_t pid, const char *key)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	char *t = ts_read_file(path);
	const char *p = t ? strstr(t, key) : NULL;
	long v = p ? strtol(p + strlen(key), NULL, 10) : 0;
	free(t);
	return v;
}

struct run {
	int   status;
	long  peak_kb; /* the run's RSS plus the host's shared memory it added (memfd copies), at their peak */
	long long ms;
	char *out;     /* owned */
};

/* Runs loopstat with args (NULL-terminated), killed after 60 s, polling
 * what it costs the host. */
static struct run measured(char *const args[])
{
	int out[2];
	cr_assert_eq(pipe(out), 0);
	long shmem0 = meminfo_kb("Shmem:");
	long long t0 = ts_now_ms();
	pid_t c = fork();
	cr_assert_geq(c, 0);
	if (c == 0) {
		dup2(out[1], 1);
		close(out[0]);
		execv(ts_loopstat_bin(), args);
		_exit(127);
	}
	close(out[1]);
	fcntl(out[0], F_SETFL, O_NONBLOCK);
	struct run r = { .status = -1 };
	size_t len = 0, cap = 1 << 20;
	r.out = calloc(1, cap);
	for (;;) {
		ssize_t n = read(out[0], r.out + len, cap - 1 - len);
		if (n > 0)
			len += (size_t)n;
		long cost = status_kb(c, "VmRSS:") + (meminfo_kb("Shmem:") - shmem0);
		if (cost > r.peak_kb)
			r.peak_kb = cost;
		int st;
		if (waitpid(c, &st, WNOHANG) == c) {
			while ((n = read(out[0], r.out + len, cap - 1 - len)) > 0)
				len += (size_t)n;
			r.status = st;
			break;
		}
		if (ts_now_ms() - t0 > 60000) {
			kill(c, SIGKILL);
			waitpid(c, NULL, 0);
			break;
		}
		usleep(5000);
	}
	r.ms = ts_now_ms() - t0;
	close(out[0]);
	cr_assert(r.status != -1 && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0,
		  "%s: status %#x after %lld ms:\n%s", args[1], r.status, r.ms, r.out);
	return r;
}

/* Whether some stall of w went through the objects' frames. */
static int stalls_through_hop(json_object *w)
{
	json_object *st = NULL;
	if (!json_object_object_get_ex(w, "stalls", &st))
		return 0;
	for (size_t i = 0; i < json_object_array_length(st); i++) {
		json_object *fr = NULL;
		if (!json_object_object_get_ex(json_object_array_get_idx(st, i), "frames", &fr))
			continue;
		for (size_t k = 0; k < json_object_array_length(fr); k++)
			if (strstr(json_object_get_string(json_object_array_get_idx(fr, k)), "hop"))
				return 1;
	}
	return 0;
}

/* A root list of the real worker and the attacker over kind's objects:
 * the real worker's samples; the run's cost in *r. */
static double list_beside(pid_t real, const char *kind, struct run *r)
{
	int afd;
	pid_t a = start_attacker(kind, &afd);
	usleep(200 * 1000);
	char pids[64];
	snprintf(pids, sizeof(pids), "%d,%d", (int)real, (int)a);
	char *args[] = { "loopstat", "list", "--json", "--duration", "3", "--stall-ms", "50", "-p", pids, NULL };
	*r = measured(args);
	stop(a, afd);
	json_object *doc = json_tokener_parse(r->out);
	cr_assert(doc, "not JSON: %s", r->out);
	double samples = tj_num(tj_worker(doc, real, 0), "samples");
	cr_assert(stalls_through_hop(tj_worker(doc, a, 0)), "%s: no stall through the objects' frames: %s", kind, r->out);
	json_object_put(doc);
	return samples;
}

Test(unwind_budget, list_beside_sparse_objects_keeps_memory_and_samples)
{
	FILE *out = NULL;
	pid_t real = tloop_spawn("plain", 0, 0.05, 30, &out);
	cr_assert_gt(real, 0);
	struct run base, attack;
	double s_base = list_beside(real, "small", &base);
	double s_attack = list_beside(real, "sparse", &attack);
	kill(real, SIGKILL);
	waitpid(real, NULL, 0);
	fclose(out);
	fprintf(stderr, "list: base %ld kB %.0f samples; sparse %ld kB %.0f samples\n", base.peak_kb, s_base,
		attack.peak_kb, s_attack);
	cr_expect_leq(attack.peak_kb, base.peak_kb + 100 * 1024, "list over sparse objects: %ld kB, base %ld kB",
		      attack.peak_kb, base.peak_kb);
	cr_expect_geq(s_attack, 0.9 * s_base, "real worker: %.0f samples beside sparse objects, %.0f beside small",
		      s_attack, s_base);
	free(base.out);
	free(attack.out);
}

static struct run profile_of(const char *kind)
{
	int afd;
	pid_t a = start_attacker(kind, &afd);
	usleep(200 * 1000);
	char pid[16];
	snprintf(pid, sizeof(pid), "%d", (int)a);
	char *args[] = { "loopstat", "profile", "-p", pid, "--duration", "2", NULL };
	struct run r = measured(args);
	stop(a, afd);
	cr_assert(strstr(r.out, "hop"), "%s: the objects' frames are not in the profile:\n%s", kind, r.out);
	return r;
}

Test(unwind_budget, profile_of_sparse_objects_keeps_memory_and_time)
{
	struct run base = profile_of("small");
	struct run attack = profile_of("sparse");
	fprintf(stderr, "profile: base %ld kB %lld ms; sparse %ld kB %lld ms\n", base.peak_kb, base.ms,
		attack.peak_kb, attack.ms);
	cr_expect_leq(attack.peak_kb, base.peak_kb + 100 * 1024, "profile over sparse objects: %ld kB, base %ld kB",
		      attack.peak_kb, base.peak_kb);
	cr_expect_leq(attack.ms, base.ms + 1000, "profile over sparse objects: %lld ms, base %lld ms", attack.ms,
		      base.ms);
	free(base.out);
	free(attack.out);
}

/* The budget is the sum held: past it a load is refused, and released
 * objects give their share back. */
Test(unwind_budget, mappings_are_charged_to_one_budget)
{
	int fd = memfd_create("budget", MFD_CLOEXEC);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, 4096), 0);
	int owner_a, owner_b;
	uint64_t half = UW_MAP_BUDGET / 2 + 1;
	uint64_t held0 = uw_map_held();
	Elf *e1 = NULL, *e2 = NULL, *e3 = NULL;
	/* not an ELF: elf_memory still opens it (as ELF_K_NONE) */
	cr_assert_eq(uw_map_object(fd, 4096, half, NULL, &owner_a, 0x1000, &e1), 0);
	cr_assert_eq(uw_map_held(), held0 + half);
	cr_assert_eq(uw_map_object(fd, 4096, half, NULL, &owner_b, 0x1000, &e2), -ENOSPC);
	cr_assert_null(e2);
	elf_end(e1);
	uw_map_release(&owner_a, 0);
	cr_assert_eq(uw_map_held(), held0);
	cr_assert_eq(uw_map_object(fd, 4096, half, NULL, &owner_b, 0x1000, &e3), 0);
	elf_end(e3);
	uw_map_release(&owner_b, 0x1000);
	cr_assert_eq(uw_map_held(), held0);
	close(fd);
}
