/* An order handler on an event loop: a call asks for the account's lock
 * and returns at once; the body runs on the loop once the lock is held,
 * with the arguments the call was given, and without ever blocking it. */
#include <lockweave.h>
#include <stdint.h>

struct order {
    int64_t account;
    int qty;
};

lw_loop *app_loop(void);
int already_filled(const struct order *o);
void reply(int conn, const char *what);

REDIS_LOCK("acct:{o.account}", 10s, 2s, loop = app_loop(),
           on_fail = reply(conn, "busy"), skip_if = already_filled(&o))
void place(int conn, struct order o, const char *note)
{
    (void)o;
    reply(conn, note);
}
