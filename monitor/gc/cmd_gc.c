/*
 * gc/cmd_gc.c — `loopstat gc`: remove segments left by processes that are gone.
 */
#include "cli.h"
#include "probe_shm.h"
#include "probe_stat.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct gc_tally {
	int removed, failed;
};

/*
 * A segment is stale when the process its name claims is gone, that pid now
 * belongs to a later process, or the process no longer maps it (it exec'd):
 * probe_shm_stale decides from the name and /proc first, so that files a
 * writer left half-made are collected too; the inode is checked again right
 * before the unlink so that a file recreated meanwhile is kept.
 */
static int gc_one(const char *path, pid_t pid, void *arg)
{
	struct gc_tally *t = arg;
	struct stat before, now;
	if (lstat(path, &before) < 0)
		return 0;
	const char *why = probe_shm_stale_why(probe_shm_stale(path, pid));
	if (!why || lstat(path, &now) < 0 || now.st_ino != before.st_ino)
		return 0;
	if (unlink(path) < 0) {
		cli_error("unlink(%s): %s", path, strerror(errno));
		t->failed++;
		return 0;
	}
	printf("removed %s (pid %d %s)\n", path, (int)pid, why);
	t->removed++;
	return 0;
}

static const struct cli_option options[] = {
	{ 0 },
};

static int run(int argc, char **argv)
{
	struct gc_tally t = { 0 };
	int rc = cli_parse(&cmd_gc, argc, argv, NULL);
	if (rc >= 0)
		return rc;
	int err = probe_shm_scan(NULL, gc_one, &t);
	if (err < 0 && err != -ENOENT) {
		cli_error("opendir(%s): %s", probe_shm_dir(), strerror(-err));
		return EXIT_FAIL;
	}
	printf("%d stale segment%s removed\n", t.removed, t.removed == 1 ? "" : "s");
	if (t.failed)
		cli_error("%d stale segment%s could not be removed", t.failed, t.failed == 1 ? "" : "s");
	return cli_finish_output(t.failed ? EXIT_FAIL : EXIT_OK);
}

const struct cli_command cmd_gc = {
	"gc", "remove segments left by processes that are gone", "",
	"Removes every loopstat segment whose process has exited or whose pid now belongs to another\n"
	"process. Exits 1 when a stale segment could not be removed.",
	options, run,
};
