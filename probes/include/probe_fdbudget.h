/*
 * probe_fdbudget.h — how many /proc files the probes keep open at once.
 *
 * A sampled thread holds two files open (its syscall and schedstat files),
 * so a user who starts 5,000 loop threads would otherwise make a root
 * sampler hold 10,000 descriptors and starve everything else in the
 * process of them (serve's connections among it). The probes' files are
 * charged to one budget: past it, opening one closes the file least
 * recently sampled (a clock over the open ones), and that probe opens its
 * file again when it is next sampled. Sampling more threads than the
 * budget then costs an open per sample, never a failed accept.
 *
 * The files of one process's probes belong to one thread (the sampler's):
 * a file is closed by the thread that opens another.
 */
#ifndef PROBE_FDBUDGET_H
#define PROBE_FDBUDGET_H

/* The budget: set, or by default a quarter of the soft RLIMIT_NOFILE
 * (1,024 when it is unlimited), at least 64. */
unsigned probe_fd_budget(void);
/* Sets it (at least 64); files over it are closed at the next opens. */
void probe_fd_budget_set(unsigned files);
/* Probe files open now, and how many were closed to stay within budget. */
unsigned probe_fd_budget_open(void);
unsigned long probe_fd_budget_recycled(void);

#endif /* PROBE_FDBUDGET_H */
