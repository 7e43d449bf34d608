/* predict_inputs — the image files under predict's input paths (predict.h,
 * prd_list_inputs): folders walked recursively in sorted order, symbolic links
 * followed, no folder entered twice (a link back up the tree is a loop otherwise). */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/util.h"
#include "data/imgfile.h"
#include "infer/predict.h"

typedef struct walk {
    char **files;
    long long n, cap;
    long long skipped;
    struct { dev_t dev; ino_t ino; } *seen;   /* folders entered */
    int n_seen, cap_seen;
} walk;

static int push(walk *w, const char *path, pt_err *e)
{
    if (w->n == w->cap) {
        long long cap = w->cap ? w->cap * 2 : 64;
        char **f = realloc(w->files, (size_t)cap * sizeof *f);
        if (!f)
            return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
        w->files = f;
        w->cap = cap;
    }
    if (!(w->files[w->n] = strdup(path)))
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    w->n++;
    return PT_OK;
}

/* 1 when the folder was entered before; else records it. -1 out of memory. */
static int seen_before(walk *w, const struct stat *st)
{
    for (int i = 0; i < w->n_seen; i++)
        if (w->seen[i].dev == st->st_dev && w->seen[i].ino == st->st_ino)
            return 1;
    if (w->n_seen == w->cap_seen) {
        int cap = w->cap_seen ? w->cap_seen * 2 : 16;
        void *s = realloc(w->seen, (size_t)cap * sizeof *w->seen);
        if (!s)
            return -1;
        w->seen = s;
        w->cap_seen = cap;
    }
    w->seen[w->n_seen].dev = st->st_dev;
    w->seen[w->n_seen].ino = st->st_ino;
    w->n_seen++;
    return 0;
}

static int walk_path(walk *w, const char *path, int top, pt_err *e);

static int walk_dir(walk *w, const char *dir, pt_err *e)
{
    char **names;
    int n;
    if (util_list_dir(dir, UTIL_LIST_ALL, &names, &n, e) != PT_OK)
        return e->code; /* sorted by name */
    int rc = PT_OK;
    for (int i = 0; i < n && rc == PT_OK; i++) {
        char path[4096];
        if (util_path(path, sizeof path, "%s/%s", dir, names[i]) < 0) {
            rc = err_set(e, PT_EUSAGE, dir, PT_NO_RECORD, PT_NO_OFFSET, "a path is too long");
            break;
        }
        rc = walk_path(w, path, 0, e);
    }
    util_free_list(names, n);
    return rc;
}

static int walk_path(walk *w, const char *path, int top, pt_err *e)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        /* Named by the user: an error. Met in a folder (a dangling link): a file
         * predict will name as unreadable. */
        if (top)
            return err_set(e, PT_EIO, path, PT_NO_RECORD, PT_NO_OFFSET, "no such file or folder");
        return imf_is_image_name(path) ? push(w, path, e) : (w->skipped++, PT_OK);
    }
    if (S_ISDIR(st.st_mode)) {
        int s = seen_before(w, &st);
        if (s < 0)
            return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
        return s ? PT_OK : walk_dir(w, path, e);
    }
    if (top || imf_is_image_name(path))
        return push(w, path, e);
    w->skipped++;
    return PT_OK;
}

int prd_list_inputs(char *const *paths, int n, char ***files, long long *count,
                    long long *skipped, pt_err *e)
{
    walk w = { 0 };
    int rc = PT_OK;
    for (int i = 0; i < n && rc == PT_OK; i++)
        rc = walk_path(&w, paths[i], 1, e);
    free(w.seen);
    if (rc != PT_OK) {
        prd_list_free(w.files, w.n);
        return rc;
    }
    *files = w.files;
    *count = w.n;
    if (skipped)
        *skipped = w.skipped;
    return PT_OK;
}

void prd_list_free(char **files, long long count)
{
    for (long long i = 0; files && i < count; i++)
        free(files[i]);
    free(files);
}
