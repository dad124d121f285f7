/* How many time segments model the field-map term (lm_timeseg.h): a value
 * of lm_encoding_desc.segments and lm_recon_opts.segments, public because
 * front ends choose it. */
#ifndef LM_SEGMENTS_H
#define LM_SEGMENTS_H

/* Choose the number of time segments so that the interpolation error stays
 * below LM_SEGMENTS_TOL over the field map's range. 0 means the exact
 * operator (direct sums), L >= 1 that many segments. */
#define LM_SEGMENTS_AUTO (-1)
#define LM_SEGMENTS_TOL 1e-3

#endif
