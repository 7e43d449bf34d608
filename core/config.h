/* config — the training options: one table of every option (name, kind, field,
 * default, range, help line, where it shows), and the functions that read and
 * write a run_config through it. The command line, config files, the run folder's
 * config, --help and the workbench's configure dialog all go through here, so an
 * option is added by one row of the table (and its field in run_config).
 *
 * Ownership: nothing allocated; the table and its strings are static.
 */
#ifndef PT_CONFIG_H
#define PT_CONFIG_H

#include <stddef.h>

#include "base/err.h"
#include "run.h"

/* How a value is read, checked, stored and written. */
typedef enum cfg_kind {
    CFG_PATH,           /* char[]: any text that fits */
    CFG_MODEL,          /* char[]: one of the choices (a built-in net) or a path to an .onnx file */
    CFG_CHOICE,         /* an enum (int): the index of one of the choices */
    CFG_INT,            /* int from lo to hi */
    CFG_U64,            /* uint64_t from lo to hi */
    CFG_NUM,            /* double from lo to hi, written with %g (more digits when needed) */
    CFG_BOOL,           /* int 0 or 1: yes/no, also 1/0, true/false, on/off */
    CFG_BOOL_AUTO,      /* int 1, 0 or -1: what CFG_BOOL takes, or auto (the program
                           decides when it knows more) */
    CFG_OVERSAMPLE,     /* long long: a count from lo to hi, max (-1) or off (0) */
    CFG_AUGMENT,        /* char[]: a chain spec (checked by data/aug_spec.c's check) */
    CFG_WIDTHS,         /* char[]: a channel list (checked by nn/nn_widths.c's check);
                           the last kind */
} cfg_kind;

/* The check of what a text kind's value means (CFG_AUGMENT, CFG_WIDTHS), by the
 * module that reads it: PT_OK, or PT_EUSAGE with the module's message (e may be
 * NULL). The table takes no header from those modules (they sit on floors above
 * it), so they register their checks when the program starts (a constructor in
 * data/aug_spec.c and in nn/nn_widths.c), and cfg_set() runs a kind's check before it
 * stores the value. A program linked without the module (a fuzz harness of config.c
 * alone) takes any text that fits unless it registers the check itself. Call it
 * before any thread reads options. */
typedef int (*cfg_check_fn)(const char *value, pt_err *e);
void cfg_set_check(cfg_kind kind, cfg_check_fn fn);

/* Where an option shows (cfg_option.where). */
enum {
    CFG_CLI = 1,        /* a long option of the workbench and --headless */
    CFG_FILE = 2,       /* written to the run folder's config by cfg_format() */
    CFG_DIALOG = 4,     /* a row of the configure dialog */
};

typedef struct cfg_option {
    const char *name;           /* the long option without dashes, and the config key */
    cfg_kind kind;
    size_t offset, size;        /* the field in run_config */
    const char *def;            /* the default as text, set through cfg_set() */
    double lo, hi;              /* the range of the number kinds (whole numbers: exact) */
    const char *const *choices; /* CFG_MODEL, CFG_CHOICE: NULL-terminated; each is its
                                   name, then any other spellings, space-separated */
    const char *arg;            /* the value's name in --help (N, DIR, SPEC); NULL: the
                                   choices joined by '|', or nothing for CFG_BOOL */
    const char *help;           /* one line for --help */
    const char *unset;          /* what an empty value means, or NULL */
    unsigned where;             /* CFG_CLI | CFG_FILE | CFG_DIALOG */
    int dialog;                 /* place among the dialog's first rows (1, 2, ...);
                                   0: after them, in table order */
    int (*check)(long long v, pt_err *e); /* a CFG_INT value's further check, or NULL */
} cfg_option;

/* The table, in the order of the config file (and of the dialog's later rows). */
const cfg_option *cfg_options(size_t *n);

/* The row named name, or NULL. */
const cfg_option *cfg_find(const char *name);

/* The defaults every front end starts from: each row's default through cfg_set(). */
void cfg_defaults(run_config *c);

/* Set one option by its name: "model", "epochs", "lr-max", ... PT_EUSAGE with a
 * message naming the key when the key or the value is bad (c is then unchanged). */
int cfg_set(run_config *c, const char *key, const char *value, pt_err *e);

/* Apply a config file's text (len bytes, NUL not needed) onto c: "key = value"
 * lines with the long options' names, '#' to the end of a line is a comment, blank
 * lines are skipped and spaces around keys and values trimmed. PT_EUSAGE naming the
 * file and the line at the first bad line (a line without '=', a NUL byte, a key or
 * a value cfg_set() refuses); the lines before it stay applied. */
int cfg_read_text(run_config *c, const char *text, size_t len, const char *file, pt_err *e);

/* The same for the file at path (PT_EIO when it cannot be read). */
int cfg_read_file(run_config *c, const char *path, pt_err *e);

/* An option's value as text, as cfg_format() writes it: a number with %g's six
 * digits, or more when it needs them to read back the same. 0, or -1 when it did not fit
 * (buf then holds what did). */
int cfg_value(const run_config *c, const cfg_option *o, char *buf, size_t n);

/* Write the configuration as "key = value" lines (the run folder's config): every
 * CFG_FILE row in table order, under a comment line. 0, or -1 when it did not fit. */
int cfg_format(const run_config *c, char *buf, size_t n);

#endif
