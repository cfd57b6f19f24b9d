/*
 * unwind_elf.c — the target's ELF objects, opened so that a hostile target
 * cannot hurt the profiler.
 *
 * libdwfl passes the path named in /proc/PID/maps, which the target's owner
 * controls: the file may since have become a FIFO (an open that blocks), a
 * symlink to anything root can read, a file the target truncates while it
 * is mapped (SIGBUS in libelf), or a sparse file whose header claims
 * millions of sections (libelf allocates per section at elf_begin). So:
 * - the mapped file itself is opened through /proc/PID/map_files/RANGE
 *   (needs CAP_CHECKPOINT_RESTORE, as root has); otherwise the path is
 *   resolved inside the target's root (openat2 RESOLVE_IN_ROOT) with
 *   O_NOFOLLOW, and its dev/inode must be the mapping's;
 * - every open is O_NONBLOCK and the result must be a regular file;
 * - the content is copied (bounded) into a sealed memfd that nobody else
 *   can shrink, and libdwfl maps that copy — unless only root can write
 *   the file, as with the system's libraries, which are mapped as they are;
 * - an object over UW_ELF_MAX_* is refused before libelf sees it.
 */
#include "unwind_int.h"
#include "probe_proc.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define UW_ELF_MAX_SIZE  (256ull << 20) /* bytes of one object */
#define UW_ELF_MAX_SHNUM 8192           /* sections of one object */
#define UW_ELF_MAX_PHNUM 1024           /* program headers of one object */

struct uw_map {
	uint64_t start, end;
	dev_t    dev;
	ino_t    ino;
	int      deleted; /* maps says " (deleted)" */
};

/* The first mapping of name inside [lo, hi) in pid's maps. */
static int uw_elf_mapping(pid_t pid, const char *name, uint64_t lo, uint64_t hi, struct uw_map *m)
{
	char path[128];
	int err = probe_proc_path(path, sizeof(path), "%d/maps", (int)pid);
	if (err < 0)
		return err;
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	char *line = NULL;
	size_t cap = 0;
	err = -ENOENT;
	while (getline(&line, &cap, f) > 0) {
		uint64_t s, e, ino;
		unsigned maj, min;
		int off = 0;
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %*s %*s %x:%x %" SCNu64 " %n", &s, &e, &maj, &min,
			   &ino, &off) < 5 || off == 0)
			continue;
		char *p = line + off;
		p[strcspn(p, "\n")] = '\0';
		size_t n = strlen(name);
		if (s < lo || s >= hi || ino == 0 || strncmp(p, name, n) != 0 ||
		    (p[n] && strcmp(p + n, " (deleted)") != 0))
			continue;
		*m = (struct uw_map){ .start = s, .end = e, .dev = makedev(maj, min), .ino = (ino_t)ino,
				     .deleted = p[n] != '\0' || strstr(name, " (deleted)") != NULL };
		err = 0;
		break;
	}
	free(line);
	fclose(f);
	return err;
}

/* name resolved inside pid's root, the last component not followed. */
static int uw_elf_open_in_root(pid_t pid, const char *name)
{
	char path[128];
	int err = probe_proc_path(path, sizeof(path), "%d/root", (int)pid);
	if (err < 0)
		return err;
	int root = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return -errno;
	struct open_how how = {
		.flags = O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	int fd = (int)syscall(SYS_openat2, root, name, &how, sizeof(how));
	err = fd < 0 ? -errno : fd;
	close(root);
	return err;
}

/* Opens the object mapped at m: a regular file, or -errno. */
static int uw_elf_open_mapped(pid_t pid, const char *name, const struct uw_map *m, struct stat *st)
{
	char path[160];
	int fd = -ENOENT;
	int err = probe_proc_path(path, sizeof(path), "%d/map_files/%" PRIx64 "-%" PRIx64, (int)pid,
				  m->start, m->end);
	if (err == 0) {
		/* a magic link to the mapped file itself: no name is involved */
		fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		if (fd < 0)
			fd = -errno;
	}
	int by_name = fd < 0;
	if (by_name) {
		if (m->deleted)
			return -ENOENT; /* gone from the file system: no name leads to it */
		fd = uw_elf_open_in_root(pid, name);
		if (fd < 0)
			return fd;
	}
	if (fstat(fd, st) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	/* through map_files the kernel gives the mapped file (on overlayfs
	 * its dev may differ from the one maps shows); by name, the file
	 * must be the one that is mapped */
	if (!S_ISREG(st->st_mode) || (by_name && (st->st_dev != m->dev || st->st_ino != m->ino))) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

static int uw_elf_copy(int src, int dst, uint64_t size)
{
	off_t off = 0;
	while ((uint64_t)off < size) {
		ssize_t n = sendfile(dst, src, &off, (size_t)(size - (uint64_t)off));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break; /* the file shrank: the header checks decide */
	}
	return (int)(off >= 0 ? 0 : -EIO);
}

static int uw_elf_pread(int fd, void *buf, size_t len, uint64_t off)
{
	ssize_t n = pread(fd, buf, len, (off_t)off);
	return n == (ssize_t)len ? 0 : -ENOEXEC;
}

/* The object's header against the caps, read from the sealed copy. */
int uw_elf_check(int fd, uint64_t size)
{
	unsigned char ident[EI_NIDENT];
	if (uw_elf_pread(fd, ident, sizeof(ident), 0) < 0 || memcmp(ident, ELFMAG, SELFMAG) != 0)
		return -ENOEXEC;
	uint64_t shoff, phoff, shnum, phnum, shent, phent, shdr_size, phdr_size;
	if (ident[EI_CLASS] == ELFCLASS64) {
		Elf64_Ehdr h;
		if (uw_elf_pread(fd, &h, sizeof(h), 0) < 0)
			return -ENOEXEC;
		shoff = h.e_shoff, phoff = h.e_phoff, shnum = h.e_shnum, phnum = h.e_phnum;
		shent = h.e_shentsize, phent = h.e_phentsize;
		shdr_size = sizeof(Elf64_Shdr), phdr_size = sizeof(Elf64_Phdr);
		if (shoff && (shnum == 0 || phnum == PN_XNUM)) { /* extended numbering in section 0 */
			Elf64_Shdr s0;
			if (uw_elf_pread(fd, &s0, sizeof(s0), shoff) < 0)
				return -ENOEXEC;
			if (shnum == 0)
				shnum = s0.sh_size;
			if (phnum == PN_XNUM)
				phnum = s0.sh_info;
		}
	} else if (ident[EI_CLASS] == ELFCLASS32) {
		Elf32_Ehdr h;
		if (uw_elf_pread(fd, &h, sizeof(h), 0) < 0)
			return -ENOEXEC;
		shoff = h.e_shoff, phoff = h.e_phoff, shnum = h.e_shnum, phnum = h.e_phnum;
		shent = h.e_shentsize, phent = h.e_phentsize;
		shdr_size = sizeof(Elf32_Shdr), phdr_size = sizeof(Elf32_Phdr);
		if (shoff && (shnum == 0 || phnum == PN_XNUM)) {
			Elf32_Shdr s0;
			if (uw_elf_pread(fd, &s0, sizeof(s0), shoff) < 0)
				return -ENOEXEC;
			if (shnum == 0)
				shnum = s0.sh_size;
			if (phnum == PN_XNUM)
				phnum = s0.sh_info;
		}
	} else {
		return -ENOEXEC;
	}
	if (shnum > UW_ELF_MAX_SHNUM || phnum > UW_ELF_MAX_PHNUM)
		return -EFBIG;
	if (shnum && (shent != shdr_size || shoff > size || shnum * shent > size - shoff))
		return -ENOEXEC;
	if (phnum && (phent != phdr_size || phoff > size || phnum * phent > size - phoff))
		return -ENOEXEC;
	return 0;
}

int uw_elf_open(pid_t pid, const char *name, uint64_t lo, uint64_t hi)
{
	struct uw_map m = { 0 };
	int err = uw_elf_mapping(pid, name, lo, hi, &m);
	if (err < 0)
		return err;
	struct stat st;
	int fd = uw_elf_open_mapped(pid, name, &m, &st);
	if (fd < 0)
		return fd;
	if ((uint64_t)st.st_size > UW_ELF_MAX_SIZE) {
		close(fd);
		return -EFBIG;
	}
	if (st.st_uid == 0 && !(st.st_mode & (S_IWGRP | S_IWOTH))) {
		/* only root can change it (the system's libraries): no copy,
		 * libdwfl maps it from the page cache as before */
		err = uw_elf_check(fd, (uint64_t)st.st_size);
		if (err < 0) {
			close(fd);
			return err;
		}
		return fd;
	}
	int copy = memfd_create("loopstat-elf", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (copy < 0) {
		err = -errno;
		goto close_fd;
	}
	err = uw_elf_copy(fd, copy, (uint64_t)st.st_size);
	if (err < 0)
		goto close_copy;
	struct stat cs;
	if (fstat(copy, &cs) < 0) {
		err = -errno;
		goto close_copy;
	}
	if (fcntl(copy, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0) {
		err = -errno;
		goto close_copy;
	}
	err = uw_elf_check(copy, (uint64_t)cs.st_size);
	if (err < 0)
		goto close_copy;
	close(fd);
	return copy;

close_copy:
	close(copy);
close_fd:
	close(fd);
	return err;
}
