/* The nucleus an MRD header says was imaged, as DICOM names it
 * (ImagedNucleus / ResonantNucleus). ISMRMRD's schema has no nucleus
 * element: a userParameterString may name it, and converters that write
 * the system frequency into H1resonanceFrequency_Hz reveal an X-nucleus
 * through f / B0 = gamma / 2 pi. A proton ratio is no evidence (the
 * element is the proton frequency by definition), so it names nothing. */
#include "lm_io_ismrmrd.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* DICOM's defined terms for the nucleus, with |gamma| / 2 pi in MHz/T
 * (CODATA / IUPAC nuclear magnetic moments). */
static const struct {
    const char *term;
    const char *element; /* upper case */
    int mass;
    double mhz_per_t;
} nuclei[] = {
    {"1H", "H", 1, 42.577478},    {"3HE", "HE", 3, 32.434100}, {"7LI", "LI", 7, 16.5471},
    {"13C", "C", 13, 10.708395},  {"19F", "F", 19, 40.078},    {"23NA", "NA", 23, 11.262},
    {"31P", "P", 31, 17.235},     {"129XE", "XE", 129, 11.777},
};
#define N_NUCLEI (sizeof nuclei / sizeof nuclei[0])
/* f / B0 must match one nucleus this closely: the nearest two (23Na and
 * 129Xe) differ by 4.6 %, a nominal field (3 T for 2.89 T) by 4 %. */
#define NUCLEUS_RATIO_TOL 0.01

const char *lm_nucleus_term(const char *text)
{
    if (!text)
        return NULL;
    char letters[8] = "";
    int mass = 0, nl = 0, nd = 0;
    for (const char *p = text; *p; p++) {
        unsigned char ch = (unsigned char)*p;
        if (isdigit(ch) && nd < 4) {
            mass = mass * 10 + (ch - '0');
            nd++;
        } else if (isalpha(ch) && nl < 7) {
            letters[nl++] = (char)toupper(ch);
            letters[nl] = '\0';
        } else if (!isspace(ch) && ch != '-') {
            return NULL;
        }
    }
    for (size_t i = 0; i < N_NUCLEI; i++)
        if (!strcmp(letters, nuclei[i].element) && (mass == nuclei[i].mass || (nd == 0 && nuclei[i].mass == 1)))
            return nuclei[i].term;
    return NULL;
}

const char *lm_nucleus_from_frequency(double hz, double tesla)
{
    if (!(hz > 0) || !(tesla > 0) || !isfinite(hz / tesla))
        return NULL;
    const double ratio = hz * 1e-6 / tesla;
    for (size_t i = 0; i < N_NUCLEI; i++)
        if (fabs(ratio - nuclei[i].mhz_per_t) <= NUCLEUS_RATIO_TOL * nuclei[i].mhz_per_t)
            return nuclei[i].mass == 1 ? NULL : nuclei[i].term;
    return NULL;
}

int lm_nucleus_parameter_name(const char *name)
{
    static const char *const names[] = {"ImagedNucleus", "ResonantNucleus", "Nucleus", "tNucleus"};
    for (size_t i = 0; name && i < sizeof names / sizeof names[0]; i++)
        if (!strcasecmp(name, names[i]))
            return 1;
    return 0;
}

void lm_mrd_nucleus(lm_mrd_provenance *pv)
{
    if (pv->nucleus[0])
        return; /* named by the header */
    const char *t = lm_nucleus_from_frequency((double)pv->h1_frequency_hz, pv->field_strength_t);
    snprintf(pv->nucleus, sizeof pv->nucleus, "%s", t ? t : "");
}
