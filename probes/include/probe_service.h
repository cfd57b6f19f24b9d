/*
 * probe_service.h — the service a process belongs to, as operators name
 * it: its systemd unit ("nginx.service"), else its container ("docker:"
 * and the first 12 digits of its id, "containerd:", "crio:", "podman:",
 * or a Kubernetes "pod:<uid>"), from the path of its cgroup in
 * /proc/PID/cgroup (v2's "0::" line, else v1's systemd or any hierarchy).
 * A process in neither is its own service: the caller names it by its
 * process name.
 *
 * A unit or container below a user's own systemd (user@UID.service) or
 * inside a container is named with its owner first, "user 1001:
 * duty.service", "docker:0123456789ab: nginx.service", so that no user
 * can pass a unit of theirs off as the host's unit of that name.
 */
#ifndef PROBE_SERVICE_H
#define PROBE_SERVICE_H

#include <stddef.h>
#include <sys/types.h>

#define PROBE_SERVICE_LEN 128

/* The service in cgroup-file text (the content of /proc/PID/cgroup) into
 * out: 1 when a unit or container was found, else 0 and out is "". */
int probe_service_parse(const char *text, char *out, size_t len);

/* The same from /proc/PID/cgroup: 1, 0, or -errno when it cannot be read. */
int probe_service_of(pid_t pid, char *out, size_t len);

#endif /* PROBE_SERVICE_H */
