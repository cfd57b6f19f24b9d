/*
 * fdbudget_int.h — how the probes charge their files to the budget
 * (fdbudget.c): make room before an open, charge after it, check before
 * each read, release at close.
 */
#ifndef PROBE_FDBUDGET_INT_H
#define PROBE_FDBUDGET_INT_H

#include <stdint.h>

/* Closes the least recently sampled file when the budget is full, so
 * that the open that follows (then charged) never takes the probes past
 * it. */
void probe__fd_make_room(void);
/* Charges the open file fd to the budget, as entry id (0: a new entry),
 * closing the least recently sampled file over it. Returns the entry's id
 * (0 when no entry could be had: the file is then simply not charged). */
uint32_t probe__fd_charge(int fd, uint32_t id);
/* Whether entry id still holds fd (else the budget closed it: reopen);
 * marks it sampled. An id of 0 is always live. */
int probe__fd_live(uint32_t id, int fd);
/* Closes fd unless the budget did, and frees entry id. */
int probe__fd_release(uint32_t id, int fd);

#endif /* PROBE_FDBUDGET_INT_H */
