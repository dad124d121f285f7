#include "larmor-application.h"

#include "larmor-recon-panel.h"
#include "larmor-util.h"
#include "larmor-window.h"
#include "larmor.h"

struct _LarmorApplication {
    GtkApplication parent_instance;
    LarmorSettings *settings;
    char *problem;
    char *screenshot;
    char *page;
    int iterations;

    /* --screenshot: a small state machine stepped by a timer. */
    LarmorWindow *shot_window;
    int shot_step;
    guint shot_timer;
    int shot_wait;
    int exit_status;
};

G_DEFINE_FINAL_TYPE(LarmorApplication, larmor_application, GTK_TYPE_APPLICATION)

LarmorSettings *larmor_application_get_settings(LarmorApplication *self)
{
    return self->settings;
}

int larmor_application_get_exit_status(LarmorApplication *self)
{
    return self->exit_status;
}

static void apply_dark(LarmorApplication *self, gboolean dark)
{
    g_object_set(gtk_settings_get_default(), "gtk-application-prefer-dark-theme", dark, NULL);
}

static void action_dark(GSimpleAction *action, GVariant *state, gpointer data)
{
    LarmorApplication *self = data;
    g_simple_action_set_state(action, state);
    apply_dark(self, g_variant_get_boolean(state));
    if (self->settings) {
        larmor_settings_set_bool(self->settings, "view", "dark", g_variant_get_boolean(state));
        larmor_settings_save(self->settings, NULL);
    }
}

static void action_quit(GSimpleAction *action, GVariant *param, gpointer data)
{
    /* Close windows properly so running tasks are cancelled and settings saved. */
    GList *windows = gtk_application_get_windows(GTK_APPLICATION(data));
    for (GList *l = g_list_copy(windows); l; l = g_list_delete_link(l, l))
        gtk_window_close(GTK_WINDOW(l->data));
}

static void action_about(GSimpleAction *action, GVariant *param, gpointer data)
{
    static const char *authors[] = { "The Larmor developers", NULL };
    gtk_show_about_dialog(gtk_application_get_active_window(GTK_APPLICATION(data)),
                          "program-name", "Larmor",
                          "logo-icon-name", LARMOR_APP_ID,
                          "version", LM_VERSION,
                          "comments", "Iterative non-Cartesian MRI reconstruction on CPUs and GPUs, "
                                      "after Stone et al., “Accelerating Advanced MRI Reconstructions on GPUs” (2008)",
                          "license-type", GTK_LICENSE_MIT_X11,
                          "authors", authors,
                          NULL);
}

/* --- screenshot mode --------------------------------------------------- */

static void shot_finish(LarmorApplication *self, int status)
{
    g_clear_handle_id(&self->shot_timer, g_source_remove);
    self->exit_status = status;
    if (self->shot_window)
        gtk_window_destroy(GTK_WINDOW(self->shot_window));
    self->shot_window = NULL;
}

static gboolean shot_tick(gpointer data)
{
    LarmorApplication *self = data;
    LarmorWindow *w = self->shot_window;
    GError *error = NULL;
    if (!w || larmor_window_is_busy(w))
        return G_SOURCE_CONTINUE;
    const char *status = larmor_window_get_last_status(w);
    if (status && self->shot_step > 0 && g_strcmp0(status, "done") != 0) {
        g_printerr("larmor: screenshot: reconstruction failed: %s\n", status);
        shot_finish(self, 1);
        return G_SOURCE_REMOVE;
    }
    LarmorReconParams p;
    larmor_recon_params_init(&p);
    switch (self->shot_step) {
    case 0:
        if (!larmor_window_get_dataset(w)) {
            g_printerr("larmor: screenshot: %s\n", larmor_window_get_message(w) ? larmor_window_get_message(w) : "no data");
            shot_finish(self, 1);
            return G_SOURCE_REMOVE;
        }
        /* Gridding first, then CG: the viewer ends on the CG result. */
        p.method = LM_METHOD_GRID_KB;
        break;
    case 1:
        p.method = LM_METHOD_CG;
        if (!larmor_variant_is_available(p.variant, NULL))
            g_strlcpy(p.variant, "cpu-sp", sizeof p.variant);
        if (self->iterations > 0)
            p.iters = self->iterations;
        break;
    case 2:
        /* The paper's advanced reconstruction: CG with the anatomical prior
         * (the phantom's own reference; lambda 0.3 is B32's best). */
        p.method = LM_METHOD_CG;
        if (!larmor_variant_is_available(p.variant, NULL))
            g_strlcpy(p.variant, "cpu-sp", sizeof p.variant);
        if (self->iterations > 0)
            p.iters = self->iterations;
        if (larmor_dataset_get_reference(larmor_window_get_dataset(w))) {
            p.reg = LM_REG_ANATOMICAL;
            p.lambda = 0.3;
        }
        break;
    case 3:
        larmor_window_set_page(w, self->page ? self->page : "compare");
        if (g_strcmp0(self->page ? self->page : "compare", "compare") == 0)
            larmor_compare_view_set_differences(larmor_window_get_compare_view(w), TRUE);
        self->shot_step++;
        self->shot_wait = 8; /* a few frames for layout and drawing */
        return G_SOURCE_CONTINUE;
    case 4:
        if (self->shot_wait-- > 0)
            return G_SOURCE_CONTINUE;
        if (!larmor_widget_save_png(GTK_WIDGET(w), self->screenshot, &error)) {
            g_printerr("larmor: screenshot: %s\n", error->message);
            g_error_free(error);
            shot_finish(self, 1);
        } else {
            g_print("wrote %s\n", self->screenshot);
            shot_finish(self, 0);
        }
        return G_SOURCE_REMOVE;
    }
    if (!larmor_window_reconstruct(w, &p, &error)) {
        g_printerr("larmor: screenshot: %s\n", error->message);
        g_error_free(error);
        shot_finish(self, 1);
        return G_SOURCE_REMOVE;
    }
    self->shot_step++;
    return G_SOURCE_CONTINUE;
}

/* --- GApplication ------------------------------------------------------ */

static void larmor_application_startup(GApplication *app)
{
    LarmorApplication *self = LARMOR_APPLICATION(app);
    /* With a GPU, its CUDA context is made while the window is built (about
     * 0.2 s the first reconstruction would otherwise wait). */
    larmor_gpu_prewarm();
    /* Before chaining up: GtkApplication loads gtk/help-overlay.ui from the
     * resources during startup. */
    larmor_resources_ensure();
    G_APPLICATION_CLASS(larmor_application_parent_class)->startup(app);

    if (!self->screenshot)
        self->settings = larmor_settings_new(NULL);
    gboolean dark = self->settings ? larmor_settings_get_bool(self->settings, "view", "dark", TRUE) : TRUE;
    apply_dark(self, dark);

    GtkCssProvider *css = gtk_css_provider_new();
    gtk_css_provider_load_from_resource(css, LARMOR_RESOURCE_PATH "/style.css");
    gtk_style_context_add_provider_for_display(gdk_display_get_default(), GTK_STYLE_PROVIDER(css),
                                               GTK_STYLE_PROVIDER_PRIORITY_APPLICATION);
    g_object_unref(css);
    gtk_icon_theme_add_resource_path(gtk_icon_theme_get_for_display(gdk_display_get_default()),
                                     LARMOR_RESOURCE_PATH "/icons");
    gtk_window_set_default_icon_name(LARMOR_APP_ID);

    const GActionEntry entries[] = {
        { .name = "quit", .activate = action_quit },
        { .name = "about", .activate = action_about },
        { .name = "dark-style", .state = dark ? "true" : "false", .change_state = action_dark },
    };
    g_action_map_add_action_entries(G_ACTION_MAP(app), entries, G_N_ELEMENTS(entries), self);
    gtk_application_set_accels_for_action(GTK_APPLICATION(app), "app.quit", (const char *[]){ "<Control>q", NULL });
    gtk_application_set_accels_for_action(GTK_APPLICATION(app), "window.close", (const char *[]){ "<Control>w", NULL });
}

static void larmor_application_activate(GApplication *app)
{
    LarmorApplication *self = LARMOR_APPLICATION(app);
    GtkWindow *active = gtk_application_get_active_window(GTK_APPLICATION(app));
    if (active && !self->screenshot) {
        gtk_window_present(active);
        return;
    }
    LarmorWindow *w = larmor_window_new(GTK_APPLICATION(app), self->settings, self->problem);
    if (self->screenshot) {
        gtk_window_set_default_size(GTK_WINDOW(w), 1440, 900);
        self->shot_window = w;
        self->shot_timer = g_timeout_add(100, shot_tick, self);
    }
    gtk_window_present(GTK_WINDOW(w));
}

/* Files from the command line (`larmor scan.h5`, `larmor traj.cfl ksp.cfl
 * truth.nii.gz`) or the file manager: a new window opens them (the
 * running instance's, when there is one). */
static void larmor_application_open(GApplication *app, GFile **files, int n_files, const char *hint)
{
    LarmorApplication *self = LARMOR_APPLICATION(app);
    if (n_files <= 0) {
        larmor_application_activate(app);
        return;
    }
    LarmorWindow *w = larmor_window_new_for_files(GTK_APPLICATION(app), self->settings, files, n_files);
    gtk_window_present(GTK_WINDOW(w));
}

static int larmor_application_handle_local_options(GApplication *app, GVariantDict *options)
{
    LarmorApplication *self = LARMOR_APPLICATION(app);
    if (g_variant_dict_contains(options, "version")) {
        g_print("larmor %s\n", LM_VERSION);
        return 0;
    }
    g_variant_dict_lookup(options, "screenshot", "^ay", &self->screenshot);
    g_variant_dict_lookup(options, "problem", "s", &self->problem);
    g_variant_dict_lookup(options, "page", "s", &self->page);
    g_variant_dict_lookup(options, "iterations", "i", &self->iterations);
    if (self->problem && !lm_problem_find(self->problem, NULL)) {
        g_printerr("larmor: --problem %s: unknown (B32, B64, B128, B64n, B128n)\n", self->problem);
        return 1;
    }
    if (self->screenshot) {
        /* One process per screenshot, whatever else is running. */
        g_application_set_flags(app, g_application_get_flags(app) | G_APPLICATION_NON_UNIQUE);
    }
    return -1;
}

static void larmor_application_shutdown(GApplication *app)
{
    LarmorApplication *self = LARMOR_APPLICATION(app);
    if (self->settings)
        larmor_settings_save(self->settings, NULL);
    larmor_gpu_prewarm_wait();
    G_APPLICATION_CLASS(larmor_application_parent_class)->shutdown(app);
}

static void larmor_application_finalize(GObject *object)
{
    LarmorApplication *self = LARMOR_APPLICATION(object);
    g_clear_handle_id(&self->shot_timer, g_source_remove);
    g_clear_object(&self->settings);
    g_free(self->problem);
    g_free(self->screenshot);
    g_free(self->page);
    G_OBJECT_CLASS(larmor_application_parent_class)->finalize(object);
}

static void larmor_application_class_init(LarmorApplicationClass *klass)
{
    G_OBJECT_CLASS(klass)->finalize = larmor_application_finalize;
    G_APPLICATION_CLASS(klass)->startup = larmor_application_startup;
    G_APPLICATION_CLASS(klass)->activate = larmor_application_activate;
    G_APPLICATION_CLASS(klass)->open = larmor_application_open;
    G_APPLICATION_CLASS(klass)->shutdown = larmor_application_shutdown;
    G_APPLICATION_CLASS(klass)->handle_local_options = larmor_application_handle_local_options;
}

static void larmor_application_init(LarmorApplication *self)
{
    static const GOptionEntry options[] = {
        { "problem", 'p', 0, G_OPTION_ARG_STRING, NULL, "Benchmark problem to open (B32, B64, B128, B64n, B128n, B64c8, B128c32, B64c8n, S128c8f)", "NAME" },
        { "screenshot", 0, 0, G_OPTION_ARG_FILENAME, NULL,
          "Reconstruct the problem (gridding and CG), write a PNG of the window to FILE and quit", "FILE" },
        { "page", 0, 0, G_OPTION_ARG_STRING, NULL, "Page for --screenshot (viewer, compare, runs, sweep)", "PAGE" },
        { "iterations", 0, 0, G_OPTION_ARG_INT, NULL, "CG iterations for --screenshot", "N" },
        { "version", 0, 0, G_OPTION_ARG_NONE, NULL, "Print the version and quit", NULL },
        { NULL, 0, 0, 0, NULL, NULL, NULL },
    };
    g_application_add_main_option_entries(G_APPLICATION(self), options);
    larmor_resources_ensure();
}

LarmorApplication *larmor_application_new(void)
{
    return g_object_new(LARMOR_TYPE_APPLICATION, "application-id", LARMOR_APP_ID,
                       "flags", G_APPLICATION_HANDLES_OPEN, NULL);
}
