/* base/text: snprintf's contract for the formatter, the plan description
 * and the tokenizer's decoder. */
#include "base/text.h"
#include "test.h"

TEST(text_counts_everything_and_keeps_what_fits) {
  char buf[8];
  memset(buf, 'x', sizeof buf);
  tp_text t = {buf, sizeof buf, 0};
  tp_text_puts(&t, "abc");
  tp_text_printf(&t, "%d-%s", 42, "tail"); /* "42-tail": only "42-t" fits */
  tp_text_put(&t, "zz", 2);                /* nothing fits any more */
  CHECK_EQ_INT(tp_text_finish(&t), 12);
  CHECK(strcmp(buf, "abc42-t") == 0); /* 7 bytes and the terminator */

  char roomy[32];
  tp_text r = {roomy, sizeof roomy, 0};
  tp_text_puts(&r, "abc");
  tp_text_printf(&r, "%d-%s", 42, "tail");
  tp_text_put(&r, "zz", 2);
  CHECK_EQ_INT(tp_text_finish(&r), 12);
  CHECK(strcmp(roomy, "abc42-tailzz") == 0);

  /* a size query: no buffer at all */
  tp_text q = {NULL, 0, 0};
  tp_text_printf(&q, "%s", "twelve bytes");
  tp_text_puts(&q, "!");
  CHECK_EQ_INT(tp_text_finish(&q), 13);
}
