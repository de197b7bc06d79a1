/* A llama context: the preallocated KV cache and the compiled chunk plans.
 *
 * The cache tensors wrap the context's own memory (external storage, no copy
 * per step) and are fed to every run; after a run the chunk's keys and values
 * (plan roots) are written into the cache at their positions. Keys are kept
 * transposed per kv head ([KVH, hd, C]) so the score product walks each
 * cache row contiguously; values as [KVH, C, hd] (C: the capacity, padded: tp_cache_slots). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/error.h"
#include "base/half.h"
#include "models/llama_internal.h"
#include "tensor/tensor_internal.h"
#include "topos/quant.h"

#define TP_LLAMA_MAX_PLANS 12

struct topos_llama_context {
  const topos_llama *model;
  topos_llama_context_options options;
  int64_t capacity, pos;
  int64_t slots;       /* the cache's row length in positions: capacity, padded (tp_cache_slots) */
  void *k_mem, *v_mem; /* attention blocks x KVH x hd x slots elements of kv_dtype each */
  size_t kv_bytes;      /* both, one mapping */
  size_t elem;          /* bytes per cache element */
  topos_tensor **k_cache, **v_cache; /* per block; NULL for blocks without attention */
  int64_t *kv_at;       /* per block: its first element in k_mem / v_mem, -1 for a block without a cache */
  /* The recurrent blocks' states, twice: a run reads [front] and its sinks
   * write [!front] (the plan may still read the state it was fed when a
   * sink arrives). conv: the convolution's rows of the last taps - 1
   * positions (LFM2: [conv_len - 1, dim] (b x) rows; Mamba-2: [ssm_conv - 1,
   * xBC width]; Mamba-1: [ssm_conv - 1, inner]); ssm: a Mamba block's scan
   * state [ssm_state, ssm_heads, head width]. NULL for the blocks without
   * them; all in state_mem. */
  float *state_mem;
  size_t state_bytes;
  topos_tensor **conv[2], **ssm[2];
  int front;
  tp_llama_graph graphs[TP_LLAMA_MAX_PLANS];
  uint64_t last_used[TP_LLAMA_MAX_PLANS], clock;
  int n_graphs;
  topos_plan *active; /* the plan of the last run: the only one that keeps its arena */
  topos_feed *feeds;
  float *row; /* one embedding row */
};

topos_tensor *tp_llama_context_k_cache(const topos_llama_context *x, int64_t l) { return x->k_cache[l]; }

topos_llama_context_options topos_llama_context_options_default(void) {
  topos_llama_context_options o;
  memset(&o, 0, sizeof o);
  o.kv_dtype = TOPOS_F32;
  o.numerics = TOPOS_NUMERICS_FAST;
  o.n_batch = 128;
  return o;
}

/* The cache's row length for a capacity of cap positions: cap rounded up to
 * 16, plus 16 where that is a multiple of 128. The f32 keys' rows (one per
 * head dimension) are this long, and a prompt's score products read 2
 * vectors from each of 64 of them per step: at 1024, 2048 or 4096 floats
 * apart every row fell in one L1 set of 8 ways, and the scores ran at 44-60
 * GFLOP/s against 77-81 two lines further apart (one thread, Zen 3; 16-bit
 * caches' value rows likewise). The slots past the capacity are never
 * written or attended. */
static int64_t tp_cache_slots(int64_t cap) {
  const int64_t slots = (cap + 15) / 16 * 16;
  return slots % 128 == 0 ? slots + 16 : slots;
}

topos_status topos_llama_context_new(const topos_llama *m, const topos_llama_context_options *o,
                                     topos_llama_context **out) {
  if (!out) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "llama context: NULL out");
  *out = NULL;
  if (!m) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "llama context: NULL model");
  topos_llama_context_options opt = o ? *o : topos_llama_context_options_default();
  const topos_llama_config *c = &m->config;
  if (opt.kv_dtype != TOPOS_F32 && opt.kv_dtype != TOPOS_F16 && opt.kv_dtype != TOPOS_BF16)
    return tp_fail(TOPOS_UNSUPPORTED,
                   "llama context: a %s KV cache is not supported (f32, f16, bf16)",
                   topos_dtype_name(opt.kv_dtype));
  if (opt.kv_dtype != TOPOS_F32 && c->n_kv_heads > TP_LLAMA_MAX_KV_HEADS)
    return tp_fail(TOPOS_UNSUPPORTED, "llama context: a 16-bit cache supports at most %d kv heads, "
                   "the model has %lld", TP_LLAMA_MAX_KV_HEADS, (long long)c->n_kv_heads);
  int64_t cap = opt.n_ctx > 0 ? opt.n_ctx : (c->n_ctx_train < 2048 ? c->n_ctx_train : 2048);
  if (cap > ((int64_t)1 << 24))
    return tp_fail(TOPOS_ERR_RANGE, "llama context: n_ctx %lld is too large", (long long)cap);
  if (c->learned_positions && cap > c->n_ctx_train) /* position_embd.weight has no row past it */
    return tp_fail(TOPOS_ERR_RANGE, "llama context: n_ctx %lld is past the %lld positions this %s model has learned",
                   (long long)cap, (long long)c->n_ctx_train, c->arch);
  const int64_t slots = tp_cache_slots(cap);
  /* the attention blocks' caches (not recurrent mixers alone, nor
   * feed-forwards alone, nor Gemma 4's shared blocks), each its kv heads x
   * head width x slots */
  int64_t total = 0;
  for (int64_t l = 0; l < c->n_layers; ++l) {
    const tp_llama_layer *ly = &m->layers[l];
    int64_t per_layer;
    if (!tp_llama_layer_caches(ly)) continue;
    if (__builtin_mul_overflow(ly->kv_heads * ly->hd, slots, &per_layer) ||
        __builtin_add_overflow(total, per_layer, &total) || total > ((int64_t)1 << 40))
      return tp_fail(TOPOS_ERR_OVERFLOW, "llama context: cache of %lld tokens", (long long)cap);
  }
  topos_llama_context *x = calloc(1, sizeof *x);
  if (!x) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "llama context");
  x->model = m;
  x->options = opt;
  x->capacity = cap;
  x->slots = slots;
  size_t L = (size_t)c->n_layers;
  x->elem = opt.kv_dtype == TOPOS_F32 ? 4 : 2;
  /* The cache is mapped by itself, never taken from the heap: glibc serves
   * even a 12 MB calloc from its heap once a block that large was freed
   * (its mmap threshold follows the largest freed mapping), and a context
   * made after another one was freed then grew the heap around the holes
   * the first left (SmolLM2's bench peak 128 -> 134 MB when a 128-token
   * context ran between two 512-token ones). Fresh pages are zero. In 2 MiB
   * pages where granted: decoding reads the cache from memory once per
   * token (SmolLM2 after 4096 tokens, 2 x 94 MB of f32 keys and values
   * against 92 MB of weights: 3 % faster at 1 and 2 threads, contexts side
   * by side in one process). */
  x->kv_bytes = 2 * (size_t)total * x->elem;
  x->k_mem = x->kv_bytes ? tp_pages_alloc(x->kv_bytes) : NULL;
  if (x->k_mem) tp_pages_prefer_huge(x->k_mem, x->kv_bytes);
  x->v_mem = x->k_mem ? (char *)x->k_mem + x->kv_bytes / 2 : NULL;
  x->k_cache = calloc(L, sizeof *x->k_cache);
  x->v_cache = calloc(L, sizeof *x->v_cache);
  x->kv_at = calloc(L, sizeof *x->kv_at);
  for (int b = 0; b < 2; ++b) {
    x->conv[b] = calloc(L, sizeof *x->conv[b]);
    x->ssm[b] = calloc(L, sizeof *x->ssm[b]);
  }
  /* the recurrent states' shapes: {conv rows, width} and {N, H, P} */
  const int64_t ssm_cd = tp_llama_ssm_conv_width(c);
  const int64_t conv_shape[2][2] = {{c->conv_len - 1, c->dim}, {c->ssm_conv - 1, ssm_cd}};
  const int64_t ssm_shape[3] = {c->ssm_state, c->ssm_heads, c->ssm_heads ? c->ssm_inner / c->ssm_heads : 0};
  const size_t conv_floats[2] = {(size_t)(conv_shape[0][0] * conv_shape[0][1]), (size_t)(conv_shape[1][0] * ssm_cd)};
  const size_t ssm_floats = (size_t)c->ssm_state * (size_t)c->ssm_inner;
  x->state_bytes = 2 * sizeof(float) * ((size_t)c->n_conv_layers * conv_floats[0] +
                                        (size_t)c->n_ssm_layers * (conv_floats[1] + ssm_floats));
  x->state_mem = x->state_bytes ? calloc(1, x->state_bytes) : NULL;
  x->feeds = calloc(4 * L + 12, sizeof *x->feeds); /* the inputs; per block up to keys, values and two states */
  x->row = malloc((size_t)c->dim * sizeof(float));
  topos_status st = TOPOS_OK;
  if ((x->kv_bytes && !x->k_mem) || !x->k_cache || !x->v_cache || !x->kv_at || !x->conv[0] || !x->conv[1] ||
      !x->ssm[0] || !x->ssm[1] || (x->state_bytes && !x->state_mem) || !x->feeds || !x->row)
    st = tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "llama context: cache of %lld elements",
                 (long long)(2 * total));
  float *state_at = x->state_mem;
  for (size_t l = 0, at = 0; st == TOPOS_OK && l < L; ++l) {
    const tp_llama_layer *ly = &x->model->layers[l];
    x->kv_at[l] = -1;
    if (ly->conv_taps || ly->ssm_in) { /* the recurrent block's two states of each kind */
      const int mamba = ly->ssm_in != NULL;
      const size_t cf = conv_floats[mamba];
      for (int b = 0; st == TOPOS_OK && b < 2; ++b, state_at += cf)
        st = topos_tensor_wrap(TOPOS_F32, 2, conv_shape[mamba], state_at, cf * sizeof(float), TOPOS_STORAGE_EXTERNAL,
                               NULL, NULL, &x->conv[b][l]);
      for (int b = 0; st == TOPOS_OK && mamba && b < 2; ++b, state_at += ssm_floats)
        st = topos_tensor_wrap(TOPOS_F32, 3, ssm_shape, state_at, ssm_floats * sizeof(float), TOPOS_STORAGE_EXTERNAL,
                               NULL, NULL, &x->ssm[b][l]);
    }
    if (!tp_llama_layer_caches(ly)) continue; /* (falcon-h1's blocks have both) */
    const int64_t per_layer = ly->kv_heads * ly->hd * slots;
    x->kv_at[l] = (int64_t)at;
    at += (size_t)per_layer;
    int64_t ks[3] = {ly->kv_heads, ly->hd, slots}, vs[3] = {ly->kv_heads, slots, ly->hd};
    if (opt.kv_dtype != TOPOS_F32) { /* see tp_llama_graph_build */
      ks[1] = slots;
      ks[2] = ly->hd;
      vs[1] = ly->hd;
      vs[2] = slots;
    }
    size_t bytes = (size_t)per_layer * x->elem, off = (size_t)x->kv_at[l] * x->elem;
    st = topos_tensor_wrap(opt.kv_dtype, 3, ks, (char *)x->k_mem + off, bytes,
                           TOPOS_STORAGE_EXTERNAL, NULL, NULL, &x->k_cache[l]);
    if (st == TOPOS_OK)
      st = topos_tensor_wrap(opt.kv_dtype, 3, vs, (char *)x->v_mem + off, bytes,
                             TOPOS_STORAGE_EXTERNAL, NULL, NULL, &x->v_cache[l]);
  }
  if (st != TOPOS_OK) {
    topos_llama_context_free(x);
    return st;
  }
  *out = x;
  return TOPOS_OK;
}

void topos_llama_context_free(topos_llama_context *x) {
  if (!x) return;
  for (int i = 0; i < x->n_graphs; ++i) tp_llama_graph_free(&x->graphs[i]);
  for (int64_t l = 0; l < x->model->config.n_layers; ++l) {
    if (x->k_cache) topos_tensor_release(x->k_cache[l]);
    if (x->v_cache) topos_tensor_release(x->v_cache[l]);
    for (int b = 0; b < 2; ++b) {
      if (x->conv[b]) topos_tensor_release(x->conv[b][l]);
      if (x->ssm[b]) topos_tensor_release(x->ssm[b][l]);
    }
  }
  free(x->k_cache);
  free(x->v_cache);
  free(x->kv_at);
  for (int b = 0; b < 2; ++b) {
    free(x->conv[b]);
    free(x->ssm[b]);
  }
  free(x->state_mem);
  if (x->k_mem) tp_pages_free(x->k_mem, x->kv_bytes);
  free(x->feeds);
  free(x->row);
  free(x);
}

int64_t topos_llama_position(const topos_llama_context *x) { return x ? x->pos : 0; }
int64_t topos_llama_capacity(const topos_llama_context *x) { return x ? x->capacity : 0; }

void topos_llama_reset(topos_llama_context *x) {
  if (!x) return;
  /* stale slots are masked, but zeros keep every masked product exactly 0;
   * keys and values are one mapping of kv_bytes */
  if (x->k_mem) memset(x->k_mem, 0, x->kv_bytes);
  if (x->state_mem) memset(x->state_mem, 0, x->state_bytes); /* zeros before position 0 */
  x->pos = 0;
}

uint64_t topos_llama_cache_bytes(const topos_llama_context *x) {
  return x ? (uint64_t)(x->kv_bytes + x->state_bytes) : 0;
}

/* Runs move from plan to plan (chunk shapes, growing spans) and each plan
 * keeps its arena for its next run: the plan left behind gives its memory
 * back, so the context holds one arena, not one per plan. */
static void tp_graph_use(topos_llama_context *x, tp_llama_graph *g, tp_llama_graph **out) {
  if (x->active && x->active != g->plan) topos_plan_trim(x->active);
  x->active = g->plan;
  *out = g;
}

/* Frees plan i; the last plan takes its slot. */
static void tp_graph_drop(topos_llama_context *x, int i) {
  if (x->graphs[i].plan == x->active) x->active = NULL;
  tp_llama_graph_free(&x->graphs[i]);
  const int last = --x->n_graphs;
  if (i != last) {
    x->graphs[i] = x->graphs[last];
    x->last_used[i] = x->last_used[last];
    memset(&x->graphs[last], 0, sizeof x->graphs[0]);
  }
}

/* Plans a context keeps before dropping those it cannot run again until a
 * reset: enough that rounds a caller repeats after resets (a prompt of four
 * chunks, or decoding through spans 32 to 128) find all theirs compiled. */
#define TP_LLAMA_KEEP_STALE 4

static topos_status tp_graph_for(topos_llama_context *x, int64_t T, tp_logits_rows logits_rows, int row_mask,
                                 int window_masks, tp_llama_graph **out) {
  if (T == 1 && logits_rows == TP_LOGITS_ALL) logits_rows = TP_LOGITS_LAST; /* one row either way */
  /* A chunk at position 0 needs no cache segment (cached keys would all be
   * masked). Later chunks, prompt and decode alike, attend to the first span
   * slots: a power of two covering the written ones, so attention costs the
   * keys written so far rather than the whole capacity, while a handful of
   * plans (log2 of the capacity per chunk length) serve every position.
   * Masked slots add exact zeros: the span changes no bit. */
  int has_cache = x->pos > 0;
  row_mask = row_mask && has_cache;
  int64_t span = 32;
  while (span < x->pos) span *= 2;
  if (span > x->capacity) span = x->capacity;
  /* Past a few plans, those the context cannot run again before a reset
   * go (positions only grow: a span below the position, or the first
   * chunk's plan past position 0), so a conversation keeps the plans of its
   * current spans: SmolLM2 after a 1024-token prompt held seven plans of
   * ~0.9 MB, now four. */
  if (x->n_graphs > TP_LLAMA_KEEP_STALE)
    for (int i = x->n_graphs - 1; i >= 0; --i)
      if (x->graphs[i].has_cache ? x->graphs[i].span < x->pos : x->pos > 0) tp_graph_drop(x, i);
  for (int i = 0; i < x->n_graphs; ++i)
    if (x->graphs[i].T == T && x->graphs[i].logits_rows == logits_rows && x->graphs[i].row_mask == row_mask &&
        x->graphs[i].window_masks == window_masks && x->graphs[i].has_cache == has_cache &&
        (!has_cache || x->graphs[i].span == span)) {
      x->last_used[i] = ++x->clock;
      tp_graph_use(x, &x->graphs[i], out);
      return TOPOS_OK;
    }
  if (x->n_graphs == TP_LLAMA_MAX_PLANS) { /* evict the least recently used plan */
    int lru = 0;
    for (int i = 1; i < TP_LLAMA_MAX_PLANS; ++i)
      if (x->last_used[i] < x->last_used[lru]) lru = i;
    tp_graph_drop(x, lru);
  }
  /* the plan that ran last is left behind: its arena goes back before the
   * compile's temporaries and the new plan's arena are made */
  if (x->active) topos_plan_trim(x->active);
  x->active = NULL;
  const int slot = x->n_graphs;
  TP_TRY(tp_llama_graph_build(x->model, T, x->slots, span, logits_rows, has_cache, row_mask, window_masks,
                              x->options.kv_dtype, x->options.numerics, &x->graphs[slot]));
  ++x->n_graphs;
  x->last_used[slot] = ++x->clock;
  tp_graph_use(x, &x->graphs[slot], out);
  return TOPOS_OK;
}

/* Chunk rows [T, KVH, hd] of layer l's keys (is_v 0) or values into the
 * cache at pos..pos+T-1. f32: K [KVH, hd, C] (transposed), V [KVH, C, hd];
 * 16-bit: K [KVH, C, hd], V [KVH, hd, C]. A row goes in whole where the
 * layout keeps it contiguous and element by element where it is transposed. */
static void tp_cache_write(topos_llama_context *x, int64_t l, int is_v, const float *rows, int64_t T) {
  const tp_llama_layer *ly = &x->model->layers[l];
  int64_t KVH = ly->kv_heads, hd = ly->hd, C = x->slots, base = x->kv_at[l];
  topos_dtype dt = x->options.kv_dtype;
  /* f32 keys and 16-bit values are the transposed ones */
  const int transposed = (dt == TOPOS_F32) != (is_v != 0);
  void *mem = is_v ? x->v_mem : x->k_mem;
  for (int64_t t = 0; t < T; ++t) {
    int64_t p = x->pos + t;
    for (int64_t h = 0; h < KVH; ++h) {
      const float *r = rows + (t * KVH + h) * hd;
      if (dt == TOPOS_F32) {
        float *cache = (float *)mem + base;
        if (transposed)
          for (int64_t i = 0; i < hd; ++i) cache[(h * hd + i) * C + p] = r[i];
        else
          memcpy(cache + (h * C + p) * hd, r, (size_t)hd * sizeof(float));
      } else {
        uint16_t *cache = (uint16_t *)mem + base;
        void (*to16)(const float *, uint16_t *, size_t) = dt == TOPOS_F16 ? tp_f32_to_f16_row : tp_f32_to_bf16_row;
        if (!transposed) {
          to16(r, cache + (h * C + p) * hd, (size_t)hd);
          continue;
        }
        uint16_t b[64]; /* converted 64 at a time, then scattered */
        for (int64_t i0 = 0; i0 < hd; i0 += 64) {
          const int64_t len = hd - i0 < 64 ? hd - i0 : 64;
          to16(r + i0, b, (size_t)len);
          for (int64_t i = 0; i < len; ++i) cache[(h * hd + i0 + i) * C + p] = b[i];
        }
      }
    }
  }
}

typedef struct tp_sink_user {
  topos_llama_context *x;
  const tp_llama_graph *g;
} tp_sink_user;

/* The plan's sink k (llama_internal.h: g->sink_at): a layer's keys or
 * values, [T, KVH, hd] f32 as the chunk computed them, into the cache
 * (masked attention never reads slots at or past pos, so writing them
 * during the chunk changes no result); or a convolution's last rows into
 * the state the next chunk reads. */
static topos_status tp_cache_sink(void *user, size_t k, const topos_tensor *value) {
  const tp_sink_user *u = user;
  topos_llama_context *x = u->x;
  const int64_t L = x->model->config.n_layers, at = u->g->sink_at[k], l = at % L, kind = at / L;
  if (!topos_tensor_is_contiguous(value) || topos_tensor_dtype(value) != TOPOS_F32)
    return tp_fail(TOPOS_ERR_INTERNAL, "llama eval: chunk keys/values are not packed f32");
  if (kind == TP_SINK_CONV || kind == TP_SINK_SSM) {
    topos_tensor *dst = (kind == TP_SINK_CONV ? x->conv : x->ssm)[!x->front][l];
    memcpy(topos_tensor_data_mut(dst), topos_tensor_data(value), (size_t)topos_tensor_volume(dst) * sizeof(float));
    return TOPOS_OK;
  }
  tp_cache_write(x, l, kind == TP_SINK_V, topos_tensor_data(value), topos_tensor_shape(value)[0]);
  return TOPOS_OK;
}

/* A chunk's inputs (every element written before the run): of n f32
 * tensors of the given ranks and shapes, those want[i] asks for (the
 * others NULL), 64-byte aligned in one storage allocated as a plan arena is
 * (tp_storage_arena: mapped, so the 0.3-1 MB a prompt chunk needs leaves no
 * hole in the heap when it goes). */
static topos_status tp_new_inputs(int n, const int *want, const int *rank, const int64_t (*shape)[3],
                                  topos_tensor **t, float **data) {
  int64_t at[16], total = 0;
  for (int i = 0; i < n; ++i) {
    t[i] = NULL, data[i] = NULL;
    if (!want[i]) continue;
    at[i] = total;
    int64_t volume = 1;
    for (int a = 0; a < rank[i]; ++a) volume *= shape[i][a];
    total += (volume + 15) / 16 * 16;
  }
  tp_storage *s = NULL;
  TP_TRY(tp_storage_arena((size_t)total * sizeof(float), &s));
  topos_status st = TOPOS_OK;
  for (int i = 0; i < n; ++i) {
    if (!want[i]) continue;
    if (st == TOPOS_OK) st = tp_tensor_on_storage(s, at[i], TOPOS_F32, rank[i], shape[i], &t[i]);
    if (st == TOPOS_OK) data[i] = topos_tensor_data_mut(t[i]);
  }
  tp_storage_release(s); /* the tensors hold it */
  return st;
}

/* cos and sin [T, hd/2] of each rotated pair's angle at the chunk's
 * positions, times rope_mscale: with the file's base and position scaling
 * (linear, Llama 3.1's factors, LongRoPE's table, YaRN), or for windowed
 * layers with a base of their own (own_base: gemma3's local layers) that
 * base with positions unscaled. */
static void tp_rope_tables(const topos_llama_context *x, int64_t T, int own_base, float *pc, float *ps) {
  const topos_llama *m = x->model;
  const topos_llama_config *c = &m->config;
  const int64_t dims = own_base ? c->rope_dim_swa : c->rope_dim, half = dims / 2;
  const topos_tensor *table = m->rope_factors ? m->rope_factors
                              : m->rope_long ? (x->capacity > c->rope_ctx_orig ? m->rope_long : m->rope_short)
                                             : NULL;
  const float *factor = table && !own_base ? topos_tensor_data(table) : NULL;
  const int yarn = c->rope_ext_factor != 0.0f && !own_base;
  const double scale = own_base ? 1.0 : c->rope_freq_scale, base = own_base ? c->rope_base_swa : c->rope_base;
  const double mscale = own_base ? c->rope_mscale_swa : c->rope_mscale;
  const double low = c->rope_yarn_low, width = fmax(0.001, (double)c->rope_yarn_high - low);
  const uint8_t *still = m->rope_still; /* M-RoPE's pairs that see position 0 */
  for (int64_t t = 0; t < T; ++t) {
    const double pos = (double)(x->pos + t) * (yarn ? 1.0 : scale);
    for (int64_t i = 0; i < half; ++i) {
      double theta = (still && still[i] ? 0.0 : pos) * pow(base, -2.0 * (double)i / (double)dims);
      if (factor) theta /= (double)factor[i];
      if (yarn) { /* the original angle below the ramp, the scaled one above */
        const double mix = (1.0 - fmin(1.0, fmax(0.0, ((double)i - low) / width))) * c->rope_ext_factor;
        theta = theta * scale * (1.0 - mix) + theta * mix;
      }
      pc[t * half + i] = (float)(cos(theta) * mscale);
      ps[t * half + i] = (float)(sin(theta) * mscale);
    }
  }
}

/* ALiBi's slope for head h of H, as ggml's soft_max computes it: m0^(h+1)
 * for the first 2^floor(log2 H) heads, m1^(2(h - that) + 1) after */
static float tp_alibi_slope(float max_bias, int64_t H, int64_t h) {
  uint32_t log2 = 1;
  while ((int64_t)log2 * 2 <= H) log2 *= 2;
  const float m0 = powf(2.0f, -max_bias / (float)log2), m1 = powf(2.0f, -(max_bias / 2.0f) / (float)log2);
  return h < (int64_t)log2 ? powf(m0, (float)(h + 1)) : powf(m1, (float)(2 * (h - (int64_t)log2) + 1));
}

/* ALiBi's masks, a copy of the shared rows per head ([KVH, G*T, C] and
 * [KVH, G*T, T]) plus slope_h * (key position - query position): the same
 * float for a query and key pair whatever the chunk, so decoding keeps the
 * full context's bits */
static void tp_alibi_masks(const topos_llama_context *x, int64_t T, int64_t C, float *pmc, float *pmn) {
  const topos_llama_config *c = &x->model->config;
  const int64_t KVH = c->n_kv_heads, G = c->n_heads / KVH;
  for (int64_t h = 0; h < KVH * G; ++h) {
    const float slope = tp_alibi_slope(c->alibi_max_bias, c->n_heads, h);
    for (int64_t t = 0; t < T; ++t) {
      const int64_t p = x->pos + t;
      for (int64_t j = 0; pmc && j < C; ++j)
        pmc[(h * T + t) * C + j] = j < x->pos ? slope * (float)(j - p) : -INFINITY;
      for (int64_t j = 0; j < T; ++j) pmn[(h * T + t) * T + j] = j <= t ? slope * (float)(j - t) : -INFINITY;
    }
  }
}

/* The chunk's attention masks for a window of swa (0: none; a query at p
 * sees keys from p - swa + 1, or with chunked attention from floor(p / swa)
 * swa): the cached slots each row sees, all written ones less those behind
 * the window, one row for all (rows 0) or a row per query row (rows:
 * [G*T, C]); and inside the chunk [G*T, T], causal and within the window. */
static void tp_fill_masks(const topos_llama_context *x, int64_t T, int64_t C, int64_t swa, int rows, float *pmc,
                          float *pmn) {
  const topos_llama_config *c = &x->model->config;
  const int64_t G = c->n_heads / c->n_kv_heads;
  if (c->alibi_max_bias > 0.0f) {
    tp_alibi_masks(x, T, C, pmc, pmn);
    return;
  }
  for (int64_t r = 0; pmc && r < (rows ? G * T : 1); ++r) {
    const int64_t p = x->pos + r % T;
    const int64_t first = swa <= 0 ? 0 : c->swa_chunked ? p / swa * swa : p >= swa ? p - swa + 1 : 0;
    for (int64_t j = 0; j < C; ++j) pmc[r * C + j] = j >= first && j < x->pos ? 0.0f : -INFINITY;
  }
  for (int64_t gi = 0; gi < G; ++gi)
    for (int64_t t = 0; t < T; ++t) {
      float *rn = pmn + (gi * T + t) * T;
      for (int64_t j = 0; j < T; ++j) {
        const int64_t pj = x->pos + j, pt = x->pos + t;
        const int seen = swa <= 0 || (c->swa_chunked ? pj / swa == pt / swa : t - j < swa);
        rn[j] = j <= t && seen ? 0.0f : -INFINITY;
      }
    }
}

/* px[t * D ..] += row pos + t of the learned position table [n_ctx_train, D] */
static topos_status tp_add_position_rows(const topos_tensor *table, int64_t pos, int64_t T, int64_t D, float *px) {
  const topos_dtype dt = topos_tensor_dtype(table);
  size_t row_bytes = 0;
  TP_TRY(topos_dtype_bytes(dt, D, &row_bytes));
  float *row = malloc((size_t)D * sizeof *row);
  if (!row) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "llama: a position row");
  topos_status st = TOPOS_OK;
  for (int64_t t = 0; st == TOPOS_OK && t < T; ++t) {
    st = topos_dequantize_row(dt, (const uint8_t *)topos_tensor_data(table) + (size_t)(pos + t) * row_bytes, row, D);
    for (int64_t i = 0; st == TOPOS_OK && i < D; ++i) px[t * D + i] += row[i];
  }
  free(row);
  return st;
}

/* out[t * width ..] = row tokens[t] of table [vocab, width], dequantized from
 * its stored type, times scale (1: as stored) */
static topos_status tp_token_rows(const topos_tensor *table, const int32_t *tokens, int64_t T, int64_t width,
                                  float scale, float *out) {
  const topos_dtype dt = topos_tensor_dtype(table);
  size_t row_bytes = 0;
  TP_TRY(topos_dtype_bytes(dt, width, &row_bytes));
  for (int64_t t = 0; t < T; ++t) {
    float *row = out + t * width;
    TP_TRY(topos_dequantize_row(dt, (const uint8_t *)topos_tensor_data(table) + (size_t)tokens[t] * row_bytes, row,
                                width));
    for (int64_t i = 0; scale != 1.0f && i < width; ++i) row[i] *= scale;
  }
  return TOPOS_OK;
}

static topos_status tp_eval_chunk(topos_llama_context *x, const int32_t *tokens, int64_t n,
                                  int all_logits, float *logits) {
  const topos_llama *m = x->model;
  const topos_llama_config *c = &m->config;
  tp_llama_graph *g;
  /* no logits wanted (a prompt chunk before the last): a plan without the head */
  const tp_logits_rows rows = !logits ? TP_LOGITS_NONE : all_logits ? TP_LOGITS_ALL : TP_LOGITS_LAST;
  /* a sliding window behind some of the chunk's rows' keys: where it cuts
   * into several rows' cached keys, a cache mask a row per query; where the
   * model mixes windowed and full layers (gemma2, gemma3), masks of their
   * own for the windowed ones (while the window cuts into no row, both
   * kinds of layer see every earlier key and share one set) */
  const int64_t swa = c->n_swa;
  const int cuts = swa > 0 && x->pos + n > swa;
  const int all_windowed = c->n_swa_layers == c->n_layers;
  const int window_masks = cuts && !all_windowed;
  TP_TRY(tp_graph_for(x, n, rows, cuts && n > 1, window_masks, &g));
  int64_t T = n, C = g->span, D = c->dim, half = c->rope_dim / 2, half_w = c->rope_dim_swa / 2;
  const int64_t LP = c->n_layers * c->ple_dim;
  int64_t KVH = c->n_kv_heads, G = c->n_heads / KVH, L = c->n_layers;
  const int own_rope = topos_sym_is_valid(g->cos_w);
  /* inputs: x0 [T, D]; cos, sin [T, hd/2, 1]; mask_n [G*T, T]; mask_c [C]
   * (row_mask: [G*T, C]); then the windowed layers' cos, sin (own_rope)
   * and mask_n, mask_c (window_masks) */
  enum { X0, COS, SIN, MASK_N, MASK_C, COS_W, SIN_W, MASK_NW, MASK_CW, TEMP, PLE, N_IN };
  const int full_rows = g->row_mask && !window_masks;
  const int alibi = c->alibi_max_bias > 0.0f; /* masks per head: tp_alibi_masks */
  const int ranks[N_IN] = {2, 3, 3, alibi ? 3 : 2, alibi ? 3 : full_rows ? 2 : 1, 3, 3, 2, g->row_mask ? 2 : 1, 1, 2};
  const int64_t shapes[N_IN][3] = {{T, D, 0},        {T, half, 1},
                             {T, half, 1},     {alibi ? KVH : G * T, alibi ? G * T : T, alibi ? T : 0},
                             {alibi ? KVH : full_rows ? G * T : C, alibi ? G * T : full_rows ? C : 0, alibi ? C : 0},
                             {T, half_w, 1},   {T, half_w, 1},
                             {G * T, T, 0},    {g->row_mask ? G * T : C, g->row_mask ? C : 0, 0},
                             {T, 0, 0},        {T, LP, 0}};
  const int want[N_IN] = {1,        1,        1,        1, g->has_cache, own_rope, own_rope, window_masks,
                          window_masks && g->has_cache, topos_sym_is_valid(g->temp), topos_sym_is_valid(g->ple_rows)};
  topos_tensor *in[N_IN];
  float *pin[N_IN];
  topos_status st = tp_new_inputs(N_IN, want, ranks, shapes, in, pin);
  /* embedding rows (gemma: times sqrt(dim)); Gemma 4's per-layer rows times sqrt(ple_dim) */
  float *px = pin[X0];
  if (st == TOPOS_OK) st = tp_token_rows(m->token_embd, tokens, T, D, c->embd_scale, px);
  if (st == TOPOS_OK && m->pos_embd) /* gpt2: plus the learned row of each position */
    st = tp_add_position_rows(m->pos_embd, x->pos, T, D, px);
  if (st == TOPOS_OK && pin[PLE]) st = tp_token_rows(m->ple_embd, tokens, T, LP, sqrtf((float)c->ple_dim), pin[PLE]);
  if (st == TOPOS_OK) {
    tp_rope_tables(x, T, 0, pin[COS], pin[SIN]);
    if (own_rope) tp_rope_tables(x, T, 1, pin[COS_W], pin[SIN_W]);
    tp_fill_masks(x, T, C, all_windowed ? swa : 0, full_rows, pin[MASK_C], pin[MASK_N]);
    if (window_masks) tp_fill_masks(x, T, C, swa, g->row_mask, pin[MASK_CW], pin[MASK_NW]);
    for (int64_t t = 0; pin[TEMP] && t < T; ++t) { /* the floor in integers */
      const int64_t f = (x->pos + t + c->attn_temp_offset) / c->attn_temp_floor;
      pin[TEMP][t] = (float)(log((double)f + 1.0) * c->attn_temp_scale + 1.0);
    }
    topos_feed *f = x->feeds;
    size_t nf = 0;
    const topos_sym syms[N_IN] = {g->x0,    g->cos,   g->sin,     g->mask_n,  g->mask_c,  g->cos_w,
                                  g->sin_w, g->mask_nw, g->mask_cw, g->temp, g->ple_rows};
    for (int i = 0; i < N_IN; ++i)
      if (in[i]) f[nf++] = (topos_feed){syms[i], in[i]};
    for (int64_t l = 0; l < L; ++l) {
      if (x->conv[0][l]) f[nf++] = (topos_feed){g->conv_state[l], x->conv[x->front][l]};
      if (x->ssm[0][l]) f[nf++] = (topos_feed){g->ssm_state[l], x->ssm[x->front][l]};
      if (g->has_cache && x->k_cache[l]) {
        f[nf++] = (topos_feed){g->k_cache[l], x->k_cache[l]};
        f[nf++] = (topos_feed){g->v_cache[l], x->v_cache[l]};
      }
    }
    topos_run *run = NULL;
    tp_sink_user user = {x, g};
    st = topos_plan_forward_sink(g->plan, NULL, f, nf, tp_cache_sink, &user, &run);
    if (st == TOPOS_OK && (c->n_conv_layers || c->n_ssm_layers)) x->front = !x->front; /* the states the sinks wrote */
    if (st == TOPOS_OK && logits) {
      topos_tensor *lg = NULL;
      st = topos_run_read(run, g->logits, &lg);
      if (st == TOPOS_OK) st = topos_tensor_read_f32(lg, logits, topos_tensor_volume(lg));
      topos_tensor_release(lg);
    }
    topos_run_free(run);
  }
  for (int i = 0; i < N_IN; ++i) topos_tensor_release(in[i]);
  if (st != TOPOS_OK) return tp_fail_context(st, "llama eval at position %lld", (long long)x->pos);
  x->pos += T;
  return TOPOS_OK;
}

topos_status topos_llama_eval(topos_llama_context *x, const int32_t *tokens, int64_t n,
                              int all_logits, float *logits) {
  if (!x || !tokens || n < 1)
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "llama eval: NULL context/tokens or n < 1");
  const topos_llama_config *c = &x->model->config;
  if (n > x->capacity - x->pos)
    return tp_fail(TOPOS_ERR_RANGE, "llama eval: %lld tokens at position %lld exceed the context "
                   "capacity %lld", (long long)n, (long long)x->pos, (long long)x->capacity);
  for (int64_t i = 0; i < n; ++i)
    if (tokens[i] < 0 || tokens[i] >= c->n_vocab)
      return tp_fail(TOPOS_ERR_RANGE, "llama eval: token %d (at %lld) is outside the vocabulary "
                     "of %lld", tokens[i], (long long)i, (long long)c->n_vocab);
  /* chunks of at most n_batch tokens bound the activations' memory */
  int64_t batch = x->options.n_batch > 0 ? x->options.n_batch : n;
  for (int64_t done = 0; done < n;) {
    int64_t len = n - done < batch ? n - done : batch;
    int last = done + len == n;
    float *out = all_logits ? (logits ? logits + done * c->n_vocab : NULL) : last ? logits : NULL;
    TP_TRY(tp_eval_chunk(x, tokens + done, len, all_logits, out));
    done += len;
  }
  return TOPOS_OK;
}
