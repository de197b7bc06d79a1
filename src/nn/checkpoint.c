/* Checkpoints: parameters <-> GGUF tensors by name, bit-exact. */
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "topos/nn.h"

topos_status topos_checkpoint_add(topos_gguf_writer *writer, const topos_params *params) {
  if (!writer || !params) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "checkpoint: arguments");
  size_t n = topos_params_count(params);
  if (n > UINT32_MAX) return tp_fail(TOPOS_ERR_OVERFLOW, "checkpoint: %zu parameters", n);
  TP_TRY(topos_gguf_writer_add_u32(writer, "topos.checkpoint.parameters", (uint32_t)n));
  for (size_t i = 0; i < n; ++i) {
    topos_sym sym = topos_params_symbol(params, i);
    const char *name = topos_params_name(params, sym);
    if (!name)
      return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "checkpoint: parameter %zu has no name", i);
    topos_tensor *value = NULL;
    TP_TRY(topos_params_get(params, sym, &value));
    topos_status s = topos_gguf_writer_add_tensor(writer, name, value);
    topos_tensor_release(value);
    if (s != TOPOS_OK) return tp_fail_context(s, "checkpoint: parameter '%s'", name);
  }
  return TOPOS_OK;
}

topos_status topos_checkpoint_save(const topos_params *params, const char *path) {
  topos_gguf_writer *w = NULL;
  TP_TRY(topos_gguf_writer_create(&w));
  topos_status s = topos_checkpoint_add(w, params);
  if (s == TOPOS_OK) s = topos_gguf_writer_write(w, path);
  topos_gguf_writer_destroy(w);
  return s;
}

topos_status topos_checkpoint_load(topos_params *params, const char *path) {
  if (!params || !path) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "checkpoint: arguments");
  topos_gguf *g = NULL;
  TP_TRY(topos_gguf_open(path, &g));
  size_t n = topos_params_count(params);
  topos_tensor **fresh = calloc(n ? n : 1, sizeof *fresh);
  topos_status s = fresh ? TOPOS_OK : tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "checkpoint: %zu", n);
  for (size_t i = 0; s == TOPOS_OK && i < n; ++i) {
    topos_sym sym = topos_params_symbol(params, i);
    const char *name = topos_params_name(params, sym);
    topos_tensor *current = NULL, *stored = NULL;
    if (!name) {
      s = tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "checkpoint: parameter %zu has no name", i);
      break;
    }
    s = topos_params_get(params, sym, &current);
    if (s == TOPOS_OK) {
      s = topos_gguf_tensor(g, name, &stored);
      if (s != TOPOS_OK) s = tp_fail_context(s, "checkpoint %s: parameter '%s'", path, name);
    }
    if (s == TOPOS_OK) {
      /* rank 0 parameters are stored as ne={1} */
      int rank = topos_tensor_rank(current);
      int same = topos_tensor_dtype(current) == topos_tensor_dtype(stored) &&
                 topos_tensor_volume(current) == topos_tensor_volume(stored) &&
                 (rank == 0 ? 1 : (rank == topos_tensor_rank(stored) &&
                                   !memcmp(topos_tensor_shape(current), topos_tensor_shape(stored),
                                           (size_t)rank * sizeof(int64_t))));
      if (!same) {
        s = tp_fail(TOPOS_ERR_SHAPE, "checkpoint %s: '%s' is %s rank %d volume %lld, the model "
                    "wants %s rank %d volume %lld", path, name,
                    topos_dtype_name(topos_tensor_dtype(stored)), topos_tensor_rank(stored),
                    (long long)topos_tensor_volume(stored),
                    topos_dtype_name(topos_tensor_dtype(current)), rank,
                    (long long)topos_tensor_volume(current));
      } else {
        topos_tensor *copy = NULL;
        s = topos_tensor_contiguous(stored, 1, &copy);
        if (s == TOPOS_OK && rank == 0) {
          s = topos_tensor_reshape(copy, 0, NULL, &fresh[i]);
          topos_tensor_release(copy);
        } else {
          fresh[i] = copy;
        }
      }
    }
    topos_tensor_release(current);
    topos_tensor_release(stored);
  }
  if (s == TOPOS_OK) {
    int64_t count = topos_gguf_tensor_count(g);
    if (count != (int64_t)n) {
      /* name the first tensor the model does not have */
      for (int64_t k = 0; k < count; ++k) {
        topos_gguf_tensor_info info;
        if (topos_gguf_tensor_at(g, k, &info) != TOPOS_OK) continue;
        int known = 0;
        for (size_t i = 0; i < n && !known; ++i) {
          const char *name = topos_params_name(params, topos_params_symbol(params, i));
          known = name && !strcmp(name, info.name);
        }
        if (!known) {
          s = tp_fail(TOPOS_ERR_NOT_FOUND, "checkpoint %s: tensor '%s' is not a parameter of "
                      "the model", path, info.name);
          break;
        }
      }
      if (s == TOPOS_OK)
        s = tp_fail(TOPOS_ERR_FORMAT, "checkpoint %s: %lld tensors for %zu parameters", path,
                    (long long)count, n);
    }
  }
  for (size_t i = 0; s == TOPOS_OK && i < n; ++i)
    s = topos_params_set(params, topos_params_symbol(params, i), fresh[i]);
  for (size_t i = 0; fresh && i < n; ++i) topos_tensor_release(fresh[i]);
  free(fresh);
  topos_gguf_close(g);
  return s;
}
