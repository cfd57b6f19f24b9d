/* profile's accumulator: the schedstat readings its events carry give list's split of a thread's time. */
#include <criterion/criterion.h>

#include <string.h>

#include "model/eval.h"
#include "profile/profile_acc.h"

#define T_TIMEOUT 30

static const struct profile_node *child(const struct profile_node *n, const char *label)
{
	for (const struct profile_node *c = n ? n->child : NULL; c; c = c->next)
		if (strcmp(c->label, label) == 0)
			return c;
	return NULL;
}

/* 1 s of 1-ms ticks of thread 7/7 seen running one tick in ten and in
 * its poll otherwise (a sampler slipping past the busy phases), while
 * schedstat, read every 250 ms, says it was runnable 40 % of the time
 * (0: no readings). */
static struct profile_tree *run(struct profile_acc *a, int readings)
{
	for (uint64_t k = 0; k < 1000; k++) {
		uint64_t busy = readings ? 1000000000ull + k / 250 * 100000000ull : 0;
		struct rec_event ev = { .t_ns = k * 1000000, .pid = 7, .tid = 7, .nr = -1, .fd = -1,
					.run_ns = busy * 3 / 4, .wait_ns = busy / 4, .thread = "7/7 w" };
		ev.cls = k % 10 == 0 ? PROBE_RUNNING : PROBE_POLL;
		if (ev.cls == PROBE_POLL)
			ev.target = "[idle] epoll_wait fd 3";
		cr_assert_eq(profile_acc_add(a, &ev), 0);
	}
	return profile_acc_finish(a);
}

Test(profile_split, readings_give_the_runnable_share, .timeout = T_TIMEOUT)
{
	struct profile_acc *a = profile_acc_new(0);
	cr_assert(a);
	struct profile_tree *t = run(a, 1);
	const struct profile_node *w = child(profile_tree_root(t), "7/7 w");
	const struct profile_node *idle = child(w, "idle"), *on = child(w, "on cpu"), *wait = child(w, "waiting for cpu");
	cr_assert(idle && on && wait);
	cr_assert_eq(idle->count, 900, "the counts stay the samples");
	cr_assert_eq(on->count + wait->count, 100);
	/* runnable 300 ms of the 750 between the first and the last reading */
	double running, scale;
	eval_split(0.4, 100, 900, &running, &scale);
	cr_assert_float_eq(profile_node_share(idle, NULL), 100 * scale, 1e-9, "idle as list reads it");
	cr_assert_float_eq(profile_node_share(on, NULL) + profile_node_share(wait, NULL), 100 * running, 1e-9);
	cr_assert_float_eq(profile_node_share(wait, NULL), 10.0, 1e-9, "a quarter of the runnable time waited");
	/* a second finish gives the same tree */
	cr_assert_eq(profile_acc_finish(a), t);
	cr_assert_float_eq(profile_node_share(idle, NULL), 60.0, 1e-9);
	profile_acc_delete(a);
}

Test(profile_split, without_readings_every_sample_counts, .timeout = T_TIMEOUT)
{
	struct profile_acc *a = profile_acc_new(0);
	cr_assert(a);
	struct profile_tree *t = run(a, 0);
	const struct profile_node *w = child(profile_tree_root(t), "7/7 w");
	cr_assert_float_eq(profile_node_share(child(w, "idle"), NULL), 90.0, 1e-9);
	cr_assert_float_eq(profile_node_weight(child(w, "idle")), 1.0, 1e-12);
	profile_acc_delete(a);
}
