/*
 * publisher.h — a child process that publishes a libfiberloop slot and
 * then, on the word, execs /bin/sleep: the writer the segment re-check
 * suites watch change its image.
 */
#ifndef TESTS_PUBLISHER_H
#define TESTS_PUBLISHER_H

#include <sys/types.h>

/* Where the exec comes from: the main thread, a second thread (the kernel's
 * de_thread() then gives it the process's pid), or the main thread with a
 * CLONE_VM child of its own (not a thread) keeping the old mm alive. */
enum tp_exec_from { TP_FROM_MAIN, TP_FROM_THREAD, TP_FROM_MAIN_MM_SHARED };

/* Forks the publisher (it dies with the test, and is killed by
 * tp_kill_all), returns once its slot is published; writing a byte to
 * *go_fd makes it exec. Returns its pid. */
pid_t tp_spawn_publisher(int *go_fd, enum tp_exec_from from);

/* Another child of the test's, for tp_kill_all. */
void tp_adopt(pid_t pid);
/* SIGKILLs and reaps pid: its pid is free after this. */
void tp_reap(pid_t pid);
/* SIGKILLs and reaps every child still alive: for a suite's teardown. */
void tp_kill_all(void);

/* pid's segment in dir, opened; fails the test if it cannot be. */
struct probe_shm *tp_open_segment(const char *dir, pid_t pid);

#endif /* TESTS_PUBLISHER_H */
