/* Every output of the real binary, fed a worker whose comm, loop tag and fiber tag hold ESC, C1 (raw 0x9b and U+009B), invalid UTF-8 and each format's specials: no ESC, no C1, valid UTF-8, and each structured output parses. */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/children.h"
#include "support/fl_test.h"
#include "support/support.h"
#include "util/escape.h"

#define PYTHON "/usr/bin/python3"   /* Debian's, where python3-yaml lives */

/* 15 bytes, all the kernel keeps: ESC, raw CSI, encoded CSI, a byte that is
 * never UTF-8, JSON/XML/YAML/TAP/folded/Prometheus specials, a newline and
 * a character cut in two, as the kernel cuts long names */
static const char COMM[] = "\x1b\x9b\xc2\x9b\xff\"\\&<'#;\n\xe2\x96";
/* up to 31 bytes each: an escape sequence, C1, U+FFFE, XML's ]]>, a tab */
static const char LOOP_TAG[] = "L\x1b[2J\x9b\xc2\x85\xef\xbf\xbe]]>&'\"\\#;=~\t\r x";
static const char FIBER_TAG[] = "F\x1b]0;t\x07\xc2\x9b\xfe<>&\"\\#;|\n\x7f y";
/* for a hand-made recording (lines end at a newline, so none inside) */
static const char REC_NAME[] = "R\x1b[2J\x9b\xc2\x9b\xff\"\\&<>'#;\r\x7f\xe2\x96";

enum parse { P_TEXT, P_JSON, P_XML, P_TAP, P_PROM, P_GRAPHITE, P_FOLDED };

/*
 * One row per output. cmd runs under sh with %L the binary, %P the
 * worker's pid, %D a scratch directory, %F the output file, %R a hand-made
 * recording with unsanitised strings; the output is the command's stdout,
 * or %F when the row writes it. A row's needle is the names as that output
 * must escape them, so a row that lost the worker cannot pass. ("?\?" is
 * "??": the escape keeps "??)" from reading as a trigraph.)
 */
static const struct row {
	const char *name;
	const char *cmd;
	int to_file;
	enum parse parse;
	const char *needle;
} rows[] = {
	{ "list text", "%L list -p %P --duration 0.5", 0, P_TEXT, "?\??\?\"\\&<'#;?\?/L?[2J?\?" },
	{ "list json", "%L list -p %P --duration 0.5 --json", 0, P_JSON, "\"name\":\"\\u001b\\ufffd\\u009b" },
	{ "check text", "%L check -p %P --duration 1 'idle_pct>=0'", 0, P_TEXT, "?\??\?\"\\&<'#;?\? %P/%P" },
	{ "check tap", "%L check -p %P --duration 1 --tap --tap-version 13 'idle_pct>=0'", 0, P_TAP,
	  "?\??\?\"\\\\&<'\\#;?\? %P/%P" },
	{ "check junit", "%L check -p %P --duration 1 --junit %F 'idle_pct>=0' >/dev/null", 1, P_XML,
	  "classname=\"loopstat.\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd&quot;\\&amp;&lt;&apos;#;&#10;" },
	{ "check json", "%L check -p %P --duration 1 --json 'idle_pct>=0'", 0, P_JSON, "\"process\":\"\\u001b" },
	{ "export graphite", "%L export -p %P --duration 0.5 --dry-run --prefix t", 0, P_GRAPHITE, "._____________.%P." },
	{ "export graphite tags", "%L export -p %P --duration 0.5 --dry-run --tags --prefix t", 0, P_GRAPHITE,
	  ";process=_____________;" },
	{ "prometheus", "%L export -p %P --duration 0.5 --prometheus-textfile %F", 1, P_PROM,
	  "name=\"?\??\?\\\"\\\\&<'#;\\n?\"" },
	{ "profile text", "%L profile -p %P --duration 0.5", 0, P_TEXT, "loopstat profile: pid %P (?\??\?\"\\&<'#;?\?)" },
	{ "profile folded", "%L profile -p %P --duration 0.5 -f folded", 0, P_FOLDED, "%P/%P ?\??\?\"\\&<'#,?\?" },
	{ "profile svg", "%L profile -p %P --duration 0.5 -f svg -o %F", 1, P_XML,
	  ">F?]0,t?\?\?&lt;&gt;&amp;\"\\#,|?\? y</text>" },
	{ "profile speedscope", "%L profile -p %P --duration 0.5 -f speedscope", 0, P_JSON, "\"name\":\"pid %P (\\u001b" },
	{ "profile json", "%L profile -p %P --duration 0.5 -f json", 0, P_JSON, "\"title\":\"pid %P (\\u001b" },
	{ "record", "%L record -p %P --duration 0.5 -o %F", 1, P_TEXT, "m title pid %P (?\??\?\"\\&<'#,?\?)" },
	{ "report text", "%L record -p %P --duration 0.5 -o %D/rec && %L report %D/rec", 0, P_TEXT,
	  "loopstat profile: pid %P (?\??\?\"\\&<'#,?\?)" },
	{ "report text, hand-made", "%L report %R", 0, P_TEXT, "loopstat profile: pid 1 (R?[2J?\?\?\"\\&<>'#;?\?\?)" },
	{ "report svg, hand-made", "%L report -f svg %R", 0, P_XML,
	  ">pid 1 (R\xef\xbf\xbd[2J\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"\\&amp;&lt;&gt;'#;&#13;\xef\xbf\xbd\xef\xbf\xbd)" },
	{ "report json, hand-made", "%L report -f json %R", 0, P_JSON, "\"title\":\"pid 1 (R\\u001b[2J\\ufffd\\u009b" },
	{ "report svg", "%L record -p %P --duration 0.5 -o %D/rec2 && %L report -f svg %D/rec2", 0, P_XML,
	  ">pid %P (?\??\?\"\\&amp;&lt;'#,?\?)</text>" },
};

/* s with %L, %P, %D, %F, %R replaced; the caller frees it */
static char *expand(const char *s, pid_t pid, const char *dir, const char *file)
{
	char *out = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&out, &len);
	for (; *s; s++) {
		if (s[0] != '%' || !s[1]) {
			fputc(*s, m);
			continue;
		}
		switch (*++s) {
		case 'L': fputs(ts_loopstat_bin(), m); break;
		case 'P': fprintf(m, "%d", (int)pid); break;
		case 'D': fputs(dir, m); break;
		case 'F': fputs(file, m); break;
		case 'R': fprintf(m, "%s/hostile.rec", dir); break;
		default: fputc('%', m), fputc(*s, m);
		}
	}
	fclose(m);
	return out;
}

/* s with every byte but printable ASCII and newline as \xNN: a failing
 * row's output is shown exactly, and without letting its escapes reach the
 * terminal of whoever reads the test log */
static char *shown(const char *s)
{
	char *out = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&out, &len);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if ((*p >= 0x20 && *p < 0x7f) || *p == '\n')
			fputc(*p, m);
		else
			fprintf(m, "\\x%02x", *p);
	fclose(m);
	return out;
}

static int fail(const char *row, const char *why, const char *s)
{
	char *v = shown(s);
	cr_expect_fail("%s: %s:\n%s", row, why, v);
	free(v);
	return -1;
}

/* No ESC, no 0x9b byte, valid UTF-8, no C0 but tab and LF, no DEL, no C1. */
static int check_clean(const char *row, const char *what, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t len = strlen(s);
	char why[128];
	if (memchr(s, 0x1b, len))
		return snprintf(why, sizeof(why), "ESC in its %s", what), fail(row, why, s);
	if (memchr(s, 0x9b, len))
		return snprintf(why, sizeof(why), "byte 0x9b in its %s", what), fail(row, why, s);
	for (size_t i = 0; i < len;) {
		uint32_t cp;
		int n = esc_utf8(p + i, len - i, &cp);
		if (n < 0)
			return snprintf(why, sizeof(why), "invalid UTF-8 at byte %zu of its %s", i, what), fail(row, why, s);
		enum esc_class c = esc_classify(n, cp);
		if ((c == ESC_C0 && cp != '\n' && cp != '\t') || c == ESC_DEL || c == ESC_C1)
			return snprintf(why, sizeof(why), "U+%04X at byte %zu of its %s", cp, i, what), fail(row, why, s);
		i += (size_t)n;
	}
	return 0;
}

static int sh(const char *cmd, char **out, int timeout_ms)
{
	char *argv[] = { "/bin/sh", "-c", (char *)cmd, NULL };
	return ts_run(argv, out, timeout_ms);
}

static const char validate_py[] =
	"import sys, xml.etree.ElementTree as ET, yaml\n"
	"kind, path = sys.argv[1], sys.argv[2]\n"
	"if kind == 'xml':\n"
	"    ET.parse(path)\n"
	"else:\n"
	"    block = None\n"
	"    for line in open(path, encoding='utf-8'):\n"
	"        if line == '  ---\\n': block = []\n"
	"        elif line == '  ...\\n':\n"
	"            d = yaml.safe_load(''.join(block)); assert d['worker'], d; block = None\n"
	"        elif block is not None: block.append(line[2:])\n"
	"print('ok')\n";

static const char tap_pl[] =
	"use TAP::Parser;\n"
	"my $p = TAP::Parser->new({ exec => ['/bin/cat', $ARGV[0]] });\n"
	"while (my $r = $p->next) {}\n"
	"print \"error $_\\n\" for $p->parse_errors;\n"
	"printf \"plan %s tests %d\\n\", $p->plan, scalar($p->passed) + scalar($p->failed);\n";

/* "path value ts" with every byte of the path in [A-Za-z0-9_.;=-], or
 * folded's "frames count": one line each. */
static int check_lines(const struct row *r, const char *text)
{
	for (const char *l = text; *l;) {
		const char *nl = strchr(l, '\n'), *sp = nl ? memchr(l, ' ', (size_t)(nl - l)) : NULL;
		if (!sp)
			return fail(r->name, "a line without its value", text);
		if (r->parse == P_GRAPHITE) {
			for (const char *c = l; c < sp; c++)
				if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.;=-", *c))
					return fail(r->name, "a byte outside the path's set", text);
		} else {
			const char *cnt = nl;
			while (cnt > l && cnt[-1] != ' ')
				cnt--;
			if (cnt == nl || strspn(cnt, "0123456789") != (size_t)(nl - cnt))
				return fail(r->name, "a line without its count", text);
		}
		l = nl + 1;
	}
	return 0;
}

/* The structured output at path parses as its format says. */
static int check_parses(const struct row *r, const char *path, const char *text)
{
	char *out = NULL, *cmd = NULL, why[512];
	int rc = 0, ok = 0;
	switch (r->parse) {
	case P_JSON: {
		json_object *o = json_tokener_parse(text);
		json_object_put(o);
		return o ? 0 : fail(r->name, "not JSON (json-c)", text);
	}
	case P_XML:
	case P_TAP: {
		char *argv[] = { PYTHON, "-c", (char *)validate_py, r->parse == P_XML ? "xml" : "tap", (char *)path, NULL };
		rc = ts_run(argv, &out, 20000);
		ok = rc == 0;
		if (ok && r->parse == P_TAP) {
			free(out);
			char *pl[] = { "/usr/bin/perl", "-e", (char *)tap_pl, (char *)path, NULL };
			rc = ts_run(pl, &out, 20000);
			ok = rc == 0 && !strstr(out, "error ") && strstr(out, "plan 1..1 tests 1");
		}
		break;
	}
	case P_PROM:
		cr_assert(asprintf(&cmd, "/usr/bin/promtool check metrics < '%s' 2>&1", path) > 0);
		rc = sh(cmd, &out, 20000);
		ok = rc == 0;
		break;
	case P_GRAPHITE:
	case P_FOLDED:
		return check_lines(r, text);
	case P_TEXT:
		return 0;
	}
	snprintf(why, sizeof(why), "its parser refuses it (exit %d): %s", rc, out ? out : "");
	rc = ok ? 0 : fail(r->name, why, text);
	free(out);
	free(cmd);
	return rc;
}

/* A recording as anyone could hand one over: its strings unsanitised. */
static void write_hostile_recording(const char *path)
{
	char *rec;
	cr_assert(asprintf(&rec, "loopstat-record 1\nm rate_hz 1000\nm title pid 1 (%s)\n"
			  "s 1 1/1 %s:%s\ns 2 read\ns 3 fd 3 %s\ns 4 %s\n"
			  "e 1000 1 1 1 3 0 3 0 0 0 0 1 1 2 3 4 0\ne 2000 1 1 1 3 0 3 0 0 0 0 1 1 2 3 4 0\n"
			  "m duration_s 1\n", REC_NAME, REC_NAME, LOOP_TAG, LOOP_TAG, REC_NAME) > 0);
	cr_assert_eq(ts_write_file(path, rec, strlen(rec)), 0);
	free(rec);
}

Test(escape_outputs, every_output_holds_no_control_and_parses, .timeout = 240)
{
	fl_test_shm_setup();
	pid_t pid = tc_spawn_named(COMM, LOOP_TAG, FIBER_TAG);
	char *dir = ts_tmpdir("escout"), hostile[512];
	snprintf(hostile, sizeof(hostile), "%s/hostile.rec", dir);
	write_hostile_recording(hostile);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *r = &rows[i];
		char file[512], err[512];
		snprintf(file, sizeof(file), "%s/out%zu", dir, i);
		snprintf(err, sizeof(err), "%s/err%zu", dir, i);
		char *cmd = expand(r->cmd, pid, dir, file), *full, *out = NULL, *text = NULL;
		char *needle = expand(r->needle, pid, dir, file);
		cr_assert(asprintf(&full, "(%s) 2>%s", cmd, err) > 0);
		int rc = sh(full, &out, 60000);
		char *errs = ts_read_file(err);
		if (rc != 0 && rc != 3) {
			char why[64];
			snprintf(why, sizeof(why), "exit %d", rc);
			fail(r->name, why, errs);
			goto next;
		}
		if (r->to_file) {
			text = ts_read_file(file);
		} else {
			text = out;
			out = NULL;
			cr_assert_eq(ts_write_file(file, text, strlen(text)), 0);
		}
		/* stderr reaches the terminal too */
		if (check_clean(r->name, "stderr", errs) || check_clean(r->name, "output", text))
			goto next;
		if (!strstr(text, needle)) {
			char *n = shown(needle);
			char why[512];
			snprintf(why, sizeof(why), "no \"%s\" in its output", n);
			free(n);
			fail(r->name, why, text);
			goto next;
		}
		if (check_parses(r, file, text) == 0)
			cr_log_info("%s: clean, %zu bytes", r->name, strlen(text));
next:
		free(text);
		free(needle);
		free(errs);
		free(out);
		free(full);
		free(cmd);
	}
	tc_kill(pid);
	ts_rmtree_free(dir);
	fl_test_shm_done();
}
