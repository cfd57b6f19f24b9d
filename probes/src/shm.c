/*
 * shm.c — validated, pread-based reader of loopstat segments.
 */
#include "probe_shm.h"
#include "probe_proc.h"
#include "probe_stat.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const struct probe_shm_value_info probe_shm_values[PROBE_SHM_NVALUES] = {
#define PROBE_X_INFO(n, k, u, d) { #n, k, u, d },
	LOOPSTAT_SLOT_VALUES(PROBE_X_INFO)
#undef PROBE_X_INFO
};

/* The smallest header and slot that ABI major 1 can have (minor 0). */
#define MIN_HEADER_SIZE offsetof(struct loopstat_shm_header, reserved)
#define MIN_SLOT_SIZE   sizeof(struct loopstat_shm_slot)
/* Bounds that keep a hostile header from making us allocate much. */
#define MAX_HEADER_SIZE (64u * 1024)
#define MAX_SLOT_SIZE   (64u * 1024)
#define MAX_SLOTS       65536u
#define MAX_SEGMENT     (64u * 1024 * 1024)
#define READ_RETRIES    4

struct probe_shm {
	int      fd;
	pid_t    pid;
	uid_t    owner;
	uint64_t start_time;
	uint16_t abi_minor;
	uint32_t header_size;
	uint32_t slot_size;
	uint32_t slot_count;
	size_t   size;        /* bytes validated and read per snapshot */
	char    *buf;         /* owned, size bytes */
	char     path[PATH_MAX];
};

const char *probe_shm_dir(void)
{
	const char *env = getenv(LOOPSTAT_SHM_DIR_ENV);
	return env && *env ? env : LOOPSTAT_SHM_DEFAULT_DIR;
}

const char *probe_shm_backend_name(uint32_t backend)
{
	switch (backend) {
	case LOOPSTAT_BACKEND_IO_URING: return "io_uring";
	case LOOPSTAT_BACKEND_LIBEV: return "libev";
	default: return "none";
	}
}

/* pid from a "loopstat.<pid>" file name, or -1. */
static pid_t name_pid(const char *name)
{
	const char *p = strrchr(name, '/');
	p = p ? p + 1 : name;
	if (strncmp(p, LOOPSTAT_SHM_PREFIX, strlen(LOOPSTAT_SHM_PREFIX)) != 0)
		return -1;
	p += strlen(LOOPSTAT_SHM_PREFIX);
	if (*p < '1' || *p > '9')
		return -1;
	char *end;
	long v = strtol(p, &end, 10);
	return *end || v <= 0 || v > INT_MAX ? -1 : (pid_t)v;
}

static int check_header(const struct loopstat_shm_header *h, size_t file_size)
{
	if (h->magic != LOOPSTAT_SHM_MAGIC)
		return -EBADMSG;
	if (h->byte_order != LOOPSTAT_SHM_BYTE_ORDER || h->abi_major != LOOPSTAT_SHM_ABI_MAJOR)
		return -EPROTONOSUPPORT;
	if (__atomic_load_n(&h->ready, __ATOMIC_ACQUIRE) != 1)
		return -EAGAIN;
	if (h->header_size < MIN_HEADER_SIZE || h->header_size > MAX_HEADER_SIZE ||
	    h->slot_size < MIN_SLOT_SIZE || h->slot_size > MAX_SLOT_SIZE ||
	    h->slot_count == 0 || h->slot_count > MAX_SLOTS || h->pid <= 0)
		return -EBADMSG;
	uint64_t need = (uint64_t)h->header_size + (uint64_t)h->slot_count * h->slot_size;
	if (need > file_size || need > MAX_SEGMENT)
		return -EBADMSG;
	return 0;
}

/* The writer must be alive, be the process that created the segment, and be
 * owned by the segment's owner. */
static int check_writer(pid_t pid, uint64_t start_time, uid_t owner, int check_owner)
{
	struct probe_stat st;
	int err = probe_stat_read(pid, 0, &st);
	if (err)
		return err == -EINVAL ? -ESRCH : err;
	if (st.start_time != start_time)
		return -ESTALE;
	if (check_owner) {
		char path[PATH_MAX];
		struct stat pst;
		if ((err = probe_proc_path(path, sizeof(path), "%d", (int)pid)) < 0)
			return err;
		if (stat(path, &pst) < 0)
			return errno == ENOENT ? -ESRCH : -errno;
		if (pst.st_uid != owner)
			return -EPERM;
	}
	return 0;
}

int probe_shm_open(const char *path, struct probe_shm **out)
{
	struct loopstat_shm_header h;
	struct stat st;
	int err;

	*out = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		err = -errno;
		goto close_fd;
	}
	err = -EBADMSG;
	if (!S_ISREG(st.st_mode) || (size_t)st.st_size < MIN_HEADER_SIZE)
		goto close_fd;
	memset(&h, 0, sizeof(h));
	if (pread(fd, &h, sizeof(h), 0) < (ssize_t)MIN_HEADER_SIZE)
		goto close_fd;
	if ((err = check_header(&h, (size_t)st.st_size)) < 0)
		goto close_fd;
	err = -EBADMSG;
	pid_t named = name_pid(path);
	if (named > 0 && named != h.pid)
		goto close_fd;
	if ((err = check_writer(h.pid, h.start_time, st.st_uid, 1)) < 0)
		goto close_fd;

	struct probe_shm *shm = calloc(1, sizeof(*shm));
	if (!shm) {
		err = -ENOMEM;
		goto close_fd;
	}
	shm->size = h.header_size + (size_t)h.slot_count * h.slot_size;
	shm->buf = malloc(shm->size);
	if (!shm->buf) {
		err = -ENOMEM;
		goto free_shm;
	}
	shm->fd = fd;
	shm->pid = h.pid;
	shm->owner = st.st_uid;
	shm->start_time = h.start_time;
	shm->abi_minor = h.abi_minor;
	shm->header_size = h.header_size;
	shm->slot_size = h.slot_size;
	shm->slot_count = h.slot_count;
	snprintf(shm->path, sizeof(shm->path), "%s", path);
	*out = shm;
	return 0;

free_shm:
	free(shm);
close_fd:
	close(fd);
	return err;
}

void probe_shm_close(struct probe_shm *shm)
{
	if (!shm)
		return;
	close(shm->fd);
	free(shm->buf);
	free(shm);
}

pid_t probe_shm_pid(const struct probe_shm *shm) { return shm->pid; }
const char *probe_shm_path(const struct probe_shm *shm) { return shm->path; }
uint16_t probe_shm_abi_minor(const struct probe_shm *shm) { return shm->abi_minor; }

int probe_shm_check_writer(const struct probe_shm *shm)
{
	return check_writer(shm->pid, shm->start_time, shm->owner, 0);
}

static uint64_t header_generation(const char *buf)
{
	uint64_t g;
	memcpy(&g, buf + offsetof(struct loopstat_shm_header, generation), sizeof(g));
	return g;
}

/* The slot table is consistent when the header generation (a seqlock: odd
 * while the writer resets a slot) was even and did not move while it was
 * copied. */
static int read_snapshot(struct probe_shm *shm)
{
	for (int attempt = 0; attempt < READ_RETRIES; attempt++) {
		ssize_t n = pread(shm->fd, shm->buf, shm->size, 0);
		if (n < 0)
			return -errno;
		if ((size_t)n < shm->size)
			return -EBADMSG;
		uint64_t after;
		n = pread(shm->fd, &after, sizeof(after), offsetof(struct loopstat_shm_header, generation));
		if (n != (ssize_t)sizeof(after))
			return -EBADMSG;
		if (after == header_generation(shm->buf) && after % 2 == 0)
			return 0;
	}
	return -EAGAIN;
}

static void copy_tag(char *dst, const struct loopstat_shm_tag *t)
{
	uint32_t len = t->len < LOOPSTAT_TAG_LEN ? t->len : LOOPSTAT_TAG_LEN - 1;
	memcpy(dst, t->name, len);
	dst[len] = '\0';
}

static void copy_worker(const struct probe_shm *shm, const struct loopstat_shm_slot *s,
			struct probe_shm_worker *w)
{
	memset(w, 0, sizeof(*w));
	w->pid = shm->pid;
	w->tid = s->tid;
	w->state = s->state;
	w->backend = s->backend;
	w->wait_fd = s->wait_fd;
	w->generation = s->generation;
	memcpy(w->tag, s->tag, sizeof(w->tag));
	w->tag[sizeof(w->tag) - 1] = '\0';
#define PROBE_X_COPY(n, k, u, d) w->values[PROBE_SHM_##n] = s->n;
	LOOPSTAT_SLOT_VALUES(PROBE_X_COPY)
#undef PROBE_X_COPY
	/* an older minor's writer left what is now its later fields as padding */
	if (shm->abi_minor < 1)
		w->values[PROBE_SHM_poll_since_ns] = 0;
	uint64_t ti = s->current_tag;
	if (ti >= 1 && ti <= LOOPSTAT_TAG_MAX)
		copy_tag(w->fiber_tag, &s->tags[ti - 1]);
}

int probe_shm_read(struct probe_shm *shm, struct probe_shm_worker *out, size_t max, int include_exited)
{
	int err = read_snapshot(shm);
	if (err)
		return err;
	int found = 0;
	for (uint32_t i = 0; i < shm->slot_count; i++) {
		/* slot_size may exceed our struct (newer minor): copy our part only */
		struct loopstat_shm_slot s;
		memcpy(&s, shm->buf + shm->header_size + (size_t)i * shm->slot_size, sizeof(s));
		if (s.state != LOOPSTAT_SLOT_ACTIVE && !(include_exited && s.state == LOOPSTAT_SLOT_EXITED))
			continue;
		if ((size_t)found < max)
			copy_worker(shm, &s, &out[found]);
		found++;
	}
	return found;
}

int probe_shm_scan(const char *dir, int (*fn)(const char *path, pid_t pid, void *arg), void *arg)
{
	if (!dir)
		dir = probe_shm_dir();
	DIR *d = opendir(dir);
	if (!d)
		return -errno;
	int ret = 0;
	struct dirent *de;
	while (!ret && (de = readdir(d))) {
		pid_t pid = name_pid(de->d_name);
		if (pid <= 0)
			continue;
		char path[PATH_MAX];
		if (snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= (int)sizeof(path))
			continue;
		ret = fn(path, pid, arg);
	}
	closedir(d);
	return ret;
}
