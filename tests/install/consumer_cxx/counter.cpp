/* Woven by an installed lockweave's lockweave_generate(). */
#include "counter.h"

int Counter::bump(int by)
{
    total_ += by;
    return lw_fence() > 0 && lw_still_held() == 1;
}
