/*
 * export_prom.h — the points in the Prometheus text exposition format
 * (expo/expo_prom.h) for node_exporter's textfile collector: written to a
 * new temp file in the same directory, fsync'd, then renamed over PATH, so
 * the collector never reads half a file.
 */
#ifndef LOOPSTAT_EXPORT_PROM_H
#define LOOPSTAT_EXPORT_PROM_H

#include <stddef.h>

#include "expo/expo_name.h"

/* What export_prom_write would refuse of PATH before anything is written:
 * its directory (missing, unsafe). 0 or -errno, with the reason in err. */
int export_prom_check(const char *path, char *err, size_t errlen);

/* expo_prom_format into PATH atomically, relative to its directory
 * (util/safefile.h: the directory must not let another user replace what
 * is in it; the temp file is new, never opened through a link). Only a
 * regular file of ours is replaced. Returns 0, or -errno with a reason in
 * err: -EPERM for the directory refused, -EEXIST for PATH that is not a
 * regular file of ours (a device, a FIFO, a link, a directory, another
 * user's file), else the failing call's. */
int export_prom_write(const char *path, const struct expo_point *pts, size_t n, char *err, size_t errlen);

#endif /* LOOPSTAT_EXPORT_PROM_H */
