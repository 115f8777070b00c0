/* Calls the woven function as any caller would; checks it ran locked. */
#include <lockweave.h>

#include <stdint.h>
#include <stdio.h>

int bump(int64_t id, int by);
extern long total;

int main(void)
{
    for (int i = 0; i < 3; i++) {
        int ok = bump(42, 2);
        int err = lw_last_error();
        if (!ok || err != LW_OK) {
            fprintf(stderr, "consumer_gen: bump returned %d, status %s\n", ok,
                    lw_strerror(err));
            return 1;
        }
    }
    printf("consumer_gen: woven function ran 3 times under the lock, total "
           "%ld\n",
           total);
    lw_shutdown();
    return total == 6 ? 0 : 1;
}
