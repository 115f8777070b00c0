/* Links only the static library; gets <lockweave.h> and the runtime through
 * it.  Exit status 0 only if each call ran under its lock. */
#include "stock.h"

#include <stdio.h>

int main(void)
{
    for (int want = 7; want >= 1; want -= 3) {
        int left = stock_take(42, 3);
        int err = lw_last_error();
        if (left != want || err != LW_OK) {
            fprintf(stderr, "consumer_lib: stock_take returned %d (want %d), %s\n",
                    left, want, lw_strerror(err));
            return 1;
        }
    }
    printf("consumer_lib: three takes under the lock, through a static library\n");
    lw_shutdown();
    return 0;
}
