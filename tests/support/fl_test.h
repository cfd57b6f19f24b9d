/*
 * fl_test.h — shared helpers for the runtime suites: run a fiber body on
 * every available backend with leak checks, count fds, loopback sockets.
 */
#ifndef FL_TEST_H
#define FL_TEST_H

#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>

#include "fiberloop.h"

/* Backends the runtime suites run on: every compiled-in one, or only
 * $FL_TEST_BACKEND if set. NULL-terminated. */
const char *const *fl_test_backends(void);

/*
 * Runs main(arg) in a fresh loop once per backend and asserts that fl_run
 * succeeded and that afterwards no fiber, stack, op context, loop or fd is
 * left over. The backend of the current run is in fl_test_backend.
 */
void fl_test_run(fl_fn main, void *arg);
/* Same with options (backend is overridden per run). */
void fl_test_run_opts(fl_fn main, void *arg, struct fl_options *opts);
extern const char *fl_test_backend;

/*
 * First call of a forked child that would otherwise wait for the test to
 * kill it: SIGKILL when `parent` (getpid() before fork) dies, also when it
 * died before this call, so a failed assertion never leaves it behind.
 */
void fl_test_die_with(pid_t parent);

/* Open fds of this process. */
int fl_test_fd_count(void);

/* Asserts the leak counters are all zero. */
void fl_test_assert_no_leaks(void);

/* Points LOOPSTAT_SHM_DIR at a fresh temporary directory (removed at
 * fl_test_shm_done) so stats tests read a segment of their own. */
void fl_test_shm_setup(void);
void fl_test_shm_done(void);

/* A listening TCP socket on 127.0.0.1, an ephemeral port; fills *port. */
int fl_test_listen(uint16_t *port);
/* A blocking TCP socket (not connected). */
int fl_test_socket(void);
struct sockaddr_in fl_test_addr(uint16_t port);

#endif /* FL_TEST_H */
