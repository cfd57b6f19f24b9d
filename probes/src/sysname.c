/*
 * sysname.c — syscall number to name, through libseccomp for the native
 * architecture. seccomp_syscall_resolve_num_arch() returns a malloc'd string
 * and searches a table, so the names are resolved once into a table of our
 * own and looked up by index on every sample.
 */
#include "probe_classify.h"

#include <pthread.h>
#include <seccomp.h>
#include <stdlib.h>

/* Same bound as classify.c: above every native syscall number. */
#define NAME_LIMIT 1024

static char *names[NAME_LIMIT]; /* owned for the process lifetime */
static pthread_once_t names_once = PTHREAD_ONCE_INIT;

static void build_names(void)
{
	for (int nr = 0; nr < NAME_LIMIT; nr++)
		names[nr] = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
}

const char *probe_syscall_name(long nr)
{
	if (nr < 0 || nr >= NAME_LIMIT)
		return NULL;
	pthread_once(&names_once, build_names);
	return names[nr];
}
