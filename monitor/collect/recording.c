/*
 * recording.c — the recording file: write events with interned strings,
 * read them back (format in recording.h).
 */
#include "collect/recording.h"
#include "util/idmap.h"
#include "util/textsafe.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- writing ------------------------------------------------------------- */

struct intern {
	char    *key;
	uint32_t id;
};

struct rec_writer {
	FILE    *f;
	struct intern *tab;          /* open addressing, cap a power of two */
	size_t   cap, n;
	struct idmap svc;            /* (pid, tid) → the string id of the service its last "w" named */
	int      err;                /* the first failed write's -errno (ENOSPC...), 0 */
};

/* A write failed: keep its cause, which later calls would overwrite. */
static void failed(struct rec_writer *w)
{
	if (!w->err)
		w->err = errno ? -errno : -EIO;
}

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;   /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static int grow(struct rec_writer *w)
{
	size_t cap = w->cap ? w->cap * 2 : 1024;
	struct intern *tab = calloc(cap, sizeof(*tab));
	if (!tab)
		return -ENOMEM;
	for (size_t i = 0; i < w->cap; i++) {
		if (!w->tab[i].key)
			continue;
		size_t j = hash_str(w->tab[i].key) & (cap - 1);
		while (tab[j].key)
			j = (j + 1) & (cap - 1);
		tab[j] = w->tab[i];
	}
	free(w->tab);
	w->tab = tab;
	w->cap = cap;
	return 0;
}

/* The id of s (0 for NULL), writing its "s" line the first time. */
static int64_t intern(struct rec_writer *w, const char *s)
{
	if (!s)
		return 0;
	char clean[REC_LABEL_MAX];
	textsafe_label(clean, sizeof(clean), s);
	if ((w->n + 1) * 2 > w->cap && grow(w) < 0)
		return -ENOMEM;
	size_t j = hash_str(clean) & (w->cap - 1);
	for (; w->tab[j].key; j = (j + 1) & (w->cap - 1))
		if (strcmp(w->tab[j].key, clean) == 0)
			return w->tab[j].id;
	if (!(w->tab[j].key = strdup(clean)))
		return -ENOMEM;
	w->tab[j].id = (uint32_t)++w->n;
	if (fprintf(w->f, "s %u %s\n", w->tab[j].id, clean) < 0)
		failed(w);
	return w->tab[j].id;
}

struct rec_writer *rec_writer_new(FILE *f, const struct rec_meta *meta)
{
	struct rec_writer *w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->f = f;
	idmap_init(&w->svc);
	char host[sizeof(meta->host)], title[sizeof(meta->title)];
	textsafe_label(host, sizeof(host), meta->host[0] ? meta->host : "-");
	textsafe_label(title, sizeof(title), meta->title[0] ? meta->title : "-");
	if (fprintf(f, "loopstat-record %d\nm rate_hz %.3f\nm start_unix %.3f\nm host %s\nm title %s\n",
		    REC_VERSION, meta->rate_hz, meta->start_unix, host, title) < 0)
		failed(w);
	return w;
}

/* A "w" line when ev's thread has no service yet or another one. */
static int note_service(struct rec_writer *w, const struct rec_event *ev)
{
	int64_t id = intern(w, ev->service);
	size_t last;
	uint64_t key = idmap_pair(ev->pid, ev->tid);
	if (id <= 0 || (idmap_get(&w->svc, key, &last) && last == (size_t)id))
		return (int)id;
	if (idmap_put(&w->svc, key, (size_t)id) < 0)
		return -ENOMEM;
	if (fprintf(w->f, "w %d %d %" PRId64 "\n", (int)ev->pid, (int)ev->tid, id) < 0)
		failed(w);
	return 0;
}

int rec_write(struct rec_writer *w, const struct rec_event *ev)
{
	int64_t ids[4 + REC_MAX_FRAMES];
	const char *strs[4] = { ev->thread, ev->syscall, ev->target, ev->fiber };
	int nf = ev->nframes < REC_MAX_FRAMES ? ev->nframes : REC_MAX_FRAMES;
	for (int i = 0; i < 4 + nf; i++)
		if ((ids[i] = intern(w, i < 4 ? strs[i] : ev->frames[i - 4])) < 0)
			return -ENOMEM;
	if (note_service(w, ev) < 0)
		return -ENOMEM;
	int r = ev->stall_ms ? fprintf(w->f, "k %" PRIu32 " ", ev->stall_ms) : fprintf(w->f, "e ");
	if (r >= 0)
		r = fprintf(w->f, "%" PRIu64 " %d %d %d %d %ld %d %" PRIu64 " %" PRIu64 " %" PRIx64 " %" PRIx64
			" %" PRIu64 " %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 " %d",
			ev->t_ns, (int)ev->pid, (int)ev->tid, ev->instrumented ? 1 : 0, (int)ev->cls, ev->nr, ev->fd,
			ev->run_ns, ev->wait_ns, ev->sp, ev->pc, ev->switches, ids[0], ids[1], ids[2], ids[3], nf);
	for (int i = 0; i < nf && r >= 0; i++)
		r = fprintf(w->f, " %" PRId64, ids[4 + i]);
	if (r < 0 || fputc('\n', w->f) == EOF)
		failed(w);
	return w->err;
}

int rec_write_trigger(struct rec_writer *w, const struct rec_trigger *t)
{
	char text[REC_TRIGGER_LEN];
	textsafe_label(text, sizeof(text), t->text[0] ? t->text : "-");
	if (fprintf(w->f, "t %" PRIu64 " %d %d %s\n", t->t_ns, (int)t->pid, (int)t->tid, text) < 0)
		failed(w);
	return w->err;
}

/* A verdict's word: 1..REC_LIMIT_LEN-1 lowercase letters. */
static int limit_word_ok(const char *s, size_t len)
{
	if (len == 0 || len >= REC_LIMIT_LEN)
		return 0;
	for (size_t i = 0; i < len; i++)
		if (s[i] < 'a' || s[i] > 'z')
			return 0;
	return 1;
}

int rec_write_limit(struct rec_writer *w, const struct rec_limit *l)
{
	if (!limit_word_ok(l->limit, strnlen(l->limit, REC_LIMIT_LEN)))
		return -EINVAL;
	int r = isfinite(l->reading)
		? fprintf(w->f, "l %d %" PRIu64 " %d %d %s %.3f\n", REC_LIMIT_VERSION, l->t_ns, (int)l->pid, (int)l->tid,
			  l->limit, l->reading)
		: fprintf(w->f, "l %d %" PRIu64 " %d %d %s -\n", REC_LIMIT_VERSION, l->t_ns, (int)l->pid, (int)l->tid,
			  l->limit);
	if (r < 0)
		failed(w);
	return w->err;
}

int rec_write_meta(struct rec_writer *w, const char *key, double value)
{
	if (fprintf(w->f, "m %s %.3f\n", key, value) < 0)
		failed(w);
	return w->err;
}

int rec_writer_end(struct rec_writer *w, double duration_s)
{
	if (fprintf(w->f, "m duration_s %.3f\n", duration_s) < 0)
		failed(w);
	errno = 0;
	if (fflush(w->f) != 0 || ferror(w->f))
		failed(w);
	int err = w->err;
	for (size_t i = 0; i < w->cap; i++)
		free(w->tab[i].key);
	free(w->tab);
	idmap_done(&w->svc);
	free(w);
	return err;
}

/* ---- reading ------------------------------------------------------------- */

struct strtab {
	char  **s;                   /* s[id], s[0] unused */
	size_t  n, cap;
	struct idmap svc;            /* (pid, tid) → its service's string id, from "w" records */
};

static const char *lookup(const struct strtab *t, unsigned long long id, int *bad)
{
	if (id == 0)
		return NULL;
	if (id > t->n) {
		*bad = 1;
		return NULL;
	}
	return t->s[id];
}

static int add_string(struct strtab *t, char *rest)
{
	char *end;
	unsigned long long id = strtoull(rest, &end, 10);
	if (*end != ' ' || id != t->n + 1)
		return -EPROTO;
	if (id > REC_MAX_STRINGS)
		return -E2BIG;
	if (t->n + 2 > t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 1024;
		char **s = realloc(t->s, cap * sizeof(*s));
		if (!s)
			return -ENOMEM;
		t->s = s;
		t->cap = cap;
	}
	if (!(t->s[id] = strdup(end + 1)))
		return -ENOMEM;
	t->n = id;
	return 0;
}

/* Returns 1 for the trailer (duration_s, written last). */
static int read_meta(struct rec_meta *meta, char *rest)
{
	char *val = strchr(rest, ' ');
	if (!val)
		return 0;
	*val++ = '\0';
	if (strcmp(rest, "duration_s") == 0) {
		double d = strtod(val, NULL);
		meta->duration_s = d > 0 && d < 1e9 ? d : 0;
		return 1;
	}
	if (strcmp(rest, "rate_hz") == 0) {
		/* anything but a sampler's rate is unknown (0), not a divisor */
		double hz = strtod(val, NULL);
		meta->rate_hz = hz > 0 && hz <= 1e6 ? hz : 0;
	}
	else if (strcmp(rest, "start_unix") == 0) {
		double t = strtod(val, NULL);
		meta->start_unix = t > 0 && t < 1e11 ? t : 0;
	}
	else if (strcmp(rest, "ring_s") == 0) {
		double r = strtod(val, NULL);
		meta->ring_s = r > 0 && r < 1e9 ? r : 0;
	}
	else if (strcmp(rest, "host") == 0)
		snprintf(meta->host, sizeof(meta->host), "%s", val);
	else if (strcmp(rest, "title") == 0)
		snprintf(meta->title, sizeof(meta->title), "%s", val);
	return 0;
}

/* Fields after "e": T PID TID INST CLS NR FD RUN WAIT SP PC SW THREAD SYSCALL TARGET FIBER NFRAMES FRAME... */
enum { F_T, F_PID, F_TID, F_INST, F_CLS, F_NR, F_FD, F_RUN, F_WAIT, F_SP, F_PC, F_SW, F_THREAD, F_SYSCALL, F_TARGET,
       F_FIBER, F_NFRAMES, F_N };

static int next_field(char **p, int base, int is_signed, unsigned long long *out)
{
	char *end;
	errno = 0;
	if (**p != ' ')
		return -EPROTO;
	if (is_signed)
		*out = (unsigned long long)strtoll(*p + 1, &end, base);
	else
		*out = strtoull(*p + 1, &end, base);
	if (errno || end == *p + 1 || (*end != ' ' && *end != '\0'))
		return -EPROTO;
	*p = end;
	return 0;
}

/* "t T PID TID TEXT": a trigger, kept in meta while there is room. */
static int add_trigger(struct rec_meta *meta, char *p)
{
	unsigned long long t, pid, tid;
	if (next_field(&p, 10, 0, &t) < 0 || next_field(&p, 10, 0, &pid) < 0 || next_field(&p, 10, 0, &tid) < 0 ||
	    *p != ' ' || pid > INT32_MAX || tid > INT32_MAX)
		return -EPROTO;
	meta->triggers_seen++;
	if (meta->ntriggers == REC_MAX_TRIGGERS)
		return 0;
	struct rec_trigger *k = &meta->triggers[meta->ntriggers++];
	k->t_ns = t;
	k->pid = (pid_t)pid;
	k->tid = (pid_t)tid;
	/* the file's bytes, whoever wrote them: cut at a character, no controls */
	textsafe_label(k->text, sizeof(k->text), p + 1);
	return 0;
}

/* "l V T PID TID LIMIT READING": a limit reading, tallied in meta while
 * there is room; a version this reader does not know is skipped. */
static int add_limit(struct rec_meta *meta, char *p)
{
	unsigned long long v, t, pid, tid;
	if (next_field(&p, 10, 0, &v) < 0)
		return -EPROTO;
	if (v != REC_LIMIT_VERSION)
		return 0;
	if (next_field(&p, 10, 0, &t) < 0 || next_field(&p, 10, 0, &pid) < 0 || next_field(&p, 10, 0, &tid) < 0 ||
	    *p != ' ' || pid > INT32_MAX || tid > INT32_MAX)
		return -EPROTO;
	char *word = p + 1, *sp = strchr(word, ' ');
	if (!sp || !limit_word_ok(word, (size_t)(sp - word)))
		return -EPROTO;
	*sp = '\0';
	double reading = NAN;
	if (strcmp(sp + 1, "-") != 0) {
		char *end;
		errno = 0;
		reading = strtod(sp + 1, &end);
		/* the writer's %.3f: no inf, no nan, nothing after it */
		if (errno || end == sp + 1 || *end || !isfinite(reading) || !isdigit((unsigned char)sp[1 + (sp[1] == '-')]))
			return -EPROTO;
	}
	meta->limits_seen++;
	struct rec_limit_tally *k = NULL;
	for (unsigned i = 0; i < meta->nlimits && !k; i++)
		if (meta->limits[i].pid == (pid_t)pid && meta->limits[i].tid == (pid_t)tid &&
		    strcmp(meta->limits[i].limit, word) == 0)
			k = &meta->limits[i];
	if (!k) {
		if (meta->nlimits == REC_MAX_LIMITS) {
			meta->limits_unkept++;
			return 0;
		}
		k = &meta->limits[meta->nlimits++];
		*k = (struct rec_limit_tally){ .pid = (pid_t)pid, .tid = (pid_t)tid, .first_ns = t, .last_ns = t };
		snprintf(k->limit, sizeof(k->limit), "%s", word);
	}
	k->seconds++;
	k->first_ns = t < k->first_ns ? t : k->first_ns;
	k->last_ns = t > k->last_ns ? t : k->last_ns;
	if (!isnan(reading)) {
		k->reading_max = k->nread && k->reading_max > reading ? k->reading_max : reading;
		k->reading_sum += reading;
		k->nread++;
	}
	return 0;
}

/* "w PID TID SERVICE": the thread's service from here on. */
static int add_service(struct strtab *t, char *p)
{
	unsigned long long pid, tid, id;
	if (next_field(&p, 10, 0, &pid) < 0 || next_field(&p, 10, 0, &tid) < 0 || next_field(&p, 10, 0, &id) < 0 ||
	    *p || id == 0 || id > t->n)
		return -EPROTO;
	uint64_t key = idmap_pair((int32_t)pid, (int32_t)tid);
	size_t old;
	if (!idmap_get(&t->svc, key, &old) && t->svc.n >= REC_MAX_THREADS)
		return -E2BIG;
	return idmap_put(&t->svc, key, (size_t)id);
}

static int parse_event(const struct strtab *t, char *p, struct rec_event *ev, const char **frames)
{
	unsigned long long f[F_N];
	for (int i = 0; i < F_N; i++)
		if (next_field(&p, i == F_SP || i == F_PC ? 16 : 10, i == F_NR || i == F_FD, &f[i]) < 0)
			return -EPROTO;
	if (f[F_CLS] < PROBE_POLL || f[F_CLS] > PROBE_OTHER || f[F_NFRAMES] > REC_MAX_FRAMES)
		return -EPROTO;
	int bad = 0;
	*ev = (struct rec_event){
		.t_ns = f[F_T], .pid = (pid_t)f[F_PID], .tid = (pid_t)f[F_TID], .instrumented = f[F_INST] != 0,
		.cls = (enum probe_class)f[F_CLS], .nr = (long)(long long)f[F_NR], .fd = (int)(long long)f[F_FD],
		.run_ns = f[F_RUN], .wait_ns = f[F_WAIT], .sp = f[F_SP], .pc = f[F_PC], .switches = f[F_SW],
		.thread = lookup(t, f[F_THREAD], &bad), .syscall = lookup(t, f[F_SYSCALL], &bad),
		.target = lookup(t, f[F_TARGET], &bad), .fiber = lookup(t, f[F_FIBER], &bad),
		.frames = frames, .nframes = (int)f[F_NFRAMES],
	};
	size_t svc;
	if (idmap_get(&t->svc, idmap_pair(ev->pid, ev->tid), &svc))
		ev->service = t->s[svc];
	for (int i = 0; i < ev->nframes; i++) {
		unsigned long long id;
		if (next_field(&p, 10, 0, &id) < 0 || !(frames[i] = lookup(t, id, &bad)))
			return -EPROTO;
	}
	return bad || !ev->thread || *p ? -EPROTO : 0;
}

/* One line into buf (REC_MAX_LINE + 2 bytes), its newline kept and a NUL
 * after it: the length, 0 at the end of the file, -E2BIG for a longer
 * line, -EILSEQ for a NUL byte in it (text never holds one: a binary or
 * damaged file). getline would grow to whatever a
 * file without newlines holds (/dev/zero). */
static ssize_t read_line(FILE *f, char *buf)
{
	size_t len = 0;
	int c;
	while ((c = getc_unlocked(f)) != EOF) {
		if (len == REC_MAX_LINE && c != '\n')
			return -E2BIG;
		if (c == '\0')
			return -EILSEQ;
		buf[len++] = (char)c;
		if (c == '\n')
			break;
	}
	buf[len] = '\0';
	return (ssize_t)len;
}

const char *rec_format_error(int err)
{
	if (err == -EILSEQ)
		return "a NUL byte in this line: a recording is text; the file is damaged or not a recording";
	if (err == -EPROTO)
		return "not a loopstat recording of version 1";
	return NULL;
}

int rec_read(FILE *f, struct rec_meta *meta, int (*fn)(void *arg, const struct rec_event *ev),
		     void *arg, long *line)
{
	struct strtab t = { 0 };
	idmap_init(&t.svc);
	char *buf = malloc(REC_MAX_LINE + 2);
	ssize_t len;
	int err = buf ? 0 : -ENOMEM;
	const char *frames[REC_MAX_FRAMES];
	memset(meta, 0, sizeof(*meta));
	*line = 0;
	int trailer = 0;
	while (err == 0 && (len = read_line(f, buf)) != 0) {
		++*line;
		if (len < 0) {
			err = (int)len;
			break;
		}
		if (len > 0 && buf[len - 1] == '\n') {
			buf[--len] = '\0';
		} else if (*line > 1) {
			/* no newline at the end of the file: a record cut mid-write */
			meta->cut = 1;
			break;
		}
		if (*line == 1) {
			int major;
			if (sscanf(buf, "loopstat-record %d", &major) != 1 || major != REC_VERSION) {
				err = -EPROTO;
				break;
			}
			continue;
		}
		struct rec_event ev;
		if (buf[0] == 's' && buf[1] == ' ')
			err = add_string(&t, buf + 2);
		else if (buf[0] == 'm' && buf[1] == ' ')
			trailer |= read_meta(meta, buf + 2);
		else if (buf[0] == 'w' && buf[1] == ' ')
			err = add_service(&t, buf + 1);
		else if (buf[0] == 't' && buf[1] == ' ')
			err = add_trigger(meta, buf + 1);
		else if (buf[0] == 'l' && buf[1] == ' ')
			err = add_limit(meta, buf + 1);
		else if (buf[0] == 'e' && buf[1] == ' ' && (err = parse_event(&t, buf + 1, &ev, frames)) == 0) {
			meta->last_t_ns = ev.t_ns;
			err = fn(arg, &ev);
		} else if (buf[0] == 'k' && buf[1] == ' ') {
			unsigned long long dur;
			char *p = buf + 1;
			err = next_field(&p, 10, 0, &dur) < 0 || !dur || dur > UINT32_MAX ? -EPROTO
											  : parse_event(&t, p, &ev, frames);
			if (err == 0) {
				ev.stall_ms = (uint32_t)dur;
				err = fn(arg, &ev);
			}
		}
		if (err < 0)
			break;
	}
	if (err == 0 && *line == 0)
		err = -EPROTO;   /* empty: not a recording */
	if (err == 0 && !trailer)
		meta->cut = 1;
	if (err == 0 && ferror(f))
		err = -EIO;
	for (size_t i = 1; i <= t.n; i++)
		free(t.s[i]);
	free(t.s);
	idmap_done(&t.svc);
	free(buf);
	return err;
}
