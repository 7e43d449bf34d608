/* Training on a truncated shard: each bad record is logged once a run, however often
 * the passes meet it, and the run says how many records read, not how many the
 * files' names count (issue 30, defect 10). */
#include "tests/t.h"
#include "tests/fixtures.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

static int count_of(const char *s, const char *w)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, w)) != NULL; p += strlen(w))
        n++;
    return n;
}

TEST(train_a_truncated_shard_is_logged_once_and_the_readable_count_said)
{
    const char *dir = t_tmpdir();
    static const long long tc[2] = { 40, 40 }, vc[2] = { 8, 8 };
    const char *root = fx_dataset(dir, 2, tc, vc, 0, 32, 40);
    T_REQUIRE(root != NULL);
    char train[4400], shard[4600];
    util_path(train, sizeof train, "%s/train", root);
    char **names;
    int n;
    T_REQUIRE(util_list_dir(train, UTIL_LIST_FILES, &names, &n, NULL) == PT_OK && n == 2);
    util_path(shard, sizeof shard, "%s/%s", train, names[0]);
    util_free_list(names, n);
    uint8_t *d;
    size_t len;
    T_REQUIRE(util_read_file(shard, &d, &len, NULL) == PT_OK);
    T_REQUIRE(util_write_file_atomic(shard, d, len / 2, NULL) == PT_OK);
    free(d);
    char cmd[9000], *out;
    snprintf(cmd, sizeof cmd, "%s --headless --data '%s/..' --out '%s/run' --epochs 3 "
             "--replicas 1 --batch-per-replica 8 --image-size 32 2>&1", t_bin(), root, dir);
    T_EQ_INT(t_run(cmd, &out), 0);
    free(out);
    char log[4400];
    util_path(log, sizeof log, "%s/run/log.txt", dir);
    T_REQUIRE(util_read_file(log, &d, &len, NULL) == PT_OK);
    char *text = realloc(d, len + 1);
    T_REQUIRE(text != NULL);
    text[len] = '\0';
    /* One truncated record: one line, though three epochs (and the label scan) met it. */
    T_CHECKF(count_of(text, "data error: ") == 1 && count_of(text, "truncated") == 1, "%s", text);
    const char *plan = strstr(text, " train / ");
    T_REQUIRE(plan != NULL);
    const char *num = plan;
    while (num > text && num[-1] >= '0' && num[-1] <= '9')
        num--;
    long long readable = atoll(num);
    T_CHECKF(readable > 40 && readable < 80, "%lld readable: %s", readable, text);
    T_CHECKF(strstr(text, "unreadable of the 96 train and val records the files' names count") !=
                 NULL,
             "%s", text);
    free(text);
}
