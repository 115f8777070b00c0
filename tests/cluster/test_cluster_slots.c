/* Key layout on a real cluster: our CRC16 and hash-tag rule agree with
 * CLUSTER KEYSLOT, and every name a lock's scripts touch (lock, fence,
 * queue, alive keys, mailbox) sits in the lock key's slot — also for
 * user keys with braces of their own, balanced or not.  Then each such key
 * is locked and released through the cluster, and 3000 more: what is left
 * on the masters is one fence counter per slot used, nothing per key. */
#include <lockweave.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "core/keynames.h"
#include "rh_cluster.h"
#include "topology/slot.h"

static rh_cluster cl;

static const char *const odd_keys[] = {
    "stock:{42}",
    "{}",
    "a{b",
    "a}b",
    "{}x{y}",
    "}{",
    "{{a}}",
    "x{}{y}",
    "{a",
    "}",
    "{",
    "",
    "lock:{",
    "{user1000}.following",
    "ab{c}d{e}",
    "\xff\x00{\x01}",
    "very-long-key-without-any-tag-at-all-0123456789"};

static void check_slot(const char *key, size_t len, int want)
{
    int ours = lw__key_slot(key, len);
    int redis = rh_cluster_keyslot(&cl, key, len);

    CHECK_MSG(ours == redis, "slot of \"%.*s\": ours %d, CLUSTER KEYSLOT %d",
              (int)len, key, ours, redis);
    CHECK_MSG(want < 0 || ours == want,
              "\"%.*s\" is in slot %d, its lock key in slot %d", (int)len, key,
              ours, want);
}

/* The user key k, as the lock key "lock:" + k, and its companions. */
static void check_layout(const char *k, size_t klen)
{
    char key[256], alive[512];
    struct lw_names n;
    size_t len = (size_t)snprintf(key, sizeof key, "lock:%.*s", (int)klen, k);
    int slot = lw__key_slot(key, len);

    check_slot(key, len, -1);
    CHECK_EQ(lw__names_init(&n, key, len, 5, 1), LW_OK);
    check_slot(n.fence, n.fencelen, slot);
    check_slot(n.queue, n.queuelen, slot);
    memcpy(alive, n.alive, n.alivelen);
    memcpy(alive + n.alivelen, "0123456789abcdef0123456789abcdef:1f", 35);
    check_slot(alive, n.alivelen + 35, slot);
    memcpy(alive + n.alivelen + 35, ":g", 2); /* its mailbox */
    check_slot(alive, n.alivelen + 37, slot);
    lw__names_free(&n);
}

static void lock_and_release(const char *k, size_t klen)
{
    lw_lock_opts o;
    lw_guard g;
    int rc;

    memset(&o, 0, sizeof o);
    o.expire_ms = 5000;
    o.wait_ms = 2000;
    o.max_renew = -1;
    rc = lw_lock(&g, k, klen, &o);
    CHECK_MSG(rc == LW_OK, "lock \"%.*s\": %s", (int)klen, k, lw_strerror(rc));
    CHECK_MSG(lw_fence() > 0, "no fence for \"%.*s\"", (int)klen, k);
    rc = lw_guard_leave(&g);
    CHECK_MSG(rc == LW_OK, "leave \"%.*s\": %s", (int)klen, k, lw_strerror(rc));
}

static unsigned char used[LW_SLOTS];

static void lock_many(void)
{
    char key[32], full[40];

    for (int i = 0; i < 3000; i++) {
        int len = snprintf(key, sizeof key, "order:%d", i);
        snprintf(full, sizeof full, "lock:%s", key);
        used[lw__key_slot(full, strlen(full))] = 1;
        lock_and_release(key, (size_t)len);
    }
}

/* Every key on the masters is a fence counter of a slot some lock used. */
static void left_behind(void)
{
    long long keys = 0, slots = 0;

    for (int s = 0; s < LW_SLOTS; s++)
        slots += used[s];
    for (int i = 0; i < cl.n; i++) {
        redisReply *role = rh_cmd(&cl.node[i], "ROLE");
        CHECK(role && role->type == REDIS_REPLY_ARRAY);
        int master = strcmp(role->element[0]->str, "master") == 0;
        freeReplyObject(role);
        if (!master)
            continue;
        redisReply *r = rh_cmd(&cl.node[i], "SCAN 0 COUNT 1000000");
        CHECK(r && r->type == REDIS_REPLY_ARRAY && r->elements == 2);
        CHECK_EQ(strcmp(r->element[0]->str, "0"), 0);
        for (size_t k = 0; k < r->element[1]->elements; k++) {
            const redisReply *e = r->element[1]->element[k];
            int slot = lw__key_slot(e->str, e->len);
            CHECK_MSG(e->len > 11 &&
                          memcmp(e->str + e->len - 11, "lock:fences", 11) ==
                              0 &&
                          used[slot],
                      "left on a master: \"%s\"", e->str);
            keys++;
        }
        freeReplyObject(r);
    }
    printf("left behind: %lld keys on the masters, %lld slots used\n", keys,
           slots);
    CHECK(keys > 0 && keys <= slots);
}

static int hinted;

static void capture(int level, const char *msg, void *ud)
{
    (void)ud;
    if (level == LW_LOG_ERROR && strstr(msg, "redis+cluster://") != NULL)
        hinted = 1;
}

/* A plain redis:// URL naming one node of the cluster: a key another node
 * serves fails closed (LW_EREDIS, body not run), and the log says to use
 * redis+cluster:// instead of only echoing the MOVED. */
static void plain_url_to_a_node(void)
{
    lw_config cfg;
    lw_lock_opts o;
    lw_guard g;
    char url[64], key[16], full[24];
    int i = 0, rc;

    snprintf(url, sizeof url, "redis://127.0.0.1:%d", cl.node[0].port);
    lw_config_init(&cfg);
    cfg.redis_url = url;
    CHECK_EQ(lw_configure(&cfg), LW_OK);
    /* A key whose lock ("lock:" + key) node 0 does not serve. */
    do {
        snprintf(key, sizeof key, "k%d", i++);
        snprintf(full, sizeof full, "lock:%s", key);
    } while (rh_cluster_master_of(&cl, lw__key_slot(full, strlen(full))) ==
             &cl.node[0]);
    memset(&o, 0, sizeof o);
    o.expire_ms = 5000;
    o.max_renew = -1;
    lw_set_logger(capture, NULL, LW_LOG_WARN);
    rc = lw_lock(&g, key, strlen(key), &o);
    lw_set_logger(NULL, NULL, LW_LOG_WARN);
    CHECK_MSG(rc == LW_EREDIS, "lock through one node: %s", lw_strerror(rc));
    CHECK_MSG(hinted, "no log line pointed at redis+cluster://");
}

/* LOCKWEAVE_WAIT_REPLICAS in a cluster: WAIT runs on the key's master, which
 * has one replica here.  1 is met; 2 cannot be: LW_EREPLICAS, body not run,
 * and the lock is given back (no key left on its master), also when WAIT's
 * timeout is longer than the command timeout. */
static void wait_replicas(void)
{
    lw_config cfg;
    lw_lock_opts o;
    lw_guard g;
    redisReply *r;
    int rc;

    memset(&o, 0, sizeof o);
    o.expire_ms = 5000;
    o.max_renew = -1;
    lw_config_init(&cfg);
    cfg.redis_url = cl.url;
    cfg.wait_replicas = 1;
    cfg.wait_timeout_ms = 2000;
    CHECK_EQ(lw_configure(&cfg), LW_OK);
    rc = lw_lock(&g, "wr", 2, &o);
    CHECK_MSG(rc == LW_OK, "wait_replicas 1: %s", lw_strerror(rc));
    CHECK_EQ(lw_guard_leave(&g), LW_OK);

    cfg.wait_replicas = 2;
    cfg.wait_timeout_ms = 200;
    CHECK_EQ(lw_configure(&cfg), LW_OK);
    rc = lw_lock(&g, "wr", 2, &o);
    CHECK_MSG(rc == LW_EREPLICAS, "wait_replicas 2: %s", lw_strerror(rc));
    r = rh_cmd(rh_cluster_master_of(&cl, lw__key_slot("lock:wr", 7)),
               "EXISTS lock:wr");
    CHECK(r != NULL && r->type == REDIS_REPLY_INTEGER && r->integer == 0);
    freeReplyObject(r);

    /* A WAIT timeout above the command timeout: the master answers when it
     * runs out, and the router waits for that (LW_EREPLICAS, not a read
     * timed out: LW_EREDIS). */
    cfg.command_timeout_ms = 1000;
    cfg.wait_timeout_ms = 2500;
    CHECK_EQ(lw_configure(&cfg), LW_OK);
    rc = lw_lock(&g, "wr", 2, &o);
    CHECK_MSG(rc == LW_EREPLICAS, "WAIT 2500 ms, command timeout 1000 ms: %s",
              lw_strerror(rc));
    r = rh_cmd(rh_cluster_master_of(&cl, lw__key_slot("lock:wr", 7)),
               "EXISTS lock:wr");
    CHECK(r != NULL && r->type == REDIS_REPLY_INTEGER && r->integer == 0);
    freeReplyObject(r);
}

int main(void)
{
    char buf[32];
    lw_config cfg;

    CHECK_EQ(lw__crc16("123456789", 9), 0x31c3);
    CHECK_EQ(rh_cluster_start(&cl, 3, 1), 0);
    for (size_t i = 0; i < sizeof odd_keys / sizeof *odd_keys; i++) {
        size_t len = i == 15 ? 5 : strlen(odd_keys[i]);
        check_slot(odd_keys[i], len, -1);
        check_layout(odd_keys[i], len);
    }
    for (int i = 0; i < 2000; i++) {
        int len = snprintf(buf, sizeof buf, "%s%d%s", i % 3 ? "" : "{",
                           i * 7919, i % 5 ? "" : "}");
        check_layout(buf, (size_t)len);
    }

    lw_config_init(&cfg);
    cfg.redis_url = cl.url;
    CHECK_EQ(lw_configure(&cfg), LW_OK);
    for (size_t i = 0; i < sizeof odd_keys / sizeof *odd_keys; i++)
        if (odd_keys[i][0] != '\0')
            lock_and_release(odd_keys[i], i == 15 ? 5 : strlen(odd_keys[i]));
    for (size_t i = 0; i < sizeof odd_keys / sizeof *odd_keys; i++) {
        char full[64];
        size_t len = i == 15 ? 5 : strlen(odd_keys[i]);
        memcpy(full, "lock:", 5);
        memcpy(full + 5, odd_keys[i], len);
        used[lw__key_slot(full, len + 5)] = 1;
    }
    lock_many();
    left_behind();
    wait_replicas();
    plain_url_to_a_node();
    printf("cluster slots: layout of %zu odd and 2000 plain keys matches "
           "CLUSTER KEYSLOT; odd keys lock and release\n",
           sizeof odd_keys / sizeof *odd_keys);
    lw_shutdown();
    rh_cluster_stop(&cl);
    return 0;
}
