#include "safety.h"

SAFETY_MAIN(CASE_NAME)
