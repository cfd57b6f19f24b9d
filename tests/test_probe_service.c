/* A process's service from its cgroup file: systemd units, containers, pods, v1 and v2; a user's or a container's own units named with their owner, never as the host's. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <unistd.h>
#include <string.h>

#include "probe_service.h"

struct service_case {
	const char *text, *want; /* want "": none found */
};

static const struct service_case cases[] = {
	/* v2, systemd */
	{ "0::/system.slice/nginx.service\n", "nginx.service" },
	{ "0::/system.slice/redis-server.service\n", "redis-server.service" },
	/* a unit nested under a user's manager: the deepest unit, never user@,
	 * named with its owner: a user's duty.service is not the system's */
	{ "0::/user.slice/user-1000.slice/user@1000.service/app.slice/api.service\n", "user 1000: api.service" },
	{ "0::/user.slice/user-1001.slice/user@1001.service/app.slice/duty.service\n", "user 1001: duty.service" },
	{ "0::/user.slice/user-1001.slice/user@1001.service/user.slice/"
	  "docker-3f2a1bc4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f80.scope\n",
	  "user 1001: docker:3f2a1bc4d5e6" },
	/* not a user manager: no owner read from it */
	{ "0::/system.slice/user@x.service/duty.service\n", "duty.service" },
	{ "0::/user.slice/user-1000.slice/user@1000.service/init.scope\n", "" },
	/* a login session: no service */
	{ "0::/user.slice/user-0.slice/session-3.scope\n", "" },
	{ "0::/\n", "" },
	/* v1 (hybrid): the name=systemd hierarchy */
	{ "12:cpu,cpuacct:/\n1:name=systemd:/system.slice/nginx.service\n0::/\n", "nginx.service" },
	{ "4:memory:/process_api/8d9153ed918369412ff593d20aadcd73\n1:cpu:/\n0::/\n", "" },
	/* containers: systemd driver and cgroupfs driver */
	{ "0::/system.slice/docker-3f2a1bc4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f80.scope\n",
	  "docker:3f2a1bc4d5e6" },
	{ "11:memory:/docker/3f2a1bc4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f80\n", "docker:3f2a1bc4d5e6" },
	{ "0::/machine.slice/libpod-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope\n",
	  "podman:0123456789ab" },
	{ "0::/system.slice/crio-aaaabbbbccccddddeeeeffff0000111122223333444455556666777788889999.scope\n",
	  "crio:aaaabbbbcccc" },
	/* Kubernetes: the pod, not the container in it */
	{ "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1b2c3d4e_5f60_7182_93a4_b5c6d7e8f901.slice/"
	  "cri-containerd-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope\n",
	  "pod:1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901" },
	{ "0::/kubepods/besteffort/pod1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901/"
	  "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n",
	  "pod:1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901" },
	/* a unit wins over a container id further up */
	{ "0::/system.slice/docker-3f2a1bc4d5e6f708.scope/app.service\n", "docker:3f2a1bc4d5e6: app.service" },
	/* not ids: too short, not hex */
	{ "0::/system.slice/docker-xyz.scope\n", "" },
	{ "", "" },
};

Test(service, parse, .timeout = 5)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct service_case *c = &cases[i];
		char out[PROBE_SERVICE_LEN];
		int found = probe_service_parse(c->text, out, sizeof(out));
		cr_expect_eq(found, *c->want != '\0', "%s", c->text);
		cr_expect_str_eq(out, c->want, "%s", c->text);
	}
}

Test(service, a_real_process, .timeout = 5)
{
	char out[PROBE_SERVICE_LEN];
	int found = probe_service_of(getpid(), out, sizeof(out));
	cr_assert_geq(found, 0);
	cr_expect(found ? *out != '\0' : *out == '\0');
	cr_expect_eq(probe_service_of(0x3fffffff, out, sizeof(out)), -ENOENT);
}
