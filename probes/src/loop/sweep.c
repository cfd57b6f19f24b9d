/*
 * sweep.c — the host's event loops, found by a sweep of /proc that keeps
 * what it learned (probe_sweep.h).
 *
 * Two tables, open addressing, rebuilt at the end of each sweep with only
 * what that sweep listed: so exited processes and threads cost nothing
 * after one sweep, and there are no tombstones. A process is known by
 * (pid, instance): a reused pid starts afresh, threads included.
 */
#include "probe_classify.h"
#include "probe_loop.h"
#include "probe_proc.h"
#include "probe_sweep.h"
#include "probe_syscall.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PROCS_MAX          65536u
#define THREADS_MAX        (1u << 20)
#define SWEEP_BACKOFF_MAX  32      /* sweeps between two looks at a blocked thread, at most */
#define TICK_EVERY         32      /* syscall files read between two ticks */
#define RELOOK_MAX         64      /* threads found on a CPU that a sweep looks at again */

enum proc_state { P_WANTED = 1, P_SKIPPED, P_KERNEL, P_CLOSED };
enum thread_state { T_NEW = 0, T_LOOP, T_OTHER };

/*
 * A known process is told from a newcomer under its pid by the inode of
 * its /proc/PID entry, from the listing itself: procfs gives each process
 * instance an inode of its own. (Should the kernel drop and remake the
 * entry of a live process, it is judged again: a cost, not an error.)
 */
struct proc {
	pid_t    pid;        /* 0: free */
	uint32_t epoch;      /* last sweep that listed it */
	uint64_t ino;
	uint64_t start_time;
	uid_t    uid;
	uint8_t  state;      /* enum proc_state */
	char     comm[PROBE_COMM_LEN];
	/* its last listing of tasks: while its thread count stays and none of
	 * its threads is due, it is not listed again (10,000 threads asleep
	 * cost a stat read a process, not a listing) */
	uint32_t listed;     /* sweep of that listing, 0: none */
	int      nthreads;   /* threads it listed */
	unsigned loops;      /* loops among them */
	uint16_t due;        /* the soonest look any of them is due */
};

struct thread {
	pid_t    tid;        /* 0: free */
	pid_t    pid;
	uint32_t start;      /* its process's start time, low bits: a reused pid's threads start afresh */
	uint32_t epoch;
	uint16_t due;        /* sweep number (low 16 bits) of its next look */
	uint8_t  state;      /* enum thread_state */
	uint8_t  backoff;    /* sweeps to wait after the next look that finds it blocked */
};

struct table {
	void  *v;            /* owned: cap entries of size */
	size_t cap, n, size;
};

/* A process listed by this sweep, in the order it is looked at. */
struct visit {
	pid_t    pid;
	uid_t    uid;
	unsigned threads;    /* its own, as last known */
	unsigned weight;     /* all its user's, as last known */
};

struct probe_sweep {
	struct table procs, threads;
	uint32_t epoch;
	unsigned reads_since_tick;
	struct visit *visits;    /* owned: this sweep's processes, in turn */
	size_t nvisits, capvisits;
	/* the last sweep's threads found on a CPU, for probe_sweep_relook */
	struct { pid_t pid, tid; } relook[RELOOK_MAX];
	int nrelook;
};

int probe_sweep_is_event_wait(const struct probe_sc_sample *s)
{
	if (s->state != PROBE_SC_IN_SYSCALL)
		return 0;
	if (!probe_syscall_is_poll_set(s->nr))
		return probe_sample_waits_for_events(s);
	/* poll(fds, nfds, ..) and ppoll name the count second, select and
	 * pselect6 first: with none, it is a sleep */
	int count_second = s->nr == SYS_ppoll;
#ifdef SYS_poll
	count_second |= s->nr == SYS_poll;
#endif
	return count_second ? s->args[1] > 0 : s->args[0] > 0;
}

static size_t hash(uint32_t x)
{
	uint64_t h = (uint64_t)x * 0x9e3779b97f4a7c15ull;
	return (size_t)(h >> 20);
}

static void *slot(struct table *t, pid_t id)
{
	size_t mask = t->cap - 1;
	for (size_t i = hash((uint32_t)id) & mask;; i = (i + 1) & mask) {
		pid_t *e = (pid_t *)((char *)t->v + i * t->size);
		if (!*e || *e == id)
			return e;
	}
}

/* The entry of id, a free one to take, or NULL when the table is full. */
static void *lookup(struct table *t, pid_t id, size_t max)
{
	if (t->cap) {
		pid_t *e = slot(t, id);
		if (*e || (t->n + 1) * 2 <= t->cap)
			return e;
	}
	if (t->n >= max)
		return NULL;
	size_t cap = t->cap ? t->cap * 2 : 1024;
	void *v = calloc(cap, t->size);
	if (!v)
		return NULL;
	struct table nt = { v, cap, t->n, t->size };
	for (size_t i = 0; i < t->cap; i++) {
		pid_t *e = (pid_t *)((char *)t->v + i * t->size);
		if (*e)
			memcpy(slot(&nt, *e), e, t->size);
	}
	free(t->v);
	*t = nt;
	return slot(t, id);
}

/* Keeps only the entries the sweep `epoch` listed. */
static void prune(struct table *t, uint32_t epoch, size_t epoch_offset)
{
	if (!t->cap)
		return;
	void *v = calloc(t->cap, t->size);
	if (!v)
		return; /* kept as they are: the next sweep tries again */
	struct table nt = { v, t->cap, 0, t->size };
	for (size_t i = 0; i < t->cap; i++) {
		char *e = (char *)t->v + i * t->size;
		uint32_t seen;
		memcpy(&seen, e + epoch_offset, sizeof(seen));
		if (*(pid_t *)e && seen == epoch) {
			memcpy(slot(&nt, *(pid_t *)e), e, t->size);
			nt.n++;
		}
	}
	free(t->v);
	*t = nt;
}

int probe_sweep_new(struct probe_sweep **out)
{
	struct probe_sweep *sw = calloc(1, sizeof(*sw));
	if (!sw)
		return -ENOMEM;
	sw->procs.size = sizeof(struct proc);
	sw->threads.size = sizeof(struct thread);
	*out = sw;
	return 0;
}

void probe_sweep_delete(struct probe_sweep *sw)
{
	if (!sw)
		return;
	free(sw->procs.v);
	free(sw->threads.v);
	free(sw->visits);
	free(sw);
}

size_t probe_sweep_memory(const struct probe_sweep *sw)
{
	return sizeof(*sw) + sw->procs.cap * sw->procs.size + sw->threads.cap * sw->threads.size +
	       sw->capvisits * sizeof(struct visit);
}

static pid_t parse_id(const char *name)
{
	long v = 0;
	if (*name < '1' || *name > '9')
		return 0;
	for (; *name; name++) {
		if (*name < '0' || *name > '9' || (v = v * 10 + (*name - '0')) > INT_MAX)
			return 0;
	}
	return (pid_t)v;
}

/* A new process (or a pid reused since): judged once. */
static void judge(struct proc *pr, const struct probe_stat *st, const struct probe_sweep_ops *ops, void *arg)
{
	struct probe_sweep_proc p = { .pid = pr->pid, .uid = pr->uid, .start_time = pr->start_time };
	memcpy(p.comm, pr->comm, sizeof(p.comm));
	if (st->flags & PROBE_STAT_KTHREAD)
		pr->state = P_KERNEL;
	else
		pr->state = !ops->want || ops->want(&p, arg) ? P_WANTED : P_SKIPPED;
}

/* One look at a thread that is due: 1 if it is a loop now, or -errno. */
static int look(struct probe_sweep *sw, pid_t pid, pid_t tid, const struct probe_sweep_ops *ops, void *arg,
		struct probe_sweep_counts *c)
{
	struct probe_syscall sc;
	struct probe_sc_sample s;
	int err = probe_syscall_open(&sc, pid, tid);
	if (err == 0)
		err = probe_syscall_sample(&sc, &s);
	probe_syscall_close(&sc);
	c->reads++;
	if (ops->tick && ++sw->reads_since_tick >= TICK_EVERY) {
		sw->reads_since_tick = 0;
		ops->tick(arg);
	}
	if (err < 0)
		return err;
	if (s.state == PROBE_SC_NO_ACCESS)
		return -EACCES;
	return probe_sweep_is_event_wait(&s) ? 1 : s.state == PROBE_SC_IN_SYSCALL ? 0 : 2;
}

/* The process's threads: each new or due one is looked at. 0, or -EACCES
 * when this user may not look at them. */
/* The sweeps to wait before the next look at a thread seen blocked: its
 * backoff, less a part of up to half of it that is the same for the
 * threads of one process (so that they fall due together, and the process
 * needs no listing in between) and differs between processes (so that
 * they do not all fall due in the same sweep). */
static uint16_t spread(pid_t pid, unsigned backoff)
{
	return (uint16_t)(backoff - (unsigned)(hash((uint32_t)pid) >> 3) % (backoff / 2 + 1));
}

static int sweep_threads(struct probe_sweep *sw, struct proc *pr, const struct probe_sweep_proc *p,
			 const struct probe_sweep_ops *ops, void *arg, struct probe_sweep_counts *c)
{
	char path[PATH_MAX];
	if (probe_proc_path(path, sizeof(path), "%d/task", (int)p->pid) < 0)
		return 0;
	DIR *d = opendir(path);
	if (!d)
		return errno == EACCES ? -EACCES : 0;
	uint16_t now = (uint16_t)sw->epoch;
	int ret = 0, listed = 0;
	unsigned loops = 0;
	uint16_t due = (uint16_t)(now + SWEEP_BACKOFF_MAX);
	struct dirent *de;
	while ((de = readdir(d))) {
		pid_t tid = parse_id(de->d_name);
		if (!tid)
			continue;
		c->threads++;
		listed++;
		struct thread *t = lookup(&sw->threads, tid, THREADS_MAX);
		if (!t) {
			c->ignored_limit++;
			continue;
		}
		if (!t->tid || t->pid != p->pid || t->start != (uint32_t)p->start_time) {
			sw->threads.n += !t->tid;
			*t = (struct thread){ .tid = tid, .pid = p->pid, .start = (uint32_t)p->start_time, .due = now };
		}
		t->epoch = sw->epoch;
		if (t->state == T_LOOP) {
			c->loops++;
			loops++;
			continue;
		}
		if ((int16_t)(now - t->due) < 0) {
			if ((int16_t)(t->due - due) < 0)
				due = t->due;
			continue;
		}
		int r = look(sw, p->pid, tid, ops, arg, c);
		if (r == -EACCES) {
			ret = -EACCES;
			break;
		}
		if (r == 1 && ops->found(p, tid, arg)) {
			t->state = T_LOOP;
			c->loops++;
			loops++;
			continue;
		} else if (r == 1) {
			c->ignored_limit++;
			t->due = (uint16_t)(now + 1);
		} else if (r == 0) {
			/* blocked in something else: look again later and later */
			t->state = T_OTHER;
			t->due = (uint16_t)(now + (t->backoff ? spread(p->pid, t->backoff) : 1));
			t->backoff = t->backoff ? (t->backoff * 2 > SWEEP_BACKOFF_MAX ? SWEEP_BACKOFF_MAX : t->backoff * 2) : 2;
		} else {
			/* running (maybe a loop too busy to be caught waiting), or gone */
			t->state = T_OTHER;
			t->due = (uint16_t)(now + 1);
			if (r == 2 && sw->nrelook < RELOOK_MAX) {
				sw->relook[sw->nrelook].pid = p->pid;
				sw->relook[sw->nrelook++].tid = tid;
			}
		}
		if ((int16_t)(t->due - due) < 0)
			due = t->due;
	}
	closedir(d);
	pr->listed = sw->epoch;
	pr->nthreads = listed;
	pr->loops = loops;
	pr->due = due;
	return ret;
}

int probe_sweep_relook(struct probe_sweep *sw, const struct probe_sweep_ops *ops, void *arg)
{
	struct probe_sweep_counts c = { 0 };
	int found = 0;
	for (int i = 0; i < sw->nrelook && sw->threads.cap && sw->procs.cap; i++) {
		pid_t pid = sw->relook[i].pid, tid = sw->relook[i].tid;
		struct thread *t = slot(&sw->threads, tid);
		struct proc *pr = slot(&sw->procs, pid);
		if (t->tid != tid || t->pid != pid || t->state != T_OTHER || pr->pid != pid || pr->state != P_WANTED)
			continue;   /* gone, taken meanwhile, or its process shut */
		struct probe_sweep_proc p = { .pid = pid, .start_time = pr->start_time, .uid = pr->uid };
		memcpy(p.comm, pr->comm, sizeof(p.comm));
		if (look(sw, pid, tid, ops, arg, &c) == 1 && ops->found(&p, tid, arg)) {
			t->state = T_LOOP;
			pr->loops++;
			found++;
		}
	}
	sw->nrelook = 0;
	return found;
}

void probe_sweep_forget(struct probe_sweep *sw, pid_t tid)
{
	if (!sw->threads.cap)
		return;
	struct thread *t = slot(&sw->threads, tid);
	if (t->tid != tid || t->state != T_LOOP)
		return;
	uint16_t next = (uint16_t)(sw->epoch + 1);
	t->state = T_OTHER;
	t->due = next;
	t->backoff = 0;
	struct proc *pr = sw->procs.cap ? slot(&sw->procs, t->pid) : NULL;
	if (pr && pr->pid == t->pid) {
		pr->loops -= pr->loops > 0;
		if ((int16_t)(next - pr->due) < 0)
			pr->due = next;
	}
}

/* Threads listed in this sweep, and those of processes seen but not
 * listed (unchanged, none due): the rest exited. */
static void prune_threads(struct probe_sweep *sw)
{
	struct table *t = &sw->threads;
	if (!t->cap)
		return;
	struct thread *v = calloc(t->cap, sizeof(*v));
	if (!v)
		return;
	struct table nt = { v, t->cap, 0, t->size };
	for (size_t i = 0; i < t->cap; i++) {
		struct thread *e = (struct thread *)t->v + i;
		if (!e->tid)
			continue;
		int keep = e->epoch == sw->epoch;
		if (!keep) {
			struct proc *pr = sw->procs.cap ? slot(&sw->procs, e->pid) : NULL;
			keep = pr && pr->pid == e->pid && pr->epoch == sw->epoch && pr->listed != sw->epoch &&
			       (uint32_t)pr->start_time == e->start;
		}
		if (keep) {
			*(struct thread *)slot(&nt, e->tid) = *e;
			nt.n++;
		}
	}
	free(t->v);
	*t = nt;
}

static int by_uid(const void *a, const void *b)
{
	const struct visit *x = a, *y = b;
	return (x->uid > y->uid) - (x->uid < y->uid);
}

/* System services first (uid < 1000), then users holding the fewest
 * threads, and within a user its smallest processes first, then by pid:
 * a flood of threads is looked at last, so it cannot take the places of
 * the loops listed after it in /proc (nor a sweep's share of new ones). */
static int by_turn(const void *a, const void *b)
{
	const struct visit *x = a, *y = b;
	int sx = x->uid >= 1000, sy = y->uid >= 1000;
	if (sx != sy)
		return sx - sy;
	if (x->weight != y->weight)
		return (x->weight > y->weight) - (x->weight < y->weight);
	if (x->uid != y->uid)
		return (x->uid > y->uid) - (x->uid < y->uid);
	if (x->threads != y->threads)
		return (x->threads > y->threads) - (x->threads < y->threads);
	return (x->pid > y->pid) - (x->pid < y->pid);
}

/* Lists <proc root> into sw->visits: each process known (judged once) and
 * marked listed by this sweep. -errno when the root cannot be listed. */
static int list_procs(struct probe_sweep *sw, const struct probe_sweep_ops *ops, void *arg,
		      struct probe_sweep_counts *c)
{
	DIR *d = opendir(probe_proc_root());
	if (!d)
		return -errno;
	pid_t self = getpid();
	struct dirent *de;
	sw->nvisits = 0;
	while ((de = readdir(d))) {
		pid_t pid = parse_id(de->d_name);
		if (!pid || pid == self)
			continue;
		struct proc *pr = lookup(&sw->procs, pid, PROCS_MAX);
		if (!pr) {
			c->ignored_limit++;
			continue;
		}
		unsigned threads = pr->pid ? (unsigned)pr->nthreads : 1;
		if (!pr->pid || pr->ino != (uint64_t)de->d_ino) {
			char path[PATH_MAX];
			struct stat ps;
			struct probe_stat st;
			if (probe_stat_read(pid, 0, &st) < 0)
				continue; /* gone meanwhile */
			sw->procs.n += !pr->pid;
			*pr = (struct proc){ .pid = pid, .ino = (uint64_t)de->d_ino, .start_time = st.start_time };
			memcpy(pr->comm, st.comm, sizeof(pr->comm));
			if (probe_proc_path(path, sizeof(path), "%d", (int)pid) >= 0 && stat(path, &ps) == 0)
				pr->uid = ps.st_uid;
			judge(pr, &st, ops, arg);
			threads = st.threads > 0 ? (unsigned)st.threads : 1;
		}
		pr->epoch = sw->epoch;
		if (sw->nvisits == sw->capvisits) {
			size_t cap = sw->capvisits ? sw->capvisits * 2 : 1024;
			struct visit *v = realloc(sw->visits, cap * sizeof(*v));
			if (!v) {
				c->ignored_limit++;
				continue;
			}
			sw->visits = v;
			sw->capvisits = cap;
		}
		sw->visits[sw->nvisits++] = (struct visit){ .pid = pid, .uid = pr->uid, .threads = threads ? threads : 1 };
	}
	closedir(d);
	/* each user's weight: the threads of all its processes */
	qsort(sw->visits, sw->nvisits, sizeof(*sw->visits), by_uid);
	for (size_t i = 0, j; i < sw->nvisits; i = j) {
		unsigned sum = 0;
		for (j = i; j < sw->nvisits && sw->visits[j].uid == sw->visits[i].uid; j++)
			sum += sw->visits[j].threads;
		for (size_t k = i; k < j; k++)
			sw->visits[k].weight = sum;
	}
	qsort(sw->visits, sw->nvisits, sizeof(*sw->visits), by_turn);
	return 0;
}

int probe_sweep_run(struct probe_sweep *sw, const struct probe_sweep_ops *ops, void *arg,
		    struct probe_sweep_counts *c)
{
	memset(c, 0, sizeof(*c));
	sw->epoch++;
	sw->nrelook = 0;
	int err = list_procs(sw, ops, arg, c);
	if (err < 0) {
		sw->epoch--;
		return err;
	}
	for (size_t i = 0; i < sw->nvisits; i++) {
		pid_t pid = sw->visits[i].pid;
		struct proc *pr = slot(&sw->procs, pid);
		struct probe_sweep_proc p = { .pid = pid, .start_time = pr->start_time, .uid = pr->uid };
		memcpy(p.comm, pr->comm, sizeof(p.comm));
		if (pr->state == P_KERNEL)
			continue;
		c->procs++;
		if (pr->state == P_CLOSED) {
			c->ignored_access++;
			continue;
		}
		if (pr->state == P_SKIPPED)
			continue;
		struct probe_stat st;
		if (pr->listed && (int16_t)((uint16_t)sw->epoch - pr->due) < 0 && probe_stat_read(pid, 0, &st) == 0 &&
		    st.threads == pr->nthreads) {
			c->threads += (unsigned)pr->nthreads;
			c->loops += pr->loops;
			continue;
		}
		if (sweep_threads(sw, pr, &p, ops, arg, c) == -EACCES) {
			pr->state = P_CLOSED;
			c->ignored_access++;
		}
	}
	/* threads first: they look their processes up as this sweep left them */
	prune_threads(sw);
	prune(&sw->procs, sw->epoch, offsetof(struct proc, epoch));
	return 0;
}
