/* pipeline_files — the file source's decode (pipeline.h): what a worker does with one
 * path given to predict. */
#include <stdlib.h>
#include <sys/stat.h>

#include "base/util.h"
#include "data/imgfile.h"
#include "data/pipeline.h"

int pipe_decode_file(jpg_codec *jc, img_scratch *scratch, const char *path,
                     long long max_bytes, uint8_t *out, int S, int crop, int fast_decode,
                     pt_err *e)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    pt_err why;
    err_clear(&why);
    struct stat st;
    /* Refused before reading: a size this large is a mistake, not an image. */
    if (max_bytes > 0 && stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > max_bytes)
        return err_set(e, PT_ETOOBIG, path, PT_NO_RECORD, PT_NO_OFFSET,
                       "%lld bytes: files over %lld MiB are refused", (long long)st.st_size,
                       max_bytes >> 20);
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return err_set(e, PT_EIO, path, PT_NO_RECORD, PT_NO_OFFSET, "a folder, not an image");
    int rc = util_read_file(path, &buf, &len, e);
    if (rc != PT_OK)
        return rc;
    rc = imf_decode(jc, scratch, buf, len, out, S, crop, fast_decode, &why);
    free(buf);
    if (rc != PT_OK)
        return err_set(e, rc, path, PT_NO_RECORD, PT_NO_OFFSET, "%s", why.msg);
    return PT_OK;
}
