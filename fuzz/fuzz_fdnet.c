/*
 * libFuzzer: fd link texts (probe_fd_kind_of) and the net tables behind
 * socket resolution (probe_net_describe reading <root>/PID/net/{tcp,tcp6,
 * udp,udp6,unix} of a fixture tree that holds the input).
 */
#include "fuzz.h"
#include "probe_fd.h"
#include "probe_proc.h"

#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	memcpy(text, data, size);
	text[size] = '\0';
	uint64_t inode = 0;
	enum probe_fd_kind k = probe_fd_kind_of(text, &inode);
	if (k < PROBE_FD_UNKNOWN || k > PROBE_FD_OTHER)
		abort();

	static char root[128];
	if (!root[0]) {
		snprintf(root, sizeof(root), "%s/proc", fuzz_dir());
		char p[192];
		mkdir(root, 0700);
		snprintf(p, sizeof(p), "%s/1", root);
		mkdir(p, 0700);
		snprintf(p, sizeof(p), "%s/1/net", root);
		mkdir(p, 0700);
		setenv(PROBE_PROC_ROOT_ENV, root, 1);
	}
	/* the input is every table at once; ask for a few inodes it may name */
	static const char *tables[] = { "tcp", "tcp6", "udp", "udp6", "unix" };
	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
		char p[192];
		snprintf(p, sizeof(p), "%s/1/net/%s", root, tables[i]);
		fuzz_write(p, data, size);
	}
	char out[PROBE_TARGET_LEN];
	const uint64_t inodes[] = { inode, 1, 12345, (uint64_t)size };
	for (size_t i = 0; i < sizeof(inodes) / sizeof(inodes[0]); i++)
		if (probe_net_describe(1, inodes[i], out, sizeof(out)) == 0 && !memchr(out, '\0', sizeof(out)))
			abort();
	free(text);
	return 0;
}
