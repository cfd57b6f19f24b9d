/*
 * exitcodes.h — the one exit-code table of the whole CLI. main's usage text,
 * loopstat(1), docs/usage.md and their tests walk it.
 */
#ifndef LOOPSTAT_EXITCODES_H
#define LOOPSTAT_EXITCODES_H

#define EXIT_CODES(X) \
	X(OK,           0,  "success") \
	X(FAIL,         1,  "a check threshold failed; for any other command, it failed (the message says why)") \
	X(USAGE,        2,  "usage or configuration error") \
	X(INCONCLUSIVE, 3,  "a check was inconclusive (none failed)") \
	X(NOTHING,      4,  "nothing to measure: no worker, a target gone, too few samples") \
	X(ACCESS,       5,  "access refused for a target (the message says how to fix it)") \
	X(DEFERRED,     75, "export deferred: points spooled for the next run (EX_TEMPFAIL)")

enum exit_code {
#define EXIT_X_ENUM(name, code, desc) EXIT_##name = code,
	EXIT_CODES(EXIT_X_ENUM)
#undef EXIT_X_ENUM
};

struct exit_code_info {
	int code;
	const char *name;
	const char *desc;
};

extern const struct exit_code_info exit_codes[];
extern const int exit_ncodes;

#endif /* LOOPSTAT_EXITCODES_H */
