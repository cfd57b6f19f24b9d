/*
 * flight_dir.h — the flight recorder's directory: one recording written
 * as a stream into a temp file and renamed into place when complete
 * (util/safefile.h: no link followed, a full disk loses the new recording,
 * never the old ones), named by time and trigger, and the directory kept
 * under a byte cap by removing the oldest recordings first.
 */
#ifndef LOOPSTAT_FLIGHT_DIR_H
#define LOOPSTAT_FLIGHT_DIR_H

#include <limits.h>
#include <stdint.h>
#include <stdio.h>

#include "collect/recording.h"

struct flight_file {
	int    fd;                       /* the temp file's */
	FILE  *f;                        /* on a dup of fd */
	struct rec_writer *w;
	char   tmp[NAME_MAX + 1];
	char   name[NAME_MAX + 1];       /* what it becomes */
};

/* The name "flight-YYYYmmddTHHMMSSZ-TRIGGER.rec" for a trigger at unix
 * time t (text: the threshold, "SIGUSR2"; pid > 0 is appended), made
 * unique in dirfd. */
void flight_file_name(int dirfd, double t, const char *text, int pid, char *out, size_t len);

/* Opens a recording named name in dirfd with meta's header. 0 or -errno
 * with the reason in err. */
int flight_file_open(struct flight_file *ff, int dirfd, const char *name, const struct rec_meta *meta, char *err,
		     size_t errlen);

/* Ends the recording (trailer duration_s), and renames it into place
 * unless write_err or its own writing failed, when it is removed. 0 or
 * -errno with the reason in err; *bytes its size. */
int flight_file_close(struct flight_file *ff, int dirfd, int write_err, double duration_s, int64_t *bytes,
		      char *err, size_t errlen);

/* Removes the oldest recordings (FLIGHT_PREFIX...rec, regular files of
 * ours) while the directory's recordings hold more than max_bytes; says
 * each on log. Returns how many it removed, or -errno. */
int flight_dir_trim(int dirfd, int64_t max_bytes, FILE *log);

#endif /* LOOPSTAT_FLIGHT_DIR_H */
