/* libFuzzer: the shm segment validator and reader (probe_shm_check_header, probe_shm_open, probe_shm_read). */
#include "fuzz.h"
#include "probe_shm.h"
#include "probe_stat.h"

#include <stddef.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct loopstat_shm_header h;
	memset(&h, 0, sizeof(h));
	memcpy(&h, data, size < sizeof(h) ? size : sizeof(h));
	(void)probe_shm_check_header(&h, size);

	/* The input as a segment claiming this process, with its real pid and
	 * start time patched in (when it is long enough to hold them), so that
	 * the reader gets past the writer checks into the slot table. */
	static uint64_t start;
	if (!start) {
		struct probe_stat st;
		if (probe_stat_read(getpid(), 0, &st) < 0)
			abort();
		start = st.start_time;
	}
	uint8_t *img = malloc(size ? size : 1);
	memcpy(img, data, size);
	int32_t pid = getpid();
	if (size >= offsetof(struct loopstat_shm_header, pid) + sizeof(pid))
		memcpy(img + offsetof(struct loopstat_shm_header, pid), &pid, sizeof(pid));
	if (size >= offsetof(struct loopstat_shm_header, start_time) + sizeof(start))
		memcpy(img + offsetof(struct loopstat_shm_header, start_time), &start, sizeof(start));
	char path[128];
	snprintf(path, sizeof(path), "%s/loopstat.%d", fuzz_dir(), (int)pid);
	fuzz_write(path, img, size);
	free(img);

	struct probe_shm *shm;
	if (probe_shm_open(path, &shm) == 0) {
		struct probe_shm_worker w[8];
		struct probe_shm_read_info info;
		for (int include_exited = 0; include_exited < 2; include_exited++) {
			int n = probe_shm_read(shm, w, 8, include_exited);
			probe_shm_last_read(shm, &info);
			if (n > 0 && (info.bytes > PROBE_SHM_READ_BUDGET || (size_t)n > info.slots))
				abort();
			for (int i = 0; i < n && i < 8; i++)
				if (w[i].tag[sizeof(w[i].tag) - 1] || w[i].fiber_tag[sizeof(w[i].fiber_tag) - 1])
					abort(); /* tags always NUL-terminated */
		}
		(void)probe_shm_check_writer(shm);
		probe_shm_close(shm);
	}
	return 0;
}
