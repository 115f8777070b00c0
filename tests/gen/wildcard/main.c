#include "stock.h"

int main(void)
{
    return deduct(0, 1) == 4 ? 0 : 1;
}
