// An annotated definition in a header is refused in C++ as in C: it would
// be woven in every file that includes it, or in none.
#include "cxx_header_def.hpp"

int use(Counter &c);
int use(Counter &c) { return c.bump(); }

// expect: cxx_header_def.hpp:5:9: error: REDIS_LOCK on 'bump', which is defined in a header: lockweave weaves definitions in the source file being compiled only
