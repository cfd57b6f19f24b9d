/*
 * fiber_memory — memory per live fiber: 10,000 fibers parked in
 * fl_suspend(), RSS and virtual size from /proc/self/statm before and
 * after, divided by the count. Default stack size (256 KiB, reserved with
 * MAP_NORESERVE; only touched pages count in RSS).
 */
#include "fiberloop.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define FIBERS 10000

static void statm(long *virt, long *rss)
{
	FILE *f = fopen("/proc/self/statm", "r");
	long pages_v = 0, pages_r = 0;
	if (!f || fscanf(f, "%ld %ld", &pages_v, &pages_r) != 2) {
		perror("fiber_memory: /proc/self/statm");
		exit(1);
	}
	fclose(f);
	long ps = sysconf(_SC_PAGESIZE);
	*virt = pages_v * ps;
	*rss = pages_r * ps;
}

static fl_fiber *fibers[FIBERS];

static void *parked(void *arg)
{
	(void)arg;
	fl_suspend();
	return NULL;
}

static void *mem_main(void *arg)
{
	(void)arg;
	long v0, r0, v1, r1;
	fl_snooze(); /* the loop itself is fully set up */
	statm(&v0, &r0);
	for (int i = 0; i < FIBERS; i++)
		fibers[i] = fl_spin(parked, NULL, NULL);
	fl_snooze(); /* every fiber has run and parked */
	statm(&v1, &r1);
	printf("fibers %d\nrss_before %ld\nrss_after %ld\nvirt_before %ld\nvirt_after %ld\n", FIBERS, r0, r1, v0,
	       v1);
	printf("figure fiber_rss_bytes %.0f B\n", (double)(r1 - r0) / FIBERS);
	printf("figure fiber_virt_bytes %.0f B\n", (double)(v1 - v0) / FIBERS);
	for (int i = 0; i < FIBERS; i++)
		fl_schedule(fibers[i], NULL);
	return NULL;
}

int main(void)
{
	int err = fl_run(mem_main, NULL, NULL, NULL);
	return err ? 1 : 0;
}
