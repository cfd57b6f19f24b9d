/*
 * sampler_sweep.c — the host's loops, found by sweeps of /proc
 * (probes/src/loop/sweep.c) when no -p, -n or --instrumented narrows the
 * targets: each loop a sweep reports becomes a worker (or its pooled
 * runtime's row), a user's flood a few hundred a sweep, and the threads a
 * sweep found on a CPU are looked at once more soon after.
 */
#include "collect/sampler_int.h"
#include "collect/sampler_sched.h"
#include "probe_proc.h"
#include "probe_sweep.h"

/* Workers one sweep adds at most for one user (uid >= 1000: the system's
 * all come at once). Setting up 4,096 new workers of a user's flood took
 * one sweep 12 s beside the ticks sampling them, and a loop started
 * meanwhile waited for the sweep after (15 s in all): now the rest wait a
 * sweep, a second or so, each in its turn with what started since
 * (system first, a flood last). */
#define SAMPLER_SWEEP_ADDS 256

/* Sweeps a second apart at the start, whatever they cost. */
#define SAMPLER_EARLY_SWEEPS 3

static int sweep_want(const struct probe_sweep_proc *p, void *arg)
{
	return sampler_narrowed_in(arg, p->pid, p->uid, p->comm);
}

static int sweep_found(const struct probe_sweep_proc *p, pid_t tid, void *arg)
{
	struct sampler *s = arg;
	unsigned over = 0;
	uint64_t c0 = thread_cpu_ns();
	const struct probe_rt_proc *rt = sampler_runtime_of(s, p->pid, p->start_time, p->comm);
	struct probe_stat st;
	/* a pooled runtime's wait is its scheduler's: the row takes its pool */
	int pooled = sampler_rt_is_scheduler(rt) &&
		     (rt->rt == PROBE_RT_GO || (probe_stat_read(p->pid, tid, &st) == 0 && probe_rt_member(rt->rt, st.comm)));
	pthread_mutex_lock(&s->lock);
	s->adding_uid = p->uid;
	struct sworker *w = sampler_find_worker(s, p->pid, tid);
	/* an entry of an earlier process with this pid does not count (sampler_worker_of restarts it) */
	int taken = sampler_worker_current(w, p->start_time);
	if (p->uid != s->sweep_uid) {   /* a sweep visits one user's processes in a row */
		s->sweep_uid = p->uid;
		s->sweep_added = 0;
	}
	if (!taken && p->uid >= 1000 && s->sweep_added >= SAMPLER_SWEEP_ADDS) {
		pthread_mutex_unlock(&s->lock);
		return 0;   /* at the next sweep, in its turn with whatever started meanwhile */
	}
	if (rt && rt->rt == PROBE_RT_JVM)
		sampler_sched_row(s, p->pid, p->comm, rt); /* its pool parks in futex: never found by a sweep */
	if (!taken && pooled) {
		taken = sampler_sched_row(s, p->pid, p->comm, rt) != NULL;
	} else if (!taken && (w = sampler_worker_of(s, p->pid, tid, p->start_time, p->comm, &over))) {
		taken = 1;
		w->runtime = rt ? rt->rt : PROBE_RT_UNKNOWN;
		if (w->runtime == PROBE_RT_JVM)
			sampler_name_thread(w);
		s->setup_cpu_ns += thread_cpu_ns() - c0;   /* once a worker: not the sweep's own cost */
		s->sweep_added++;
	}
	s->adding_uid = (uid_t)-1;
	pthread_mutex_unlock(&s->lock);
	return taken;
}

static const struct probe_sweep_ops sweep_ops = { sweep_want, sweep_found, sampler_tick_if_due };

/* A loop on a CPU at its look waits a sweep (1 to 10 s) to be looked at
 * again; 5 % busy on a loaded host, it was missed by two sweeps in a row
 * now and then. Looked at once more this long after. */
#define SAMPLER_RELOOK_NS (NS / 10)

/*
 * A sweep of the host when one is due: at most one per second, and after
 * a sweep that cost c of CPU not before 100 c (but within 10 s), so that
 * sweeping costs about 1% of a core however many threads the host runs
 * (10,000 threads in 20 processes: a first sweep of ~160 ms, then 10-20 ms:
 * stat reads, and the listings and looks that are due).
 */
void sampler_sweep_host(struct sampler *s, uint64_t now)
{
	if (!s->sweep || now < s->next_sweep)
		return;
	struct probe_sweep_counts c;
	uint64_t t0 = thread_cpu_ns(), ticks0 = s->tick_cpu_ns + s->setup_cpu_ns;
	s->sweep_added = 0;
	s->sweep_uid = (uid_t)-1;
	if (probe_sweep_run(s->sweep, &sweep_ops, s, &c) < 0)
		return;
	s->relook_at = now + SAMPLER_RELOOK_NS;
	/* the ticks taken inside are sampling, not sweeping, and setting up
	 * the workers it found is paid once each; and the first sweeps judge
	 * every process once: a gap made of their cost would keep a loop
	 * missed by them (on a CPU at its look, or started just after) out
	 * for 10 s beside a large host (a sweep that met 4,300 new loops) */
	uint64_t spent = thread_cpu_ns() - t0, ticks = s->tick_cpu_ns + s->setup_cpu_ns - ticks0;
	uint64_t cost = spent > ticks ? spent - ticks : 0, gap = cost * 100;
	uint64_t most = ++s->sweeps <= SAMPLER_EARLY_SWEEPS ? NS : 10 * NS;
	s->next_sweep = now + (gap < NS ? NS : gap > most ? most : gap);
	pthread_mutex_lock(&s->lock);
	s->swept = c;
	pthread_mutex_unlock(&s->lock);
}

void sampler_relook(struct sampler *s, uint64_t now)
{
	if (!s->sweep || !s->relook_at || now < s->relook_at)
		return;
	s->relook_at = 0;
	int found = probe_sweep_relook(s->sweep, &sweep_ops, s);
	pthread_mutex_lock(&s->lock);
	s->swept.loops += (unsigned)found;
	pthread_mutex_unlock(&s->lock);
}

