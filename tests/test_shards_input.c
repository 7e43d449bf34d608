/* petal-tui shards on photo folders as users have them: PNGs beside JPEGs, a folder
 * with no images, and files that are not images at all (issue 30, defect 3). */
#include "tests/t.h"
#include "tests/fixtures.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "base/util.h"
#include "io/png.h"

static int shards(const char *src, const char *out, char **text)
{
    char cmd[16384];
    snprintf(cmd, sizeof cmd, "%s shards '%s' '%s' --size 32 --val 0.2 2>&1", t_bin(), src, out);
    return t_run(cmd, text);
}

/* n PNG photos of a flat colour into dir, named p0.png ... */
static int png_class(const char *dir, int n, uint8_t shade)
{
    pt_err e;
    if (util_mkdirs(dir, &e) != PT_OK)
        return -1;
    uint8_t rgb[40 * 30 * 3];
    for (int i = 0; i < n; i++) {
        for (size_t k = 0; k < sizeof rgb; k++)
            rgb[k] = (uint8_t)(shade + (k % 3) * 40 + i);
        char path[4200];
        snprintf(path, sizeof path, "%s/p%d.png", dir, i);
        if (png_write_rgb(path, rgb, 40, 30, &e) != PT_OK)
            return -1;
    }
    return 0;
}

TEST(shards_take_png_photos_and_name_a_folder_without_images)
{
    const char *dir = t_tmpdir();
    char photos[1024], cls[4096], out[1024];
    snprintf(photos, sizeof photos, "%s/photos", dir);
    T_REQUIRE(fx_photo_folder(photos, 2, 10, 48) != NULL);
    snprintf(cls, sizeof cls, "%s/pngs", photos);
    T_REQUIRE(png_class(cls, 10, 30) == 0);
    snprintf(cls, sizeof cls, "%s/notes", photos);
    T_REQUIRE(mkdir(cls, 0755) == 0);
    char note[4200];
    snprintf(note, sizeof note, "%s/readme.txt", cls);
    T_REQUIRE(util_write_file_atomic(note, "not a photo\n", 12, NULL) == PT_OK);
    snprintf(out, sizeof out, "%s/out", dir);
    char *text;
    T_EQ_INT(shards(photos, out, &text), 0);
    T_CHECKF(strstr(text, "total: 30 records") != NULL, "%s", text);
    T_CHECKF(strstr(text, "notes: no .jpg, .jpeg or .png files: not a class") != NULL, "%s", text);
    free(text);
    char classes[4200];
    snprintf(classes, sizeof classes, "%s/classes.txt", out);
    uint8_t *names;
    size_t len;
    T_REQUIRE(util_read_file(classes, &names, &len, NULL) == PT_OK);
    T_CHECKF(strstr((char *)names, "pngs\n") != NULL, "%s", (char *)names);
    T_CHECK(strstr((char *)names, "notes") == NULL);
    free(names);
}

TEST(shards_of_folders_with_no_readable_image_fail_and_write_nothing)
{
    const char *dir = t_tmpdir();
    char photos[1024], cls[2048], out[1024], bad[4096];
    snprintf(photos, sizeof photos, "%s/photos", dir);
    snprintf(out, sizeof out, "%s/out", dir);
    /* Files named as photos that are not: every one skipped. */
    for (int c = 0; c < 2; c++) {
        snprintf(cls, sizeof cls, "%s/class%d", photos, c);
        T_REQUIRE(util_mkdirs(cls, NULL) == PT_OK);
        for (int i = 0; i < 3; i++) {
            snprintf(bad, sizeof bad, "%s/fake%d.jpg", cls, i);
            T_REQUIRE(util_write_file_atomic(bad, "GIF89a not a jpeg", 17, NULL) == PT_OK);
        }
    }
    char *text;
    int rc = shards(photos, out, &text);
    T_CHECKF(rc != 0, "%s", text);
    T_CHECKF(strstr(text, "fake0.jpg") != NULL, "%s", text);
    T_CHECKF(strstr(text, "none of the 6 images could be read") != NULL, "%s", text);
    T_CHECK(strstr(text, "total:") == NULL);
    free(text);
    T_CHECK(!util_is_dir(out));
    /* No class folder holds an image: said, nothing written. */
    char empty[1024];
    snprintf(empty, sizeof empty, "%s/empty", dir);
    snprintf(cls, sizeof cls, "%s/a", empty);
    T_REQUIRE(util_mkdirs(cls, NULL) == PT_OK);
    rc = shards(empty, out, &text);
    T_CHECK(rc != 0);
    T_CHECKF(strstr(text, "no class folders with .jpg, .jpeg or .png files") != NULL, "%s", text);
    free(text);
    T_CHECK(!util_is_dir(out));
}
