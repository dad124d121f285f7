/* DICOM reading and writing in a build without dcmtk (meson -Ddicom=disabled,
 * or libdcmtk-dev missing): every call says so in one line. */
#include "lm_dicom.h"

lm_code lm_dicom_write_series(const char *dir, const lm_volume *v, lm_dicom_write_opts *o, lm_error *err)
{
    return lm_fail(err, LM_ERR_UNSUPPORTED, "%s: this Larmor was built without DICOM (dcmtk: apt-get install "
                   "libdcmtk-dev, then reconfigure)", dir ? dir : "");
}

lm_code lm_dicom_write_set(const char *parent, lm_dicom_set_item *items, int n, lm_dicom_write_opts *o,
                           lm_error *err)
{
    return lm_dicom_write_series(parent, NULL, o, err);
}

lm_code lm_dicom_read(const char *path, const char *series_uid, lm_volume **out, lm_error *err)
{
    *out = NULL;
    return lm_fail(err, LM_ERR_UNSUPPORTED, "%s: a DICOM input, but this Larmor was built without DICOM (dcmtk: "
                   "apt-get install libdcmtk-dev, then reconfigure)", path ? path : "");
}
