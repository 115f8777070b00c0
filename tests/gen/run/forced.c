/* forced_locked() is declared in forced.h, which the build forces in with
 * -include, before this file's first line. */
#include "gen_check.h"

int forced_locked(int id)
{
    CHECK(key_busy("forced:5") == 1);
    return id * 2;
}

int main(void)
{
    int (*fp)(int) = forced_locked;
    CHECK(forced_locked(5) == 10);
    CHECK(fp(5) == 10);
    CHECK(lw_last_error() == LW_OK);
    return gen_done("forced");
}
