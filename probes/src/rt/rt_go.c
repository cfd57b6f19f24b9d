/*
 * rt_go.c — a Go executable from outside: its .go.buildinfo section (kept
 * by -ldflags=-s -w), and where its runtime keeps GOMAXPROCS.
 *
 * The file is the one the process runs (/proc/PID/exe), read with pread
 * and bounded: a hostile binary may claim any number of sections or a
 * string table of gigabytes. Only 64-bit little-endian ELF is read.
 * runtime.gomaxprocs is an int32 in .noptrbss; a non-PIE executable (Go's
 * default on linux) has it at its link address. A PIE one is left to the
 * environment and the affinity, which is what its runtime started from.
 */
#include "probe_rt.h"
#include "probe_proc.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define GO_MAX_SHNUM   4096
#define GO_MAX_STRTAB  (64u << 20)  /* .strtab bytes read at most */
#define GO_SYM_CHUNK   512          /* symbols per pread */

static int pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	ssize_t r = pread(fd, buf, len, (off_t)off);
	if (r < 0)
		return -errno;
	return (size_t)r == len ? 0 : -ENOEXEC;
}

struct go_elf {
	int fd;
	uint64_t size;
	Elf64_Ehdr eh;
	Elf64_Shdr *sh;     /* eh.e_shnum section headers, owned */
	char *shstr;        /* the section names, owned */
	uint64_t shstr_len;
};

static void go_elf_done(struct go_elf *e)
{
	free(e->sh);
	free(e->shstr);
	if (e->fd >= 0)
		close(e->fd);
}

static int go_elf_open(pid_t pid, struct go_elf *e)
{
	char path[128];
	struct stat st;
	memset(e, 0, sizeof(*e));
	e->fd = -1;
	int err = probe_proc_path(path, sizeof(path), "%d/exe", (int)pid);
	if (err < 0)
		return err;
	e->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (e->fd < 0)
		return -errno;
	if (fstat(e->fd, &st) < 0 || !S_ISREG(st.st_mode))
		return -ENOEXEC;
	e->size = (uint64_t)st.st_size;
	if ((err = pread_all(e->fd, &e->eh, sizeof(e->eh), 0)) < 0)
		return err;
	if (memcmp(e->eh.e_ident, ELFMAG, SELFMAG) || e->eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    e->eh.e_ident[EI_DATA] != ELFDATA2LSB || e->eh.e_shentsize != sizeof(Elf64_Shdr) ||
	    e->eh.e_shnum == 0 || e->eh.e_shnum > GO_MAX_SHNUM || e->eh.e_shstrndx >= e->eh.e_shnum ||
	    e->eh.e_shoff > e->size || (uint64_t)e->eh.e_shnum * sizeof(Elf64_Shdr) > e->size - e->eh.e_shoff)
		return -ENOEXEC;
	e->sh = calloc(e->eh.e_shnum, sizeof(Elf64_Shdr));
	if (!e->sh)
		return -ENOMEM;
	if ((err = pread_all(e->fd, e->sh, e->eh.e_shnum * sizeof(Elf64_Shdr), e->eh.e_shoff)) < 0)
		return err;
	const Elf64_Shdr *ss = &e->sh[e->eh.e_shstrndx];
	if (ss->sh_size == 0 || ss->sh_size > 1u << 20 || ss->sh_offset > e->size || ss->sh_size > e->size - ss->sh_offset)
		return -ENOEXEC;
	e->shstr_len = ss->sh_size;
	if (!(e->shstr = malloc(ss->sh_size + 1)))
		return -ENOMEM;
	e->shstr[ss->sh_size] = '\0';
	return pread_all(e->fd, e->shstr, ss->sh_size, ss->sh_offset);
}

static const Elf64_Shdr *go_elf_section(const struct go_elf *e, const char *name)
{
	for (unsigned i = 0; i < e->eh.e_shnum; i++)
		if (e->sh[i].sh_name < e->shstr_len && !strcmp(e->shstr + e->sh[i].sh_name, name))
			return &e->sh[i];
	return NULL;
}

/* runtime.gomaxprocs and runtime.ncpu from .symtab, when there is one. */
static int go_elf_symbols(const struct go_elf *e, struct probe_rt_proc *out)
{
	const Elf64_Shdr *sym = go_elf_section(e, ".symtab");
	if (!sym || sym->sh_entsize != sizeof(Elf64_Sym) || sym->sh_link >= e->eh.e_shnum ||
	    sym->sh_offset > e->size || sym->sh_size > e->size - sym->sh_offset)
		return 0;
	const Elf64_Shdr *str = &e->sh[sym->sh_link];
	if (str->sh_size == 0 || str->sh_size > GO_MAX_STRTAB || str->sh_offset > e->size ||
	    str->sh_size > e->size - str->sh_offset)
		return 0;
	char *names = malloc(str->sh_size + 1);
	Elf64_Sym *chunk = malloc(GO_SYM_CHUNK * sizeof(Elf64_Sym));
	int err = names && chunk ? pread_all(e->fd, names, str->sh_size, str->sh_offset) : -ENOMEM;
	uint64_t nsym = sym->sh_size / sizeof(Elf64_Sym);
	for (uint64_t i = 0; err == 0 && i < nsym && !(out->gomaxprocs_addr && out->ncpu_addr); i += GO_SYM_CHUNK) {
		uint64_t n = nsym - i < GO_SYM_CHUNK ? nsym - i : GO_SYM_CHUNK;
		if ((err = pread_all(e->fd, chunk, n * sizeof(Elf64_Sym), sym->sh_offset + i * sizeof(Elf64_Sym))) < 0)
			break;
		names[str->sh_size] = '\0';
		for (uint64_t k = 0; k < n; k++) {
			const Elf64_Sym *s = &chunk[k];
			if (ELF64_ST_TYPE(s->st_info) != STT_OBJECT || s->st_size != 4 || s->st_name >= str->sh_size)
				continue;
			const char *nm = names + s->st_name;
			if (!strcmp(nm, "runtime.gomaxprocs"))
				out->gomaxprocs_addr = s->st_value;
			else if (!strcmp(nm, "runtime.ncpu"))
				out->ncpu_addr = s->st_value;
		}
	}
	free(chunk);
	free(names);
	if (!out->ncpu_addr)
		out->gomaxprocs_addr = 0; /* no validation: not believed */
	return err;
}

int probe_rt_go_exe(pid_t pid, struct probe_rt_proc *out)
{
	struct go_elf e;
	int err = go_elf_open(pid, &e);
	if (err == 0 && go_elf_section(&e, ".go.buildinfo")) {
		out->rt = PROBE_RT_GO;
		/* a PIE's link address is not where it runs: left to the fallbacks */
		if (e.eh.e_type == ET_EXEC)
			go_elf_symbols(&e, out);
		err = 1;
	} else if (err == -ENOEXEC) {
		err = 0;
	}
	go_elf_done(&e);
	return err;
}

static int read_i32(pid_t pid, uint64_t addr, int32_t *v)
{
	struct iovec l = { .iov_base = v, .iov_len = sizeof(*v) };
	struct iovec r = { .iov_base = (void *)(uintptr_t)addr, .iov_len = sizeof(*v) };
	ssize_t n = process_vm_readv(pid, &l, 1, &r, 1, 0);
	return n == (ssize_t)sizeof(*v) ? 0 : n < 0 ? -errno : -EFAULT;
}

/* GOMAXPROCS=N in the process's environment (the value its runtime read). */
static int env_gomaxprocs(pid_t pid)
{
	char path[128], buf[32768];
	if (probe_proc_path(path, sizeof(path), "%d/environ", (int)pid) < 0)
		return 0;
	ssize_t n = probe_read_file(path, buf, sizeof(buf));
	for (ssize_t i = 0; n > 0 && i < n; i += (ssize_t)strlen(buf + i) + 1)
		if (!strncmp(buf + i, "GOMAXPROCS=", 11)) {
			long v = strtol(buf + i + 11, NULL, 10);
			return v >= 1 && v <= PROBE_RT_MAX_CAPACITY ? (int)v : 0;
		}
	return 0;
}

int probe_rt_go_capacity(pid_t pid, struct probe_rt_proc *p)
{
	if (p->gomaxprocs_addr) {
		int32_t v = 0, ncpu = 0;
		int err = read_i32(pid, p->gomaxprocs_addr, &v);
		if (err == -ESRCH)
			return err;
		if (err == 0 && read_i32(pid, p->ncpu_addr, &ncpu) == 0 && v >= 1 && v <= PROBE_RT_MAX_CAPACITY &&
		    ncpu >= 1 && ncpu <= 4096) {
			p->capacity = v;
			p->from = PROBE_RT_CAP_SYMBOL;
			return 0;
		}
	}
	int v = env_gomaxprocs(pid);
	if (v) {
		p->capacity = v;
		p->from = PROBE_RT_CAP_ENV;
		return 0;
	}
	cpu_set_t set;
	if (sched_getaffinity(pid, sizeof(set), &set) < 0)
		return -errno;
	p->capacity = CPU_COUNT(&set);
	p->from = PROBE_RT_CAP_AFFINITY;
	return 0;
}
