/*
 * list.h — `loopstat list`: a one-shot table or JSON document.
 */
#ifndef LOOPSTAT_LIST_H
#define LOOPSTAT_LIST_H

#include <stdio.h>
#include "snapshot.h"

/* JSON version 1: {"version": 1, "workers": [...]}; keys are never renamed. */
void list_print_json(FILE *out, const struct snapshot *s);
void list_print_text(FILE *out, const struct snapshot *s);

#endif /* LOOPSTAT_LIST_H */
