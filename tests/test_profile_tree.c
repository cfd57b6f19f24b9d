/* Profile tree: weighted samples into a trie — counts, states summing to 100%, Wilson intervals, fibers, sanitised labels. */
#include <criterion/criterion.h>

#include <errno.h>
#include <math.h>
#include <string.h>

#include "model/eval.h"
#include "model/model.h"
#include "profile/profile_tree.h"
#include "util/textsafe.h"

#define T_TIMEOUT 30

static const struct profile_node *child(const struct profile_node *n, const char *label)
{
	for (const struct profile_node *c = n->child; c; c = c->next)
		if (strcmp(c->label, label) == 0)
			return c;
	return NULL;
}

static void add(struct profile_tree *t, const char *thread, enum profile_state st, const char *sc,
		const char *target, const char *const *frames, int n, uint64_t w)
{
	struct profile_sample s = { .thread = thread, .state = st, .syscall = sc, .target = target,
				    .frames = frames, .nframes = n };
	cr_assert_eq(profile_tree_add(t, &s, w), 0);
}

Test(profile_tree, counts_paths_and_shares, .timeout = T_TIMEOUT)
{
	struct profile_tree *t = profile_tree_new(0);
	cr_assert(t);
	static const char *const site_a[] = { "libc.so.6`read", "prog`wait_for_pipe", "prog`main" };
	static const char *const site_b[] = { "libc.so.6`read", "prog`other" };
	add(t, "10/10 w", PROFILE_BLOCKED, "read", "fd 3 pipe:[1]", site_a, 3, 50);
	add(t, "10/10 w", PROFILE_BLOCKED, "read", "fd 3 pipe:[1]", site_b, 2, 10);
	add(t, "10/10 w", PROFILE_ON_CPU, NULL, NULL, NULL, 0, 30);
	add(t, "10/10 w", PROFILE_IDLE, "epoll_wait", "fd 7 eventpoll", NULL, 0, 8);
	add(t, "10/10 w", PROFILE_CPU_WAIT, "", "", NULL, 0, 2);
	add(t, "10/11 io", PROFILE_BLOCKED, "fsync", "fd 4 /var/log/x", NULL, 0, 100);

	const struct profile_node *root = profile_tree_root(t);
	cr_assert_eq(root->count, 200);
	const struct profile_node *w = child(root, "10/10 w");
	cr_assert(w);
	cr_assert_eq(w->level, PROFILE_L_THREAD);
	cr_assert_eq(w->count, 100);
	uint64_t states = 0;
	for (const struct profile_node *c = w->child; c; c = c->next) {
		cr_assert_eq(c->level, PROFILE_L_STATE);
		states += c->count;
	}
	cr_assert_eq(states, w->count, "states do not sum to the thread");

	const struct profile_node *b = child(w, "blocked");
	const struct profile_node *r = child(b, "read");
	const struct profile_node *fd = child(r, "fd 3 pipe:[1]");
	const struct profile_node *wrap = child(fd, "libc.so.6`read");
	cr_assert(b && r && fd && wrap);
	cr_assert_eq(r->level, PROFILE_L_SYSCALL);
	cr_assert_eq(fd->level, PROFILE_L_TARGET);
	cr_assert_eq(wrap->level, PROFILE_L_FRAME);
	cr_assert_eq(wrap->count, 60);
	cr_assert_eq(wrap->self, 0);
	const struct profile_node *site = child(wrap, "prog`wait_for_pipe");
	cr_assert_eq(site->count, 50);
	cr_assert_eq(child(site, "prog`main")->self, 50);
	/* empty syscall/target strings add no level */
	const struct profile_node *cw = child(w, "waiting for cpu");
	cr_assert_eq(cw->self, 2);
	cr_assert_null(cw->child);

	/* shares are of the thread; intervals are Wilson's */
	double ci;
	cr_assert_float_eq(profile_node_share(b, &ci), 60.0, 1e-9);
	cr_assert_float_eq(ci, model_ci95_pts(0.6, 100), 1e-12);
	cr_assert_eq(profile_node_basis(site), 100);
	cr_assert_float_eq(profile_node_share(w, &ci), 50.0, 1e-9); /* the thread: of all samples */
	cr_assert_float_eq(ci, model_ci95_pts(0.5, 200), 1e-12);
	cr_assert_float_eq(profile_node_share(root, NULL), 100.0, 1e-9);
	cr_assert_eq(profile_tree_depth(t), 7); /* thread state syscall target + 3 frames */

	profile_tree_sort(t);
	cr_assert_str_eq(root->child->label, "10/10 w"); /* 100 each: ties by label */
	cr_assert_str_eq(root->child->next->label, "10/11 io");
	w = child(root, "10/10 w");
	cr_assert_str_eq(w->child->label, "blocked");
	cr_assert_str_eq(w->child->next->label, "on cpu");
	cr_assert_str_eq(w->child->next->next->label, "idle");
	for (const struct profile_node *c = w->child; c && c->next; c = c->next)
		cr_assert_geq(c->count, c->next->count);
	profile_tree_delete(t);
}

/* With the thread's runnable share known, shares are list's split: the
 * running share is schedstat's, the off-CPU samples divide the rest. */
Test(profile_tree, runnable_share_splits_like_list, .timeout = T_TIMEOUT)
{
	struct profile_tree *t = profile_tree_new(PROFILE_TREE_BY_FIBER);
	struct profile_sample s = { .thread = "1/1 w", .state = PROFILE_ON_CPU, .fiber = "parser" };
	cr_assert_eq(profile_tree_add(t, &s, 10), 0);
	s.state = PROFILE_BLOCKED;
	s.syscall = "read";
	cr_assert_eq(profile_tree_add(t, &s, 10), 0);
	s = (struct profile_sample){ .thread = "1/1 w", .state = PROFILE_IDLE, .syscall = "epoll_wait" };
	cr_assert_eq(profile_tree_add(t, &s, 80), 0);
	const struct profile_node *w = child(profile_tree_root(t), "1/1 w"), *p = child(w, "parser");
	const struct profile_node *idle = child(child(w, "[no fiber]"), "idle"), *on = child(p, "on cpu");
	cr_assert_eq(w->running, 10);
	cr_assert_float_eq(profile_node_share(idle, NULL), 80.0, 1e-9, "no runnable share: of the samples");

	cr_assert_eq(profile_tree_runnable(t, "1/1 x", 1, 2), -ENOENT);
	cr_assert_eq(profile_tree_runnable(t, "1/1 w", 150000000, 500000000), 0);
	cr_assert_eq(profile_tree_runnable(t, "1/1 w", 150000000, 500000000), 0);   /* pooled: R stays 0.3 */
	double running, scale, ci;
	double basis = eval_split(0.3, 10, 90, &running, &scale);
	cr_assert_float_eq(profile_node_share(idle, &ci), 100 * scale * 80 / basis, 1e-9);
	cr_assert_float_eq(profile_node_share(idle, NULL), 70.0 * 80 / 90, 1e-9);
	cr_assert_float_eq(ci, 0.7 * model_ci95_pts(80.0 / 90, 90), 1e-9);
	cr_assert_float_eq(profile_node_share(on, NULL), 30.0, 1e-9, "the running share is schedstat's");
	/* a fiber both ran and blocked: its two parts */
	cr_assert_float_eq(profile_node_share(p, NULL), 30.0 + 70.0 * 10 / 90, 1e-9);
	double sum = 0;
	for (const struct profile_node *f = w->child; f; f = f->next)
		sum += profile_node_share(f, NULL);
	cr_assert_float_eq(sum, 100.0, 1e-9, "the fibers cover the thread's wall time");
	cr_assert_float_eq(profile_node_share(w, NULL), 100.0, 1e-9, "the thread: of all samples");
	profile_tree_delete(t);
}

Test(profile_tree, by_fiber_adds_a_level, .timeout = T_TIMEOUT)
{
	struct profile_tree *t = profile_tree_new(PROFILE_TREE_BY_FIBER);
	struct profile_sample s = { .thread = "1/1 w", .state = PROFILE_ON_CPU, .fiber = "parser" };
	cr_assert_eq(profile_tree_add(t, &s, 3), 0);
	s.fiber = "";
	cr_assert_eq(profile_tree_add(t, &s, 1), 0);
	s.fiber = NULL;
	s.state = PROFILE_IDLE;
	s.syscall = "io_uring_enter";
	cr_assert_eq(profile_tree_add(t, &s, 2), 0);
	const struct profile_node *w = child(profile_tree_root(t), "1/1 w");
	const struct profile_node *p = child(w, "parser");
	cr_assert(p);
	cr_assert_eq(p->level, PROFILE_L_FIBER);
	cr_assert_eq(child(p, "on cpu")->count, 3);
	cr_assert_eq(child(child(w, "[untagged]"), "on cpu")->count, 1);
	cr_assert_eq(child(child(child(w, "[no fiber]"), "idle"), "io_uring_enter")->self, 2);
	double ci;
	cr_assert_float_eq(profile_node_share(p, &ci), 50.0, 1e-9);
	cr_assert_eq(profile_tree_flags(t), PROFILE_TREE_BY_FIBER);
	profile_tree_delete(t);
}

Test(profile_tree, bad_samples_are_refused, .timeout = T_TIMEOUT)
{
	struct profile_tree *t = profile_tree_new(0);
	struct profile_sample s = { .thread = "1/1 w", .state = PROFILE_ON_CPU };
	cr_assert_eq(profile_tree_add(t, &s, 0), -EINVAL);
	s.state = PROFILE_NSTATES;
	cr_assert_eq(profile_tree_add(t, &s, 1), -EINVAL);
	s.state = PROFILE_ON_CPU;
	s.thread = "";
	cr_assert_eq(profile_tree_add(t, &s, 1), -EINVAL);
	s.thread = NULL;
	cr_assert_eq(profile_tree_add(t, &s, 1), -EINVAL);
	s.thread = "1/1 w";
	s.nframes = 2;
	cr_assert_eq(profile_tree_add(t, &s, 1), -EINVAL);
	cr_assert_eq(profile_tree_root(t)->count, 0);
	cr_assert_eq(profile_tree_nodes(t), 1);
	cr_assert(isnan(profile_node_share(profile_tree_root(t), NULL)));
	/* a NULL or empty frame label is an unknown frame */
	static const char *const frames[] = { "a`f", "", NULL };
	s.frames = frames;
	s.nframes = 3;
	cr_assert_eq(profile_tree_add(t, &s, 1), 0);
	const struct profile_node *f = child(child(child(profile_tree_root(t), "1/1 w"), "on cpu"), "a`f");
	cr_assert_str_eq(f->child->label, "[unknown]");
	cr_assert_str_eq(f->child->child->label, "[unknown]");
	profile_tree_delete(t);
}

Test(profile_tree, labels_are_sanitised, .timeout = T_TIMEOUT)
{
	char buf[64];
	cr_assert_eq(textsafe_label(buf, sizeof(buf), "a;b;c"), 5);
	cr_assert_str_eq(buf, "a,b,c");
	textsafe_label(buf, sizeof(buf), "tab\there\nnl\x7f");
	cr_assert_str_eq(buf, "tab?here?nl?");
	textsafe_label(buf, sizeof(buf), "bad\xff\xc3 ok \xc3\xa9");
	cr_assert_str_eq(buf, "bad?? ok \xc3\xa9");
	/* cut at a character boundary, never inside é */
	char small[5];
	cr_assert_eq(textsafe_label(small, sizeof(small), "abc\xc3\xa9"), 3);
	cr_assert_str_eq(small, "abc");

	struct profile_tree *t = profile_tree_new(0);
	static const char *const frames[] = { "x`operator;()", "y`f\n" };
	struct profile_sample s = { .thread = "1/1 w;x", .state = PROFILE_BLOCKED, .syscall = "read",
				    .target = "fd 3 /tmp/a;b", .frames = frames, .nframes = 2 };
	cr_assert_eq(profile_tree_add(t, &s, 1), 0);
	const struct profile_node *n = profile_tree_root(t)->child;
	cr_assert_str_eq(n->label, "1/1 w,x");
	n = n->child->child->child;
	cr_assert_str_eq(n->label, "fd 3 /tmp/a,b");
	cr_assert_str_eq(n->child->label, "x`operator,()");
	cr_assert_str_eq(n->child->child->label, "y`f?");
	/* over-long labels are cut to PROFILE_LABEL_MAX - 1 bytes */
	char longl[600];
	memset(longl, 'z', sizeof(longl) - 1);
	longl[sizeof(longl) - 1] = '\0';
	s.thread = longl;
	cr_assert_eq(profile_tree_add(t, &s, 1), 0);
	profile_tree_sort(t);
	for (n = profile_tree_root(t)->child; n; n = n->next)
		cr_assert_lt(strlen(n->label), PROFILE_LABEL_MAX);
	profile_tree_delete(t);
}

Test(profile_tree, names, .timeout = T_TIMEOUT)
{
	cr_assert_str_eq(profile_state_name(PROFILE_IDLE), "idle");
	cr_assert_str_eq(profile_state_name(PROFILE_ON_CPU), "on cpu");
	cr_assert_str_eq(profile_state_name(PROFILE_CPU_WAIT), "waiting for cpu");
	cr_assert_str_eq(profile_state_name(PROFILE_BLOCKED), "blocked");
	cr_assert_str_eq(profile_level_name(PROFILE_L_TARGET), "target");
	cr_assert_str_eq(profile_level_name(PROFILE_L_ROOT), "all");
}
