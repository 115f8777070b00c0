/* C23 allows unnamed parameters in a definition: the wrapper names them
 * itself and passes them on. */
#include "gen_check.h"

REDIS_LOCK("u:{id}", 2s, 0)
static int first(int id, int, const char *)
{
    CHECK(lw_still_held());
    CHECK(key_busy("u:4") == 1);
    return id;
}

int main(void)
{
    CHECK(first(4, 5, "x") == 4);
    return gen_done("gen_run_unnamed");
}
