/* Provenance, reconSpace and parallel imaging in the MRD header: a header
 * with every field Larmor reads parses to the right values; text too long
 * for its field is cut at a UTF-8 character boundary (safe truncation, no
 * error) and a number that is not one is refused with one line; the header
 * Larmor makes validates against the MRD schema
 * (/usr/share/ismrmrd/schema/ismrmrd.xsd, where installed) and escapes
 * caller text; lm_mrd_write_dataset -> lm_mrd_read_opts keeps it all. */
#include <string.h>

#include <libxml/parser.h>
#include <libxml/xmlschemas.h>

#include "lm_config.h"
#include "lm_io_ismrmrd.h"
#include "lm_mrd_private.h"
#include "lm_test.h"
#include "mrd_test_util.h"

#define SPACE(tag, nx, fx) "<" tag "><matrixSize><x>" #nx "</x><y>32</y><z>1</z></matrixSize>" \
    "<fieldOfView_mm><x>" #fx "</x><y>200</y><z>5</z></fieldOfView_mm></" tag ">"

static const char *full =
    "<?xml version=\"1.0\"?><ismrmrdHeader xmlns=\"http://www.ismrm.org/ISMRMRD\"><version>2</version>"
    "<subjectInformation><patientName>Doe^Jane &amp; Co</patientName><patientWeight_kg>70</patientWeight_kg>"
    "<patientID>PID-0042</patientID><patientBirthdate>1970-01-31</patientBirthdate>"
    "<patientGender>F</patientGender></subjectInformation>"
    "<studyInformation><studyDate>2026-11-28</studyDate><studyTime>10:49:03</studyTime><studyID>S17</studyID>"
    "<accessionNumber>123456</accessionNumber><studyDescription>Brain <![CDATA[MRI]]></studyDescription>"
    "<studyInstanceUID>1.2.826.0.1.3680043.8.498.1</studyInstanceUID></studyInformation>"
    "<measurementInformation><measurementID>M_1</measurementID><patientPosition>HFS</patientPosition>"
    "<relativeTablePosition><x>1.5</x><y>-2</y><z>30</z></relativeTablePosition>"
    "<protocolName>t1_se</protocolName><seriesDescription>T1 axial</seriesDescription>"
    "<frameOfReferenceUID>1.2.826.0.1.3680043.8.498.2</frameOfReferenceUID></measurementInformation>"
    "<acquisitionSystemInformation><systemVendor>ACME</systemVendor><systemModel>Magnet 3</systemModel>"
    "<systemFieldStrength_T>2.89</systemFieldStrength_T><receiverChannels>4</receiverChannels>"
    "</acquisitionSystemInformation>"
    "<experimentalConditions><H1resonanceFrequency_Hz>123200000</H1resonanceFrequency_Hz></experimentalConditions>"
    "<encoding>" SPACE("encodedSpace", 64, 400) SPACE("reconSpace", 32, 200)
    "<encodingLimits/><trajectory>cartesian</trajectory>"
    "<parallelImaging><accelerationFactor><kspace_encoding_step_1>2</kspace_encoding_step_1>"
    "<kspace_encoding_step_2>1</kspace_encoding_step_2></accelerationFactor>"
    "<calibrationMode>embedded</calibrationMode></parallelImaging></encoding></ismrmrdHeader>";

static void check_full(const lm_mrd_provenance *p, const lm_mrd_parallel *par)
{
    CHECK(strcmp(p->patient_name, "Doe^Jane & Co") == 0);
    CHECK(strcmp(p->patient_id, "PID-0042") == 0);
    CHECK(strcmp(p->patient_birthdate, "1970-01-31") == 0);
    CHECK(strcmp(p->patient_gender, "F") == 0);
    CHECK(strcmp(p->study_date, "2026-11-28") == 0 && strcmp(p->study_time, "10:49:03") == 0);
    CHECK(strcmp(p->study_id, "S17") == 0 && strcmp(p->accession_number, "123456") == 0);
    CHECK_MSG(strcmp(p->study_description, "Brain MRI") == 0, "'%s'", p->study_description);
    CHECK(strcmp(p->study_instance_uid, "1.2.826.0.1.3680043.8.498.1") == 0);
    CHECK(strcmp(p->measurement_id, "M_1") == 0 && strcmp(p->patient_position, "HFS") == 0);
    CHECK(p->has_table_position && p->relative_table_position[0] == 1.5 && p->relative_table_position[1] == -2 &&
          p->relative_table_position[2] == 30);
    CHECK(strcmp(p->protocol_name, "t1_se") == 0 && strcmp(p->series_description, "T1 axial") == 0);
    CHECK(strcmp(p->frame_of_reference_uid, "1.2.826.0.1.3680043.8.498.2") == 0);
    CHECK(strcmp(p->system_vendor, "ACME") == 0 && strcmp(p->system_model, "Magnet 3") == 0);
    CHECK(p->field_strength_t == 2.89);
    CHECK(p->h1_frequency_hz == 123200000);
    CHECK(par->accel[0] == 2 && par->accel[1] == 1 && strcmp(par->calibration_mode, "embedded") == 0);
}

/* Whether xml validates against the MRD schema; -1 when it is not installed. */
static int schema_valid(const char *xml)
{
    const char *xsd = "/usr/share/ismrmrd/schema/ismrmrd.xsd";
    if (access(xsd, R_OK) != 0)
        return -1;
    xmlSchemaParserCtxtPtr pc = xmlSchemaNewParserCtxt(xsd);
    xmlSchemaPtr schema = pc ? xmlSchemaParse(pc) : NULL;
    xmlSchemaValidCtxtPtr vc = schema ? xmlSchemaNewValidCtxt(schema) : NULL;
    xmlDocPtr doc = xmlReadMemory(xml, (int)strlen(xml), NULL, NULL, XML_PARSE_NONET);
    int ok = vc && doc && xmlSchemaValidateDoc(vc, doc) == 0;
    if (doc)
        xmlFreeDoc(doc);
    if (vc)
        xmlSchemaFreeValidCtxt(vc);
    if (schema)
        xmlSchemaFree(schema);
    if (pc)
        xmlSchemaFreeParserCtxt(pc);
    return ok;
}

int main(void)
{
    lm_mrd_header h;
    lm_error e;
    lm_error_clear(&e);
    char xml[4096], name[512] = "";
    CHECK_OK(lm_mrd_header_parse(full, strlen(full), "prov.h5", &h, &e), &e);
    check_full(&h.prov, &h.parallel);
    CHECK(h.recon_matrix[0] == 32 && h.recon_fov_mm[0] == 200 && h.matrix[0] == 64);
    /* The proton frequency names no nucleus (it is the proton's by definition). */
    CHECK_MSG(h.prov.nucleus[0] == '\0', "'%s'", h.prov.nucleus);

    /* The nucleus: named by a userParameterString, or an X-nucleus from
     * f / B0 (sodium at 2.89 T: 11.262 MHz/T x 2.89 T = 32.547 MHz). */
    static const struct {
        const char *params, *field, *hz, *want;
    } nuc[] = {
        {"<userParameterString><name>ImagedNucleus</name><value>23Na</value></userParameterString>", "", "1", "23NA"},
        {"<userParameterString><name>tNucleus</name><value>1H</value></userParameterString>", "2.89", "32547000",
         "1H"}, /* named beats the ratio */
        {"<userParameterString><name>other</name><value>23Na</value></userParameterString>", "", "1", ""},
        {"<userParameterString><name>Nucleus</name><value>unobtainium</value></userParameterString>", "", "1", ""},
        {"", "2.89", "32547000", "23NA"},
        {"", "2.89", "49810000", "31P"},
        {"", "2.89", "123200000", ""}, /* the proton */
        {"", "3", "32547000", ""},    /* a nominal field: 3.5 % off sodium, no guess */
        {"", "", "32547000", ""},     /* no field strength */
    };
    for (size_t i = 0; i < sizeof nuc / sizeof nuc[0]; i++) {
        snprintf(xml, sizeof xml, "<ismrmrdHeader>%s%s%s<experimentalConditions><H1resonanceFrequency_Hz>%s"
                 "</H1resonanceFrequency_Hz></experimentalConditions><encoding>" SPACE("encodedSpace", 64, 400)
                 "</encoding><userParameters>%s</userParameters></ismrmrdHeader>",
                 nuc[i].field[0] ? "<acquisitionSystemInformation><systemFieldStrength_T>" : "", nuc[i].field,
                 nuc[i].field[0] ? "</systemFieldStrength_T></acquisitionSystemInformation>" : "", nuc[i].hz,
                 nuc[i].params);
        CHECK_OK(lm_mrd_header_parse(xml, strlen(xml), "prov.h5", &h, &e), &e);
        CHECK_MSG(strcmp(h.prov.nucleus, nuc[i].want) == 0, "case %zu: '%s', want '%s'", i, h.prov.nucleus,
                  nuc[i].want);
    }
    CHECK(lm_nucleus_term("Na23") && strcmp(lm_nucleus_term("Na23"), "23NA") == 0);
    CHECK(lm_nucleus_term("129Xe") && strcmp(lm_nucleus_term("129Xe"), "129XE") == 0);
    CHECK(lm_nucleus_term("H") && strcmp(lm_nucleus_term("H"), "1H") == 0);
    CHECK(!lm_nucleus_term("2H") && !lm_nucleus_term("23Na;") && !lm_nucleus_term(""));

    /* Too long: cut at a character boundary ("é" is 2 bytes: 200 of them
     * in a 128-byte field keep 63 whole ones). */
    for (int i = 0; i < 200; i++)
        strcat(name, "\xc3\xa9");
    snprintf(xml, sizeof xml, "<ismrmrdHeader><subjectInformation><patientName>%s</patientName></subjectInformation>"
             "<experimentalConditions><H1resonanceFrequency_Hz>1</H1resonanceFrequency_Hz></experimentalConditions>"
             "<encoding>" SPACE("encodedSpace", 64, 400) "</encoding></ismrmrdHeader>", name);
    CHECK_OK(lm_mrd_header_parse(xml, strlen(xml), "prov.h5", &h, &e), &e);
    CHECK_MSG(strlen(h.prov.patient_name) == 126 && memcmp(h.prov.patient_name, name, 126) == 0, "%zu bytes",
              strlen(h.prov.patient_name));
    /* A field strength that is not a number: one line naming the file and the field. */
    snprintf(xml, sizeof xml, "<ismrmrdHeader><acquisitionSystemInformation><systemFieldStrength_T>3T"
             "</systemFieldStrength_T></acquisitionSystemInformation><encoding>" SPACE("encodedSpace", 64, 400)
             "</encoding></ismrmrdHeader>");
    CHECK(lm_mrd_header_parse(xml, strlen(xml), "prov.h5", &h, &e) == LM_ERR_FORMAT);
    CHECK(lm_msg_ok("field strength 3T", &e, "prov.h5", "systemFieldStrength_T '3T' is not a finite number"));
    snprintf(xml, sizeof xml, "<ismrmrdHeader><experimentalConditions><H1resonanceFrequency_Hz>high"
             "</H1resonanceFrequency_Hz></experimentalConditions><encoding>" SPACE("encodedSpace", 64, 400)
             "</encoding></ismrmrdHeader>");
    CHECK(lm_mrd_header_parse(xml, strlen(xml), "prov.h5", &h, &e) == LM_ERR_FORMAT);
    CHECK(lm_msg_ok("H1 frequency", &e, "prov.h5", "not an integer"));

    /* The header Larmor makes: schema-valid, caller text escaped, read back. */
    CHECK_OK(lm_mrd_header_parse(full, strlen(full), "prov.h5", &h, &e), &e);
    lm_geom g, r;
    lm_geom_init(&g, 64, 32, 1, 400);
    g.fov_mm[1] = 200;
    g.fov_mm[2] = 5;
    lm_geom_init(&r, 32, 32, 1, 200);
    r.fov_mm[2] = 5;
    strcpy(h.prov.series_description, "a <b> & \"c\"");
    char *made = lm_mrd_header_make(&g, &r, 4, 32, 64, "cartesian", 1, 0, 0, &h.prov, &h.parallel);
    CHECK(made != NULL);
    if (made) {
        int v = schema_valid(made);
        if (v < 0)
            fprintf(stderr, "MRD schema not installed: validation skipped\n");
        else
            CHECK_MSG(v == 1, "Larmor's header does not validate against the MRD schema:\n%s", made);
        lm_mrd_header back;
        CHECK_OK(lm_mrd_header_parse(made, strlen(made), "made", &back, &e), &e);
        CHECK(strcmp(back.prov.series_description, "a <b> & \"c\"") == 0);
        strcpy(back.prov.series_description, "T1 axial");
        check_full(&back.prov, &back.parallel);
        CHECK(back.recon_matrix[0] == 32 && back.recon_fov_mm[0] == 200);
        free(made);
    }
    /* A header without provenance stays valid too. */
    made = lm_mrd_header_make(&g, NULL, 4, 32, 64, "radial", 1, 0, 0, NULL, NULL);
    CHECK(made && schema_valid(made) != 0);
    free(made);
    /* Text a header cannot hold is refused before writing. */
    lm_mrd_provenance bad;
    memset(&bad, 0, sizeof bad);
    strcpy(bad.patient_id, "line\nbreak");
    CHECK(lm_mrd_provenance_check(&bad, "out.h5", &e) == LM_ERR_INVALID);
    CHECK(lm_msg_ok("control character", &e, "out.h5", "patientID"));
    memset(&bad, 0, sizeof bad);
    strcpy(bad.protocol_name, "t1");
    CHECK(lm_mrd_provenance_check(&bad, "out.h5", &e) == LM_ERR_INVALID);
    CHECK(lm_msg_ok("no patient position", &e, "out.h5", "patient position"));

#if LM_HAVE_ISMRMRD
    /* Round trip through a file. */
    lm_tmp_make("mrd-prov");
    lm_traj *t = lm_traj_new(64 * 4, 2, &e);
    lm_kdata *k = t ? lm_kdata_new(64 * 4, 2, &e) : NULL;
    CHECK(t && k);
    if (t && k) {
        for (int64_t i = 0; i < t->m; i++) {
            t->k[3 * i] = (float)(i % 64 - 32) * 0.5f;
            t->k[3 * i + 1] = (float)(i / 64) - 2;
            k->d[i] = (float)i;
            k->d[t->m + i] = -(float)i;
        }
        t->readout = 64;
        lm_mrd m;
        memset(&m, 0, sizeof m);
        m.geom = g;
        m.traj = t;
        m.kdata = k;
        m.prov = h.prov;
        m.parallel = h.parallel;
        m.recon_geom = r;
        CHECK_OK(lm_mrd_write_dataset(lm_tmp_path("p.h5"), &m, "radial", &e), &e);
        lm_mrd back;
        memset(&back, 0, sizeof back);
        CHECK_OK(lm_mrd_read_opts(lm_tmp_path("p.h5"), NULL, &back, &e), &e);
        CHECK(strcmp(back.prov.series_description, "a <b> & \"c\"") == 0);
        strcpy(back.prov.series_description, "T1 axial");
        check_full(&back.prov, &back.parallel);
        CHECK(back.recon_geom.n[0] == 32 && back.recon_geom.fov_mm[0] == 200);
        CHECK(back.geom.n[0] == 64 && back.traj && back.traj->m == t->m); /* non-Cartesian: encodedSpace */
        lm_mrd_clear(&back);
        /* Bad provenance: refused with one line, nothing written. */
        strcpy(m.prov.patient_name, "tab\there");
        CHECK(lm_mrd_write_dataset(lm_tmp_path("q.h5"), &m, "radial", &e) == LM_ERR_INVALID);
        CHECK(lm_msg_ok("write bad provenance", &e, "q.h5", "patientName"));
        CHECK(access(lm_tmp_path("q.h5"), F_OK) != 0);
    }
    lm_traj_free(t);
    lm_kdata_free(k);
#endif
    return lm_test_finish("test_mrd_provenance");
}
