/* `topos gguf`: inspect, quantize and make-test-llama for GGUF files. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "tools/cli.h"

/* tools/gguf_llama.c */
int tp_gguf_make_test_llama(int argc, char **argv);

static void tp_gguf_usage(FILE *out) {
  fprintf(out,
          "usage: topos gguf inspect FILE\n"
          "       topos gguf quantize IN OUT TYPE      (TYPE: q8_0, q4_0, q4_K, q6_K, mxfp4, f16, ...)\n"
          "       topos gguf make-test-llama OUT [--dim N] [--layers N] [--heads N]\n"
          "                 [--kv-heads N] [--ff N] [--vocab N] [--ctx N] [--seed N] [--type T]\n");
}

/* Prints a string value with escapes, at most `max` bytes. */
static void tp_print_string(const char *s, size_t len, size_t max) {
  putchar('"');
  for (size_t i = 0; i < len && i < max; ++i) {
    unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\') printf("\\%c", c);
    else if (c == '\n') printf("\\n");
    else if (c < 0x20 || c == 0x7F) printf("\\x%02x", c);
    else putchar(c);
  }
  putchar('"');
  if (len > max) printf("... (%zu bytes)", len);
}

static void tp_print_element(const topos_gguf *g, int64_t kv, topos_gguf_type type, uint64_t i) {
  const char *s;
  size_t len;
  int64_t iv;
  uint64_t uv;
  double dv;
  if (type == TOPOS_GGUF_STRING && topos_gguf_array_string(g, kv, i, &s, &len) == TOPOS_OK)
    tp_print_string(s, len, 40);
  else if ((type == TOPOS_GGUF_F32 || type == TOPOS_GGUF_F64) &&
           topos_gguf_array_float(g, kv, i, &dv) == TOPOS_OK)
    printf("%.9g", dv);
  else if (type == TOPOS_GGUF_BOOL && topos_gguf_array_int(g, kv, i, &iv) == TOPOS_OK)
    printf("%s", iv ? "true" : "false");
  else if (topos_gguf_array_int(g, kv, i, &iv) == TOPOS_OK)
    printf("%" PRId64, iv);
  else if (topos_gguf_array_uint(g, kv, i, &uv) == TOPOS_OK)
    printf("%" PRIu64, uv);
  else
    printf("?");
}

static void tp_print_value(const topos_gguf *g, int64_t i, const topos_gguf_kv *kv) {
  if (kv->type == TOPOS_GGUF_ARRAY) {
    printf("[");
    uint64_t shown = kv->count < 6 ? kv->count : 6;
    for (uint64_t e = 0; e < shown; ++e) {
      if (e) printf(", ");
      tp_print_element(g, i, kv->element_type, e);
    }
    if (shown < kv->count) printf(", ... %" PRIu64 " more", kv->count - shown);
    printf("]");
    return;
  }
  const char *s;
  size_t len;
  int64_t iv;
  uint64_t uv;
  double dv;
  int b;
  if (kv->type == TOPOS_GGUF_STRING && topos_gguf_get_string(g, kv->key, &s, &len) == TOPOS_OK)
    tp_print_string(s, len, 120);
  else if (kv->type == TOPOS_GGUF_BOOL && topos_gguf_get_bool(g, kv->key, &b) == TOPOS_OK)
    printf("%s", b ? "true" : "false");
  else if (topos_gguf_get_f64(g, kv->key, &dv) == TOPOS_OK)
    printf("%.9g", dv);
  else if (topos_gguf_get_i64(g, kv->key, &iv) == TOPOS_OK)
    printf("%" PRId64, iv);
  else if (topos_gguf_get_u64(g, kv->key, &uv) == TOPOS_OK)
    printf("%" PRIu64, uv);
  else
    printf("?");
  topos_clear_error();
}

static void tp_format_dims(char *buf, size_t size, int n, const int64_t *d) {
  size_t o = (size_t)snprintf(buf, size, "[");
  for (int i = 0; i < n && o < size; ++i)
    o += (size_t)snprintf(buf + o, size - o, i ? ", %" PRId64 : "%" PRId64, d[i]);
  if (o < size) snprintf(buf + o, size - o, "]");
}

static int tp_gguf_inspect(int argc, char **argv) {
  if (argc != 2) {
    tp_gguf_usage(stderr);
    return 2;
  }
  topos_gguf *g;
  topos_status st = topos_gguf_open(argv[1], &g);
  if (st != TOPOS_OK) return tp_cli_fail("gguf inspect", st, "cannot load");
  printf("file: %s (%" PRIu64 " bytes)\n", argv[1], topos_gguf_file_size(g));
  printf("GGUF version %u, alignment %u, tensor data at offset %" PRIu64 "\n",
         topos_gguf_version(g), topos_gguf_alignment(g), topos_gguf_data_offset(g));
  printf("\nmetadata: %" PRId64 " keys\n", topos_gguf_kv_count(g));
  for (int64_t i = 0; i < topos_gguf_kv_count(g); ++i) {
    topos_gguf_kv kv;
    if (topos_gguf_kv_at(g, i, &kv) != TOPOS_OK) continue;
    char type[48];
    if (kv.type == TOPOS_GGUF_ARRAY)
      snprintf(type, sizeof type, "%s[%" PRIu64 "]", topos_gguf_type_name(kv.element_type),
               kv.count);
    else
      snprintf(type, sizeof type, "%s", topos_gguf_type_name(kv.type));
    printf("  %-44s %-14s ", kv.key, type);
    tp_print_value(g, i, &kv);
    printf("\n");
  }
  printf("\ntensors: %" PRId64 "\n", topos_gguf_tensor_count(g));
  printf("  %-36s %-8s %-22s %-22s %14s %14s\n", "name", "type", "shape (row-major)", "ne",
         "offset", "bytes");
  uint64_t total_bytes = 0, total_elements = 0;
  for (int64_t i = 0; i < topos_gguf_tensor_count(g); ++i) {
    topos_gguf_tensor_info t;
    if (topos_gguf_tensor_at(g, i, &t) != TOPOS_OK) continue;
    char shape[64], ne[64];
    tp_format_dims(shape, sizeof shape, t.n_dims, t.shape);
    tp_format_dims(ne, sizeof ne, t.n_dims, t.ne);
    printf("  %-36s %-8s %-22s %-22s %14" PRIu64 " %14" PRIu64 "%s\n", t.name, t.type_name, shape,
           ne, t.offset, t.bytes, t.has_dtype ? "" : "  (not computable in topos)");
    total_bytes += t.bytes;
    total_elements += (uint64_t)t.elements;
  }
  printf("\ntotal: %" PRId64 " tensors, %" PRIu64 " elements, %" PRIu64 " bytes (%.2f MiB)",
         topos_gguf_tensor_count(g), total_elements, total_bytes, (double)total_bytes / 1048576.0);
  if (total_elements) printf(", %.3f bits per weight", 8.0 * (double)total_bytes / (double)total_elements);
  printf("\n");
  topos_gguf_close(g);
  return 0;
}

/* llama.cpp's general.file_type (LLAMA_FTYPE) for a file whose weights are
 * mostly `dtype`; -1 if there is none. */
static int tp_llama_ftype(topos_dtype dtype) {
  switch (dtype) {
    case TOPOS_F32: return 0;
    case TOPOS_F16: return 1;
    case TOPOS_Q4_0: return 2;
    case TOPOS_Q4_1: return 3;
    case TOPOS_Q8_0: return 7;
    case TOPOS_Q5_0: return 8;
    case TOPOS_Q5_1: return 9;
    case TOPOS_Q2_K: return 10;
    case TOPOS_Q3_K: return 11; /* Q3_K_S: all Q3_K */
    case TOPOS_Q4_K: return 14; /* Q4_K_S */
    case TOPOS_Q5_K: return 16; /* Q5_K_S */
    case TOPOS_Q6_K: return 18;
    case TOPOS_BF16: return 32;
    case TOPOS_MXFP4: return 38; /* MXFP4_MOE, llama.cpp's only MXFP4 file type */
    default: return -1;
  }
}

/* Decodes one row of a float tensor stored as ggml type `id` into f32. */
static topos_status tp_row_to_f32(topos_dtype dtype, const uint8_t *src, float *dst, int64_t n) {
  if (dtype == TOPOS_F64) {
    for (int64_t i = 0; i < n; ++i) {
      double d;
      memcpy(&d, src + 8 * i, 8);
      dst[i] = (float)d;
    }
    return TOPOS_OK;
  }
  return topos_dequantize_row(dtype, src, dst, n);
}

/* One tensor re-quantized while the file is written (the writer asks for
 * row ranges): only a chunk of output is held at a time. */
typedef struct tp_quant_rows {
  topos_dtype from, to;
  const uint8_t *data;
  size_t row_in, row_out;
  int64_t ne0;
} tp_quant_rows;

static topos_status tp_quant_fill(void *user, int64_t row0, int64_t rows, void *dst) {
  const tp_quant_rows *q = user;
  float *row = malloc((size_t)q->ne0 * sizeof *row);
  if (!row) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "gguf quantize: row of %lld floats", (long long)q->ne0);
  topos_status st = TOPOS_OK;
  for (int64_t r = 0; r < rows && st == TOPOS_OK; ++r) {
    st = tp_row_to_f32(q->from, q->data + (size_t)(row0 + r) * q->row_in, row, q->ne0);
    if (st == TOPOS_OK) st = topos_quantize_row(q->to, row, (uint8_t *)dst + (size_t)r * q->row_out, q->ne0);
  }
  free(row);
  return st;
}

typedef struct tp_quant_job {
  topos_gguf *in;
  topos_gguf_writer *w;
  tp_quant_rows *rows; /* one per tensor */
} tp_quant_job;

/* Adds tensor i to the writer: re-quantized when it is a float tensor of
 * rank >= 2 whose rows are whole blocks, copied unchanged otherwise. */
static topos_status tp_quantize_tensor(tp_quant_job *job, int64_t i, topos_dtype to,
                                       uint64_t *in_total, uint64_t *out_total) {
  topos_gguf_tensor_info t;
  const void *data;
  size_t bytes;
  TP_TRY(topos_gguf_tensor_at(job->in, i, &t));
  TP_TRY(topos_gguf_tensor_bytes(job->in, i, &data, &bytes));
  *in_total += bytes;
  int is_float = t.has_dtype && topos_dtype_is_float(t.dtype);
  int64_t block = topos_dtype_block_size(to);
  const char *why = NULL;
  if (!is_float) why = "not a float tensor";
  else if (t.n_dims < 2) why = "1-D (norms and biases stay as they are)";
  else if (t.ne[0] % block != 0) why = "row length is not a whole number of blocks";
  else if (t.dtype == to) why = "already that type";
  if (why) {
    printf("  %-36s %-6s kept: %s\n", t.name, t.type_name, why);
    *out_total += bytes;
    return topos_gguf_writer_add_tensor_raw(job->w, t.name, t.ggml_type, t.n_dims, t.ne, data,
                                            bytes);
  }
  size_t out_bytes;
  TP_TRY(topos_dtype_bytes(to, t.elements, &out_bytes));
  const int64_t rows = t.elements / t.ne[0];
  job->rows[i] = (tp_quant_rows){t.dtype, to, data, bytes / (size_t)rows, out_bytes / (size_t)rows, t.ne[0]};
  printf("  %-36s %-6s -> %-6s %12zu -> %12zu bytes\n", t.name, t.type_name, topos_dtype_name(to),
         bytes, out_bytes);
  *out_total += out_bytes;
  return topos_gguf_writer_add_tensor_fill(job->w, t.name, (uint32_t)topos_dtype_ggml_id(to), t.n_dims,
                                           t.ne, tp_quant_fill, &job->rows[i]);
}

static int tp_gguf_quantize(int argc, char **argv) {
  if (argc != 4) {
    tp_gguf_usage(stderr);
    return 2;
  }
  const char *in_path = argv[1], *out_path = argv[2];
  topos_dtype to;
  topos_status st = topos_dtype_parse(argv[3], &to);
  if (st != TOPOS_OK) return tp_cli_fail("gguf quantize", st, "unknown TYPE");
  if (to == TOPOS_Q8_1 || to == TOPOS_Q8_K || !(topos_dtype_is_quantized(to) ||
                                                to == TOPOS_F16 || to == TOPOS_BF16 || to == TOPOS_F32)) {
    fprintf(stderr, "topos gguf quantize: cannot quantize to %s (choose f32, f16, bf16, q4_0, "
            "q4_1, q5_0, q5_1, q8_0, q2_K .. q6_K, mxfp4)\n", topos_dtype_name(to));
    return 1;
  }
  tp_quant_job job = {0};
  st = topos_gguf_open(in_path, &job.in);
  if (st != TOPOS_OK) return tp_cli_fail("gguf quantize", st, "cannot load input");
  st = topos_gguf_writer_create(&job.w);
  int64_t n = topos_gguf_tensor_count(job.in);
  job.rows = calloc((size_t)n + 1, sizeof *job.rows);
  if (!job.rows) st = TOPOS_ERR_OUT_OF_MEMORY;
  /* Metadata: everything but the keys this command rewrites. */
  for (int64_t i = 0; i < topos_gguf_kv_count(job.in) && st == TOPOS_OK; ++i) {
    topos_gguf_kv kv;
    st = topos_gguf_kv_at(job.in, i, &kv);
    if (st != TOPOS_OK) break;
    if (strcmp(kv.key, "general.file_type") == 0 ||
        strcmp(kv.key, "general.quantization_version") == 0)
      continue;
    st = topos_gguf_writer_copy_kv(job.w, job.in, i);
  }
  int ftype = tp_llama_ftype(to);
  if (st == TOPOS_OK && ftype >= 0) st = topos_gguf_writer_add_u32(job.w, "general.file_type", (uint32_t)ftype);
  if (st == TOPOS_OK && topos_dtype_is_quantized(to))
    st = topos_gguf_writer_add_u32(job.w, "general.quantization_version", 2);
  printf("quantizing %s -> %s as %s\n", in_path, out_path, topos_dtype_name(to));
  uint64_t in_total = 0, out_total = 0;
  for (int64_t i = 0; i < n && st == TOPOS_OK; ++i)
    st = tp_quantize_tensor(&job, i, to, &in_total, &out_total);
  /* the tensors are quantized now, chunk by chunk, as the file is written */
  if (st == TOPOS_OK) st = topos_gguf_writer_write(job.w, out_path);
  int rc = 0;
  if (st != TOPOS_OK) rc = tp_cli_fail("gguf quantize", st, "failed");
  else
    printf("wrote %s: tensor data %.2f MiB -> %.2f MiB\n", out_path, (double)in_total / 1048576.0,
           (double)out_total / 1048576.0);
  topos_gguf_writer_destroy(job.w);
  free(job.rows);
  topos_gguf_close(job.in);
  return rc;
}

static int tp_gguf_main(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    tp_gguf_usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (strcmp(argv[1], "inspect") == 0) return tp_gguf_inspect(argc - 1, argv + 1);
  if (strcmp(argv[1], "quantize") == 0) return tp_gguf_quantize(argc - 1, argv + 1);
  if (strcmp(argv[1], "make-test-llama") == 0) return tp_gguf_make_test_llama(argc - 1, argv + 1);
  fprintf(stderr, "topos gguf: unknown subcommand '%s'\n", argv[1]);
  tp_gguf_usage(stderr);
  return 2;
}

TOPOS_COMMAND("gguf", "inspect, quantize or create GGUF model files", tp_gguf_main)
