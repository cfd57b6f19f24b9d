/*
 * node_child.h — a real node HTTP server whose handler burns CPU for a
 * given time in burnCpuForAWhile, run with --perf-basic-prof, and a client thread
 * that keeps one request in flight (for the JIT-stack and agreement tests);
 * and a node whose threadpool is saturated (for the pool tests).
 */
#ifndef TESTS_NODE_CHILD_H
#define TESTS_NODE_CHILD_H

#include <pthread.h>
#include <sys/types.h>

struct node_run {
	pid_t pid;
	int   port;       /* the burning handler's */
	int   elu_port;   /* node_elu's */
	volatile int stop;
	pthread_t client;
};

/* Starts it in dir (V8 leaves its isolate log in the cwd) and warms it
 * half a second; skips the test (cr_skip_test) without node or curl. */
void node_start(struct node_run *r, const char *dir, int burn_ms);
/* The loop's own clock: libuv's cumulative time in its poll (*idle_ms) and
 * out of it (*active_ms), node's eventLoopUtilization. 0 or -1. */
int node_elu(const struct node_run *r, double *idle_ms, double *active_ms);
/* Stops the client, kills node, removes its perf map. */
void node_stop(struct node_run *r);

/* node with a libuv threadpool of 2 kept busy by eight pbkdf2 calls in a
 * ring (its pool threads never wait), exiting after 30 s; skips the test
 * (cr_skip_test) without node. Stop it with tc_kill. */
pid_t node_pbkdf2_start(void);
/* Waits, up to 5 s, until that node is settled: two of its threads on a
 * CPU or runnable (the pool) and its main thread asleep in its poll (its
 * start-up's compiles over), in two looks 100 ms apart. 0 or -ETIMEDOUT. */
int node_pbkdf2_settled(pid_t pid);

#endif /* TESTS_NODE_CHILD_H */
