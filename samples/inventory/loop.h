/*
 * The event-loop front end, inventory-loop: one thread, one libevent loop,
 * evhttp for HTTP.  Everything but a guarded deduction is answered by
 * inv_route() at once; a deduction is handed to deduct_on_loop(), which
 * returns at once and runs its body on the loop once the Redis lock is had.
 */
#ifndef INV_LOOP_H
#define INV_LOOP_H

#include <lockweave.h>

#include <stdint.h>

struct event_base;
struct evhttp_request;
struct inv_request;
struct inv_service;
struct inv_store;

/* lockweave on the loop (lw_loop_event(base)): where deduct_on_loop() runs
 * its bodies.  Set by main_loop.c before the first request. */
extern lw_loop *inv_loop;

/* deduct_loop.c, woven with `loop = inv_loop`: deduct qty units of sku
 * under the lock "stock:{sku}" (the threaded instances' lock) and answer
 * req with inv_loop_answer(), on the loop, later; the call returns at once.
 * sku is the caller's heap copy, freed with the answer. */
void deduct_on_loop(struct evhttp_request *req, char *sku, int qty,
                    struct inv_store *store, int work_ms, uint64_t t0_us);

/* http_event.c: answer a deduction that inv_read_check_write() (or the
 * lock) answered rc, lw_rc being lockweave's word on it (see
 * inv_deduct_reply()), t0_us when the request came; frees sku. */
void inv_loop_answer(struct evhttp_request *req, char *sku, int qty, int rc,
                     int lw_rc, uint64_t t0_us);

/* http_event.c: the service's deduct_later hook (see service.h): copies sku
 * and calls deduct_on_loop(). */
void inv_loop_deduct(const struct inv_service *svc,
                     const struct inv_request *req, const char *sku, int qty);

struct inv_event_http;

/* Listen on addr:port (IPv4 dotted; 0 picks a free port) on base.  NULL on
 * failure (printed).  svc must outlive the server. */
struct inv_event_http *inv_event_http_start(struct event_base *base,
                                            const struct inv_service *svc,
                                            const char *addr, int port);

/* The port actually bound. */
int inv_event_http_port(const struct inv_event_http *h);

/* Close the listening socket: no new connection from now on. */
void inv_event_http_stop_accepting(struct inv_event_http *h);

/* Close every connection and free. */
void inv_event_http_stop(struct inv_event_http *h);

#endif /* INV_LOOP_H */
