/* GGUF pieces shared by the reader and the writer: the ggml type table, value
 * type sizes and the refcounted mapping. (UTF-8 checking is base/utf8.c, the
 * name hash table base/strmap.c.) */
#include <stdlib.h>
#include <sys/mman.h>

#include "io/gguf_internal.h"

/* ggml_type ids as in ggml.h today (ids are pinned: ggml renumbered them
 * once, so they are never derived). Removed ids (4, 5, 31-33, 36-38) have no
 * row and are rejected like unknown ones. Block geometry from ggml-common.h. */
#define TP_GGML_TYPE_LIST(X) \
  X(0, "f32", 1, 4)          \
  X(1, "f16", 1, 2)          \
  X(2, "q4_0", 32, 18)       \
  X(3, "q4_1", 32, 20)       \
  X(6, "q5_0", 32, 22)       \
  X(7, "q5_1", 32, 24)       \
  X(8, "q8_0", 32, 34)       \
  X(9, "q8_1", 32, 36)       \
  X(10, "q2_K", 256, 84)     \
  X(11, "q3_K", 256, 110)    \
  X(12, "q4_K", 256, 144)    \
  X(13, "q5_K", 256, 176)    \
  X(14, "q6_K", 256, 210)    \
  X(15, "q8_K", 256, 292)    \
  X(16, "iq2_xxs", 256, 66)  \
  X(17, "iq2_xs", 256, 74)   \
  X(18, "iq3_xxs", 256, 98)  \
  X(19, "iq1_s", 256, 50)    \
  X(20, "iq4_nl", 32, 18)    \
  X(21, "iq3_s", 256, 110)   \
  X(22, "iq2_s", 256, 82)    \
  X(23, "iq4_xs", 256, 136)  \
  X(24, "i8", 1, 1)          \
  X(25, "i16", 1, 2)         \
  X(26, "i32", 1, 4)         \
  X(27, "i64", 1, 8)         \
  X(28, "f64", 1, 8)         \
  X(29, "iq1_m", 256, 56)    \
  X(30, "bf16", 1, 2)        \
  X(34, "tq1_0", 256, 54)    \
  X(35, "tq2_0", 256, 66)    \
  X(39, "mxfp4", 32, 17)     \
  X(40, "nvfp4", 64, 36)     \
  X(41, "q1_0", 128, 18)     \
  X(42, "q2_0", 64, 18)

#define TP_GGML_TYPE_COUNT 43

static const topos_ggml_type_info tp_ggml_types[TP_GGML_TYPE_COUNT] = {
#define TP_GGML_ROW(id, name, bs, bb) [id] = {name, bs, bb},
    TP_GGML_TYPE_LIST(TP_GGML_ROW)
#undef TP_GGML_ROW
};

topos_status topos_ggml_type_info_get(uint32_t ggml_type, topos_ggml_type_info *out) {
  if (ggml_type >= TP_GGML_TYPE_COUNT || tp_ggml_types[ggml_type].name == NULL)
    return tp_fail(TOPOS_ERR_BAD_TYPE, "ggml type id %u is unknown or was removed from ggml",
                   ggml_type);
  if (out) *out = tp_ggml_types[ggml_type];
  return TOPOS_OK;
}

static const char *const tp_gguf_type_names[TOPOS_GGUF_TYPE_COUNT] = {
    "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64"};

const char *topos_gguf_type_name(topos_gguf_type type) {
  if ((unsigned)type >= TOPOS_GGUF_TYPE_COUNT) return "invalid";
  return tp_gguf_type_names[type];
}

size_t tp_gguf_scalar_size(topos_gguf_type type) {
  switch (type) {
    case TOPOS_GGUF_U8: case TOPOS_GGUF_I8: case TOPOS_GGUF_BOOL: return 1;
    case TOPOS_GGUF_U16: case TOPOS_GGUF_I16: return 2;
    case TOPOS_GGUF_U32: case TOPOS_GGUF_I32: case TOPOS_GGUF_F32: return 4;
    case TOPOS_GGUF_U64: case TOPOS_GGUF_I64: case TOPOS_GGUF_F64: return 8;
    default: return 0;
  }
}

int tp_gguf_type_is_integer(topos_gguf_type type) {
  switch (type) {
    case TOPOS_GGUF_U8: case TOPOS_GGUF_I8: case TOPOS_GGUF_U16: case TOPOS_GGUF_I16:
    case TOPOS_GGUF_U32: case TOPOS_GGUF_I32: case TOPOS_GGUF_U64: case TOPOS_GGUF_I64:
      return 1;
    default: return 0;
  }
}

void tp_gguf_load_int(topos_gguf_type type, const uint8_t *p, int64_t *s, uint64_t *u,
                      int *is_signed) {
  *s = 0;
  *u = 0;
  *is_signed = 0;
  switch (type) {
    case TOPOS_GGUF_U8: case TOPOS_GGUF_BOOL: *u = p[0]; break;
    case TOPOS_GGUF_U16: *u = tp_le16(p); break;
    case TOPOS_GGUF_U32: *u = tp_le32(p); break;
    case TOPOS_GGUF_U64: *u = tp_le64(p); break;
    case TOPOS_GGUF_I8: *s = (int8_t)p[0]; *is_signed = 1; break;
    case TOPOS_GGUF_I16: *s = (int16_t)tp_le16(p); *is_signed = 1; break;
    case TOPOS_GGUF_I32: *s = (int32_t)tp_le32(p); *is_signed = 1; break;
    case TOPOS_GGUF_I64: *s = (int64_t)tp_le64(p); *is_signed = 1; break;
    default: break;
  }
}

/* ---- mapping */
void tp_gguf_mapping_retain(tp_gguf_mapping *m) {
  atomic_fetch_add_explicit(&m->refs, 1, memory_order_relaxed);
}

void tp_gguf_mapping_release(tp_gguf_mapping *m) {
  if (!m) return;
  if (atomic_fetch_sub_explicit(&m->refs, 1, memory_order_acq_rel) != 1) return;
  if (m->is_mmap) munmap((void *)m->base, m->size);
  free(m);
}
