/*
 * The SQLite store: one database file shared by every service instance.
 *
 * A SQLite connection must not be used by two threads at once, and opening one
 * per request costs more than the request, so connections are pooled: a
 * thread takes an idle one (or opens a new one) and puts it back.  WAL mode
 * lets readers run beside the single writer, and the busy timeout makes a
 * writer wait for another process's write instead of failing with
 * SQLITE_BUSY.
 */
#include "store.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUSY_TIMEOUT_MS 10000
#define SETUP_RETRY_MS  20
#define POOL_MAX        64 /* idle connections kept; more are closed when returned */

struct conn {
    sqlite3 *db;
    sqlite3_stmt *get;
    sqlite3_stmt *set;
};

struct sqlite_store {
    struct inv_store base; /* first: the service sees only this */
    char *path;
    pthread_mutex_t mu;
    struct conn *idle[POOL_MAX];
    int nidle;
};

static void conn_close(struct conn *c)
{
    if (!c)
        return;
    sqlite3_finalize(c->get);
    sqlite3_finalize(c->set);
    sqlite3_close(c->db);
    free(c);
}

/*
 * Run a set-up statement, retrying while another process holds the lock it
 * needs.  Switching to WAL takes an exclusive lock and SQLite answers
 * SQLITE_BUSY at once there, without the busy handler: several instances
 * opening a fresh database together would otherwise fail at random.
 */
static int exec_sql(sqlite3 *db, const char *sql, char *err, size_t errlen)
{
    for (int waited = 0;; waited += SETUP_RETRY_MS) {
        char *msg = NULL;
        int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
        if (rc == SQLITE_OK)
            return 0;
        int busy = rc == SQLITE_BUSY || rc == SQLITE_LOCKED;
        if (!busy || waited >= BUSY_TIMEOUT_MS) {
            snprintf(err, errlen, "%s: %s", sql,
                     msg ? msg : sqlite3_errmsg(db));
            sqlite3_free(msg);
            return -1;
        }
        sqlite3_free(msg);
        sqlite3_sleep(SETUP_RETRY_MS);
    }
}

static struct conn *conn_open(const char *path, char *err, size_t errlen)
{
    struct conn *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    int rc = sqlite3_open_v2(
        path, &c->db,
        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        snprintf(err, errlen, "%s: %s", path,
                 c->db ? sqlite3_errmsg(c->db) : sqlite3_errstr(rc));
        goto fail;
    }
    /* Set before anything else touches the file: even switching to WAL can
     * meet another process's lock. */
    sqlite3_busy_timeout(c->db, BUSY_TIMEOUT_MS);
    /* synchronous=NORMAL is durable across a process crash in WAL mode,
     * which is all a demo needs, and keeps commits off fsync. */
    if (exec_sql(c->db, "PRAGMA journal_mode=WAL", err, errlen) != 0 ||
        exec_sql(c->db, "PRAGMA synchronous=NORMAL", err, errlen) != 0 ||
        exec_sql(c->db,
                 "CREATE TABLE IF NOT EXISTS stock ("
                 " sku TEXT PRIMARY KEY, qty INTEGER NOT NULL)",
                 err, errlen) != 0)
        goto fail;
    if (sqlite3_prepare_v2(c->db, "SELECT qty FROM stock WHERE sku = ?1", -1,
                           &c->get, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(c->db,
                           "INSERT INTO stock (sku, qty) VALUES (?1, ?2)"
                           " ON CONFLICT(sku) DO UPDATE SET qty = excluded.qty",
                           -1, &c->set, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "prepare: %s", sqlite3_errmsg(c->db));
        goto fail;
    }
    return c;
fail:
    conn_close(c);
    return NULL;
}

static struct conn *take(struct sqlite_store *s)
{
    struct conn *c = NULL;
    pthread_mutex_lock(&s->mu);
    if (s->nidle > 0)
        c = s->idle[--s->nidle];
    pthread_mutex_unlock(&s->mu);
    if (c)
        return c;
    char err[256];
    c = conn_open(s->path, err, sizeof err);
    if (!c)
        fprintf(stderr, "inventory: sqlite: %s\n", err);
    return c;
}

static void give_back(struct sqlite_store *s, struct conn *c)
{
    pthread_mutex_lock(&s->mu);
    if (s->nidle < POOL_MAX) {
        s->idle[s->nidle++] = c;
        c = NULL;
    }
    pthread_mutex_unlock(&s->mu);
    conn_close(c);
}

static int sq_get(struct inv_store *base, const char *sku, int64_t *qty)
{
    struct sqlite_store *s = (struct sqlite_store *)base;
    struct conn *c = take(s);
    if (!c)
        return INV_STORE_FAIL;
    int ret = INV_STORE_FAIL;
    sqlite3_bind_text(c->get, 1, sku, -1, SQLITE_STATIC);
    int rc = sqlite3_step(c->get);
    if (rc == SQLITE_ROW) {
        *qty = sqlite3_column_int64(c->get, 0);
        ret = INV_STORE_OK;
    } else if (rc == SQLITE_DONE) {
        ret = INV_STORE_MISSING;
    } else {
        fprintf(stderr, "inventory: sqlite: read %s: %s\n", sku,
                sqlite3_errmsg(c->db));
    }
    /* reset ends the read transaction: holding it would pin the WAL. */
    sqlite3_reset(c->get);
    sqlite3_clear_bindings(c->get);
    give_back(s, c);
    return ret;
}

static int sq_set(struct inv_store *base, const char *sku, int64_t qty)
{
    struct sqlite_store *s = (struct sqlite_store *)base;
    struct conn *c = take(s);
    if (!c)
        return INV_STORE_FAIL;
    int ret = INV_STORE_OK;
    sqlite3_bind_text(c->set, 1, sku, -1, SQLITE_STATIC);
    sqlite3_bind_int64(c->set, 2, qty);
    if (sqlite3_step(c->set) != SQLITE_DONE) {
        fprintf(stderr, "inventory: sqlite: write %s: %s\n", sku,
                sqlite3_errmsg(c->db));
        ret = INV_STORE_FAIL;
    }
    sqlite3_reset(c->set);
    sqlite3_clear_bindings(c->set);
    give_back(s, c);
    return ret;
}

static void sq_close(struct inv_store *base)
{
    struct sqlite_store *s = (struct sqlite_store *)base;
    for (int i = 0; i < s->nidle; i++)
        conn_close(s->idle[i]);
    pthread_mutex_destroy(&s->mu);
    free(s->path);
    free(s);
}

static const struct inv_store_ops sqlite_ops = {sq_get, sq_set, sq_close};

struct inv_store *inv_store_sqlite_open(const char *path, char *err,
                                        size_t errlen)
{
    struct sqlite_store *s = calloc(1, sizeof *s);
    size_t n = strlen(path);
    if (!s || !(s->path = malloc(n + 1))) {
        free(s);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    memcpy(s->path, path, n + 1);
    s->base.ops = &sqlite_ops;
    pthread_mutex_init(&s->mu, NULL);
    /* Open one connection now: a bad path or a broken file is reported at
     * start-up, not on the first request. */
    struct conn *c = conn_open(path, err, errlen);
    if (!c) {
        sq_close(&s->base);
        return NULL;
    }
    give_back(s, c);
    return &s->base;
}
