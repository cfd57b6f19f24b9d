/*
 * list.h — `loopstat list`: the model once, as a table or JSON.
 */
#ifndef LOOPSTAT_LIST_H
#define LOOPSTAT_LIST_H

#include <stdio.h>
#include "model/model.h"

/* JSON version 1: {"version": 1, "workers": [...], "fleet": {...}}.
 * Keys are added over time, never renamed or given a new meaning. */
void list_print_json(FILE *out, const struct model *m);
void list_print_text(FILE *out, const struct model *m);
/* The line naming a bpf source, or why auto fell back to proc; nothing for proc as asked. */
void list_print_source(FILE *out, const struct model *m);
/* A line on the workers whose lag_* the samples cannot resolve: the one and
 * why, or how many. */
void list_print_lag_why(FILE *out, const struct model *m);
/* list --by service: a row per service. */
void list_print_services(FILE *out, const struct model *m);
/* The same over the model's services' roll-up named as what ("service",
 * "runtime", "kind"): its title and its count's word. */
void list_print_groups(FILE *out, const struct model *m, const char *what);
/* The text table's title of a worker figure (enum worker_metric), NULL
 * when it is not a column there. */
const char *list_column_title(int metric);
/* The service table's title of a fleet figure (enum fleet_metric). */
const char *list_service_title(int metric);

#endif /* LOOPSTAT_LIST_H */
