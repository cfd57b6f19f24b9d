/* diff's differential profile of two real runs: a function whose share grew from 10% to 30% is named in the text, coloured in a valid SVG, and only frames whose change's interval excludes 0 are coloured; folded lists both runs' counts of every stack. */
#include <criterion/criterion.h>

#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support/children.h"
#include "support/list_json.h"
#include "support/support.h"

static char *dir, *rec[2];

static void setup(void) { dir = ts_tmpdir("diffprof"); }
static void teardown(void)
{
	free(rec[0]);
	free(rec[1]);
	ts_rmtree_free(dir);
}

TestSuite(diff_profile, .init = setup, .fini = teardown, .timeout = 40);

/* profile_mix share 10 and share 30, recorded side by side for 5 s at 200 Hz. */
static void record_both(void)
{
	const char *pct[2] = { "10", "30" };
	pid_t pid[2];
	int out[2];
	char cmds[2][1024];
	const char *cmd[2];
	for (int i = 0; i < 2; i++) {
		const char *args[] = { "share", pct[i], "10", NULL };
		pid[i] = tc_spawn_example("profile_mix", args, &out[i]);
		cr_assert_gt(pid[i], 0);
		char name[16];
		snprintf(name, sizeof(name), "share%s.rec", pct[i]);
		rec[i] = ts_path_in(dir, name);
		snprintf(cmds[i], sizeof(cmds[i]), "exec \"%s\" record -o %s -p %d --duration 5 --rate 200 2>&1",
			 ts_loopstat_bin(), rec[i], (int)pid[i]);
		cmd[i] = cmds[i];
	}
	usleep(300 * 1000);
	char *outs[2];
	int rcs[2];
	ts_sh_all(2, cmd, outs, rcs, 30000);
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(rcs[i], 0, "record %d: exit %d: %s", i, rcs[i], outs[i]);
		free(outs[i]);
		tc_kill(pid[i]);
		close(out[i]);
	}
}

/* The frame group's fill and title in the svg at g ("<g class="f" ...>"). */
static void frame_of(const char *g, char *fill, size_t flen, char *title, size_t tlen)
{
	const char *t = strstr(g, "<title>"), *te = t ? strstr(t, "</title>") : NULL;
	const char *f = strstr(g, "fill=\"");
	cr_assert(t && te && f, "a frame without title or fill");
	snprintf(title, tlen, "%.*s", (int)(te - t - 7), t + 7);
	snprintf(fill, flen, "%.*s", (int)strcspn(f + 6, "\""), f + 6);
}

Test(diff_profile, the_grown_function_is_named_and_coloured_and_noise_is_grey)
{
	record_both();

	/* text: the function's chain grew by about 20 points */
	char *out = NULL;
	int rc = ts_loopstat(&out, 20000, "diff", rec[0], rec[1], NULL);
	cr_assert_eq(rc, 0, "diff: exit %d: %s", rc, out);
	const char *line = strstr(out, "lookup_slowly");
	cr_assert(line, "the text names no lookup_slowly:\n%s", out);
	const char *bol = line;
	while (bol > out && bol[-1] != '\n')
		bol--;
	double change, lo, hi, pa, pb;
	cr_assert_eq(sscanf(bol, " %lf [%lf, %lf] %lf%% -> %lf%%", &change, &lo, &hi, &pa, &pb), 5, "%.200s", bol);
	cr_log_info("lookup_slowly: %.2f%% -> %.2f%%, change %.2f [%.2f, %.2f]", pa, pb, change, lo, hi);
	cr_expect(strstr(bol, "grew") && strstr(bol, "blocked;read"), "%.300s", bol);
	cr_expect(pa > 5 && pa < 15 && pb > 25 && pb < 35, "shares %.2f%% -> %.2f%%, the runs block 10%% and 30%%", pa, pb);
	cr_expect(lo > 0 && lo <= 20 && 20 <= hi, "the change's interval [%.2f, %.2f] covers 20 points", lo, hi);
	free(out);

	/* svg: valid; the function's frame coloured (grew: red); every coloured frame's change beyond noise,
	 * every grey one's within it */
	char *svg = ts_path_in(dir, "diff.svg");
	rc = ts_loopstat(&out, 20000, "diff", "-f", "svg", "-o", svg, rec[0], rec[1], NULL);
	cr_assert_eq(rc, 0, "diff -f svg: exit %d: %s", rc, out);
	free(out);
	if (access("/usr/bin/xmllint", X_OK) == 0) {
		char cmd[1024];
		snprintf(cmd, sizeof(cmd), "xmllint --noout %s 2>&1", svg);
		char *const argv[] = { "/bin/sh", "-c", cmd, NULL };
		char *lint = NULL;
		cr_expect_eq(ts_run(argv, &lint, 10000), 0, "xmllint: %s", lint);
		free(lint);
	} else {
		cr_log_warn("xmllint not installed: the svg's well-formedness is not checked");
	}
	char *doc = ts_read_file(svg);
	cr_assert(doc);
	int coloured = 0, grey = 0, function_red = 0;
	for (const char *g = strstr(doc, "<g class=\"f\""); g; g = strstr(g + 1, "<g class=\"f\"")) {
		char fill[64], title[2048];
		frame_of(g, fill, sizeof(fill), title, sizeof(title));
		const char *note = strstr(title, " change ");
		int is_grey = strcmp(fill, "rgb(215,215,215)") == 0;
		if (!note) {   /* root and threads: no change of their own */
			cr_expect(is_grey, "frame '%s' is coloured (%s) without a change", title, fill);
			continue;
		}
		double c, l, h;
		cr_assert_eq(sscanf(note, " change %lf points [%lf, %lf]", &c, &l, &h), 3, "%s", note);
		int beyond = l > 0 || h < 0;
		cr_expect(beyond != is_grey, "frame '%s': change [%.2f, %.2f], fill %s", title, l, h, fill);
		coloured += !is_grey;
		grey += is_grey;
		if (strncmp(title, "profile_mix`lookup_slowly", 25) == 0)
			function_red = strncmp(fill, "rgb(255,", 8) == 0;
	}
	cr_log_info("svg: %d frames coloured, %d grey", coloured, grey);
	cr_expect(function_red, "lookup_slowly's frame is not red");
	cr_expect_gt(coloured, 0);
	free(doc);
	free(svg);

	/* folded: every stack with both runs' own counts, the function's among them */
	char *folded = ts_path_in(dir, "diff.folded");
	rc = ts_loopstat(&out, 20000, "diff", "-f", "folded", "-o", folded, rec[0], rec[1], NULL);
	cr_assert_eq(rc, 0, "diff -f folded: exit %d: %s", rc, out);
	free(out);
	doc = ts_read_file(folded);
	cr_assert(doc);
	int lines = 0, found = 0;
	for (char *l = strtok(doc, "\n"); l; l = strtok(NULL, "\n"), lines++) {
		unsigned long long a, b;
		const char *sp = strrchr(l, ' ');
		cr_assert(sp && sp > l, "%s", l);
		const char *sp2 = sp - 1;
		while (sp2 > l && *sp2 != ' ')
			sp2--;
		cr_assert_eq(sscanf(sp2, " %llu %llu", &a, &b), 2, "not 'path a b': %s", l);
		if (strstr(l, "lookup_slowly")) {
			found = 1;
			cr_expect(b > 2 * a, "lookup_slowly's own samples %llu -> %llu", a, b);
		}
	}
	cr_expect(found && lines > 2, "%d lines", lines);
	free(doc);
	free(folded);

	/* json: the function among the changed frames */
	rc = ts_loopstat(&out, 20000, "diff", "--json", rec[0], rec[1], NULL);
	cr_assert_eq(rc, 0);
	json_object *j = json_tokener_parse(out), *p, *ch;
	cr_assert(j && json_object_object_get_ex(j, "profile", &p) && json_object_object_get_ex(p, "changed", &ch),
		  "%s", out);
	found = 0;
	for (size_t i = 0; i < json_object_array_length(ch); i++)
		found |= strstr(tj_str(json_object_array_get_idx(ch, i), "path"), "lookup_slowly") != NULL;
	cr_expect(found, "no changed frame names lookup_slowly");
	json_object_put(j);
	free(out);
}
