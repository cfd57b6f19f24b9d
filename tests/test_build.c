/* The build itself: a plain `make` in a clean clone builds build/loopstat (its default goal is `all`). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support/support.h"

/* A dry run is enough to judge the goal: it prints every command `make`
 * would run, and a clone has no build directory, so all of them. */
Test(build, plain_make_in_a_clean_clone_links_loopstat, .timeout = 60)
{
	if (access(".git", F_OK) != 0)
		cr_skip_test("not a git checkout: no clone to make");
	char *dir = ts_tmpdir("build");
	char cmd[4096], *out = NULL;
	snprintf(cmd, sizeof(cmd), "git clone -q --shared . %s/clone && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u BUILD -u SAN make -n -C %s/clone 2>&1", dir, dir);
	char *const argv[] = { "/bin/sh", "-c", cmd, NULL };
	int rc = ts_run(argv, &out, 50000);
	cr_assert_eq(rc, 0, "clone or make -n failed (%d): %s", rc, out ? out : "");
	cr_assert(strstr(out, "-o build/loopstat "), "plain make would not link build/loopstat:\n%.2000s", out);
	cr_assert(strstr(out, "build/libfiberloop.so.0"), "plain make would not build the runtime library");
	free(out);
	ts_rmtree_free(dir);
}

/* The build directory this suite's loopstat is in (build, build/asan). */
static const char *build_dir(void)
{
	static char dir[1024];
	snprintf(dir, sizeof(dir), "%s", ts_loopstat_bin());
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	else
		snprintf(dir, sizeof(dir), "build");
	return dir;
}

/* make -C . with args (a shell fragment), output into *out; its exit status. */
static int make_here(const char *args, char **out)
{
	char *cmd = NULL;
	/* not the calling make's variables (make test's sanitizer build passes BUILD and SAN down) */
	cr_assert(asprintf(&cmd, "env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u BUILD -u SAN make --no-print-directory %s 2>&1", args) > 0);
	char *const argv[] = { "/bin/sh", "-c", cmd, NULL };
	int rc = ts_run(argv, out, 50000);
	free(cmd);
	return rc;
}

/* The system's linker cache learns of libfiberloop.so.0 at install (else a
 * program linked with `pkg-config --libs fiberloop` cannot start), but a
 * staged install (packaging) leaves the host's cache alone. */
Test(build, install_runs_ldconfig_only_for_the_system, .timeout = 60)
{
	char *sys = NULL, *staged = NULL;
	cr_assert_eq(make_here("-n install", &sys), 0, "%s", sys);
	cr_assert(strstr(sys, "ldconfig"), "make install does not run ldconfig:\n%.2000s", sys);
	cr_assert_eq(make_here("-n install DESTDIR=/nonexistent/stage", &staged), 0, "%s", staged);
	cr_assert(!strstr(staged, "ldconfig"), "a DESTDIR install runs ldconfig:\n%.2000s", staged);
	free(sys);
	free(staged);
}

/* The man page's SEE ALSO names documents that the install put there. */
Test(build, install_puts_the_docs_where_the_man_page_points, .timeout = 60)
{
	char *dir = ts_tmpdir("install"), *out = NULL, args[2048];
	snprintf(args, sizeof(args), "install DESTDIR=%s PREFIX=/usr BUILD=%s", dir, build_dir());
	cr_assert_eq(make_here(args, &out), 0, "make install failed:\n%.3000s", out);
	char path[1200];
	snprintf(path, sizeof(path), "%s/usr/share/man/man1/loopstat.1", dir);
	char *man = ts_read_file(path);
	cr_assert(man, "no man page at %s", path);
	const char *docs[] = { "usage.md", "check.md", "export.md", "profile.md", "shm-abi.md" };
	for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		char want[256];
		snprintf(want, sizeof(want), "/usr/share/doc/loopstat/%s", docs[i]);
		cr_assert(strstr(man, want), "the man page does not point to %s", want);
		snprintf(path, sizeof(path), "%s%s", dir, want);
		cr_assert_eq(access(path, R_OK), 0, "%s is not installed", want);
	}
	free(man);
	free(out);
	ts_rmtree_free(dir);
}

/* make demo needs Debian's build packages and nothing from npm. */
Test(build, demo_installs_only_what_it_uses, .timeout = 60)
{
	char *out = NULL;
	cr_assert_eq(make_here("-n demo", &out), 0, "%s", out);
	cr_assert(!strstr(out, "speedscope") && !strstr(out, "npm"), "make demo reaches for npm:\n%.2000s", out);
	cr_assert(strstr(out, "deps.sh build"), "make demo does not check its build packages:\n%.2000s", out);
	free(out);
	char *const argv[] = { "/bin/sh", "scripts/deps.sh", "--list", "build", NULL };
	cr_assert_eq(ts_run(argv, &out, 10000), 0);
	cr_assert(strstr(out, "liburing-dev\n"), "the build list lacks liburing-dev:\n%s", out);
	const char *test_only[] = { "npm\n", "prometheus\n", "tmux\n", "libcriterion-dev\n", "graphite-carbon\n" };
	for (size_t i = 0; i < sizeof(test_only) / sizeof(test_only[0]); i++)
		cr_assert(!strstr(out, test_only[i]), "make demo would install %s", test_only[i]);
	free(out);
}

/* Without clang, bpftool or libbpf-dev the build goes on without the bpf
 * source (the Makefile's promise; loopstat then says "built without bpf"):
 * every object of probes/src/bpf compiles with no skeleton to include.
 * bpf_attach.c did not. */
Test(build, the_bpf_folder_builds_without_the_bpf_tools, .timeout = 60)
{
	char *dir = ts_tmpdir("nobpf");
	char cmd[4096], *out = NULL;
	snprintf(cmd, sizeof(cmd),
		 "env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u SAN make -s BUILD=%s BPF_CLANG=no-such-clang "
		 "$(for f in probes/src/bpf/*.c; do b=${f##*/}; echo %s/obj/probes/src/bpf/${b%%.c}.o; done) 2>&1",
		 dir, dir);
	char *const argv[] = { "/bin/sh", "-c", cmd, NULL };
	int rc = ts_run(argv, &out, 50000);
	cr_assert_eq(rc, 0, "the bpf folder without clang (%d): %s", rc, out ? out : "");
	free(out);
	ts_rmtree_free(dir);
}
