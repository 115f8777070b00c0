/* Built without lockweave_generate: must not link, even optimised, even
 * though deduct() is never called. */
#include <lockweave.h>

REDIS_LOCK("stock:{id}", 1s, 0)
static int deduct(int id) { return id; }

int main(void) { return 0; }
