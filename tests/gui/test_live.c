/* Live lambda in the window: a CG run keeps its session; with "Live" on,
 * moving lambda (two values in quick succession: only the newest is solved
 * to the end) forks a live run from it (the finished run keeps its image,
 * lambda and metrics) and re-solves in the worker into the live run's image,
 * label, metrics and the viewer; the final image is a fresh lm_recon_run's
 * at that lambda (same variant, iterations) within 1e-6. On a regulariser
 * other than the session's (another lambda scale) Live starts a new run
 * instead of re-solving the session. Removing the
 * live run frees the session. A finished run refuses a live update. */
#include <math.h>
#include <string.h>

#include "gui-test.h"
#include "larmor-application.h"
#include "larmor-ortho-view.h"
#include "larmor-recon-panel.h"
#include "larmor-recon-task.h"
#include "larmor-window.h"
#include "lm_metrics.h"

static LarmorApplication *app;

static gboolean live_idle(gpointer live)
{
    return !larmor_live_is_busy(live);
}

static int updates, finals;
static void on_updated(LarmorLive *live, gboolean final, gpointer data)
{
    updates++;
    finals += final;
}

static void set_lambda(LarmorReconPanel *panel, double lambda)
{
    LarmorReconParams p;
    g_assert_true(larmor_recon_panel_get_params(panel, &p, NULL));
    p.lambda = lambda;
    larmor_recon_panel_set_params(panel, &p);
}

static void test_live(void)
{
    LarmorWindow *w = gui_test_open_window(GTK_APPLICATION(app), 1400, 900);
    LarmorReconPanel *panel = larmor_window_get_recon_panel(w);
    GtkToggleButton *toggle = larmor_recon_panel_get_live_toggle(panel);
    g_assert_true(gtk_widget_get_sensitive(GTK_WIDGET(toggle))); /* no run yet: Live would start one */

    LarmorReconParams p;
    larmor_recon_params_init(&p);
    p.method = LM_METHOD_CG;
    g_strlcpy(p.variant, "cpu-nufft", sizeof p.variant);
    p.iters = 20;
    p.lambda = 0.01;
    GError *error = NULL;
    g_assert_true(larmor_window_reconstruct(w, &p, &error));
    g_assert_no_error(error);
    g_assert_true(gui_test_wait(gui_test_idle, w, 300));
    g_assert_cmpuint(g_list_model_get_n_items(larmor_window_get_runs(w)), ==, 1);
    LarmorRun *run = g_list_model_get_item(larmor_window_get_runs(w), 0);
    GObject *live = larmor_run_get_live(run);
    g_assert_nonnull(live);
    g_object_add_weak_pointer(live, (gpointer *)&live);
    g_assert_true(gtk_widget_get_sensitive(GTK_WIDGET(toggle)));
    LarmorVolume *first = g_object_ref(larmor_run_get_image(run));
    larmor_ortho_view_show_volume(larmor_window_get_ortho_view(w), first);
    g_signal_connect(live, "updated", G_CALLBACK(on_updated), NULL);

    /* Off: moving lambda solves nothing. */
    set_lambda(panel, 0.03);
    gui_test_spin(0.1);
    g_assert_false(larmor_live_is_busy(LARMOR_LIVE(live)));
    g_assert_true(larmor_run_get_image(run) == first);

    /* Back on the session's regulariser with Live on, the panel's value is
     * solved too: let that finish (under load its 250 ms rest may pass
     * before the next values come), so the counts below are the next two's. */
    g_assert_true(gui_test_wait(live_idle, live, 120));
    updates = finals = 0;

    /* On: two values; the newest is the one that stays, in a new live run. */
    const double psnr0 = larmor_run_get_psnr(run), perr0 = larmor_run_get_percent_error(run);
    char *label0 = g_strdup(larmor_run_get_label(run));
    gtk_toggle_button_set_active(toggle, TRUE);
    set_lambda(panel, 0.05);
    set_lambda(panel, 0.2);
    g_assert_true(larmor_live_is_busy(LARMOR_LIVE(live)));
    g_assert_true(gui_test_wait(live_idle, live, 120));
    g_assert_null(larmor_live_get_error(LARMOR_LIVE(live)));
    g_assert_cmpint(finals, ==, 1);
    g_assert_cmpint(updates, >=, 2); /* a preview, then the final */
    gboolean final = FALSE;
    int iters = 0;
    g_assert_true(larmor_live_get_last(LARMOR_LIVE(live), &iters, NULL, &final));
    g_assert_true(final);
    g_assert_cmpint(iters, ==, p.iters);
    /* the finished run is as it was */
    g_assert_true(larmor_run_get_image(run) == first);
    g_assert_cmpfloat(larmor_run_get_params(run)->lambda, ==, 0.01);
    g_assert_cmpfloat(larmor_run_get_psnr(run), ==, psnr0);
    g_assert_cmpfloat(larmor_run_get_percent_error(run), ==, perr0);
    g_assert_cmpstr(larmor_run_get_label(run), ==, label0);
    g_assert_false(larmor_run_get_is_live(run));
    g_assert_null(larmor_run_get_live(run));
    g_free(label0);
    /* the live run holds the result */
    g_assert_cmpuint(g_list_model_get_n_items(larmor_window_get_runs(w)), ==, 2);
    LarmorRun *lr = g_list_model_get_item(larmor_window_get_runs(w), 1);
    g_assert_true(larmor_run_get_live(lr) == live);
    g_assert_cmpfloat(larmor_run_get_params(lr)->lambda, ==, 0.2);
    g_assert_cmpint(larmor_run_get_params(lr)->reg, ==, p.reg);
    g_assert_true(larmor_run_get_is_live(lr));
    g_assert_cmpint(larmor_run_get_live_from(lr), ==, larmor_run_get_index(run));
    g_assert_nonnull(strstr(larmor_run_get_label(lr), "live from #1"));
    LarmorVolume *img = larmor_run_get_image(lr);
    g_assert_true(img != first);
    g_assert_true(larmor_ortho_view_get_volume(larmor_window_get_ortho_view(w)) == img);
    /* a second drag goes on in the same live run */
    set_lambda(panel, 0.1);
    g_assert_true(gui_test_wait(live_idle, live, 120));
    g_assert_cmpuint(g_list_model_get_n_items(larmor_window_get_runs(w)), ==, 2);
    g_assert_cmpfloat(larmor_run_get_params(lr)->lambda, ==, 0.1);
    g_assert_true(larmor_run_get_image(run) == first);
    g_assert_true(larmor_ortho_view_get_volume(larmor_window_get_ortho_view(w)) == larmor_run_get_image(lr));
    set_lambda(panel, 0.2);
    g_assert_true(gui_test_wait(live_idle, live, 120));
    img = larmor_run_get_image(lr);

    /* The image of a fresh run at the final lambda. */
    LarmorDataset *ds = larmor_window_get_dataset(w);
    lm_recon_opts o;
    lm_recon_opts_init(&o);
    o.variant = p.variant;
    o.iters = p.iters;
    o.tol = p.tol;
    o.lambda = 0.2;
    lm_recon_result r;
    lm_error err = { 0 };
    g_assert_cmpint(lm_recon_run(larmor_dataset_get_geom(ds), larmor_dataset_get_traj(ds),
                                 larmor_dataset_get_kdata(ds), &o, &r, &err), ==, LM_OK);
    const lm_volume *v = larmor_volume_get_data(img);
    const double d = lm_rel_error_c(v->data, r.image->data, lm_volume_count(v));
    g_test_message("live vs fresh run: %.3g", d);
    g_assert_cmpfloat(d, <, 1e-6);
    /* metrics follow the new image */
    lm_metrics m;
    const lm_volume *truth = larmor_volume_get_data(larmor_dataset_get_truth(ds));
    g_assert_cmpint(lm_metrics_compute(v->data, truth->data, lm_volume_count(v), NULL, 0, &m, &err), ==, LM_OK);
    g_assert_cmpfloat(fabs(larmor_run_get_percent_error(lr) - m.percent_error), <, 1e-9);
    lm_recon_result_clear(&r);

    /* Removing the live run frees its session. */
    g_object_unref(run);
    g_object_unref(lr);
    g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.remove-run", NULL));
    g_assert_null(live);
    g_object_unref(first);
    gtk_window_destroy(GTK_WINDOW(w));
}

/* Live on another regulariser than the session's never re-solves that
 * session (its lambda scale differs): the first value starts a new run of
 * the chosen regulariser at that lambda, which then keeps the session. In
 * the hand drive Live stayed greyed after a sweep's best run, with the
 * session on an older TV run. */
static void test_live_new_run(void)
{
    LarmorWindow *w = gui_test_open_window(GTK_APPLICATION(app), 1400, 900);
    LarmorReconPanel *panel = larmor_window_get_recon_panel(w);
    GtkToggleButton *toggle = larmor_recon_panel_get_live_toggle(panel);
    LarmorReconParams p;
    larmor_recon_params_init(&p);
    p.method = LM_METHOD_CG;
    g_strlcpy(p.variant, "cpu-nufft", sizeof p.variant);
    p.iters = 10;
    p.lambda = 0.01;
    GError *error = NULL;
    g_assert_true(larmor_window_reconstruct(w, &p, &error));
    g_assert_no_error(error);
    g_assert_true(gui_test_wait(gui_test_idle, w, 300));
    LarmorRun *run = g_list_model_get_item(larmor_window_get_runs(w), 0);
    g_assert_nonnull(larmor_run_get_live(run));
    LarmorVolume *first = larmor_run_get_image(run);

    LarmorReconParams other = p;
    other.reg = p.reg == LM_REG_TV ? LM_REG_IDENTITY : LM_REG_TV;
    larmor_recon_panel_set_params(panel, &other);
    gui_test_spin(0.1);
    g_assert_true(gtk_widget_get_sensitive(GTK_WIDGET(toggle)));
    g_assert_nonnull(strstr(gtk_widget_get_tooltip_text(GTK_WIDGET(toggle)), "new run"));
    /* Live on: the panel's lambda starts a new run of the chosen regulariser. */
    gtk_toggle_button_set_active(toggle, TRUE);
    gui_test_spin(0.1);
    g_assert_true(gui_test_wait(gui_test_idle, w, 300));
    g_assert_cmpuint(g_list_model_get_n_items(larmor_window_get_runs(w)), ==, 2);
    LarmorRun *nr = g_list_model_get_item(larmor_window_get_runs(w), 1);
    g_assert_cmpint(larmor_run_get_params(nr)->reg, ==, other.reg);
    g_assert_cmpfloat(larmor_run_get_params(nr)->lambda, ==, 0.01);
    g_assert_false(larmor_run_get_is_live(nr));
    GObject *live = larmor_run_get_live(nr); /* the session moved to it */
    g_assert_nonnull(live);
    g_assert_null(larmor_run_get_live(run));
    g_assert_true(larmor_ortho_view_get_volume(larmor_window_get_ortho_view(w)) == larmor_run_get_image(nr));
    /* the next value re-solves that new run's session in a live run */
    set_lambda(panel, 0.3);
    g_assert_true(gui_test_wait(live_idle, live, 300));
    g_assert_cmpuint(g_list_model_get_n_items(larmor_window_get_runs(w)), ==, 3);
    LarmorRun *lr = g_list_model_get_item(larmor_window_get_runs(w), 2);
    g_assert_cmpint(larmor_run_get_live_from(lr), ==, larmor_run_get_index(nr));
    g_assert_cmpint(larmor_run_get_params(lr)->reg, ==, other.reg);
    g_assert_cmpfloat(larmor_run_get_params(lr)->lambda, ==, 0.3);
    /* the first run is as it was */
    g_assert_true(larmor_run_get_image(run) == first);
    g_assert_cmpfloat(larmor_run_get_params(run)->lambda, ==, 0.01);
    g_assert_cmpint(larmor_run_get_params(run)->reg, ==, p.reg);
    g_object_unref(lr);
    gtk_toggle_button_set_active(toggle, FALSE);
    g_object_unref(nr);
    g_object_unref(run);
    gtk_window_destroy(GTK_WINDOW(w));
}

/* Model level: a finished run is immutable; a live result goes to a live
 * run forked from it. */
static void test_finished_immutable(void)
{
    LarmorReconParams p;
    larmor_recon_params_init(&p);
    p.reg = LM_REG_TV;
    p.lambda = 0.003;
    lm_recon_result res = { 0 };
    const int64_t dims[3] = { 4, 4, 1 };
    const double vox[3] = { 1, 1, 1 };
    res.image = lm_volume_new(dims, vox, NULL);
    LarmorRun *run = larmor_run_new(&p, "B32", &res);
    larmor_run_set_index(run, 3);
    larmor_run_set_metrics(run, 21.47, 10.0);
    LarmorVolume *orig = larmor_run_get_image(run);
    LarmorVolume *next = larmor_volume_new_take(lm_volume_new(dims, vox, NULL), "live");
    g_assert_false(larmor_run_update_live(run, next, 0.32, 8, 0.5, 17.87, 20.0, 0));
    g_assert_true(larmor_run_get_image(run) == orig);
    g_assert_cmpfloat(larmor_run_get_params(run)->lambda, ==, 0.003);
    g_assert_cmpfloat(larmor_run_get_psnr(run), ==, 21.47);

    LarmorRun *fork = larmor_run_fork_live(run);
    larmor_run_set_index(fork, 6);
    g_assert_null(larmor_run_get_image(fork));
    g_assert_cmpint(larmor_run_get_params(fork)->reg, ==, LM_REG_TV);
    LarmorReconParams want = p;
    want.reg = LM_REG_IDENTITY;
    char *why = NULL;
    g_assert_false(larmor_run_live_fits(fork, &want, &why));
    g_assert_nonnull(strstr(why, "#3"));
    g_free(why);
    want.reg = LM_REG_TV;
    g_assert_true(larmor_run_live_fits(fork, &want, NULL));
    g_assert_true(larmor_run_update_live(fork, next, 0.01, 8, 0.5, 22.0, 9.0, 0));
    g_assert_true(larmor_run_get_image(fork) == next);
    g_assert_cmpfloat(larmor_run_get_params(fork)->lambda, ==, 0.01);
    g_assert_nonnull(strstr(larmor_run_get_label(fork), "live from #3"));
    /* its solve's time; Q and E^H d were the session's, not its own */
    g_assert_cmpfloat(larmor_run_get_time_total(fork), ==, 0.5);
    g_assert_true(isnan(larmor_run_get_time_q(fork)));
    g_assert_true(isnan(larmor_run_get_time_fhd(fork)));
    g_assert_true(larmor_run_get_image(run) == orig);
    g_object_unref(next);
    g_object_unref(fork);
    g_object_unref(run);
}

int main(int argc, char **argv)
{
    gui_test_init(&argc, &argv);
    app = gui_test_app_new();
    g_test_add_func("/live/finished-immutable", test_finished_immutable);
    g_test_add_func("/live/lambda", test_live);
    g_test_add_func("/live/new-run", test_live_new_run);
    return gui_test_app_run(app);
}
