/* The ring-buffer runqueue on its own: FIFO push/shift, unshift in front, delete keeping order, growth across the wrap, length/capacity/high-water. */
#include "support/fl_test.h"

#include "fl_internal.h"

/* Fake fibers: the queue only stores and compares pointers. */
static fl_fiber fibers[200];

Test(runqueue, fifo_unshift_delete_grow, .timeout = 10)
{
	struct fl__runqueue q;
	struct fl__rq_entry e;
	cr_assert_eq(fl__rq_init(&q, 4), 0);
	cr_assert_eq(q.cap, 16, "rounded up to the minimum power of two");
	cr_assert_eq(fl__rq_shift(&q, &e), -EAGAIN);

	/* move head forward so that later pushes wrap around the ring */
	for (int i = 0; i < 10; i++) {
		fl__rq_push(&q, &fibers[i], NULL);
		fl__rq_shift(&q, &e);
	}
	for (int i = 0; i < 100; i++)
		cr_assert_eq(fl__rq_push(&q, &fibers[i], (void *)(intptr_t)i), 0);
	cr_assert_eq(q.len, 100);
	cr_assert_eq(q.cap, 128);
	cr_assert_eq(q.hwm, 100);
	cr_assert_eq(fl__rq_unshift(&q, &fibers[150], (void *)150), 0);
	cr_assert_eq(fl__rq_delete(&q, &fibers[50]), 0);
	cr_assert_eq(fl__rq_delete(&q, &fibers[199]), -ENOENT);
	cr_assert_eq(q.len, 100);
	cr_assert_eq(q.hwm, 101);

	cr_assert_eq(fl__rq_shift(&q, &e), 0);
	cr_assert_eq(e.fiber, &fibers[150]);
	cr_assert_eq((intptr_t)e.value, 150);
	for (int i = 0; i < 100; i++) {
		if (i == 50)
			continue;
		cr_assert_eq(fl__rq_shift(&q, &e), 0);
		cr_assert_eq(e.fiber, &fibers[i], "position %d", i);
		cr_assert_eq((intptr_t)e.value, i);
	}
	cr_assert_eq(q.len, 0);
	cr_assert_eq(fl__rq_shift(&q, &e), -EAGAIN);
	cr_assert_eq(q.hwm, 101, "the high-water mark stays");
	fl__rq_done(&q);
}
