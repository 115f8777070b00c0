/* Takes a lock through the installed <lockweave.hpp>; checks it held. */
#include <lockweave.hpp>

#include <cstdio>

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
    lw_shutdown();
    return rc == LW_OK ? 0 : 1;
}
