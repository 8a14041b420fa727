/* dtr/sim/planners_compare.c — DTR heuristics against static planners per
 * budget (dtrexec bench --solvers): the rows as CSV, and an SVG in the
 * layout of dtr/sim/plot.c (a panel per model, overhead against budget ratio,
 * a line per method through the budgets it met; failures marked along the
 * top) — the DTR paper's Figure 3. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "dtr/sim/sim.h"

int compare_write_csv(const char *path, const struct compare_row *rows, size_t n, char *err, size_t err_size)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        snprintf(err, err_size, "%s: %s", path, strerror(errno));
        return -1;
    }
    fprintf(f, "model,method,kind,ratio,budget_bytes,outcome,overhead,peak_bytes,solve_s,gap\n");
    for (size_t i = 0; i < n; i++) {
        const struct compare_row *r = &rows[i];
        bench_csv_field(f, r->model);
        fputc(',', f);
        bench_csv_field(f, r->method);
        fprintf(f, ",%s,%.6g,%llu,%s,", r->is_solver ? "solver" : "dtr", r->ratio, (unsigned long long)r->budget_bytes,
                r->outcome);
        if (r->ok)
            fprintf(f, "%.6f,%llu", r->overhead, (unsigned long long)r->peak_bytes);
        else
            fprintf(f, ",");
        fprintf(f, ",%.6f,", r->solve_s);
        if (!isnan(r->gap))
            fprintf(f, "%.6g", r->gap);
        fputc('\n', f);
    }
    if (fclose(f)) {
        snprintf(err, err_size, "%s: write error", path);
        return -1;
    }
    return 0;
}

static const char *const colors[] = {
    "#1a9641", "#4169e1", "#663399", "#ff8c00", "#d7191c", "#008b8b", "#800000",
    "#000000", "#b8860b", "#ff1493", "#2f4f4f", "#8b4513", "#00ced1",
};
#define N_COLORS (sizeof colors / sizeof colors[0])
#define PANEL_W 400
#define PANEL_H 300
#define MARGIN_L 58
#define MARGIN_R 16
#define MARGIN_T 34
#define MARGIN_B 46

int compare_write_svg(const char *path, const struct compare_row *rows, size_t n, char *err, size_t err_size)
{
    const char *models[64], *methods[N_COLORS];
    int n_models = 0, n_methods = 0;
    for (size_t i = 0; i < n; i++) {
        int k = 0;
        while (k < n_models && strcmp(models[k], rows[i].model))
            k++;
        if (k == n_models && n_models < 64)
            models[n_models++] = rows[i].model;
        k = 0;
        while (k < n_methods && strcmp(methods[k], rows[i].method))
            k++;
        if (k == n_methods && n_methods < (int)N_COLORS)
            methods[n_methods++] = rows[i].method;
    }
    int cols = n_models < 2 ? 1 : 2, grid_rows = (n_models + cols - 1) / cols, legend_h = 58;
    int width = cols * PANEL_W, height = grid_rows * PANEL_H + legend_h + 30;
    FILE *f = fopen(path, "w");
    if (!f) {
        snprintf(err, err_size, "%s: %s", path, strerror(errno));
        return -1;
    }
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
               "font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            width, height, width, height);
    fprintf(f, "<text x=\"%d\" y=\"18\" text-anchor=\"middle\" font-size=\"14\">Compute overhead against memory budget: "
               "DTR (simulated) and static planners</text>\n", width / 2);
    for (int m = 0; m < n_models; m++) {
        int ox = (m % cols) * PANEL_W, oy = 26 + (m / cols) * PANEL_H;
        int pw = PANEL_W - MARGIN_L - MARGIN_R, ph = PANEL_H - MARGIN_T - MARGIN_B;
        double xmin = 1e300, xmax = -1e300, ymax = 1.0;
        for (size_t i = 0; i < n; i++) {
            if (strcmp(rows[i].model, models[m]))
                continue;
            xmin = fmin(xmin, rows[i].ratio);
            xmax = fmax(xmax, rows[i].ratio);
            if (rows[i].ok)
                ymax = fmax(ymax, rows[i].overhead);
        }
        xmax = fmax(xmax, 1.0);
        if (!(xmax > xmin))
            xmin = xmax - 1;
        double ystep = bench_nice_step(fmax(ymax - 1.0, 0.05) * 1.1);
        double ytop = 1.0 + ceil((ymax - 1.0) * 1.1 / ystep + 1e-9) * ystep;
        if (ytop <= 1.0)
            ytop = 1.0 + ystep;
#define PX(x) (ox + MARGIN_L + ((x) - xmin) / (xmax - xmin) * pw)
#define PY(y) (oy + MARGIN_T + ph - ((y) - 1.0) / (ytop - 1.0) * ph)
        fprintf(f, "<g>\n<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" font-size=\"13\">", ox + MARGIN_L + pw / 2.0,
                oy + MARGIN_T - 14);
        bench_xml_text(f, models[m]);
        fprintf(f, "</text>\n<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#444\"/>\n",
                ox + MARGIN_L, oy + MARGIN_T, pw, ph);
        for (double y = 1.0; y <= ytop + 1e-9; y += ystep)
            fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/><text x=\"%d\" y=\"%.1f\" "
                       "text-anchor=\"end\">%.2f</text>\n", ox + MARGIN_L, ox + MARGIN_L + pw, PY(y), PY(y),
                    ox + MARGIN_L - 4, PY(y) + 4, y);
        for (int t = 0; t <= 5; t++) {
            double x = xmin + (xmax - xmin) * t / 5.0;
            fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#ddd\"/><text x=\"%.1f\" y=\"%d\" "
                       "text-anchor=\"middle\">%.2f</text>\n", PX(x), PX(x), oy + MARGIN_T, oy + MARGIN_T + ph, PX(x),
                    oy + MARGIN_T + ph + 14, x);
        }
        fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">budget / checkpoint-all peak</text>\n",
                ox + MARGIN_L + pw / 2.0, oy + MARGIN_T + ph + 32);
        fprintf(f, "<text transform=\"translate(%d,%.1f) rotate(-90)\" text-anchor=\"middle\">overhead (x)</text>\n",
                ox + 14, oy + MARGIN_T + ph / 2.0);
        for (int h = 0; h < n_methods; h++) {
            /* rows of a method come in budget order */
            const char *dash = 0;
            for (size_t i = 0; i < n; i++)
                if (!strcmp(rows[i].method, methods[h]))
                    dash = rows[i].is_solver ? "" : " stroke-dasharray=\"5,3\"";
            fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.6\"%s points=\"", colors[h],
                    dash ? dash : "");
            for (size_t i = 0; i < n; i++)
                if (!strcmp(rows[i].model, models[m]) && !strcmp(rows[i].method, methods[h]) && rows[i].ok)
                    fprintf(f, "%.1f,%.1f ", PX(rows[i].ratio), PY(rows[i].overhead));
            fprintf(f, "\"><title>");
            bench_xml_text(f, methods[h]);
            fprintf(f, "</title></polyline>\n");
            for (size_t i = 0; i < n; i++) {
                const struct compare_row *r = &rows[i];
                if (strcmp(r->model, models[m]) || strcmp(r->method, methods[h]))
                    continue;
                double x = PX(r->ratio);
                if (r->ok) {
                    fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.6\" fill=\"%s\"><title>", x, PY(r->overhead),
                            colors[h]);
                    bench_xml_text(f, r->method);
                    fprintf(f, " %.3f: %.4f</title></circle>\n", r->ratio, r->overhead);
                } else {
                    double y = oy + MARGIN_T + 5 + 4 * h;
                    fprintf(f, "<path d=\"M%.1f %.1f l6 6 m0 -6 l-6 6\" stroke=\"%s\" stroke-width=\"1.4\"><title>",
                            x - 3, y - 3, colors[h]);
                    bench_xml_text(f, r->method);
                    fprintf(f, " %.3f: ", r->ratio);
                    bench_xml_text(f, r->outcome);
                    fprintf(f, "</title></path>\n");
                }
            }
        }
        fprintf(f, "</g>\n");
#undef PX
#undef PY
    }
    int lx = 20, ly = height - legend_h + 6;
    for (int h = 0; h < n_methods; h++) {
        if (lx > width - 110) {
            lx = 20;
            ly += 16;
        }
        fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2\"/><text x=\"%d\" "
                   "y=\"%d\">", lx, lx + 22, ly, ly, colors[h], lx + 26, ly + 4);
        bench_xml_text(f, methods[h]);
        fprintf(f, "</text>\n");
        lx += 120;
    }
    fprintf(f, "<text x=\"20\" y=\"%d\" fill=\"#444\">Solid: static planners; dashed: DTR heuristics. Along the top "
               "edge, x: no schedule / out of memory at that budget.</text>\n", height - 8);
    fprintf(f, "</svg>\n");
    if (fclose(f)) {
        snprintf(err, err_size, "%s: write error", path);
        return -1;
    }
    return 0;
}
