/* fl_backend_available("io_uring") under kernel.io_uring_disabled=2: 0, and 1 again once restored. The sysctl is the host's, so this suite runs alone (make test's timed phase): set while other suites ran, it refused their rings (ci47: fl_run(io_uring): Operation not permitted). */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fiberloop.h"

/* fl_backend_available("io_uring") in a new process: 1, 0, or -1 when no
 * child could run (no assertion here: the caller restores a sysctl first). */
static int available_in_child(void)
{
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0)
		_exit(fl_backend_available("io_uring") ? 1 : 0);
	int st;
	return waitpid(pid, &st, 0) == pid && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* kernel.io_uring_disabled=2 refuses every ring: io_uring is then not
 * available, and is again once the setting is restored. The sysctl is
 * the host's: set for as short a time as one probe takes. */
Test(backend_sysctl, io_uring_unavailable_while_the_kernel_disables_it, .timeout = 10)
{
	const char *path = "/proc/sys/kernel/io_uring_disabled";
	char was[16] = "";
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		cr_skip_test("open(%s): %s (a kernel before 6.6 has no kernel.io_uring_disabled)", path,
			     strerror(errno));
	ssize_t got = read(fd, was, sizeof(was) - 1);
	close(fd);
	cr_assert_gt(got, 0, "read(%s)", path);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		cr_skip_test("cannot set kernel.io_uring_disabled: open(%s): %s", path, strerror(errno));
	ssize_t n = write(fd, "2\n", 2);
	int err = errno;
	int refused = n == 2 ? available_in_child() : -2;
	ssize_t back = pwrite(fd, was, strlen(was), 0);
	int back_err = errno;
	close(fd);
	cr_assert_eq(back, (ssize_t)strlen(was), "restoring %s to %s: %s", path, was, strerror(back_err));
	if (n != 2)
		cr_skip_test("cannot set kernel.io_uring_disabled: write(%s): %s", path, strerror(err));
	cr_expect_eq(refused, 0, "io_uring available with kernel.io_uring_disabled=2");
	if (atoi(was) == 0)
		cr_expect_eq(available_in_child(), 1, "io_uring not available with kernel.io_uring_disabled=0");
}
