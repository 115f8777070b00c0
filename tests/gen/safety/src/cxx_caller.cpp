// C++ calling a woven C function through its annotated declaration.
#include "cxx_api.h"

extern "C" uint64_t safety_case(int id)
{
    return cxx_api_locked(id);
}
