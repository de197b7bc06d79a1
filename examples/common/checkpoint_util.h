/* Saving a trained model as a GGUF checkpoint with its hyperparameters as
 * metadata (numbers as f64, strings as strings). */
#ifndef TOPOS_EXAMPLES_CHECKPOINT_UTIL_H
#define TOPOS_EXAMPLES_CHECKPOINT_UTIL_H

#include "topos.h"

typedef struct ex_hparam {
  const char *key;
  double number;      /* used when text is NULL */
  const char *text;
} ex_hparam;

static inline topos_status ex_checkpoint_save(const char *path, const topos_params *params,
                                              const ex_hparam *hp, size_t n) {
  topos_gguf_writer *w = NULL;
  topos_status s = topos_gguf_writer_create(&w);
  if (s == TOPOS_OK) s = topos_gguf_writer_add_string(w, "general.architecture", "topos-nn");
  for (size_t i = 0; s == TOPOS_OK && i < n; ++i)
    s = hp[i].text ? topos_gguf_writer_add_string(w, hp[i].key, hp[i].text)
                   : topos_gguf_writer_add_f64(w, hp[i].key, hp[i].number);
  if (s == TOPOS_OK) s = topos_checkpoint_add(w, params);
  if (s == TOPOS_OK) s = topos_gguf_writer_write(w, path);
  topos_gguf_writer_destroy(w);
  return s;
}

#endif
