/*
 * flight_int.h — what flight.c and flight_opts.c share: the triggers,
 * parsed once in check's grammar for the usage check and the run alike.
 */
#ifndef LOOPSTAT_FLIGHT_INT_H
#define LOOPSTAT_FLIGHT_INT_H

#include "check/check_expr.h"
#include "profile/flight.h"

/* Parses o's triggers into s: -1, or EXIT_USAGE after a message naming cmd. */
int flight_parse_triggers(const char *cmd, const struct flight_opts *o, struct check_set *s);

#endif /* LOOPSTAT_FLIGHT_INT_H */
