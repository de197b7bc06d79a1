/* makemore: character-level name models on names.txt (vocabulary: '.' and
 * a..z). Default: Bengio-style MLP (context 3, embedding 10, hidden 200 tanh,
 * Adam); --transformer: one pre-norm block (context 8, embedding 32, 2 heads,
 * feed-forward 128, RMSNorm). 90% of the names train, 10% are held out; the
 * program reports the held-out loss, then samples names. Also
 * `topos train makemore`. */
#include "common/train_util.h"
#include "common/checkpoint_util.h"
#include "common/mlp_util.h"

#define EX_VOCAB 27
#define EX_EVAL 1000 /* held-out evaluation batch */

typedef struct ex_corpus {
  int32_t *tokens; /* every name followed by '.', names joined */
  int64_t *starts; /* index of each name's first token */
  int64_t names, total;
} ex_corpus;

static void ex_corpus_free(ex_corpus *c) {
  free(c->tokens);
  free(c->starts);
}

static int ex_corpus_load(const char *path, ex_corpus *c) {
  void *bytes = NULL;
  size_t size = 0;
  if (topos_read_file(path, (size_t)64 << 20, &bytes, &size) != TOPOS_OK) return 0;
  const char *p = bytes;
  c->tokens = malloc((size + 1) * sizeof *c->tokens);
  c->starts = malloc((size + 1) * sizeof *c->starts);
  if (!c->tokens || !c->starts) {
    free(bytes);
    return 0;
  }
  int64_t len = 0;
  for (size_t i = 0; i <= size; ++i) {
    char ch = i < size ? p[i] : '\n';
    if (ch >= 'A' && ch <= 'Z') ch = (char)(ch - 'A' + 'a');
    if (ch >= 'a' && ch <= 'z') {
      if (len == 0) c->starts[c->names] = c->total;
      c->tokens[c->total++] = ch - 'a' + 1;
      ++len;
    } else if (ch == '\n' && len > 0) {
      c->tokens[c->total++] = 0;
      c->names++;
      len = 0;
    }
  }
  free(bytes);
  return c->names > 0;
}

/* Examples: (context tokens before position, token at position) for every
 * position of every name in [first, last) names, '.' padded on the left. */
typedef struct ex_samples {
  int32_t *context; /* count x window */
  int32_t *target;  /* count x window targets (transformer) or count (mlp) */
  int64_t count;
} ex_samples;

static int ex_samples_make(const ex_corpus *c, int64_t first, int64_t last, int window,
                           int all_targets, ex_samples *s) {
  int64_t end = last < c->names ? c->starts[last] : c->total;
  int64_t n = end - c->starts[first];
  s->context = malloc((size_t)(n * window) * sizeof *s->context);
  s->target = malloc((size_t)(n * (all_targets ? window : 1)) * sizeof *s->target);
  if (!s->context || !s->target) return 0;
  s->count = 0;
  for (int64_t name = first; name < last; ++name) {
    int64_t from = c->starts[name], to = name + 1 < c->names ? c->starts[name + 1] : c->total;
    for (int64_t pos = from; pos < to; ++pos) {
      int32_t *ctx = s->context + s->count * window;
      for (int k = 0; k < window; ++k) {
        int64_t at = pos - window + k;
        ctx[k] = at >= from ? c->tokens[at] : 0;
      }
      if (all_targets) {
        int32_t *tg = s->target + s->count * window;
        for (int k = 0; k < window; ++k) {
          int64_t at = pos - window + k + 1;
          tg[k] = at >= from ? c->tokens[at] : 0;
        }
      } else {
        s->target[s->count] = c->tokens[pos];
      }
      s->count++;
    }
  }
  return 1;
}

/* The model over a batch of B contexts; returns logits [B,27] (mlp) or
 * [B*T,27] (transformer). */
typedef struct ex_makemore_model {
  int transformer, window;
  topos_embedding tokens, positions;
  topos_linear hidden, out, ff_in, ff_out;
  topos_attention attention;
  topos_layer_norm norm1, norm2, norm3;
} ex_makemore_model;

static topos_status ex_makemore_new(topos_tape *tape, int transformer, topos_rng *rng,
                                    ex_makemore_model *m) {
  m->transformer = transformer;
  if (!transformer) {
    m->window = 3;
    topos_embedding_new(tape, "embedding", EX_VOCAB, 10, TOPOS_F32, rng, &m->tokens);
    topos_linear_new(tape, "hidden", 30, 200, 1, TOPOS_F32, rng, &m->hidden);
    topos_linear_new(tape, "out", 200, EX_VOCAB, 1, TOPOS_F32, rng, &m->out);
  } else {
    m->window = 8;
    topos_embedding_new(tape, "embedding", EX_VOCAB, 32, TOPOS_F32, rng, &m->tokens);
    topos_embedding_new(tape, "position", m->window, 32, TOPOS_F32, rng, &m->positions);
    topos_rms_norm_new(tape, "norm1", 32, 1e-5, TOPOS_F32, &m->norm1);
    topos_attention_new(tape, "attention", 32, 2, TOPOS_F32, rng, &m->attention);
    topos_rms_norm_new(tape, "norm2", 32, 1e-5, TOPOS_F32, &m->norm2);
    topos_linear_new(tape, "ff_in", 32, 128, 1, TOPOS_F32, rng, &m->ff_in);
    topos_linear_new(tape, "ff_out", 128, 32, 1, TOPOS_F32, rng, &m->ff_out);
    topos_rms_norm_new(tape, "norm3", 32, 1e-5, TOPOS_F32, &m->norm3);
    topos_linear_new(tape, "out", 32, EX_VOCAB, 1, TOPOS_F32, rng, &m->out);
  }
  return topos_tape_status(tape);
}

static topos_sym ex_makemore_logits(topos_tape *tape, const ex_makemore_model *m,
                                    topos_sym context, int64_t batch) {
  int64_t T = m->window;
  topos_sym e = topos_embedding_apply(tape, &m->tokens, context); /* [B*T, E] */
  if (!m->transformer) {
    int64_t flat[2] = {batch, T * 10};
    topos_sym h = topos_tape_tanh(
        tape, topos_linear_apply(tape, &m->hidden, topos_tape_reshape(tape, e, 2, flat)));
    return topos_linear_apply(tape, &m->out, h);
  }
  int32_t *pos = malloc((size_t)(batch * T) * sizeof *pos);
  if (!pos) return topos_tape_fail(tape, TOPOS_ERR_OUT_OF_MEMORY, "positions"), TOPOS_SYM_INVALID;
  for (int64_t i = 0; i < batch * T; ++i) pos[i] = (int32_t)(i % T);
  topos_tensor *pt = NULL;
  int64_t n = batch * T;
  topos_tensor_from_data(TOPOS_I32, 1, &n, pos, (size_t)n * sizeof *pos, &pt);
  free(pos);
  topos_sym p = topos_embedding_apply(tape, &m->positions, topos_tape_constant(tape, pt));
  topos_tensor_release(pt);
  int64_t shape3[3] = {batch, T, 32};
  topos_sym x = topos_tape_reshape(tape, topos_tape_add(tape, e, p), 3, shape3);
  x = topos_tape_add(tape, x,
                     topos_attention_apply(tape, &m->attention, topos_rms_norm_apply(tape, &m->norm1, x)));
  topos_sym f = topos_linear_apply(tape, &m->ff_in, topos_rms_norm_apply(tape, &m->norm2, x));
  f = topos_linear_apply(tape, &m->ff_out, topos_tape_relu(tape, f));
  x = topos_tape_add(tape, x, f);
  topos_sym logits = topos_linear_apply(tape, &m->out, topos_rms_norm_apply(tape, &m->norm3, x));
  int64_t flat[2] = {batch * T, EX_VOCAB};
  return topos_tape_reshape(tape, logits, 2, flat);
}

/* Copies examples rows[0..n) into the context and target feeds. */
/* last_only: one target per example (the transformer's last position). */
static void ex_makemore_fill(const ex_samples *s, const int64_t *rows, int64_t n, int window,
                             int all_targets, int last_only, topos_tensor *ctx,
                             topos_tensor *tgt) {
  int32_t *c = topos_tensor_data_mut(ctx), *t = topos_tensor_data_mut(tgt);
  int tw = all_targets ? window : 1;
  for (int64_t i = 0; i < n; ++i) {
    memcpy(c + i * window, s->context + rows[i] * window, sizeof(int32_t) * (size_t)window);
    if (last_only) t[i] = s->target[rows[i] * tw + tw - 1];
    else memcpy(t + i * tw, s->target + rows[i] * tw, sizeof(int32_t) * (size_t)tw);
  }
}

/* The logits of the last position of each example: [B*T,27] -> [B,27]. */
static topos_sym ex_last_position(topos_tape *tape, topos_sym logits, int64_t batch, int64_t T) {
  int64_t shape3[3] = {batch, T, EX_VOCAB}, shape2[2] = {batch, EX_VOCAB};
  topos_sym last = topos_tape_narrow(tape, topos_tape_reshape(tape, logits, 3, shape3), 1, T - 1, 1);
  return topos_tape_reshape(tape, last, 2, shape2);
}

int topos_example_makemore(int argc, char **argv) {
  ex_flags flags = {.steps = 20000, .batch = 128, .lr = 0.01, .seed = 42, .out = "."};
  int transformer = 0;
  for (int i = 1; i < argc; ++i)
    if (!strcmp(argv[i], "--transformer")) {
      transformer = 1;
      for (int k = i; k + 1 < argc; ++k) argv[k] = argv[k + 1];
      --argc;
      --i;
    }
  int parsed = ex_parse_flags(argc, argv, &flags,
                              "  --transformer   one-block transformer instead of the MLP\n"
                              "data: --data FILE, else ../shared/data/names.txt\n");
  if (parsed) return parsed == 1 ? 0 : 2;
  /* --data FILE is the only place looked at when given */
  const char *standard[] = {NULL, "../shared/data/names.txt", "../../shared/data/names.txt",
                            "names.txt", NULL};
  const char *given[3] = {NULL, flags.data, NULL};
  const char *const *candidates = flags.data ? given : standard;
  const char *path = NULL;
  for (int i = 1; candidates[i]; ++i)
    if (ex_exists(candidates[i])) {
      path = candidates[i];
      break;
    }
  if (!path) {
    fprintf(stderr, "error: names.txt not found. Looked in:\n");
    for (int i = 1; candidates[i]; ++i) fprintf(stderr, "  %s\n", candidates[i]);
    fprintf(stderr, "names.txt (32,033 names, one per line) ships with Karpathy's makemore "
                    "repository; save it and pass --data FILE.\n");
    return 3;
  }
  int rc = 0;
  ex_corpus corpus = {0};
  ex_samples train = {0}, held = {0};
  topos_tape *tape = NULL;
  topos_network *net = NULL;
  topos_params *params = NULL;
  topos_plan *plan = NULL, *eval = NULL, *sampler = NULL;
  topos_optimizer *opt = NULL;
  topos_tensor *bc = NULL, *bt = NULL, *ec = NULL, *et = NULL, *sc = NULL;
  int64_t *order = NULL;
  ex_curve curve = {0};
  if (!ex_corpus_load(path, &corpus)) {
    fprintf(stderr, "error: %s holds no names\n", path);
    rc = 1;
    goto cleanup;
  }
  /* shuffle the names once (seeded), then split 90 / 10 */
  {
    int64_t *perm = malloc((size_t)corpus.names * sizeof *perm);
    int32_t *tokens = malloc((size_t)corpus.total * sizeof *tokens);
    int64_t *starts = malloc((size_t)corpus.names * sizeof *starts);
    if (!perm || !tokens || !starts) {
      free(perm), free(tokens), free(starts);
      rc = ex_fail("corpus", TOPOS_ERR_OUT_OF_MEMORY);
      goto cleanup;
    }
    for (int64_t i = 0; i < corpus.names; ++i) perm[i] = i;
    topos_rng split_rng = topos_rng_seed(9);
    ex_shuffle(perm, corpus.names, &split_rng);
    int64_t at = 0;
    for (int64_t i = 0; i < corpus.names; ++i) {
      int64_t from = corpus.starts[perm[i]];
      int64_t to = perm[i] + 1 < corpus.names ? corpus.starts[perm[i] + 1] : corpus.total;
      starts[i] = at;
      memcpy(tokens + at, corpus.tokens + from, (size_t)(to - from) * sizeof *tokens);
      at += to - from;
    }
    free(perm);
    free(corpus.tokens);
    free(corpus.starts);
    corpus.tokens = tokens;
    corpus.starts = starts;
  }
  int64_t split = corpus.names * 9 / 10;
  int window = transformer ? 8 : 3;
  if (!ex_samples_make(&corpus, 0, split, window, transformer, &train) ||
      !ex_samples_make(&corpus, split, corpus.names, window, transformer, &held)) {
    rc = ex_fail("samples", TOPOS_ERR_OUT_OF_MEMORY);
    goto cleanup;
  }
  printf("makemore (%s): %lld names from %s; %lld training and %lld held-out examples\n",
         transformer ? "transformer" : "mlp", (long long)corpus.names, path,
         (long long)train.count, (long long)held.count);

  int64_t B = flags.batch, T = window, tw = transformer ? T : 1;
  topos_rng rng = topos_rng_seed(flags.seed);
  ex_makemore_model model;
  EX_TRY("tape", topos_tape_new(&tape));
  ex_makemore_new(tape, transformer, &rng, &model);
  topos_tensor_desc cdesc = {TOPOS_I32, 1, {B * T}}, tdesc = {TOPOS_I32, 1, {B * tw}};
  topos_tensor_desc ecdesc = {TOPOS_I32, 1, {EX_EVAL * T}}, etdesc = {TOPOS_I32, 1, {EX_EVAL}};
  topos_tensor_desc scdesc = {TOPOS_I32, 1, {T}};
  topos_sym ctx = topos_tape_input_desc(tape, &cdesc, "context");
  topos_sym tgt = topos_tape_input_desc(tape, &tdesc, "target");
  topos_sym loss = topos_cross_entropy(tape, ex_makemore_logits(tape, &model, ctx, B), tgt);
  topos_sym ectx = topos_tape_input_desc(tape, &ecdesc, "eval_context");
  topos_sym etgt = topos_tape_input_desc(tape, &etdesc, "eval_target");
  /* held-out loss: next-token loss at the last position (for the MLP its only one) */
  topos_sym eval_logits = ex_makemore_logits(tape, &model, ectx, EX_EVAL);
  if (transformer) eval_logits = ex_last_position(tape, eval_logits, EX_EVAL, T);
  topos_sym eval_loss = topos_cross_entropy(tape, eval_logits, etgt);
  topos_sym sctx = topos_tape_input_desc(tape, &scdesc, "sample_context");
  topos_sym sample_logits = ex_makemore_logits(tape, &model, sctx, 1);
  EX_TRY("recording", topos_tape_status(tape));
  uint32_t nodes = topos_tape_length(tape);
  EX_TRY("sealing", topos_tape_seal(&tape, &net));
  EX_TRY("parameters", topos_params_from_network(net, &params));
  topos_request req = {.roots = &loss, .n_roots = 1, .backward = 1};
  topos_request ereq = {.roots = &eval_loss, .n_roots = 1};
  topos_request sreq = {.roots = &sample_logits, .n_roots = 1};
  EX_TRY("plan", topos_plan_compile(net, &req, &plan));
  EX_TRY("plan", topos_plan_compile(net, &ereq, &eval));
  EX_TRY("plan", topos_plan_compile(net, &sreq, &sampler));
  topos_optimizer_options oo = {.kind = TOPOS_OPT_ADAM, .lr = flags.lr};
  EX_TRY("optimizer", topos_optimizer_new(net, &oo, &opt));
  printf("%u-node tape, %zu parameter tensors, batch %lld, Adam lr %g (x0.1 for the last "
         "quarter)\n", nodes, topos_params_count(params), (long long)B, flags.lr);

  EX_TRY("batch", topos_tensor_zeros(TOPOS_I32, 1, cdesc.shape, &bc));
  EX_TRY("batch", topos_tensor_zeros(TOPOS_I32, 1, tdesc.shape, &bt));
  topos_rng batch_rng = topos_rng_seed(flags.seed ^ UINT64_C(0xba7c4));
  int64_t *rows = malloc((size_t)(B > EX_EVAL ? B : EX_EVAL) * sizeof *rows);
  order = rows;
  if (!rows) EX_TRY("rows", TOPOS_ERR_OUT_OF_MEMORY);
  ex_progress progress;
  ex_progress_start(&progress, flags.steps, flags.quiet);
  progress.budget = flags.max_seconds;
  long step = 0;
  double start = ex_now();
  for (; step < flags.steps; ++step) {
    if (flags.max_seconds > 0 && ex_now() - start > flags.max_seconds) break;
    if (step == flags.steps * 3 / 4) topos_optimizer_set_lr(opt, flags.lr * 0.1);
    for (int64_t i = 0; i < B; ++i)
      rows[i] = (int64_t)(topos_rng_next(&batch_rng) % (uint64_t)train.count);
    ex_makemore_fill(&train, rows, B, window, transformer, 0, bc, bt);
    topos_feed feeds[2] = {{ctx, bc}, {tgt, bt}};
    topos_run *run = NULL;
    topos_field *grads = NULL;
    topos_tensor *lv = NULL;
    double l = NAN;
    topos_status s = topos_plan_forward(plan, params, feeds, 2, &run);
    if (s == TOPOS_OK) s = topos_run_read(run, loss, &lv);
    if (s == TOPOS_OK) s = topos_tensor_get(lv, NULL, &l);
    if (s == TOPOS_OK) s = topos_run_backward(run, loss, &grads);
    if (s == TOPOS_OK) s = topos_optimizer_step(opt, params, grads);
    topos_tensor_release(lv);
    topos_field_free(grads);
    topos_run_free(run);
    EX_TRY("training step", s);
    ex_curve_push(&curve, l);
    ex_progress_step(&progress, step, l, 1000);
  }
  if (step < flags.steps) ex_progress_end(&progress);
  double seconds = ex_now() - start;

  /* held-out loss: mean over whole evaluation batches */
  EX_TRY("eval", topos_tensor_zeros(TOPOS_I32, 1, ecdesc.shape, &ec));
  EX_TRY("eval", topos_tensor_zeros(TOPOS_I32, 1, etdesc.shape, &et));
  double held_sum = 0;
  int64_t held_batches = 0;
  for (int64_t at = 0; at + EX_EVAL <= held.count; at += EX_EVAL) {
    for (int64_t i = 0; i < EX_EVAL; ++i) rows[i] = at + i;
    ex_makemore_fill(&held, rows, EX_EVAL, window, transformer, 1, ec, et);
    topos_feed feeds[2] = {{ectx, ec}, {etgt, et}};
    float l;
    EX_TRY("held-out loss", ex_eval(eval, params, feeds, 2, eval_loss, &l, 1));
    held_sum += l;
    held_batches++;
  }
  double held_loss = held_batches ? held_sum / (double)held_batches : NAN;
  printf("makemore %s: held-out loss %.4f (%lld examples), training loss (last 1000) %.4f, "
         "%ld steps, %.2f ms/step\n", transformer ? "transformer" : "mlp", held_loss,
         (long long)(held_batches * EX_EVAL), ex_curve_tail_mean(&curve, 1000), step,
         step ? 1e3 * seconds / (double)step : 0.0);

  /* samples: walk the CDF of softmax(logits) in f64 */
  EX_TRY("sampler", topos_tensor_zeros(TOPOS_I32, 1, scdesc.shape, &sc));
  topos_rng sample_rng = topos_rng_seed(flags.seed + 2024);
  printf("samples:");
  for (int n = 0; n < 10; ++n) {
    int32_t *c = topos_tensor_data_mut(sc);
    for (int k = 0; k < window; ++k) c[k] = 0;
    char name[64];
    int len = 0;
    for (;;) {
      float logits[8 * EX_VOCAB];
      topos_feed feed = {sctx, sc};
      EX_TRY("sampling", ex_eval(sampler, params, &feed, 1, sample_logits, logits, tw * EX_VOCAB));
      const float *row = logits + (tw - 1) * EX_VOCAB;
      double peak = row[0], total = 0, p[EX_VOCAB];
      for (int v = 1; v < EX_VOCAB; ++v) peak = row[v] > peak ? row[v] : peak;
      for (int v = 0; v < EX_VOCAB; ++v) total += p[v] = exp(row[v] - peak);
      double u = topos_rng_unit(&sample_rng) * total, acc = 0;
      int pick = EX_VOCAB - 1;
      for (int v = 0; v < EX_VOCAB; ++v) {
        acc += p[v];
        if (u < acc) {
          pick = v;
          break;
        }
      }
      if (pick == 0 || len == (int)sizeof name - 1) break;
      name[len++] = (char)('a' + pick - 1);
      memmove(c, c + 1, sizeof(int32_t) * (size_t)(window - 1));
      c[window - 1] = pick;
    }
    name[len] = 0;
    printf(" %s", name);
  }
  printf("\n");

  char chart[4096], ckpt[4096];
  const char *tag = transformer ? "makemore-transformer" : "makemore-mlp";
  char file[64];
  snprintf(file, sizeof file, "%s-loss.svg", tag);
  if (ex_curve_svg(&curve, ex_path(chart, sizeof chart, flags.out, file),
                   transformer ? "makemore transformer: training loss"
                               : "makemore MLP: training loss") == 0)
    printf("loss curve: %s\n", chart);
  snprintf(file, sizeof file, "%s.gguf", tag);
  ex_hparam hp[] = {{"topos.model", 0, tag},
                    {"topos.context", (double)window, NULL},
                    {"topos.vocabulary", EX_VOCAB, NULL},
                    {"topos.train.steps", (double)step, NULL},
                    {"topos.train.batch", (double)B, NULL},
                    {"topos.train.lr", flags.lr, NULL},
                    {"topos.train.seed", (double)flags.seed, NULL},
                    {"topos.test.loss", held_loss, NULL}};
  if (ex_checkpoint_save(ex_path(ckpt, sizeof ckpt, flags.out, file), params, hp,
                         sizeof hp / sizeof hp[0]) == TOPOS_OK)
    printf("checkpoint: %s\n", ckpt);
  else
    fprintf(stderr, "warning: checkpoint %s not written: %s\n", ckpt, topos_last_error());
cleanup:
  ex_curve_free(&curve);
  free(order);
  topos_tensor_release(bc);
  topos_tensor_release(bt);
  topos_tensor_release(ec);
  topos_tensor_release(et);
  topos_tensor_release(sc);
  topos_optimizer_free(opt);
  topos_plan_free(plan);
  topos_plan_free(eval);
  topos_plan_free(sampler);
  topos_params_free(params);
  topos_network_free(net);
  topos_tape_free(tape);
  free(train.context);
  free(train.target);
  free(held.context);
  free(held.target);
  ex_corpus_free(&corpus);
  return rc;
}

#ifndef EX_NO_MAIN
int main(int argc, char **argv) { return topos_example_makemore(argc, argv); }
#endif
