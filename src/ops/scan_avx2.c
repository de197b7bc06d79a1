/* The selective scan's AVX2 instance (scan_kernel.h); called only after the
 * runtime CPU check in scan.c. */
#define TP_SCAN_ITEMS_FN tp_scan_items_avx2
#define TP_SCAN_VEC 8
#include "ops/scan_template.h"
