#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "formats/flamegraph.h"
#include "formats/util.h"

/* The page around the data. Names reach the page only as JSON strings
 * (flamegraph_json_str) read with JSON.parse, and the DOM only through
 * textContent and title: never as markup. */
static const char page_head[] =
    "<!DOCTYPE html>\n"
    "<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
    "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
    "style-src 'unsafe-inline'; script-src 'unsafe-inline'\">\n"
    "<title>Flame graph</title>\n"
    "<style>\n"
    "body{margin:0;font:13px sans-serif;color:#222;background:#fff}\n"
    "#bar{display:flex;gap:8px;align-items:center;padding:6px 8px;border-bottom:1px solid "
    "#ddd;background:#f6f6f6}\n"
    "#title{font-weight:bold;flex:1;overflow:hidden;white-space:nowrap;text-overflow:ellipsis}\n"
    "#search{width:16em}\n"
    "#matched{min-width:12em;color:#808}\n"
    "#chart{position:relative;margin:8px}\n"
    ".f{position:absolute;height:17px;box-sizing:border-box;border-right:1px solid #fff;"
    "border-bottom:1px solid #fff;overflow:hidden;white-space:nowrap;text-overflow:clip;"
    "padding:0 2px;font:11px/16px monospace;cursor:pointer}\n"
    ".f:hover{outline:1px solid #000;z-index:1}\n"
    ".f.up{opacity:.55}\n"
    ".f.hit{background:#e600e6 !important;color:#fff}\n"
    "#status{margin:0 8px;font:12px monospace;min-height:1.4em;white-space:pre}\n"
    "#note{margin:4px 8px;color:#777;font-size:11px}\n"
    "</style>\n</head>\n<body>\n"
    "<div id=\"bar\"><span id=\"title\"></span><button id=\"reset\" disabled>Reset "
    "zoom</button><input id=\"search\" type=\"search\" placeholder=\"Search (regular "
    "expression)\"><span id=\"matched\"></span></div>\n"
    "<div id=\"chart\"></div>\n<div id=\"status\"></div>\n<div id=\"note\"></div>\n"
    "<script type=\"application/json\" id=\"data\">";

static const char page_tail[] =
    "</script>\n"
    "<script>\n"
    "\"use strict\";\n"
    "(function () {\n"
    "var D = JSON.parse(document.getElementById(\"data\").textContent);\n"
    "var ROW = 17, at = 0;\n"
    "/* nodes: preorder [name, total, children kept], as written */\n"
    "function build(parent, depth) {\n"
    "  var n = {name: D.names[D.nodes[at]], v: D.nodes[at + 1], parent: parent, depth: depth,\n"
    "           kids: [], hit: false};\n"
    "  var k = D.nodes[at + 2], i;\n"
    "  at += 3;\n"
    "  for (i = 0; i < k; i++) n.kids.push(build(n, depth + 1));\n"
    "  return n;\n"
    "}\n"
    "var root = build(null, 0), view = root, re = null;\n"
    "var chart = document.getElementById(\"chart\");\n"
    "var status = document.getElementById(\"status\");\n"
    "var resetb = document.getElementById(\"reset\");\n"
    "var search = document.getElementById(\"search\");\n"
    "var matched = document.getElementById(\"matched\");\n"
    "document.getElementById(\"title\").textContent = D.title;\n"
    "document.getElementById(\"note\").textContent = root.v + \" \" + D.unit + \". Frames under \" "
    "+\n"
    "  D.kept * 100 + \"% of the total are left out of this file (\" + D.omitted +\n"
    "  \" of them; they count in their callers), and boxes narrower than \" +\n"
    "  D.drawn * 100 + \"% of the frame zoomed into are not drawn. Click a frame to zoom, \" +\n"
    "  \"Reset zoom or Escape to zoom out; Ctrl-F searches (#s=REGEX in the address too).\";\n"
    "function pct(a, b) { return (b ? 100 * a / b : 0).toFixed(2) + \"%\"; }\n"
    "function hash(s) {\n"
    "  var h = 2166136261, i;\n"
    "  for (i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619) >>> 0;\n"
    "  return h;\n"
    "}\n"
    "/* flamegraph.pl's colours: warm for code, orange for the kernel, grey for the\n"
    "   processes and the root */\n"
    "function color(n) {\n"
    "  var h = hash(n.name);\n"
    "  if (n.depth < 2) return \"rgb(\" + (190 + h % 40) + \",\" + (190 + h % 40) + \",\" +\n"
    "    (200 + h % 40) + \")\";\n"
    "  if (/_\\[k\\]$/.test(n.name)) return \"rgb(\" + (220 + h % 35) + \",\" +\n"
    "    (120 + (h >>> 8) % 60) + \",\" + ((h >>> 16) % 40) + \")\";\n"
    "  return \"rgb(\" + (205 + h % 50) + \",\" + ((h >>> 8) % 230) + \",\" +\n"
    "    ((h >>> 16) % 55) + \")\";\n"
    "}\n"
    "function tip(n) {\n"
    "  var s = n.name + \"\\n\" + n.v + \" \" + D.unit + \", \" + pct(n.v, root.v) + \" of all\";\n"
    "  if (view !== root) s += \", \" + pct(n.v, view.v) + \" of \" + view.name;\n"
    "  return s;\n"
    "}\n"
    "/* boxes: [node, left, width, up] of the view. The root at the top (as pprof\n"
    "   draws it), so that deep stacks never push it out of sight. */\n"
    "function box(frag, b) {\n"
    "  var n = b[0], e = document.createElement(\"div\");\n"
    "  e.className = \"f\" + (b[3] ? \" up\" : \"\") + (n.hit ? \" hit\" : \"\");\n"
    "  e.style.left = b[1] * 100 + \"%\";\n"
    "  e.style.width = b[2] * 100 + \"%\";\n"
    "  e.style.top = n.depth * ROW + \"px\";\n"
    "  e.style.background = color(n);\n"
    "  e.textContent = n.name;\n"
    "  e.title = tip(n);\n"
    "  e.node = n;\n"
    "  frag.appendChild(e);\n"
    "}\n"
    "function draw(n, left, boxes) {\n"
    "  var x = left, i, k, w;\n"
    "  boxes.push([n, left, n.v / view.v, false]);\n"
    "  for (i = 0; i < n.kids.length; i++) {\n"
    "    k = n.kids[i];\n"
    "    w = k.v / view.v;\n"
    "    if (w >= D.drawn) draw(k, x, boxes);\n"
    "    x += w;\n"
    "  }\n"
    "}\n"
    "function render() {\n"
    "  var frag = document.createDocumentFragment(), boxes = [], top = 0, a, i;\n"
    "  for (a = view.parent; a; a = a.parent) boxes.push([a, 0, 1, true]);\n"
    "  draw(view, 0, boxes);\n"
    "  for (i = 0; i < boxes.length; i++) top = Math.max(top, boxes[i][0].depth);\n"
    "  for (i = 0; i < boxes.length; i++) box(frag, boxes[i]);\n"
    "  chart.textContent = \"\";\n"
    "  chart.style.height = (top + 1) * ROW + \"px\";\n"
    "  chart.appendChild(frag);\n"
    "  resetb.disabled = view === root;\n"
    "}\n"
    "function zoom(n) { view = n; render(); }\n"
    "/* The matches' share: a match under another match is counted once. */\n"
    "function mark(n, under) {\n"
    "  var m = re !== null && re.test(n.name), s = 0, i;\n"
    "  n.hit = m;\n"
    "  if (m && !under) s = n.v;\n"
    "  for (i = 0; i < n.kids.length; i++) s += mark(n.kids[i], under || m);\n"
    "  return s;\n"
    "}\n"
    "function find() {\n"
    "  var q = search.value, s;\n"
    "  re = null;\n"
    "  if (q) {\n"
    "    try { re = new RegExp(q); }\n"
    "    catch (e) { re = new RegExp(q.replace(/[.*+?^${}()|[\\]\\\\]/g, \"\\\\$&\")); }\n"
    "  }\n"
    "  s = mark(root, false);\n"
    "  matched.textContent = re ? \"Matched: \" + pct(s, root.v) + \" (\" + s + \" \" + D.unit + "
    "\")\" : "
    "\"\";\n"
    "  render();\n"
    "}\n"
    "chart.addEventListener(\"click\", function (ev) {\n"
    "  var n = ev.target.node;\n"
    "  if (n) zoom(n);\n"
    "});\n"
    "chart.addEventListener(\"mouseover\", function (ev) {\n"
    "  var n = ev.target.node;\n"
    "  if (n) status.textContent = tip(n).replace(\"\\n\", \"  \");\n"
    "});\n"
    "resetb.addEventListener(\"click\", function () { zoom(root); });\n"
    "search.addEventListener(\"input\", find);\n"
    "document.addEventListener(\"keydown\", function (ev) {\n"
    "  if (ev.key === \"Escape\") zoom(root);\n"
    "  else if (ev.key === \"f\" && (ev.ctrlKey || ev.metaKey)) {\n"
    "    ev.preventDefault();\n"
    "    search.focus();\n"
    "  }\n"
    "});\n"
    "/* #s=REGEX in the address: that search at load (links, tests) */\n"
    "if (location.hash.indexOf(\"#s=\") === 0) {\n"
    "  try { search.value = decodeURIComponent(location.hash.slice(3)); }\n"
    "  catch (e) { search.value = location.hash.slice(3); }\n"
    "  find();\n"
    "} else render();\n"
    "})();\n"
    "</script>\n</body>\n</html>\n";

void flamegraph_json_str(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	fputc('"', f);
	for (; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20 || *p == 0x7f || *p == '<' || *p == '>' || *p == '&')
			fprintf(f, "\\u%04x", *p);
		else if (p[0] == 0xe2 && p[1] == 0x80 && (p[2] == 0xa8 || p[2] == 0xa9)) {
			/* U+2028, U+2029: line ends to older JavaScript */
			fprintf(f, "\\u%04x", p[2] == 0xa8 ? 0x2028 : 0x2029);
			p += 2;
		} else
			fputc(*p, f);
	}
	fputc('"', f);
}

struct kept {
	const struct flame *fl;
	uint32_t *ids;	 /* the nodes kept, in preorder */
	uint32_t *name;	 /* ids[i]'s index in the names written */
	uint32_t *nkept; /* ids[i]'s children kept */
	size_t n, cap;
	uint64_t min; /* the smallest total kept */
};

static bool keep(const struct kept *k, uint32_t id)
{
	uint64_t v = flame_node(k->fl, id)->total;

	return v && v >= k->min;
}

/* The kept nodes of id's subtree, in preorder. */
static int collect(struct kept *k, uint32_t id)
{
	const struct flame_node *nd = flame_node(k->fl, id);
	uint32_t i;
	int err = 0;

	if (fmt_grow((void **)&k->ids, &k->cap, k->n + 1, sizeof(*k->ids)))
		return -ENOMEM;
	k->ids[k->n++] = id;
	for (i = 0; i < nd->nkids && !err; i++)
		if (keep(k, nd->kids[i]))
			err = collect(k, nd->kids[i]);
	return err;
}

static int by_name(const void *a, const void *b, void *ctx)
{
	const struct kept *k = ctx;
	const struct flame_node *x = flame_node(k->fl, k->ids[*(const uint32_t *)a]);
	const struct flame_node *y = flame_node(k->fl, k->ids[*(const uint32_t *)b]);

	return strcmp(x->name, y->name);
}

int flamegraph_write_html(const struct flame *fl, const char *title, const char *unit, FILE *f)
{
	struct kept k = {.fl = fl};
	uint32_t *order = NULL, i, names = 0, omitted = 0;
	char *clean = fmt_sanitize_dup(title ? title : "", title ? strlen(title) : 0);
	int err = -ENOMEM;

	k.min = (uint64_t)(flame_node(fl, 0)->total * FLAMEGRAPH_MIN_KEPT);
	if (!clean || collect(&k, 0))
		goto out;
	order = malloc(k.n * sizeof(*order));
	k.name = malloc(k.n * sizeof(*k.name));
	k.nkept = calloc(k.n, sizeof(*k.nkept));
	if (!order || !k.name || !k.nkept)
		goto out;
	for (i = 0; i < k.n; i++) {
		const struct flame_node *nd = flame_node(fl, k.ids[i]);
		uint32_t j;

		order[i] = i;
		for (j = 0; j < nd->nkids; j++)
			k.nkept[i] += keep(&k, nd->kids[j]);
	}
	for (i = 1; i < flame_nodes(fl); i++)
		omitted += flame_node(fl, i)->total && !keep(&k, i);
	/* Each distinct name once: nodes sorted by name share an index. */
	qsort_r(order, k.n, sizeof(*order), by_name, &k);
	fputs(page_head, f);
	fputs("{\"title\": ", f);
	flamegraph_json_str(f, clean);
	fputs(", \"unit\": ", f);
	flamegraph_json_str(f, unit ? unit : "samples");
	fprintf(f, ",\n\"kept\": %g, \"drawn\": %g, \"omitted\": %" PRIu32 ",\n\"names\": [",
		FLAMEGRAPH_MIN_KEPT, FLAMEGRAPH_MIN_DRAWN, omitted);
	for (i = 0; i < k.n; i++) {
		const char *nm = flame_node(fl, k.ids[order[i]])->name;

		if (i && !strcmp(nm, flame_node(fl, k.ids[order[i - 1]])->name)) {
			k.name[order[i]] = names - 1;
			continue;
		}
		fputs(names ? ",\n" : "", f);
		flamegraph_json_str(f, nm);
		k.name[order[i]] = names++;
	}
	fputs("],\n\"nodes\": [", f);
	for (i = 0; i < k.n; i++)
		fprintf(f, "%s%" PRIu32 ",%" PRIu64 ",%" PRIu32, i ? (i % 8 ? "," : ",\n") : "",
			k.name[i], flame_node(fl, k.ids[i])->total, k.nkept[i]);
	fputs("]}", f);
	fputs(page_tail, f);
	err = ferror(f) ? -EIO : 0;
out:
	free(clean);
	free(order);
	free(k.ids);
	free(k.name);
	free(k.nkept);
	return err;
}
