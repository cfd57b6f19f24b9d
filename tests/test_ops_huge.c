/* Lengths past 32 bits and size_t overflow: requests are clamped, a 0-byte write is not progress, buffers refuse to wrap. */
#include "support/fl_test.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#define HUGE_LEN ((size_t)1 << 32) /* (unsigned)HUGE_LEN == 0 */

/* Address space only: the kernel never touches more than it transfers. */
static void *huge_region(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	cr_assert_neq(p, MAP_FAILED);
	return p;
}

static void *write_huge_main(void *arg)
{
	(void)arg;
	size_t len = HUGE_LEN + 4096;
	char *buf = huge_region(len);
	int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	cr_assert(fd >= 0);
	/* before: the SQE asked for 0 bytes, got 0 and looped for ever */
	cr_assert_eq(fl_write(fd, buf, HUGE_LEN), (ssize_t)HUGE_LEN);
	cr_assert_eq(fl_write(fd, buf, len), (ssize_t)len);
	close(fd);
	munmap(buf, len);
	return NULL;
}

Test(ops_huge, write_of_4gib_completes, .timeout = 30)
{
	fl_test_run(write_huge_main, NULL);
}

static void *read_huge_main(void *arg)
{
	(void)arg;
	int p[2];
	char *buf = huge_region(HUGE_LEN);
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	cr_assert_eq(write(p[1], "hello", 5), 5);
	/* before: a 0-byte request on io_uring, read as EOF */
	cr_assert_eq(fl_read(p[0], buf, HUGE_LEN), 5);
	cr_assert_eq(memcmp(buf, "hello", 5), 0);
	close(p[0]);
	close(p[1]);
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p), 0);
	cr_assert_eq(write(p[1], "world", 5), 5);
	cr_assert_eq(fl_recv(p[0], buf, HUGE_LEN, 0), 5);
	cr_assert_eq(memcmp(buf, "world", 5), 0);
	close(p[0]);
	close(p[1]);
	munmap(buf, HUGE_LEN);
	return NULL;
}

Test(ops_huge, read_of_4gib_is_not_eof, .timeout = 30)
{
	fl_test_run(read_huge_main, NULL);
}

static void *read_buf_wrap_main(void *arg)
{
	(void)arg;
	int p[2];
	char junk[64];
	struct fl_buf b = { 0 };
	memset(junk, 'x', sizeof(junk));
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	cr_assert_eq(write(p[1], junk, sizeof(junk)), (ssize_t)sizeof(junk));
	cr_assert_eq(fl_read_buf(p[0], &b, 8, 0, -1), 8);
	/* before: 8 + len wrapped to 3, the buffer did not grow and the
	 * read ran past its end (heap overflow) */
	cr_assert_eq(fl_read_buf(p[0], &b, SIZE_MAX - 4, 0, -1), -EOVERFLOW);
	/* before: cap doubled past 2^63 to 0 and looped for ever */
	cr_assert_eq(fl_read_buf(p[0], &b, ((size_t)1 << 63) + 1, 0, -1), -ENOMEM);
	cr_assert_eq(b.len, 8);
	cr_assert_eq(fl_read_buf(p[0], &b, 100, 0, -1), 56, "the data is still there");
	free(b.data);
	close(p[0]);
	close(p[1]);
	return NULL;
}

Test(ops_huge, read_buf_refuses_wrapping_lengths, .timeout = 10)
{
	fl_test_run(read_buf_wrap_main, NULL);
}

static void *chain_huge_main(void *arg)
{
	(void)arg;
	struct fl_chain_op op = { .kind = FL_CHAIN_WRITE, .fd = 1, .buf = "x", .len = HUGE_LEN };
	cr_assert_eq(fl_chain(&op, 1), -EINVAL);
	return NULL;
}

Test(ops_huge, chain_refuses_lengths_past_one_request, .timeout = 10)
{
	fl_test_run(chain_huge_main, NULL);
}
