/* runs_events — runs.h's reading of TensorBoard event files: io/tbevent.h's reader
 * behind the door, its items as plain runs_event values. */
#include "runs.h"

#include <stdlib.h>

#include "io/png.h"
#include "io/tbevent.h"

struct runs_events {
    tbe_reader *r;
};

int runs_events_find(const char *path, char ***files, int *n, pt_err *e)
{
    return tbe_find_files(path, files, n, e);
}

int runs_events_open(const char *file, runs_events **out, pt_err *e)
{
    runs_events *r = calloc(1, sizeof *r);
    if (!r)
        return err_set(e, PT_ENOMEM, file, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    int rc = tbe_open(&r->r, file, e);
    if (rc != PT_OK) {
        free(r);
        return rc;
    }
    *out = r;
    return PT_OK;
}

void runs_events_close(runs_events *r)
{
    if (!r)
        return;
    tbe_close(r->r);
    free(r);
}

int runs_events_next(runs_events *r, runs_event *it, pt_err *e)
{
    tbe_item t;
    int rc = tbe_next(r->r, &t, e);
    if (rc <= 0)
        return rc;
    *it = (runs_event){ .is_image = t.kind == TBE_IMAGE,
                        .tag = t.tag,
                        .step = t.step,
                        .value = t.value,
                        .width = t.width,
                        .height = t.height,
                        .image = t.image,
                        .image_len = t.image_len };
    return rc;
}

const char *runs_events_version(const runs_events *r)
{
    return tbe_file_version(r->r);
}

const char *runs_events_writer(const runs_events *r)
{
    return tbe_source_writer(r->r);
}

long long runs_events_records(const runs_events *r)
{
    return tbe_records(r->r);
}

long long runs_events_skipped(const runs_events *r)
{
    return tbe_skipped(r->r);
}

const char *runs_event_image_ext(const runs_event *it)
{
    if (png_is_png(it->image, it->image_len))
        return "png";
    if (it->image_len > 2 && it->image[0] == 0xff && it->image[1] == 0xd8)
        return "jpg";
    return "img";
}
