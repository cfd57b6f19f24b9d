/*
 * profile_out.c — the text report, folded stacks and JSON version 1.
 */
#include "profile/profile_out.h"
#include "util/escape.h"
#include "util/json.h"

#include <errno.h>
#include <math.h>
#include <string.h>

static const char *const format_names[] = {
#define PROFILE_FMT_X(e, name) [PROFILE_FMT_##e] = name,
	PROFILE_FORMATS(PROFILE_FMT_X)
#undef PROFILE_FMT_X
};

int profile_format_parse(const char *name, enum profile_format *fmt)
{
	for (size_t i = 0; name && i < PROFILE_NFORMATS; i++)
		if (strcmp(name, format_names[i]) == 0) {
			*fmt = (enum profile_format)i;
			return 0;
		}
	return -EINVAL;
}

const char *profile_format_name(enum profile_format fmt)
{
	return (unsigned)fmt < PROFILE_NFORMATS ? format_names[fmt] : NULL;
}

int profile_write(FILE *out, enum profile_format fmt, struct profile_tree *t,
		  const struct profile_meta *meta, const struct profile_text_opts *opts)
{
	/* what a person reads shows identical threads once; the data formats keep each */
	if ((fmt == PROFILE_FMT_TEXT || fmt == PROFILE_FMT_SVG) && !(meta && meta->threads)) {
		int err = profile_tree_merge_threads(t);
		if (err < 0)
			return err;
	}
	switch (fmt) {
	case PROFILE_FMT_TEXT: return profile_write_text(out, t, meta, opts);
	case PROFILE_FMT_FOLDED: return profile_write_folded(out, t);
	case PROFILE_FMT_SPEEDSCOPE: return profile_write_speedscope(out, t, meta);
	case PROFILE_FMT_SVG: return profile_write_svg(out, t, meta);
	case PROFILE_FMT_JSON: return profile_write_json(out, t, meta);
	case PROFILE_FMT_PPROF: return profile_write_pprof(out, t, meta);
	case PROFILE_NFORMATS: break;
	}
	return -EINVAL;
}

int profile_out_result(FILE *out)
{
	errno = 0;   /* the first flush after a failed write gives its cause (ENOSPC) */
	return fflush(out) == 0 && !ferror(out) ? 0 : errno ? -errno : -EIO;
}

const char *profile_thread_service(const struct profile_node *n)
{
	const char *svc = profile_node_service(n);
	const char *name = strchr(n->label, ' ');   /* "pid/tid name": a service that is the name says nothing */
	return svc && !(name && strcmp(name + 1, svc) == 0) ? svc : NULL;
}

void profile_thread_title(const struct profile_node *n, char *buf, size_t len)
{
	const char *svc = profile_thread_service(n);
	if (svc)
		snprintf(buf, len, "%s (service %s)", n->label, svc);
	else
		snprintf(buf, len, "%s", n->label);
}

/* ---- text ---- */

struct text_walk {
	FILE *out;
	struct profile_text_opts o;
};

static void text_node(struct text_walk *w, const struct profile_node *n, int indent, int frames)
{
	double ci;
	double pct = profile_node_share(n, &ci);
	if (n->level != PROFILE_L_THREAD && w->o.min_pct > 0 && !(pct >= w->o.min_pct))
		return;
	if (n->level == PROFILE_L_FRAME && w->o.max_frames > 0 && ++frames > w->o.max_frames)
		return;
	if (n->level == PROFILE_L_THREAD) {
		const char *svc = profile_thread_service(n);
		fprintf(w->out, "\n%s: %llu samples (%.1f%% of all)%s%s\n", n->label, (unsigned long long)n->count, pct,
			svc ? ", service " : "", svc ? svc : "");
		fputs("   share   ±95%  samples  where\n", w->out);
	} else {
		fprintf(w->out, "  %5.1f%% %6.1f %8llu  %*s%s%s\n", pct, ci, (unsigned long long)n->count,
			2 * indent, "", n->level == PROFILE_L_FIBER ? "fiber " : "", n->label);
	}
	int child_indent = n->level == PROFILE_L_THREAD ? 0 : indent + 1;
	for (const struct profile_node *c = n->child; c; c = c->next)
		text_node(w, c, child_indent, frames);
}

int profile_write_text(FILE *out, struct profile_tree *t, const struct profile_meta *meta,
		       const struct profile_text_opts *opts)
{
	struct text_walk w = { .out = out, .o = PROFILE_TEXT_DEFAULTS };
	if (opts)
		w.o = *opts;
	profile_tree_sort(t);
	const struct profile_node *root = profile_tree_root(t);
	/* the title holds the target's comm, or a recording's title: anyone's bytes */
	fputs("loopstat profile: ", out);
	esc_fputs(out, &esc_term, meta && meta->title ? meta->title : "all sampled threads");
	fputc('\n', out);
	fprintf(out, "%llu samples", (unsigned long long)root->count);
	if (meta && meta->duration_s > 0)
		fprintf(out, " over %.1f s", meta->duration_s);
	if (meta && meta->rate_hz > 0)
		fprintf(out, " at %.0f Hz", meta->rate_hz);
	fputs("; shares are of each thread's wall time, with their 95% interval\n", out);
	if (root->count == 0)
		fputs("no samples\n", out);
	for (const struct profile_node *c = root->child; c; c = c->next)
		text_node(&w, c, 0, 0);
	if (w.o.min_pct > 0)
		fprintf(out, "\n(rows under %.1f%% not shown)\n", w.o.min_pct);
	return profile_out_result(out);
}

/* ---- folded ---- */

struct folded_walk {
	FILE *out;
	const char *path[PROFILE_MAX_PATH]; /* labels from the thread down */
	int n;
};

static void folded_node(struct folded_walk *w, const struct profile_node *n)
{
	if (w->n == PROFILE_MAX_PATH)
		return;
	w->path[w->n++] = n->label;
	if (n->self) {
		for (int i = 0; i < w->n; i++) {
			if (i)
				fputc(';', w->out);
			fputs(w->path[i], w->out);
		}
		fprintf(w->out, " %llu\n", (unsigned long long)n->self);
	}
	for (const struct profile_node *c = n->child; c; c = c->next)
		folded_node(w, c);
	w->n--;
}

int profile_write_folded(FILE *out, struct profile_tree *t)
{
	struct folded_walk w = { .out = out };
	profile_tree_sort(t);
	for (const struct profile_node *c = profile_tree_root(t)->child; c; c = c->next)
		folded_node(&w, c);
	return profile_out_result(out);
}

/* ---- json ---- */

static void json_node(struct json *j, const struct profile_node *n, long parent, long *next_id)
{
	long id = (*next_id)++;
	double ci;
	double pct = profile_node_share(n, &ci);
	json_object_begin(j);
	json_key(j, "id");
	json_i64(j, id);
	json_key(j, "parent");
	if (parent < 0)
		json_null(j);
	else
		json_i64(j, parent);
	json_key(j, "level");
	json_string(j, profile_level_name(n->level));
	json_key(j, "name");
	json_string(j, n->label);
	const char *service = profile_node_service(n);
	if (n->level == PROFILE_L_THREAD && service) {
		/* JSON v1 gains a key: the thread's systemd unit, container, or its name */
		json_key(j, "service");
		json_string(j, service);
	}
	json_key(j, "samples");
	json_u64(j, n->count);
	json_key(j, "self");
	json_u64(j, n->self);
	json_key(j, "share_pct");
	json_double(j, pct, 2);
	json_key(j, "ci95_pts");
	json_double(j, ci, 2);
	json_object_end(j);
	for (const struct profile_node *c = n->child; c; c = c->next)
		json_node(j, c, id, next_id);
}

int profile_write_json(FILE *out, struct profile_tree *t, const struct profile_meta *meta)
{
	struct json j;
	profile_tree_sort(t);
	const struct profile_node *root = profile_tree_root(t);
	json_init(&j, out);
	json_object_begin(&j);
	json_key(&j, "version");
	json_u64(&j, 1);
	json_key(&j, "kind");
	json_string(&j, "profile");
	json_key(&j, "title");
	json_string(&j, meta && meta->title ? meta->title : "");
	json_key(&j, "samples");
	json_u64(&j, root->count);
	json_key(&j, "rate_hz");
	json_double(&j, meta && meta->rate_hz > 0 ? meta->rate_hz : NAN, 1);
	json_key(&j, "duration_s");
	json_double(&j, meta && meta->duration_s > 0 ? meta->duration_s : NAN, 3);
	json_key(&j, "by_fiber");
	json_boolean(&j, (profile_tree_flags(t) & PROFILE_TREE_BY_FIBER) != 0);
	/* flat, in depth-first order, parents before children: a nested tree
	 * would be as deep as the deepest stack */
	json_key(&j, "nodes");
	json_array_begin(&j);
	long next_id = 0;
	json_node(&j, root, -1, &next_id);
	json_array_end(&j);
	json_object_end(&j);
	fputc('\n', out);
	return profile_out_result(out);
}
