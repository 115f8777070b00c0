#include "locked.h"
#include "local.h"

int withdraw(int id, int amount) { return id - amount - WITHDRAW_FEE; }
