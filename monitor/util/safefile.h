/*
 * safefile.h — files loopstat creates, reads and replaces in a directory
 * another local user may be able to write (export's spool, the Prometheus
 * textfile): a name there can be a link to any file, a FIFO that blocks an
 * open for ever, or a hard link to root's own file. So the directory is
 * checked once and opened; everything in it is opened relative to that fd,
 * never through a link (O_NOFOLLOW), never blocking (O_NONBLOCK), temp
 * files exclusively (O_EXCL, random names); and every file opened is
 * checked with fstat: a regular file of ours with one link, or refused.
 */
#ifndef LOOPSTAT_SAFEFILE_H
#define LOOPSTAT_SAFEFILE_H

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/*
 * Opens directory path after checking every directory on the way (links
 * resolved here, one component at a time): each belongs to us or root and
 * is not writable by other users unless sticky, like /tmp ("other users":
 * world-writable, or group-writable by a group that is neither ours nor
 * root's); in a directory others can write, the entry taken must belong
 * to us or root too, or its owner could point it anywhere. With create,
 * missing directories are made (mode 0700), but never inside a directory
 * other users can write. Returns the directory's fd, or -errno with a
 * lowercase reason naming the path in err: -EPERM for a directory refused
 * (the reason says how to fix it), else the failing call's.
 */
int safefile_dir_open(const char *path, int create, char *err, size_t errlen);

/* NULL if st is a file we may open and write: a regular file of ours with
 * one link. Else why not, in buf ("is a FIFO, not a regular file", "belongs
 * to uid 1001, not to us", "has 2 links"). */
const char *safefile_refusal(const struct stat *st, char *buf, size_t len);

/*
 * openat(dirfd, name, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, mode),
 * refusing what safefile_refusal refuses, before the open when the name
 * exists (a FIFO or a device is never opened) and after it on the fd.
 * Returns the fd (its fstat in *st), or -errno with "NAME: reason" in err:
 * -EPERM for a name refused, -ENOENT, -EEXIST (O_EXCL), ...
 */
int safefile_open(int dirfd, const char *name, int flags, mode_t mode, struct stat *st, char *err, size_t errlen);

/* Reads name (safefile_open'd) into buf, at most len - 1 bytes and never
 * more than its size, NUL-terminated. Returns the bytes read or -errno
 * (-ENOENT: none) with "NAME: reason" in err. */
ssize_t safefile_read(int dirfd, const char *name, char *buf, size_t len, char *err, size_t errlen);

/*
 * Replaces name in dirfd with buf, atomically: a new temp file
 * ".NAME.tmp.PID.RANDOM" (O_EXCL), written, fsync'd, renamed over name, the
 * directory fsync'd. Only a regular file of ours is ever replaced: an
 * existing name that is anything else (a device, a FIFO, a link, a
 * directory, another user's file) is left as it is, -EEXIST with "SHOWN is
 * a character device, not a regular file; ..." in err (shown: how messages
 * name it, NULL for name). Returns 0 or -errno.
 */
int safefile_replace(int dirfd, const char *name, const char *shown, const char *buf, size_t len, mode_t mode,
                     char *err, size_t errlen);

/*
 * The two halves of safefile_replace, for a file written as a stream:
 * safefile_tmp_open makes the fresh temp file next to name (its name in
 * tmp) and returns its fd or -errno; safefile_commit takes what writing
 * it gave (write_err: 0 or the first write's -errno), fsyncs and closes
 * fd, renames tmp over name as safefile_replace does and fsyncs the
 * directory. On any failure tmp is removed (a full disk loses the new
 * file, never what name held). 0 or -errno with the reason in err.
 */
int safefile_tmp_open(int dirfd, const char *name, mode_t mode, char *tmp, size_t tlen, char *err, size_t errlen);
int safefile_commit(int dirfd, int fd, int write_err, const char *tmp, const char *name, const char *shown,
		    char *err, size_t errlen);

#endif /* LOOPSTAT_SAFEFILE_H */
