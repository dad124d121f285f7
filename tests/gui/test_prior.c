/* Priors in the window: the regulariser list, automatic lambda, the prior
 * influence overlay of a run, and the overlay's colour ramp. */
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "gui-test.h"
#include "larmor-application.h"
#include "larmor-phantom-dialog.h"
#include "larmor-recon-panel.h"
#include "larmor-recon-task.h"
#include "larmor-runs-view.h"
#include "larmor-window.h"
#include "lm_io.h"

static LarmorApplication *app;

static void test_reg_list(void)
{
    LarmorWindow *w = gui_test_open_data(GTK_APPLICATION(app), NULL);
    LarmorReconPanel *panel = larmor_window_get_recon_panel(w);
    GtkDropDown *dd = GTK_DROP_DOWN(larmor_recon_panel_get_control(panel, "reg"));
    GListModel *m = gtk_drop_down_get_model(dd);
    g_assert_cmpuint(g_list_model_get_n_items(m), ==, LARMOR_N_REGS);
    const lm_reg_kind every[] = { LM_REG_IDENTITY, LM_REG_GRADIENT, LM_REG_TV,
                                  LM_REG_WAVELET, LM_REG_ANATOMICAL, LM_REG_ANATOMICAL_EDGES };
    /* Every kind is listed once, under the CLI's name, and selecting it gives that kind. */
    for (guint k = 0; k < G_N_ELEMENTS(every); k++) {
        int found = 0;
        for (guint i = 0; i < g_list_model_get_n_items(m); i++) {
            GtkStringObject *o = g_list_model_get_item(m, i);
            if (g_strcmp0(gtk_string_object_get_string(o), lm_reg_name(every[k])) == 0) {
                found++;
                gtk_drop_down_set_selected(dd, i);
                LarmorReconParams p;
                g_assert_true(larmor_recon_panel_get_params(panel, &p, NULL));
                g_assert_cmpint(p.reg, ==, every[k]);
                lm_reg_kind parsed;
                g_assert_cmpint(lm_reg_parse(gtk_string_object_get_string(o), &parsed, NULL), ==, LM_OK);
                g_assert_cmpint(parsed, ==, every[k]);
            }
            g_object_unref(o);
        }
        g_assert_cmpint(found, ==, 1);
    }

    /* tv weighs on another scale: its own range and default; identity keeps its lambda. */
    GtkRange *scale = GTK_RANGE(larmor_recon_panel_get_control(panel, "lambda-scale"));
    gtk_drop_down_set_selected(dd, larmor_reg_position(LM_REG_IDENTITY));
    larmor_recon_panel_set_lambda(panel, 0.05);
    gtk_drop_down_set_selected(dd, larmor_reg_position(LM_REG_TV));
    double lo, hi, def;
    larmor_reg_lambda_range(LM_REG_TV, &lo, &hi, &def);
    g_assert_cmpfloat(gtk_adjustment_get_lower(gtk_range_get_adjustment(scale)), ==, lo);
    g_assert_cmpfloat(gtk_adjustment_get_upper(gtk_range_get_adjustment(scale)), ==, hi);
    g_assert_cmpfloat(larmor_recon_panel_get_lambda(panel), ==, def);
    double ilo, ihi, idef;
    larmor_reg_lambda_range(LM_REG_IDENTITY, &ilo, &ihi, &idef);
    g_assert_cmpfloat(hi, <, ihi);
    /* Auto lambda serves tv too (the discrepancy principle, says the tooltip). */
    GtkWidget *autob = larmor_recon_panel_get_control(panel, "auto-lambda");
    g_assert_true(gtk_widget_get_sensitive(autob));
    g_assert_nonnull(strstr(gtk_widget_get_tooltip_text(autob), "tv"));
    gtk_drop_down_set_selected(dd, larmor_reg_position(LM_REG_IDENTITY));
    g_assert_cmpfloat(larmor_recon_panel_get_lambda(panel), ==, 0.05);
    g_assert_true(gtk_widget_get_sensitive(autob));
    /* The wavelet prior is there exactly when the library can make its transform. */
    const char *why = NULL;
    gboolean wav = larmor_reg_is_available(LM_REG_WAVELET, &why);
    g_assert_true(wav || (why && *why));
    printf("# wavelet prior %s%s\n", wav ? "available" : "unavailable: ", wav ? "" : why);
    if (!wav) {
        /* Without GSL a wavelet run is refused in one line before it starts. */
        LarmorReconParams p;
        gui_test_cpu_params(&p, "cpu-nufft", 2);
        p.reg = LM_REG_WAVELET;
        GError *error = NULL;
        g_assert_false(larmor_window_reconstruct(w, &p, &error));
        g_assert_nonnull(error);
        g_assert_nonnull(strstr(error->message, "GSL"));
        g_clear_error(&error);
    }
    gtk_window_destroy(GTK_WINDOW(w));
    gui_test_spin(0.1);
}

static void test_overlay_map(void)
{
    /* Ramp: clear at lo, opacity at hi, NaN clear; premultiplied. */
    const float v[5] = { 0, 0.5f, 1, 2, NAN };
    uint32_t px[5];
    LarmorOverlayStyle st = { .colormap = LARMOR_COLORMAP_HOT, .lo = 0, .hi = 1, .opacity = 0.8, .ramp = 1,
                              .mode = LARMOR_MODE_MAGNITUDE };
    larmor_overlay_map(v, 5, &st, px);
    g_assert_cmpuint(px[0] >> 24, ==, 0);
    g_assert_cmpuint(px[1] >> 24, ==, 102); /* 255 x 0.8 x 0.5 */
    g_assert_cmpuint(px[2] >> 24, ==, 204);
    g_assert_cmpuint(px[3] >> 24, ==, 204);
    g_assert_cmpuint(px[4] >> 24, ==, 0);
    for (int i = 0; i < 5; i++) {
        guint a = px[i] >> 24;
        g_assert_cmpuint(px[i] >> 16 & 0xff, <=, a);
        g_assert_cmpuint(px[i] >> 8 & 0xff, <=, a);
        g_assert_cmpuint(px[i] & 0xff, <=, a);
    }
    /* Constant alpha; diverging: 0 (the middle) is near white, -max blue, +max red. */
    const float h[3] = { -100, 0, 100 };
    st = (LarmorOverlayStyle){ .colormap = LARMOR_COLORMAP_DIVERGING, .lo = -100, .hi = 100, .opacity = 0.5,
                               .ramp = 0, .mode = LARMOR_MODE_REAL };
    larmor_overlay_map(h, 3, &st, px);
    for (int i = 0; i < 3; i++)
        g_assert_cmpuint(px[i] >> 24, ==, 128);
    g_assert_cmpuint(px[0] & 0xff, >, (px[0] >> 16 & 0xff) + 20);
    g_assert_cmpuint(px[2] >> 16 & 0xff, >, (px[2] & 0xff) + 20);
    g_assert_cmpuint(MIN(px[1] >> 16 & 0xff, px[1] & 0xff), >, 100);
}

static void test_auto_lambda(void)
{
    LarmorWindow *w = gui_test_open_data(GTK_APPLICATION(app), NULL);
    LarmorReconPanel *panel = larmor_window_get_recon_panel(w);
    LarmorReconParams p;
    gui_test_cpu_params(&p, "cpu-nufft", 10);
    p.reg = LM_REG_GRADIENT;
    p.lambda = 1e-5;
    larmor_recon_panel_set_params(panel, &p);
    GError *error = NULL;
    g_assert_true(larmor_window_auto_lambda(w, &error));
    g_assert_no_error(error);
    g_assert_true(gui_test_wait(gui_test_idle, w, 300));
    g_assert_cmpstr(larmor_window_get_last_status(w), ==, "done");
    LarmorRun *run = gui_test_last_run(w);
    double l = larmor_run_get_lambda_used(run);
    g_assert_true(isfinite(l) && l > 0);
    g_assert_true(larmor_run_get_params(run)->lambda_auto);
    /* The slider took the chosen lambda; the details say how it was chosen. */
    g_assert_cmpfloat(larmor_recon_panel_get_lambda(panel), ==, l);
    g_assert_nonnull(strstr(larmor_recon_panel_get_details(panel), "λ = "));
    g_assert_nonnull(strstr(larmor_recon_panel_get_details(panel), larmor_run_get_lambda_criterion(run)));
    printf("# B32 gradient: %s\n", larmor_recon_panel_get_details(panel));

    /* tv: the discrepancy principle over ADMM trials; the slider (tv's own
     * range) takes the chosen lambda. */
    p.reg = LM_REG_TV;
    p.iters = 3;
    larmor_recon_panel_set_params(panel, &p);
    g_assert_true(larmor_window_auto_lambda(w, &error));
    g_assert_no_error(error);
    g_assert_true(gui_test_wait(gui_test_idle, w, 300));
    g_assert_cmpstr(larmor_window_get_last_status(w), ==, "done");
    run = gui_test_last_run(w);
    const double lt = larmor_run_get_lambda_used(run);
    g_assert_true(isfinite(lt) && lt > 0 && lt != l);
    g_assert_cmpstr(larmor_run_get_lambda_criterion(run), ==, "discrepancy");
    g_assert_cmpfloat(larmor_recon_panel_get_lambda(panel), ==, lt);
    printf("# B32 tv: %s\n", larmor_recon_panel_get_details(panel));
    g_assert_true(gtk_widget_get_sensitive(larmor_recon_panel_get_control(panel, "auto-lambda")));
    gtk_window_destroy(GTK_WINDOW(w));
    gui_test_spin(0.1);
}

static void test_prior_influence(void)
{
    LarmorWindow *w = gui_test_open_data(GTK_APPLICATION(app), NULL);
    LarmorReconParams p;
    gui_test_cpu_params(&p, "cpu-nufft", 6);
    p.reg = LM_REG_GRADIENT;
    p.lambda = 1;
    p.prior_influence = FALSE;
    GError *error = NULL;
    g_assert_true(larmor_window_reconstruct(w, &p, &error));
    g_assert_true(gui_test_wait(gui_test_idle, w, 300));
    g_assert_null(larmor_run_get_prior_influence(gui_test_last_run(w)));

    p.prior_influence = TRUE;
    g_assert_true(larmor_window_reconstruct(w, &p, &error));
    g_assert_no_error(error);
    g_assert_true(gui_test_wait(gui_test_idle, w, 300));
    LarmorRun *run = gui_test_last_run(w);
    LarmorVolume *pi = larmor_run_get_prior_influence(run);
    g_assert_nonnull(pi);
    const lm_volume *a = larmor_volume_get_data(pi), *b = larmor_volume_get_data(larmor_run_get_image(run));
    for (int k = 0; k < 3; k++)
        g_assert_cmpint(a->dims[k], ==, b->dims[k]);
    /* Something changed: the gradient prior at lambda 1 smooths. */
    double m = 0;
    for (int64_t i = 0; i < lm_volume_count(a); i++)
        m = MAX(m, cabsf(a->data[i]));
    g_assert_cmpfloat(m, >, 0);
    /* In the image list (viewable, exportable). */
    LarmorOrthoView *ov = larmor_window_get_ortho_view(w);
    gboolean listed = FALSE;
    GListModel *vols = larmor_window_get_images(w);
    for (guint i = 0; i < g_list_model_get_n_items(vols); i++) {
        gpointer it = g_list_model_get_item(vols, i);
        listed |= it == (gpointer)pi;
        g_object_unref(it);
    }
    g_assert_true(listed);
    /* The viewer shows the run; its overlay is its prior influence. */
    larmor_window_set_page(w, "viewer");
    larmor_ortho_view_set_overlay(ov, LARMOR_OVERLAY_INFLUENCE);
    gtk_test_widget_wait_for_draw(GTK_WIDGET(w));
    LarmorOverlayStyle st;
    gboolean drawn = FALSE;
    LarmorSliceView *axial = larmor_ortho_view_get_slice_view(ov, LARMOR_ORIENT_AXIAL);
    g_assert_true(larmor_slice_view_get_overlay(axial, &st, &drawn) == pi);
    g_assert_true(drawn);
    g_assert_cmpint(st.colormap, ==, LARMOR_COLORMAP_HOT);
    g_assert_true(st.ramp);
    g_assert_cmpfloat(st.hi, >, 0);
    gui_test_save_shot(GTK_WIDGET(w), "prior-influence.png");
    printf("# prior influence max %.4g, overlay to %.4g, listed %d\n", m, st.hi, listed);
    /* Showing the truth: no influence to overlay. */
    larmor_ortho_view_show_volume(ov, larmor_dataset_get_truth(larmor_window_get_dataset(w)));
    g_assert_null(larmor_slice_view_get_overlay(axial, NULL, NULL));
    gtk_window_destroy(GTK_WINDOW(w));
    gui_test_spin(0.1);
}

int main(int argc, char **argv)
{
    gui_test_init(&argc, &argv);
    app = gui_test_app_new();
    g_test_add_func("/prior/overlay-map", test_overlay_map);
    g_test_add_func("/prior/reg-list", test_reg_list);
    g_test_add_func("/prior/auto-lambda", test_auto_lambda);
    g_test_add_func("/prior/prior-influence", test_prior_influence);
    return gui_test_app_run(app);
}
