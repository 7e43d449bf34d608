/* Tests of core/base: folder listing. */
#include "tests/t.h"

#include <stdlib.h>

#include "base/util.h"

static void touch(const char *dir, const char *name)
{
    char path[4096];
    T_REQUIRE(util_path(path, sizeof path, "%s/%s", dir, name) == 0);
    T_REQUIRE(util_write_file_atomic(path, "x", 1, NULL) == PT_OK);
}

static void mkdir_in(const char *dir, const char *name)
{
    char path[4096];
    T_REQUIRE(util_path(path, sizeof path, "%s/%s", dir, name) == 0);
    T_REQUIRE(util_mkdirs(path, NULL) == PT_OK);
}

TEST(util_list_dir_sorted_files_dirs_all_and_missing_folder)
{
    const char *dir = t_tmpdir();
    touch(dir, "b.tfrec");
    touch(dir, "a.txt");
    touch(dir, "c");
    touch(dir, ".hidden");
    mkdir_in(dir, "zdir");
    mkdir_in(dir, "mdir");
    mkdir_in(dir, ".git");

    char **v;
    int n;
    pt_err e;
    T_REQUIRE(util_list_dir(dir, UTIL_LIST_FILES, &v, &n, &e) == PT_OK);
    T_EQ_INT(n, 3);
    if (n == 3) {
        T_EQ_STR(v[0], "a.txt");
        T_EQ_STR(v[1], "b.tfrec");
        T_EQ_STR(v[2], "c");
    }
    util_free_list(v, n);

    T_REQUIRE(util_list_dir(dir, UTIL_LIST_DIRS, &v, &n, &e) == PT_OK);
    T_EQ_INT(n, 2);
    if (n == 2) {
        T_EQ_STR(v[0], "mdir");
        T_EQ_STR(v[1], "zdir");
    }
    util_free_list(v, n);

    /* Everything but "." and "..": dot names and both kinds, still sorted. */
    T_REQUIRE(util_list_dir(dir, UTIL_LIST_ALL, &v, &n, &e) == PT_OK);
    T_EQ_INT(n, 7);
    if (n == 7) {
        T_EQ_STR(v[0], ".git");
        T_EQ_STR(v[1], ".hidden");
        T_EQ_STR(v[2], "a.txt");
        T_EQ_STR(v[6], "zdir");
    }
    util_free_list(v, n);

    /* An empty folder is an empty list, not an error. */
    char empty[4096];
    T_REQUIRE(util_path(empty, sizeof empty, "%s/mdir", dir) == 0);
    T_REQUIRE(util_list_dir(empty, UTIL_LIST_FILES, &v, &n, &e) == PT_OK);
    T_EQ_INT(n, 0);
    util_free_list(v, n);

    char missing[4096];
    T_REQUIRE(util_path(missing, sizeof missing, "%s/no-such-folder", dir) == 0);
    char *sentinel[1] = { NULL };
    v = sentinel; /* must come back NULL */
    n = 5;
    T_CHECK(util_list_dir(missing, UTIL_LIST_DIRS, &v, &n, &e) == PT_EIO);
    T_EQ_INT(e.code, PT_EIO);
    T_CHECK(v == NULL);
    T_EQ_INT(n, 0);
    T_CHECK(strstr(e.msg, "no-such-folder") != NULL);
    T_CHECK(strstr(e.msg, "cannot open folder") != NULL);
    /* Safe with a NULL list. */
    util_free_list(NULL, 0);
}
