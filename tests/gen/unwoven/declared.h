/* A library's header with an annotated declaration: every file that
 * includes it needs lockweave-gen, not only the one defining deduct(). */
#include <lockweave.h>

REDIS_LOCK("stock:{id}", 1s, 0)
int deduct(int id);
