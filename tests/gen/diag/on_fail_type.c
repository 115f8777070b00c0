#include <lockweave.h>
#include <stddef.h>

/* on_fail is returned in place of the body's value, so it must be a value
 * the function may return: what C only lets pass with a warning (a string
 * for an int, an int for a pointer, a const pointer for a plain one) is an
 * error at the value, like what it refuses outright (a struct for an
 * int). */
struct pt {
    int x, y;
};
static struct pt origin;

REDIS_LOCK("a:{id}", 1s, 0, on_fail = "x")
int count(int id) { return id; }

REDIS_LOCK("b:{id}", 1s, 0, on_fail = id)
char *name(int id) { (void)id; return NULL; }

REDIS_LOCK("c:{id}", 1s, 0,
           on_fail = origin)
int where(int id) { return id; }

REDIS_LOCK("d:{id}", 1s, 0, on_fail = (const char *)0)
char *label(int id) { (void)id; return NULL; }

/* Values it may return pass: a negative long, NULL for a pointer, a struct
 * of its own type. */
REDIS_LOCK("e:{id}", 1s, 0, on_fail = -1)
long total(int id) { return id; }

REDIS_LOCK("f:{id}", 1s, 0, on_fail = NULL)
const char *title(int id) { (void)id; return "t"; }

REDIS_LOCK("g:{id}", 1s, 0, on_fail = origin)
struct pt at(int id) { (void)id; return origin; }

// expect: 14:39: error: on_fail cannot be returned from 'count', which returns 'int': incompatible pointer to integer conversion
// expect: 17:39: error: on_fail cannot be returned from 'name', which returns 'char *': incompatible integer to pointer conversion
// expect: 21:22: error: on_fail cannot be returned from 'where', which returns 'int'
// expect: 24:39: error: on_fail cannot be returned from 'label', which returns 'char *'
