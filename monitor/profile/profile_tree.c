/*
 * profile_tree.c — the sample trie: insert along a path, count, sort.
 *
 * Children are a sibling list (stable order, cheap sorting), found through
 * one hash over the tree of (parent, level, label): a recording may hold
 * 80,000 distinct frames under one node, and a linear search of siblings
 * made reading it quadratic (minutes).
 */
#include "profile/profile_tree.h"
#include "util/idmap.h"
#include "util/textsafe.h"
#include "model/eval.h"
#include "model/model.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct profile_tree {
	struct profile_node root;
	unsigned flags;
	struct idmap index;          /* child_key → the node holding it first (a collision: the list) */
	int      unindexed;  /* the index could not hold every key: look-ups walk the lists */
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
	idmap_init(&t->index);
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
		free(c->service);
		free(c);
		c = next;
	}
	n->child = NULL;
	n->last = NULL;
}

void profile_tree_delete(struct profile_tree *t)
{
	if (!t)
		return;
	free_children(&t->root);
	idmap_done(&t->index);
	free(t->root.label);
	free(t);
}

const struct profile_node *profile_tree_root(const struct profile_tree *t) { return &t->root; }
size_t profile_tree_nodes(const struct profile_tree *t) { return t->nodes; }
unsigned profile_tree_flags(const struct profile_tree *t) { return t->flags; }
int profile_tree_depth(const struct profile_tree *t) { return t->depth; }

static uint64_t label_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;   /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

/* A node's key in the index: its parent (by id, never reused), level and
 * label; never 0 or all ones, which idmap cannot hold. */
static uint64_t child_key(const struct profile_node *parent, enum profile_level level, const char *label)
{
	return (mix64(label_hash(label) ^ mix64(parent->id * 8 + (uint64_t)level + 1)) >> 1) | 1;
}

static int is_child(const struct profile_node *c, const struct profile_node *parent, enum profile_level level,
		    const char *label)
{
	return c->parent == parent && c->level == level && strcmp(c->label, label) == 0;
}

/* The child of parent labelled label, or NULL; *key its key and *free
 * whether no node holds that key yet. Every key present is indexed by its
 * first holder, so a miss is a new child and only a collision (another
 * node holds the key) walks the list. */
static struct profile_node *child_find(struct profile_tree *t, struct profile_node *parent,
				       enum profile_level level, const char *label, uint64_t *key, int *free_key)
{
	size_t v;
	*key = child_key(parent, level, label);
	*free_key = !idmap_get(&t->index, *key, &v);
	if (*free_key && !t->unindexed)
		return NULL;
	struct profile_node *n = *free_key ? NULL : (struct profile_node *)(uintptr_t)v;
	if (n && is_child(n, parent, level, label))
		return n;
	for (n = parent->child; n; n = n->next)
		if (is_child(n, parent, level, label))
			return n;
	return NULL;
}

/* The child of parent labelled label (sanitised already), created at the
 * end of the list if missing. NULL with *err -ENOMEM, or -E2BIG past
 * PROFILE_TREE_MAX_NODES. */
static struct profile_node *child_of(struct profile_tree *t, struct profile_node *parent,
				     enum profile_level level, const char *label, int *err)
{
	uint64_t key;
	int free_key;
	struct profile_node *n = child_find(t, parent, level, label, &key, &free_key);
	if (n)
		return n;
	*err = -E2BIG;
	if (t->nodes >= PROFILE_TREE_MAX_NODES)
		return NULL;
	*err = -ENOMEM;
	n = calloc(1, sizeof(*n));
	if (!n || !(n->label = strdup(label))) {
		free(n);
		return NULL;
	}
	if (free_key && !t->unindexed && idmap_put(&t->index, key, (uintptr_t)n) < 0) {
		free(n->label);
		free(n);
		return NULL;
	}
	n->level = level;
	n->parent = parent;
	n->id = ++t->next_id;
	t->nodes++;
	if (parent->last)
		parent->last->next = n;
	else
		parent->child = n;
	parent->last = n;
	return n;
}

/* n's last child anew, after its list was rebuilt. */
static void fix_last(struct profile_node *n)
{
	n->last = NULL;
	for (struct profile_node *c = n->child; c; c = c->next)
		n->last = c;
}

/* Indexes c under its parent unless its key is held: 0 or -ENOMEM. */
static int index_node(struct profile_tree *t, struct profile_node *c)
{
	size_t v;
	uint64_t key = child_key(c->parent, c->level, c->label);
	return idmap_get(&t->index, key, &v) ? 0 : idmap_put(&t->index, key, (uintptr_t)c);
}

static int index_below(struct profile_tree *t, struct profile_node *n)
{
	for (struct profile_node *c = n->child; c; c = c->next)
		if (index_node(t, c) < 0 || index_below(t, c) < 0)
			return -ENOMEM;
	return 0;
}

/* The index anew, after nodes were freed or relabelled. An entry the
 * index could not hold is a key no node holds: that child would be made
 * twice. So a failed re-index empties the index, and every look-up walks
 * the lists until the next one succeeds. */
static void reindex(struct profile_tree *t)
{
	idmap_clear(&t->index);
	t->unindexed = index_below(t, &t->root) < 0;
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
	fix_last(n);
}

int profile_tree_add(struct profile_tree *t, const struct profile_sample *s, uint64_t weight)
{
	if (!t || !s || !s->thread || !s->thread[0] || (unsigned)s->state >= PROFILE_NSTATES ||
	    weight == 0 || s->nframes < 0 || (s->nframes > 0 && !s->frames))
		return -EINVAL;

	/* the path first, then the counts: a failed allocation leaves no
	 * half-counted sample */
	struct profile_node *path[PROFILE_MAX_PATH];
	int np = 0, err = 0;
	char label[PROFILE_LABEL_MAX];
	struct profile_node *n = &t->root;

#define STEP(lvl, text)                                                   \
	do {                                                              \
		textsafe_label(label, sizeof(label), (text));           \
		if (!(n = child_of(t, n, (lvl), label, &err)))            \
			goto fail;                                        \
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
	if (s->service && (!path[0]->service || strcmp(path[0]->service, s->service) != 0)) {
		/* the raw name differs; its sanitised form may still be the one kept */
		textsafe_label(label, sizeof(label), s->service);
		if (!path[0]->service || strcmp(path[0]->service, label) != 0) {
			char *svc = strdup(label);
			err = -ENOMEM;
			if (!svc)
				goto fail;
			free(path[0]->service);
			path[0]->service = svc;
		}
	}

	uint64_t running = s->state == PROFILE_ON_CPU || s->state == PROFILE_CPU_WAIT ? weight : 0;
	t->root.count += weight;
	t->root.running += running;
	for (int i = 0; i < np; i++) {
		path[i]->count += weight;
		path[i]->running += running;
	}
	path[np - 1]->self += weight;
	if (np > t->depth)
		t->depth = np;
	return 0;

fail:
	prune_empty(t, &t->root);
	reindex(t);
	return err;
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
	fix_last(n);
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

/* n's thread node (n itself for one; the root for the root). */
static const struct profile_node *thread_of(const struct profile_node *n)
{
	while (n->parent && n->level != PROFILE_L_THREAD)
		n = n->parent;
	return n;
}

static double runnable_of(const struct profile_node *th)
{
	return th->span_ns ? (double)th->busy_ns / (double)th->span_ns : NAN;
}

double profile_node_share(const struct profile_node *n, double *ci95)
{
	const struct profile_node *th = thread_of(n);
	if (n->level <= PROFILE_L_THREAD || th->span_ns == 0)
		return model_share_pct(n->count, profile_node_basis(n), ci95);
	/* the samples a sampler slipping past busy phases takes in the poll
	 * must not read the worker idler than list does: the same split */
	return model_split_share_pct(n->count - n->running, n->running, th->count - th->running, th->running,
				     runnable_of(th), ci95);
}

double profile_node_weight(const struct profile_node *n)
{
	const struct profile_node *th = thread_of(n);
	if (n->level < PROFILE_L_STATE || th->span_ns == 0 || th->count == 0)
		return 1;
	double running, scale, all = (double)th->count, n_run = (double)th->running;
	double basis = eval_split(runnable_of(th), n_run, all - n_run, &running, &scale);
	/* below a state every sample is of one kind */
	return n->running ? running * all / n_run : basis > 0 ? scale * all / basis : 1;
}

int profile_tree_runnable(struct profile_tree *t, const char *thread, uint64_t busy_ns, uint64_t span_ns)
{
	char label[PROFILE_LABEL_MAX];
	uint64_t key;
	int free_key;
	textsafe_label(label, sizeof(label), thread);
	struct profile_node *n = child_find(t, &t->root, PROFILE_L_THREAD, label, &key, &free_key);
	if (!n)
		return -ENOENT;
	n->busy_ns += busy_ns;
	n->span_ns += span_ns;
	return 0;
}

/* ---- threads with the same tree ------------------------------------------ */

static int same_shape(struct profile_tree *t, const struct profile_node *a, uint64_t ba,
		      const struct profile_node *b, uint64_t bb);

/* a's and b's children pair up by level and label, and each pair has the
 * same shape. */
static int same_children(struct profile_tree *t, const struct profile_node *a, uint64_t ba,
			 const struct profile_node *b, uint64_t bb)
{
	size_t na = 0, nb = 0;
	for (const struct profile_node *c = a->child; c; c = c->next)
		na++;
	for (const struct profile_node *c = b->child; c; c = c->next)
		nb++;
	if (na != nb)
		return 0;
	for (const struct profile_node *c = a->child; c; c = c->next) {
		uint64_t key;
		int free_key;
		const struct profile_node *d = child_find(t, (struct profile_node *)(uintptr_t)b, c->level, c->label,
							  &key, &free_key);
		if (!d || !same_shape(t, c, ba, d, bb))
			return 0;
	}
	return 1;
}

/* a and b (same level and label) agree: their shares of their threads'
 * samples differ by no more than sampling explains, and so do their
 * children's, recursively. */
static int same_shape(struct profile_tree *t, const struct profile_node *a, uint64_t ba,
		      const struct profile_node *b, uint64_t bb)
{
	double ca, cb;
	double pa = model_share_pct(a->count, ba, &ca), pb = model_share_pct(b->count, bb, &cb);
	/* a 95% test of two proportions, with a floor for shares of 0 or 100 */
	if (fabs(pa - pb) > fmax(1.0, sqrt(ca * ca + cb * cb)))
		return 0;
	return same_children(t, a, ba, b, bb);
}

/* Adds src's counts into dst and frees src; children pair up by label,
 * the unpaired move over. The index stays sound: src's entry is pointed
 * at dst (a live node that is not the key's: a collision, the list is
 * walked), and a child moved over is indexed under dst. */
static void merge_into(struct profile_tree *t, struct profile_node *dst, struct profile_node *src)
{
	dst->count += src->count;
	dst->self += src->self;
	dst->running += src->running;
	dst->busy_ns += src->busy_ns;
	dst->span_ns += src->span_ns;
	struct profile_node *c = src->child;
	while (c) {
		struct profile_node *next = c->next;
		uint64_t key;
		int free_key;
		struct profile_node *d = child_find(t, dst, c->level, c->label, &key, &free_key);
		if (d) {
			merge_into(t, d, c);
		} else {
			c->next = NULL;
			c->parent = dst;
			if (dst->last)
				dst->last->next = c;
			else
				dst->child = c;
			dst->last = c;
			if (!t->unindexed && index_node(t, c) < 0)
				t->unindexed = 1;
		}
		c = next;
	}
	size_t v;
	uint64_t skey = child_key(src->parent, src->level, src->label);
	if (idmap_get(&t->index, skey, &v) && v == (uintptr_t)src)
		idmap_put(&t->index, skey, (uintptr_t)dst);   /* an existing key: no allocation */
	free(src->label);
	free(src->service);
	free(src);
	t->nodes--;
}

/* "PID/TID name" → its name part ("" when there is none). */
static const char *thread_name(const char *label)
{
	const char *sp = strchr(label, ' ');
	return sp ? sp + 1 : "";
}

const char *profile_node_service(const struct profile_node *n)
{
	if (n->level != PROFILE_L_THREAD)
		return NULL;
	if (n->service)
		return n->service[0] ? n->service : NULL;   /* "": merged threads of several */
	return thread_name(n->label);
}

/* A merged group's service: the one its threads share, else "" (several). */
static char *group_service(struct profile_node *const *g, size_t n)
{
	const char *s = profile_node_service(g[0]);
	for (size_t i = 1; i < n && s; i++) {
		const char *o = profile_node_service(g[i]);
		if (!o || strcmp(o, s) != 0)
			s = NULL;
	}
	return strdup(s ? s : "");
}

/* "3 threads: bio_close_file, bio_aof_fsync (12/13, 14, 15)": the distinct
 * names in the group, then its pid/tids, cut at a character. */
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

/* The paths below n as one number: the same for trees with the same
 * labels whatever their counts or order (children's hashes are summed). */
static uint64_t shape_hash(const struct profile_node *n)
{
	uint64_t h = 0;
	for (const struct profile_node *c = n->child; c; c = c->next)
		h += mix64(label_hash(c->label) * 31 + (uint64_t)c->level + shape_hash(c));
	return h;
}

struct shaped {
	struct profile_node *n;
	uint64_t hash;
	size_t   order;              /* the thread's creation order (its node's id) */
	size_t   lead;               /* order of the group's first thread (its own when it leads) */
};

static int by_shape(const void *a, const void *b)
{
	const struct shaped *x = a, *y = b;
	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

static int by_group(const void *a, const void *b)
{
	const struct shaped *x = a, *y = b;
	if (x->lead != y->lead)
		return x->lead < y->lead ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* A thread is compared with at most this many groups of its shape: the
 * merge stays linear in a recording of 262,144 look-alike threads. */
#define MERGE_MAX_GROUPS 64

int profile_tree_merge_threads(struct profile_tree *t)
{
	size_t n = 0;
	for (struct profile_node *c = t->root.child; c; c = c->next)
		n++;
	if (n < 2)
		return 0;
	struct shaped *th = malloc(n * sizeof(*th));
	struct profile_node **group = malloc(n * sizeof(*group));
	size_t *leads = malloc(MERGE_MAX_GROUPS * sizeof(*leads));
	if (!th || !group || !leads) {
		free(th), free(group), free(leads);
		return -ENOMEM;
	}
	n = 0;
	for (struct profile_node *c = t->root.child; c; c = c->next, n++)
		th[n] = (struct shaped){ c, shape_hash(c), c->id, c->id };
	/* threads of one shape hash, in their order: each joins the first of
	 * the last groups whose first thread it matches, shares included */
	qsort(th, n, sizeof(*th), by_shape);
	for (size_t lo = 0, hi; lo < n; lo = hi) {
		size_t ng = 0;   /* leads[] holds indices into th, a ring of the last groups */
		for (hi = lo; hi < n && th[hi].hash == th[lo].hash; hi++) {
			const struct profile_node *c = th[hi].n;
			size_t k = 0, kmax = ng < MERGE_MAX_GROUPS ? ng : MERGE_MAX_GROUPS;
			for (; k < kmax; k++) {
				const struct shaped *l = &th[leads[k]];
				if (l->n->count && c->count && same_children(t, l->n, l->n->count, c, c->count))
					break;
			}
			if (k < kmax)
				th[hi].lead = th[leads[k]].lead;
			else
				leads[ng++ % MERGE_MAX_GROUPS] = hi;
		}
	}
	/* each group together, its first thread first; the root's list anew */
	qsort(th, n, sizeof(*th), by_group);
	struct profile_node **tail = &t->root.child;
	int err = 0;
	for (size_t lo = 0, hi; lo < n; lo = hi) {
		size_t ng = 0;
		for (hi = lo; hi < n && th[hi].lead == th[lo].lead; hi++)
			group[ng++] = th[hi].n;
		char *label = ng > 1 && !err ? group_label(group, ng) : NULL;
		char *svc = label ? group_service(group, ng) : NULL;
		if (ng > 1 && !svc) {
			free(label);
			label = NULL;
			err = -ENOMEM;   /* the rest stay apart: a report with every thread */
		}
		for (size_t k = 1; label && k < ng; k++) {
			group[k]->next = NULL;
			merge_into(t, group[0], group[k]);
		}
		if (label) {
			free(group[0]->label);
			group[0]->label = label;
			free(group[0]->service);
			group[0]->service = svc;
		}
		for (size_t k = 0; k < (label ? 1 : ng); k++) {
			*tail = group[k];
			tail = &group[k]->next;
		}
	}
	*tail = NULL;
	fix_last(&t->root);
	free(th), free(group), free(leads);
	reindex(t);
	return err;
}
