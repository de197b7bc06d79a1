/* base/strmap: the string -> int32 map behind GGUF name lookup and the
 * tokenizer's vocabulary. */
#include "base/strmap.h"
#include "test.h"

TEST(strmap_put_reports_the_held_value_and_overwrites_only_when_asked) {
  tp_strmap map;
  CHECK_OK(tp_strmap_init(&map, 3, "test map"));
  /* keys are not NUL-terminated: lengths decide ("ab" and "abc" differ) */
  const char *text = "abcab";
  CHECK_EQ_INT(tp_strmap_put(&map, text, 2, 7, false), -1);
  CHECK_EQ_INT(tp_strmap_put(&map, text, 3, 8, false), -1);
  CHECK_EQ_INT(tp_strmap_put(&map, text + 3, 2, 9, false), 7); /* "ab" again: first wins */
  CHECK_EQ_INT(tp_strmap_get(&map, "ab", 2), 7);
  CHECK_EQ_INT(tp_strmap_put(&map, text + 3, 2, 9, true), 7); /* a later one wins */
  CHECK_EQ_INT(tp_strmap_get(&map, "ab", 2), 9);
  CHECK_EQ_INT(tp_strmap_get(&map, "abc", 3), 8);
  CHECK_EQ_INT(tp_strmap_get(&map, "a", 1), -1);
  CHECK_EQ_INT(tp_strmap_put(&map, NULL, 0, 4, false), -1); /* the empty key is a key */
  CHECK_EQ_INT(tp_strmap_get(&map, "", 0), 4);
  tp_strmap_free(&map);
  CHECK_EQ_INT(tp_strmap_get(&map, "ab", 2), -1); /* a freed map finds nothing */
}

TEST(strmap_holds_as_many_entries_as_it_was_sized_for) {
  enum { N = 1000 };
  static char keys[N][8];
  tp_strmap map;
  CHECK_OK(tp_strmap_init(&map, N, "test map"));
  for (int i = 0; i < N; ++i) {
    snprintf(keys[i], sizeof keys[i], "k%d", i);
    CHECK_EQ_INT(tp_strmap_put(&map, keys[i], strlen(keys[i]), i, false), -1);
  }
  for (int i = 0; i < N; ++i) CHECK_EQ_INT(tp_strmap_get(&map, keys[i], strlen(keys[i])), i);
  tp_strmap_free(&map);
}
