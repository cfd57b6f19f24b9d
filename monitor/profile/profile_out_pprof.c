/*
 * profile_out_pprof.c — pprof's profile.proto (monitor/profile/pprof/),
 * gzipped, as go tool pprof, Pyroscope and Parca read it.
 *
 * One pprof sample per tree path with samples of its own, as in the folded
 * output, with its stack turned into the call stack pprof expects (leaf
 * first): the fd target, the syscall, the user stack innermost first, then
 * the state (idle, on cpu, waiting for cpu, blocked), the fiber and the
 * thread as the root. So the root frames are the folded output's and
 * pprof's flat time lands where the time went: on the fd, in the loop's
 * poll, or on the state itself when there is no stack (on cpu). Each
 * distinct label is one function and one location, in one mapping that
 * says the functions are known (the frames are already named: pprof does
 * not try to symbolize). Samples also carry the labels "thread", "state"
 * and, by fiber, "fiber", for -tagfocus and Pyroscope's label queries.
 *
 * Values: [samples/count, wall/nanoseconds], wall = samples × the period
 * (1 s / rate), so every state keeps its share of wall time.
 */
#include "profile/profile_out.h"
#include "profile/profile_labels.h"
#include "profile/pprof/profile.pb-c.h"
#include "util/escape.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* string_table's fixed entries, before the labels */
enum {
	S_EMPTY, S_SAMPLES, S_COUNT, S_WALL, S_NANOSECONDS, S_THREAD, S_STATE, S_FIBER, S_MAPPING, S_TITLE,
	S_NFIXED
};

typedef Perftools__Profiles__Label pp_label;
typedef Perftools__Profiles__Sample pp_sample;

struct pprof_build {
	struct profile_labels labels;       /* label i: function and location i + 1 */
	size_t nsamples, nids, nlabels;     /* counted first, then filled */
	pp_sample *samples;
	pp_sample **sample_ptrs;
	uint64_t *ids;                      /* every sample's location ids */
	int64_t *values;                    /* 2 per sample */
	pp_label *tags;                     /* one per thread, fiber and state node */
	pp_label **tag_ptrs;                /* 3 per sample at most */
	int64_t period_ns;
	/* the walk */
	uint64_t path[PROFILE_MAX_PATH];    /* location ids from the thread down */
	enum profile_level level[PROFILE_MAX_PATH];
	int depth;
	pp_label *cur[3];                   /* thread, fiber, state of the path */
};

/* Counts samples, location ids and tagged nodes below n and indexes labels. */
static void count_below(struct pprof_build *b, const struct profile_node *n, int depth)
{
	for (const struct profile_node *c = n->child; c; c = c->next) {
		if (depth == PROFILE_MAX_PATH)
			return;
		profile_labels_index(&b->labels, c->label);
		if (c->level == PROFILE_L_THREAD || c->level == PROFILE_L_FIBER || c->level == PROFILE_L_STATE)
			b->nlabels++;
		if (c->self) {
			b->nsamples++;
			b->nids += (size_t)depth + 1;
		}
		count_below(b, c, depth + 1);
	}
}

static int tag_slot(enum profile_level l)
{
	return l == PROFILE_L_THREAD ? 0 : l == PROFILE_L_FIBER ? 1 : l == PROFILE_L_STATE ? 2 : -1;
}

/* The order of a path's levels in a pprof stack; frames keep their order
 * (innermost first), as do the levels' nodes in a path. */
static const enum profile_level leaf_first[] = {
	PROFILE_L_TARGET, PROFILE_L_SYSCALL, PROFILE_L_FRAME, PROFILE_L_STATE, PROFILE_L_FIBER, PROFILE_L_THREAD,
};

static void fill_below(struct pprof_build *b, const struct profile_node *n)
{
	for (const struct profile_node *c = n->child; c; c = c->next) {
		if (b->depth == PROFILE_MAX_PATH)
			return;
		long li = profile_labels_index(&b->labels, c->label);
		b->level[b->depth] = c->level;
		b->path[b->depth++] = (uint64_t)li + 1;
		int slot = tag_slot(c->level);
		pp_label *saved = slot >= 0 ? b->cur[slot] : NULL;
		if (slot >= 0) {
			static const int64_t keys[] = { S_THREAD, S_FIBER, S_STATE };
			pp_label *tag = &b->tags[b->nlabels++];
			perftools__profiles__label__init(tag);
			tag->key = keys[slot];
			tag->str = S_NFIXED + li;
			b->cur[slot] = tag;
		}
		if (c->self) {
			pp_sample *s = &b->samples[b->nsamples];
			perftools__profiles__sample__init(s);
			b->sample_ptrs[b->nsamples] = s;
			s->location_id = b->ids + b->nids;
			s->n_location_id = (size_t)b->depth;
			for (size_t k = 0; k < sizeof(leaf_first) / sizeof(leaf_first[0]); k++)
				for (int i = 0; i < b->depth; i++)
					if (b->level[i] == leaf_first[k])
						b->ids[b->nids++] = b->path[i];
			s->value = b->values + 2 * b->nsamples;
			s->n_value = 2;
			s->value[0] = (int64_t)c->self;
			s->value[1] = (int64_t)c->self * b->period_ns;
			s->label = b->tag_ptrs + 3 * b->nsamples;
			for (int k = 0; k < 3; k++)
				if (b->cur[k])
					s->label[s->n_label++] = b->cur[k];
			b->nsamples++;
		}
		fill_below(b, c);
		if (slot >= 0)
			b->cur[slot] = saved;
		b->depth--;
	}
}

/* Compresses len bytes of buf to out as one gzip member. */
static int gzip_to(FILE *out, const uint8_t *buf, size_t len)
{
	z_stream z = { 0 };
	/* 16 + 15: a gzip header and trailer around a 32 KiB-window deflate */
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + 15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	uint8_t chunk[65536];
	int zr = Z_OK;
	z.next_in = (uint8_t *)buf;
	do {
		/* avail_in is 32 bits: feed a huge buffer in slices */
		size_t left = len - (size_t)(z.next_in - buf);
		z.avail_in = left > (1u << 30) ? 1u << 30 : (unsigned)left;
		int flush = left > z.avail_in ? Z_NO_FLUSH : Z_FINISH;
		do {
			z.next_out = chunk;
			z.avail_out = sizeof(chunk);
			zr = deflate(&z, flush);
			size_t n = sizeof(chunk) - z.avail_out;
			if (n && fwrite(chunk, 1, n, out) != n) {
				deflateEnd(&z);
				return profile_out_result(out) ?: -EIO;
			}
		} while (z.avail_out == 0);
	} while (zr != Z_STREAM_END && zr != Z_STREAM_ERROR);
	deflateEnd(&z);
	return zr == Z_STREAM_END ? 0 : -EIO;
}

static void build_done(struct pprof_build *b)
{
	profile_labels_done(&b->labels);
	free(b->samples);
	free(b->sample_ptrs);
	free(b->ids);
	free(b->values);
	free(b->tags);
	free(b->tag_ptrs);
}

/* Packs the profile whose samples b holds and writes it gzipped. */
static int pack_and_write(FILE *out, struct pprof_build *b, const struct profile_meta *meta)
{
	size_t nfn = b->labels.n;
	/* the title holds a comm, anyone's bytes; labels are clean already.
	 * Readers of proto3 may refuse a string that is not UTF-8. */
	char title[2 * PROFILE_LABEL_MAX];
	esc_copy(title, sizeof(title), &esc_term, meta && meta->title ? meta->title : "loopstat profile", SIZE_MAX, NULL);
	const char *fixed[S_NFIXED] = {
		[S_EMPTY] = "", [S_SAMPLES] = "samples", [S_COUNT] = "count", [S_WALL] = "wall",
		[S_NANOSECONDS] = "nanoseconds", [S_THREAD] = "thread", [S_STATE] = "state", [S_FIBER] = "fiber",
		[S_MAPPING] = "[loopstat]",
		[S_TITLE] = title,
	};
	char **strings = malloc((S_NFIXED + nfn) * sizeof(*strings));
	Perftools__Profiles__Function *fns = malloc((nfn ? nfn : 1) * sizeof(*fns));
	Perftools__Profiles__Function **fn_ptrs = malloc((nfn ? nfn : 1) * sizeof(*fn_ptrs));
	Perftools__Profiles__Location *locs = malloc((nfn ? nfn : 1) * sizeof(*locs));
	Perftools__Profiles__Location **loc_ptrs = malloc((nfn ? nfn : 1) * sizeof(*loc_ptrs));
	Perftools__Profiles__Line *lines = malloc((nfn ? nfn : 1) * sizeof(*lines));
	Perftools__Profiles__Line **line_ptrs = malloc((nfn ? nfn : 1) * sizeof(*line_ptrs));
	uint8_t *buf = NULL;
	int err = -ENOMEM;
	if (!strings || !fns || !fn_ptrs || !locs || !loc_ptrs || !lines || !line_ptrs)
		goto out;
	/* the string table only borrows: protobuf-c packs from these pointers */
	for (size_t i = 0; i < S_NFIXED; i++)
		strings[i] = (char *)fixed[i];
	for (size_t i = 0; i < nfn; i++) {
		strings[S_NFIXED + i] = (char *)b->labels.label[i];
		perftools__profiles__function__init(&fns[i]);
		fns[i].id = i + 1;
		fns[i].name = (int64_t)(S_NFIXED + i);
		fn_ptrs[i] = &fns[i];
		perftools__profiles__line__init(&lines[i]);
		lines[i].function_id = i + 1;
		line_ptrs[i] = &lines[i];
		perftools__profiles__location__init(&locs[i]);
		locs[i].id = i + 1;
		locs[i].mapping_id = 1;
		locs[i].line = &line_ptrs[i];
		locs[i].n_line = 1;
		loc_ptrs[i] = &locs[i];
	}
	Perftools__Profiles__ValueType vt_samples = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
	Perftools__Profiles__ValueType vt_wall = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
	vt_samples.type = S_SAMPLES, vt_samples.unit = S_COUNT;
	vt_wall.type = S_WALL, vt_wall.unit = S_NANOSECONDS;
	Perftools__Profiles__ValueType *types[] = { &vt_samples, &vt_wall };
	Perftools__Profiles__Mapping map = PERFTOOLS__PROFILES__MAPPING__INIT, *maps[] = { &map };
	map.id = 1;
	map.filename = S_MAPPING;
	map.has_functions = 1;
	int64_t comment = S_TITLE;
	Perftools__Profiles__Profile p = PERFTOOLS__PROFILES__PROFILE__INIT;
	p.sample_type = types, p.n_sample_type = 2;
	p.sample = b->sample_ptrs, p.n_sample = b->nsamples;
	p.mapping = maps, p.n_mapping = 1;
	p.location = loc_ptrs, p.n_location = nfn;
	p.function = fn_ptrs, p.n_function = nfn;
	p.string_table = strings, p.n_string_table = S_NFIXED + nfn;
	p.period_type = &vt_wall;
	p.period = b->period_ns;
	p.default_sample_type = S_WALL;
	p.comment = &comment, p.n_comment = 1;
	if (meta && meta->start_unix > 0)
		p.time_nanos = (int64_t)llround(meta->start_unix * 1e9);
	if (meta && meta->duration_s > 0)
		p.duration_nanos = (int64_t)llround(meta->duration_s * 1e9);
	size_t len = perftools__profiles__profile__get_packed_size(&p);
	if (!(buf = malloc(len ? len : 1)))
		goto out;
	perftools__profiles__profile__pack(&p, buf);
	err = gzip_to(out, buf, len);
	if (err == 0)
		err = profile_out_result(out);
out:
	free(buf);
	free(line_ptrs), free(lines), free(loc_ptrs), free(locs), free(fn_ptrs), free(fns), free(strings);
	return err;
}

int profile_write_pprof(FILE *out, struct profile_tree *t, const struct profile_meta *meta)
{
	struct pprof_build b = { 0 };
	profile_tree_sort(t);
	const struct profile_node *root = profile_tree_root(t);
	if (profile_labels_init(&b.labels, profile_tree_nodes(t)) < 0)
		return -ENOMEM;
	count_below(&b, root, 0);
	/* the rate the sampler aimed at; a tree without one is at the default 1 kHz */
	double rate = meta && meta->rate_hz > 0 ? meta->rate_hz : 1000;
	b.period_ns = (int64_t)llround(1e9 / rate);
	b.samples = calloc(b.nsamples + 1, sizeof(*b.samples));
	b.sample_ptrs = calloc(b.nsamples + 1, sizeof(*b.sample_ptrs));
	b.ids = calloc(b.nids + 1, sizeof(*b.ids));
	b.values = calloc(2 * b.nsamples + 1, sizeof(*b.values));
	b.tags = calloc(b.nlabels + 1, sizeof(*b.tags));
	b.tag_ptrs = calloc(3 * b.nsamples + 1, sizeof(*b.tag_ptrs));
	int err = -ENOMEM;
	if (b.samples && b.sample_ptrs && b.ids && b.values && b.tags && b.tag_ptrs) {
		b.nsamples = b.nids = b.nlabels = 0;
		fill_below(&b, root);
		err = pack_and_write(out, &b, meta);
	}
	build_done(&b);
	return err;
}
