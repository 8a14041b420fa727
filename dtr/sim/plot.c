/* dtr/sim/plot.c — the sweep as a self-contained SVG (readable in any
 * browser, no tool needed): a panel per model, slowdown against budget
 * ratio, a line per heuristic through the runs that completed; runs that
 * failed are marked along the top edge (x: out of memory, triangle: remat
 * limit exceeded). The layout of the DTR paper's Figure 2. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "dtr/sim/sim.h"

static const char *const colors[DTR_HEURISTIC_COUNT] = {
    "#1a9641", "#4169e1", "#663399", "#ff8c00", "#d7191c", "#008b8b", "#800000",
};

#define PANEL_W 380
#define PANEL_H 290
#define MARGIN_L 58
#define MARGIN_R 16
#define MARGIN_T 34
#define MARGIN_B 46

void bench_xml_text(FILE *f, const char *s)
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

double bench_nice_step(double range)
{
    double raw = range / 5, mag = pow(10, floor(log10(raw))), r = raw / mag;
    return (r < 1.5 ? 1 : r < 3.5 ? 2 : r < 7.5 ? 5 : 10) * mag;
}

void bench_csv_field(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}


int sweep_write_svg(const char *path, const struct sweep_row *rows, size_t n, char *err, size_t err_size)
{
    /* models in first-appearance order */
    const char *models[64];
    int n_models = 0, used[DTR_HEURISTIC_COUNT] = { 0 };
    for (size_t i = 0; i < n; i++) {
        int k = 0;
        while (k < n_models && strcmp(models[k], rows[i].model))
            k++;
        if (k == n_models && n_models < 64)
            models[n_models++] = rows[i].model;
        used[rows[i].heuristic] = 1;
    }
    int cols = n_models < 2 ? 1 : 2, grid_rows = (n_models + cols - 1) / cols;
    int legend_h = 40;
    int width = cols * PANEL_W, height = grid_rows * PANEL_H + legend_h + 30;
    FILE *f = fopen(path, "w");
    if (!f) {
        snprintf(err, err_size, "%s: %s", path, strerror(errno));
        return -1;
    }
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
               "font-family=\"sans-serif\" font-size=\"11\">\n", width, height, width, height);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    fprintf(f, "<text x=\"%d\" y=\"18\" text-anchor=\"middle\" font-size=\"14\">Simulated slowdown against memory budget "
               "(DTR, eager eviction)</text>\n", width / 2);
    for (int m = 0; m < n_models; m++) {
        int ox = (m % cols) * PANEL_W, oy = 26 + (m / cols) * PANEL_H;
        int pw = PANEL_W - MARGIN_L - MARGIN_R, ph = PANEL_H - MARGIN_T - MARGIN_B;
        double xmin = 1e300, xmax = -1e300, ymax = 1.0;
        for (size_t i = 0; i < n; i++) {
            if (strcmp(rows[i].model, models[m]))
                continue;
            xmin = fmin(xmin, rows[i].ratio);
            xmax = fmax(xmax, rows[i].ratio);
            if (rows[i].result.outcome == SIM_PASS)
                ymax = fmax(ymax, rows[i].result.overhead);
        }
        xmin = fmin(xmin, 0.0);
        xmax = fmax(xmax, 1.0);
        double ystep = bench_nice_step(fmax(ymax - 1.0, 0.05) * 1.1);
        double ytop = 1.0 + ceil((ymax - 1.0) * 1.1 / ystep + 1e-9) * ystep;
        if (ytop <= 1.0)
            ytop = 1.0 + ystep;
#define PX(x) (ox + MARGIN_L + ((x) - xmin) / (xmax - xmin) * pw)
#define PY(y) (oy + MARGIN_T + ph - ((y) - 1.0) / (ytop - 1.0) * ph)
        fprintf(f, "<g>\n<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" font-size=\"13\">", ox + MARGIN_L + pw / 2.0,
                oy + MARGIN_T - 14);
        bench_xml_text(f, models[m]);
        fprintf(f, "</text>\n");
        fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#444\"/>\n",
                ox + MARGIN_L, oy + MARGIN_T, pw, ph);
        for (double y = 1.0; y <= ytop + 1e-9; y += ystep) {
            fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>", ox + MARGIN_L,
                    ox + MARGIN_L + pw, PY(y), PY(y));
            fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.2f</text>\n", ox + MARGIN_L - 4, PY(y) + 4, y);
        }
        for (int t = 0; t <= 10; t += 2) {
            double x = xmin + (xmax - xmin) * t / 10.0;
            fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#ddd\"/>", PX(x), PX(x),
                    oy + MARGIN_T, oy + MARGIN_T + ph);
            fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%.1f</text>\n", PX(x),
                    oy + MARGIN_T + ph + 14, x);
        }
        fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">budget / unbudgeted peak</text>\n",
                ox + MARGIN_L + pw / 2.0, oy + MARGIN_T + ph + 32);
        fprintf(f, "<text transform=\"translate(%d,%.1f) rotate(-90)\" text-anchor=\"middle\">slowdown (x)</text>\n",
                ox + 14, oy + MARGIN_T + ph / 2.0);
        for (int h = 0; h < DTR_HEURISTIC_COUNT; h++) {
            if (!used[h])
                continue;
            /* rows come in ratio order per heuristic; a line through passes */
            fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.6\" points=\"", colors[h]);
            for (size_t i = 0; i < n; i++)
                if (!strcmp(rows[i].model, models[m]) && (int)rows[i].heuristic == h &&
                    rows[i].result.outcome == SIM_PASS)
                    fprintf(f, "%.1f,%.1f ", PX(rows[i].ratio), PY(rows[i].result.overhead));
            fprintf(f, "\"><title>%s</title></polyline>\n", dtr_heuristic_name((enum dtr_heuristic)h));
            for (size_t i = 0; i < n; i++) {
                const struct sweep_row *r = &rows[i];
                if (strcmp(r->model, models[m]) || (int)r->heuristic != h)
                    continue;
                double x = PX(r->ratio);
                if (r->result.outcome == SIM_PASS) {
                    fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.6\" fill=\"%s\"><title>%s %.2f: %.4f</title></circle>\n",
                            x, PY(r->result.overhead), colors[h], dtr_heuristic_name(r->heuristic), r->ratio,
                            r->result.overhead);
                } else {
                    double y = oy + MARGIN_T + 5 + 4 * h;
                    if (r->result.outcome == SIM_REMAT_EXCEEDED)
                        fprintf(f, "<path d=\"M%.1f %.1f l3 5 l-6 0 z\" fill=\"%s\">", x, y - 3, colors[h]);
                    else
                        fprintf(f, "<path d=\"M%.1f %.1f l6 6 m0 -6 l-6 6\" stroke=\"%s\" stroke-width=\"1.4\">", x - 3,
                                y - 3, colors[h]);
                    fprintf(f, "<title>%s %.2f: %s</title></path>\n", dtr_heuristic_name(r->heuristic), r->ratio,
                            sim_outcome_name(r->result.outcome));
                }
            }
        }
        fprintf(f, "</g>\n");
#undef PX
#undef PY
    }
    /* legend */
    int lx = 20, ly = height - legend_h + 6;
    for (int h = 0; h < DTR_HEURISTIC_COUNT; h++) {
        if (!used[h])
            continue;
        fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2\"/>", lx, lx + 22, ly,
                ly, colors[h]);
        fprintf(f, "<text x=\"%d\" y=\"%d\">%s</text>\n", lx + 26, ly + 4, dtr_heuristic_name((enum dtr_heuristic)h));
        lx += 100;
    }
    fprintf(f, "<text x=\"20\" y=\"%d\" fill=\"#444\">Lines join completed runs; along the top edge, x: out of memory, "
               "triangle: recomputation limit exceeded.</text>\n", ly + 24);
    fprintf(f, "</svg>\n");
    if (fclose(f)) {
        snprintf(err, err_size, "%s: write error", path);
        return -1;
    }
    return 0;
}
