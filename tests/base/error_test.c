#include "test.h"
#include "base/error.h"

TEST(status_names_and_texts_come_from_one_table) {
  CHECK(strcmp(topos_status_name(TOPOS_OK), "TOPOS_OK") == 0);
  CHECK(strcmp(topos_status_name(TOPOS_ERR_SHAPE), "TOPOS_ERR_SHAPE") == 0);
  CHECK(strcmp(topos_status_text(TOPOS_UNSUPPORTED), "path cannot serve this task") == 0);
  CHECK(strcmp(topos_status_name((topos_status)9999), "TOPOS_UNKNOWN_STATUS") == 0);
}

TEST(error_message_is_thread_local_and_formatted) {
  topos_clear_error();
  CHECK(topos_last_error()[0] == '\0');
  CHECK_EQ_INT(tp_fail(TOPOS_ERR_RANGE, "narrow: start %d past extent %d", 7, 5), TOPOS_ERR_RANGE);
  CHECK(strcmp(topos_last_error(), "narrow: start 7 past extent 5") == 0);
  CHECK_EQ_INT(tp_fail_context(TOPOS_ERR_RANGE, "node %d", 3), TOPOS_ERR_RANGE);
  CHECK(strcmp(topos_last_error(), "node 3: narrow: start 7 past extent 5") == 0);
}
