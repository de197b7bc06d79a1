/* Checkpoints: a GGUF round trip restores every parameter bit for bit
 * (f32, f64, bf16, rank 0), keeps caller metadata, and refuses a file that
 * does not fit the model without touching the parameters. */
#include <stdio.h>

#include "nn_util.h"

typedef struct {
  topos_network *net;
  topos_params *params;
} tn_model;

static topos_status tn_model_new(tn_model *m, int variant) {
  topos_tape *tape = NULL;
  topos_rng rng = topos_rng_seed(21);
  topos_status s = topos_tape_new(&tape);
  if (s != TOPOS_OK) return s;
  topos_linear fc;
  topos_conv2d conv;
  topos_linear_new(tape, "fc", 3, variant == 2 ? 5 : 4, 1, TOPOS_F32, &rng, &fc);
  topos_conv2d_new(tape, "conv", 2, 3, 3, 1, 1, 0, TOPOS_F64, &rng, &conv);
  topos_embedding emb;
  topos_embedding_new(tape, "emb", 6, 2, TOPOS_BF16, &rng, &emb);
  if (variant != 1) {
    topos_tensor *scalar = NULL;
    topos_tensor_scalar(TOPOS_F32, 0.375, &scalar);
    topos_tape_parameter(tape, scalar, "temperature");
    topos_tensor_release(scalar);
  }
  s = topos_tape_seal(&tape, &m->net);
  if (s == TOPOS_OK) s = topos_params_from_network(m->net, &m->params);
  return s;
}

static void tn_model_free(tn_model *m) {
  topos_params_free(m->params);
  topos_network_free(m->net);
}

static int tn_params_equal(const topos_params *a, const topos_params *b) {
  if (topos_params_count(a) != topos_params_count(b)) return 0;
  for (size_t i = 0; i < topos_params_count(a); ++i) {
    topos_tensor *x = NULL, *y = NULL;
    topos_params_get(a, topos_params_symbol(a, i), &x);
    topos_params_get(b, topos_params_symbol(b, i), &y);
    int same = x && y && topos_tensor_bits_equal(x, y);
    topos_tensor_release(x);
    topos_tensor_release(y);
    if (!same) return 0;
  }
  return 1;
}

/* Overwrites every parameter with zeros. */
static void tn_zero_params(topos_params *p) {
  for (size_t i = 0; i < topos_params_count(p); ++i) {
    topos_tensor *x = NULL, *z = NULL;
    topos_params_get(p, topos_params_symbol(p, i), &x);
    topos_tensor_zeros(topos_tensor_dtype(x), topos_tensor_rank(x), topos_tensor_shape(x), &z);
    topos_params_set(p, topos_params_symbol(p, i), z);
    topos_tensor_release(x);
    topos_tensor_release(z);
  }
}

TEST(nn_checkpoint_round_trip_bit_exact) {
  char path[512];
  snprintf(path, sizeof path, "%s/nn-checkpoint.gguf", tt_tmpdir());
  tn_model a = {0}, b = {0};
  CHECK_OK(tn_model_new(&a, 0));
  CHECK_OK(tn_model_new(&b, 0));
  topos_params *original = NULL;
  CHECK_OK(topos_params_copy(a.params, &original));
  topos_gguf_writer *w = NULL;
  CHECK_OK(topos_gguf_writer_create(&w));
  CHECK_OK(topos_gguf_writer_add_f64(w, "topos.train.lr", 0.05));
  CHECK_OK(topos_gguf_writer_add_string(w, "topos.model", "test"));
  CHECK_OK(topos_checkpoint_add(w, a.params));
  CHECK_OK(topos_gguf_writer_write(w, path));
  topos_gguf_writer_destroy(w);
  tn_zero_params(b.params);
  CHECK(!tn_params_equal(b.params, original));
  CHECK_OK(topos_checkpoint_load(b.params, path));
  CHECK(tn_params_equal(b.params, original));
  /* metadata and names as a GGUF reader sees them */
  topos_gguf *g = NULL;
  CHECK_OK(topos_gguf_open(path, &g));
  double lr = 0;
  uint32_t count = 0;
  CHECK_OK(topos_gguf_get_f64(g, "topos.train.lr", &lr));
  CHECK_OK(topos_gguf_get_u32(g, "topos.checkpoint.parameters", &count));
  CHECK(lr == 0.05 && count == 5);
  int64_t index;
  CHECK_OK(topos_gguf_find_tensor(g, "conv.weight", &index));
  topos_gguf_tensor_info info;
  CHECK_OK(topos_gguf_tensor_at(g, index, &info));
  CHECK(info.dtype == TOPOS_F64 && info.n_dims == 4 && info.shape[0] == 3 && info.shape[1] == 2);
  topos_gguf_close(g);
  /* loaded values are private copies: training on can write them */
  topos_sym sym;
  CHECK_OK(topos_network_find(b.net, "fc.weight", &sym));
  topos_tensor *t = NULL;
  CHECK_OK(topos_params_get(b.params, sym, &t));
  CHECK(topos_tensor_storage_kind(t) == TOPOS_STORAGE_HEAP);
  topos_tensor_release(t);
  /* save-only convenience writes the same tensors */
  CHECK_OK(topos_checkpoint_save(original, path));
  tn_zero_params(b.params);
  CHECK_OK(topos_checkpoint_load(b.params, path));
  CHECK(tn_params_equal(b.params, original));
  topos_params_free(original);
  tn_model_free(&a);
  tn_model_free(&b);
  remove(path);
}

TEST(nn_checkpoint_mismatch_leaves_params_unchanged) {
  char path[512];
  snprintf(path, sizeof path, "%s/nn-checkpoint-mismatch.gguf", tt_tmpdir());
  tn_model a = {0}, fewer = {0}, wider = {0};
  CHECK_OK(tn_model_new(&a, 0));
  CHECK_OK(tn_model_new(&fewer, 1));
  CHECK_OK(tn_model_new(&wider, 2));
  CHECK_OK(topos_checkpoint_save(a.params, path));
  topos_params *before = NULL;
  /* the file has a tensor ("temperature") the model lacks */
  CHECK_OK(topos_params_copy(fewer.params, &before));
  CHECK_STATUS(topos_checkpoint_load(fewer.params, path), TOPOS_ERR_NOT_FOUND);
  CHECK_ERROR_HAS("temperature");
  CHECK(tn_params_equal(fewer.params, before));
  topos_params_free(before);
  /* fc.weight is [3,5] in the model, [3,4] in the file */
  CHECK_OK(topos_params_copy(wider.params, &before));
  CHECK_STATUS(topos_checkpoint_load(wider.params, path), TOPOS_ERR_SHAPE);
  CHECK_ERROR_HAS("fc.weight");
  CHECK(tn_params_equal(wider.params, before));
  topos_params_free(before);
  /* the model has a parameter the file lacks */
  CHECK_OK(topos_checkpoint_save(fewer.params, path));
  CHECK_STATUS(topos_checkpoint_load(a.params, path), TOPOS_ERR_NOT_FOUND);
  CHECK_ERROR_HAS("temperature");
  CHECK(topos_checkpoint_load(a.params, "/nonexistent/topos.gguf") != TOPOS_OK);
  tn_model_free(&a);
  tn_model_free(&fewer);
  tn_model_free(&wider);
  remove(path);
}

TEST(nn_checkpoint_needs_names) {
  topos_tape *tape = NULL;
  CHECK_OK(topos_tape_new(&tape));
  const int64_t s[1] = {2};
  const double v[2] = {1, 2};
  tn_param(tape, NULL, TOPOS_F32, 1, s, v);
  topos_network *net = NULL;
  topos_params *params = NULL;
  CHECK_OK(topos_tape_seal(&tape, &net));
  CHECK_OK(topos_params_from_network(net, &params));
  char path[512];
  snprintf(path, sizeof path, "%s/nn-unnamed.gguf", tt_tmpdir());
  CHECK_STATUS(topos_checkpoint_save(params, path), TOPOS_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("no name");
  topos_params_free(params);
  topos_network_free(net);
}
