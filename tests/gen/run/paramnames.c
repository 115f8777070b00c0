/* The definition calls the parameters otherwise than the annotated
 * declaration in paramnames.h: the key still follows the declaration. */
#include "gen_check.h"
#include "paramnames.h"

int charge(int a, int c)
{
    CHECK(strcmp(__func__, "charge") == 0);
    CHECK(key_busy("acct:7:100") == 1);
    return a + c;
}

int main(void)
{
    CHECK(charge(7, 100) == 107);
    CHECK(lw_last_error() == LW_OK);
    CHECK(charge(7, 0) == 0); /* skipped: cents == 0 */
    return gen_done("paramnames");
}
