/*
 * profile_out_speedscope.c — speedscope's file format
 * (https://www.speedscope.app/file-format-schema.json): shared frames, and
 * one "sampled" profile per thread, or per fiber tag in a by-fiber tree.
 *
 * A stack is the node path below the thread (or fiber): state, syscall,
 * target, then the frames, as in the folded output, so speedscope's
 * left-heavy and sandwich views group by state first. Weights are sample
 * counts (unit "none").
 */
#include "profile/profile_out.h"
#include "profile/profile_labels.h"
#include "util/json.h"

#include <errno.h>

#ifndef LOOPSTAT_VERSION
#define LOOPSTAT_VERSION "dev"
#endif

static int is_profile_node(const struct profile_node *n, unsigned flags)
{
	return n->level == ((flags & PROFILE_TREE_BY_FIBER) ? PROFILE_L_FIBER : PROFILE_L_THREAD);
}

/* Indexes every label below the profile nodes, in depth-first order. */
static void index_below(struct profile_labels *f, const struct profile_node *n)
{
	for (const struct profile_node *c = n->child; c; c = c->next) {
		profile_labels_index(f, c->label);
		index_below(f, c);
	}
}

struct sample_walk {
	struct json *j;
	struct profile_labels *f;
	long stack[PROFILE_MAX_PATH];
	int depth;
	int weights; /* second pass: write weights instead of stacks */
};

static void samples_below(struct sample_walk *w, const struct profile_node *n)
{
	for (const struct profile_node *c = n->child; c; c = c->next) {
		if (w->depth == PROFILE_MAX_PATH)
			return;
		w->stack[w->depth++] = profile_labels_index(w->f, c->label);
		if (c->self) {
			if (w->weights) {
				json_u64(w->j, c->self);
			} else {
				json_array_begin(w->j);
				for (int i = 0; i < w->depth; i++)
					json_i64(w->j, w->stack[i]);
				json_array_end(w->j);
			}
		}
		samples_below(w, c);
		w->depth--;
	}
}

static void write_profile(struct json *j, struct profile_labels *f, const struct profile_node *p)
{
	char name[3 * PROFILE_LABEL_MAX + 24], thread[2 * PROFILE_LABEL_MAX + 16];
	profile_thread_title(p->level == PROFILE_L_FIBER ? p->parent : p, thread, sizeof(thread));
	if (p->level == PROFILE_L_FIBER)
		snprintf(name, sizeof(name), "%s / %s", thread, p->label);
	else
		snprintf(name, sizeof(name), "%s", thread);
	json_object_begin(j);
	json_key(j, "type");
	json_string(j, "sampled");
	json_key(j, "name");
	json_string(j, name);
	json_key(j, "unit");
	json_string(j, "none");
	json_key(j, "startValue");
	json_u64(j, 0);
	json_key(j, "endValue");
	json_u64(j, p->count);
	struct sample_walk w = { .j = j, .f = f };
	json_key(j, "samples");
	json_array_begin(j);
	samples_below(&w, p);
	json_array_end(j);
	w.weights = 1;
	json_key(j, "weights");
	json_array_begin(j);
	samples_below(&w, p);
	json_array_end(j);
	json_object_end(j);
}

static void each_profile(const struct profile_node *n, unsigned flags,
			 void (*fn)(const struct profile_node *p, void *arg), void *arg)
{
	for (const struct profile_node *c = n->child; c; c = c->next) {
		if (is_profile_node(c, flags))
			fn(c, arg);
		else if (c->level < PROFILE_L_FIBER)
			each_profile(c, flags, fn, arg);
	}
}

static void index_profile(const struct profile_node *p, void *arg) { index_below(arg, p); }

struct write_arg {
	struct json *j;
	struct profile_labels *f;
};

static void write_one(const struct profile_node *p, void *arg)
{
	struct write_arg *a = arg;
	write_profile(a->j, a->f, p);
}

int profile_write_speedscope(FILE *out, struct profile_tree *t, const struct profile_meta *meta)
{
	struct profile_labels f;
	profile_tree_sort(t);
	if (profile_labels_init(&f, profile_tree_nodes(t)) < 0)
		return -ENOMEM;
	unsigned flags = profile_tree_flags(t);
	const struct profile_node *root = profile_tree_root(t);
	each_profile(root, flags, index_profile, &f);

	struct json j;
	json_init(&j, out);
	json_object_begin(&j);
	json_key(&j, "$schema");
	json_string(&j, "https://www.speedscope.app/file-format-schema.json");
	json_key(&j, "name");
	json_string(&j, meta && meta->title ? meta->title : "loopstat profile");
	json_key(&j, "exporter");
	json_string(&j, "loopstat " LOOPSTAT_VERSION);
	json_key(&j, "activeProfileIndex");
	json_u64(&j, 0);
	json_key(&j, "shared");
	json_object_begin(&j);
	json_key(&j, "frames");
	json_array_begin(&j);
	for (size_t i = 0; i < f.n; i++) {
		json_object_begin(&j);
		json_key(&j, "name");
		json_string(&j, f.label[i]);
		json_object_end(&j);
	}
	json_array_end(&j);
	json_object_end(&j);
	json_key(&j, "profiles");
	json_array_begin(&j);
	struct write_arg a = { &j, &f };
	each_profile(root, flags, write_one, &a);
	json_array_end(&j);
	json_object_end(&j);
	fputc('\n', out);
	profile_labels_done(&f);
	return profile_out_result(out);
}
