/*
 * fuzz.h — what the libFuzzer harnesses share (`make fuzz`, not part of
 * `make test`): a private scratch directory and whole-file writes.
 */
#ifndef FUZZ_H
#define FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <ftw.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char fuzz_dir_path[64];

static inline int fuzz_rm(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

static inline void fuzz_dir_remove(void)
{
	nftw(fuzz_dir_path, fuzz_rm, 16, FTW_DEPTH | FTW_PHYS);
}

/* A directory of this fuzzer process's own under /dev/shm (or /tmp), made
 * on first use and removed at exit. Static lifetime. */
static inline const char *fuzz_dir(void)
{
	char *dir = fuzz_dir_path;
	if (!dir[0]) {
		atexit(fuzz_dir_remove);
		snprintf(dir, sizeof(fuzz_dir_path), "/dev/shm/loopstat-fuzz.XXXXXX");
		if (!mkdtemp(dir)) {
			snprintf(dir, sizeof(fuzz_dir_path), "/tmp/loopstat-fuzz.XXXXXX");
			if (!mkdtemp(dir))
				abort();
		}
	}
	return dir;
}

/* Replaces path's contents with data (a fresh file each time). */
static inline void fuzz_write(const char *path, const void *data, size_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		abort();
	if (size && write(fd, data, size) != (ssize_t)size)
		abort();
	close(fd);
}

#endif /* FUZZ_H */
