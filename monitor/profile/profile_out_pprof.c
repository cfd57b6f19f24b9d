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
 * (1 s / rate) × each sample's weight in the split (profile_node_weight),
 * so every state keeps the share of wall time the text gives it.
 *
 * Written as it is walked: a message's repeated fields may come in pieces
 * (protobuf concatenates them, and appends string_table's in order), so
 * each string, function, location and sample is packed on its own into
 * the gzip stream, and memory stays that of the label index, not of every
 * stack a deep tree holds.
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
	S_SERVICE, S_NFIXED
};

/* Profile's fields that are written piece by piece */
enum { F_SAMPLE = 2, F_LOCATION = 4, F_FUNCTION = 5, F_STRING = 6 };

/* protobuf-c packs into this: the bytes go through deflate to the file */
struct gz_sink {
	ProtobufCBuffer base;
	z_stream z;
	FILE *out;
	int err;                    /* the first error; nothing is written after it */
	uint8_t chunk[1 << 16];
};

static void sink_deflate(struct gz_sink *g, const uint8_t *data, size_t len, int flush)
{
	const uint8_t *end = data + len;
	int zr;
	g->z.next_in = (uint8_t *)data;
	do {
		/* avail_in is 32 bits: a huge piece goes in slices */
		size_t left = (size_t)(end - g->z.next_in);
		g->z.avail_in = left > (1u << 30) ? 1u << 30 : (unsigned)left;
		int f = left > g->z.avail_in ? Z_NO_FLUSH : flush;
		do {
			g->z.next_out = g->chunk;
			g->z.avail_out = sizeof(g->chunk);
			zr = deflate(&g->z, f);
			size_t n = sizeof(g->chunk) - g->z.avail_out;
			if (zr == Z_STREAM_ERROR) {
				g->err = -EIO;
				return;
			}
			if (n && fwrite(g->chunk, 1, n, g->out) != n) {
				g->err = profile_out_result(g->out) ?: -EIO;
				return;
			}
		} while (g->z.avail_out == 0);
	} while (g->z.next_in != end || (flush == Z_FINISH && zr != Z_STREAM_END));
}

static void sink_append(ProtobufCBuffer *b, size_t len, const uint8_t *data)
{
	struct gz_sink *g = (struct gz_sink *)b;
	if (!g->err && len)
		sink_deflate(g, data, len, Z_NO_FLUSH);
}

/* One more element of a repeated length-delimited field of Profile: its
 * key, its length as a varint, then len bytes from pack (or data). */
static void put_field(struct gz_sink *g, int field, size_t len, const ProtobufCMessage *msg, const char *data)
{
	uint8_t head[1 + 10];
	size_t n = 0;
	head[n++] = (uint8_t)(field << 3 | 2);   /* wire type 2: length-delimited */
	for (uint64_t v = len; ; v >>= 7) {
		head[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		if (v <= 0x7f)
			break;
	}
	sink_append(&g->base, n, head);
	if (msg)
		protobuf_c_message_pack_to_buffer(msg, &g->base);
	else
		sink_append(&g->base, len, (const uint8_t *)data);
}

static void put_message(struct gz_sink *g, int field, const ProtobufCMessage *msg)
{
	put_field(g, field, protobuf_c_message_get_packed_size(msg), msg, NULL);
}

/* The order of a path's levels in a pprof stack; frames keep their order
 * (innermost first), as do the levels' nodes in a path. */
static const enum profile_level leaf_first[] = {
	PROFILE_L_TARGET, PROFILE_L_SYSCALL, PROFILE_L_FRAME, PROFILE_L_STATE, PROFILE_L_FIBER, PROFILE_L_THREAD,
};

struct pprof_walk {
	struct gz_sink *g;
	struct profile_labels *labels;      /* label i: string S_NFIXED + i, function and location i + 1 */
	int64_t period_ns;
	uint64_t path[PROFILE_MAX_PATH];    /* location ids from the thread down */
	enum profile_level level[PROFILE_MAX_PATH];
	int depth;
	Perftools__Profiles__Label tag[4];  /* thread, fiber, state, service of the path */
	int tagged[4];
};

static int tag_slot(enum profile_level l)
{
	return l == PROFILE_L_THREAD ? 0 : l == PROFILE_L_FIBER ? 1 : l == PROFILE_L_STATE ? 2 : -1;
}

static void put_sample(struct pprof_walk *w, uint64_t self, double weight)
{
	uint64_t ids[PROFILE_MAX_PATH];
	size_t n = 0;
	for (size_t k = 0; k < sizeof(leaf_first) / sizeof(leaf_first[0]); k++)
		for (int i = 0; i < w->depth; i++)
			if (w->level[i] == leaf_first[k])
				ids[n++] = w->path[i];
	int64_t values[2] = { (int64_t)self, llround((double)self * (double)w->period_ns * weight) };
	Perftools__Profiles__Label *tags[4];
	size_t ntags = 0;
	for (int k = 0; k < 4; k++)
		if (w->tagged[k])
			tags[ntags++] = &w->tag[k];
	Perftools__Profiles__Sample s = PERFTOOLS__PROFILES__SAMPLE__INIT;
	s.location_id = ids, s.n_location_id = n;
	s.value = values, s.n_value = 2;
	s.label = tags, s.n_label = ntags;
	put_message(w->g, F_SAMPLE, &s.base);
}

static void samples_below(struct pprof_walk *w, const struct profile_node *n)
{
	for (const struct profile_node *c = n->child; c && !w->g->err; c = c->next) {
		if (w->depth == PROFILE_MAX_PATH)
			return;
		long li = profile_labels_index(w->labels, c->label);
		w->level[w->depth] = c->level;
		w->path[w->depth++] = (uint64_t)li + 1;
		int slot = tag_slot(c->level);
		if (slot >= 0) {
			/* one node of each of these levels on a path: no other to restore */
			static const int64_t keys[] = { S_THREAD, S_FIBER, S_STATE };
			perftools__profiles__label__init(&w->tag[slot]);
			w->tag[slot].key = keys[slot];
			w->tag[slot].str = S_NFIXED + li;
			w->tagged[slot] = 1;
		}
		/* the thread's service, a label of its own (pprof -tagfocus service=...) */
		const char *svc = c->level == PROFILE_L_THREAD ? profile_node_service(c) : NULL;
		if (svc) {
			perftools__profiles__label__init(&w->tag[3]);
			w->tag[3].key = S_SERVICE;
			w->tag[3].str = S_NFIXED + profile_labels_index(w->labels, svc);
			w->tagged[3] = 1;
		}
		if (c->self)
			put_sample(w, c->self, profile_node_weight(c));
		samples_below(w, c);
		if (slot >= 0)
			w->tagged[slot] = 0;
		if (svc)
			w->tagged[3] = 0;
		w->depth--;
	}
}

static void index_below(struct profile_labels *l, const struct profile_node *n, int depth)
{
	for (const struct profile_node *c = n->child; c && depth < PROFILE_MAX_PATH; c = c->next) {
		profile_labels_index(l, c->label);
		if (c->level == PROFILE_L_THREAD && profile_node_service(c))
			profile_labels_index(l, profile_node_service(c));
		index_below(l, c, depth + 1);
	}
}

/* The header, with the fixed strings: the first pieces of the Profile. */
static void put_header(struct gz_sink *g, const struct profile_meta *meta, int64_t period_ns)
{
	/* the title holds a comm, anyone's bytes; labels are clean already.
	 * Readers of proto3 may refuse a string that is not UTF-8. */
	char title[2 * PROFILE_LABEL_MAX];
	esc_copy(title, sizeof(title), &esc_term, meta && meta->title ? meta->title : "loopstat profile", SIZE_MAX, NULL);
	char *fixed[S_NFIXED] = {
		[S_EMPTY] = "", [S_SAMPLES] = "samples", [S_COUNT] = "count", [S_WALL] = "wall",
		[S_NANOSECONDS] = "nanoseconds", [S_THREAD] = "thread", [S_STATE] = "state", [S_FIBER] = "fiber",
		[S_MAPPING] = "[loopstat]", [S_TITLE] = title, [S_SERVICE] = "service",
	};
	Perftools__Profiles__ValueType vt_samples = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
	Perftools__Profiles__ValueType vt_wall = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
	vt_samples.type = S_SAMPLES, vt_samples.unit = S_COUNT;
	vt_wall.type = S_WALL, vt_wall.unit = S_NANOSECONDS;
	Perftools__Profiles__ValueType *types[] = { &vt_samples, &vt_wall };
	/* one mapping that says the functions are known: pprof never symbolizes */
	Perftools__Profiles__Mapping map = PERFTOOLS__PROFILES__MAPPING__INIT, *maps[] = { &map };
	map.id = 1;
	map.filename = S_MAPPING;
	map.has_functions = 1;
	int64_t comment = S_TITLE;
	Perftools__Profiles__Profile p = PERFTOOLS__PROFILES__PROFILE__INIT;
	p.sample_type = types, p.n_sample_type = 2;
	p.mapping = maps, p.n_mapping = 1;
	p.string_table = fixed, p.n_string_table = S_NFIXED;
	p.period_type = &vt_wall;
	p.period = period_ns;
	p.default_sample_type = S_WALL;
	p.comment = &comment, p.n_comment = 1;
	if (meta && meta->start_unix > 0)
		p.time_nanos = (int64_t)llround(meta->start_unix * 1e9);
	if (meta && meta->duration_s > 0)
		p.duration_nanos = (int64_t)llround(meta->duration_s * 1e9);
	protobuf_c_message_pack_to_buffer(&p.base, &g->base);
}

/* Label i as string S_NFIXED + i, function i + 1 and location i + 1. */
static void put_label(struct gz_sink *g, size_t i, const char *label)
{
	put_field(g, F_STRING, strlen(label), NULL, label);
	Perftools__Profiles__Function fn = PERFTOOLS__PROFILES__FUNCTION__INIT;
	fn.id = i + 1;
	fn.name = (int64_t)(S_NFIXED + i);
	put_message(g, F_FUNCTION, &fn.base);
	Perftools__Profiles__Line line = PERFTOOLS__PROFILES__LINE__INIT, *lines[] = { &line };
	line.function_id = i + 1;
	Perftools__Profiles__Location loc = PERFTOOLS__PROFILES__LOCATION__INIT;
	loc.id = i + 1;
	loc.mapping_id = 1;
	loc.line = lines, loc.n_line = 1;
	put_message(g, F_LOCATION, &loc.base);
}

int profile_write_pprof(FILE *out, struct profile_tree *t, const struct profile_meta *meta)
{
	struct profile_labels labels;
	profile_tree_sort(t);
	const struct profile_node *root = profile_tree_root(t);
	/* every node's label, and a service name per thread node at most */
	if (profile_labels_init(&labels, 2 * profile_tree_nodes(t)) < 0)
		return -ENOMEM;
	index_below(&labels, root, 0);
	struct gz_sink *g = calloc(1, sizeof(*g));
	/* 16 + 15: a gzip header and trailer around a 32 KiB-window deflate */
	if (!g || deflateInit2(&g->z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + 15, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		free(g);
		profile_labels_done(&labels);
		return -ENOMEM;
	}
	g->base.append = sink_append;
	g->out = out;
	/* the rate the sampler aimed at; a tree without one is at the default 1 kHz */
	double rate = meta && meta->rate_hz > 0 ? meta->rate_hz : 1000;
	struct pprof_walk w = { .g = g, .labels = &labels, .period_ns = (int64_t)llround(1e9 / rate) };
	put_header(g, meta, w.period_ns);
	for (size_t i = 0; i < labels.n && !g->err; i++)
		put_label(g, i, labels.label[i]);
	samples_below(&w, root);
	static const uint8_t nothing[1];   /* not NULL: NULL + 0 is undefined */
	if (!g->err)
		sink_deflate(g, nothing, 0, Z_FINISH);
	deflateEnd(&g->z);
	int err = g->err ? g->err : profile_out_result(out);
	free(g);
	profile_labels_done(&labels);
	return err;
}
