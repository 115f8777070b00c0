#include "parse.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int inv_sku_valid(const char *sku, size_t len)
{
    if (len == 0 || len > INV_SKU_MAX)
        return 0;
    for (size_t i = 0; i < len; i++) {
        char c = sku[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                 (c >= '0' && c <= '9') || c == '_' || c == '-';
        if (!ok)
            return 0;
    }
    return 1;
}

int inv_parse_qty(const char *s, long min, long max, long *out, char *err,
                  size_t errlen)
{
    /* strtol alone accepts " 5", "+5" and "5abc"; a quantity is digits. */
    const char *p = s;
    if (*p == '-')
        p++;
    if (*p == '\0' || strspn(p, "0123456789") != strlen(p)) {
        snprintf(err, errlen, "qty must be an integer, got \"%.32s\"", s);
        return -1;
    }
    errno = 0;
    long v = strtol(s, NULL, 10);
    if (errno == ERANGE || v < min || v > max) {
        snprintf(err, errlen, "qty must be between %ld and %ld, got %.32s", min,
                 max, s);
        return -1;
    }
    *out = v;
    return 0;
}

static const char *skip_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
        p++;
    return p;
}

int inv_json_qty(const char *body, size_t len, long min, long max, long *out,
                 char *err, size_t errlen)
{
    const char *p = body, *end = body + len;
    p = skip_ws(p, end);
    if (p == end || *p != '{')
        goto bad;
    p = skip_ws(p + 1, end);
    /* The only field: "qty".  Anything else is an error rather than ignored,
     * so a misspelt field does not silently deduct a default. */
    if (p == end || *p != '"')
        goto bad;
    const char *key = ++p;
    while (p < end && *p != '"' && *p != '\\')
        p++;
    if (p == end || *p != '"')
        goto bad;
    size_t klen = (size_t)(p - key);
    if (klen != 3 || memcmp(key, "qty", 3) != 0) {
        snprintf(err, errlen, "unknown field \"%.*s\" (expected {\"qty\": N})",
                 (int)(klen > 32 ? 32 : klen), key);
        return -1;
    }
    p = skip_ws(p + 1, end);
    if (p == end || *p != ':')
        goto bad;
    p = skip_ws(p + 1, end);
    char num[24];
    size_t n = 0;
    while (p < end && n + 1 < sizeof num && *p != ',' && *p != '}' &&
           *p != ' ' && *p != '\t' && *p != '\r' && *p != '\n')
        num[n++] = *p++;
    num[n] = '\0';
    if (n == 0)
        goto bad;
    if (inv_parse_qty(num, min, max, out, err, errlen) != 0)
        return -1;
    p = skip_ws(p, end);
    if (p == end || *p != '}')
        goto bad;
    p = skip_ws(p + 1, end);
    if (p != end)
        goto bad;
    return 0;
bad:
    snprintf(err, errlen,
             "request body is not valid JSON of the form "
             "{\"qty\": N}");
    return -1;
}
