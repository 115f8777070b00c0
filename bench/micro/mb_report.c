/* Result lines: flat JSON with a fixed field order, so run.sh can build its
 * table with jq and the file stays greppable. */
#include "mb.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void json_str(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            printf("\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            printf("\\u%04x", (unsigned char)*s);
        else
            putchar(*s);
    }
    putchar('"');
}

void mb_emit(const char *bench, const char *metric, double value,
             const char *unit, const char *target, int ok, const char *note)
{
    printf("{\"bench\":");
    json_str(bench);
    printf(",\"metric\":");
    json_str(metric);
    printf(",\"value\":%.6g,\"unit\":", value);
    json_str(unit);
    printf(",\"target\":");
    if (target != NULL)
        json_str(target);
    else
        printf("null");
    printf(",\"ok\":%s,\"note\":", target == NULL || ok < 0 ? "null"
                                   : ok                     ? "true"
                                                            : "false");
    json_str(note != NULL ? note : "");
    printf("}\n");
    /* Lines must reach the pipe even if a later step crashes. */
    fflush(stdout);
}

int mb_quick(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--quick") == 0)
            return 1;
    return 0;
}

_Noreturn void mb_die(const char *what)
{
    fprintf(stderr, "mb: %s\n", what);
    exit(1);
}
