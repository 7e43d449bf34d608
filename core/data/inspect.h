/* inspect — the report of what a TFRecord file, a folder of them or a dataset holds
 * (`petal-tui inspect`): records, CRCs, features, image sizes, class counts and
 * every error with its file, record and byte offset.
 *
 * Ownership: nothing outlives the call; the report goes to the caller's stream.
 */
#ifndef PT_INSPECT_H
#define PT_INSPECT_H

#include <stdio.h>

#include "base/err.h"

/* The report of path into out. show_records: per-record detail for the first N
 * records of each file (-1: 3 for a single file, 0 otherwise). *damaged is 1 when
 * the report found damage (CRC, truncation, parse errors, a count the file name
 * contradicts). An error, with nothing written, when path is neither file nor folder
 * (PT_EUSAGE), or a folder holding no dataset and no TFRecord files (PT_ENODATA). */
int dsi_report(const char *path, int show_records, FILE *out, int *damaged, pt_err *e);

#endif
