/*
 * unwind_maps.c — what the unwinder reads from a target's maps beyond
 * libdwfl's modules: its executable ranges (file or anonymous: JIT code),
 * and its [vdso], taken from our own.
 *
 * libdwfl gives a module the span from its base to its last mapping, so a
 * file mapped twice far apart (node remaps V8's builtins next to its JIT
 * heap) claims the JIT code in between: only an address inside a mapping
 * of the file is the file's.
 *
 * The kernel maps the same vdso image into every process of an ABI, so
 * its CFI and symbols are ours to read, without touching the target's
 * memory (/proc/PID/mem is not our access rule). A thread spinning on
 * clock_gettime spends its time there; without the vdso's CFI its stack
 * ended at the first frame.
 */
#include "unwind_int.h"
#include "probe_proc.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <elf.h>
#include <libelf.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

static const char *vdso_image;  /* our vdso, copied once; never freed (shared by every Dwfl) */
static size_t vdso_size;
static pthread_once_t vdso_once = PTHREAD_ONCE_INIT;

static void vdso_load(void)
{
	const unsigned char *base = (const unsigned char *)getauxval(AT_SYSINFO_EHDR);
	if (!base || memcmp(base, ELFMAG, SELFMAG) != 0 || base[EI_CLASS] != ELFCLASS64)
		return;
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)base;
	/* the image ends with its section headers; a page or two in all */
	size_t size = (size_t)eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;
	if (eh->e_shoff == 0 || size > (1u << 20))
		return;
	char *copy = malloc(size);
	if (!copy)
		return;
	memcpy(copy, base, size);
	vdso_image = copy;
	vdso_size = size;
}

Elf *uw_vdso_elf(uint64_t lo, uint64_t hi)
{
	pthread_once(&vdso_once, vdso_load);
	/* a vdso of another size is another ABI's (a 32-bit target): not ours */
	if (!vdso_image || hi - lo < vdso_size || hi - lo > vdso_size + 65536)
		return NULL;
	elf_version(EV_CURRENT);
	return elf_memory((char *)vdso_image, vdso_size);
}

void uw_report_vdso(Dwfl *dwfl, const char *maps)
{
	const char *v = strstr(maps, " [vdso]\n");
	if (!v)
		return;
	while (v > maps && v[-1] != '\n')
		v--;
	unsigned long long lo, hi;
	if (sscanf(v, "%llx-%llx", &lo, &hi) == 2 && lo < hi)
		dwfl_report_module(dwfl, "[vdso]", lo, hi);
}

int uw_exec_parse(const char *maps, struct uw_exec **out, int *n)
{
	int cap = 0, k = 0;
	struct uw_exec *r = NULL;
	for (const char *l = maps; *l; ) {
		const char *nl = strchr(l, '\n');
		unsigned long long lo, hi, off, ino;
		char perms[8];
		int path = 0;
		if (sscanf(l, "%llx-%llx %7s %llx %*s %llu %n", &lo, &hi, perms, &off, &ino, &path) >= 5 &&
		    perms[2] == 'x' && lo < hi) {
			if (k == cap) {
				cap = cap ? cap * 2 : 64;
				struct uw_exec *g = realloc(r, (size_t)cap * sizeof(*g));
				if (!g) {
					free(r);
					return -ENOMEM;
				}
				r = g;
			}
			const char *p = path > 0 && (!nl || l + path < nl) ? l + path : "";
			r[k++] = (struct uw_exec){ lo, hi, off, ino, p[0] == '/' || strncmp(p, "[vdso]", 6) == 0 };
		}
		if (!nl)
			break;
		l = nl + 1;
	}
	free(*out);
	*out = r;
	*n = k;
	return 0;
}

const struct uw_exec *uw_exec_find(const struct uw_exec *r, int n, uint64_t addr)
{
	int lo = 0, hi = n;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		if (r[mid].hi <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && r[lo].lo <= addr ? &r[lo] : NULL;
}

uint64_t uw_exec_canonical(const struct uw_exec *r, int n, const struct uw_exec *x, uint64_t addr)
{
	if (!x->file || !x->ino)
		return addr;
	for (int i = 0; i < n && &r[i] != x; i++)
		if (r[i].ino == x->ino)
			return addr - x->lo + x->off - r[i].off + r[i].lo;
	return addr;
}

ssize_t uw_maps_read(pid_t pid, char **buf, size_t *cap)
{
	char path[128];
	int err = probe_proc_path(path, sizeof(path), "%d/maps", (int)pid);
	if (err < 0)
		return err;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	size_t len = 0;
	for (;;) {
		if (*cap - len < 4096) {
			size_t grown = *cap ? *cap * 2 : 16384;
			char *m = realloc(*buf, grown);
			if (!m) {
				close(fd);
				return -ENOMEM;
			}
			*buf = m;
			*cap = grown;
		}
		ssize_t n = read(fd, *buf + len, *cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = errno == ENOENT ? -ESRCH : -errno;
			close(fd);
			return err;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	(*buf)[len] = '\0';
	return len == 0 ? -ESRCH : (ssize_t)len; /* a zombie has no maps */
}

uint64_t uw_fnv1a(const char *s, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
	return h;
}
