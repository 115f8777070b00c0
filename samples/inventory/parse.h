/* Checking what clients send: SKUs, quantities, the JSON request body. */
#ifndef INV_PARSE_H
#define INV_PARSE_H

#include <stddef.h>

#define INV_SKU_MAX 64
#define INV_QTY_MAX 1000000000 /* keeps every stock sum far inside int64 */

/* 1 when sku is 1..INV_SKU_MAX of [A-Za-z0-9_-]: safe in a URL, a Redis key
 * and a JSON string without escaping. */
int inv_sku_valid(const char *sku, size_t len);

/* Parse a decimal integer in [min, max] that fills the whole string.  0 and
 * *out on success; -1 with a message in err. */
int inv_parse_qty(const char *s, long min, long max, long *out, char *err,
                  size_t errlen);

/* Parse a body of the form {"qty": N} (whitespace anywhere, no other
 * fields).  0 and *out on success; -1 with a message in err. */
int inv_json_qty(const char *body, size_t len, long min, long max, long *out,
                 char *err, size_t errlen);

#endif /* INV_PARSE_H */
