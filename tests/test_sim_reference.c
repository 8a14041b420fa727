/* tests/test_sim_reference.c — the simulator against the DTR authors' own
 * (simrd): their four op logs x ratios 0.1..1.0 x every heuristic both
 * have (dtr, dtr-eq, dtr-local, lru, size, msps), with their published
 * results in ../shared/data/dtr-logs/simrd-reference.json. Required: the
 * same baseline, the same budgets, overhead within 2% wherever both
 * complete, and a lowest completing ratio the same or lower.
 *
 * Exceptions: none are needed. We replay simrd's order of events (see
 * dtr/dtr.c), and every run agrees in outcome and in overhead to the
 * reference's five digits; the test also reports how many runs made exactly
 * as many heuristic evaluations as simrd (all of them, when written), a
 * sign that the same storages were evicted in the same order. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtr/sim/sim.h"
#include "dtr/format/json.h"
#include "testutil.h"

START_TEST(test_against_simrd)
{
    char path[1024], err[512];
    snprintf(path, sizeof path, "%s/dtr-logs/simrd-reference.json", testutil_data_dir());
    struct json_value ref;
    ck_assert_msg(json_parse_file(path, &ref, err, sizeof err) == 0, "%s", err);
    const struct json_value *models = json_get(&ref, "models");
    ck_assert_ptr_nonnull(models);
    ck_assert_uint_eq(models->u.array.n, 4);
    int runs = 0, compared = 0, same_outcome = 0, same_evals = 0;
    double worst_all = 0, simrd_wall = 0, our_wall = 0;
    printf("%-20s %-10s %9s %14s %14s\n", "log", "heuristic", "max diff", "lowest ours", "lowest simrd");
    for (size_t m = 0; m < models->u.array.n; m++) {
        const struct json_value *mod = &models->u.array.items[m];
        const char *log = json_string(json_get(mod, "log"));
        snprintf(path, sizeof path, "%s/dtr-logs/%s", testutil_data_dir(), log);
        struct sim_program p;
        ck_assert_msg(sim_program_load(path, &p, err, sizeof err) == 0, "%s", err);
        struct sim_baseline b;
        ck_assert_msg(sim_baseline_run(&p, &b, err, sizeof err) == 0, "%s", err);
        double rc, rp, rk;
        ck_assert_int_eq(json_as_double(json_get(mod, "baseline_compute"), &rc), 0);
        ck_assert_int_eq(json_as_double(json_get(mod, "baseline_peak_bytes"), &rp), 0);
        ck_assert_int_eq(json_as_double(json_get(mod, "constant_bytes"), &rk), 0);
        ck_assert_msg(b.compute == rc && (double)b.peak_bytes == rp && (double)b.constant_bytes == rk,
                      "%s: baseline %.17g / %llu / %llu, simrd %.17g / %.17g / %.17g", log, b.compute,
                      (unsigned long long)b.peak_bytes, (unsigned long long)b.constant_bytes, rc, rp, rk);
        const struct json_value *rs = json_get(mod, "runs");
        for (int h = 0; h < DTR_HEURISTIC_COUNT; h++) {
            double worst = 0, low_ours = INFINITY, low_theirs = INFINITY;
            int seen = 0;
            for (size_t k = 0; k < rs->u.array.n; k++) {
                const struct json_value *run = &rs->u.array.items[k];
                if (strcmp(json_string(json_get(run, "heuristic")), dtr_heuristic_name((enum dtr_heuristic)h)))
                    continue;
                seen++;
                runs++;
                double ratio, budget, overhead, evals, wall;
                ck_assert_int_eq(json_as_double(json_get(run, "ratio"), &ratio), 0);
                ck_assert_int_eq(json_as_double(json_get(run, "budget_bytes"), &budget), 0);
                ck_assert_int_eq(json_as_double(json_get(run, "overhead"), &overhead), 0);
                ck_assert_int_eq(json_as_double(json_get(run, "heuristic_eval_count"), &evals), 0);
                ck_assert_int_eq(json_as_double(json_get(run, "wall_s"), &wall), 0);
                const char *result = json_string(json_get(run, "result"));
                struct sim_options o;
                sim_options_default(&o);
                o.heuristic = (enum dtr_heuristic)h;
                o.budget_ratio = ratio;
                struct sim_result r;
                ck_assert_int_eq(sim_run(&p, &b, &o, &r), 0);
                ck_assert_msg((double)r.budget_bytes == budget, "%s %s %.1f: budget %llu, simrd %.0f", log,
                              dtr_heuristic_name(o.heuristic), ratio, (unsigned long long)r.budget_bytes, budget);
                simrd_wall += wall;
                our_wall += r.wall_s;
                int ours_pass = r.outcome == SIM_PASS, theirs_pass = !strcmp(result, "pass");
                same_outcome += !strcmp(sim_outcome_name(r.outcome), result);
                same_evals += (double)r.heuristic_evaluations == evals;
                if (ours_pass)
                    low_ours = fmin(low_ours, ratio);
                if (theirs_pass)
                    low_theirs = fmin(low_theirs, ratio);
                if (ours_pass && theirs_pass) {
                    double diff = fabs(r.overhead - overhead) / overhead;
                    compared++;
                    worst = fmax(worst, diff);
                    ck_assert_msg(diff <= 0.02, "%s %s %.1f: overhead %.6f, simrd %.6f", log,
                                  dtr_heuristic_name(o.heuristic), ratio, r.overhead, overhead);
                }
            }
            if (!seen)
                continue;
            ck_assert_int_eq(seen, 10);
            worst_all = fmax(worst_all, worst);
            printf("%-20s %-10s %8.4f%% %14.1f %14.1f\n", log, dtr_heuristic_name((enum dtr_heuristic)h),
                   100 * worst, low_ours, low_theirs);
            ck_assert_msg(low_ours <= low_theirs, "%s %s: lowest completing ratio %.1f, simrd %.1f", log,
                          dtr_heuristic_name((enum dtr_heuristic)h), low_ours, low_theirs);
        }
        sim_program_free(&p);
    }
    printf("%d runs, %d compared (both complete), worst overhead difference %.4f%%; same outcome %d/%d, "
           "same heuristic evaluation count %d/%d; wall: ours %.2f s, simrd %.1f s\n",
           runs, compared, 100 * worst_all, same_outcome, runs, same_evals, runs, our_wall, simrd_wall);
    ck_assert_int_eq(runs, 240);
    json_free(&ref);
}
END_TEST

int main(void)
{
    TCase *tc;
    Suite *s = testutil_suite("sim_reference", "simrd", 1800, &tc);
    tcase_add_test(tc, test_against_simrd);
    return testutil_run(s);
}
