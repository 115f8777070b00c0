/*
 * The wrapper of an annotated function, written from its model (model.h).
 */
#include "lwgen.h"

/* A C string literal for n bytes: printable ASCII as is, the rest octal
 * (three digits, so a following digit cannot join the escape). */
static void put_c_string(lw_buf *b, const char *p, size_t n)
{
    buf_putc(b, '"');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c == '"' || c == '\\')
            buf_printf(b, "\\%c", c);
        else if (c == '?') /* no accidental trigraphs */
            buf_puts(b, "\\?");
        else if (c >= 0x20 && c < 0x7f)
            buf_putc(b, (char)c);
        else
            buf_printf(b, "\\%03o", c);
    }
    buf_putc(b, '"');
}

void emit_key(lw_buf *b, const lw_key *k, const char *g, const char *indent)
{
    for (int i = 0; i < k->n; i++) {
        const lw_keypart *p = &k->v[i];
        switch (p->kind) {
        case LW_KEY_BYTES:
            buf_printf(b, "%slw_guard_key_bytes(&%s, ", indent, g);
            put_c_string(b, p->text, p->len);
            buf_printf(b, ", %zu);\n", p->len);
            break;
        case LW_KEY_I64:
            buf_printf(b, "%slw_guard_key_i64(&%s, (int64_t)(%s));\n", indent,
                       g, p->text);
            break;
        case LW_KEY_U64:
            buf_printf(b, "%slw_guard_key_u64(&%s, (uint64_t)(%s));\n", indent,
                       g, p->text);
            break;
        case LW_KEY_STR:
            buf_printf(b, "%slw_guard_key_str(&%s, %s);\n", indent, g, p->text);
            break;
        }
    }
}
