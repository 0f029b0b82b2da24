// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The differential flame graph: one self-contained HTML file (no network:
 * the data, the style and the script are inline) drawing NEW's stacks, root
 * at the top, each frame as wide as its time per second in NEW and coloured
 * by its change against BASE: red grew, blue shrank, the stronger the larger
 * the change relative to the larger side. Hovering shows both sides' figures;
 * clicking zooms into a frame.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "diff.h"
#include "hash.h"
#include "hash_index.h"
#include "grow.h"
#include "json.h"

struct node {
	char *name;
	const struct node *parent;
	double v[2];		/* [side] total (inclusive), ns per second */
	double self[2];
	struct node **kids;
	size_t nkids, cap;
};

/* Every node found by (parent, name) in one hash: the root may have 100k
 * thread children, a scan of its children per stack would be quadratic. */
struct tree {
	struct node root;
	struct node **nodes;	/* all but the root, as made: what the index holds */
	size_t n, cap;
	struct hash_index index;
};

static uint64_t node_hash(const struct node *parent, const char *name, size_t len)
{
	return fnv1a(fnv1a(FNV1A_BASIS, &parent, sizeof(parent)), name, len);
}

static struct node *child(struct tree *t, struct node *n, const char *name, size_t len)
{
	uint64_t h = node_hash(n, name, len);
	struct hash_probe p;
	struct node *c;
	size_t e;

	for (e = hash_index_first(&t->index, h, &p); e != HASH_INDEX_NONE;
	     e = hash_index_next(&p)) {
		c = t->nodes[e];
		if (c->parent == n && !strncmp(c->name, name, len) && !c->name[len])
			return c;
	}
	if (GROW_ARRAY(n->kids, n->cap, n->nkids + 1) || GROW_ARRAY(t->nodes, t->cap, t->n + 1) ||
	    hash_index_reserve(&t->index, t->n + 1))
		return NULL;
	c = calloc(1, sizeof(*c));
	if (!c || !(c->name = strndup(name, len))) {
		free(c);
		return NULL;
	}
	c->parent = n;
	n->kids[n->nkids++] = c;
	t->nodes[t->n] = c;
	hash_index_add(&t->index, h, t->n++);	/* room reserved: cannot fail */
	return c;
}

static int add_stack(struct tree *t, const char *stack, const double v[2])
{
	struct node *root = &t->root, *n = root;
	const char *s = stack, *end;
	int side;

	for (side = 0; side < 2; side++)
		root->v[side] += v[side];
	while (*s) {
		end = strchr(s, ';');
		if (!end)
			end = s + strlen(s);
		n = child(t, n, s, end - s);
		if (!n)
			return -1;
		for (side = 0; side < 2; side++)
			n->v[side] += v[side];
		s = *end ? end + 1 : end;
	}
	for (side = 0; side < 2; side++)
		n->self[side] += v[side];
	return 0;
}

static void free_tree(struct node *n)
{
	size_t i;

	for (i = 0; i < n->nkids; i++) {
		free_tree(n->kids[i]);
		free(n->kids[i]);
	}
	free(n->kids);
	free(n->name);
}

/* A JSON string safe inside <script>: "</script>" cannot end it early. */
static int put_script_string(FILE *f, const char *s)
{
	size_t len = strlen(s) * 6 + 3;
	char *buf = malloc(len), *c;
	int err;

	if (!buf)
		return -1;
	json_escape(s, buf, len);
	for (c = buf, err = 0; *c && !err; c++)
		err = (*c == '<' ? fputs("\\u003c", f) : fputc(*c, f)) == EOF;
	free(buf);
	return err ? -1 : 0;
}

/* {"n":name,"b":base,"v":new,"sb":self base,"sv":self new,"c":[...]} in ms per s;
 * frames NEW never ran are left out: this is NEW's flame graph. */
static int put_node(FILE *f, const struct node *n)
{
	size_t i;
	int first = 1;

	if (fputs("{\"n\":", f) < 0 || put_script_string(f, n->name ? n->name : "all") ||
	    fprintf(f, ",\"b\":%.4f,\"v\":%.4f,\"sb\":%.4f,\"sv\":%.4f,\"c\":[", n->v[0] / 1e6,
		    n->v[1] / 1e6, n->self[0] / 1e6, n->self[1] / 1e6) < 0)
		return -1;
	for (i = 0; i < n->nkids; i++) {
		if (n->kids[i]->v[1] <= 0)
			continue;
		if ((!first && fputc(',', f) == EOF) || put_node(f, n->kids[i]))
			return -1;
		first = 0;
	}
	return fputs("]}", f) < 0 ? -1 : 0;
}

static const char page_head[] =
"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
"<title>ebpfprof diff</title>\n<style>\n"
"body{font:13px sans-serif;margin:12px;color:#222}\n"
"h1{font-size:16px;margin:0 0 4px}\n"
"#summary{font-weight:bold;margin:6px 0}\n"
".legend span{display:inline-block;padding:1px 6px;margin-right:4px;border:1px solid #999}\n"
"#graph{position:relative;width:100%;margin-top:8px}\n"
".f{position:absolute;height:17px;overflow:hidden;white-space:nowrap;font:11px monospace;"
"line-height:17px;padding-left:2px;box-sizing:border-box;border-right:1px solid #fff;"
"border-bottom:1px solid #fff;cursor:pointer}\n"
"#tip{position:fixed;display:none;background:#ffe;border:1px solid #888;padding:4px 6px;"
"font:12px monospace;pointer-events:none;white-space:pre;z-index:9}\n"
"table{border-collapse:collapse;margin-top:6px}td{padding:1px 8px;font:12px monospace}\n"
"</style></head><body>\n<h1>ebpfprof diff: NEW's flame graph coloured by the change against BASE</h1>\n";

static const char page_script[] =
"<script>\n"
"'use strict';\n"
"const data = JSON.parse(document.getElementById('data').textContent);\n"
"const graph = document.getElementById('graph'), tip = document.getElementById('tip');\n"
"function fmt(v) { return v.toFixed(1) + ' ms/s'; }\n"
"function change(b, v) { return b > 0 ? ((v - b) / b * 100).toFixed(0) + '%' : 'new'; }\n"
"function colour(b, v) {\n"
"  const m = Math.max(b, v), r = m > 0 ? (v - b) / m : 0, k = Math.min(1, Math.abs(r));\n"
"  const light = Math.round(235 - 150 * k);\n"
"  if (Math.abs(r) < 0.02) return 'rgb(225,225,225)';\n"
"  return r > 0 ? `rgb(255,${light},${light})` : `rgb(${light},${light},255)`;\n"
"}\n"
"function draw(root) {\n"
"  graph.textContent = '';\n"
"  let depthMax = 0;\n"
"  const total = root.v || 1;\n"
"  (function walk(n, x, depth) {\n"
"    const w = n.v / total;\n"
"    if (w < 0.001) return;\n"
"    depthMax = Math.max(depthMax, depth);\n"
"    const d = document.createElement('div');\n"
"    d.className = 'f';\n"
"    d.style.left = (100 * x) + '%'; d.style.width = (100 * w) + '%';\n"
"    d.style.top = (18 * depth) + 'px';\n"
"    d.style.background = colour(n.b, n.v);\n"
"    d.textContent = n.n;\n"
"    d.onmousemove = e => {\n"
"      tip.style.display = 'block';\n"
"      tip.style.left = Math.min(e.clientX + 12, innerWidth - 360) + 'px';\n"
"      tip.style.top = (e.clientY + 14) + 'px';\n"
"      tip.textContent = `${n.n}\\ntotal: ${fmt(n.b)} -> ${fmt(n.v)} (${change(n.b, n.v)})\\n` +\n"
"        `self:  ${fmt(n.sb)} -> ${fmt(n.sv)} (${change(n.sb, n.sv)})\\n` +\n"
"        `${(100 * n.v / data.v).toFixed(1)}% of NEW`;\n"
"    };\n"
"    d.onmouseout = () => { tip.style.display = 'none'; };\n"
"    d.onclick = () => draw(n === root ? data : n);\n"
"    graph.appendChild(d);\n"
"    let cx = x;\n"
"    for (const c of n.c) { walk(c, cx, depth + 1); cx += c.v / total; }\n"
"  })(root, 0, 0);\n"
"  graph.style.height = (18 * (depthMax + 1)) + 'px';\n"
"  document.body.dataset.frames = graph.childElementCount;\n"
"}\n"
"draw(data);\n"
"</script>\n</body></html>\n";

static void put_escaped_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '<')
			fputs("&lt;", f);
		else if (*s == '>')
			fputs("&gt;", f);
		else if (*s == '&')
			fputs("&amp;", f);
		else
			fputc(*s, f);
	}
}

/* The functions whose self time changed most, as a table above the graph. */
static void put_top_functions(FILE *f, const struct diff *d)
{
	const struct diff_line **v;
	size_t n = diff_sorted(d, LINE_SELF, 0, &v), i;
	char rel[32];

	fputs("<table><tr><td><b>self time, ms/s</b></td><td>base</td><td>new</td><td>change</td>"
	      "<td>verdict</td></tr>\n", f);
	for (i = 0; i < n && i < 10; i++) {
		diff_fmt_rel(rel, sizeof(rel), v[i]);
		fputs("<tr><td>", f);
		put_escaped_text(f, v[i]->function);
		fprintf(f, "</td><td>%.1f</td><td>%.1f</td><td>%s</td><td>%s</td></tr>\n",
			1e3 * v[i]->rate[0], 1e3 * v[i]->rate[1], rel, verdict_name(v[i]->verdict));
	}
	fputs("</table>\n", f);
	free(v);
}

int diff_write_flame_html(FILE *f, const struct diff *d)
{
	struct tree tree = { 0 };
	struct folded fo;
	char summary[1024];
	size_t i;
	int err = 0;

	if (diff_fold(d, &fo))
		return -1;
	for (i = 0; !err && i < fo.n; i++) {
		double v[2] = { fo.ns[0][i], fo.ns[1][i] };

		err = add_stack(&tree, fo.stacks[i], v);
	}
	folded_free(&fo);
	diff_summary(d, summary, sizeof(summary));
	if (!err) {
		fputs(page_head, f);
		fputs("<div id=\"summary\">", f);
		put_escaped_text(f, summary);
		fputs("</div>\n<div class=\"legend\"><span style=\"background:rgb(255,85,85)\">grew</span>"
		      "<span style=\"background:rgb(85,85,255)\">shrank</span>"
		      "<span style=\"background:rgb(225,225,225)\">unchanged</span> width: time per "
		      "second in NEW; hover for both sides, click to zoom</div>\n", f);
		put_top_functions(f, d);
		fputs("<div id=\"graph\"></div><div id=\"tip\"></div>\n"
		      "<script type=\"application/json\" id=\"data\">", f);
		err = put_node(f, &tree.root);
		fputs("</script>\n", f);
		fputs(page_script, f);
	}
	free_tree(&tree.root);
	free(tree.nodes);
	hash_index_free(&tree.index);
	return err || ferror(f) ? -1 : 0;
}
