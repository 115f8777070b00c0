/* Takes a lock through the installed <lockweave.hpp>, and calls a member
 * function woven from counter.cpp when there is one; checks both held. */
#include <lockweave.hpp>

#include <cstdio>

#ifdef CONSUMER_WOVEN
#include "counter.h"
#endif

using namespace std::chrono_literals;

int main()
{
    int rc;
    {
        lw::lease l =
            lw::acquire_keys({"consumer:cxx:a", "consumer:cxx:b"}, 5s, 2s);
        if (!l || !l.held() || l.fence("consumer:cxx:a") == 0) {
            std::fprintf(stderr, "consumer_cxx: acquire: %s\n",
                         lw_strerror(l.error()));
            return 1;
        }
        rc = l.release();
    }
    std::printf("consumer_cxx: two keys held as one lease, released: %s\n",
                lw_strerror(rc));
#ifdef CONSUMER_WOVEN
    Counter c(7);
    for (int i = 0; i < 3; i++)
        if (c.bump(2) != 1 || lw_last_error() != LW_OK) {
            std::fprintf(stderr, "consumer_cxx: bump: %s\n",
                         lw_strerror(lw_last_error()));
            return 1;
        }
    std::printf("consumer_cxx: woven member function ran 3 times under the "
                "lock, total %ld\n",
                c.total());
    rc = c.total() == 6 ? rc : LW_EINVAL;
#endif
    lw_shutdown();
    return rc == LW_OK ? 0 : 1;
}
