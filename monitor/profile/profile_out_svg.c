/*
 * profile_out_svg.c — a self-contained interactive flame graph, in the
 * manner of flamegraph.pl's: one SVG file, no external resources; hover a
 * frame for its label and share, click to zoom into it, "Reset Zoom" (or
 * Escape) to go back.
 *
 * The root ("all") is the bottom bar, then threads, (fibers,) states,
 * syscalls, fd targets and the stack frames, innermost first, as in the
 * folded output. Widths are proportional to samples; frames narrower than
 * 0.1 px are left out, as flamegraph.pl does.
 */
#include "profile/profile_out.h"
#include "util/escape.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#define SVG_W      1200.0
#define SVG_XPAD   10.0
#define SVG_FH     16   /* frame height, px */
#define SVG_TOP    56   /* title and the reset/help line */
#define SVG_BOTTOM 28   /* the details line */
#define SVG_CHAR_W 7.0  /* px per character at 12px in the fonts below */
#define SVG_MINW   0.1  /* px */

/* Labels are sanitised (textsafe_label), the title is not: both as XML. */
static void xml_text(FILE *out, const char *s, size_t n)
{
	esc_fwrite(out, &esc_xml_text, s, n);
}

/* Bytes of label that fit in w px (cut at a character boundary, leaving
 * room for ".."), or 0 when not even three characters fit. */
static size_t fit_bytes(const char *label, double w, int *dots)
{
	size_t chars = w > 6 ? (size_t)((w - 6) / SVG_CHAR_W) : 0;
	size_t len = strlen(label);
	*dots = 0;
	if (chars < 3)
		return 0;
	/* count characters, not bytes */
	size_t nchar = 0, i = 0;
	for (; i < len; i++)
		if (((unsigned char)label[i] & 0xc0) != 0x80 && ++nchar > chars)
			break;
	if (i == len)
		return len;
	*dots = 1;
	/* back off two characters for the ".." */
	for (int k = 0; k < 2 && i > 0; k++) {
		do
			i--;
		while (i > 0 && ((unsigned char)label[i] & 0xc0) == 0x80);
	}
	return i;
}

static uint32_t hash_label(const char *s)
{
	uint32_t h = 2166136261u;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

static void fill_of(const struct profile_node *n, char *buf, size_t len)
{
	static const char *const state_fill[PROFILE_NSTATES] = {
		[PROFILE_IDLE] = "rgb(120,200,120)",
		[PROFILE_ON_CPU] = "rgb(240,110,80)",
		[PROFILE_CPU_WAIT] = "rgb(240,200,80)",
		[PROFILE_BLOCKED] = "rgb(110,160,230)",
	};
	uint32_t h = hash_label(n->label);
	switch (n->level) {
	case PROFILE_L_ROOT: snprintf(buf, len, "rgb(200,200,200)"); return;
	case PROFILE_L_THREAD: snprintf(buf, len, "rgb(180,180,%u)", 200 + h % 40); return;
	case PROFILE_L_FIBER: snprintf(buf, len, "rgb(%u,160,230)", 190 + h % 40); return;
	case PROFILE_L_STATE:
		for (int s = 0; s < PROFILE_NSTATES; s++)
			if (strcmp(n->label, profile_state_name(s)) == 0) {
				snprintf(buf, len, "%s", state_fill[s]);
				return;
			}
		break;
	case PROFILE_L_SYSCALL: snprintf(buf, len, "rgb(%u,%u,240)", 120 + h % 30, 170 + (h >> 8) % 30); return;
	case PROFILE_L_TARGET: snprintf(buf, len, "rgb(%u,%u,235)", 150 + h % 30, 200 + (h >> 8) % 30); return;
	default: break;
	}
	/* stack frames: flamegraph.pl's warm palette, stable per label */
	snprintf(buf, len, "rgb(%u,%u,%u)", 205 + h % 50, (h >> 8) % 230, (h >> 16) % 55);
}

struct svg_walk {
	FILE *out;
	double total;  /* root samples */
	double scale;  /* px per sample */
	double height; /* of the whole image */
	const struct profile_meta *meta;  /* borrowed, may be NULL */
};

static void svg_node(struct svg_walk *w, const struct profile_node *n, double x, int depth)
{
	double width = (double)n->count * w->scale;
	if (width < SVG_MINW)
		return;
	double y = w->height - SVG_BOTTOM - (depth + 1) * SVG_FH;
	double ci;
	double pct = profile_node_share(n, &ci);
	char fill[32], note[128] = "";
	if (!w->meta || !w->meta->svg_fill ||
	    w->meta->svg_fill(w->meta->svg_arg, n, fill, sizeof(fill), note, sizeof(note)) != 1)
		fill_of(n, fill, sizeof(fill));

	fprintf(w->out, "<g class=\"f\" data-x=\"%.2f\" data-w=\"%.2f\" data-d=\"%d\"><title>", x, width, depth);
	xml_text(w->out, n->label, SIZE_MAX);
	if (n->level == PROFILE_L_ROOT)
		fprintf(w->out, " (%llu samples, 100%%)", (unsigned long long)n->count);
	else
		fprintf(w->out, " (%llu samples, %.2f%% \xc2\xb1%.2f of the %s)", (unsigned long long)n->count,
			pct, ci, n->level == PROFILE_L_THREAD ? "profile" : "thread");
	if (note[0]) {
		fputc(' ', w->out);
		xml_text(w->out, note, SIZE_MAX);
	}
	const char *svc = n->level == PROFILE_L_THREAD ? profile_thread_service(n) : NULL;
	if (svc) {
		fputs(" service ", w->out);
		xml_text(w->out, svc, SIZE_MAX);
	}
	fprintf(w->out, "</title><rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" fill=\"%s\" rx=\"2\"/>",
		x, y, width, SVG_FH - 1, fill);
	int dots;
	size_t nb = fit_bytes(n->label, width, &dots);
	fprintf(w->out, "<text x=\"%.2f\" y=\"%.1f\">", x + 3, y + SVG_FH - 4.5);
	xml_text(w->out, n->label, nb);
	if (dots)
		fputs("..", w->out);
	fputs("</text></g>\n", w->out);

	double cx = x;
	for (const struct profile_node *c = n->child; c; c = c->next) {
		svg_node(w, c, cx, depth + 1);
		cx += (double)c->count * w->scale;
	}
}

/* Zoom: the clicked frame fills the width, its descendants scale with it,
 * its ancestors span the width, everything else is hidden. Text is refit
 * to each frame's new width. */
static const char svg_script[] =
	"<script type=\"text/ecmascript\"><![CDATA[\n"
	"var W=%.1f,XP=%.1f,CW=%.1f,details,unz,frames;\n"
	"function init(){details=document.getElementById('details').firstChild;\n"
	" unz=document.getElementById('unzoom');\n"
	" frames=document.getElementById('frames').getElementsByTagName('g');\n"
	" var fr=document.getElementById('frames');\n"
	" fr.addEventListener('click',function(e){var g=up(e.target);if(g)zoom(g);});\n"
	" fr.addEventListener('mouseover',function(e){var g=up(e.target);if(g)details.nodeValue=tip(g);});\n"
	" fr.addEventListener('mouseout',function(){details.nodeValue=' ';});\n"
	" unz.addEventListener('click',unzoom);\n"
	" document.addEventListener('keydown',function(e){if(e.key==='Escape')unzoom();});}\n"
	"function up(t){while(t&&!(t.getAttribute&&t.getAttribute('class')==='f'))t=t.parentNode;return t;}\n"
	"function tip(g){return g.getElementsByTagName('title')[0].textContent;}\n"
	"function label(g){var s=tip(g);var i=s.lastIndexOf(' (');return i<0?s:s.substring(0,i);}\n"
	"function num(g,a){return parseFloat(g.getAttribute(a));}\n"
	"function place(g,x,w){var r=g.getElementsByTagName('rect')[0],t=g.getElementsByTagName('text')[0];\n"
	" r.setAttribute('x',x.toFixed(2));r.setAttribute('width',w.toFixed(2));t.setAttribute('x',(x+3).toFixed(2));\n"
	" var l=label(g),n=Math.floor((w-6)/CW);\n"
	" t.textContent=n<3?'':(l.length<=n?l:l.substring(0,n-2)+'..');g.style.display='';}\n"
	"function zoom(z){var x0=num(z,'data-x'),w0=num(z,'data-w'),d0=num(z,'data-d'),s=(W-2*XP)/w0,e=0.0001;\n"
	" for(var i=0;i<frames.length;i++){var g=frames[i],x=num(g,'data-x'),w=num(g,'data-w'),d=num(g,'data-d');\n"
	"  if(d<d0&&x<=x0+e&&x+w>=x0+w0-e)place(g,XP,W-2*XP);\n"
	"  else if(d>=d0&&x>=x0-e&&x+w<=x0+w0+e)place(g,XP+(x-x0)*s,w*s);\n"
	"  else g.style.display='none';}\n"
	" unz.style.opacity='1';}\n"
	"function unzoom(){for(var i=0;i<frames.length;i++){var g=frames[i];place(g,num(g,'data-x'),num(g,'data-w'));}\n"
	" unz.style.opacity='0';}\n"
	"]]></script>\n";

int profile_write_svg(FILE *out, struct profile_tree *t, const struct profile_meta *meta)
{
	profile_tree_sort(t);
	const struct profile_node *root = profile_tree_root(t);
	int depth = profile_tree_depth(t) + 1; /* levels including the root */
	struct svg_walk w = {
		.out = out,
		.total = (double)root->count,
		.scale = root->count ? (SVG_W - 2 * SVG_XPAD) / (double)root->count : 0,
		.height = SVG_TOP + depth * SVG_FH + SVG_BOTTOM,
		.meta = meta,
	};
	const char *title = meta && meta->title ? meta->title : "loopstat profile";

	fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		     "<svg version=\"1.1\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
		     "xmlns=\"http://www.w3.org/2000/svg\" onload=\"init()\">\n",
		SVG_W, w.height, SVG_W, w.height);
	fputs("<style type=\"text/css\">\n"
	      "text{font-family:Verdana,'DejaVu Sans',sans-serif;font-size:12px;fill:rgb(0,0,0)}\n"
	      "#title{font-size:17px;text-anchor:middle}\n"
	      "#frames text{pointer-events:none}\n"
	      "#frames g:hover rect{stroke:rgb(0,0,0);stroke-width:0.5;cursor:pointer}\n"
	      "#unzoom{cursor:pointer;opacity:0}\n"
	      "</style>\n", out);
	fprintf(out, svg_script, SVG_W, SVG_XPAD, SVG_CHAR_W);
	fprintf(out, "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"rgb(248,248,240)\"/>\n",
		SVG_W, w.height);
	fprintf(out, "<text id=\"title\" x=\"%.1f\" y=\"24\">", SVG_W / 2);
	xml_text(out, title, SIZE_MAX);
	fputs("</text>\n", out);
	fprintf(out, "<text x=\"%.1f\" y=\"44\">%llu samples", SVG_XPAD, (unsigned long long)root->count);
	if (meta && meta->duration_s > 0)
		fprintf(out, " over %.1f s", meta->duration_s);
	if (meta && meta->rate_hz > 0)
		fprintf(out, " at %.0f Hz", meta->rate_hz);
	fputs("; click a frame to zoom</text>\n", out);
	fprintf(out, "<text id=\"unzoom\" x=\"%.1f\" y=\"44\" text-anchor=\"end\">Reset Zoom</text>\n",
		SVG_W - SVG_XPAD);
	fprintf(out, "<text id=\"details\" x=\"%.1f\" y=\"%.1f\"> </text>\n", SVG_XPAD, w.height - 10);
	fputs("<g id=\"frames\">\n", out);
	if (root->count)
		svg_node(&w, root, SVG_XPAD, 0);
	fputs("</g>\n</svg>\n", out);
	return profile_out_result(out);
}
