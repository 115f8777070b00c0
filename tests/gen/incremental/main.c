#include "locked.h"

int plain(int x);

int main(int argc, char **argv)
{
    (void)argv;
    /* Never calls withdraw() (no Redis here), but must link it. */
    int (*volatile f)(int, int) = withdraw;
    return argc > 5 ? f(1, 2) : plain(-1);
}
