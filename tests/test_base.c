/* Tests of core/base: folder listing, atomic writes and their leftovers, CPU features. */
#include "tests/t.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cpu.h"
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

/* The temporary files of writers that were killed go; those of a writer still at
 * work (a live process), of this process, and names that only look alike stay. */
TEST(util_remove_stale_temps_removes_only_dead_writers_files)
{
    const char *dir = t_tmpdir();
    pid_t dead = fork();
    if (dead == 0)
        _exit(0);
    T_REQUIRE(dead > 0 && waitpid(dead, NULL, 0) == dead);
    char name[64];
    snprintf(name, sizeof name, "checkpoint.ckpt.tmp.%ld", (long)dead);
    touch(dir, name);
    snprintf(name, sizeof name, "history.json.tmp.%ld", (long)getppid());
    touch(dir, name);
    snprintf(name, sizeof name, "config.tmp.%ld", (long)getpid());
    touch(dir, name);
    touch(dir, "notes.tmp.txt");
    touch(dir, "history.json");
    T_EQ_INT(util_remove_stale_temps(dir, NULL), 1);
    char **v;
    int n;
    T_REQUIRE(util_list_dir(dir, UTIL_LIST_ALL, &v, &n, NULL) == PT_OK);
    T_EQ_INT(n, 4);
    for (int i = 0; i < n; i++)
        T_CHECKF(strncmp(v[i], "checkpoint.ckpt", 15) != 0, "%s stayed", v[i]);
    util_free_list(v, n);
    T_EQ_INT(util_remove_stale_temps("/nonexistent/folder", NULL), -1);
}

/* A write the file-size limit stops: an error naming the file, the old content
 * kept, no temporary file left. */
TEST(util_write_file_atomic_cut_short_keeps_the_old_file)
{
    const char *dir = t_tmpdir();
    char path[4096];
    util_path(path, sizeof path, "%s/f", dir);
    T_REQUIRE(util_write_file_atomic(path, "old", 3, NULL) == PT_OK);
    size_t len = 200 * 1024;
    char *big = malloc(len);
    T_REQUIRE(big != NULL);
    memset(big, 'n', len);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        /* In a child: the limit and the ignored signal stay there. */
        struct rlimit rl = { 100 * 1024, 100 * 1024 };
        signal(SIGXFSZ, SIG_IGN);
        pt_err e;
        int bad = setrlimit(RLIMIT_FSIZE, &rl) != 0 ||
                  util_write_file_atomic(path, big, len, &e) != PT_EIO ||
                  !strstr(e.msg, "cannot write: File too large after 102400 of 204800 bytes");
        free(big); /* valgrind looks at the child's leaks too */
        _exit(bad);
    }
    int st = 0;
    T_REQUIRE(pid > 0 && waitpid(pid, &st, 0) == pid);
    T_CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the cut write: status 0x%x", st);
    free(big);
    uint8_t *d;
    T_REQUIRE(util_read_file(path, &d, &len, NULL) == PT_OK);
    T_CHECK(len == 3 && !memcmp(d, "old", 3));
    free(d);
    char **v;
    int n;
    T_REQUIRE(util_list_dir(dir, UTIL_LIST_ALL, &v, &n, NULL) == PT_OK);
    T_EQ_INT(n, 1);
    util_free_list(v, n);
}

/* Large blocks start on a 2 MiB boundary (where a transparent huge page can back them)
 * and are zeroed to the end; small ones keep the 64-byte alignment; raw ones are
 * writable to their last byte. */
TEST(util_aligned_alloc_large_blocks_are_huge_page_aligned_and_zeroed)
{
    const size_t sizes[] = { 1, 64, 100, (size_t)4 << 20, ((size_t)9 << 20) + 3 };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t n = sizes[i];
        unsigned char *p = util_aligned_alloc(n);
        T_REQUIRE(p != NULL);
        size_t align = n >= ((size_t)4 << 20) ? ((size_t)2 << 20) : 64;
        T_CHECKF((uintptr_t)p % align == 0, "%zu bytes at %p", n, (void *)p);
        size_t nonzero = 0;
        for (size_t k = 0; k < n; k++)
            nonzero += p[k] != 0;
        T_CHECKF(nonzero == 0, "%zu of %zu bytes not zero", nonzero, n);
        memset(p, 0xab, n);
        util_aligned_free(p);
        unsigned char *q = util_aligned_alloc_raw(n);
        T_REQUIRE(q != NULL);
        T_CHECK((uintptr_t)q % align == 0);
        q[0] = 1;
        q[n - 1] = 2;
        T_CHECK((n == 1 || q[0] == 1) && q[n - 1] == 2);
        util_aligned_free(q);
    }
}

/* The features as /proc/cpuinfo's flags line names them, in cpu_features' order. */
static const char *const CPUINFO_NAMES[] = { "ssse3",       "sse4_2",      "avx",      "avx2",
                                             "fma",         "avx512f",     "avx512bw", "avx512dq",
                                             "avx512vl",    "avx512_bf16", "avx512_vnni",
                                             "amx_tile",    "amx_bf16",    "amx_int8" };

static void features_as_array(const cpu_features *f, unsigned char out[14])
{
    const unsigned char v[14] = { f->ssse3,    f->sse42,       f->avx,         f->avx2,
                                  f->fma,      f->avx512f,     f->avx512bw,    f->avx512dq,
                                  f->avx512vl, f->avx512_bf16, f->avx512_vnni, f->amx_tile,
                                  f->amx_bf16, f->amx_int8 };
    memcpy(out, v, sizeof v);
}

/* Whether the space-separated list holds word. */
static int has_word(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = list; (p = strstr(p, word)) != NULL; p += n)
        if ((p == list || p[-1] == ' ' || p[-1] == '\t') &&
            (p[n] == ' ' || p[n] == '\n' || p[n] == '\0'))
            return 1;
    return 0;
}

/* base/cpu: CPUID and XGETBV say what Linux says (the kernel lists a feature only
 * when it saves its registers, as cpu_hw asks); the text names what is there;
 * PT_GEMM_AVX2 and the portable hook take the wide ones from what kernels may use. */
TEST(cpu_features_agree_with_proc_cpuinfo_and_the_switches_turn_them_off)
{
    const cpu_features *hw = cpu_hw();
    unsigned char have[14];
    features_as_array(hw, have);
    char text[256];
    T_EQ_INT(cpu_text(hw, text, sizeof text), 0);
    static const char *const TEXT_NAMES[] = { "ssse3",    "sse4.2",      "avx",        "avx2",
                                              "fma",      "avx512f",     "avx512bw",   "avx512dq",
                                              "avx512vl", "avx512_bf16", "avx512_vnni", "amx-tile",
                                              "amx-bf16", "amx-int8" };
    for (int i = 0; i < 14; i++)
        T_CHECKF(has_word(text, TEXT_NAMES[i]) == have[i], "%s in '%s'", TEXT_NAMES[i], text);
    if (hw->ssse3)
        T_EQ_INT(cpu_text(hw, text, 4), -1); /* "ssse3" does not fit */

    cpu_features f = *hw;
    cpu_mask_env(&f, "0");
    T_CHECK(memcmp(&f, hw, sizeof f) == 0);
    cpu_mask_env(&f, "");
    cpu_mask_env(&f, NULL);
    T_CHECK(memcmp(&f, hw, sizeof f) == 0);
    cpu_mask_env(&f, "1");
    T_CHECK(!f.avx512f && !f.avx512bw && !f.avx512dq && !f.avx512vl && !f.avx512_bf16 &&
            !f.avx512_vnni && !f.amx_tile && !f.amx_bf16 && !f.amx_int8);
    T_EQ_INT(f.avx2, hw->avx2);
    T_EQ_INT(f.fma, hw->fma);
    cpu_force_portable(1);
    const cpu_features *u = cpu_usable();
    T_CHECK(!u->avx && !u->avx2 && !u->fma && !u->avx512f && !u->amx_tile);
    T_EQ_INT(u->sse42, hw->sse42);
    cpu_force_portable(0);
    T_EQ_INT(cpu_usable()->avx2, hw->avx2);
    const char *env = getenv("PT_GEMM_AVX2");
    T_EQ_INT(cpu_usable()->avx512f, hw->avx512f && !(env && env[0] && env[0] != '0'));
    T_CHECK(!cpu_amx_enable() || hw->amx_tile);

    if (t_slow_mode()) {
        /* valgrind's CPU answers CPUID as the CPU it emulates (no AVX-512), not as the
         * machine's /proc/cpuinfo: the agreement is checked outside valgrind. */
        t_skip("under valgrind CPUID is valgrind's, not /proc/cpuinfo's");
        return;
    }
    FILE *in = fopen("/proc/cpuinfo", "r");
    if (!in) {
        t_skip("no /proc/cpuinfo");
        return;
    }
    static char line[65536];
    int found = 0;
    while (!found && fgets(line, sizeof line, in))
        found = strncmp(line, "flags", 5) == 0;
    fclose(in);
    if (!found) {
        t_skip("no flags line in /proc/cpuinfo (not x86)");
        return;
    }
    const char *colon = strchr(line, ':');
    T_REQUIRE(colon != NULL);
    for (int i = 0; i < 14; i++)
        T_CHECKF(has_word(colon + 1, CPUINFO_NAMES[i]) == have[i], "%s: cpuinfo %d, cpu_hw %d",
                 CPUINFO_NAMES[i], has_word(colon + 1, CPUINFO_NAMES[i]), have[i]);
}
