/* The XML header parser (libxml2): what it takes from real headers, and a one-line
 * message for every broken one. Needs no libismrmrd. */
#include <string.h>

#include "lm_io_ismrmrd.h"
#include "lm_test.h"
#include "mrd_test_util.h"

/* As ismrmrd_generate_cartesian_shepp_logan writes it (abridged). */
static const char *shepp =
    "<?xml version=\"1.0\"?>\n<ismrmrdHeader xmlns=\"http://www.ismrm.org/ISMRMRD\" "
    "xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\">\n\t<version>8</version>\n"
    "\t<acquisitionSystemInformation>\n\t\t<receiverChannels>8</receiverChannels>\n"
    "\t\t<institutionName>ISMRM Synthetic Imaging Lab</institutionName>\n\t</acquisitionSystemInformation>\n"
    "\t<experimentalConditions>\n\t\t<H1resonanceFrequency_Hz>63500000</H1resonanceFrequency_Hz>\n"
    "\t</experimentalConditions>\n\t<encoding>\n\t\t<encodedSpace>\n\t\t\t<matrixSize>\n\t\t\t\t<x>512</x>\n"
    "\t\t\t\t<y>256</y>\n\t\t\t\t<z>1</z>\n\t\t\t</matrixSize>\n\t\t\t<fieldOfView_mm>\n\t\t\t\t<x>600.000000</x>\n"
    "\t\t\t\t<y>300.000000</y>\n\t\t\t\t<z>6.000000</z>\n\t\t\t</fieldOfView_mm>\n\t\t</encodedSpace>\n"
    "\t\t<reconSpace>\n\t\t\t<matrixSize>\n\t\t\t\t<x>256</x>\n\t\t\t\t<y>256</y>\n\t\t\t\t<z>1</z>\n"
    "\t\t\t</matrixSize>\n\t\t\t<fieldOfView_mm>\n\t\t\t\t<x>300.000000</x>\n\t\t\t\t<y>300.000000</y>\n"
    "\t\t\t\t<z>6.000000</z>\n\t\t\t</fieldOfView_mm>\n\t\t</reconSpace>\n\t\t<encodingLimits>\n"
    "\t\t\t<kspace_encoding_step_1>\n\t\t\t\t<minimum>0</minimum>\n\t\t\t\t<maximum>255</maximum>\n"
    "\t\t\t\t<center>128</center>\n\t\t\t</kspace_encoding_step_1>\n\t\t</encodingLimits>\n"
    "\t\t<trajectory>cartesian</trajectory>\n\t</encoding>\n</ismrmrdHeader>\n";

static lm_code parse(const char *xml, lm_mrd_header *h, lm_error *e)
{
    return lm_mrd_header_parse(xml, strlen(xml), "hdr.h5", h, e);
}

/* Wraps an <encoding> body into a header. */
static char buf[8192];
static const char *wrap(const char *encoding_body)
{
    snprintf(buf, sizeof buf, "<ismrmrdHeader><experimentalConditions><H1resonanceFrequency_Hz>1"
                              "</H1resonanceFrequency_Hz></experimentalConditions><encoding>%s</encoding>"
                              "</ismrmrdHeader>", encoding_body);
    return buf;
}

#define SPACE "<encodedSpace><matrixSize><x>64</x><y>48</y><z>1</z></matrixSize>" \
              "<fieldOfView_mm><x>240</x><y>180</y><z>5</z></fieldOfView_mm></encodedSpace>"

static void bad(const char *label, const char *xml, const char *needle)
{
    lm_mrd_header h;
    lm_error e;
    lm_error_clear(&e);
    CHECK_MSG(parse(xml, &h, &e) == LM_ERR_FORMAT, "%s parsed", label);
    CHECK_MSG(lm_msg_ok(label, &e, "hdr.h5", needle), "%s: message '%s'", label, e.msg);
}

int main(void)
{
    lm_mrd_header h;
    lm_error e;
    lm_error_clear(&e);

    CHECK_OK(parse(shepp, &h, &e), &e);
    CHECK(h.matrix[0] == 512 && h.matrix[1] == 256 && h.matrix[2] == 1);
    CHECK(h.fov_mm[0] == 600 && h.fov_mm[1] == 300 && h.fov_mm[2] == 6);
    CHECK(h.recon_matrix[0] == 256 && h.recon_fov_mm[0] == 300);
    CHECK(h.has_center[0] && h.center[0] == 128 && !h.has_center[1]);
    CHECK(strcmp(h.trajectory, "cartesian") == 0);
    CHECK(h.receiver_channels == 8);
    CHECK(h.encodings == 1 && h.larmor_units == -1 && h.larmor_readout == -1);

    /* Namespace prefixes, comments, CDATA elsewhere, attributes with '>'
     * in quotes, self-closing elements, a second encoding ignored. */
    const char *fancy =
        "<?xml version='1.0'?><!DOCTYPE x><!-- <encoding> in a comment -->"
        "<m:ismrmrdHeader xmlns:m='http://www.ismrm.org/ISMRMRD' a='x>y'>"
        "<m:studyInformation><m:comment><![CDATA[<encoding>]]></m:comment></m:studyInformation>"
        "<m:encoding><m:encodedSpace><m:matrixSize><m:x> 128 </m:x><m:y>128</m:y><m:z>64</m:z></m:matrixSize>"
        "<m:fieldOfView_mm><m:x>2.5e2</m:x><m:y>250</m:y><m:z>125</m:z></m:fieldOfView_mm></m:encodedSpace>"
        "<m:encodingLimits/><m:trajectory>radial</m:trajectory>"
        "<m:trajectoryDescription><m:identifier>larmor</m:identifier>"
        "<m:userParameterLong><m:value>1</m:value><m:name>k_units_cycles_per_fov</m:name></m:userParameterLong>"
        "<m:userParameterLong><m:name>readout</m:name><m:value>64</m:value></m:userParameterLong>"
        "</m:trajectoryDescription></m:encoding>"
        "<m:encoding><m:encodedSpace><m:matrixSize><m:x>1</m:x><m:y>1</m:y><m:z>1</m:z></m:matrixSize>"
        "<m:fieldOfView_mm><m:x>1</m:x><m:y>1</m:y><m:z>1</m:z></m:fieldOfView_mm></m:encodedSpace></m:encoding>"
        "</m:ismrmrdHeader>";
    CHECK_OK(parse(fancy, &h, &e), &e);
    CHECK(h.matrix[0] == 128 && h.matrix[1] == 128 && h.matrix[2] == 64);
    CHECK(h.fov_mm[0] == 250 && h.fov_mm[2] == 125);
    CHECK(strcmp(h.trajectory, "radial") == 0);
    CHECK(h.encodings == 2);
    CHECK(h.larmor_units == LM_MRD_UNITS_CYCLES);
    CHECK(h.larmor_readout == 64);

    /* Another writer's trajectoryDescription is not Larmor's tag. */
    CHECK_OK(parse(wrap(SPACE "<trajectoryDescription><identifier>spiral</identifier><userParameterLong>"
                              "<name>k_units_cycles_per_fov</name><value>1</value></userParameterLong>"
                              "</trajectoryDescription>"),
                   &h, &e),
             &e);
    CHECK(h.larmor_units == -1);

    /* Length is honoured: no NUL needed, trailing bytes ignored. */
    char *copy = strdup(shepp);
    size_t n = strlen(copy);
    CHECK_OK(lm_mrd_header_parse(copy, n, "hdr.h5", &h, &e), &e);
    CHECK(lm_mrd_header_parse(copy, n / 2, "hdr.h5", &h, &e) == LM_ERR_FORMAT);
    CHECK(lm_msg_ok("XML truncated half way", &e, "hdr.h5", "truncated"));
    free(copy);

    bad("XML empty", "", "no <ismrmrdHeader>");
    bad("XML not XML", "hello world", "no <ismrmrdHeader>");
    bad("XML wrong root", "<html><body/></html>", "not <ismrmrdHeader>");
    bad("XML two roots", "<ismrmrdHeader/><ismrmrdHeader/>", "Extra content");
    bad("XML no encoding", "<ismrmrdHeader><version>1</version></ismrmrdHeader>", "no <encoding>");
    bad("XML mismatched close", "<ismrmrdHeader><encoding></encodedSpace></ismrmrdHeader>", "tag mismatch");
    bad("XML unterminated tag", "<ismrmrdHeader><encoding", "(truncated?)");
    bad("XML unterminated comment", "<ismrmrdHeader><!-- x", "(truncated?)");
    bad("XML stray close", "</ismrmrdHeader>", "line 1:");
    bad("XML matrix missing", wrap("<trajectory>radial</trajectory>"), "matrix");
    bad("XML matrix zero", wrap("<encodedSpace><matrixSize><x>0</x><y>1</y><z>1</z></matrixSize>"
                                "<fieldOfView_mm><x>1</x><y>1</y><z>1</z></fieldOfView_mm></encodedSpace>"),
        "missing or zero");
    bad("XML matrix not a number", wrap("<encodedSpace><matrixSize><x>sixty</x></matrixSize></encodedSpace>"),
        "not an integer");
    bad("XML matrix negative", wrap("<encodedSpace><matrixSize><x>-4</x></matrixSize></encodedSpace>"),
        "out of range");
    bad("XML matrix huge", wrap("<encodedSpace><matrixSize><x>99999999999999999999</x></matrixSize></encodedSpace>"),
        "not an integer");
    bad("XML FOV NaN", wrap("<encodedSpace><matrixSize><x>4</x><y>4</y><z>1</z></matrixSize>"
                            "<fieldOfView_mm><x>nan</x><y>1</y><z>1</z></fieldOfView_mm></encodedSpace>"),
        "finite");
    bad("XML FOV zero", wrap("<encodedSpace><matrixSize><x>4</x><y>4</y><z>1</z></matrixSize>"
                             "<fieldOfView_mm><x>0</x><y>1</y><z>1</z></fieldOfView_mm></encodedSpace>"),
        "field of view");
    bad("XML center not a number", wrap(SPACE "<encodingLimits><kspace_encoding_step_1><center>x</center>"
                                              "</kspace_encoding_step_1></encodingLimits>"),
        "not an integer");

    /* Deep nesting is refused, not a stack overflow: 200 levels (libxml2
     * itself stops at 256), closed, so the walk's own limit answers. */
    char *deep = malloc(200 * 8 + 64 + 16);
    strcpy(deep, "<ismrmrdHeader>");
    for (int i = 0; i < 200; i++)
        strcat(deep, "<a>");
    for (int i = 0; i < 200; i++)
        strcat(deep, "</a>");
    strcat(deep, "</ismrmrdHeader>");
    bad("XML nested 200 deep", deep, "nested deeper");
    free(deep);

    /* Entities never reach a value: a plain one is left unexpanded, and a
     * billion-laughs DTD is refused by libxml2's amplification check. */
    const char *entity = "<!DOCTYPE ismrmrdHeader [<!ENTITY a \"Smith\">]><ismrmrdHeader><subjectInformation>"
                         "<patientName>&a;</patientName></subjectInformation><encoding>" SPACE
                         "</encoding></ismrmrdHeader>";
    CHECK_OK(parse(entity, &h, &e), &e);
    CHECK_MSG(h.prov.patient_name[0] == '\0', "entity expanded to '%s'", h.prov.patient_name);
    CHECK(h.matrix[0] == 64);
    const char *laughs =
        "<?xml version=\"1.0\"?><!DOCTYPE ismrmrdHeader [<!ENTITY a \"hahahahahahahahahaha\">"
        "<!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;\"><!ENTITY c \"&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;\">"
        "<!ENTITY d \"&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;\"><!ENTITY e \"&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;\">"
        "<!ENTITY f \"&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;\"><!ENTITY g \"&f;&f;&f;&f;&f;&f;&f;&f;&f;&f;\">]>"
        "<ismrmrdHeader><subjectInformation><patientName>&g;</patientName></subjectInformation>"
        "<encoding>" SPACE "</encoding></ismrmrdHeader>";
    bad("XML billion laughs", laughs, "entity");

    lm_mrd_units u;
    CHECK(lm_mrd_units_parse("normalised", &u, &e) == LM_OK && u == LM_MRD_UNITS_NORMALIZED);
    CHECK(lm_mrd_units_parse("CYCLES", &u, &e) == LM_OK && u == LM_MRD_UNITS_CYCLES);
    CHECK(lm_mrd_units_parse("auto", &u, &e) == LM_OK && u == LM_MRD_UNITS_AUTO);
    CHECK(lm_mrd_units_parse("mm", &u, &e) == LM_ERR_INVALID);
    return lm_test_finish("test_mrd_header");
}
