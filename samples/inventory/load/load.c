/*
 * inventory-load: fire deductions at one or more service instances and report
 * what happened to the stock.
 *
 *   inventory-load --instances 127.0.0.1:8081,127.0.0.1:8082 \
 *                  --requests 2000 --concurrency 32 --skus demo --seed 1000
 *
 * Each client thread keeps one keep-alive connection per instance; request k
 * goes to instance k mod N, so every instance sees the same share.  Progress
 * goes to stderr once a second; the report to stdout, ending with one
 * "SUMMARY {json}" line for scripts.
 *
 * sold = units in 200 replies; oversold = sold - initial stock (must be 0
 * under the lock); lost updates = sold - (initial - final): deductions that
 * were answered 200 but overwritten by a racing writer.
 *
 * --orders N sends N orders instead, each twice (POST /orders with one
 * Idempotency-Key per order, request k being order k/2, so the two copies
 * go to two instances at about the same time), and reports whether every
 * copy got the same answer and how much stock went: with REDIS_ONCE each
 * order deducts once, deducted = sold.
 *
 * --ping HOST:PORT sends GET /ping to one instance (an event-loop one, say)
 * from a thread of its own, one after another every --ping-every-ms, for as
 * long as the deductions run, and reports how fast they were answered.
 */
/* clock_gettime(), nanosleep() are POSIX, not C11. */
#define _POSIX_C_SOURCE 200809L

#include "httpc.h"
#include "latency.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_INSTANCES 64
#define MAX_SKUS      64
#define MAX_THREADS   1024

struct instance {
    char host[64];
    int port;
    atomic_long ok, insufficient, lock_failed, other;
};

/* The /ping prober: its own thread and connection. */
struct pinger {
    struct instance inst;
    int every_ms;
    atomic_int stop;
    uint32_t *lat_us; /* one per answered ping; grows */
    size_t n, cap;
    long failed;
    char first_err[200];
};

struct sku_stats {
    char name[65];
    long long initial;
    long long final;
    atomic_llong sold;
};

/* An answer to an order (--orders): compared with its copy's. */
struct answer {
    int status;   /* 0: no HTTP reply */
    int replayed; /* Idempotent-Replayed: true */
    char body[160];
};

struct run {
    struct instance inst[MAX_INSTANCES];
    int ninst;
    struct sku_stats sku[MAX_SKUS];
    int nsku;
    long requests;
    int concurrency;
    int qty;
    long long seed; /* < 0: keep the stock as it is */
    const char *label;
    int check;
    struct pinger *ping;   /* NULL without --ping */
    long orders;           /* --orders N: 2 N requests; 0: deductions */
    char order_prefix[32]; /* this run's keys: <prefix>-<order> */
    struct answer *ans;    /* one per request, with --orders */

    atomic_long next; /* next request index to take */
    atomic_long done;
    atomic_long ok, insufficient, lock_failed, other;
    uint32_t *lat_us; /* one per request */
    pthread_mutex_t err_mu;
    char first_err[200]; /* a sample of what "other" was */
};

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void note_error(struct run *r, const char *what)
{
    pthread_mutex_lock(&r->err_mu);
    if (!r->first_err[0])
        snprintf(r->first_err, sizeof r->first_err, "%s", what);
    pthread_mutex_unlock(&r->err_mu);
}

static void *client(void *arg)
{
    struct run *r = arg;
    struct httpc conn[MAX_INSTANCES];
    for (int i = 0; i < r->ninst; i++)
        httpc_init(&conn[i], r->inst[i].host, r->inst[i].port, 30000);

    for (;;) {
        long k = atomic_fetch_add(&r->next, 1);
        if (k >= r->requests)
            break;
        int ii = (int)(k % r->ninst);
        /* The SKU changes only after a full round of instances, so each SKU
         * reaches every instance. */
        struct sku_stats *s = &r->sku[(k / r->ninst) % r->nsku];
        char target[160], key[96] = "";
        if (r->orders) {
            /* Both copies of an order: one SKU, one key. */
            s = &r->sku[(k / 2) % r->nsku];
            snprintf(key, sizeof key, "Idempotency-Key: %s-%ld\r\n",
                     r->order_prefix, k / 2);
            snprintf(target, sizeof target, "/orders?sku=%s&qty=%d", s->name,
                     r->qty);
        } else {
            snprintf(target, sizeof target, "/stock/%s/deduct?qty=%d", s->name,
                     r->qty);
        }

        struct httpc_resp resp;
        uint64_t t0 = now_us();
        int rc = httpc_request_headers(&conn[ii], "POST", target,
                                       r->orders ? key : NULL, NULL, 0, &resp);
        uint64_t dt = now_us() - t0;
        r->lat_us[k] = dt > UINT32_MAX ? UINT32_MAX : (uint32_t)dt;

        if (r->orders && rc == 0) {
            /* Sold is counted per order once both copies are in. */
            char v[8];
            struct answer *a = &r->ans[k];
            a->status = resp.status;
            a->replayed = httpc_reply_header(&conn[ii], "Idempotent-Replayed",
                                             v, sizeof v) &&
                          strcmp(v, "true") == 0;
            snprintf(a->body, sizeof a->body, "%s", resp.body);
        }
        struct instance *in = &r->inst[ii];
        if (rc != 0) {
            atomic_fetch_add(&r->other, 1);
            atomic_fetch_add(&in->other, 1);
            note_error(r, conn[ii].err);
        } else if (resp.status == 200) {
            atomic_fetch_add(&r->ok, 1);
            atomic_fetch_add(&in->ok, 1);
            if (!r->orders)
                atomic_fetch_add(&s->sold, r->qty);
        } else if (resp.status == 409) {
            atomic_fetch_add(&r->insufficient, 1);
            atomic_fetch_add(&in->insufficient, 1);
        } else if (resp.status == 503) {
            atomic_fetch_add(&r->lock_failed, 1);
            atomic_fetch_add(&in->lock_failed, 1);
            note_error(r, resp.body);
        } else {
            atomic_fetch_add(&r->other, 1);
            atomic_fetch_add(&in->other, 1);
            char msg[200];
            snprintf(msg, sizeof msg, "HTTP %d %s", resp.status, resp.body);
            note_error(r, msg);
        }
        atomic_fetch_add(&r->done, 1);
    }
    for (int i = 0; i < r->ninst; i++)
        httpc_close(&conn[i]);
    return NULL;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ; /* EINTR: sleep the rest */
}

/* GET /ping, one after another, until told to stop. */
static void *pinger(void *arg)
{
    struct pinger *p = arg;
    struct httpc c;
    httpc_init(&c, p->inst.host, p->inst.port, 30000);
    while (!atomic_load(&p->stop)) {
        struct httpc_resp resp;
        uint64_t t0 = now_us();
        int rc = httpc_request(&c, "GET", "/ping", NULL, 0, &resp);
        uint64_t dt = now_us() - t0;
        if (rc != 0 || resp.status != 200) {
            if (!p->failed++)
                snprintf(p->first_err, sizeof p->first_err, "%s",
                         rc != 0 ? c.err : resp.body);
        } else {
            if (p->n == p->cap) {
                size_t cap = p->cap ? 2 * p->cap : 1024;
                uint32_t *v = realloc(p->lat_us, cap * sizeof *v);
                if (!v)
                    break;
                p->lat_us = v;
                p->cap = cap;
            }
            p->lat_us[p->n++] = dt > UINT32_MAX ? UINT32_MAX : (uint32_t)dt;
        }
        if (p->every_ms > 0)
            sleep_ms(p->every_ms);
    }
    httpc_close(&c);
    return NULL;
}

/* GET (or PUT, when set >= 0) the stock of one SKU through instance 0. */
static int stock_call(const struct run *r, const char *sku, long long set,
                      long long *out)
{
    struct httpc c;
    httpc_init(&c, r->inst[0].host, r->inst[0].port, 10000);
    char target[160];
    if (set >= 0)
        snprintf(target, sizeof target, "/stock/%s?qty=%lld", sku, set);
    else
        snprintf(target, sizeof target, "/stock/%s", sku);
    struct httpc_resp resp;
    int ret = -1;
    if (httpc_request(&c, set >= 0 ? "PUT" : "GET", target, NULL, 0, &resp) !=
        0) {
        fprintf(stderr, "inventory-load: %s %s: %s\n", set >= 0 ? "PUT" : "GET",
                target, c.err);
        goto cleanup;
    }
    const char *p = strstr(resp.body, "\"stock\":");
    if (resp.status != 200 || !p ||
        sscanf(p + strlen("\"stock\":"), "%lld", out) != 1) {
        fprintf(stderr, "inventory-load: %s: HTTP %d %s\n", target, resp.status,
                resp.body);
        goto cleanup;
    }
    ret = 0;
cleanup:
    httpc_close(&c);
    return ret;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: inventory-load --instances HOST:PORT[,HOST:PORT...] "
            "[options]\n"
            "  --requests N     deductions to send (default 2000)\n"
            "  --concurrency N  client threads (default 32)\n"
            "  --skus A[,B...]  SKUs, used in turn (default demo)\n"
            "  --qty N          units per deduction (default 1)\n"
            "  --seed N         set each SKU's stock to N first "
            "(default: keep it)\n"
            "  --label TEXT     name of the run in the SUMMARY line\n"
            "  --orders N       N orders (POST /orders), each sent twice "
            "with one\n"
            "                   Idempotency-Key, instead of --requests\n"
            "  --ping HOST:PORT GET /ping there while the deductions run\n"
            "  --ping-every-ms N pause between pings (default 5)\n"
            "  --check          exit 3 unless oversold = 0, no lost update "
            "and no error\n"
            "                   (--orders: and every copy answered alike)\n");
}

static long num_arg(const char *opt, const char *v, long min, long max)
{
    char *end;
    long n = v ? strtol(v, &end, 10) : 0;
    if (!v || *end != '\0' || n < min || n > max) {
        fprintf(stderr, "inventory-load: %s needs a number in [%ld, %ld]\n",
                opt, min, max);
        exit(2);
    }
    return n;
}

static int split_list(const char *s, char items[][65], int max)
{
    int n = 0;
    while (*s && n < max) {
        size_t len = strcspn(s, ",");
        if (len == 0 || len > 64)
            return -1;
        memcpy(items[n], s, len);
        items[n][len] = '\0';
        n++;
        s += len;
        if (*s == ',')
            s++;
    }
    return *s ? -1 : n;
}

static void parse_args(int argc, char **argv, struct run *r)
{
    char list[MAX_SKUS > MAX_INSTANCES ? MAX_SKUS : MAX_INSTANCES][65];
    const char *instances = NULL, *skus = "demo", *ping = NULL;
    int ping_every_ms = 5;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--check") == 0) {
            r->check = 1;
            continue;
        }
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            exit(0);
        }
        i++;
        if (strcmp(a, "--instances") == 0 && v)
            instances = v;
        else if (strcmp(a, "--skus") == 0 && v)
            skus = v;
        else if (strcmp(a, "--label") == 0 && v)
            r->label = v;
        else if (strcmp(a, "--ping") == 0 && v)
            ping = v;
        else if (strcmp(a, "--ping-every-ms") == 0)
            ping_every_ms = (int)num_arg(a, v, 0, 10000);
        else if (strcmp(a, "--orders") == 0)
            r->orders = num_arg(a, v, 1, 50000000);
        else if (strcmp(a, "--requests") == 0)
            r->requests = num_arg(a, v, 1, 100000000);
        else if (strcmp(a, "--concurrency") == 0)
            r->concurrency = (int)num_arg(a, v, 1, MAX_THREADS);
        else if (strcmp(a, "--qty") == 0)
            r->qty = (int)num_arg(a, v, 1, 1000000);
        else if (strcmp(a, "--seed") == 0)
            r->seed = num_arg(a, v, 0, 1000000000);
        else {
            fprintf(stderr,
                    "inventory-load: unknown option or missing "
                    "value: %s\n",
                    a);
            usage(stderr);
            exit(2);
        }
    }
    int n = instances ? split_list(instances, list, MAX_INSTANCES) : -1;
    if (n <= 0) {
        fprintf(stderr, "inventory-load: --instances HOST:PORT[,...] needed\n");
        exit(2);
    }
    for (int i = 0; i < n; i++)
        if (httpc_parse_hostport(list[i], r->inst[i].host,
                                 sizeof r->inst[i].host,
                                 &r->inst[i].port) != 0) {
            fprintf(stderr, "inventory-load: bad instance %s\n", list[i]);
            exit(2);
        }
    r->ninst = n;
    n = split_list(skus, list, MAX_SKUS);
    if (n <= 0) {
        fprintf(stderr, "inventory-load: bad --skus list\n");
        exit(2);
    }
    for (int i = 0; i < n; i++)
        memcpy(r->sku[i].name, list[i], sizeof r->sku[i].name);
    r->nsku = n;
    if (r->orders)
        r->requests = 2 * r->orders;
    if (ping) {
        static struct pinger p;
        if (httpc_parse_hostport(ping, p.inst.host, sizeof p.inst.host,
                                 &p.inst.port) != 0) {
            fprintf(stderr, "inventory-load: bad --ping %s\n", ping);
            exit(2);
        }
        p.every_ms = ping_every_ms;
        r->ping = &p;
    }
}

/* On a terminal one line redrawn in place; in a log, one line a second. */
static void progress(struct run *r, uint64_t t0, int last)
{
    static int tty = -1;
    if (tty < 0)
        tty = isatty(STDERR_FILENO);
    if (last && !tty)
        return; /* the last per-second line is as good */
    long done = atomic_load(&r->done);
    double s = (now_us() - t0) / 1e6;
    fprintf(stderr,
            "%s[load] %ld/%ld  200:%ld 409:%ld 503:%ld other:%ld  %.0f req/s%s",
            tty ? "\r" : "", done, r->requests, atomic_load(&r->ok),
            atomic_load(&r->insufficient), atomic_load(&r->lock_failed),
            atomic_load(&r->other), s > 0 ? done / s : 0.0,
            tty && !last ? "" : "\n");
}

int main(int argc, char **argv)
{
    static struct run r; /* large; zero-initialised */
    r.requests = 2000;
    r.concurrency = 32;
    r.qty = 1;
    r.seed = -1;
    r.label = "run";
    pthread_mutex_init(&r.err_mu, NULL);
    parse_args(argc, argv, &r);
    signal(SIGPIPE, SIG_IGN);

    for (int i = 0; i < r.nsku; i++) {
        if (r.seed >= 0 &&
            stock_call(&r, r.sku[i].name, r.seed, &r.sku[i].initial) != 0)
            return 1;
        if (stock_call(&r, r.sku[i].name, -1, &r.sku[i].initial) != 0)
            return 1;
    }
    r.lat_us = calloc((size_t)r.requests, sizeof *r.lat_us);
    if (r.orders) {
        /* Keys of their own: a key stays used for the service's 24 h. */
        snprintf(r.order_prefix, sizeof r.order_prefix, "o%ld-%ld",
                 (long)getpid(), (long)time(NULL));
        r.ans = calloc((size_t)r.requests, sizeof *r.ans);
    }
    if (!r.lat_us || (r.orders && !r.ans)) {
        fprintf(stderr, "inventory-load: out of memory\n");
        return 1;
    }

    pthread_t th[MAX_THREADS], ping_th;
    int nth = 0, pinging = 0;
    uint64_t t0 = now_us();
    if (r.ping) {
        pinging = pthread_create(&ping_th, NULL, pinger, r.ping) == 0;
        if (!pinging)
            fprintf(stderr, "inventory-load: cannot start the pinger\n");
    }
    for (; nth < r.concurrency; nth++)
        if (pthread_create(&th[nth], NULL, client, &r) != 0) {
            fprintf(stderr, "inventory-load: cannot start thread %d\n", nth);
            break;
        }
    /* Progress from the main thread, once a second. */
    while (atomic_load(&r.done) < r.requests && nth > 0) {
        struct timespec ts = {0, 100 * 1000000L};
        for (int i = 0; i < 10 && atomic_load(&r.done) < r.requests; i++)
            nanosleep(&ts, NULL);
        progress(&r, t0, 0);
    }
    for (int i = 0; i < nth; i++)
        pthread_join(th[i], NULL);
    double secs = (now_us() - t0) / 1e6;
    if (pinging) {
        atomic_store(&r.ping->stop, 1);
        pthread_join(ping_th, NULL);
    }
    progress(&r, t0, 1);

    /* Orders: both copies of each in, compare them; the order sold once
     * when answered 200. */
    long same = 0, differ = 0, replayed = 0;
    for (long j = 0; j < r.orders; j++) {
        const struct answer *a = &r.ans[2 * j], *b = &r.ans[2 * j + 1];
        if (a->status && a->status == b->status &&
            strcmp(a->body, b->body) == 0)
            same++;
        else if (differ++ == 0)
            printf("order %s-%ld answered differently: HTTP %d %s / HTTP %d "
                   "%s\n",
                   r.order_prefix, j, a->status, a->body, b->status, b->body);
        replayed += a->replayed + b->replayed;
        if (a->status == 200 || b->status == 200)
            atomic_fetch_add(&r.sku[j % r.nsku].sold, r.qty);
    }
    free(r.ans);

    long long initial = 0, final = 0, sold = 0, oversold = 0, lost = 0;
    int final_ok = 1;
    for (int i = 0; i < r.nsku; i++) {
        struct sku_stats *s = &r.sku[i];
        if (stock_call(&r, s->name, -1, &s->final) != 0)
            final_ok = 0;
        long long sd = atomic_load(&s->sold);
        long long over = sd - s->initial;
        initial += s->initial;
        final += s->final;
        sold += sd;
        oversold += over > 0 ? over : 0;
        lost += sd - (s->initial - s->final);
        printf("sku %-12s initial %6lld  sold %6lld  final %6lld  "
               "oversold %6lld\n",
               s->name, s->initial, sd, s->final, over > 0 ? over : 0);
    }
    long done = atomic_load(&r.done);
    /* Per instance, before the sort below reorders the samples: request k
     * went to instance k mod N. */
    char by_ok[64 * 12] = "", by_p99[64 * 12] = "";
    uint32_t *part =
        malloc((size_t)done / (size_t)r.ninst * sizeof *part + sizeof *part);
    for (int i = 0; part && i < r.ninst; i++) {
        struct instance *in = &r.inst[i];
        size_t m = 0;
        for (long k = i; k < done; k += r.ninst)
            part[m++] = r.lat_us[k];
        double ip99 = inv_percentile(part, m, 99) / 1000.0;
        long iok = atomic_load(&in->ok);
        printf("instance %s:%d  200 %ld  409 %ld  503 %ld  other %ld  "
               "p99 %.1f ms\n",
               in->host, in->port, iok, atomic_load(&in->insufficient),
               atomic_load(&in->lock_failed), atomic_load(&in->other), ip99);
        size_t lo = strlen(by_ok), lp = strlen(by_p99);
        snprintf(by_ok + lo, sizeof by_ok - lo, "%s%ld", i ? "," : "", iok);
        snprintf(by_p99 + lp, sizeof by_p99 - lp, "%s%.2f", i ? "," : "", ip99);
    }
    free(part);
    char ping_json[256] = "";
    if (r.ping) {
        struct pinger *p = r.ping;
        double pp50 = inv_percentile(p->lat_us, p->n, 50) / 1000.0;
        double pp99 = inv_percentile(p->lat_us, p->n, 99) / 1000.0;
        double pmax = p->n ? p->lat_us[p->n - 1] / 1000.0 : 0.0; /* sorted */
        printf("ping %s:%d: %zu answered, %ld failed, p50 %.2f ms, "
               "p99 %.2f ms, max %.2f ms\n",
               p->inst.host, p->inst.port, p->n, p->failed, pp50, pp99, pmax);
        if (p->first_err[0])
            printf("first ping error: %s\n", p->first_err);
        snprintf(ping_json, sizeof ping_json,
                 ",\"pings\":%zu,\"ping_failed\":%ld,\"ping_p50_ms\":%.2f,"
                 "\"ping_p99_ms\":%.2f,\"ping_max_ms\":%.2f",
                 p->n, p->failed, pp50, pp99, pmax);
        free(p->lat_us);
    }
    uint32_t p50 = inv_percentile(r.lat_us, (size_t)done, 50);
    uint32_t p99 = inv_percentile(r.lat_us, (size_t)done, 99);
    long ok = atomic_load(&r.ok), ins = atomic_load(&r.insufficient);
    long lf = atomic_load(&r.lock_failed), other = atomic_load(&r.other);

    printf("%ld requests in %.2f s: %.0f req/s, latency p50 %.1f ms, "
           "p99 %.1f ms\n",
           done, secs, done / secs, p50 / 1000.0, p99 / 1000.0);
    printf("200 sold %ld, 409 insufficient %ld, 503 lock failed %ld, "
           "other errors %ld\n",
           ok, ins, lf, other);
    if (r.first_err[0])
        printf("first error: %s\n", r.first_err);
    char orders_json[192] = "";
    if (r.orders) {
        /* lost updates < 0: more went than was sold (a copy deducted). */
        printf("orders %ld, each sent twice: %ld answered alike, %ld "
               "differently, %ld replays flagged; deducted %lld units for "
               "%lld sold\n",
               r.orders, same, differ, replayed, initial - final, sold);
        snprintf(orders_json, sizeof orders_json,
                 ",\"orders\":%ld,\"same\":%ld,\"differ\":%ld,"
                 "\"replayed\":%ld,\"deducted\":%lld",
                 r.orders, same, differ, replayed, initial - final);
    }
    printf("stock: initial %lld, final %lld, sold %lld units -> oversold %lld, "
           "lost updates %lld\n",
           initial, final, sold, oversold, lost);
    printf("SUMMARY {\"label\":\"%s\",\"requests\":%ld,\"ok\":%ld,"
           "\"insufficient\":%ld,\"lock_failed\":%ld,\"other\":%ld,"
           "\"initial\":%lld,\"final\":%lld,\"sold\":%lld,\"oversold\":%lld,"
           "\"lost_updates\":%lld,\"seconds\":%.3f,\"rps\":%.1f,"
           "\"p50_ms\":%.2f,\"p99_ms\":%.2f,\"ok_by_instance\":[%s],"
           "\"p99_ms_by_instance\":[%s]%s%s}\n",
           r.label, done, ok, ins, lf, other, initial, final, sold, oversold,
           lost, secs, done / secs, p50 / 1000.0, p99 / 1000.0, by_ok, by_p99,
           ping_json, orders_json);
    free(r.lat_us);
    if (!final_ok)
        return 1;
    if (r.check && (oversold != 0 || lost != 0 || other != 0 || differ != 0 ||
                    (r.ping && r.ping->failed != 0)))
        return 3;
    return 0;
}
