/*
 * The stock database, behind a table of operations so that another database
 * can replace SQLite without touching the service: implement the three
 * operations and an open function.
 */
#ifndef INV_STORE_H
#define INV_STORE_H

#include <stddef.h>
#include <stdint.h>

enum {
    INV_STORE_OK = 0,
    INV_STORE_MISSING = 1, /* no row for the SKU */
    INV_STORE_FAIL = -1,   /* database error (logged by the store) */
};

struct inv_store;

struct inv_store_ops {
    /* Current stock of sku into *qty. */
    int (*get)(struct inv_store *s, const char *sku, int64_t *qty);
    /* Set the stock of sku to qty, creating the row if needed. */
    int (*set)(struct inv_store *s, const char *sku, int64_t qty);
    void (*close)(struct inv_store *s);
};

/* Every store starts with its operations; the rest is the store's own. */
struct inv_store {
    const struct inv_store_ops *ops;
};

/* All three are safe to call from several threads at once, and several
 * processes may open the same database. */
static inline int inv_store_get(struct inv_store *s, const char *sku,
                                int64_t *qty)
{
    return s->ops->get(s, sku, qty);
}

static inline int inv_store_set(struct inv_store *s, const char *sku,
                                int64_t qty)
{
    return s->ops->set(s, sku, qty);
}

static inline void inv_store_close(struct inv_store *s)
{
    if (s)
        s->ops->close(s);
}

/* SQLite in one file shared by every instance (created if missing).  NULL on
 * failure, with the reason in err. */
struct inv_store *inv_store_sqlite_open(const char *path, char *err,
                                        size_t errlen);

#endif /* INV_STORE_H */
