/* Shared by the build-variation cases: every annotated body returns the
 * fence of the lock it runs under (0 when it runs unguarded), and main
 * checks it. */
#ifndef SAFETY_H
#define SAFETY_H

#include <lockweave.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif
uint64_t safety_case(int id); /* each case's program defines it */
#ifdef __cplusplus
}
#endif

/* The program's main: one call, then the verdict. */
#define SAFETY_MAIN(name)                                                      \
    int main(void)                                                             \
    {                                                                          \
        uint64_t fence = safety_case(42);                                      \
        int err = lw_last_error();                                             \
        lw_shutdown();                                                         \
        if (fence == 0 || err != LW_OK) {                                      \
            fprintf(stderr,                                                    \
                    "%s: the body ran without its lock (fence %llu, %s)\n",    \
                    name, (unsigned long long)fence, lw_strerror(err));        \
            return 1;                                                          \
        }                                                                      \
        printf("%s: ran under the lock, fence %llu\n", name,                   \
               (unsigned long long)fence);                                     \
        return 0;                                                              \
    }

#endif
