/* lw_faults_check RUN_DIR [RESULTS_FILE]: check a kept run directory again. */
#include "fc_check.h"

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: %s RUN_DIR [RESULTS_FILE]\n", argv[0]);
        return 2;
    }
    return fc_check(argv[1], stdout, argc == 3 ? argv[2] : NULL) == 0 ? 0 : 1;
}
