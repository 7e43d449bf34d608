/* config — the training options: one table of every option (name, kind, default,
 * range, help line, where it shows), and the functions that read and write a
 * run_config through it. The command line, config files, the run folder's config
 * and the workbench's configure dialog all go through here.
 *
 * Ownership: nothing allocated; strings returned point into static tables.
 */
#ifndef PT_CONFIG_H
#define PT_CONFIG_H

#include <stddef.h>

#include "base/err.h"
#include "run.h"

/* The defaults every front end starts from. */
void cfg_defaults(run_config *c);

/* Set one option by its long name without dashes (as on the command line and in
 * config files): "model", "epochs", "lr-max", ... PT_EUSAGE with a message naming
 * the key when the key or the value is bad. */
int cfg_set(run_config *c, const char *key, const char *value, pt_err *e);

/* Write the configuration as "key = value" lines (the run folder's config). */
int cfg_format(const run_config *c, char *buf, size_t n);

/* The keys cfg_set() knows, for --help and the configure dialog. */
size_t cfg_keys(const char **keys, size_t max);

#endif
