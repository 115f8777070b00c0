/* Declarations shared with sig_other.c: the annotation on a declaration in a
 * header, the definition in sig.c without one. */
#ifndef SIG_H
#define SIG_H
#include <lockweave.h>
#include <stdint.h>

struct order {
    long id;
    char sku[16];
    const char *user;
};

REDIS_LOCK("order:{o->id}:{o->sku}", 5s, 1s)
int place(const struct order *o);

int call_place_from_other_file(const struct order *o);
int (*place_pointer(void))(const struct order *);
#endif
