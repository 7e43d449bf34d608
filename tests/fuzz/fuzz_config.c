/* fuzz_config — the config file parser (cfg_read_text() in core/config.c) on any
 * bytes.
 *
 * The bytes are a config file (--config FILE, or a run folder's config when
 * resuming). They are applied onto the defaults; every value goes through
 * cfg_set(), so the augmentation spec parser (aug_parse) and the --widths parser
 * are reached too. What was applied (all of it, or the lines before the first bad
 * one) is written as a run folder's config (cfg_format), read back, and written
 * again.
 *
 * Promises checked: an error names the file and the line; the run folder's config
 * always reads back; it reads back to the same configuration, every option that
 * the file holds exactly (a resumed run must train as the straight one would);
 * writing it again gives the same text.
 */
#include "tests/fuzz/fuzz.h"

#include "config.h"
#include "data/augment.h"
#include "nn/nn_models.h"

#define FILE_NAME "fuzz.conf"
#define TEXT_MAX 65536

static char text1[TEXT_MAX], text2[TEXT_MAX];

/* Each option the file holds, compared as its field's bytes (a string up to its NUL). */
static void same(const run_config *a, const run_config *b)
{
    size_t n;
    const cfg_option *t = cfg_options(&n);
    for (size_t i = 0; i < n; i++) {
        const cfg_option *o = &t[i];
        if (!(o->where & CFG_FILE))
            continue;
        const char *pa = (const char *)a + o->offset, *pb = (const char *)b + o->offset;
        int differ;
        switch (o->kind) {
        case CFG_PATH:
        case CFG_MODEL:
        case CFG_AUGMENT:
        case CFG_WIDTHS:
            differ = strncmp(pa, pb, o->size) != 0;
            break;
        default:
            differ = memcmp(pa, pb, o->size) != 0;
            break;
        }
        char va[4200], vb[4200];
        cfg_value(a, o, va, sizeof va);
        cfg_value(b, o, vb, sizeof vb);
        FZ_ASSERT(!differ, "%s: '%s' in the file, read back as another value (written '%s')",
                  o->name, va, vb);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static run_config c, back;
    /* The table takes the checks of --augment and --widths from the modules that read
     * them, registered when they are linked in: name them, so they are. */
    cfg_set_check(CFG_AUGMENT, aug_check_spec);
    cfg_set_check(CFG_WIDTHS, nn_check_widths);
    cfg_defaults(&c);
    pt_err e;
    int rc = cfg_read_text(&c, (const char *)data, size, FILE_NAME, &e);
    if (rc != PT_OK)
        FZ_ASSERT(rc == PT_EUSAGE && e.code == rc && fz_names(e.msg, FILE_NAME) &&
                      strstr(e.msg, ": line "),
                  "%d: %s", rc, e.msg);

    FZ_ASSERT(cfg_format(&c, text1, sizeof text1) == 0, "the config does not fit %d bytes",
              TEXT_MAX);
    cfg_defaults(&back);
    rc = cfg_read_text(&back, text1, strlen(text1), "run/config", &e);
    FZ_ASSERT(rc == PT_OK, "the run folder's config does not read back: %s\n%s", e.msg, text1);
    same(&c, &back);
    FZ_ASSERT(cfg_format(&back, text2, sizeof text2) == 0, "the config does not fit");
    FZ_ASSERT(strcmp(text1, text2) == 0, "written twice, two texts:\n%s\n%s", text1, text2);
    return 0;
}
