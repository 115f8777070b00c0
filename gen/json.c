/*
 * A JSON reader for compile_commands.json (json.h).  Lenient where that
 * costs nothing: numbers and literals are skipped by their characters,
 * \u escapes outside the BMP are not paired.
 */
#include "json.h"

#include <ctype.h>

static void skip_ws(lw_json *j)
{
    while (j->p < j->e && isspace((unsigned char)*j->p))
        j->p++;
}

int json_peek(lw_json *j)
{
    skip_ws(j);
    return j->p < j->e ? (unsigned char)*j->p : -1;
}

int json_eat(lw_json *j, char c)
{
    if (json_peek(j) != (unsigned char)c)
        return 0;
    j->p++;
    return 1;
}

/* Code point v as UTF-8 (v < 0x10000). */
static void put_utf8(lw_buf *b, unsigned v)
{
    if (v < 0x80)
        buf_putc(b, (char)v);
    else if (v < 0x800) {
        buf_putc(b, (char)(0xc0 | (v >> 6)));
        buf_putc(b, (char)(0x80 | (v & 0x3f)));
    } else {
        buf_putc(b, (char)(0xe0 | (v >> 12)));
        buf_putc(b, (char)(0x80 | ((v >> 6) & 0x3f)));
        buf_putc(b, (char)(0x80 | (v & 0x3f)));
    }
}

int json_string(lw_json *j, lw_buf *b)
{
    if (!json_eat(j, '"'))
        return -1;
    while (j->p < j->e && *j->p != '"') {
        char c = *j->p++;
        if (c == '\\' && j->p < j->e) {
            c = *j->p++;
            if (escape_char(c) >= 0)
                c = (char)escape_char(c);
            else if (c == 'u') {
                unsigned v = 0;
                for (int k = 0; k < 4 && j->p < j->e; k++, j->p++)
                    v = v * 16 +
                        (unsigned)(isdigit((unsigned char)*j->p)
                                       ? *j->p - '0'
                                       : tolower((unsigned char)*j->p) - 'a' +
                                             10);
                /* Paths and flags are ASCII in practice; the BMP is kept. */
                if (b)
                    put_utf8(b, v);
                continue;
            }
            /* else \" \\ \/: the character itself */
        }
        if (b)
            buf_putc(b, c);
    }
    if (j->p >= j->e)
        return -1;
    j->p++;
    if (b)
        buf_put(b, "", 0);
    return 0;
}

int json_skip(lw_json *j)
{
    int c = json_peek(j);
    if (c < 0)
        return -1;
    if (c == '"')
        return json_string(j, NULL);
    if (c == '[' || c == '{') {
        char close = c == '[' ? ']' : '}';
        j->p++;
        if (json_eat(j, close))
            return 0;
        for (;;) {
            if (close == '}' &&
                (json_string(j, NULL) != 0 || !json_eat(j, ':')))
                return -1;
            if (json_skip(j) != 0)
                return -1;
            if (json_eat(j, ','))
                continue;
            return json_eat(j, close) ? 0 : -1;
        }
    }
    while (j->p < j->e && (isalnum((unsigned char)*j->p) || *j->p == '-' ||
                           *j->p == '+' || *j->p == '.'))
        j->p++;
    return 0;
}
