/* The roofline chart as a standalone SVG: log-log axes of operational intensity (FLOP/byte)
 * against FLOP/s, the ceilings of the precisions in use with their ridge points, the same roofs
 * derated by PPP (where predicted layers sit), one dot per layer with area proportional to its
 * share of the predicted step time, and the whole network as one point. It computes nothing
 * fm_predict did not; layers without FLOPs or without bytes have no place on a log axis and
 * are counted in the footnote instead. */
#include "../core/internal.h"
#include "../analysis/analysis.h"

#include <math.h>
#include <string.h>

void fm_svg_opts_init(struct fm_svg_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->width = 1000;
    o->height = 680;
    o->bound = FM_BOUND_ROOFLINE;
}

/* Colors per op class (color-blind-safe Okabe-Ito palette plus greys). */
static const char *const class_color[] = {
    [FM_CLASS_CONV] = "#0072B2",      [FM_CLASS_MATMUL] = "#D55E00",
    [FM_CLASS_NORM] = "#009E73",      [FM_CLASS_ACTIVATION] = "#E69F00",
    [FM_CLASS_POOL] = "#CC79A7",      [FM_CLASS_ELEMENTWISE] = "#56B4E9",
    [FM_CLASS_REDUCTION] = "#F0E442", [FM_CLASS_DATA_MOVEMENT] = "#999999",
    [FM_CLASS_EMBEDDING] = "#882255", [FM_CLASS_ATTENTION] = "#AA4499",
    [FM_CLASS_LOSS] = "#444444",      [FM_CLASS_OTHER] = "#BBBBBB",
};
_Static_assert(sizeof(class_color) / sizeof(class_color[0]) == FM_CLASS_COUNT,
               "class_color must cover enum fm_class");

struct frame {
    double x0, x1, y0, y1;      /* plot area in pixels */
    double lx0, lx1, ly0, ly1;  /* log10 of the data range */
};

static double px(const struct frame *f, double oi)
{
    return f->x0 + (log10(oi) - f->lx0) / (f->lx1 - f->lx0) * (f->x1 - f->x0);
}

static double py(const struct frame *f, double flops)
{
    return f->y1 - (log10(flops) - f->ly0) / (f->ly1 - f->ly0) * (f->y1 - f->y0);
}

static void xml_text(FILE *out, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        default: fputc(*s, out);
        }
    }
}

/* 1, 10, 100, 1 K ... for ticks: the value of a decade with an SI suffix. */
static void decade_label(int e, char *buf, size_t size)
{
    static const char *const suffix[] = {"", " K", " M", " G", " T", " P", " E"};
    if (e < 0) {
        snprintf(buf, size, "%g", pow(10.0, e));
        return;
    }
    int k = e / 3;
    if (k > 6)
        k = 6;
    snprintf(buf, size, "%g%s", pow(10.0, e - 3 * k), suffix[k]);
}

static void si3(double v, char *buf, size_t size)
{
    char tmp[FM_FORMAT_SIZE];
    snprintf(buf, size, "%s", fm_format_si(v, tmp));
}

struct roof {
    enum fm_precision prec;
    bool tensor;
    double peak;
};

/* Labels keep a white outline so that lines crossing them stay readable. */
static const char halo[] = "stroke=\"white\" stroke-width=\"3\" paint-order=\"stroke\"";

static double layer_time(const struct fm_phase_time *t, enum fm_bound b)
{
    return b == FM_BOUND_PALEO ? t->t_paleo : t->t_roofline;
}

enum fm_status fm_svg_roofline(FILE *out, const struct fm_graph *g,
                               const struct fm_counts *counts, const struct fm_prediction *p,
                               const struct fm_svg_opts *opts)
{
    (void)counts;
    struct fm_svg_opts o;
    if (opts)
        o = *opts;
    else
        fm_svg_opts_init(&o);
    if (o.width <= 0)
        o.width = 1000;
    if (o.height <= 0)
        o.height = 680;
    const struct fm_device *dev = p->opts.device;
    double bw = dev->mem_bw;
    double ppp_c = p->opts.ppp_compute, ppp_m = p->opts.ppp_memory;
    double step = layer_time(&p->step, o.bound);

    /* the roofs in use, and the data range */
    struct roof roofs[16];
    size_t nroofs = 0;
    double oi_min = INFINITY, oi_max = 0, y_min = INFINITY, y_max = 0;
    size_t skipped = 0, plotted = 0;
    for (size_t id = 0; id < p->n_nodes; id++) {
        double fl = 0, by = 0, t = 0;
        for (int ph = 0; ph < FM_PHASE_COUNT; ph++) {
            const struct fm_phase_time *x = &p->nodes[id][ph];
            fl += x->flops;
            by += x->bytes;
            t += layer_time(x, o.bound);
            if (x->flops <= 0)
                continue;
            size_t k = 0;
            while (k < nroofs && !(roofs[k].prec == x->precision && roofs[k].tensor == x->tensor))
                k++;
            if (k == nroofs && nroofs < 16)
                roofs[nroofs++] = (struct roof){x->precision, x->tensor, x->peak};
        }
        if (fl <= 0 && by <= 0)
            continue;
        if (fl <= 0 || by <= 0 || t <= 0) {
            skipped++;
            continue;
        }
        plotted++;
        double oi = fl / by, perf = fl / t;
        oi_min = fmin(oi_min, oi);
        oi_max = fmax(oi_max, oi);
        y_min = fmin(y_min, perf);
    }
    const struct fm_measured *ms = o.measured;
    bool measured_range = false;
    for (size_t i = 0; ms && i < ms->n; i++) {
        const struct fm_measured_point *x = &ms->points[i];
        oi_min = fmin(oi_min, x->flops / x->bytes);
        oi_max = fmax(oi_max, x->flops / x->bytes);
        y_min = fmin(y_min, x->flops / x->time_s);
        y_max = fmax(y_max, x->flops / x->time_s);
        measured_range = true;
    }
    double peak_max = 0, peak_min = INFINITY;
    for (size_t k = 0; k < nroofs; k++) {
        peak_max = fmax(peak_max, roofs[k].peak);
        peak_min = fmin(peak_min, roofs[k].peak);
    }
    if (!nroofs || !(bw > 0))
        return fm_error(fm_graph_ctx(g), FM_ERR_INVALID, "nothing to chart: no FLOPs or no bandwidth");
    if (!plotted && !measured_range) {
        oi_min = 1;
        oi_max = 10;
        y_min = peak_min * ppp_c;
    }
    /* x: from a decade below the smallest layer OI (or the lowest ridge / 10) to a decade above
     * the largest OI or the highest ridge; y: from the slowest dot to above the highest roof */
    double ridge_max = peak_max / bw, ridge_min = peak_min / bw;
    double lx0 = floor(log10(fmin(oi_min, ridge_min / 10)));
    double lx1 = ceil(log10(fmax(oi_max, ridge_max) * 3));
    y_max = fmax(y_max * 1.5, peak_max * 2.5);
    y_min = fmin(y_min, pow(10.0, lx0) * bw * ppp_m);
    double ly0 = floor(log10(y_min)), ly1 = ceil(log10(y_max));
    if (lx1 - lx0 < 2)
        lx1 = lx0 + 2;
    if (ly1 - ly0 < 2)
        ly0 = ly1 - 2;

    double W = o.width, H = o.height;
    struct frame f = {90, W - 230, 78, H - 80, lx0, lx1, ly0, ly1};
    fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    fprintf(out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%g\" height=\"%g\" viewBox=\"0 0 "
            "%g %g\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"12\">\n",
            W, H, W, H);
    fprintf(out, "<rect x=\"0\" y=\"0\" width=\"%g\" height=\"%g\" fill=\"white\"/>\n", W, H);

    /* title */
    fprintf(out, "<text x=\"%g\" y=\"26\" font-size=\"17\" font-weight=\"bold\">", f.x0);
    if (o.title) {
        xml_text(out, o.title);
    } else {
        xml_text(out, fm_graph_name(g));
        fputs(" on ", out);
        xml_text(out, dev->name);
        fprintf(out, " — %s, precision %s",
                p->mode == FM_MODE_TRAIN ? "training step" : "inference",
                p->opts.torch_default ? "torch-default" : fm_precision_name(p->opts.precision));
    }
    fputs("</text>\n", out);
    fprintf(out,
            "<text x=\"%g\" y=\"44\" font-size=\"12\" fill=\"#444\">solid: datasheet roofs "
            "(dense peaks); dashed: the same at PPP compute %.2f, memory %.2f, where the "
            "predicted layers sit</text>\n",
            f.x0, ppp_c, ppp_m);
    fprintf(out,
            "<text x=\"%g\" y=\"60\" font-size=\"12\" fill=\"#444\">dots: layers, all phases "
            "together; y = FLOPs / predicted time (%s bound); area = share of the predicted "
            "step</text>\n",
            f.x0, fm_bound_name(o.bound));

    /* grid and ticks */
    fprintf(out, "<g stroke=\"#e4e4e4\" stroke-width=\"1\">\n");
    for (int e = (int)lx0; e <= (int)lx1; e++)
        fprintf(out, "<line x1=\"%.1f\" y1=\"%g\" x2=\"%.1f\" y2=\"%g\"/>\n", px(&f, pow(10, e)),
                f.y0, px(&f, pow(10, e)), f.y1);
    for (int e = (int)ly0; e <= (int)ly1; e++)
        fprintf(out, "<line x1=\"%g\" y1=\"%.1f\" x2=\"%g\" y2=\"%.1f\"/>\n", f.x0,
                py(&f, pow(10, e)), f.x1, py(&f, pow(10, e)));
    fprintf(out, "</g>\n");
    fprintf(out, "<rect x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\" fill=\"none\" "
                 "stroke=\"#333\"/>\n",
            f.x0, f.y0, f.x1 - f.x0, f.y1 - f.y0);
    fprintf(out, "<g font-size=\"12\" fill=\"#222\">\n");
    for (int e = (int)lx0; e <= (int)lx1; e++) {
        char lab[32];
        decade_label(e, lab, sizeof(lab));
        fprintf(out, "<text x=\"%.1f\" y=\"%g\" text-anchor=\"middle\">%s</text>\n",
                px(&f, pow(10, e)), f.y1 + 18, lab);
    }
    for (int e = (int)ly0; e <= (int)ly1; e++) {
        char lab[32];
        decade_label(e, lab, sizeof(lab));
        fprintf(out, "<text x=\"%g\" y=\"%.1f\" text-anchor=\"end\" dominant-baseline=\"middle\">"
                     "%s</text>\n",
                f.x0 - 8, py(&f, pow(10, e)), lab);
    }
    fprintf(out, "</g>\n");
    fprintf(out, "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\" font-size=\"14\">operational "
                 "intensity (FLOP/byte of DRAM traffic)</text>\n",
            (f.x0 + f.x1) / 2, f.y1 + 44);
    fprintf(out, "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\" font-size=\"14\" "
                 "transform=\"rotate(-90 %g %g)\">performance (FLOP/s)</text>\n",
            24.0, (f.y0 + f.y1) / 2, 24.0, (f.y0 + f.y1) / 2);

    /* roofs: the memory slope y = OI x bw up to each ridge, then flat at the peak */
    fprintf(out, "<defs><clipPath id=\"plot\"><rect x=\"%g\" y=\"%g\" width=\"%g\" "
                 "height=\"%g\"/></clipPath></defs>\n",
            f.x0, f.y0, f.x1 - f.x0, f.y1 - f.y0);
    fprintf(out, "<g clip-path=\"url(#plot)\" fill=\"none\">\n");
    double xl = pow(10, lx0), xr = pow(10, lx1);
    for (int derated = 0; derated < 2; derated++) {
        double cb = derated ? ppp_c : 1.0, mb = derated ? ppp_m : 1.0;
        for (size_t k = 0; k < nroofs; k++) {
            double peak = roofs[k].peak * cb, ridge = peak / (bw * mb);
            fprintf(out,
                    "<polyline points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\" stroke=\"%s\" "
                    "stroke-width=\"%s\"%s/>\n",
                    px(&f, xl), py(&f, xl * bw * mb), px(&f, ridge), py(&f, peak), px(&f, xr),
                    py(&f, peak), roofs[k].tensor ? "#7a1f1f" : "#1f3f7a",
                    derated ? "1.2" : "2.2", derated ? " stroke-dasharray=\"6 4\" opacity=\"0.7\"" : "");
        }
    }
    fprintf(out, "</g>\n");
    /* roof labels and ridge points */
    for (size_t k = 0; k < nroofs; k++) {
        double peak = roofs[k].peak, ridge = peak / bw;
        char ps[32];
        si3(peak, ps, sizeof(ps));
        const char *color = roofs[k].tensor ? "#7a1f1f" : "#1f3f7a";
        fprintf(out, "<text x=\"%g\" y=\"%.1f\" text-anchor=\"end\" fill=\"%s\" "
                     "font-weight=\"bold\" %s>%s %s: %sFLOP/s</text>\n",
                f.x1 - 6, py(&f, peak) - 7, color, halo, fm_precision_name(roofs[k].prec),
                roofs[k].tensor ? "tensor cores" : "vector units", ps);
        fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4.5\" fill=\"white\" stroke=\"%s\" "
                     "stroke-width=\"2\"/>\n",
                px(&f, ridge), py(&f, peak), color);
        fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%g\" stroke=\"%s\" "
                     "stroke-width=\"1\" stroke-dasharray=\"2 3\"/>\n",
                px(&f, ridge), py(&f, peak) + 5, px(&f, ridge), f.y1, color);
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" fill=\"%s\" font-size=\"11\" "
                     "transform=\"rotate(-90 %.1f %.1f)\">ridge %.1f FLOP/B</text>\n",
                px(&f, ridge) - 4, f.y1 - 6, color, px(&f, ridge) - 4, f.y1 - 6, ridge);
    }
    {
        char bws[32];
        si3(bw, bws, sizeof(bws));
        double xa = pow(10, lx0 + 0.35 * (lx1 - lx0));
        double ang = atan2(py(&f, xa * 10 * bw) - py(&f, xa * bw), px(&f, xa * 10) - px(&f, xa));
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#333\" transform=\"rotate(%.1f %.1f "
                     "%.1f)\">memory %sB/s</text>\n",
                px(&f, xa), py(&f, xa * bw) - 8, ang * 180 / M_PI, px(&f, xa), py(&f, xa * bw) - 8,
                bws);
    }

    /* layer dots, largest first so that small ones stay visible on top */
    bool class_seen[FM_CLASS_COUNT] = {false};
    /* area proportional to the share of the step, the largest layer 20 px in radius */
    double max_share = 0;
    for (size_t id = 0; id < p->n_nodes; id++) {
        double t = 0;
        for (int ph = 0; ph < FM_PHASE_COUNT; ph++)
            t += layer_time(&p->nodes[id][ph], o.bound);
        if (step > 0)
            max_share = fmax(max_share, t / step);
    }
    const double rmax = max_share > 0 ? 20.0 / sqrt(max_share) : 20.0;
    fprintf(out, "<g stroke=\"white\" stroke-width=\"0.6\" fill-opacity=\"0.75\">\n");
    for (int pass = 0; pass < 4; pass++) {
        /* four passes by share: > 8%, 2-8%, 0.5-2%, the rest */
        static const double lo[] = {0.08, 0.02, 0.005, -1.0}, hi[] = {2.0, 0.08, 0.02, 0.005};
        for (size_t id = 0; id < p->n_nodes; id++) {
            double fl = 0, by = 0, t = 0;
            for (int ph = 0; ph < FM_PHASE_COUNT; ph++) {
                fl += p->nodes[id][ph].flops;
                by += p->nodes[id][ph].bytes;
                t += layer_time(&p->nodes[id][ph], o.bound);
            }
            if (fl <= 0 || by <= 0 || t <= 0)
                continue;
            double share = step > 0 ? t / step : 0;
            if (!(share > lo[pass] && share <= hi[pass]))
                continue;
            const struct fm_node *n = fm_graph_node(g, (fm_nid)id);
            enum fm_class cls = fm_op_class(n->op);
            class_seen[cls] = true;
            double r = fmax(2.0, rmax * sqrt(share));
            fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" fill=\"%s\"><title>", px(&f, fl / by),
                    py(&f, fl / t), r, class_color[cls]);
            xml_text(out, n->name);
            fprintf(out, " (%s): %.1f FLOP/B, %.3g FLOP/s, %.1f%% of the step</title></circle>\n",
                    fm_class_name(cls), fl / by, fl / t, 100 * share);
        }
    }
    fprintf(out, "</g>\n");
    /* the network */
    if (p->step.flops > 0 && p->step.bytes > 0 && step > 0) {
        double cx = px(&f, p->step.intensity), cy = py(&f, p->step.flops / step);
        fprintf(out, "<path d=\"M %.1f %.1f l 9 9 l -9 9 l -9 -9 z\" fill=\"black\" "
                     "stroke=\"white\" stroke-width=\"1.5\"/>\n",
                cx, cy - 9);
        char ps[32];
        si3(p->step.flops / step, ps, sizeof(ps));
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" font-weight=\"bold\" "
                     "%s>network: %.1f FLOP/B, %sFLOP/s</text>\n",
                cx - 12, cy - 10, halo, p->step.intensity, ps);
    }

    /* measured points: hollow, so the counted dots under them stay visible */
    const char *mcolor = "#e6550d";
    for (size_t i = 0; ms && i < ms->n; i++) {
        const struct fm_measured_point *x = &ms->points[i];
        double cx = px(&f, x->flops / x->bytes), cy = py(&f, x->flops / x->time_s);
        if (x->whole)
            fprintf(out, "<path d=\"M %.1f %.1f l 10 10 l -10 10 l -10 -10 z\" fill=\"none\" "
                         "stroke=\"%s\" stroke-width=\"2.5\"><title>",
                    cx, cy - 10, mcolor);
        else
            fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"9\" height=\"9\" fill=\"none\" "
                         "stroke=\"%s\" stroke-width=\"1.5\"><title>",
                    cx - 4.5, cy - 4.5, mcolor);
        xml_text(out, x->label);
        fprintf(out, " (measured, %s): %.1f FLOP/B, %.3g FLOP/s, %.3g s</title>%s\n",
                ms->source, x->flops / x->bytes, x->flops / x->time_s, x->time_s,
                x->whole ? "</path>" : "</rect>");
        if (x->whole) {
            char ps[32];
            si3(x->flops / x->time_s, ps, sizeof(ps));
            fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" fill=\"%s\" font-weight=\"bold\" %s>"
                         "measured: %.1f FLOP/B, %sFLOP/s</text>\n",
                    cx + 14, cy + 16, mcolor, halo, x->flops / x->bytes, ps);
        }
    }

    /* legend */
    double lx = f.x1 + 18, ly = f.y0 + 8;
    fprintf(out, "<text x=\"%g\" y=\"%g\" font-weight=\"bold\">layers by op class</text>\n", lx, ly);
    ly += 20;
    for (int k = 0; k < FM_CLASS_COUNT; k++) {
        if (!class_seen[k])
            continue;
        fprintf(out, "<circle cx=\"%g\" cy=\"%g\" r=\"6\" fill=\"%s\" fill-opacity=\"0.8\"/>"
                     "<text x=\"%g\" y=\"%g\" dominant-baseline=\"middle\">%s</text>\n",
                lx + 6, ly, class_color[k], lx + 18, ly, fm_class_name((enum fm_class)k));
        ly += 20;
    }
    ly += 6;
    fprintf(out, "<path d=\"M %g %g l 7 7 l -7 7 l -7 -7 z\" fill=\"black\"/>"
                 "<text x=\"%g\" y=\"%g\" dominant-baseline=\"middle\">whole network</text>\n",
            lx + 6, ly - 7, lx + 18, ly);
    if (ms && ms->n) {
        ly += 22;
        fprintf(out, "<g><title>");
        xml_text(out, ms->how);
        fprintf(out, "</title><rect x=\"%g\" y=\"%g\" width=\"9\" height=\"9\" fill=\"none\" "
                     "stroke=\"%s\" stroke-width=\"1.5\"/><text x=\"%g\" y=\"%g\" "
                     "dominant-baseline=\"middle\">measured (",
                lx + 1.5, ly - 4.5, mcolor, lx + 18, ly);
        xml_text(out, ms->source);
        fprintf(out, ")</text></g>\n");
    }
    ly += 28;
    fprintf(out, "<text x=\"%g\" y=\"%g\" font-weight=\"bold\">dot area</text>\n", lx, ly);
    ly += 10;
    /* three reference sizes: a round share near the largest layer's, a quarter and a 16th */
    double top = max_share > 0 ? pow(10, floor(log10(max_share))) : 0.01;
    while (top * 2 <= max_share)
        top *= 2;
    double shares[3] = {top, top / 4, top / 16};
    for (size_t i = 0; i < 3; i++) {
        double r = rmax * sqrt(shares[i]);
        ly += r + 4;
        fprintf(out, "<circle cx=\"%g\" cy=\"%g\" r=\"%.1f\" fill=\"#999\" fill-opacity=\"0.6\"/>"
                     "<text x=\"%g\" y=\"%g\" dominant-baseline=\"middle\">%.2g%% of step</text>\n",
                lx + 20, ly, r, lx + 46, ly, shares[i] * 100);
        ly += r + 4;
    }
    ly += 16;
    char bws[32], st[32];
    si3(bw, bws, sizeof(bws));
    fprintf(out, "<text x=\"%g\" y=\"%g\" font-size=\"11\" fill=\"#444\">bandwidth %sB/s</text>\n",
            lx, ly, bws);
    ly += 16;
    snprintf(st, sizeof(st), "%.3g ms", step * 1e3);
    fprintf(out, "<text x=\"%g\" y=\"%g\" font-size=\"11\" fill=\"#444\">predicted step %s"
                 "</text>\n",
            lx, ly, st);
    fprintf(out, "<text x=\"%g\" y=\"%g\" font-size=\"11\" fill=\"#555\">%zu layers plotted "
                 "(FLOPs and bytes of all phases)%s",
            f.x0, H - 14, plotted, skipped ? "; " : "");
    if (skipped)
        fprintf(out, "%zu without FLOPs or bytes have no place on log axes", skipped);
    fprintf(out, ". FLOP = 2 x MAC + other ops; bytes: each input read once, each output written "
                 "once.</text>\n");
    fprintf(out, "</svg>\n");
    return ferror(out) ? FM_ERR_IO : FM_OK;
}
