/* Configuration: environment first (so annotated code needs no setup call),
 * lw_configure() for programs that prefer code. */
#include "base/config.h"

#include <ctype.h>
#include <lockweave.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"

#define DEFAULT_URL        "redis://127.0.0.1:6379"
#define DEFAULT_PREFIX     "lock:"
#define DEFAULT_CONNECT_MS 1000
#define DEFAULT_COMMAND_MS 2000
#define DEFAULT_HANDOFF_MS 0
#define DEFAULT_WAIT_MS    100
#define DEFAULT_LOCAL      15

/* lw_config as 0.1.0 has it ends at tls_insecure: the functions of that
 * version's names read and write that much, whatever the struct becomes. */
#define CONFIG_SIZE_0_1_0 (offsetof(lw_config, tls_insecure) + sizeof(int))

static pthread_mutex_t cfg_mu = PTHREAD_MUTEX_INITIALIZER;
static struct lw_settings *current;
static unsigned next_gen = 1;
static struct lw_settings oom_settings = {.error = LW_ENOMEM};

/* A count (of milliseconds, mostly) from the environment, at least min;
 * fallback (with a warning) when unset or not a number in range. */
static int env_int(const char *name, int min, int fallback)
{
    const char *v = getenv(name);
    char *end;
    long n;

    if (v == NULL || *v == '\0')
        return fallback;
    n = strtol(v, &end, 10);
    /* Digits only: strtol() would take " 5" and "+5" too. */
    if (!isdigit((unsigned char)*v) || *end != '\0' || n < min ||
        n > 3600 * 1000) {
        lw__log(LW_LOG_WARN, "ignoring %s=%s: not a whole number >= %d", name,
                v, min);
        return fallback;
    }
    return (int)n;
}

/* A string setting: the lw_config field, else the environment variable
 * (empty counts as unset), copied into *out.  0, or -1 out of memory. */
static int str_setting(const char *field, const char *env, char **out)
{
    const char *v = field != NULL ? field : getenv(env);

    *out = NULL;
    if (v == NULL || *v == '\0')
        return 0;
    *out = strdup(v);
    return *out != NULL ? 0 : -1;
}

/* The TLS settings and the SSL_CTX made from them: LW_OK, LW_ECONFIG (the
 * file is named in the log) or LW_ENOMEM. */
static int tls_settings(struct lw_settings *s, const lw_config *cfg)
{
    struct lw_tls_opts *o = &s->tls;
    const char *insecure = getenv("LOCKWEAVE_TLS_INSECURE");

    if (str_setting(cfg->tls_ca_file, "LOCKWEAVE_TLS_CA_FILE", &o->ca_file) ||
        str_setting(cfg->tls_ca_dir, "LOCKWEAVE_TLS_CA_DIR", &o->ca_dir) ||
        str_setting(cfg->tls_cert_file, "LOCKWEAVE_TLS_CERT_FILE",
                    &o->cert_file) ||
        str_setting(cfg->tls_key_file, "LOCKWEAVE_TLS_KEY_FILE",
                    &o->key_file) ||
        str_setting(cfg->tls_server_name, "LOCKWEAVE_TLS_SERVER_NAME",
                    &o->server_name))
        return LW_ENOMEM;
    o->insecure = cfg->tls_insecure > 0 ||
                  (insecure != NULL && strcmp(insecure, "1") == 0);
    if (insecure != NULL && *insecure != '\0' && strcmp(insecure, "0") != 0 &&
        strcmp(insecure, "1") != 0)
        lw__log(LW_LOG_WARN, "ignoring LOCKWEAVE_TLS_INSECURE=%s: not 0 or 1",
                insecure);
    return lw__tlsctx_new(o, &s->ssl_ctx);
}

/* The sentinels' credentials onto each sentinel of s (redis+sentinel://):
 * the URL's belong to the data nodes.  LW_OK or LW_ENOMEM. */
static int sentinel_settings(struct lw_settings *s, const lw_config *cfg)
{
    char *user, *password;
    int rc = LW_OK;

    if (str_setting(cfg->sentinel_user, "LOCKWEAVE_SENTINEL_USER", &user) ||
        str_setting(cfg->sentinel_password, "LOCKWEAVE_SENTINEL_PASSWORD",
                    &password)) {
        free(user);
        return LW_ENOMEM;
    }
    for (int i = 0; i < s->ep.n && rc == LW_OK; i++) {
        struct lw_url *u = &s->ep.urls[i];
        u->user = user != NULL ? strdup(user) : NULL;
        u->password = password != NULL ? strdup(password) : NULL;
        if ((user != NULL && u->user == NULL) ||
            (password != NULL && u->password == NULL))
            rc = LW_ENOMEM;
    }
    free(user);
    free(password);
    return rc;
}

/* Build a snapshot; an unusable URL still yields one, carrying the error, so
 * the first guarded call can report LW_ECONFIG instead of crashing. */
static struct lw_settings *settings_new(const lw_config *cfg)
{
    struct lw_settings *s = calloc(1, sizeof *s);
    const char *url = cfg->redis_url, *prefix = cfg->key_prefix;
    char err[512];

    if (s == NULL)
        return NULL;
    /* The library's first use reads the level too: a LOCKWEAVE_LOG that
     * names none is told now, not when a line first happens to be
     * logged. */
    lw__log_start();
    if (url == NULL)
        url = getenv("LOCKWEAVE_REDIS_URL");
    if (url == NULL)
        url = DEFAULT_URL;
    if (prefix == NULL)
        prefix = DEFAULT_PREFIX;
    s->prefix = strdup(prefix);
    if (s->prefix == NULL) {
        free(s);
        return NULL;
    }
    s->prefix_len = strlen(prefix);
    s->connect_timeout_ms =
        cfg->connect_timeout_ms > 0
            ? cfg->connect_timeout_ms
            : env_int("LOCKWEAVE_CONNECT_TIMEOUT_MS", 1, DEFAULT_CONNECT_MS);
    s->command_timeout_ms =
        cfg->command_timeout_ms > 0
            ? cfg->command_timeout_ms
            : env_int("LOCKWEAVE_COMMAND_TIMEOUT_MS", 1, DEFAULT_COMMAND_MS);
    /* 0 is meaningful here: strict FIFO. */
    s->handoff_ms = env_int("LOCKWEAVE_HANDOFF_MS", 0, DEFAULT_HANDOFF_MS);
    s->wait_replicas = cfg->wait_replicas > 0
                           ? cfg->wait_replicas
                           : env_int("LOCKWEAVE_WAIT_REPLICAS", 0, 0);
    s->wait_timeout_ms =
        cfg->wait_timeout_ms > 0
            ? cfg->wait_timeout_ms
            : env_int("LOCKWEAVE_WAIT_TIMEOUT_MS", 1, DEFAULT_WAIT_MS);
    s->local_handoffs = env_int("LOCKWEAVE_LOCAL_HANDOFFS", 0, DEFAULT_LOCAL);
    if (s->local_handoffs > LW_LOCAL_HANDOFFS_MAX) {
        lw__log(LW_LOG_WARN, "LOCKWEAVE_LOCAL_HANDOFFS=%d: %d at most",
                s->local_handoffs, LW_LOCAL_HANDOFFS_MAX);
        s->local_handoffs = LW_LOCAL_HANDOFFS_MAX;
    }
    s->error = lw__endpoints_parse(url, &s->ep, err, sizeof err);
    if (s->error == LW_ECONFIG)
        lw__log(LW_LOG_ERROR, "%s", err);
    if (s->error == LW_OK && s->ep.topology == LW_TOPO_SENTINEL)
        s->error = sentinel_settings(s, cfg);
    if (s->error == LW_OK && lw__endpoints_tls(&s->ep))
        s->error = tls_settings(s, cfg);
    return s;
}

static void settings_free(struct lw_settings *s)
{
    lw__endpoints_free(&s->ep);
    lw__tls_opts_free(&s->tls);
    lw__tlsctx_free(s->ssl_ctx);
    free(s->prefix);
    free(s);
}

/* Publish under cfg_mu; readers load the pointer with acquire semantics. */
static void publish(struct lw_settings *s)
{
    s->gen = next_gen++;
    s->older = current;
    __atomic_store_n(&current, s, __ATOMIC_RELEASE);
}

const struct lw_settings *lw__settings(void)
{
    struct lw_settings *s = __atomic_load_n(&current, __ATOMIC_ACQUIRE);
    lw_config cfg;

    if (s != NULL)
        return s;
    /* First use (or first use after lw_shutdown): read the environment. */
    lw_config_init(&cfg);
    pthread_mutex_lock(&cfg_mu);
    if (current == NULL && (s = settings_new(&cfg)) != NULL)
        publish(s);
    s = current;
    pthread_mutex_unlock(&cfg_mu);
    return s ? s : &oom_settings;
}

void lw_config_init_sized(lw_config *cfg, size_t size)
{
    /* Every field's default is zero, those of newer versions too. */
    memset(cfg, 0, size);
}

int lw_configure_sized(const lw_config *cfg, size_t size)
{
    struct lw_settings *s;
    lw_config own;
    int rc;

    if (cfg == NULL)
        return LW_EINVAL;
    if (lw__struct_in(&own, sizeof own, cfg, size) != 0) {
        lw__log(LW_LOG_ERROR,
                "lw_configure: a field set that lockweave %s does not know "
                "(the program was built against a newer <lockweave.h>)",
                LW_VERSION);
        return LW_ECONFIG;
    }
    s = settings_new(&own);
    if (s == NULL)
        return LW_ENOMEM;
    rc = s->error;
    if (rc != LW_OK) {
        settings_free(s);
        return rc;
    }
    pthread_mutex_lock(&cfg_mu);
    publish(s);
    pthread_mutex_unlock(&cfg_mu);
    return LW_OK;
}

void(lw_config_init)(lw_config *cfg)
{
    lw_config_init_sized(cfg, CONFIG_SIZE_0_1_0);
}

int(lw_configure)(const lw_config *cfg)
{
    return lw_configure_sized(cfg, CONFIG_SIZE_0_1_0);
}

void lw__settings_free_all(void)
{
    struct lw_settings *s;

    pthread_mutex_lock(&cfg_mu);
    s = current;
    current = NULL;
    pthread_mutex_unlock(&cfg_mu);
    while (s != NULL) {
        struct lw_settings *older = s->older;
        settings_free(s);
        s = older;
    }
}
