// DICOM files through dcmtk: the series writer (classic MR Image Storage,
// one file per slice, or one Enhanced MR multi-frame file) and the reader
// that turns the files of a folder into tag records for lm_dicom_series.c and
// then into a volume (docs/dicom.md). No DICOM is encoded or parsed here by
// hand; dcmtk reads and writes every element.
#include "dcmtk/config/osconfig.h"
#include "dcmtk/dcmdata/dcdeftag.h"
#include "dcmtk/dcmdata/dcfilefo.h"
#include "dcmtk/dcmdata/dcpixel.h"
#include "dcmtk/dcmdata/dcrledrg.h"
#include "dcmtk/dcmdata/dcuid.h"
#include "dcmtk/dcmdata/dcxfer.h"
#include "dcmtk/dcmjpeg/djdecode.h"
#include "dcmtk/dcmjpls/djdecode.h"
#include "dcmtk/oflog/oflog.h"

#include <complex.h> // before the C headers: in C++ it is <complex>, which cannot be extern "C"

// Larmor's C headers (lm_dicom.h alone declares itself extern "C").
extern "C" {
#include "lm_config.h"
#include "lm_io.h"
}
#include "lm_dicom.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

namespace {

const char *const k_manufacturer = "Larmor";

// dcmtk logs to stderr from library code; Larmor reports errors itself. The
// decoders of the compressed transfer syntaxes dcmtk has are registered once.
void dicom_setup()
{
    static std::once_flag once;
    std::call_once(once, [] {
        OFLog::configure(OFLogger::FATAL_LOG_LEVEL);
        DcmRLEDecoderRegistration::registerCodecs();
        DJDecoderRegistration::registerCodecs();
        DJLSDecoderRegistration::registerCodecs();
    });
}

// ---- Text of the value representations ----

// DS: at most 16 characters, as many significant digits as fit.
std::string ds(double v)
{
    if (v == 0 || std::fabs(v) < 1e-12)
        return "0";
    char b[40];
    for (int p = 12; p > 1; p--) {
        std::snprintf(b, sizeof b, "%.*g", p, v);
        if (std::strlen(b) <= 16)
            return b;
    }
    std::snprintf(b, sizeof b, "%.1g", v);
    return b;
}

std::string ds_list(const double *v, int n)
{
    std::string s;
    for (int i = 0; i < n; i++)
        s += (i ? "\\" : "") + ds(v[i]);
    return s;
}

// A DICOM UID: digits and dots, at most 64 characters, no empty component,
// no leading zero in a component.
bool valid_uid(const char *u)
{
    size_t n = std::strlen(u);
    if (n == 0 || n > 64 || u[0] == '.' || u[n - 1] == '.')
        return false;
    for (size_t i = 0; i < n; i++) {
        if (u[i] == '.') {
            if (u[i + 1] == '.')
                return false;
            continue;
        }
        if (u[i] < '0' || u[i] > '9')
            return false;
        if (u[i] == '0' && (i == 0 || u[i - 1] == '.') && i + 1 < n && u[i + 1] != '.')
            return false;
    }
    return true;
}

std::string new_uid()
{
    char b[100];
    dcmGenerateUniqueIdentifier(b, SITE_INSTANCE_UID_ROOT);
    return b;
}

// xs:date "YYYY-MM-DD" or DICOM's "YYYYMMDD" -> "YYYYMMDD"; "" otherwise.
std::string da(const char *s)
{
    std::string d;
    for (const char *p = s; *p; p++)
        if (*p >= '0' && *p <= '9')
            d += *p;
        else if (*p != '-')
            return "";
    return d.size() == 8 ? d : "";
}

// xs:time "HH:MM:SS[.frac]" -> "HHMMSS[.frac]"; "" otherwise.
std::string tm_of(const char *s)
{
    std::string t;
    for (const char *p = s; *p && t.size() < 13; p++)
        if ((*p >= '0' && *p <= '9') || *p == '.')
            t += *p;
        else if (*p != ':')
            break;
    return t.size() >= 2 ? t : "";
}

// Cut at n bytes without splitting a UTF-8 character.
std::string cut(const char *s, size_t n)
{
    std::string t(s);
    if (t.size() <= n)
        return t;
    while (n > 0 && (static_cast<unsigned char>(t[n]) & 0xC0) == 0x80)
        n--;
    return t.substr(0, n);
}

// ---- Identity: patient, study, frame of reference ----

struct identity {
    std::string patient_name, patient_id, birth_date, sex;
    std::string study_uid, study_date, study_time, study_id, accession, study_description, referring;
    std::string frame_uid, patient_position;
    long series_number = 1001;
    std::string note;
    std::string now_date, now_time; // one instant for every file of the series
    std::time_t now = 0;            // that instant: frame t of a dynamic series is now + t * frame_s
};

lm_code read_template(const char *dir, const char *series_uid, identity *id, lm_error *err);

lm_code make_identity(const lm_dicom_write_opts *o, identity *id, lm_error *err)
{
    if (o->like_dir && *o->like_dir)
        return read_template(o->like_dir, o->like_series, id, err);
    const lm_mrd_provenance *p = o->prov;
    const bool has_patient = p && (p->patient_id[0] || p->patient_name[0]);
    const bool has_study = p && p->study_instance_uid[0];
    if (p) {
        id->patient_name = cut(p->patient_name, 64);
        id->patient_id = cut(p->patient_id, 64);
        id->birth_date = da(p->patient_birthdate);
        if (!std::strcmp(p->patient_gender, "M") || !std::strcmp(p->patient_gender, "F") ||
            !std::strcmp(p->patient_gender, "O"))
            id->sex = p->patient_gender;
        id->study_date = da(p->study_date);
        id->study_time = tm_of(p->study_time);
        id->study_id = cut(p->study_id, 16);
        id->accession = cut(p->accession_number, 16);
        id->study_description = cut(p->study_description, 64);
        id->patient_position = cut(p->patient_position, 16);
    }
    std::string notes;
    if (has_study && valid_uid(p->study_instance_uid)) {
        id->study_uid = p->study_instance_uid;
    } else {
        id->study_uid = new_uid();
        if (has_study)
            notes = std::string("the header's studyInstanceUID '") + p->study_instance_uid +
                    "' is not a DICOM UID: new study";
    }
    if (p && p->frame_of_reference_uid[0] && valid_uid(p->frame_of_reference_uid))
        id->frame_uid = p->frame_of_reference_uid;
    else
        id->frame_uid = new_uid();
    if (!has_patient) {
        id->patient_name = "Anonymous";
        id->patient_id = "LARMOR-ANONYMOUS";
    }
    if (!has_patient || !has_study) {
        std::string what = !has_patient && !has_study ? "no patient or study information: anonymous patient, new study"
                           : !has_patient           ? "no patient information: anonymous patient"
                                                    : "no study information: new study";
        notes = notes.empty() ? what : notes + "; " + what;
        notes += " (--dicom-like DIR joins a series' study)";
    }
    id->note = notes;
    return LM_OK;
}

// ---- Writing ----

struct scaled {
    std::vector<Sint16> pix;
    std::string slope, intercept, center, width;
    bool exact = false; // width below 1: only VOILUTFunction LINEAR_EXACT allows it
};

int64_t frames_of(const lm_dicom_write_opts *o)
{
    return o->frames > 1 ? o->frames : 1;
}

lm_code scale_pixels(const lm_volume *v, const lm_dicom_write_opts *o, const char *dir, scaled *s, lm_error *err)
{
    const size_t n = static_cast<size_t>(lm_volume_count(v) * frames_of(o));
    std::vector<double> x(n);
    for (size_t i = 0; i < n; i++) {
        // lm_cfloat is C's float _Complex: GNU C++ reads its parts with __real__/__imag__.
        const float re = __real__ v->data[i], im = __imag__ v->data[i];
        switch (o->part) {
        case LM_DICOM_PHASE: x[i] = std::atan2(static_cast<double>(im), static_cast<double>(re)); break;
        case LM_DICOM_REAL: x[i] = re; break;
        case LM_DICOM_IMAG: x[i] = im; break;
        default: x[i] = std::hypot(static_cast<double>(re), static_cast<double>(im)); break;
        }
        if (!std::isfinite(x[i]))
            return lm_fail(err, LM_ERR_INVALID, "%s: voxel %zu is not finite; nothing written", dir, i);
    }
    const auto mm = std::minmax_element(x.begin(), x.end());
    double lo = *mm.first, hi = *mm.second;
    if (o->part == LM_DICOM_PHASE)
        lo = -M_PI, hi = M_PI; // radians on a fixed scale, so series compare
    // 65534 steps over [lo, hi], stored in [-32767, 32767]: the error after
    // rescale is at most (hi - lo) / 131068, below 1e-4 of max |value|. The
    // quantisation uses the slope and intercept as written (DS text).
    double slope = hi > lo ? (hi - lo) / 65534.0 : 1.0;
    double icpt = hi > lo ? 0.5 * (hi + lo) : lo;
    s->slope = ds(slope);
    s->intercept = ds(icpt);
    slope = std::strtod(s->slope.c_str(), nullptr);
    icpt = std::strtod(s->intercept.c_str(), nullptr);
    s->pix.resize(n);
    for (size_t i = 0; i < n; i++) {
        double q = std::nearbyint((x[i] - icpt) / slope);
        s->pix[i] = static_cast<Sint16>(std::max(-32768.0, std::min(32767.0, q)));
    }
    double c = o->window[0], w = o->window[1];
    if (!(w > 0)) {
        std::vector<double> sorted(x);
        std::sort(sorted.begin(), sorted.end());
        const double p1 = sorted[static_cast<size_t>(std::floor(0.01 * static_cast<double>(n - 1)))];
        const double p99 = sorted[static_cast<size_t>(std::ceil(0.99 * static_cast<double>(n - 1)))];
        c = 0.5 * (p1 + p99);
        w = std::max(p99 - p1, 2 * slope);
    }
    s->center = ds(c);
    s->width = ds(w);
    s->exact = w < 1;
    return LM_OK;
}

// The geometry of v in DICOM's terms (LPS): unit row and column directions,
// spacings and the position of each slice's first voxel.
struct plane_geom {
    double iop[6];
    double spacing[2]; // between rows, between columns
    double step;       // between slices
    std::vector<double> ipp;
    double normal[3];
};

lm_code plane_geometry(const lm_volume *v, const char *dir, plane_geom *g, lm_error *err)
{
    static const double f[3] = {-1, -1, 1};
    double c[3][3];
    for (int a = 0; a < 3; a++)
        for (int k = 0; k < 3; k++)
            c[k][a] = f[a] * v->affine[a][k];
    double len[3];
    for (int k = 0; k < 3; k++)
        len[k] = std::sqrt(c[k][0] * c[k][0] + c[k][1] * c[k][1] + c[k][2] * c[k][2]);
    if (!(len[0] > 0) || !(len[1] > 0) || !std::isfinite(len[0] + len[1] + len[2]))
        return lm_fail(err, LM_ERR_INVALID, "%s: the volume's affine has a zero or non-finite in-plane axis", dir);
    for (int a = 0; a < 3; a++) {
        g->iop[a] = c[0][a] / len[0];
        g->iop[3 + a] = c[1][a] / len[1];
    }
    const double *r = g->iop, *cl = g->iop + 3;
    if (std::fabs(r[0] * cl[0] + r[1] * cl[1] + r[2] * cl[2]) > 1e-4)
        return lm_fail(err, LM_ERR_INVALID, "%s: the volume's in-plane axes are not at right angles (a sheared "
                       "affine has no DICOM plane)", dir);
    g->normal[0] = r[1] * cl[2] - r[2] * cl[1];
    g->normal[1] = r[2] * cl[0] - r[0] * cl[2];
    g->normal[2] = r[0] * cl[1] - r[1] * cl[0];
    g->spacing[0] = len[1];
    g->spacing[1] = len[0];
    g->step = v->dims[2] > 1 ? len[2] : (len[2] > 0 ? len[2] : v->voxel_mm[2]);
    g->ipp.resize(3 * static_cast<size_t>(v->dims[2]));
    for (int64_t k = 0; k < v->dims[2]; k++)
        for (int a = 0; a < 3; a++)
            g->ipp[3 * k + a] = f[a] * (v->affine[a][3] + static_cast<double>(k) * v->affine[a][2]);
    return LM_OK;
}

// DICOM's DT of instant t + offset_s seconds: YYYYMMDDHHMMSS[.FFFFFF].
std::string date_time(std::time_t t, double offset_s)
{
    const double whole = std::floor(offset_s);
    std::time_t at = t + static_cast<std::time_t>(whole);
    long micro = std::lround((offset_s - whole) * 1e6);
    if (micro >= 1000000) {
        at += 1;
        micro -= 1000000;
    }
    struct tm tmv;
    gmtime_r(&at, &tmv);
    char b[32];
    std::strftime(b, sizeof b, "%Y%m%d%H%M%S", &tmv);
    std::string s(b);
    if (micro > 0) {
        char f[32];
        std::snprintf(f, sizeof f, ".%06ld", micro);
        s += f;
    }
    return s;
}

std::string now_date(std::time_t t, std::string *time_out)
{
    struct tm tmv;
    gmtime_r(&t, &tmv);
    char d[16], h[16];
    std::strftime(d, sizeof d, "%Y%m%d", &tmv);
    std::strftime(h, sizeof h, "%H%M%S", &tmv);
    *time_out = h;
    return d;
}

#define PUT(ds_, tag, val)                                                                                        \
    do {                                                                                                          \
        OFCondition c_ = (ds_)->putAndInsertString(tag, (val));                                                   \
        if (c_.bad())                                                                                             \
            return lm_fail(err, LM_ERR_INTERNAL, "%s: dcmtk refused %s: %s", where, #tag, c_.text());           \
    } while (0)

// What every file of the series carries: patient, study, series, frame of
// reference, equipment, and the pixel description.
lm_code put_common(DcmDataset *d, const identity &id, const lm_dicom_write_opts *o, const std::string &series_uid,
                   const char *where, lm_error *err)
{
    const std::string &tnow = id.now_time, &dnow = id.now_date;
    PUT(d, DCM_SpecificCharacterSet, "ISO_IR 192");
    PUT(d, DCM_PatientName, id.patient_name.c_str());
    PUT(d, DCM_PatientID, id.patient_id.c_str());
    PUT(d, DCM_PatientBirthDate, id.birth_date.c_str());
    PUT(d, DCM_PatientSex, id.sex.c_str());
    PUT(d, DCM_StudyInstanceUID, id.study_uid.c_str());
    PUT(d, DCM_StudyDate, (id.study_date.empty() ? dnow : id.study_date).c_str());
    PUT(d, DCM_StudyTime, (id.study_time.empty() ? tnow : id.study_time).c_str());
    PUT(d, DCM_ReferringPhysicianName, id.referring.c_str());
    PUT(d, DCM_StudyID, id.study_id.c_str());
    PUT(d, DCM_AccessionNumber, id.accession.c_str());
    if (!id.study_description.empty())
        PUT(d, DCM_StudyDescription, id.study_description.c_str());
    PUT(d, DCM_Modality, "MR");
    PUT(d, DCM_SeriesInstanceUID, series_uid.c_str());
    PUT(d, DCM_SeriesNumber, std::to_string(id.series_number).c_str());
    PUT(d, DCM_SeriesDate, dnow.c_str());
    PUT(d, DCM_SeriesTime, tnow.c_str());
    PUT(d, DCM_SeriesDescription, cut(o->series_description ? o->series_description : "Larmor", 64).c_str());
    if (!o->enhanced) // enhanced images carry FrameLaterality instead
        PUT(d, DCM_Laterality, "");
    PUT(d, DCM_PatientPosition, id.patient_position.empty() ? "HFS" : id.patient_position.c_str());
    PUT(d, DCM_FrameOfReferenceUID, id.frame_uid.c_str());
    PUT(d, DCM_PositionReferenceIndicator, "");
    PUT(d, DCM_Manufacturer, k_manufacturer);
    PUT(d, DCM_ManufacturerModelName, "Larmor");
    PUT(d, DCM_SoftwareVersions, "Larmor " LM_VERSION);
    PUT(d, DCM_ContentDate, dnow.c_str());
    PUT(d, DCM_ContentTime, tnow.c_str());
    PUT(d, DCM_SamplesPerPixel, "1");
    PUT(d, DCM_PhotometricInterpretation, "MONOCHROME2");
    PUT(d, DCM_BitsAllocated, "16");
    PUT(d, DCM_BitsStored, "16");
    PUT(d, DCM_HighBit, "15");
    PUT(d, DCM_PixelRepresentation, "1");
    PUT(d, DCM_BurnedInAnnotation, "NO");
    // The caller's nucleus, else the one the MRD header names; none is guessed.
    const char *nucleus = o->nucleus && *o->nucleus ? o->nucleus : o->prov ? o->prov->nucleus : "";
    if (*nucleus)
        PUT(d, o->enhanced ? DCM_ResonantNucleus : DCM_ImagedNucleus, nucleus);
    if (o->prov && o->prov->field_strength_t > 0)
        PUT(d, DCM_MagneticFieldStrength, ds(o->prov->field_strength_t).c_str());
    return LM_OK;
}

// A DcmItem added to seq, or nullptr.
DcmItem *add_item(DcmItem *parent, const DcmTagKey &seq)
{
    DcmItem *it = nullptr;
    return parent->findOrCreateSequenceItem(seq, it, -2).good() ? it : nullptr;
}

lm_code write_classic(const char *tmp, const char *where, const lm_volume *v, const lm_dicom_write_opts *o,
                      const identity &id, const std::string &series_uid, const scaled &s, const plane_geom &g,
                      int *files, lm_error *err)
{
    const int64_t nx = v->dims[0], ny = v->dims[1], nz = v->dims[2], nt = frames_of(o);
    const size_t plane = static_cast<size_t>(nx * ny);
    for (int64_t f = 0; f < nz * nt; f++) {
        const int64_t k = f % nz, t = f / nz; // files frame by frame, slices within
        DcmFileFormat ff;
        DcmDataset *d = ff.getDataset();
        lm_code rc = put_common(d, id, o, series_uid, where, err);
        if (rc)
            return rc;
        const std::string sop = new_uid();
        PUT(d, DCM_SOPClassUID, UID_MRImageStorage);
        PUT(d, DCM_SOPInstanceUID, sop.c_str());
        PUT(d, DCM_ImageType, "DERIVED\\SECONDARY\\OTHER"); // MR images need value 3
        PUT(d, DCM_InstanceNumber, std::to_string(f + 1).c_str());
        if (nt > 1) {
            // A dynamic series: each slice position once per frame, at the frame's
            // time. (TriggerTime is for cardiac-gated images only: MR's type 2C.)
            const double offset_s = static_cast<double>(t) * o->frame_s;
            PUT(d, DCM_TemporalPositionIdentifier, std::to_string(t + 1).c_str());
            PUT(d, DCM_NumberOfTemporalPositions, std::to_string(nt).c_str());
            PUT(d, DCM_AcquisitionDate, date_time(id.now, offset_s).substr(0, 8).c_str());
            PUT(d, DCM_AcquisitionTime, date_time(id.now, offset_s).substr(8).c_str());
            if (o->frame_s > 0)
                PUT(d, DCM_TemporalResolution, ds(1e3 * o->frame_s).c_str());
        }
        PUT(d, DCM_ScanningSequence, "RM");
        PUT(d, DCM_SequenceVariant, "NONE");
        PUT(d, DCM_ScanOptions, "");
        PUT(d, DCM_MRAcquisitionType, nz > 1 ? "3D" : "2D");
        PUT(d, DCM_RepetitionTime, "");
        PUT(d, DCM_EchoTime, "");
        PUT(d, DCM_EchoTrainLength, "");
        PUT(d, DCM_ImagePositionPatient, ds_list(&g.ipp[3 * static_cast<size_t>(k)], 3).c_str());
        PUT(d, DCM_ImageOrientationPatient, ds_list(g.iop, 6).c_str());
        PUT(d, DCM_PixelSpacing, ds_list(g.spacing, 2).c_str());
        PUT(d, DCM_SliceThickness, ds(g.step).c_str());
        PUT(d, DCM_SpacingBetweenSlices, ds(g.step).c_str());
        const double *p = &g.ipp[3 * static_cast<size_t>(k)];
        PUT(d, DCM_SliceLocation, ds(p[0] * g.normal[0] + p[1] * g.normal[1] + p[2] * g.normal[2]).c_str());
        PUT(d, DCM_Rows, std::to_string(ny).c_str());
        PUT(d, DCM_Columns, std::to_string(nx).c_str());
        PUT(d, DCM_RescaleIntercept, s.intercept.c_str());
        PUT(d, DCM_RescaleSlope, s.slope.c_str());
        PUT(d, DCM_RescaleType, o->part == LM_DICOM_PHASE ? "RAD" : "US");
        PUT(d, DCM_WindowCenter, s.center.c_str());
        PUT(d, DCM_WindowWidth, s.width.c_str());
        if (s.exact)
            PUT(d, DCM_VOILUTFunction, "LINEAR_EXACT");
        OFCondition c = d->putAndInsertUint16Array(DCM_PixelData,
                                                   reinterpret_cast<const Uint16 *>(&s.pix[plane * static_cast<size_t>(f)]),
                                                   static_cast<unsigned long>(plane));
        if (c.bad())
            return lm_fail(err, LM_ERR_INTERNAL, "%s: dcmtk refused the pixel data: %s", where, c.text());
        char name[64];
        std::snprintf(name, sizeof name, "MR%05lld.dcm", static_cast<long long>(f + 1));
        const std::string path = std::string(tmp) + "/" + name;
        c = ff.saveFile(path.c_str(), EXS_LittleEndianExplicit);
        if (c.bad())
            return lm_fail(err, LM_ERR_IO, "%s: cannot write %s: %s", where, name, c.text());
        (*files)++;
    }
    return LM_OK;
}

// One Enhanced MR Image: shared functional groups hold what every frame
// has in common, per-frame ones the position and frame content.
lm_code write_enhanced(const char *tmp, const char *where, const lm_volume *v, const lm_dicom_write_opts *o,
                       const identity &id, const std::string &series_uid, const scaled &s, const plane_geom &g,
                       int *files, lm_error *err)
{
    const int64_t nx = v->dims[0], ny = v->dims[1], nz = v->dims[2], nt = frames_of(o);
    DcmFileFormat ff;
    DcmDataset *d = ff.getDataset();
    lm_code rc = put_common(d, id, o, series_uid, where, err);
    if (rc)
        return rc;
    const std::string &tnow = id.now_time, &dnow = id.now_date;
    const char *pixel_type = o->part == LM_DICOM_PHASE ? "PHASE" : o->part == LM_DICOM_REAL ? "REAL"
                             : o->part == LM_DICOM_IMAG ? "IMAGINARY" : "MAGNITUDE";
    PUT(d, DCM_SOPClassUID, UID_EnhancedMRImageStorage);
    PUT(d, DCM_SOPInstanceUID, new_uid().c_str());
    // Enhanced MR allows only PRIMARY as value 2 (the classic image says SECONDARY).
    PUT(d, DCM_ImageType, "DERIVED\\PRIMARY\\OTHER\\NONE");
    PUT(d, DCM_DeviceSerialNumber, "0");
    PUT(d, DCM_ApplicableSafetyStandardAgency, "IEC");
    if (!d->tagExists(DCM_AcquisitionContextSequence))
        d->insertEmptyElement(DCM_AcquisitionContextSequence);
    PUT(d, DCM_PixelPresentation, "MONOCHROME");
    PUT(d, DCM_VolumetricProperties, "VOLUME");
    PUT(d, DCM_VolumeBasedCalculationTechnique, "NONE");
    PUT(d, DCM_ComplexImageComponent, pixel_type);
    PUT(d, DCM_AcquisitionContrast, "UNKNOWN");
    PUT(d, DCM_ContentQualification, "RESEARCH");
    PUT(d, DCM_InstanceNumber, "1");
    PUT(d, DCM_AcquisitionDateTime, (dnow + tnow).c_str());
    PUT(d, DCM_NumberOfFrames, std::to_string(nz * nt).c_str());
    PUT(d, DCM_Rows, std::to_string(ny).c_str());
    PUT(d, DCM_Columns, std::to_string(nx).c_str());
    PUT(d, DCM_LossyImageCompression, "00");
    PUT(d, DCM_ImageComments, "");
    PUT(d, DCM_PresentationLUTShape, "IDENTITY");
    // The MR Pulse Sequence module belongs to ORIGINAL images only.
    PUT(d, DCM_KSpaceFiltering, "NONE");
    PUT(d, DCM_MagneticFieldStrength,
        ds(o->prov && o->prov->field_strength_t > 0 ? o->prov->field_strength_t : 0).c_str());
    // Multi-frame Dimension: (a dynamic series) the temporal position, then
    // the in-stack position, both in the Frame Content of each frame; the
    // first dimension varies slowest, as the frames are stored (readers such
    // as dcm2niix order frames by the index values in this order).
    const std::string dim_uid = new_uid();
    DcmItem *org = add_item(d, DCM_DimensionOrganizationSequence);
    if (!org)
        return lm_fail(err, LM_ERR_NOMEM, "%s: dcmtk cannot make a sequence", where);
    PUT(org, DCM_DimensionOrganizationUID, dim_uid.c_str());
    const struct {
        DcmTagKey index;
        const char *label;
    } dims[2] = {{DCM_TemporalPositionIndex, "Temporal Position"}, {DCM_InStackPositionNumber, "In-Stack Position"}};
    for (int k = nt > 1 ? 0 : 1; k < 2; k++) {
        DcmItem *dim = add_item(d, DCM_DimensionIndexSequence);
        if (!dim)
            return lm_fail(err, LM_ERR_NOMEM, "%s: dcmtk cannot make a sequence", where);
        PUT(dim, DCM_DimensionOrganizationUID, dim_uid.c_str());
        OFCondition c = dim->putAndInsertTagKey(DCM_DimensionIndexPointer, dims[k].index);
        OFCondition c2 = dim->putAndInsertTagKey(DCM_FunctionalGroupPointer, DCM_FrameContentSequence);
        if (c.bad() || c2.bad())
            return lm_fail(err, LM_ERR_INTERNAL, "%s: dcmtk refused the dimension index", where);
        PUT(dim, DCM_DimensionDescriptionLabel, dims[k].label);
    }
    // Shared functional groups.
    DcmItem *sh = add_item(d, DCM_SharedFunctionalGroupsSequence);
    if (!sh)
        return lm_fail(err, LM_ERR_NOMEM, "%s: dcmtk cannot make a sequence", where);
    DcmItem *it;
    if (!(it = add_item(sh, DCM_PixelMeasuresSequence)))
        return lm_fail(err, LM_ERR_NOMEM, "%s: dcmtk cannot make a sequence", where);
    PUT(it, DCM_PixelSpacing, ds_list(g.spacing, 2).c_str());
    PUT(it, DCM_SliceThickness, ds(g.step).c_str());
    PUT(it, DCM_SpacingBetweenSlices, ds(g.step).c_str());
    if (!(it = add_item(sh, DCM_PlaneOrientationSequence)))
        return lm_fail(err, LM_ERR_NOMEM, "%s: dcmtk cannot make a sequence", where);
    PUT(it, DCM_ImageOrientationPatient, ds_list(g.iop, 6).c_str());
    if (!(it = add_item(sh, DCM_PixelValueTransformationSequence)))
        return lm_fail(err, LM_ERR_NOMEM, "%s: dcmtk cannot make a sequence", where);
    PUT(it, DCM_RescaleIntercept, s.intercept.c_str());
    PUT(it, DCM_RescaleSlope, s.slope.c_str());
    PUT(it, DCM_RescaleType, o->part == LM_DICOM_PHASE ? "RAD" : "US");
    if (!(it = add_item(sh, DCM_FrameVOILUTSequence)))
        return lm_fail(err, LM_ERR_NOMEM, "%s: dcmtk cannot make a sequence", where);
    PUT(it, DCM_WindowCenter, s.center.c_str());
    PUT(it, DCM_WindowWidth, s.width.c_str());
    if (s.exact)
        PUT(it, DCM_VOILUTFunction, "LINEAR_EXACT");
    if (!(it = add_item(sh, DCM_MRImageFrameTypeSequence)))
        return lm_fail(err, LM_ERR_NOMEM, "%s: dcmtk cannot make a sequence", where);
    PUT(it, DCM_FrameType, "DERIVED\\PRIMARY\\OTHER\\NONE");
    PUT(it, DCM_PixelPresentation, "MONOCHROME");
    PUT(it, DCM_VolumetricProperties, "VOLUME");
    PUT(it, DCM_VolumeBasedCalculationTechnique, "NONE");
    PUT(it, DCM_ComplexImageComponent, pixel_type);
    PUT(it, DCM_AcquisitionContrast, "UNKNOWN");
    // Frame Anatomy: Larmor does not know the body part; "whole body" and
    // laterality unknown are the honest codes.
    if (!(it = add_item(sh, DCM_FrameAnatomySequence)))
        return lm_fail(err, LM_ERR_NOMEM, "%s: dcmtk cannot make a sequence", where);
    PUT(it, DCM_FrameLaterality, "U");
    DcmItem *code = add_item(it, DCM_AnatomicRegionSequence);
    if (!code)
        return lm_fail(err, LM_ERR_NOMEM, "%s: dcmtk cannot make a sequence", where);
    PUT(code, DCM_CodeValue, "38266002");
    PUT(code, DCM_CodingSchemeDesignator, "SCT");
    PUT(code, DCM_CodeMeaning, "Entire body");
    // Per-frame functional groups: position and frame content, frame by
    // frame (time slowest), each frame's times offset by its start.
    for (int64_t f = 0; f < nz * nt; f++) {
        const int64_t k = f % nz, t = f / nz;
        const double start_s = static_cast<double>(t) * o->frame_s;
        DcmItem *pf = add_item(d, DCM_PerFrameFunctionalGroupsSequence);
        if (!pf || !(it = add_item(pf, DCM_PlanePositionSequence)))
            return lm_fail(err, LM_ERR_NOMEM, "%s: dcmtk cannot make a sequence", where);
        PUT(it, DCM_ImagePositionPatient, ds_list(&g.ipp[3 * static_cast<size_t>(k)], 3).c_str());
        if (!(it = add_item(pf, DCM_FrameContentSequence)))
            return lm_fail(err, LM_ERR_NOMEM, "%s: dcmtk cannot make a sequence", where);
        PUT(it, DCM_StackID, "1");
        PUT(it, DCM_InStackPositionNumber, std::to_string(k + 1).c_str());
        if (nt > 1) {
            PUT(it, DCM_TemporalPositionIndex, std::to_string(t + 1).c_str());
            PUT(it, DCM_DimensionIndexValues, (std::to_string(t + 1) + "\\" + std::to_string(k + 1)).c_str());
            PUT(it, DCM_FrameAcquisitionDateTime, date_time(id.now, start_s).c_str());
            PUT(it, DCM_FrameReferenceDateTime, date_time(id.now, start_s + 0.5 * o->frame_s).c_str());
            PUT(it, DCM_FrameAcquisitionDuration, ds(1e3 * o->frame_s).c_str());
        } else {
            PUT(it, DCM_DimensionIndexValues, std::to_string(k + 1).c_str());
            PUT(it, DCM_FrameAcquisitionDateTime, (dnow + tnow).c_str());
            PUT(it, DCM_FrameReferenceDateTime, (dnow + tnow).c_str());
            PUT(it, DCM_FrameAcquisitionDuration, "0");
        }
    }
    OFCondition c = d->putAndInsertUint16Array(DCM_PixelData, reinterpret_cast<const Uint16 *>(s.pix.data()),
                                               static_cast<unsigned long>(s.pix.size()));
    if (c.bad())
        return lm_fail(err, LM_ERR_INTERNAL, "%s: dcmtk refused the pixel data: %s", where, c.text());
    const std::string path = std::string(tmp) + "/MR_ENHANCED.dcm";
    c = ff.saveFile(path.c_str(), EXS_LittleEndianExplicit);
    if (c.bad())
        return lm_fail(err, LM_ERR_IO, "%s: cannot write MR_ENHANCED.dcm: %s", where, c.text());
    (*files)++;
    return LM_OK;
}

void remove_tree(const char *dir)
{
    if (DIR *dp = opendir(dir)) {
        while (struct dirent *e = readdir(dp)) {
            if (!std::strcmp(e->d_name, ".") || !std::strcmp(e->d_name, ".."))
                continue;
            const std::string p = std::string(dir) + "/" + e->d_name;
            struct stat st;
            if (lstat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
                remove_tree(p.c_str()); // a set's series folders
            else
                unlink(p.c_str());
        }
        closedir(dp);
    }
    rmdir(dir);
}

// ---- Reading ----

struct frame_src {
    std::shared_ptr<DcmFileFormat> ff;
    std::string file;
    int frame;
    double slope, intercept;
};

// Looks for tag in the per-frame item, then the shared one, inside the
// functional group macro seq.
DcmItem *group_item(DcmItem *per, DcmItem *shared, const DcmTagKey &seq)
{
    DcmItem *it = nullptr;
    if (per && per->findAndGetSequenceItem(seq, it, 0).good() && it)
        return it;
    if (shared && shared->findAndGetSequenceItem(seq, it, 0).good() && it)
        return it;
    return nullptr;
}

bool get_doubles(DcmItem *it, const DcmTagKey &tag, double *v, int n)
{
    if (!it)
        return false;
    for (int i = 0; i < n; i++) {
        Float64 x;
        if (it->findAndGetFloat64(tag, x, static_cast<unsigned long>(i)).bad())
            return false;
        v[i] = x;
    }
    return true;
}

// The records of one file: one per frame.
lm_code file_records(const std::string &file, const char *where, std::vector<lm_dicom_rec> *recs,
                     std::vector<frame_src> *srcs, bool header_only, lm_error *err)
{
    const char *fname = file.c_str();
    if (!lm_dicom_has_preamble(fname))
        return lm_fail(err, LM_ERR_FORMAT, "%s: not a DICOM file (no DICM preamble)", fname);
    auto ff = std::make_shared<DcmFileFormat>();
    OFCondition c = header_only ? ff->loadFileUntilTag(fname, EXS_Unknown, EGL_noChange, DCM_MaxReadLength,
                                                       ERM_fileOnly, DCM_PixelData)
                                : ff->loadFile(fname, EXS_Unknown, EGL_noChange, DCM_MaxReadLength, ERM_fileOnly);
    if (c.bad())
        return lm_fail(err, LM_ERR_FORMAT, "%s: unreadable DICOM (truncated or damaged): %s", fname, c.text());
    DcmDataset *d = ff->getDataset();
    OFString sop, series;
    d->findAndGetOFString(DCM_SOPClassUID, sop);
    if (!header_only && !d->tagExists(DCM_PixelData))
        return lm_fail(err, LM_ERR_FORMAT, "%s: a DICOM file without an image (SOP class %s)", fname,
                       sop.empty() ? "absent" : sop.c_str());
    d->findAndGetOFString(DCM_SeriesInstanceUID, series);
    Uint16 rows = 0, cols = 0;
    d->findAndGetUint16(DCM_Rows, rows);
    d->findAndGetUint16(DCM_Columns, cols);
    Sint32 frames = 1;
    if (d->findAndGetSint32(DCM_NumberOfFrames, frames).bad() || frames < 1)
        frames = 1;
    DcmItem *shared = nullptr;
    d->findAndGetSequenceItem(DCM_SharedFunctionalGroupsSequence, shared, 0);
    const bool functional = shared || d->tagExists(DCM_PerFrameFunctionalGroupsSequence);
    if (frames > 1 && !functional)
        return lm_fail(err, LM_ERR_UNSUPPORTED, "%s: %d frames without per-frame functional groups (no frame "
                       "positions)", fname, static_cast<int>(frames));
    for (int f = 0; f < frames; f++) {
        lm_dicom_rec r;
        std::memset(&r, 0, sizeof r);
        std::snprintf(r.series_uid, sizeof r.series_uid, "%s", series.c_str());
        r.frame = frames > 1 || functional ? f : -1;
        r.rows = rows;
        r.cols = cols;
        DcmItem *per = nullptr, *src = d;
        double slope = 1, icpt = 0;
        if (functional) {
            d->findAndGetSequenceItem(DCM_PerFrameFunctionalGroupsSequence, per, f);
            r.has_ipp = get_doubles(group_item(per, shared, DCM_PlanePositionSequence), DCM_ImagePositionPatient,
                                    r.ipp, 3);
            r.has_iop = get_doubles(group_item(per, shared, DCM_PlaneOrientationSequence),
                                    DCM_ImageOrientationPatient, r.iop, 6);
            src = group_item(per, shared, DCM_PixelMeasuresSequence);
            r.has_spacing = get_doubles(src, DCM_PixelSpacing, r.spacing, 2);
            DcmItem *pv = group_item(per, shared, DCM_PixelValueTransformationSequence);
            if (pv) {
                get_doubles(pv, DCM_RescaleSlope, &slope, 1);
                get_doubles(pv, DCM_RescaleIntercept, &icpt, 1);
            }
        } else {
            r.has_ipp = get_doubles(d, DCM_ImagePositionPatient, r.ipp, 3);
            r.has_iop = get_doubles(d, DCM_ImageOrientationPatient, r.iop, 6);
            r.has_spacing = get_doubles(d, DCM_PixelSpacing, r.spacing, 2);
            get_doubles(d, DCM_RescaleSlope, &slope, 1);
            get_doubles(d, DCM_RescaleIntercept, &icpt, 1);
        }
        double t = 0;
        if (get_doubles(src, DCM_SpacingBetweenSlices, &t, 1) && t > 0)
            r.thickness = t;
        else if (get_doubles(src, DCM_SliceThickness, &t, 1) && t > 0)
            r.thickness = t;
        if (!std::isfinite(slope) || !std::isfinite(icpt) || slope == 0)
            return lm_fail(err, LM_ERR_FORMAT, "%s: RescaleSlope %g, RescaleIntercept %g", fname, slope, icpt);
        recs->push_back(r);
        srcs->push_back(frame_src{ff, file, f, slope, icpt});
    }
    (void)where;
    return LM_OK;
}

// Every regular file of dir (names sorted, hidden files and a DICOMDIR left
// out), or path itself when it is a file.
lm_code list_files(const char *path, std::vector<std::string> *files, lm_error *err)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return lm_fail(err, LM_ERR_IO, "%s: %s", path, std::strerror(errno));
    if (!S_ISDIR(st.st_mode)) {
        files->push_back(path);
        return LM_OK;
    }
    DIR *dp = opendir(path);
    if (!dp)
        return lm_fail(err, LM_ERR_IO, "%s: cannot open the folder: %s", path, std::strerror(errno));
    while (struct dirent *e = readdir(dp)) {
        if (e->d_name[0] == '.' || !strcasecmp(e->d_name, "DICOMDIR"))
            continue;
        std::string f = std::string(path) + "/" + e->d_name;
        if (stat(f.c_str(), &st) == 0 && S_ISREG(st.st_mode))
            files->push_back(f);
    }
    closedir(dp);
    std::sort(files->begin(), files->end());
    if (files->empty())
        return lm_fail(err, LM_ERR_FORMAT, "%s: an empty folder (no DICOM series)", path);
    return LM_OK;
}

// The pixels of one frame as real values (rescale applied).
lm_code frame_pixels(const frame_src &s, int rows, int cols, lm_cfloat *dst, lm_error *err)
{
    const char *fname = s.file.c_str();
    DcmDataset *d = s.ff->getDataset();
    const E_TransferSyntax xfer = d->getOriginalXfer();
    DcmXfer x(xfer);
    if (d->chooseRepresentation(EXS_LittleEndianExplicit, nullptr).bad() ||
        !d->canWriteXfer(EXS_LittleEndianExplicit))
        return lm_fail(err, LM_ERR_UNSUPPORTED, "%s: transfer syntax %s (%s) cannot be decoded", fname,
                       x.getXferName(), x.getXferID());
    Uint16 spp = 1, bits = 0, stored = 0, rep = 0;
    d->findAndGetUint16(DCM_SamplesPerPixel, spp);
    d->findAndGetUint16(DCM_BitsAllocated, bits);
    d->findAndGetUint16(DCM_BitsStored, stored);
    d->findAndGetUint16(DCM_PixelRepresentation, rep);
    if (spp != 1)
        return lm_fail(err, LM_ERR_UNSUPPORTED, "%s: %u samples per pixel (a colour image; grey levels only)", fname,
                       spp);
    if (bits != 8 && bits != 16)
        return lm_fail(err, LM_ERR_UNSUPPORTED, "%s: %u bits allocated per pixel (8 or 16 read)", fname, bits);
    if (stored < 1 || stored > bits)
        stored = bits;
    const size_t plane = static_cast<size_t>(rows) * static_cast<size_t>(cols);
    const size_t need = plane * (static_cast<size_t>(s.frame) + 1) * (bits / 8);
    DcmElement *px = nullptr;
    if (d->findAndGetElement(DCM_PixelData, px).bad() || !px)
        return lm_fail(err, LM_ERR_FORMAT, "%s: no pixel data", fname);
    if (px->getLength() < need)
        return lm_fail(err, LM_ERR_FORMAT, "%s: pixel data of %lu bytes, %zu needed (truncated)", fname,
                       static_cast<unsigned long>(px->getLength()), need);
    const uint32_t mask = (1u << stored) - 1u;
    const size_t off = plane * static_cast<size_t>(s.frame);
    Uint8 *p8 = nullptr;
    Uint16 *p16 = nullptr;
    if (bits == 8 ? px->getUint8Array(p8).bad() || !p8 : px->getUint16Array(p16).bad() || !p16)
        return lm_fail(err, LM_ERR_FORMAT, "%s: unreadable %u-bit pixel data", fname, bits);
    for (size_t i = 0; i < plane; i++) {
        uint32_t raw = bits == 8 ? p8[off + i] : p16[off + i];
        raw &= mask;
        double val = raw;
        if (rep == 1 && (raw >> (stored - 1)) & 1u)
            val -= static_cast<double>(mask) + 1.0;
        __real__ dst[i] = static_cast<float>(val * s.slope + s.intercept);
        __imag__ dst[i] = 0.0f;
    }
    return LM_OK;
}

// The records of every file path names (header_only: up to the pixel
// data), and the indices of the series chosen (caller frees idx).
lm_code choose_series(const char *path, const char *series_uid, bool header_only, std::vector<lm_dicom_rec> *recs,
                      std::vector<frame_src> *srcs, int **idx, int *count, lm_error *err)
{
    dicom_setup();
    std::vector<std::string> files;
    lm_code rc = list_files(path, &files, err);
    if (rc)
        return rc;
    try {
        for (const std::string &f : files)
            if ((rc = file_records(f, path, recs, srcs, header_only, err)))
                return rc;
    } catch (const std::bad_alloc &) {
        return lm_fail(err, LM_ERR_NOMEM, "%s: out of memory reading the series", path);
    }
    for (size_t i = 0; i < recs->size(); i++)
        (*recs)[i].file = (*srcs)[i].file.c_str();
    return lm_dicom_series_choose(recs->data(), static_cast<int>(recs->size()), series_uid, path, idx, count, err);
}

lm_code read_template(const char *dir, const char *series_uid, identity *id, lm_error *err)
{
    std::vector<lm_dicom_rec> recs;
    std::vector<frame_src> srcs;
    int *idx = nullptr, count = 0;
    lm_code rc = choose_series(dir, series_uid, true, &recs, &srcs, &idx, &count, err);
    if (rc)
        return rc;
    DcmDataset *d = srcs[static_cast<size_t>(idx[0])].ff->getDataset();
    long series_max = 0;
    for (int k = 0; k < count; k++) {
        Sint32 sn = 0;
        if (srcs[static_cast<size_t>(idx[k])].ff->getDataset()->findAndGetSint32(DCM_SeriesNumber, sn).good())
            series_max = std::max(series_max, static_cast<long>(sn));
    }
    std::free(idx);
    auto get = [d](const DcmTagKey &t) {
        OFString s;
        d->findAndGetOFStringArray(t, s);
        return std::string(s.c_str());
    };
    id->patient_name = get(DCM_PatientName);
    id->patient_id = get(DCM_PatientID);
    id->birth_date = get(DCM_PatientBirthDate);
    id->sex = get(DCM_PatientSex);
    id->study_uid = get(DCM_StudyInstanceUID);
    id->study_date = get(DCM_StudyDate);
    id->study_time = get(DCM_StudyTime);
    id->study_id = get(DCM_StudyID);
    id->accession = get(DCM_AccessionNumber);
    id->study_description = get(DCM_StudyDescription);
    id->referring = get(DCM_ReferringPhysicianName);
    id->frame_uid = get(DCM_FrameOfReferenceUID);
    id->patient_position = get(DCM_PatientPosition);
    id->series_number = series_max + 1;
    if (!valid_uid(id->study_uid.c_str()))
        return lm_fail(err, LM_ERR_FORMAT, "%s: the template series has no valid StudyInstanceUID", dir);
    if (!valid_uid(id->frame_uid.c_str()))
        id->frame_uid = new_uid();
    return LM_OK;
}

// One series into the folder tmp (made): geometry, pixels, then the files.
lm_code write_one(const char *tmp, const char *where, lm_dicom_set_item *it, lm_dicom_write_opts *o,
                  const identity &id, int *files, lm_error *err)
{
    const lm_volume *v = it->v;
    if (!v || !v->data)
        return lm_fail(err, LM_ERR_INVALID, "%s: empty volume", where);
    if (v->dims[0] > 65535 || v->dims[1] > 65535 || v->dims[2] * frames_of(o) > 99999 || v->dims[0] < 1 ||
        v->dims[1] < 1 || v->dims[2] < 1 || o->frames < 0)
        return lm_fail(err, LM_ERR_INVALID, "%s: volume %lldx%lldx%lld x %lld frames does not fit DICOM", where,
                       static_cast<long long>(v->dims[0]), static_cast<long long>(v->dims[1]),
                       static_cast<long long>(v->dims[2]), static_cast<long long>(frames_of(o)));
    if (!(o->frame_s >= 0) || !std::isfinite(o->frame_s))
        return lm_fail(err, LM_ERR_INVALID, "%s: frame duration %g s", where, o->frame_s);
    plane_geom g;
    lm_code rc = plane_geometry(v, where, &g, err);
    if (rc)
        return rc;
    // This series' description and window over the options' (the set shares the rest).
    lm_dicom_write_opts mine = *o;
    mine.series_description = it->series_description;
    mine.window[0] = it->window[0];
    mine.window[1] = it->window[1];
    scaled s;
    if ((rc = scale_pixels(v, &mine, where, &s, err)))
        return rc;
    const std::string series_uid = new_uid();
    std::snprintf(it->series_uid, sizeof it->series_uid, "%s", series_uid.c_str());
    return mine.enhanced ? write_enhanced(tmp, where, v, &mine, id, series_uid, s, g, files, err)
                         : write_classic(tmp, where, v, &mine, id, series_uid, s, g, files, err);
}

// n series of one identity (patient, study, frame of reference; series
// numbers one after another) into dir itself (a single series) or into a
// sub-folder each (as_set), all written into a temporary sibling of dir that
// is renamed onto it when complete.
lm_code write_set(const char *dir, lm_dicom_set_item *items, int n, bool as_set, lm_dicom_write_opts *o,
                  lm_error *err)
{
    dicom_setup();
    lm_code rc = lm_dicom_check_out_dir(dir, err);
    if (rc)
        return rc;
    identity id;
    if ((rc = make_identity(o, &id, err)))
        return rc;
    id.now = std::time(nullptr);
    id.now_date = now_date(id.now, &id.now_time);
    std::snprintf(o->note, sizeof o->note, "%s", id.note.c_str());
    std::string d(dir);
    while (d.size() > 1 && d.back() == '/')
        d.pop_back();
    std::string tmpl = d + ".tmp-XXXXXX";
    std::vector<char> tmp(tmpl.begin(), tmpl.end());
    tmp.push_back('\0');
    if (!mkdtemp(tmp.data()))
        return lm_fail(err, LM_ERR_IO, "%s: cannot make a temporary folder beside it: %s", dir,
                       std::strerror(errno));
    o->files = 0;
    const long first_number = id.series_number;
    for (int i = 0; i < n && rc == LM_OK; i++) {
        id.series_number = first_number + i;
        std::string sub = tmp.data(), where = dir;
        if (as_set) {
            sub += std::string("/") + items[i].name;
            where += std::string("/") + items[i].name;
            if (mkdir(sub.c_str(), 0777) != 0) {
                rc = lm_fail(err, LM_ERR_IO, "%s: cannot make a folder: %s", where.c_str(), std::strerror(errno));
                break;
            }
        }
        rc = write_one(sub.c_str(), where.c_str(), &items[i], o, id, &o->files, err);
    }
    if (rc == LM_OK && rename(tmp.data(), d.c_str()) != 0)
        rc = lm_fail(err, LM_ERR_IO, "%s: cannot rename the finished series into place: %s", dir,
                     std::strerror(errno));
    if (rc)
        remove_tree(tmp.data());
    return rc;
}

} // namespace

extern "C" {

lm_code lm_dicom_write_series(const char *dir, const lm_volume *v, lm_dicom_write_opts *o, lm_error *err)
{
    lm_dicom_set_item one;
    std::memset(&one, 0, sizeof one);
    one.v = v;
    one.series_description = o->series_description;
    one.window[0] = o->window[0];
    one.window[1] = o->window[1];
    lm_code rc = write_set(dir, &one, 1, false, o, err);
    if (rc == LM_OK)
        std::snprintf(o->series_uid, sizeof o->series_uid, "%s", one.series_uid);
    return rc;
}

lm_code lm_dicom_write_set(const char *parent, lm_dicom_set_item *items, int n, lm_dicom_write_opts *o,
                           lm_error *err)
{
    if (n < 1 || !items)
        return lm_fail(err, LM_ERR_INVALID, "%s: no image to write", parent ? parent : "");
    for (int i = 0; i < n; i++) {
        const char *nm = items[i].name;
        bool ok = nm && *nm && std::strcmp(nm, ".") && std::strcmp(nm, "..") && nm[0] != '.';
        for (const char *c = nm; ok && *c; c++)
            ok = std::isalnum(static_cast<unsigned char>(*c)) || std::strchr("-_.+=", *c);
        if (!ok)
            return lm_fail(err, LM_ERR_INVALID, "%s: series %d: '%s' is not a folder name (letters, digits, "
                           "- _ . + =)", parent, i + 1, nm ? nm : "");
        for (int j = 0; j < i; j++)
            if (!std::strcmp(items[j].name, nm))
                return lm_fail(err, LM_ERR_INVALID, "%s: two series named '%s'", parent, nm);
    }
    return write_set(parent, items, n, true, o, err);
}

lm_code lm_dicom_read(const char *path, const char *series_uid, lm_volume **out, lm_error *err)
{
    *out = nullptr;
    std::vector<lm_dicom_rec> recs;
    std::vector<frame_src> srcs;
    int *idx = nullptr, count = 0;
    lm_code rc = choose_series(path, series_uid, false, &recs, &srcs, &idx, &count, err);
    if (rc)
        return rc;
    double aff[4][4], vox[3];
    rc = lm_dicom_series_geometry(recs.data(), idx, count, path, aff, vox, err);
    if (rc) {
        std::free(idx);
        return rc;
    }
    const lm_dicom_rec &r0 = recs[static_cast<size_t>(idx[0])];
    const int64_t dims[3] = {r0.cols, r0.rows, count};
    lm_volume *v = lm_volume_new(dims, vox, err);
    if (!v) {
        std::free(idx);
        return err ? err->code : LM_ERR_NOMEM;
    }
    std::memcpy(v->affine, aff, sizeof aff);
    const size_t plane = static_cast<size_t>(r0.cols) * static_cast<size_t>(r0.rows);
    for (int k = 0; k < count && rc == LM_OK; k++)
        rc = frame_pixels(srcs[static_cast<size_t>(idx[k])], r0.rows, r0.cols, v->data + plane * static_cast<size_t>(k),
                          err);
    std::free(idx);
    if (rc == LM_OK)
        rc = lm_check_finite_complex(path, v->data, static_cast<size_t>(lm_volume_count(v)), err);
    if (rc) {
        lm_volume_free(v);
        return rc;
    }
    *out = v;
    return LM_OK;
}

} // extern "C"
