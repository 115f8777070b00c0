#include "app.h"

int debit(int id, int cents)
{
    return id + cents;
}
