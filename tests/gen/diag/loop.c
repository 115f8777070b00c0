#include <lockweave.h>
#include <stdarg.h>

/* With a loop, a call returns before its body runs: nothing to return but
 * void; on_fail runs in place of the body, so it must be a statement with
 * no value to drop; loop must give an lw_loop *; the arguments are kept
 * for later, which '...' and a va_list cannot be. */
struct event_base;
struct event_base *base;
lw_loop *app_loop;
int busy(int id);
void failed(int id);

REDIS_LOCK("a:{id}", 1s, 0, loop = app_loop)
int count(int id) { return id; }

REDIS_LOCK("b:{id}", 1s, 0, loop = app_loop, on_fail = busy(id))
void retry(int id) { (void)id; }

REDIS_LOCK("c:{id}", 1s, 0, loop = base)
void on_base(int id) { (void)id; }

REDIS_LOCK("d:{id}", 1s, 0, loop = id)
void on_int(int id) { (void)id; }

REDIS_LOCK("e:{id}", 1s, 0, loop = app_loop)
REDIS_LOCK("f:{id}", 1s, 0,
           loop = app_loop + 1)
void two_loops(int id) { (void)id; }

REDIS_LOCK("g:{id}", 1s, 0, loop = app_loop)
void vlog(int id, const char *fmt, ...) { (void)id; (void)fmt; }

REDIS_LOCK("h:{id}", 1s, 0, loop = app_loop)
void vlist(int id, va_list ap) { (void)id; (void)ap; }

REDIS_LOCK("i:{id}", 1s, 0, loop = app_loop)
void hides(int id, int free) { (void)id; (void)free; }

/* Fine: the same loop on each annotation, a void on_fail, a void * loop,
 * a parameter named as a loop wrapper's name in a function without one. */
REDIS_LOCK("j:{id}", 1s, 0, loop = app_loop, on_fail = failed(id))
REDIS_LOCK("k:{id}", 1s, 0, loop = app_loop, skip_if = id < 0)
void fine(int id) { (void)id; }

REDIS_LOCK("l:{id}", 1s, 0, loop = (void *)base, on_fail = (void)busy(id))
void fine_too(int id) { (void)id; }

REDIS_LOCK("m:{id}", 1s, 0)
void plain(int id, int free) { (void)id; (void)free; }

// expect: 14:29: error: loop given, but 'count' returns 'int': its call returns before the body runs, so it must return void
// expect: 17:56: error: on_fail of 'retry' runs in place of its body and gives nothing back: it must be a void expression, not one of type 'int'
// expect: 20:36: error: loop of 'on_base' must convert to 'lw_loop *': incompatible pointer types
// expect: 23:36: error: loop of 'on_int' must convert to 'lw_loop *': incompatible integer to pointer conversion
// expect: 28:12: error: conflicting loop on the REDIS_LOCK annotations of 'two_loops' ('app_loop + 1' here, 'app_loop' before)
// expect: 26:29: note: first given here
// expect: 32:6: error: 'vlog' is variadic: the arguments of a function with a loop are kept for its body
// expect: 35:28: error: parameter 'ap' of 'vlist' is a va_list
// expect: 38:24: error: parameter 'free' of 'hides' would hide <stdlib.h>'s 'free'
