"""The task balance per worker over time, as a self-contained SVG (no
script, no font, nothing fetched): one band per worker on the cluster's
clock, each task prefix's threads at work stacked, its on-CPU part solid and
its waiting part (GIL, GC, I/O, sleep, locks) pale, against the worker's
threads. What a table of totals cannot show: when each worker was busy or
idle, with what, and whether its tasks ran or waited. Also the HTML page that
holds it with the report's table."""
import html
import math

WIDTH = 980
LEFT, RIGHT = 170, 24
BAND, GAP, TOP = 120, 26, 64
# colour-blind-safe (Okabe-Ito), then greys for the rest
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
OTHER_COLOUR = "#999999"


def _esc(text):
    return html.escape(str(text), quote=True)


def _nice_step(span, ticks=8):
    """A round tick step showing about `ticks` ticks over span."""
    raw = span / ticks if span > 0 else 1
    for step in (0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600):
        if step >= raw:
            return step
    return 3600 * round(raw / 3600 + 1)


def colours(prefixes):
    return {p: PALETTE[i] if i < len(PALETTE) else OTHER_COLOUR for i, p in enumerate(prefixes)}


def _area(points_top, points_bottom):
    pts = points_top + points_bottom[::-1]
    return " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)


def _band(w, order, colour, x_of, y_of, y0):
    """The stacked areas of one worker: per prefix its running then its
    waiting threads, each bin a step."""
    bin_s = w["bin_s"] or 1.0
    n = max((len(s[k]) for s in w["series"].values() for k in ("running", "waiting")), default=0)
    base = [0.0] * n
    parts = []
    for prefix in order:
        s = w["series"].get(prefix)
        if not s:
            continue
        for kind in ("running", "waiting"):
            vals = s[kind] + [0.0] * (n - len(s[kind]))
            top = [base[i] + vals[i] / bin_s for i in range(n)]
            if not any(vals):
                continue
            up, down = [], []
            for i in range(n):
                xa, xb = x_of(w["offset_s"] + i * bin_s), x_of(w["offset_s"] + (i + 1) * bin_s)
                up += [(xa, y_of(top[i], y0)), (xb, y_of(top[i], y0))]
                down += [(xa, y_of(base[i], y0)), (xb, y_of(base[i], y0))]
            opacity = "1" if kind == "running" else "0.35"
            parts.append(f'<polygon points="{_area(up, down)}" fill="{colour[prefix]}" '
                         f'fill-opacity="{opacity}" stroke="none"><title>{_esc(prefix)} {kind}</title></polygon>')
            base = top
    return parts


def _mean_busy(w):
    """The worker's mean threads at work in tasks over its recording."""
    if not w["duration_s"]:
        return None
    total = sum(sum(s[k]) for s in w["series"].values() for k in ("running", "waiting"))
    return total / w["duration_s"]


def balance_svg(report):
    """The picture, as SVG text."""
    workers = [w for w in report["workers"] if w["series"]]
    order = [r["prefix"] for r in report["prefixes"]]
    colour = colours(order)
    end = max((w["offset_s"] + (w["duration_s"] or 0) for w in workers), default=1.0) or 1.0
    peak = 1.0
    for w in workers:
        bin_s = w["bin_s"] or 1.0
        n = max((len(s[k]) for s in w["series"].values() for k in ("running", "waiting")), default=0)
        for i in range(n):
            total = sum(s[k][i] for s in w["series"].values() for k in ("running", "waiting")
                        if i < len(s[k]))
            peak = max(peak, total / bin_s)
        peak = max(peak, w["nthreads"] or 0)
    height = TOP + len(workers) * (BAND + GAP) + 40
    plot_w = WIDTH - LEFT - RIGHT

    def x_of(t):
        return LEFT + plot_w * min(max(t, 0.0), end) / end

    def y_of(v, y0):
        return y0 + BAND - BAND * min(v, peak * 1.05) / (peak * 1.05)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
           f'viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12">',
           f'<rect width="{WIDTH}" height="{height}" fill="white"/>',
           '<text x="12" y="20" font-size="15" font-weight="bold">Task balance per worker over time'
           '</text>',
           '<text x="12" y="38" fill="#444">threads at work in each task prefix: solid = on CPU '
           '(GC included), pale = waiting (GIL, GC, I/O, sleep, locks); dashed = the worker\'s threads'
           '</text>']
    x = LEFT
    for prefix in order[:len(PALETTE)]:
        out.append(f'<rect x="{x}" y="46" width="12" height="12" fill="{colour[prefix]}"/>')
        out.append(f'<text x="{x + 16}" y="56">{_esc(prefix[:24])}</text>')
        x += 30 + 7 * len(prefix[:24])
    if len(order) > len(PALETTE):
        out.append(f'<rect x="{x}" y="46" width="12" height="12" fill="{OTHER_COLOUR}"/>')
        out.append(f'<text x="{x + 16}" y="56">{len(order) - len(PALETTE)} more</text>')
    step = _nice_step(end)
    for i, w in enumerate(workers):
        y0 = TOP + i * (BAND + GAP)
        out.append(f'<rect x="{LEFT}" y="{y0}" width="{plot_w}" height="{BAND}" fill="#f6f6f6"/>')
        out += _band(w, order, colour, x_of, y_of, y0)
        if w["nthreads"]:
            yc = y_of(w["nthreads"], y0)
            out.append(f'<line x1="{LEFT}" x2="{LEFT + plot_w}" y1="{yc:.1f}" y2="{yc:.1f}" '
                       'stroke="#333" stroke-dasharray="5,4"/>')
        label = w["worker"][:24]
        out.append(f'<text x="{LEFT - 8}" y="{y0 + BAND / 2}" text-anchor="end">{_esc(label)}</text>')
        threads = f"{w['nthreads']} threads" if w["nthreads"] else ""
        busy = _mean_busy(w)
        if busy is not None:
            threads += f", {busy:.1f} busy" if threads else f"{busy:.1f} threads busy"
        out.append(f'<text x="{LEFT - 8}" y="{y0 + BAND / 2 + 15}" text-anchor="end" fill="#555">'
                   f'{threads}</text>')
        for v in range(0, int(peak * 1.05) + 1, max(1, math.ceil(peak / 5))):
            out.append(f'<text x="{LEFT - 4}" y="{y_of(v, y0) + 4:.1f}" text-anchor="end" '
                       f'font-size="9" fill="#777">{v}</text>')
    y_axis = TOP + len(workers) * (BAND + GAP) - GAP + 4
    t = 0.0
    while t <= end + 1e-9:
        xt = x_of(t)
        out.append(f'<line x1="{xt:.1f}" x2="{xt:.1f}" y1="{TOP}" y2="{y_axis}" stroke="#ccc" '
                   'stroke-width="0.5"/>')
        out.append(f'<text x="{xt:.1f}" y="{y_axis + 14}" text-anchor="middle">{t:g}s</text>')
        t += step
    out.append("</svg>")
    return "\n".join(out) + "\n"


def report_html(report, svg):
    """A page with the picture and the report's table, nothing fetched."""
    head = "".join(f"<th>{_esc(c['title'])}</th>" for c in report["columns"])
    rows = []
    for r in report["prefixes"]:
        cells = "".join(f"<td>{r[c['key']]:.2f} s ({100 * r[c['key']] / r['time_s'] if r['time_s'] else 0:.0f}%)</td>"
                        for c in report["columns"])
        fns = "<br>".join(f"{fn['self_s']:.2f} s {_esc(fn['name'])}" for fn in r["top_functions"][:3])
        rows.append(f"<tr><td>{_esc(r['prefix'])}</td><td>{r['tasks']}</td><td>{r['time_s']:.2f} s</td>"
                    f"<td>{r['share']:.1f}%</td>{cells}<td class=f>{fns}</td></tr>")
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>ebpfprof_dask report</title>"
            "<style>body{font-family:sans-serif;margin:16px}table{border-collapse:collapse}"
            "td,th{border:1px solid #ccc;padding:3px 6px;text-align:right;font-size:13px}"
            "td:first-child,td.f{text-align:left}</style></head><body>\n"
            f"{svg}\n<h3>Time per task prefix across the cluster</h3>\n"
            f"<table><tr><th>prefix</th><th>tasks</th><th>time</th><th>share</th>{head}"
            f"<th>top functions (self)</th></tr>\n" + "\n".join(rows) + "\n</table></body></html>\n")
