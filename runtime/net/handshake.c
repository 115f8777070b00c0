/* What a connection says after connecting, before any request: AUTH and
 * SELECT as its URL asks, and the eviction-policy warning (INFO memory). */
#include "net/handshake.h"

#include <lockweave.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "base/fork.h"
#include "base/log.h"
#include "base/url.h"
#include "net/conn.h"
#include "net/tls.h"

/* One command on a context that is being set up: LW_OK, LW_EREDIS when no
 * reply came, or code for an error reply (LW_OK: an error reply is fine).
 * With keep, a reply is handed over there (the caller frees it). */
static int setup_cmd(struct lw_conn *c, int code, int argc, const char **argv,
                     redisReply **keep)
{
    redisReply *r = NULL;
    size_t lens[3];
    int rc = LW_OK;
    char what[200];

    for (int i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    c->out.len = 0;
    if (lw__resp_cmd(&c->out, argc, argv, lens) != 0 ||
        lw__conn_send(c, c->out.p, c->out.len) != 0 ||
        lw__conn_reply(c, (void **)&r) != REDIS_OK)
        r = NULL;
    c->out.len = 0;
    if (r == NULL) {
        snprintf(what, sizeof what, "%s failed: %s", argv[0],
                 lw__conn_io_error(c));
        /* A server that wants a client certificate refuses a TLS 1.3
         * client only after the handshake, with an alert: LW_ETLS. */
        rc = c->tls != NULL ? lw__tls_error(c->tls, NULL) : LW_EREDIS;
    } else if (r->type == REDIS_REPLY_ERROR) {
        snprintf(what, sizeof what, "%s refused: %s", argv[0], r->str);
        rc = code;
    }
    if (keep != NULL && r != NULL)
        *keep = r;
    else
        freeReplyObject(r);
    if (rc != LW_OK)
        lw__conn_fail(c, rc, what);
    return rc;
}

/* Servers already warned about (described), so each is named once. */
static pthread_mutex_t evict_mu = PTHREAD_MUTEX_INITIALIZER;
static char evict_warned[32][128];
static int nevict_warned;

/*
 * Any maxmemory policy but noeviction lets Redis evict a held lock under
 * memory pressure (lock keys carry a TTL, so volatile-* ones too): another
 * caller may then enter while the holder still runs, which learns LW_ELOST
 * only at its next renewal or release.  (An evicted fence counter is
 * harmless: it starts again from the server's clock.)  Ask (INFO, which an
 * ACL may deny: then nothing is known and nothing said) and warn once per
 * server.
 */
static int check_eviction(struct lw_conn *c, const struct lw_url *u)
{
    const char *argv[] = {"INFO", "memory"};
    redisReply *r = NULL;
    char where[128], policy[32] = "";
    const char *p;
    int rc = setup_cmd(c, LW_OK, 2, argv, &r), seen = 0;

    if (rc == LW_OK && r != NULL && r->type == REDIS_REPLY_STRING &&
        (p = strstr(r->str, "maxmemory_policy:")) != NULL)
        sscanf(p + 17, "%31[a-z-]", policy);
    freeReplyObject(r);
    if (policy[0] == '\0' || strcmp(policy, "noeviction") == 0)
        return rc;
    lw__url_describe(u, where, sizeof where);
    lw__fork_register_mutex(&evict_mu);
    pthread_mutex_lock(&evict_mu);
    for (int i = 0; i < nevict_warned; i++)
        seen |= strcmp(evict_warned[i], where) == 0;
    if (!seen && nevict_warned < 32)
        snprintf(evict_warned[nevict_warned++], sizeof evict_warned[0], "%s",
                 where);
    pthread_mutex_unlock(&evict_mu);
    if (!seen)
        lw__log(LW_LOG_WARN,
                "Redis %s has maxmemory-policy %s: under memory pressure it "
                "may evict a held lock and let another caller in while the "
                "holder still runs (which then gets LW_ELOST); use "
                "noeviction",
                where, policy);
    return rc;
}

int lw__handshake(struct lw_conn *c, const struct lw_url *u)
{
    char db[16];
    int rc = LW_OK;

    if (u->password != NULL) {
        const char *argv[] = {"AUTH", u->user ? u->user : u->password,
                              u->password};
        rc = setup_cmd(c, LW_EAUTH, u->user ? 3 : 2, argv, NULL);
    }
    if (rc == LW_OK && u->db != 0) {
        const char *argv[] = {"SELECT", db};
        snprintf(db, sizeof db, "%d", u->db);
        rc = setup_cmd(c, LW_EAUTH, 2, argv, NULL);
    }
    if (rc == LW_OK)
        rc = check_eviction(c, u);
    return rc;
}
