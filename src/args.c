/* args — the training options of the workbench and the headless runner.
 *
 * Precedence, lowest first: built-in defaults; the config file (--config FILE, or
 * $XDG_CONFIG_HOME/petal-tui/config when it exists); when resuming, the run's saved
 * configuration; then the command line. Config files hold "key = value" lines with
 * the long options' names; '#' starts a comment. */
#include "src/args.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

static const char *const FLAGS[] = { "deterministic", "freeze-backbone", "stop-on-data-error" };

static int is_flag(const char *key)
{
    for (size_t i = 0; i < sizeof FLAGS / sizeof FLAGS[0]; i++)
        if (!strcmp(key, FLAGS[i]))
            return 1;
    return 0;
}

static int is_key(const char *key)
{
    const char *keys[64];
    size_t n = cfg_keys(keys, 64);
    for (size_t i = 0; i < n; i++)
        if (!strcmp(keys[i], key))
            return 1;
    return 0;
}

int args_load_config_file(const char *path, run_config *cfg, pt_err *e)
{
    uint8_t *data;
    size_t len;
    int rc = util_read_file(path, &data, &len, e);
    if (rc != PT_OK)
        return rc;
    char *save = NULL;
    long long line_no = 0;
    char *text = (char *)data;
    /* strtok_r skips empty lines, so count lines by hand. */
    for (char *line = text; line && *line && rc == PT_OK;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        line_no++;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *p = line;
        while (isspace((unsigned char)*p))
            p++;
        if (*p) {
            char *eq = strchr(p, '=');
            if (!eq) {
                rc = err_set(e, PT_EUSAGE, path, PT_NO_RECORD, PT_NO_OFFSET,
                             "line %lld: expected key = value", line_no);
                break;
            }
            *eq = '\0';
            char *key = p, *val = eq + 1;
            for (char *k = eq - 1; k >= key && isspace((unsigned char)*k); k--)
                *k = '\0';
            while (isspace((unsigned char)*val))
                val++;
            for (char *v = val + strlen(val) - 1; v >= val && isspace((unsigned char)*v); v--)
                *v = '\0';
            pt_err ke;
            if (cfg_set(cfg, key, val, &ke) != PT_OK)
                rc = err_set(e, PT_EUSAGE, path, PT_NO_RECORD, PT_NO_OFFSET, "line %lld: %s",
                             line_no, ke.msg);
        }
        line = nl ? nl + 1 : NULL;
    }
    (void)save;
    free(data);
    return rc;
}

/* The value of --key (as "--key value" or "--key=value"), for the first pass. */
static const char *find_opt(int argc, char **argv, const char *key)
{
    size_t k = strlen(key);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] != '-' || a[1] != '-')
            continue;
        if (!strncmp(a + 2, key, k)) {
            if (a[2 + k] == '=')
                return a + 3 + k;
            if (a[2 + k] == '\0' && i + 1 < argc)
                return argv[i + 1];
        }
    }
    return NULL;
}

int args_parse(int argc, char **argv, args *a)
{
    memset(a, 0, sizeof *a);
    cfg_defaults(&a->cfg);
    pt_err e;

    /* The config file first. */
    const char *cfile = find_opt(argc, argv, "config");
    char def[4096];
    if (!cfile) {
        const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
        if (xdg && *xdg)
            util_path(def, sizeof def, "%s/petal-tui/config", xdg);
        else if (home && *home)
            util_path(def, sizeof def, "%s/.config/petal-tui/config", home);
        else
            def[0] = '\0';
        if (def[0] && util_is_file(def))
            cfile = def;
    }
    if (cfile) {
        if (args_load_config_file(cfile, &a->cfg, &e) != PT_OK) {
            fprintf(stderr, "petal-tui: %s\n", e.msg);
            return 1;
        }
        util_copy(a->config_file, sizeof a->config_file, cfile);
    }
    /* Resuming: the run's own configuration. */
    const char *resume = find_opt(argc, argv, "resume");
    if (resume) {
        char path[4200];
        util_path(path, sizeof path, "%s/config", resume);
        if (!util_is_file(path)) {
            fprintf(stderr, "petal-tui: %s: no run folder with a config file to resume\n", resume);
            return 1;
        }
        if (args_load_config_file(path, &a->cfg, &e) != PT_OK) {
            fprintf(stderr, "petal-tui: %s\n", e.msg);
            return 1;
        }
    }

    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (!strcmp(arg, "--headless")) {
            a->headless = 1;
            continue;
        }
        if (!strcmp(arg, "--no-sixel")) {
            a->no_sixel = 1;
            continue;
        }
        if (!strcmp(arg, "--no-color")) {
            a->no_color = 1;
            continue;
        }
        if (arg[0] != '-' || arg[1] != '-') {
            fprintf(stderr, "petal-tui: unexpected argument '%s' (try --help)\n", arg);
            return 1;
        }
        char key[128];
        const char *val = NULL;
        const char *eq = strchr(arg + 2, '=');
        if (eq) {
            size_t k = (size_t)(eq - (arg + 2));
            if (k >= sizeof key)
                k = sizeof key - 1;
            memcpy(key, arg + 2, k);
            key[k] = '\0';
            val = eq + 1;
        } else {
            util_copy(key, sizeof key, arg + 2);
        }
        if (!strcmp(key, "config")) {
            if (!val)
                i++;
            continue;
        }
        if (!val && !strncmp(key, "no-", 3) && is_flag(key + 3)) {
            cfg_set(&a->cfg, key + 3, "no", NULL);
            continue;
        }
        if (!is_key(key)) {
            fprintf(stderr, "petal-tui: unknown option '--%s' (try --help)\n", key);
            return 1;
        }
        if (!val && is_flag(key)) {
            /* A bare flag means yes, unless a yes/no value follows. */
            if (i + 1 < argc && argv[i + 1][0] != '-' &&
                cfg_set(&a->cfg, key, argv[i + 1], NULL) == PT_OK) {
                i++;
                continue;
            }
            val = "yes";
        }
        if (!val) {
            if (i + 1 >= argc) {
                fprintf(stderr, "petal-tui: --%s needs a value\n", key);
                return 1;
            }
            val = argv[++i];
        }
        if (cfg_set(&a->cfg, key, val, &e) != PT_OK) {
            fprintf(stderr, "petal-tui: %s\n", e.msg);
            return 1;
        }
    }
    if (resume)
        util_copy(a->cfg.resume, sizeof a->cfg.resume, resume);
    return 0;
}
