/* loopstat profile as root against a target of another user that swaps its mapped object for a FIFO, a symlink to a FIFO, a truncated or a sparse 16M-section ELF: bounded time, memory, exit 0, "[unreadable object]". */
#include <criterion/criterion.h>

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "unwind/unwind_int.h"

#include <sys/mman.h>

#include "support/support.h"
#include "support/users.h"

/* The object the target maps and then turns against the profiler: its
 * frames sit on the target's stack, so profile must look it up. */
static const char lib_src[] =
	"#include <time.h>\n#include <unistd.h>\n"
	"__attribute__((noinline)) int hostile_block(int fd)\n"
	"{ char c; int r = (int)read(fd, &c, 1); __asm__ volatile(\"\" ::: \"memory\"); return r; }\n"
	/* no PLT or GOT on this path: once the object is cut after its text,
	 * the target keeps running it */
	"static void nap(void)\n{ struct timespec ts; ts.tv_sec = 0; ts.tv_nsec = 1000000;\n"
	"#ifdef __x86_64__\n"
	"  long r; __asm__ volatile(\"syscall\" : \"=a\"(r) : \"0\"(35L), \"D\"(&ts), \"S\"(0L) : \"rcx\", \"r11\", \"memory\");\n"
	"#else\n  nanosleep(&ts, 0);\n#endif\n}\n"
	"__attribute__((noinline)) int hostile_nap(int depth)\n"
	"{ if (depth > 0) { int r = hostile_nap(depth - 1); __asm__ volatile(\"\" ::: \"memory\"); return r + 1; }\n"
	"  nap(); return 0; }\n";

/* target MODE LIB [FIFO]: maps LIB, does MODE's harm, says "ready", then
 * blocks in read (or naps at varying depths, so that every sample is a
 * fresh unwind through LIB's CFI) inside LIB. */
static const char target_src[] =
	"#include <dlfcn.h>\n#include <elf.h>\n#include <fcntl.h>\n#include <stdio.h>\n"
	"#include <string.h>\n#include <sys/stat.h>\n#include <unistd.h>\n"
	"int main(int argc, char **argv)\n{\n"
	"  if (argc < 3) return 9;\n"
	"  const char *mode = argv[1], *lib = argv[2];\n"
	"  void *h = dlopen(lib, RTLD_NOW);\n  if (!h) return 10;\n"
	"  int (*block)(int) = (int (*)(int))dlsym(h, \"hostile_block\");\n"
	"  int (*nap)(int) = (int (*)(int))dlsym(h, \"hostile_nap\");\n"
	/* maps then names \"LIB (deleted)\": that name too is the target's to make */
	"  char gone[4200]; snprintf(gone, sizeof(gone), \"%s (deleted)\", lib);\n"
	"  if (!strcmp(mode, \"fifo\")) { unlink(lib); if (mkfifo(lib, 0644) || mkfifo(gone, 0644)) return 11; }\n"
	"  if (!strcmp(mode, \"symlink\")) { unlink(lib); if (symlink(argv[3], lib) || symlink(argv[3], gone)) return 12; }\n"
	"  if (!strcmp(mode, \"sections\")) {\n"
	"    int fd = open(lib, O_RDWR); Elf64_Ehdr e; Elf64_Shdr s0;\n"
	"    if (fd < 0 || pread(fd, &e, sizeof(e), 0) != sizeof(e)) return 13;\n"
	"    if (pread(fd, &s0, sizeof(s0), e.e_shoff) != sizeof(s0)) return 13;\n"
	"    s0.sh_size = 16u << 20; e.e_shnum = 0;\n"
	"    if (pwrite(fd, &s0, sizeof(s0), e.e_shoff) != sizeof(s0)) return 14;\n"
	"    if (pwrite(fd, &e, sizeof(e), 0) != sizeof(e)) return 14;\n"
	"    if (ftruncate(fd, e.e_shoff + (16ull << 20) * sizeof(s0))) return 15;\n"
	"    close(fd);\n  }\n"
	"  printf(\"ready\\n\"); fflush(stdout);\n"
	"  if (!strcmp(mode, \"truncate\")) for (unsigned i = 0;; i++) nap(i % 8);\n"
	"  return block(0);\n}\n";

static struct ts_user user;
static char *dir;
static char lib[256], target[256];

static void compile(const char *src, const char *name, const char *out, int shared)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	cr_assert_eq(ts_write_file(path, src, strlen(src)), 0);
	char *argv_so[] = { "/usr/bin/cc", "-shared", "-fPIC", "-O0", "-fno-omit-frame-pointer", "-o", (char *)out, path, NULL };
	char *argv_ex[] = { "/usr/bin/cc", "-O0", "-o", (char *)out, path, NULL };
	char *text = NULL;
	int rc = ts_run(shared ? argv_so : argv_ex, &text, 60000);
	cr_assert_eq(rc, 0, "cc %s: %s", name, text ? text : "");
	free(text);
}

static void setup(void)
{
	ts_user_add(&user);
	dir = ts_tmpdir("profile-hostile");
	cr_assert_eq(chmod(dir, 0755), 0);
	snprintf(lib, sizeof(lib), "%s/libhostile.so", dir);
	snprintf(target, sizeof(target), "%s/target", dir);
	compile(lib_src, "lib.c", lib, 1);
	compile(target_src, "target.c", target, 0);
	/* the target's owner owns the directory and the object */
	cr_assert_eq(chown(dir, user.uid, user.gid), 0);
	cr_assert_eq(chown(lib, user.uid, user.gid), 0);
}

static void teardown(void)
{
	if (dir) {
		char priv[300];
		snprintf(priv, sizeof(priv), "%s.root", dir);
		ts_rmtree_free(strdup(priv)); /* the symlink case's root-only FIFO */
		ts_rmtree_free(dir);
	}
	dir = NULL;
	ts_user_del(&user);
}

TestSuite(profile_hostile, .init = setup, .fini = teardown, .timeout = 90);

struct target {
	pid_t pid;
	int   in;  /* its stdin: never written, so it stays blocked */
	int   out; /* its stdout */
};

static struct target start_target(const char *mode, const char *extra)
{
	int in[2], out[2];
	cr_assert_eq(pipe(in), 0);
	cr_assert_eq(pipe(out), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		if (ts_become(&user) < 0)
			_exit(120);
		execl(target, target, mode, lib, extra, (char *)NULL);
		_exit(121);
	}
	close(in[0]);
	close(out[1]);
	char buf[16] = "";
	ssize_t n = read(out[0], buf, sizeof(buf) - 1);
	if (n <= 0) {
		int st = 0;
		waitpid(pid, &st, 0);
		cr_assert_fail("target %s did not start (status %#x)", mode, st);
	}
	cr_assert(strstr(buf, "ready"), "target said '%s'", buf);
	usleep(100 * 1000); /* into its read or nap */
	return (struct target){ pid, in[1], out[0] };
}

static void stop_target(struct target *t)
{
	kill(t->pid, SIGKILL);
	waitpid(t->pid, NULL, 0);
	close(t->in);
	close(t->out);
}

struct run {
	int   status;   /* wait status; -1: killed after the bound */
	long  maxrss_kb;
	long long ms;
	char *out;      /* owned */
};

/* Where the object's end of text is: the target keeps running the code
 * below it while the rest (CFI, symbols, section headers) goes away. */
static off_t text_end(void)
{
	int fd = open(lib, O_RDONLY);
	cr_assert_geq(fd, 0);
	Elf64_Ehdr e;
	cr_assert_eq(pread(fd, &e, sizeof(e), 0), (ssize_t)sizeof(e));
	off_t end = 0;
	for (int i = 0; i < e.e_phnum; i++) {
		Elf64_Phdr p;
		cr_assert_eq(pread(fd, &p, sizeof(p), (off_t)(e.e_phoff + (uint64_t)i * sizeof(p))), (ssize_t)sizeof(p));
		if (p.p_type == PT_LOAD && (p.p_flags & PF_X))
			end = (off_t)((p.p_offset + p.p_filesz + 4095) & ~4095ull);
	}
	close(fd);
	cr_assert_gt(end, 0);
	return end;
}

/* Whether pid has lib mapped: profile's libdw mapping it in place. */
static int maps_lib(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	char *text = ts_read_file(path);
	int yes = text && strstr(text, lib);
	free(text);
	return yes;
}

/* Runs root's (as_user: the target's owner's) `loopstat profile -p PID
 * --duration 1`, killed after 20 s; truncate_it: cut the object once
 * profile has it (or after 1 s). */
static struct run profile_as(pid_t pid, int truncate_it, int as_user)
{
	int out[2];
	cr_assert_eq(pipe(out), 0);
	char pidarg[16];
	snprintf(pidarg, sizeof(pidarg), "%d", (int)pid);
	long long t0 = ts_now_ms();
	pid_t c = fork();
	cr_assert_geq(c, 0);
	if (c == 0) {
		dup2(out[1], 1);
		dup2(out[1], 2);
		if (as_user && ts_become(&user) < 0)
			_exit(126);
		execl(ts_loopstat_bin(), "loopstat", "profile", "-p", pidarg, "--duration", "1", (char *)NULL);
		_exit(127);
	}
	close(out[1]);
	fcntl(out[0], F_SETFL, O_NONBLOCK);
	struct run r = { .status = -1 };
	size_t len = 0, cap = 65536;
	r.out = calloc(1, cap);
	int cut = !truncate_it;
	for (;;) {
		ssize_t n = read(out[0], r.out + len, cap - 1 - len);
		if (n > 0)
			len += (size_t)n;
		if (!cut && (maps_lib(c) || ts_now_ms() - t0 > 1000)) {
			cr_assert_eq(truncate(lib, text_end()), 0, "truncate: %s", strerror(errno));
			cut = 1;
		}
		struct rusage ru;
		int st;
		pid_t w = wait4(c, &st, WNOHANG, &ru);
		if (w == c) {
			while ((n = read(out[0], r.out + len, cap - 1 - len)) > 0)
				len += (size_t)n;
			r.status = st;
			r.maxrss_kb = ru.ru_maxrss;
			break;
		}
		if (ts_now_ms() - t0 > 20000) {
			kill(c, SIGKILL);
			waitpid(c, NULL, 0);
			break;
		}
		usleep(1000);
	}
	r.ms = ts_now_ms() - t0;
	close(out[0]);
	return r;
}

static struct run profile(pid_t pid, int truncate_it)
{
	return profile_as(pid, truncate_it, 0);
}

static void assert_bounded(const struct run *r, const char *what)
{
	cr_assert_neq(r->status, -1, "%s: profile still running after 20 s", what);
	cr_assert(WIFEXITED(r->status), "%s: profile died of signal %d:\n%s", what,
		  WIFSIGNALED(r->status) ? WTERMSIG(r->status) : 0, r->out);
	cr_assert_eq(WEXITSTATUS(r->status), 0, "%s: exit %d:\n%s", what, WEXITSTATUS(r->status), r->out);
	cr_assert_lt(r->ms, 15000, "%s: %lld ms", what, r->ms);
	cr_assert_lt(r->maxrss_kb, 256 * 1024, "%s: max RSS %ld kB", what, r->maxrss_kb);
}

static void hostile_case(const char *mode, const char *extra)
{
	struct target t = start_target(mode, extra);
	struct run r = profile(t.pid, 0);
	stop_target(&t);
	assert_bounded(&r, mode);
	cr_assert(strstr(r.out, "[unreadable object]"), "%s: no unreadable frame in:\n%s", mode, r.out);
	cr_assert_null(strstr(r.out, "hostile_block"), "%s: symbols of a refused object:\n%s", mode, r.out);
	free(r.out);
}

Test(profile_hostile, fifo_in_place_of_the_object_never_hangs)
{
	hostile_case("fifo", NULL);
}

Test(profile_hostile, symlink_to_a_root_fifo_is_not_followed)
{
	/* a FIFO only root can reach: following the link would open it */
	char priv[256], fifo[300];
	snprintf(priv, sizeof(priv), "%s.root", dir);
	cr_assert_eq(mkdir(priv, 0700), 0);
	snprintf(fifo, sizeof(fifo), "%s/fifo", priv);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	hostile_case("symlink", fifo);
}

Test(profile_hostile, sparse_elf_claiming_16m_sections_costs_nothing)
{
	hostile_case("sections", NULL);
}

Test(profile_hostile, object_truncated_while_mapped_does_not_kill_profile)
{
	struct target t = start_target("truncate", NULL);
	struct run r = profile(t.pid, 1);
	stop_target(&t);
	assert_bounded(&r, "truncate");
	/* the copy taken before the cut still names the object's frames */
	cr_assert(strstr(r.out, "hostile_nap") || strstr(r.out, "[unreadable object]"), "%s", r.out);
	free(r.out);
}

Test(profile_hostile, an_ordinary_object_keeps_its_symbols)
{
	struct target t = start_target("plain", NULL);
	struct run r = profile(t.pid, 0);
	stop_target(&t);
	assert_bounded(&r, "plain");
	cr_assert(strstr(r.out, "hostile_block"), "%s", r.out);
	cr_assert_null(strstr(r.out, "[unreadable object]"), "%s", r.out);
	free(r.out);
}

/* Without root there is no map_files: the maps path is opened inside the
 * target's root and must still be the mapped file. */
Test(profile_hostile, without_root_objects_open_by_name_and_fifos_still_never_hang)
{
	struct target t = start_target("plain", NULL);
	struct run r = profile_as(t.pid, 0, 1);
	stop_target(&t);
	assert_bounded(&r, "plain, as the user");
	cr_assert(strstr(r.out, "hostile_block"), "%s", r.out);
	free(r.out);

	t = start_target("fifo", NULL);
	r = profile_as(t.pid, 0, 1);
	stop_target(&t);
	assert_bounded(&r, "fifo, as the user");
	cr_assert(strstr(r.out, "[unreadable object]"), "%s", r.out);
	free(r.out);
}

/* A 64-bit ELF header in a real (memory) file: e_shnum, e_phnum as given,
 * section 0 holding sh_size/sh_info (extended numbering), sections at
 * 4096, the file size_ bytes long. Returns the fd. */
static int craft_elf(uint16_t shnum, uint16_t phnum, uint64_t s0_size, uint32_t s0_info, off_t size_)
{
	int fd = memfd_create("crafted-elf", MFD_CLOEXEC);
	cr_assert_geq(fd, 0);
	Elf64_Ehdr e = { .e_type = ET_DYN, .e_machine = EM_X86_64, .e_version = EV_CURRENT,
			 .e_phoff = sizeof(Elf64_Ehdr), .e_shoff = 4096, .e_ehsize = sizeof(Elf64_Ehdr),
			 .e_phentsize = sizeof(Elf64_Phdr), .e_phnum = phnum,
			 .e_shentsize = sizeof(Elf64_Shdr), .e_shnum = shnum };
	memcpy(e.e_ident, ELFMAG, SELFMAG);
	e.e_ident[EI_CLASS] = ELFCLASS64;
	e.e_ident[EI_DATA] = ELFDATA2LSB;
	e.e_ident[EI_VERSION] = EV_CURRENT;
	Elf64_Shdr s0 = { .sh_size = s0_size, .sh_info = s0_info };
	cr_assert_eq(ftruncate(fd, size_), 0);
	cr_assert_eq(pwrite(fd, &e, sizeof(e), 0), (ssize_t)sizeof(e));
	cr_assert_eq(pwrite(fd, &s0, sizeof(s0), 4096), (ssize_t)sizeof(s0));
	return fd;
}

static int check_crafted(uint16_t shnum, uint16_t phnum, uint64_t s0_size, uint32_t s0_info, off_t size_)
{
	int fd = craft_elf(shnum, phnum, s0_size, s0_info, size_);
	int r = uw_elf_check(fd, (uint64_t)size_);
	close(fd);
	return r;
}

Test(profile_hostile, object_caps_count_sections_and_headers_as_libelf_does)
{
	off_t big = 4096 + 70000 * (off_t)sizeof(Elf64_Shdr);
	cr_assert_eq(check_crafted(8192, 10, 0, 0, big), 0);
	cr_assert_eq(check_crafted(8193, 10, 0, 0, big), -EFBIG);
	/* extended numbering: the counts live in section 0 */
	cr_assert_eq(check_crafted(0, 10, 8000, 0, big), 0);
	cr_assert_eq(check_crafted(0, 10, 16u << 20, 0, big), -EFBIG);
	cr_assert_eq(check_crafted(20, PN_XNUM, 0, 1025, big), -EFBIG);
	cr_assert_eq(check_crafted(20, PN_XNUM, 0, 60, big), 0);
	/* headers past the end of the file */
	cr_assert_eq(check_crafted(100, 10, 0, 0, 4096 + 99 * (off_t)sizeof(Elf64_Shdr)), -ENOEXEC);
	cr_assert_eq(check_crafted(20, 10, 0, 0, 600), -ENOEXEC);

	int fd = memfd_create("not-elf", MFD_CLOEXEC);
	cr_assert_eq(pwrite(fd, "#!/bin/sh\n", 10, 0), 10);
	cr_assert_eq(uw_elf_check(fd, 10), -ENOEXEC);
	close(fd);
}
