/* topos — nn tier: initializers, layers, losses and optimizers.
 *
 * Everything here is composed through the public API only (graph.h records,
 * ops.h eager kernels): a layer is a struct of parameter symbols plus a record
 * function, so a model is a plain C expression over a tape and its gradients
 * follow from the primitives' rules. Layers hold no values: the values live in
 * the caller's topos_params, optimizer state in caller-held optimizer objects,
 * running statistics (batch norm) in caller tensors fed as inputs.
 *
 * Layouts follow PyTorch where it has one: images are [B,C,H,W], convolution
 * weights [F,C,KH,KW]. Linear weights are [in,out] (y = x W + b), so a matmul
 * needs no transpose.
 *
 * Parameter names: constructors take a prefix (may be NULL for unnamed
 * parameters) and name their parameters "prefix.weight", "prefix.bias",
 * "prefix.scale", "prefix.shift", "prefix.query" ... (checkpoints use them).
 *
 * Errors: record functions return TOPOS_SYM_INVALID and leave a sticky error
 * on the tape (see graph.h); constructors return a topos_status and also make
 * a failure the tape's sticky error.
 *
 * Ownership: layer structs are plain values (symbols only, nothing to free).
 * Tensors returned through `topos_tensor **out` carry one new reference
 * (topos_tensor_release); a topos_optimizer belongs to the caller
 * (topos_optimizer_free). Initial values passed to the tape are retained by
 * it; the nn tier releases its own references. */
#ifndef TOPOS_NN_H
#define TOPOS_NN_H

#include "graph.h"
#include "gguf.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- initializers: splitmix64 (topos_rng), values drawn in f64 in row-major
 * order and converted once to dtype. Each returns a new tensor (caller
 * releases). Fans: rank 2 [in,out] -> (in, out); rank >= 3 [F,C,k...] (conv)
 * -> (C*k..., F*k...); rank 1 -> (extent, extent). */
TOPOS_API topos_status topos_init_fans(int rank, const int64_t *shape, int64_t *fan_in,
                                       int64_t *fan_out);
/* U[low, high): low + (high - low) * unit */
TOPOS_API topos_status topos_init_uniform(topos_rng *rng, topos_dtype dtype, int rank,
                                          const int64_t *shape, double low, double high,
                                          topos_tensor **out);
/* mean + std * normal (Box-Muller, cos half) */
TOPOS_API topos_status topos_init_normal(topos_rng *rng, topos_dtype dtype, int rank,
                                         const int64_t *shape, double mean, double std,
                                         topos_tensor **out);
/* Glorot: U(+-sqrt(6 / (fan_in + fan_out))) */
TOPOS_API topos_status topos_init_xavier(topos_rng *rng, topos_dtype dtype, int rank,
                                         const int64_t *shape, topos_tensor **out);
/* He: N(0, sqrt(2 / fan_in)) */
TOPOS_API topos_status topos_init_kaiming(topos_rng *rng, topos_dtype dtype, int rank,
                                          const int64_t *shape, topos_tensor **out);

/* ---- activations */
typedef enum topos_activation {
  TOPOS_ACT_IDENTITY,
  TOPOS_ACT_RELU,
  TOPOS_ACT_TANH,
  TOPOS_ACT_SIGMOID,
  TOPOS_ACT_SILU,
  TOPOS_ACT_GELU, /* tanh approximation */
} topos_activation;
TOPOS_API topos_sym topos_nn_activate(topos_tape *tape, topos_activation kind, topos_sym x);

/* ---- Linear: x [N,in] -> x W + b, W [in,out], b [out] (bias optional).
 * Initial values as PyTorch: W and b ~ U(+-1/sqrt(in)). */
typedef struct topos_linear {
  topos_sym weight;
  topos_sym bias; /* TOPOS_SYM_INVALID without bias */
} topos_linear;
TOPOS_API topos_status topos_linear_new(topos_tape *tape, const char *name, int64_t in,
                                        int64_t out, int with_bias, topos_dtype dtype,
                                        topos_rng *rng, topos_linear *out_layer);
/* x may have any rank >= 2: leading axes are flattened and restored. */
TOPOS_API topos_sym topos_linear_apply(topos_tape *tape, const topos_linear *layer, topos_sym x);

/* ---- Conv2d: x [B,C,H,W], W [F,C,KH,KW], b [F] -> [B,F,OH,OW],
 * OH = (H + 2 pad - KH) / stride + 1. Composed as pad, unfold, unfold,
 * permute, reshape (the patch matrix [B*OH*OW, C*KH*KW]), one matmul with
 * W reshaped to [C*KH*KW, F], bias, reshape and permute back. Forward plans
 * run the patch matrix and the product as one fused step (pattern
 * conv_im2col, same bits); max_pool2d likewise (pattern max_pool, f32/f64,
 * 2x2 windows). */
typedef struct topos_conv2d {
  topos_sym weight;
  topos_sym bias; /* TOPOS_SYM_INVALID without bias */
  int64_t stride, padding;
} topos_conv2d;
/* Initial values as PyTorch: U(+-1/sqrt(C*KH*KW)). */
TOPOS_API topos_status topos_conv2d_new(topos_tape *tape, const char *name, int64_t in_channels,
                                        int64_t out_channels, int64_t kernel, int64_t stride,
                                        int64_t padding, int with_bias, topos_dtype dtype,
                                        topos_rng *rng, topos_conv2d *out_layer);
TOPOS_API topos_sym topos_conv2d_apply(topos_tape *tape, const topos_conv2d *layer, topos_sym x);
/* The same formula over any weight and bias symbols (bias may be invalid). */
TOPOS_API topos_sym topos_conv2d_of(topos_tape *tape, topos_sym x, topos_sym weight,
                                    topos_sym bias, int64_t stride, int64_t padding);

/* ---- pooling over [B,C,H,W], square windows, no padding, floor division.
 * max: left fold of maximum over the window lanes in row-major order. */
TOPOS_API topos_sym topos_max_pool2d(topos_tape *tape, topos_sym x, int64_t size, int64_t stride);
/* average: sum of the lanes in the same order, divided by size*size. */
TOPOS_API topos_sym topos_avg_pool2d(topos_tape *tape, topos_sym x, int64_t size, int64_t stride);

/* ---- normalization. eps is recorded as a constant. */
/* BatchNorm over [N,F] (statistics along axis 0) or [N,C,H,W] (statistics
 * over N,H,W per channel). scale starts at 1, shift at 0. Variance biased. */
typedef struct topos_batch_norm {
  topos_sym scale, shift; /* [F] */
  double eps;
} topos_batch_norm;
typedef struct topos_batch_norm_result {
  topos_sym output;
  topos_sym mean;     /* [F]: batch mean (observe it to update running estimates) */
  topos_sym variance; /* [F]: biased batch variance */
} topos_batch_norm_result;
TOPOS_API topos_status topos_batch_norm_new(topos_tape *tape, const char *name, int64_t features,
                                            double eps, topos_dtype dtype,
                                            topos_batch_norm *out_layer);
/* Training: normalizes with the batch statistics. */
TOPOS_API topos_status topos_batch_norm_train(topos_tape *tape, const topos_batch_norm *layer,
                                              topos_sym x, topos_batch_norm_result *out);
/* Inference: normalizes with mean and variance ([F] symbols, typically inputs
 * fed with the caller's running estimates). Forward plans run this tail as
 * one fused pass (pattern batch_norm, f32/f64, same bits). */
TOPOS_API topos_sym topos_batch_norm_infer(topos_tape *tape, const topos_batch_norm *layer,
                                           topos_sym x, topos_sym mean, topos_sym variance);

/* LayerNorm and RMSNorm normalize along the last axis, parameters [D]. */
typedef struct topos_layer_norm {
  topos_sym scale, shift; /* shift invalid for RMSNorm */
  double eps;
} topos_layer_norm;
TOPOS_API topos_status topos_layer_norm_new(topos_tape *tape, const char *name, int64_t features,
                                            double eps, topos_dtype dtype,
                                            topos_layer_norm *out_layer);
/* (x - mean) / sqrt(var + eps) * scale + shift */
TOPOS_API topos_sym topos_layer_norm_apply(topos_tape *tape, const topos_layer_norm *layer,
                                           topos_sym x);
TOPOS_API topos_status topos_rms_norm_new(topos_tape *tape, const char *name, int64_t features,
                                          double eps, topos_dtype dtype,
                                          topos_layer_norm *out_layer);
/* x / sqrt(mean(x*x) + eps) * scale */
TOPOS_API topos_sym topos_rms_norm_apply(topos_tape *tape, const topos_layer_norm *layer,
                                         topos_sym x);

/* ---- Dropout: x * mask, the mask an input (default all ones, i.e. the
 * inference behaviour) that training runs feed from topos_dropout_mask. */
TOPOS_API topos_sym topos_dropout(topos_tape *tape, const char *mask_name, topos_sym x,
                                  topos_sym *mask_input);
/* A mask of the given shape: 1/keep with probability keep (unit < keep), else 0. */
TOPOS_API topos_status topos_dropout_mask(topos_rng *rng, double keep, topos_dtype dtype, int rank,
                                          const int64_t *shape, topos_tensor **out);

/* ---- Embedding: table [V,D] ~ N(0,1); indices i32 [N] -> [N,D]. */
typedef struct topos_embedding {
  topos_sym table;
} topos_embedding;
TOPOS_API topos_status topos_embedding_new(topos_tape *tape, const char *name, int64_t count,
                                           int64_t dim, topos_dtype dtype, topos_rng *rng,
                                           topos_embedding *out_layer);
TOPOS_API topos_sym topos_embedding_apply(topos_tape *tape, const topos_embedding *layer,
                                    topos_sym indices);

/* ---- causal self-attention over x [B,T,D] with H heads of D/H: query, key,
 * value and output projections (Linear without bias), scores scaled by
 * 1/sqrt(D/H), a causal mask (0 on and below the diagonal, -inf above)
 * added before the softmax. */
typedef struct topos_attention {
  topos_linear query, key, value, output;
  int64_t heads;
} topos_attention;
TOPOS_API topos_status topos_attention_new(topos_tape *tape, const char *name, int64_t dim,
                                           int64_t heads, topos_dtype dtype, topos_rng *rng,
                                           topos_attention *out_layer);
TOPOS_API topos_sym topos_attention_apply(topos_tape *tape, const topos_attention *layer,
                                          topos_sym x);

/* ---- losses (rank 0 results) */
/* logits [N,C], targets i32 [N] class indices: mean over rows of
 * -log_softmax(logits)[i, t_i] (the one-hot rows are gathered from an
 * identity constant, so targets get no gradient). */
TOPOS_API topos_sym topos_cross_entropy(topos_tape *tape, topos_sym logits, topos_sym targets);
/* mean((prediction - target)^2) over all elements */
TOPOS_API topos_sym topos_mse(topos_tape *tape, topos_sym prediction, topos_sym target);

/* ---- optimizers: caller-held state, one step per call over every parameter
 * (topos_params_step, so a failure leaves params unchanged). Updates are
 * computed with the eager reference ops in the parameter's dtype; scalar
 * hyperparameters are converted once to that dtype. */
typedef struct topos_optimizer topos_optimizer;
typedef enum topos_optimizer_kind {
  TOPOS_OPT_SGD,   /* v = momentum v + g; p = p - lr v (momentum 0: p - lr g) */
  TOPOS_OPT_ADAM,  /* as Kingma & Ba with bias correction, see topos_optimizer_step */
  TOPOS_OPT_ADAMW, /* Adam, then p - lr decay p on parameters of rank >= 2 */
} topos_optimizer_kind;
typedef struct topos_optimizer_options {
  topos_optimizer_kind kind;
  double lr;
  double momentum;            /* SGD */
  double beta1, beta2, eps;   /* Adam(W); 0 selects 0.9, 0.999, 1e-8 */
  double weight_decay;        /* AdamW */
} topos_optimizer_options;
/* The network fixes which parameters exist; state starts at zero. */
TOPOS_API topos_status topos_optimizer_new(const topos_network *net,
                                           const topos_optimizer_options *options,
                                           topos_optimizer **out);
TOPOS_API void topos_optimizer_free(topos_optimizer *opt);
/* Changes the learning rate for later steps (schedules). */
TOPOS_API void topos_optimizer_set_lr(topos_optimizer *opt, double lr);
/* Number of steps taken. */
TOPOS_API int64_t topos_optimizer_steps(const topos_optimizer *opt);
/* One update from gradients (a field from topos_run_backward or
 * topos_run_recorded_gradients). Adam with t = steps + 1, b1t = b1^t kept as a
 * running product (no pow):
 *   m = m b1 + g (1 - b1);  v = v b2 + g g (1 - b2)
 *   p = p - lr ((m / (1 - b1t)) / (sqrt(v / (1 - b2t)) + eps))
 * AdamW then subtracts lr decay p_old on rank >= 2 parameters. */
TOPOS_API topos_status topos_optimizer_step(topos_optimizer *opt, topos_params *params,
                                            const topos_field *gradients);

/* ---- checkpoints: GGUF files holding every parameter under its name, in
 * its dtype, bit for bit, plus whatever metadata (hyperparameters) the caller
 * adds to the writer. Key "topos.checkpoint.parameters" (u32) counts them. */
/* Adds every parameter of params to the writer (a reference each). All
 * parameters must be named (TOPOS_ERR_INVALID_ARGUMENT naming the index). */
TOPOS_API topos_status topos_checkpoint_add(topos_gguf_writer *writer,
                                            const topos_params *params);
/* Writes params (and nothing else) to path atomically. */
TOPOS_API topos_status topos_checkpoint_save(const topos_params *params, const char *path);
/* Replaces every parameter's value with the tensor of the same name in the
 * GGUF file (fresh heap copies, so training can continue). Dtype and shape
 * must match; a missing parameter or an extra tensor fails naming it. All or
 * nothing: on failure params is unchanged. */
TOPOS_API topos_status topos_checkpoint_load(topos_params *params, const char *path);

#ifdef __cplusplus
}
#endif
#endif
