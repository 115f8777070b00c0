/*
 * Fuzz the REDIS_LOCK argument parser (gen/annot.c).  The scanner hands
 * annot_parse() two texts: the arguments as the preprocessor stringized them,
 * and the file as written, where locate_raw() finds each argument again for
 * diagnostic positions.  The input plays both: the arguments, and a file
 * holding "REDIS_LOCK(<input>)".  Besides the sanitizers, the target checks
 * that every position it will point a diagnostic at lies inside the file.
 */
#include "lwgen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char head[] = "REDIS_LOCK(", tail[] = ")\nint f(int id);\n";
    lw_buf file = {0};
    lw_src src = {"fuzz.c", NULL, 0};
    lw_annot a;

    /* Neither text can hold a NUL: the file is read as a C string, and the
     * stringized arguments come back from libclang as one. */
    const char *nul = memchr(data, 0, size);
    if (nul != NULL)
        size = (size_t)(nul - (const char *)data);
    buf_puts(&file, head);
    buf_put(&file, data, size);
    buf_puts(&file, tail);
    src.text = file.p;
    src.len = file.len;

    memset(&a, 0, sizeof a);
    a.text = xstrndup((const char *)data, size);
    a.src = &src;
    a.at = 0;
    if (annot_parse(&a) == 0 && (a.key == NULL || a.expire_ms == 0))
        abort(); /* "usable" must mean a key and a lease */
    for (int i = 0; i < 40; i++)
        if (annot_arg_off(&a, i) > src.len)
            abort();
    for (size_t i = 0; a.key && i <= a.keylen + 1; i++)
        if (annot_key_off(&a, i) > src.len)
            abort();
    annot_free(&a);
    buf_free(&file);
    return 0;
}
