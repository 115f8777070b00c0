/* Escaping for terminals and JSON (see out.h). */
#include "out.h"

#include <stdlib.h>
#include <string.h>

static const char hexdigits[] = "0123456789abcdef";

static void text(FILE *f, const char *p, size_t n, int quoted)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];

        if (c == '\\' || (quoted && c == '"'))
            fprintf(f, "\\%c", c);
        else if (c >= 0x20 && c < 0x7f)
            fputc(c, f);
        else
            fprintf(f, "\\x%c%c", hexdigits[c >> 4], hexdigits[c & 15]);
    }
}

void out_text(FILE *f, const char *p, size_t n)
{
    text(f, p, n, 0);
}

char *out_escape(char *buf, size_t cap, const char *p, size_t n)
{
    FILE *f = fmemopen(buf, cap, "w");

    buf[0] = '\0';
    if (f != NULL) {
        /* fmemopen() keeps the last byte for the NUL, writing what fits. */
        setvbuf(f, NULL, _IONBF, 0);
        text(f, p, n, 0);
        fclose(f);
    }
    return buf;
}

void out_quoted(FILE *f, const char *p, size_t n)
{
    fputc('"', f);
    text(f, p, n, 1);
    fputc('"', f);
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

char *out_unescape(const char *s, size_t *len)
{
    char *out = malloc(strlen(s) + 1), *p = out;

    *len = 0;
    if (out == NULL)
        return NULL;
    while (*s != '\0') {
        if (*s != '\\') {
            *p++ = *s++;
            continue;
        }
        s++;
        switch (*s) {
        case '\\':
        case '"':
            *p++ = *s++;
            break;
        case 'n':
            *p++ = '\n';
            s++;
            break;
        case 'r':
            *p++ = '\r';
            s++;
            break;
        case 't':
            *p++ = '\t';
            s++;
            break;
        case 'x':
            if (hexval(s[1]) < 0 || hexval(s[2]) < 0)
                goto bad;
            *p++ = (char)(hexval(s[1]) * 16 + hexval(s[2]));
            s += 3;
            break;
        default:
            goto bad;
        }
    }
    *p = '\0';
    *len = (size_t)(p - out);
    return out;

bad:
    free(out);
    *len = 1;
    return NULL;
}

/* Length of the UTF-8 sequence at p (at most n bytes), or 0 when it is not
 * one: overlong forms, surrogates and code points past U+10FFFF are not. */
static size_t utf8_len(const unsigned char *p, size_t n)
{
    size_t need;
    unsigned cp;

    if (p[0] < 0x80)
        return 1;
    if (p[0] >= 0xc2 && p[0] <= 0xdf)
        need = 2, cp = p[0] & 0x1f;
    else if (p[0] >= 0xe0 && p[0] <= 0xef)
        need = 3, cp = p[0] & 0x0f;
    else if (p[0] >= 0xf0 && p[0] <= 0xf4)
        need = 4, cp = p[0] & 0x07;
    else
        return 0;
    if (need > n)
        return 0;
    for (size_t i = 1; i < need; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (p[i] & 0x3f);
    }
    if ((need == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
        (need == 4 && (cp < 0x10000 || cp > 0x10ffff)))
        return 0;
    return need;
}

/* A JSON string; 1 when some byte was not UTF-8 (written as U+FFFD). */
static int json_string(FILE *f, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    int lossy = 0;

    fputc('"', f);
    for (size_t i = 0; i < n;) {
        size_t l = utf8_len(p + i, n - i);

        if (l == 0) {
            fputs("\\ufffd", f);
            lossy = 1;
            i++;
        } else if (l > 1) {
            fwrite(p + i, 1, l, f);
            i += l;
        } else {
            unsigned char c = p[i++];
            if (c == '"' || c == '\\')
                fprintf(f, "\\%c", c);
            else if (c == '\n')
                fputs("\\n", f);
            else if (c < 0x20 || c == 0x7f)
                fprintf(f, "\\u00%c%c", hexdigits[c >> 4], hexdigits[c & 15]);
            else
                fputc(c, f);
        }
    }
    fputc('"', f);
    return lossy;
}

void out_json_init(struct out_json *j, FILE *f)
{
    memset(j, 0, sizeof *j);
    j->f = f;
}

/* The comma and the name in front of a member. */
static void member(struct out_json *j, const char *name)
{
    if (j->count[j->depth]++ > 0)
        fputc(',', j->f);
    if (name != NULL) {
        json_string(j->f, name, strlen(name));
        fputc(':', j->f);
    }
}

void out_json_open(struct out_json *j, const char *name, char bracket)
{
    member(j, name);
    fputc(bracket, j->f);
    if (j->depth + 1 < OUT_JSON_DEPTH)
        j->count[++j->depth] = 0;
}

void out_json_close(struct out_json *j, char bracket)
{
    if (j->depth > 0)
        j->depth--;
    fputc(bracket, j->f);
}

void out_json_str(struct out_json *j, const char *name, const char *s)
{
    member(j, name);
    json_string(j->f, s, strlen(s));
}

void out_json_bytes(struct out_json *j, const char *name, const char *p,
                    size_t n)
{
    char hexname[64];

    member(j, name);
    if (!json_string(j->f, p, n) || name == NULL)
        return;
    snprintf(hexname, sizeof hexname, "%s_hex", name);
    member(j, hexname);
    fputc('"', j->f);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        fputc(hexdigits[c >> 4], j->f);
        fputc(hexdigits[c & 15], j->f);
    }
    fputc('"', j->f);
}

void out_json_int(struct out_json *j, const char *name, long long v)
{
    member(j, name);
    fprintf(j->f, "%lld", v);
}

void out_json_bool(struct out_json *j, const char *name, int v)
{
    member(j, name);
    fputs(v ? "true" : "false", j->f);
}

void out_json_null(struct out_json *j, const char *name)
{
    member(j, name);
    fputs("null", j->f);
}

void out_json_end(struct out_json *j)
{
    fputc('\n', j->f);
    fflush(j->f);
}
