/*
 * rt_jvm.c — the JVM's event loops by their thread names. HotSpot names a
 * native thread after its Java thread (pthread_setname_np, truncated to 15
 * bytes), so Netty's "nioEventLoopGroup-3-1" reads "nioEventLoopGro": the
 * group's number is cut off, and the boss and worker groups read as one.
 */
#include "probe_rt.h"

#include <string.h>

static const char *const loop_prefixes[] = {
	"nioEventLoopGro",   /* NioEventLoopGroup */
	"epollEventLoopG",   /* EpollEventLoopGroup */
	"kqueueEventLoop",   /* KQueueEventLoopGroup */
	"defaultEventLoo",   /* DefaultEventLoopGroup */
	"vert.x-eventloo",   /* Vert.x's loops */
};

int probe_rt_jvm_loop(const char *thread_comm)
{
	for (size_t i = 0; i < sizeof(loop_prefixes) / sizeof(loop_prefixes[0]); i++)
		if (!strncmp(thread_comm, loop_prefixes[i], strlen(loop_prefixes[i])))
			return 1;
	return 0;
}
