/*
 * unwind_elf.c — the target's ELF objects, opened so that a hostile target
 * cannot hurt the profiler (nor, through it, the sampler or the host).
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
 * - the header is checked first (a few preads): an object over the caps
 *   (UW_ELF_MAX_*) or whose sections libdwfl reads (symbols, strings,
 *   CFI, notes, anything it would decompress) exceed UW_ELF_MAX_NEED is
 *   refused before libelf sees it; so is one carrying .gnu_debugdata,
 *   whose xz content may inflate without bound;
 * - unless only root can write the file (the system's libraries, handed
 *   to libdwfl as they are), only what libdwfl reads of the object is
 *   copied, at open (a sparse 256-MB file must cost nothing, and a file
 *   cut afterwards must not unname what was read), under a budget per run
 *   (unwind_map.c).
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
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define UW_ELF_MAX_SIZE  (256ull << 20) /* bytes of one object */
#define UW_ELF_MAX_SHNUM 8192           /* sections of one object */
#define UW_ELF_MAX_PHNUM 1024           /* program headers of one object */
#define UW_ELF_MAX_NAMES (1u << 20)     /* bytes of the section-name table */

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

static int uw_elf_pread(int fd, void *buf, size_t len, uint64_t off)
{
	ssize_t n = pread(fd, buf, len, (off_t)off);
	return n == (ssize_t)len ? 0 : -ENOEXEC;
}

/* The header fields the checks need, for either class. */
struct uw_ehdr {
	int      is64;
	uint64_t type, shoff, phoff, shnum, phnum, shent, phent, shstrndx;
};

struct uw_shdr {
	uint64_t name, type, flags, offset, size;
};

static int uw_elf_shdr(int fd, const struct uw_ehdr *h, uint64_t i, struct uw_shdr *s)
{
	uint64_t at = h->shoff + i * h->shent;
	if (h->is64) {
		Elf64_Shdr x;
		if (uw_elf_pread(fd, &x, sizeof(x), at) < 0)
			return -ENOEXEC;
		*s = (struct uw_shdr){ x.sh_name, x.sh_type, x.sh_flags, x.sh_offset, x.sh_size };
	} else {
		Elf32_Shdr x;
		if (uw_elf_pread(fd, &x, sizeof(x), at) < 0)
			return -ENOEXEC;
		*s = (struct uw_shdr){ x.sh_name, x.sh_type, x.sh_flags, x.sh_offset, x.sh_size };
	}
	return 0;
}

/* Reads the ELF header; section 0 supplies the counts and the name table's
 * index under extended numbering. */
static int uw_elf_header(int fd, struct uw_ehdr *h)
{
	unsigned char ident[EI_NIDENT];
	if (uw_elf_pread(fd, ident, sizeof(ident), 0) < 0 || memcmp(ident, ELFMAG, SELFMAG) != 0)
		return -ENOEXEC;
	if (ident[EI_CLASS] == ELFCLASS64) {
		Elf64_Ehdr e;
		if (uw_elf_pread(fd, &e, sizeof(e), 0) < 0)
			return -ENOEXEC;
		*h = (struct uw_ehdr){ 1, e.e_type, e.e_shoff, e.e_phoff, e.e_shnum, e.e_phnum,
				       e.e_shentsize, e.e_phentsize, e.e_shstrndx };
	} else if (ident[EI_CLASS] == ELFCLASS32) {
		Elf32_Ehdr e;
		if (uw_elf_pread(fd, &e, sizeof(e), 0) < 0)
			return -ENOEXEC;
		*h = (struct uw_ehdr){ 0, e.e_type, e.e_shoff, e.e_phoff, e.e_shnum, e.e_phnum,
				       e.e_shentsize, e.e_phentsize, e.e_shstrndx };
	} else {
		return -ENOEXEC;
	}
	if (h->shoff && (h->shnum == 0 || h->phnum == PN_XNUM || h->shstrndx == SHN_XINDEX)) {
		uint64_t sh_size, sh_info, sh_link;
		if (h->is64) {
			Elf64_Shdr s0;
			if (uw_elf_pread(fd, &s0, sizeof(s0), h->shoff) < 0)
				return -ENOEXEC;
			sh_size = s0.sh_size, sh_info = s0.sh_info, sh_link = s0.sh_link;
		} else {
			Elf32_Shdr s0;
			if (uw_elf_pread(fd, &s0, sizeof(s0), h->shoff) < 0)
				return -ENOEXEC;
			sh_size = s0.sh_size, sh_info = s0.sh_info, sh_link = s0.sh_link;
		}
		if (h->shnum == 0)
			h->shnum = sh_size;
		if (h->phnum == PN_XNUM)
			h->phnum = sh_info;
		if (h->shstrndx == SHN_XINDEX)
			h->shstrndx = sh_link;
	}
	return 0;
}

/* The object's header against the caps. */
int uw_elf_check(int fd, uint64_t size)
{
	struct uw_ehdr h;
	int err = uw_elf_header(fd, &h);
	if (err < 0)
		return err;
	uint64_t phdr_size = h.is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr);
	uint64_t shdr_size = h.is64 ? sizeof(Elf64_Shdr) : sizeof(Elf32_Shdr);
	if (h.shnum > UW_ELF_MAX_SHNUM || h.phnum > UW_ELF_MAX_PHNUM)
		return -EFBIG;
	if (h.shnum && (h.shent != shdr_size || h.shoff > size || h.shnum * h.shent > size - h.shoff))
		return -ENOEXEC;
	if (h.phnum && (h.phent != phdr_size || h.phoff > size || h.phnum * h.phent > size - h.phoff))
		return -ENOEXEC;
	return 0;
}

/* What libdwfl keeps of a section: what it reads (symbols, strings, notes,
 * CFI) or inflates (a compressed section: its declared size). */
static int uw_elf_section_need(int fd, const struct uw_ehdr *h, const struct uw_shdr *s, const char *name,
			       uint64_t *need)
{
	if (strcmp(name, ".gnu_debugdata") == 0)
		return -EFBIG;
	*need = 0;
	if (s->type == SHT_NOBITS)
		return 0;
	if (s->flags & SHF_COMPRESSED) {
		uint64_t ch_size;
		if (h->is64) {
			Elf64_Chdr c;
			if (uw_elf_pread(fd, &c, sizeof(c), s->offset) < 0)
				return -ENOEXEC;
			ch_size = c.ch_size;
		} else {
			Elf32_Chdr c;
			if (uw_elf_pread(fd, &c, sizeof(c), s->offset) < 0)
				return -ENOEXEC;
			ch_size = c.ch_size;
		}
		*need = ch_size > s->size ? ch_size : s->size;
		return 0;
	}
	switch (s->type) {
	case SHT_SYMTAB: case SHT_DYNSYM: case SHT_STRTAB: case SHT_NOTE:
	case SHT_HASH: case SHT_GNU_HASH: case SHT_DYNAMIC: case SHT_X86_64_UNWIND:
		*need = s->size;
		return 0;
	}
	if (strcmp(name, ".eh_frame") == 0 || strcmp(name, ".eh_frame_hdr") == 0 ||
	    strcmp(name, ".debug_frame") == 0)
		*need = s->size;
	return 0;
}

static int uw_span_add(struct uw_spans *w, uint64_t off, uint64_t len)
{
	if (!w || !len)
		return 0;
	if (w->n == UW_ELF_SPANS)
		return -EFBIG;
	w->v[w->n].off = off;
	w->v[w->n].len = len;
	w->n++;
	return 0;
}

int uw_elf_need(int fd, uint64_t size, uint64_t *need, struct uw_spans *where)
{
	int err = uw_elf_check(fd, size);
	if (err < 0)
		return err;
	struct uw_ehdr h;
	uw_elf_header(fd, &h);
	if (h.type != ET_EXEC && h.type != ET_DYN)
		return -ENOEXEC; /* what a process maps; nothing libdwfl would relocate */
	uint64_t total = h.shnum * h.shent + h.phnum * h.phent;
	if (where)
		where->n = 0;
	uw_span_add(where, 0, h.is64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr));
	uw_span_add(where, h.phoff, h.phnum * h.phent);
	uw_span_add(where, h.shoff, h.shnum * h.shent);
	char *names = NULL;
	uint64_t nlen = 0;
	if (h.shnum && h.shstrndx < h.shnum) {
		struct uw_shdr t;
		if ((err = uw_elf_shdr(fd, &h, h.shstrndx, &t)) < 0)
			return err;
		if (t.type != SHT_NOBITS && t.size) {
			if (t.size > UW_ELF_MAX_NAMES)
				return -EFBIG;
			nlen = t.size;
			names = malloc(nlen + 1);
			if (!names)
				return -ENOMEM;
			if (uw_elf_pread(fd, names, nlen, t.offset) < 0) {
				free(names);
				return -ENOEXEC;
			}
			names[nlen] = '\0';
		}
	}
	for (uint64_t i = 1; i < h.shnum && total <= UW_ELF_MAX_NEED; i++) {
		struct uw_shdr s;
		uint64_t n;
		if ((err = uw_elf_shdr(fd, &h, i, &s)) < 0)
			break;
		const char *name = names && s.name < nlen ? names + s.name : "";
		if ((err = uw_elf_section_need(fd, &h, &s, name, &n)) < 0)
			break;
		total += n;
		if (n && (err = uw_span_add(where, s.offset, s.size)) < 0)
			break;
	}
	free(names);
	if (err < 0)
		return err;
	if (total > UW_ELF_MAX_NEED)
		return -EFBIG;
	*need = total;
	return 0;
}

int uw_elf_open(pid_t pid, const char *name, uint64_t lo, uint64_t hi, const void *owner, Elf **elfp)
{
	*elfp = NULL;
	struct uw_map m = { 0 };
	int err = uw_elf_mapping(pid, name, lo, hi, &m);
	if (err < 0)
		return err;
	struct stat st;
	int fd = uw_elf_open_mapped(pid, name, &m, &st);
	if (fd < 0)
		return fd;
	if ((uint64_t)st.st_size > UW_ELF_MAX_SIZE) {
		err = -EFBIG;
		goto close_fd;
	}
	if (st.st_uid == 0 && !(st.st_mode & (S_IWGRP | S_IWOTH))) {
		/* only root can change it (the system's libraries): libdwfl
		 * maps it from the page cache as before */
		err = uw_elf_check(fd, (uint64_t)st.st_size);
		if (err < 0)
			goto close_fd;
		return fd;
	}
	uint64_t need;
	struct uw_spans where;
	err = uw_elf_need(fd, (uint64_t)st.st_size, &need, &where);
	if (err == 0)
		err = uw_map_object(fd, (uint64_t)st.st_size, need, &where, owner, lo, elfp);
close_fd:
	close(fd);
	return err;
}
