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

/* Forks the publisher (it dies with the test), returns once its slot is
 * published; writing a byte to *go_fd makes it exec. Returns its pid. */
pid_t tp_spawn_publisher(int *go_fd, enum tp_exec_from from);

#endif /* TESTS_PUBLISHER_H */
