/* larmor: the GTK 4 workbench for non-Cartesian MRI reconstruction. */
#include <locale.h>

#include "larmor-application.h"

int main(int argc, char **argv)
{
    setlocale(LC_ALL, "");
    LarmorApplication *app = larmor_application_new();
    int status = g_application_run(G_APPLICATION(app), argc, argv);
    if (status == 0)
        status = larmor_application_get_exit_status(app);
    g_object_unref(app);
    return status;
}
