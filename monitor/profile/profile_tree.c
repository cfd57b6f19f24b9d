/*
 * profile_tree.c — the sample trie: insert along a path, count, sort.
 *
 * Children are a sibling list searched linearly: fan-out is small (a few
 * states, a handful of syscalls and call sites), and a list keeps the
 * order stable and sorting cheap.
 */
#include "profile/profile_tree.h"
#include "util/textsafe.h"
#include "model/model.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct profile_tree {
	struct profile_node root;
	unsigned flags;
	size_t   nodes;
	size_t   next_id;    /* never reused, even after a failed insert is pruned */
	int      depth;
};

static const char *const state_names[PROFILE_NSTATES] = {
	[PROFILE_IDLE] = "idle",
	[PROFILE_ON_CPU] = "on cpu",
	[PROFILE_CPU_WAIT] = "waiting for cpu",
	[PROFILE_BLOCKED] = "blocked",
};

const char *profile_state_name(enum profile_state s)
{
	return (unsigned)s < PROFILE_NSTATES ? state_names[s] : "?";
}

const char *profile_level_name(enum profile_level l)
{
	static const char *const names[] = { "all", "thread", "fiber", "state", "syscall", "target", "frame" };
	return (unsigned)l < sizeof(names) / sizeof(names[0]) ? names[l] : "?";
}


struct profile_tree *profile_tree_new(unsigned flags)
{
	struct profile_tree *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->root.label = strdup("all");
	if (!t->root.label) {
		free(t);
		errno = ENOMEM;
		return NULL;
	}
	t->root.level = PROFILE_L_ROOT;
	t->flags = flags;
	t->nodes = 1;
	return t;
}

static void free_children(struct profile_node *n)
{
	struct profile_node *c = n->child;
	while (c) {
		struct profile_node *next = c->next;
		free_children(c);
		free(c->label);
		free(c);
		c = next;
	}
	n->child = NULL;
}

void profile_tree_delete(struct profile_tree *t)
{
	if (!t)
		return;
	free_children(&t->root);
	free(t->root.label);
	free(t);
}

const struct profile_node *profile_tree_root(const struct profile_tree *t) { return &t->root; }
size_t profile_tree_nodes(const struct profile_tree *t) { return t->nodes; }
unsigned profile_tree_flags(const struct profile_tree *t) { return t->flags; }
int profile_tree_depth(const struct profile_tree *t) { return t->depth; }

/* The child of parent labelled label (sanitised already), created at the
 * end of the list if missing. NULL on ENOMEM. */
static struct profile_node *child_of(struct profile_tree *t, struct profile_node *parent,
				     enum profile_level level, const char *label)
{
	struct profile_node **link = &parent->child;
	for (; *link; link = &(*link)->next)
		if ((*link)->level == level && strcmp((*link)->label, label) == 0)
			return *link;
	struct profile_node *n = calloc(1, sizeof(*n));
	if (!n || !(n->label = strdup(label))) {
		free(n);
		return NULL;
	}
	n->level = level;
	n->parent = parent;
	n->id = ++t->next_id;
	t->nodes++;
	*link = n;
	return n;
}

/* Removes the nodes a failed insert created (they have count 0). */
static void prune_empty(struct profile_tree *t, struct profile_node *n)
{
	struct profile_node **link = &n->child;
	while (*link) {
		struct profile_node *c = *link;
		if (c->count == 0) {
			*link = c->next;
			c->next = NULL;
			struct profile_node tmp = { .child = c };
			free_children(&tmp);
			t->nodes--;
			continue;
		}
		prune_empty(t, c);
		link = &c->next;
	}
}

int profile_tree_add(struct profile_tree *t, const struct profile_sample *s, uint64_t weight)
{
	if (!t || !s || !s->thread || !s->thread[0] || (unsigned)s->state >= PROFILE_NSTATES ||
	    weight == 0 || s->nframes < 0 || (s->nframes > 0 && !s->frames))
		return -EINVAL;

	/* the path first, then the counts: a failed allocation leaves no
	 * half-counted sample */
	struct profile_node *path[PROFILE_MAX_PATH];
	int np = 0;
	char label[PROFILE_LABEL_MAX];
	struct profile_node *n = &t->root;

#define STEP(lvl, text)                                                   \
	do {                                                              \
		textsafe_label(label, sizeof(label), (text));           \
		if (!(n = child_of(t, n, (lvl), label)))                  \
			goto nomem;                                       \
		path[np++] = n;                                           \
	} while (0)

	STEP(PROFILE_L_THREAD, s->thread);
	if (t->flags & PROFILE_TREE_BY_FIBER) {
		const char *f = !s->fiber ? "[no fiber]" : !s->fiber[0] ? "[untagged]" : s->fiber;
		STEP(PROFILE_L_FIBER, f);
	}
	STEP(PROFILE_L_STATE, profile_state_name(s->state));
	if (s->syscall && s->syscall[0])
		STEP(PROFILE_L_SYSCALL, s->syscall);
	if (s->target && s->target[0])
		STEP(PROFILE_L_TARGET, s->target);
	for (int i = 0; i < s->nframes && np < PROFILE_MAX_PATH; i++)
		STEP(PROFILE_L_FRAME, s->frames[i] && s->frames[i][0] ? s->frames[i] : "[unknown]");
#undef STEP

	t->root.count += weight;
	for (int i = 0; i < np; i++)
		path[i]->count += weight;
	path[np - 1]->self += weight;
	if (np > t->depth)
		t->depth = np;
	return 0;

nomem:
	prune_empty(t, &t->root);
	return -ENOMEM;
}

static int node_before(const struct profile_node *a, const struct profile_node *b)
{
	if (a->count != b->count)
		return a->count > b->count;
	return strcmp(a->label, b->label) <= 0;
}

/* Stable merge sort of a sibling list. */
static struct profile_node *sort_list(struct profile_node *head)
{
	if (!head || !head->next)
		return head;
	struct profile_node *slow = head, *fast = head->next;
	while (fast && fast->next) {
		slow = slow->next;
		fast = fast->next->next;
	}
	struct profile_node *b = slow->next;
	slow->next = NULL;
	struct profile_node *a = sort_list(head);
	b = sort_list(b);
	struct profile_node out = { 0 }, *tail = &out;
	while (a && b) {
		if (node_before(a, b)) {
			tail->next = a;
			a = a->next;
		} else {
			tail->next = b;
			b = b->next;
		}
		tail = tail->next;
	}
	tail->next = a ? a : b;
	return out.next;
}

static void sort_node(struct profile_node *n)
{
	n->child = sort_list(n->child);
	for (struct profile_node *c = n->child; c; c = c->next)
		sort_node(c);
}

void profile_tree_sort(struct profile_tree *t)
{
	sort_node(&t->root);
}

uint64_t profile_node_basis(const struct profile_node *n)
{
	if (!n->parent || n->level == PROFILE_L_THREAD)
		return n->parent ? n->parent->count : n->count;
	while (n->parent && n->level != PROFILE_L_THREAD)
		n = n->parent;
	return n->count;
}

double profile_node_share(const struct profile_node *n, double *ci95)
{
	return model_share_pct(n->count, profile_node_basis(n), ci95);
}

/* ---- threads with the same tree ------------------------------------------ */

static int same_shape(const struct profile_node *a, uint64_t ba, const struct profile_node *b, uint64_t bb);

/* a's and b's children pair up by level and label, and each pair has the
 * same shape. */
static int same_children(const struct profile_node *a, uint64_t ba, const struct profile_node *b, uint64_t bb)
{
	size_t na = 0, nb = 0;
	for (const struct profile_node *c = a->child; c; c = c->next)
		na++;
	for (const struct profile_node *c = b->child; c; c = c->next)
		nb++;
	if (na != nb)
		return 0;
	for (const struct profile_node *c = a->child; c; c = c->next) {
		const struct profile_node *d = b->child;
		while (d && (d->level != c->level || strcmp(d->label, c->label) != 0))
			d = d->next;
		if (!d || !same_shape(c, ba, d, bb))
			return 0;
	}
	return 1;
}

/* a and b (same level and label) agree: their shares of their threads'
 * samples differ by no more than sampling explains, and so do their
 * children's, recursively. */
static int same_shape(const struct profile_node *a, uint64_t ba, const struct profile_node *b, uint64_t bb)
{
	double ca, cb;
	double pa = model_share_pct(a->count, ba, &ca), pb = model_share_pct(b->count, bb, &cb);
	/* a 95% test of two proportions, with a floor for shares of 0 or 100 */
	if (fabs(pa - pb) > fmax(1.0, sqrt(ca * ca + cb * cb)))
		return 0;
	return same_children(a, ba, b, bb);
}

/* Adds src's counts into dst and frees src; children pair up by label,
 * the unpaired move over. */
static void merge_into(struct profile_tree *t, struct profile_node *dst, struct profile_node *src)
{
	dst->count += src->count;
	dst->self += src->self;
	struct profile_node *c = src->child;
	while (c) {
		struct profile_node *next = c->next, **link = &dst->child;
		while (*link && ((*link)->level != c->level || strcmp((*link)->label, c->label) != 0))
			link = &(*link)->next;
		if (*link) {
			merge_into(t, *link, c);
		} else {
			c->next = NULL;
			c->parent = dst;
			*link = c;
		}
		c = next;
	}
	free(src->label);
	free(src);
	t->nodes--;
}

/* "PID/TID name" → its name part ("" when there is none). */
static const char *thread_name(const char *label)
{
	const char *sp = strchr(label, ' ');
	return sp ? sp + 1 : "";
}

/* "3 threads: bio_close_file, bio_aof_fsync (pid 12 tids 13 14 15)": the
 * distinct names in the group, then its tids, cut at a character. */
static char *group_label(struct profile_node *const *g, size_t n)
{
	char buf[4 * PROFILE_LABEL_MAX];
	size_t len = 0;
	len += (size_t)snprintf(buf, sizeof(buf), "%zu threads: ", n);
	for (size_t i = 0; i < n && len < sizeof(buf); i++) {
		const char *name = thread_name(g[i]->label);
		size_t k = 0;
		while (k < i && strcmp(thread_name(g[k]->label), name) != 0)
			k++;
		if (k == i)
			len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s", i ? ", " : "", name);
	}
	for (size_t i = 0; i < n && len < sizeof(buf); i++) {
		char id[64];
		snprintf(id, sizeof(id), "%.*s", (int)strcspn(g[i]->label, " "), g[i]->label);
		char *slash = strchr(id, '/');
		if (i == 0)
			len += (size_t)snprintf(buf + len, sizeof(buf) - len, " (%s", id);
		else
			len += (size_t)snprintf(buf + len, sizeof(buf) - len, ", %s", slash ? slash + 1 : id);
	}
	if (len < sizeof(buf))
		snprintf(buf + len, sizeof(buf) - len, ")");
	char label[PROFILE_LABEL_MAX];
	textsafe_label(label, sizeof(label), buf);
	return strdup(label);
}

int profile_tree_merge_threads(struct profile_tree *t)
{
	size_t nthreads = 0;
	for (struct profile_node *c = t->root.child; c; c = c->next)
		nthreads++;
	if (nthreads < 2)
		return 0;
	struct profile_node **th = malloc(nthreads * sizeof(*th)), **group = malloc(nthreads * sizeof(*group));
	if (!th || !group) {
		free(th);
		free(group);
		return -ENOMEM;
	}
	size_t n = 0;
	for (struct profile_node *c = t->root.child; c; c = c->next)
		th[n++] = c;
	/* greedy: each thread joins the first earlier group it matches */
	for (size_t i = 0; i < n; i++) {
		if (!th[i])
			continue;
		size_t ng = 0;
		group[ng++] = th[i];
		for (size_t j = i + 1; j < n; j++) {
			if (!th[j] || th[j]->count == 0 || th[i]->count == 0)
				continue;
			/* the threads' own labels differ (their tids): compare below them */
			int same = same_children(th[i], th[i]->count, th[j], th[j]->count);
			if (same) {
				group[ng++] = th[j];
				th[j] = NULL;
			}
		}
		if (ng < 2)
			continue;
		char *label = group_label(group, ng);
		if (!label) {
			free(th);
			free(group);
			return -ENOMEM;
		}
		/* unlink the others, then fold them into the first */
		for (size_t k = 1; k < ng; k++) {
			struct profile_node **link = &t->root.child;
			while (*link != group[k])
				link = &(*link)->next;
			*link = group[k]->next;
			group[k]->next = NULL;
			merge_into(t, group[0], group[k]);
		}
		free(group[0]->label);
		group[0]->label = label;
	}
	free(th);
	free(group);
	return 0;
}
