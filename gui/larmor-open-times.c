/* File > Open Sample Times: the files' data set read again with the times
 * (the trajectory is shared by reference with running tasks, so it never
 * changes in place; a new data set is made in the worker as for any load). */
#include "larmor-open-times.h"

#include "larmor-util.h"

void larmor_window_open_times(LarmorWindow *self, const char *path)
{
    LarmorDataset *ds = larmor_window_get_dataset(self);
    if (!ds || larmor_window_is_busy(self)) {
        larmor_window_show_message(self, "Load data before their sample times", TRUE);
        return;
    }
    const LarmorDatasetSpec *spec = larmor_dataset_get_spec(ds);
    if (spec->kind != LARMOR_SOURCE_FILES) {
        larmor_window_show_message(self, "Sample times go with data from files; a phantom makes its own "
                                         "(New Phantom, with a field map)", TRUE);
        return;
    }
    LarmorDatasetSpec *s = larmor_dataset_spec_copy(spec);
    g_free(s->times_path);
    s->times_path = g_strdup(path);
    larmor_window_load(self, s);
    larmor_dataset_spec_free(s);
}
