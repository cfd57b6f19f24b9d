/*
 * replay.h — a recording (recording.h) as a snapshot source: its samples
 * are fed into per-worker series at their recorded times, on a clock that
 * starts when the replay does (and stops while paused), so `top --replay`
 * shows the run as it unfolded.
 *
 * What a recording holds is the sample stream: idle, running, blocked
 * with syscalls, fd targets, call sites and fibers, and schedstat. The
 * runtime's counters (ops/s, runqueue...) were not recorded, so those
 * figures stay unknown in a replay.
 */
#ifndef LOOPSTAT_REPLAY_H
#define LOOPSTAT_REPLAY_H

#include <stdint.h>
#include <stdio.h>

#include "collect/source.h"

struct replay;

/* Threads one replay shows at most, as the live dashboard's default
 * --max-workers: each keeps a whole series. */
#define REPLAY_MAX_THREADS SAMPLER_MAX_WORKERS

/* What one replay spans at most: a sample's time, and its threads times
 * its seconds. Views that keep a replay's every second (list, check, diff:
 * ~1.2 KB a thread-second) and step through it a second at a time stay
 * bounded, however far a file's times reach (a recording is anyone's). */
#define REPLAY_MAX_SPAN_S   86400
#define REPLAY_MAX_THREAD_S (1u << 19)

/* Reads the whole recording on f. Returns 0, or -EPROTO (not a recording,
 * *line says where), -E2BIG (past REPLAY_MAX_THREADS, REPLAY_MAX_SPAN_S,
 * REPLAY_MAX_THREAD_S or a reader's cap, *line says where), -ENOMEM,
 * -EIO; *out is set on 0 only. */
int  replay_open(FILE *f, struct replay **out, long *line);
void replay_delete(struct replay *r);

/* r as a source (borrowed: valid while r lives). */
void replay_source(struct replay *r, struct source *src);

/* The recording at path as a source that owns it (source_close frees it).
 * Returns 0, or replay_open's errors, or fopen's -errno. */
int  replay_source_open(const char *path, struct source *src, long *line);

/* Feeds every sample recorded up to t_ns (the recording's clock) and pins
 * the replay clock there: tests and seeking. */
void replay_advance_to(struct replay *r, uint64_t t_ns);

/* The recording's last sample time, its sample count and its rate. */
uint64_t replay_end_ns(const struct replay *r);
size_t   replay_samples(const struct replay *r);
double   replay_rate(const struct replay *r);
/* The recording was cut short (no trailer): its complete records were read. */
int      replay_cut(const struct replay *r);

#endif /* LOOPSTAT_REPLAY_H */
