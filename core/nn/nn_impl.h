/* nn_impl — internals shared by the core/nn/ sources (not for other modules): the
 * node, model and context structs and the kernels several files use (conv's in
 * nn_conv.c, nn_dw.c, nn_gemm.c; shared elementwise ones in nn_elem.c). The table of
 * layer kinds and its hooks are in nn_layer.h.
 *
 * Ownership is as in nn.h. Kernels never allocate: every scratch array they use is
 * passed in by the caller (the context owns them).
 */
#ifndef PT_NN_IMPL_H
#define PT_NN_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "base/cpu.h"
#include "nn/nn.h"

/* Largest kernel / pool window side the builder accepts. */
#define NN_MAX_KERNEL 15

/* An activation a kernel applies to its own result (a ReLU/ReLU6 node fused into the
 * BN or conv before it), or none. Kernels take these, never layer kinds. */
enum nn_act { NN_ACT_NONE, NN_ACT_RELU, NN_ACT_RELU6 };

/* A bf16 workspace (nn_bf16.h's nn_bf16_ws): bytes at p, 64-byte aligned. */
typedef struct nn_bf16_area {
    void *p;
    size_t bytes;
} nn_bf16_area;

typedef struct nn_node {
    nn_op op;
    int in[2];               /* -1 when unused */
    int h, w, c;             /* output shape per example */
    size_t len;              /* h * w * c */
    int kh, kw, stride, pad_t, pad_l, groups, has_bias;  /* conv, pools */
    int pad_b, pad_r;        /* conv, pools: only for the description (the kernels skip
                                what lies outside the input; the output size holds it) */
    float rate;              /* dropout */
    float lo, hi;            /* clip */
    float q_scale;           /* quant: y = (clamp(round(x / q_scale) + q_zp, q_lo, q_hi) - */
    int q_zp, q_lo, q_hi;    /*   q_zp) * q_scale (nn_fakequant) */
    float *aff;              /* affine: scale[c] then shift[c] (owned by the model) */
    size_t p_off, w_len, b_len;     /* parameters */
    size_t buf_off, buf_len;        /* buffers (BN running mean, var) */
    size_t bn_coff;          /* BN: offset of its channels in the context's BN arrays */
    float bn_eps;            /* BN: added to the variance */
    float bn_momentum;       /* BN: running = momentum * running + (1 - momentum) * batch */
    int bn_slot;             /* BN: index among the BN layers */
    /* Filled by nn_model_finalize(). */
    int live;                /* the output depends on it */
    int consumers;           /* live nodes reading it (an add of x with x counts twice) */
    int last_use;            /* highest live node id reading it (its own id when none) */
    int fused_act;           /* BN, conv: the enum nn_act it applies itself */
    int alias;               /* activation fused into a BN or conv: that node's id; else -1 */
    int trainable;           /* its parameters receive gradients */
    int grad;                /* backward runs here (it or something below is trainable) */
} nn_node;

struct nn_model {
    int h, w, c;
    nn_node *nodes;
    int n_nodes, cap_nodes;
    int out;
    int finalized;
    int err;                 /* first builder error, PT_OK when none */
    char msg[256];
    nn_init_kind init;
    int bn_warm_start;       /* running statistics are placeholders: average the first */
    int input_grad;
    int n_bn;
    size_t bn_channels;      /* sum of the channels of all BN layers */
    int max_c;               /* largest channel count of any node */
    float *params;
    size_t n_params;
    float *bufs;
    size_t n_bufs;
    uint8_t *mask;
};

struct nn_ctx {
    const nn_model *m;
    int max_batch;
    int infer;               /* nn_ctx_new_infer: no gradients, masks or backward */
    nn_stop_fn stop;         /* nn_ctx_new_cancel's, while allocating; then NULL */
    void *stop_ctx;
    int stopped;             /* stop answered nonzero while allocating */
    int n;                   /* examples in the last forward */
    int training;            /* the last forward was a training one */
    int backward_ok;         /* a training forward ran and nothing invalidated it */
    int eval_grad;           /* the last forward was nn_forward_eval_grad's: inference
                                arithmetic, kept for a backward (BN frozen, no dropout) */
    const float **outp;      /* per node: its output in the last forward */
    float **act;             /* per node: its own output storage, NULL for none */
    float **dy;              /* per node: storage of the gradient of its output */
    uint8_t *fresh;          /* per node: dy holds a value in the current backward */
    uint8_t *dy_done;        /* per conv: the layer after took its dy through its fused
                                activation and summed its bias gradient (nn_dx_act) */
    float **drop_mask;       /* dropout: 0 or 1 / (1 - rate), per element */
    float *grads;
    float *ws;               /* im2col / col2im workspace: with a team, one per part */
    float **wpk;             /* per node: its weights packed (nn_ctx_pack_weights), or
                                NULL (unpacked, or not packed at all: wpk NULL) */
    float *wpk_arena;
    size_t ws_floats;
    size_t ws_stride;        /* floats from one part's workspace to the next */
    size_t ws_parts;         /* parts' workspaces allocated (1 without a team) */
    nn_team *team;           /* nn_ctx_set_team's, or NULL */
    int bf16;                /* nn_ctx_set_precision: the products take bf16 operands */
    nn_bf16_area bws;        /* their packing workspace (NULL until bf16 is set) */
    float *bn_mean, *bn_invstd;       /* batch statistics of the last training forward */
    float *bn_a, *bn_b;               /* per BN channel: the last forward's y = act(x * a + b) */
    /* Outputs a training context does not keep (nn_ctx.c): per node, its enum nn_keep;
     * for a replayed one, the backward step before which it is recomputed and the last
     * step that reads it, and where (c->act[i], its forward storage, is shared by
     * lifetime). */
    int recompute;           /* training: replay what is cheap (nn_ctx_new_cancel) */
    uint8_t *replayed;
    int *replay_at, *replay_lo;
    float **ract;
    uint8_t *replay_need;    /* per node: replayed and read in the current backward */
    double *rec_mean, *rec_var;       /* recorded sums (weighted by examples) */
    double *rec_w;                    /* per BN layer: examples recorded */
    float *fscratch;                  /* 4 * max_c floats */
    double *dscratch;                 /* 4 * max_c doubles */
    int profile;
    double *t_fwd, *t_bwd;
    nn_node_observer observe;         /* NULL: none (nn_ctx_on_node) */
    void *observe_arg;
    nn_node_observer observe_grad;    /* NULL: none (nn_ctx_on_node_grad) */
    void *observe_grad_arg;
    nn_backward_progress on_progress; /* NULL: none */
    void *progress_arg;
    size_t bytes;
    size_t shared_floats, mask_floats;   /* the dy (or inference) arena, the masks */
    /* The storage blocks behind the pointers above. */
    float *act_arena, *dy_arena, *mask_arena;
};

/* Which node's gradient storage node i uses (an activation fused into its BN or conv
 * shares that node's). */
static inline int nn_owner(const nn_model *m, int i)
{
    return m->nodes[i].alias >= 0 ? m->nodes[i].alias : i;
}

/* ---- intra-op parallelism (nn_pass.c) ---- */

/* fn(arg, u0, u1, part) over [0, units) in contiguous slices, one per part of c's team
 * when it has more than one part, an inference forward runs and each slice would get
 * at least min_units; else fn(arg, 0, units, 0) on the calling thread. Slice
 * boundaries fall on multiples of grain. */
typedef void (*nn_par_fn)(void *arg, long u0, long u1, int part);
/* Values an elementwise or pooling part must write for a split to pay. */
#define NN_PAR_MIN_VALUES 8192L
void nn_par_units(const nn_ctx *c, long units, long min_units, long grain, nn_par_fn fn,
                  void *arg);
/* Part k's workspace (c->ws_floats of them). */
static inline float *nn_ws_part(const nn_ctx *c, int k)
{
    return c->ws + (size_t)k * c->ws_stride;
}

/* ---- conv (nn_conv.c) ---- */

/* An input gradient taken on through the activation that the layer producing the
 * input applies (a conv with it fused): dx *= act'(x) as nn_act_bwd (layer_act.c) has
 * it, x being that layer's output and this one's input (laid out as dx), and that
 * layer's bias gradient db (or NULL) += the per-channel sums of the result. Its own backward then
 * has nothing left to do to its dy: one pass over the tensor fewer. */
typedef struct nn_dx_act {
    int act;
    const float *x;
    float *db;
} nn_dx_act;

/* A reader's input given as the node that would have produced it computes it: y =
 * act(x * a + b) per channel (a BN with its fused activation whose output a training
 * context neither keeps nor replays, NN_READERS). The reader computes the rows it
 * needs into a workspace block as it goes (nn_scale_shift_act), a cache-sized block at
 * a time, instead of reading a whole tensor written by a separate pass. */
typedef struct nn_xform {
    const float *x;          /* the producer's input, laid out as its output */
    const float *a, *b;      /* per channel */
    int act;                 /* enum nn_act */
} nn_xform;

typedef struct nn_conv_shape {
    int n, h, w, cin;        /* input */
    int oh, ow, cout;        /* output */
    int kh, kw, stride, pt, pl, groups;
    /* The products' precision: NULL float32; else bf16 operands with float32 sums
     * (nn_bf16.h), packed in this workspace (nn_conv_bf16_bytes of it). */
    const nn_bf16_area *bf16;
} nn_conv_shape;

void nn_conv_shape_of(const nn_model *m, const nn_node *nd, int n, nn_conv_shape *s);
/* The shapes with kernels of their own: depthwise (groups == cin == cout, nn_dw.c),
 * and 1x1 at stride 1 without padding (row-chunked products). */
int nn_conv_is_depthwise(const nn_conv_shape *s);
int nn_conv_is_pointwise(const nn_conv_shape *s);
/* Bytes of bf16 workspace the conv needs (0 for depthwise and grouped convs and for
 * products too small for bf16 to pay, nn_bf16_pays: those stay float32). */
size_t nn_conv_bf16_bytes(const nn_conv_shape *s);
/* Workspace floats the conv needs (0 for depthwise and stride-1 1x1). */
size_t nn_conv_ws_floats(const nn_conv_shape *s);
/* The same for a depthwise or 1x1 stride-1 conv whose input comes as an nn_xform. */
size_t nn_conv_ws_floats_xf(const nn_conv_shape *s);
/* y = act(conv(x) + bias): bias may be NULL, act one of enum nn_act. */
void nn_conv_fwd(const nn_conv_shape *s, const float *x, const float *wt, const float *bias,
                 int act, float *y, float *ws);
/* wpk: the weights packed ahead (nn_ctx_pack_weights), or NULL: read in place.
 * Output channels [n0, n1) of nn_conv_fwd, every row, in float32 (n0 and n1
 * multiples of 64, or n1 = cout): the other way to split a forward with few rows and
 * many weights, each part reading only its columns of them. Only where
 * nn_conv_fwd_cols_ok (no groups, the products nn_gemm's). */
int nn_conv_fwd_cols_ok(const nn_conv_shape *s);
void nn_conv_fwd_cols(const nn_conv_shape *s, const float *x, const float *wt,
                      const float *wpk, const float *bias, int act, float *y, float *ws,
                      int n0, int n1);
/* Output rows [m0, m1) of nn_conv_fwd (a row is an output pixel, image-major) in
 * float32, whatever s->bf16 says: a part of a forward split across a team. A
 * depthwise conv takes whole output rows of the image (m0, m1 multiples of ow). */
void nn_conv_fwd_rows(const nn_conv_shape *s, const float *x, const float *wt,
                      const float *wpk, const float *bias, int act, float *y, float *ws,
                      long m0, long m1);
/* Backward of nn_conv_fwd from its output y and dy. With act, dy is overwritten by
 * dz = dy * act'(y) (the caller's dy storage is dead after this call), unless dy_done
 * says the layer after did that already (nn_dx_act), bias gradient included. dx
 * (NULL: not needed) is overwritten, or added to when dx_accum, then taken through
 * xa when not NULL (dx_accum is 0 then). dw/db (NULL: not trainable / no bias) are
 * added to. xf (or NULL): the input as an nn_xform, x being NULL (a depthwise or 1x1
 * stride-1 conv only, with nn_conv_ws_floats_xf of workspace). */
void nn_conv_bwd(const nn_conv_shape *s, const float *x, const float *wt, const float *y,
                 float *dy, int act, int dy_done, float *dx, int dx_accum, float *dw, float *db,
                 float *ws, const nn_dx_act *xa, const nn_xform *xf);

/* ---- depthwise kernels (nn_dw.c), for shapes with groups == cin == cout ---- */

/* y = act(conv(x) + bias) (bias may be NULL). */
void nn_dw_fwd(const nn_conv_shape *s, const float *x, const float *wt, const float *bias,
               int act, float *y);
/* Output rows [r0, r1) of nn_dw_fwd, a row being (image, oy): r = image * oh + oy. */
void nn_dw_fwd_rows(const nn_conv_shape *s, const float *x, const float *wt,
                    const float *bias, int act, float *y, long r0, long r1);
/* dx = (or += with accum) the input gradient of dz, then through xa (or NULL). */
void nn_dw_bwd_dx(const nn_conv_shape *s, const float *dz, const float *wt, float *dx,
                  int accum, const nn_dx_act *xa);
/* dw += the weight gradient of dz. */
void nn_dw_bwd_dw(const nn_conv_shape *s, const float *x, const float *dz, float *dw);
/* nn_dw_fwd and nn_dw_bwd_dw with the input as an nn_xform: computed into ws
 * (nn_dw_xf_floats of it) a band of rows at a time, with the same bits as the
 * input whole. */
size_t nn_dw_xf_floats(const nn_conv_shape *s);
void nn_dw_fwd_xf(const nn_conv_shape *s, const nn_xform *t, const float *wt,
                  const float *bias, int act, float *y, float *ws);
void nn_dw_bwd_dw_xf(const nn_conv_shape *s, const nn_xform *t, const float *dz, float *dw,
                     float *ws);

/* Whether the AVX2 + FMA kernels run: the CPU has both and they are not turned off
 * (base/cpu.h's cpu_usable()). nn_simd_force_portable(1) turns them off (the portable
 * kernels and sgemm instead), for tests; never while a forward or backward runs. */
static inline int nn_simd_avx2(void)
{
    const cpu_features *f = cpu_usable();
    return f->avx2 && f->fma;
}
static inline void nn_simd_force_portable(int on)
{
    cpu_force_portable(on);
}

/* ---- matrix products with a small weight matrix (nn_gemm.c) ----
 * Row-major. They run when nn_gemm_ok(K, N): AVX2 + FMA, N % 8 == 0 and K * N <=
 * NN_GEMM_MAX_KN; callers use sgemm otherwise. */

#define NN_GEMM_MAX_KN (512L * 1024)
int nn_gemm_ok(int K, int N);
/* What nn_gemm_nn does to each result before the store, in this order. */
typedef struct nn_gemm_out {
    int accum;              /* + what C holds */
    const float *bias;      /* + bias[column], or NULL */
    int act;                /* then an enum nn_act */
    const float *mask;      /* or NULL: times act'(mask[row][column]) (mask_act, as
                               nn_act_bwd has it), mask laid out as C */
    int mask_act;
    float *mask_sum;        /* with a mask, or NULL: += each column's sum of the results */
} nn_gemm_out;
/* C[M x N] = A[M x K] B[K x N], finished as o says. */
void nn_gemm_nn(long M, int N, int K, const float *A, long lda, const float *B, long ldb,
                float *C, long ldc, const nn_gemm_out *o);
/* nn_gemm512.c: whether nn_gemm_nn may use its AVX-512F kernels (the CPU has them,
 * PT_GEMM_AVX2 is not set, nn_gemm_force_avx2 is off, nn_simd_avx2()), and those
 * kernels (any o but one with mask_sum, which keeps the AVX2 kernels' sum order).
 * nn_gemm_force_avx2(1) keeps the AVX2 kernels, for tests; never while a pass runs. */
int nn_gemm512_ok(void);
/* Whether a forward product (no mask_sum) may go to nn_gemm_nn: nn_gemm_ok, or with
 * the AVX-512 kernels weight matrices up to NN_GEMM512_FWD_MAX_KN, where they beat
 * OpenBLAS too (bench_gemm). The backward keeps nn_gemm_ok's bound. */
#define NN_GEMM512_FWD_MAX_KN (2048L * 1024)
int nn_gemm_fwd_ok(int K, int N);
void nn_gemm_force_avx2(int on);
void nn_gemm512_nn(long M, int N, int K, const float *A, long lda, const float *B, long ldb,
                   float *C, long ldc, const nn_gemm_out *o);
/* B (K x N, row-major) packed once ahead into the column blocks nn_gemm512_nn takes
 * (64 wide, the last 32 or 16, zero-padded): nn_gemm512_pack_floats of them. Then
 * nn_gemm512_nn_packed is nn_gemm512_nn on it, the same bits. A product of columns
 * [n0, N) of B, n0 a multiple of 64, takes the packing from pre + n0 * K. */
size_t nn_gemm512_pack_floats(int K, int N);
void nn_gemm512_pack(int K, int N, const float *B, long ldb, float *pre);
void nn_gemm512_nn_packed(long M, int N, int K, const float *A, long lda, const float *pre,
                          float *C, long ldc, const nn_gemm_out *o);
/* nn_gemm_tn's AVX-512F form: the same bits as its AVX2 kernels. */
void nn_gemm512_tn(long M, int N, int K, const float *X, long ldx, const float *G, long ldg,
                   float *C, long ldc);
/* C[K x N] += X[M x K]^T G[M x N]. */
void nn_gemm_tn(long M, int N, int K, const float *X, long ldx, const float *G, long ldg,
                float *C, long ldc);

/* ---- elementwise kernels more than one kind uses (nn_elem.c) ----
 * A kind's own kernels are static in its layer_*.c. */

/* y = act(x * a + b) per channel over rows of c channels: a BN's output from its
 * input and the a, b of its last forward. The one place this is computed, so a
 * reader that computes it from an nn_xform gets the BN's bits. */
void nn_scale_shift_act(long rows, int c, const float *x, const float *a, const float *b,
                        int act, float *y);

/* y = x * mask elementwise (dropout's mask, or mul's second operand). */
void nn_mul_fwd(size_t len, const float *x, const float *mask, float *y);
/* dx = (or += with accum) dy * mask. */
void nn_mul_bwd(size_t len, const float *dy, const float *mask, float *dx, int accum);
/* dx = dy or dx += dy. */
void nn_copy_grad(size_t len, const float *dy, float *dx, int accum);

#endif
