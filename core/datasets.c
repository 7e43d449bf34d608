/* datasets — the door's calls that are one call of core/data/ (the larger ones have
 * their own files: data/inspect.c, ...). */
#include "datasets.h"

#include "data/demo.h"

int datasets_demo(const char *cache_root, char *path, size_t n, datasets_progress_fn progress,
                  void *ctx, pt_err *e)
{
    return demo_ensure(cache_root, path, n, progress, ctx, e);
}
