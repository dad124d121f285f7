/* Writes MRD (ISMRMRD) HDF5 files straight through HDF5, with the full
 * acquisition compound of the MRD spec, so tests and the structured fuzzer
 * can make files libismrmrd would never write: vlen lengths that disagree
 * with the header, a missing /dataset/data, a fixed-length XML string...
 * Header-only; needs <hdf5.h> and <ismrmrd/ismrmrd.h>. */
#ifndef LM_MRD_CRAFT_H
#define LM_MRD_CRAFT_H

#include <hdf5.h>
#include <ismrmrd/ismrmrd.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct craft_acq {
    ISMRMRD_AcquisitionHeader head;
    size_t traj_len;     /* floats stored */
    const float *traj;
    size_t data_len;     /* floats stored (re, im pairs) */
    const float *data;
} craft_acq;

typedef struct craft_hvl_acq {
    ISMRMRD_AcquisitionHeader head;
    hvl_t traj;
    hvl_t data;
} craft_hvl_acq;

static inline hid_t craft_array(hid_t base, hsize_t n)
{
    return H5Tarray_create2(base, 1, &n);
}

#define CRAFT_INS(t, S, f, ty) H5Tinsert(t, #f, HOFFSET(S, f), ty)

static inline hid_t craft_acq_type(void)
{
    hid_t idx = H5Tcreate(H5T_COMPOUND, sizeof(ISMRMRD_EncodingCounters));
    CRAFT_INS(idx, ISMRMRD_EncodingCounters, kspace_encode_step_1, H5T_NATIVE_UINT16);
    CRAFT_INS(idx, ISMRMRD_EncodingCounters, kspace_encode_step_2, H5T_NATIVE_UINT16);
    CRAFT_INS(idx, ISMRMRD_EncodingCounters, average, H5T_NATIVE_UINT16);
    CRAFT_INS(idx, ISMRMRD_EncodingCounters, slice, H5T_NATIVE_UINT16);
    CRAFT_INS(idx, ISMRMRD_EncodingCounters, contrast, H5T_NATIVE_UINT16);
    CRAFT_INS(idx, ISMRMRD_EncodingCounters, phase, H5T_NATIVE_UINT16);
    CRAFT_INS(idx, ISMRMRD_EncodingCounters, repetition, H5T_NATIVE_UINT16);
    CRAFT_INS(idx, ISMRMRD_EncodingCounters, set, H5T_NATIVE_UINT16);
    CRAFT_INS(idx, ISMRMRD_EncodingCounters, segment, H5T_NATIVE_UINT16);
    hid_t u16x8 = craft_array(H5T_NATIVE_UINT16, 8);
    CRAFT_INS(idx, ISMRMRD_EncodingCounters, user, u16x8);

    hid_t h = H5Tcreate(H5T_COMPOUND, sizeof(ISMRMRD_AcquisitionHeader));
    hid_t u32x3 = craft_array(H5T_NATIVE_UINT32, 3), u64x16 = craft_array(H5T_NATIVE_UINT64, 16);
    hid_t f32x3 = craft_array(H5T_NATIVE_FLOAT, 3), i32x8 = craft_array(H5T_NATIVE_INT32, 8);
    hid_t f32x8 = craft_array(H5T_NATIVE_FLOAT, 8);
    CRAFT_INS(h, ISMRMRD_AcquisitionHeader, version, H5T_NATIVE_UINT16);
    CRAFT_INS(h, ISMRMRD_AcquisitionHeader, flags, H5T_NATIVE_UINT64);
    CRAFT_INS(h, ISMRMRD_AcquisitionHeader, measurement_uid, H5T_NATIVE_UINT32);
    CRAFT_INS(h, ISMRMRD_AcquisitionHeader, scan_counter, H5T_NATIVE_UINT32);
    CRAFT_INS(h, ISMRMRD_AcquisitionHeader, acquisition_time_stamp, H5T_NATIVE_UINT32);
    CRAFT_INS(h, ISMRMRD_AcquisitionHeader, physiology_time_stamp, u32x3);
    CRAFT_INS(h, ISMRMRD_AcquisitionHeader, number_of_samples, H5T_NATIVE_UINT16);
    CRAFT_INS(h, ISMRMRD_AcquisitionHeader, available_channels, H5T_NATIVE_UINT16);
    CRAFT_INS(h, ISMRMRD_AcquisitionHeader, active_channels, H5T_NATIVE_UINT16);
    CRAFT_INS(h, ISMRMRD_AcquisitionHeader, channel_mask, u64x16);
    CRAFT_INS(h, ISMRMRD_AcquisitionHeader, discard_pre, H5T_NATIVE_UINT16);
    CRAFT_INS(h, ISMRMRD_AcquisitionHeader, discard_post, H5T_NATIVE_UINT16);
    CRAFT_INS(h, ISMRMRD_AcquisitionHeader, center_sample, H5T_NATIVE_UINT16);
    CRAFT_INS(h, ISMRMRD_AcquisitionHeader, encoding_space_ref, H5T_NATIVE_UINT16);
    CRAFT_INS(h, ISMRMRD_AcquisitionHeader, trajectory_dimensions, H5T_NATIVE_UINT16);
    CRAFT_INS(h, ISMRMRD_AcquisitionHeader, sample_time_us, H5T_NATIVE_FLOAT);
    CRAFT_INS(h, ISMRMRD_AcquisitionHeader, position, f32x3);
    CRAFT_INS(h, ISMRMRD_AcquisitionHeader, read_dir, f32x3);
    CRAFT_INS(h, ISMRMRD_AcquisitionHeader, phase_dir, f32x3);
    CRAFT_INS(h, ISMRMRD_AcquisitionHeader, slice_dir, f32x3);
    CRAFT_INS(h, ISMRMRD_AcquisitionHeader, patient_table_position, f32x3);
    CRAFT_INS(h, ISMRMRD_AcquisitionHeader, idx, idx);
    CRAFT_INS(h, ISMRMRD_AcquisitionHeader, user_int, i32x8);
    CRAFT_INS(h, ISMRMRD_AcquisitionHeader, user_float, f32x8);

    hid_t vl = H5Tvlen_create(H5T_NATIVE_FLOAT);
    hid_t a = H5Tcreate(H5T_COMPOUND, sizeof(craft_hvl_acq));
    H5Tinsert(a, "head", HOFFSET(craft_hvl_acq, head), h);
    H5Tinsert(a, "traj", HOFFSET(craft_hvl_acq, traj), vl);
    H5Tinsert(a, "data", HOFFSET(craft_hvl_acq, data), vl);
    hid_t all[] = {idx, u16x8, h, u32x3, u64x16, f32x3, i32x8, f32x8, vl};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        H5Tclose(all[i]);
    return a;
}

/* xml NULL: no /dataset/xml; xml_fixed: store it as a fixed-length string;
 * nacq < 0: no /dataset/data. Returns 0 on success. */
static inline int craft_write(const char *path, const char *xml, int xml_fixed, const craft_acq *acqs, long nacq)
{
    H5E_auto2_t fn;
    void *fd;
    H5Eget_auto2(H5E_DEFAULT, &fn, &fd);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    int rc = -1;
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (f < 0)
        goto out;
    hid_t g = H5Gcreate2(f, "/dataset", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (g < 0)
        goto close_f;
    H5Gclose(g);
    if (xml) {
        hsize_t one = 1;
        hid_t sp = H5Screate_simple(1, &one, NULL);
        hid_t st = H5Tcopy(H5T_C_S1);
        if (xml_fixed)
            H5Tset_size(st, strlen(xml) > 0 ? strlen(xml) : 1);
        else
            H5Tset_size(st, H5T_VARIABLE);
        hid_t ds = H5Dcreate2(f, "/dataset/xml", st, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        herr_t w = xml_fixed ? H5Dwrite(ds, st, H5S_ALL, H5S_ALL, H5P_DEFAULT, xml)
                             : H5Dwrite(ds, st, H5S_ALL, H5S_ALL, H5P_DEFAULT, &xml);
        H5Dclose(ds);
        H5Tclose(st);
        H5Sclose(sp);
        if (w < 0)
            goto close_f;
    }
    if (nacq >= 0) {
        hsize_t n = (hsize_t)nacq;
        hid_t sp = H5Screate_simple(1, &n, NULL);
        hid_t at = craft_acq_type();
        hid_t ds = H5Dcreate2(f, "/dataset/data", at, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        herr_t w = 0;
        if (nacq > 0) {
            craft_hvl_acq *buf = calloc((size_t)nacq, sizeof *buf);
            for (long i = 0; i < nacq; i++) {
                buf[i].head = acqs[i].head;
                buf[i].traj.len = acqs[i].traj_len;
                buf[i].traj.p = (void *)acqs[i].traj;
                buf[i].data.len = acqs[i].data_len;
                buf[i].data.p = (void *)acqs[i].data;
            }
            w = H5Dwrite(ds, at, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
            free(buf);
        }
        H5Dclose(ds);
        H5Tclose(at);
        H5Sclose(sp);
        if (w < 0)
            goto close_f;
    }
    rc = 0;
close_f:
    if (f >= 0 && H5Fclose(f) < 0)
        rc = -1;
out:
    H5Eset_auto2(H5E_DEFAULT, fn, fd);
    return rc;
}

/* A valid header for a 2D matrix n x n x nz, FOV fov mm. */
static inline void craft_xml(char *buf, size_t cap, int n, int nz, double fov, const char *traj)
{
    snprintf(buf, cap,
             "<?xml version=\"1.0\"?>\n<ismrmrdHeader xmlns=\"http://www.ismrm.org/ISMRMRD\">"
             "<experimentalConditions><H1resonanceFrequency_Hz>63500000</H1resonanceFrequency_Hz></experimentalConditions>"
             "<encoding><encodedSpace><matrixSize><x>%d</x><y>%d</y><z>%d</z></matrixSize>"
             "<fieldOfView_mm><x>%g</x><y>%g</y><z>%g</z></fieldOfView_mm></encodedSpace>"
             "<reconSpace><matrixSize><x>%d</x><y>%d</y><z>%d</z></matrixSize>"
             "<fieldOfView_mm><x>%g</x><y>%g</y><z>%g</z></fieldOfView_mm></reconSpace>"
             "<encodingLimits/><trajectory>%s</trajectory></encoding></ismrmrdHeader>",
             n, n, nz, fov, fov, fov, n, n, nz, fov, fov, fov, traj);
}

#endif
