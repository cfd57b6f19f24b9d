/*
 * diff_profile.c — two recordings' trees walked side by side, siblings
 * paired by label (sorted, so a hostile file's wide node costs n log n),
 * each frame's change judged on its own counts.
 */
#include "diff/diff_profile.h"
#include "cli.h"
#include "profile/profile_acc.h"
#include "profile/profile_out.h"
#include "util/json.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* One recording into an accumulator (threads by name) and its tree. -1, or
 * an exit code after a message; *acc is the caller's either way. */
static int load_tree(const char *path, struct profile_acc **acc, struct profile_tree **out, double *duration,
		     double *rate)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		int e = errno;
		cli_error("open(%s): %s", path, strerror(e));
		return e == ENOENT ? EXIT_USAGE : EXIT_FAIL;
	}
	struct rec_meta rm;
	long line = 0;
	*acc = profile_acc_new(PROFILE_ACC_BY_NAME);
	int err = *acc ? profile_acc_read(*acc, f, &rm, &line) : -ENOMEM;
	fclose(f);
	if (rec_format_error(err)) {
		cli_error("%s:%ld: %s", path, line, rec_format_error(err));
		return EXIT_USAGE;
	}
	if (err == -E2BIG) {
		cli_error("%s:%ld: past what a diff reads (lines of %d bytes, %u strings, %u threads, %u tree nodes): "
			  "refused", path, line, REC_MAX_LINE, REC_MAX_STRINGS, PROFILE_ACC_MAX_THREADS,
			  PROFILE_TREE_MAX_NODES);
		return EXIT_USAGE;
	}
	if (err < 0) {
		cli_error("reading %s: %s", path, strerror(-err));
		return EXIT_FAIL;
	}
	if (!(*out = profile_acc_finish(*acc))) {
		cli_error("out of memory");
		return EXIT_FAIL;
	}
	if (profile_acc_samples(*acc, NULL, NULL) == 0) {
		cli_error("%s holds no samples", path);
		return EXIT_NOTHING;
	}
	*duration = rm.cut ? (double)rm.last_t_ns / 1e9 : rm.duration_s;
	*rate = rm.rate_hz;
	return -1;
}

/* ---- walking both trees ---- */

static int by_label(const void *x, const void *y)
{
	const struct profile_node *const *a = x, *const *b = y;
	return strcmp((*a)->label, (*b)->label);
}

/* n's children sorted by label, into a new array (*k of them); NULL n: none. */
static const struct profile_node **children(const struct profile_node *n, size_t *k)
{
	*k = 0;
	for (const struct profile_node *c = n ? n->child : NULL; c; c = c->next)
		(*k)++;
	const struct profile_node **v = malloc((*k ? *k : 1) * sizeof(*v));
	if (!v)
		return NULL;
	size_t i = 0;
	for (const struct profile_node *c = n ? n->child : NULL; c; c = c->next)
		v[i++] = c;
	qsort(v, *k, sizeof(*v), by_label);
	return v;
}

static int add_frame(struct diff_profile *d, const struct profile_node *a, const struct profile_node *b,
		     double basis_a, double basis_b)
{
	if (d->n == d->cap) {
		size_t cap = d->cap ? 2 * d->cap : 256;
		struct diff_frame *v = realloc(d->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		d->v = v;
		d->cap = cap;
	}
	struct diff_frame *f = &d->v[d->n++];
	memset(f, 0, sizeof(*f));
	f->a = a;
	f->b = b;
	double ka = a ? (double)a->count : 0, kb = b ? (double)b->count : 0;
	f->pa = basis_a > 0 ? 100 * ka / basis_a : NAN;
	f->pb = basis_b > 0 ? 100 * kb / basis_b : NAN;
	int err = est_share_diff(ka, basis_a, kb, basis_b, 100, &f->change);
	if (err < 0)
		return err;
	f->significant = f->change.ok && (f->change.lo > 0 || f->change.hi < 0);
	d->nsignificant += f->significant;
	return 0;
}

/* Pairs a's and b's children (either may be NULL) and recurses. Thread
 * nodes set the bases: the shares are of the thread's samples. */
static int walk(struct diff_profile *d, const struct profile_node *a, const struct profile_node *b, double basis_a,
		double basis_b)
{
	size_t na, nb;
	const struct profile_node **ca = children(a, &na), **cb = children(b, &nb);
	int err = ca && cb ? 0 : -ENOMEM;
	size_t i = 0, j = 0;
	while (!err && (i < na || j < nb)) {
		int c = i == na ? 1 : j == nb ? -1 : strcmp(ca[i]->label, cb[j]->label);
		const struct profile_node *x = c <= 0 ? ca[i++] : NULL, *y = c >= 0 ? cb[j++] : NULL;
		const struct profile_node *any = x ? x : y;
		double ba = basis_a, bb = basis_b;
		if (any->level == PROFILE_L_THREAD) {
			ba = x ? (double)x->count : 0;
			bb = y ? (double)y->count : 0;
		} else {
			err = add_frame(d, x, y, ba, bb);
		}
		if (!err)
			err = walk(d, x, y, ba, bb);
	}
	free(ca);
	free(cb);
	return err;
}

int diff_profile_load(struct diff_profile *d, const char *a, const char *b)
{
	memset(d, 0, sizeof(*d));
	int rc = load_tree(a, &d->acc_a, &d->ta, &d->duration_a, &d->rate_a);
	if (rc < 0)
		rc = load_tree(b, &d->acc_b, &d->tb, &d->duration_b, &d->rate_b);
	if (rc >= 0)
		return rc;
	int err = walk(d, profile_tree_root(d->ta), profile_tree_root(d->tb), 0, 0);
	d->nb = profile_tree_nodes(d->tb);
	if (!err && !(d->by_b = calloc(d->nb, sizeof(*d->by_b))))
		err = -ENOMEM;
	for (size_t i = 0; !err && i < d->n; i++)
		if (d->v[i].b && d->v[i].b->id < d->nb)
			d->by_b[d->v[i].b->id] = &d->v[i];
	if (err < 0) {
		cli_error("comparing the profiles: %s", strerror(-err));
		return EXIT_FAIL;
	}
	return -1;
}

void diff_profile_done(struct diff_profile *d)
{
	profile_acc_delete(d->acc_a);
	profile_acc_delete(d->acc_b);
	free(d->v);
	free(d->by_b);
	memset(d, 0, sizeof(*d));
}

/* ---- outputs ---- */

/* The path of n from its thread, ';'-separated, as folded prints it. */
static void write_path(FILE *f, const struct profile_node *n)
{
	if (!n || n->level == PROFILE_L_ROOT)
		return;
	if (n->parent && n->parent->level != PROFILE_L_ROOT) {
		write_path(f, n->parent);
		fputc(';', f);
	}
	fputs(n->label, f);
}

static int by_change(const void *x, const void *y)
{
	const struct diff_frame *const *a = x, *const *b = y;
	double da = fabs((*a)->change.est), db = fabs((*b)->change.est);
	return da < db ? 1 : da > db ? -1 : 0;
}

/* n's child labelled like c, NULL if none. */
static const struct profile_node *child_named(const struct profile_node *n, const char *label)
{
	for (const struct profile_node *c = n ? n->child : NULL; c; c = c->next)
		if (strcmp(c->label, label) == 0)
			return c;
	return NULL;
}

/* A frame whose whole count goes on into one child in both runs says
 * nothing its child does not: the text shows the chain once, at its end,
 * whose path names every frame of it. */
static int chain_link(const struct diff_frame *fr)
{
	const struct profile_node *n = fr->b ? fr->b : fr->a, *o = fr->b ? fr->a : NULL;
	for (const struct profile_node *c = n->child; c; c = c->next) {
		if (c->count != n->count)
			continue;
		const struct profile_node *oc = o ? child_named(o, c->label) : NULL;
		if (!o || (oc && oc->count == o->count))
			return 1;
	}
	return 0;
}

static double share_or_zero(double p)
{
	return isnan(p) ? 0 : p;
}

static int write_text(FILE *f, struct diff_profile *d)
{
	fprintf(f, "differential profile: each frame's share of its thread's samples, before -> after;\n"
		   "%zu of %zu frames changed beyond noise (95%% interval of the change excludes 0), largest first (a chain of frames once, at its end):\n",
		d->nsignificant, d->n);
	const struct diff_frame **v = malloc((d->nsignificant ? d->nsignificant : 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	size_t k = 0;
	for (size_t i = 0; i < d->n; i++)
		if (d->v[i].significant && !chain_link(&d->v[i]))
			v[k++] = &d->v[i];
	qsort(v, k, sizeof(*v), by_change);
	for (size_t i = 0; i < k; i++) {
		const struct diff_frame *fr = v[i];
		fprintf(f, "  %+7.2f [%+.2f, %+.2f] %6.2f%% -> %6.2f%%  %-6s ", fr->change.est, fr->change.lo,
			fr->change.hi, share_or_zero(fr->pa), share_or_zero(fr->pb), fr->change.est > 0 ? "grew" : "shrank");
		write_path(f, fr->b ? fr->b : fr->a);
		fputc('\n', f);
	}
	free(v);
	return profile_out_result(f);
}

/* Every stack's own samples in both runs: difffolded.pl's "path a b". */
static int write_folded(FILE *f, const struct diff_profile *d)
{
	for (size_t i = 0; i < d->n; i++) {
		const struct diff_frame *fr = &d->v[i];
		uint64_t sa = fr->a ? fr->a->self : 0, sb = fr->b ? fr->b->self : 0;
		if (!sa && !sb)
			continue;
		write_path(f, fr->b ? fr->b : fr->a);
		fprintf(f, " %llu %llu\n", (unsigned long long)sa, (unsigned long long)sb);
	}
	return profile_out_result(f);
}

/* The svg writer's hook: significant frames red (grew) or blue (shrank),
 * deeper with the change (full at 20 points); the rest grey. */
static int fill(void *arg, const struct profile_node *n, char *buf, size_t len, char *note, size_t nlen)
{
	const struct diff_profile *d = arg;
	const struct diff_frame *fr = n->id < d->nb ? d->by_b[n->id] : NULL;
	if (!fr) {
		snprintf(buf, len, "rgb(215,215,215)");
		return 1;
	}
	if (fr->change.ok)
		snprintf(note, nlen, "change %+.2f points [%+.2f, %+.2f] from %.2f%%%s", fr->change.est, fr->change.lo,
			 fr->change.hi, share_or_zero(fr->pa), fr->significant ? "" : ", noise");
	if (!fr->significant) {
		snprintf(buf, len, "rgb(215,215,215)");
		return 1;
	}
	double x = fmin(1, fabs(fr->change.est) / 20);
	unsigned other = (unsigned)(220 - 170 * x);
	if (fr->change.est > 0)
		snprintf(buf, len, "rgb(255,%u,%u)", other, other);
	else
		snprintf(buf, len, "rgb(%u,%u,255)", other, other);
	return 1;
}

int diff_profile_format_ok(const char *fmt)
{
	return strcmp(fmt, "text") == 0 || strcmp(fmt, "folded") == 0 || strcmp(fmt, "svg") == 0;
}

int diff_profile_write(FILE *f, const char *fmt, struct diff_profile *d, const char *title)
{
	if (strcmp(fmt, "text") == 0)
		return write_text(f, d);
	if (strcmp(fmt, "folded") == 0)
		return write_folded(f, d);
	if (strcmp(fmt, "svg") == 0) {
		struct profile_meta meta = { .title = title, .rate_hz = d->rate_b, .duration_s = d->duration_b,
					     .svg_fill = fill, .svg_arg = d };
		return profile_write_svg(f, d->tb, &meta);
	}
	return -EINVAL;
}

static void path_string(char *buf, size_t len, const struct profile_node *n)
{
	FILE *m = fmemopen(buf, len, "w");
	buf[0] = '\0';
	if (!m)
		return;
	write_path(m, n);
	fclose(m);
	buf[len - 1] = '\0';
}

void diff_profile_json(struct json *j, const struct diff_profile *d)
{
	json_key(j, "profile");
	json_object_begin(j);
	json_key(j, "frames");
	json_u64(j, d->n);
	json_key(j, "changed");
	json_array_begin(j);
	char path[4096];
	for (size_t i = 0; i < d->n; i++) {
		const struct diff_frame *fr = &d->v[i];
		if (!fr->significant)
			continue;
		path_string(path, sizeof(path), fr->b ? fr->b : fr->a);
		json_object_begin(j);
		json_key(j, "path");
		json_string(j, path);
		json_key(j, "a_pct");
		json_double(j, share_or_zero(fr->pa), 2);
		json_key(j, "b_pct");
		json_double(j, share_or_zero(fr->pb), 2);
		json_key(j, "change");
		json_double(j, fr->change.est, 2);
		json_key(j, "lo");
		json_double(j, fr->change.lo, 2);
		json_key(j, "hi");
		json_double(j, fr->change.hi, 2);
		json_object_end(j);
	}
	json_array_end(j);
	json_object_end(j);
}
