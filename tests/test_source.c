/* Checks on the source tree itself, the bounds issues 27 and 41 set:
 * - ui/ and src/ reach the engine only through its doors (issue 41 item 5: core/engine.h,
 *   core/runs.h, core/datasets.h, core/infer/infer.h, core/infer/ensemble.h, core/config.h)
 *   and core/base/,
 *   and a door includes from core/ only base/, config.h, run.h and the other doors:
 *   any other include fails, named with its line and header;
 * - the run folder's file names are known only under core/run/ (issue 41): outside
 *   it, in core/, ui/ and src/, no string literal names one as a path or a path's
 *   part, and no code uses core/run/'s private name macros;
 * - no .c or .h file in core/ or ui/ is over 800 lines, and no function in core/, ui/
 *   or src/ is over 100 (a body: a line starting with '{' to the next line starting
 *   with '}', both counted; the code's style puts them there). Every offender is
 *   named, not just the first;
 * - the floors of core/ (issue 41): no file includes a header from a floor above its
 *   own (FLOORS below, low to high); every offending line is named;
 * - struct trn, the trainer's state (under core/train/), has at most 25 member
 *   declarations, a declaration of several names counting each (issue 41);
 * - pthread_create appears (outside comments) in core/, ui/ and src/ only in the
 *   replica pool (core/pool/), the data pipeline's workers (core/data/pipeline.c),
 *   core/data/shards.c and the engine's own threads (core/engine.c); never in
 *   core/infer/. Every offender is named with its line.
 * The tree is the working folder under `make test`; elsewhere it is found from the
 * test binary's path (build/tests/run-tests). */
#include "tests/t.h"

#include <ctype.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/util.h"

#define MAX_FILE_LINES 800
#define MAX_FUNC_LINES 100

/* The repository root: "." when it holds the sources, else the first folder above
 * the test binary that does; NULL when neither does. */
static const char *source_root(void)
{
    static char root[4096];
    if (util_is_file("core/engine.h") && util_is_dir("ui"))
        return ".";
    ssize_t n = readlink("/proc/self/exe", root, sizeof root - 1);
    if (n <= 0)
        return NULL;
    root[n] = '\0';
    for (char *slash = strrchr(root, '/'); slash && slash != root; slash = strrchr(root, '/')) {
        *slash = '\0';
        char probe[4200];
        snprintf(probe, sizeof probe, "%s/core/engine.h", root);
        if (util_is_file(probe))
            return root;
    }
    return NULL;
}

/* ---- a list of repository-relative paths ------------------------------------------ */

typedef struct paths {
    char **v;
    int n, cap;
} paths;

static int paths_add(paths *p, const char *s)
{
    if (p->n == p->cap) {
        int cap = p->cap ? 2 * p->cap : 64;
        char **v = realloc(p->v, (size_t)cap * sizeof *v);
        if (!v)
            return -1;
        p->v = v;
        p->cap = cap;
    }
    p->v[p->n] = strdup(s);
    if (!p->v[p->n])
        return -1;
    p->n++;
    return 0;
}

static void paths_free(paths *p)
{
    util_free_list(p->v, p->n);
    memset(p, 0, sizeof *p);
}

static int is_source_name(const char *name)
{
    size_t n = strlen(name);
    return n > 2 && name[n - 2] == '.' && (name[n - 1] == 'c' || name[n - 1] == 'h');
}

/* Adds the .c and .h files under root/rel (into sub-folders too when deep), sorted. */
static void list_sources(const char *root, const char *rel, int deep, paths *out)
{
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/%s", root, rel);
    char **names;
    int n;
    if (util_list_dir(dir, UTIL_LIST_FILES, &names, &n, NULL) == PT_OK) {
        for (int i = 0; i < n; i++) {
            char p[4200];
            snprintf(p, sizeof p, "%s/%s", rel, names[i]);
            if (is_source_name(names[i]))
                paths_add(out, p);
        }
        util_free_list(names, n);
    }
    if (deep && util_list_dir(dir, UTIL_LIST_DIRS, &names, &n, NULL) == PT_OK) {
        for (int i = 0; i < n; i++) {
            char p[4200];
            snprintf(p, sizeof p, "%s/%s", rel, names[i]);
            list_sources(root, p, deep, out);
        }
        util_free_list(names, n);
    }
}

/* Every .c and .h file of the program: core/, ui/ and src/, sorted within each. */
static void list_code_sources(const char *root, paths *out)
{
    list_sources(root, "core", 1, out);
    list_sources(root, "ui", 1, out);
    list_sources(root, "src", 1, out);
}

/* ---- a file as lines ---------------------------------------------------------------- */

typedef struct lines {
    char *buf;
    char **at;
    int n;
} lines;

/* root/rel split at its newlines (a last line without one counts too); 0 or -1. */
static int read_lines(const char *root, const char *rel, lines *L)
{
    memset(L, 0, sizeof *L);
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    uint8_t *data;
    size_t len;
    if (util_read_file(path, &data, &len, NULL) != PT_OK)
        return -1;
    L->buf = (char *)data;
    size_t cap = 1;
    for (size_t i = 0; i < len; i++)
        cap += L->buf[i] == '\n';
    L->at = malloc(cap * sizeof *L->at);
    if (!L->at) {
        free(L->buf);
        return -1;
    }
    char *p = L->buf, *end = L->buf + len;
    while (p < end) {
        L->at[L->n++] = p;
        char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            break;
        *nl = '\0';
        p = nl + 1;
    }
    return 0;
}

static void lines_free(lines *L)
{
    free(L->at);
    free(L->buf);
}

/* ---- includes ---------------------------------------------------------------------- */

/* The header a line includes with quotes into name, or 0 for any other line. */
static int quoted_include(const char *line, char *name, size_t size)
{
    const char *p = line;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p++ != '#')
        return 0;
    while (*p == ' ' || *p == '\t')
        p++;
    if (strncmp(p, "include", 7) != 0)
        return 0;
    p += 7;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p++ != '"')
        return 0;
    const char *q = strchr(p, '"');
    if (!q || (size_t)(q - p) >= size)
        return 0;
    memcpy(name, p, (size_t)(q - p));
    name[q - p] = '\0';
    return 1;
}

/* Where `#include "inc"` in file `from` lands, as the compiler looks: beside `from`,
 * then in core/ (-Icore), then at the root (-I.). 0, or -1 when nowhere. */
static int resolve_include(const char *root, const char *from, const char *inc, char *out,
                           size_t size)
{
    char dir[4200];
    snprintf(dir, sizeof dir, "%s", from);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    else
        dir[0] = '\0';
    const char *prefixes[] = { dir, "core", "" };
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) {
        char rel[4200], full[8500];
        snprintf(rel, sizeof rel, "%s%s%s", prefixes[i], *prefixes[i] ? "/" : "", inc);
        snprintf(full, sizeof full, "%s/%s", root, rel);
        if (util_is_file(full) && strlen(rel) < size) {
            snprintf(out, size, "%s", rel);
            return 0;
        }
    }
    return -1;
}

/* The doors (issue 41 item 5): the only headers of core/ that ui/ and src/ include,
 * with core/base/. A door itself includes from core/ only base/, config.h, run.h and
 * the other doors, so that naming a door names nothing else. */
static const char *const DOORS[] = {
    "core/engine.h", "core/runs.h", "core/datasets.h", "core/infer/infer.h", "core/config.h",
    "core/infer/ensemble.h",
};
#define N_DOORS ((int)(sizeof DOORS / sizeof DOORS[0]))

static int door_of(const char *rel)
{
    for (int d = 0; d < N_DOORS; d++)
        if (strcmp(rel, DOORS[d]) == 0)
            return d;
    return -1;
}

/* Checks file's quoted includes that land in core/: a door or base/ (ui/, src/), or
 * base/, config.h, run.h or a door (a door); each offence named with its line. How
 * many includes into core/ it has. */
static int check_door_includes(const char *root, const char *file, int is_door)
{
    lines L;
    int ok = read_lines(root, file, &L) == 0, into_core = 0;
    T_CHECKF(ok, "%s: cannot be read", file);
    if (!ok)
        return 0;
    for (int k = 0; k < L.n; k++) {
        char inc[512], rel[4200];
        if (!quoted_include(L.at[k], inc, sizeof inc))
            continue;
        int found = resolve_include(root, file, inc, rel, sizeof rel) == 0;
        T_CHECKF(found, "%s:%d: #include \"%s\" names no file in the tree", file, k + 1, inc);
        if (!found || strncmp(rel, "core/", 5) != 0)
            continue;
        into_core++;
        if (strncmp(rel, "core/base/", 10) == 0 || door_of(rel) >= 0 ||
            (is_door && strcmp(rel, "core/run.h") == 0))
            continue;
        T_CHECKF(0, "%s:%d: #include \"%s\" (%s): %s", file, k + 1, inc, rel,
                 is_door ? "a door includes from core/ only base/, config.h, run.h and the "
                           "other doors"
                         : "ui/ and src/ include from core/ only the doors (engine.h, "
                           "runs.h, datasets.h, infer/infer.h, infer/ensemble.h, config.h) "
                           "and base/");
    }
    lines_free(&L);
    return into_core;
}

TEST(source_ui_and_src_include_only_the_doors)
{
    const char *root = source_root();
    T_REQUIRE(root != NULL); /* the sources, beside or above the test binary */
    int into_core = 0, doors = 0;
    paths files = { 0 };
    list_sources(root, "ui", 1, &files);
    int n_ui = files.n;
    list_sources(root, "src", 1, &files);
    T_CHECKF(n_ui > 10 && files.n - n_ui > 10, "only %d source files in ui/, %d in src/", n_ui,
             files.n - n_ui);
    for (int i = 0; i < files.n; i++)
        into_core += check_door_includes(root, files.v[i], 0);
    T_CHECKF(into_core > 20, "only %d includes into core/ found in ui/ and src/", into_core);
    for (int d = 0; d < N_DOORS; d++) {
        char full[4200];
        snprintf(full, sizeof full, "%s/%s", root, DOORS[d]);
        if (!util_is_file(full))
            continue;
        doors++;
        check_door_includes(root, DOORS[d], 1);
    }
    T_CHECKF(doors == N_DOORS, "only %d of the %d doors found", doors, N_DOORS);
    paths_free(&files);
}

/* ---- floors ------------------------------------------------------------------------ */

/* The floors of core/, low to high: a file may include headers from its own floor and
 * those below. A folder is a floor; core/config.h and core/run.h (plain types that
 * anyone may include; they include only base/) are one, with their .c files; every
 * other file at the top of core/ (engine, series) is the highest. Folders not made yet
 * (pool, run, infer) are simply absent. */
static const char *const FLOORS[] = {
    "core/base/", "core/config.h core/config.c core/run.h core/run.c", "core/io/",
    "core/data/", "core/picture/", "core/nn/", "core/pool/", "core/run/", "core/infer/",
    "core/train/", "the rest of core/",
};
#define N_FLOORS ((int)(sizeof FLOORS / sizeof FLOORS[0]))

/* The floor of a repository path in core/: an index into FLOORS, or -1 for a path
 * outside core/ or in a folder of core/ that is on no floor. */
static int floor_of(const char *rel)
{
    if (strncmp(rel, "core/", 5) != 0)
        return -1;
    const char *slash = strchr(rel + 5, '/');
    for (int f = 0; f < N_FLOORS - 1; f++) {
        const char *fl = FLOORS[f];
        size_t n = strlen(fl);
        if (fl[n - 1] == '/') {
            if (slash && strncmp(rel, fl, n) == 0)
                return f;
            continue;
        }
        for (const char *p = fl; *p;) {  /* a list of files */
            size_t k = strcspn(p, " ");
            if (strlen(rel) == k && strncmp(rel, p, k) == 0)
                return f;
            p += k + (p[k] == ' ');
        }
    }
    return slash ? -1 : N_FLOORS - 1;
}

TEST(source_floors)
{
    const char *root = source_root();
    T_REQUIRE(root != NULL); /* the sources, beside or above the test binary */
    paths core = { 0 };
    list_sources(root, "core", 1, &core);
    T_CHECKF(core.n > 50, "only %d source files in core/", core.n);
    int n_includes = 0;
    for (int i = 0; i < core.n; i++) {
        const int from = floor_of(core.v[i]);
        T_CHECKF(from >= 0, "%s: its folder is on no floor (add it to FLOORS in "
                 "tests/test_source.c)", core.v[i]);
        lines L;
        if (from < 0 || read_lines(root, core.v[i], &L) != 0)
            continue;
        for (int k = 0; k < L.n; k++) {
            char inc[512], rel[4200];
            /* What does not resolve (build/gen's protobuf-c headers) is not in core/. */
            if (!quoted_include(L.at[k], inc, sizeof inc) ||
                resolve_include(root, core.v[i], inc, rel, sizeof rel) != 0)
                continue;
            const int to = floor_of(rel);
            n_includes++;
            T_CHECKF(to <= from, "%s:%d: #include \"%s\": floor %s includes floor %s above it",
                     core.v[i], k + 1, inc, FLOORS[from], to < 0 ? rel : FLOORS[to]);
        }
        lines_free(&L);
    }
    T_CHECKF(n_includes > 100, "only %d includes within core/ found", n_includes);
    paths_free(&core);
}

/* ---- sizes ------------------------------------------------------------------------- */

/* The name of the function whose signature ends above line `open` (its '{'): the word
 * before the first '(' on the nearest line above that has one. Returns that line. */
static int function_name(const lines *L, int open, char *name, size_t size)
{
    snprintf(name, size, "?");
    int k = open - 1;
    while (k > 0 && !strchr(L->at[k], '('))
        k--;
    const char *paren = strchr(L->at[k], '(');
    if (!paren)
        return k;
    const char *e = paren;
    while (e > L->at[k] && e[-1] == ' ')
        e--;
    const char *b = e;
    while (b > L->at[k] && (isalnum((unsigned char)b[-1]) || b[-1] == '_'))
        b--;
    if (e > b && (size_t)(e - b) < size)
        snprintf(name, size, "%.*s", (int)(e - b), b);
    return k;
}

/* Fails once per function of file rel longer than MAX_FUNC_LINES; *n_funcs counts them
 * all. */
static void check_functions(const char *rel, const lines *L, int *n_funcs)
{
    for (int i = 1; i < L->n; i++) {
        if (L->at[i][0] != '{')
            continue;
        int j = i + 1;
        while (j < L->n && L->at[j][0] != '}')
            j++;
        int len = j - i + 1;
        char name[128];
        int sig = function_name(L, i, name, sizeof name);
        T_CHECKF(len <= MAX_FUNC_LINES, "%s:%d: function %s is %d lines, over %d", rel, sig + 1,
                 name, len, MAX_FUNC_LINES);
        (*n_funcs)++;
        i = j;
    }
}

TEST(source_sizes_within_bounds)
{
    const char *root = source_root();
    T_REQUIRE(root != NULL); /* the sources, beside or above the test binary */
    paths bounded = { 0 }, all = { 0 };
    list_sources(root, "core", 1, &bounded);
    list_sources(root, "ui", 1, &bounded);
    for (int i = 0; i < bounded.n; i++)
        paths_add(&all, bounded.v[i]);
    list_sources(root, "src", 1, &all);
    T_CHECKF(bounded.n > 50 && all.n > bounded.n, "too few sources found: %d in core/ and "
             "ui/, %d with src/", bounded.n, all.n);

    int n_funcs = 0;
    for (int i = 0; i < all.n; i++) {
        lines L;
        int ok = read_lines(root, all.v[i], &L) == 0;
        T_CHECKF(ok, "%s: cannot be read", all.v[i]);
        if (!ok)
            continue;
        if (i < bounded.n)
            T_CHECKF(L.n <= MAX_FILE_LINES, "%s: %d lines, over %d", all.v[i], L.n,
                     MAX_FILE_LINES);
        check_functions(all.v[i], &L, &n_funcs);
        lines_free(&L);
    }
    T_CHECKF(n_funcs > 500, "only %d functions found", n_funcs);
    paths_free(&bounded);
    paths_free(&all);
}

/* ---- the run folder's names ---------------------------------------------------------- */

/* The files of a run folder (core/run/runfolder_impl.h's RUN_N_*). "config" is left
 * out: it is also an option's name and the user's configuration file. */
static const char *const run_names[] = {
    "history.json", "checkpoint.ckpt", "valid_preds.jsonl", "valid_labels.json",
    "test_preds.json", "submission.csv", "log.txt", "model.onnx", "report.json",
    "classes.txt", "model-int8.onnx", "best.ckpt", "summary.json", "ensemble.json",
};

/* 1 when the literal's text s (n bytes) names file name as a path or a part of one:
 * the whole text, or name after a '/' or before one, in a text without spaces. Prose
 * that mentions a file ("no submission.csv", a help line's "RUN/model.onnx") is not
 * a path a program opens. */
static int literal_names(const char *s, size_t n, const char *name)
{
    size_t m = strlen(name);
    if (memchr(s, ' ', n))
        return 0;
    for (size_t at = 0; at + m <= n; at++) {
        if (memcmp(s + at, name, m) != 0)
            continue;
        int before = at == 0 ? 0 : s[at - 1] == '/' ? 1 : -1;
        int after = at + m == n ? 0 : s[at + m] == '/' ? 1 : -1;
        if (before >= 0 && after >= 0 && (before || after || n == m))
            return 1;
    }
    return 0;
}

/* The macros of the run folder's names: the old RF_ tables, core/run/'s private
 * RUN_N_*, the old export name. */
static int name_macro(const char *id, size_t n)
{
    return (n > 3 && !strncmp(id, "RF_", 3)) || (n > 6 && !strncmp(id, "RUN_N_", 6)) ||
           (n == 14 && !strncmp(id, "RM_EXPORT_NAME", 14));
}

/* Every offence of file rel (its text t, len bytes): literals naming a run folder's
 * file, name macros in code; comments skipped. Returns how many. */
static int run_name_offences(const char *rel, const char *t, size_t len)
{
    int bad = 0, line = 1, data = !strncmp(rel, "core/data/", 10);
    for (size_t i = 0; i < len;) {
        char c = t[i];
        if (c == '\n') {
            line++;
            i++;
        } else if (c == '/' && i + 1 < len && t[i + 1] == '/') {
            while (i < len && t[i] != '\n')
                i++;
        } else if (c == '/' && i + 1 < len && t[i + 1] == '*') {
            for (i += 2; i + 1 < len && !(t[i] == '*' && t[i + 1] == '/'); i++)
                line += t[i] == '\n';
            i += 2;
        } else if (c == '"' || c == '\'') {
            size_t b = ++i;
            while (i < len && t[i] != c && t[i] != '\n')
                i += t[i] == '\\' ? 2 : 1;
            for (size_t k = 0; c == '"' && k < sizeof run_names / sizeof run_names[0]; k++) {
                if (data && !strcmp(run_names[k], "classes.txt"))
                    continue; /* the dataset folder's own file */
                if (literal_names(t + b, i - b, run_names[k])) {
                    bad++;
                    T_CHECKF(0, "%s:%d: the string \"%.*s\" names the run folder's %s: "
                             "only core/run/ builds paths in a run folder",
                             rel, line, (int)(i - b), t + b, run_names[k]);
                }
            }
            i++;
        } else if (isalpha((unsigned char)c) || c == '_') {
            size_t b = i;
            while (i < len && (isalnum((unsigned char)t[i]) || t[i] == '_'))
                i++;
            if (name_macro(t + b, i - b)) {
                bad++;
                T_CHECKF(0, "%s:%d: %.*s: the run folder's names are core/run/'s alone "
                         "(name its files by run_file: RUN_F_*)",
                         rel, line, (int)(i - b), t + b);
            }
        } else {
            i++;
        }
    }
    return bad;
}

TEST(source_run_folder_names_only_in_core_run)
{
    const char *root = source_root();
    T_REQUIRE(root != NULL); /* the sources, beside or above the test binary */
    paths all = { 0 };
    list_code_sources(root, &all);
    T_CHECKF(all.n > 100, "only %d source files found", all.n);
    int checked = 0, inside = 0;
    for (int i = 0; i < all.n; i++) {
        if (!strncmp(all.v[i], "core/run/", 9)) {
            inside++;
            continue;
        }
        char path[8400];
        snprintf(path, sizeof path, "%s/%s", root, all.v[i]);
        uint8_t *data;
        size_t len;
        int ok = util_read_file(path, &data, &len, NULL) == PT_OK;
        T_CHECKF(ok, "%s: cannot be read", all.v[i]);
        if (!ok)
            continue;
        run_name_offences(all.v[i], (const char *)data, len);
        free(data);
        checked++;
    }
    T_CHECKF(inside >= 8 && checked > 100, "%d files under core/run/, %d checked outside it",
             inside, checked);
    /* The check itself: a path is caught, prose is not. */
    T_EQ_INT(literal_names("%s/model.onnx", 13, "model.onnx"), 1);
    T_EQ_INT(literal_names("no model.onnx here", 18, "model.onnx"), 0);
    T_EQ_INT(literal_names("as RUN/model.onnx", 17, "model.onnx"), 0);
    T_EQ_INT(literal_names("model.onnx", 10, "model.onnx"), 1);
    T_EQ_INT(literal_names("my.model.onnx", 13, "model.onnx"), 0);
    paths_free(&all);
}

/* ---- threads ----------------------------------------------------------------------- */

/* Where a source file may start threads (issue 41): the pool, the pipeline's workers,
 * shards' encoders, the engine's run and finder threads (engine.c) and its sample thread
 * (engine_samples.c). ui/ and src/ start none. */
static int may_start_threads(const char *rel)
{
    return strncmp(rel, "core/pool/", 10) == 0 || strcmp(rel, "core/data/pipeline.c") == 0 ||
           strcmp(rel, "core/data/shards.c") == 0 || strcmp(rel, "core/engine.c") == 0 ||
           strcmp(rel, "core/engine_samples.c") == 0;
}

/* Occurrences of word on line, outside comments and string literals; *in_comment
 * carries a block comment from line to line. */
static int count_code_word(const char *line, const char *word, int *in_comment)
{
    size_t wl = strlen(word);
    int n = 0;
    for (const char *c = line; *c; c++) {
        if (*in_comment) {
            if (c[0] == '*' && c[1] == '/') {
                *in_comment = 0;
                c++;
            }
        } else if (c[0] == '/' && c[1] == '*') {
            *in_comment = 1;
            c++;
        } else if (c[0] == '/' && c[1] == '/') {
            break;
        } else if (*c == '"' || *c == '\'') {
            char q = *c;
            for (c++; *c && *c != q; c++)
                if (*c == '\\' && c[1])
                    c++;
            if (!*c)
                break;
        } else if (strncmp(c, word, wl) == 0 && (c == line || !(isalnum((unsigned char)c[-1]) ||
                                                               c[-1] == '_'))) {
            n++;
            c += wl - 1;
        }
    }
    return n;
}

TEST(source_threads_only_in_the_pool)
{
    const char *root = source_root();
    T_REQUIRE(root != NULL); /* the sources, beside or above the test binary */
    paths all = { 0 };
    list_code_sources(root, &all);
    T_CHECKF(all.n > 50, "only %d sources found", all.n);
    int in_pool = 0;
    for (int i = 0; i < all.n; i++) {
        lines L;
        int ok = read_lines(root, all.v[i], &L) == 0;
        T_CHECKF(ok, "%s: cannot be read", all.v[i]);
        if (!ok)
            continue;
        int in_comment = 0;
        for (int k = 0; k < L.n; k++) {
            int n = count_code_word(L.at[k], "pthread_create", &in_comment);
            if (n == 0)
                continue;
            if (strncmp(all.v[i], "core/pool/", 10) == 0)
                in_pool += n;
            T_CHECKF(may_start_threads(all.v[i]),
                     "%s:%d: pthread_create outside the replica pool, the pipeline's "
                     "workers, shards and the engine%s", all.v[i], k + 1,
                     strncmp(all.v[i], "core/infer/", 11) == 0 ? " (inference makes no threads: "
                                                                  "it runs on the pool)" : "");
        }
        lines_free(&L);
    }
    /* Not vacuous: the pool itself is found and read. */
    T_CHECKF(in_pool > 0, "no pthread_create found in core/pool/");
    paths_free(&all);
}

/* ---- the trainer's state ------------------------------------------------------------ */

#define MAX_TRN_FIELDS 25

/* The members of a struct whose body starts after its '{' at t: at the body's top
 * level, each ';' ends a declaration, and each ',' outside parentheses and brackets
 * before it adds a name (`int rank, ranks;` is two). Comments and preprocessor lines
 * are skipped; a nested struct's own members are not counted, its names are.
 * Returns the count, or -1 when the body does not close. */
static int struct_members(const char *t)
{
    int depth = 1, nest = 0, commas = 0, n = 0, line_start = 1;
    for (const char *p = t; *p; p++) {
        if (line_start && *p == '#') {
            while (*p && *p != '\n')
                p++;
            if (!*p)
                break;
        }
        line_start = *p == '\n' || (line_start && (*p == ' ' || *p == '\t'));
        if (p[0] == '/' && p[1] == '*') {
            const char *end = strstr(p + 2, "*/");
            if (!end)
                return -1;
            p = end + 1;
        } else if (p[0] == '/' && p[1] == '/') {
            while (p[1] && p[1] != '\n')
                p++;
        } else if (*p == '{') {
            depth++;
        } else if (*p == '}') {
            if (--depth == 0)
                return n;
        } else if (depth == 1 && (*p == '(' || *p == '[')) {
            nest++;
        } else if (depth == 1 && (*p == ')' || *p == ']')) {
            nest--;
        } else if (depth == 1 && nest == 0 && *p == ',') {
            commas++;
        } else if (depth == 1 && nest == 0 && *p == ';') {
            n += commas + 1;
            commas = 0;
        }
    }
    return -1;
}

TEST(source_trn_at_most_25_fields)
{
    const char *root = source_root();
    T_REQUIRE(root != NULL); /* the sources, beside or above the test binary */
    paths train = { 0 };
    list_sources(root, "core/train", 0, &train);
    T_CHECKF(train.n > 5, "only %d source files in core/train/", train.n);
    int found = 0;
    for (int i = 0; i < train.n; i++) {
        char path[8400];
        snprintf(path, sizeof path, "%s/%s", root, train.v[i]);
        uint8_t *data;
        size_t len;
        if (util_read_file(path, &data, &len, NULL) != PT_OK)
            continue;
        char *text = realloc(data, len + 1);
        if (!text) {
            free(data);
            continue;
        }
        text[len] = '\0';
        for (const char *at = strstr(text, "struct trn {"); at; at = strstr(at + 1, "struct trn {")) {
            if (at != text && (isalnum((unsigned char)at[-1]) || at[-1] == '_'))
                continue;
            found++;
            int n = struct_members(at + strlen("struct trn {"));
            T_CHECKF(n >= 0, "%s: struct trn's body does not close", train.v[i]);
            T_CHECKF(n <= MAX_TRN_FIELDS, "%s: struct trn has %d fields, over %d", train.v[i], n,
                     MAX_TRN_FIELDS);
        }
        free(text);
    }
    T_CHECKF(found == 1, "struct trn found %d times under core/train/ (expected once)", found);
    /* The count itself. */
    T_EQ_INT(struct_members(" int a; int b, c; } x;"), 3);
    T_EQ_INT(struct_members(" int (*f)(int a, int b); char n[2][3]; } x;"), 2);
    T_EQ_INT(struct_members(" /* a; b; */ struct { int a, b; } in, out;\n#if X\n int c;\n#endif\n}"),
             3);
    T_EQ_INT(struct_members(" long long v[4], w[4],\n    z[4]; // d;\n}"), 3);
    T_EQ_INT(struct_members(" int a;"), -1);
    paths_free(&train);
}
